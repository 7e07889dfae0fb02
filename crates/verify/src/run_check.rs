//! Checks of one run directory: profiler_info, artifact set, kernel columns, trace, steps, logs.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use crate::discover::RunRef;
use crate::finding::{Code, Evidence, Finding, Severity};
use crate::kernel_csv;
use crate::log_findings::{self, ScheduleContext};
use crate::logs;
use crate::profiler_info::{self, ProfilerInfo};
use crate::report::{Artifacts, RunSummary, StepsSummary};
use crate::trace_scan::TraceState;
use crate::{Options, Progress};
use npuprof_schedule::Schedule;

mod kernel_checks;
mod step_checks;
mod trace_checks;

use kernel_checks::{kernel_findings, kernel_summary, scan_kernels};
use step_checks::step_findings;
use trace_checks::{scan_trace, trace_findings, trace_summary};

/// torch_npu treats a JSON file over this size as empty.
pub const JSON_CAP: u64 = 10 << 30;
/// torch_npu treats a CSV file over this size as empty.
pub const CSV_CAP: u64 = 5 << 30;

/// The fix for a minimal kernel_details header.
pub const EXPERIMENTAL_CONFIG_FIX: &str = "pass experimental_config=torch_npu.profiler._ExperimentalConfig(profiler_level=torch_npu.profiler.ProfilerLevel.Level1, aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization) to torch_npu.profiler.profile(...) and re-run";

/// What later cross-run checks need to know about a run.
#[derive(Debug, Clone)]
pub struct RunFacts {
    /// The run directory.
    pub dir: PathBuf,
    /// Phase.
    pub phase: Option<String>,
    /// Rank.
    pub rank: Option<u32>,
    /// The schedule: `None` unknown, `Some(None)` no schedule.
    pub schedule: Option<Option<Schedule>>,
    /// No CSV at all in the output directory.
    pub no_csv: bool,
    /// The trace is absent or not complete.
    pub trace_broken: bool,
    /// The run's own logs report failed parsers.
    pub parsers_failed: bool,
    /// `analyse.done` exists.
    pub analyse_done: bool,
}

/// Everything one run produced.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The summary for the report.
    pub summary: RunSummary,
    /// Its findings.
    pub findings: Vec<Finding>,
    /// Facts for cross-run checks.
    pub facts: RunFacts,
}

/// `python3 -c "import torch_npu; torch_npu.profiler.profiler.analyse('<dir>')"`.
pub fn reparse_command(dir: &str) -> String {
    format!("python3 -c \"import torch_npu; torch_npu.profiler.profiler.analyse('{dir}')\"")
}

fn disp(p: &Path) -> String {
    p.display().to_string()
}

/// A schedule as verify's reports write it, space-separated (`wait=0 warmup=1 active=1 repeat=1
/// skip_first=12`): the stable form of the JSON `schedule` field and of the step messages.
fn describe_schedule(s: &Schedule) -> String {
    s.to_string().replace(", ", " ")
}

struct Ctx<'a> {
    phase: Option<String>,
    rank: Option<u32>,
    dir: String,
    findings: Vec<Finding>,
    progress: &'a dyn Progress,
}

impl Ctx<'_> {
    fn push(&mut self, f: Finding) {
        let f = f.at(self.phase.as_deref(), self.rank);
        self.findings.push(f);
    }
}

