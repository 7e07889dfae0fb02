//! `npuprof relocate`: point `models/<model>/res` at a local directory (the fix for output
//! filesystems where torch_npu's parsers fail), revertibly, through the journal.

mod mountinfo;
mod preflight;
mod reparse;

use std::fs;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, bail};
use serde::Serialize;

use crate::exit::Exit;
use crate::journal::{self, Transaction};
use crate::output;

pub use preflight::LocationReport;
pub use reparse::Reparse;

/// Arguments of `npuprof relocate`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The repository (cann-recipes layout: `models/<model>/res` is the output directory).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,
    /// The model directory under `models/`.
    #[arg(long, value_name = "M")]
    pub model: String,
    /// The local directory to hold the output [default: $TMPDIR/npuprof-res/<model>].
    #[arg(long, value_name = "DIR")]
    pub to: Option<PathBuf>,
    /// Report what would be done and change nothing (exit 1 if changes would be made).
    #[arg(long)]
    pub dry_run: bool,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// What `models/<model>/res` is now.
#[derive(Debug, Clone, Serialize)]
pub struct Layout {
    /// `missing`, `directory` or `symlink`.
    pub kind: &'static str,
    /// Number of entries, for a directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entries: Option<usize>,
    /// Where it points, for a symlink.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symlink_target: Option<PathBuf>,
}

/// One change relocate makes (or would make, in a dry run).
#[derive(Debug, Clone, Serialize)]
pub struct PlannedAction {
    /// `create_dir` (the target, outside the journal: kept by revert), `move_aside` or `symlink`.
    pub action: &'static str,
    /// The path acted on.
    pub path: PathBuf,
    /// The destination (`move_aside`) or link target (`symlink`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<PathBuf>,
}

/// The report of `npuprof relocate` (`--json`).
#[derive(Debug, Clone, Serialize)]
pub struct RelocateReport {
    /// The model.
    pub model: String,
    /// The canonical repository.
    pub repo: PathBuf,
    /// The output directory, relative to the repository (`models/<model>/res`).
    pub res: PathBuf,
    /// What the output directory is now (before any change).
    pub layout: Layout,
    /// Pre-flight of the current output location.
    pub current: LocationReport,
    /// Pre-flight of the target directory.
    pub target: LocationReport,
    /// The changes, in order.
    pub actions: Vec<PlannedAction>,
    /// Whether this was a dry run.
    pub dry_run: bool,
    /// Whether the changes were made (false in a dry run, or when already relocated).
    pub applied: bool,
    /// Whether `res` already pointed at the target (nothing to do).
    pub already_relocated: bool,
    /// How to confirm the diagnosis on an existing failed run, when one exists.
    pub reparse: Option<Reparse>,
    /// How to undo.
    pub revert_command: String,
}

/// Runs `npuprof relocate`.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let report = execute(&args)?;
    if args.json {
        output::print_json(&report)?;
    }
    print_human(&report);
    if report.target.has_errors() {
        bail!(
            "the target `{}` is not a safe output location (see above); choose another with --to",
            report.target.path.display()
        );
    }
    Ok(if report.dry_run && !report.actions.is_empty() {
        Exit::Findings
    } else {
        Exit::Ok
    })
}

