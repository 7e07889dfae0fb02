//! The JSON grammar and the torch_npu event facts, shared by both lexers: they find tokens
//! (brackets, commas, colons, strings, scalar tokens) and this state machine judges their order,
//! counts top-level events and recognises `process_name` metadata events.

use super::{TraceScan, TraceState};

/// Deepest nesting accepted (serde_json's default recursion limit is 128).
const MAX_DEPTH: usize = 128;
/// Longest string compared with keys and kept as a process name; longer strings never match.
pub(super) const CAPTURE_LIMIT: usize = 256;
/// Most distinct process names kept.
pub(super) const MAX_PROCESS_NAMES: usize = 256;

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
enum EventKey {
    Ph,
    Name,
    Args,
    Other,
}

/// What the lexer was in the middle of when the input ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LexAtEnd {
    /// Between tokens.
    Normal,
    /// Inside a string.
    String,
    /// Inside a scalar token that started at `start`; `valid` tells whether it is complete.
    Scalar { start: u64, valid: bool },
}

/// The grammar state. Every method returns `false` once the input is malformed.
#[derive(Debug)]
pub(super) struct Grammar {
    expect: Expect,
    /// `is_object[d]` for the container at depth `d + 1`.
    is_object: [bool; MAX_DEPTH],
    depth: usize,
    /// The innermost open container is an object (`is_object[depth - 1]`).
    in_object: bool,
    top_is_array: bool,
    seen_value: bool,
    error: Option<(u64, &'static str)>,
    trailing_comma_close: Option<u64>,
    last_comma: u64,
    events: u64,
    last_event_end: u64,
    event_start: u64,
    /// The open string is a key.
    string_is_key: bool,
    key: EventKey,
    args_key_is_name: bool,
    in_args: bool,
    ev_ph_m: bool,
    ev_process_name: bool,
    ev_args_name: Option<Vec<u8>>,
    process_names: Vec<String>,
    /// Where each complete top-level event lies (`start..end`) since they were last taken,
    /// when they are recorded.
    spans: Option<Vec<(u64, u64)>>,
}

impl Grammar {
    pub(super) fn new() -> Self {
        Self {
            expect: Expect::TopValue,
            is_object: [false; MAX_DEPTH],
            depth: 0,
            in_object: false,
            top_is_array: false,
            seen_value: false,
            error: None,
            trailing_comma_close: None,
            last_comma: 0,
            events: 0,
            last_event_end: 0,
            event_start: 0,
            string_is_key: false,
            key: EventKey::Other,
            args_key_is_name: false,
            in_args: false,
            ev_ph_m: false,
            ev_process_name: false,
            ev_args_name: None,
            process_names: Vec::new(),
            spans: None,
        }
    }

    /// From now on, records where each complete top-level event lies.
    pub(super) fn record_events(&mut self) {
        self.spans.get_or_insert_with(Vec::new);
    }

    /// Whether top-level events are recorded.
    #[inline(always)]
    pub(super) fn recording(&self) -> bool {
        self.spans.is_some()
    }

    /// A complete top-level event lies at `start..end` (when recording).
    #[inline]
    pub(super) fn record(&mut self, start: u64, end: u64) {
        if let Some(spans) = &mut self.spans {
            spans.push((start, end));
        }
    }

    /// The events recorded since the last call, in file order.
    pub(super) fn take_events(&mut self) -> std::vec::Drain<'_, (u64, u64)> {
        self.spans.get_or_insert_with(Vec::new).drain(..)
    }

    /// Whether a syntax error has been found.
    #[inline]
    pub(super) fn failed(&self) -> bool {
        self.error.is_some()
    }

    /// Records an error at `at` (the first one wins).
    #[cold]
    pub(super) fn fail(&mut self, at: u64, reason: &'static str) -> bool {
        if self.error.is_none() {
            self.error = Some((at, reason));
        }
        false
    }

    /// Whether a value may start here.
    #[inline(always)]
    fn value_expected(&self) -> bool {
        matches!(
            self.expect,
            Expect::TopValue | Expect::Value | Expect::ValueOrClose
        )
    }

    /// Whether the next value is a top-level event: in the top array, a value expected.
    #[inline(always)]
    pub(super) fn at_event_slot(&self) -> bool {
        self.depth == 1
            && self.top_is_array
            && matches!(self.expect, Expect::Value | Expect::ValueOrClose)
    }

    /// Whether a top-level event has just ended.
    #[inline(always)]
    pub(super) fn after_event(&self) -> bool {
        self.depth == 1 && self.top_is_array && self.expect == Expect::CommaOrClose
    }

    /// `events` top-level events, each of which the grammar accepted on an event of the same
    /// shape, were read from [`Grammar::at_event_slot`]; the last ends with its byte at `last`,
    /// and a `,` at `comma` follows it when given. Their strings hold no `process_name`.
    pub(super) fn skip_events(&mut self, events: u64, last: u64, comma: Option<u64>) {
        self.events += events;
        self.last_event_end = last + 1;
        self.expect = Expect::CommaOrClose;
        if let Some(comma) = comma {
            self.expect = Expect::Value;
            self.last_comma = comma;
        }
    }

