//! A purpose-built streaming scanner for `trace_view.json`.
//!
//! torch_npu writes the timeline as a bare JSON array of Chrome trace events, in two phases
//! (host events first, without the closing `]`; device events appended and the array closed only
//! when device parsing succeeds). The scanner classifies a file in one pass with constant memory:
//! complete, unterminated after a clean event boundary, cut in the middle of an event, closed
//! with a trailing comma (`},]`), or malformed elsewhere — with byte offsets.
//!
//! It validates the JSON grammar (containers, keys, colons, commas, number and literal tokens).
//! Not validated, for speed: the content of strings (escape sequences, control characters, UTF-8).
//! Strings are skipped with `memchr`; only the few short strings needed to recognise
//! `process_name` metadata events (`"ph":"M"`, `"name":"process_name"`, `args.name`) are copied.

use std::io::Read;

/// Deepest nesting accepted (serde_json's default recursion limit is 128).
const MAX_DEPTH: usize = 128;
/// Longest string prefix kept for key and value comparison.
const CAPTURE_LIMIT: usize = 256;
/// Longest scalar token kept for validation across chunk boundaries.
const SCALAR_LIMIT: usize = 64;
/// Most distinct process names kept.
const MAX_PROCESS_NAMES: usize = 256;

/// How a trace file ends, as far as its JSON structure goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceState {
    /// A complete JSON array.
    Complete,
    /// The file is empty or holds only whitespace.
    Empty,
    /// Valid JSON, but the top level is an object rather than torch_npu's bare array.
    NotAnArray,
    /// The array was never closed; the file ends cleanly after an event (or a comma after one).
    Unterminated {
        /// Whether a `,` follows the last complete event.
        trailing_comma: bool,
    },
    /// The file ends inside an event (or inside a token).
    CutMidEvent {
        /// Byte offset where the unfinished event starts.
        event_start: u64,
    },
    /// The array closes right after a comma (`},]`): the appended device timeline was empty.
    TrailingCommaClose {
        /// Byte offset of the offending comma.
        comma: u64,
    },
    /// A syntax error before the end of the file.
    Malformed {
        /// Byte offset of the offending byte.
        offset: u64,
        /// What was expected there.
        reason: &'static str,
    },
}

/// The result of scanning one trace file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceScan {
    /// The structural verdict.
    pub state: TraceState,
    /// Bytes read (the EOF offset when the whole file was read).
    pub bytes: u64,
    /// Complete top-level events.
    pub events: u64,
    /// Byte offset just past the last complete top-level event (0 when there is none).
    pub last_event_end: u64,
    /// `args.name` of every `"ph":"M"`, `"name":"process_name"` event, in order of first sight.
    pub process_names: Vec<String>,
}

