//! npuprof-paths: how npuprof writes paths in its reports and messages, held once: relative to a
//! root, `/`-separated whatever the platform, `.` for the root itself; and how a path or any
//! word is quoted for a shell in the commands npuprof prints (`shell`).

use std::path::{Component, Path};

pub mod shell;

/// `path` with `/` between its components.
pub fn slash(path: &Path) -> String {
    let parts: Vec<_> = path
        .components()
        .map(|c| match c {
            Component::RootDir => "".into(),
            other => other.as_os_str().to_string_lossy(),
        })
        .collect();
    if parts.is_empty() {
        ".".to_owned()
    } else {
        parts.join("/")
    }
}

/// `path` relative to `root` when it is below it (else as it is), `/`-separated; `.` for `root`.
pub fn relative(root: &Path, path: &Path) -> String {
    slash(path.strip_prefix(root).unwrap_or(path))
}

/// How `target` is reached from directory `from` (both relative to one root): `../x/y`.
pub fn relative_from(from: &Path, target: &Path) -> String {
    let from: Vec<Component<'_>> = from.components().collect();
    let to: Vec<Component<'_>> = target.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".to_owned(); from.len() - common];
    parts.extend(
        to[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{relative, relative_from, slash};

    #[test]
    fn paths_are_relative_and_slash_separated() {
        assert_eq!(slash(Path::new("a/b/c.py")), "a/b/c.py");
        assert_eq!(slash(Path::new("")), ".");
        assert_eq!(
            relative(Path::new("/r"), Path::new("/r/models/m")),
            "models/m"
        );
        assert_eq!(relative(Path::new("/r"), Path::new("/r")), ".");
        assert_eq!(
            relative(Path::new("/r"), Path::new("/elsewhere/x")),
            "/elsewhere/x"
        );
    }

    #[test]
    fn relative_from_climbs_out_of_the_directory() {
        let cases = [
            ("src", "src/infer.py", "infer.py"),
            ("tools/prof", "src/infer.py", "../../src/infer.py"),
            ("", "infer.py", "infer.py"),
        ];
        for (from, target, expected) in cases {
            assert_eq!(relative_from(Path::new(from), Path::new(target)), expected);
        }
    }
}
