//! Serving output: what a serving engine's built-in profiler writes between `/start_profile`
//! and `/stop_profile`. There is no schedule (no Step Ids: windows are by wall time); each
//! start/stop pair leaves one run directory per rank, named `<worker>_<timestamp>_ascend_pt`;
//! with daemon workers the directories hold raw data only; an asynchronous parse leaves them
//! half-written for a while after the stop; and the API process writes its own CPU trace
//! beside them. verify knows none of an engine's names: the caller passes a [`ServingSpec`]
//! built from the engine's definition.
//!
//! [`split_frontend`] takes the frontend traces out of the runs before they are checked;
//! [`apply`] decides whether the output is serving output and rewrites the findings that mean
//! something else there (no steps to miss; a missing `ASCEND_PROFILER_OUTPUT/` beside raw data
//! is "not parsed yet"; errors of a run still being written are one "partial" finding), then
//! names the ranks and start/stop pairs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::discover::{RunRef, Target};
use crate::finding::{Code, Evidence, Finding, Severity};
use crate::report::VerifyReport;
use npuprof_runs::reparse::{ReparseDir, analyse_command};

/// The most files of one run directory looked at for their modification time.
const MAX_FILES_STATTED: usize = 10_000;
/// How long a run directory's files must stay unchanged before a missing part counts as
/// missing rather than still being written.
pub const DEFAULT_SETTLE: Duration = Duration::from_secs(10);
/// How deep a run directory is walked for modification times.
const MAX_STAT_DEPTH: usize = 4;

/// A serving engine's output layout (from its definition).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServingSpec {
    /// The engine's id, for messages.
    pub engine: String,
    /// The end of each run directory's name (`_ascend_pt`).
    pub run_dir_suffix: String,
    /// Text in the name of the API process's own trace (`.async_llm`), when the engine's API
    /// process writes one.
    pub frontend_trace_suffix: Option<String>,
    /// The engine's setting that stops that trace, for the finding's next action.
    pub frontend_off_key: Option<String>,
    /// The rank suffix of a worker's name, `<x>` standing for digits and `<r>` for the rank
    /// (`dp<d>_pp<p>_tp<t>_dcp<c>_ep<e>_rank<r>`), when the engine names runs by rank (an
    /// engine whose runs carry the host and process id is never recognised by its names).
    pub worker_name_shape: Option<String>,
    /// A run directory whose newest file is younger than this is still being written.
    pub settle: Duration,
}

/// Whether verify judges the output as serving output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Serving {
    /// Never (the default: schedule-driven output).
    #[default]
    Off,
    /// When the output has a spec's shape: run directories named by rank suffix, no schedule.
    Auto(Vec<ServingSpec>),
    /// Always, with this spec (`--engine`).
    Forced(ServingSpec),
}

impl Serving {
    fn specs(&self) -> &[ServingSpec] {
        match self {
            Serving::Off => &[],
            Serving::Auto(specs) => specs,
            Serving::Forced(spec) => std::slice::from_ref(spec),
        }
    }
}

/// A frontend trace found among the runs.
#[derive(Debug, Clone)]
pub struct FrontendTrace(PathBuf);

/// Takes out of `target` every run that is a frontend trace of one of the specs, and finds
/// the frontend trace files beside the run directories.
pub fn split_frontend(target: &mut Target, serving: &Serving) -> Vec<FrontendTrace> {
    let specs = serving.specs();
    if specs.is_empty() {
        return Vec::new();
    }
    let is_frontend = |p: &Path| {
        p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
            specs.iter().any(|s| {
                s.frontend_trace_suffix
                    .as_deref()
                    .is_some_and(|suffix| n.contains(suffix))
            })
        })
    };
    let mut found: BTreeSet<PathBuf> = BTreeSet::new();
    target.runs.retain(|r| {
        let frontend = is_frontend(&r.dir);
        if frontend {
            found.insert(r.dir.clone());
        }
        !frontend
    });
    let mut parents: BTreeSet<PathBuf> = target
        .runs
        .iter()
        .filter_map(|r| r.dir.parent().map(Path::to_path_buf))
        .collect();
    parents.insert(target.root.clone());
    for parent in parents {
        let Ok(entries) = std::fs::read_dir(&parent) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if is_frontend(&path) {
                found.insert(path);
            }
        }
    }
    found.into_iter().map(FrontendTrace).collect()
}

