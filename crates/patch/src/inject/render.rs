//! Rendering the harness module text.

use std::fmt::Write as _;

use serde::Serialize;

use super::analyse::{Callee, EntryAnalysis};
use super::{HarnessOptions, HarnessPhases};

/// How one user-code function of the harness was filled in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Wiring {
    /// `build_model`, `make_prefill_inputs`, `run_prefill` or `run_decode_step`.
    pub function: &'static str,
    /// `true`: calls the entry's code; `false`: a stub that raises `NotImplementedError`.
    pub wired: bool,
    /// The entry line it was wired to (or the closest evidence for a stub).
    pub entry_line: Option<usize>,
    /// What it calls, or what the user must fill in.
    pub detail: String,
}

/// One profiler of the harness.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WindowPlan {
    /// `prefill`, `decode` or `both`.
    pub name: &'static str,
    /// The subdirectory of the save path it writes to (empty for the structure window, which
    /// writes to [`super::STRUCTURE_DIR`]).
    pub save_subdir: &'static str,
    /// The schedule's `active`.
    pub active: u32,
    /// The `prof.step()` calls the harness makes: `active` + the closing extra step.
    pub step_calls: u32,
    /// Whether it records `nn.Module` events (`with_modules=True`, the structure window).
    pub with_modules: bool,
}

/// One function of the user-code section: its Python text and how it was filled in.
struct UserFunction {
    python: String,
    wiring: Wiring,
}

fn wired(
    function: &'static str,
    signature: &str,
    doc: &str,
    body: &str,
    line: Option<usize>,
    detail: String,
) -> UserFunction {
    UserFunction {
        python: format!("def {signature}:\n    \"\"\"{doc}\"\"\"\n    {body}\n"),
        wiring: Wiring {
            function,
            wired: true,
            entry_line: line,
            detail,
        },
    }
}

fn stub(
    function: &'static str,
    signature: &str,
    doc: &str,
    what: &str,
    line: Option<usize>,
) -> UserFunction {
    let escaped = what.replace('\\', "\\\\").replace('"', "\\\"");
    UserFunction {
        python: format!(
            "def {signature}:\n    \"\"\"{doc}\"\"\"\n    # npuprof: FILL IN: {what}\n    raise NotImplementedError(\"npuprof: fill in {function}(): {escaped}\")\n"
        ),
        wiring: Wiring {
            function,
            wired: false,
            entry_line: line,
            detail: format!("stub: {what}"),
        },
    }
}

fn call_text(callee: &Callee, argument: &str) -> String {
    let sep = if argument.is_empty() { "" } else { ", " };
    match callee {
        Callee::Method(name) => format!("model.{name}({argument})"),
        Callee::Direct => format!("model({argument})"),
        Callee::Function(name) => format!("entry.{name}(model{sep}{argument})"),
    }
}

/// The four user-code functions of the harness, each wired to the entry where it could be.
fn user_functions(
    analysis: &EntryAnalysis,
    entry: &str,
    phase: HarnessPhases,
) -> Vec<UserFunction> {
    let importable = analysis.importable.is_ok();
    let not_imported = analysis
        .importable
        .as_ref()
        .err()
        .cloned()
        .unwrap_or_default();
    vec![
        build_model(analysis, entry, importable, &not_imported),
        make_prefill_inputs(analysis, entry, importable),
        run_prefill(analysis, entry, importable),
        run_decode_step(analysis, entry, importable, phase),
    ]
}

