//! The repository definitions: one YAML file per repository kind, compiled in from
//! `crates/repository/definitions/`, plus the files [`ENV_VAR`] names (a fork with its own
//! layout, or a serving engine renamed, is a definition file, not code). Every kind
//! (`repository`-style recipes and `serving-engine`) is loaded and validated here, once per
//! process, and every error is a [`DefinitionError`] naming the file and the key. A recipes
//! definition is chosen for a repository by its root markers, and [`find_root`] is the one way
//! npuprof finds a repository; a serving engine by its id or by its package (`engine::detect`).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use npuprof_runs::probe::FileProblem;
use serde::{Deserialize, Serialize};

use crate::definition::Definitions;
use crate::engine::EngineDefinition;
use crate::layout::ConfigPlace;

/// The definitions compiled into npuprof: `(file name, text)`, the default recipes one first.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "cann-recipes-infer.yaml",
        include_str!("../definitions/cann-recipes-infer.yaml"),
    ),
    (
        "vllm-ascend.yaml",
        include_str!("../definitions/vllm-ascend.yaml"),
    ),
    ("sglang.yaml", include_str!("../definitions/sglang.yaml")),
];

/// The environment variable naming extra definition files (a path list, like `PATH`); they are
/// tried before the compiled-in ones.
pub const ENV_VAR: &str = "NPUPROF_DEFINITIONS";

/// The largest definition file read (the built-in ones are a few KiB).
pub const DEFINITION_CAP: u64 = 1 << 20;

/// A definition file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("repository definition `{file}`: {key}: {message}")]
pub struct DefinitionError {
    /// The file.
    pub file: String,
    /// The key at fault (`.`-separated; `(file)` when the file itself is).
    pub key: String,
    /// What is wrong.
    pub message: String,
}

/// What a definition file describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A recipes-style repository: launch scripts, models with run configs, profiler factories.
    Recipes,
    /// A serving engine driven over HTTP (no schedule; windows by wall time).
    ServingEngine,
}

/// The part of every definition file read before its kind's body.
#[derive(Deserialize)]
struct Header {
    id: String,
    kind: Kind,
}

/// Every usable definition, keyed by id.
#[derive(Debug, Clone)]
pub struct Catalog {
    /// The recipes-kind definitions, extra files first.
    recipes: Vec<Definitions>,
    /// The serving-engine definitions, extra files first.
    engines: Vec<EngineDefinition>,
}

/// A serde error as `(key, message)`: yaml_serde writes `key.path: message`.
pub(crate) fn split_serde_error(text: &str) -> (String, String) {
    match text.split_once(": ") {
        Some((key, rest)) if !key.contains(' ') => (key.to_owned(), rest.to_owned()),
        _ => ("(file)".to_owned(), text.to_owned()),
    }
}

impl Catalog {
    /// Loads definition files `(name, text)`; ids must be unique.
    pub fn load<'a>(
        files: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Catalog, DefinitionError> {
        let mut catalog = Catalog {
            recipes: Vec::new(),
            engines: Vec::new(),
        };
        for (file, text) in files {
            let error = |(key, message): (String, String)| DefinitionError {
                file: file.to_owned(),
                key,
                message,
            };
            crate::yaml_blocks::check_depth(text)
                .map_err(|e| error((String::new(), e.to_string())))?;
            let header: Header =
                yaml_serde::from_str(text).map_err(|e| error(split_serde_error(&e.to_string())))?;
            let taken = catalog.get(&header.id).is_some() || catalog.engine(&header.id).is_some();
            if taken {
                return Err(error((
                    "id".to_owned(),
                    format!("`{}` is already defined", header.id),
                )));
            }
            match header.kind {
                Kind::Recipes => {
                    let mut definitions = Definitions::parse(text).map_err(error)?;
                    definitions.source = if BUILTIN.iter().any(|(name, _)| *name == file) {
                        format!("built in ({file})")
                    } else {
                        file.to_owned()
                    };
                    catalog.recipes.push(definitions);
                }
                Kind::ServingEngine => {
                    let definition = EngineDefinition::parse(text).map_err(error)?;
                    catalog.engines.push(definition);
                }
            }
        }
        Ok(catalog)
    }

