//! npuprof-lint: static checks of Python code that uses `torch_npu.profiler` (or
//! `torch.profiler`) for the mistakes that spoil a profile. Reads files; never writes.
//!
//! The rules are listed once, in [`RULES`] (`docs/lint-rules.md`'s table is generated from it). Values
//! are read the way the script's author wrote them (constants, tuple unpacking, argparse and
//! parameter defaults, `self.x` attributes, `range`/`while` loops, helpers that step the
//! profiler); what cannot be resolved is reported as such (NPL019), never guessed.
//!
//! A finding is suppressed by `# noqa` (every code) or `# noqa: NPL001, NPL004` on the line it
//! points at, as in ruff.

mod autofix;
mod device;
mod finding;
mod fix;
mod profile;
mod python;
mod registry;
mod rules;
mod steps;
pub mod torch_npu;
mod walk;
mod warmup;
mod window;

pub use autofix::{FixError, Fixed, fix_source};
pub use finding::Finding;
pub use registry::{Code, RULES, Rule, Severity, markdown_table};
pub use walk::{FileFix, LintError, Report, SCHEMA_VERSION, fix_paths, lint_paths, python_files};

use npuprof_syntax::{SemanticModel, first_error, named_children, parse};

use crate::profile::{FileContext, ProfileCall};
use crate::python::position;
use crate::rules::Raw;
use crate::warmup::Warmups;

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
            edits: Vec::new(),
        }];
    };
    let root = tree.root_node();
    let ctx = FileContext {
        source,
        exports_results: torch_npu::TRACE_HANDLER_ALTERNATIVES
            .iter()
            .any(|m| source.contains(&format!("{m}("))),
        semantic: SemanticModel::new(root, source),
        warmups: Warmups::default(),
    };
    let mut raws: Vec<Raw<'_>> = Vec::new();
    if root.has_error() {
        let node = first_error(root).unwrap_or(root);
        raws.push(Raw {
            node,
            code: Code::SyntaxError,
            message: "syntax error: the file is not valid Python here; the checks of this file may be incomplete".to_owned(),
            fix: "fix the syntax error (e.g. `python3 -m py_compile <file>` shows it)".to_owned(),
            edits: Vec::new(),
        });
    }
    let mut calls = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if let Some(flavor) = ctx.profile_flavor(node) {
            calls.push(ProfileCall::read(&ctx, node, flavor, None));
        }
        stack.extend(named_children(node));
    }
    calls.sort_by_key(|c| c.node.start_byte());
    for call in &calls {
        rules::check_configuration(&ctx, call, &mut raws);
    }
    for window in window::find_windows(&ctx, root) {
        let Some(flavor) = ctx.profile_flavor(window.profile) else {
            continue;
        };
        // The window's own reading: a profiler built by a local function takes the
        // arguments of the call that built it.
        let call = ProfileCall::read(&ctx, window.profile, flavor, window.frame);
        rules::check_step_budget(&ctx, &call, &window, &mut raws);
        rules::check_loops(&ctx, &call, &window, &mut raws);
        rules::check_compile(&ctx, &call, &window, &mut raws);
        rules::check_warmup(&ctx, &call, &window, &mut raws);
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
                edits: r.edits,
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
