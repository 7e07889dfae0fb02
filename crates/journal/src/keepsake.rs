//! A copy of the journal and its saved originals outside the repository, for the time a
//! command that npuprof does not control runs in it (collect's launch): a launch that deletes
//! `.npuprof/` (`git clean -fdx` does, since the directory ignores itself) would take the only
//! copy of the originals with it. [`Keepsake::reinstate`] puts the journal back so that the
//! ordinary revert can restore the files.

use std::io;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use crate::confined::Repo;
use crate::error::{JournalError, Result, io_err};
use crate::model::{self, Change};
use crate::paths::JOURNAL_DIR;

/// The copy's journal file, inside its directory.
const JOURNAL: &str = "journal.json";
/// The copy's originals, inside its directory.
const ORIGINALS: &str = "originals";

/// A journal and its originals copied into a private directory (mode 0700).
#[derive(Debug)]
pub struct Keepsake {
    dir: PathBuf,
    /// The journal's bytes.
    journal: Vec<u8>,
    /// The sha256 of every saved original it names.
    originals: Vec<String>,
}

impl Keepsake {
    /// Copies the journal of `repo` and every original it names into `dir`, which must not
    /// exist (it is created, mode 0700; its parent must exist). `None` when there is no journal.
    pub fn save(repo: &Path, dir: &Path) -> Result<Option<Self>> {
        let fs = open(repo)?;
        let Some(loaded) = model::load(&fs)? else {
            return Ok(None);
        };
        let mut originals: Vec<String> = loaded
            .journal
            .entries
            .iter()
            .filter_map(|entry| match &entry.change {
                Change::Modified {
                    original_sha256, ..
                } => Some(original_sha256.clone()),
                _ => None,
            })
            .collect();
        originals.sort();
        originals.dedup();
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(dir)
            .map_err(io_err("create", dir))?;
        let keep = Self {
            dir: dir.to_path_buf(),
            journal: loaded.raw,
            originals,
        };
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(dir.join(ORIGINALS))
            .map_err(io_err("create", dir.join(ORIGINALS)))?;
        for sha in &keep.originals {
            let bytes = model::read_original(&fs, sha)?;
            write_private(&dir.join(ORIGINALS).join(sha), &bytes)?;
        }
        write_private(&dir.join(JOURNAL), &keep.journal)?;
        Ok(Some(keep))
    }

    /// The directory holding the copy.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Puts the journal and its originals back into `repo` when its journal is gone; `false`
    /// (nothing done) when the journal is still there. The originals go first and the journal
    /// last, so a failure half-way leaves orphaned originals, which every command refuses.
    pub fn reinstate(&self, repo: &Path) -> Result<bool> {
        let fs = open(repo)?;
        if fs
            .exists(&model::journal_file())
            .map_err(io_err("inspect", fs.display(&model::journal_file())))?
        {
            return Ok(false);
        }
        let dir = Path::new(JOURNAL_DIR);
        match fs.mkdir(dir, 0o755) {
            Err(err) if err.kind() != io::ErrorKind::AlreadyExists => {
                return Err(io_err("create", fs.display(dir))(err));
            }
            _ => {}
        }
        let ignore = dir.join(".gitignore");
        if !fs.exists(&ignore).unwrap_or(false) {
            model::write_own(&fs, &ignore, b"*\n")?;
        }
        model::ensure_dir(&fs)?;
        for sha in &self.originals {
            let path = self.dir.join(ORIGINALS).join(sha);
            let bytes = std::fs::read(&path).map_err(io_err("read the kept original", &path))?;
            if model::sha256_hex(&bytes) != *sha {
                return Err(JournalError::Refused(format!(
                    "the kept original `{}` is corrupt (its sha256 does not match)",
                    path.display()
                )));
            }
            model::store_original(&fs, &bytes)?;
        }
        model::write_own(&fs, &model::journal_file(), &self.journal)?;
        Ok(true)
    }

    /// Removes the copy (once the repository is restored or its journal is back).
    pub fn discard(self) -> Result<()> {
        std::fs::remove_dir_all(&self.dir).map_err(io_err("remove", &self.dir))
    }
}

fn open(repo: &Path) -> Result<Repo> {
    let canonical = repo
        .canonicalize()
        .map_err(io_err("open the repository", repo))?;
    Repo::open(&canonical).map_err(io_err("open the repository", &canonical))
}

