//! The top-level blocks of a YAML document, found by a line scan, and tree-sitter-yaml parses of
//! one block at a time.
//!
//! tree-sitter-yaml's scanner counts rows in 16 bits, so a parse of more than 32,768 lines fails
//! as a syntax error. A run config can be that long while the
//! keys npuprof reads and edits sit in small blocks, so the document is cut into its top-level
//! blocks (a key at the top level's indentation and every line up to the next one) by a scan that
//! follows comments, quoted scalars, flow collections and block scalars, and only the block that
//! holds a key is parsed. The parse covers the block's bytes inside the whole text, so its nodes'
//! byte offsets and rows are those of the whole document. The limit then applies per block:
//! [`parse`] refuses a block beyond it with [`BlockError::TooLong`].

use std::ops::Range;

use tree_sitter::{Parser, Point, Tree};

/// The most lines one tree-sitter-yaml parse handles: its scanner keeps rows in an `int16_t`, so
/// rows 0 to 32,767.
pub const MAX_LINES: usize = i16::MAX as usize + 1;

/// One top-level entry of the document's block mapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The key, without quotes; `None` for an explicit (`? …`) or flow key.
    pub key: Option<String>,
    /// From the start of the key's line to the end of the block's last line with content
    /// (trailing blank and comment lines are left out; the final newline is not included).
    pub bytes: Range<usize>,
    /// The 0-based row of the key's line.
    pub first_row: usize,
    /// The 0-based row of the block's last line.
    pub last_row: usize,
}

impl Block {
    /// How many lines the block spans.
    pub fn lines(&self) -> usize {
        self.last_row - self.first_row + 1
    }

    /// The key as written for messages (`?` for an explicit key).
    fn name(&self) -> &str {
        self.key.as_deref().unwrap_or("?")
    }
}

/// Why a document cannot be cut into blocks, or a block cannot be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlockError {
    /// The top level is a sequence, a scalar or a flow collection.
    #[error("the top level is not a block mapping (`key: value` lines): line {line} is `{text}`")]
    NotAMapping {
        /// 1-based line.
        line: usize,
        /// The line, trimmed.
        text: String,
    },
    /// A line break is a carriage return alone (old Mac line ends): YAML reads it as a line
    /// break, the line scan (and so every edit) only LF and CRLF.
    #[error(
        "line {line} holds a carriage return without a line feed after it: YAML reads it as a \
         line break, npuprof reads and edits LF and CRLF line breaks only; give the file LF or \
         CRLF line breaks and run again"
    )]
    LoneCarriageReturn {
        /// 1-based line (counting LF line breaks).
        line: usize,
    },
    /// Collections nest deeper than any run config or definition does (a YAML bomb of `[`):
    /// refused before a parser sees it, since the parsers' time grows with the depth.
    #[error(
        "line {line} nests collections {depth} deep (flow `[`/`{{` and indented blocks \
         together); npuprof reads YAML nested at most {MAX_DEPTH} deep"
    )]
    TooDeep {
        /// 1-based line where the limit is passed.
        line: usize,
        /// The depth there.
        depth: usize,
    },
    /// The block is longer than tree-sitter-yaml can parse at once.
    #[error(
        "the top-level block `{key}` spans {lines} lines ({first_line}-{last_line}); \
         tree-sitter-yaml, which npuprof reads YAML with, handles at most 32768 lines at once: \
         move other entries out of `{key}` or edit it by hand"
    )]
    TooLong {
        /// The block's key.
        key: String,
        /// How many lines it spans.
        lines: usize,
        /// 1-based first line.
        first_line: usize,
        /// 1-based last line.
        last_line: usize,
    },
}

/// The deepest nesting of collections npuprof reads (run configs nest 3 or 4 deep,
/// definitions 6).
pub const MAX_DEPTH: usize = 64;

