//! The one way npuprof changes a repository: a journaled, all-or-nothing transaction.
//!
//! Layout on disk, at the repository root:
//! ```text
//! .npuprof/.gitignore          "*": the directory ignores itself for git
//! .npuprof/journal.json        every change, in order (see `model`)
//! .npuprof/originals/<sha256>  the true original bytes of every modified file
//! ```
//! Every path in the journal is relative, has no `..`, and resolves inside the repository; a
//! journal that breaks any rule (or is not valid JSON, or has an unknown version) is refused.
//!
//! This module is self-contained (it uses no other module of the CLI) so that tests can
//! compile it directly.

mod atomic;
mod inspect;
mod model;
mod paths;
mod revert;
mod time;
mod transaction;

use std::path::Path;

pub use inspect::EntryStatus;
pub use revert::{RevertOutcome, revert};
pub use time::now_compact;
#[allow(
    unused_imports,
    reason = "CommitReport is part of the contract, named by callers that keep it"
)]
pub use transaction::{CommitReport, Transaction};

/// The journal of `repo`, with the on-disk state of every entry; `None` when there is none.
pub fn status(repo: &Path) -> anyhow::Result<Option<Vec<EntryStatus>>> {
    let repo = repo
        .canonicalize()
        .map_err(|err| anyhow::anyhow!("cannot open the repository `{}`: {err}", repo.display()))?;
    Ok(model::load(&repo)?.map(|loaded| inspect::inspect(&repo, &loaded.journal)))
}
