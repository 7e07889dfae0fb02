//! One lock per repository: `flock` on `.npuprof/lock`, which holds the holder's pid.
//!
//! Every command that writes takes it before reading the journal and keeps it until it is
//! done; a second npuprof gets [`JournalError::Locked`] at once. The kernel releases the lock
//! when its holder dies, so a `kill -9` never leaves a stale lock. Within one process the lock is
//! shared: `collect` holds it for the whole workflow while the patch, relocate and revert it runs
//! acquire it again.
//!
//! When the last holder in the process lets go and the journal directory holds nothing but the
//! lock, its `.gitignore` and an empty `originals/`, the directory is removed.

use std::ffi::OsStr;
use std::io::{self, Read, Seek, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use rustix::fs::{self as rfs, AtFlags, FileType, FlockOperation, Mode, OFlags};

use crate::confined::Repo;
use crate::error::{JournalError, Result, io_err};
use crate::paths::JOURNAL_DIR;
use crate::{model, recover};

const LOCK_NAME: &str = "lock";

/// A held repository lock (cheap to clone; released when the last clone is dropped).
#[derive(Debug, Clone)]
pub struct RepoLock {
    held: Arc<Held>,
}

#[derive(Debug)]
struct Held {
    repo: Repo,
    file: std::fs::File,
}

/// The locks this process holds, by canonical repository path.
static HELD: Mutex<Vec<(PathBuf, Weak<Held>)>> = Mutex::new(Vec::new());

impl RepoLock {
    /// Takes the lock of the repository at `repo` (any path to it), or shares the one this
    /// process already holds.
    pub fn acquire(repo: &Path) -> Result<Self> {
        let canonical = repo
            .canonicalize()
            .map_err(io_err("open the repository", repo))?;
        let mut held = HELD.lock().unwrap_or_else(|poison| poison.into_inner());
        held.retain(|(_, weak)| weak.strong_count() > 0);
        if let Some(existing) = held
            .iter()
            .find(|(path, _)| *path == canonical)
            .and_then(|(_, weak)| weak.upgrade())
        {
            return Ok(Self { held: existing });
        }
        let fs = Repo::open(&canonical).map_err(io_err("open the repository", &canonical))?;
        let file = lock_file(&fs)?;
        let new = Arc::new(Held { repo: fs, file });
        held.push((canonical, Arc::downgrade(&new)));
        Ok(Self { held: new })
    }

    /// The canonical repository path.
    pub fn repo_path(&self) -> &Path {
        self.held.repo.path()
    }

    /// The repository's root handle.
    pub(crate) fn repo(&self) -> &Repo {
        &self.held.repo
    }

    /// Notes that this process is about to leave scratch files (`.npuprof-probe-<pid>*`) in the
    /// directory `dir`, so that the next command removes them if it is killed before it does.
    /// `None` when `dir` is outside the repository (nothing to note: the next probe there removes
    /// them). The note is dropped with the returned guard.
    pub fn note_scratch(&self, dir: &Path) -> Result<Option<ScratchNote>> {
        let Ok(rel) = dir.strip_prefix(self.repo_path()) else {
            return Ok(None);
        };
        let text = rel.to_str().ok_or_else(|| {
            JournalError::Refused(format!("`{}` is not valid UTF-8", dir.display()))
        })?;
        model::write_own(self.repo(), &recover::scratch_file(), text.as_bytes())?;
        Ok(Some(ScratchNote { lock: self.clone() }))
    }
}

/// A note that scratch files may exist in one directory (see [`RepoLock::note_scratch`]).
#[derive(Debug)]
pub struct ScratchNote {
    lock: RepoLock,
}

impl Drop for ScratchNote {
    fn drop(&mut self) {
        let _ = self.lock.repo().unlink(&recover::scratch_file());
    }
}

/// Opens and locks `.npuprof/lock`, making sure the locked file is still the one at that path.
fn lock_file(repo: &Repo) -> Result<std::fs::File> {
    let dir_rel = Path::new(JOURNAL_DIR);
    let lock_rel = dir_rel.join(LOCK_NAME);
    let display = repo.display(&lock_rel);
    for _ in 0..5 {
        match repo.mkdir(dir_rel, 0o755) {
            Err(err) if err.kind() != io::ErrorKind::AlreadyExists => {
                return Err(io_err("create", repo.display(dir_rel))(err));
            }
            _ => {}
        }
        let dir = repo
            .open_dir(dir_rel)
            .map_err(io_err("open", repo.display(dir_rel)))?;
        refuse_foreign(
            rfs::statat(&dir, LOCK_NAME, AtFlags::SYMLINK_NOFOLLOW).ok(),
            &display,
        )?;
        // No truncation on open: the file is checked first (a hard link to a file outside the
        // repository must not lose its content); non-blocking, in case it is a FIFO.
        let fd = rfs::openat(
            &dir,
            LOCK_NAME,
            OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .map_err(|e| io_err("open", &display)(e.into()))?;
        refuse_foreign(rfs::fstat(&fd).ok(), &display)?;
        if let Err(err) = rfs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
            if err == rustix::io::Errno::WOULDBLOCK {
                return Err(JournalError::Locked {
                    pid: holder_pid(fd),
                });
            }
            return Err(io_err("lock", &display)(err.into()));
        }
        // The previous holder may have removed the file between our open and our lock.
        if same_file(&fd, &dir) {
            let file = std::fs::File::from(fd);
            return claim(repo, file, &display).inspect_err(|_| {
                // Nothing of ours is left behind when the directory cannot be set up.
                let _ = remove_idle_dir(repo);
            });
        }
    }
    Err(JournalError::Refused(format!(
        "cannot take the lock `{}`: it keeps being replaced (another npuprof?)",
        display.display()
    )))
}

/// Writes the `.gitignore` when missing and this process's pid into the locked `file`.
fn claim(repo: &Repo, mut file: std::fs::File, display: &Path) -> Result<std::fs::File> {
    let ignore = Path::new(JOURNAL_DIR).join(".gitignore");
    if !repo.exists(&ignore).unwrap_or(true) {
        model::write_own(repo, &ignore, b"*\n")?;
    }
    file.set_len(0).map_err(io_err("write", display))?;
    file.rewind().map_err(io_err("write", display))?;
    writeln!(file, "{}", std::process::id()).map_err(io_err("write", display))?;
    Ok(file)
}

/// Refuses a lock path that is not npuprof's own: anything but a regular file, or a file with
/// another hard link (writing the pid would overwrite a file elsewhere). `None`: not there yet.
fn refuse_foreign(stat: Option<rfs::Stat>, display: &Path) -> Result<()> {
    let Some(stat) = stat else { return Ok(()) };
    let problem = if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        "it is not a regular file"
    } else if stat.st_nlink > 1 {
        "it has another hard link (a file elsewhere that npuprof would overwrite)"
    } else {
        return Ok(());
    };
    Err(JournalError::Refused(format!(
        "refusing the lock `{}`: {problem}; npuprof never makes one. Remove it (its other names \
         keep their content), then run this again",
        display.display()
    )))
}

