//! A serving engine's checkout or installed package, recognised through its definition
//! (`npuprof_repository::engine`): which config style the version takes, the level and metrics
//! it hard-codes, which setting really switches stacks, who parses, and the collect command.

use serde::Serialize;

use npuprof_repository::engine::{
    ConfigStyle, Detected, EngineDefinition, InstallKind, VersionFacts,
};

use crate::report::Next;

/// A serving engine found at the scanned root (`route --json`'s `engine`): what its source
/// proves (each fact with its line), and what follows from the definition.
#[derive(Debug, Clone, Serialize)]
pub struct EngineRoute {
    /// What the source proves: `id`, `install`, `marker`, `config_style`, `level`,
    /// `aic_metrics`, `stack_argument`, `async_parse`, `worker_name`, `notes`.
    #[serde(flatten)]
    pub detected: Detected,
    /// What it is.
    pub summary: String,
    /// Whether those metrics collect pipe utilisation (`null` when unknown).
    pub pipe_metrics: Option<bool>,
    /// Why they do not, and how to get them.
    pub no_pipe_metrics_note: Option<String>,
    /// The setting that switches call stacks in this style (`null` when this version does not
    /// read it).
    pub stack_key: Option<String>,
    /// Whether stacks are on when the user sets nothing.
    pub stack_default: Option<bool>,
    /// The setting that switches shape recording (request style), when the style has one.
    pub shapes_key: Option<String>,
    /// Whether shapes are recorded when the user sets nothing.
    pub shapes_default: Option<bool>,
    /// What to set to profile this version (by hand; collect sets it).
    pub knobs: Vec<String>,
    /// What excludes or changes a capture of this version: modes that exclude the torch
    /// profiler, an installed pair that disagrees, run-directory prefixes, PD deployments.
    pub warnings: Vec<String>,
}

impl EngineRoute {
    /// The engine at `root`, when a definition recognises it.
    pub(crate) fn find(root: &std::path::Path) -> Option<Self> {
        let detected = npuprof_repository::engine::detect(root)?;
        let definition = EngineDefinition::by_id(&detected.id)?;
        Some(Self::new(definition, detected))
    }

    fn new(definition: &EngineDefinition, detected: Detected) -> Self {
        let facts: Option<VersionFacts> = detected.facts(definition);
        let style = detected
            .config_style
            .as_ref()
            .and_then(|s| definition.style(s.value));
        // The stack setting, when this version reads it.
        let stack = style.filter(|_| detected.stack_argument.is_some());
        Self {
            summary: definition.summary.clone(),
            pipe_metrics: detected
                .aic_metrics
                .as_ref()
                .and_then(|m| definition.metrics_def(&m.value))
                .map(|m| m.pipe_metrics),
            no_pipe_metrics_note: facts
                .as_ref()
                .and_then(|f| definition.no_pipe_metrics_note(&f.metrics)),
            stack_key: stack.map(|s| s.stack_key().to_owned()),
            stack_default: stack.map(|s| s.stack_default),
            knobs: style
                .map(|s| knobs(definition, s.style))
                .unwrap_or_default(),
            shapes_key: style.and_then(|s| s.body.as_ref().map(|b| b.shapes.clone())),
            shapes_default: style.and_then(|s| s.shapes_default),
            warnings: warnings(definition, &detected),
            detected,
        }
    }

    /// One sentence saying what was found.
    pub(crate) fn reason(&self) -> String {
        let d = &self.detected;
        let install = match d.install {
            InstallKind::Installed => "installed package",
            other => other.as_str(),
        };
        let style = d.config_style.as_ref().map_or_else(
            || "config style undecided".to_owned(),
            |s| {
                format!(
                    "{} style ({}:{})",
                    s.value.as_str(),
                    s.evidence.path,
                    s.evidence.line
                )
            },
        );
        let hard_coded = match (&d.level, &d.aic_metrics) {
            (Some(l), Some(m)) => format!(
                "; it hard-codes {} + {} ({}:{})",
                l.value, m.value, m.evidence.path, m.evidence.line
            ),
            (None, Some(m)) => format!(
                "; it hard-codes AI Core metrics {} ({}:{})",
                m.value, m.evidence.path, m.evidence.line
            ),
            _ => String::new(),
        };
        format!("{} {install}: {style}{hard_coded}", d.id)
    }

