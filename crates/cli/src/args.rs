//! Flag groups shared by every command, each defined once (ripgrep's habit): where the
//! repository and the run config are, and which window to profile. Each turns into one
//! validated library type.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use npuprof_patch::target::{PatchRequest, TokenBudget};
use npuprof_repository::results::Results;
use npuprof_repository::{PdRole, Request, RunMode, Target};
use npuprof_schedule::{MAX_WINDOW_STEPS, PhaseSelection, Window};

/// Which phases to profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PhaseArg {
    /// Every phase the target has (prefill and decode; mm_encode too where the engine has a
    /// multimodal encoder), each into its own directory.
    Both,
    /// The multimodal encoder's forwards only (targets whose engine has that phase).
    #[value(name = "mm_encode")]
    MmEncode,
    /// The prefill forward only.
    Prefill,
    /// The decode forwards only.
    Decode,
}

impl From<PhaseArg> for PhaseSelection {
    fn from(phase: PhaseArg) -> Self {
        match phase {
            PhaseArg::Both => PhaseSelection::Both,
            PhaseArg::MmEncode => PhaseSelection::MmEncode,
            PhaseArg::Prefill => PhaseSelection::Prefill,
            PhaseArg::Decode => PhaseSelection::Decode,
        }
    }
}

/// A PD-disaggregated node's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PdRoleArg {
    /// The prefill node.
    Prefill,
    /// The decode node.
    Decode,
}

/// The decode steps recorded when none are asked for (the collection guide's "≥ 10 covers
/// steady state").
pub const DEFAULT_DECODE_ACTIVE: u64 = 10;

/// The kernel rows `summary` keeps and `compare` lists per phase when `--top` is not given.
pub const DEFAULT_TOP: usize = 15;

/// The evidence items `advise` keeps per finding when `--top` is not given (also the advice in
/// summary's HTML page).
pub const DEFAULT_EVIDENCE: usize = 5;

/// Where the repository and the run config are.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TargetArgs {
    /// The repository [default: the nearest directory at or above the current one that holds
    /// `.npuprof/` or `executor/` and `models/`].
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// Model directory under models/ (with --yaml, like infer.sh).
    #[arg(long, value_name = "M", requires = "yaml")]
    pub model: Option<String>,
    /// Run config under models/<M>/config/ (may hold a sub-folder).
    #[arg(long, value_name = "FILE", requires = "model")]
    pub yaml: Option<String>,
    /// The run config as a path (`models/<M>/config/<FILE>`), instead of --model/--yaml; without
    /// --repo, the repository is the one that holds it.
    #[arg(long, value_name = "YAML", conflicts_with_all = ["model", "yaml"])]
    pub config: Option<PathBuf>,
    /// Resolve as an online (PD) run of this role [default: a `prefill.yaml`/`decode.yaml` in a
    /// `*_pd` folder is online, anything else offline].
    #[arg(long, value_enum, value_name = "ROLE")]
    pub pd_role: Option<PdRoleArg>,
}

impl TargetArgs {
    /// Whether a run config was named.
    pub fn names_config(&self) -> bool {
        self.config.is_some() || self.model.is_some()
    }

    /// The repository root: `--repo`, else found by walking up from the `--config` file (the
    /// repository that holds it), else from the current directory.
    pub fn repo_root(&self) -> anyhow::Result<PathBuf> {
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        Ok(npuprof_repository::named::repository_root(
            self.repo.as_deref(),
            self.config.as_deref(),
            &cwd,
        )?)
    }

    /// `(model, yaml)` from `--model/--yaml` or `--config`.
    pub fn model_and_yaml(&self, repo: &Path) -> anyhow::Result<(String, String)> {
        match (&self.model, &self.yaml, &self.config) {
            (Some(model), Some(yaml), None) => Ok((model.clone(), yaml.clone())),
            (None, None, Some(config)) => {
                let cwd = std::env::current_dir().context("cannot read the current directory")?;
                Ok(npuprof_repository::named::split_config(repo, config, &cwd)?)
            }
            _ => {
                let layout = &npuprof_repository::definitions_for(repo)?.layout;
                bail!(
                    "name the run config: --model M --yaml FILE, or --config {}/FILE",
                    layout.config_dir("M")
                )
            }
        }
    }

    /// Resolves the target.
    pub fn resolve(&self) -> anyhow::Result<Target> {
        self.with_request(|request| Ok(npuprof_repository::resolve(request)?))
    }

    /// The repository and where the named run config's results land (no Python is read).
    pub fn results(&self) -> anyhow::Result<(PathBuf, Results)> {
        self.with_request(|request| {
            Ok((
                request.repo.to_path_buf(),
                npuprof_repository::locate_results(request)?,
            ))
        })
    }

