//! What a journal must hold to be used (version, well-formed hashes, the saved originals still
//! needed), and the state `status` reads on disk for each kind of change (see docs/mutants.md).

mod support;

use std::fs;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use npuprof_journal::{self as journal, ChangeKind, JournalError, State, Transaction};
use support::{check_revert_ok, patch, repo_with};

/// Rewrites field `field` of entry `index` of `repo`'s journal (`None`: the top level).
fn edit_journal(repo: &Path, index: Option<usize>, field: &str, value: serde_json::Value) {
    let path = repo.join(".npuprof/journal.json");
    let mut journal: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    let object = match index {
        Some(i) => &mut journal["entries"][i],
        None => &mut journal,
    };
    object[field] = value;
    fs::write(&path, serde_json::to_vec(&journal).unwrap()).unwrap();
}

/// The reason `status` refuses `repo`'s journal.
fn refusal(repo: &Path) -> String {
    match journal::status(repo) {
        Err(JournalError::BadJournal { reason, .. }) => reason,
        other => panic!("the journal was not refused: {other:?}"),
    }
}

#[test]
fn a_journal_of_another_version_or_with_a_malformed_hash_is_refused() {
    let sha = "a".repeat(64);
    for (index, field, value, reason) in [
        (None, "version", 2.into(), "unknown journal version 2"),
        (Some(0), "original_sha256", "x".into(), "malformed sha256"),
        (
            Some(0),
            "patched_sha256",
            "A".repeat(64).into(),
            "malformed sha256",
        ),
        (Some(1), "patched_sha256", "abc".into(), "malformed sha256"),
        (Some(0), "original_sha256", sha.into(), "is missing"),
    ] {
        let repo = repo_with(&[("a.py", b"a\n")]);
        let mut tx = Transaction::begin(repo.path(), "inject").unwrap();
        tx.write_file(Path::new("a.py"), b"A\n".to_vec()).unwrap();
        tx.create_file(Path::new("new.py"), b"n\n".to_vec())
            .unwrap();
        tx.commit().unwrap();
        journal::status(repo.path()).unwrap().unwrap();
        edit_journal(repo.path(), index, field, value);
        let refused = refusal(repo.path());
        assert!(refused.contains(reason), "{field}: {refused}");
    }
}

#[test]
fn a_saved_original_is_needed_only_while_its_file_is_not_back_to_it() {
    let repo = repo_with(&[("a.py", b"original\n")]);
    patch(repo.path(), "patch", &[("a.py", b"patched\n")]);
    let originals = repo.path().join(".npuprof/originals");
    let saved = fs::read_dir(&originals).unwrap().next().unwrap().unwrap();
    fs::rename(saved.path(), repo.path().join("kept-aside")).unwrap();
    assert!(refusal(repo.path()).contains("is missing"));
    fs::write(repo.path().join("a.py"), b"original\n").unwrap();
    let status = journal::status(repo.path()).unwrap().unwrap();
    assert_eq!(status[0].state, State::Original);
}