    /// The next step: collect with this engine around the user's serve command.
    pub(crate) fn next(&self) -> Next {
        let definition = EngineDefinition::by_id(&self.detected.id);
        let words: Vec<String> = definition
            .map(|d| {
                d.collect_command
                    .iter()
                    .chain(&d.serve_command)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let mut note = "start the server with the profiler configured, warm it up, record a window \
                        of requests, wait for every rank's output, parse and verify it (put your \
                        own serve command after `--`; `npuprof plan --engine` first to size the window)"
            .to_owned();
        if self.detected.config_style.is_none() {
            note.push_str("; the config style is undecided here: see the notes");
        }
        Next::text(Some(npuprof_repository::shell::join(&words)), note)
    }
}

/// What excludes or changes a capture of the version `detected` shows.
fn warnings(definition: &EngineDefinition, detected: &Detected) -> Vec<String> {
    let mut out: Vec<String> = detected
        .exclusive_modes
        .iter()
        .filter_map(|found| {
            let mode = definition
                .exclusive_modes
                .iter()
                .find(|m| m.name == found.value)?;
            Some(format!(
                "{} ({}:{}): {}",
                mode.name, found.evidence.path, found.evidence.line, mode.note
            ))
        })
        .collect();
    out.extend(detected.host_mismatch(definition));
    if let Some(line) = &detected.run_prefix {
        out.push(format!(
            "this version takes a prefix for its run directories ({}:{}): they are named <prefix>_{}_<timestamp>{} (later starts reuse the first name)",
            line.path,
            line.line,
            definition.worker_name_shape.as_deref().unwrap_or("<worker>"),
            definition.results.run_dir_suffix
        ));
    }
    if let (Some(pd), Some(proxy)) = (&definition.pd, &detected.pd_proxy) {
        out.push(format!("PD disaggregation ({proxy}): {}", pd.note));
    }
    out
}

/// What to set for `style`, by hand.
pub(crate) fn knobs(definition: &EngineDefinition, style: ConfigStyle) -> Vec<String> {
    let Some(s) = definition.style(style) else {
        return Vec::new();
    };
    let http = &definition.http;
    let control = format!("POST {} and {} on the server", http.start, http.stop);
    match style {
        ConfigStyle::Env => vec![
            format!(
                "{}=<dir> (environment, before the server starts)",
                s.dir_key()
            ),
            format!(
                "{}={} (stacks are on unless it is {})",
                s.stack_key(),
                s.env_false.as_deref().unwrap_or_default(),
                s.env_false.as_deref().unwrap_or_default()
            ),
            control,
        ],
        ConfigStyle::ProfilerConfig => {
            let flag = s.flag.as_deref().unwrap_or_default();
            let profiler = s.keys.as_ref().map(|k| &k.profiler);
            vec![
                format!(
                    "{flag}.{}={} {flag}.{}=<dir>",
                    profiler.map_or("", |p| p.0.as_str()),
                    profiler.map_or("", |p| p.1.as_str()),
                    s.dir_key()
                ),
                format!("{flag}.{}=false (on by default)", s.stack_key()),
                control,
            ]
        }
        ConfigStyle::Request => {
            let Some(body) = &s.body else {
                return Vec::new();
            };
            let off = s.env_false.as_deref().unwrap_or_default();
            vec![
                format!(
                    "POST {} with a JSON body {{\"{}\": \"<dir>\", \"{}\": false, \"{}\": false}} (stacks and shapes are on by default), then POST {}; {}=<dir> (environment) is only the default directory",
                    http.start,
                    body.dir,
                    body.stack,
                    body.shapes,
                    http.stop,
                    s.dir_key_env()
                ),
                format!(
                    "\"{}\": N stops by itself after N forward steps; with \"{}\": true each stage (prefill, decode) is a run of its own, N steps each",
                    body.steps, body.by_stage
                ),
                format!(
                    "{}={off} {}={off} (environment) turn the defaults off for every request",
                    s.stack_env.as_deref().unwrap_or_default(),
                    s.shapes_env.as_deref().unwrap_or_default()
                ),
            ]
        }
    }
}