/// The `build_model` function: the entry's model-construction function when it takes no arguments.
fn build_model(
    analysis: &EntryAnalysis,
    entry: &str,
    importable: bool,
    not_imported: &str,
) -> UserFunction {
    let build_doc = "Construct and return the model (weights loaded, on the NPU).";
    match &analysis.build {
        Some(b) if importable && b.required_params.is_empty() => wired(
            "build_model",
            "build_model()",
            build_doc,
            &format!("return entry.{}()", b.name),
            Some(b.line),
            format!("entry.{}()", b.name),
        ),
        Some(b) if importable => stub(
            "build_model",
            "build_model()",
            build_doc,
            &format!(
                "call entry.{}(...) from {entry}:{} with its arguments ({})",
                b.name,
                b.line,
                b.required_params.join(", ")
            ),
            Some(b.line),
        ),
        Some(b) => stub(
            "build_model",
            "build_model()",
            build_doc,
            &format!(
                "construct the model as {}() in {entry}:{} does ({not_imported})",
                b.name, b.line
            ),
            Some(b.line),
        ),
        None => stub(
            "build_model",
            "build_model()",
            build_doc,
            &format!(
                "construct and return the model (no model-construction function found in {entry})"
            ),
            None,
        ),
    }
}

/// The `make_prefill_inputs` function: the entry's prefill input expression.
fn make_prefill_inputs(analysis: &EntryAnalysis, entry: &str, importable: bool) -> UserFunction {
    let inputs_doc = "Return the input of the prefill forward (e.g. the prompt token ids).";
    let prefill_line = analysis.prefill.as_ref().map(|p| p.line);
    match (&analysis.inputs, importable) {
        (Some(Ok(inputs)), true) => {
            let detail = if inputs.name.is_empty() {
                "the prefill call takes no input".to_owned()
            } else {
                format!("`{} = ...` from {entry}:{}", inputs.name, inputs.line)
            };
            wired(
                "make_prefill_inputs",
                "make_prefill_inputs()",
                inputs_doc,
                &format!("return {}", inputs.expression),
                Some(inputs.line),
                detail,
            )
        }
        (Some(Err(why)), true) => stub(
            "make_prefill_inputs",
            "make_prefill_inputs()",
            inputs_doc,
            &format!("build the prefill input as {entry} does ({why})"),
            prefill_line,
        ),
        _ => stub(
            "make_prefill_inputs",
            "make_prefill_inputs()",
            inputs_doc,
            "build and return the prefill input",
            prefill_line,
        ),
    }
}

/// The `run_prefill` function: the entry's prefill call.
fn run_prefill(analysis: &EntryAnalysis, entry: &str, importable: bool) -> UserFunction {
    let prefill_doc =
        "Run one prefill forward; return the decode state (e.g. the next tokens, KV cache).";
    match (&analysis.prefill, &analysis.inputs, importable) {
        (Some(p), Some(Ok(inputs)), true) => {
            let argument = if inputs.name.is_empty() { "" } else { "inputs" };
            let call = call_text(&p.callee, argument);
            wired(
                "run_prefill",
                "run_prefill(model, inputs)",
                prefill_doc,
                &format!("return {call}"),
                Some(p.line),
                format!("{call} (from `{}` at {entry}:{})", p.source, p.line),
            )
        }
        (Some(p), _, _) => stub(
            "run_prefill",
            "run_prefill(model, inputs)",
            prefill_doc,
            &format!(
                "run one prefill forward as `{}` at {entry}:{} does",
                p.source, p.line
            ),
            Some(p.line),
        ),
        (None, _, _) => stub(
            "run_prefill",
            "run_prefill(model, inputs)",
            prefill_doc,
            &format!("run one prefill forward (no prefill call found in {entry})"),
            None,
        ),
    }
}

/// The `run_decode_step` function: the entry's decode call.
fn run_decode_step(
    analysis: &EntryAnalysis,
    entry: &str,
    importable: bool,
    phase: HarnessPhases,
) -> UserFunction {
    let decode_doc = "Run one decode forward from `state`; return the next state.";
    let uses_decode = phase != HarnessPhases::Prefill;
    match (&analysis.decode, importable) {
        (Some(d), true) => {
            let call = call_text(&d.callee, "state");
            wired(
                "run_decode_step",
                "run_decode_step(model, state)",
                decode_doc,
                &format!("return {call}"),
                Some(d.line),
                format!("{call} (from `{}` at {entry}:{})", d.source, d.line),
            )
        }
        (Some(d), false) => stub(
            "run_decode_step",
            "run_decode_step(model, state)",
            decode_doc,
            &format!(
                "run one decode forward as `{}` at {entry}:{} does",
                d.source, d.line
            ),
            Some(d.line),
        ),
        (None, _) => {
            let why = analysis
                .decode_note
                .clone()
                .unwrap_or_else(|| format!("no decode loop found in {entry}"));
            let what = format!("run one decode forward and return the next state ({why})");
            let mut f = stub(
                "run_decode_step",
                "run_decode_step(model, state)",
                decode_doc,
                &what,
                None,
            );
            if !uses_decode {
                f.wiring.detail = format!("stub (not called in prefill mode): {what}");
            }
            f
        }
    }
}

