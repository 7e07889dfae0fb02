//! Output conventions shared by every command: data on stdout, human messages on stderr,
//! colour only on a terminal and never with `NO_COLOR` (anstream handles both).

use std::io::Write;

use serde::Serialize;

/// Prints `value` as pretty JSON followed by a newline on stdout.
pub fn print_json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    // Serialise first, then write once: the writer is unbuffered.
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    anstream::stdout().lock().write_all(text.as_bytes())?;
    Ok(())
}

/// Whether stdout gets colour (a terminal, and `NO_COLOR`/`CLICOLOR*` allow it).
pub fn stdout_colored() -> bool {
    anstream::AutoStream::choice(&std::io::stdout()) != anstream::ColorChoice::Never
}

/// Whether stderr gets colour.
pub fn stderr_colored() -> bool {
    anstream::AutoStream::choice(&std::io::stderr()) != anstream::ColorChoice::Never
}
