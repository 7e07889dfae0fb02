//! Which filesystem holds a directory, and whether it is of a kind on which torch_npu's parsing
//! is known to fail. The mount table is an input ([`MountTable::parse`] of mountinfo text), so
//! the verdict can be checked for any table; [`MountTable::current`] reads this process's.

use std::path::Path;

use serde::Serialize;

/// The class of a filesystem type, as far as writing profiler output is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FsClass {
    /// A local disk filesystem (ext4, xfs, tmpfs, ...).
    Local,
    /// A network or cluster filesystem (NFS, CIFS, Lustre, GPFS, Ceph, ...).
    Network,
    /// A FUSE filesystem (sshfs, object-store mounts, ...).
    Fuse,
    /// An overlay filesystem (container layers).
    Overlay,
}

impl FsClass {
    /// Classifies a mountinfo filesystem type (`ext4`, `nfs4`, `fuse.sshfs`, `overlay`, ...).
    pub fn of(fs_type: &str) -> Self {
        let t = fs_type;
        if t.starts_with("fuse") || matches!(t, "s3fs" | "ossfs" | "obsfs") {
            FsClass::Fuse
        } else if t == "overlay" {
            FsClass::Overlay
        } else if t.starts_with("nfs")
            || matches!(
                t,
                "cifs"
                    | "smb3"
                    | "smbfs"
                    | "lustre"
                    | "gpfs"
                    | "ceph"
                    | "glusterfs"
                    | "9p"
                    | "virtiofs"
                    | "beegfs"
                    | "afs"
            )
        {
            FsClass::Network
        } else {
            FsClass::Local
        }
    }

    /// The class's name, as in JSON.
    pub fn name(self) -> &'static str {
        match self {
            FsClass::Local => "local",
            FsClass::Network => "network",
            FsClass::Fuse => "fuse",
            FsClass::Overlay => "overlay",
        }
    }

    /// Network, FUSE or overlay: the kinds on which torch_npu parsing is known to fail.
    pub fn is_suspect(self) -> bool {
        self != FsClass::Local
    }
}

/// The mount that holds a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// Mount point.
    pub mount_point: String,
    /// Filesystem type, e.g. `ext4`, `nfs4`, `fuse.sshfs`, `overlay`.
    pub fs_type: String,
    /// Mount source, e.g. `/dev/vda1` or `server:/export`.
    pub source: String,
}

impl Mount {
    /// The class of its filesystem type.
    pub fn class(&self) -> FsClass {
        FsClass::of(&self.fs_type)
    }

    /// Network, FUSE or overlay filesystems: the kinds on which torch_npu parsing is known to fail.
    pub fn is_suspect(&self) -> bool {
        self.class().is_suspect()
    }
}

/// A parsed mount table (mountinfo format), in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MountTable {
    /// The mounts.
    pub mounts: Vec<Mount>,
}

impl MountTable {
    /// Parses mountinfo text (`/proc/self/mountinfo`); malformed lines are skipped.
    pub fn parse(mountinfo: &str) -> Self {
        Self {
            mounts: mountinfo.lines().filter_map(parse_line).collect(),
        }
    }

    /// This process's mount table; `None` when `/proc/self/mountinfo` cannot be read.
    pub fn current() -> Option<Self> {
        std::fs::read_to_string("/proc/self/mountinfo")
            .ok()
            .map(|t| Self::parse(&t))
    }

    /// The mount holding `path` (absolute, canonical): the longest mount-point prefix, the
    /// later entry winning among equal mount points.
    pub fn mount_for(&self, path: &Path) -> Option<&Mount> {
        let mut best: Option<&Mount> = None;
        for m in &self.mounts {
            if path.starts_with(&m.mount_point)
                && best.is_none_or(|b| m.mount_point.len() >= b.mount_point.len())
            {
                best = Some(m);
            }
        }
        best
    }

    /// The mount holding directory `dir` (canonicalised first; `None` if it cannot be).
    pub fn mount_of_dir(&self, dir: &Path) -> Option<&Mount> {
        self.mount_for(&dir.canonicalize().ok()?)
    }
}

fn parse_line(line: &str) -> Option<Mount> {
    let fields: Vec<&str> = line.split(' ').collect();
    let sep = fields.iter().position(|f| *f == "-")?;
    if fields.len() < 5 || fields.len() < sep + 3 {
        return None;
    }
    Some(Mount {
        mount_point: unescape(fields[4]),
        fs_type: fields[sep + 1].to_owned(),
        source: unescape(fields[sep + 2]),
    })
}

/// Decodes mountinfo's octal escapes (`\040` for a space).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 4 <= bytes.len()
            && let Some(v) = field
                .get(i + 1..i + 4)
                .and_then(|oct| u8::from_str_radix(oct, 8).ok())
        {
            out.push(v);
            i += 4;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: &str = "\
22 1 252:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
40 22 0:35 / /mnt/share rw,relatime shared:2 - nfs4 server:/export rw,vers=4.2
41 40 0:36 / /mnt/share/with\\040space rw - fuse.sshfs user@host:/x rw
";

    #[test]
    fn longest_prefix_wins() {
        let table = MountTable::parse(INFO);
        assert_eq!(table.mounts.len(), 3);
        let class = |p: &str| table.mount_for(Path::new(p)).map(Mount::class);
        assert_eq!(class("/mnt/share/a/b"), Some(FsClass::Network));
        assert_eq!(class("/home/u"), Some(FsClass::Local));
        assert_eq!(class("/mnt/share/with space/x"), Some(FsClass::Fuse));
        assert_eq!(
            MountTable::parse("garbage\n").mount_for(Path::new("/")),
            None
        );
    }

    #[test]
    fn a_mount_inside_another_and_a_mount_point_mounted_over() {
        let table = MountTable::parse(
            "27 1 254:0 / / rw - ext4 /dev/vda rw
40 27 0:50 / /mnt/shared\\040data rw shared:5 - nfs4 server:/export rw,vers=4.1
43 40 0:53 / /mnt/shared\\040data/local rw - ext4 /dev/vdb rw
44 27 0:54 / /srv rw - ext4 /dev/vdc rw
45 27 0:55 / /srv rw - nfs4 other:/srv rw
",
        );
        let mount = |p: &str| table.mount_for(Path::new(p)).expect("a mount");
        let nfs = mount("/mnt/shared data/models/x/res");
        assert_eq!(
            (nfs.fs_type.as_str(), nfs.source.as_str()),
            ("nfs4", "server:/export")
        );
        assert_eq!(mount("/mnt/shared data/local/res").fs_type, "ext4");
        assert_eq!(mount("/mnt/shared-other").mount_point, "/");
        assert_eq!(
            mount("/srv/x").source,
            "other:/srv",
            "the later mount over /srv wins"
        );
    }

    #[test]
    fn classes() {
        for (t, c) in [
            ("ext4", FsClass::Local),
            ("tmpfs", FsClass::Local),
            ("nfs4", FsClass::Network),
            ("lustre", FsClass::Network),
            ("fuse.sshfs", FsClass::Fuse),
            ("obsfs", FsClass::Fuse),
            ("overlay", FsClass::Overlay),
            ("xfs", FsClass::Local),
            ("virtiofs", FsClass::Network),
            ("afs", FsClass::Network),
            ("nfs3", FsClass::Network),
            ("ossfs", FsClass::Fuse),
        ] {
            assert_eq!(FsClass::of(t), c, "{t}");
            assert_eq!(c.is_suspect(), c != FsClass::Local);
        }
    }
}
