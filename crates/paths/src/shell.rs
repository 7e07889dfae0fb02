//! Commands as a person types them: words quoted for a POSIX shell only when they need it.
//!
//! Every command npuprof prints or puts in JSON is built as an argv and shown with [`join`], so
//! a repository file named `a;touch PWNED;b.py` is one word when the line is pasted into a shell.

/// Quotes `word` for a POSIX shell (plain words stay as they are). Inside single quotes every
/// byte is literal (`;`, `$()`, backticks, `"`, spaces, newlines, non-ASCII); a `'` is written
/// `'\''`.
pub fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,@%".contains(&b));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// `argv` as one shell line.
pub fn join(argv: &[String]) -> String {
    argv.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}

/// A path as an argument that no program reads as an option: a relative path starting with
/// `-` gets `./` in front (quoting alone cannot stop `python3 -c…` from being an option), and
/// the empty path is `.` (a command never gets an empty argument).
pub fn path_arg(path: &str) -> String {
    if path.starts_with('-') {
        format!("./{path}")
    } else if path.is_empty() {
        ".".to_owned()
    } else {
        path.to_owned()
    }
}

/// A long option with its value as argv words: `--flag value`, or `--flag=value` when the value
/// starts with `-` and would otherwise read as an option.
pub fn option(flag: &str, value: &str) -> Vec<String> {
    if value.starts_with('-') {
        vec![format!("{flag}={value}")]
    } else {
        vec![flag.to_owned(), value.to_owned()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_words_that_need_it_are_quoted() {
        assert_eq!(quote("models/m_pd/decode.yaml"), "models/m_pd/decode.yaml");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
        assert_eq!(join(&["bash".into(), "x y.sh".into()]), "bash 'x y.sh'");
        assert_eq!(path_arg("-c.py"), "./-c.py");
        assert_eq!(path_arg("a/-c.py"), "a/-c.py");
        assert_eq!(option("--entry", "a.py"), ["--entry", "a.py"]);
        assert_eq!(option("--entry", "-c.py"), ["--entry=-c.py"]);
    }

    /// Names an attacker can give a repository file.
    const HOSTILE: &[&str] = &[
        "a;touch PWNED;b.py",
        "$(touch PWNED).py",
        "`touch PWNED`.py",
        "it's \"quoted\".py",
        "with space.py",
        "new\nline.py",
        "-c.py",
        "--help",
        "données/модель.py",
        "tab\there.py",
        "back\\slash.py",
        "'",
        "''",
        "*.py",
        "~/x.py",
        "a|b&c>d<e.py",
        "",
    ];

    #[test]
    fn an_empty_path_is_the_current_directory_never_an_empty_argument() {
        assert_eq!(path_arg(""), ".");
        assert_eq!(join(&[path_arg("")]), ".");
        assert_eq!(path_arg("-x"), "./-x");
    }

    #[test]
    fn a_shell_reads_every_hostile_name_back_as_one_word() {
        let dir = tempfile::tempdir().unwrap();
        let argv: Vec<String> = HOSTILE.iter().map(|w| path_arg(w)).collect();
        let line = format!("printf '%s\\0' {}", join(&argv));
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(&line)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(output.status.success(), "{line}");
        let words: Vec<&[u8]> = output.stdout.split(|b| *b == 0).collect();
        let expected: Vec<&[u8]> = argv
            .iter()
            .map(|w| w.as_bytes())
            .chain([&b""[..]])
            .collect();
        assert_eq!(words, expected, "{line}");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "the line ran a command: {line}"
        );
    }
}