fn find_profiler_info(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.is_file()
                        && p.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.starts_with("profiler_info") && n.ends_with(".json"))
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn list_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Verifies one run directory.
pub fn check_run(run: &RunRef, opts: &Options, progress: &dyn Progress) -> RunOutcome {
    let dir = &run.dir;
    let info_files = find_profiler_info(dir);
    let mut ctx = Ctx {
        phase: run.phase.clone(),
        rank: None,
        dir: disp(dir),
        findings: Vec::new(),
        progress,
    };
    let info = read_info(&mut ctx, dir, &info_files);
    ctx.rank = info.as_ref().and_then(|i| i.rank);
    let schedule = info.as_ref().and_then(|i| i.schedule);
    let effective_schedule = match (schedule, opts.expect_active) {
        (Some(Some(s)), Some(a)) => Some(Some(s.with_active(a))),
        (s, _) => s,
    };

    let out_dir = dir.join("ASCEND_PROFILER_OUTPUT");
    let mut artifacts = Artifacts {
        output_dir: out_dir.is_dir(),
        ..Artifacts::default()
    };
    if artifacts.output_dir {
        artifacts.files = list_names(&out_dir);
    } else {
        ctx.push(Finding::new(
            Severity::Error,
            Code::OutputDirMissing,
            "ASCEND_PROFILER_OUTPUT/ is missing: the run was never parsed (or parsing was interrupted before writing anything)",
            Evidence::path(disp(dir)),
            format!(
                "check the run's log for `run failed` lines, then re-parse: {}",
                reparse_command(&disp(dir))
            ),
        ));
    }
    let has = |name: &str| artifacts.files.iter().any(|f| f == name);

    // trace_view.json and kernel_details.csv are the large files: scan them concurrently.
    let trace_path = out_dir.join("trace_view.json");
    let kernel_path = out_dir.join("kernel_details.csv");
    let (trace, kernels) = rayon::join(
        || has("trace_view.json").then(|| scan_trace(&trace_path, ctx.progress)),
        || has("kernel_details.csv").then(|| scan_kernels(&kernel_path, ctx.progress)),
    );

    check_artifact_set(&mut ctx, info.as_ref(), &artifacts, &out_dir, opts);
    if has("trace_view_temp.json") || dir.join("trace_view_temp.json").is_file() {
        let p = if has("trace_view_temp.json") {
            out_dir.join("trace_view_temp.json")
        } else {
            dir.join("trace_view_temp.json")
        };
        ctx.push(Finding::new(
            Severity::Error,
            Code::TraceTempLeftover,
            "trace_view_temp.json was left behind: timeline parsing never finished (torch_npu 7.1 and older rename it when done)",
            Evidence::path(disp(&p)),
            format!("re-parse the run: {}", reparse_command(&ctx.dir)),
        ));
    }

    let trace_broken = match &trace {
        Some(Ok(scan)) => {
            let broken = !matches!(scan.state, TraceState::Complete | TraceState::NotAnArray);
            trace_findings(&mut ctx, &trace_path, scan, info.as_ref());
            artifacts.trace_view = Some(trace_summary(scan));
            broken
        }
        Some(Err(e)) => {
            unreadable(&mut ctx, &trace_path, e);
            true
        }
        None => true,
    };
    size_cap(&mut ctx, &trace_path, JSON_CAP, "JSON", "10 GiB");

    let mut steps = StepsSummary {
        expected: effective_schedule
            .flatten()
            .and_then(|s| s.recorded_steps()),
        ..StepsSummary::default()
    };
    let kernel_scan = match kernels {
        Some(Ok(scan)) => {
            kernel_findings(&mut ctx, &kernel_path, &scan, info.as_ref());
            steps.kernel_details = scan.steps.keys().copied().collect();
            artifacts.kernel_details = Some(kernel_summary(&kernel_path, &scan));
            Some(scan)
        }
        Some(Err(e)) => {
            unreadable(&mut ctx, &kernel_path, &e);
            None
        }
        None => None,
    };
    size_cap(&mut ctx, &kernel_path, CSV_CAP, "CSV", "5 GiB");
    for csv_name in artifacts.files.iter().filter(|f| f.ends_with(".csv")) {
        if csv_name != "kernel_details.csv" {
            size_cap(&mut ctx, &out_dir.join(csv_name), CSV_CAP, "CSV", "5 GiB");
        }
    }

    let step_trace_path = out_dir.join("step_trace_time.csv");
    let step_rows = if has("step_trace_time.csv") {
        match File::open(&step_trace_path)
            .map_err(csv::Error::from)
            .and_then(|f| kernel_csv::read_step_trace(BufReader::new(f)))
        {
            Ok((_, rows)) => {
                artifacts.step_trace_time_rows = Some(rows.len() as u64);
                let set: BTreeSet<u64> = rows.iter().filter_map(|r| r.step).collect();
                steps.step_trace_time = set.into_iter().collect();
                Some(rows)
            }
            Err(e) => {
                unreadable(&mut ctx, &step_trace_path, &e);
                None
            }
        }
    } else {
        None
    };

    step_findings(
        &mut ctx,
        effective_schedule,
        &steps,
        kernel_scan.as_ref(),
        &kernel_path,
        step_rows.as_deref(),
        &step_trace_path,
    );

    // Parser logs of the run directory.
    let mut parsers_failed = false;
    let logs_dir = dir.join("logs");
    for name in list_names(&logs_dir)
        .into_iter()
        .filter(|n| n.ends_with(".log"))
    {
        let path = logs_dir.join(&name);
        artifacts.logs.push(name);
        match File::open(&path).and_then(|f| logs::scan_log(BufReader::new(f))) {
            Ok(scan) => {
                parsers_failed |= scan.run_failed_lines > 0;
                let sched_ctx = ScheduleContext::from_schedules([schedule]);
                for f in log_findings::findings(&scan, &path, &ctx.dir, sched_ctx) {
                    ctx.push(f);
                }
            }
            Err(e) => unreadable(&mut ctx, &path, &e),
        }
    }

    let no_csv = !artifacts.files.iter().any(|f| f.ends_with(".csv"));
    let analyse_done = has("analyse.done");
    let summary = RunSummary {
        phase: run.phase.clone(),
        rank: ctx.rank,
        dir: ctx.dir.clone(),
        torch_npu_version: info.as_ref().and_then(|i| i.torch_npu_version.clone()),
        cann_version: info.as_ref().and_then(|i| i.cann_version.clone()),
        level: info.as_ref().and_then(|i| i.level_raw.clone()),
        aic_metrics: info.as_ref().and_then(|i| i.aic_metrics.clone()),
        export_type: info.as_ref().and_then(|i| i.export_type.clone()),
        schedule: schedule.map(|s| s.map_or_else(|| "none".to_owned(), |s| describe_schedule(&s))),
        steps,
        artifacts,
    };
    RunOutcome {
        facts: RunFacts {
            dir: dir.clone(),
            phase: run.phase.clone(),
            rank: ctx.rank,
            schedule,
            no_csv,
            trace_broken,
            parsers_failed,
            analyse_done,
        },
        summary,
        findings: ctx.findings,
    }
}

