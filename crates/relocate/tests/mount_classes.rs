//! relocate and verify judge filesystems alike: a type is network or FUSE for relocate exactly
//! when verify calls it suspect (overlay aside: a warning for relocate, suspect for verify).
//! Until both read one mount-table module, this test keeps the two lists in step.

use npuprof_relocate::mountinfo::{FsClass, classify};
use npuprof_verify::mounts::Mount;

/// Every type either side names, and a few local ones.
const TYPES: [&str; 26] = [
    "ext4",
    "xfs",
    "btrfs",
    "tmpfs",
    "zfs",
    "nfs",
    "nfs3",
    "nfs4",
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
    "s3fs",
    "ossfs",
    "obsfs",
    "fuse",
    "fuseblk",
    "fuse.sshfs",
    "overlay",
];

#[test]
fn relocate_and_verify_agree_on_every_filesystem_type() {
    for fs_type in TYPES {
        let mount = Mount {
            mount_point: "/".to_owned(),
            fs_type: fs_type.to_owned(),
            source: String::new(),
        };
        let class = classify(fs_type);
        let relocate_suspect = matches!(class, FsClass::Network | FsClass::Fuse | FsClass::Overlay);
        assert_eq!(
            relocate_suspect,
            mount.is_suspect(),
            "`{fs_type}`: relocate says {class:?}, verify says suspect={}",
            mount.is_suspect()
        );
    }
}
