//! `npuprof inject` (path B): write a profiling harness module next to an entry script.
//!
//! The harness is rendered by `npuprof_patch::inject` (pure text in, text out) and created
//! through one journaled transaction (`npuprof revert` removes it). `--dry-run` prints a
//! `git apply`-compatible new-file diff on stdout and changes nothing (exit 1 when it would
//! change something, 0 when the harness is already there). Refusals exit 2 and change nothing:
//! an entry outside the repository or with a syntax error, or a target file npuprof did not create.

use std::path::PathBuf;

use npuprof_patch::inject::HarnessPhases;
use npuprof_workflow::inject::{InjectReport, InjectRequest, inject};
use npuprof_workflow::patch::Mode;

use crate::args::DEFAULT_DECODE_ACTIVE;
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

impl From<PhaseArg> for HarnessPhases {
    fn from(phase: PhaseArg) -> Self {
        match phase {
            PhaseArg::Decode => HarnessPhases::Decode,
            PhaseArg::Prefill => HarnessPhases::Prefill,
            PhaseArg::Both => HarnessPhases::Both,
            PhaseArg::Separate => HarnessPhases::Separate,
        }
    }
}

/// Arguments of `npuprof inject`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The repository the harness is written into.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,
    /// The inference entry script (relative to the repository, or a path inside it).
    #[arg(long, value_name = "FILE")]
    pub entry: PathBuf,
    /// Phases to profile (both by default, as for plan, patch and collect: the collection
    /// guide's default).
    #[arg(long, value_enum, default_value = "both")]
    pub phase: PhaseArg,
    /// Decode steps to record.
    // `--decode-steps` is its older name, kept as a hidden alias.
    #[arg(long, alias = "decode-steps", value_name = "N",
          default_value_t = DEFAULT_DECODE_ACTIVE as u32, value_parser = clap::value_parser!(u32).range(1..))]
    pub decode_active: u32,
    /// Where to write the harness (relative to the repository). Default: `<entry stem>_profiled.py`
    /// next to the entry.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Add a short structure window after the timing windows: 2 decode steps (1 prefill
    /// forward with --phase prefill) recorded with with_modules=True and record_shapes=True into
    /// `npuprof_prof/structure`, for `npuprof breakdown`'s exact module tree. The timing windows
    /// keep the guide's settings; the Python tracer slows the structure window's host side.
    #[arg(long)]
    pub breakdown: bool,
    /// Print the diff and change nothing (exit 1 when it would change something).
    #[arg(long)]
    pub dry_run: bool,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs `npuprof inject`.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let report = inject(&InjectRequest {
        repo: &args.repo,
        entry: &args.entry,
        out: args.out.as_deref(),
        phase: args.phase.into(),
        decode_steps: args.decode_active,
        structure: args.breakdown,
        mode: if args.dry_run {
            Mode::DryRun
        } else {
            Mode::Write
        },
    })?;
    if args.json {
        print_json(&report)?;
    } else {
        if let Some(diff) = &report.diff {
            crate::output::print_text(diff)?;
        }
        print_summary(&report);
    }
    Ok(if args.dry_run && report.changed {
        Exit::Findings
    } else {
        Exit::Ok
    })
}

/// The human summary on stderr.
fn print_summary(report: &InjectReport) {
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
    errln!(
        "npuprof: {verb} {} — profiling harness for {}",
        report.harness,
        report.entry
    );
    errln!("  windows: {windows}");
    errln!("  output:  {}/<window>", report.save_path);
    if let Some(path) = &report.structure_path {
        errln!(
            "  structure: {path} ({}); then: npuprof breakdown {path}",
            npuprof_patch::inject::STRUCTURE_COST,
        );
    }
    errln!("  run:     {}", report.run);
    if !report.dry_run && report.changed {
        errln!("  undo:    {}", report.undo);
    }
    if report.stubs > 0 {
        errln!(
            "npuprof: warning: {} function(s) are stubs that raise NotImplementedError until filled in:",
            report.stubs
        );
        for stub in report.wiring.iter().filter(|w| !w.wired) {
            errln!("  {}(): {}", stub.function, stub.detail);
        }
    }
}