fn read_info(ctx: &mut Ctx<'_>, dir: &Path, files: &[PathBuf]) -> Option<ProfilerInfo> {
    let Some(path) = files.first() else {
        ctx.push(Finding::new(
            Severity::Warning,
            Code::ProfilerInfoMissing,
            "no profiler_info*.json: level, metrics, schedule and rank are unknown, so the checks that need them are reported as unknown",
            Evidence::path(disp(dir)),
            "check that the profiler stopped cleanly (profiler_info is written at stop); pass --ranks/--expect-active to supply what is known",
        ));
        return None;
    };
    let file_rank = profiler_info::rank_from_file_name(path);
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            unreadable(ctx, path, &e);
            return None;
        }
    };
    match ProfilerInfo::parse(&text, file_rank) {
        Ok(info) => Some(info),
        Err(e) => {
            ctx.push(Finding::new(
                Severity::Error,
                Code::ProfilerInfoInvalid,
                format!("profiler_info is not valid JSON: {e}"),
                Evidence::line(disp(path), e.line() as u64),
                "the profiler was probably killed while stopping; re-run the profiled job",
            ));
            None
        }
    }
}

fn unreadable(ctx: &mut Ctx<'_>, path: &Path, e: &dyn std::fmt::Display) {
    ctx.push(Finding::new(
        Severity::Error,
        Code::FileUnreadable,
        format!("cannot read the file: {e}"),
        Evidence::path(disp(path)),
        format!("check permissions and the disk: ls -l {}", disp(path)),
    ));
}

fn size_cap(ctx: &mut Ctx<'_>, path: &Path, cap: u64, kind: &str, cap_text: &str) {
    let Ok(meta) = path.metadata() else {
        return;
    };
    if meta.len() > cap {
        ctx.push(Finding::new(
            Severity::Error,
            Code::FileOverSizeCap,
            format!(
                "{kind} file of {} bytes is over torch_npu's {cap_text} cap: torch_npu and its tools treat it as empty",
                meta.len()
            ),
            Evidence::path(disp(path)),
            "profile fewer steps (lower `active`), fewer ranks, or a lower profiler level, and re-run",
        ));
    }
}