/// Refuses `text` when its collections nest more than [`MAX_DEPTH`] deep, counting indented
/// block levels and open flow brackets (`[`, `{`) outside quoted scalars, comments and block
/// scalars. A linear scan, done before any parser sees the text: the YAML parsers take time
/// that grows with the depth (200 KB of `[` took route 55 s).
pub fn check_depth(text: &str) -> Result<(), BlockError> {
    let mut indents: Vec<usize> = Vec::new();
    let mut flow = 0usize;
    // Inside a block scalar (`|`, `>`): lines indented deeper than this are its text.
    let mut scalar_of: Option<usize> = None;
    let mut quote: Option<u8> = None;
    for (row, line) in text.lines().enumerate() {
        let trimmed = line.trim_start_matches(' ');
        let indent = line.len() - trimmed.len();
        if trimmed.is_empty() || (quote.is_none() && flow == 0 && trimmed.starts_with('#')) {
            continue;
        }
        if let Some(key_indent) = scalar_of {
            if indent > key_indent {
                continue;
            }
            scalar_of = None;
        }
        if quote.is_none() && flow == 0 {
            while indents.last().is_some_and(|&top| top >= indent) {
                indents.pop();
            }
            indents.push(indent);
        }
        let bytes = trimmed.as_bytes();
        let mut previous = b' ';
        for (at, &b) in bytes.iter().enumerate() {
            match quote {
                Some(q) if b == q => {
                    // `''` inside a single-quoted scalar is an escaped quote.
                    let escaped = q == b'\'' && bytes.get(at + 1) == Some(&b'\'');
                    let backslashed = q == b'"' && previous == b'\\';
                    if !escaped && !backslashed {
                        quote = None;
                    }
                }
                Some(_) => {}
                None => match b {
                    b'#' if previous == b' ' || previous == b'\t' => break,
                    b'\'' | b'"'
                        if matches!(previous, b' ' | b'\t' | b'[' | b'{' | b',' | b':') =>
                    {
                        quote = Some(b);
                    }
                    b'[' | b'{' => {
                        flow += 1;
                        if indents.len() + flow > MAX_DEPTH {
                            return Err(BlockError::TooDeep {
                                line: row + 1,
                                depth: indents.len() + flow,
                            });
                        }
                    }
                    b']' | b'}' => flow = flow.saturating_sub(1),
                    _ => {}
                },
            }
            previous = if quote.is_some() && previous == b'\\' {
                b' '
            } else {
                b
            };
        }
        let depth = indents.len() + flow;
        if depth > MAX_DEPTH {
            return Err(BlockError::TooDeep {
                line: row + 1,
                depth,
            });
        }
        if quote.is_none() && flow == 0 {
            let value = trimmed.split(" #").next().unwrap_or(trimmed).trim_end();
            let indicator = value.rsplit(' ').next().unwrap_or(value);
            if indicator.starts_with(['|', '>'])
                && indicator[1..]
                    .bytes()
                    .all(|c| matches!(c, b'-' | b'+' | b'1'..=b'9'))
            {
                scalar_of = Some(indent);
            }
        }
    }
    Ok(())
}

/// The top-level blocks of the first document of `text`, in order; a lone carriage return
/// before the first document ends is refused.
pub fn blocks(text: &str) -> Result<Vec<Block>, BlockError> {
    let mut scan = Scan::default();
    for (row, (start, line)) in lines(text).enumerate() {
        if line.contains('\r') {
            return Err(BlockError::LoneCarriageReturn { line: row + 1 });
        }
        if scan.line(row, start, line)? == Flow::Stop {
            break;
        }
    }
    Ok(scan.finish())
}

/// The first block whose key is `key`.
pub fn find<'b>(blocks: &'b [Block], key: &str) -> Option<&'b Block> {
    blocks.iter().find(|b| b.key.as_deref() == Some(key))
}

/// Parses `block` of `text` with tree-sitter-yaml. The tree's byte offsets and positions are
/// those of `text`; it may hold ERROR nodes (the caller decides what a syntax error means).
pub fn parse(text: &str, block: &Block) -> Result<Tree, BlockError> {
    check_size(block)?;
    let mut parser = Parser::new();
    // The grammar is compiled in; a version mismatch would be a build defect caught by every test.
    parser
        .set_language(&tree_sitter_yaml::LANGUAGE.into())
        .expect("tree-sitter-yaml is compatible with the tree-sitter runtime");
    let end_column = block.bytes.end - line_start(text, block.bytes.end);
    let range = tree_sitter::Range {
        start_byte: block.bytes.start,
        end_byte: block.bytes.end,
        start_point: Point::new(block.first_row, 0),
        end_point: Point::new(block.last_row, end_column),
    };
    parser
        .set_included_ranges(&[range])
        .expect("one range is ordered");
    Ok(parser
        .parse(text, None)
        .expect("a parser with a language and no timeout returns a tree"))
}

/// Refuses a block longer than tree-sitter-yaml can count.
fn check_size(block: &Block) -> Result<(), BlockError> {
    if block.lines() > MAX_LINES {
        return Err(BlockError::TooLong {
            key: block.name().to_owned(),
            lines: block.lines(),
            first_line: block.first_row + 1,
            last_line: block.last_row + 1,
        });
    }
    Ok(())
}

fn line_start(text: &str, at: usize) -> usize {
    text[..at].rfind('\n').map_or(0, |i| i + 1)
}

/// The lines of `text` with their start offsets, without `\n` or `\r\n`.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut start = 0;
    text.split_inclusive('\n').map(move |raw| {
        let at = start;
        start += raw.len();
        let line = raw.strip_suffix('\n').unwrap_or(raw);
        (at, line.strip_suffix('\r').unwrap_or(line))
    })
}

