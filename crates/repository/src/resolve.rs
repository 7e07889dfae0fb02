//! Resolving a target the way the launcher does: the model's own `infer.py` wins over the
//! shared engine; the run config is read through the chosen shape's key paths; the Python is
//! matched by structure in the shape's files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use npuprof_schedule::Phase;
use serde::Serialize;

use crate::budget::Budget;
use crate::config::{self, RunConfig, dotted};
use crate::definition::{
    BudgetRule, Definitions, Family, LauncherKind, ResultBase, Shape, SiteScope, Toggle,
};
use crate::error::{ConfigPlaces, TargetError};
use crate::manual;
use crate::python::{self, Factory, Site};
use crate::results::Results;

/// How the run is launched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum RunMode {
    /// One process group runs prefill and decode.
    Offline,
    /// Prefill/decode disaggregation: this node plays one role.
    Online {
        /// The node's role.
        role: PdRole,
    },
}

/// A node's role in a PD-disaggregated run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PdRole {
    /// Runs prefill only.
    Prefill,
    /// Runs decode only.
    Decode,
}

impl PdRole {
    /// `prefill` or `decode`.
    pub fn name(self) -> &'static str {
        match self {
            PdRole::Prefill => "prefill",
            PdRole::Decode => "decode",
        }
    }
}

/// What to resolve.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// The repository root.
    pub repo: &'a Path,
    /// The model directory under `models/`.
    pub model: &'a str,
    /// The run config under `models/<model>/config/` (may hold a sub-folder).
    pub yaml: &'a str,
    /// The run mode; `None` infers it (a `prefill.yaml`/`decode.yaml` in a `*_pd` or `pd`
    /// folder is an online config of that role).
    pub mode: Option<RunMode>,
}

/// A fact with its place: `what` is at `path:line`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Evidence {
    /// What this line shows.
    pub what: String,
    /// File, relative to the repository.
    pub path: String,
    /// 1-based line.
    pub line: usize,
}

/// The launch command, run from `cwd`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Launch {
    /// The working directory, relative to the repository (`.` for the root).
    pub cwd: String,
    /// The command.
    pub argv: Vec<String>,
    /// Environment variables it sets (left out of the JSON when there are none).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

impl Launch {
    /// The command as a person types it from the repository root (`cd DIR && K=V ...`).
    pub fn command_line(&self) -> String {
        let assignments = self
            .env
            .iter()
            .map(|(k, v)| format!("{k}={} ", crate::shell::quote(v)))
            .collect::<String>();
        let line = format!("{assignments}{}", crate::shell::join(&self.argv));
        if self.cwd == "." {
            line
        } else {
            format!("cd {} && {line}", crate::shell::quote(&self.cwd))
        }
    }
}

/// One phase's profiler call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PhaseTarget {
    /// The phase.
    pub phase: Phase,
    /// The file holding the call, relative to the repository.
    pub path: String,
    /// The call and where its window values live.
    pub site: Site,
}

/// A target whose profiler npuprof can set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Profiled {
    /// The shape's definition.
    pub shape: Shape,
    /// The file holding the factory, relative to the repository.
    pub factory_path: String,
    /// The factory.
    pub factory: Factory,
    /// The phase calls, prefill first.
    pub phases: Vec<PhaseTarget>,
    /// The run config's values.
    pub config: RunConfig,
    /// The budget rule for this model, mode and config.
    pub budget: Budget,
    /// Phases this run can never record, with the reason.
    pub never_recorded: Vec<NotRecorded>,
}

/// A phase a run cannot record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotRecorded {
    /// The phase.
    pub phase: Phase,
    /// Why, as a class.
    pub cause: NotRecordedCause,
    /// Why, in words.
    pub why: String,
}

/// Why a phase cannot be recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NotRecordedCause {
    /// The node's PD role never runs it (or never creates a profiler).
    PdRole,
    /// The token budget buys no decode forward (a larger budget would).
    Budget,
}

impl Profiled {
    /// The call of `phase`.
    pub fn phase(&self, phase: Phase) -> Option<&PhaseTarget> {
        self.phases.iter().find(|p| p.phase == phase)
    }

    /// The decode steps that fill the run (the "whole run" window): the run config's budget
    /// through [`Budget::whole_run_active`], with `skip_first` as given, else the decode call's
    /// own; `None` without a decode call whose `skip_first` is known, or when nothing is left.
    pub fn whole_run_decode_active(&self, skip_first: Option<u64>) -> Option<u64> {
        let skip_first = skip_first.or_else(|| {
            let site = &self.phase(Phase::Decode)?.site;
            let value = site
                .source(python::WindowField::SkipFirst)
                .value(python::WindowField::SkipFirst)?;
            u64::try_from(value).ok()
        })?;
        self.budget
            .whole_run_active(self.config.effective_budget, skip_first)
    }
}

/// A model whose profiling is switched by hand (or not at all).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ManualTarget {
    /// The family.
    pub family: Family,
    /// The toggle.
    pub toggle: Toggle,
    /// What the user does.
    pub instruction: String,
    /// Where its profiler writes, relative to the repository, when the definitions say.
    pub results: Option<String>,
}

