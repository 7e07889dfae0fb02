//! npuprof's facts about torch_npu, read from the project's crates, as the JSON document the
//! Python side checks against one wheel (`xtask/fidelity/fidelity.py`).
//!
//! Where a crate has a public source of truth the fact is read from it: the schedule arithmetic
//! (`npuprof_schedule`), the warnings it prints (`npuprof_schedule::STOP_IN_*`, `TRANSITION_*`),
//! lint's per-build table (`npuprof_lint::torch_npu`). Where it has not, the fact is observed
//! from the crate's behaviour: the files verify expects at each level are those it reports
//! missing from an empty output directory; the `analyse(...)` paths it suggests are collected
//! from its findings on a result tree. The texts verify's log scanner matches are listed here
//! (verify has no public list of them yet) and each is checked to be matched by
//! `npuprof_runs::logs::scan_log`, so the list cannot silently go stale.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, ensure};
use serde::Serialize;

use npuprof_runs::logs::{LogScan, scan_log};
use npuprof_schedule::{
    STOP_IN_RECORD, STOP_IN_RECORD_AND_SAVE, STOP_IN_WARMUP, Schedule, TRANSITION_RECORD_NONE,
    TRANSITION_RECORD_WARMUP, TRANSITION_WARMUP_NONE,
};
use npuprof_verify::{Code, NoProgress, Options, verify};

use super::builds::Build;

/// The facts document for one build.
#[derive(Debug, Serialize)]
pub struct Facts {
    /// The build being checked.
    pub build: String,
    /// Schedules and npuprof's action at each step.
    pub schedule: Vec<ScheduleCase>,
    /// Texts npuprof matches in logs or simulates.
    pub texts: Vec<Text>,
    /// Level → the files verify expects in ASCEND_PROFILER_OUTPUT/.
    pub levels: serde_json::Map<String, serde_json::Value>,
    /// analyse()'s path rule.
    pub paths: Paths,
    /// The fake torch_npu to compare with.
    pub api: Api,
    /// lint's per-build AiCoreNone table.
    pub aicore_none: AicoreNone,
}

/// One schedule of the grid.
#[derive(Debug, Serialize)]
pub struct ScheduleCase {
    /// torch_npu's keyword arguments, raw (before clamping).
    pub args: serde_json::Map<String, serde_json::Value>,
    /// npuprof's action at steps 0, 1, … (`NONE`, `WARMUP`, `RECORD`, `RECORD_AND_SAVE`).
    pub actions: Vec<&'static str>,
}

/// One text npuprof relies on.
#[derive(Debug, Clone, Serialize)]
pub struct Text {
    /// The text (a substring of what torch_npu prints).
    pub text: String,
    /// Which crate relies on it.
    pub owner: &'static str,
    /// The builds npuprof claims print it (`None`: no claim, shown only).
    pub builds: Option<Vec<String>>,
}

/// analyse()'s path rule: cases with npuprof's expected result, and verify's suggestions.
#[derive(Debug, Serialize)]
pub struct Paths {
    /// The case tree's root.
    pub root: PathBuf,
    /// Paths relative to `root` and the run directories npuprof says analyse() parses.
    pub cases: Vec<PathCase>,
    /// `analyse(...)` paths verify suggests on the tree's result directory.
    pub suggested: Vec<Suggested>,
}

/// One path of the case tree.
#[derive(Debug, Serialize)]
pub struct PathCase {
    /// Relative to the tree's root.
    pub path: String,
    /// The run directories analyse(path) parses, per npuprof.
    pub parses: Vec<String>,
}

/// One `analyse(...)` path found in verify's findings.
#[derive(Debug, Serialize)]
pub struct Suggested {
    /// The path as suggested (absolute, or relative to the tree's root).
    pub path: String,
    /// The finding's code.
    pub code: &'static str,
}

/// The fake torch_npu package root, and the `profile` methods lint relies on.
#[derive(Debug, Serialize)]
pub struct Api {
    /// The directory holding the fake `torch_npu` package.
    pub fake_root: PathBuf,
    /// `npuprof_lint::torch_npu::TRACE_HANDLER_ALTERNATIVES`: methods real `profile` must have.
    pub trace_handler_alternatives: &'static [&'static str],
}

