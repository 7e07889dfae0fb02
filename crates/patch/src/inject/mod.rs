//! Path B, `npuprof inject`: read an entry script (tree-sitter) and render a profiling harness
//! module that calls the entry's model construction, prefill and decode — correct by
//! construction (Level1 + PipeUtilization, NPU+CPU, a closing schedule plus the closing extra
//! `step()`, warm-up outside the window). Pure text in, text out.

mod analyse;
mod diff;
mod render;

use serde::Serialize;

pub use analyse::{BuildFunction, Callee, EntryAnalysis, ForwardCall, Inputs, analyse_entry};
pub use diff::new_file_diff;
pub use render::{WindowPlan, Wiring};

/// Which phases the harness profiles, and how (one timeline or two).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HarnessPhases {
    /// Decode steps only (`active = N`).
    Decode,
    /// One prefill forward (`active = 1`).
    Prefill,
    /// Prefill and decode in one timeline (`active = 1 + N`).
    Both,
    /// Prefill and decode with two profilers and two save paths.
    Separate,
}

/// What to render.
#[derive(Debug, Clone)]
pub struct HarnessOptions<'a> {
    /// The phase mode.
    pub phase: HarnessPhases,
    /// Decode steps recorded (≥ 1).
    pub decode_steps: u32,
    /// The entry script's path relative to the harness's directory, `/`-separated.
    pub entry_rel: &'a str,
    /// The entry's name in comments and messages (its repository-relative path).
    pub entry_display: &'a str,
    /// How to run the harness (its repository-relative path), for the docstring.
    pub harness_display: &'a str,
    /// Add the structure window ([`STRUCTURE_STEPS`] steps with `with_modules=True`, after
    /// the timing windows) for `npuprof breakdown`'s exact mode.
    pub structure: bool,
}

/// The steps of the structure window: short, because the Python tracer it turns on costs host
/// time in every traced call (torch_npu publishes no figure); two decode steps give the
/// module tree twice (or one prefill forward when only prefill is profiled).
pub const STRUCTURE_STEPS: u32 = 2;

/// The directory the structure window writes to, next to the harness and beside the timing
/// windows' `npuprof_prof` (so that verify and summary of those never mix the two).
pub const STRUCTURE_DIR: &str = "npuprof_structure";

/// What the structure window costs, said wherever it is added.
pub const STRUCTURE_COST: &str = "the structure window runs after the timing windows with \
     with_modules=True and record_shapes=True: the Python tracer adds host time to every traced \
     call (torch_npu publishes no figure), so its times are for attribution (`npuprof breakdown`), \
     not for timing; the timing windows keep the guide's settings";

/// The most decode steps a harness records: its windows count `step()` calls (up to 2 more
/// than the steps, in `both` mode) in a `u32`.
pub const MAX_DECODE_STEPS: u32 = u32::MAX - 2;

/// How to run the harness at `harness` (repository-relative): `python3 <harness>`, word by word
/// (a name starting with `-` gets `./`, so python never reads it as an option).
pub fn run_argv(harness: &str) -> Vec<String> {
    vec![
        "python3".to_owned(),
        npuprof_repository::shell::path_arg(harness),
    ]
}

/// Why a harness could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum InjectError {
    /// tree-sitter could not parse the entry at all.
    #[error("the entry script could not be parsed")]
    Unparseable,
    /// The entry has a syntax error.
    #[error("the entry script has a syntax error at line {line}, column {column}")]
    EntrySyntax {
        /// 1-based line.
        line: usize,
        /// 1-based column (bytes).
        column: usize,
    },
    /// `--decode-steps 0`.
    #[error("decode steps must be at least 1")]
    NoDecodeSteps,
    /// More decode steps than the harness's `step()` count can hold.
    #[error(
        "decode steps must be at most {MAX_DECODE_STEPS} (the step() calls, 2 more than the steps, are counted in 32 bits)"
    )]
    TooManyDecodeSteps,
    /// The rendered harness does not parse (a bug in npuprof).
    #[error("internal error: the rendered harness has a syntax error at line {0}")]
    HarnessSyntax(usize),
}

impl npuprof_severity::Classify for InjectError {
    fn classify(&self) -> Option<npuprof_severity::Classified> {
        use npuprof_severity::{Classified, ErrorCode};
        Some(match self {
            InjectError::Unparseable | InjectError::EntrySyntax { .. } => Classified::hinted(
                ErrorCode::InvalidInput,
                "fix the entry script's syntax error first",
            ),
            InjectError::NoDecodeSteps | InjectError::TooManyDecodeSteps => {
                Classified::new(ErrorCode::Usage)
            }
            InjectError::HarnessSyntax(_) => Classified::new(ErrorCode::Internal),
        })
    }
}

/// A rendered harness.
#[derive(Debug, Clone)]
pub struct Harness {
    /// The module text.
    pub text: String,
    /// How each user-code function was filled in.
    pub wiring: Vec<Wiring>,
    /// The profilers it runs.
    pub windows: Vec<WindowPlan>,
}

/// Analyses the entry source and renders the harness; the result is checked to parse.
pub fn render_harness(
    entry_source: &str,
    options: &HarnessOptions<'_>,
) -> Result<Harness, InjectError> {
    if options.decode_steps == 0 {
        return Err(InjectError::NoDecodeSteps);
    }
    if options.decode_steps > MAX_DECODE_STEPS {
        return Err(InjectError::TooManyDecodeSteps);
    }
    let analysis = analyse_entry(entry_source)?;
    let (text, wiring, windows) = render::render(&analysis, options);
    let tree = npuprof_syntax::parse(&text).ok_or(InjectError::Unparseable)?;
    if tree.root_node().has_error() {
        let bad = npuprof_syntax::first_error(tree.root_node());
        return Err(InjectError::HarnessSyntax(
            bad.map_or(1, npuprof_syntax::line),
        ));
    }
    Ok(Harness {
        text,
        wiring,
        windows,
    })
}
