//! `npuprof patch` (path A): set the profiling window in a cann-recipes repository's
//! `executor/utils/profiler_context.py` and one run config.
//!
//! `--dry-run` prints a `git apply`-compatible diff on stdout and changes nothing (exit 1 when
//! there are changes, 0 when there is nothing to change). Otherwise every changed file is written
//! through one journaled transaction (all or none; `npuprof revert` undoes it) and a summary goes
//! to stderr (exit 0). `--json` prints the report on stdout instead of the diff/summary.
//! Refusals (syntax errors, missing definitions, a config that cannot be patched as asked, a
//! target outside the repository) exit 2 and change nothing.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anstyle::{AnsiColor, Style};
use anyhow::{Context as _, bail};
use npuprof_journal::Transaction;
use npuprof_patch::Edits;
use npuprof_patch::diff::unified_diff;
use npuprof_patch::plan::Plan;
use npuprof_patch::recipes::{PatchRequest, SourceFile, TokenBudget, patch_recipes};
use serde::Serialize;

use super::plan::{PhaseArg, compact_steps};
use crate::exit::Exit;
use crate::output::{print_json, stdout_colored};

/// The profiler wrapper `patch` rewrites, relative to the repository.
pub const PROFILER_CONTEXT: &str = "executor/utils/profiler_context.py";

/// Arguments of `npuprof patch`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The repository (cann-recipes-infer layout).
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// The run config to patch: a path from the current directory or the repository (it must
    /// resolve inside the repository).
    #[arg(long, value_name = "YAML", conflicts_with_all = ["model", "yaml"], required_unless_present = "model")]
    pub config: Option<PathBuf>,
    /// Model directory under models/ (with --yaml, like infer.sh: models/<M>/config/<FILE>).
    #[arg(long, value_name = "M", requires = "yaml")]
    pub model: Option<String>,
    /// Config file name under models/<M>/config/.
    #[arg(long, value_name = "FILE", requires = "model")]
    pub yaml: Option<String>,
    /// Phases to profile; the other phase's branch gets a no-op profiler.
    #[arg(long, value_enum, default_value = "both")]
    pub phase: PhaseArg,
    /// Decode steps to record (the collection guide recommends 10).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub decode_active: u64,
    /// Decode steps to skip first (default: keep the current value).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub decode_skip_first: Option<u64>,
    /// `auto` raises scheduler_config.max_new_tokens to the plan's minimum when lower; N sets it.
    #[arg(long, default_value = "auto", value_parser = parse_budget)]
    pub max_new_tokens: TokenBudget,
    /// Print the diff and change nothing (exit 1 when there are changes).
    #[arg(long)]
    pub dry_run: bool,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

fn parse_budget(value: &str) -> Result<TokenBudget, String> {
    if value == "auto" {
        return Ok(TokenBudget::Auto);
    }
    match value.parse::<u64>() {
        Ok(n) if n >= 1 => Ok(TokenBudget::Set(n)),
        _ => Err(format!(
            "expected `auto` or a number of tokens ≥ 1, got `{value}`"
        )),
    }
}

/// Whether `execute` only computes (dry run) or also writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Compute the edits and the diff; change nothing.
    DryRun,
    /// Write the changed files through one journaled transaction.
    Write,
}

/// One edit, for `--json`.
#[derive(Debug, Serialize)]
pub struct EditReport {
    /// Byte offset where the replaced range starts (in the file as it was).
    pub start: usize,
    /// Byte offset where it ends (exclusive).
    pub end: usize,
    /// 1-based line of `start`.
    pub line: usize,
    /// The replaced text.
    pub original: String,
    /// The new text.
    pub replacement: String,
}

/// One file of the patch.
#[derive(Debug, Serialize)]
pub struct FileReport {
    /// Repository-relative path.
    pub path: String,
    /// The unified diff (empty when the file does not change).
    pub diff: String,
    /// One line per change.
    pub changes: Vec<String>,
    /// The byte-range edits, sorted.
    pub edits: Vec<EditReport>,
}

/// What `patch` computed (and, in write mode, wrote).
#[derive(Debug, Serialize)]
pub struct Report {
    /// The canonical repository root.
    pub repo: String,
    /// Every file considered: profiler_context.py, then the run config.
    pub files: Vec<FileReport>,
    /// The plan as it runs with the patched files.
    pub plan: Plan,
    /// Whether any file changes.
    pub changed: bool,
    /// Whether the changes were written (false for a dry run or when nothing changes).
    pub written: bool,
    /// Things to know (a phase that will not be captured, a small budget).
    pub warnings: Vec<String>,
}