/// A run directory's name split into the worker's name and the timestamp.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RunName {
    worker: String,
    stamp: String,
}

fn run_name(dir: &Path, spec: &ServingSpec) -> Option<RunName> {
    let name = dir.file_name()?.to_str()?;
    let stem = name.strip_suffix(&spec.run_dir_suffix)?;
    let (worker, stamp) = stem.rsplit_once('_')?;
    (!stamp.is_empty() && stamp.bytes().all(|b| b.is_ascii_digit())).then(|| RunName {
        worker: worker.to_owned(),
        stamp: stamp.to_owned(),
    })
}

/// The rank in a worker's name when it ends with the spec's rank suffix (after an optional
/// `<prefix>_`).
fn worker_rank(worker: &str, shape: &str) -> Option<u32> {
    let starts = std::iter::once(0).chain(worker.match_indices('_').map(|(i, _)| i + 1));
    starts
        .into_iter()
        .find_map(|start| match_shape(&worker[start..], shape))
}

/// Matches `text` against `shape` whole: `<…>` is one or more digits, `<r>` the rank.
fn match_shape(mut text: &str, mut shape: &str) -> Option<u32> {
    let mut rank = None;
    while !shape.is_empty() {
        if let Some(rest) = shape.strip_prefix('<') {
            let (name, after) = rest.split_once('>')?;
            let digits = text.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                return None;
            }
            if name == "r" {
                rank = text[..digits].parse().ok();
            }
            text = &text[digits..];
            shape = after;
        } else {
            let literal = shape.find('<').map_or(shape, |i| &shape[..i]);
            text = text.strip_prefix(literal)?;
            shape = &shape[literal.len()..];
        }
    }
    text.is_empty().then_some(rank).flatten()
}

/// Whether a run directory holds torch_npu's raw data (`FRAMEWORK/` or a `PROF_*` directory).
fn has_raw_data(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            e.path().is_dir() && (name == "FRAMEWORK" || name.starts_with("PROF_"))
        })
}

/// The newest modification time of the files under `dir` (bounded walk).
fn newest_mtime(dir: &Path) -> Option<SystemTime> {
    let mut newest = std::fs::symlink_metadata(dir).ok()?.modified().ok();
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    let mut seen = 0usize;
    while let Some((d, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_FILES_STATTED {
                return newest;
            }
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if let Ok(m) = meta.modified() {
                newest = newest.max(Some(m));
            }
            if meta.is_dir() && depth < MAX_STAT_DEPTH {
                stack.push((entry.path(), depth + 1));
            }
        }
    }
    newest
}

/// Which spec the output has, and why: `None` when it is not serving output.
fn decide<'a>(
    report: &VerifyReport,
    runs: &[RunRef],
    serving: &'a Serving,
) -> Option<(&'a ServingSpec, String)> {
    match serving {
        Serving::Off => None,
        Serving::Forced(spec) => Some((spec, format!("--engine {}", spec.engine))),
        Serving::Auto(specs) => {
            if runs.is_empty() {
                return None;
            }
            // No schedule: profiler_info's schedule is null or `{}`, and no Step Ids.
            let unscheduled = report.runs.iter().all(|r| {
                r.schedule.as_deref().is_none_or(|s| s == "none")
                    && r.steps.kernel_details.is_empty()
            });
            if !unscheduled {
                return None;
            }
            specs
                .iter()
                .find(|spec| {
                    let Some(shape) = spec.worker_name_shape.as_deref() else {
                        return false;
                    };
                    runs.iter().all(|r| {
                        run_name(&r.dir, spec)
                            .is_some_and(|n| worker_rank(&n.worker, shape).is_some())
                    })
                })
                .map(|spec| {
                    (
                        spec,
                        format!(
                            "run directories named by rank suffix ({}) and no schedule",
                            spec.worker_name_shape.as_deref().unwrap_or_default()
                        ),
                    )
                })
        }
    }
}

/// Codes about a schedule's steps and cycles: serving output has no schedule, and several
/// directories per rank are several start/stop pairs.
const SCHEDULE_CODES: [Code; 7] = [
    Code::StepsMissing,
    Code::StepsUnexpected,
    Code::StepTraceMissingSteps,
    Code::StepsInconsistent,
    Code::RunDuplicate,
    Code::CycleMissing,
    Code::CycleDuplicate,
];

