//! Finishing what a killed npuprof left: every writing command runs `recover` right after
//! taking the lock, before it reads the journal.
//!
//! What a kill can leave, and what is done with it:
//! - `.npuprof-tmp-*` files beside journaled files or in `.npuprof/`: removed.
//! - `.npuprof/writing.json`, the intent of an in-place write (a file with several hard links):
//!   the file may be torn, so its saved original is written back in place; the journal then
//!   sees it as original and the re-run command writes it again.
//! - `.npuprof/reverted.json`, a revert that restored everything but was stopped while removing
//!   the saved originals: the removal is finished.
//!
//! And what a kill cannot leave, so it is refused: saved originals without a journal (someone
//! deleted `journal.json` while files may still be patched).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::confined::{Kind, Repo, TEMP_PREFIX};
use crate::error::{JournalError, Result, io_err};
use crate::model::{self, Change, Journal};
use crate::paths::JOURNAL_DIR;

/// `.npuprof/writing.json`: an in-place write in progress.
pub(crate) fn intent_file() -> PathBuf {
    Path::new(JOURNAL_DIR).join("writing.json")
}

/// `.npuprof/reverted.json`: the journal of a finished revert whose cleanup is not done.
pub(crate) fn reverted_file() -> PathBuf {
    Path::new(JOURNAL_DIR).join("reverted.json")
}

/// `.npuprof/scratch`: the directory where a probe may have left files.
pub(crate) fn scratch_file() -> PathBuf {
    Path::new(JOURNAL_DIR).join("scratch")
}

/// The intent recorded before rewriting a hard-linked file in place.
#[derive(Debug, Serialize, Deserialize)]
struct Intent {
    /// The file being rewritten (repository-relative).
    path: PathBuf,
    /// Its true original, written back when the write was interrupted.
    original_sha256: String,
}

/// Writes `bytes` to the existing or new file `rel`: by temp file and rename, or in place when
/// it has several hard links (keeping them one file), under an intent naming its original.
pub(crate) fn write_file(
    repo: &Repo,
    rel: &Path,
    bytes: &[u8],
    mode: u32,
    owner: Option<(u32, u32)>,
    original_sha256: Option<&str>,
) -> Result<()> {
    let meta = repo
        .meta(rel)
        .map_err(io_err("inspect", repo.display(rel)))?;
    let linked = meta.is_some_and(|m| m.kind == Kind::File && m.nlink > 1);
    if !linked {
        return repo
            .replace(rel, bytes, mode, owner)
            .map_err(io_err("replace", repo.display(rel)));
    }
    if let Some(sha) = original_sha256 {
        let intent = Intent {
            path: rel.to_path_buf(),
            original_sha256: sha.to_owned(),
        };
        let json = serde_json::to_vec(&intent).unwrap_or_default();
        model::write_own(repo, &intent_file(), &json)?;
    }
    repo.write_in_place(rel, bytes)
        .map_err(io_err("rewrite", repo.display(rel)))?;
    if original_sha256.is_some() {
        repo.unlink(&intent_file())
            .map_err(io_err("remove", repo.display(&intent_file())))?;
    }
    Ok(())
}

/// Cleans up after a killed npuprof and refuses orphaned originals (see the module docs).
pub(crate) fn recover(repo: &Repo) -> Result<()> {
    if !repo
        .exists(Path::new(JOURNAL_DIR))
        .map_err(io_err("inspect", repo.display(Path::new(JOURNAL_DIR))))?
    {
        return Ok(());
    }
    remove_temp_files(repo)?;
    remove_noted_scratch(repo)?;
    finish_in_place_write(repo)?;
    let reverted = reverted_file();
    if model::own_file_exists(repo, &reverted)? {
        if model::own_file_exists(repo, &model::journal_file())? {
            // A live journal still needs its originals: only the stale marker goes.
            repo.unlink(&reverted)
                .map_err(io_err("remove", repo.display(&reverted)))?;
        } else {
            finish_revert_cleanup(repo)?;
        }
    }
    check_orphans(repo)
}

