//! Checks of one run directory: profiler_info, artifact set, kernel columns, trace, steps,
//! databases, logs. Every file is opened through [`npuprof_runs::probe`]: never blocking, missing told
//! from unreadable, special contents (empty, git-lfs pointer) named.

use std::collections::BTreeSet;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use crate::finding::{Code, Evidence, Finding};
use crate::log_findings::{self, LogVerdict};
use crate::report::{Artifacts, RunSummary, StepsSummary};
use crate::schedule_findings::{self, ScheduleContext, ScheduleEvidence};
use crate::{Options, Progress};
use npuprof_runs::build::Build;
use npuprof_runs::discover::RunRef;
use npuprof_runs::logs::{self, Quoted, ScheduleWarning};
use npuprof_runs::probe::{self, Contents, FileProblem, Opened};
use npuprof_runs::profiler_info::{self, ParallelGroups, ProfilerInfo, RecordedSchedule};
use npuprof_runs::reparse::{self, ReparseDir};
use npuprof_scan::kernel_csv::{self, KernelScan, StepTraceRow};
use npuprof_scan::trace_scan::{TraceScan, TraceState};
use npuprof_schedule::Schedule;

mod artifact_set;
mod consistency;
mod db_checks;
mod file_findings;
mod kernel_checks;
mod step_checks;
mod trace_checks;
mod trace_totals;

pub use file_findings::problem_finding;
use file_findings::{file_problem, special_contents};
use kernel_checks::{kernel_findings, kernel_summary, scan_kernels};
use step_checks::step_findings;
use trace_checks::{scan_trace, trace_findings, trace_summary};

use npuprof_runs::probe::{CSV_CAP, JSON_CAP, SMALL_JSON_CAP};

/// What later cross-run checks need to know about a run.
#[derive(Debug, Clone)]
pub struct RunFacts {
    /// The run directory.
    pub dir: PathBuf,
    /// Phase.
    pub phase: Option<String>,
    /// Rank.
    pub rank: Option<u32>,
    /// The recorded schedule (`None`: unknown).
    pub schedule: Option<RecordedSchedule>,
    /// Whether kernel_details.csv has a `Step Id` column (`None`: no table was read).
    pub step_ids: Option<bool>,
    /// The schedule's cycles (0-based) its Step Ids belong to (empty: none known).
    pub cycles: Vec<u64>,
    /// The number of ranks from profiler_metadata.json's `parallel_group_info`.
    pub world_size: Option<u32>,
    /// No CSV at all in the output directory.
    pub no_csv: bool,
    /// The trace is absent or not complete.
    pub trace_broken: bool,
    /// The run's own logs report failed parsers.
    pub parsers_failed: bool,
    /// The run's own logs name a cause other than the disk (CANN environment, toolkit owner).
    pub environment_cause: bool,
    /// `analyse.done` exists.
    pub analyse_done: bool,
    /// The torch_npu build that wrote it.
    pub build: Build,
}

impl RunFacts {
    /// A run directory of which nothing is known (none of its files read).
    pub(crate) fn unknown(dir: PathBuf, phase: Option<String>) -> Self {
        Self {
            dir,
            phase,
            rank: None,
            schedule: None,
            step_ids: None,
            cycles: Vec::new(),
            world_size: None,
            no_csv: false,
            trace_broken: false,
            parsers_failed: false,
            environment_cause: false,
            analyse_done: false,
            build: Build::unknown(),
        }
    }
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

fn disp(p: &Path) -> String {
    p.display().to_string()
}

/// A schedule as verify's reports write it, space-separated (`wait=0 warmup=1 active=1 repeat=1
/// skip_first=12`): the stable form of the JSON `schedule` field and of the step messages.
fn describe_schedule(s: &Schedule) -> String {
    s.to_string().replace(", ", " ")
}

/// The report's `schedule` field: the arguments; `callable` for a function with Step Ids
/// (`torch.profiler.schedule`, a lambda…, whose arguments are not recorded); `none` for no
/// window (torch_npu's default schedule: `{}` without Step Ids, or `null`); `function` for `{}`
/// when no kernel table tells the two apart.
fn describe_recorded(s: RecordedSchedule, step_ids: Option<bool>) -> String {
    match (s, step_ids) {
        (RecordedSchedule::Args(s), _) => describe_schedule(&s),
        (RecordedSchedule::Function, Some(true)) => "callable".to_owned(),
        (RecordedSchedule::Function, Some(false)) | (RecordedSchedule::Absent, _) => {
            "none".to_owned()
        }
        (RecordedSchedule::Function, None) => "function".to_owned(),
    }
}

struct Ctx<'a> {
    phase: Option<String>,
    rank: Option<u32>,
    /// The run directory, as reports write it.
    dir: String,
    /// The run directory.
    run_dir: PathBuf,
    findings: Vec<Finding>,
    progress: &'a dyn Progress,
}

