//! Small facts about a text's layout: its newline, lines and indentation.

/// The newline a file uses: `"\r\n"` when its first line ends with CRLF, else `"\n"`.
pub(crate) fn newline(text: &str) -> &'static str {
    match text.find('\n') {
        Some(i) if i > 0 && text.as_bytes()[i - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

/// Byte offset of the start of the line containing `at`.
pub(crate) fn line_start(text: &str, at: usize) -> usize {
    text[..at].rfind('\n').map_or(0, |i| i + 1)
}

/// Byte offset of the end of the line containing `at` (before its `\r\n` or `\n`).
pub(crate) fn line_end(text: &str, at: usize) -> usize {
    let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    if end > at && text.as_bytes()[end - 1] == b'\r' {
        end - 1
    } else {
        end
    }
}

/// The leading whitespace of the line containing `at`.
pub(crate) fn indentation(text: &str, at: usize) -> &str {
    let start = line_start(text, at);
    let line = &text[start..];
    let len = line.len() - line.trim_start_matches([' ', '\t']).len();
    &line[..len]
}

/// 1-based line number of byte offset `at`.
pub(crate) fn line_number(text: &str, at: usize) -> usize {
    text.as_bytes()[..at]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        let text = "a\r\n\tbc # x\r\nd";
        assert_eq!(newline(text), "\r\n");
        assert_eq!(newline("a\nb\r\n"), "\n");
        assert_eq!(line_start(text, 5), 3);
        assert_eq!(line_end(text, 5), 10);
        assert_eq!(line_end(text, 12), 13);
        assert_eq!(indentation(text, 6), "\t");
        assert_eq!(line_number(text, 12), 3);
    }
}
