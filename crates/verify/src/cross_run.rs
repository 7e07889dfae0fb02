//! Checks across runs: phases, ranks, duplicates, result-directory logs, unreadable
//! directories, the bad-output-filesystem case and analyse.done.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::Options;
use crate::finding::{Code, Evidence, Finding, Severity};
use crate::log_findings::{self, LogVerdict};
use crate::report::{SCHEMA_VERSION, TargetSummary, VerifyReport};
use crate::run_check::{self, RunFacts, RunOutcome};
use crate::schedule_findings;
use npuprof_runs::discover::{Target, TargetKind};
use npuprof_runs::mounts::{Mount, MountTable};
use npuprof_runs::profiler_info::RecordedSchedule;
use npuprof_runs::reparse::{self, ReparseDir};
use npuprof_schedule::{RECORDED_CYCLES_LIMIT, Schedule};

/// Sort key of a phase: mm_encode, prefill, decode (the order a request meets them), others by
/// name, none.
pub(crate) fn phase_key(phase: Option<&str>) -> (u8, String) {
    let known = phase.and_then(npuprof_schedule::Phase::from_name);
    let last = npuprof_schedule::Phase::ALL.len() as u8;
    match (phase, known) {
        (_, Some(p)) => (
            npuprof_schedule::Phase::ALL
                .iter()
                .position(|q| *q == p)
                .map_or(last, |i| i as u8),
            String::new(),
        ),
        (Some(other), None) => (last, other.to_owned()),
        (None, None) => (last + 1, String::new()),
    }
}

/// `0, 1, 2` (at most 16 shown).
pub(crate) fn fmt_ranks(ranks: &[u32]) -> String {
    let shown: Vec<String> = ranks.iter().take(16).map(u32::to_string).collect();
    if ranks.len() > 16 {
        format!("{} … ({} in all)", shown.join(", "), ranks.len())
    } else {
        shown.join(", ")
    }
}

/// How many ranks the run has, and whether this directory must hold all of them.
#[derive(Debug, Clone, PartialEq, Eq)]
enum RankExpectation {
    /// `--ranks N`: ranks `0..N` must all be here.
    Flag(u32),
    /// `log_<rank>.log` files: those ranks ran here, so their output must be here.
    Logs(BTreeSet<u32>),
    /// `parallel_group_info` in profiler_metadata.json: the whole run's size; a subset here is
    /// normal.
    Distributed(u32),
    /// Nothing says.
    Unknown,
}

impl RankExpectation {
    fn decide(target: &Target, opts: &Options, outcomes: &[RunOutcome]) -> Self {
        if let Some(n) = opts.world_size {
            RankExpectation::Flag(n)
        } else if !target.rank_logs.is_empty() {
            RankExpectation::Logs(target.rank_logs.iter().map(|(r, _)| *r).collect())
        } else if let Some(w) = outcomes.iter().filter_map(|o| o.facts.world_size).max() {
            RankExpectation::Distributed(w)
        } else {
            RankExpectation::Unknown
        }
    }

    /// The number of ranks of the run, when known.
    fn count(&self) -> Option<u32> {
        match self {
            RankExpectation::Flag(n) | RankExpectation::Distributed(n) => Some(*n),
            RankExpectation::Logs(set) => set.last().map(|m| m + 1),
            RankExpectation::Unknown => None,
        }
    }

    /// The ranks that must be here (empty when a subset is normal).
    fn required(&self) -> Vec<u32> {
        match self {
            RankExpectation::Flag(n) => (0..*n).collect(),
            RankExpectation::Logs(set) => set.iter().copied().collect(),
            RankExpectation::Distributed(_) | RankExpectation::Unknown => Vec::new(),
        }
    }

    fn source(&self) -> &'static str {
        match self {
            RankExpectation::Flag(_) => "--ranks",
            RankExpectation::Logs(_) => "the log_<rank>.log files",
            RankExpectation::Distributed(_) => "parallel_group_info in profiler_metadata.json",
            RankExpectation::Unknown => "nothing",
        }
    }
}

/// Per phase: the phase name, the ranks found, and how many runs have no known rank.
struct PhaseRanks {
    phase: Option<String>,
    ranks: BTreeSet<u32>,
    unknown: usize,
}

fn ranks_by_phase(outcomes: &[RunOutcome]) -> Vec<PhaseRanks> {
    let mut by_phase: BTreeMap<(u8, String), PhaseRanks> = BTreeMap::new();
    for o in outcomes {
        let entry = by_phase
            .entry(phase_key(o.facts.phase.as_deref()))
            .or_insert_with(|| PhaseRanks {
                phase: o.facts.phase.clone(),
                ranks: BTreeSet::new(),
                unknown: 0,
            });
        match o.facts.rank {
            Some(r) => {
                entry.ranks.insert(r);
            }
            None => entry.unknown += 1,
        }
    }
    by_phase.into_values().collect()
}