#[test]
fn a_saved_original_corrupted_since_is_written_again_when_saved_again() {
    let repo = repo_with(&[("a.py", b"same\n"), ("b.py", b"same\n")]);
    patch(repo.path(), "patch", &[("a.py", b"A\n")]);
    let saved = fs::read_dir(repo.path().join(".npuprof/originals"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    fs::write(&saved, b"corrupt\n").unwrap();
    // b.py's original is the same bytes: saving it repairs the file.
    patch(repo.path(), "patch", &[("b.py", b"B\n")]);
    assert_eq!(fs::read(&saved).unwrap(), b"same\n");
    check_revert_ok(repo.path());
    assert_eq!(fs::read(repo.path().join("a.py")).unwrap(), b"same\n");
}

/// What `status` says of each entry: path, kind, state, whether revert must refuse it.
fn states(repo: &Path) -> Vec<(String, ChangeKind, State, bool)> {
    journal::status(repo)
        .unwrap()
        .unwrap()
        .iter()
        .map(|s| {
            let path = s.path.display().to_string();
            (path, s.kind, s.state, s.is_conflict())
        })
        .collect()
}

#[test]
fn status_reads_each_change_from_what_is_on_disk() {
    let models = ["m1", "m2", "m3", "m4", "m5", "m6"];
    let mut files: Vec<(String, &[u8])> = ["a.py", "b.py", "d.py"]
        .iter()
        .map(|f| (f.to_string(), b"original\n" as &[u8]))
        .collect();
    files.extend(
        models
            .iter()
            .map(|m| (format!("{m}/res/log"), b"log\n" as &[u8])),
    );
    let files: Vec<(&str, &[u8])> = files.iter().map(|(p, b)| (p.as_str(), *b)).collect();
    let repo = repo_with(&files);
    let root = repo.path();
    let (first, second, other) = (
        Path::new("/npuprof-test/first"),
        Path::new("/npuprof-test/second"),
        Path::new("/npuprof-test/other"),
    );
    let mut tx = Transaction::begin(root, "relocate").unwrap();
    for file in ["a.py", "b.py", "d.py"] {
        tx.write_file(Path::new(file), b"first\n".to_vec()).unwrap();
    }
    tx.create_file(Path::new("h1/x.py"), b"x\n".to_vec())
        .unwrap();
    tx.create_file(Path::new("h2/y.py"), b"y\n".to_vec())
        .unwrap();
    for m in models {
        tx.rename(
            Path::new(&format!("{m}/res")),
            Path::new(&format!("{m}/moved")),
        )
        .unwrap();
        tx.symlink(Path::new(&format!("{m}/res")), first).unwrap();
    }
    tx.commit().unwrap();
    let mut tx = Transaction::begin(root, "relocate").unwrap();
    tx.write_file(Path::new("b.py"), b"second\n".to_vec())
        .unwrap();
    tx.symlink(Path::new("m5/res"), second).unwrap();
    tx.commit().unwrap();

    fs::write(root.join("a.py"), b"original\n").unwrap(); // restored by hand
    fs::write(root.join("b.py"), b"first\n").unwrap(); // a rewrite cut off before its rename
    fs::remove_file(root.join("d.py")).unwrap();
    fs::remove_dir_all(root.join("h1")).unwrap();
    std::os::unix::fs::symlink("h2", root.join("h1")).unwrap();
    fs::remove_file(root.join("h2/y.py")).unwrap();
    // m1: killed before its move (the journal was written, nothing else).
    fs::remove_file(root.join("m1/res")).unwrap();
    fs::rename(root.join("m1/moved"), root.join("m1/res")).unwrap();
    let relink = |m: &str, to: &Path| {
        fs::remove_file(root.join(m).join("res")).unwrap();
        std::os::unix::fs::symlink(to, root.join(m).join("res")).unwrap();
    };
    relink("m2", other);
    fs::remove_file(root.join("m3/res")).unwrap();
    fs::create_dir(root.join("m3/res")).unwrap();
    fs::remove_file(root.join("m4/res")).unwrap();
    relink("m5", first); // a retarget cut off before its rename
    fs::remove_file(root.join("m6/res")).unwrap();
    fs::remove_dir_all(root.join("m6/moved")).unwrap();

    use ChangeKind::{Created, CreatedDir, Modified, Renamed, Symlink};
    use State::{Applied, Changed, Interrupted, Missing, Original};
    let mut expected = vec![
        ("a.py".to_owned(), Modified, Original, false),
        ("b.py".to_owned(), Modified, Interrupted, false),
        ("d.py".to_owned(), Modified, Missing, true),
        ("h1".to_owned(), CreatedDir, Changed, true),
        ("h1/x.py".to_owned(), Created, Changed, true),
        ("h2".to_owned(), CreatedDir, Applied, false),
        ("h2/y.py".to_owned(), Created, Original, false),
    ];
    for (m, renamed, symlink) in [
        ("m1", Original, Original),
        ("m2", Applied, Changed),
        ("m3", Applied, Changed),
        ("m4", Applied, Original),
        ("m5", Applied, Interrupted),
        ("m6", Missing, Original),
    ] {
        let res = format!("{m}/res");
        expected.push((res.clone(), Renamed, renamed, false));
        expected.push((res, Symlink, symlink, symlink == Changed));
    }
    assert_eq!(states(root), expected);
}

/// Reading a FIFO would block until a writer comes.
#[test]
fn a_patched_file_replaced_by_a_fifo_is_changed_and_never_opened() {
    let repo = repo_with(&[("a.py", b"a\n")]);
    patch(repo.path(), "patch", &[("a.py", b"A\n")]);
    let file = repo.path().join("a.py");
    fs::remove_file(&file).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &file,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    let (done, result) = mpsc::channel();
    let root = repo.path().to_path_buf();
    std::thread::spawn(move || {
        let _ = done.send(states(&root));
    });
    let states = result.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(
        states,
        [(
            "a.py".to_owned(),
            ChangeKind::Modified,
            State::Changed,
            true
        )]
    );
}