    /// Whether a `:` comes next.
    #[inline(always)]
    pub(super) fn expects_colon(&self) -> bool {
        self.expect == Expect::Colon
    }

    /// An opening quote at `at`.
    #[inline(always)]
    pub(super) fn string_open(&mut self, at: u64) -> bool {
        match self.expect {
            Expect::KeyOrClose | Expect::Key => self.string_is_key = true,
            Expect::TopValue | Expect::Value | Expect::ValueOrClose => {
                self.begin_value(at);
                self.string_is_key = false;
            }
            _ => return self.fail(at, "unexpected string"),
        }
        true
    }

    /// The closing quote at `at` of a string whose content is `content` (or, for a string
    /// longer than [`CAPTURE_LIMIT`], any prefix of it longer than the limit).
    #[inline(always)]
    pub(super) fn string_close(&mut self, content: &[u8], at: u64) {
        let exact = content.len() <= CAPTURE_LIMIT;
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

    /// A scalar token (number or literal) starts at `at`.
    #[inline(always)]
    pub(super) fn scalar_start(&mut self, at: u64) -> bool {
        if !self.value_expected() {
            return self.fail(at, "unexpected token");
        }
        self.begin_value(at);
        true
    }

    /// The scalar token that started at `start` ended with its last byte at `last`.
    #[inline(always)]
    pub(super) fn scalar_end(&mut self, start: u64, last: u64, valid: bool) -> bool {
        if !valid {
            return self.fail(start, "invalid number or literal");
        }
        self.end_value(last);
        true
    }

    /// A `,` at `at`.
    #[inline(always)]
    pub(super) fn comma(&mut self, at: u64) -> bool {
        if self.expect != Expect::CommaOrClose {
            return self.fail(at, "unexpected comma");
        }
        self.expect = if self.in_object {
            Expect::Key
        } else {
            Expect::Value
        };
        self.last_comma = at;
        true
    }

    /// A `:` at `at`.
    #[inline(always)]
    pub(super) fn colon(&mut self, at: u64) -> bool {
        if self.expect != Expect::Colon {
            return self.fail(at, "unexpected colon");
        }
        self.expect = Expect::Value;
        true
    }

    /// A `{` (`object`) or `[` at `at`.
    #[inline(always)]
    pub(super) fn open(&mut self, at: u64, object: bool) -> bool {
        if !self.value_expected() {
            return self.fail(at, "unexpected opening bracket");
        }
        if self.depth >= MAX_DEPTH {
            return self.fail(at, "nesting too deep");
        }
        self.begin_value(at);
        if self.depth == 0 {
            self.top_is_array = !object;
        }
        if object && self.top_is_array && self.depth == 2 && self.key == EventKey::Args {
            self.in_args = true;
            self.args_key_is_name = false;
        }
        self.is_object[self.depth] = object;
        self.depth += 1;
        self.in_object = object;
        if object {
            self.expect = Expect::KeyOrClose;
            if self.depth == 2 {
                self.key = EventKey::Other;
            }
        } else {
            self.expect = Expect::ValueOrClose;
        }
        true
    }

    /// A `}` (`object`) or `]` at `at`.
    #[inline(always)]
    pub(super) fn close(&mut self, at: u64, object: bool) -> bool {
        let top = if self.depth > 0 {
            Some(self.is_object[self.depth - 1])
        } else {
            None
        };
        let ok = match (top, self.expect) {
            (Some(o), Expect::CommaOrClose) => o == object,
            (Some(true), Expect::KeyOrClose) => object,
            (Some(false), Expect::ValueOrClose) => !object,
            (Some(false), Expect::Value) if !object && self.depth == 1 && self.top_is_array => {
                // `,]` closing the top array: torch_npu's empty device append.
                self.trailing_comma_close = Some(self.last_comma);
                true
            }
            _ => false,
        };
        if !ok {
            return self.fail(at, "unexpected closing bracket");
        }
        self.depth -= 1;
        self.in_object = self.depth > 0 && self.is_object[self.depth - 1];
        if self.depth == 2 {
            self.in_args = false;
        }
        self.end_value(at);
        true
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
            if self.spans.is_some() {
                self.record(self.event_start, at + 1);
            }
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

    /// Classifies the input (`bytes` long, the lexer in state `lex` at its end) as a whole file.
    pub(super) fn finish(mut self, lex: LexAtEnd, bytes: u64) -> TraceScan {
        let mut lex = lex;
        if let LexAtEnd::Scalar { start, valid } = lex
            && self.depth == 0
            && self.error.is_none()
        {
            // A top-level scalar ends at EOF.
            lex = LexAtEnd::Normal;
            if valid {
                self.expect = Expect::Done;
            } else {
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
                offset: bytes,
                reason: "the top-level value is not a torch_npu trace array and is unfinished",
            }
        } else if self.depth == 1 && lex == LexAtEnd::Normal {
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
            bytes,
            events: self.events,
            last_event_end: self.last_event_end,
            process_names: self.process_names,
        }
    }
}