/// Builds the report from the per-run outcomes.
pub fn assemble(
    target: &Target,
    opts: &Options,
    mounts: Option<&MountTable>,
    mut outcomes: Vec<RunOutcome>,
) -> VerifyReport {
    outcomes.sort_by(|a, b| {
        (
            phase_key(a.facts.phase.as_deref()),
            a.facts.rank,
            &a.facts.dir,
        )
            .cmp(&(
                phase_key(b.facts.phase.as_deref()),
                b.facts.rank,
                &b.facts.dir,
            ))
    });
    let expectation = RankExpectation::decide(target, opts, &outcomes);
    let mut findings: Vec<Finding> = Vec::new();
    let phases = expected_phases(target, opts, &outcomes);
    check_unreadable_dirs(target, &mut findings);
    check_phases(target, &phases, &outcomes, &mut findings);
    check_ranks(target, &expectation, &outcomes, &mut findings);
    // One run directory is one cycle: judged as that cycle, not as a run missing its others
    // (they are other directories, which the user did not name).
    if target.kind != TargetKind::RunDir {
        check_cycles(&outcomes, &mut findings);
    }
    for o in &outcomes {
        findings.extend(o.findings.iter().cloned());
    }
    let result_logs = check_result_logs(target, &outcomes, &mut findings);
    let captured = log_findings::captured_logs(
        &opts.logs,
        &target.root.display().to_string(),
        &reparse_command_for(target, &outcomes, |_| true),
        run_check::schedule_context(outcomes.iter().map(|o| &o.facts)),
        &run_check::first_build(&outcomes),
        &mut findings,
    );
    run_check::confirm_empty_windows(&outcomes, &result_logs, captured, &mut findings);
    check_bad_disk(
        target,
        mounts,
        &outcomes,
        &result_logs,
        captured,
        &mut findings,
    );
    check_analyse_done(&outcomes, &mut findings);

    findings.sort_by_key(|f| (f.severity, f.code));
    let ok = !findings.iter().any(|f| f.severity == Severity::Error);
    VerifyReport {
        schema_version: SCHEMA_VERSION,
        ok,
        target: TargetSummary {
            kind: target.kind,
            path: target.root.display().to_string(),
            phases,
            expected_ranks: expectation.count(),
            whole_run: !expectation.required().is_empty(),
        },
        runs: outcomes.into_iter().map(|o| o.summary).collect(),
        findings,
    }
}

fn expected_phases(target: &Target, opts: &Options, outcomes: &[RunOutcome]) -> Vec<String> {
    if target.kind == TargetKind::ResultDir {
        // mm_encode is expected when asked for alone or when the run has it: a run without a
        // multimodal encoder (or without media) never creates prof/mm_encode/.
        let encoder = npuprof_schedule::Phase::MmEncode;
        let has_encoder = outcomes
            .iter()
            .any(|o| o.facts.phase.as_deref() == Some(encoder.name()));
        return opts
            .phases
            .phases()
            .into_iter()
            .filter(|p| {
                *p != encoder
                    || has_encoder
                    || opts.phases == npuprof_schedule::PhaseSelection::MmEncode
            })
            .map(|p| p.name().to_owned())
            .collect();
    }
    let set: BTreeSet<String> = outcomes
        .iter()
        .filter_map(|o| o.facts.phase.clone())
        .collect();
    set.into_iter().collect()
}

fn check_unreadable_dirs(target: &Target, findings: &mut Vec<Finding>) {
    for (dir, problem) in &target.unreadable {
        let mut f = run_check::problem_finding(dir, problem);
        f.message = format!(
            "directory {}; run directories below it were not checked",
            f.message
        );
        findings.push(f);
    }
}

fn check_phases(
    target: &Target,
    phases: &[String],
    outcomes: &[RunOutcome],
    findings: &mut Vec<Finding>,
) {
    if target.kind != TargetKind::ResultDir {
        return;
    }
    for phase in phases {
        let dir = target.phase_dir(phase);
        let hidden = target
            .unreadable
            .iter()
            .any(|(d, _)| d.starts_with(&dir) || dir.starts_with(d));
        if hidden
            || outcomes
                .iter()
                .any(|o| o.facts.phase.as_deref() == Some(phase))
        {
            continue;
        }
        let at = target.phase_path(phase);
        let what = if dir.is_dir() {
            format!("{at} exists but holds no run directory")
        } else {
            format!("{at} does not exist")
        };
        findings.push(
            Finding::new(
                Code::PhaseMissing,
                format!("phase {phase} is missing: {what}"),
                Evidence::path(dir.display().to_string()),
                format!(
                    "check log_0.log for `Incorrect schedule` warnings (a stop in WARMUP deletes the run directory) and that the {phase} phase ran enough steps (npuprof plan); use --phase to verify one phase only"
                ),
            )
            .at(Some(phase), None),
        );
    }
}

