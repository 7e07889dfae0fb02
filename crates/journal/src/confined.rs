//! Filesystem operations that cannot be redirected out of the repository.
//!
//! The repository root is opened once as a directory handle; every operation walks a relative
//! path from it one component at a time with `O_NOFOLLOW | O_DIRECTORY` and acts on the last
//! component with an `*at` call that does not follow symlinks. A directory swapped for a symlink
//! between a check and a write makes the write fail instead of landing elsewhere.
//!
//! Files are replaced by a temp file in the same directory (mode and owner set, flushed) and
//! one `renameat`; a file with more than one hard link is rewritten in place instead, so that
//! its links stay one file (see [`Repo::nlink`]; the caller records an intent first).

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags, RawMode};

use crate::failpoint;

/// Prefix of npuprof's temp files (a leftover one is removed by the next command).
pub const TEMP_PREFIX: &str = ".npuprof-tmp-";

/// What is at a path (not following a final symlink).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symlink.
    Symlink,
    /// Anything else (FIFO, socket, device).
    Other,
}

impl Kind {
    /// The kind with its article, for messages ("a directory").
    pub fn describe(self) -> &'static str {
        match self {
            Kind::File => "a regular file",
            Kind::Dir => "a directory",
            Kind::Symlink => "a symlink",
            Kind::Other => "a FIFO, socket or device",
        }
    }
}

/// The metadata npuprof needs of one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    /// What it is.
    pub kind: Kind,
    /// Permission bits (`st_mode & 0o7777`).
    pub mode: u32,
    /// Owner and group.
    pub owner: (u32, u32),
    /// Number of hard links.
    pub nlink: u64,
}

/// An open repository root: all paths are relative to it.
#[derive(Debug)]
pub struct Repo {
    root: OwnedFd,
    path: PathBuf,
}

fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

fn to_io(err: rustix::io::Errno) -> io::Error {
    io::Error::from_raw_os_error(err.raw_os_error())
}

/// The plain components of `rel` (no `.`; `..`, root and prefixes are refused).
fn components(rel: &Path) -> io::Result<Vec<&OsStr>> {
    rel.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a plain relative path",
            )),
        })
        .collect()
}

impl Repo {
    /// Opens the directory `path` (canonical) as the root of all later operations.
    pub fn open(path: &Path) -> io::Result<Self> {
        let root = rfs::openat(rfs::CWD, path, dir_flags(), Mode::empty()).map_err(to_io)?;
        Ok(Self {
            root,
            path: path.to_path_buf(),
        })
    }

    /// The root's path (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `rel` under the root (for messages).
    pub fn display(&self, rel: &Path) -> PathBuf {
        self.path.join(rel)
    }

    /// Opens the directory `rel` without following any symlink on the way.
    pub fn open_dir(&self, rel: &Path) -> io::Result<OwnedFd> {
        let mut dir = rfs::openat(&self.root, ".", dir_flags(), Mode::empty()).map_err(to_io)?;
        for name in components(rel)? {
            dir = rfs::openat(&dir, name, dir_flags(), Mode::empty()).map_err(to_io)?;
        }
        Ok(dir)
    }

