//! `npuprof inject` (path B): write a profiling harness module next to an entry script.
//!
//! The harness is rendered by `npuprof_patch::inject` (pure text in, text out) and created
//! through one journaled transaction (`npuprof revert` removes it). `--dry-run` prints a
//! `git apply`-compatible new-file diff on stdout and changes nothing (exit 1 when it would
//! change something, 0 when the harness is already there). Refusals exit 2 and change nothing:
//! an entry outside the repository or with a syntax error, or a target file npuprof did not create.

use std::path::{Component, Path, PathBuf};

use anyhow::{Context as _, bail};
use npuprof_journal::Transaction;
use npuprof_patch::diff::unified_diff;
use npuprof_patch::inject::{
    HarnessOptions, Phase, WindowPlan, Wiring, new_file_diff, render_harness,
};
use serde::Serialize;

use crate::exit::Exit;
use crate::output::print_json;

/// Which phases the harness profiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PhaseArg {
    /// Decode steps only.
    Decode,
    /// One prefill forward.
    Prefill,
    /// Prefill and decode in one timeline (active = 1 + N).
    Both,
    /// Prefill and decode with two profilers and two save paths.
    Separate,
}

impl From<PhaseArg> for Phase {
    fn from(phase: PhaseArg) -> Self {
        match phase {
            PhaseArg::Decode => Phase::Decode,
            PhaseArg::Prefill => Phase::Prefill,
            PhaseArg::Both => Phase::Both,
            PhaseArg::Separate => Phase::Separate,
        }
    }
}

/// Arguments of `npuprof inject`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The repository the harness is written into.
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// The inference entry script (relative to the repository, or a path inside it).
    #[arg(long, value_name = "FILE")]
    pub entry: PathBuf,
    /// Phases to profile.
    #[arg(long, value_enum, default_value = "decode")]
    pub phase: PhaseArg,
    /// Decode steps to record.
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    pub decode_steps: u32,
    /// Where to write the harness (relative to the repository). Default: `<entry stem>_profiled.py`
    /// next to the entry.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print the diff and change nothing (exit 1 when it would change something).
    #[arg(long)]
    pub dry_run: bool,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// The `--json` report.
#[derive(Debug, Serialize)]
struct Report<'a> {
    repo: String,
    entry: &'a str,
    harness: &'a str,
    phase: Phase,
    decode_steps: u32,
    dry_run: bool,
    changed: bool,
    run: String,
    save_path: String,
    windows: &'a [WindowPlan],
    wiring: &'a [Wiring],
    stubs: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    diff: Option<&'a str>,
}

/// Runs `npuprof inject`.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let Args {
        repo: repo_arg,
        entry,
        phase,
        decode_steps,
        out,
        dry_run,
        json,
    } = args;
    if !repo_arg.is_dir() {
        bail!("the repository `{}` is not a directory", repo_arg.display());
    }
    let repo = repo_arg
        .canonicalize()
        .with_context(|| format!("cannot open the repository `{}`", repo_arg.display()))?;
    let entry_rel = repo_relative(&repo, &entry, true)
        .with_context(|| format!("--entry `{}`", entry.display()))?;
    let entry_path = repo.join(&entry_rel);
    let entry_source = std::fs::read_to_string(&entry_path)
        .with_context(|| format!("cannot read the entry script `{}`", entry_path.display()))?;
    let out_rel = match &out {
        Some(out) => repo_relative(&repo, out, false)
            .with_context(|| format!("--out `{}`", out.display()))?,
        None => default_harness_path(&entry_rel),
    };
    if out_rel == entry_rel {
        bail!("--out `{}` is the entry script itself", out_rel.display());
    }
    let entry_display = slash_path(&entry_rel);
    let harness_display = slash_path(&out_rel);
    let entry_from_harness = relative_from(out_rel.parent().unwrap_or(Path::new("")), &entry_rel);
    let options = HarnessOptions {
        phase: phase.into(),
        decode_steps,
        entry_rel: &entry_from_harness,
        entry_display: &entry_display,
        harness_display: &harness_display,
    };
    let harness = render_harness(&entry_source, &options)
        .with_context(|| format!("entry `{entry_display}`"))?;

    let mut tx = if dry_run {
        Transaction::preview(&repo, "inject")?
    } else {
        Transaction::begin(&repo, "inject")?
    };
    // Refuses before anything is shown or written when the target exists and is not ours.
    tx.create_file(&out_rel, harness.text.clone().into_bytes())?;
    let existing = std::fs::read(repo.join(&out_rel)).ok();
    let changed = existing.as_deref() != Some(harness.text.as_bytes());
    let diff = match &existing {
        None => new_file_diff(&harness_display, &harness.text),
        Some(old) => unified_diff(
            &harness_display,
            &String::from_utf8_lossy(old),
            &harness.text,
        ),
    };
    if !dry_run && changed {
        tx.commit()?;
    }
    let stubs: Vec<&Wiring> = harness.wiring.iter().filter(|w| !w.wired).collect();
    let save_dir = out_rel
        .parent()
        .map(|p| p.join("npuprof_prof"))
        .unwrap_or_else(|| PathBuf::from("npuprof_prof"));
    let report = Report {
        repo: repo_arg.display().to_string(),
        entry: &entry_display,
        harness: &harness_display,
        phase: options.phase,
        decode_steps,
        dry_run,
        changed,
        run: format!("python3 {harness_display}"),
        save_path: slash_path(&save_dir),
        windows: &harness.windows,
        wiring: &harness.wiring,
        stubs: stubs.len(),
        diff: dry_run.then_some(diff.as_str()),
    };
    if json {
        print_json(&report)?;
    } else if dry_run {
        anstream::print!("{diff}");
    }
    if !json {
        print_summary(&report, &stubs);
    }
    Ok(if dry_run && changed {
        Exit::Findings
    } else {
        Exit::Ok
    })
}

