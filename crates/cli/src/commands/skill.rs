//! `npuprof skill`: the agent skill (a SKILL.md telling a coding agent when and how to use
//! npuprof) on stdout, or with `--install` written into a repository where agents find it,
//! through the journal (`npuprof revert` removes it).

use std::path::{Path, PathBuf};

use crate::exit::Exit;
use crate::output;
use npuprof_journal::Transaction;

/// The skill's text.
pub const SKILL: &str = include_str!("../skill/SKILL.md");

/// Where `--install` writes the skill, relative to the repository.
pub const INSTALL_PATH: &str = ".agents/skills/npuprof/SKILL.md";

/// Arguments of `npuprof skill`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Write the skill to `<repo>/.agents/skills/npuprof/SKILL.md` instead of printing it
    /// (journaled: `npuprof revert` removes it).
    #[arg(long)]
    pub install: bool,
    /// The repository to install the skill into.
    #[arg(long, value_name = "DIR", default_value = ".", requires = "install")]
    pub repo: PathBuf,
}

/// Runs `npuprof skill`.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    if args.install {
        install(&args.repo)
    } else {
        output::print_text(SKILL)?;
        Ok(Exit::Ok)
    }
}

/// Creates (or updates, when npuprof created it) the installed skill in one transaction.
fn install(repo: &Path) -> anyhow::Result<Exit> {
    let mut tx = Transaction::begin(repo, "skill")?;
    tx.create_file(Path::new(INSTALL_PATH), SKILL.as_bytes().to_vec())?;
    let report = tx.commit()?;
    if report.changed.is_empty() {
        errln!("npuprof: {INSTALL_PATH} is already installed and up to date");
    } else {
        errln!("npuprof: wrote {INSTALL_PATH}");
        let undo = npuprof_journal::revert_argv(repo);
        errln!("  undo: {}", npuprof_repository::shell::join(&undo));
    }
    Ok(Exit::Ok)
}
