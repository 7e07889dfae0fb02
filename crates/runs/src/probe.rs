//! Opening the files of a run safely: never blocking on a FIFO, socket or device, telling
//! "missing" from "unreadable", and recognising the special contents that are not data at all
//! (an empty file, a git-lfs pointer).

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use serde::Serialize;

/// torch_npu treats a JSON file over this size as empty.
pub const JSON_CAP: u64 = 10 << 30;
/// torch_npu treats a CSV file over this size as empty.
pub const CSV_CAP: u64 = 5 << 30;
/// The largest profiler_info / profiler_metadata read (real ones are a few KiB; parsed into a
/// JSON tree, 1 MiB stays within a few tens of MB whatever it holds).
pub const SMALL_JSON_CAP: u64 = 1 << 20;

/// How many leading bytes [`open_regular`] keeps for recognising special contents.
pub const SNIFF_BYTES: usize = 512;

/// What a path is, when it is not a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileKind {
    /// A directory.
    Directory,
    /// A named pipe: reading it would block until a writer appears.
    Fifo,
    /// A Unix socket.
    Socket,
    /// A character device.
    CharDevice,
    /// A block device.
    BlockDevice,
    /// Anything else.
    Other,
    /// A symbolic link to something outside the directory that holds it (`kernel_details.csv ->
    /// /etc/shadow`): not read, so that no report quotes bytes that are not the run's.
    LinkOutside,
}

impl FileKind {
    /// The kind of a non-regular file's metadata (`None` for a regular file).
    pub fn of(meta: &Metadata) -> Option<Self> {
        let t = meta.file_type();
        Some(if t.is_file() {
            return None;
        } else if t.is_dir() {
            FileKind::Directory
        } else if t.is_fifo() {
            FileKind::Fifo
        } else if t.is_socket() {
            FileKind::Socket
        } else if t.is_char_device() {
            FileKind::CharDevice
        } else if t.is_block_device() {
            FileKind::BlockDevice
        } else {
            FileKind::Other
        })
    }

    /// A plain description (`a FIFO (named pipe)`).
    pub fn describe(self) -> &'static str {
        match self {
            FileKind::Directory => "a directory",
            FileKind::Fifo => "a FIFO (named pipe)",
            FileKind::Socket => "a socket",
            FileKind::CharDevice => "a character device",
            FileKind::BlockDevice => "a block device",
            FileKind::Other => "not a regular file",
            FileKind::LinkOutside => "a symbolic link out of its directory (not followed)",
        }
    }
}

/// Why a file could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileProblem {
    /// Nothing at the path (or a dangling symlink).
    Missing,
    /// Something that is not a regular file: skipped without reading.
    NotRegular(FileKind),
    /// It exists but cannot be read (permission denied, I/O error, ...).
    Unreadable {
        /// The error kind.
        kind: io::ErrorKind,
        /// The error text.
        message: String,
    },
}

impl FileProblem {
    /// What the problem is, said plainly (`it is a FIFO (named pipe), not a regular file: not
    /// read`).
    pub fn describe(&self) -> String {
        match self {
            FileProblem::Missing => "it does not exist".to_owned(),
            FileProblem::NotRegular(kind) => {
                format!("it is {}, not a regular file: not read", kind.describe())
            }
            FileProblem::Unreadable { message, .. } => format!("cannot read: {message}"),
        }
    }

    /// Classifies an I/O error from `stat`, `open` or `read_dir`: only `NotFound` is "missing";
    /// every other error (permission denied above all) means "there, but unreadable".
    pub fn from_io(e: &io::Error) -> Self {
        match e.kind() {
            io::ErrorKind::NotFound => FileProblem::Missing,
            kind => FileProblem::Unreadable {
                kind,
                message: e.to_string(),
            },
        }
    }
}

/// What the first bytes of a regular file say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Contents {
    /// Zero bytes.
    Empty,
    /// A git-lfs pointer (`version https://git-lfs.github.com/spec/v1`): the data was never fetched.
    LfsPointer,
    /// Anything else: to be read by the file's own parser.
    Data,
}

impl Contents {
    /// Recognises the contents from the leading bytes.
    pub fn sniff(head: &[u8]) -> Self {
        if head.is_empty() {
            Contents::Empty
        } else if head.starts_with(b"version https://git-lfs.github.com/spec/") {
            Contents::LfsPointer
        } else {
            Contents::Data
        }
    }
}

