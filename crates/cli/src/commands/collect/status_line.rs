//! How a launch's output is shown on stderr: every line as it comes when stderr is not a
//! terminal; on a terminal, one redrawn status line (elapsed time, the run's last line).

use std::io::IsTerminal as _;
use std::time::Duration;

use npuprof_workflow::collect::{Output, POLL};

/// The status line of one or more launches.
pub struct StatusLine {
    /// One redrawn line (a terminal) or every line as it comes.
    terminal: bool,
    last: String,
    drawn: bool,
    /// A line arrived since the last draw.
    fresh: bool,
    elapsed: Duration,
}

impl StatusLine {
    /// The widest status line drawn.
    const WIDTH: usize = 100;

    /// A status line on stderr.
    pub fn new() -> Self {
        Self {
            terminal: std::io::stderr().is_terminal(),
            last: String::new(),
            drawn: false,
            fresh: false,
            elapsed: Duration::ZERO,
        }
    }

    /// Shows one piece of the launch's output.
    pub fn show(&mut self, output: Output) {
        match output {
            Output::Line(line) if !self.terminal => {
                errln!("{line}");
            }
            Output::Line(line) => {
                if !line.trim().is_empty() {
                    self.last = line;
                    self.fresh = true;
                }
            }
            Output::Tick(elapsed) => {
                self.elapsed = elapsed;
                // At most one redraw per poll, however fast the run writes.
                let second = elapsed.as_millis() % 1000 < POLL.as_millis();
                if self.terminal && (self.fresh || !self.drawn || second) {
                    self.draw();
                }
            }
            Output::Finished => {
                if self.terminal {
                    self.draw();
                    errln!();
                    self.drawn = false;
                    self.last.clear();
                }
            }
        }
    }

    fn draw(&mut self) {
        let secs = self.elapsed.as_secs();
        let head = format!(
            "npuprof collect: running {:02}:{:02} | ",
            secs / 60,
            secs % 60
        );
        let room = Self::WIDTH.saturating_sub(head.chars().count());
        let tail: String = self.last.chars().take(room).collect();
        errprint!("\r\x1b[2K{head}{tail}");
        self.drawn = true;
        self.fresh = false;
    }
}
