//! Profiled windows (`with profile(...) as prof:` bodies and `prof.start()` … `prof.stop()`
//! sequences) and the counting of `prof.step()` calls inside them.

use npuprof_python::{
    callee, descendants_in_scope, dotted, is_definition, named_children, positional, text,
};
use tree_sitter::Node;

use crate::profile::FileContext;
use crate::python::{int_value, resolve_value, scope_of};

/// A stretch of code that runs while a profiler is active.
#[derive(Debug, Clone)]
pub(crate) struct Window<'t> {
    /// The `profile(...)` call that created the profiler.
    pub(crate) profile: Node<'t>,
    /// How the code refers to the profiler (`prof`, `self.prof`), if it does.
    pub(crate) key: Option<String>,
    /// Where the window starts (the `with` statement or the `start()` statement).
    pub(crate) anchor: Node<'t>,
    /// The statements that run inside the window.
    pub(crate) body: Vec<Node<'t>>,
    /// Whether every `step()` of this profiler is in `body`: false when the profiler is an
    /// attribute (`self.prof`, steppable from other methods), a module global stepped inside a
    /// function, or started without a `stop()` in the same block (it outlives the block).
    pub(crate) countable: bool,
}

/// Finds every window in the file.
pub(crate) fn find_windows<'t>(ctx: &FileContext<'_>, root: Node<'t>) -> Vec<Window<'t>> {
    let mut windows = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        match node.kind() {
            "with_statement" => windows.extend(with_window(ctx, node)),
            "expression_statement" => windows.extend(start_window(ctx, node)),
            _ => {}
        }
        stack.extend(named_children(node));
    }
    windows.sort_by_key(|w| w.anchor.start_byte());
    windows
}

/// The profile call behind an expression: a `profile(...)` call or a name assigned one.
fn profile_behind<'t>(ctx: &FileContext<'_>, expr: Node<'t>, anchor: Node<'t>) -> Option<Node<'t>> {
    let value = match expr.kind() {
        "call" => expr,
        "identifier" => resolve_value(expr, ctx.source),
        "attribute" => attribute_assignment(ctx, expr, anchor)?,
        _ => return None,
    };
    ctx.profile_flavor(value).map(|_| value)
}

/// The value of the one `self.x = value` assignment in the scope of `anchor`.
fn attribute_assignment<'t>(
    ctx: &FileContext<'_>,
    target: Node<'t>,
    anchor: Node<'t>,
) -> Option<Node<'t>> {
    let wanted = dotted(target, ctx.source)?;
    let scope = scope_of(anchor);
    let mut found = descendants_in_scope(scope).into_iter().filter(|n| {
        n.kind() == "assignment"
            && n.child_by_field_name("left")
                .and_then(|l| dotted(l, ctx.source))
                .as_deref()
                == Some(wanted.as_str())
    });
    let first = found.next()?;
    if found.next().is_some() {
        return None;
    }
    first.child_by_field_name("right")
}

fn with_window<'t>(ctx: &FileContext<'_>, with: Node<'t>) -> Vec<Window<'t>> {
    let Some(body) = with.child_by_field_name("body") else {
        return Vec::new();
    };
    let Some(clause) = named_children(with)
        .into_iter()
        .find(|n| n.kind() == "with_clause")
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for item in named_children(clause)
        .into_iter()
        .filter(|n| n.kind() == "with_item")
    {
        let Some(value) = item.child_by_field_name("value") else {
            continue;
        };
        let (expr, alias) = if value.kind() == "as_pattern" {
            let alias = value
                .child_by_field_name("alias")
                .and_then(|a| a.named_child(0))
                .and_then(|a| dotted(a, ctx.source));
            match value.named_child(0) {
                Some(expr) => (expr, alias),
                None => continue,
            }
        } else {
            (value, None)
        };
        let Some(profile) = profile_behind(ctx, expr, with) else {
            continue;
        };
        let key = alias.or_else(|| {
            (expr.kind() != "call")
                .then(|| dotted(expr, ctx.source))
                .flatten()
        });
        let countable = steps_only_here(ctx, with, key.as_deref());
        out.push(Window {
            profile,
            key,
            anchor: with,
            body: statements(body),
            countable,
        });
    }
    out
}

