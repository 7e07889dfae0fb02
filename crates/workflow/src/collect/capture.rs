//! A launch's output captured in fixed memory: per stream the first [`HEAD_LINES`] and a rolling
//! last [`TAIL_LINES`] lines (each cut at [`MAX_LINE`] bytes), with the whole stream written to
//! a log file. The readers are threads; the poll loop only takes what they hand it, a bounded
//! number of lines per tick, so no amount of output can starve it.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde::Serialize;

/// Lines kept from the start of each stream.
pub const HEAD_LINES: usize = 40;
/// Lines kept from the end of each stream.
pub const TAIL_LINES: usize = 80;
/// Bytes kept of one line (the log file has all of it).
pub const MAX_LINE: usize = 2048;
/// Lines waiting to be shown; more are dropped from the display (the log file has them).
const SHOW_QUEUE: usize = 512;
/// How much one read takes from a pipe.
const CHUNK: usize = 64 * 1024;

/// Which of the launch's streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stream {
    /// Its standard output.
    Stdout,
    /// Its standard error.
    Stderr,
}

/// What was kept of one stream.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StreamCapture {
    /// Its first lines (at most [`HEAD_LINES`]).
    pub head: Vec<String>,
    /// Its last lines (at most [`TAIL_LINES`]; they may overlap `head` for a short stream).
    pub tail: Vec<String>,
    /// Lines it wrote.
    pub lines: u64,
    /// Bytes it wrote.
    pub bytes: u64,
}

/// What was kept of a launch's output.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Capture {
    /// Its standard output.
    pub stdout: StreamCapture,
    /// Its standard error.
    pub stderr: StreamCapture,
    /// The file holding both streams whole (lines interleaved as they came), when it could be
    /// written.
    pub log: Option<String>,
    /// Why the log file is missing or incomplete.
    pub log_error: Option<String>,
    /// Lines not shown while the launch ran because they came faster than they can be shown.
    pub not_shown: u64,
}

impl Capture {
    /// Every kept line, the head then the tail of stdout, then of stderr, without the lines
    /// the tail repeats from the head.
    pub fn kept_lines(&self) -> Vec<&str> {
        [&self.stdout, &self.stderr]
            .into_iter()
            .flat_map(StreamCapture::kept_lines)
            .collect()
    }
}

impl StreamCapture {
    fn kept_lines(&self) -> impl Iterator<Item = &str> {
        let lines = usize::try_from(self.lines).unwrap_or(usize::MAX);
        let repeated = (self.head.len() + self.tail.len()).saturating_sub(lines);
        self.head
            .iter()
            .chain(self.tail.iter().skip(repeated))
            .map(String::as_str)
    }
}

/// One stream being kept: the head, the rolling tail and the counts.
#[derive(Debug, Default)]
struct Kept {
    head: Vec<String>,
    tail: VecDeque<String>,
    lines: u64,
    bytes: u64,
    /// The start of a line not ended yet (at most [`MAX_LINE`] bytes of it).
    partial: Vec<u8>,
    /// Bytes of the partial line beyond [`MAX_LINE`].
    partial_cut: bool,
}

