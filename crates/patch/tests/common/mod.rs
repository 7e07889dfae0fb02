//! Helpers shared by the patch tests: fixture paths and the checks every edit must pass.
#![allow(dead_code)]

use std::path::PathBuf;

use npuprof_patch::Edits;
use npuprof_patch::diff::unified_diff;

/// The crate's fixture directory.
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The bundled example repository.
pub fn example_repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/recipes-mini")
}

/// Reads a file as UTF-8 (panics with the path: fixtures are ours).
pub fn read(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The example's `profiler_context.py`.
pub fn example_python() -> String {
    read(&example_repo().join("executor/utils/profiler_context.py"))
}

/// An example run config.
pub fn example_yaml(model: &str, file: &str) -> String {
    read(
        &example_repo()
            .join("models")
            .join(model)
            .join("config")
            .join(file),
    )
}

/// Applies `edits`, checks that the inverse restores the original byte for byte, and returns
/// the new text.
pub fn apply_checked(original: &str, edits: &Edits) -> String {
    let new = edits.apply(original);
    assert_eq!(
        edits.inverse(original).apply(&new),
        original,
        "inverse edits must restore the original"
    );
    new
}

/// Makes carriage returns visible in snapshots.
pub fn visible(text: &str) -> String {
    text.replace('\r', "␍")
}

/// The snapshot text of one patched file: the change list, then the diff.
pub fn report(path: &str, original: &str, new: &str, changes: &[String]) -> String {
    if original == new {
        return "(no changes)\n".to_owned();
    }
    let mut out = String::new();
    for change in changes {
        out.push_str(&format!("# {change}\n"));
    }
    out.push_str(&visible(&unified_diff(path, original, new)));
    out
}

/// Whether `text` parses as Python without ERROR/MISSING nodes.
pub fn python_parses(text: &str) -> bool {
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .expect("grammar");
    parser
        .parse(text, None)
        .is_some_and(|t| !t.root_node().has_error())
}
