//! `npuprof collect`: the arguments, then `npuprof_workflow::collect` with the process launcher,
//! and what it reports printed: progress on stderr, the summary (or `--json`) on stdout.

mod serve;
mod status_line;
mod summary;

use std::path::{Path, PathBuf};
use std::time::Duration;

use npuprof_patch::target::{PatchRequest, TokenBudget};
use npuprof_repository::Target;
use npuprof_workflow::collect::{
    CollectReport, CollectRequest, Event, Interrupt, Observer, ProcessLauncher,
};

use crate::args::{TargetArgs, WindowArgs};
use crate::exit::Exit;
use crate::output;
use status_line::StatusLine;

/// Arguments of `npuprof collect`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The repository and run config.
    #[command(flatten)]
    pub target: TargetArgs,
    /// The window.
    #[command(flatten)]
    pub window: WindowArgs,
    /// Leave the patch (and any relocation) in place at the end; undo later with `npuprof revert`.
    #[arg(long)]
    pub keep_patch: bool,
    /// After the timing run, a second short run for `npuprof breakdown`: the same target with a
    /// 2-step decode window recorded with with_modules=True and record_shapes=True (the Python
    /// tracer slows its host side; the timing run keeps the guide's settings), then its module
    /// tree printed, and what the tracer cost on this run (each run's median step in both
    /// windows). Both patches are journaled and reverted.
    #[arg(long, conflicts_with = "engine")]
    pub breakdown: bool,
    /// Stop the launch command after this many seconds (each run); with --engine, the whole
    /// collect (beside the per-stage limits).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
    /// Print one JSON document (route, patch, runs, verify, relocate, revert) on stdout.
    #[arg(long)]
    pub json: bool,
    /// Collect from a serving engine instead of a repository (a definition id, e.g.
    /// `vllm-ascend`): start the command after `--` (`vllm serve MODEL …`) with the profiler on,
    /// or profile a running server (--url).
    #[arg(long, value_name = "ENGINE", value_parser = crate::args::engine_id)]
    pub engine: Option<String>,
    /// The serving options.
    #[command(flatten)]
    pub serve: serve::ServeArgs,
    /// The launch command, run from the repository [default: the target's own launch command];
    /// with --engine, the serving command.
    #[arg(last = true, value_name = "LAUNCH COMMAND")]
    pub launch: Vec<String>,
}

/// Runs `npuprof collect`.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    if let Some(engine) = &args.engine {
        return serve::run(&args, engine);
    }
    let report = execute(&args)?;
    if args.json {
        output::print_json(&report)?;
    }
    let text = summary::render(&report);
    let profile = summary::profile(&report);
    if args.json {
        errprint!("{text}{profile}");
    } else {
        output::print_text(&format!("{text}{profile}"))?;
    }
    Ok(match report.exit_code {
        0 => Exit::Ok,
        1 => Exit::Findings,
        _ => Exit::Error,
    })
}

/// Validates the arguments and runs the workflow with the process launcher.
fn execute(args: &Args) -> anyhow::Result<CollectReport> {
    let repo = args.target.repo_root()?;
    let (model, yaml) = args.target.model_and_yaml(&repo)?;
    let request = CollectRequest {
        patch: args
            .window
            .pipeline_request(args.target.request(&repo, &model, &yaml), TokenBudget::Auto)?,
        keep_patch: args.keep_patch,
        breakdown: args.breakdown,
        timeout: args.timeout.map(Duration::from_secs),
        launch: (!args.launch.is_empty()).then(|| args.launch.clone()),
        state_dir: state_dir()?,
    };
    let interrupt = Interrupt::on_signals()
        .map_err(|e| anyhow::anyhow!("cannot install the Ctrl-C handler: {e}"))?;
    let mut status = StatusLine::new();
    let mut launcher = ProcessLauncher::new(|output| status.show(output));
    let mut observer = Printer {
        window: args.window,
        json: args.json,
        repo: repo.clone(),
    };
    Ok(npuprof_workflow::collect::collect(
        &request,
        &mut launcher,
        &mut observer,
        &interrupt,
    )?)
}

