//! `npuprof relocate`: point `models/<model>/res` at a local directory, revertibly. The work is
//! `npuprof_relocate::relocate`; this module parses the arguments and prints the report.

use std::path::{Path, PathBuf};

use anyhow::bail;
pub use npuprof_relocate::RelocateReport;
use npuprof_relocate::preflight::{LocationReport, ProbeStep};
use npuprof_relocate::{LayoutKind, RelocateRequest};

use crate::exit::Exit;
use crate::output;

/// The `--json` schema version.
const SCHEMA_VERSION: u32 = 1;

/// Arguments of `npuprof relocate`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The repository (cann-recipes layout: `models/<model>/res` is the output directory)
    /// [default: the nearest directory at or above the current one that holds `.npuprof/` or
    /// `executor/` and `models/`].
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// The model directory under `models/`.
    #[arg(long, value_name = "M")]
    pub model: String,
    /// The local directory to hold the output: new or empty, outside the repository
    /// [default: $TMPDIR/npuprof-res/<model>].
    #[arg(long, value_name = "DIR")]
    pub to: Option<PathBuf>,
    /// Report what would be done and change nothing (exit 1 if changes would be made).
    #[arg(long)]
    pub dry_run: bool,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

impl Args {
    /// The library request these arguments describe (the repository found as every command
    /// finds it).
    pub fn request(&self) -> anyhow::Result<RelocateRequest> {
        let repo = crate::args::TargetArgs {
            repo: self.repo.clone(),
            ..Default::default()
        }
        .repo_root()?;
        Ok(RelocateRequest {
            repo,
            model: self.model.clone(),
            output: None,
            to: self.to.clone(),
            dry_run: self.dry_run,
        })
    }
}

/// Runs `npuprof relocate`.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let report = execute(&args)?;
    if args.json {
        output::print_versioned_json(SCHEMA_VERSION, &report)?;
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
    Ok(npuprof_relocate::relocate(&args.request()?)?)
}

fn print_human(report: &RelocateReport) {
    let layout = match report.layout.kind {
        LayoutKind::Directory => {
            format!("directory; entries: {}", report.layout.entries.unwrap_or(0))
        }
        LayoutKind::Symlink => format!(
            "symlink to {}",
            report
                .layout
                .symlink_target
                .as_deref()
                .unwrap_or(Path::new("?"))
                .display()
        ),
        LayoutKind::Missing => "missing".to_owned(),
    };
    errln!("output directory  {} ({layout})", report.res.display());
    print_location("current", &report.current);
    print_location("target", &report.target);
    if !report.current.has_errors() {
        errln!("note: no error found at the current location; relocating may not be needed");
    }
    if report.already_relocated {
        errln!(
            "already relocated: {} points at the target; nothing to do",
            report.res.display()
        );
    } else {
        let verb = if report.applied { "done" } else { "would do" };
        errln!("{verb}:");
        for action in &report.actions {
            let to = action
                .to
                .as_deref()
                .map(|t| format!(" -> {}", t.display()))
                .unwrap_or_default();
            errln!(
                "  {:<10} {}{to}",
                action.action.describe(),
                action.path.display()
            );
        }
    }
    if report.applied {
        errln!("undo with: {}", report.revert_command);
        errln!(
            "note: `{}` is now a symlink; torch_npu's guide calls symlinks in profiler paths unsupported (recent versions only warn)",
            report.res.display()
        );
    } else if report.dry_run {
        errln!("dry run: nothing changed");
    }
    match &report.reparse {
        Some(reparse) => {
            errln!(
                "to confirm on the existing run ({} raw run dir(s) found), re-parse a copy on local disk:",
                reparse.raw_runs_found
            );
            errln!("  {}", reparse.copy_command);
            errln!("  {}", reparse.analyse_command);
        }
        None => errln!(
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
    errln!("{label:<8}  {}{existence}", report.path.display());
    match &report.filesystem {
        Some(fs) => errln!(
            "  filesystem    {} ({}) mounted at {} from {}",
            fs.fs_type,
            fs.class.name(),
            fs.mount_point.display(),
            fs.source
        ),
        None => errln!("  filesystem    unknown (not in the mount table)"),
    }
    let owner = report
        .owner_uid
        .map_or_else(|| "unknown".to_owned(), |uid| uid.to_string());
    errln!(
        "  owner         uid {owner} (you are uid {})",
        report.your_uid
    );
    let free = report.free_bytes.map_or_else(
        || "unknown".to_owned(),
        npuprof_relocate::preflight::human_bytes,
    );
    errln!("  free space    {free}");
    let probe = if report.probe.ok {
        "ok".to_owned()
    } else {
        format!(
            "FAILED at {}: {}",
            report.probe.failed_step.map_or("?", ProbeStep::as_str),
            report.probe.error.as_deref().unwrap_or("?")
        )
    };
    errln!("  lock+rename   {probe}");
    for problem in &report.problems {
        errln!("  {}: {}", problem.severity, problem.message);
    }
}
