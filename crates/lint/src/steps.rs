//! Counting the `prof.step()` calls a window makes when it runs: straight-line code, `for`
//! loops over `range(...)` (or literal lists), counted `while` loops (`i = 0; while i < N: …;
//! i += 1`), and helpers one call deep that take the profiler and step it. When the count
//! cannot be known, the error says why.

use npuprof_syntax::semantic::params::{function_name, parameter_at};
use npuprof_syntax::semantic::resolve::{Frame, Int, Resolution, Trail};
use npuprof_syntax::{
    callee, descendants_in_scope, dotted, is_definition, line, named_children, positional, text,
};
use tree_sitter::Node;

use crate::profile::FileContext;
use crate::window::statements;

/// The `step()` calls of some code run once, and how the numbers behind it were found.
#[derive(Debug, Clone, Default)]
pub(crate) struct Count {
    /// The number of `step()` calls.
    pub(crate) steps: u64,
    /// The names and loops resolved on the way.
    pub(crate) trail: Trail,
}

/// How a subtree uses the profiler variable.
#[derive(Debug, Clone, Default)]
pub(crate) struct Uses {
    /// `key.step()` calls (outside nested definitions), helpers' steps included.
    pub(crate) steps: u64,
    /// Why the profiler may be stepped where npuprof cannot count (passed to code outside
    /// the file, stored, `step` referenced, used in a nested definition), if it may.
    pub(crate) escaped: Option<String>,
    /// What the helpers' counts were found from.
    pub(crate) trail: Trail,
}

/// Counts the steps of one profiler, named `key`, in code evaluated with `frame`.
pub(crate) struct Counter<'a, 't, 's> {
    ctx: &'a FileContext<'t, 's>,
    key: Option<&'a str>,
    frame: Option<Frame<'t>>,
    /// Whether a helper that takes the profiler is followed (one level only).
    follow_helpers: bool,
}

impl<'a, 't, 's> Counter<'a, 't, 's> {
    /// A counter of `key.step()` calls.
    pub(crate) fn new(
        ctx: &'a FileContext<'t, 's>,
        key: Option<&'a str>,
        frame: Option<Frame<'t>>,
    ) -> Self {
        Self {
            ctx,
            key,
            frame,
            follow_helpers: true,
        }
    }

    fn key_name(&self) -> &str {
        self.key.unwrap_or("prof")
    }

    /// How `node`'s subtree uses the profiler.
    pub(crate) fn uses(&self, node: Node<'t>) -> Uses {
        let mut out = Uses::default();
        let Some(key) = self.key else { return out };
        let source = self.ctx.source;
        let mut stack = vec![(node, false)];
        while let Some((n, nested)) = stack.pop() {
            let nested_here = nested || (n != node && is_definition(n));
            if matches!(n.kind(), "identifier" | "attribute")
                && dotted(n, source).as_deref() == Some(key)
            {
                let parent = self.ctx.semantic.parent(n);
                let is_attribute_name = parent.is_some_and(|p| {
                    p.kind() == "attribute" && p.child_by_field_name("attribute") == Some(n)
                });
                let is_keyword_name = parent.is_some_and(|p| {
                    p.kind() == "keyword_argument" && p.child_by_field_name("name") == Some(n)
                });
                if !is_attribute_name && !is_keyword_name {
                    self.classify_use(n, nested_here, &mut out);
                    continue;
                }
            }
            stack.extend(named_children(n).into_iter().map(|c| (c, nested_here)));
        }
        out
    }

    fn classify_use(&self, n: Node<'t>, nested: bool, out: &mut Uses) {
        let key = self.key_name();
        let source = self.ctx.source;
        let escape = |out: &mut Uses, why: String| {
            if out.escaped.is_none() {
                out.escaped = Some(why);
            }
        };
        let resolver = &self.ctx.semantic;
        let Some(parent) = resolver.parent(n) else {
            return;
        };
        if parent.kind() != "attribute" {
            match self.helper_steps(n) {
                Ok(count) => {
                    out.steps += count.steps;
                    out.trail.merge(&count.trail);
                }
                Err(why) => escape(out, why),
            }
            return;
        }
        let method = parent
            .child_by_field_name("attribute")
            .map(|a| text(a, source));
        let called = resolver.parent(parent).is_some_and(|g| {
            g.kind() == "call" && g.child_by_field_name("function") == Some(parent)
        });
        match (method, called) {
            (Some("step"), true) if !nested => out.steps += 1,
            (Some("step"), true) => escape(
                out,
                format!(
                    "`{key}.step()` is called in a nested function (line {})",
                    line(n)
                ),
            ),
            (Some("step"), false) => escape(
                out,
                format!(
                    "`{key}.step` is passed on without being called (line {})",
                    line(n)
                ),
            ),
            _ => {}
        }
    }

