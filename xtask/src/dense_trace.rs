//! The dense trace of `cargo xtask bench verify`: what torch_npu writes with the settings the
//! guide gives (`with_stack=False, record_shapes=False`), derived from the events of a real
//! run's trace recorded with both on. Without the stack there is no Python tracer, so no
//! `python_function` event and no `Call stack` argument; without shapes no `Input Dims` and
//! `Input type` arguments. What is left is short events (about 170 bytes each, almost half of
//! them counters) with no long string: many events per byte.

/// The arguments that `record_shapes` and `with_stack` add to an event.
const RECORDED_ONLY_WITH_SHAPES_OR_STACK: [&[u8]; 3] =
    [b"Input Dims", b"Input type", b"Call stack"];

/// The events of the Python tracer, recorded only with `with_stack` (or `with_modules`).
const PYTHON_TRACER_EVENT: &[u8] = br#""cat": "python_function""#;

/// The top-level events of `trace` (a JSON array of objects, as torch_npu writes it): each
/// event's bytes, from its `{` to its `}`.
fn events(trace: &[u8]) -> Vec<&[u8]> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for (i, &b) in trace.iter().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' => {
                if depth == 0 {
                    start = i;
                }
                depth += 1;
            }
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    out.push(&trace[start..=i]);
                }
            }
            _ => {}
        }
    }
    out
}

/// `event` without its `, "<key>": "<string>"` members for the keys given.
fn without_string_members(event: &[u8], keys: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(event.len());
    let mut rest = event;
    'scan: while !rest.is_empty() {
        for key in keys {
            let mut member = b", \"".to_vec();
            member.extend_from_slice(key);
            member.extend_from_slice(b"\": \"");
            if let Some(value) = rest.strip_prefix(member.as_slice()) {
                // Skip the string value up to its closing quote.
                let mut escaped = false;
                for (i, &b) in value.iter().enumerate() {
                    match b {
                        _ if escaped => escaped = false,
                        b'\\' => escaped = true,
                        b'"' => {
                            rest = &value[i + 1..];
                            continue 'scan;
                        }
                        _ => {}
                    }
                }
                rest = &[];
                continue 'scan;
            }
        }
        out.push(rest[0]);
        rest = &rest[1..];
    }
    out
}

/// The trace `sample` as the guide's settings would have written it: a closed JSON array.
pub fn as_guide_settings(sample: &[u8]) -> Vec<u8> {
    let mut out = b"[".to_vec();
    let kept = events(sample)
        .into_iter()
        .filter(|e| memchr::memmem::find(e, PYTHON_TRACER_EVENT).is_none());
    for (i, event) in kept.enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        out.extend(without_string_members(
            event,
            &RECORDED_ONLY_WITH_SHAPES_OR_STACK,
        ));
    }
    out.push(b']');
    out
}

#[cfg(test)]
mod tests {
    use super::as_guide_settings;

    #[test]
    fn drops_the_python_tracer_and_the_shape_and_stack_arguments_only() {
        let sample = br#"[{"ph": "X", "name": "aten::mm", "cat": "cpu_op", "args": {"Sequence number": -1, "Input Dims": "[2, 3]\r\n", "Input type": "float", "Call stack": "a.py(1): f;\r\nb.py(2): \"g\"", "Fwd thread id": 0}}, {"ph": "X", "name": "f", "cat": "python_function", "args": {"Python id": 1}}, {"ph": "C", "name": "HBM", "args": {"value": 0}}]"#;
        let dense = as_guide_settings(sample);
        assert_eq!(
            String::from_utf8(dense).expect("UTF-8"),
            r#"[{"ph": "X", "name": "aten::mm", "cat": "cpu_op", "args": {"Sequence number": -1, "Fwd thread id": 0}}, {"ph": "C", "name": "HBM", "args": {"value": 0}}]"#
        );
    }
}