fn check_ranks(
    target: &Target,
    expectation: &RankExpectation,
    outcomes: &[RunOutcome],
    findings: &mut Vec<Finding>,
) {
    let required = expectation.required();
    for pr in ranks_by_phase(outcomes) {
        let dir = match &pr.phase {
            Some(p) if target.kind == TargetKind::ResultDir => target.phase_dir(p),
            _ => target.root.clone(),
        };
        let in_phase = pr
            .phase
            .as_ref()
            .map(|p| format!("phase {p}: "))
            .unwrap_or_default();
        let present: Vec<u32> = pr.ranks.iter().copied().collect();
        if !required.is_empty() {
            let missing: Vec<u32> = required
                .iter()
                .copied()
                .filter(|r| !pr.ranks.contains(r))
                .collect();
            // Runs without a known rank may be the missing ones: only count what cannot be.
            if missing.is_empty() || pr.ranks.len() + pr.unknown >= required.len() {
                continue;
            }
            findings.push(
                Finding::new(
                    Code::RankMissing,
                    format!(
                        "{in_phase}no run directory for rank(s) {} of {} (expected from {}; present: {})",
                        fmt_ranks(&missing),
                        expectation.count().unwrap_or(0),
                        expectation.source(),
                        if present.is_empty() { "none".to_owned() } else { fmt_ranks(&present) }
                    ),
                    Evidence::path(dir.display().to_string()),
                    "read those ranks' log_<rank>.log for a crash, a kill or a parser failure; every rank must reach the end of the window",
                )
                .at(pr.phase.as_deref(), None),
            );
        } else if let RankExpectation::Distributed(w) = expectation
            && present.len() < *w as usize
        {
            findings.push(
                Finding::new(
                    Code::RankSubset,
                    format!(
                        "{in_phase}rank(s) {} here, {} of the run's {w} (parallel_group_info): normal for one rank or one node of a multi-node run",
                        fmt_ranks(&present),
                        present.len()
                    ),
                    Evidence::path(dir.display().to_string()),
                    format!(
                        "for the whole-run verdict run `npuprof verify --json` on every node and `npuprof verify --merge <node reports>`; or pass --ranks {w} if this directory should hold every rank"
                    ),
                )
                .at(pr.phase.as_deref(), None),
            );
        }
    }
    if *expectation == RankExpectation::Unknown
        && matches!(target.kind, TargetKind::ResultDir | TargetKind::PhaseDir)
        && !outcomes.is_empty()
    {
        let present: BTreeSet<u32> = outcomes.iter().filter_map(|o| o.facts.rank).collect();
        let present: Vec<u32> = present.into_iter().collect();
        findings.push(Finding::new(
            Code::WorldSizeUnknown,
            format!(
                "number of ranks unknown (no --ranks, no log_<rank>.log, no parallel_group_info): rank(s) {} found, a missing rank would go unnoticed",
                if present.is_empty() { "none".to_owned() } else { fmt_ranks(&present) }
            ),
            Evidence::path(target.root.display().to_string()),
            "pass --ranks N (the world size of the run)",
        ));
    }
}

/// The run directories whose cycles belong together: phase, rank, and the process of a run
/// without a rank.
type CycleGroup = ((u8, String), Option<u32>, String);

/// A run directory's name without its timestamp and suffix (`{worker}_{pid}`).
fn worker_of(dir: &Path) -> String {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix("_ascend_pt").unwrap_or(&name);
    stem.rsplit_once('_')
        .map_or(stem, |(worker, _)| worker)
        .to_owned()
}

/// The run directories of one phase and rank, in order of the timestamp in their names
/// (`…_{YYYYmmddHHMMSSfff}_ascend_pt`; the name when it has none).
fn by_timestamp(mut runs: Vec<&RunFacts>) -> Vec<&RunFacts> {
    fn stamp(f: &RunFacts) -> (Option<u64>, String) {
        let name = f
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let ts = name
            .strip_suffix("_ascend_pt")
            .and_then(|n| n.rsplit('_').next())
            .filter(|t| t.len() >= 14 && t.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|t| t.parse().ok());
        (ts, name)
    }
    runs.sort_by_cached_key(|f| stamp(f));
    runs
}