    /// The parent directory of `rel`, opened, and the last component's name.
    fn parent(&self, rel: &Path) -> io::Result<(OwnedFd, OsString)> {
        let parts = components(rel)?;
        let (name, dirs) = parts.split_last().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "empty path inside the repository",
            )
        })?;
        let dir: PathBuf = dirs.iter().collect();
        Ok((self.open_dir(&dir)?, (*name).to_owned()))
    }

    /// The metadata of `rel` (a final symlink is not followed); `None` when it does not exist.
    pub fn meta(&self, rel: &Path) -> io::Result<Option<Meta>> {
        let (dir, name) = match self.parent(rel) {
            Ok(found) => found,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(err),
        };
        match rfs::statat(&dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => {
                let kind = match FileType::from_raw_mode(stat.st_mode) {
                    FileType::RegularFile => Kind::File,
                    FileType::Directory => Kind::Dir,
                    FileType::Symlink => Kind::Symlink,
                    _ => Kind::Other,
                };
                Ok(Some(Meta {
                    kind,
                    mode: permission_bits(stat.st_mode),
                    owner: (stat.st_uid, stat.st_gid),
                    nlink: stat.st_nlink,
                }))
            }
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(err) => Err(to_io(err)),
        }
    }

    /// Whether something exists at `rel`.
    pub fn exists(&self, rel: &Path) -> io::Result<bool> {
        Ok(self.meta(rel)?.is_some())
    }

    /// The bytes of the regular file `rel` (a symlink is refused).
    pub fn read(&self, rel: &Path) -> io::Result<Vec<u8>> {
        let (dir, name) = self.parent(rel)?;
        let fd = rfs::openat(
            &dir,
            name.as_os_str(),
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(to_io)?;
        let mut bytes = Vec::new();
        File::from(fd).read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// The bytes of `rel`, or `None` when it is missing or not a regular file.
    pub fn read_file(&self, rel: &Path) -> io::Result<Option<Vec<u8>>> {
        match self.meta(rel)? {
            Some(meta) if meta.kind == Kind::File => self.read(rel).map(Some),
            _ => Ok(None),
        }
    }

    /// Where a symlink at `rel` points.
    pub fn read_link(&self, rel: &Path) -> io::Result<PathBuf> {
        let (dir, name) = self.parent(rel)?;
        let target = rfs::readlinkat(&dir, name.as_os_str(), Vec::new()).map_err(to_io)?;
        Ok(PathBuf::from(OsStr::from_bytes(target.as_bytes())))
    }

    /// The names in directory `rel`.
    pub fn list(&self, rel: &Path) -> io::Result<Vec<OsString>> {
        let dir = self.open_dir(rel)?;
        let mut names = Vec::new();
        let mut entries = rfs::Dir::read_from(&dir).map_err(to_io)?;
        while let Some(entry) = entries.read() {
            let entry = entry.map_err(to_io)?;
            let name = OsStr::from_bytes(entry.file_name().to_bytes());
            if name != "." && name != ".." {
                names.push(name.to_owned());
            }
        }
        Ok(names)
    }

    /// Replaces (or creates) the file `rel` atomically: temp file, mode and owner, fsync,
    /// `renameat`, fsync of the directory.
    pub fn replace(
        &self,
        rel: &Path,
        bytes: &[u8],
        mode: u32,
        owner: Option<(u32, u32)>,
    ) -> io::Result<()> {
        failpoint::step("write_temp", rel)?;
        self.put_in_place(rel, |dir, temp| write_temp(dir, temp, bytes, mode, owner))
    }

    /// Makes `rel` anew under a temp name with `make`, then renames it over `rel` (the
    /// `rename` step); the temp is removed when either fails.
    fn put_in_place(
        &self,
        rel: &Path,
        make: impl FnOnce(&OwnedFd, &OsStr) -> io::Result<()>,
    ) -> io::Result<()> {
        let (dir, name) = self.parent(rel)?;
        let temp = temp_name();
        let result = make(&dir, &temp).and_then(|()| {
            failpoint::step("rename", rel)?;
            rfs::renameat(&dir, temp.as_os_str(), &dir, name.as_os_str()).map_err(to_io)
        });
        if result.is_err() {
            let _ = rfs::unlinkat(&dir, temp.as_os_str(), AtFlags::empty());
        }
        result?;
        sync(&dir);
        Ok(())
    }

    /// Rewrites the existing regular file `rel` in place (same inode: hard links and mode kept).
    pub fn write_in_place(&self, rel: &Path, bytes: &[u8]) -> io::Result<()> {
        failpoint::step("write_in_place", rel)?;
        let (dir, name) = self.parent(rel)?;
        let fd = rfs::openat(
            &dir,
            name.as_os_str(),
            OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(to_io)?;
        let mut file = File::from(fd);
        file.set_len(0)?;
        file.write_all(bytes)?;
        file.sync_all()
    }

    /// Creates the directory `rel` (its parent must exist).
    pub fn mkdir(&self, rel: &Path, mode: u32) -> io::Result<()> {
        failpoint::step("mkdir", rel)?;
        let (dir, name) = self.parent(rel)?;
        rfs::mkdirat(&dir, name.as_os_str(), permissions(mode)).map_err(to_io)?;
        sync(&dir);
        Ok(())
    }

    /// Removes the empty directory `rel`.
    pub fn rmdir(&self, rel: &Path) -> io::Result<()> {
        failpoint::step("rmdir", rel)?;
        let (dir, name) = self.parent(rel)?;
        rfs::unlinkat(&dir, name.as_os_str(), AtFlags::REMOVEDIR).map_err(to_io)?;
        sync(&dir);
        Ok(())
    }

    /// Removes the file or symlink `rel` (never what a symlink points at).
    pub fn unlink(&self, rel: &Path) -> io::Result<()> {
        failpoint::step("unlink", rel)?;
        let (dir, name) = self.parent(rel)?;
        rfs::unlinkat(&dir, name.as_os_str(), AtFlags::empty()).map_err(to_io)?;
        sync(&dir);
        Ok(())
    }

    /// Moves `from` to `to` (both inside the repository).
    pub fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        failpoint::step("rename", from)?;
        let (from_dir, from_name) = self.parent(from)?;
        let (to_dir, to_name) = self.parent(to)?;
        rfs::renameat(
            &from_dir,
            from_name.as_os_str(),
            &to_dir,
            to_name.as_os_str(),
        )
        .map_err(to_io)?;
        sync(&to_dir);
        sync(&from_dir);
        Ok(())
    }

    /// Points the existing symlink `rel` at `target` atomically: a new symlink under a temp
    /// name, then one `renameat` over the old one.
    pub fn replace_symlink(&self, rel: &Path, target: &Path) -> io::Result<()> {
        failpoint::step("symlink", rel)?;
        self.put_in_place(rel, |dir, temp| {
            rfs::symlinkat(target, dir, temp).map_err(to_io)
        })
    }

    /// Creates a symlink at `rel` pointing at `target`.
    pub fn symlink(&self, rel: &Path, target: &Path) -> io::Result<()> {
        failpoint::step("symlink", rel)?;
        let (dir, name) = self.parent(rel)?;
        rfs::symlinkat(target, &dir, name.as_os_str()).map_err(to_io)?;
        sync(&dir);
        Ok(())
    }
}

/// A fresh temp file name (unique in this process; the pid keeps processes apart).
fn temp_name() -> OsString {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    OsString::from(format!(
        "{TEMP_PREFIX}{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ))
}

/// The permission bits of a `st_mode` (`mode_t` is 16 bits wide on some systems, 32 on Linux).
fn permission_bits(st_mode: impl Into<u32>) -> u32 {
    st_mode.into() & 0o7777
}

/// The permission bits of `mode` as rustix's mode (they fit in 16 bits).
fn permissions(mode: u32) -> Mode {
    Mode::from_bits_truncate((mode & 0o7777) as RawMode)
}

fn write_temp(
    dir: &OwnedFd,
    name: &OsStr,
    bytes: &[u8],
    mode: u32,
    owner: Option<(u32, u32)>,
) -> io::Result<()> {
    let fd = rfs::openat(
        dir,
        name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        permissions(0o600),
    )
    .map_err(to_io)?;
    if let Some((uid, gid)) = owner {
        // Only root may give a file away; for anyone else the file keeps its creator.
        let _ = rfs::fchown(
            &fd,
            Some(rustix::fs::Uid::from_raw(uid)),
            Some(rustix::fs::Gid::from_raw(gid)),
        );
    }
    rfs::fchmod(&fd, permissions(mode)).map_err(to_io)?;
    let mut file = File::from(fd);
    file.write_all(bytes)?;
    file.sync_all()
}

/// Flushes a directory's entries (best effort: some filesystems refuse it).
fn sync(dir: &OwnedFd) {
    let _ = rfs::fsync(dir);
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    /// A temp directory and the `Repo` opened on it.
    fn temp_repo() -> (tempfile::TempDir, Repo) {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repo::open(&dir.path().canonicalize().unwrap()).unwrap();
        (dir, repo)
    }

    #[test]
    fn a_final_symlink_is_neither_read_nor_rewritten_in_place() {
        let (dir, repo) = temp_repo();
        std::fs::write(dir.path().join("target.txt"), b"kept\n").unwrap();
        std::os::unix::fs::symlink("target.txt", dir.path().join("link.txt")).unwrap();
        let link = Path::new("link.txt");
        let eloop = Some(rustix::io::Errno::LOOP.raw_os_error());
        assert_eq!(repo.read(link).unwrap_err().raw_os_error(), eloop);
        assert_eq!(
            repo.write_in_place(link, b"x").unwrap_err().raw_os_error(),
            eloop
        );
        assert_eq!(
            std::fs::read(dir.path().join("target.txt")).unwrap(),
            b"kept\n"
        );
    }

    #[test]
    fn a_temp_file_is_never_written_through_a_name_already_there() {
        let (dir, repo) = temp_repo();
        std::fs::write(dir.path().join("target.txt"), b"kept\n").unwrap();
        std::os::unix::fs::symlink("target.txt", dir.path().join("planted")).unwrap();
        let root = repo.open_dir(Path::new("")).unwrap();
        let err = write_temp(&root, OsStr::new("planted"), b"x", 0o644, None).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(
            std::fs::read(dir.path().join("target.txt")).unwrap(),
            b"kept\n"
        );
    }

    #[test]
    fn a_symlinked_directory_on_the_way_is_an_error_not_a_missing_path() {
        let (dir, repo) = temp_repo();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        std::fs::write(dir.path().join("real/a.txt"), b"a\n").unwrap();
        std::os::unix::fs::symlink("real", dir.path().join("link")).unwrap();
        assert!(repo.meta(Path::new("real/a.txt")).unwrap().is_some());
        assert!(repo.meta(Path::new("link/a.txt")).is_err());
        assert_eq!(repo.meta(Path::new("gone/a.txt")).unwrap(), None);
    }

    /// Opening a FIFO without `O_DIRECTORY` would block until a writer comes.
    #[test]
    fn a_fifo_where_a_directory_should_be_is_refused_at_once() {
        let (dir, repo) = temp_repo();
        rfs::mknodat(
            rfs::CWD,
            dir.path().join("fifo"),
            FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let (done, result) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = done.send(repo.meta(Path::new("fifo/a.txt")).map_err(|e| e.kind()));
        });
        let result = result.recv_timeout(Duration::from_secs(10));
        assert_eq!(result, Ok(Err(io::ErrorKind::NotADirectory)));
    }
}