/// Rewrites `report` for serving output, when `serving` says it is; `frontend` are the
/// frontend traces [`split_frontend`] took out.
pub fn apply(
    report: &mut VerifyReport,
    runs: &[RunRef],
    serving: &Serving,
    frontend: &[FrontendTrace],
    now: SystemTime,
) {
    let Some((spec, why)) = decide(report, runs, serving) else {
        return;
    };
    let disp = |p: &Path| p.display().to_string();
    report
        .findings
        .retain(|f| !SCHEDULE_CODES.contains(&f.code));

    // Runs still being written: their errors are one finding.
    let mut partial: BTreeSet<String> = BTreeSet::new();
    for run in runs {
        let dir = disp(&run.dir);
        let inside = |f: &Finding| {
            f.evidence
                .path
                .as_deref()
                .is_some_and(|p| Path::new(p).starts_with(&run.dir))
        };
        let has_errors = report
            .findings
            .iter()
            .any(|f| f.severity == Severity::Error && inside(f));
        let Some(age) = newest_mtime(&run.dir).map(|m| now.duration_since(m).unwrap_or_default())
        else {
            continue;
        };
        if has_errors && age < spec.settle {
            partial.insert(dir.clone());
            let rank = report
                .runs
                .iter()
                .find(|r| r.dir == dir)
                .and_then(|r| r.rank);
            report
                .findings
                .retain(|f| f.severity != Severity::Error || !inside(f));
            report.findings.push(
                Finding::new(
                    Code::ServingOutputPartial,
                    format!(
                        "still being written: its newest file changed {:.1}s ago (the engine parses after the stop returns, or is still writing it)",
                        age.as_secs_f64()
                    ),
                    Evidence::path(dir),
                    format!(
                        "wait until its files stop changing for {}s, then verify again",
                        spec.settle.as_secs()
                    ),
                )
                .at(run.phase.as_deref(), rank),
            );
        }
    }

    // Raw data only: not parsed yet.
    let mut raw: Vec<&RunRef> = Vec::new();
    for run in runs {
        let dir = disp(&run.dir);
        if partial.contains(&dir) || !has_raw_data(&run.dir) {
            continue;
        }
        let before = report.findings.len();
        report.findings.retain(|f| {
            !(f.code == Code::OutputDirMissing && f.evidence.path.as_deref() == Some(dir.as_str()))
        });
        if report.findings.len() < before {
            raw.push(run);
        }
    }
    for run in &raw {
        let dir = disp(&run.dir);
        let rank = report
            .runs
            .iter()
            .find(|r| r.dir == dir)
            .and_then(|r| r.rank);
        report.findings.push(
            Finding::new(
                Code::ServingNotParsed,
                "not parsed yet: raw data only (the engine's workers run as daemon processes, where torch_npu does not parse)",
                Evidence::path(dir),
                format!(
                    "parse it offline, then verify again: {}",
                    analyse_command(&[ReparseDir::run(&run.dir)])
                ),
            )
            .at(run.phase.as_deref(), rank),
        );
    }

    pairs(report, runs, spec, &why);
    for trace in frontend {
        report.findings.push(Finding::new(
            Code::ServingFrontendTrace,
            "the API process's own CPU trace (not a rank; no NPU data)",
            Evidence::path(disp(&trace.0)),
            format!(
                "nothing: verify leaves it out; the engine's {} setting stops it",
                spec.frontend_off_key.as_deref().unwrap_or("own")
            ),
        ));
    }
    report.findings.sort_by_key(|f| (f.severity, f.code));
    report.ok = !report
        .findings
        .iter()
        .any(|f| f.severity == Severity::Error);
}

