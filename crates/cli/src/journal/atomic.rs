//! Atomic file replacement: a temp file in the same directory, permissions and owner set,
//! fsync, then one `rename`. A reader (or a crash) sees the old bytes or the new, never a mix.

use std::fs::{File, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use tempfile::NamedTempFile;

/// Permission bits of a file (`st_mode & 0o7777`).
pub fn mode_of(metadata: &std::fs::Metadata) -> u32 {
    metadata.permissions().mode() & 0o7777
}

/// Writes `bytes` to a new temp file next to `target`, with `mode` (and `owner` when given,
/// best effort), flushed to disk. Persist it with [`NamedTempFile::persist`].
pub fn prepare(
    target: &Path,
    bytes: &[u8],
    mode: u32,
    owner: Option<(u32, u32)>,
) -> io::Result<NamedTempFile> {
    let dir = target.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".npuprof-tmp-")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    if let Some((uid, gid)) = owner {
        // Only root may give a file away; for anyone else the file keeps its creator.
        let _ = std::os::unix::fs::fchown(tmp.as_file(), Some(uid), Some(gid));
    }
    tmp.as_file()
        .set_permissions(Permissions::from_mode(mode))?;
    tmp.as_file().sync_all()?;
    Ok(tmp)
}

/// Replaces `target` atomically with `bytes`.
pub fn write(target: &Path, bytes: &[u8], mode: u32, owner: Option<(u32, u32)>) -> io::Result<()> {
    let tmp = prepare(target, bytes, mode, owner)?;
    tmp.persist(target).map_err(|err| err.error)?;
    sync_parent(target);
    Ok(())
}

/// Flushes the directory entry of `path` (best effort: some filesystems refuse it).
pub fn sync_parent(path: &Path) {
    if let Some(dir) = path.parent()
        && let Ok(handle) = File::open(dir)
    {
        let _ = handle.sync_all();
    }
}
