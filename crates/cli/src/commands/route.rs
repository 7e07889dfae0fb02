//! `npuprof route`: decide between the framework's profiler (path A) and an injected one (path B).
//!
//! Output: the human summary is the command's data and goes to stdout (decision first, then the
//! next command, chain, dead paths, configs, evidence); warnings go to stderr. With `--json`
//! the report goes to stdout and nothing to stderr. Exit 0 after any successful scan, whatever
//! the route; 2 when the path is missing or not a directory.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anstyle::{AnsiColor, Style};
use npuprof_repository::engine::SourceLine;
use npuprof_route::{EngineRoute, Route, RouteReport, RunConfig};

use crate::exit::Exit;

/// Arguments of `npuprof route`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Repository to scan [default: the repository holding the current directory].
    #[arg(conflicts_with = "repo")]
    pub path: Option<PathBuf>,
    /// The repository (the same as PATH).
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// Resolve this model's profiling target (with --yaml: for that run config).
    #[arg(long, value_name = "M")]
    pub model: Option<String>,
    /// Run config under models/<M>/config/ (needs --model).
    #[arg(long, value_name = "FILE", requires = "model")]
    pub yaml: Option<String>,
    /// Resolve as an online (PD) run of this role.
    #[arg(long, value_enum, value_name = "ROLE", requires = "model")]
    pub pd_role: Option<crate::args::PdRoleArg>,
    /// Print the result as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Evidence lines shown in the human summary (all of them are in `--json`).
const MAX_HUMAN_EVIDENCE: usize = 40;

/// Scans `path` and returns the report, without printing (for `collect`).
pub fn execute(path: &Path) -> anyhow::Result<RouteReport> {
    Ok(npuprof_route::scan(path)?)
}

/// Runs `npuprof route`.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let target_args = crate::args::TargetArgs {
        repo: args.path.clone().or_else(|| args.repo.clone()),
        model: args.model.clone(),
        yaml: args.yaml.clone(),
        config: None,
        pd_role: args.pd_role,
    };
    if let Some(model) = &args.model {
        let root = target_args.repo_root()?;
        return super::route_target::run(&target_args, &root, model, args.json);
    }
    // A path given is scanned as given (and reported so); none walks up to the repository.
    let root = match target_args.repo.clone() {
        Some(path) => path,
        None => target_args.repo_root()?,
    };
    let report = execute(&root)?;
    if args.json {
        crate::output::print_json_document(&report)?;
    } else {
        let mut out = crate::output::stdout();
        out.write_all(human(&report).as_bytes())?;
        let mut err = anstream::stderr().lock();
        for warning in &report.warnings {
            writeln!(
                err,
                "npuprof: warning: {}: {}",
                warning.path, warning.message
            )?;
        }
    }
    Ok(Exit::Ok)
}

fn yes_no(value: bool) -> &'static str {
    if value { "yes" } else { "no" }
}

