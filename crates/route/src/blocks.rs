//! Top-level blocks of a Python file, to parse only the parts that matter.
//!
//! A file that passes the prefilter is usually a large module with one or two profiler
//! functions. Top-level `def`/`class` blocks (with their decorators) that contain none of the
//! relevant words are left out of the parse with tree-sitter's included ranges; everything else
//! (imports, module-level code, relevant blocks) is parsed, with exact positions. A small lexer
//! (comments, strings with triple quotes and escapes, brackets, backslash continuations) finds
//! where top-level statements start; when it is unsure (unterminated string or bracket), or
//! when nothing can be left out, the whole file is parsed.

use std::ops::Range;

/// Byte ranges of `src` to parse, or `None` to parse all of it. `relevant` says whether a
/// top-level `def`/`class` block must be parsed.
pub(crate) fn ranges_to_parse(
    src: &[u8],
    relevant: impl Fn(&[u8]) -> bool,
) -> Option<Vec<Range<usize>>> {
    let starts = statement_starts(src)?;
    let mut keep: Vec<Range<usize>> = Vec::new();
    let mut skipped_any = false;
    // Text before the first statement (comments, blank lines) goes with it.
    let mut bounds: Vec<usize> = starts;
    if bounds.first() != Some(&0) {
        bounds.insert(0, 0);
    }
    bounds.push(src.len());
    let mut i = 0;
    while i + 1 < bounds.len() {
        let (start, end) = (bounds[i], bounds[i + 1]);
        // Decorators belong to the definition that follows them.
        let mut block_end = end;
        let mut j = i + 1;
        if starts_with_decorator(&src[start..end]) {
            while j + 1 < bounds.len() && starts_with_decorator(&src[bounds[j]..bounds[j + 1]]) {
                j += 1;
            }
            if j + 1 < bounds.len() {
                block_end = bounds[j + 1];
                j += 1;
            }
        }
        let block = &src[start..block_end];
        let definition = is_definition(block);
        if definition && !relevant(block) {
            skipped_any = true;
        } else {
            match keep.last_mut() {
                Some(last) if last.end == start => last.end = block_end,
                _ => keep.push(start..block_end),
            }
        }
        i = j;
    }
    (skipped_any && !keep.is_empty()).then_some(keep)
}

fn starts_with_decorator(block: &[u8]) -> bool {
    block.first() == Some(&b'@')
}

fn is_definition(block: &[u8]) -> bool {
    let mut text = block;
    // Skip decorator lines.
    while text.first() == Some(&b'@') {
        match memchr::memchr(b'\n', text) {
            Some(nl) => text = &text[nl + 1..],
            None => return false,
        }
    }
    text.starts_with(b"def ") || text.starts_with(b"class ") || text.starts_with(b"async def ")
}

/// Byte offsets where top-level statements start (a line whose first byte is not blank, a
/// comment, or inside a string, bracket or continuation). `None` when the lexer ends unsure.
fn statement_starts(src: &[u8]) -> Option<Vec<usize>> {
    let mut starts = Vec::new();
    let mut depth: usize = 0;
    let mut i = 0;
    let mut line_start = true;
    let mut continued = false;
    while i < src.len() {
        if line_start {
            line_start = false;
            if depth == 0 && !continued {
                match src[i] {
                    b' ' | b'\t' | b'\r' | b'\n' | b'#' | b'\x0c' => {}
                    _ => starts.push(i),
                }
            }
            continued = false;
        }
        match src[i] {
            b'\n' => {
                line_start = true;
                i += 1;
            }
            b'#' => {
                i = memchr::memchr(b'\n', &src[i..]).map_or(src.len(), |n| i + n);
            }
            b'\\' => {
                // A continuation when the backslash ends the line.
                let next = src.get(i + 1).copied();
                let after = src.get(i + 2).copied();
                if next == Some(b'\n') || (next == Some(b'\r') && after == Some(b'\n')) {
                    continued = true;
                }
                i += 1;
            }
            b'(' | b'[' | b'{' => {
                depth += 1;
                i += 1;
            }
            b')' | b']' | b'}' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            quote @ (b'"' | b'\'') => {
                i = skip_string(src, i, quote)?;
            }
            _ => i += 1,
        }
    }
    (depth == 0).then_some(starts)
}

