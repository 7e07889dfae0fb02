//! Profiled windows (`with profile(...) as prof:` bodies and `prof.start()` … `prof.stop()`
//! sequences) and where their profiler comes from.

use npuprof_syntax::semantic::resolve::Frame;
use npuprof_syntax::{callee, descendants_in_scope, dotted, named_children, positional};
use tree_sitter::Node;

use crate::profile::FileContext;

/// A stretch of code that runs while a profiler is active.
#[derive(Debug, Clone)]
pub(crate) struct Window<'t> {
    /// The `profile(...)` call that created the profiler.
    pub(crate) profile: Node<'t>,
    /// The call of the local function that built the profiler (`with make_profiler(5) as
    /// prof:`): the function's parameters take that call's arguments.
    pub(crate) frame: Option<Frame<'t>>,
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
pub(crate) fn find_windows<'t>(ctx: &FileContext<'t, '_>, root: Node<'t>) -> Vec<Window<'t>> {
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

/// The profile call behind an expression: a `profile(...)` call, a name or attribute bound
/// to one, or the call of a local function that returns one (with that call as the frame).
fn profile_behind<'t>(
    ctx: &FileContext<'t, '_>,
    expr: Node<'t>,
) -> Option<(Node<'t>, Option<Frame<'t>>)> {
    let (value, frame) = ctx.semantic.expression(expr, None);
    if ctx.profile_flavor(value).is_some() {
        return Some((value, frame));
    }
    if value.kind() != "call" {
        return None;
    }
    let def = ctx.semantic.local_function(value)?;
    let frame = Frame { def, call: value };
    descendants_in_scope(def.child_by_field_name("body")?)
        .into_iter()
        .filter(|n| n.kind() == "return_statement")
        .filter_map(|r| r.named_child(0))
        .map(|returned| ctx.semantic.expression(returned, Some(frame)))
        .find(|(node, _)| ctx.profile_flavor(*node).is_some())
}

fn with_window<'t>(ctx: &FileContext<'t, '_>, with: Node<'t>) -> Vec<Window<'t>> {
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
        let Some((profile, frame)) = profile_behind(ctx, expr) else {
            continue;
        };
        let key = alias.or_else(|| {
            (expr.kind() != "call")
                .then(|| dotted(expr, ctx.source))
                .flatten()
        });
        // `with self.prof as prof:` — the profiler is reachable by its own name too.
        let named = (expr.kind() != "call")
            .then(|| dotted(expr, ctx.source))
            .flatten();
        let named_stepped_elsewhere = named.as_deref().is_some_and(|n| match n.rsplit_once('.') {
            Some((_, attribute)) => ctx.source.contains(&format!(".{attribute}.step")),
            None => !steps_only_here(ctx, with, Some(n)),
        });
        let countable = steps_only_here(ctx, with, key.as_deref()) && !named_stepped_elsewhere;
        out.push(Window {
            profile,
            frame,
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

fn start_window<'t>(ctx: &FileContext<'t, '_>, stmt: Node<'t>) -> Option<Window<'t>> {
    let key = method_statement(stmt, "start", ctx.source)?;
    let call = stmt.named_child(0)?;
    let object = call
        .child_by_field_name("function")?
        .child_by_field_name("object")?;
    let (profile, frame) = profile_behind(ctx, object)?;
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
        frame,
        key: Some(key),
        anchor: stmt,
        body,
        countable,
    })
}

/// Whether the profiler named `key` can only be stepped where the window's code is: not an
/// attribute, and not a module global that some function steps (a function whose parameter
/// has the same name steps its own argument, not the global).
fn steps_only_here<'t>(ctx: &FileContext<'t, '_>, anchor: Node<'t>, key: Option<&str>) -> bool {
    let Some(key) = key else { return true };
    if key.contains('.') {
        return false;
    }
    ctx.semantic.scope_of(anchor).kind() != "module"
        || !ctx.semantic.global_attribute_in_function(key, "step")
}

/// The statements of a block, without comments.
pub(crate) fn statements(block: Node<'_>) -> Vec<Node<'_>> {
    named_children(block)
        .into_iter()
        .filter(|n| n.kind() != "comment")
        .collect()
}