    /// The library request for `model` and `yaml` in `repo` (with `--pd-role`).
    pub fn request<'a>(&self, repo: &'a Path, model: &'a str, yaml: &'a str) -> Request<'a> {
        Request {
            repo,
            model,
            yaml,
            mode: self.pd_role.map(|role| RunMode::Online {
                role: match role {
                    PdRoleArg::Prefill => PdRole::Prefill,
                    PdRoleArg::Decode => PdRole::Decode,
                },
            }),
        }
    }

    /// The profile a report (verify, summary, advise, compare) reads: `path` when given, else
    /// the named run config's newest result directory, else the current directory.
    pub fn profile(&self, path: Option<&Path>) -> anyhow::Result<PathBuf> {
        match path {
            Some(path) => Ok(path.to_path_buf()),
            None if self.names_config() => self.newest_result(),
            None => Ok(PathBuf::from(".")),
        }
    }

    /// The newest result directory of the named run config.
    pub fn newest_result(&self) -> anyhow::Result<PathBuf> {
        let (repo, results) = self.results()?;
        results.newest(&repo).ok_or_else(|| {
            anyhow::anyhow!(
                "no result yet: nothing under {}/<YYYYMMDD>/{}{}",
                results.res_dir,
                results.case,
                results
                    .role_prefix
                    .as_ref()
                    .map_or_else(String::new, |r| format!("/{r}<i>"))
            )
        })
    }

    /// Calls `f` with the library request of the named repository, model and run config.
    pub fn with_request<T>(
        &self,
        f: impl FnOnce(&Request<'_>) -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        let repo = self.repo_root()?;
        let (model, yaml) = self.model_and_yaml(&repo)?;
        f(&self.request(&repo, &model, &yaml))
    }
}

/// The window to profile.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct WindowArgs {
    /// Phases to profile; the other phase's profiler is switched off [default: both].
    #[arg(long, value_enum)]
    pub phase: Option<PhaseArg>,
    /// Decode steps to record (≥ 10 covers steady state) [default: 10].
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=MAX_WINDOW_STEPS))]
    pub decode_active: Option<u64>,
    /// Decode steps to skip first [default: keep the repository's value].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(0..=MAX_WINDOW_STEPS))]
    pub decode_skip_first: Option<u64>,
    /// Never ask: use the defaults for what is not given (also implied by --json, by `CI`, and
    /// when not on a terminal).
    #[arg(long, short = 'y')]
    pub yes: bool,
}

impl WindowArgs {
    /// The phase asked for, or both.
    pub fn phase(&self) -> PhaseArg {
        self.phase.unwrap_or(PhaseArg::Both)
    }

    /// Decode steps to record, or the default.
    pub fn decode_active(&self) -> u64 {
        self.decode_active.unwrap_or(DEFAULT_DECODE_ACTIVE)
    }

    /// The validated window.
    pub fn window(&self) -> anyhow::Result<Window> {
        Ok(Window::new(self.decode_active(), self.decode_skip_first)?)
    }

    /// The phases.
    pub fn phases(&self) -> PhaseSelection {
        self.phase().into()
    }

    /// The request of the pipeline `patch` and `collect` share: resolve `target`, set this
    /// window with the `max_new_tokens` policy.
    pub fn pipeline_request<'a>(
        &self,
        target: Request<'a>,
        max_new_tokens: TokenBudget,
    ) -> anyhow::Result<npuprof_workflow::patch::Request<'a>> {
        Ok(npuprof_workflow::patch::Request {
            target,
            window: PatchRequest {
                phases: self.phases(),
                window: self.window()?,
                max_new_tokens,
                modules: false,
            },
        })
    }

    /// Settles `request` on the resolved `target` for `patch` and `collect` alike: on a terminal
    /// (not under `json`, `--yes`, `CI`) asks the collection guide's open questions, then sets
    /// the phases and window answered (the token budget policy stays the request's).
    pub fn settle(
        &mut self,
        target: &Target,
        json: bool,
        request: &mut PatchRequest,
    ) -> anyhow::Result<()> {
        if crate::ask::should_ask(self, json) {
            crate::ask::ask_window(self, target)?;
            request.phases = self.phases();
            request.window = self.window()?;
        }
        Ok(())
    }

    /// Whether the collection guide's questions are still open (phase or decode steps not given).
    pub fn undecided(&self) -> bool {
        self.phase.is_none()
            || (self.phases().includes(npuprof_schedule::Phase::Decode)
                && self.decode_active.is_none())
    }
}

/// How `summary`, `compare` and `advise` report: which phase, and in which forms.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ReportArgs {
    /// Only this phase (`prefill`, `decode`, …).
    #[arg(long, value_name = "PHASE")]
    pub phase: Option<String>,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Also write a self-contained HTML page (inline SVG charts, no network) to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

impl ReportArgs {
    /// Writes `html()` to the `--html` file, if one was given, and says so on stderr.
    pub fn write_html(&self, html: impl FnOnce() -> String) -> anyhow::Result<()> {
        let Some(file) = &self.html else {
            return Ok(());
        };
        npuprof_journal::replace_file_unlinked(file, html().as_bytes())
            .with_context(|| format!("{}: cannot write the HTML page", file.display()))?;
        errln!("npuprof: wrote {}", file.display());
        Ok(())
    }
}

/// A serving engine's definition id (`--engine`), checked against the definitions in use.
pub fn engine_id(value: &str) -> Result<String, String> {
    let catalog = npuprof_repository::Catalog::global().map_err(|e| e.to_string())?;
    let definitions = catalog.engines();
    if definitions.iter().any(|d| d.id == value) {
        return Ok(value.to_owned());
    }
    let known: Vec<&str> = definitions.iter().map(|d| d.id.as_str()).collect();
    Err(format!(
        "no serving-engine definition `{value}` (known: {})",
        known.join(", ")
    ))
}