/// The offset just after the string literal starting at `start`; `None` if unterminated.
fn skip_string(src: &[u8], start: usize, quote: u8) -> Option<usize> {
    let triple = src.get(start + 1) == Some(&quote) && src.get(start + 2) == Some(&quote);
    let mut i = start + if triple { 3 } else { 1 };
    if !triple && src.get(start + 1) == Some(&quote) {
        return Some(start + 2); // the empty string
    }
    while i < src.len() {
        match src[i] {
            b'\\' => i += 2,
            b'\n' if !triple => return None,
            c if c == quote => {
                if !triple {
                    return Some(i + 1);
                }
                if src.get(i + 1) == Some(&quote) && src.get(i + 2) == Some(&quote) {
                    return Some(i + 3);
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    None
}

/// Names bound by imports of `torch_npu` (`import torch_npu as tn`, `from torch_npu.profiler
/// import dynamic_profile as dp`): a block using only such an alias is still relevant.
pub(crate) fn torch_npu_import_names(src: &[u8]) -> Vec<Vec<u8>> {
    let mut names = Vec::new();
    for at in memchr::memmem::find_iter(src, b"torch_npu") {
        let line_start = memchr::memrchr(b'\n', &src[..at]).map_or(0, |n| n + 1);
        let line = &src[line_start..];
        let trimmed = &line[line
            .iter()
            .take_while(|b| **b == b' ' || **b == b'\t')
            .count()..];
        if !(trimmed.starts_with(b"import ") || trimmed.starts_with(b"from ")) {
            continue;
        }
        // The statement: to the end of the line, or to the closing parenthesis.
        let line_end = memchr::memchr(b'\n', trimmed).unwrap_or(trimmed.len());
        let mut statement = &trimmed[..line_end];
        if let Some(open) = memchr::memchr(b'(', statement) {
            let close = memchr::memchr(b')', &trimmed[open..]).map_or(trimmed.len(), |c| open + c);
            statement = &trimmed[..close];
        }
        let Some(import) = memchr::memmem::find(statement, b"import") else {
            continue;
        };
        for word in statement[import + 6..]
            .split(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
            .filter(|w| !w.is_empty() && *w != b"as")
        {
            if !names.iter().any(|n: &Vec<u8>| n == word) {
                names.push(word.to_vec());
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(src: &str) -> Option<Vec<String>> {
        let relevant = |b: &[u8]| memchr::memmem::find(b, b"profile").is_some();
        ranges_to_parse(src.as_bytes(), relevant)
            .map(|ranges| ranges.into_iter().map(|r| src[r].to_owned()).collect())
    }

    #[test]
    fn irrelevant_definitions_are_left_out() {
        let src = "import torch_npu\n\n\ndef a():\n    return 1\n\n\n@deco\ndef b():\n    torch_npu.profiler.profile()\n\n\nclass C:\n    x = 1\n\nrun()\n";
        assert_eq!(
            kept(src).expect("something skipped"),
            [
                "import torch_npu\n\n\n",
                "@deco\ndef b():\n    torch_npu.profiler.profile()\n\n\n",
                "run()\n"
            ]
        );
    }

    #[test]
    fn column_zero_lines_inside_strings_and_brackets_are_not_statements() {
        let src = "def a():\n    s = \"\"\"\nnot a statement\n\"\"\"\n    t = (1,\n2)\n    return s\n\ndef b():\n    profile = 1\n";
        assert_eq!(
            kept(src).expect("a skipped"),
            ["def b():\n    profile = 1\n"]
        );
    }

    #[test]
    fn unsure_lexing_parses_everything() {
        assert_eq!(
            kept("def a():\n    x = (\n\ndef b():\n    profile()\n"),
            None
        );
        assert_eq!(kept("def a():\n    x = '''\n"), None);
    }

    #[test]
    fn torch_npu_aliases_are_found() {
        let src = b"import os\nimport torch_npu as tn\nfrom torch_npu.profiler import (\n    dynamic_profile as dp,\n    schedule,\n)\n# torch_npu in a comment\n";
        let names = torch_npu_import_names(src);
        let names: Vec<&str> = names
            .iter()
            .map(|n| std::str::from_utf8(n).unwrap_or(""))
            .collect();
        assert_eq!(
            names,
            ["torch_npu", "tn", "dynamic_profile", "dp", "schedule"]
        );
    }

    #[test]
    fn nothing_skipped_parses_everything() {
        assert_eq!(kept("def b():\n    profile()\n"), None);
    }
}