    /// The steps of a helper the profiler is passed to (`run_step(model, prof)`): the helper
    /// must be defined in this file and step its parameter a countable number of times.
    fn helper_steps(&self, n: Node<'t>) -> Result<Count, String> {
        let key = self.key_name();
        let source = self.ctx.source;
        let resolver = &self.ctx.semantic;
        let stored = || {
            let how = match resolver.parent(n) {
                Some(p) if p.kind() == "assignment" => p
                    .child_by_field_name("left")
                    .map_or("stored".to_owned(), |l| {
                        format!("stored in `{}`", text(l, source))
                    }),
                Some(p) if p.kind() == "return_statement" => "returned".to_owned(),
                Some(p) if p.kind() == "yield" => "yielded".to_owned(),
                _ => "stored or passed on".to_owned(),
            };
            format!(
                "`{key}` is {how} (line {}): its `step()` may come from elsewhere",
                line(n)
            )
        };
        let (argument, keyword) = match resolver.parent(n) {
            Some(p) if p.kind() == "argument_list" => (n, None),
            Some(p)
                if p.kind() == "keyword_argument" && p.child_by_field_name("value") == Some(n) =>
            {
                (p, p.child_by_field_name("name").map(|k| text(k, source)))
            }
            _ => return Err(stored()),
        };
        let call = resolver
            .parent(argument)
            .and_then(|list| resolver.parent(list))
            .filter(|c| c.kind() == "call")
            .ok_or_else(stored)?;
        let name = callee(call, source).unwrap_or_else(|| text(call, source).to_owned());
        if !self.follow_helpers {
            return Err(format!(
                "`{key}` is passed on to `{name}()` (line {}), more than one call deep",
                line(n)
            ));
        }
        let def = self.ctx.semantic.local_function(call).ok_or_else(|| {
            format!(
                "`{key}` is passed to `{name}()` (line {}), which is not defined in this file",
                line(n)
            )
        })?;
        let param = match keyword {
            Some(k) => Some(k),
            None => positional(call)
                .iter()
                .position(|a| *a == n)
                .and_then(|i| parameter_at(def, resolver.is_method(def), i, source)),
        }
        .ok_or_else(|| format!("`{name}()` has no parameter for `{key}` (line {})", line(n)))?;
        let body = def
            .child_by_field_name("body")
            .map(statements)
            .unwrap_or_default();
        let inner = Counter {
            ctx: self.ctx,
            key: Some(param),
            frame: Some(Frame { def, call }),
            follow_helpers: false,
        };
        let mut count = inner
            .count(&body)
            .map_err(|why| format!("in `{}()`: {why}", function_name(def, source)))?;
        count.trail.resolved.push(format!(
            "`{}()` calls `{param}.step()` {} time(s) (line {})",
            function_name(def, source),
            count.steps,
            line(def)
        ));
        Ok(count)
    }

