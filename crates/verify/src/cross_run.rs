//! Checks across runs: phases, ranks, result-directory logs, the bad-output-filesystem case.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::BufReader;

use crate::Options;
use crate::discover::{self, Target, TargetKind};
use crate::finding::{Code, Evidence, Finding, Severity};
use crate::log_findings;
use crate::logs;
use crate::mounts;
use crate::report::{TargetSummary, VerifyReport};
use crate::run_check::{self, RunFacts, RunOutcome, reparse_command};

fn phase_key(phase: Option<&str>) -> (u8, String) {
    match phase {
        Some("prefill") => (0, String::new()),
        Some("decode") => (1, String::new()),
        Some(other) => (2, other.to_owned()),
        None => (3, String::new()),
    }
}

fn fmt_ranks(ranks: &[u32]) -> String {
    let shown: Vec<String> = ranks.iter().take(16).map(u32::to_string).collect();
    if ranks.len() > 16 {
        format!("{} … ({} in all)", shown.join(", "), ranks.len())
    } else {
        shown.join(", ")
    }
}

/// Builds the report from the per-run outcomes.
pub fn assemble(
    target: &Target,
    opts: &Options,
    world_size: Option<u32>,
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
    let root = target.root.display().to_string();
    let mut findings: Vec<Finding> = Vec::new();

    // Phases.
    let phases: Vec<String> = if target.kind == TargetKind::ResultDir {
        opts.phases
            .names()
            .iter()
            .map(|s| (*s).to_owned())
            .collect()
    } else {
        let set: BTreeSet<String> = outcomes
            .iter()
            .filter_map(|o| o.facts.phase.clone())
            .collect();
        set.into_iter().collect()
    };
    if target.kind == TargetKind::ResultDir {
        for phase in &phases {
            if outcomes
                .iter()
                .any(|o| o.facts.phase.as_deref() == Some(phase))
            {
                continue;
            }
            let dir = target.root.join("prof").join(phase);
            let what = if dir.is_dir() {
                format!("prof/{phase}/ exists but holds no run directory")
            } else {
                format!("prof/{phase}/ does not exist")
            };
            findings.push(
                Finding::new(
                    Severity::Error,
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

    // Ranks.
    let observed_max = outcomes.iter().filter_map(|o| o.facts.rank).max();
    let expected_ranks = world_size.or(observed_max.map(|m| m + 1));
    if let Some(n) = expected_ranks {
        // Per phase: the ranks found, and how many runs have no known rank.
        type PhaseRanks = (Option<String>, BTreeSet<u32>, usize);
        let mut by_phase: BTreeMap<(u8, String), PhaseRanks> = BTreeMap::new();
        for o in &outcomes {
            let entry = by_phase
                .entry(phase_key(o.facts.phase.as_deref()))
                .or_insert_with(|| (o.facts.phase.clone(), BTreeSet::new(), 0));
            match o.facts.rank {
                Some(r) => {
                    entry.1.insert(r);
                }
                None => entry.2 += 1,
            }
        }
        for (phase, ranks, unknown) in by_phase.values() {
            let missing: Vec<u32> = (0..n).filter(|r| !ranks.contains(r)).collect();
            // Runs without profiler_info may be the missing ranks: only count what cannot be.
            if missing.is_empty() || ranks.len() + unknown >= n as usize {
                continue;
            }
            let source = if opts.world_size.is_some() {
                "--ranks"
            } else if !target.rank_logs.is_empty() {
                "the log_<rank>.log files"
            } else {
                "the highest rank found in profiler_info"
            };
            let dir = match phase {
                Some(p) if target.kind == TargetKind::ResultDir => target.root.join("prof").join(p),
                _ => target.root.clone(),
            };
            findings.push(
                Finding::new(
                    Severity::Error,
                    Code::RankMissing,
                    format!(
                        "{}no run directory for rank(s) {} of {n} (expected from {source})",
                        phase.as_ref().map(|p| format!("phase {p}: ")).unwrap_or_default(),
                        fmt_ranks(&missing)
                    ),
                    Evidence::path(dir.display().to_string()),
                    "read those ranks' log_<rank>.log for a crash, a kill or a parser failure; every rank must reach the end of the window",
                )
                .at(phase.as_deref(), None),
            );
        }
    }
    if world_size.is_none()
        && matches!(target.kind, TargetKind::ResultDir | TargetKind::PhaseDir)
        && !outcomes.is_empty()
    {
        findings.push(Finding::new(
            Severity::Info,
            Code::WorldSizeUnknown,
            format!(
                "number of ranks unknown (no --ranks, no log_<rank>.log): ranks 0..{} checked, a missing highest rank would go unnoticed",
                observed_max.map_or(0, |m| m + 1)
            ),
            Evidence::path(root.clone()),
            "pass --ranks N (the world size of the run)",
        ));
    }
    // Duplicates beyond `repeat`.
    let mut groups: BTreeMap<((u8, String), u32), Vec<&RunFacts>> = BTreeMap::new();
    for o in &outcomes {
        if let Some(r) = o.facts.rank {
            groups
                .entry((phase_key(o.facts.phase.as_deref()), r))
                .or_default()
                .push(&o.facts);
        }
    }
    for runs in groups.values() {
        let repeat = runs
            .iter()
            .find_map(|f| f.schedule.flatten())
            .map(|s| s.repeat)
            .or(if runs.iter().all(|f| f.schedule == Some(None)) {
                Some(1)
            } else {
                None
            });
        if let Some(repeat) = repeat.filter(|r| *r > 0)
            && runs.len() as u64 > repeat
        {
            let f = runs[0];
            findings.push(
                    Finding::new(
                        Severity::Warning,
                        Code::RunDuplicate,
                        format!(
                            "{} run directories for rank {} but the schedule saves {repeat} cycle(s): leftovers of an earlier run are mixed in",
                            runs.len(),
                            f.rank.unwrap_or(0)
                        ),
                        Evidence::path(f.dir.display().to_string()),
                        "verify a fresh result directory, or move the older *_ascend_pt directories away",
                    )
                    .at(f.phase.as_deref(), f.rank),
                );
        }
    }

    // Per-run findings.
    for o in &outcomes {
        findings.extend(o.findings.iter().cloned());
    }

    // Result-directory logs.
    let sched_ctx = run_check::schedule_context(outcomes.iter().map(|o| &o.facts));
    let mut result_logs_failed: BTreeSet<u32> = BTreeSet::new();
    for (rank, path) in &target.rank_logs {
        // A rank's log covers every phase: re-parse (or chown) the whole prof/ directory.
        let run_dir = target.root.join("prof").display().to_string();
        match File::open(path).and_then(|f| logs::scan_log(BufReader::new(f))) {
            Ok(scan) => {
                if scan.run_failed_lines > 0 {
                    result_logs_failed.insert(*rank);
                }
                for f in log_findings::findings(&scan, path, &run_dir, sched_ctx) {
                    findings.push(f.at(None, Some(*rank)));
                }
            }
            Err(e) => findings.push(
                Finding::new(
                    Severity::Error,
                    Code::FileUnreadable,
                    format!("cannot read the log: {e}"),
                    Evidence::path(path.display().to_string()),
                    format!("check permissions: ls -l {}", path.display()),
                )
                .at(None, Some(*rank)),
            ),
        }
    }

    // The bad-output-filesystem signature.
    let affected: Vec<&RunFacts> = outcomes
        .iter()
        .map(|o| &o.facts)
        .filter(|f| {
            f.no_csv
                && f.trace_broken
                && (f.parsers_failed
                    || f.rank.is_some_and(|r| result_logs_failed.contains(&r))
                    || (f.rank.is_none() && !result_logs_failed.is_empty()))
        })
        .collect();
    if let Some(first) = affected.first() {
        findings.push(bad_disk_finding(target, &affected, first));
    }

    // analyse.done is no success signal.
    for o in &outcomes {
        let has_error = o.findings.iter().any(|f| f.severity == Severity::Error);
        if o.facts.analyse_done && has_error {
            findings.push(
                Finding::new(
                    Severity::Info,
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

    findings.sort_by_key(|f| (f.severity, f.code));
    let ok = !findings.iter().any(|f| f.severity == Severity::Error);
    VerifyReport {
        ok,
        target: TargetSummary {
            kind: target.kind,
            path: root,
            phases,
            expected_ranks,
        },
        runs: outcomes.into_iter().map(|o| o.summary).collect(),
        findings,
    }
}

fn bad_disk_finding(target: &Target, affected: &[&RunFacts], first: &RunFacts) -> Finding {
    let mount = mounts::mount_of_dir(&first.dir);
    let fs = match &mount {
        Some(m) if m.is_suspect() => format!(
            "(filesystem: {} from {} at {}, a network/FUSE/overlay filesystem: flagged)",
            m.fs_type, m.source, m.mount_point
        ),
        Some(m) => format!(
            "(filesystem: {} from {} at {}, looks local)",
            m.fs_type, m.source, m.mount_point
        ),
        None => "(filesystem: unknown, /proc/self/mountinfo unreadable)".to_owned(),
    };
    let verdict = if mount.as_ref().is_some_and(mounts::Mount::is_suspect) {
        "the output filesystem is the likely cause"
    } else {
        "the filesystem looks local, but the evidence still matches the known bad-disk failure"
    };
    let (repo, model) = discover::repo_and_model(&target.root)
        .map(|(r, m)| (r.display().to_string(), m))
        .unwrap_or_else(|| ("<repo>".to_owned(), "<model>".to_owned()));
    let run = first.dir.display().to_string();
    let name = first
        .dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let copy = format!("/tmp/npuprof-reparse/{name}");
    Finding::new(
        Severity::Error,
        Code::OutputFilesystem,
        format!(
            "{} run(s) have failed parsers, no CSV and a broken or missing trace_view.json: the known bad-output-filesystem failure {fs}; {verdict}",
            affected.len()
        ),
        Evidence::path(run.clone()),
        format!(
            "relocate the output to a local disk and re-run: npuprof relocate --repo {repo} --model {model}; or confirm by re-parsing a copy there: mkdir -p /tmp/npuprof-reparse && cp -r {run} {copy} && {}",
            reparse_command(&copy)
        ),
    )
    .at(first.phase.as_deref(), first.rank)
}
