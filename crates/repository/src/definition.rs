//! One repository definition as data (a file of `crates/repository/definitions/`, see
//! [`crate::catalog`]): the layout, one entry per repository shape and one per model whose
//! profiling is switched by hand. Loaded and validated once.

use serde::{Deserialize, Serialize};

use crate::catalog::{Catalog, Kind};
use crate::layout::Layout;

/// The profiling families of the real target (see the table in `docs/repositories-and-route.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// A: the shared engine's profiler manager.
    SharedEngine,
    /// B: the legacy runner's factory, called from the model's own loop.
    LegacyRunner,
    /// C: multimedia pipelines (a hand-written profiler, or none).
    Multimedia,
    /// D: standalone recipes.
    Standalone,
}

impl Family {
    /// The letter the reference uses (`A` to `D`).
    pub fn letter(self) -> char {
        match self {
            Family::SharedEngine => 'A',
            Family::LegacyRunner => 'B',
            Family::Multimedia => 'C',
            Family::Standalone => 'D',
        }
    }
}

/// Which launcher runs a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LauncherKind {
    /// The shared `executor/scripts/infer.sh` → the engine.
    Shared,
    /// The model's own `models/<m>/infer.py` (which the shared launcher prefers when it exists).
    Model,
}

/// Where a shape's phase call sites are searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SiteScope {
    /// In the factory's own files.
    FactoryFiles,
    /// In the model's directory (`models/<m>/**.py`, its own loop) when calls are there, else
    /// in the factory's files (the base runner's loop).
    ModelDirElseFactoryFiles,
}

/// How a phase is switched off without breaking the code around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PhaseOff {
    /// Replace the phase's factory call by the factory's disabled stand-in (`Fake()`), giving
    /// the stand-in every method the caller uses on it.
    ReplaceCallWithDisabled,
    /// Pass `False` as the factory's enable argument at the phase's call.
    DisableArgument,
}

/// What npuprof does with the prefill window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PrefillPolicy {
    /// The prefill call must pass `active=1, repeat=1, skip_first=0` (the engine steps it once).
    Pinned,
    /// The model's own prefill window is kept (its loop is built around it).
    AsWritten,
}

/// How a token budget turns into decode forwards (= decode `step()` calls).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BudgetRule {
    /// Exactly `max_new_tokens` decode forwards, whatever `next_n` (the offline scheduler).
    ForwardsEqualBudget,
    /// `max_new_tokens − 1` decode forwards (the prefill emits the first token).
    ForwardsBudgetMinusOne,
    /// Stops on tokens: with MTP (`next_n`) a forward may emit up to `next_n + 1` tokens, so
    /// `floor((max_new_tokens − 1) / (next_n + 1))` forwards are guaranteed.
    Tokens,
    /// Depends on the data (draft-model acceptance, EOS): no count can be promised.
    DataDependent,
}

/// The budget rules of a shape, by run mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetRules {
    /// Offline runs.
    pub offline: BudgetRule,
    /// Online (PD disaggregated) runs.
    pub online: BudgetRule,
}

/// Where the results of a run land, relative to what.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResultBase {
    /// `$WORK_DIR/$RES_PATH` (the launcher sets `WORK_DIR=models/<m>`).
    WorkDir,
    /// `$RES_PATH` relative to the working directory of the launch.
    WorkingDir,
}

/// The result layout of a shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultLayout {
    /// What the result root is relative to.
    pub base: ResultBase,
    /// The phase's sub-path of the result root: a pattern with `{phase}`, or `from-call` (read
    /// from each phase call's save path).
    pub phase_path: String,
}

/// YAML key paths of a shape's run configs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigKeys {
    /// The profiler switch.
    pub switch: Vec<String>,
    /// The token budget.
    pub budget: Vec<String>,
    /// The engine's budget when the key is absent.
    pub budget_default: u64,
    /// MTP speculative steps.
    pub next_n: Vec<String>,
    /// A draft model's type (`none` or absent: no draft model).
    #[serde(default)]
    pub draft: Option<Vec<String>>,
}

/// A per-model override of a shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelOverride {
    /// The model directory under `models/`.
    pub model: String,
    /// Its budget rules, when they differ from the shape's.
    #[serde(default)]
    pub budget_rule: Option<BudgetRules>,
    /// What to know about it.
    pub note: String,
}

