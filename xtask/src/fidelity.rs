//! `cargo xtask fidelity`: holds npuprof's torch_npu facts to the real torch-npu wheels.
//!
//! For each build (default: the six of `builds::BUILDS`), downloads the wheel from PyPI into
//! `target/fidelity/wheels/` (cached), extracts `torch_npu/profiler/**`, and runs
//! `xtask/fidelity/fidelity.py check` on it with npuprof's facts (`facts`, read from the
//! crates). No NPU and no torch are needed. Prints a check × build table (ok / drift / error)
//! and each cell's one-line reason; exits 0 when every check is ok, 1 on any drift, 2 when a
//! check could not run or a wheel could not be had. Not part of `cargo test`: it needs the
//! registry. See docs/fidelity.md.

mod builds;
mod facts;
#[cfg(test)]
mod tests;
mod wheels;

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use crate::build::{target_dir, workspace_root};
use builds::Build;
use wheels::Unavailable;

/// `--json` schema version.
const SCHEMA_VERSION: u32 = 1;

/// The checks, in table order (the Python script's `CHECKS`).
const CHECKS: [&str; 6] = ["schedule", "texts", "levels", "paths", "api", "aicore-none"];

/// Drift lines shown per cell after its reason (`--json` has them all).
const DETAILS_SHOWN: usize = 4;

/// Options of the fidelity harness.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Comma-separated torch-npu versions (default: every build of xtask/src/fidelity/builds.rs).
    #[arg(long)]
    pub builds: Option<String>,
    /// Keep the extracted `torch_npu/profiler/` trees, the facts and the case trees under
    /// target/fidelity/ (the wheels are always kept, as the download cache).
    #[arg(long)]
    pub keep: bool,
    /// When a wheel cannot be downloaded (registry unreachable), print `skipped: …` and exit 0.
    #[arg(long)]
    pub skip_offline: bool,
    /// Print the results as JSON on stdout (schema_version 1) instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// One check's result, as the Python side reports it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct CheckResult {
    check: String,
    /// `ok`, `drift` or `error`.
    status: String,
    reason: String,
    #[serde(default)]
    details: Vec<String>,
    /// texts only: the texts present in this build.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    present: Vec<String>,
}

/// One build's results.
#[derive(Debug, Serialize, Deserialize)]
struct BuildResult {
    build: String,
    /// The wheel's file name.
    #[serde(default)]
    wheel: String,
    checks: Vec<CheckResult>,
}

/// The whole run (`--json`).
#[derive(Debug, Serialize)]
struct Document {
    schema_version: u32,
    builds: Vec<BuildResult>,
    /// Facts that hold across builds (e.g. a text verify matches that no build prints).
    across_builds: Vec<String>,
    /// `ok`, `drift` or `error`: the worst status of any cell.
    status: &'static str,
}

/// Runs the harness.
pub fn run(args: &Args) -> anyhow::Result<std::process::ExitCode> {
    let selected = builds::select(args.builds.as_deref())?;
    if selected.is_empty() {
        bail!("--builds names no build");
    }
    let root = workspace_root();
    let work = target_dir(&root).join("fidelity");
    let script = root.join("xtask/fidelity/fidelity.py");
    let wheel_dir = work.join("wheels");
    let cases = work.join("cases");
    let _ = std::fs::remove_dir_all(&cases);

    let texts = facts::texts(builds::BUILDS)?;
    let schedule = facts::schedule_grid();
    let levels = facts::levels(&cases)?;
    let paths = facts::paths(&cases)?;

    let mut results = Vec::new();
    for build in &selected {
        let wheel = match wheels::wheel(&wheel_dir, build) {
            Ok(w) => w,
            Err(Unavailable::Download(why)) if args.skip_offline => {
                println!("skipped: cargo xtask fidelity ({why}; the registry may be unreachable)");
                return Ok(std::process::ExitCode::SUCCESS);
            }
            Err(Unavailable::Download(why)) => bail!("{why} (--skip-offline skips instead)"),
            Err(Unavailable::Other(e)) => return Err(e),
        };
        let tree = work.join("extracted").join(build.version);
        wheels::extract(&script, &wheel, &tree)?;
        let facts = facts::Facts {
            build: build.version.to_owned(),
            schedule: Vec::new(),
            texts: texts.clone(),
            levels: levels.clone(),
            paths: facts::Paths {
                root: paths.root.clone(),
                cases: Vec::new(),
                suggested: Vec::new(),
            },
            api: facts::Api {
                fake_root: root.join("tests/fake_torch_npu"),
                trace_handler_alternatives: npuprof_lint::torch_npu::TRACE_HANDLER_ALTERNATIVES,
            },
            aicore_none: facts::aicore_none(),
        };
        let facts_path = work.join(format!("facts-{}.json", build.version));
        write_facts(&facts_path, facts, &schedule, &paths)?;
        let mut result = check(&script, &tree, &facts_path, build)?;
        result.wheel = wheel
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !facts::lint_knows(build)
            && let Some(c) = result.checks.iter_mut().find(|c| c.check == "aicore-none")
        {
            c.status = "error".to_owned();
            c.reason = format!(
                "npuprof_lint::torch_npu::BUILDS has no row for {}: add one",
                build.version
            );
        }
        results.push(result);
        if !args.keep {
            let _ = std::fs::remove_dir_all(&tree);
            let _ = std::fs::remove_file(&facts_path);
        }
    }
    if !args.keep {
        let _ = std::fs::remove_dir_all(&cases);
        let _ = std::fs::remove_dir_all(work.join("extracted"));
    }
    let across = across_builds(&texts, &results, &selected);
    let status = worst(&results, &across);
    if args.json {
        let doc = Document {
            schema_version: SCHEMA_VERSION,
            builds: results,
            across_builds: across,
            status,
        };
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print!("{}", table(&results, &across));
    }
    Ok(std::process::ExitCode::from(match status {
        "ok" => 0,
        "drift" => 1,
        _ => 2,
    }))
}