/// The cycles across each phase's and rank's run directories. torch_npu writes one directory
/// per cycle (`repeat = N` gives N, each with its own cycle's Step Ids), so each cycle of the
/// schedule must be in exactly one directory, in timestamp order. Without known cycles (no
/// Step Ids, a callable schedule) only the count is checked.
///
/// Where the run has an `mm_encode` phase, encode and prefill alternate and each switch makes a
/// new profiler: several encode and prefill run directories per rank are normal there.
fn check_cycles(outcomes: &[RunOutcome], findings: &mut Vec<Finding>) {
    let encoder = npuprof_schedule::Phase::MmEncode.name();
    let alternating = outcomes
        .iter()
        .any(|o| o.facts.phase.as_deref() == Some(encoder));
    let switches_freely = |phase: Option<&str>| {
        alternating
            && (phase == Some(encoder) || phase == Some(npuprof_schedule::Phase::Prefill.name()))
    };
    // A run without a rank is grouped with the directories of its own process (the worker
    // name torch_npu gives them: `{worker}_{pid}`), never with other processes'.
    let mut groups: BTreeMap<CycleGroup, Vec<&RunFacts>> = BTreeMap::new();
    for o in outcomes {
        if switches_freely(o.facts.phase.as_deref()) {
            continue;
        }
        let process = match o.facts.rank {
            Some(_) => String::new(),
            None => worker_of(&o.facts.dir),
        };
        groups
            .entry((phase_key(o.facts.phase.as_deref()), o.facts.rank, process))
            .or_default()
            .push(&o.facts);
    }
    for runs in groups.into_values() {
        let runs = by_timestamp(runs);
        let schedule = runs
            .iter()
            .find_map(|f| f.schedule.and_then(RecordedSchedule::args));
        let no_window = runs.iter().all(|f| {
            matches!(
                (f.schedule, f.step_ids),
                (Some(RecordedSchedule::Absent), _)
                    | (Some(RecordedSchedule::Function), Some(false))
            )
        });
        match schedule {
            Some(s) if runs.iter().all(|f| !f.cycles.is_empty()) => {
                cycle_findings(&s, &runs, findings)
            }
            Some(s) if s.repeat > 0 => count_finding(&runs, s.repeat, findings),
            None if no_window => count_finding(&runs, 1, findings),
            _ => {}
        }
    }
}

fn cycle_findings(s: &Schedule, runs: &[&RunFacts], findings: &mut Vec<Finding>) {
    let first = runs[0];
    let at = |f: Finding| f.at(first.phase.as_deref(), first.rank);
    let who = first
        .rank
        .map_or_else(String::new, |r| format!(" of rank {r}"));
    let mut holders: BTreeMap<u64, Vec<&RunFacts>> = BTreeMap::new();
    for f in runs {
        for &k in &f.cycles {
            holders.entry(k).or_default().push(f);
        }
    }
    let steps_of = |k: u64| {
        s.cycle_steps(k)
            .map(|r| {
                let (a, b) = (r.start, r.end.saturating_sub(1));
                if a == b {
                    a.to_string()
                } else {
                    format!("{a}–{b}")
                }
            })
            .unwrap_or_default()
    };
    let expected = s.repeat.min(RECORDED_CYCLES_LIMIT);
    let missing: Vec<u64> = (0..expected).filter(|k| !holders.contains_key(k)).collect();
    if !missing.is_empty() {
        let last_saved = holders.keys().max().copied();
        let trailing = missing.iter().all(|&m| Some(m) > last_saved);
        let list: Vec<String> = missing
            .iter()
            .take(8)
            .map(|&k| format!("cycle {k} (Step Ids {})", steps_of(k)))
            .collect();
        findings.push(at(Finding::new(
            Code::CycleMissing,
            format!(
                "{} of the {expected} cycle(s) of schedule {} are in none of the {} run director(ies){who}: {}{}",
                missing.len(),
                s.to_string().replace(", ", " "),
                runs.len(),
                list.join(", "),
                if missing.len() > list.len() { ", …" } else { "" }
            ),
            Evidence::path(first.dir.display().to_string()),
            if trailing {
                "the run stopped before these cycles were saved: make it last at least skip_first + repeat*(wait+warmup+active) + 1 steps (npuprof plan), then re-run"
            } else {
                "a cycle's directory was deleted (a stop in WARMUP deletes it) or moved: re-run, or verify the complete output"
            },
        )));
    }
    for (k, dirs) in &holders {
        if dirs.len() > 1 {
            let names: Vec<String> = dirs.iter().map(|f| f.dir.display().to_string()).collect();
            findings.push(at(Finding::new(
                Code::CycleDuplicate,
                format!(
                    "cycle {k} (Step Ids {}) is in {} run directories{who}, but torch_npu writes each cycle once: leftovers of another run are mixed in ({})",
                    steps_of(*k),
                    dirs.len(),
                    names.join(", ")
                ),
                Evidence::path(names[1].clone()),
                "verify a fresh result directory, or move the older *_ascend_pt directories away",
            )));
        }
    }
    let order: Vec<u64> = runs
        .iter()
        .filter_map(|f| f.cycles.first().copied())
        .collect();
    if let Some(i) = order.windows(2).position(|w| w[1] < w[0]) {
        findings.push(at(Finding::new(
            Code::CycleDuplicate,
            format!(
                "the run directories{who} are not in cycle order by their timestamps: {} (cycle {}) is newer than {} (cycle {}), but torch_npu saves cycles in order: leftovers of another run are mixed in",
                runs[i + 1].dir.display(),
                order[i + 1],
                runs[i].dir.display(),
                order[i]
            ),
            Evidence::path(runs[i + 1].dir.display().to_string()),
            "verify a fresh result directory, or move the older *_ascend_pt directories away",
        )));
    }
}