/// Whether the scan goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Continue,
    Stop,
}

/// What a line starts inside of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Inside {
    /// Block context.
    #[default]
    Block,
    /// A multi-line plain scalar whose parent node sits at this column.
    Plain(usize),
    /// A flow collection this deep.
    Flow(usize),
    /// A quoted scalar (`"` or `'`), inside flow collections this deep.
    Quoted(u8, usize),
    /// A block scalar's content: lines indented more than its parent's column.
    BlockScalar(usize),
}

#[derive(Debug, Default)]
struct Scan {
    inside: Inside,
    /// The top level's indentation, from its first line with content.
    top: Option<usize>,
    blocks: Vec<Block>,
    /// The block being read.
    open: Option<Block>,
}

impl Scan {
    fn line(&mut self, row: usize, start: usize, line: &str) -> Result<Flow, BlockError> {
        let body = if row == 0 {
            line.strip_prefix('\u{feff}').unwrap_or(line)
        } else {
            line
        };
        let indent = body.len() - body.trim_start_matches(' ').len();
        let rest = &body[indent..];
        let blank = rest.trim().is_empty();
        match self.inside {
            Inside::BlockScalar(parent) if blank || indent > parent => {
                if !blank {
                    self.extend(row, start + line.len());
                }
                return Ok(Flow::Continue);
            }
            Inside::BlockScalar(_) => self.inside = Inside::Block,
            Inside::Plain(parent) if !blank && (indent <= parent || rest.starts_with('#')) => {
                self.inside = Inside::Block;
            }
            _ => {}
        }
        if blank {
            return Ok(Flow::Continue);
        }
        if self.inside == Inside::Block {
            if indent == 0 && is_marker(rest) {
                self.close();
                return Ok(if self.blocks.is_empty() && rest.starts_with("---") {
                    Flow::Continue
                } else {
                    Flow::Stop
                });
            }
            if indent == 0 && rest.starts_with('%') && self.blocks.is_empty() {
                return Ok(Flow::Continue);
            }
            if rest.starts_with('#') {
                return Ok(Flow::Continue);
            }
            let top = *self.top.get_or_insert(indent);
            if indent <= top {
                if indent < top {
                    return Err(not_a_mapping(row, line));
                }
                let key = key_of(rest).ok_or_else(|| not_a_mapping(row, line))?;
                self.close();
                self.open = Some(Block {
                    key,
                    bytes: start..start,
                    first_row: row,
                    last_row: row,
                });
            }
        }
        self.inside = lex(body, indent, self.inside);
        self.extend(row, start + line.len());
        Ok(Flow::Continue)
    }

    fn extend(&mut self, row: usize, end: usize) {
        if let Some(open) = &mut self.open {
            open.bytes.end = end;
            open.last_row = row;
        }
    }

    fn close(&mut self) {
        self.blocks.extend(self.open.take());
    }

    fn finish(mut self) -> Vec<Block> {
        self.close();
        self.blocks
    }
}

fn not_a_mapping(row: usize, line: &str) -> BlockError {
    BlockError::NotAMapping {
        line: row + 1,
        text: line.trim().to_owned(),
    }
}

/// `---` or `...` alone or followed by a space.
fn is_marker(rest: &str) -> bool {
    ["---", "..."].iter().any(|m| {
        rest.strip_prefix(m)
            .is_some_and(|after| after.is_empty() || after.starts_with([' ', '\t']))
    })
}

/// The key of a line at the top level's indentation: `Some(None)` for an explicit key (`? …`),
/// `None` when the line is no mapping entry (a sequence entry, a scalar, a flow collection).
fn key_of(rest: &str) -> Option<Option<String>> {
    let bytes = rest.as_bytes();
    let (key, after) = match bytes.first()? {
        b'?' if indicator(bytes, 0) => return Some(None),
        b'-' if indicator(bytes, 0) => return None,
        b'[' | b'{' | b'|' | b'>' => return None,
        &quote @ (b'"' | b'\'') => {
            let end = quoted_end(bytes, 1, quote)?;
            let key: String = yaml_serde::from_str(&rest[..=end]).ok()?;
            (key, rest[end + 1..].trim_start_matches([' ', '\t']))
        }
        _ => {
            let colon = value_indicator(bytes)?;
            (rest[..colon].trim_end().to_owned(), &rest[colon..])
        }
    };
    let after = after.strip_prefix(':')?;
    (after.is_empty() || after.starts_with([' ', '\t'])).then_some(Some(key))
}

/// Whether the character at `i` is followed by a space, a tab or the end of the line.
fn indicator(bytes: &[u8], i: usize) -> bool {
    bytes.get(i + 1).is_none_or(|c| matches!(c, b' ' | b'\t'))
}