fn opt<T: ToString>(value: Option<T>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

fn bool_py(value: Option<bool>) -> String {
    match value {
        Some(true) => "True".to_owned(),
        Some(false) => "False".to_owned(),
        None => "-".to_owned(),
    }
}

/// The human summary: decision first, then the next command, then the details.
fn human(report: &RouteReport) -> String {
    let bold = Style::new().bold();
    let color = match report.route {
        Route::Framework => AnsiColor::Green,
        Route::FrameworkOther => AnsiColor::Cyan,
        Route::Inject => AnsiColor::Yellow,
    };
    let decision = Style::new().bold().fg_color(Some(color.into()));
    let what = match report.route {
        Route::Framework => "use the built-in profiler, change parameters only",
        Route::FrameworkOther => "use the repository's own mechanism through its knobs",
        Route::Inject => "no usable profiler: inject one",
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{decision}route: {} (path {}){decision:#}: {what}",
        report.route.as_str(),
        report.path
    );
    let _ = writeln!(s, "why:   {}", report.reason);
    let _ = writeln!(
        s,
        "definition: {} from {}: {}",
        report.definition.id, report.definition.source, report.definition.why
    );
    match &report.next.command {
        Some(command) => {
            let _ = writeln!(s, "next:  {bold}{command}{bold:#}");
            let _ = writeln!(s, "       {}", report.next.note);
        }
        None => {
            let _ = writeln!(s, "next:  {}", report.next.note);
        }
    }

    if let Some(engine) = &report.engine {
        engine_section(&mut s, engine);
    }
    if let Some(w) = &report.wrapper {
        let factory = match (&w.factory, w.factory_line) {
            (Some(f), Some(line)) => format!(", factory {f} at line {line}"),
            _ => String::new(),
        };
        let _ = writeln!(
            s,
            "\nwrapper: {}:{} {}{factory}",
            w.path, w.class_line, w.class
        );
    }
    if !report.mechanisms.is_empty() {
        let _ = writeln!(s, "\nmechanisms:");
        for m in &report.mechanisms {
            let _ = writeln!(
                s,
                "  {} ({}) in {}",
                m.id.as_str(),
                m.description,
                listed(&m.paths, MAX_PATHS_SHOWN)
            );
            for knob in &m.knobs {
                let _ = writeln!(s, "    knob: {knob}");
            }
        }
    }
    if !report.call_chain.is_empty() {
        let _ = writeln!(s, "\nlive call chain:");
        for link in report.call_chain.iter().take(MAX_CHAIN_SHOWN) {
            let to = link.to.as_ref().map_or_else(
                || "torch_npu".to_owned(),
                |t| format!("{}:{} {}", t.path, t.line, t.function),
            );
            let _ = writeln!(
                s,
                "  {}:{} {}: {} -> {to}",
                link.from.path, link.from.line, link.from.function, link.call
            );
        }
    }
    if report.call_chain.len() > MAX_CHAIN_SHOWN {
        let more = report.call_chain.len() - MAX_CHAIN_SHOWN;
        let _ = writeln!(s, "  ... {more} more (all in --json)");
    }
    if !report.dead_paths.is_empty() {
        let _ = writeln!(s, "\ndead (not live):");
        for dead in &report.dead_paths {
            let _ = writeln!(
                s,
                "  {}:{} {}: {}",
                dead.path, dead.line, dead.function, dead.reason
            );
        }
    }
    configs(&mut s, &report.configs);
    if !report.evidence.is_empty() {
        let _ = writeln!(s, "\nevidence ({}):", report.evidence.len());
        for e in report.evidence.iter().take(MAX_HUMAN_EVIDENCE) {
            let _ = writeln!(
                s,
                "  {}:{} [{}] {}",
                e.path,
                e.line,
                e.kind.as_str(),
                e.text
            );
        }
        if report.evidence.len() > MAX_HUMAN_EVIDENCE {
            let more = report.evidence.len() - MAX_HUMAN_EVIDENCE;
            let _ = writeln!(s, "  ... {more} more (all in --json)");
        }
    }
    if report.route == Route::Inject && !report.entry_candidates.is_empty() {
        let _ = writeln!(
            s,
            "\nentry candidates: {}",
            report.entry_candidates.join(", ")
        );
    }
    skipped_lines(&mut s, &report.skipped);
    let st = &report.stats;
    let _ = writeln!(
        s,
        "\nscanned {} files: {} Python ({} parsed), {} YAML, {} shell; {} warning(s)",
        st.files,
        st.python_files,
        st.python_parsed,
        st.yaml_files,
        st.shell_files,
        report.warnings.len()
    );
    s
}

/// A serving engine's facts, each with the line that proves it.
fn engine_section(s: &mut String, e: &EngineRoute) {
    let d = &e.detected;
    fn at(line: &SourceLine) -> String {
        if line.line == 0 {
            line.path.clone()
        } else {
            format!("{}:{}", line.path, line.line)
        }
    }
    let _ = writeln!(s, "\nengine: {} ({})", d.id, e.summary);
    if let Some(marker) = &d.marker {
        let _ = writeln!(
            s,
            "  install:         {} ({})",
            d.install.as_str(),
            at(marker)
        );
    }
    let facts = [
        (
            "config style",
            d.config_style
                .as_ref()
                .map(|f| (f.value.as_str().to_owned(), &f.evidence)),
        ),
        (
            "level",
            d.level.as_ref().map(|f| (f.value.clone(), &f.evidence)),
        ),
        (
            "AI Core metrics",
            d.aic_metrics
                .as_ref()
                .map(|f| (f.value.clone(), &f.evidence)),
        ),
        (
            "stacks reach",
            d.stack_argument
                .as_ref()
                .map(|f| (f.value.clone(), &f.evidence)),
        ),
    ];
    for (name, fact) in facts {
        match fact {
            Some((value, line)) => {
                let _ = writeln!(
                    s,
                    "  {:<16} {value} ({}: {})",
                    format!("{name}:"),
                    at(line),
                    line.text
                );
            }
            None => {
                let _ = writeln!(s, "  {:<16} not found in the source", format!("{name}:"));
            }
        }
    }
    if d.no_experimental_config {
        let _ = writeln!(
            s,
            "  recorded:        torch_npu's defaults (no experimental config in this version)"
        );
    }
    if let (Some(key), Some(default)) = (&e.stack_key, e.stack_default) {
        let _ = writeln!(
            s,
            "  stack switch:    {key} (on by default: {})",
            yes_no(default)
        );
    }
    if let (Some(key), Some(default)) = (&e.shapes_key, e.shapes_default) {
        let _ = writeln!(
            s,
            "  shapes switch:   {key} (on by default: {})",
            yes_no(default)
        );
    }
    let max_tp = npuprof_repository::engine::EngineDefinition::by_id(&d.id)
        .and_then(|definition| definition.parse.in_engine_max_tp);
    let parse = match (&d.async_parse, max_tp) {
        (Some(line), _) => format!(
            "asynchronous, /stop returns before the output exists ({})",
            at(line)
        ),
        (None, Some(max)) => format!(
            "before the stop returns (TP up to {max}); raw data only above it (daemon workers)"
        ),
        (None, None) => "every rank, before the stop returns".to_owned(),
    };
    let _ = writeln!(s, "  parse:           {parse}");
    if let Some(line) = &d.worker_name {
        let _ = writeln!(s, "  run dirs:        named by rank suffix ({})", at(line));
    }
    if let Some(note) = &e.no_pipe_metrics_note {
        let _ = writeln!(s, "  note: {note}");
    }
    for knob in &e.knobs {
        let _ = writeln!(s, "  knob: {knob}");
    }
    for note in &d.notes {
        let _ = writeln!(s, "  note: {note}");
    }
    for warning in &e.warnings {
        let _ = writeln!(s, "  warning: {warning}");
    }
}

/// Paths listed per mechanism in the text view (all in --json).
const MAX_PATHS_SHOWN: usize = 3;
/// Links of the live call chain in the text view (all in --json).
const MAX_CHAIN_SHOWN: usize = 12;
/// Run configs listed one per line; past this, one line per model (`route --model M` lists a
/// model's, `--json` all of them).
const MAX_CONFIG_ROWS: usize = 20;

/// The first `shown` of `items`, joined, with the rest counted.
fn listed(items: &[String], shown: usize) -> String {
    let mut text = items[..items.len().min(shown)].join(", ");
    if items.len() > shown {
        let _ = write!(text, " and {} more (all in --json)", items.len() - shown);
    }
    text
}

/// The run configs: one line each, or one line per model when there are many.
fn configs(s: &mut String, configs: &[RunConfig]) {
    if configs.is_empty() {
        let _ = writeln!(s, "\nconfigs: none found");
        return;
    }
    if configs.len() > MAX_CONFIG_ROWS {
        per_model(s, configs);
        return;
    }
    let width = configs.iter().map(|c| c.path.len()).max().unwrap_or(0);
    let _ = writeln!(s, "\nconfigs ({}):", configs.len());
    let _ = writeln!(
        s,
        "  {:width$}  profiler  max_new_tokens  next_n  world  prefill  decode  why",
        "path"
    );
    for c in configs {
        if let Some(error) = &c.error {
            let _ = writeln!(s, "  {:width$}  {error}", c.path);
            continue;
        }
        let _ = writeln!(
            s,
            "  {:width$}  {:8}  {:14}  {:6}  {:5}  {:7}  {:6}  {}",
            c.path,
            bool_py(c.enable_profiler),
            opt(c.max_new_tokens),
            opt(c.next_n),
            opt(c.world_size),
            yes_no(c.profilable.prefill),
            yes_no(c.profilable.decode),
            c.profilable.reason
        );
    }
}

/// One line per model: how many of its run configs can record decode, prefill only, or
/// nothing (`route --model M` shows them, `--json` all of them).
fn per_model(s: &mut String, configs: &[RunConfig]) {
    let mut models: std::collections::BTreeMap<&str, [usize; 3]> =
        std::collections::BTreeMap::new();
    for c in configs {
        let model = c.model.as_deref().unwrap_or("(no model)");
        let counts = models.entry(model).or_default();
        let column = match (c.profilable.decode, c.profilable.prefill) {
            (true, _) => 0,
            (false, true) => 1,
            (false, false) => 2,
        };
        counts[column] += 1;
    }
    let width = models.keys().map(|m| m.len()).max().unwrap_or(0).max(5);
    let _ = writeln!(
        s,
        "\nconfigs ({} in {} models; `npuprof route --model M` lists a model's, --json all):",
        configs.len(),
        models.len()
    );
    let _ = writeln!(s, "  {:width$}  decode  prefill only  neither", "model");
    for (model, [decode, prefill, neither]) in &models {
        let _ = writeln!(s, "  {model:width$}  {decode:6}  {prefill:12}  {neither:7}");
    }
}

/// Paths named per reason on one `skipped:` line (the rest counted; all in --json).
const MAX_SKIPPED_SHOWN: usize = 4;

/// One `skipped:` line per reason, in the order the reasons first appear.
fn skipped_lines(s: &mut String, skipped: &[npuprof_route::Skipped]) {
    let mut reasons: Vec<&str> = Vec::new();
    for entry in skipped {
        if !reasons.contains(&entry.reason.as_str()) {
            reasons.push(&entry.reason);
        }
    }
    for reason in reasons {
        let paths: Vec<&str> = skipped
            .iter()
            .filter(|entry| entry.reason == reason)
            .map(|entry| entry.path.as_str())
            .collect();
        let shown = paths[..paths.len().min(MAX_SKIPPED_SHOWN)].join(", ");
        let more = paths.len().saturating_sub(MAX_SKIPPED_SHOWN);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        let _ = writeln!(s, "skipped: {shown}{more}: {reason}");
    }
}