/// One repository shape whose profiler npuprof can set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shape {
    /// Stable identifier.
    pub id: String,
    /// The family.
    pub family: Family,
    /// One line for people.
    pub summary: String,
    /// The launcher this shape is used with.
    pub launcher: LauncherKind,
    /// Files (relative to the repository) that hold the profiler factory.
    pub factory_files: Vec<String>,
    /// Where the phase call sites are.
    pub sites: SiteScope,
    /// How a phase is switched off.
    pub phase_off: PhaseOff,
    /// What happens to the prefill window.
    pub prefill: PrefillPolicy,
    /// The run config's key paths.
    pub config: ConfigKeys,
    /// The budget rules.
    pub budget_rule: BudgetRules,
    /// The rules when the run config names a draft model (the shape's rules otherwise apply).
    #[serde(default)]
    pub draft_budget_rule: Option<BudgetRules>,
    /// What route, plan and patch say when the run config names a draft model (`{draft}`: its
    /// type or method).
    #[serde(default)]
    pub draft_note: Option<String>,
    /// Where results land.
    pub results: ResultLayout,
    /// Per-model overrides.
    #[serde(default)]
    pub models: Vec<ModelOverride>,
}

impl Shape {
    /// The override for `model`, if any.
    pub fn model_override(&self, model: &str) -> Option<&ModelOverride> {
        self.models.iter().find(|m| m.model == model)
    }
}

/// How a model without a settable switch is profiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Toggle {
    /// An environment variable.
    EnvVar,
    /// A flag under `model_args` in the run config.
    ModelArgs,
    /// A command-line flag of its launch script.
    CliFlag,
    /// Only by editing the code.
    CodeEdit,
    /// There is no profiler.
    None,
}

/// A model profiled by hand (families C and D).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manual {
    /// The model directory under `models/`.
    pub model: String,
    /// Its family.
    pub family: Family,
    /// Its toggle.
    pub toggle: Toggle,
    /// What the user does, as an instruction.
    pub instruction: String,
    /// The command that runs it, from the repository (`{stem}`: the run config's file name
    /// without `.yaml`).
    #[serde(default)]
    pub launch: Option<ManualLaunch>,
    /// Where its profiler writes, relative to the repository (`{stem}` as in `launch`).
    #[serde(default)]
    pub results: Option<String>,
    /// Lines that show the launch, the toggle and the results path, found by their text.
    #[serde(default)]
    pub evidence: Vec<ManualEvidence>,
    /// Things to know about its launch.
    #[serde(default)]
    pub notes: Vec<String>,
}

/// The launch of a model profiled by hand.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManualLaunch {
    /// The working directory, relative to the repository.
    pub cwd: String,
    /// The command (`{stem}` is replaced).
    pub argv: Vec<String>,
}

/// A line of a model's own file that shows part of its manual target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManualEvidence {
    /// What the line shows.
    pub what: String,
    /// The file, relative to the repository.
    pub file: String,
    /// Text the line contains (the first such line is cited).
    pub find: String,
}

impl Toggle {
    /// The name users read (the definitions' spelling).
    pub fn name(self) -> &'static str {
        match self {
            Toggle::EnvVar => "env-var",
            Toggle::ModelArgs => "model-args",
            Toggle::CliFlag => "cli-flag",
            Toggle::CodeEdit => "code-edit",
            Toggle::None => "none",
        }
    }
}

/// Names a repository scan recognises by role.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Markers {
    /// The manager method that switches phases.
    pub phase_method: String,
    /// The key or flag that switches profiling on.
    pub switch_key: String,
    /// The run-config section holding the switch.
    pub switch_section: String,
    /// The shared engine's entry script (a model's own `infer.py` may hand the run to it).
    pub shared_entry: String,
    /// The shell script that chooses between a model's own `infer.py` and the shared entry.
    pub launcher_script: String,
    /// The functions Python code loads a run config with (dotted callee names).
    pub config_loaders: Vec<String>,
}

/// One repository definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Definitions {
    /// Stable identifier (definitions are keyed by it).
    pub id: String,
    /// What kind of repository it describes.
    pub kind: Kind,
    /// Where things are and how a run is launched.
    pub layout: Layout,
    /// Names recognised by role in a repository scan.
    pub markers: Markers,
    /// Shapes npuprof can patch.
    pub shapes: Vec<Shape>,
    /// Models profiled by hand.
    pub manual: Vec<Manual>,
    /// The file it was read from (a built-in one's name, or the `NPUPROF_DEFINITIONS` path).
    #[serde(skip)]
    pub source: String,
}