/// How the model is profiled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum How {
    /// npuprof sets the window.
    Settable(Box<Profiled>),
    /// By hand.
    Manual(ManualTarget),
}

/// A profiling target, resolved for one model and run config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Target {
    /// The repository root.
    #[serde(skip)]
    pub repo: PathBuf,
    /// The model directory under `models/`.
    pub model: String,
    /// The run config under `models/<model>/config/`.
    pub yaml: String,
    /// The run config, relative to the repository.
    pub config_path: String,
    /// The family.
    pub family: Family,
    /// The run mode.
    pub mode: RunMode,
    /// How it is profiled.
    pub how: How,
    /// The command that runs it with this config.
    pub launch: Launch,
    /// Where its results land.
    pub results: Results,
    /// File:line for each part of the target.
    pub evidence: Vec<Evidence>,
    /// Things to know (assumptions, shared result names, quirks of this model).
    pub notes: Vec<String>,
}

impl Target {
    /// The settable profiler, when npuprof can set it.
    pub fn profiled(&self) -> Option<&Profiled> {
        match &self.how {
            How::Settable(p) => Some(p),
            How::Manual(_) => None,
        }
    }
}

/// What a run config says through its model's shape, without reading any Python.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigView {
    /// The run mode.
    pub mode: RunMode,
    /// The launcher that runs the model.
    pub launcher: LauncherKind,
    /// How the model's own entry leads to the profiler code (file:line), when it has one.
    pub chain: Vec<Evidence>,
    /// The shape the run uses.
    pub shape: &'static Shape,
    /// The config's values through the shape's key paths.
    pub config: RunConfig,
    /// The budget rule for this model, mode and config.
    pub budget: Budget,
    /// Phases this run can never record.
    pub never_recorded: Vec<NotRecorded>,
    /// Things to know (the model's quirks, the budget's assumption).
    pub notes: Vec<String>,
}

/// Reads run config `text` (parsed: `value`) of `models/<model>/config/<yaml>` through its
/// model's shape.
pub fn config_view(
    definitions: &'static Definitions,
    repo: &Path,
    model: &str,
    yaml: &str,
    text: &str,
    value: &yaml_serde::Value,
    mode: Option<RunMode>,
) -> Result<ConfigView, TargetError> {
    let mode = mode.unwrap_or_else(|| infer_mode(yaml));
    let layout = &definitions.layout;
    let launcher = if repo.join(layout.model_entry_path(model)).is_file() {
        LauncherKind::Model
    } else {
        LauncherKind::Shared
    };
    let (shape_launcher, chain) = match launcher {
        LauncherKind::Model
            if value
                .get(definitions.markers.switch_section.as_str())
                .is_some() =>
        {
            let files = python_files(definitions, repo, &layout.model_dir(model));
            let entry = crate::entry::follow(definitions, repo, model, value, &files)?;
            (entry.shape_launcher(), vec![entry.evidence().clone()])
        }
        other => (other, Vec::new()),
    };
    let shape = definitions.shape_for(shape_launcher).ok_or_else(|| {
        TargetError::Shape(format!(
            "no target shape is defined for a {launcher:?} launcher"
        ))
    })?;
    let config = config::read_value(text, value, &shape.config)?;
    let mut notes = Vec::new();
    let budget = budget(shape, model, mode, &config, &mut notes);
    if let Some(o) = shape.model_override(model) {
        notes.push(o.note.clone());
    }
    let never_recorded = never_recorded(mode, &config, budget);
    Ok(ConfigView {
        mode,
        launcher,
        chain,
        shape,
        config,
        budget,
        never_recorded,
        notes,
    })
}

/// Resolves the target of `request` with the definition of its repository.
pub fn resolve(request: &Request<'_>) -> Result<Target, TargetError> {
    resolve_with(crate::catalog::definitions_for(request.repo)?, request)
}

/// File texts that stand in for the files on disk, by repository-relative path (`/`-separated):
/// the true originals of files npuprof has patched.
pub type Overrides = BTreeMap<String, String>;

/// Resolves `request` as if the files in `overrides` held those texts: the target of the
/// repository as it was before npuprof patched it.
pub fn resolve_over(request: &Request<'_>, overrides: &Overrides) -> Result<Target, TargetError> {
    let files = Files {
        repo: request.repo,
        overrides: Some(overrides),
    };
    resolve_files(
        crate::catalog::definitions_for(request.repo)?,
        request,
        files,
    )
}

/// The repository's files as resolution reads them: from disk, unless overridden.
#[derive(Debug, Clone, Copy)]
struct Files<'a> {
    repo: &'a Path,
    overrides: Option<&'a Overrides>,
}

impl Files<'_> {
    fn read(self, rel: &str) -> Result<String, TargetError> {
        match self.overrides.and_then(|o| o.get(rel)) {
            Some(text) => Ok(text.clone()),
            None => read(self.repo, rel),
        }
    }
}

/// Where the results of `request`'s run land, read from its run config alone (no Python): what
/// `verify` and `summary` need to find the newest result.
pub fn locate_results(request: &Request<'_>) -> Result<Results, TargetError> {
    let files = Files {
        repo: request.repo,
        overrides: None,
    };
    Ok(locate(
        crate::catalog::definitions_for(request.repo)?,
        request,
        files,
    )?
    .results)
}