/// Examines both locations and, unless `args.dry_run` or the target is unsafe, relocates.
pub fn execute(args: &Args) -> anyhow::Result<RelocateReport> {
    check_model_name(&args.model)?;
    let repo = args
        .repo
        .canonicalize()
        .with_context(|| format!("cannot open the repository `{}`", args.repo.display()))?;
    let model_dir = repo.join("models").join(&args.model);
    if !model_dir.is_dir() {
        bail!(
            "`{}` is not a directory: no model `{}` in `{}`",
            model_dir.display(),
            args.model,
            repo.display()
        );
    }
    let res_rel = Path::new("models").join(&args.model).join("res");
    let res = repo.join(&res_rel);
    let layout = layout_of(&res)?;
    let (target_given, target) = target_dir(args)?;
    if let Ok(current) = res.canonicalize()
        && layout.kind == "directory"
        && target.starts_with(&current)
    {
        bail!(
            "the target `{}` is inside the current output directory `{}`",
            target.display(),
            current.display()
        );
    }
    if target.starts_with(&res) {
        bail!(
            "the target `{}` is inside `{}`",
            target.display(),
            res.display()
        );
    }
    let mounts = mountinfo::read().context("cannot read the mount table")?;
    let current = preflight::examine(&res, &mounts);
    let target_report = preflight::examine(&target_given, &mounts);
    let already_relocated = layout.kind == "symlink"
        && res.canonicalize().ok() == target.canonicalize().ok()
        && target.is_dir();

    let mut actions = Vec::new();
    let moved_rel = res_rel.with_file_name(format!("res.npuprof-moved-{}", journal::now_compact()));
    if !already_relocated {
        if !target.is_dir() {
            actions.push(PlannedAction {
                action: "create_dir",
                path: target.clone(),
                to: None,
            });
        }
        if layout.kind != "missing" {
            actions.push(PlannedAction {
                action: "move_aside",
                path: res_rel.clone(),
                to: Some(moved_rel.clone()),
            });
        }
        actions.push(PlannedAction {
            action: "symlink",
            path: res_rel.clone(),
            to: Some(target.clone()),
        });
    }
    let apply = !args.dry_run && !already_relocated && !target_report.has_errors();
    if apply {
        fs::create_dir_all(&target)
            .with_context(|| format!("cannot create `{}`", target.display()))?;
        let mut tx = Transaction::begin(&repo, "relocate")?;
        if layout.kind != "missing" {
            tx.rename(&res_rel, &moved_rel)?;
        }
        tx.symlink(&res_rel, &target)?;
        tx.commit()?;
    }
    let raw_runs_root = if apply && layout.kind != "missing" {
        repo.join(&moved_rel)
    } else {
        res
    };
    let reparse =
        reparse::newest_raw_run(&raw_runs_root).map(|raw| Reparse::new(&raw, &target, &args.model));
    Ok(RelocateReport {
        model: args.model.clone(),
        revert_command: format!(
            "npuprof revert --repo {}",
            reparse::shell_quote(&repo.display().to_string())
        ),
        repo,
        res: res_rel,
        layout,
        current,
        target: target_report,
        actions,
        dry_run: args.dry_run,
        applied: apply,
        already_relocated,
        reparse,
    })
}

fn check_model_name(model: &str) -> anyhow::Result<()> {
    let mut components = Path::new(model).components();
    match (components.next(), components.next()) {
        (Some(Component::Normal(_)), None) => Ok(()),
        _ => bail!(
            "`{model}` is not a model directory name (expected a name under `models/`, like `deepseek-mini`)"
        ),
    }
}

fn layout_of(res: &Path) -> anyhow::Result<Layout> {
    let Ok(meta) = fs::symlink_metadata(res) else {
        return Ok(Layout {
            kind: "missing",
            entries: None,
            symlink_target: None,
        });
    };
    if meta.is_symlink() {
        let target = fs::read_link(res)
            .with_context(|| format!("cannot read the symlink `{}`", res.display()))?;
        return Ok(Layout {
            kind: "symlink",
            entries: None,
            symlink_target: Some(target),
        });
    }
    if meta.is_dir() {
        let entries = fs::read_dir(res)
            .with_context(|| format!("cannot list `{}`", res.display()))?
            .count();
        return Ok(Layout {
            kind: "directory",
            entries: Some(entries),
            symlink_target: None,
        });
    }
    bail!(
        "`{}` exists but is neither a directory nor a symlink",
        res.display()
    )
}

/// The target as given (made absolute: `--to` relative to the working directory, or the
/// default) and resolved (symlinks in its existing part followed).
fn target_dir(args: &Args) -> anyhow::Result<(PathBuf, PathBuf)> {
    let target = match &args.to {
        Some(to) if to.is_absolute() => to.clone(),
        Some(to) => std::env::current_dir()
            .context("cannot read the working directory")?
            .join(to),
        None => std::env::temp_dir().join("npuprof-res").join(&args.model),
    };
    // Resolve what exists of it, so the symlink never depends on the working directory.
    let mut existing = target.as_path();
    let mut tail = Vec::new();
    while !existing.exists() {
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                tail.push(name.to_owned());
                existing = parent;
            }
            _ => break,
        }
    }
    if tail.iter().any(|t| t == "..") {
        bail!(
            "the target `{}` contains `..` below its existing part",
            target.display()
        );
    }
    let mut resolved = existing
        .canonicalize()
        .with_context(|| format!("cannot resolve `{}`", existing.display()))?;
    resolved.extend(tail.iter().rev());
    Ok((target, resolved))
}