/// Decides and reports the expected artifact set (reference §3).
fn check_artifact_set(
    ctx: &mut Ctx<'_>,
    info: Option<&ProfilerInfo>,
    artifacts: &Artifacts,
    out_dir: &Path,
    opts: &Options,
) {
    if !artifacts.output_dir {
        return;
    }
    let has = |name: &str| artifacts.files.iter().any(|f| f == name);
    let mut errors: Vec<String> = Vec::new();
    let mut warnings: Vec<String> = Vec::new();
    let mut missing = |_: &mut Ctx<'_>, sev: Severity, name: &str, why: &str| {
        let item = format!("{name} ({why})");
        if sev == Severity::Error {
            errors.push(item);
        } else {
            warnings.push(item);
        }
    };
    let text = info.is_none_or(ProfilerInfo::exports_text);
    let db = info.is_some_and(ProfilerInfo::exports_db);
    if db {
        let has_db = artifacts
            .files
            .iter()
            .any(|f| f.starts_with("ascend_pytorch_profiler") && f.ends_with(".db"));
        if !has_db {
            missing(
                ctx,
                Severity::Error,
                "ascend_pytorch_profiler*.db",
                "export type includes db",
            );
        }
        if !text {
            ctx.push(Finding::new(
                Severity::Info,
                Code::DbExport,
                "db-only export: text artifacts (trace_view.json, CSVs) are not expected and were not checked",
                Evidence::path(disp(out_dir)),
                "open the .db in MindStudio Insight, or set export_type=[torch_npu.profiler.ExportType.Text] for text files",
            ));
            report_missing(ctx, out_dir, Severity::Error, &errors);
            return;
        }
    }
    let npu = info.and_then(ProfilerInfo::npu_activity);
    let cpu = info.and_then(ProfilerInfo::cpu_activity);
    let level = info.and_then(|i| i.level);
    if !has("trace_view.json") {
        missing(
            ctx,
            Severity::Error,
            "trace_view.json",
            "always written with text export",
        );
    }
    if !has("kernel_details.csv") {
        match npu {
            Some(true) => missing(
                ctx,
                Severity::Error,
                "kernel_details.csv",
                "NPU activity was recorded",
            ),
            None => missing(
                ctx,
                Severity::Warning,
                "kernel_details.csv",
                "expected when NPU activity is recorded; activities unknown",
            ),
            Some(false) => {}
        }
    }
    if !has("operator_details.csv") && cpu == Some(true) {
        missing(
            ctx,
            Severity::Warning,
            "operator_details.csv",
            "CPU activity was recorded",
        );
    }
    if !has("step_trace_time.csv") && npu == Some(true) {
        missing(
            ctx,
            Severity::Warning,
            "step_trace_time.csv",
            "NPU activity was recorded",
        );
    }
    match level {
        Some(l) if l.is_detailed() && npu != Some(false) => {
            for name in ["op_statistic.csv", "api_statistic.csv"] {
                if !has(name) {
                    missing(ctx, Severity::Error, name, "written at Level1 and Level2");
                }
            }
            if opts.world_size.is_some_and(|n| n > 1) {
                for name in ["communication.json", "communication_matrix.json"] {
                    if !has(name) {
                        missing(
                            ctx,
                            Severity::Warning,
                            name,
                            "Level1/2 with several ranks: expected when the ranks communicate",
                        );
                    }
                }
            }
        }
        Some(_) => {}
        None => ctx.push(Finding::new(
            Severity::Info,
            Code::ExpectationUnknown,
            "profiler level unknown: op_statistic.csv, api_statistic.csv and communication files not checked",
            Evidence::path(disp(out_dir)),
            "keep profiler_info*.json with the run so the level can be checked",
        )),
    }
    if info.and_then(|i| i.profile_memory) == Some(true) {
        for name in ["memory_record.csv", "operator_memory.csv"] {
            if !has(name) {
                missing(ctx, Severity::Warning, name, "profile_memory=True");
            }
        }
    }
    report_missing(ctx, out_dir, Severity::Error, &errors);
    report_missing(ctx, out_dir, Severity::Warning, &warnings);
}

/// One finding per severity listing the missing artifacts.
fn report_missing(ctx: &mut Ctx<'_>, out_dir: &Path, severity: Severity, items: &[String]) {
    if items.is_empty() {
        return;
    }
    ctx.push(Finding::new(
        severity,
        Code::ArtifactMissing,
        format!("missing from ASCEND_PROFILER_OUTPUT/: {}", items.join("; ")),
        Evidence::path(disp(out_dir)),
        format!(
            "look for `run failed` in the run's log to find the failing parser, then re-parse: {}",
            reparse_command(&ctx.dir)
        ),
    ));
}

/// The schedule context shared by log checks: whether every run had no schedule.
pub fn schedule_context<'a>(facts: impl IntoIterator<Item = &'a RunFacts>) -> ScheduleContext {
    ScheduleContext::from_schedules(facts.into_iter().map(|f| f.schedule))
}