/// More run directories for one phase and rank than the cycles saved (`repeat`).
fn count_finding(runs: &[&RunFacts], repeat: u64, findings: &mut Vec<Finding>) {
    if runs.len() as u64 <= repeat {
        return;
    }
    let f = runs[0];
    findings.push(
        Finding::new(
            Code::RunDuplicate,
            format!(
                "{} run directories{} but the schedule saves {repeat} cycle(s): leftovers of an earlier run are mixed in",
                runs.len(),
                f.rank.map_or_else(String::new, |r| format!(" for rank {r}"))
            ),
            Evidence::path(f.dir.display().to_string()),
            "verify a fresh result directory, or move the older *_ascend_pt directories away",
        )
        .at(f.phase.as_deref(), f.rank),
    );
}

/// The result directory's `log_<rank>.log` files; returns what each rank's log says.
fn check_result_logs(
    target: &Target,
    outcomes: &[RunOutcome],
    findings: &mut Vec<Finding>,
) -> BTreeMap<u32, LogVerdict> {
    let sched_ctx = run_check::schedule_context(outcomes.iter().map(|o| &o.facts));
    let build = run_check::first_build(outcomes);
    let mut failed = BTreeMap::new();
    // A rank's log covers every phase: chown the whole profile directory, re-parse the rank's
    // run directories (analyse() looks one level down only, so never the profile directory).
    let run_dir = target.profile_dir().display().to_string();
    for (rank, path) in &target.rank_logs {
        let reparse = reparse_command_for(target, outcomes, |f| f.rank == Some(*rank));
        match log_findings::scan_file(path) {
            Ok(scan) => {
                failed.insert(*rank, LogVerdict::of(&scan, &build));
                let found = log_findings::findings(&scan, path, &run_dir, &reparse, &build)
                    .into_iter()
                    .chain(schedule_findings::log_findings(&scan, path, sched_ctx));
                for f in found {
                    findings.push(f.at(None, Some(*rank)));
                }
            }
            Err(p) => findings.push(run_check::problem_finding(path, &p).at(None, Some(*rank))),
        }
    }
    failed
}

/// The command that re-parses the run directories `covered` admits (a rank's log covers that
/// rank's, captured stdout every one); the directories holding every run when none is admitted.
fn reparse_command_for(
    target: &Target,
    outcomes: &[RunOutcome],
    covered: impl Fn(&RunFacts) -> bool,
) -> String {
    let own: Vec<ReparseDir> = outcomes
        .iter()
        .filter(|o| covered(&o.facts))
        .map(|o| ReparseDir::run(&o.facts.dir))
        .collect();
    let dirs = if own.is_empty() {
        ReparseDir::parents_of(outcomes.iter().map(|o| o.facts.dir.as_path()))
    } else {
        own
    };
    if dirs.is_empty() {
        format!(
            "(no `*_ascend_pt` run directory was found under {}: nothing to re-parse)",
            target.profile_dir().display()
        )
    } else {
        reparse::analyse_command(&dirs)
    }
}

/// The bad-output-filesystem signature: failed parsers (in the run's own `logs/`, its rank's
/// stdout log or the captured stdout), no CSV, a broken trace, and no other named cause.
fn check_bad_disk(
    target: &Target,
    mounts: Option<&MountTable>,
    outcomes: &[RunOutcome],
    result_logs: &BTreeMap<u32, LogVerdict>,
    captured: LogVerdict,
    findings: &mut Vec<Finding>,
) {
    let affected: Vec<&RunFacts> = outcomes
        .iter()
        .map(|o| &o.facts)
        .filter(|f| {
            let stdout = run_check::stdout_verdict(f, result_logs, captured);
            f.no_csv
                && f.trace_broken
                && (f.parsers_failed || stdout.failed)
                && !(f.environment_cause || stdout.environment)
        })
        .collect();
    if let Some(first) = affected.first() {
        let mount = mounts.and_then(|t| t.mount_of_dir(&first.dir));
        findings.push(bad_disk_finding(target, affected.len(), first, mount));
    }
}

/// analyse.done is no success signal.
fn check_analyse_done(outcomes: &[RunOutcome], findings: &mut Vec<Finding>) {
    for o in outcomes {
        let has_error = o.findings.iter().any(|f| f.severity == Severity::Error);
        if o.facts.analyse_done && has_error {
            findings.push(
                Finding::new(
                    Code::AnalyseDoneNotSuccess,
                    "analyse.done exists, but torch_npu writes it even when a parser failed: it is not a success signal",
                    Evidence::path(
                        o.facts
                            .dir
                            .join("ASCEND_PROFILER_OUTPUT")
                            .join("analyse.done")
                            .display()
                            .to_string(),
                    ),
                    "judge the run by the errors above, not by analyse.done",
                )
                .at(o.facts.phase.as_deref(), o.facts.rank),
            );
        }
    }
}