impl Ctx<'_> {
    /// The command that re-parses this run directory, or, without its raw data, what to do
    /// instead.
    fn reparse(&self) -> String {
        reparse::reparse_advice(&self.run_dir)
    }

    fn push(&mut self, f: Finding) {
        let f = f.at(self.phase.as_deref(), self.rank);
        self.findings.push(f);
    }
}

/// Opens an artifact for its parser: problems and special contents become findings and `None`
/// (an empty file is reported with `empty_code`, or accepted silently without one).
fn open_artifact(ctx: &mut Ctx<'_>, path: &Path, empty_code: Option<Code>) -> Option<Opened> {
    match probe::open_regular(path) {
        Err(FileProblem::Missing) => None,
        Err(problem) => {
            file_problem(ctx, path, &problem);
            None
        }
        Ok(opened) if opened.contents == Contents::Empty && empty_code.is_none() => None,
        Ok(opened) if opened.contents != Contents::Data => {
            special_contents(
                ctx,
                path,
                opened.contents,
                empty_code.unwrap_or(Code::FileEmpty),
            );
            None
        }
        Ok(opened) => Some(opened),
    }
}

/// The run's configuration: profiler_info, profiler_metadata and the effective schedule.
struct Config {
    info: Option<ProfilerInfo>,
    groups: Option<ParallelGroups>,
    effective_schedule: Option<RecordedSchedule>,
}

fn read_config(ctx: &mut Ctx<'_>, dir: &Path, names: &[String], opts: &Options) -> Config {
    let info_files: Vec<PathBuf> = names
        .iter()
        .filter(|n| n.starts_with("profiler_info") && n.ends_with(".json"))
        .map(|n| dir.join(n))
        .collect();
    let info = read_info(ctx, dir, &info_files);
    let groups = names
        .iter()
        .any(|n| n == "profiler_metadata.json")
        .then(|| probe::read_capped(&dir.join("profiler_metadata.json"), SMALL_JSON_CAP))
        .and_then(|r| r.ok()?.ok())
        .and_then(|bytes| ParallelGroups::parse(&String::from_utf8_lossy(&bytes)));
    ctx.rank = info
        .as_ref()
        .and_then(|i| i.rank)
        .or(groups.as_ref().and_then(|d| d.rank));
    let schedule = info.as_ref().and_then(|i| i.schedule);
    let effective_schedule = match (schedule, opts.expect_active) {
        (Some(RecordedSchedule::Args(s)), Some(a)) => {
            Some(RecordedSchedule::Args(s.with_active(a)))
        }
        (s, _) => s,
    };
    Config {
        info,
        groups,
        effective_schedule,
    }
}

/// What listing `ASCEND_PROFILER_OUTPUT/` gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Listing {
    /// Listed: `Artifacts::files` is what it holds.
    Listed,
    /// It does not exist.
    Missing,
    /// It exists but cannot be listed: its contents are unknown.
    Unreadable,
}

