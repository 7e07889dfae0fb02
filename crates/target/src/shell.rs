//! Commands as a person types them: words quoted for a POSIX shell only when they need it.

/// Quotes `word` for a POSIX shell (plain words stay as they are).
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
    }
}
