//! `git apply`-compatible unified diffs.

use similar::TextDiff;

/// The unified diff (3 lines of context) turning `old` into `new` for the repository-relative
/// `path`, with a `diff --git` header; empty when they are equal. Paths with a tab, a newline, a
/// quote, a backslash or another control character are C-quoted the way git writes them.
pub fn unified_diff(path: &str, old: &str, new: &str) -> String {
    if old == new {
        return String::new();
    }
    let (a, b) = (quoted("a/", path), quoted("b/", path));
    let diff = TextDiff::from_lines(old, new);
    let body = diff
        .unified_diff()
        .context_radius(3)
        .missing_newline_hint(true)
        .header(&a, &b)
        .to_string();
    format!("diff --git {a} {b}\n{body}")
}

/// `prefix` + `path`, C-quoted when git would quote it.
fn quoted(prefix: &str, path: &str) -> String {
    let plain = format!("{prefix}{path}");
    if !path
        .chars()
        .any(|c| c.is_control() || c == '"' || c == '\\')
    {
        return plain;
    }
    let mut out = String::from("\"");
    for c in plain.chars() {
        match c {
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let mut buf = [0; 4];
                for byte in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("\\{byte:03o}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_paths_are_quoted_like_git() {
        assert_eq!(quoted("a/", "m/c.yaml"), "a/m/c.yaml");
        assert_eq!(quoted("a/", "m/x\ty.yaml"), "\"a/m/x\\ty.yaml\"");
        assert_eq!(quoted("b/", "q\"\\.yaml"), "\"b/q\\\"\\\\.yaml\"");
        assert_eq!(quoted("a/", "\u{1}.yaml"), "\"a/\\001.yaml\"");
    }

    /// `git apply --check` accepts the diff of a file whose name holds a tab.
    #[test]
    fn git_applies_the_diff_of_a_file_named_with_a_tab() {
        let dir = tempfile::tempdir().expect("temp dir");
        let name = "x\ty.yaml";
        std::fs::write(dir.path().join(name), "a: 1\n").expect("write");
        let diff = unified_diff(name, "a: 1\n", "a: 2\n");
        std::fs::write(dir.path().join("p.diff"), &diff).expect("write diff");
        let git = std::process::Command::new("git")
            .args(["apply", "--check", "p.diff"])
            .current_dir(dir.path())
            .output()
            .expect("git runs");
        assert!(
            git.status.success(),
            "{diff}\n{}",
            String::from_utf8_lossy(&git.stderr)
        );
    }
}
