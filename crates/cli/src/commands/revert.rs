//! `npuprof revert`: restore every file npuprof changed, byte for byte, from the journal.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use npuprof_journal::RevertOutcome;

use crate::exit::Exit;
use crate::output;

/// The `--json` schema version.
const SCHEMA_VERSION: u32 = 1;

/// Arguments of `npuprof revert`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The repository npuprof changed (or any directory inside it: the root is found like git's).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,
    /// Restore even files changed after npuprof's change (their later edits are lost).
    #[arg(long)]
    pub force: bool,
    /// Print the outcome as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs `npuprof revert`.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    // Ctrl-C/SIGTERM must not stop a restore midway: they are noted and honoured afterwards.
    let interrupted = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&interrupted))?;
    }
    let repo = npuprof_journal::find_root(&args.repo)?;
    let outcome = npuprof_journal::revert(&repo, args.force)?;
    if interrupted.load(Ordering::SeqCst) {
        errln!("npuprof: interrupt received; the revert was finished first");
    }
    if args.json {
        output::print_versioned_json(SCHEMA_VERSION, &outcome)?;
    }
    Ok(match &outcome {
        RevertOutcome::NothingToRevert => {
            errln!(
                "npuprof: nothing to revert (no journal in `{}` or above)",
                repo.display()
            );
            Exit::Ok
        }
        RevertOutcome::Refused { conflicts } => {
            errln!(
                "npuprof: error: refusing to revert: {} change(s) were modified after npuprof made them:",
                conflicts.len()
            );
            for conflict in conflicts {
                errln!(
                    "  {} ({}): {}",
                    conflict.path.display(),
                    conflict.kind.as_str(),
                    conflict.state.describe()
                );
            }
            errln!(
                "re-run with --force to restore the originals anyway (those later edits are lost)"
            );
            Exit::Error
        }
        RevertOutcome::Reverted { actions } => {
            for action in actions {
                let forced = if action.forced { " (forced)" } else { "" };
                errln!(
                    "{:<18} {}{forced}",
                    action.action.describe(),
                    action.path.display()
                );
            }
            errln!(
                "npuprof: reverted {} change(s); journal removed",
                actions.len()
            );
            Exit::Ok
        }
    })
}
