//! Walking the repository in parallel: ignore rules, skipped directories, size and binary
//! checks, the substring prefilter, and reading each relevant file into facts.

use std::collections::HashSet;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkBuilder, WalkState};
use memchr::memmem;

use crate::blocks;
use crate::python::{self, PyFacts};
use crate::report::{Skipped, Stats, Warning};
use crate::shell::{self, EnvAssignment};
use crate::yaml_configs::{self, ConfigRead};

/// Files larger than this are not read (reported in `skipped`).
pub(crate) const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// A Python file is parsed only if it contains one of these (case-sensitive) substrings:
/// `rofile` covers `profiler`, `enable_profiler`, `dynamic_profile`, `--profile`,
/// `ProfilerManager`; `ROFILE` covers `*_PROFILER_DIR`; `vllm`/`sglang` find imports of serving
/// frameworks with their own profiler. Everything route reports involves one of them (a bare
/// `import torch_npu`, common in Ascend code, does not, so it does not force a parse); callers
/// of profiler functions under other names are found by a second pass.
const PYTHON_PREFILTER: [&str; 2] = ["rofile", "ROFILE"];

/// Directory names never entered: version control, virtualenvs, caches, installed packages.
const SKIPPED_DIRS: [&str; 6] = [
    ".git",
    ".venv",
    "venv",
    "node_modules",
    "__pycache__",
    "site-packages",
];

/// Trees below the root that are not the repository's own code, never entered and reported in
/// `skipped` with why: test suites with their fixtures, and examples (each a repository of its
/// own, routed by naming it). The root itself is never skipped, so `route examples/x` routes x.
const SKIPPED_TREES: [(&str, SkippedTree); 4] = [
    ("tests", SkippedTree::Tests),
    ("test", SkippedTree::Tests),
    ("testdata", SkippedTree::Tests),
    ("examples", SkippedTree::Examples),
];

/// What kind of tree [`SKIPPED_TREES`] leaves out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SkippedTree {
    /// A test suite: its fixtures look like repositories but are not this one's code.
    Tests,
    /// Examples, each a repository of its own.
    Examples,
}

impl SkippedTree {
    /// The `skipped[].reason` of a tree of this kind.
    pub(crate) fn reason(self) -> &'static str {
        match self {
            SkippedTree::Tests => "a test suite: its fixtures are not this repository's code",
            SkippedTree::Examples => {
                "examples, each a repository of its own: route one by naming it"
            }
        }
    }
}

/// The kind of skipped tree `entry` is, if it is one (never the root).
fn skipped_tree(entry: &DirEntry) -> Option<SkippedTree> {
    if entry.depth() == 0 || !entry.file_type().is_some_and(|t| t.is_dir()) {
        return None;
    }
    let name = entry.file_name().to_str()?;
    SKIPPED_TREES
        .iter()
        .find(|(tree, _)| *tree == name)
        .map(|(_, kind)| *kind)
}

/// A parsed Python file.
#[derive(Debug)]
pub(crate) struct PyFile {
    /// Path relative to the root, `/`-separated.
    pub path: String,
    /// What was read from it.
    pub facts: PyFacts,
}

/// Profiler environment variables set in a shell script.
#[derive(Debug)]
pub(crate) struct ShellFile {
    /// Path relative to the root.
    pub path: String,
    /// The assignments.
    pub assignments: Vec<EnvAssignment>,
}

/// A Python file that did not pass the prefilter, kept for the second pass.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Unparsed {
    /// Path relative to the root.
    pub rel: String,
    /// Path on disk.
    pub path: PathBuf,
}