fn print_human(report: &RelocateReport) {
    let layout = match report.layout.kind {
        "directory" => format!("directory; entries: {}", report.layout.entries.unwrap_or(0)),
        "symlink" => format!(
            "symlink to {}",
            report
                .layout
                .symlink_target
                .as_deref()
                .unwrap_or(Path::new("?"))
                .display()
        ),
        other => other.to_owned(),
    };
    anstream::eprintln!("output directory  {} ({layout})", report.res.display());
    print_location("current", &report.current);
    print_location("target", &report.target);
    if !report.current.has_errors() {
        anstream::eprintln!(
            "note: no error found at the current location; relocating may not be needed"
        );
    }
    if report.already_relocated {
        anstream::eprintln!(
            "already relocated: {} points at the target; nothing to do",
            report.res.display()
        );
    } else {
        let verb = if report.applied { "done" } else { "would do" };
        anstream::eprintln!("{verb}:");
        for action in &report.actions {
            let to = action
                .to
                .as_deref()
                .map(|t| format!(" -> {}", t.display()))
                .unwrap_or_default();
            anstream::eprintln!(
                "  {:<10} {}{to}",
                action.action.replace('_', " "),
                action.path.display()
            );
        }
    }
    if report.applied {
        anstream::eprintln!("undo with: {}", report.revert_command);
        anstream::eprintln!(
            "note: `{}` is now a symlink; torch_npu's guide calls symlinks in profiler paths unsupported (recent versions only warn)",
            report.res.display()
        );
    } else if report.dry_run {
        anstream::eprintln!("dry run: nothing changed");
    }
    match &report.reparse {
        Some(reparse) => {
            anstream::eprintln!(
                "to confirm on the existing run ({} raw run dir(s) found), re-parse a copy on local disk:",
                reparse.raw_runs_found
            );
            anstream::eprintln!("  {}", reparse.copy_command);
            anstream::eprintln!("  {}", reparse.analyse_command);
        }
        None => anstream::eprintln!(
            "no raw `*_ascend_pt` run found to re-parse; after a failed run, copy its `*_ascend_pt` directory to local disk and run \
             python3 -c \"import torch_npu; torch_npu.profiler.profiler.analyse('<copy>')\""
        ),
    }
}

fn print_location(label: &str, report: &LocationReport) {
    let existence = if report.exists {
        String::new()
    } else {
        format!(
            " (does not exist yet; examined {})",
            report.examined.display()
        )
    };
    anstream::eprintln!("{label:<8}  {}{existence}", report.path.display());
    match &report.filesystem {
        Some(fs) => anstream::eprintln!(
            "  filesystem    {} ({}) mounted at {} from {}",
            fs.fs_type,
            serde_json::to_value(fs.class)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            fs.mount_point.display(),
            fs.source
        ),
        None => anstream::eprintln!("  filesystem    unknown (not in the mount table)"),
    }
    let owner = report
        .owner_uid
        .map_or_else(|| "unknown".to_owned(), |uid| uid.to_string());
    anstream::eprintln!(
        "  owner         uid {owner} (you are uid {})",
        report.your_uid
    );
    let free = report
        .free_bytes
        .map_or_else(|| "unknown".to_owned(), preflight::human_bytes);
    anstream::eprintln!("  free space    {free}");
    let probe = if report.probe.ok {
        "ok".to_owned()
    } else {
        format!(
            "FAILED at {}: {}",
            report.probe.failed_step.unwrap_or("?"),
            report.probe.error.as_deref().unwrap_or("?")
        )
    };
    anstream::eprintln!("  lock+rename   {probe}");
    for problem in &report.problems {
        anstream::eprintln!("  {}: {}", problem.severity, problem.message);
    }
}