/// Lists `ASCEND_PROFILER_OUTPUT/`; a missing directory and an unreadable one are different
/// findings.
fn list_output(
    ctx: &mut Ctx<'_>,
    dir: &Path,
    out_dir: &Path,
    artifacts: &mut Artifacts,
) -> Listing {
    match probe::list_dir(out_dir) {
        Ok(names) => {
            artifacts.output_dir = true;
            artifacts.files = names;
            Listing::Listed
        }
        Err(FileProblem::Missing) => {
            ctx.push(Finding::new(
                Code::OutputDirMissing,
                "ASCEND_PROFILER_OUTPUT/ is missing: the run was never parsed (or parsing was interrupted before writing anything)",
                Evidence::path(disp(dir)),
                format!(
                    "check the run's log for `run failed` lines, then re-parse: {}",
                    ctx.reparse()
                ),
            ));
            Listing::Missing
        }
        Err(problem) => {
            artifacts.output_dir = true;
            file_problem(ctx, out_dir, &problem);
            Listing::Unreadable
        }
    }
}

/// Verifies one run directory.
pub fn check_run(run: &RunRef, opts: &Options, progress: &dyn Progress) -> RunOutcome {
    let dir = &run.dir;
    let mut ctx = Ctx {
        phase: run.phase.clone(),
        rank: None,
        dir: disp(dir),
        run_dir: dir.clone(),
        findings: Vec::new(),
        progress,
    };
    let names = match probe::list_dir(dir) {
        Ok(names) => names,
        Err(problem) => {
            file_problem(&mut ctx, dir, &problem);
            return unreadable_run(run, ctx);
        }
    };
    let config = read_config(&mut ctx, dir, &names, opts);
    let info = config.info.as_ref();
    let build = info.map_or_else(Build::unknown, ProfilerInfo::build);
    let out_dir = dir.join("ASCEND_PROFILER_OUTPUT");
    let mut artifacts = Artifacts::default();
    let listing = list_output(&mut ctx, dir, &out_dir, &mut artifacts);
    let files = artifacts.files.clone();
    let has = |name: &str| files.iter().any(|f| f == name);

    let logs = check_run_logs(&mut ctx, dir, &build, &mut artifacts);
    let large = scan_large_files(&mut ctx, &out_dir, &has);
    let window = artifact_set::Window {
        raw_data: names.iter().any(|n| n.starts_with("PROF_")),
        failure_seen: logs.failed,
        logs_read: logs.read,
        device_timeline_empty: large
            .trace
            .as_ref()
            .and_then(|t| t.as_ref().ok())
            .map(trace_checks::device_timeline_empty),
    };
    let empty_window = listing == Listing::Listed && {
        let world = opts
            .world_size
            .or(config.groups.as_ref().and_then(|d| d.world_size));
        artifact_set::check_artifact_set(&mut ctx, info, &artifacts, &out_dir, world, &window)
    };
    check_temp_leftover(&mut ctx, dir, &out_dir, has("trace_view_temp.json"), &build);
    let trace_broken = judge_trace(
        &mut ctx,
        &out_dir,
        large.trace,
        info,
        empty_window,
        &mut artifacts,
    );
    check_size_caps(&mut ctx, &out_dir, &artifacts.files);

    let mut steps = StepsSummary::default();
    let kernel_path = out_dir.join("kernel_details.csv");
    let kernel_scan = judge_kernels(
        &mut ctx,
        &kernel_path,
        large.kernels,
        info,
        &mut artifacts,
        &mut steps,
    );
    let args = config.effective_schedule.and_then(RecordedSchedule::args);
    if !has("kernel_details.csv") {
        steps.db = db_checks::step_ids(&out_dir, &artifacts.files);
    }
    let seen = if steps.db.is_empty() {
        &steps.kernel_details
    } else {
        &steps.db
    };
    let cycles = args
        .map(|s| step_checks::cycles_of(&s, seen))
        .unwrap_or_default();
    steps.expected = args.and_then(|s| step_checks::expected_steps(&s, &cycles));
    let step_trace_path = out_dir.join("step_trace_time.csv");
    let step_rows = has("step_trace_time.csv")
        .then(|| read_step_trace(&mut ctx, &step_trace_path, &mut artifacts, &mut steps))
        .flatten();
    if !empty_window {
        step_findings(
            &mut ctx,
            config.effective_schedule,
            info.and_then(|i| i.schedule_unknown.as_deref()),
            &steps,
            kernel_scan.as_ref(),
            &kernel_path,
            step_rows.as_deref(),
            &step_trace_path,
        );
    }
    let requested = opts
        .requested
        .iter()
        .find(|r| run.phase.as_deref() == Some(r.phase.name()));
    if let Some(requested) = requested {
        step_checks::requested_window(
            &mut ctx,
            &requested.schedule,
            info.and_then(|i| i.schedule),
            &steps,
            dir,
        );
    }
    if !empty_window && !trace_broken && has("trace_view.json") {
        trace_totals::trace_totals_findings(
            &mut ctx,
            &out_dir,
            step_rows.as_deref(),
            kernel_scan.as_ref(),
        );
    }
    if !empty_window {
        consistency::consistency_findings(
            &mut ctx,
            &out_dir,
            kernel_scan.as_ref(),
            step_rows.as_deref(),
            &has,
        );
    }
    db_checks::check_databases(&mut ctx, &out_dir, &artifacts.files);
    if !empty_window && let Some(s) = args {
        db_checks::db_step_findings(&mut ctx, &out_dir, &artifacts.files, &s, &steps);
    }
    if listing == Listing::Listed && !has("analyse.done") {
        check_analyse_done_missing(&mut ctx, &out_dir, &build);
    }
    // The logs' schedule warnings are judged once the kernel table tells a callable schedule
    // (`{}` with Step Ids) from the default one (`{}` without).
    let evidence = ScheduleEvidence {
        schedule: info.and_then(|i| i.schedule),
        step_ids: kernel_scan.as_ref().map(|k| k.has("Step Id")),
    };
    let sched_ctx = ScheduleContext::from_runs([evidence]);
    for (path, w) in &logs.schedule_warnings {
        ctx.push(schedule_findings::warning_finding(w, path, sched_ctx));
    }
    let facts = RunFacts {
        dir: dir.clone(),
        phase: run.phase.clone(),
        rank: ctx.rank,
        schedule: evidence.schedule,
        step_ids: evidence.step_ids,
        cycles,
        world_size: config.groups.as_ref().and_then(|d| d.world_size),
        no_csv: listing != Listing::Unreadable
            && !artifacts.files.iter().any(|f| f.ends_with(".csv")),
        trace_broken,
        parsers_failed: logs.failed,
        environment_cause: logs.environment,
        analyse_done: has("analyse.done"),
        build,
    };
    RunOutcome {
        summary: summary(&facts, &ctx.dir, info, steps, artifacts),
        facts,
        findings: ctx.findings,
    }
}