/// The profilers of a phase mode, the structure window last when asked for.
pub(super) fn windows(phase: HarnessPhases, decode_steps: u32, structure: bool) -> Vec<WindowPlan> {
    let plan = |name, active: u32, step_calls: u32| WindowPlan {
        name,
        save_subdir: name,
        active,
        step_calls,
        with_modules: false,
    };
    let prefill = plan("prefill", 1, 2);
    let decode = plan("decode", decode_steps, decode_steps + 1);
    let mut out = match phase {
        HarnessPhases::Decode => vec![decode],
        HarnessPhases::Prefill => vec![prefill],
        HarnessPhases::Both => vec![plan("both", 1 + decode_steps, decode_steps + 2)],
        HarnessPhases::Separate => vec![prefill, decode],
    };
    if structure {
        // Prefill only: the structure of a prefill forward; else of decode steps.
        let active = if phase == HarnessPhases::Prefill {
            1
        } else {
            super::STRUCTURE_STEPS
        };
        out.push(WindowPlan {
            with_modules: true,
            save_subdir: "",
            ..plan("structure", active, active + 1)
        });
    }
    out
}

fn window_text(out: &mut String, window: &WindowPlan) {
    let (active, what, body) = match window.name {
        "prefill" => (
            "PREFILL_ACTIVE",
            "1 prefill forward".to_owned(),
            PREFILL_BODY,
        ),
        "decode" => (
            "DECODE_STEPS",
            "{DECODE_STEPS} decode step(s)".to_owned(),
            DECODE_BODY,
        ),
        "structure" if window.active == 1 => (
            "1",
            "the model's structure (with_modules=True): 1 prefill forward".to_owned(),
            PREFILL_BODY,
        ),
        "structure" => (
            "STRUCTURE_STEPS",
            "the model's structure (with_modules=True): {STRUCTURE_STEPS} decode step(s)"
                .to_owned(),
            STRUCTURE_BODY,
        ),
        _ => (
            "1 + DECODE_STEPS",
            "1 prefill forward + {DECODE_STEPS} decode step(s) in one timeline".to_owned(),
            BOTH_BODY,
        ),
    };
    let tracer = if window.with_modules {
        "with_stack=False,\n        with_modules=True,\n        record_shapes=True,"
    } else {
        "with_stack=False,\n        record_shapes=False,"
    };
    let name = window.name;
    let path = if window.with_modules {
        "STRUCTURE_PATH".to_owned()
    } else {
        format!("os.path.join(SAVE_PATH, \"{}\")", window.save_subdir)
    };
    let _ = write!(
        out,
        r#"
    {name}_path = {path}
    print(f"npuprof: profiling {what}; output: {{{name}_path}}", flush=True)
    steps = 0
    with torch_npu.profiler.profile(
        activities=[
            torch_npu.profiler.ProfilerActivity.NPU,
            torch_npu.profiler.ProfilerActivity.CPU,
        ],
        {tracer}
        profile_memory=False,
        experimental_config=experimental_config,
        schedule=torch_npu.profiler.schedule(wait=0, warmup=0, active={active}, repeat=1, skip_first=0),
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler({name}_path),
    ) as prof:
{body}        # The closing extra step: one more than the schedule needs (the usual margin); the
        # window is already saved, and past its last cycle the profiler records nothing more.
        prof.step()
        steps += 1
    _check_step_budget("{name}", steps, active={active})
"#,
    );
}