impl Kept {
    /// Takes one chunk: whole lines go to the head or the tail; the rest waits for its end.
    fn take(&mut self, chunk: &[u8], shown: &mut dyn FnMut(&str)) {
        self.bytes += chunk.len() as u64;
        let mut rest = chunk;
        // Lines in this chunk, so that only the last TAIL_LINES of a huge chunk are built.
        let mut left = rest.iter().filter(|&&b| b == b'\n').count();
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            let (line, after) = rest.split_at(end);
            rest = &after[1..];
            left -= 1;
            let wanted = self.head.len() < HEAD_LINES || left < TAIL_LINES;
            if wanted {
                self.extend_partial(line);
                let text = self.finish_line();
                shown(&text);
                self.push(text);
            } else {
                // Neither kept nor shown: counted, and whole in the log.
                self.partial.clear();
                self.partial_cut = false;
                self.lines += 1;
            }
        }
        self.extend_partial(rest);
    }

    fn extend_partial(&mut self, bytes: &[u8]) {
        let room = MAX_LINE.saturating_sub(self.partial.len());
        self.partial_cut |= bytes.len() > room;
        self.partial
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    fn finish_line(&mut self) -> String {
        let mut text = String::from_utf8_lossy(&self.partial).into_owned();
        if text.ends_with('\r') {
            text.pop();
        }
        if self.partial_cut {
            text.push_str(" [...]");
        }
        self.partial.clear();
        self.partial_cut = false;
        text
    }

    fn push(&mut self, text: String) {
        self.lines += 1;
        if self.head.len() < HEAD_LINES {
            self.head.push(text.clone());
        }
        if self.tail.len() == TAIL_LINES {
            self.tail.pop_front();
        }
        self.tail.push_back(text);
    }

    /// The end of the stream: a last line without a newline counts.
    fn end(&mut self, shown: &mut dyn FnMut(&str)) {
        if !self.partial.is_empty() || self.partial_cut {
            let text = self.finish_line();
            shown(&text);
            self.push(text);
        }
    }

    fn snapshot(&self) -> StreamCapture {
        StreamCapture {
            head: self.head.clone(),
            tail: self.tail.iter().cloned().collect(),
            lines: self.lines,
            bytes: self.bytes,
        }
    }
}

/// The shared state of the readers of one launch.
#[derive(Debug, Default)]
struct Shared {
    stdout: Kept,
    stderr: Kept,
    not_shown: u64,
    log_error: Option<String>,
}

impl Shared {
    /// Takes a chunk of `stream` (`None`: its end), queueing the kept lines to be shown.
    fn take(&mut self, stream: Stream, chunk: Option<&[u8]>, send: &SyncSender<String>) {
        let Self {
            stdout,
            stderr,
            not_shown,
            ..
        } = self;
        let kept = match stream {
            Stream::Stdout => stdout,
            Stream::Stderr => stderr,
        };
        let mut shown = |line: &str| show(send, line, not_shown);
        match chunk {
            Some(chunk) => kept.take(chunk, &mut shown),
            None => kept.end(&mut shown),
        }
    }
}

/// The readers of one launch's streams.
pub struct Readers {
    shared: Arc<Mutex<Shared>>,
    threads: Vec<JoinHandle<()>>,
    lines: Receiver<String>,
    log: Option<PathBuf>,
}

impl Readers {
    /// Starts a reader per stream; the whole output goes to `log` (created, mode 0600).
    pub fn start(streams: Vec<(Stream, Box<dyn Read + Send>)>, log: Option<&Path>) -> Self {
        let shared = Arc::new(Mutex::new(Shared::default()));
        let (file, log) = match log.map(open_log) {
            Some(Ok(file)) => (Some(Arc::new(Mutex::new(file))), log.map(Path::to_path_buf)),
            Some(Err(err)) => {
                lock(&shared).log_error = Some(crate::error_text(&err));
                (None, None)
            }
            None => (None, None),
        };
        let (send, lines) = std::sync::mpsc::sync_channel(SHOW_QUEUE);
        let threads = streams
            .into_iter()
            .map(|(stream, reader)| {
                let (shared, file, send) = (Arc::clone(&shared), file.clone(), send.clone());
                std::thread::spawn(move || read_stream(stream, reader, &shared, file, &send))
            })
            .collect();
        Self {
            shared,
            threads,
            lines,
            log,
        }
    }

    /// Starts a reader for the child's piped stdout and stderr (taken from it).
    pub fn of_child(child: &mut std::process::Child, log: Option<&Path>) -> Self {
        let streams = [
            child
                .stdout
                .take()
                .map(|s| (Stream::Stdout, Box::new(s) as Box<dyn Read + Send>)),
            child
                .stderr
                .take()
                .map(|s| (Stream::Stderr, Box::new(s) as Box<dyn Read + Send>)),
        ];
        Self::start(streams.into_iter().flatten().collect(), log)
    }