impl TraceScan {
    /// Whether a `process_name` metadata event names this process.
    pub fn has_process(&self, name: &str) -> bool {
        self.process_names.iter().any(|n| n == name)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Top level, nothing seen yet.
    TopValue,
    /// After `[`: a value or `]`.
    ValueOrClose,
    /// After `,` in an array, or after `:`: a value.
    Value,
    /// After `{`: a key or `}`.
    KeyOrClose,
    /// After `,` in an object: a key.
    Key,
    /// After a key.
    Colon,
    /// After a value inside a container.
    CommaOrClose,
    /// The top-level value is complete; only whitespace may follow.
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lex {
    Normal,
    /// Inside a string split by a chunk boundary; `escape` when the chunk ended on a backslash.
    String {
        escape: bool,
    },
    /// Inside a number or literal split by a chunk boundary.
    Scalar,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EventKey {
    Ph,
    Name,
    Args,
    Other,
}

/// The incremental scanner: feed chunks, then [`TraceScanner::finish`].
#[derive(Debug)]
pub struct TraceScanner {
    offset: u64,
    lex: Lex,
    expect: Expect,
    /// `is_object[d]` for the container at depth `d + 1`.
    is_object: [bool; MAX_DEPTH],
    depth: usize,
    top_is_array: bool,
    seen_value: bool,
    error: Option<(u64, &'static str)>,
    trailing_comma_close: Option<u64>,
    last_comma: u64,
    events: u64,
    last_event_end: u64,
    event_start: u64,
    /// The pending string is a key.
    string_is_key: bool,
    /// A string or scalar split across chunks (capped copy).
    pending: Vec<u8>,
    pending_overflow: bool,
    // event-level recognition
    key: EventKey,
    args_key_is_name: bool,
    in_args: bool,
    ev_ph_m: bool,
    ev_process_name: bool,
    ev_args_name: Option<Vec<u8>>,
    process_names: Vec<String>,
}

impl Default for TraceScanner {
    fn default() -> Self {
        Self::new()
    }
}

const C_OTHER: u8 = 0;
const C_WS: u8 = 1;
const C_QUOTE: u8 = 2;
const C_OPEN: u8 = 3;
const C_CLOSE: u8 = 4;
const C_COMMA: u8 = 5;
const C_COLON: u8 = 6;
const C_SCALAR: u8 = 7;

/// Byte classes for the structural loop.
const fn class_table() -> [u8; 256] {
    let mut t = [C_OTHER; 256];
    let mut b = 0usize;
    while b < 256 {
        let c = b as u8;
        t[b] = match c {
            b' ' | b'\n' | b'\r' | b'\t' => C_WS,
            b'"' => C_QUOTE,
            b'{' | b'[' => C_OPEN,
            b'}' | b']' => C_CLOSE,
            b',' => C_COMMA,
            b':' => C_COLON,
            _ if c.is_ascii_alphanumeric() || c == b'.' || c == b'+' || c == b'-' => C_SCALAR,
            _ => C_OTHER,
        };
        b += 1;
    }
    t
}
static CLASS: [u8; 256] = class_table();

#[inline]
fn is_scalar_byte(b: u8) -> bool {
    CLASS[b as usize] == C_SCALAR
}

/// Whether `tok` is a JSON number, `true`, `false` or `null`.
#[inline]
fn valid_scalar(tok: &[u8]) -> bool {
    // Fast path: a plain integer without a leading zero (ids, pids, tids).
    if let [first, rest @ ..] = tok
        && (b'1'..=b'9').contains(first)
        && rest.iter().all(u8::is_ascii_digit)
    {
        return true;
    }
    match tok {
        b"true" | b"false" | b"null" => return true,
        _ => {}
    }
    let mut i = 0;
    let n = tok.len();
    if i < n && tok[i] == b'-' {
        i += 1;
    }
    if i >= n {
        return false;
    }
    if tok[i] == b'0' {
        i += 1;
    } else if tok[i].is_ascii_digit() {
        while i < n && tok[i].is_ascii_digit() {
            i += 1;
        }
    } else {
        return false;
    }
    if i < n && tok[i] == b'.' {
        i += 1;
        let s = i;
        while i < n && tok[i].is_ascii_digit() {
            i += 1;
        }
        if i == s {
            return false;
        }
    }
    if i < n && (tok[i] == b'e' || tok[i] == b'E') {
        i += 1;
        if i < n && (tok[i] == b'+' || tok[i] == b'-') {
            i += 1;
        }
        let s = i;
        while i < n && tok[i].is_ascii_digit() {
            i += 1;
        }
        if i == s {
            return false;
        }
    }
    i == n
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// High bit set in each byte of `w` that equals `byte` (exact for the lowest such byte).
#[inline(always)]
fn bytes_equal(w: u64, byte: u8) -> u64 {
    let x = w ^ (LO * u64::from(byte));
    x.wrapping_sub(LO) & !x & HI
}

/// Index of the closing quote of a string whose content starts at `j`, or `Err(escape)` when
/// the chunk ends first (`escape`: it ends on an unconsumed backslash). Eight bytes at a time.
#[inline]
fn string_end(buf: &[u8], mut j: usize) -> Result<usize, bool> {
    let len = buf.len();
    while j + 8 <= len {
        let mut word = [0u8; 8];
        word.copy_from_slice(&buf[j..j + 8]);
        let w = u64::from_le_bytes(word);
        let m = bytes_equal(w, b'"') | bytes_equal(w, b'\\');
        if m == 0 {
            j += 8;
            continue;
        }
        let k = j + (m.trailing_zeros() / 8) as usize;
        if buf[k] == b'"' {
            return Ok(k);
        }
        if k + 1 >= len {
            return Err(true);
        }
        j = k + 2;
    }
    while j < len {
        match buf[j] {
            b'"' => return Ok(j),
            b'\\' => {
                if j + 1 >= len {
                    return Err(true);
                }
                j += 2;
            }
            _ => j += 1,
        }
    }
    Err(false)
}

impl TraceScanner {
    /// A scanner at offset 0.
    pub fn new() -> Self {
        Self {
            offset: 0,
            lex: Lex::Normal,
            expect: Expect::TopValue,
            is_object: [false; MAX_DEPTH],
            depth: 0,
            top_is_array: false,
            seen_value: false,
            error: None,
            trailing_comma_close: None,
            last_comma: 0,
            events: 0,
            last_event_end: 0,
            event_start: 0,
            string_is_key: false,
            pending: Vec::with_capacity(CAPTURE_LIMIT),
            pending_overflow: false,
            key: EventKey::Other,
            args_key_is_name: false,
            in_args: false,
            ev_ph_m: false,
            ev_process_name: false,
            ev_args_name: None,
            process_names: Vec::new(),
        }
    }

    /// Whether a syntax error has been found (further input is ignored).
    pub fn failed(&self) -> bool {
        self.error.is_some()
    }

    /// Scans every chunk of `reader` (256 KiB at a time, so the copy stays in cache), calling `on_bytes` after each chunk.
    pub fn scan_reader<R: Read>(
        mut reader: R,
        mut on_bytes: impl FnMut(u64),
    ) -> std::io::Result<TraceScan> {
        let mut scanner = Self::new();
        let mut buf = vec![0u8; 256 << 10];
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            scanner.feed(&buf[..n]);
            on_bytes(n as u64);
            if scanner.failed() {
                break;
            }
        }
        Ok(scanner.finish())
    }

    /// Scans a complete in-memory document.
    pub fn scan_bytes(bytes: &[u8]) -> TraceScan {
        let mut scanner = Self::new();
        scanner.feed(bytes);
        scanner.finish()
    }

    fn fail(&mut self, at: u64, reason: &'static str) {
        if self.error.is_none() {
            self.error = Some((at, reason));
        }
    }

    fn pend(&mut self, part: &[u8]) {
        if self.pending.len() + part.len() > CAPTURE_LIMIT.max(SCALAR_LIMIT) {
            self.pending_overflow = true;
        } else {
            self.pending.extend_from_slice(part);
        }
    }

    /// Feeds the next chunk.
    pub fn feed(&mut self, buf: &[u8]) {
        let base = self.offset;
        self.offset = base + buf.len() as u64;
        if self.error.is_some() || buf.is_empty() {
            return;
        }
        let len = buf.len();
        let mut i = 0usize;
        match self.lex {
            Lex::Normal => {}
            Lex::String { escape } => {
                let from = usize::from(escape).min(len);
                match string_end(buf, from) {
                    Ok(j) => {
                        self.pend(&buf[..j]);
                        self.lex = Lex::Normal;
                        let content = std::mem::take(&mut self.pending);
                        let exact = !self.pending_overflow;
                        self.string_done(&content, exact, base + j as u64);
                        self.pending = content;
                        i = j + 1;
                    }
                    Err(escape) => {
                        self.pend(buf);
                        self.lex = Lex::String { escape };
                        return;
                    }
                }
            }
            Lex::Scalar => {
                let mut j = 0;
                while j < len && is_scalar_byte(buf[j]) {
                    j += 1;
                }
                self.pend(&buf[..j]);
                if j == len {
                    return;
                }
                self.lex = Lex::Normal;
                let at = base + j as u64;
                if !self.pending_overflow && !valid_scalar(&self.pending) {
                    let start = at - self.pending.len() as u64;
                    self.fail(start, "invalid number or literal");
                    return;
                }
                self.end_value(at - 1);
                i = j;
            }
        }
        while i < len {
            let b = buf[i];
            let at = base + i as u64;
            match CLASS[b as usize] {
                C_WS => i += 1,
                C_QUOTE => {
                    if matches!(self.expect, Expect::KeyOrClose | Expect::Key) {
                        let next = self.object_members(buf, i, base);
                        if next != i {
                            i = next;
                            continue;
                        }
                    }
                    match self.expect {
                        Expect::KeyOrClose | Expect::Key => self.string_is_key = true,
                        Expect::TopValue | Expect::Value | Expect::ValueOrClose => {
                            self.begin_value(at);
                            self.string_is_key = false;
                        }
                        _ => {
                            self.fail(at, "unexpected string");
                            return;
                        }
                    }
                    match string_end(buf, i + 1) {
                        Ok(j) => {
                            self.string_done(&buf[i + 1..j], true, base + j as u64);
                            i = j + 1;
                            // Fast path for the usual `": "` after a key and `, ` after a value.
                            if self.expect == Expect::Colon {
                                if buf.get(i) == Some(&b':') {
                                    self.expect = Expect::Value;
                                    i += 1;
                                    if buf.get(i) == Some(&b' ') {
                                        i += 1;
                                    }
                                }
                            } else {
                                i = self.after_value(buf, i, base);
                            }
                        }
                        Err(escape) => {
                            self.pending.clear();
                            self.pending_overflow = false;
                            self.pend(&buf[i + 1..]);
                            self.lex = Lex::String { escape };
                            return;
                        }
                    }
                }
                C_SCALAR => {
                    if !matches!(
                        self.expect,
                        Expect::TopValue | Expect::Value | Expect::ValueOrClose
                    ) {
                        self.fail(at, "unexpected token");
                        return;
                    }
                    self.begin_value(at);
                    let mut j = i + 1;
                    while j < len && is_scalar_byte(buf[j]) {
                        j += 1;
                    }
                    if j == len {
                        self.pending.clear();
                        self.pending_overflow = false;
                        self.pend(&buf[i..]);
                        self.lex = Lex::Scalar;
                        return;
                    }
                    if !valid_scalar(&buf[i..j]) {
                        self.fail(at, "invalid number or literal");
                        return;
                    }
                    self.end_value(base + j as u64 - 1);
                    i = self.after_value(buf, j, base);
                }
                C_COMMA => {
                    if self.expect != Expect::CommaOrClose {
                        self.fail(at, "unexpected comma");
                        return;
                    }
                    self.expect = if self.is_object[self.depth - 1] {
                        Expect::Key
                    } else {
                        Expect::Value
                    };
                    self.last_comma = at;
                    i += 1;
                }
                C_COLON => {
                    if self.expect != Expect::Colon {
                        self.fail(at, "unexpected colon");
                        return;
                    }
                    self.expect = Expect::Value;
                    i += 1;
                }
                C_OPEN => {
                    if !matches!(
                        self.expect,
                        Expect::TopValue | Expect::Value | Expect::ValueOrClose
                    ) {
                        self.fail(at, "unexpected opening bracket");
                        return;
                    }
                    if self.depth >= MAX_DEPTH {
                        self.fail(at, "nesting too deep");
                        return;
                    }
                    self.begin_value(at);
                    let object = b == b'{';
                    if self.depth == 0 {
                        self.top_is_array = !object;
                    }
                    if object && self.top_is_array && self.depth == 2 && self.key == EventKey::Args
                    {
                        self.in_args = true;
                        self.args_key_is_name = false;
                    }
                    self.is_object[self.depth] = object;
                    self.depth += 1;
                    if object {
                        self.expect = Expect::KeyOrClose;
                        if self.depth == 2 {
                            self.key = EventKey::Other;
                        }
                    } else {
                        self.expect = Expect::ValueOrClose;
                    }
                    i += 1;
                }
                C_CLOSE => {
                    let object = b == b'}';
                    let top = if self.depth > 0 {
                        Some(self.is_object[self.depth - 1])
                    } else {
                        None
                    };
                    let ok = match (top, self.expect) {
                        (Some(o), Expect::CommaOrClose) => o == object,
                        (Some(true), Expect::KeyOrClose) => object,
                        (Some(false), Expect::ValueOrClose) => !object,
                        (Some(false), Expect::Value)
                            if !object && self.depth == 1 && self.top_is_array =>
                        {
                            // `,]` closing the top array: torch_npu's empty device append.
                            self.trailing_comma_close = Some(self.last_comma);
                            true
                        }
                        _ => false,
                    };
                    if !ok {
                        self.fail(at, "unexpected closing bracket");
                        return;
                    }
                    self.depth -= 1;
                    if self.depth == 2 {
                        self.in_args = false;
                    }
                    self.end_value(at);
                    i = self.after_value(buf, i + 1, base);
                }
                _ => {
                    self.fail(at, "unexpected byte");
                    return;
                }
            }
        }
    }

    /// Fast path through the members of an object whose values are strings or scalars:
    /// `"key": value, "key": value`. Consumes only complete members and leaves the state as the
    /// general loop would; returns where it stopped (the general loop handles the rest).
    #[inline(always)]
    fn object_members(&mut self, buf: &[u8], mut i: usize, base: u64) -> usize {
        #[inline(always)]
        fn skip_ws(buf: &[u8], mut i: usize) -> usize {
            while let Some(b' ' | b'\n' | b'\r' | b'\t') = buf.get(i) {
                i += 1;
            }
            i
        }
        let len = buf.len();
        loop {
            if buf.get(i) != Some(&b'"') {
                return i;
            }
            let Ok(k_end) = string_end(buf, i + 1) else {
                return i;
            };
            let colon = skip_ws(buf, k_end + 1);
            if buf.get(colon) != Some(&b':') {
                return i;
            }
            let v = skip_ws(buf, colon + 1);
            let Some(&first) = buf.get(v) else {
                return i;
            };
            // The whole member is in this chunk and well-formed up to its value: commit the key.
            self.string_is_key = true;
            self.string_done(&buf[i + 1..k_end], true, base + k_end as u64);
            self.expect = Expect::Value;
            if first == b'"' {
                let Ok(v_end) = string_end(buf, v + 1) else {
                    return v;
                };
                self.seen_value = true;
                self.string_is_key = false;
                self.string_done(&buf[v + 1..v_end], true, base + v_end as u64);
                i = v_end + 1;
            } else if is_scalar_byte(first) {
                let mut j = v + 1;
                while j < len && is_scalar_byte(buf[j]) {
                    j += 1;
                }
                if j == len || !valid_scalar(&buf[v..j]) {
                    return v;
                }
                self.seen_value = true;
                self.end_value(base + j as u64 - 1);
                i = j;
            } else {
                return v;
            }
            let after = skip_ws(buf, i);
            if buf.get(after) != Some(&b',') {
                return after;
            }
            self.expect = Expect::Key;
            self.last_comma = base + after as u64;
            i = skip_ws(buf, after + 1);
        }
    }

    /// After a value: consumes a directly following `,` (and one space after it) when the
    /// grammar allows it here; returns the next index.
    #[inline(always)]
    fn after_value(&mut self, buf: &[u8], mut i: usize, base: u64) -> usize {
        if self.expect == Expect::CommaOrClose && buf.get(i) == Some(&b',') {
            self.expect = if self.is_object[self.depth - 1] {
                Expect::Key
            } else {
                Expect::Value
            };
            self.last_comma = base + i as u64;
            i += 1;
            if buf.get(i) == Some(&b' ') {
                i += 1;
            }
        }
        i
    }

    /// A complete string: `content` (exact unless a split string overflowed the cap) ends with
    /// its closing quote at `at`.
    #[inline(always)]
    fn string_done(&mut self, content: &[u8], exact: bool, at: u64) {
        if self.string_is_key {
            self.expect = Expect::Colon;
            if self.top_is_array {
                if self.depth == 2 {
                    self.key = match (exact, content) {
                        (true, b"ph") => EventKey::Ph,
                        (true, b"name") => EventKey::Name,
                        (true, b"args") => EventKey::Args,
                        _ => EventKey::Other,
                    };
                } else if self.depth == 3 && self.in_args {
                    self.args_key_is_name = exact && content == b"name";
                }
            }
            return;
        }
        if self.top_is_array && exact {
            if self.depth == 2 {
                match self.key {
                    EventKey::Ph if content == b"M" => self.ev_ph_m = true,
                    EventKey::Name if content == b"process_name" => self.ev_process_name = true,
                    _ => {}
                }
            } else if self.depth == 3 && self.in_args && self.args_key_is_name {
                self.ev_args_name = Some(content.to_vec());
            }
        }
        self.end_value(at);
    }

    /// A value starts at `at`.
    #[inline(always)]
    fn begin_value(&mut self, at: u64) {
        self.seen_value = true;
        if self.depth == 1 && self.top_is_array {
            self.event_start = at;
            self.ev_ph_m = false;
            self.ev_process_name = false;
            self.ev_args_name = None;
        }
    }

    /// A value (scalar, string or container) ended with its last byte at `at`.
    #[inline(always)]
    fn end_value(&mut self, at: u64) {
        if self.depth == 0 {
            self.expect = Expect::Done;
            return;
        }
        self.expect = Expect::CommaOrClose;
        if self.depth == 1 && self.top_is_array {
            self.events += 1;
            self.last_event_end = at + 1;
            if self.ev_ph_m && self.ev_process_name {
                self.finish_metadata_event();
            }
        }
    }

    #[cold]
    fn finish_metadata_event(&mut self) {
        if let Some(raw) = self.ev_args_name.take() {
            self.record_process_name(&raw);
        }
    }

    fn record_process_name(&mut self, raw: &[u8]) {
        let name = if raw.contains(&b'\\') {
            let mut quoted = Vec::with_capacity(raw.len() + 2);
            quoted.push(b'"');
            quoted.extend_from_slice(raw);
            quoted.push(b'"');
            serde_json::from_slice::<String>(&quoted)
                .unwrap_or_else(|_| String::from_utf8_lossy(raw).into_owned())
        } else {
            String::from_utf8_lossy(raw).into_owned()
        };
        if self.process_names.len() < MAX_PROCESS_NAMES && !self.process_names.contains(&name) {
            self.process_names.push(name);
        }
    }

    /// Classifies the input seen so far as a whole file.
    pub fn finish(mut self) -> TraceScan {
        if self.lex == Lex::Scalar && self.depth == 0 && self.error.is_none() {
            // A top-level scalar ends at EOF.
            self.lex = Lex::Normal;
            if self.pending_overflow || valid_scalar(&self.pending) {
                self.expect = Expect::Done;
            } else {
                let start = self.offset - self.pending.len() as u64;
                self.fail(start, "invalid number or literal");
            }
        }
        let state = if let Some((offset, reason)) = self.error {
            TraceState::Malformed { offset, reason }
        } else if !self.seen_value {
            TraceState::Empty
        } else if self.expect == Expect::Done {
            if !self.top_is_array {
                TraceState::NotAnArray
            } else if let Some(comma) = self.trailing_comma_close {
                TraceState::TrailingCommaClose { comma }
            } else {
                TraceState::Complete
            }
        } else if !self.top_is_array {
            TraceState::Malformed {
                offset: self.offset,
                reason: "the top-level value is not a torch_npu trace array and is unfinished",
            }
        } else if self.depth == 1 && self.lex == Lex::Normal {
            TraceState::Unterminated {
                trailing_comma: self.expect == Expect::Value,
            }
        } else {
            TraceState::CutMidEvent {
                event_start: self.event_start,
            }
        };
        TraceScan {
            state,
            bytes: self.offset,
            events: self.events,
            last_event_end: self.last_event_end,
            process_names: self.process_names,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(s: &str) -> TraceState {
        TraceScanner::scan_bytes(s.as_bytes()).state
    }

    #[test]
    fn classifies_basic_shapes() {
        assert_eq!(state("[]"), TraceState::Complete);
        assert_eq!(state("[{\"a\":1}]"), TraceState::Complete);
        assert_eq!(state(""), TraceState::Empty);
        assert_eq!(state("  \n"), TraceState::Empty);
        assert_eq!(state("{\"a\":[1]}"), TraceState::NotAnArray);
        assert_eq!(
            state("[{\"a\":1}"),
            TraceState::Unterminated {
                trailing_comma: false
            }
        );
        assert_eq!(
            state("[{\"a\":1},"),
            TraceState::Unterminated {
                trailing_comma: true
            }
        );
        assert_eq!(
            state("[{\"a\":1},]"),
            TraceState::TrailingCommaClose { comma: 8 }
        );
        assert_eq!(
            state("[{\"a\":1},{\"b\""),
            TraceState::CutMidEvent { event_start: 9 }
        );
        assert_eq!(
            state("[{\"a\":1}]x"),
            TraceState::Malformed {
                offset: 9,
                reason: "unexpected token"
            }
        );
    }

    #[test]
    fn validates_scalars() {
        for ok in [
            "0", "-1", "1.5", "1e5", "1E+5", "-0.0e-3", "true", "false", "null",
        ] {
            assert!(valid_scalar(ok.as_bytes()), "{ok}");
        }
        for bad in ["01", "1.", ".5", "-", "1e", "tru", "nul1", "+1", "1x"] {
            assert!(!valid_scalar(bad.as_bytes()), "{bad}");
        }
    }

    #[test]
    fn chunking_does_not_change_the_result() {
        let doc = br#"[{"ph": "M", "name": "process_name", "pid": 800, "args": {"name": "Ascend \"Hard\"ware"}}, {"ph":"X","ts":"17.5","id":1704161511433816104,"dur":-1.5e3,"args":{"k":[true,null,{}]}}]"#;
        let whole = TraceScanner::scan_bytes(doc);
        assert_eq!(whole.state, TraceState::Complete);
        assert_eq!(whole.events, 2);
        assert_eq!(whole.process_names, vec!["Ascend \"Hard\"ware".to_owned()]);
        for size in 1..doc.len() {
            let mut s = TraceScanner::new();
            for chunk in doc.chunks(size) {
                s.feed(chunk);
            }
            assert_eq!(s.finish(), whole, "chunk size {size}");
        }
    }

    #[test]
    fn process_name_needs_metadata_phase() {
        let doc = br#"[{"name": "process_name", "ph": "X", "args": {"name": "CANN"}}, {"args": {"name": "Ascend Hardware"}, "name": "process_name", "ph": "M"}]"#;
        let scan = TraceScanner::scan_bytes(doc);
        assert_eq!(scan.process_names, vec!["Ascend Hardware".to_owned()]);
    }
}
