//! Output conventions shared by every command: data on stdout, human messages on stderr,
//! colour only on a terminal and never with `NO_COLOR` (anstream handles both).

use std::io::Write;

use serde::Serialize;

/// Prints `value` as pretty JSON followed by a newline on stdout.
pub fn print_json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    let mut out = anstream::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
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
