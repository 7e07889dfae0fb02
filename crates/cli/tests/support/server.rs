//! What the server-collect tests share: a free port, a working directory with a private HOME,
//! a collect's result, and the live processes of a process group.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// A port nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// A temp working directory with a private HOME inside it.
pub struct Workdir {
    dir: tempfile::TempDir,
}

impl Workdir {
    /// A new one.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join("home")).expect("home");
        Self { dir }
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Every path under the directory, relative.
    pub fn listing(&self) -> BTreeSet<PathBuf> {
        let mut out = BTreeSet::new();
        let mut stack = vec![self.path().to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).expect("read dir").flatten() {
                let path = entry.path();
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(path.clone());
                }
                out.insert(path.strip_prefix(self.path()).expect("below").to_path_buf());
            }
        }
        out
    }
}

/// Waits until the server collect running in `work` has started its server (its log exists,
/// at most 20 s), and half a second more.
pub fn wait_for_server(work: &Workdir) {
    let log = work.path().join("prof/npuprof-server.log");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !log.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
}

/// A collect's exit code, `--json` report and stderr.
pub struct Run {
    /// The exit code.
    pub code: i32,
    /// The report.
    pub json: Value,
    /// What it said on stderr.
    pub stderr: String,
}

impl Run {
    /// The result of a finished `npuprof collect --json`.
    pub fn of(out: &std::process::Output) -> Self {
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let json = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{stdout}\nstderr:\n{stderr}"));
        Run {
            code: out.status.code().unwrap_or(-1),
            json,
            stderr,
        }
    }
}

/// The live processes of group `group`.
pub fn group_members(group: i64) -> Vec<String> {
    let mut left = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let fields: Vec<&str> = rest.split(' ').collect();
        if fields.get(2).and_then(|p| p.parse::<i64>().ok()) == Some(group)
            && !matches!(fields[0], "Z" | "X")
        {
            left.push(stat);
        }
    }
    left
}

/// The live processes of group `group` once it has emptied or `secs` seconds have passed: a
/// SIGKILL is delivered when its target is next scheduled, so on a loaded machine a killed
/// group's members are still listed for a moment after `kill` returns.
pub fn group_members_after(group: i64, secs: u64) -> Vec<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        let left = group_members(group);
        if left.is_empty() || std::time::Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// No process of the server's group is left, and only the profile directory `prof` (and the
/// empty HOME) is in the working directory.
pub fn check_nothing_left(work: &Workdir, run: &Run) {
    let pid = run.json["shutdown"]["pid"]
        .as_i64()
        .unwrap_or_else(|| panic!("a shutdown with the pid: {}", run.json));
    assert_eq!(group_members(pid), Vec::<String>::new(), "{}", run.stderr);
    let outside: Vec<PathBuf> = work
        .listing()
        .into_iter()
        .filter(|p| !p.starts_with("prof") && p != Path::new("home"))
        .collect();
    assert_eq!(outside, Vec::<PathBuf>::new());
}

/// Exit 2, stopped at an error of `kind`.
pub fn check_stopped(run: &Run, kind: &str) {
    assert_eq!(run.code, 2, "{}\n{}", run.json, run.stderr);
    assert_eq!(run.json["error"]["kind"], kind, "{}", run.json);
}