/// Everything the walk produced.
#[derive(Default)]
pub(crate) struct Collected {
    /// Python files that passed the prefilter, parsed.
    pub python: Vec<PyFile>,
    /// Python files that did not pass it.
    pub unparsed: Vec<Unparsed>,
    /// Run configurations.
    pub configs: Vec<ConfigRead>,
    /// Shell scripts setting profiler environment variables.
    pub shell: Vec<ShellFile>,
    /// Entry-point candidates with a likelihood score (higher first).
    pub entries: Vec<(String, i32)>,
    /// Problems that did not stop the walk.
    pub warnings: Vec<Warning>,
    /// Files left out on purpose.
    pub skipped: Vec<Skipped>,
    /// Trees left out as not the repository's own code (also in `skipped`), relative paths.
    pub trees: Vec<(String, SkippedTree)>,
    /// Counts.
    pub stats: Stats,
}

impl Collected {
    fn merge(&mut self, other: Collected) {
        self.python.extend(other.python);
        self.unparsed.extend(other.unparsed);
        self.configs.extend(other.configs);
        self.shell.extend(other.shell);
        self.entries.extend(other.entries);
        self.warnings.extend(other.warnings);
        self.skipped.extend(other.skipped);
        self.trees.extend(other.trees);
        self.stats.files += other.stats.files;
        self.stats.python_files += other.stats.python_files;
        self.stats.python_parsed += other.stats.python_parsed;
        self.stats.yaml_files += other.stats.yaml_files;
        self.stats.shell_files += other.stats.shell_files;
    }
}

/// Walks `root` and reads every relevant file.
pub(crate) fn walk(root: &Path) -> Collected {
    let shared = Mutex::new(Collected::default());
    let trees = std::sync::Arc::new(Mutex::new(Vec::new()));
    let mut builder = WalkBuilder::new(root);
    let seen = std::sync::Arc::clone(&trees);
    let base = root.to_path_buf();
    builder
        .follow_links(true)
        .require_git(false)
        .filter_entry(move |entry| {
            if let Some(kind) = skipped_tree(entry) {
                let rel = npuprof_paths::relative(&base, entry.path());
                seen.lock()
                    .unwrap_or_else(|poison| poison.into_inner())
                    .push((rel, kind));
                return false;
            }
            !is_skipped_dir(entry)
        });
    let mut visitors = Builder {
        root,
        shared: &shared,
    };
    builder.build_parallel().visit(&mut visitors);
    let mut collected = shared
        .into_inner()
        .unwrap_or_else(|poison| poison.into_inner());
    collected.python.sort_by(|a, b| a.path.cmp(&b.path));
    collected.unparsed.sort_by(|a, b| a.rel.cmp(&b.rel));
    collected
        .configs
        .sort_by(|a, b| a.config.path.cmp(&b.config.path));
    collected.shell.sort_by(|a, b| a.path.cmp(&b.path));
    collected.warnings.sort();
    collected.warnings.dedup();
    let mut trees = std::mem::take(&mut *trees.lock().unwrap_or_else(|p| p.into_inner()));
    trees.sort_by(|a, b| a.0.cmp(&b.0));
    trees.dedup_by(|a, b| a.0 == b.0);
    collected
        .skipped
        .extend(trees.iter().map(|(path, kind)| Skipped {
            path: path.clone(),
            reason: kind.reason().to_owned(),
        }));
    collected.trees = trees;
    collected.skipped.sort();
    collected
}

