//! The `git apply`-compatible diff that creates a new file.

/// A unified diff creating `path` (repository-relative, `/`-separated) with `text`.
pub fn new_file_diff(path: &str, text: &str) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = format!(
        "diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{} @@\n",
        lines.len()
    );
    for line in &lines {
        out.push('+');
        out.push_str(line);
    }
    if !text.is_empty() && !text.ends_with('\n') {
        out.push_str("\n\\ No newline at end of file\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::new_file_diff;

    #[test]
    fn single_line_without_newline() {
        assert_eq!(
            new_file_diff("a.py", "x = 1"),
            "diff --git a/a.py b/a.py\nnew file mode 100644\n--- /dev/null\n+++ b/a.py\n@@ -0,0 +1,1 @@\n+x = 1\n\\ No newline at end of file\n"
        );
    }
}
