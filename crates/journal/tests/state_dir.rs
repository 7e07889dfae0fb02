//! The state directory collect keeps the originals in (`$XDG_STATE_HOME/npuprof/collect`) is
//! refused when another user could change it under npuprof: a link, a directory of another
//! uid, one others can write, or a shared container without the sticky bit. The cases with a
//! second uid need root (CI runs as root); as another user they are said and skipped.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use npuprof_journal::new_private_dir;

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

fn refused(parent: &Path) -> String {
    match new_private_dir(parent) {
        Ok(dir) => panic!("{} was accepted: {}", parent.display(), dir.display()),
        Err(err) => err.to_string(),
    }
}

#[test]
fn a_private_state_directory_is_made_and_used() {
    let tmp = tempfile::tempdir().expect("tmp");
    // A shared container (1777, as /tmp or a CI's XDG_STATE_HOME) is fine: npuprof's own
    // directories in it are its user's, mode 0700.
    let shared = tmp.path().join("shared");
    std::fs::create_dir(&shared).expect("mkdir");
    chmod(&shared, 0o1777);
    let dir = new_private_dir(&shared.join("npuprof/collect")).expect("made");
    assert!(dir.starts_with(shared.join("npuprof/collect")));
    for made in [
        &dir,
        &shared.join("npuprof"),
        &shared.join("npuprof/collect"),
    ] {
        let mode = std::fs::metadata(made).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", made.display());
    }
}

#[test]
fn a_state_directory_others_can_change_is_refused() {
    let tmp = tempfile::tempdir().expect("tmp");
    // A link where npuprof's directory goes (another user's directory behind it).
    let elsewhere = tmp.path().join("theirs");
    std::fs::create_dir(&elsewhere).expect("mkdir");
    let linked = tmp.path().join("linked");
    std::fs::create_dir(&linked).expect("mkdir");
    std::os::unix::fs::symlink(&elsewhere, linked.join("npuprof")).expect("symlink");
    let said = refused(&linked.join("npuprof/collect"));
    assert!(said.contains("it is a symbolic link"), "{said}");
    // npuprof's directory writable by others.
    let open = tmp.path().join("open");
    std::fs::create_dir_all(open.join("npuprof/collect")).expect("mkdir");
    chmod(&open.join("npuprof"), 0o777);
    let said = refused(&open.join("npuprof/collect"));
    assert!(said.contains("others can write it (mode 777)"), "{said}");
    // A container others can write without the sticky bit: they could rename npuprof/.
    let loose = tmp.path().join("loose");
    std::fs::create_dir(&loose).expect("mkdir");
    chmod(&loose, 0o777);
    let said = refused(&loose.join("npuprof/collect"));
    assert!(said.contains("no sticky bit (mode 777)"), "{said}");
    assert!(
        said.contains("set XDG_STATE_HOME to a directory of yours"),
        "{said}"
    );
}

#[test]
fn a_state_directory_of_another_user_is_refused() {
    if !rustix::process::geteuid().is_root() {
        #[allow(clippy::print_stderr, reason = "a test's note in its captured output")]
        {
            eprintln!("skipped: making a directory of another uid needs root");
        }
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    // Another user pre-creates npuprof/ in a shared 1777 state directory.
    let shared = tmp.path().join("shared");
    std::fs::create_dir(&shared).expect("mkdir");
    chmod(&shared, 0o1777);
    std::fs::create_dir(shared.join("npuprof")).expect("mkdir");
    chmod(&shared.join("npuprof"), 0o700);
    std::os::unix::fs::chown(shared.join("npuprof"), Some(4321), Some(4321)).expect("chown");
    let said = refused(&shared.join("npuprof/collect"));
    assert!(said.contains("owned by uid 4321"), "{said}");
    // A container owned by another (non-root) user, who may rename anything in it.
    let theirs = tmp.path().join("theirs");
    std::fs::create_dir(&theirs).expect("mkdir");
    std::os::unix::fs::chown(&theirs, Some(4321), Some(4321)).expect("chown");
    let said = refused(&theirs.join("npuprof/collect"));
    assert!(said.contains("owned by uid 4321, who can rename"), "{said}");
}
