//! Output conventions shared by every command: data on stdout, human messages on stderr,
//! colour only on a terminal and never with `NO_COLOR` (anstream handles both).
//!
//! Every `--json` document carries `schema_version` (its command's own, else
//! [`SCHEMA_VERSION`]); a failure under
//! `--json` is the error document of [`print_json_error`]. A closed stdout (the reader went away,
//! as in `npuprof route --json | head -c 10`) ends the output quietly: the rest is dropped, nothing
//! is said on stderr, and the command keeps its own exit code.
//!
//! Nothing here panics on an output error (the standard print macros do): messages go to
//! stderr through [`stderr_write`] (the `errln!` and `errprint!` macros), which drops what
//! cannot be written and remembers it, and the command then exits 2 ([`stderr_failed`]) after
//! finishing its work (collect restores the repository first).

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

use crate::failure::Failure;

/// The version of a `--json` document whose command sets none of its own, and of the error
/// document; fields may be added within a version, never renamed.
pub const SCHEMA_VERSION: u32 = 1;

/// A `--json` document: `schema_version` first, then the report's own fields.
#[derive(Serialize)]
struct Versioned<'a, T> {
    schema_version: u32,
    #[serde(flatten)]
    report: &'a T,
}

/// The document printed on stdout when a command fails under `--json`.
#[derive(Serialize)]
struct ErrorDocument<'a> {
    schema_version: u32,
    ok: bool,
    error: &'a Failure,
}

/// Prints `report` (a JSON object) as pretty JSON on stdout, with `schema_version` first (see
/// [`render_json`]).
pub fn print_json<T: Serialize>(report: &T) -> anyhow::Result<()> {
    stdout().write_all(render_json(report)?.as_bytes())?;
    Ok(())
}

/// `report` as pretty JSON and a newline, with `schema_version` first: the report's own when it
/// has one (a command whose schema has its own version), else [`SCHEMA_VERSION`].
fn render_json<T: Serialize>(report: &T) -> serde_json::Result<String> {
    let has_version = serde_json::to_value(report)?
        .as_object()
        .is_some_and(|fields| fields.contains_key("schema_version"));
    let mut text = if has_version {
        serde_json::to_string_pretty(report)?
    } else {
        serde_json::to_string_pretty(&Versioned {
            schema_version: SCHEMA_VERSION,
            report,
        })?
    };
    text.push('\n');
    Ok(text)
}

/// Prints `report` as a `--json` document of a command whose schema has its own version.
pub fn print_versioned_json<T: Serialize>(schema_version: u32, report: &T) -> anyhow::Result<()> {
    print_json_document(&Versioned {
        schema_version,
        report,
    })
}

/// Prints a document that already carries its own `schema_version` (route's report, defined by
/// its library) as pretty JSON on stdout.
pub fn print_json_document<T: Serialize>(document: &T) -> anyhow::Result<()> {
    // Serialise first, then write once: the writer is unbuffered.
    let mut text = serde_json::to_string_pretty(document)?;
    text.push('\n');
    stdout().write_all(text.as_bytes())?;
    Ok(())
}

/// Prints `{"schema_version", "ok": false, "error": {"code", "message", "hint"}}` on stdout.
pub fn print_json_error(failure: &Failure) -> anyhow::Result<()> {
    print_json_document(&ErrorDocument {
        schema_version: SCHEMA_VERSION,
        ok: false,
        error: failure,
    })
}

/// Writes `text` on stdout as it is.
pub fn print_text(text: &str) -> anyhow::Result<()> {
    stdout().write_all(text.as_bytes())?;
    Ok(())
}

/// Locked stdout (colour handled by anstream) that drops everything once the reader has gone.
pub fn stdout() -> QuietPipe<anstream::AutoStream<io::StdoutLock<'static>>> {
    QuietPipe {
        inner: anstream::stdout().lock(),
        closed: false,
    }
}

/// A writer that treats a closed pipe as the end of the output: the write "succeeds" and
/// nothing more is written. Every other error is returned.
pub struct QuietPipe<W> {
    inner: W,
    closed: bool,
}