/// Parses the not-yet-parsed Python files that mention one of `names` as an identifier (the
/// second pass that looks for callers of profiler functions whose names escape the prefilter).
/// Files are split across threads; each file is tokenized once, whatever the number of names.
pub(crate) fn parse_mentioning(unparsed: &[Unparsed], names: &[String]) -> Vec<PyFile> {
    let wanted: HashSet<&[u8]> = names.iter().map(|n| n.as_bytes()).collect();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8);
    let chunk = unparsed.len().div_ceil(threads).max(1);
    let mut parsed: Vec<PyFile> = std::thread::scope(|scope| {
        let handles: Vec<_> = unparsed
            .chunks(chunk)
            .map(|files| {
                let wanted = &wanted;
                scope.spawn(move || {
                    let mut parser = None;
                    let mut parsed = Vec::new();
                    let mut buf = Vec::new();
                    for file in files {
                        if read_limited(&file.path, &mut buf).is_err() {
                            continue;
                        }
                        if !mentions_identifier(&buf, wanted) {
                            continue;
                        }
                        if let Some(src) = utf8(&buf) {
                            let parser = parser.get_or_insert_with(python::new_parser);
                            let facts = python::extract(parser, src, None);
                            parsed.push(PyFile {
                                path: file.rel.clone(),
                                facts,
                            });
                        }
                    }
                    parsed
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    parsed.sort_by(|a, b| a.path.cmp(&b.path));
    parsed
}

/// Parses in full the parsed files whose left-out blocks mention one of `names` (a caller of a
/// profiler function may sit in a block without profiler words).
pub(crate) fn reparse_mentioning(files: &mut [PyFile], names: &[String]) {
    let wanted: HashSet<&[u8]> = names.iter().map(|n| n.as_bytes()).collect();
    let mut parser = None;
    for file in files {
        let facts = &file.facts;
        let mentions = facts
            .skipped
            .iter()
            .any(|r| mentions_identifier(&facts.src.as_bytes()[r.clone()], &wanted));
        if mentions {
            let parser = parser.get_or_insert_with(python::new_parser);
            let src = std::mem::take(&mut file.facts.src);
            file.facts = python::extract(parser, &src, None);
        }
    }
}

/// Whether `bytes` contain one of `wanted` as a whole identifier-like token. Tokens are only
/// hashed when their first byte and length match a wanted name.
fn mentions_identifier(bytes: &[u8], wanted: &HashSet<&[u8]>) -> bool {
    if wanted.is_empty() {
        return false;
    }
    let mut first = [false; 256];
    let mut lengths = [false; 256];
    for name in wanted {
        if let Some(&b) = name.first() {
            first[usize::from(b)] = true;
        }
        lengths[name.len().min(255)] = true;
    }
    let mut i = 0;
    let len = bytes.len();
    while i < len {
        // Skip to the next word byte, then to its end.
        while i < len && !WORD[usize::from(bytes[i])] {
            i += 1;
        }
        let start = i;
        while i < len && WORD[usize::from(bytes[i])] {
            i += 1;
        }
        if start < i {
            let token = &bytes[start..i];
            if first[usize::from(token[0])]
                && lengths[token.len().min(255)]
                && !token[0].is_ascii_digit()
                && wanted.contains(token)
            {
                return true;
            }
        }
    }
    false
}

/// Bytes that can be part of a Python identifier (ASCII letters, digits, `_`, and any byte of
/// a non-ASCII UTF-8 character).
const WORD: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80;
        b += 1;
    }
    table
};

/// Whether a Python text contains one of the words that make it worth parsing.
pub(crate) fn passes_prefilter(bytes: &[u8]) -> bool {
    PYTHON_PREFILTER
        .into_iter()
        .chain(python::framework_modules())
        .any(|word| memmem::find(bytes, word.as_bytes()).is_some())
}

fn is_skipped_dir(entry: &DirEntry) -> bool {
    if !entry.file_type().is_some_and(|t| t.is_dir()) || entry.depth() == 0 {
        return false;
    }
    let name = entry.file_name().to_string_lossy();
    SKIPPED_DIRS.contains(&name.as_ref()) || entry.path().join("pyvenv.cfg").is_file()
}

struct Builder<'s> {
    root: &'s Path,
    shared: &'s Mutex<Collected>,
}

impl<'s> ParallelVisitorBuilder<'s> for Builder<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Visitor {
            root: self.root,
            shared: self.shared,
            local: Collected::default(),
            buf: Vec::new(),
            python: None,
        })
    }
}

/// One walker thread: collects locally, merges into the shared result when dropped.
struct Visitor<'s> {
    root: &'s Path,
    shared: &'s Mutex<Collected>,
    local: Collected,
    /// Read buffer, reused for every file of this thread.
    buf: Vec<u8>,
    python: Option<tree_sitter::Parser>,
}