/// npuprof's state directory: `$XDG_STATE_HOME/npuprof`, else `~/.local/state/npuprof`.
fn state_dir() -> anyhow::Result<PathBuf> {
    let absolute = |var| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    absolute("XDG_STATE_HOME")
        .or_else(|| absolute("HOME").map(|home| home.join(".local/state")))
        .map(|state| state.join("npuprof"))
        .ok_or_else(|| {
            anyhow::anyhow!(
                "no state directory for the copy of the originals collect keeps outside the repository: set XDG_STATE_HOME or HOME to an absolute path"
            )
        })
}

/// Asks for the window on a terminal and prints the workflow's progress on stderr.
struct Printer {
    window: WindowArgs,
    json: bool,
    repo: PathBuf,
}

impl Observer for Printer {
    fn settle(&mut self, target: &Target, request: &mut PatchRequest) -> Result<(), String> {
        self.window
            .settle(target, self.json, request)
            .map_err(|e| format!("{e:#}"))
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Patched(patched) => {
                for file in &patched.files {
                    errprint!("{}", file.diff);
                }
                for warning in &patched.warnings {
                    errln!("npuprof collect: warning: {warning}");
                }
            }
            Event::StructurePatched(patched) => errln!(
                "npuprof collect: patched {} file(s) for the structure window ({} decode steps, \
                 with_modules=True, record_shapes=True): the Python tracer slows the host side of \
                 this run only; its times are for attribution, the timing run's for timing",
                patched.files.iter().filter(|f| !f.edits.is_empty()).count(),
                npuprof_workflow::collect::STRUCTURE_STEPS
            ),
            Event::Launching { argv, env, cwd } => errln!(
                "npuprof collect: running `{}{}` in {}",
                env.iter()
                    .map(|(k, v)| format!("{k}={} ", npuprof_repository::shell::quote(v)))
                    .collect::<String>(),
                npuprof_repository::shell::join(argv),
                if cwd.as_os_str().is_empty() {
                    "the repository".to_owned()
                } else {
                    cwd.display().to_string()
                }
            ),
            Event::LaunchFailed(run) => {
                if run.exit_code == Some(0) {
                    errln!(
                        "npuprof collect: the launch exited 0 but its output shows errors; verifying what it wrote"
                    );
                } else {
                    errln!(
                        "npuprof collect: the launch failed ({}); verifying what it wrote",
                        run.ended()
                    );
                }
                for error in &run.launch_errors {
                    errln!("  in {}:", error.source);
                    for line in &error.context {
                        errln!("    {line}");
                    }
                    errln!("  > {}", error.line);
                }
            }
            Event::Stragglers(stragglers) => {
                for straggler in stragglers {
                    errln!(
                        "npuprof collect: stopped pid {} (`{}`), left running by the launch{}",
                        straggler.pid,
                        straggler.command,
                        if straggler.killed {
                            " (it ignored SIGTERM: killed)"
                        } else {
                            ""
                        }
                    );
                }
            }
            Event::JournalReinstated(from) => errln!(
                "npuprof collect: the launch removed .npuprof/; the journal and originals were put back from {}",
                from.display()
            ),
            Event::OriginalsKept(dir) => errln!(
                "npuprof collect: the originals are kept in {}: compare the files named above with them by hand",
                dir.display()
            ),
            Event::Relocating => errln!(
                "npuprof collect: verify diagnosed the bad-output-filesystem case: relocating the output and running again"
            ),
            Event::Reverting => errln!("npuprof collect: reverting every change"),
            Event::NotReverted(files) => errln!(
                "npuprof collect: NOT reverted: changed during the run: {}; inspect them, then run `npuprof revert --repo {}` (add --force to discard those edits)",
                join(&files),
                self.repo.display()
            ),
            Event::RevertFailed(err) => errln!(
                "npuprof collect: revert failed: {err}; run `npuprof revert --repo {}`",
                self.repo.display()
            ),
            Event::NotRestored {
                files,
                journal_gone,
            } => errln!(
                "npuprof collect: NOT restored: {} differ from the originals{}",
                join(files),
                if journal_gone {
                    " and the journal is gone (the launched command removed .npuprof/?)"
                } else {
                    ""
                }
            ),
        }
    }
}

fn join(files: &[impl AsRef<Path>]) -> String {
    files
        .iter()
        .map(|f| f.as_ref().display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