/// `X.method()` as a whole expression statement → `X`.
fn method_statement(stmt: Node<'_>, method: &str, source: &str) -> Option<String> {
    let call = stmt.named_child(0).filter(|c| c.kind() == "call")?;
    let name = callee(call, source)?;
    let object = name.strip_suffix(method)?.strip_suffix('.')?;
    (!object.is_empty() && positional(call).is_empty()).then(|| object.to_owned())
}

fn start_window<'t>(ctx: &FileContext<'_>, stmt: Node<'t>) -> Option<Window<'t>> {
    let key = method_statement(stmt, "start", ctx.source)?;
    let call = stmt.named_child(0)?;
    let object = call
        .child_by_field_name("function")?
        .child_by_field_name("object")?;
    let profile = profile_behind(ctx, object, stmt)?;
    let mut body = Vec::new();
    let mut stopped = false;
    let mut next = stmt.next_named_sibling();
    while let Some(sibling) = next {
        if method_statement(sibling, "stop", ctx.source).as_deref() == Some(key.as_str()) {
            stopped = true;
            break;
        }
        if sibling.kind() != "comment" {
            body.push(sibling);
        }
        next = sibling.next_named_sibling();
    }
    let countable = stopped && steps_only_here(ctx, stmt, Some(&key));
    Some(Window {
        profile,
        key: Some(key),
        anchor: stmt,
        body,
        countable,
    })
}

/// Whether the profiler named `key` can only be stepped where the window's code is: not an
/// attribute, and not a module global that some function steps.
fn steps_only_here(ctx: &FileContext<'_>, anchor: Node<'_>, key: Option<&str>) -> bool {
    let Some(key) = key else { return true };
    if key.contains('.') {
        return false;
    }
    if scope_of(anchor).kind() != "module" {
        return true;
    }
    let needle = format!("{key}.step");
    let mut stack = vec![scope_of(anchor)];
    while let Some(node) = stack.pop() {
        if node.kind() == "function_definition" && text(node, ctx.source).contains(&needle) {
            return false;
        }
        stack.extend(named_children(node));
    }
    true
}

/// The statements of a block, without comments.
pub(crate) fn statements(block: Node<'_>) -> Vec<Node<'_>> {
    named_children(block)
        .into_iter()
        .filter(|n| n.kind() != "comment")
        .collect()
}

/// How a subtree uses the profiler variable.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Uses {
    /// `key.step()` calls (outside nested definitions).
    pub(crate) steps: u64,
    /// The profiler escapes (passed, stored, `step` referenced, used in a nested definition):
    /// it may be stepped where npuprof cannot count.
    pub(crate) escaped: bool,
}

/// How `node`'s subtree uses `key`.
pub(crate) fn uses(node: Node<'_>, key: Option<&str>, source: &str) -> Uses {
    let mut out = Uses::default();
    let Some(key) = key else { return out };
    let mut stack = vec![(node, false)];
    while let Some((n, nested)) = stack.pop() {
        let nested_here = nested || (n != node && is_definition(n));
        if matches!(n.kind(), "identifier" | "attribute")
            && dotted(n, source).as_deref() == Some(key)
        {
            let parent = n.parent();
            let is_attribute_name = parent.is_some_and(|p| {
                p.kind() == "attribute" && p.child_by_field_name("attribute") == Some(n)
            });
            let is_keyword_name = parent.is_some_and(|p| {
                p.kind() == "keyword_argument" && p.child_by_field_name("name") == Some(n)
            });
            if !is_attribute_name && !is_keyword_name {
                classify_use(n, nested_here, source, &mut out);
                continue;
            }
        }
        stack.extend(named_children(n).into_iter().map(|c| (c, nested_here)));
    }
    out
}