/// Computes the patch and, in [`Mode::Write`], applies it; prints nothing (for `collect`).
pub fn execute(args: &Args, mode: Mode) -> anyhow::Result<Report> {
    let repo = args
        .repo
        .canonicalize()
        .with_context(|| format!("cannot open the repository `{}`", args.repo.display()))?;
    let python_rel = confined(&repo, &repo.join(PROFILER_CONTEXT)).map_err(|e| match e {
        Confinement::Missing(_) => anyhow::anyhow!(
            "`{}` has no {PROFILER_CONTEXT}: not a cann-recipes style repository (run `npuprof route` to find the path)",
            repo.display()
        ),
        other => other.into(),
    })?;
    let config_rel = resolve_config(&repo, args)?;

    let mut tx = match mode {
        Mode::Write => Transaction::begin(&repo, "patch")?,
        Mode::DryRun => Transaction::preview(&repo, "patch")?,
    };
    let python = read_text(&tx, &python_rel)?;
    let yaml = read_text(&tx, &config_rel)?;
    let request = PatchRequest {
        phases: args.phase.into(),
        decode_active: args.decode_active,
        decode_skip_first: args.decode_skip_first,
        max_new_tokens: args.max_new_tokens,
    };
    let patch = patch_recipes(&python, &yaml, &request).map_err(|e| {
        let path = match e.file {
            SourceFile::ProfilerContext => &python_rel,
            SourceFile::RunConfig => &config_rel,
        };
        anyhow::anyhow!(
            "refusing to patch `{}`: {e}; nothing was changed",
            path.display()
        )
    })?;

    let files = vec![
        file_report(
            &python_rel,
            &python,
            &patch.python.edits,
            patch.python.changes,
        ),
        file_report(&config_rel, &yaml, &patch.yaml.edits, patch.yaml.changes),
    ];
    let changed = files.iter().any(|f| !f.edits.is_empty());
    let mut written = false;
    if mode == Mode::Write && changed {
        for (rel, text, edits) in [
            (&python_rel, &python, &patch.python.edits),
            (&config_rel, &yaml, &patch.yaml.edits),
        ] {
            if !edits.is_empty() {
                tx.write_file(rel, edits.apply(text).into_bytes())?;
            }
        }
        tx.commit()?;
        written = true;
    }
    Ok(Report {
        repo: repo.display().to_string(),
        files,
        plan: patch.plan,
        changed,
        written,
        warnings: patch.warnings,
    })
}

/// Why a path cannot be patched.
#[derive(Debug)]
enum Confinement {
    /// It does not exist.
    Missing(PathBuf),
    /// It resolves (through a symlink) outside the repository.
    Outside {
        path: PathBuf,
        target: PathBuf,
        repo: PathBuf,
    },
}

impl std::fmt::Display for Confinement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Confinement::Missing(path) => write!(f, "`{}` does not exist", path.display()),
            Confinement::Outside { path, target, repo } => write!(
                f,
                "`{}` resolves to `{}`, outside the repository `{}`; refusing to edit it",
                path.display(),
                target.display(),
                repo.display()
            ),
        }
    }
}

impl std::error::Error for Confinement {}

/// The repository-relative path of `path` after resolving symlinks; refuses targets outside.
fn confined(repo: &Path, path: &Path) -> Result<PathBuf, Confinement> {
    let target = path
        .canonicalize()
        .map_err(|_| Confinement::Missing(path.to_path_buf()))?;
    match target.strip_prefix(repo) {
        Ok(rel) => Ok(rel.to_path_buf()),
        Err(_) => Err(Confinement::Outside {
            path: path.to_path_buf(),
            target,
            repo: repo.to_path_buf(),
        }),
    }
}

/// The run config, relative to the repository.
fn resolve_config(repo: &Path, args: &Args) -> anyhow::Result<PathBuf> {
    if let Some(config) = &args.config {
        // A relative path is taken from the current directory, else from the repository.
        let in_repo = repo.join(config);
        let path = if config.is_relative() && !config.exists() && in_repo.exists() {
            &in_repo
        } else {
            config
        };
        return Ok(confined(repo, path)?);
    }
    let (Some(model), Some(file)) = (&args.model, &args.yaml) else {
        bail!("pass --config YAML, or --model M --yaml FILE");
    };
    let path = repo.join("models").join(model).join("config").join(file);
    match confined(repo, &path) {
        Ok(rel) => Ok(rel),
        Err(Confinement::Missing(_)) => {
            let available = available_configs(repo);
            let list = if available.is_empty() {
                "none found under models/*/config/".to_owned()
            } else {
                available.join(", ")
            };
            bail!(
                "no config models/{model}/config/{file} in `{}`; available (--model M --yaml FILE): {list}",
                repo.display()
            )
        }
        Err(other) => Err(other.into()),
    }
}