/// Makes a new private directory `<parent>/<time>-<pid>[-<n>]` (mode 0700, as are the parents
/// it makes): a command's own place outside the repository.
pub fn new_private_dir(parent: &Path) -> Result<PathBuf> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(parent)
        .map_err(io_err("create", parent))?;
    check_private_chain(parent)?;
    let stem = format!("{}-{}", crate::now_compact(), std::process::id());
    for n in 0..100 {
        let dir = match n {
            0 => parent.join(&stem),
            n => parent.join(format!("{stem}-{n}")),
        };
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
            Err(err) => return Err(io_err("create", &dir)(err)),
        }
    }
    Err(io_err("create a new directory in", parent)(
        io::ErrorKind::AlreadyExists.into(),
    ))
}

/// Refuses a state directory another user could change under npuprof (as ssh refuses a
/// `~/.ssh` others can write): `parent` and the directory above it are npuprof's own
/// (`<state>/npuprof/collect`, `<state>/npuprof`): each must be a real directory, not a link,
/// owned by this user and writable by nobody else; the directory that holds them (the
/// `XDG_STATE_HOME`, which may be a shared `1777` one) must be owned by this user or root, and
/// writable by others only with the sticky bit (so that nobody else can rename or replace what
/// npuprof made in it). Checked after creation, so that a directory another user made first is
/// refused, not used.
pub fn check_private_chain(parent: &Path) -> Result<()> {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let me = rustix::process::geteuid().as_raw();
    let refuse = |path: &Path, why: String| {
        JournalError::Refused(format!(
            "refusing the state directory `{}`: {why}; npuprof keeps the originals of a \
             running collect there, so it must be this user's alone (set XDG_STATE_HOME to a \
             directory of yours)",
            path.display()
        ))
    };
    let ours = [Some(parent), parent.parent()];
    for dir in ours.into_iter().flatten() {
        let meta = std::fs::symlink_metadata(dir).map_err(io_err("inspect", dir))?;
        if meta.file_type().is_symlink() {
            return Err(refuse(dir, "it is a symbolic link".to_owned()));
        }
        if !meta.is_dir() {
            return Err(refuse(dir, "it is not a directory".to_owned()));
        }
        if meta.uid() != me {
            return Err(refuse(
                dir,
                format!(
                    "it is owned by uid {}, not by this user (uid {me})",
                    meta.uid()
                ),
            ));
        }
        if meta.permissions().mode() & 0o022 != 0 {
            return Err(refuse(
                dir,
                format!(
                    "others can write it (mode {:o})",
                    meta.permissions().mode() & 0o7777
                ),
            ));
        }
    }
    if let Some(container) = parent.parent().and_then(Path::parent) {
        let meta = std::fs::metadata(container).map_err(io_err("inspect", container))?;
        let mode = meta.permissions().mode();
        if meta.uid() != me && meta.uid() != 0 {
            return Err(refuse(
                container,
                format!(
                    "it is owned by uid {}, who can rename what npuprof makes in it",
                    meta.uid()
                ),
            ));
        }
        if mode & 0o022 != 0 && mode & 0o1000 == 0 {
            return Err(refuse(
                container,
                format!(
                    "others can write it and it has no sticky bit (mode {:o})",
                    mode & 0o7777
                ),
            ));
        }
    }
    Ok(())
}

/// Creates the new file `path` (mode 0600; an existing one is an error), for writing.
pub fn create_private_file(path: &Path) -> Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(io_err("create", path))
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write as _;
    let mut file = create_private_file(path)?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(io_err("write", path))
}

/// Writes `bytes` at `file` without following a link there: an existing symlink (a repository
/// may ship `summary.html -> ~/.bashrc`) or anything but a regular file is refused, and the
/// page is written into a new file beside it (created exclusively, never through a link) and
/// renamed over it, so a reader never sees half a page and no other file is touched.
pub fn replace_file_unlinked(file: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write as _;
    match std::fs::symlink_metadata(file) {
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "it is a symbolic link; npuprof does not write through links: remove it or name another file",
            ));
        }
        Ok(meta) if !meta.is_file() => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "it exists and is not a regular file",
            ));
        }
        _ => {}
    }
    let name = file
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let mut temp_name = std::ffi::OsString::from(".");
    temp_name.push(name);
    temp_name.push(format!(".npuprof-{}.tmp", std::process::id()));
    let temp = file.with_file_name(temp_name);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)
        .and_then(|mut out| {
            out.write_all(bytes)?;
            out.sync_all()
        })
        .and_then(|()| std::fs::rename(&temp, file));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}