/// The filesystem part of the bad-disk message: what the mount is, and the verdict.
pub fn filesystem_verdict(mount: Option<&Mount>) -> (String, &'static str) {
    let fs = match mount {
        Some(m) if m.is_suspect() => format!(
            "(filesystem: {} from {} at {}, a network/FUSE/overlay filesystem: flagged)",
            m.fs_type, m.source, m.mount_point
        ),
        Some(m) => format!(
            "(filesystem: {} from {} at {}, looks local)",
            m.fs_type, m.source, m.mount_point
        ),
        None => "(filesystem: unknown, not in the mount table)".to_owned(),
    };
    let verdict = if mount.is_some_and(Mount::is_suspect) {
        "the output filesystem is the likely cause"
    } else {
        "the filesystem looks local, but the evidence still matches the known bad-disk failure"
    };
    (fs, verdict)
}

/// `(repo, model)` of a result directory, by the first layout of the definitions in use that
/// places it (the compiled-in ones when the definition files cannot be read).
fn repo_and_model(path: &Path) -> Option<(PathBuf, String)> {
    let catalog = npuprof_repository::Catalog::global()
        .unwrap_or_else(|_| npuprof_repository::Catalog::builtin());
    catalog
        .recipes()
        .iter()
        .find_map(|definitions| definitions.layout.repo_and_model(path))
}

