//! The offline re-parse command npuprof suggests, built in one place.
//!
//! torch_npu's `analyse(path)` parses `path` itself when it holds `FRAMEWORK/` or a `PROF_*`
//! directory, else each *immediate* subdirectory that does, and nothing deeper: it prints
//! nothing for a path two levels above the run directories (`_path_manager.py`,
//! `get_profiler_path_list`, the same in every build from 2.1 to 2.14). So a command names run
//! directories, or a phase directory proven to hold them ([`ReparseDir`]).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use npuprof_paths::shell::quote;

/// A directory `analyse()` parses: a run directory, or the directory that holds run
/// directories as its immediate children.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ReparseDir(PathBuf);

impl ReparseDir {
    /// A run directory (`*_ascend_pt`, holding `FRAMEWORK/` or `PROF_*`).
    pub fn run(dir: &Path) -> Self {
        Self(dir.to_path_buf())
    }

    /// The parents of `runs` (run directories): each one `analyse()` parses whole, in order,
    /// without repeats.
    pub fn parents_of<'a>(runs: impl IntoIterator<Item = &'a Path>) -> Vec<Self> {
        let mut out: Vec<Self> = runs
            .into_iter()
            .map(|r| Self(r.parent().unwrap_or(r).to_path_buf()))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

/// Whether `dir` holds the raw data `analyse()` parses (`FRAMEWORK/` or a `PROF_*` directory).
pub fn has_raw_data(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            (name == "FRAMEWORK" || name.starts_with("PROF_"))
                && e.file_type().is_ok_and(|t| t.is_dir())
        })
    })
}

/// The advice for re-parsing the run directory `dir`: the [`analyse_command`] when its raw data
/// is there, else what can be done instead (a copy made without the raw data cannot be
/// re-parsed: the command would parse nothing).
pub fn reparse_advice(dir: &Path) -> String {
    if has_raw_data(dir) {
        analyse_command(&[ReparseDir::run(dir)])
    } else {
        format!(
            "(the raw data, `FRAMEWORK/` and `PROF_*`, is not in {}, so it cannot be re-parsed \
             here: copy the whole run directory from where it was written, or collect again)",
            quote(&dir.display().to_string())
        )
    }
}

/// `python3 -c "import torch_npu; torch_npu.profiler.profiler.analyse('<dir>')"`, one `analyse`
/// per directory, every path quoted for Python inside the shell's quotes (spaces, quotes, `$`,
/// backslashes, control and non-ASCII characters, bytes that are not UTF-8).
pub fn analyse_command(dirs: &[ReparseDir]) -> String {
    let mut python = String::from("import torch_npu");
    for dir in dirs {
        let _ = write!(
            python,
            "; torch_npu.profiler.profiler.analyse({})",
            python_path(dir.path())
        );
    }
    format!("python3 -c {}", shell_code(&python))
}

