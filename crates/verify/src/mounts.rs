//! Which filesystem holds a directory (from `/proc/self/mountinfo`).

use std::path::Path;

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
    /// Network, FUSE or overlay filesystems: the kinds on which torch_npu parsing is known to fail.
    pub fn is_suspect(&self) -> bool {
        let t = self.fs_type.as_str();
        t.starts_with("fuse")
            || t.starts_with("nfs")
            || matches!(
                t,
                "overlay"
                    | "cifs"
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
                    | "s3fs"
                    | "ossfs"
                    | "obsfs"
            )
    }
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

/// Finds the mount holding `path` (absolute, canonical) in mountinfo text: the longest
/// mount-point prefix, the later entry winning among equal mount points.
pub fn mount_for(mountinfo: &str, path: &Path) -> Option<Mount> {
    let mut best: Option<Mount> = None;
    for line in mountinfo.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let Some(sep) = fields.iter().position(|f| *f == "-") else {
            continue;
        };
        if fields.len() < 5 || fields.len() < sep + 3 {
            continue;
        }
        let mount_point = unescape(fields[4]);
        if !path.starts_with(&mount_point) {
            continue;
        }
        let better = best
            .as_ref()
            .is_none_or(|b| mount_point.len() >= b.mount_point.len());
        if better {
            best = Some(Mount {
                mount_point,
                fs_type: fields[sep + 1].to_owned(),
                source: unescape(fields[sep + 2]),
            });
        }
    }
    best
}

/// Reads `/proc/self/mountinfo` and finds the mount holding `dir`.
pub fn mount_of_dir(dir: &Path) -> Option<Mount> {
    let canonical = dir.canonicalize().ok()?;
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mount_for(&text, &canonical)
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
        let m = mount_for(INFO, Path::new("/mnt/share/a/b")).unwrap_or_else(|| Mount {
            mount_point: String::new(),
            fs_type: String::new(),
            source: String::new(),
        });
        assert_eq!(m.fs_type, "nfs4");
        assert!(m.is_suspect());
        let root = mount_for(INFO, Path::new("/home/u")).map(|m| m.fs_type);
        assert_eq!(root.as_deref(), Some("ext4"));
        let fuse = mount_for(INFO, Path::new("/mnt/share/with space/x")).map(|m| m.fs_type);
        assert_eq!(fuse.as_deref(), Some("fuse.sshfs"));
        assert!(!mount_for(INFO, Path::new("/x")).is_some_and(|m| m.is_suspect()));
    }
}
