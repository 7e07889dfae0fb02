//! Mechanical fixes of a window that does not close: add the closing `prof.step()` after the
//! loop, and raise a `range(...)` loop bound, as byte-range edits (npuprof-patch's [`Edit`]).

use npuprof_patch::Edit;
use npuprof_syntax::{callee, positional, text};
use tree_sitter::Node;

use crate::profile::FileContext;
use crate::steps::Counter;
use crate::window::Window;

/// The edits of one fix and what they do, in words.
pub(crate) struct Fix {
    /// The edits (disjoint, on the original text).
    pub(crate) edits: Vec<Edit>,
    /// What they do, e.g. "adds the closing `prof.step()` after the loop on line 12".
    pub(crate) description: String,
}

/// The fix that makes `window` call `step()` `more` more times, when it is mechanical: the
/// window's last stepping statement is a `for` loop at its top level, and either one closing
/// `step()` is missing, or the loop runs over `range(...)` with one `step()` per iteration and
/// a bound not decided at run time (raising a command-line default would change its meaning).
pub(crate) fn closing_fix<'t>(
    ctx: &FileContext<'t, '_>,
    window: &Window<'t>,
    more: u64,
) -> Option<Fix> {
    let key = window.key.as_deref()?;
    let counter = Counter::new(ctx, Some(key), window.frame);
    let stepping: Vec<usize> = (0..window.body.len())
        .filter(|i| counter.uses(window.body[*i]).steps > 0)
        .collect();
    let source = ctx.source;
    let looping = stepping
        .iter()
        .rev()
        .copied()
        .find(|i| window.body[*i].kind() == "for_statement")?;
    let the_loop = window.body[looping];
    let closed = stepping.iter().any(|i| *i > looping);
    let raise = if closed { more } else { more - 1 };
    let mut edits = Vec::new();
    let mut done = Vec::new();
    if raise > 0 {
        let (edit, what) = raise_bound(ctx, &counter, window, the_loop, raise)?;
        edits.push(edit);
        done.push(what);
    }
    if !closed {
        edits.push(closing_step(source, the_loop, key)?);
        done.push(format!(
            "adds the closing `{key}.step()` after the loop on line {}",
            the_loop.start_position().row + 1
        ));
    }
    Some(Fix {
        edits,
        description: done.join(" and "),
    })
}

/// `range(N)` → `range(N + k)` (a literal is raised in place).
fn raise_bound<'t>(
    ctx: &FileContext<'t, '_>,
    counter: &Counter<'_, 't, '_>,
    window: &Window<'t>,
    the_loop: Node<'t>,
    by: u64,
) -> Option<(Edit, String)> {
    let source = ctx.source;
    let range = the_loop
        .child_by_field_name("right")
        .filter(|r| r.kind() == "call" && callee(*r, source).as_deref() == Some("range"))?;
    let body = the_loop.child_by_field_name("body")?;
    let per_iteration = counter.count(&crate::window::statements(body)).ok()?;
    let stop = match positional(range).as_slice() {
        [stop] | [_, stop] => *stop,
        _ => return None,
    };
    if per_iteration.steps != 1 || the_loop.child_by_field_name("alternative").is_some() {
        return None;
    }
    let value = ctx.semantic.int(stop, window.frame).ok()?;
    if !value.trail.runtime.is_empty() {
        return None;
    }
    let old = text(stop, source);
    let by_i64 = i64::try_from(by).ok()?;
    let new = if stop.kind() == "integer" {
        value.value.checked_add(by_i64)?.to_string()
    } else if let Some(raised) = raise_trailing_literal(stop, source, by_i64) {
        raised
    } else if matches!(
        stop.kind(),
        "identifier" | "attribute" | "call" | "subscript"
    ) || (stop.kind() == "binary_operator" && !old.contains(['<', '>', '=']))
    {
        format!("{old} + {by}")
    } else {
        format!("({old}) + {by}")
    };
    let what = format!(
        "raises `{old}` to `{new}` on line {}",
        stop.start_position().row + 1
    );
    Some((Edit::replace(stop.byte_range(), new), what))
}

/// Inserts `key.step()` on the line after the loop, at the loop's indentation (`None` when
/// the loop does not start its line).
fn closing_step(source: &str, the_loop: Node<'_>, key: &str) -> Option<Edit> {
    let start = the_loop.start_byte();
    let line_start = source[..start].rfind('\n').map_or(0, |i| i + 1);
    let indent = &source[line_start..start];
    if !indent.chars().all(|c| c == ' ' || c == '\t') {
        return None;
    }
    let newline = if source[line_start..].contains("\r\n") {
        "\r\n"
    } else {
        "\n"
    };
    let statement = format!("{indent}{key}.step()  # closing step(): ends the last schedule cycle");
    Some(match source[the_loop.end_byte()..].find('\n') {
        Some(offset) => Edit::insert(
            the_loop.end_byte() + offset + 1,
            format!("{statement}{newline}"),
        ),
        None => Edit::insert(source.len(), format!("{newline}{statement}{newline}")),
    })
}

/// `A + 2` raised by `k` → `A + (2 + k)` written as one literal.
fn raise_trailing_literal(stop: Node<'_>, source: &str, by: i64) -> Option<String> {
    if stop.kind() != "binary_operator" {
        return None;
    }
    let operator = stop.child_by_field_name("operator")?;
    let right = stop.child_by_field_name("right")?;
    if text(operator, source) != "+" || right.kind() != "integer" {
        return None;
    }
    let literal: i64 = text(right, source).replace('_', "").parse().ok()?;
    let prefix = &source[stop.start_byte()..right.start_byte()];
    Some(format!("{prefix}{}", literal.checked_add(by)?))
}
