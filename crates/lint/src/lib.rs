//! npuprof-lint: static checks of Python code that uses `torch_npu.profiler` (or
//! `torch.profiler`) for the mistakes that spoil a profile. Reads files; never writes.
//!
//! | code | severity | rule |
//! |---|---|---|
//! | NPL001 | warning | `torch_npu.profiler.profile(...)` without `experimental_config` (Level0, no pipeline metrics) |
//! | NPL002 | warning | `profiler_level=ProfilerLevel.Level0` / `Level_none` (or `_ExperimentalConfig()` without a level) |
//! | NPL003 | warning | `aic_metrics=AiCMetrics.AiCoreNone` with a profiler level that cannot be resolved (torch_npu upgrades AiCoreNone to PipeUtilization at Level1/2; Level0 is NPL002) |
//! | NPL004 | error | no `on_trace_ready` (and no `export_chrome_trace`/`key_averages` in the file): nothing is saved or parsed |
//! | NPL005 | warning | `torch.profiler.profile` used instead of `torch_npu.profiler.profile` |
//! | NPL010 | error | the window calls `step()` fewer times than `skip_first + repeat·(wait+warmup+active)` |
//! | NPL011 | info | the window closes exactly on its last `step()`: no margin |
//! | NPL012 | warning | `repeat=0` (the default): cycles repeat until stop, cannot close by count |
//! | NPL013 | error | a loop inside a scheduled window never calls `step()` |
//! | NPL020 | warning | `torch.compile` / torchair graph compilation inside the window (unless the schedule is known to skip the first steps) |
//! | NPL021 | warning | the first model call runs inside the window with no warm-up before it, and the window records from its first step |
//! | NPL030 | info | `with_stack=True` (high-volume) |
//! | NPL031 | info | `profile_memory=True` (high-volume) |
//! | NPL032 | info | `profiler_level=ProfilerLevel.Level2` (high-volume) |
//! | NPL900 | warning | the file has syntax errors; checks may be incomplete |
//!
//! A finding is suppressed by `# noqa` (every code) or `# noqa: NPL001, NPL004` on the line it
//! points at, as in ruff.

mod finding;
mod imports;
mod profile;
mod python;
mod rules;
mod walk;
mod window;

pub use finding::{Code, Finding, Severity};
pub use walk::{LintError, Report, lint_paths};

use npuprof_python::{first_error, named_children, parse};

use crate::imports::Imports;
use crate::profile::{FileContext, ProfileCall};
use crate::python::position;
use crate::rules::Raw;

/// Lints one file's source text; `path` is only used to label the findings.
/// Findings are sorted by position, then code.
pub fn lint_source(path: &str, source: &str) -> Vec<Finding> {
    let Some(tree) = parse(source) else {
        return vec![Finding {
            path: path.to_owned(),
            line: 1,
            column: 1,
            code: Code::SyntaxError,
            severity: Code::SyntaxError.severity(),
            message: "the file could not be parsed as Python".to_owned(),
            fix: "fix the syntax error".to_owned(),
        }];
    };
    let root = tree.root_node();
    let ctx = FileContext {
        source,
        imports: Imports::collect(root, source),
        exports_results: ["export_chrome_trace(", "key_averages("]
            .iter()
            .any(|m| source.contains(m)),
    };
    let mut raws: Vec<Raw<'_>> = Vec::new();
    if root.has_error() {
        let node = first_error(root).unwrap_or(root);
        raws.push(Raw {
            node,
            code: Code::SyntaxError,
            message: "syntax error: the file is not valid Python here; the checks of this file may be incomplete".to_owned(),
            fix: "fix the syntax error (e.g. `python3 -m py_compile <file>` shows it)".to_owned(),
        });
    }
    let mut calls = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if let Some(flavor) = ctx.profile_flavor(node) {
            calls.push(ProfileCall::read(&ctx, node, flavor));
        }
        stack.extend(named_children(node));
    }
    calls.sort_by_key(|c| c.node.start_byte());
    for call in &calls {
        rules::check_configuration(&ctx, call, &mut raws);
    }
    let by_node: std::collections::HashMap<usize, &ProfileCall<'_>> =
        calls.iter().map(|c| (c.node.id(), c)).collect();
    for window in window::find_windows(&ctx, root) {
        let Some(call) = by_node.get(&window.profile.id()).copied() else {
            continue;
        };
        rules::check_step_budget(&ctx, call, &window, &mut raws);
        rules::check_loops(&ctx, call, &window, &mut raws);
        rules::check_compile(&ctx, call, &window, &mut raws);
        rules::check_warmup(&ctx, call, &window, &mut raws);
    }
    let lines: Vec<&str> = source.lines().collect();
    let mut findings: Vec<Finding> = raws
        .into_iter()
        .filter(|r| !suppressed(&lines, r.node.start_position().row, r.code))
        .map(|r| {
            let (line, column) = position(r.node, source);
            Finding {
                path: path.to_owned(),
                line,
                column,
                code: r.code,
                severity: r.code.severity(),
                message: r.message,
                fix: r.fix,
            }
        })
        .collect();
    findings.sort_by_key(|f| (f.line, f.column, f.code));
    findings.dedup();
    findings
}

/// Whether line `row` (0-based) carries `# noqa` (all codes) or `# noqa: NPL001, ...`
/// naming `code`, as in ruff.
fn suppressed(lines: &[&str], row: usize, code: Code) -> bool {
    let Some(line) = lines.get(row) else {
        return false;
    };
    let Some(at) = line.find("# noqa") else {
        return false;
    };
    let rest = &line[at + "# noqa".len()..];
    match rest.strip_prefix(':') {
        Some(codes) => codes
            .split(|c: char| c == ',' || c.is_whitespace())
            .any(|c| c == code.as_str()),
        None => true,
    }
}