    /// The lines that arrived to be shown (at most the queue's size).
    pub fn arrived(&self) -> impl Iterator<Item = String> + '_ {
        self.lines.try_iter().take(SHOW_QUEUE)
    }

    /// Whether every reader has reached the end of its stream.
    pub fn finished(&self) -> bool {
        self.threads.iter().all(JoinHandle::is_finished)
    }

    /// What was kept so far.
    pub fn capture(&self) -> Capture {
        let shared = lock(&self.shared);
        Capture {
            stdout: shared.stdout.snapshot(),
            stderr: shared.stderr.snapshot(),
            log: self.log.as_ref().map(|p| p.display().to_string()),
            log_error: shared.log_error.clone(),
            not_shown: shared.not_shown,
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}

fn open_log(path: &Path) -> Result<std::fs::File, npuprof_journal::JournalError> {
    npuprof_journal::create_private_file(path)
}

/// One reader: chunks go whole to the log (cut at the last newline so that lines of the two
/// streams do not interleave mid-line) and into the capture.
fn read_stream(
    stream: Stream,
    mut reader: Box<dyn Read + Send>,
    shared: &Mutex<Shared>,
    file: Option<Arc<Mutex<std::fs::File>>>,
    send: &SyncSender<String>,
) {
    let mut buf = vec![0_u8; CHUNK];
    let mut pending: Vec<u8> = Vec::new();
    let write_log = |bytes: &[u8], shared: &Mutex<Shared>| {
        let Some(file) = &file else { return };
        if let Err(err) = lock(file).write_all(bytes) {
            let mut shared = lock(shared);
            if shared.log_error.is_none() {
                shared.log_error = Some(format!("writing the launch log failed: {err}"));
            }
        }
    };
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let chunk = &buf[..n];
        lock(shared).take(stream, Some(chunk), send);
        // The log gets whole lines; a line longer than a chunk goes out in pieces.
        pending.extend_from_slice(chunk);
        let cut = match pending.iter().rposition(|&b| b == b'\n') {
            Some(i) => i + 1,
            None if pending.len() >= CHUNK => pending.len(),
            None => 0,
        };
        if cut > 0 {
            write_log(&pending[..cut], shared);
            pending.drain(..cut);
        }
    }
    if !pending.is_empty() {
        write_log(&pending, shared);
    }
    lock(shared).take(stream, None, send);
}

/// Queues `line` to be shown, or counts it when the queue is full (never waits).
fn show(send: &SyncSender<String>, line: &str, not_shown: &mut u64) {
    match send.try_send(line.to_owned()) {
        Ok(()) => {}
        Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => *not_shown += 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(input: &[&[u8]]) -> StreamCapture {
        let mut kept = Kept::default();
        for chunk in input {
            kept.take(chunk, &mut |_| {});
        }
        kept.end(&mut |_| {});
        kept.snapshot()
    }

    #[test]
    fn lines_across_chunks_and_a_last_line_without_newline() {
        let capture = kept(&[b"one\ntw", b"o\nthree"]);
        assert_eq!(capture.head, ["one", "two", "three"]);
        assert_eq!(capture.lines, 3);
        assert_eq!(capture.bytes, 13);
    }

    #[test]
    fn head_and_tail_stay_bounded_and_long_lines_are_cut() {
        let many: String = (0..10_000).map(|i| format!("line {i}\n")).collect();
        let long = vec![b'x'; MAX_LINE * 3];
        let capture = kept(&[many.as_bytes(), &long, b"\nlast\n"]);
        assert_eq!(capture.head.len(), HEAD_LINES);
        assert_eq!(capture.head[0], "line 0");
        assert_eq!(capture.tail.len(), TAIL_LINES);
        assert_eq!(capture.tail.last().map(String::as_str), Some("last"));
        let cut = &capture.tail[TAIL_LINES - 2];
        assert!(
            cut.len() <= MAX_LINE + 6 && cut.ends_with(" [...]"),
            "{cut}"
        );
        assert_eq!(capture.lines, 10_002);
    }

    #[test]
    fn kept_lines_do_not_repeat_a_short_stream() {
        let capture = Capture {
            stdout: kept(&[b"a\nb\n"]),
            ..Capture::default()
        };
        assert_eq!(capture.kept_lines(), ["a", "b"]);
    }
}