    /// The `step()` calls the statements make when run once.
    pub(crate) fn count(&self, stmts: &[Node<'t>]) -> Result<Count, String> {
        let mut total = Count::default();
        for stmt in stmts {
            let c = self.statement(*stmt)?;
            total.steps = total.steps.saturating_add(c.steps);
            total.trail.merge(&c.trail);
        }
        Ok(total)
    }

    fn statement(&self, stmt: Node<'t>) -> Result<Count, String> {
        let use_ = self.uses(stmt);
        if let Some(why) = use_.escaped {
            return Err(why);
        }
        if use_.steps == 0 {
            return Ok(Count::default());
        }
        let key = self.key_name();
        match stmt.kind() {
            "expression_statement" | "assignment" | "augmented_assignment" | "return_statement" => {
                Ok(Count {
                    steps: use_.steps,
                    trail: use_.trail,
                })
            }
            "for_statement" => self.for_loop(stmt),
            "while_statement" => self.while_loop(stmt),
            "with_statement" => self.count(&self.body(stmt)),
            "try_statement" => self.try_statement(stmt),
            "if_statement" => self.if_statement(stmt),
            kind => Err(format!(
                "`{key}.step()` is called inside a `{kind}` (line {})",
                line(stmt)
            )),
        }
    }

    fn body(&self, stmt: Node<'t>) -> Vec<Node<'t>> {
        stmt.child_by_field_name("body")
            .map(statements)
            .unwrap_or_default()
    }

    /// An `if` whose conditions the script fixes in its text (`if CLOSING_STEP:` with
    /// `CLOSING_STEP = True`): the branch taken is counted; any other condition is refused.
    fn if_statement(&self, stmt: Node<'t>) -> Result<Count, String> {
        let mut trail = Trail::default();
        let mut branches = vec![(
            stmt.child_by_field_name("condition"),
            self.branch(stmt, "consequence"),
        )];
        for clause in named_children(stmt) {
            match clause.kind() {
                "elif_clause" => branches.push((
                    clause.child_by_field_name("condition"),
                    self.branch(clause, "consequence"),
                )),
                "else_clause" => branches.push((None, self.branch(clause, "body"))),
                _ => {}
            }
        }
        for (condition, body) in branches {
            let taken = match condition {
                None => true,
                Some(condition) => {
                    let (truth, found) =
                        self.ctx
                            .semantic
                            .truth(condition, self.frame)
                            .map_err(|_| {
                                format!(
                                    "`{}.step()` is called under a condition (`if` on line {})",
                                    self.key_name(),
                                    line(stmt)
                                )
                            })?;
                    trail.merge(&found);
                    truth
                }
            };
            if taken {
                let mut count = self.count(&body)?;
                trail.merge(&count.trail);
                count.trail = trail;
                return Ok(count);
            }
        }
        Ok(Count { steps: 0, trail })
    }

    fn branch(&self, clause: Node<'t>, field: &str) -> Vec<Node<'t>> {
        clause
            .child_by_field_name(field)
            .map(statements)
            .unwrap_or_default()
    }

    fn try_statement(&self, stmt: Node<'t>) -> Result<Count, String> {
        let mut total = self.count(&self.body(stmt))?;
        for clause in named_children(stmt) {
            match clause.kind() {
                "else_clause" | "finally_clause" => {
                    let c = self.count(&block_of(clause))?;
                    total.steps += c.steps;
                    total.trail.merge(&c.trail);
                }
                "except_clause" if self.uses(clause).steps > 0 => {
                    return Err(format!(
                        "`{}.step()` is called in an `except` clause (line {})",
                        self.key_name(),
                        line(clause)
                    ));
                }
                _ => {}
            }
        }
        Ok(total)
    }

    /// Refuses loops that can end early: their iteration count is decided at run time.
    fn exits_early(&self, stmt: Node<'t>) -> Result<(), String> {
        let early = self
            .body(stmt)
            .iter()
            .flat_map(|s| descendants_in_scope(*s))
            .find(|n| {
                matches!(
                    n.kind(),
                    "break_statement"
                        | "continue_statement"
                        | "return_statement"
                        | "raise_statement"
                )
            });
        match early {
            Some(n) => Err(format!(
                "the loop on line {} can end early (`{}` on line {})",
                line(stmt),
                text(n, self.ctx.source)
                    .split_whitespace()
                    .next()
                    .unwrap_or(""),
                line(n)
            )),
            None => Ok(()),
        }
    }

    fn for_loop(&self, stmt: Node<'t>) -> Result<Count, String> {
        self.exits_early(stmt)?;
        let per_iteration = self.count(&self.body(stmt))?;
        let iterable = stmt
            .child_by_field_name("right")
            .ok_or("a `for` loop without an iterable")?;
        let iterations = self.iterations(iterable)?;
        self.looped(stmt, iterable, iterations, per_iteration)
    }

    /// `iterations · per_iteration` plus the `else:` clause, with the loop in the trail.
    fn looped(
        &self,
        stmt: Node<'t>,
        bound: Node<'t>,
        iterations: Int,
        per_iteration: Count,
    ) -> Result<Count, String> {
        let n = u64::try_from(iterations.value).unwrap_or(0);
        let mut total = Count {
            steps: n.saturating_mul(per_iteration.steps),
            trail: iterations.trail,
        };
        total.trail.merge(&per_iteration.trail);
        total.trail.resolved.push(format!(
            "`{}`: {n} iteration(s) (line {})",
            text(bound, self.ctx.source),
            line(stmt)
        ));
        if let Some(alt) = stmt.child_by_field_name("alternative") {
            let c = self.count(&block_of(alt))?;
            total.steps += c.steps;
            total.trail.merge(&c.trail);
        }
        Ok(total)
    }

    /// How many times a `for` loop over `iterable` runs.
    fn iterations(&self, iterable: Node<'t>) -> Resolution {
        let source = self.ctx.source;
        let unknown = || {
            Err(format!(
                "the loop runs over `{}`, whose length is known only at run time",
                text(iterable, source)
            ))
        };
        match iterable.kind() {
            "list" | "tuple" => Ok(Int {
                value: i64::try_from(named_children(iterable).len()).unwrap_or(i64::MAX),
                trail: Trail::default(),
            }),
            "identifier" => self.list_length(iterable).or_else(|_| unknown()),
            "call" => match callee(iterable, source).as_deref() {
                Some("range") => self.range(iterable),
                Some("enumerate") => match positional(iterable).first() {
                    Some(inner) => self.iterations(*inner),
                    None => unknown(),
                },
                _ => unknown(),
            },
            _ => unknown(),
        }
    }

    /// The length of a list built as `name = []` and filled by one `name.append(...)` per
    /// iteration of a countable `for` loop before `at` (batches prefetched before the window).
    fn list_length(&self, at: Node<'t>) -> Resolution {
        let source = self.ctx.source;
        let name = text(at, source);
        let (value, _) = self.ctx.semantic.expression(at, self.frame);
        if value.kind() != "list" || value.named_child_count() != 0 {
            return Err(format!("`{name}` is not an empty list filled by a loop"));
        }
        let calls: Vec<Node<'t>> = descendants_in_scope(self.ctx.semantic.scope_of(value))
            .into_iter()
            .filter(|n| {
                n.kind() == "call"
                    && callee(*n, source).is_some_and(|c| {
                        c.strip_prefix(name)
                            .is_some_and(|rest| rest.starts_with('.'))
                    })
            })
            .collect();
        let [append] = calls.as_slice() else {
            return Err(format!("`{name}` is changed in more than one place"));
        };
        let resolver = &self.ctx.semantic;
        let filler = resolver
            .parent(*append)
            .filter(|s| s.kind() == "expression_statement")
            .and_then(|s| resolver.parent(s))
            .and_then(|block| resolver.parent(block))
            .filter(|l| l.kind() == "for_statement" && l.end_byte() <= at.start_byte());
        let (Some(filler), Some("append")) = (
            filler,
            callee(*append, source)
                .as_deref()
                .map(crate::python::last_segment),
        ) else {
            return Err(format!("`{name}` is not filled once per loop iteration"));
        };
        self.exits_early(filler)?;
        let bound = filler
            .child_by_field_name("right")
            .ok_or("a `for` loop without an iterable")?;
        let mut length = self.iterations(bound)?;
        length.trail.resolved.push(format!(
            "`{name}`: {} item(s), one appended per iteration of `{}` (line {})",
            length.value,
            text(bound, source),
            line(filler)
        ));
        Ok(length)
    }

    /// The iteration count of `range(n)`, `range(a, b)` or `range(a, b, step)`.
    fn range(&self, call: Node<'t>) -> Resolution {
        let args: Vec<Int> = positional(call)
            .into_iter()
            .map(|a| {
                self.ctx.semantic.int(a, self.frame).map_err(|why| {
                    format!("could not resolve `{}` ({why})", text(a, self.ctx.source))
                })
            })
            .collect::<Result<_, _>>()?;
        let (start, stop, step) = match args.as_slice() {
            [stop] => (0, stop.value, 1),
            [start, stop] => (start.value, stop.value, 1),
            [start, stop, step] if step.value != 0 => (start.value, stop.value, step.value),
            _ => {
                return Err(format!(
                    "`{}` is not a `range` lint counts",
                    text(call, self.ctx.source)
                ));
            }
        };
        let span = if step > 0 {
            stop.saturating_sub(start)
        } else {
            start.saturating_sub(stop)
        };
        let value = u64::try_from(span).map_or(0, |span| span.div_ceil(step.unsigned_abs()));
        let mut trail = Trail::default();
        for a in &args {
            trail.merge(&a.trail);
        }
        Ok(Int {
            value: i64::try_from(value).unwrap_or(i64::MAX),
            trail,
        })
    }

    /// `i = START` just before, `while i < END:` (or `<=`, or `END > i`), `i += 1` once at
    /// the top level of the body.
    fn while_loop(&self, stmt: Node<'t>) -> Result<Count, String> {
        let source = self.ctx.source;
        let condition = stmt
            .child_by_field_name("condition")
            .ok_or("a `while` loop without a condition")?;
        let uncounted = || {
            format!(
                "the `while {}` loop on line {} is not a counted loop (`i = 0` before it, `while i < N:`, `i += 1` once per iteration)",
                text(condition, source),
                line(stmt)
            )
        };
        self.exits_early(stmt)?;
        let (counter, bound, inclusive) =
            counted_condition(condition, source).ok_or_else(uncounted)?;
        let body = self.body(stmt);
        let increments = body
            .iter()
            .filter(|s| is_increment(**s, counter, source))
            .count();
        let rebinds = body
            .iter()
            .flat_map(|s| descendants_in_scope(*s))
            .filter(|n| matches!(n.kind(), "assignment" | "augmented_assignment"))
            .filter(|n| {
                n.child_by_field_name("left")
                    .is_some_and(|l| text(l, source) == counter)
            })
            .count();
        if increments != 1 || rebinds != 1 {
            return Err(uncounted());
        }
        let start = start_value(stmt, counter, source).ok_or_else(uncounted)?;
        let start = self
            .ctx
            .semantic
            .int(start, self.frame)
            .map_err(|why| format!("could not resolve the start of `{counter}` ({why})"))?;
        let end = self
            .ctx
            .semantic
            .int(bound, self.frame)
            .map_err(|why| format!("could not resolve `{}` ({why})", text(bound, source)))?;
        let mut iterations = Int {
            value: end
                .value
                .saturating_sub(start.value)
                .saturating_add(i64::from(inclusive))
                .max(0),
            trail: start.trail,
        };
        iterations.trail.merge(&end.trail);
        let per_iteration = self.count(&body)?;
        self.looped(stmt, condition, iterations, per_iteration)
    }
}

/// `i < N`, `i <= N`, `N > i`, `N >= i` → (`i`, `N`, inclusive).
fn counted_condition<'t, 's>(
    condition: Node<'t>,
    source: &'s str,
) -> Option<(&'s str, Node<'t>, bool)> {
    if condition.kind() != "comparison_operator" {
        return None;
    }
    let operands = named_children(condition);
    let [left, right] = operands.as_slice() else {
        return None;
    };
    let operator = npuprof_syntax::all_children(condition)
        .into_iter()
        .find(|c| !c.is_named())
        .map(|o| text(o, source))?;
    match operator {
        "<" | "<=" if left.kind() == "identifier" => {
            Some((text(*left, source), *right, operator == "<="))
        }
        ">" | ">=" if right.kind() == "identifier" => {
            Some((text(*right, source), *left, operator == ">="))
        }
        _ => None,
    }
}

/// Whether `stmt` is `counter += 1`.
fn is_increment(stmt: Node<'_>, counter: &str, source: &str) -> bool {
    let Some(aug) = stmt
        .named_child(0)
        .filter(|n| n.kind() == "augmented_assignment")
    else {
        return false;
    };
    let operator = aug.child_by_field_name("operator").map(|o| text(o, source));
    aug.child_by_field_name("left")
        .is_some_and(|l| text(l, source) == counter)
        && operator == Some("+=")
        && aug
            .child_by_field_name("right")
            .is_some_and(|r| text(r, source) == "1")
}

/// The value of the last `counter = value` statement before the loop, in the same block
/// (`None` if the counter is changed in place in between).
fn start_value<'t>(stmt: Node<'t>, counter: &str, source: &str) -> Option<Node<'t>> {
    let mut previous = stmt.prev_named_sibling();
    while let Some(p) = previous {
        if let Some(node) = p.named_child(0)
            && matches!(node.kind(), "assignment" | "augmented_assignment")
            && node
                .child_by_field_name("left")
                .is_some_and(|l| text(l, source) == counter)
        {
            return (node.kind() == "assignment")
                .then(|| node.child_by_field_name("right"))
                .flatten();
        }
        previous = p.prev_named_sibling();
    }
    None
}

/// The statements of an `else:`/`finally:` clause.
fn block_of(clause: Node<'_>) -> Vec<Node<'_>> {
    named_children(clause)
        .into_iter()
        .find(|n| n.kind() == "block")
        .map(statements)
        .unwrap_or_default()
}