/// Writes the facts with the shared parts (grid, path cases) filled in without copying them.
fn write_facts(
    path: &Path,
    facts: facts::Facts,
    schedule: &[facts::ScheduleCase],
    paths: &facts::Paths,
) -> anyhow::Result<()> {
    let mut value = serde_json::to_value(&facts)?;
    value["schedule"] = serde_json::to_value(schedule)?;
    value["paths"] = serde_json::to_value(paths)?;
    std::fs::write(path, serde_json::to_vec(&value)?)
        .with_context(|| format!("writing {}", path.display()))
}

/// Runs the Python checks on one extracted wheel.
fn check(script: &Path, tree: &Path, facts: &Path, build: &Build) -> anyhow::Result<BuildResult> {
    let out = Command::new("python3")
        .arg(script)
        .arg("check")
        .arg(tree)
        .arg(facts)
        // The fake behaves as the build checked (FAKE_TORCH_NPU_BUILD; FAKE_TORCH_NPU_VERSION is
        // the version it records).
        .env("FAKE_TORCH_NPU_BUILD", build.version)
        .env("FAKE_TORCH_NPU_VERSION", build.version)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .context("running python3")?;
    if !out.status.success() {
        bail!(
            "{} check {} failed: {}",
            script.display(),
            build.version,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let result: BuildResult = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("reading the checks of {}", build.version))?;
    let names: Vec<&str> = result.checks.iter().map(|c| c.check.as_str()).collect();
    if names != CHECKS {
        bail!("the script ran checks {names:?}, the harness expects {CHECKS:?}");
    }
    Ok(result)
}

/// Texts npuprof matches that none of the checked builds prints (only when every default build
/// was checked: a subset cannot say "no build").
fn across_builds(
    texts: &[facts::Text],
    results: &[BuildResult],
    selected: &[Build],
) -> Vec<String> {
    if selected.len() < builds::BUILDS.len() {
        return Vec::new();
    }
    texts
        .iter()
        .filter(|t| {
            !results.iter().any(|r| {
                r.checks
                    .iter()
                    .any(|c| c.check == "texts" && c.present.contains(&t.text))
            })
        })
        .map(|t| {
            format!(
                "{:?} ({}) is printed by none of the builds",
                t.text, t.owner
            )
        })
        .collect()
}

fn worst(results: &[BuildResult], across: &[String]) -> &'static str {
    let statuses = results
        .iter()
        .flat_map(|r| r.checks.iter().map(|c| c.status.as_str()));
    let mut worst = if across.is_empty() { "ok" } else { "drift" };
    for s in statuses {
        match s {
            "ok" => {}
            "drift" if worst == "ok" => worst = "drift",
            "drift" => {}
            _ => return "error",
        }
    }
    worst
}

/// The check × build table, then each build's reasons.
fn table(results: &[BuildResult], across: &[String]) -> String {
    let mut out = String::new();
    let _ = write!(out, "| check |");
    for r in results {
        let _ = write!(out, " {} |", r.build);
    }
    let _ = write!(out, "\n|---|");
    for _ in results {
        let _ = write!(out, "---|");
    }
    out.push('\n');
    for name in CHECKS {
        let _ = write!(out, "| {name} |");
        for r in results {
            let status = r
                .checks
                .iter()
                .find(|c| c.check == name)
                .map_or("?", |c| c.status.as_str());
            let _ = write!(out, " {status} |");
        }
        out.push('\n');
    }
    for r in results {
        let _ = write!(out, "\n{} ({})\n", r.build, r.wheel);
        for c in &r.checks {
            let _ = writeln!(out, "  {:<12} {:<5} {}", c.check, c.status, c.reason);
            if c.status == "drift" {
                for d in c.details.iter().skip(1).take(DETAILS_SHOWN) {
                    let _ = writeln!(out, "  {:<12} {:<5} {d}", "", "");
                }
                let more = c.details.len().saturating_sub(DETAILS_SHOWN + 1);
                if more > 0 {
                    let _ = writeln!(
                        out,
                        "  {:<12} {:<5} … {more} more (--json lists all)",
                        "", ""
                    );
                }
            }
        }
    }
    if !across.is_empty() {
        out.push_str("\nacross builds\n");
        for a in across {
            let _ = writeln!(out, "  drift: {a}");
        }
    }
    out
}