/// The scans of the two large files (absent when the file is absent or was not data).
struct LargeScans {
    trace: Option<std::io::Result<TraceScan>>,
    kernels: Option<Result<KernelScan, std::io::Error>>,
}

/// Opens trace_view.json and kernel_details.csv and scans them concurrently.
fn scan_large_files(ctx: &mut Ctx<'_>, out_dir: &Path, has: &dyn Fn(&str) -> bool) -> LargeScans {
    let trace_file = has("trace_view.json")
        .then(|| {
            open_artifact(
                ctx,
                &out_dir.join("trace_view.json"),
                Some(Code::TraceEmpty),
            )
        })
        .flatten();
    let kernel_file = has("kernel_details.csv")
        .then(|| {
            open_artifact(
                ctx,
                &out_dir.join("kernel_details.csv"),
                Some(Code::FileEmpty),
            )
        })
        .flatten();
    let progress = ctx.progress;
    let (trace, kernels) = rayon::join(
        || trace_file.map(|o| scan_trace(o, progress)),
        || kernel_file.map(|o| scan_kernels(o, progress)),
    );
    LargeScans { trace, kernels }
}

/// The trace's findings and summary; returns whether it is absent or not complete.
fn judge_trace(
    ctx: &mut Ctx<'_>,
    out_dir: &Path,
    trace: Option<std::io::Result<TraceScan>>,
    info: Option<&ProfilerInfo>,
    empty_window: bool,
    artifacts: &mut Artifacts,
) -> bool {
    let path = out_dir.join("trace_view.json");
    match trace {
        Some(Ok(scan)) => {
            trace_findings(ctx, &path, &scan, info, empty_window);
            artifacts.trace_view = Some(trace_summary(&scan));
            !matches!(scan.state, TraceState::Complete | TraceState::NotAnArray)
        }
        Some(Err(e)) => {
            unreadable(ctx, &path, &e);
            true
        }
        None => true,
    }
}

