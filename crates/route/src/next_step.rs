//! The next command to run for each route.

use std::path::Path;

use crate::report::{Mechanism, MechanismId, Next, Route, RunConfig};
use crate::walk::SkippedTree;
use crate::yaml_configs::split_config_path;

/// The next step: `npuprof patch` on a profilable config (framework), the mechanism's knobs
/// (framework-other), or `npuprof inject` on the likeliest entry script (inject).
pub(crate) fn next_step(
    root: &Path,
    route: Route,
    configs: &[RunConfig],
    mechanisms: &[Mechanism],
    entries: &[String],
    trees: &[(String, SkippedTree)],
) -> Next {
    let repo = root.display().to_string();
    match route {
        Route::Framework => framework(&root.display().to_string(), configs),
        Route::FrameworkOther => {
            let mechanism = mechanisms.iter().find(|m| m.id != MechanismId::RecipesProfilerManager);
            match mechanism {
                Some(m)
                    if matches!(
                        m.id,
                        MechanismId::VllmTorchProfiler | MechanismId::SglangTorchProfiler
                    ) =>
                {
                    // Which switch a version reads depends on the version: route on its
                    // checkout or site-packages says; never one it may not read.
                    let collect = crate::mechanisms::engines_of(m.id)
                        .next()
                        .map(|d| {
                            let words: Vec<String> =
                                d.collect_command.iter().chain(&d.serve_command).cloned().collect();
                            npuprof_repository::shell::join(&words)
                        });
                    Next::text(
                        collect,
                        format!(
                            "{}: collect sets the switch the installed version reads (`npuprof route` on its checkout or site-packages directory names it); by hand: {}; then `npuprof verify` the output",
                            m.description,
                            m.knobs.join("; ")
                        ),
                    )
                }
                Some(m) => Next::text(
                    None,
                    format!(
                        "{}: set its knobs ({}), run, then `npuprof verify` the output",
                        m.description,
                        m.knobs.join("; ")
                    ),
                ),
                None => Next::text(None, "no mechanism to drive".to_owned()),
            }
        }
        Route::Inject if mechanisms.is_empty() && examples_here(root, trees).is_some() => {
            let (tree, names) = examples_here(root, trees).unwrap_or_default();
            let first = format!("{}/{tree}/{}", repo.trim_end_matches('/'), names[0]);
            Next::run(
                argv(&[("route", None), (&first, None)]),
                format!(
                    "no profiled repository here: the examples under {tree}/ ({}) are repositories \
                     of their own, route one; or name an entry script of this one \
                     (`npuprof inject --entry <script.py> --dry-run`)",
                    names.join(", ")
                ),
            )
        }
        Route::Inject => match entries.first() {
            Some(entry) => Next::run(
                argv(&[("inject", None), ("--repo", Some(&repo)), ("--entry", Some(entry)), ("--dry-run", None)]),
                "write a torch_npu profiling harness around the entry script's loop (preview)"
                    .to_owned(),
            ),
            None => Next::text(
                Some(format!(
                    "npuprof inject {} --entry <script.py> --dry-run",
                    npuprof_repository::shell::join(&npuprof_repository::shell::option("--repo", &repo))
                )),
                "no script with an `if __name__ == \"__main__\"` guard found: name the entry script"
                    .to_owned(),
            ),
        },
    }
}

/// The first skipped examples tree that holds example directories: its path and their names,
/// sorted.
fn examples_here(root: &Path, trees: &[(String, SkippedTree)]) -> Option<(String, Vec<String>)> {
    trees
        .iter()
        .filter(|(_, kind)| *kind == SkippedTree::Examples)
        .find_map(|(tree, _)| {
            let mut names: Vec<String> = std::fs::read_dir(root.join(tree))
                .ok()?
                .filter_map(Result::ok)
                .filter(|entry| entry.file_type().is_ok_and(|t| t.is_dir()))
                .filter_map(|entry| entry.file_name().to_str().map(str::to_owned))
                .filter(|name| !name.starts_with('.'))
                .collect();
            names.sort();
            (!names.is_empty()).then(|| (tree.clone(), names))
        })
}

/// `npuprof <words>`: each `(word, value)` is a subcommand or flag with its value, if any
/// (see [`npuprof_repository::shell::option`]).
fn argv(words: &[(&str, Option<&str>)]) -> Vec<String> {
    let mut argv = vec!["npuprof".to_owned()];
    for (word, value) in words {
        match value {
            Some(value) => argv.extend(npuprof_repository::shell::option(word, value)),
            None => argv.push((*word).to_owned()),
        }
    }
    argv
}