/// A regular file opened for reading, with its size and what its first bytes say.
#[derive(Debug)]
pub struct Opened {
    /// The file, positioned at its start.
    pub file: File,
    /// Its size in bytes.
    pub len: u64,
    /// Its leading bytes (at most [`SNIFF_BYTES`]).
    pub head: Vec<u8>,
    /// What they say.
    pub contents: Contents,
}

/// Opens `path` for reading only if it is a regular file, without ever blocking: the type is
/// checked before opening (following symlinks) and again on the open file (so a path swapped
/// for a FIFO in between is caught), and the open itself is non-blocking.
pub fn open_regular(path: &Path) -> Result<Opened, FileProblem> {
    if leaves_its_directory(path) {
        return Err(FileProblem::NotRegular(FileKind::LinkOutside));
    }
    let meta = std::fs::metadata(path).map_err(|e| FileProblem::from_io(&e))?;
    if let Some(kind) = FileKind::of(&meta) {
        return Err(FileProblem::NotRegular(kind));
    }
    // Read-only: verify never writes.
    let file = File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| FileProblem::from_io(&e))?;
    let meta = file.metadata().map_err(|e| FileProblem::from_io(&e))?;
    if let Some(kind) = FileKind::of(&meta) {
        return Err(FileProblem::NotRegular(kind));
    }
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    (&file)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|e| FileProblem::from_io(&e))?;
    let file = rewound(file).map_err(|e| FileProblem::from_io(&e))?;
    Ok(Opened {
        file,
        len: meta.len(),
        contents: Contents::sniff(&head),
        head,
    })
}

/// Whether `path` is a symbolic link whose target lies outside the directory holding it (a
/// link within a run's directory, or a directory above it linked elsewhere, is followed: npuprof
/// relocate links the output directory itself).
fn leaves_its_directory(path: &Path) -> bool {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if !is_link {
        return false;
    }
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    match (path.canonicalize(), parent.canonicalize()) {
        (Ok(target), Ok(dir)) => !target.starts_with(dir),
        // A dangling link is missing, said as such by the open.
        _ => false,
    }
}

fn rewound(mut file: File) -> io::Result<File> {
    use std::io::Seek;
    file.rewind()?;
    Ok(file)
}

/// Reads a small file (profiler_info, metadata, a report) whole, refusing more than `cap` bytes.
pub fn read_capped(path: &Path, cap: u64) -> Result<Result<Vec<u8>, u64>, FileProblem> {
    let opened = open_regular(path)?;
    if opened.len > cap {
        return Ok(Err(opened.len));
    }
    let mut bytes = Vec::with_capacity(opened.len as usize);
    opened
        .file
        .take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| FileProblem::from_io(&e))?;
    if bytes.len() as u64 > cap {
        return Ok(Err(bytes.len() as u64));
    }
    Ok(Ok(bytes))
}

/// Lists a directory's entry names, sorted; `Err` when it cannot be read.
pub fn list_dir(dir: &Path) -> Result<Vec<String>, FileProblem> {
    let rd = std::fs::read_dir(dir).map_err(|e| FileProblem::from_io(&e))?;
    let mut names: Vec<String> = rd
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_not_found_is_missing() {
        let missing = io::Error::from(io::ErrorKind::NotFound);
        assert_eq!(FileProblem::from_io(&missing), FileProblem::Missing);
        for kind in [
            io::ErrorKind::PermissionDenied,
            io::ErrorKind::Other,
            io::ErrorKind::InvalidData,
        ] {
            let e = io::Error::from(kind);
            assert!(
                matches!(FileProblem::from_io(&e), FileProblem::Unreadable { kind: k, .. } if k == kind),
                "{kind:?}"
            );
        }
    }

    #[test]
    fn sniffs_empty_lfs_and_data() {
        assert_eq!(Contents::sniff(b""), Contents::Empty);
        assert_eq!(
            Contents::sniff(
                b"version https://git-lfs.github.com/spec/v1\noid sha256:ab\nsize 12\n"
            ),
            Contents::LfsPointer
        );
        assert_eq!(Contents::sniff(b"[{\"ph\": \"M\"}]"), Contents::Data);
    }
}
