//! `npuprof status`: list what npuprof has changed in a repository, and whether each change
//! is still as npuprof left it.

use std::path::PathBuf;

use serde::Serialize;

use crate::exit::Exit;
use crate::journal::{self, EntryStatus};
use crate::output;

/// Arguments of `npuprof status`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The repository to inspect.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,
    /// Print the status as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// The `--json` document.
#[derive(Debug, Serialize)]
struct StatusReport {
    /// Whether a journal exists (npuprof has changes in place).
    patched: bool,
    /// Every journaled change, oldest first.
    entries: Vec<EntryStatus>,
}

/// Runs `npuprof status`.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let entries = journal::status(&args.repo)?;
    let report = StatusReport {
        patched: entries.is_some(),
        entries: entries.unwrap_or_default(),
    };
    if args.json {
        output::print_json(&report)?;
        return Ok(Exit::Ok);
    }
    if !report.patched {
        anstream::eprintln!(
            "npuprof: no changes recorded in `{}` (nothing to revert)",
            args.repo.display()
        );
        return Ok(Exit::Ok);
    }
    let width = report
        .entries
        .iter()
        .map(|e| e.path.as_os_str().len())
        .max()
        .unwrap_or(0);
    for entry in &report.entries {
        let detail = entry
            .detail
            .as_deref()
            .map(|d| format!(" ({d})"))
            .unwrap_or_default();
        anstream::println!(
            "{:<width$}  {:<11}  by {} at {}: {}{detail}",
            entry.path.display(),
            entry.kind,
            entry.command,
            entry.time,
            entry.state.describe(),
        );
    }
    let changed = report
        .entries
        .iter()
        .filter(|e| !e.matches_post_patch)
        .count();
    anstream::eprintln!(
        "npuprof: {} change(s) recorded, {changed} no longer as npuprof left them; undo with `npuprof revert`",
        report.entries.len()
    );
    Ok(Exit::Ok)
}