/// `M --yaml FILE` pairs found under models/*/config/, sorted.
fn available_configs(repo: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(models) = std::fs::read_dir(repo.join("models")) else {
        return found;
    };
    for model in models.flatten() {
        let Ok(configs) = std::fs::read_dir(model.path().join("config")) else {
            continue;
        };
        for config in configs.flatten() {
            let name = config.file_name().to_string_lossy().into_owned();
            if name.ends_with(".yaml") || name.ends_with(".yml") {
                found.push(format!("{} {name}", model.file_name().to_string_lossy()));
            }
        }
    }
    found.sort();
    found
}

fn read_text(tx: &Transaction, rel: &Path) -> anyhow::Result<String> {
    let bytes = tx.read(rel)?;
    String::from_utf8(bytes)
        .with_context(|| format!("`{}` is not UTF-8; refusing to edit it", rel.display()))
}

fn file_report(rel: &Path, text: &str, edits: &Edits, changes: Vec<String>) -> FileReport {
    let path = rel.display().to_string();
    let new = edits.apply(text);
    FileReport {
        diff: unified_diff(&path, text, &new),
        path,
        changes,
        edits: edits
            .as_slice()
            .iter()
            .map(|e| EditReport {
                start: e.range.start,
                end: e.range.end,
                line: e.line_in(text),
                original: text[e.range.clone()].to_owned(),
                replacement: e.replacement.clone(),
            })
            .collect(),
    }
}

/// Runs `npuprof patch`.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let mode = if args.dry_run {
        Mode::DryRun
    } else {
        Mode::Write
    };
    let report = execute(&args, mode)?;
    if args.json {
        print_json(&report)?;
    } else {
        if args.dry_run {
            let mut out = anstream::stdout().lock();
            for file in &report.files {
                out.write_all(colored_diff(&file.diff, stdout_colored()).as_bytes())?;
            }
        }
        anstream::stderr()
            .lock()
            .write_all(summary(&report, args.dry_run).as_bytes())?;
    }
    Ok(if args.dry_run && report.changed {
        Exit::Findings
    } else {
        Exit::Ok
    })
}

fn colored_diff(diff: &str, color: bool) -> String {
    if !color {
        return diff.to_owned();
    }
    let style = |line: &str| match line {
        l if l.starts_with("diff --git") || l.starts_with("--- ") || l.starts_with("+++ ") => {
            Style::new().bold()
        }
        l if l.starts_with("@@") => Style::new().fg_color(Some(AnsiColor::Cyan.into())),
        l if l.starts_with('+') => Style::new().fg_color(Some(AnsiColor::Green.into())),
        l if l.starts_with('-') => Style::new().fg_color(Some(AnsiColor::Red.into())),
        _ => Style::new(),
    };
    diff.split_inclusive('\n')
        .map(|line| {
            let body = line.trim_end_matches(['\n', '\r']);
            let s = style(body);
            format!("{s}{body}{s:#}{}", &line[body.len()..])
        })
        .collect()
}

/// The human summary (stderr).
fn summary(report: &Report, dry_run: bool) -> String {
    let mut out = String::new();
    for file in &report.files {
        if file.changes.is_empty() {
            let _ = writeln!(out, "{}: nothing to change", file.path);
        }
        for change in &file.changes {
            let _ = writeln!(out, "{}: {change}", file.path);
        }
    }
    for phase in &report.plan.phases {
        let _ = writeln!(
            out,
            "{}: records steps {}; step() calls needed: {}; closes cleanly: {}",
            phase.phase.name(),
            compact_steps(&phase.window_steps),
            phase
                .min_step_calls
                .map_or_else(|| "unbounded".to_owned(), |c| c.to_string()),
            if phase.closes_cleanly { "yes" } else { "no" },
        );
    }
    for warning in &report.warnings {
        let _ = writeln!(out, "npuprof: warning: {warning}");
    }
    let _ = match (dry_run, report.changed) {
        (_, false) => writeln!(
            out,
            "nothing to change: the repository already has this window"
        ),
        (true, true) => writeln!(
            out,
            "dry run: nothing written; run again without --dry-run to apply"
        ),
        (false, true) => writeln!(out, "patched; `npuprof revert` restores the originals"),
    };
    out
}