/// The builds lint says replace AiCoreNone by PipeUtilization at Level1/Level2.
#[derive(Debug, Serialize)]
pub struct AicoreNone {
    /// Versions from `npuprof_lint::torch_npu::BUILDS`.
    pub promoting_builds: Vec<&'static str>,
}

/// What verify's log scanner matches: (text, a line holding it, what the scan must find).
/// SEAM: verify exposes no list of its texts yet (`logs::ROOT_MESSAGES` is private); when it
/// does (with the builds that print each), read it here instead and fill `Text::builds`.
const VERIFY_TEXTS: &[(&str, Matched)] = &[
    ("run failed", Matched::RunFailed),
    // 2.1.0.post10's spelling of a failed task.
    ("has not run successfully", Matched::RunFailed),
    ("Failed to export CANN Profiling data", Matched::Root),
    ("'msprof' command not found", Matched::Root),
    // 2.5.1 and older spell it unquoted.
    ("msprof command not found", Matched::Root),
    ("CANN Profiling data does not exist", Matched::Root),
    (
        "The profiling data cannot be parsed during the daemon process",
        Matched::Root,
    ),
    ("Profiling data parsing failed, error:", Matched::Root),
    ("The file size exceeds the preset value", Matched::SizeCap),
    ("chown", Matched::Ownership),
];

/// Which part of a [`LogScan`] a text lands in.
#[derive(Debug, Clone, Copy)]
enum Matched {
    RunFailed,
    Root,
    SizeCap,
    Ownership,
    Schedule,
}

impl Matched {
    fn found(self, scan: &LogScan) -> bool {
        match self {
            Matched::RunFailed => scan.run_failed_lines > 0,
            Matched::Root => !scan.root_messages.is_empty(),
            Matched::SizeCap => !scan.size_cap.is_empty(),
            Matched::Ownership => !scan.ownership.is_empty(),
            Matched::Schedule => !scan.schedule_warnings.is_empty(),
        }
    }
}

/// The texts, each checked to be matched by verify's scanner (an error names a stale entry).
pub fn texts(all_builds: &[Build]) -> anyhow::Result<Vec<Text>> {
    let every: Vec<String> = all_builds.iter().map(|b| b.version.to_owned()).collect();
    let schedule = [
        STOP_IN_WARMUP,
        STOP_IN_RECORD,
        STOP_IN_RECORD_AND_SAVE,
        TRANSITION_RECORD_NONE,
        TRANSITION_WARMUP_NONE,
        TRANSITION_RECORD_WARMUP,
    ];
    let mut out = Vec::new();
    // The schedule crate simulates every build: its warnings are claimed for all of them, and
    // verify must recognise each in a log.
    for text in schedule {
        ensure_matched(text, Matched::Schedule)?;
        out.push(Text {
            text: text.to_owned(),
            owner: "npuprof-schedule (and verify's log scan)",
            builds: Some(every.clone()),
        });
    }
    for &(text, kind) in VERIFY_TEXTS {
        ensure_matched(text, kind)?;
        out.push(Text {
            text: text.to_owned(),
            owner: "npuprof-verify logs",
            builds: None,
        });
    }
    Ok(out)
}

fn ensure_matched(text: &str, kind: Matched) -> anyhow::Result<()> {
    let line = format!("[2026-01-01 00:00:00] [ERROR] [1] profiler.py: Task [X] {text}\n");
    let line = if matches!(kind, Matched::RunFailed) {
        line
    } else {
        line.replace("Task [X] ", "")
    };
    let scan = scan_log(line.as_bytes()).context("scanning a line")?;
    ensure!(
        kind.found(&scan),
        "verify's log scan no longer matches {text:?} as {kind:?}: update VERIFY_TEXTS in xtask/src/fidelity/facts.rs"
    );
    Ok(())
}

/// The schedule grid: every (wait, warmup, active, repeat, skip_first, skip_first_wait) in small
/// ranges with negative values and 0 for `active` (clamping), each with enough steps to pass the
/// last cycle.
pub fn schedule_grid() -> Vec<ScheduleCase> {
    let mut out = Vec::new();
    for wait in -1..=2i64 {
        for warmup in -1..=2i64 {
            for active in -1..=3i64 {
                for repeat in -1..=3i64 {
                    for skip_first in -1..=3i64 {
                        for skip_first_wait in -1..=1i64 {
                            out.push(schedule_case(
                                wait,
                                warmup,
                                active,
                                repeat,
                                skip_first,
                                skip_first_wait,
                            ));
                        }
                    }
                }
            }
        }
    }
    out
}