/// kernel_details' findings and summary; returns the scan when it is a usable table.
fn judge_kernels(
    ctx: &mut Ctx<'_>,
    path: &Path,
    kernels: Option<Result<KernelScan, std::io::Error>>,
    info: Option<&ProfilerInfo>,
    artifacts: &mut Artifacts,
    steps: &mut StepsSummary,
) -> Option<KernelScan> {
    match kernels? {
        Ok(scan) => {
            kernel_findings(ctx, path, &scan, info);
            steps.kernel_details = scan.steps.keys().copied().collect();
            artifacts.kernel_details = Some(kernel_summary(path, &scan));
            // A corrupt table says nothing about steps: its one finding is enough.
            kernel_checks::is_table(&scan).then_some(scan)
        }
        Err(e) => {
            unreadable(ctx, path, &e);
            None
        }
    }
}

fn summary(
    facts: &RunFacts,
    dir: &str,
    info: Option<&ProfilerInfo>,
    steps: StepsSummary,
    artifacts: Artifacts,
) -> RunSummary {
    RunSummary {
        phase: facts.phase.clone(),
        rank: facts.rank,
        world_size: facts.world_size,
        dir: dir.to_owned(),
        torch_npu_version: info.and_then(|i| i.torch_npu_version.clone()),
        cann_version: info.and_then(|i| i.cann_version.clone()),
        level: info.and_then(|i| i.level_raw.clone()),
        aic_metrics: info.and_then(|i| i.aic_metrics.clone()),
        export_type: info.and_then(|i| i.export_type.clone()),
        schedule: facts.schedule.map(|s| describe_recorded(s, facts.step_ids)),
        steps,
        artifacts,
    }
}

/// The outcome of a run directory that cannot even be listed: one finding, nothing else.
fn unreadable_run(run: &RunRef, ctx: Ctx<'_>) -> RunOutcome {
    let facts = RunFacts::unknown(run.dir.clone(), run.phase.clone());
    RunOutcome {
        summary: summary(
            &facts,
            &ctx.dir,
            None,
            StepsSummary::default(),
            Artifacts::default(),
        ),
        facts,
        findings: ctx.findings,
    }
}

fn check_temp_leftover(
    ctx: &mut Ctx<'_>,
    dir: &Path,
    out_dir: &Path,
    in_output: bool,
    build: &Build,
) {
    let p = if in_output {
        out_dir.join("trace_view_temp.json")
    } else if dir.join("trace_view_temp.json").is_file() {
        dir.join("trace_view_temp.json")
    } else {
        return;
    };
    let builds = match build.writes_trace_temp() {
        Some(true) => format!("{} renames it when done", build.describe()),
        Some(false) => format!(
            "{} does not write it (only 2.5.1 and older do): it is left from an older build's parse",
            build.describe()
        ),
        None => "builds up to 2.5.1 rename it when done".to_owned(),
    };
    ctx.push(Finding::new(
        Code::TraceTempLeftover,
        format!("trace_view_temp.json was left behind: timeline parsing never finished ({builds})"),
        Evidence::path(disp(&p)),
        format!("re-parse the run: {}", ctx.reparse()),
    ));
}

fn check_size_caps(ctx: &mut Ctx<'_>, out_dir: &Path, files: &[String]) {
    size_cap(
        ctx,
        &out_dir.join("trace_view.json"),
        JSON_CAP,
        "JSON",
        "10 GiB",
    );
    for csv_name in files.iter().filter(|f| f.ends_with(".csv")) {
        size_cap(ctx, &out_dir.join(csv_name), CSV_CAP, "CSV", "5 GiB");
    }
}