impl Definitions {
    /// The compiled-in default definition (cann-recipes-infer).
    pub fn builtin() -> &'static Definitions {
        &Catalog::builtin().recipes()[0]
    }

    /// Parses and validates one definition; the error is `(key, message)`.
    pub fn parse(text: &str) -> Result<Self, (String, String)> {
        let definitions: Definitions = yaml_serde::from_str(text)
            .map_err(|e| crate::catalog::split_serde_error(&e.to_string()))?;
        definitions.validate()?;
        Ok(definitions)
    }

    fn validate(&self) -> Result<(), (String, String)> {
        self.layout.validate()?;
        let mut ids: Vec<&str> = self.shapes.iter().map(|s| s.id.as_str()).collect();
        ids.sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
            return Err((
                "shapes".to_owned(),
                format!("two shapes share the id `{}`", w[0]),
            ));
        }
        for (i, shape) in self.shapes.iter().enumerate() {
            let key = |k: &str| format!("shapes[{i}].{k}");
            if shape.factory_files.is_empty() {
                return Err((
                    key("factory_files"),
                    format!("shape `{}` names no factory file", shape.id),
                ));
            }
            let keys = &shape.config;
            if keys.switch.is_empty() || keys.budget.is_empty() || keys.next_n.is_empty() {
                return Err((
                    key("config"),
                    format!("shape `{}` has an empty key path", shape.id),
                ));
            }
            for (f, file) in shape.factory_files.iter().enumerate() {
                crate::layout::check_relative(&key(&format!("factory_files[{f}]")), file)?;
            }
            let path = &shape.results.phase_path;
            if path != "from-call" {
                crate::layout::check_relative(&key("results.phase_path"), path)?;
            }
            if path != "from-call" && !path.contains("{phase}") {
                return Err((
                    key("results.phase_path"),
                    format!(
                        "shape `{}`: phase_path must contain {{phase}} or be from-call",
                        shape.id
                    ),
                ));
            }
        }
        for (i, manual) in self.manual.iter().enumerate() {
            let key = |k: &str| format!("manual[{i}].{k}");
            if !crate::layout::is_name(&manual.model) {
                return Err((
                    key("model"),
                    format!("`{}` is not a model directory's name", manual.model),
                ));
            }
            if let Some(launch) = &manual.launch {
                crate::layout::check_relative(&key("launch.cwd"), &launch.cwd)?;
            }
            if let Some(results) = &manual.results {
                crate::layout::check_relative(&key("results"), results)?;
            }
            for (e, evidence) in manual.evidence.iter().enumerate() {
                crate::layout::check_relative(
                    &key(&format!("evidence[{e}].file")),
                    &evidence.file,
                )?;
            }
        }
        Ok(())
    }

    /// The shape used with `launcher`, if one is defined.
    pub fn shape_for(&self, launcher: LauncherKind) -> Option<&Shape> {
        self.shapes.iter().find(|s| s.launcher == launcher)
    }

    /// The manual entry of `model`, if any.
    pub fn manual(&self, model: &str) -> Option<&Manual> {
        self.manual.iter().find(|m| m.model == model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFINITIONS_YAML: &str = crate::catalog::BUILTIN[0].1;

    #[test]
    fn builtin_definitions_parse_and_validate() {
        let d = Definitions::parse(DEFINITIONS_YAML).unwrap();
        assert_eq!(d.shapes.len(), 2);
        assert!(d.shape_for(LauncherKind::Shared).is_some());
        assert!(d.shape_for(LauncherKind::Model).is_some());
    }

    #[test]
    fn invalid_definitions_are_refused() {
        let bad = DEFINITIONS_YAML.replace("phase_path: prof/{phase}", "phase_path: prof");
        let (key, message) = Definitions::parse(&bad).unwrap_err();
        assert_eq!(key, "shapes[0].results.phase_path", "{message}");
        let dup = DEFINITIONS_YAML.replace("id: legacy-runner", "id: shared-engine");
        let (key, message) = Definitions::parse(&dup).unwrap_err();
        assert_eq!(key, "shapes");
        assert!(message.contains("share the id"), "{message}");
    }
}