/// One schedule (raw arguments) and npuprof's action at each step up to two past its last cycle.
pub fn schedule_case(
    wait: i64,
    warmup: i64,
    active: i64,
    repeat: i64,
    skip_first: i64,
    skip_first_wait: i64,
) -> ScheduleCase {
    let s = Schedule::clamped(wait, warmup, active, repeat, skip_first, skip_first_wait);
    let steps = s.skip_first + s.cycle() * (s.repeat.max(1) + 1) + 2;
    let mut args = serde_json::Map::new();
    for (k, v) in [
        ("wait", wait),
        ("warmup", warmup),
        ("active", active),
        ("repeat", repeat),
        ("skip_first", skip_first),
        ("skip_first_wait", skip_first_wait),
    ] {
        args.insert(k.to_owned(), v.into());
    }
    ScheduleCase {
        args,
        actions: (0..steps).map(|step| s.action(step).name()).collect(),
    }
}

/// The levels verify distinguishes (`npuprof_runs::profiler_info::Level`).
const LEVELS: [&str; 4] = ["Level_none", "Level0", "Level1", "Level2"];

/// A run directory recorded with `level` (CPU + NPU, text export, two ranks) whose
/// ASCEND_PROFILER_OUTPUT/ is empty, as torch_npu lays it out.
fn write_run(dir: &Path, level: &str, rank: u32) -> anyhow::Result<()> {
    fs::create_dir_all(dir.join("FRAMEWORK"))?;
    fs::create_dir_all(dir.join("ASCEND_PROFILER_OUTPUT"))?;
    fs::create_dir_all(dir.join("PROF_000001_20260101000000000_ABCDEFGH/device_0/data"))?;
    let info = serde_json::json!({
        "config": {
            "common_config": {
                "activities": ["ProfilerActivity.CPU", "ProfilerActivity.NPU"],
                "schedule": {"wait": 0, "active": 1, "warmup": 1, "repeat": 1, "skip_first": 0},
                "record_shapes": false, "profile_memory": false, "with_stack": false,
                "with_flops": false, "with_modules": false
            },
            "experimental_config": {
                "_profiler_level": level,
                "_aic_metrics": "ACL_AICORE_PIPE_UTILIZATION",
                "_l2_cache": false, "_export_type": "text", "_data_simplification": true
            }
        },
        "rank_id": rank
    });
    fs::write(
        dir.join(format!("profiler_info_{rank}.json")),
        serde_json::to_vec_pretty(&info)?,
    )?;
    Ok(())
}

/// The files verify expects at each level: those its `artifact-missing` findings name for an
/// empty output directory (every `name.csv` / `name.json` token of their messages).
pub fn levels(cases: &Path) -> anyhow::Result<serde_json::Map<String, serde_json::Value>> {
    let mut out = serde_json::Map::new();
    for level in LEVELS {
        let root = cases.join("levels").join(level);
        for rank in 0..2 {
            write_run(
                &root.join(format!("host_{rank}_20260101000000000_ascend_pt")),
                level,
                rank,
            )?;
        }
        let report = verify(
            &Options {
                path: root.clone(),
                world_size: Some(2),
                ..Options::default()
            },
            &NoProgress,
        )
        .with_context(|| format!("verify on {}", root.display()))?;
        let mut files: Vec<String> = report
            .findings
            .iter()
            .filter(|f| f.code == Code::ArtifactMissing)
            .flat_map(|f| file_names(&f.message))
            .collect();
        files.sort();
        files.dedup();
        ensure!(
            !files.is_empty(),
            "verify reported no missing artifact for an empty {level} output directory: the probe reads nothing (see xtask/src/fidelity/facts.rs)"
        );
        out.insert(level.to_owned(), files.into());
    }
    Ok(out)
}

/// `name.csv` / `name.json` tokens of a message (not globs such as `*.db`).
fn file_names(message: &str) -> Vec<String> {
    message
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
        .filter(|t| {
            let stem = t.trim_end_matches(".csv").trim_end_matches(".json");
            (t.ends_with(".csv") || t.ends_with(".json")) && !stem.is_empty() && !stem.contains('.')
        })
        .map(str::to_owned)
        .collect()
}