/// Python code as one shell word: in double quotes (`"`, `$`, `` ` `` and `\` escaped), or in
/// single quotes when it holds a `!` (history expansion in an interactive shell).
fn shell_code(code: &str) -> String {
    if code.contains('!') {
        return quote(code);
    }
    let mut out = String::with_capacity(code.len() + 2);
    out.push('"');
    for c in code.chars() {
        if matches!(c, '"' | '$' | '`' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// A Python expression for `path`: a string literal, or `os.fsdecode(b'…')` for a path that is
/// not UTF-8 (Python decodes it back to the same bytes).
fn python_path(path: &Path) -> String {
    match path.to_str() {
        Some(text) => python_str(text),
        None => {
            use std::os::unix::ffi::OsStrExt;
            let mut out = String::from("__import__('os').fsdecode(b'");
            for &b in path.as_os_str().as_bytes() {
                match b {
                    b'\\' => out.push_str(r"\\"),
                    b'\'' => out.push_str(r"\'"),
                    0x20..=0x7e => out.push(char::from(b)),
                    _ => {
                        let _ = write!(out, "\\x{b:02x}");
                    }
                }
            }
            out.push_str("')");
            out
        }
    }
}

/// A Python string literal for `text` (control characters escaped, the rest as is: `-c` code
/// is read as UTF-8).
fn python_str(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    for c in text.chars() {
        match c {
            '\\' => out.push_str(r"\\"),
            '\'' => out.push_str(r"\'"),
            c if c.is_control() => {
                let _ = write!(out, "\\U{:08x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {

    /// The re-parse is offered only where the raw data is: a run directory without
    /// `FRAMEWORK/` or `PROF_*` (only its `ASCEND_PROFILER_OUTPUT/` copied) gets what to do
    /// instead, never a command that parses nothing.
    #[test]
    fn the_reparse_is_offered_only_with_the_raw_data() {
        let tmp = tempfile::tempdir().expect("tmp");
        let run = tmp.path().join("host_1_2_ascend_pt");
        std::fs::create_dir_all(run.join("ASCEND_PROFILER_OUTPUT")).expect("mkdir");
        let advice = reparse_advice(&run);
        assert!(advice.contains("cannot be re-parsed here"), "{advice}");
        assert!(!advice.contains("analyse("), "{advice}");
        for raw in ["FRAMEWORK", "PROF_000001_20260725_abc"] {
            let with = tmp.path().join(format!("{raw}_run"));
            std::fs::create_dir_all(with.join(raw)).expect("mkdir");
            let advice = reparse_advice(&with);
            assert!(
                advice.starts_with("python3 -c \"import torch_npu; "),
                "{advice}"
            );
        }
    }

    use std::path::Path;

    use super::*;

    fn one(dir: &str) -> String {
        analyse_command(&[ReparseDir::run(Path::new(dir))])
    }

    #[test]
    fn plain_paths_read_as_before() {
        assert_eq!(
            one("res/prof/decode/w_1_ascend_pt"),
            r#"python3 -c "import torch_npu; torch_npu.profiler.profiler.analyse('res/prof/decode/w_1_ascend_pt')""#
        );
    }

    /// Runs `command` in `sh` with a stand-in `torch_npu` whose `analyse` prints the bytes of
    /// the path it was given, in hex, one line per call.
    fn analysed_bytes(command: &str) -> Vec<String> {
        let stub = tempfile::tempdir().expect("tempdir");
        let pkg = stub.path().join("torch_npu").join("profiler");
        std::fs::create_dir_all(&pkg).expect("mkdir");
        std::fs::write(
            stub.path().join("torch_npu").join("__init__.py"),
            "from . import profiler\n",
        )
        .expect("write");
        std::fs::write(pkg.join("__init__.py"), "from . import profiler\n").expect("write");
        std::fs::write(
            pkg.join("profiler.py"),
            "import os\ndef analyse(p):\n    print(os.fsencode(p).hex())\n",
        )
        .expect("write");
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(command)
            .env("PYTHONPATH", stub.path())
            .env("LC_ALL", "C.UTF-8")
            .output()
            .expect("sh runs");
        assert!(out.status.success(), "{command}: {out:?}");
        String::from_utf8(out.stdout)
            .expect("hex")
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn awkward_paths_reach_analyse_unchanged_through_the_shell_and_python() {
        use std::ffi::OsStr;
        use std::os::unix::ffi::OsStrExt;
        let paths: [&[u8]; 7] = [
            b"/d/it's $HOME/\"x\"\\y `id`",
            b"/d/a b/\xc3\xa9/run",
            b"/d/new\nline\ttab",
            b"/d/bang!/x",
            b"/d/\xff'run",
            b"/d/'!'\"$",
            b"-rel/\xe4\xb8\xad",
        ];
        for bytes in paths {
            let dir = ReparseDir::run(Path::new(OsStr::from_bytes(bytes)));
            assert_eq!(
                analysed_bytes(&analyse_command(&[dir])),
                vec![hex(bytes)],
                "{}",
                String::from_utf8_lossy(bytes)
            );
        }
    }

    #[test]
    fn several_directories_get_one_analyse_each_and_parents_are_deduplicated() {
        let parents = ReparseDir::parents_of([
            Path::new("p/decode/a_ascend_pt"),
            Path::new("p/prefill/b_ascend_pt"),
            Path::new("p/decode/c_ascend_pt"),
        ]);
        assert_eq!(
            analyse_command(&parents),
            r#"python3 -c "import torch_npu; torch_npu.profiler.profiler.analyse('p/decode'); torch_npu.profiler.profiler.analyse('p/prefill')""#
        );
    }

    #[test]
    fn shell_quote_keeps_plain_words() {
        assert_eq!(quote("/d/a_b-1"), "/d/a_b-1");
        assert_eq!(quote("/d/it's here"), r"'/d/it'\''s here'");
        assert_eq!(quote(""), "''");
    }
}