/// Whether `i` follows a space or a tab, or starts the line.
fn after_space(bytes: &[u8], i: usize) -> bool {
    i == 0 || matches!(bytes[i - 1], b' ' | b'\t')
}

/// The offset of the first `:` that ends a plain key, before any comment.
fn value_indicator(bytes: &[u8]) -> Option<usize> {
    for i in 0..bytes.len() {
        match bytes[i] {
            b'#' if after_space(bytes, i) => return None,
            b':' if indicator(bytes, i) => return Some(i),
            _ => {}
        }
    }
    None
}

/// The offset of the quote closing a scalar opened before `from`, on this line.
fn quoted_end(bytes: &[u8], from: usize, quote: u8) -> Option<usize> {
    let mut i = from;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if quote == b'"' => i += 1,
            b'\'' if quote == b'\'' && bytes.get(i + 1) == Some(&b'\'') => i += 1,
            c if c == quote => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

/// Reading one line in block context.
struct Line<'l> {
    bytes: &'l [u8],
    /// Whether a node may start here (after an indicator, a property or the indentation).
    expect_node: bool,
    /// Where the current node started.
    node_start: usize,
    /// The column a block scalar or plain scalar starting now hangs from.
    parent: usize,
    /// Whether a plain scalar value is open.
    plain: bool,
}

/// The state at the end of `line`, read from column `indent` in state `inside` (never a block
/// scalar: the scan handles its content lines).
fn lex(line: &str, indent: usize, inside: Inside) -> Inside {
    let mut l = Line {
        bytes: line.as_bytes(),
        expect_node: true,
        node_start: indent,
        parent: indent,
        plain: false,
    };
    let mut state = match inside {
        Inside::Plain(parent) => {
            l.expect_node = false;
            l.parent = parent;
            l.plain = true;
            Inside::Block
        }
        other => other,
    };
    let mut i = indent;
    while i < l.bytes.len() {
        let c = l.bytes[i];
        match state {
            Inside::Quoted(quote, depth) => match c {
                b'\\' if quote == b'"' => i += 1,
                b'\'' if quote == b'\'' && l.bytes.get(i + 1) == Some(&b'\'') => i += 1,
                _ if c == quote => state = l.close(depth),
                _ => {}
            },
            Inside::Flow(depth) => match c {
                b'#' if after_space(l.bytes, i) => break,
                b'"' | b'\''
                    if i == 0 || matches!(l.bytes[i - 1], b' ' | b'\t' | b'[' | b'{' | b',') =>
                {
                    state = Inside::Quoted(c, depth);
                }
                b'[' | b'{' => state = Inside::Flow(depth + 1),
                b']' | b'}' => state = l.close(depth - 1),
                _ => {}
            },
            Inside::Block | Inside::Plain(_) | Inside::BlockScalar(_) => {
                match l.block_char(&mut i) {
                    Step::Next => {}
                    Step::Enter(next) => state = next,
                    Step::Comment => break,
                    Step::BlockScalar => return Inside::BlockScalar(l.parent),
                }
            }
        }
        i += 1;
    }
    match state {
        Inside::Block if l.plain => Inside::Plain(l.parent),
        other => other,
    }
}

/// What a character in block context does.
enum Step {
    Next,
    Enter(Inside),
    Comment,
    BlockScalar,
}

impl Line<'_> {
    /// Leaves a quoted scalar or a flow collection for `depth` (0: block context).
    fn close(&mut self, depth: usize) -> Inside {
        if depth > 0 {
            return Inside::Flow(depth);
        }
        self.expect_node = false;
        self.plain = false;
        Inside::Block
    }

    fn block_char(&mut self, i: &mut usize) -> Step {
        let c = self.bytes[*i];
        match c {
            b' ' | b'\t' => {}
            b'#' if after_space(self.bytes, *i) => {
                self.plain = false;
                return Step::Comment;
            }
            b':' if indicator(self.bytes, *i) => {
                self.expect_node = true;
                self.plain = false;
                self.parent = self.node_start;
            }
            _ if !self.expect_node => {}
            b'-' | b'?' if indicator(self.bytes, *i) => self.parent = *i,
            b'"' | b'\'' => {
                self.node_start = *i;
                return Step::Enter(Inside::Quoted(c, 0));
            }
            b'[' | b'{' => {
                self.node_start = *i;
                return Step::Enter(Inside::Flow(1));
            }
            b'|' | b'>' => return Step::BlockScalar,
            b'&' | b'!' => {
                while self
                    .bytes
                    .get(*i + 1)
                    .is_some_and(|n| !matches!(n, b' ' | b'\t'))
                {
                    *i += 1;
                }
            }
            _ => {
                self.node_start = *i;
                self.expect_node = false;
                self.plain = true;
            }
        }
        Step::Next
    }
}