/// The human summary on stderr.
fn print_summary(report: &Report<'_>, stubs: &[&Wiring]) {
    let verb = match (report.dry_run, report.changed) {
        (true, true) => "would write",
        (false, true) => "wrote",
        (_, false) => "unchanged (already written by npuprof):",
    };
    let windows = report
        .windows
        .iter()
        .map(|w| {
            format!(
                "{} (active={}, {} step() calls)",
                w.name, w.active, w.step_calls
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    anstream::eprintln!(
        "npuprof: {verb} {} — profiling harness for {}",
        report.harness,
        report.entry
    );
    anstream::eprintln!("  windows: {windows}");
    anstream::eprintln!("  output:  {}/<window>", report.save_path);
    anstream::eprintln!("  run:     {}", report.run);
    if !report.dry_run && report.changed {
        anstream::eprintln!("  undo:    npuprof revert --repo {}", report.repo);
    }
    if !stubs.is_empty() {
        anstream::eprintln!(
            "npuprof: warning: {} function(s) are stubs that raise NotImplementedError until filled in:",
            stubs.len()
        );
        for stub in stubs {
            anstream::eprintln!("  {}(): {}", stub.function, stub.detail);
        }
    }
}

/// `<dir>/<stem>_profiled.py` next to the entry.
fn default_harness_path(entry_rel: &Path) -> PathBuf {
    let stem = entry_rel
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "entry".to_owned());
    entry_rel.with_file_name(format!("{stem}_profiled.py"))
}

/// A path given on the command line as a clean repository-relative path: relative paths are
/// taken relative to the repository (or, when `must_exist` and only that exists, to the current
/// directory); absolute paths must lie inside the repository.
fn repo_relative(repo: &Path, given: &Path, must_exist: bool) -> anyhow::Result<PathBuf> {
    let candidate = if given.is_absolute() {
        given.to_path_buf()
    } else if !must_exist || repo.join(given).exists() || !given.exists() {
        repo.join(given)
    } else {
        std::env::current_dir()?.join(given)
    };
    let parent = candidate.parent().unwrap_or(Path::new("/"));
    let name = candidate.file_name().context("the path names no file")?;
    let parent = parent
        .canonicalize()
        .with_context(|| format!("the directory `{}` does not exist", parent.display()))?;
    let full = parent.join(name);
    if must_exist && !full.is_file() {
        bail!("no such file in the repository `{}`", repo.display());
    }
    let rel = full
        .strip_prefix(repo)
        .map_err(|_| anyhow::anyhow!("the path is outside the repository `{}`", repo.display()))?;
    if rel.components().any(|c| !matches!(c, Component::Normal(_))) || rel.as_os_str().is_empty() {
        bail!("not a file path inside the repository");
    }
    Ok(rel.to_path_buf())
}

/// `a/b/c` with forward slashes.
fn slash_path(path: &Path) -> String {
    path.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// The path of `target` as seen from directory `from` (both repository-relative).
fn relative_from(from: &Path, target: &Path) -> String {
    let from: Vec<_> = from.components().collect();
    let to: Vec<_> = target.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".to_owned(); from.len() - common];
    parts.extend(
        to[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{default_harness_path, relative_from};

    #[test]
    fn harness_sits_next_to_the_entry() {
        assert_eq!(
            default_harness_path(Path::new("src/infer.py")),
            Path::new("src/infer_profiled.py")
        );
        assert_eq!(
            relative_from(Path::new("src"), Path::new("src/infer.py")),
            "infer.py"
        );
        assert_eq!(
            relative_from(Path::new("tools/prof"), Path::new("src/infer.py")),
            "../../src/infer.py"
        );
        assert_eq!(
            relative_from(Path::new(""), Path::new("infer.py")),
            "infer.py"
        );
    }
}