impl<W: Write> Write for QuietPipe<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.closed {
            return Ok(buf.len());
        }
        match self.inner.write(buf) {
            Err(err) if err.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(buf.len())
            }
            other => other,
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.closed {
            return Ok(());
        }
        match self.inner.flush() {
            Err(err) if err.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            other => other,
        }
    }
}

/// Set once a message could not be written to stderr (a full disk, a closed file).
static STDERR_FAILED: AtomicBool = AtomicBool::new(false);

/// Writes a message on stderr (colour handled by anstream). A closed pipe drops it quietly;
/// any other error drops it and is remembered for [`stderr_failed`]. Never panics.
pub fn stderr_write(message: fmt::Arguments<'_>) {
    let mut err = anstream::stderr().lock();
    let written = err.write_fmt(message).and_then(|()| err.flush());
    if let Err(err) = written
        && err.kind() != io::ErrorKind::BrokenPipe
    {
        STDERR_FAILED.store(true, Ordering::SeqCst);
    }
}

/// Whether a message could not be written to stderr (other than to a closed pipe).
pub fn stderr_failed() -> bool {
    STDERR_FAILED.load(Ordering::SeqCst)
}

/// The columns the terminal reports keep to: [`REPORT_WIDTH`], or the terminal's width when
/// stdout is a narrower terminal (never under [`MIN_WIDTH`]).
pub fn report_width() -> usize {
    static WIDTH: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *WIDTH.get_or_init(|| {
        let terminal = terminal_size::terminal_size().map(|(w, _)| usize::from(w.0));
        width_for(terminal)
    })
}

/// The widest the terminal reports get.
pub const REPORT_WIDTH: usize = 100;

/// The narrowest the terminal reports get, however narrow the terminal.
const MIN_WIDTH: usize = 40;

/// [`report_width`] for a terminal of `columns` (`None`: stdout is not a terminal).
fn width_for(columns: Option<usize>) -> usize {
    columns.map_or(REPORT_WIDTH, |c| c.clamp(MIN_WIDTH, REPORT_WIDTH))
}

/// Whether stdout gets colour (a terminal, and `NO_COLOR`/`CLICOLOR*` allow it).
pub fn stdout_colored() -> bool {
    anstream::AutoStream::choice(&io::stdout()) != anstream::ColorChoice::Never
}

/// Whether stderr gets colour.
pub fn stderr_colored() -> bool {
    anstream::AutoStream::choice(&io::stderr()) != anstream::ColorChoice::Never
}

#[cfg(test)]
mod tests {
    use std::io::{self, Write};

    use super::{QuietPipe, render_json};

    #[test]
    fn schema_version_is_added_once_and_first() {
        #[derive(serde::Serialize)]
        struct Plain {
            value: u8,
        }
        #[derive(serde::Serialize)]
        struct OwnVersion {
            schema_version: u32,
            value: u8,
        }
        assert_eq!(
            render_json(&Plain { value: 7 }).unwrap(),
            "{\n  \"schema_version\": 1,\n  \"value\": 7\n}\n"
        );
        assert_eq!(
            render_json(&OwnVersion {
                schema_version: 2,
                value: 7
            })
            .unwrap(),
            "{\n  \"schema_version\": 2,\n  \"value\": 7\n}\n"
        );
    }

    /// A writer whose reader has gone.
    struct Closed;

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
    }

    /// A writer that fails for another reason.
    struct Full;

    impl Write for Full {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::StorageFull.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_ends_the_output_quietly() {
        let mut out = QuietPipe {
            inner: Closed,
            closed: false,
        };
        out.write_all(b"first")
            .expect("a closed pipe is not an error");
        out.write_all(b"second").expect("still not an error");
        out.flush().expect("flush after close");
        assert!(out.closed);
    }

    #[test]
    fn other_write_errors_are_reported() {
        let mut out = QuietPipe {
            inner: Full,
            closed: false,
        };
        let err = out.write_all(b"data").expect_err("a full disk is an error");
        assert_eq!(err.kind(), io::ErrorKind::StorageFull);
    }

    #[test]
    fn reports_keep_to_a_narrower_terminal_and_to_100_columns_elsewhere() {
        assert_eq!(super::width_for(None), 100);
        assert_eq!(super::width_for(Some(72)), 72);
        assert_eq!(super::width_for(Some(250)), 100);
        assert_eq!(super::width_for(Some(10)), 40);
    }
}
