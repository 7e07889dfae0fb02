//! Following the run from a model's own `infer.py` (which the launcher runs instead of the
//! shared engine's entry when it exists) to the code that really builds its profiler: a hand-over
//! to the shared engine's entry reached for this run config (family A), the legacy runner
//! imported by the model's code (family B), or neither — then npuprof cannot show which profiler
//! the run creates and refuses, saying what it found.

use std::path::Path;

use npuprof_syntax::semantic::imports::import_bindings;
use npuprof_syntax::semantic::value::{Evaluator, Module, Value};
use npuprof_syntax::{callee, descendants, line, text};

use crate::definition::{Definitions, LauncherKind};
use crate::error::TargetError;
use crate::resolve::Evidence;

/// Where a model's own entry leads for one run config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Entry {
    /// It calls the shared engine's entry for this config (the shared engine's shape).
    Shared(Evidence),
    /// Its code imports the legacy runner (the legacy runner's shape).
    Legacy(Evidence),
}

impl Entry {
    /// The launcher whose shape the run uses.
    pub(crate) fn shape_launcher(&self) -> LauncherKind {
        match self {
            Entry::Shared(_) => LauncherKind::Shared,
            Entry::Legacy(_) => LauncherKind::Model,
        }
    }

    /// The step of the chain it found.
    pub(crate) fn evidence(&self) -> &Evidence {
        match self {
            Entry::Shared(e) | Entry::Legacy(e) => e,
        }
    }
}

/// The run config as a Python value (what `yaml.safe_load` returns).
fn python_value(value: &yaml_serde::Value) -> Value {
    match value {
        yaml_serde::Value::Null => Value::None,
        yaml_serde::Value::Bool(b) => Value::Bool(*b),
        yaml_serde::Value::Number(n) => n.as_i64().map_or_else(
            || Value::Unknown(n.to_string()),
            |value| Value::Int { value, at: 0..0 },
        ),
        yaml_serde::Value::String(s) => Value::Str(s.clone()),
        yaml_serde::Value::Sequence(items) => {
            Value::Tuple(items.iter().map(python_value).collect())
        }
        yaml_serde::Value::Mapping(map) => Value::Dict(
            map.iter()
                .filter_map(|(k, v)| k.as_str().map(|k| (k.to_owned(), python_value(v))))
                .collect(),
        ),
        other => Value::Unknown(format!("{other:?}")),
    }
}

/// The dotted module of a repository-relative `.py` path.
fn module_of(path: &str) -> String {
    path.trim_end_matches(".py").replace('/', ".")
}

/// Follows `models/<model>/infer.py` for the run config `config`.
pub(crate) fn follow(
    definitions: &Definitions,
    repo: &Path,
    model: &str,
    config: &yaml_serde::Value,
    python_files: &[String],
) -> Result<Entry, TargetError> {
    let rel = definitions.layout.model_entry_path(model);
    let source = crate::resolve::read(repo, &rel)?;
    let tree = npuprof_syntax::parse(&source).ok_or_else(|| TargetError::PythonSyntax {
        path: rel.clone(),
        line: 1,
    })?;
    let root = tree.root_node();
    let module = Module::read(root, &source);
    let run_config = python_value(config);
    let markers = &definitions.markers;
    let ev = Evaluator {
        run_config: Some(&run_config),
        loaders: &markers.config_loaders,
        ..Evaluator::new(&module, &source)
    };
    let shared = module_of(&markers.shared_entry);
    let mut undecided = Vec::new();
    for (function, call) in calls_of_imported(root, &source, &shared) {
        let reached = match function {
            Some(f) => ev.reaches(f, call, Vec::new()),
            None => Some(true),
        };
        match reached {
            Some(true) => {
                return Ok(Entry::Shared(Evidence {
                    what: format!(
                        "the model's infer.py hands this run config to the shared engine ({shared})"
                    ),
                    path: rel,
                    line: line(call),
                }));
            }
            Some(false) => {}
            None => undecided.push(line(call)),
        }
    }
    if !undecided.is_empty() {
        return Err(TargetError::Shape(format!(
            "{rel}:{} may hand the run to the shared engine ({shared}), but npuprof cannot tell \
             whether it does for this run config (the condition on the way is not a value of the \
             config); it refuses rather than patch a file the run may not execute",
            undecided[0]
        )));
    }
    let legacy = definitions
        .shape_for(LauncherKind::Model)
        .and_then(|s| s.factory_files.first())
        .map(|f| module_of(f));
    let mut drives = Vec::new();
    for file in python_files {
        let Ok(text_) = crate::resolve::read(repo, file) else {
            continue;
        };
        if let Some(legacy) = &legacy
            && let Some(at) = import_line(&text_, legacy)
        {
            return Ok(Entry::Legacy(Evidence {
                what: format!("the model's code imports the legacy runner ({legacy})"),
                path: file.clone(),
                line: at,
            }));
        }
        let call = format!(".{}(", markers.phase_method);
        if let Some(i) = text_.find(&call) {
            drives.push(format!("{file}:{}", text_[..i].lines().count().max(1)));
        }
    }
    if !drives.is_empty() {
        return Err(TargetError::Shape(format!(
            "for this run config {rel} does not hand the run to the shared engine; the model's own \
             loop drives the engine's profiler manager itself ({} at {}), so its phases and the \
             number of decode steps are set by that loop (per-request token budgets, EOS), which \
             npuprof cannot prove; it refuses to patch (the shared factory's window is what that \
             loop would record: see `npuprof route --model {model}` on a text config)",
            markers.phase_method,
            drives.join(", ")
        )));
    }
    Err(TargetError::Shape(format!(
        "{rel} runs the model's own loop: it neither hands this run config to the shared engine \
         ({shared}) nor reaches the legacy runner{}, and no other profiler call of the model was \
         found; its profiler switch is read by nothing npuprof can set (profile it with \
         `npuprof inject` on {rel})",
        legacy.map(|l| format!(" ({l})")).unwrap_or_default()
    )))
}

/// Line of `from <module> import ...` / `import <module>` in `source`.
fn import_line(source: &str, module: &str) -> Option<usize> {
    source
        .lines()
        .position(|l| {
            let l = l.trim_start();
            l.strip_prefix("from ")
                .and_then(|r| r.strip_prefix(module))
                .is_some_and(|r| r.starts_with(" import"))
                || l.strip_prefix("import ")
                    .is_some_and(|r| r.split([' ', ',']).next() == Some(module))
        })
        .map(|i| i + 1)
}

/// Calls of names imported from `module` (`from module import main as x` … `x()`), each with
/// the function holding the import (`None` at module level).
fn calls_of_imported<'t>(
    root: tree_sitter::Node<'t>,
    source: &str,
    module: &str,
) -> Vec<(Option<tree_sitter::Node<'t>>, tree_sitter::Node<'t>)> {
    let mut out = Vec::new();
    for import in descendants(root).into_iter().filter(|n| {
        n.kind() == "import_from_statement"
            && n.child_by_field_name("module_name")
                .map(|m| text(m, source))
                == Some(module)
    }) {
        let function = std::iter::successors(import.parent(), |n| n.parent())
            .find(|n| n.kind() == "function_definition");
        let names: Vec<String> = import_bindings(import, source)
            .into_iter()
            .map(|b| b.local)
            .collect();
        let scope = function.unwrap_or(root);
        for call in descendants(scope)
            .into_iter()
            .filter(|n| n.kind() == "call")
        {
            if callee(call, source).is_some_and(|c| names.contains(&c)) {
                out.push((function, call));
            }
        }
    }
    out
}