impl Drop for Visitor<'_> {
    fn drop(&mut self) {
        let local = std::mem::take(&mut self.local);
        let mut shared = self
            .shared
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        shared.merge(local);
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Python,
    Yaml,
    Shell,
}

fn kind_of(path: &Path) -> Option<Kind> {
    match path.extension()?.to_str()? {
        "py" => Some(Kind::Python),
        "yaml" | "yml" => Some(Kind::Yaml),
        "sh" | "bash" => Some(Kind::Shell),
        _ => None,
    }
}

impl ParallelVisitor for Visitor<'_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        match entry {
            Ok(entry) => self.visit_entry(&entry),
            Err(err) => {
                let warning = walk_warning(self.root, &err);
                self.local.warnings.push(warning);
            }
        }
        WalkState::Continue
    }
}

impl Visitor<'_> {
    fn warn(&mut self, rel: &str, message: String) {
        self.local.warnings.push(Warning {
            path: rel.to_owned(),
            message,
        });
    }

    fn visit_entry(&mut self, entry: &DirEntry) {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            return;
        }
        self.local.stats.files += 1;
        let path = entry.path();
        let Some(kind) = kind_of(path) else {
            return;
        };
        let rel = npuprof_paths::relative(self.root, path);
        let mut bytes = std::mem::take(&mut self.buf);
        self.read_and_visit(rel, path, kind, &mut bytes);
        self.buf = bytes;
    }

    fn read_and_visit(&mut self, rel: String, path: &Path, kind: Kind, bytes: &mut Vec<u8>) {
        match read_limited(path, bytes) {
            Ok(Ok(())) => {}
            Ok(Err(len)) => {
                let reason = format!("larger than 4 MiB ({len} bytes)");
                self.local.skipped.push(Skipped { path: rel, reason });
                return;
            }
            Err(err) => return self.warn(&rel, format!("cannot read: {err}")),
        };
        if memchr::memchr(0, bytes).is_some() {
            let reason = "binary (contains a NUL byte)".to_owned();
            self.local.skipped.push(Skipped { path: rel, reason });
            return;
        }
        match kind {
            Kind::Python => self.python_file(rel, path, bytes),
            Kind::Yaml => self.yaml_file(rel, bytes),
            Kind::Shell => self.shell_file(rel, bytes),
        }
    }

    fn python_file(&mut self, rel: String, path: &Path, bytes: &[u8]) {
        self.local.stats.python_files += 1;
        if let Some(score) = entry_score(&rel, bytes) {
            self.local.entries.push((rel.clone(), score));
        }
        if !passes_prefilter(bytes) {
            self.local.unparsed.push(Unparsed {
                rel,
                path: path.to_path_buf(),
            });
            return;
        }
        let Some(src) = utf8(bytes) else {
            return self.warn(&rel, "not valid UTF-8; skipped".to_owned());
        };
        self.local.stats.python_parsed += 1;
        let parser = self.python.get_or_insert_with(python::new_parser);
        let aliases = blocks::torch_npu_import_names(src.as_bytes());
        let aliases: HashSet<&[u8]> = aliases.iter().map(Vec::as_slice).collect();
        let ranges = blocks::ranges_to_parse(src.as_bytes(), |block| {
            passes_prefilter(block) || mentions_identifier(block, &aliases)
        });
        let facts = python::extract(parser, src, ranges.as_deref());
        if facts.has_errors {
            self.warn(
                &rel,
                "Python syntax errors; facts read from the parts that parse".to_owned(),
            );
        }
        self.local.python.push(PyFile { path: rel, facts });
    }

    fn yaml_file(&mut self, rel: String, bytes: &[u8]) {
        self.local.stats.yaml_files += 1;
        if !yaml_configs::is_candidate(&rel, bytes) {
            return;
        }
        let Some(src) = utf8(bytes) else {
            return self.warn(&rel, "not valid UTF-8; skipped".to_owned());
        };
        if let Some(read) = yaml_configs::read(self.root, &rel, src) {
            if let Some(error) = &read.config.error {
                self.warn(&rel, error.clone());
            }
            self.local.configs.push(read);
        }
    }

    fn shell_file(&mut self, rel: String, bytes: &[u8]) {
        self.local.stats.shell_files += 1;
        if memmem::find(bytes, b"PROFILER_DIR").is_none() {
            return;
        }
        let Some(src) = utf8(bytes) else {
            return self.warn(&rel, "not valid UTF-8; skipped".to_owned());
        };
        let assignments = shell::scan(src);
        if !assignments.is_empty() {
            self.local.shell.push(ShellFile {
                path: rel,
                assignments,
            });
        }
    }
}