fn read_step_trace(
    ctx: &mut Ctx<'_>,
    path: &Path,
    artifacts: &mut Artifacts,
    steps: &mut StepsSummary,
) -> Option<Vec<StepTraceRow>> {
    let opened = open_artifact(ctx, path, Some(Code::FileEmpty))?;
    match kernel_csv::read_step_trace(BufReader::new(opened.file)) {
        Ok((_, rows)) => {
            artifacts.step_trace_time_rows = Some(rows.len() as u64);
            let set: BTreeSet<u64> = rows.iter().filter_map(|r| r.step).collect();
            steps.step_trace_time = set.into_iter().collect();
            Some(rows)
        }
        Err(kernel_csv::StepTraceError::Corrupt(c)) => {
            file_findings::csv_corrupt(ctx, path, c);
            None
        }
        Err(e) => {
            unreadable(ctx, path, &e);
            None
        }
    }
}

/// What the run's own parser logs (`logs/*.log`) say.
#[derive(Debug, Clone, Default)]
struct RunLogs {
    /// At least one log was read.
    read: bool,
    /// A log reports failed parsing.
    failed: bool,
    /// A log names a cause other than the disk.
    environment: bool,
    /// The logs' schedule warnings, judged once the run's schedule evidence is known.
    schedule_warnings: Vec<(PathBuf, Quoted<ScheduleWarning>)>,
}

/// Reads the run's parser logs (`logs/*.log`, ProfilerLogger records from 2.5.1; absent in
/// 2.1.0.post10): failures, root causes, tracebacks, the 2.7.1+ status table.
fn check_run_logs(
    ctx: &mut Ctx<'_>,
    dir: &Path,
    build: &Build,
    artifacts: &mut Artifacts,
) -> RunLogs {
    let logs_dir = dir.join("logs");
    let mut verdict = RunLogs::default();
    let names = match probe::list_dir(&logs_dir) {
        Ok(names) => names,
        Err(FileProblem::Missing) => return verdict,
        Err(problem) => {
            file_problem(ctx, &logs_dir, &problem);
            return verdict;
        }
    };
    // ProfilerLogger rotates `profiler_*.log` into `.log.1` … `.log.3`.
    for name in names.into_iter().filter(|n| is_log_name(n)) {
        let path = logs_dir.join(&name);
        artifacts.logs.push(name);
        let Some(opened) = open_artifact(ctx, &path, None) else {
            continue;
        };
        match logs::scan_log(BufReader::new(opened.file)) {
            Ok(scan) => {
                verdict.read = true;
                verdict.failed |= scan.parsers_failed();
                verdict.environment |= scan.has_environment_cause(build);
                let reparse = ctx.reparse();
                verdict.schedule_warnings.extend(
                    scan.schedule_warnings
                        .iter()
                        .map(|w| (path.clone(), w.clone())),
                );
                for f in log_findings::findings(&scan, &path, &ctx.dir, &reparse, build) {
                    ctx.push(f);
                }
            }
            Err(e) => unreadable(ctx, &path, &e),
        }
    }
    verdict
}