/// What a request resolves to without reading any Python.
struct Located {
    config_path: String,
    config_text: String,
    view: ConfigView,
    launch: Launch,
    value: yaml_serde::Value,
    results: Results,
    notes: Vec<String>,
}

fn locate(
    definitions: &'static Definitions,
    request: &Request<'_>,
    files: Files<'_>,
) -> Result<Located, TargetError> {
    let repo = request.repo;
    let layout = &definitions.layout;
    let model_dir = repo.join(layout.model_dir(request.model));
    let config_dir = repo.join(layout.config_dir(request.model));
    if !model_dir.is_dir() {
        return Err(TargetError::UnknownModel {
            repo: repo.to_path_buf(),
            models: layout.models.clone(),
            model: request.model.to_owned(),
            hint: suggest(request.model, &list_models(repo, &layout.models)),
            nearby: crate::nearby::near_current_dir(request.model).into(),
        });
    }
    let config_path = layout.config_path(request.model, request.yaml);
    if !is_yaml_name(request.yaml) {
        let configs = list_configs(&config_dir);
        let hint = suggest(request.yaml, &configs);
        return Err(TargetError::UnknownConfig {
            path: config_path,
            hint: format!(" (a run config is a .yaml file){hint}"),
        });
    }
    if request.yaml.split('/').any(|c| c == "..") {
        return Err(outside_config(definitions, files, request));
    }
    let config_text = match files.read(&config_path) {
        Ok(text) => text,
        Err(TargetError::Read { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Err(TargetError::UnknownConfig {
                path: config_path,
                hint: suggest(request.yaml, &list_configs(&config_dir)),
            });
        }
        Err(e) => return Err(e),
    };
    let value = config::parse_yaml(&config_text)?;
    let view = config_view(
        definitions,
        repo,
        request.model,
        request.yaml,
        &config_text,
        &value,
        request.mode,
    )?;
    let launch = launch(definitions, request, view.launcher, view.mode);
    let case = layout.case_name(&config::model_name(&value), request.yaml);
    let mut notes = view.notes.clone();
    if let Some(other) = shared_case(definitions, &config_dir, request.yaml, &case) {
        notes.push(format!(
            "{} writes to the same result directory ({case}): the launcher drops the YAML's sub-folder",
            layout.config_path(request.model, &other)
        ));
    }
    let res_dir = match view.shape.results.base {
        ResultBase::WorkDir => layout.model_results(request.model),
        ResultBase::WorkingDir => layout.working_dir_results(&launch.cwd),
    };
    let role_prefix = match view.mode {
        RunMode::Online { role } => Some(layout.role_prefix(role.name())),
        RunMode::Offline => None,
    };
    Ok(Located {
        config_path,
        config_text,
        view,
        launch,
        value,
        results: Results {
            res_dir,
            case,
            role_prefix,
            phases: Vec::new(),
        },
        notes,
    })
}

/// Resolves the target of `request` with `definitions`.
pub fn resolve_with(
    definitions: &'static Definitions,
    request: &Request<'_>,
) -> Result<Target, TargetError> {
    let files = Files {
        repo: request.repo,
        overrides: None,
    };
    resolve_files(definitions, request, files)
}

/// `yaml` with its `.` and `..` components resolved, when it has some and stays inside the
/// run-config directory (`sub/../x.yaml` is `x.yaml`); `None` otherwise (a path that leaves it
/// is refused as outside the config directory, by what it names).
fn inside_configs(yaml: &str) -> Option<String> {
    if !yaml.split('/').any(|c| c == ".." || c == ".") {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in yaml.split('/') {
        match part {
            "." | "" => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

fn resolve_files(
    definitions: &'static Definitions,
    request: &Request<'_>,
    files: Files<'_>,
) -> Result<Target, TargetError> {
    let normalized = inside_configs(request.yaml);
    let request = &Request {
        yaml: normalized.as_deref().unwrap_or(request.yaml),
        ..request.clone()
    };
    let repo = request.repo;
    let Located {
        config_path,
        config_text,
        view,
        launch,
        value,
        results,
        mut notes,
    } = locate(definitions, request, files)?;
    let (mode, shape) = (view.mode, view.shape);
    let mut evidence: Vec<Evidence> =
        launcher_evidence(definitions, files, request.model, view.launcher)
            .into_iter()
            .collect();
    evidence.extend(view.chain.iter().cloned());
    let Results {
        res_dir,
        case,
        role_prefix,
        ..
    } = results;
    let run_config = view.config;
    if !run_config.has_switch_section {
        let mut launch = launch;
        let manual = match definitions.manual(request.model) {
            Some(m) => {
                if let Some(own) = manual::launch(m, request.yaml) {
                    // Its own launcher, not the LLM launcher's choice of entry.
                    evidence.retain(|e| e.path != definitions.markers.launcher_script);
                    launch = own;
                }
                evidence.extend(manual::evidence(m, |rel| files.read(rel).ok()));
                notes.extend(m.notes.iter().cloned());
                ManualTarget {
                    family: m.family,
                    toggle: m.toggle,
                    instruction: m.instruction.clone(),
                    results: manual::results(m, request.yaml),
                }
            }
            None => detect_toggle(definitions, files, request.model, &value, &mut evidence)
                .unwrap_or_else(|| {
                    no_toggle(
                        &definitions.layout.model_dir(request.model),
                        &shape.config.switch,
                    )
                }),
        };
        return Ok(Target {
            repo: repo.to_path_buf(),
            model: request.model.to_owned(),
            yaml: request.yaml.to_owned(),
            config_path,
            family: manual.family,
            mode,
            how: How::Manual(manual),
            launch,
            results: Results {
                res_dir,
                case,
                role_prefix,
                phases: Vec::new(),
            },
            evidence,
            notes,
        });
    }
    for (what, path) in [
        ("switch", &shape.config.switch),
        ("token budget", &shape.config.budget),
    ] {
        if let Some(line) = config::key_line(&config_text, path) {
            evidence.push(Evidence {
                what: format!("{what} {}", dotted(path)),
                path: config_path.clone(),
                line,
            });
        }
    }
    let (factory_path, factory, factory_tree, redefined) = find_factory(files, shape)?;
    notes.extend(redefined);
    refuse_rebindings(definitions, files, request.model, &factory_path, &factory)?;
    evidence.push(Evidence {
        what: format!("profiler factory {}", qualified(&factory)),
        path: factory_path.clone(),
        line: factory.line,
    });
    let phases = find_sites(
        definitions,
        files,
        request.model,
        shape,
        &factory_path,
        &factory,
        &factory_tree,
    )?;
    for p in &phases {
        evidence.push(Evidence {
            what: format!("{} profiler call in {}", p.phase.name(), p.site.function),
            path: p.path.clone(),
            line: p.site.call.line,
        });
    }
    let (budget, never_recorded) = (view.budget, view.never_recorded);
    let phase_paths = phases
        .iter()
        .map(|p| (p.phase, phase_path(shape, &p.site)))
        .collect();
    Ok(Target {
        repo: repo.to_path_buf(),
        model: request.model.to_owned(),
        yaml: request.yaml.to_owned(),
        config_path,
        family: shape.family,
        mode,
        how: How::Settable(Box::new(Profiled {
            shape: shape.clone(),
            factory_path,
            factory,
            phases,
            config: run_config,
            budget,
            never_recorded,
        })),
        launch,
        results: Results {
            res_dir,
            case,
            role_prefix,
            phases: phase_paths,
        },
        evidence,
        notes,
    })
}

/// The largest run config or Python file npuprof reads (real ones are a few KiB to a few
/// hundred; a 100 MB run config took patch 1.9 GB of memory).
pub const SOURCE_CAP: u64 = 16 << 20;

/// Reads the repository file `rel` as UTF-8 text: a regular file of at most [`SOURCE_CAP`]
/// bytes (a FIFO or device is refused without blocking).
pub fn read(repo: &Path, rel: &str) -> Result<String, TargetError> {
    use npuprof_runs::probe::{FileProblem, read_capped};
    let path = repo.join(rel);
    let failed = |kind: std::io::ErrorKind, why: String| TargetError::Read {
        path: path.clone(),
        source: std::io::Error::new(kind, why),
    };
    // A link is followed within the repository only (its target is read, itself no link).
    let mut target = path.clone();
    if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink())
        && let (Ok(real), Ok(root)) = (path.canonicalize(), repo.canonicalize())
    {
        if !real.starts_with(&root) {
            return Err(failed(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "`{rel}` resolves to `{}`, outside the repository `{}`",
                    real.display(),
                    root.display()
                ),
            ));
        }
        target = real;
    }
    // A regular file of bounded size only: a FIFO would block, a huge file exhaust memory.
    let bytes = match read_capped(&target, SOURCE_CAP) {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(size)) => {
            return Err(failed(
                std::io::ErrorKind::InvalidData,
                format!(
                    "it is {size} bytes; npuprof reads source and run-config files of at most {SOURCE_CAP} bytes"
                ),
            ));
        }
        Err(FileProblem::Missing) => {
            return Err(failed(
                std::io::ErrorKind::NotFound,
                "no such file".to_owned(),
            ));
        }
        Err(problem) => return Err(failed(std::io::ErrorKind::InvalidInput, problem.describe())),
    };
    String::from_utf8(bytes).map_err(|_| TargetError::Read {
        path,
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8"),
    })
}

/// `prefill.yaml` / `decode.yaml` in a `*_pd` or `pd` folder: an online config of that role.
fn infer_mode(yaml: &str) -> RunMode {
    let mut parts = yaml.rsplit('/');
    let file = parts.next().unwrap_or(yaml);
    let folder = parts.next().unwrap_or("");
    let pd_folder = folder == "pd" || folder.ends_with("_pd");
    match (pd_folder, file.rsplit_once('.').map_or(file, |(s, _)| s)) {
        (true, "prefill") => RunMode::Online {
            role: PdRole::Prefill,
        },
        (true, "decode") => RunMode::Online {
            role: PdRole::Decode,
        },
        _ => RunMode::Offline,
    }
}

/// Where the launcher chooses the Python entry: the line of `markers.launcher_script` that
/// names the model's own `infer.py` (or, for the shared engine, the shared entry). `None` when
/// the script has no such line (a fork's launcher): no evidence is better than a made-up line.
fn launcher_evidence(
    definitions: &Definitions,
    files: Files<'_>,
    model: &str,
    launcher: LauncherKind,
) -> Option<Evidence> {
    let markers = &definitions.markers;
    let layout = &definitions.layout;
    let script = &markers.launcher_script;
    let text = files.read(script).ok()?;
    let (wanted, what) = match launcher {
        LauncherKind::Model => (
            layout.model_entry_path(model),
            format!(
                "the launcher runs the model's own {}, which exists",
                layout.model_entry
            ),
        ),
        LauncherKind::Shared => (
            markers.shared_entry.clone(),
            format!(
                "no {}/<m>/{}: the launcher runs the shared engine",
                layout.models, layout.model_entry
            ),
        ),
    };
    let index = text.lines().position(|line| {
        !line.trim_start().starts_with('#')
            && match launcher {
                LauncherKind::Model => layout.names_model_entry(line),
                LauncherKind::Shared => line.contains(wanted.as_str()),
            }
    })?;
    Some(Evidence {
        what: format!("{what} ({wanted})"),
        path: script.clone(),
        line: index + 1,
    })
}

/// The launch the definition's launcher template gives: a model with its own loop is launched
/// from its launcher's working directory so that its working-directory-relative results land
/// where the layout says.
fn launch(
    definitions: &Definitions,
    request: &Request<'_>,
    launcher: LauncherKind,
    mode: RunMode,
) -> Launch {
    let layout = &definitions.layout;
    let cwd = layout.launch_cwd(launcher, request.model);
    let role = match mode {
        RunMode::Offline => None,
        RunMode::Online { role } => Some(role.name()),
    };
    let argv = layout.launch_argv(&cwd, request.model, request.yaml, role);
    let env = layout.launch_env(request.model);
    Launch { cwd, argv, env }
}

/// Another config of the model whose results share `case`'s directory.
fn shared_case(
    definitions: &Definitions,
    config_dir: &Path,
    yaml: &str,
    case: &str,
) -> Option<String> {
    let stem = |p: &str| {
        let base = p.rsplit('/').next().unwrap_or(p).to_owned();
        base.rsplit_once('.')
            .map_or(base.clone(), |(s, _)| s.to_owned())
    };
    list_configs(config_dir).into_iter().find(|other| {
        other != yaml
            && stem(other) == stem(yaml)
            && std::fs::read_to_string(config_dir.join(other))
                .ok()
                .and_then(|t| config::parse_yaml(&t).ok())
                .is_some_and(|v| {
                    definitions.layout.case_name(&config::model_name(&v), other) == case
                })
    })
}

/// A model without a settable switch: the toggle its scripts expose, found by structure (a
/// flag the run config's `model_args` can carry, a command-line flag, an environment variable).
fn detect_toggle(
    definitions: &Definitions,
    files: Files<'_>,
    model: &str,
    config: &yaml_serde::Value,
    evidence: &mut Vec<Evidence>,
) -> Option<ManualTarget> {
    let model_args = config
        .get("model_args")
        .is_some_and(yaml_serde::Value::is_mapping);
    let model_dir = definitions.layout.model_dir(model);
    for rel in python_files(definitions, files.repo, &model_dir) {
        let Ok(source) = files.read(&rel) else {
            continue;
        };
        if !source.to_ascii_lowercase().contains("prof") {
            continue;
        }
        let Some(tree) = python::parse(&source) else {
            continue;
        };
        let Some(toggle) = python::script_toggles(&tree, &source).into_iter().next() else {
            continue;
        };
        let (line, manual) = match toggle {
            python::ScriptToggle::Flag { name, line } if model_args => (
                line,
                ManualTarget {
                    family: Family::Multimedia,
                    toggle: Toggle::ModelArgs,
                    results: None,
                    instruction: format!(
                        "add `{name}: true` under model_args in the run config (its launcher passes model_args as flags; {rel}:{line} reads --{name})"
                    ),
                },
            ),
            python::ScriptToggle::Flag { name, line } => (
                line,
                ManualTarget {
                    family: Family::Standalone,
                    toggle: Toggle::CliFlag,
                    results: None,
                    instruction: format!(
                        "pass --{name} to the model's launch script ({rel}:{line})"
                    ),
                },
            ),
            python::ScriptToggle::EnvVar { name, line } => (
                line,
                ManualTarget {
                    family: Family::Multimedia,
                    toggle: Toggle::EnvVar,
                    results: None,
                    instruction: format!(
                        "set {name}=1 in the environment of the launch ({rel}:{line})"
                    ),
                },
            ),
        };
        evidence.push(Evidence {
            what: format!("profiling toggle ({})", manual.toggle.name()),
            path: rel,
            line,
        });
        return Some(manual);
    }
    None
}

fn no_toggle(model_dir: &str, switch: &[String]) -> ManualTarget {
    ManualTarget {
        family: Family::Multimedia,
        toggle: Toggle::None,
        results: None,
        instruction: format!(
            "the run config has no {} section, so it belongs to another pipeline than the LLM \
             engine, and no profiling switch was found in {model_dir}; profile it with \
             `npuprof inject` on its entry script",
            switch.first().map_or("switch", String::as_str)
        ),
    }
}

fn qualified(factory: &Factory) -> String {
    match &factory.class {
        Some(class) => format!("{class}.{}", factory.name),
        None => factory.name.clone(),
    }
}

/// The factory in the shape's files (the last definition wins, as in Python).
/// The factory's file, the factory, the file's text, and a note when the factory is defined more
/// than once.
type FoundFactory = (String, Factory, String, Option<String>);

fn find_factory(files: Files<'_>, shape: &Shape) -> Result<FoundFactory, TargetError> {
    for rel in &shape.factory_files {
        let Ok(source) = files.read(rel) else {
            continue;
        };
        let tree = parse_checked(rel, &source)?;
        let facts = python::factories(&tree, &source);
        if let Some(factory) = facts.factories.into_iter().last() {
            let redefined = facts
                .redefined
                .iter()
                .find(|(name, _)| *name == factory.name)
                .map(|(name, lines)| {
                    format!(
                        "{rel} defines {name} {} times (lines {}); Python uses the last, line {}, and so does npuprof",
                        lines.len(),
                        lines.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
                        factory.line
                    )
                });
            return Ok((rel.clone(), factory, source, redefined));
        }
    }
    Err(TargetError::Shape(format!(
        "no profiler factory in {} (a function that builds torch_npu.profiler.profile(..., \
         schedule=torch_npu.profiler.schedule(...))); run `npuprof route` to find the path",
        shape.factory_files.join(", ")
    )))
}

fn parse_checked(rel: &str, source: &str) -> Result<tree_sitter::Tree, TargetError> {
    let tree = python::parse(source).ok_or_else(|| TargetError::PythonSyntax {
        path: rel.to_owned(),
        line: 1,
    })?;
    match python::syntax_error_line(&tree) {
        Some(line) => Err(TargetError::PythonSyntax {
            path: rel.to_owned(),
            line,
        }),
        None => Ok(tree),
    }
}

/// The phase calls: in the factory's files, or in the model's own loop when it has one.
fn find_sites(
    definitions: &Definitions,
    files: Files<'_>,
    model: &str,
    shape: &Shape,
    factory_path: &str,
    factory: &Factory,
    factory_source: &str,
) -> Result<Vec<PhaseTarget>, TargetError> {
    let mut found = Vec::new();
    if shape.sites == SiteScope::ModelDirElseFactoryFiles {
        let model_dir = definitions.layout.model_dir(model);
        for rel in python_files(definitions, files.repo, &model_dir) {
            let Ok(source) = files.read(&rel) else {
                continue;
            };
            if !source.contains(&factory.name) {
                continue;
            }
            let tree = parse_checked(&rel, &source)?;
            for site in python::sites(&tree, &source, std::slice::from_ref(factory)) {
                found.push(PhaseTarget {
                    phase: site.phase,
                    path: rel.clone(),
                    site,
                });
            }
        }
    }
    if found.is_empty() {
        let tree = parse_checked(factory_path, factory_source)?;
        for site in python::sites(&tree, factory_source, std::slice::from_ref(factory)) {
            found.push(PhaseTarget {
                phase: site.phase,
                path: factory_path.to_owned(),
                site,
            });
        }
    }
    let mut phases = Vec::new();
    for phase in Phase::ALL {
        let calls: Vec<&PhaseTarget> = found.iter().filter(|p| p.phase == phase).collect();
        match calls.as_slice() {
            [one] => phases.push((*one).clone()),
            [] => {}
            many => {
                let at: Vec<String> = many
                    .iter()
                    .map(|p| format!("{}:{}", p.path, p.site.call.line))
                    .collect();
                return Err(TargetError::Shape(format!(
                    "{} calls of {} build a {} profiler ({}); npuprof sets one call per phase",
                    many.len(),
                    factory.name,
                    phase.name(),
                    at.join(", ")
                )));
            }
        }
    }
    if phases.is_empty() {
        return Err(TargetError::Shape(format!(
            "no call of {} names a phase (\"prefill\" or \"decode\") in its save path",
            factory.name
        )));
    }
    Ok(phases)
}

/// Refuses a target whose factory the run may not call as written ([`crate::rebind`]): every
/// Python file of the factory's top-level package and of the model's directory that names it is
/// read (test suites are not run by the launcher and are left out).
fn refuse_rebindings(
    definitions: &Definitions,
    files: Files<'_>,
    model: &str,
    factory_path: &str,
    factory: &Factory,
) -> Result<(), TargetError> {
    let package = factory_path.split('/').next().unwrap_or(factory_path);
    let mut paths = if package == factory_path {
        vec![factory_path.to_owned()]
    } else {
        python_files(definitions, files.repo, package)
    };
    paths.extend(python_files(
        definitions,
        files.repo,
        &definitions.layout.model_dir(model),
    ));
    paths.sort();
    paths.dedup();
    let mut found = Vec::new();
    for rel in paths
        .iter()
        .filter(|p| !p.split('/').any(|c| matches!(c, "tests" | "test")))
    {
        let Ok(source) = files.read(rel) else {
            continue;
        };
        if !source.contains(factory.name.as_str()) {
            continue;
        }
        let Some(tree) = python::parse(&source) else {
            continue;
        };
        found.extend(crate::rebind::rebindings(
            &tree,
            &source,
            rel,
            factory,
            factory_path,
        ));
    }
    let Some(first) = found.first() else {
        return Ok(());
    };
    let more = match found.len() {
        1 => String::new(),
        n => format!(
            " (and {} more: {})",
            n - 1,
            found[1..]
                .iter()
                .map(|r| format!("{}:{}", r.path, r.line))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Err(TargetError::Shape(format!(
        "npuprof cannot prove that the run calls {} as written in {factory_path}:{}: {}:{}: {}{more}; \
         a patch there could record another window than the one asked for. Remove the rebinding, \
         or profile with path B (`npuprof inject`)",
        qualified(factory),
        factory.line,
        first.path,
        first.line,
        first.what
    )))
}

/// The `.py` files under `dir` (relative to `repo`), sorted; result and hidden directories skipped.
fn python_files(definitions: &Definitions, repo: &Path, dir: &str) -> Vec<String> {
    let results = definitions.layout.results.as_str();
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(rel) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(repo.join(&rel)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let child = format!("{rel}/{name}");
            if kind.is_dir() && !name.starts_with('.') && name != results && name != "__pycache__" {
                stack.push(child);
            } else if kind.is_file() && name.ends_with(".py") {
                out.push(child);
            }
        }
    }
    out.sort();
    out
}

fn budget(
    shape: &Shape,
    model: &str,
    mode: RunMode,
    config: &RunConfig,
    notes: &mut Vec<String>,
) -> Budget {
    let model_override = shape.model_override(model);
    let rules = model_override
        .and_then(|o| o.budget_rule)
        .unwrap_or(shape.budget_rule);
    let mut rule = match mode {
        RunMode::Offline => rules.offline,
        RunMode::Online { .. } => rules.online,
    };
    if let (Some(draft), Some(draft_rules)) = (&config.draft_model, shape.draft_budget_rule) {
        rule = match mode {
            RunMode::Offline => draft_rules.offline,
            RunMode::Online { .. } => draft_rules.online,
        };
        if let Some(note) = &shape.draft_note {
            notes.push(note.replace("{draft}", draft));
        }
    }
    let budget = Budget {
        rule,
        next_n: config.next_n,
    };
    if rule == BudgetRule::DataDependent {
        notes.push(budget.describe());
    }
    budget
}

fn never_recorded(mode: RunMode, config: &RunConfig, budget: Budget) -> Vec<NotRecorded> {
    let role = |phase, why: &str| NotRecorded {
        phase,
        cause: NotRecordedCause::PdRole,
        why: why.to_owned(),
    };
    match mode {
        RunMode::Online {
            role: PdRole::Decode,
        } => vec![
            role(
                Phase::MmEncode,
                "a decode-role node never runs the multimodal encoder",
            ),
            role(Phase::Prefill, "a decode-role node never runs prefill"),
            role(
                Phase::Decode,
                "a decode-role node never sees a prefill batch, so the engine never creates a \
                 profiler: PD decode cannot be profiled by this engine",
            ),
        ],
        RunMode::Online {
            role: PdRole::Prefill,
        } => vec![role(
            Phase::Decode,
            "a prefill-role node runs no decode (it records one prefill batch)",
        )],
        RunMode::Offline => no_decode_budget(config, budget).into_iter().collect(),
    }
}

/// The budget's verdict on decode: `Some` for a prefill benchmark config (a budget of one
/// token, the prefill's own), whose decode window can never close; a larger budget would.
pub fn no_decode_budget(config: &RunConfig, budget: Budget) -> Option<NotRecorded> {
    (config.effective_budget <= 1).then(|| NotRecorded {
        phase: Phase::Decode,
        cause: NotRecordedCause::Budget,
        why: format!(
            "max_new_tokens {} makes it a prefill benchmark ({} decode forward(s): no decode window closes)",
            config.effective_budget,
            budget.guaranteed_forwards(config.effective_budget)
        ),
    })
}

/// The phase's sub-path of the result directory.
fn phase_path(shape: &Shape, site: &Site) -> String {
    if shape.results.phase_path == "from-call" {
        site.path_literals.join("/")
    } else {
        shape
            .results
            .phase_path
            .replace("{phase}", site.phase.name())
    }
}

/// The model directories under `models`, sorted.
pub(crate) fn list_models(repo: &Path, models: &str) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(repo.join(models))
        .map(|e| {
            e.flatten()
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Config files under `dir`, relative to it (sub-folders included), sorted.
pub fn list_configs(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![String::new()];
    while let Some(rel) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(dir.join(&rel)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let child = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            if entry.path().is_dir() {
                stack.push(child);
            } else if is_yaml_name(&name) {
                out.push(child);
            }
        }
    }
    out.sort();
    out
}

/// Whether a file name is a YAML file's (`.yaml`, `.yml`): run configs are.
/// The refusal of a run config outside `config/` (`--yaml ../benchmark/x.yaml`): where it is,
/// the scripts beside it that launch it, and whether its budget buys any decode.
fn outside_config(
    definitions: &Definitions,
    files: Files<'_>,
    request: &Request<'_>,
) -> TargetError {
    let layout = &definitions.layout;
    let config_dir = layout.config_dir(request.model);
    let mut parts: Vec<&str> = config_dir.split('/').collect();
    for part in request.yaml.split('/') {
        match part {
            ".." => {
                parts.pop();
            }
            "." | "" => {}
            other => parts.push(other),
        }
    }
    let path = parts.join("/");
    let dir = parts[..parts.len().saturating_sub(1)].join("/");
    let mut scripts: Vec<String> = std::fs::read_dir(files.repo.join(&dir))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".sh") || n.ends_with(".py"))
                .map(|n| format!("{dir}/{n}"))
                .collect()
        })
        .unwrap_or_default();
    scripts.sort();
    let launchers = if scripts.is_empty() {
        String::new()
    } else {
        format!(" (its own launcher: {})", scripts.join(", "))
    };
    let budget = files.read(&path).ok().and_then(|text| {
        let value = config::parse_yaml(&text).ok()?;
        definitions.shapes.iter().find_map(|shape| {
            config::budget(&text, &value, &shape.config.budget)
                .ok()
                .flatten()
                .map(|n| (dotted(&shape.config.budget), n))
        })
    });
    let why = match budget {
        Some((key, n)) if n <= 1 => format!(
            "; {key} {n} makes it a prefill benchmark: decode never runs, and raising the budget would change the benchmark"
        ),
        _ => String::new(),
    };
    TargetError::OutsideConfig {
        path,
        places: Box::new(ConfigPlaces {
            config_dir: config_dir.clone(),
            launcher: layout
                .launcher
                .script
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .to_owned(),
            configs: layout.configs.clone(),
        }),
        launchers,
        why,
    }
}