/// The directories npuprof writes in: its own and the parents of every journaled path.
fn written_dirs(repo: &Repo) -> BTreeSet<PathBuf> {
    let mut dirs = BTreeSet::from([PathBuf::from(JOURNAL_DIR), model::originals_dir()]);
    for file in [model::journal_file(), reverted_file()] {
        let journal: Option<Journal> = repo
            .read_file(&file)
            .ok()
            .flatten()
            .and_then(|raw| model::parse(&raw).ok());
        for entry in journal.iter().flat_map(|j| &j.entries) {
            let mut paths = vec![&entry.path];
            if let Change::Renamed { to } = &entry.change {
                paths.push(to);
            }
            for path in paths {
                if crate::paths::check_relative(path).is_ok() {
                    dirs.insert(path.parent().unwrap_or(Path::new("")).to_path_buf());
                }
            }
        }
    }
    dirs
}

fn remove_temp_files(repo: &Repo) -> Result<()> {
    for dir in written_dirs(repo) {
        let Ok(names) = repo.list(&dir) else { continue };
        for name in names {
            if name.to_string_lossy().starts_with(TEMP_PREFIX) {
                let rel = dir.join(&name);
                repo.unlink(&rel)
                    .map_err(io_err("remove the leftover temp file", repo.display(&rel)))?;
            }
        }
    }
    Ok(())
}

fn remove_noted_scratch(repo: &Repo) -> Result<()> {
    let file = scratch_file();
    let Some(raw) = repo.read_file(&file).ok().flatten() else {
        return Ok(());
    };
    let rel = PathBuf::from(String::from_utf8_lossy(&raw).into_owned());
    if rel.as_os_str().is_empty() || crate::paths::check_relative(&rel).is_ok() {
        crate::probe::remove_stale(&repo.display(&rel));
    }
    repo.unlink(&file)
        .map_err(io_err("remove", repo.display(&file)))
}

fn finish_in_place_write(repo: &Repo) -> Result<()> {
    let file = intent_file();
    let Some(raw) = repo.read_file(&file).ok().flatten() else {
        return Ok(());
    };
    if let Ok(intent) = serde_json::from_slice::<Intent>(&raw)
        && crate::paths::check_relative(&intent.path).is_ok()
        && repo
            .meta(&intent.path)
            .ok()
            .flatten()
            .is_some_and(|m| m.kind == Kind::File)
    {
        let original = model::read_original(repo, &intent.original_sha256)?;
        repo.write_in_place(&intent.path, &original)
            .map_err(io_err("restore", repo.display(&intent.path)))?;
    }
    repo.unlink(&file)
        .map_err(io_err("remove", repo.display(&file)))
}

/// Removes the saved originals and the finished journal (the lock's release removes the rest).
pub(crate) fn finish_revert_cleanup(repo: &Repo) -> Result<()> {
    let originals = model::originals_dir();
    for name in repo.list(&originals).unwrap_or_default() {
        let rel = originals.join(name);
        repo.unlink(&rel)
            .map_err(io_err("remove", repo.display(&rel)))?;
    }
    let reverted = reverted_file();
    repo.unlink(&reverted)
        .map_err(io_err("remove", repo.display(&reverted)))
}

/// Saved originals with no journal (and no finished revert) mean the journal was deleted.
pub(crate) fn check_orphans(repo: &Repo) -> Result<()> {
    if model::own_file_exists(repo, &model::journal_file())?
        || model::own_file_exists(repo, &reverted_file())?
    {
        return Ok(());
    }
    let dir = model::originals_dir();
    let count = repo.list(&dir).map_or(0, |names| names.len());
    if count == 0 {
        return Ok(());
    }
    Err(JournalError::OrphanedOriginals {
        dir: repo.display(&dir),
        count,
    })
}