/// `x.log` or a rotated `x.log.N`.
fn is_log_name(name: &str) -> bool {
    name.ends_with(".log")
        || name
            .rsplit_once(".log.")
            .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// A build that writes `analyse.done` after every parse by the trace handler left none.
fn check_analyse_done_missing(ctx: &mut Ctx<'_>, out_dir: &Path, build: &Build) {
    if build.writes_analyse_done() != Some(true) {
        return;
    }
    ctx.push(Finding::new(
        Code::AnalyseDoneMissing,
        format!(
            "no analyse.done: {} writes it when a parse ends (online or by analyse()), even a failed one, so this parse did not reach its end: killed, interrupted, or still running",
            build.describe()
        ),
        Evidence::path(disp(out_dir)),
        format!(
            "if the job was killed while parsing, re-parse: {}",
            ctx.reparse()
        ),
    ));
}

fn read_info(ctx: &mut Ctx<'_>, dir: &Path, files: &[PathBuf]) -> Option<ProfilerInfo> {
    let Some(path) = files.first() else {
        ctx.push(Finding::new(
            Code::ProfilerInfoMissing,
            "no profiler_info*.json: level, metrics, schedule and rank are unknown, so the checks that need them are reported as unknown",
            Evidence::path(disp(dir)),
            "check that the profiler stopped cleanly (profiler_info is written at stop); pass --ranks/--decode-active to supply what is known",
        ));
        return None;
    };
    let file_rank = profiler_info::rank_from_file_name(path);
    let bytes = match probe::read_capped(path, SMALL_JSON_CAP) {
        Err(problem) => {
            file_problem(ctx, path, &problem);
            return None;
        }
        Ok(Err(len)) => {
            invalid_info(
                ctx,
                path,
                None,
                format!("{len} bytes, far more than any profiler_info: not a profiler_info file"),
            );
            return None;
        }
        Ok(Ok(bytes)) => bytes,
    };
    let contents = Contents::sniff(&bytes);
    if contents != Contents::Data {
        special_contents(ctx, path, contents, Code::ProfilerInfoInvalid);
        return None;
    }
    match ProfilerInfo::parse(&String::from_utf8_lossy(&bytes), file_rank) {
        Ok(info) => Some(info),
        Err(e) => {
            invalid_info(
                ctx,
                path,
                Some(e.line() as u64),
                format!("not valid JSON: {e}"),
            );
            None
        }
    }
}

fn invalid_info(ctx: &mut Ctx<'_>, path: &Path, line: Option<u64>, what: String) {
    ctx.push(Finding::new(
        Code::ProfilerInfoInvalid,
        format!("profiler_info is {what}"),
        Evidence {
            path: Some(disp(path)),
            line,
            byte_offset: None,
        },
        "the profiler was probably killed while stopping; re-run the profiled job",
    ));
}

fn unreadable(ctx: &mut Ctx<'_>, path: &Path, e: &dyn std::fmt::Display) {
    ctx.push(Finding::new(
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

/// The schedule context shared by log checks: what the runs' schedules are.
pub fn schedule_context<'a>(facts: impl IntoIterator<Item = &'a RunFacts>) -> ScheduleContext {
    ScheduleContext::from_runs(facts.into_iter().map(|f| ScheduleEvidence {
        schedule: f.schedule,
        step_ids: f.step_ids,
    }))
}

/// The build of the first run that records one (stdout logs are judged for it).
pub fn first_build(outcomes: &[RunOutcome]) -> Build {
    outcomes
        .iter()
        .map(|o| &o.facts.build)
        .find(|b| b.is_known())
        .cloned()
        .unwrap_or_default()
}

/// What the job's stdout says about a run: its rank's `log_<rank>.log` (every rank's log when
/// the run's rank is unknown) and the captured stdout.
pub fn stdout_verdict(
    facts: &RunFacts,
    result_logs: &std::collections::BTreeMap<u32, LogVerdict>,
    captured: LogVerdict,
) -> LogVerdict {
    let rank_logs = match facts.rank {
        Some(r) => result_logs.get(&r).copied().unwrap_or_default(),
        None => result_logs
            .values()
            .fold(LogVerdict::default(), |a, v| a.or(*v)),
    };
    rank_logs.or(captured)
}

/// An empty window judged from the run alone is no empty window when the job's stdout reports
/// failed parsers: the missing kernel files are then an error.
pub fn confirm_empty_windows(
    outcomes: &[RunOutcome],
    result_logs: &std::collections::BTreeMap<u32, LogVerdict>,
    captured: LogVerdict,
    findings: &mut Vec<Finding>,
) {
    for o in outcomes {
        if !stdout_verdict(&o.facts, result_logs, captured).failed {
            continue;
        }
        let Some(empty) = o
            .findings
            .iter()
            .find(|f| f.code == Code::NoKernelsInWindow)
        else {
            continue;
        };
        findings.retain(|f| f != empty);
        findings.push(
            Finding::new(
                Code::ArtifactMissing,
                "missing from ASCEND_PROFILER_OUTPUT/: kernel_details.csv (NPU activity was recorded); the device timeline is empty, but the job's stdout reports failed parsers, so this is a parser failure, not an empty window",
                empty.evidence.clone(),
                format!(
                    "find the failing parser in the job's stdout (`grep -n 'run failed'`), then re-parse: {}",
                    reparse::analyse_command(&[ReparseDir::run(&o.facts.dir)])
                ),
            )
            .at(o.facts.phase.as_deref(), o.facts.rank),
        );
    }
}