/// Groups the runs into start/stop pairs (in timestamp order, a rank seen again starts the
/// next pair), names ranks and pairs, and reports ranks missing from a pair.
fn pairs(report: &mut VerifyReport, runs: &[RunRef], spec: &ServingSpec, why: &str) {
    let mut named: Vec<(String, u32, &RunRef)> = runs
        .iter()
        .filter_map(|r| {
            let name = run_name(&r.dir, spec)?;
            let dir = r.dir.display().to_string();
            let rank = report
                .runs
                .iter()
                .find(|s| s.dir == dir)
                .and_then(|s| s.rank)
                .or_else(|| {
                    spec.worker_name_shape
                        .as_deref()
                        .and_then(|shape| worker_rank(&name.worker, shape))
                })?;
            Some((name.stamp, rank, r))
        })
        .collect();
    named.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut groups: Vec<BTreeMap<u32, (&str, &RunRef)>> = Vec::new();
    for (stamp, rank, run) in &named {
        match groups.last_mut() {
            Some(group) if !group.contains_key(rank) => {
                group.insert(*rank, (stamp.as_str(), *run));
            }
            _ => groups.push(BTreeMap::from([(*rank, (stamp.as_str(), *run))])),
        }
    }
    let mut ranks: BTreeSet<u32> = named.iter().map(|n| n.1).collect();
    if let Some(expected) = report.target.expected_ranks {
        ranks.extend(0..expected);
    }
    let list = |set: &mut dyn Iterator<Item = u32>| {
        set.map(|r| r.to_string()).collect::<Vec<_>>().join(", ")
    };
    let described: Vec<String> = groups
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let first = g.values().map(|v| v.0).min().unwrap_or_default();
            format!(
                "pair {} at {first}: rank(s) {}",
                i + 1,
                list(&mut g.keys().copied())
            )
        })
        .collect();
    report.findings.push(Finding::new(
        Code::ServingOutput,
        format!(
            "{} serving output ({why}): {} start/stop pair(s) × {} rank(s) ({}); windows are by wall time, no Step Ids; {}",
            spec.engine,
            groups.len(),
            ranks.len(),
            list(&mut ranks.iter().copied()),
            described.join("; ")
        ),
        Evidence::path(report.target.path.clone()),
        "nothing: each pair is one capture; summarise one pair's directories at a time",
    ));
    for (i, group) in groups.iter().enumerate() {
        let missing: Vec<u32> = ranks
            .iter()
            .copied()
            .filter(|r| !group.contains_key(r))
            .collect();
        if missing.is_empty() {
            continue;
        }
        let first = group.values().map(|v| v.0).min().unwrap_or_default();
        report.findings.push(Finding::new(
            Code::ServingPairIncomplete,
            format!(
                "start/stop pair {} (at {first}) has no run directory for rank(s) {}",
                i + 1,
                list(&mut missing.iter().copied())
            ),
            Evidence::path(report.target.path.clone()),
            "read the missing ranks' worker logs (a crash, a stop that did not reach them), or copy their output here; then verify again",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHAPE: &str = "dp<d>_pp<p>_tp<t>_dcp<c>_ep<e>_rank<r>";

    #[test]
    fn worker_names_match_the_rank_suffix_after_any_prefix() {
        assert_eq!(worker_rank("dp0_pp0_tp3_dcp0_ep0_rank3", SHAPE), Some(3));
        assert_eq!(
            worker_rank("decode_dp0_pp0_tp1_dcp0_ep0_rank12", SHAPE),
            Some(12)
        );
        assert_eq!(worker_rank("host_1234", SHAPE), None);
        assert_eq!(worker_rank("dp0_pp0_tp3_dcp0_ep0_rank", SHAPE), None);
        assert_eq!(worker_rank("dp0_pp0_tp3_dcp0_ep0_rank3x", SHAPE), None);
    }

    #[test]
    fn run_names_split_worker_and_timestamp() {
        let spec = ServingSpec {
            engine: "e".to_owned(),
            run_dir_suffix: "_ascend_pt".to_owned(),
            frontend_trace_suffix: Some(".fe".to_owned()),
            frontend_off_key: Some("off".to_owned()),
            worker_name_shape: Some(SHAPE.to_owned()),
            settle: Duration::from_secs(1),
        };
        let n = run_name(
            Path::new("x/dp0_pp0_tp0_dcp0_ep0_rank0_20260101120000123_ascend_pt"),
            &spec,
        )
        .unwrap();
        assert_eq!(
            (n.worker.as_str(), n.stamp.as_str()),
            ("dp0_pp0_tp0_dcp0_ep0_rank0", "20260101120000123")
        );
        assert!(run_name(Path::new("rank0_ascend_pt"), &spec).is_none());
        assert!(run_name(Path::new("a_b_ascend_pt"), &spec).is_none());
    }
}
