//! Which filesystem holds a path: `/proc/self/mountinfo`, longest mount-point prefix.

use std::path::{Path, PathBuf};

use serde::Serialize;

/// Environment variable naming a mountinfo file to read instead of `/proc/self/mountinfo`
/// (for tests that need a deterministic filesystem layout).
pub const MOUNTINFO_ENV: &str = "NPUPROF_MOUNTINFO";

/// One mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// Where it is mounted.
    pub mount_point: PathBuf,
    /// Filesystem type (`ext4`, `nfs4`, `fuse.sshfs`, ...).
    pub fs_type: String,
    /// What is mounted (device, `server:/export`, ...).
    pub source: String,
}

/// How suitable a filesystem type is for profiler output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FsClass {
    /// A local disk (or tmpfs).
    Local,
    /// A network or cluster filesystem: the known cause of parser failures.
    Network,
    /// A FUSE filesystem: the same risks as network storage.
    Fuse,
    /// An overlay (container layer): usually works, flagged.
    Overlay,
}

impl FsClass {
    /// The class's name, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            FsClass::Local => "local",
            FsClass::Network => "network",
            FsClass::Fuse => "fuse",
            FsClass::Overlay => "overlay",
        }
    }
}

/// Classifies a filesystem type. The network and FUSE classes together are exactly the types
/// `npuprof verify` calls suspect, less `overlay` (a warning here); a test keeps them in step.
pub fn classify(fs_type: &str) -> FsClass {
    const NETWORK: [&str; 12] = [
        "cifs",
        "smb3",
        "smbfs",
        "ceph",
        "lustre",
        "gpfs",
        "9p",
        "glusterfs",
        "beegfs",
        "virtiofs",
        "afs",
        "nfs",
    ];
    const FUSE_NAMED: [&str; 3] = ["s3fs", "ossfs", "obsfs"];
    if fs_type.starts_with("nfs") || NETWORK.contains(&fs_type) {
        FsClass::Network
    } else if fs_type.starts_with("fuse") || FUSE_NAMED.contains(&fs_type) {
        FsClass::Fuse
    } else if fs_type == "overlay" || fs_type == "overlayfs" {
        FsClass::Overlay
    } else {
        FsClass::Local
    }
}

/// Parses mountinfo text (see proc(5)); malformed lines are skipped.
pub fn parse(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            let separator = fields.iter().position(|f| *f == "-")?;
            let mount_point = fields.get(4)?;
            let fs_type = fields.get(separator + 1)?;
            let source = fields.get(separator + 2).copied().unwrap_or("");
            Some(Mount {
                mount_point: PathBuf::from(unescape(mount_point)),
                fs_type: unescape(fs_type),
                source: unescape(source),
            })
        })
        .collect()
}

/// Undoes the kernel's octal escapes (`\040` for a space, ...).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|b| (b'0'..=b'7').contains(b)));
        if let Some(digits) = octal {
            out.push(
                digits
                    .iter()
                    .fold(0u8, |acc, d| acc.wrapping_mul(8).wrapping_add(d - b'0')),
            );
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mount holding the canonical `path`: the longest mount point that is a prefix of it
/// (the last one listed wins when a mount point is mounted over).
pub fn find<'a>(mounts: &'a [Mount], path: &Path) -> Option<&'a Mount> {
    mounts
        .iter()
        .enumerate()
        .filter(|(_, m)| path.starts_with(&m.mount_point))
        .max_by_key(|(index, m)| (m.mount_point.components().count(), *index))
        .map(|(_, m)| m)
}

/// Reads this process's mount table.
pub fn read() -> std::io::Result<Vec<Mount>> {
    let path = std::env::var_os(MOUNTINFO_ENV)
        .map_or_else(|| PathBuf::from("/proc/self/mountinfo"), PathBuf::from);
    Ok(parse(&std::fs::read_to_string(path)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
40 27 0:50 / /mnt/shared\\040data rw,relatime shared:5 - nfs4 server:/export rw,vers=4.1
41 27 0:51 / /mnt/s3 rw - fuse.s3fs s3fs rw
42 27 0:52 / /var/lib/docker/x rw - overlay overlay rw,lowerdir=a
43 40 0:53 / /mnt/shared\\040data/local rw - ext4 /dev/vdb rw
";

    #[test]
    fn longest_prefix_wins_and_escapes_are_decoded() {
        let mounts = parse(SAMPLE);
        assert_eq!(mounts.len(), 5);
        let m = find(&mounts, Path::new("/mnt/shared data/models/x/res")).unwrap();
        assert_eq!(
            (m.fs_type.as_str(), m.source.as_str()),
            ("nfs4", "server:/export")
        );
        let m = find(&mounts, Path::new("/mnt/shared data/local/res")).unwrap();
        assert_eq!(m.fs_type, "ext4");
        let m = find(&mounts, Path::new("/mnt/shared-other")).unwrap();
        assert_eq!(m.mount_point, Path::new("/"));
    }

    #[test]
    fn classes() {
        assert_eq!(classify("nfs4"), FsClass::Network);
        assert_eq!(classify("lustre"), FsClass::Network);
        assert_eq!(classify("fuse.sshfs"), FsClass::Fuse);
        assert_eq!(classify("overlay"), FsClass::Overlay);
        assert_eq!(classify("xfs"), FsClass::Local);
        assert_eq!(classify("virtiofs"), FsClass::Network);
        assert_eq!(classify("afs"), FsClass::Network);
        assert_eq!(classify("nfs3"), FsClass::Network);
        assert_eq!(classify("ossfs"), FsClass::Fuse);
    }
}
