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

/// A `--json` document: `schema_version` first, then the report's own fields.
#[derive(Debug, Serialize)]
pub struct Versioned<'a, T: Serialize> {
    /// The version of the document's schema.
    pub schema_version: u32,
    /// The report.
    #[serde(flatten)]
    pub report: &'a T,
}

/// Prints `report` as a `--json` document with `schema_version`.
pub fn print_versioned_json<T: Serialize>(schema_version: u32, report: &T) -> anyhow::Result<()> {
    print_json(&Versioned {
        schema_version,
        report,
    })
}

/// Whether stdout gets colour (a terminal, and `NO_COLOR`/`CLICOLOR*` allow it).
pub fn stdout_colored() -> bool {
    anstream::AutoStream::choice(&std::io::stdout()) != anstream::ColorChoice::Never
}

/// Whether stderr gets colour.
pub fn stderr_colored() -> bool {
    anstream::AutoStream::choice(&std::io::stderr()) != anstream::ColorChoice::Never
}