const PREFILL_BODY: &str = "        state = run_prefill(model, inputs)
        prof.step()
        steps += 1
";

const DECODE_BODY: &str = "        for _ in range(DECODE_STEPS):
            state = run_decode_step(model, state)
            prof.step()
            steps += 1
";

const STRUCTURE_BODY: &str = "        for _ in range(STRUCTURE_STEPS):
            state = run_decode_step(model, state)
            prof.step()
            steps += 1
";

const BOTH_BODY: &str = "        state = run_prefill(model, inputs)
        prof.step()
        steps += 1
        for _ in range(DECODE_STEPS):
            state = run_decode_step(model, state)
            prof.step()
            steps += 1
";

fn module_name(entry_file: &str) -> String {
    let stem = entry_file.rsplit('/').next().unwrap_or(entry_file);
    let stem = stem.strip_suffix(".py").unwrap_or(stem);
    let valid = !stem.is_empty()
        && stem.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !stem.starts_with(|c: char| c.is_ascii_digit());
    if valid {
        stem.to_owned()
    } else {
        "npuprof_entry".to_owned()
    }
}

/// `text` escaped for the inside of a Python string literal (`"…"` or `'…'`), docstring or
/// comment: backslashes and quotes escaped, control characters (a newline ends a comment, `\x41`
/// written literally would be read as `A`) as `\xNN`/`\uNNNN` escapes; other characters kept.
pub(super) fn py_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' | '"' | '\'' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') => {
                let code = u32::from(c);
                let _ = if code <= 0xff {
                    write!(out, "\\x{code:02x}")
                } else {
                    write!(out, "\\u{code:04x}")
                };
            }
            c => out.push(c),
        }
    }
    out
}