    /// The compiled-in definitions (their validity is a test).
    pub fn builtin() -> &'static Catalog {
        static BUILTIN_CATALOG: OnceLock<Catalog> = OnceLock::new();
        BUILTIN_CATALOG.get_or_init(|| {
            Catalog::load(BUILTIN.iter().copied())
                .expect("the compiled-in definitions are valid (checked by a test)")
        })
    }

    /// The definitions in use: the files [`ENV_VAR`] names, then the compiled-in ones; read once
    /// per process.
    pub fn global() -> Result<&'static Catalog, DefinitionError> {
        static GLOBAL: OnceLock<Result<Catalog, DefinitionError>> = OnceLock::new();
        GLOBAL
            .get_or_init(|| {
                let extra = std::env::var_os(ENV_VAR)
                    .map(|v| std::env::split_paths(&v).collect::<Vec<PathBuf>>())
                    .unwrap_or_default();
                Catalog::with_files(&extra)
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The definitions of `files` (tried first), then the compiled-in ones.
    pub fn with_files(files: &[PathBuf]) -> Result<Catalog, DefinitionError> {
        let mut texts = Vec::with_capacity(files.len());
        for path in files.iter().filter(|p| !p.as_os_str().is_empty()) {
            let file = path.display().to_string();
            let refuse = |message: String| DefinitionError {
                file: file.clone(),
                key: "(file)".to_owned(),
                message,
            };
            // A regular file of bounded size only: a FIFO would hang the read, a device
            // (`/dev/zero`) would never end.
            let bytes = match npuprof_runs::probe::read_capped(path, DEFINITION_CAP) {
                Ok(Ok(bytes)) => bytes,
                Ok(Err(size)) => {
                    return Err(refuse(format!(
                        "it is {size} bytes; a definition file is at most {DEFINITION_CAP} bytes"
                    )));
                }
                Err(FileProblem::NotRegular(kind)) => {
                    return Err(refuse(format!(
                        "it is {}, not a regular file",
                        kind.describe()
                    )));
                }
                Err(FileProblem::Missing) => return Err(refuse("it does not exist".to_owned())),
                Err(FileProblem::Unreadable { message, .. }) => {
                    return Err(refuse(format!("cannot read it: {message}")));
                }
            };
            let text =
                String::from_utf8(bytes).map_err(|_| refuse("it is not UTF-8 text".to_owned()))?;
            texts.push((file, text));
        }
        Catalog::load(
            texts
                .iter()
                .map(|(f, t)| (f.as_str(), t.as_str()))
                .chain(BUILTIN.iter().copied()),
        )
    }

    /// The place of a run config path `rel` (relative to a scanned root) in the first
    /// definition's layout that has one, with that definition.
    pub fn place_of<'a>(&self, rel: &'a str) -> Option<(ConfigPlace<'a>, &Definitions)> {
        self.recipes
            .iter()
            .find_map(|d| d.layout.place_of(rel).map(|place| (place, d)))
    }

    /// Every recipes-kind definition, in the order they are tried.
    pub fn recipes(&self) -> &[Definitions] {
        &self.recipes
    }

    /// The recipes-kind definition with this id.
    pub fn get(&self, id: &str) -> Option<&Definitions> {
        self.recipes.iter().find(|d| d.id == id)
    }

    /// Every serving-engine definition, in the order they are tried.
    pub fn engines(&self) -> &[EngineDefinition] {
        &self.engines
    }

    /// The serving-engine definition with this id.
    pub fn engine(&self, id: &str) -> Option<&EngineDefinition> {
        self.engines.iter().find(|d| d.id == id)
    }

    /// The definition of the repository at `repo`: the first whose root markers it holds, else
    /// the compiled-in default (a directory that only holds models is read the default way).
    /// Which definition applies to the repository at `repo`, and why: the first whose root
    /// markers it holds, else the compiled-in default.
    pub fn for_repo_why(&self, repo: &Path) -> (&Definitions, String) {
        match self.recipes.iter().find(|d| d.layout.is_root(repo)) {
            Some(d) => (
                d,
                format!(
                    "its root markers ({}) are here",
                    d.layout
                        .root_markers
                        .iter()
                        .map(|m| format!("{m}/"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
            None => (
                self.for_repo(repo),
                "no definition's root markers are here: the default applies".to_owned(),
            ),
        }
    }

    /// The definition of the repository at `repo` (see [`Catalog::for_repo_why`]).
    pub fn for_repo(&self, repo: &Path) -> &Definitions {
        self.recipes
            .iter()
            .find(|d| d.layout.is_root(repo))
            .or_else(|| self.get(Definitions::builtin().id.as_str()))
            .unwrap_or_else(|| Definitions::builtin())
    }

    /// The nearest directory at or above `start` that holds npuprof's journal directory or
    /// every root marker of a definition.
    pub fn find_root(&self, start: &Path) -> Option<PathBuf> {
        start.ancestors().find_map(|dir| {
            let marked = dir.join(npuprof_journal::JOURNAL_DIR).is_dir()
                || self.recipes.iter().any(|d| d.layout.is_root(dir));
            marked.then(|| dir.to_path_buf())
        })
    }
}

/// The definition of the repository at `repo`, from the definitions in use.
pub fn definitions_for(repo: &Path) -> Result<&'static Definitions, DefinitionError> {
    Ok(Catalog::global()?.for_repo(repo))
}

/// The repository holding `start` (see [`Catalog::find_root`]), with the definitions in use.
pub fn find_root(start: &Path) -> Result<Option<PathBuf>, DefinitionError> {
    Ok(Catalog::global()?.find_root(start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bundled_definition_loads() {
        for (file, text) in BUILTIN {
            let catalog = Catalog::load([(*file, *text)])
                .unwrap_or_else(|e| panic!("{file} does not load: {e}"));
            assert_eq!(
                catalog.recipes().len() + catalog.engines().len(),
                1,
                "{file}"
            );
        }
        let all = Catalog::builtin();
        assert_eq!(all.recipes().len() + all.engines().len(), BUILTIN.len());
        assert!(all.get("cann-recipes-infer").is_some());
        assert!(all.engine("vllm-ascend").is_some());
        assert!(all.engine("cann-recipes-infer").is_none());
    }

    #[test]
    fn a_bad_definition_names_its_file_and_key() {
        let text = BUILTIN[0].1;
        let wrong_kind = text.replace("kind: recipes", "kind: nonsense");
        let e = Catalog::load([("fork.yaml", wrong_kind.as_str())]).unwrap_err();
        assert_eq!(
            (e.file.as_str(), e.key.as_str()),
            ("fork.yaml", "kind"),
            "{e}"
        );
        let no_stem = text.replace("case: \"{model_name}_{stem}\"", "case: x");
        let e = Catalog::load([("fork.yaml", no_stem.as_str())]).unwrap_err();
        assert_eq!(e.key, "layout.case", "{e}");
        assert!(
            e.to_string()
                .starts_with("repository definition `fork.yaml`: layout.case:")
        );
        let typo = text.replace("  models: models\n", "  modles: models\n");
        let e = Catalog::load([("fork.yaml", typo.as_str())]).unwrap_err();
        assert!(e.key.starts_with("layout"), "{e}");
        assert!(e.message.contains("modles"), "{e}");
        let twice = Catalog::load([("a.yaml", text), ("b.yaml", text)]).unwrap_err();
        assert_eq!((twice.file.as_str(), twice.key.as_str()), ("b.yaml", "id"));
    }

    #[test]
    fn extra_files_are_tried_first_and_chosen_by_their_markers() {
        let dir = tempfile::tempdir().unwrap();
        let fork = BUILTIN[0]
            .1
            .replace("id: cann-recipes-infer", "id: fork")
            .replace(
                "root_markers: [executor, models]",
                "root_markers: [engine, recipes]",
            );
        let file = dir.path().join("fork.yaml");
        std::fs::write(&file, fork).unwrap();
        let catalog = Catalog::with_files(std::slice::from_ref(&file)).unwrap();
        assert_eq!(catalog.recipes()[0].id, "fork");
        let repo = dir.path().join("repo");
        for d in ["engine", "recipes/m"] {
            std::fs::create_dir_all(repo.join(d)).unwrap();
        }
        assert_eq!(catalog.for_repo(&repo).id, "fork");
        assert_eq!(catalog.for_repo(dir.path()).id, "cann-recipes-infer");
        assert_eq!(
            catalog.find_root(&repo.join("recipes/m")),
            Some(repo.clone())
        );
        assert_eq!(Catalog::builtin().find_root(&repo.join("recipes/m")), None);
        let missing = Catalog::with_files(&[dir.path().join("none.yaml")]).unwrap_err();
        assert_eq!(missing.key, "(file)");
    }
}
