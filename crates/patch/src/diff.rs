//! `git apply`-compatible unified diffs.

use similar::TextDiff;

/// The unified diff (3 lines of context) turning `old` into `new` for the repository-relative
/// `path`, with a `diff --git` header; empty when they are equal.
pub fn unified_diff(path: &str, old: &str, new: &str) -> String {
    if old == new {
        return String::new();
    }
    let diff = TextDiff::from_lines(old, new);
    let body = diff
        .unified_diff()
        .context_radius(3)
        .missing_newline_hint(true)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string();
    format!("diff --git a/{path} b/{path}\n{body}")
}
