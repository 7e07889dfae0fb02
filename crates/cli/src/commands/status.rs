//! `npuprof status`: list what npuprof has changed in a repository, and whether each change
//! is still as npuprof left it.

use std::path::PathBuf;

use npuprof_journal::EntryStatus;
use serde::Serialize;

use crate::exit::Exit;
use crate::output;

/// Arguments of `npuprof status`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The repository to inspect (or any directory inside it: the root is found like git's).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,
    /// Print the status as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// The `--json` document.
#[derive(Debug, Serialize)]
struct StatusReport {
    /// The version of this document's schema.
    schema_version: u32,
    /// Whether a journal exists (npuprof has changes in place).
    patched: bool,
    /// Every journaled change, oldest first.
    entries: Vec<EntryStatus>,
}

/// Runs `npuprof status`.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let repo = npuprof_journal::find_root(&args.repo)?;
    let entries = npuprof_journal::status(&repo)?;
    let report = StatusReport {
        schema_version: 1,
        patched: entries.is_some(),
        entries: entries.unwrap_or_default(),
    };
    if args.json {
        output::print_json(&report)?;
        return Ok(Exit::Ok);
    }
    if !report.patched {
        errln!(
            "npuprof: no changes recorded in `{}` or above (nothing to revert)",
            repo.display()
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
        output::print_text(&format!(
            "{:<width$}  {:<11}  by {} at {}: {}{detail}\n",
            entry.path.display(),
            entry.kind.as_str(),
            entry.command,
            entry.time,
            entry.state.describe(),
        ))?;
    }
    let changed = report
        .entries
        .iter()
        .filter(|e| !e.matches_post_patch)
        .count();
    errln!(
        "npuprof: {} change(s) recorded, {changed} no longer as npuprof left them; undo with `npuprof revert`",
        report.entries.len()
    );
    Ok(Exit::Ok)
}