/// Renders the harness; returns its text and how each user function was filled in.
pub(super) fn render(
    analysis: &EntryAnalysis,
    options: &HarnessOptions<'_>,
) -> (String, Vec<Wiring>, Vec<WindowPlan>) {
    // File names are the repository's: escaped before they go into comments, docstrings and
    // string literals (a newline would end a comment, a quote a string).
    let entry = &py_escape(options.entry_display);
    let run = py_escape(&npuprof_repository::shell::join(&super::run_argv(
        options.harness_display,
    )));
    let functions = user_functions(analysis, entry, options.phase);
    let windows = windows(options.phase, options.decode_steps, options.structure);
    let mode = match options.phase {
        HarnessPhases::Decode => format!("decode: {} steps", options.decode_steps),
        HarnessPhases::Prefill => "prefill: 1 forward".to_owned(),
        HarnessPhases::Both => format!(
            "both: 1 prefill + {} decode steps in one timeline",
            options.decode_steps
        ),
        HarnessPhases::Separate => format!(
            "separate: 1 prefill and {} decode steps, two profilers",
            options.decode_steps
        ),
    };
    let outputs = windows
        .iter()
        .map(|w| {
            if w.with_modules {
                super::STRUCTURE_DIR.to_owned()
            } else {
                format!("npuprof_prof/{}", w.save_subdir)
            }
        })
        .collect::<Vec<_>>()
        .join(" and ");
    let stubs = functions.iter().filter(|f| !f.wiring.wired).count();
    let mut out = String::new();
    let _ = write!(
        out,
        r#""""Profiling harness for {entry}, written by `npuprof inject` ({mode}).

Run:    {run}
Output: {outputs} next to this file (check it with `npuprof verify`).
Undo:   `npuprof revert` removes this file.

The profiler is set up right by construction: Level1 + PipeUtilization, NPU and CPU
activities, a schedule whose window closes plus the closing extra step(), a
tensorboard_trace_handler, and one warm-up forward per phase before the window.
Edit only the user-code section{stub_note}.
"""
import importlib.util
import os
import sys

import torch_npu

DECODE_STEPS = {steps}
{prefill_active}{structure_steps}HERE = os.path.dirname(os.path.abspath(__file__))
SAVE_PATH = os.path.join(HERE, "npuprof_prof")
{structure_path}
"#,
        steps = options.decode_steps,
        prefill_active = if windows.iter().any(|w| w.name == "prefill") {
            "PREFILL_ACTIVE = 1\n"
        } else {
            ""
        },
        structure_path = if windows.iter().any(|w| w.with_modules) {
            format!(
                "# The structure window (with_modules=True) writes beside the timing windows.\nSTRUCTURE_PATH = os.path.join(HERE, \"{}\")\n",
                super::STRUCTURE_DIR
            )
        } else {
            String::new()
        },
        structure_steps = if windows.iter().any(|w| w.with_modules && w.active > 1) {
            format!("STRUCTURE_STEPS = {}\n", super::STRUCTURE_STEPS)
        } else {
            String::new()
        },
        stub_note = if stubs > 0 {
            format!(": {stubs} function(s) there are stubs marked `npuprof: FILL IN`")
        } else {
            String::new()
        },
    );
    out.push_str("# ---- user code: the entry script's pieces, wired in by npuprof ----\n\n");
    match &analysis.importable {
        Ok(()) => {
            let _ = write!(
                out,
                r#"
def _load_entry():
    """Import {entry} as a module (its `if __name__ == "__main__":` block does not run)."""
    path = os.path.normpath(os.path.join(HERE, "{rel}"))
    sys.path.insert(0, os.path.dirname(path))
    spec = importlib.util.spec_from_file_location("{module}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


entry = _load_entry()
"#,
                rel = py_escape(options.entry_rel),
                module = module_name(options.entry_rel),
            );
        }
        Err(reason) => {
            let _ = writeln!(out, "# npuprof: {entry} is not imported: {reason}.");
        }
    }
    if !analysis.entry_args.is_empty() {
        let fields = analysis
            .entry_args
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = write!(
            out,
            "\n# The command-line defaults of {entry}.\nENTRY_ARGS = types.SimpleNamespace({fields})\n"
        );
    }
    for f in &functions {
        out.push_str("\n\n");
        out.push_str(&f.python);
    }
    out.push_str("\n\n# ---- profiling: correct by construction, no need to edit below ----\n");
    out.push_str(CHECK_BUDGET);
    let uses_decode = options.phase != HarnessPhases::Prefill;
    out.push_str(
        "\n\ndef main():\n    model = build_model()\n    inputs = make_prefill_inputs()\n    # Warm-up outside the profiler: graph compilation, JIT and first-call allocation happen here.\n    state = run_prefill(model, inputs)\n",
    );
    if uses_decode {
        out.push_str("    state = run_decode_step(model, state)\n");
    }
    out.push_str(
        "\n    experimental_config = torch_npu.profiler._ExperimentalConfig(\n        profiler_level=torch_npu.profiler.ProfilerLevel.Level1,\n        aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,\n    )\n",
    );
    for window in &windows {
        window_text(&mut out, window);
    }
    out.push_str("    print(f\"npuprof: done; check the output with: npuprof verify {SAVE_PATH}\", flush=True)\n");
    if windows.iter().any(|w| w.with_modules) {
        out.push_str("    print(f\"npuprof: the module tree: npuprof breakdown {STRUCTURE_PATH}\", flush=True)\n");
    }
    out.push_str("\n\nif __name__ == \"__main__\":\n    main()\n");
    if !analysis.entry_args.is_empty() {
        out = out.replacen("import sys\n", "import sys\nimport types\n", 1);
    }
    (
        out,
        functions.into_iter().map(|f| f.wiring).collect(),
        windows,
    )
}

const CHECK_BUDGET: &str = r#"

def _check_step_budget(window, steps, active):
    """schedule(wait=0, warmup=0, active, repeat=1, skip_first=0) closes after `active` step()
    calls; the harness makes one more (the closing step). Anything else is a harness bug."""
    expected = active + 1
    if steps != expected:
        raise RuntimeError(
            f"npuprof: the {window} window called prof.step() {steps} time(s), "
            f"expected {expected} (active={active} + 1 closing step)"
        )
    print(f"npuprof: {window} window closed after {steps} step() calls", flush=True)
"#;