fn bad_disk_finding(
    target: &Target,
    affected: usize,
    first: &RunFacts,
    mount: Option<&Mount>,
) -> Finding {
    let (fs, verdict) = filesystem_verdict(mount);
    let (repo, model) = repo_and_model(&target.root)
        .map(|(r, m)| {
            (
                npuprof_paths::shell::quote(&r.display().to_string()),
                npuprof_paths::shell::quote(&m),
            )
        })
        .unwrap_or_else(|| ("<repo>".to_owned(), "<model>".to_owned()));
    let run = first.dir.display().to_string();
    let scratch = Path::new("/tmp/npuprof-reparse");
    let copy = scratch.join(first.dir.file_name().unwrap_or_default());
    Finding::new(
        Code::OutputFilesystem,
        format!(
            "{affected} run(s) have failed parsers, no CSV and a broken or missing trace_view.json: the known bad-output-filesystem failure {fs}; {verdict}"
        ),
        Evidence::path(run.clone()),
        format!(
            "relocate the output to a local disk and re-run: npuprof relocate --repo {} --model {}; or confirm by re-parsing a copy there: mkdir -p {} && cp -r {} {} && {}",
            repo,
            model,
            npuprof_paths::shell::quote(&scratch.display().to_string()),
            npuprof_paths::shell::quote(&run),
            npuprof_paths::shell::quote(&copy.display().to_string()),
            reparse::analyse_command(&[ReparseDir::run(&copy)])
        ),
    )
    .at(first.phase.as_deref(), first.rank)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Artifacts, RunSummary, StepsSummary};
    use npuprof_runs::probe::FileProblem;
    use npuprof_schedule::PhaseSelection;
    use std::path::PathBuf;

    fn facts(dir: &str, phase: Option<&str>, rank: Option<u32>) -> RunFacts {
        RunFacts {
            rank,
            ..RunFacts::unknown(PathBuf::from(dir), phase.map(str::to_owned))
        }
    }

    fn outcome(facts: RunFacts) -> RunOutcome {
        RunOutcome {
            summary: RunSummary {
                phase: facts.phase.clone(),
                rank: facts.rank,
                world_size: facts.world_size,
                dir: facts.dir.display().to_string(),
                torch_npu_version: None,
                cann_version: None,
                level: None,
                aic_metrics: None,
                export_type: None,
                schedule: None,
                steps: StepsSummary::default(),
                artifacts: Artifacts::default(),
            },
            findings: Vec::new(),
            facts,
        }
    }

    fn codes(findings: &[Finding]) -> Vec<Code> {
        findings.iter().map(|f| f.code).collect()
    }

    #[test]
    fn runs_without_a_phase_sort_after_every_named_phase() {
        let known = phase_key(Some("decode"));
        let other = phase_key(Some("warmup_extra"));
        let none = phase_key(None);
        assert!(known < other, "{known:?} {other:?}");
        assert!(other < none, "{other:?} {none:?}");
        assert_ne!(none, phase_key(Some("prefill")));
    }

    fn denied() -> FileProblem {
        FileProblem::Unreadable {
            kind: std::io::ErrorKind::PermissionDenied,
            message: "permission denied".to_owned(),
        }
    }

    fn target() -> Target {
        Target {
            kind: TargetKind::Tree,
            root: PathBuf::from("out"),
            phases_present: Vec::new(),
            runs: Vec::new(),
            rank_logs: Vec::new(),
            unreadable: Vec::new(),
            phase_first: false,
        }
    }

    #[test]
    fn the_encoder_phase_is_expected_when_asked_for_alone() {
        let result_dir = Target {
            kind: TargetKind::ResultDir,
            ..target()
        };
        let opts = |phases| Options {
            phases,
            ..Options::default()
        };
        let expected = |sel| expected_phases(&result_dir, &opts(sel), &[]);
        assert_eq!(expected(PhaseSelection::MmEncode), vec!["mm_encode"]);
        assert_eq!(expected(PhaseSelection::Both), vec!["prefill", "decode"]);
    }

    #[test]
    fn an_unreadable_directory_above_or_below_a_phase_hides_it() {
        let missing = |unreadable: &str| {
            let t = Target {
                kind: TargetKind::ResultDir,
                unreadable: vec![(PathBuf::from(unreadable), denied())],
                ..target()
            };
            let mut findings = Vec::new();
            check_phases(&t, &["decode".to_owned()], &[], &mut findings);
            codes(&findings)
        };
        assert_eq!(missing("out/prof"), vec![]);
        assert_eq!(missing("out/prof/decode/x_ascend_pt"), vec![]);
        assert_eq!(missing("out/logs"), vec![Code::PhaseMissing]);
    }

    #[test]
    fn a_phase_directory_is_its_own_evidence_for_a_missing_rank() {
        let phase_dir = Target {
            kind: TargetKind::PhaseDir,
            root: PathBuf::from("out/prof/decode"),
            ..target()
        };
        let result_dir = Target {
            kind: TargetKind::ResultDir,
            ..target()
        };
        for t in [phase_dir, result_dir] {
            let runs = [outcome(facts(
                "out/prof/decode/r_ascend_pt",
                Some("decode"),
                Some(1),
            ))];
            let mut findings = Vec::new();
            check_ranks(&t, &RankExpectation::Flag(2), &runs, &mut findings);
            assert_eq!(codes(&findings), vec![Code::RankMissing]);
            let evidence = findings[0].evidence.path.as_deref();
            assert_eq!(evidence, Some("out/prof/decode"), "{:?}", t.kind);
        }
    }

    #[test]
    fn every_rank_of_a_distributed_run_here_is_no_subset() {
        let subset = |ranks: &[u32]| {
            let runs: Vec<RunOutcome> = ranks
                .iter()
                .map(|&r| outcome(facts(&format!("out/r{r}_ascend_pt"), None, Some(r))))
                .collect();
            let mut findings = Vec::new();
            check_ranks(
                &target(),
                &RankExpectation::Distributed(2),
                &runs,
                &mut findings,
            );
            codes(&findings)
        };
        assert_eq!(subset(&[0]), vec![Code::RankSubset]);
        assert_eq!(subset(&[0, 1]), vec![]);
    }
    #[test]
    fn an_unreadable_directory_is_reported_as_hiding_runs() {
        let t = Target {
            unreadable: vec![(PathBuf::from("out/prof"), denied())],
            ..target()
        };
        let mut findings = Vec::new();
        check_unreadable_dirs(&t, &mut findings);
        assert_eq!(codes(&findings), vec![Code::FileUnreadable]);
        assert_eq!(findings[0].evidence.path.as_deref(), Some("out/prof"));
        assert!(
            findings[0]
                .message
                .starts_with("directory exists but cannot be read"),
            "{}",
            findings[0].message
        );
    }

    #[test]
    fn a_worker_is_its_run_directories_name_without_the_timestamp() {
        let worker = |dir: &str| worker_of(Path::new(dir));
        assert_eq!(worker("out/host_41_20260101000000000_ascend_pt"), "host_41");
        assert_eq!(
            worker("out/host_41_20260101000000999_ascend_pt"),
            worker("out/host_41_20260101000000000_ascend_pt")
        );
        assert_ne!(
            worker("out/host_42_20260101000000000_ascend_pt"),
            worker("out/host_41_20260101000000000_ascend_pt")
        );
    }

    #[test]
    fn run_directories_are_ordered_by_the_timestamp_in_their_names() {
        // Path order puts pid 100 first; its directory is the newer one.
        let newer = facts("out/h_100_20260101000000002_ascend_pt", None, Some(0));
        let older = facts("out/h_99_20260101000000001_ascend_pt", None, Some(0));
        let order: Vec<&Path> = by_timestamp(vec![&newer, &older])
            .into_iter()
            .map(|f| f.dir.as_path())
            .collect();
        assert_eq!(order, vec![older.dir.as_path(), newer.dir.as_path()]);
        // A short number is no timestamp: such directories keep their names' order.
        let (a, b) = (
            facts("out/a_99_ascend_pt", None, None),
            facts("out/b_7_ascend_pt", None, None),
        );
        let order: Vec<&Path> = by_timestamp(vec![&b, &a])
            .into_iter()
            .map(|f| f.dir.as_path())
            .collect();
        assert_eq!(order, vec![a.dir.as_path(), b.dir.as_path()]);
    }

    #[test]
    fn only_a_run_with_an_encoder_lets_prefill_directories_repeat() {
        let run = |dir: &str, phase: &str| {
            let mut f = facts(dir, Some(phase), Some(0));
            f.schedule = Some(RecordedSchedule::Absent);
            outcome(f)
        };
        let prefill = [
            run(
                "out/prof/prefill/h_1_20260101000000001_ascend_pt",
                "prefill",
            ),
            run(
                "out/prof/prefill/h_1_20260101000000002_ascend_pt",
                "prefill",
            ),
        ];
        let mut findings = Vec::new();
        check_cycles(&prefill, &mut findings);
        assert_eq!(codes(&findings), vec![Code::RunDuplicate]);
        // Encode and prefill alternate, each switch a new profiler; decode's directories still
        // count.
        let mut with_encoder = prefill.to_vec();
        for (phase, stamp) in [
            ("mm_encode", 3),
            ("mm_encode", 4),
            ("decode", 5),
            ("decode", 6),
        ] {
            with_encoder.push(run(
                &format!("out/prof/{phase}/h_1_2026010100000000{stamp}_ascend_pt"),
                phase,
            ));
        }
        let mut findings = Vec::new();
        check_cycles(&with_encoder, &mut findings);
        assert_eq!(codes(&findings), vec![Code::RunDuplicate]);
        assert_eq!(findings[0].phase.as_deref(), Some("decode"));
    }

    #[test]
    fn an_unbounded_schedule_without_known_cycles_allows_any_number_of_directories() {
        let runs = |repeat| {
            [1, 2].map(|stamp| {
                let mut f = facts(
                    &format!("out/h_1_2026010100000000{stamp}_ascend_pt"),
                    None,
                    Some(0),
                );
                f.schedule = Some(RecordedSchedule::Args(Schedule::clamped(
                    0, 0, 1, repeat, 0, 0,
                )));
                outcome(f)
            })
        };
        let mut findings = Vec::new();
        check_cycles(&runs(0), &mut findings);
        assert_eq!(codes(&findings), vec![]);
        check_cycles(&runs(1), &mut findings);
        assert_eq!(codes(&findings), vec![Code::RunDuplicate]);
        // A callable schedule's window is unknown: its directories are not counted either.
        let callable = [1, 2].map(|stamp| {
            let mut f = facts(
                &format!("out/h_1_2026010100000000{stamp}_ascend_pt"),
                None,
                Some(0),
            );
            f.schedule = Some(RecordedSchedule::Function);
            f.step_ids = Some(true);
            outcome(f)
        });
        let mut findings = Vec::new();
        check_cycles(&callable, &mut findings);
        assert_eq!(codes(&findings), vec![]);
    }

    /// The findings for rank 0's directories holding these cycles (in timestamp order) of a
    /// schedule saving `repeat` cycles.
    fn cycles(repeat: i64, held: &[&[u64]]) -> Vec<Finding> {
        let schedule = Schedule::clamped(0, 0, 1, repeat, 0, 0);
        let runs: Vec<RunFacts> = held
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut f = facts(
                    &format!("out/h_1_2026010100000000{i}_ascend_pt"),
                    None,
                    Some(0),
                );
                f.cycles = c.to_vec();
                f
            })
            .collect();
        let runs: Vec<&RunFacts> = runs.iter().collect();
        let mut findings = Vec::new();
        cycle_findings(&schedule, &runs, &mut findings);
        findings
    }

    #[test]
    fn missing_cycles_after_the_last_saved_one_mean_the_run_stopped_early() {
        let stopped = cycles(3, &[&[0]]);
        assert_eq!(codes(&stopped), vec![Code::CycleMissing]);
        assert!(
            stopped[0].next_action.starts_with("the run stopped"),
            "{}",
            stopped[0].next_action
        );
        let deleted = cycles(3, &[&[0], &[2]]);
        assert_eq!(codes(&deleted), vec![Code::CycleMissing]);
        assert!(
            deleted[0]
                .next_action
                .starts_with("a cycle's directory was deleted"),
            "{}",
            deleted[0].next_action
        );
    }

    #[test]
    fn a_cycle_in_two_directories_is_one_duplicate_and_order_is_checked_apart() {
        assert_eq!(codes(&cycles(1, &[&[0], &[0]])), vec![Code::CycleDuplicate]);
        let swapped = cycles(2, &[&[1], &[0]]);
        assert_eq!(codes(&swapped), vec![Code::CycleDuplicate]);
        assert!(
            swapped[0].message.contains(
                "out/h_1_20260101000000001_ascend_pt (cycle 0) is newer than out/h_1_20260101000000000_ascend_pt (cycle 1)"
            ),
            "{}",
            swapped[0].message
        );
        assert_eq!(
            swapped[0].evidence.path.as_deref(),
            Some("out/h_1_20260101000000001_ascend_pt")
        );
    }
}