fn same_file(fd: &OwnedFd, dir: &OwnedFd) -> bool {
    match (
        rfs::fstat(fd),
        rfs::statat(dir, LOCK_NAME, AtFlags::SYMLINK_NOFOLLOW),
    ) {
        (Ok(open), Ok(named)) => open.st_dev == named.st_dev && open.st_ino == named.st_ino,
        _ => false,
    }
}

fn holder_pid(fd: OwnedFd) -> String {
    let mut text = String::new();
    let _ = std::fs::File::from(fd).read_to_string(&mut text);
    match text.trim() {
        "" => "unknown".to_owned(),
        pid => pid.to_owned(),
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // Still locked while the idle directory is removed; then released explicitly (closing
        // the file would release it too).
        let _ = remove_idle_dir(&self.repo);
        let _ = rfs::flock(&self.file, FlockOperation::Unlock);
    }
}

/// Removes the journal directory when it holds no journal state.
fn remove_idle_dir(repo: &Repo) -> io::Result<()> {
    let dir = Path::new(JOURNAL_DIR);
    let names = repo.list(dir)?;
    let idle = names
        .iter()
        .all(|n| n == OsStr::new(LOCK_NAME) || n == ".gitignore" || n == "originals");
    if !idle
        || !repo
            .list(&model::originals_dir())
            .unwrap_or_default()
            .is_empty()
    {
        return Ok(());
    }
    for name in names {
        let rel = dir.join(&name);
        if name == "originals" {
            repo.rmdir(&rel)?;
        } else {
            repo.unlink(&rel)?;
        }
    }
    repo.rmdir(dir)
}