/// Reads the file into `buf` (cleared first), or returns its length when it is larger than
/// [`MAX_FILE_BYTES`]. Reads through `Take`, so there is no fstat/lseek for a size hint: one
/// open, two reads, one close per file, and no allocation once `buf` has grown.
fn read_limited(path: &Path, buf: &mut Vec<u8>) -> std::io::Result<Result<(), u64>> {
    buf.clear();
    let file = std::fs::File::open(path)?;
    let mut limited = (&file).take(MAX_FILE_BYTES + 1);
    limited.read_to_end(buf)?;
    if buf.len() as u64 > MAX_FILE_BYTES {
        return Ok(Err(file.metadata()?.len()));
    }
    Ok(Ok(()))
}

/// The text with a leading UTF-8 byte-order mark removed, if valid UTF-8.
fn utf8(bytes: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(bytes).ok()?;
    Some(text.strip_prefix('\u{feff}').unwrap_or(text))
}

fn io_message(err: &ignore::Error) -> String {
    match err.io_error() {
        Some(io) => io.to_string(),
        None => err.to_string(),
    }
}

/// A warning for a walk error, with paths made relative to the root.
fn walk_warning(root: &Path, err: &ignore::Error) -> Warning {
    let mut err = err;
    let mut path: Option<&Path> = None;
    loop {
        match err {
            ignore::Error::WithPath {
                path: p,
                err: inner,
            } => {
                path = Some(p);
                err = inner;
            }
            ignore::Error::WithDepth { err: inner, .. }
            | ignore::Error::WithLineNumber { err: inner, .. } => err = inner,
            _ => break,
        }
    }
    match err {
        ignore::Error::Loop { ancestor, child } => Warning {
            path: npuprof_paths::relative(root, child),
            message: format!(
                "symlink loop: points back to {}; not followed",
                npuprof_paths::relative(root, ancestor)
            ),
        },
        other => Warning {
            path: path.map_or_else(|| ".".to_owned(), |p| npuprof_paths::relative(root, p)),
            message: format!("cannot read: {}", io_message(other)),
        },
    }
}

/// A likelihood score when the file looks like a script entry point (`__main__` guard).
fn entry_score(rel: &str, bytes: &[u8]) -> Option<i32> {
    if memmem::find(bytes, b"__main__").is_none() || memmem::find(bytes, b"__name__").is_none() {
        return None;
    }
    let file = rel.rsplit('/').next().unwrap_or(rel);
    let stem = file.strip_suffix(".py").unwrap_or(file);
    let mut score = 0;
    const NAMES: [&str; 9] = [
        "infer", "generate", "run", "main", "offline", "predict", "demo", "serve", "bench",
    ];
    if NAMES.iter().any(|n| stem.contains(n)) {
        score += 4;
    }
    if stem.starts_with("test") || rel.split('/').any(|p| p == "tests" || p == "test") {
        score -= 8;
    }
    const LOOP_WORDS: [&str; 4] = ["decode", "generate", "max_new_tokens", "forward"];
    score += LOOP_WORDS
        .iter()
        .filter(|w| memmem::find(bytes, w.as_bytes()).is_some())
        .count() as i32;
    if memmem::find(bytes, b"for ").is_some() || memmem::find(bytes, b"while ").is_some() {
        score += 1;
    }
    score -= rel.matches('/').count() as i32;
    Some(score)
}