fn framework(root: &str, configs: &[RunConfig]) -> Next {
    let mut usable: Vec<&RunConfig> = configs
        .iter()
        .filter(|c| c.profilable.decode && c.model.is_some())
        .collect();
    usable.sort_by_key(|c| (c.world_size.unwrap_or(1), c.path.clone()));
    // Which model to profile is the user's choice: with several, name none of them.
    let mut models: Vec<(&str, &str)> = usable
        .iter()
        .filter_map(|c| {
            let place = split_config_path(&c.path)?;
            Some((place.prefix, c.model.as_deref()?))
        })
        .collect();
    models.sort_unstable();
    models.dedup();
    match models.as_slice() {
        [] => {}
        [_] if usable.len() <= 1 => {}
        [(prefix, model)] => {
            let repo = nested(root, prefix);
            return Next::run(
                argv(&[
                    ("route", None),
                    ("--repo", Some(&repo)),
                    ("--model", Some(model)),
                ]),
                format!(
                    "{model} has {} run configs that record decode: list them with their windows and budgets, then patch the one you run",
                    usable.len()
                ),
            );
        }
        many => {
            let listed: Vec<&str> = many.iter().take(8).map(|(_, m)| *m).collect();
            let more = if many.len() > listed.len() {
                ", …"
            } else {
                ""
            };
            // Models of one repository nested below the root: name that repository.
            let prefix = many[0].0;
            let repo = if many.iter().all(|(p, _)| *p == prefix) {
                nested(root, prefix)
            } else {
                root.to_owned()
            };
            return Next::text(
                Some(format!(
                    "npuprof route {} --model <MODEL>",
                    npuprof_repository::shell::join(&npuprof_repository::shell::option(
                        "--repo", &repo
                    ))
                )),
                format!(
                    "{} models have run configs that record decode ({}{more}): name the one you profile; `route --model` lists its configs and the patch command",
                    many.len(),
                    listed.join(", ")
                ),
            );
        }
    }
    let (config, note) = match usable.first() {
        Some(c) => (
            Some(*c),
            "set the decode window and enable the profiler in this config (preview)",
        ),
        None => {
            let prefill = configs
                .iter()
                .find(|c| c.profilable.prefill && c.model.is_some());
            (
                prefill,
                "no config can capture decode (max_new_tokens ≤ 1 or no switch); prefill only (preview)",
            )
        }
    };
    match config {
        Some(c) => {
            let place = split_config_path(&c.path);
            let file = place.as_ref().map_or(c.path.as_str(), |p| p.yaml);
            let model = c.model.as_deref().unwrap_or_default();
            // A config of a repository nested below the scanned root: point --repo at it.
            let repo = nested(root, place.as_ref().map_or("", |p| p.prefix));
            Next::run(
                argv(&[
                    ("patch", None),
                    ("--repo", Some(&repo)),
                    ("--model", Some(model)),
                    ("--yaml", Some(file)),
                    ("--dry-run", None),
                ]),
                format!("{note}: {}", c.path),
            )
        }
        None => Next::text(
            None,
            format!(
                "no run config with model_config.enable_profiler under {}",
                crate::yaml_configs::configs_place(Path::new(root)).replace("<model>", "*")
            ),
        ),
    }
}

/// The repository at `prefix` below the scanned `root` (the root itself when empty).
fn nested(root: &str, prefix: &str) -> String {
    if prefix.is_empty() {
        root.to_owned()
    } else {
        format!("{}/{prefix}", root.trim_end_matches('/'))
    }
}

/// The next step for one model's configs: the patch preview of its one config that records
/// decode; with several, the command that resolves the one the user picks (`<YAML>`).
pub(crate) fn for_model(root: &str, model: &str, configs: &[RunConfig]) -> Next {
    let usable: Vec<&RunConfig> = configs.iter().filter(|c| c.profilable.decode).collect();
    match usable.as_slice() {
        [] => Next::text(
            None,
            format!("no run config of {model} can record decode (see each one's reason)"),
        ),
        [one] => {
            let file = split_config_path(&one.path).map_or(one.path.as_str(), |p| p.yaml);
            Next::run(
                argv(&[
                    ("patch", None),
                    ("--repo", Some(root)),
                    ("--model", Some(model)),
                    ("--yaml", Some(file)),
                    ("--dry-run", None),
                ]),
                format!(
                    "set the decode window and enable the profiler in its one config that records decode (preview): {}",
                    one.path
                ),
            )
        }
        many => Next::text(
            Some(format!(
                "npuprof route {} --model {} --yaml <YAML>",
                npuprof_repository::shell::join(&npuprof_repository::shell::option("--repo", root)),
                npuprof_repository::shell::quote(model)
            )),
            format!(
                "{} of its run configs record decode: name the one you run; `route --model --yaml` resolves its target and gives the patch command",
                many.len()
            ),
        ),
    }
}