fn is_yaml_name(name: &str) -> bool {
    name.ends_with(".yaml") || name.ends_with(".yml")
}

/// `; did you mean `x`?` for the closest candidates, else the list (at most 10 shown).
fn suggest(wanted: &str, candidates: &[String]) -> String {
    let norm = |s: &str| {
        let s = s
            .strip_suffix(".yaml")
            .or_else(|| s.strip_suffix(".yml"))
            .unwrap_or(s);
        s.to_ascii_lowercase().replace(['-', '.', '_'], "")
    };
    let w = norm(wanted);
    let mut close: Vec<(usize, &String)> = candidates
        .iter()
        .map(|c| (edit_distance(&w, &norm(c)), c))
        .filter(|(d, c)| *d <= (w.len() / 4).max(1) || (w.len() >= 4 && norm(c).contains(&w)))
        .collect();
    close.sort();
    if let Some((_, best)) = close.first() {
        return format!("; did you mean `{best}`?");
    }
    if candidates.is_empty() {
        return String::new();
    }
    let shown: Vec<&str> = candidates.iter().take(10).map(String::as_str).collect();
    let more = candidates.len().saturating_sub(10);
    format!(
        "; available: {}{}",
        shown.join(", "),
        if more > 0 {
            format!(" (and {more} more)")
        } else {
            String::new()
        }
    )
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pd_configs_are_online_by_their_folder_and_name() {
        assert_eq!(
            infer_mode("m_pd/decode.yaml"),
            RunMode::Online {
                role: PdRole::Decode
            }
        );
        assert_eq!(
            infer_mode("ci/pd/prefill.yaml"),
            RunMode::Online {
                role: PdRole::Prefill
            }
        );
        assert_eq!(infer_mode("decode.yaml"), RunMode::Offline);
    }

    #[test]
    fn did_you_mean_finds_the_spelling_with_underscores() {
        let models = ["deepseek_r1".to_owned(), "qwen3_moe".to_owned()];
        assert_eq!(
            suggest("deepseek-r1", &models),
            "; did you mean `deepseek_r1`?"
        );
        assert!(suggest("zzz", &models).starts_with("; available: deepseek_r1"));
    }

    #[test]
    fn did_you_mean_needs_a_close_spelling_or_a_long_enough_part() {
        let models = ["deepseek_r1".to_owned(), "qwen3_moe".to_owned()];
        // Two edits are close for an eight-letter name; a part of four letters or more is too.
        assert_eq!(suggest("qwen3-mxx", &models), "; did you mean `qwen3_moe`?");
        assert_eq!(suggest("qwen3", &models), "; did you mean `qwen3_moe`?");
        assert!(suggest("mixtral", &models).starts_with("; available: "));
    }

    #[test]
    fn edit_distance_counts_single_character_edits() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("abc", ""), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("abc", "abc"), 0);
        assert_eq!(edit_distance("ab", "ba"), 2);
    }

    #[test]
    fn run_configs_are_yaml_or_yml_files() {
        assert!(is_yaml_name("decode.yaml"));
        assert!(is_yaml_name("decode.yml"));
        assert!(!is_yaml_name("decode.json"));
    }
}