/// The path-rule tree: a cann-recipes result directory
/// (`res/<date>/<model>/prof/<phase>/<run>_ascend_pt`) with a `log_0.log` whose parser failed,
/// and npuprof's rule (§11): analyse(path) parses `path` when it is a run directory (it holds
/// `FRAMEWORK/` or a `PROF_*` directory), else its immediate subdirectories that are.
/// SEAM: the rule has no function in the crates yet; when verify or relocate grows one (the
/// path its re-parse commands name), derive `parses` from it.
pub fn paths(cases: &Path) -> anyhow::Result<Paths> {
    let root = cases.join("paths");
    let result = "res/20260101/model_cfg";
    let phase = format!("{result}/prof/decode");
    let run = format!("{phase}/host_0_20260101000000000_ascend_pt");
    let cann_only = format!("{phase}/host_1_20260101000000001_ascend_pt");
    write_run(&root.join(&run), "Level1", 0)?;
    fs::create_dir_all(
        root.join(&cann_only)
            .join("PROF_000002_20260101000000001_ABCDEFGH"),
    )?;
    fs::write(
        root.join(result).join("log_0.log"),
        "[2026-01-01 00:00:00] [ERROR] [1] profiler.py: Task [CANNExportParser] run failed.\n\
         [2026-01-01 00:00:00] [ERROR] [1] profiler.py: Failed to export CANN Profiling data.\n",
    )?;
    let runs = vec![run.clone(), cann_only.clone()];
    let cases_list = vec![
        PathCase {
            path: run.clone(),
            parses: vec![run],
        },
        PathCase {
            path: cann_only.clone(),
            parses: vec![cann_only],
        },
        PathCase {
            path: phase,
            parses: runs,
        },
        PathCase {
            path: format!("{result}/prof"),
            parses: Vec::new(),
        },
        PathCase {
            path: result.to_owned(),
            parses: Vec::new(),
        },
    ];
    let report = verify(
        &Options {
            path: root.join(result),
            ..Options::default()
        },
        &NoProgress,
    )
    .with_context(|| format!("verify on {}", root.join(result).display()))?;
    let mut suggested: Vec<Suggested> = Vec::new();
    for f in &report.findings {
        for path in analyse_paths(&f.next_action) {
            if !suggested.iter().any(|s| s.path == path) {
                suggested.push(Suggested {
                    path,
                    code: f.code.as_str(),
                });
            }
        }
    }
    ensure!(
        !suggested.is_empty(),
        "verify suggested no analyse(...) on a failed parse: the probe reads nothing (see xtask/src/fidelity/facts.rs)"
    );
    Ok(Paths {
        root,
        cases: cases_list,
        suggested,
    })
}

/// The arguments of `analyse('...')` in a text.
fn analyse_paths(text: &str) -> Vec<String> {
    text.match_indices("analyse('")
        .filter_map(|(i, m)| {
            let rest = &text[i + m.len()..];
            rest.find('\'').map(|end| rest[..end].to_owned())
        })
        .collect()
}

/// lint's builds that promote AiCoreNone.
pub fn aicore_none() -> AicoreNone {
    AicoreNone {
        promoting_builds: npuprof_lint::torch_npu::BUILDS
            .iter()
            .filter(|b| b.promotes_aicore_none)
            .map(|b| b.version)
            .collect(),
    }
}

/// Whether lint's table has a row for `build` (a build it does not know is an error, not a pass).
pub fn lint_knows(build: &Build) -> bool {
    npuprof_lint::torch_npu::BUILDS
        .iter()
        .any(|b| b.version == build.version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_read_off_messages() {
        assert_eq!(
            file_names(
                "missing from ASCEND_PROFILER_OUTPUT/: kernel_details.csv (NPU activity was recorded); ascend_pytorch_profiler*.db (x)"
            ),
            ["kernel_details.csv"]
        );
    }

    #[test]
    fn analyse_paths_are_read_off_commands() {
        assert_eq!(
            analyse_paths(
                "re-parse: python3 -c \"import torch_npu; torch_npu.profiler.profiler.analyse('a/b')\""
            ),
            ["a/b"]
        );
    }

    #[test]
    fn every_verify_text_is_matched_by_verify() {
        texts(super::super::builds::BUILDS).expect("verify matches every listed text");
    }
}
