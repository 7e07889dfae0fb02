//! Applying lint's mechanical fixes through one journaled transaction (`npuprof revert`
//! restores the files).

use std::path::Path;

use npuprof_journal::Transaction;
use npuprof_lint::FileFix;

use crate::WorkflowError;

/// Writes the fixed files, journaled in `repo`, all or none; every file must lie inside `repo`.
pub fn apply(repo: &Path, fixes: &[FileFix]) -> Result<(), WorkflowError> {
    if fixes.is_empty() {
        return Ok(());
    }
    let canonical = |path: &Path| {
        path.canonicalize().map_err(|source| WorkflowError::Read {
            path: path.to_path_buf(),
            source,
        })
    };
    let root = canonical(repo)?;
    let mut tx = Transaction::begin(&root, "lint --fix")?;
    for fix in fixes {
        let absolute = canonical(&fix.path)?;
        let rel = absolute
            .strip_prefix(&root)
            .map_err(|_| WorkflowError::OutsideRepository {
                path: fix.path.clone(),
                repo: repo.to_path_buf(),
            })?;
        tx.write_file(rel, fix.fixed.text.clone().into_bytes())?;
    }
    tx.commit()?;
    Ok(())
}