fn classify_use(n: Node<'_>, nested: bool, source: &str, out: &mut Uses) {
    let Some(parent) = n.parent().filter(|p| p.kind() == "attribute") else {
        out.escaped = true;
        return;
    };
    let method = parent
        .child_by_field_name("attribute")
        .map(|a| text(a, source));
    let called = parent
        .parent()
        .is_some_and(|g| g.kind() == "call" && g.child_by_field_name("function") == Some(parent));
    match (method, called) {
        (Some("step"), true) if !nested => out.steps += 1,
        (Some("step"), _) => out.escaped = true,
        _ => {}
    }
}

/// The number of `key.step()` calls the statements make when run once, if it can be counted.
pub(crate) fn count_steps(stmts: &[Node<'_>], key: Option<&str>, source: &str) -> Option<u64> {
    stmts.iter().try_fold(0u64, |total, stmt| {
        Some(total + count_statement(*stmt, key, source)?)
    })
}

fn count_statement(stmt: Node<'_>, key: Option<&str>, source: &str) -> Option<u64> {
    let use_ = uses(stmt, key, source);
    if use_.escaped {
        return None;
    }
    if use_.steps == 0 {
        return Some(0);
    }
    match stmt.kind() {
        "expression_statement" | "assignment" | "augmented_assignment" | "return_statement" => {
            Some(use_.steps)
        }
        "for_statement" => {
            let body = statements(stmt.child_by_field_name("body")?);
            if body.iter().flat_map(|s| descendants_in_scope(*s)).any(|n| {
                matches!(
                    n.kind(),
                    "break_statement"
                        | "continue_statement"
                        | "return_statement"
                        | "raise_statement"
                )
            }) {
                return None;
            }
            let per_iteration = count_steps(&body, key, source)?;
            let iterations = range_iterations(stmt.child_by_field_name("right")?, source)?;
            let else_steps = match stmt.child_by_field_name("alternative") {
                Some(alt) => count_steps(&block_of(alt), key, source)?,
                None => 0,
            };
            Some(iterations * per_iteration + else_steps)
        }
        "with_statement" => {
            count_steps(&statements(stmt.child_by_field_name("body")?), key, source)
        }
        "try_statement" => {
            let mut total =
                count_steps(&statements(stmt.child_by_field_name("body")?), key, source)?;
            for clause in named_children(stmt) {
                match clause.kind() {
                    "else_clause" | "finally_clause" => {
                        total += count_steps(&block_of(clause), key, source)?
                    }
                    "except_clause" if uses(clause, key, source).steps > 0 => return None,
                    _ => {}
                }
            }
            Some(total)
        }
        _ => None,
    }
}

/// The statements of an `else:`/`finally:` clause.
fn block_of(clause: Node<'_>) -> Vec<Node<'_>> {
    named_children(clause)
        .into_iter()
        .find(|n| n.kind() == "block")
        .map(statements)
        .unwrap_or_default()
}

/// The iteration count of `range(n)`, `range(a, b)` or `range(a, b, step)` with known integers.
pub(crate) fn range_iterations(iterable: Node<'_>, source: &str) -> Option<u64> {
    if iterable.kind() != "call" || callee(iterable, source).as_deref() != Some("range") {
        return None;
    }
    let args: Vec<i64> = positional(iterable)
        .into_iter()
        .map(|a| int_value(a, source))
        .collect::<Option<_>>()?;
    let (start, stop, step) = match args.as_slice() {
        [stop] => (0, *stop, 1),
        [start, stop] => (*start, *stop, 1),
        [start, stop, step] if *step != 0 => (*start, *stop, *step),
        _ => return None,
    };
    let span = if step > 0 { stop - start } else { start - stop };
    let step = step.unsigned_abs();
    Some(u64::try_from(span).map_or(0, |span| span.div_ceil(step)))
}
