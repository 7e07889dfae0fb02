//! The artifact set a run's recorded configuration writes (as torch_npu's writers and real
//! output show), and one finding per severity for what is absent.

use std::path::Path;

use super::{Ctx, disp};
use crate::finding::{Code, Evidence, Finding, Severity};
use crate::report::Artifacts;
use npuprof_runs::db::DbKind;
use npuprof_runs::profiler_info::{Level, ProfilerInfo};

/// One expected artifact: its name, how bad its absence is, and why it is expected.
struct Expected {
    name: &'static str,
    severity: Severity,
    why: &'static str,
}

const fn expect(name: &'static str, severity: Severity, why: &'static str) -> Expected {
    Expected {
        name,
        severity,
        why,
    }
}

/// What the recorded configuration must include for a file to be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Needs {
    /// Nothing: every text export writes it.
    Always,
    /// ProfilerActivity.NPU.
    Npu,
    /// ProfilerActivity.NPU, from a writer of 2024-05 or later (`api_statistic.csv`, Ascend/pytorch
    /// 426e2921c): not demanded of an old writer ([`ProfilerInfo::old_writer`]).
    NpuNewWriter,
    /// ProfilerActivity.CPU.
    Cpu,
    /// NPU activity and several ranks (written when they communicate).
    SeveralRanks,
    /// `profile_memory=True`.
    ProfileMemory,
    /// `l2_cache=True` in the experimental config.
    L2Cache,
}

/// The lowest profiler level whose parser writes a file (`_parser_config.py`: Level_none runs
/// neither KernelViewParser, TraceStepTimeParser nor CommunicationParser; CANN writes the
/// statistics from Level1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum From {
    /// Every level, Level_none included.
    AnyLevel,
    /// Level0 and up; an unknown level counts (Level0 is torch_npu's default).
    Level0,
    /// Level1 and up; the level must be known.
    Level1,
}

/// One row of the files-by-configuration table.
struct Rule {
    file: Expected,
    needs: Needs,
    from: From,
}

const fn rule(needs: Needs, from: From, file: Expected) -> Rule {
    Rule { file, needs, from }
}

/// The text-export files torch_npu writes, by configuration (`analysis/prof_config/
/// _parser_config.py` of every build from 2.5.1 to 2.14.0). Files gated by data only
/// (`data_preprocess.csv` at Level2 with AI CPU ops, `npu_module_mem.csv`) are not required.
const RULES: &[Rule] = &[
    rule(
        Needs::Always,
        From::AnyLevel,
        expect(
            "trace_view.json",
            Severity::Error,
            "always written with text export",
        ),
    ),
    rule(
        Needs::Npu,
        From::Level0,
        expect(
            "kernel_details.csv",
            Severity::Error,
            "NPU activity was recorded (Level0 and up)",
        ),
    ),
    rule(
        Needs::Cpu,
        From::AnyLevel,
        expect(
            "operator_details.csv",
            Severity::Warning,
            "CPU activity was recorded",
        ),
    ),
    rule(
        Needs::Npu,
        From::Level0,
        expect(
            "step_trace_time.csv",
            Severity::Warning,
            "NPU activity was recorded (Level0 and up)",
        ),
    ),
    rule(
        Needs::Npu,
        From::Level1,
        expect(
            "op_statistic.csv",
            Severity::Error,
            "written at Level1 and Level2",
        ),
    ),
    rule(
        Needs::NpuNewWriter,
        From::Level1,
        expect(
            "api_statistic.csv",
            Severity::Error,
            "written at Level1 and Level2",
        ),
    ),
    rule(
        Needs::SeveralRanks,
        From::Level0,
        expect(
            "communication.json",
            Severity::Warning,
            "several ranks (Level0 and up): expected when the ranks communicate",
        ),
    ),
    rule(
        Needs::SeveralRanks,
        From::Level0,
        expect(
            "communication_matrix.json",
            Severity::Warning,
            "several ranks (Level0 and up): expected when the ranks communicate",
        ),
    ),
    rule(
        Needs::ProfileMemory,
        From::AnyLevel,
        expect(
            "memory_record.csv",
            Severity::Warning,
            "profile_memory=True",
        ),
    ),
    rule(
        Needs::ProfileMemory,
        From::AnyLevel,
        expect(
            "operator_memory.csv",
            Severity::Warning,
            "profile_memory=True",
        ),
    ),
    rule(
        Needs::L2Cache,
        From::AnyLevel,
        expect("l2_cache.csv", Severity::Warning, "l2_cache=True"),
    ),
];

/// Files only the kernels of the window produce: absent together when it recorded none.
const KERNEL_FILES: [&str; 4] = [
    "kernel_details.csv",
    "step_trace_time.csv",
    "op_statistic.csv",
    "api_statistic.csv",
];

/// What the run shows about its recording window, for telling "no kernels" from "failed".
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Window {
    /// A `PROF_*` directory (CANN raw data) exists.
    pub raw_data: bool,
    /// A log of the run reports failed parsing.
    pub failure_seen: bool,
    /// At least one of the run's parser logs was read.
    pub logs_read: bool,
    /// The trace's device timeline is empty (`None`: no readable trace).
    pub device_timeline_empty: Option<bool>,
}

/// The text-export artifacts the configuration writes. `world_size` is the number of ranks
/// when known (communication files need several).
fn text_artifacts(info: Option<&ProfilerInfo>, world_size: Option<u32>) -> Vec<Expected> {
    let npu = info.and_then(ProfilerInfo::npu_activity);
    let cpu = info.and_then(ProfilerInfo::cpu_activity);
    let level = info.and_then(|i| i.level);
    let mut out = Vec::new();
    for r in RULES {
        let level_ok = match r.from {
            From::AnyLevel => true,
            From::Level0 => level != Some(Level::None),
            From::Level1 => level.is_some_and(Level::is_detailed),
        };
        if !level_ok {
            continue;
        }
        let e = &r.file;
        let item = match r.needs {
            Needs::Always => Some(expect(e.name, e.severity, e.why)),
            Needs::NpuNewWriter if info.is_some_and(ProfilerInfo::old_writer) => None,
            Needs::Npu | Needs::NpuNewWriter => match npu {
                Some(true) => Some(expect(e.name, e.severity, e.why)),
                // Statistics need a known detailed level, which implies device data.
                None if r.from == From::Level1 => Some(expect(e.name, e.severity, e.why)),
                None if e.severity == Severity::Error => Some(expect(
                    e.name,
                    Severity::Warning,
                    "expected when NPU activity is recorded; activities unknown",
                )),
                _ => None,
            },
            Needs::Cpu => (cpu == Some(true)).then(|| expect(e.name, e.severity, e.why)),
            Needs::SeveralRanks => (npu != Some(false) && world_size.is_some_and(|n| n > 1))
                .then(|| expect(e.name, e.severity, e.why)),
            Needs::ProfileMemory => (info.and_then(|i| i.profile_memory) == Some(true))
                .then(|| expect(e.name, e.severity, e.why)),
            Needs::L2Cache => (info.and_then(|i| i.l2_cache) == Some(true) && npu != Some(false))
                .then(|| expect(e.name, e.severity, e.why)),
        };
        out.extend(item);
    }
    out
}

/// "No kernels recorded in the window": NPU activity, CANN raw data, kernel_details absent,
/// no failure in any log, and an empty device timeline. torch_npu writes no empty CSV
/// (`_file_manager.py`), so an empty window leaves no kernel_details.csv, step_trace_time.csv
/// or statistics: that is not a parser failure. Reports it and returns true.
fn empty_window(
    ctx: &mut Ctx<'_>,
    info: Option<&ProfilerInfo>,
    absent: &[&Expected],
    out_dir: &Path,
    window: &Window,
) -> bool {
    let npu = info.and_then(ProfilerInfo::npu_activity) == Some(true);
    let no_kernels = absent.iter().any(|e| e.name == "kernel_details.csv");
    if !(npu
        && no_kernels
        && window.raw_data
        && !window.failure_seen
        && window.device_timeline_empty == Some(true))
    {
        return false;
    }
    let logs = if window.logs_read {
        "the run's parser logs report no failure"
    } else {
        "no parser log to confirm that nothing failed (2.1.0.post10 writes none; pass --log with the job's stdout)"
    };
    ctx.push(Finding::new(
        Code::NoKernelsInWindow,
        format!(
            "no kernels recorded in the window: NPU activity and CANN raw data (PROF_*) are there, the device timeline is empty and {logs}, so there is no kernel_details.csv (torch_npu writes no empty CSV)"
        ),
        Evidence::path(disp(out_dir)),
        "the profiled steps launched nothing on the NPU: check that prof.step() brackets the model's forward and that the window's steps run inference (npuprof plan shows which steps are recorded), then re-run",
    ));
    true
}

/// Decides and reports the expected artifact set.
pub(super) fn check_artifact_set(
    ctx: &mut Ctx<'_>,
    info: Option<&ProfilerInfo>,
    artifacts: &Artifacts,
    out_dir: &Path,
    world_size: Option<u32>,
    window: &Window,
) -> bool {
    let has = |name: &str| artifacts.files.iter().any(|f| f == name);
    let mut absent: Vec<&Expected> = Vec::new();
    let db_expected = expect(
        "ascend_pytorch_profiler*.db",
        Severity::Error,
        "export type includes db",
    );
    let db = info.is_some_and(ProfilerInfo::exports_db);
    let has_db = artifacts
        .files
        .iter()
        .any(|f| DbKind::of(f) == Some(DbKind::Profiler));
    if db && !has_db {
        absent.push(&db_expected);
    }
    let text = if info.is_none_or(ProfilerInfo::exports_text) {
        text_artifacts(info, world_size)
    } else {
        ctx.push(Finding::new(
            Code::DbExport,
            "db-only export: text artifacts (trace_view.json, CSVs) are not expected and were not checked",
            Evidence::path(disp(out_dir)),
            "open the .db in MindStudio Insight, or set export_type=[torch_npu.profiler.ExportType.Text] for text files",
        ));
        Vec::new()
    };
    absent.extend(text.iter().filter(|e| !has(e.name)));
    let empty = empty_window(ctx, info, &absent, out_dir, window);
    if empty {
        absent.retain(|e| !KERNEL_FILES.contains(&e.name));
    }
    if info.and_then(|i| i.level).is_none() && info.is_none_or(ProfilerInfo::exports_text) {
        ctx.push(Finding::new(
            Code::ExpectationUnknown,
            "profiler level unknown: op_statistic.csv, api_statistic.csv and communication files not checked",
            Evidence::path(disp(out_dir)),
            "keep profiler_info*.json with the run so the level can be checked",
        ));
    }
    for severity in [Severity::Error, Severity::Warning] {
        let items: Vec<String> = absent
            .iter()
            .filter(|e| e.severity == severity)
            .map(|e| format!("{} ({})", e.name, e.why))
            .collect();
        report_missing(ctx, out_dir, severity, &items);
    }
    empty
}

/// One finding per severity listing the missing artifacts.
fn report_missing(ctx: &mut Ctx<'_>, out_dir: &Path, severity: Severity, items: &[String]) {
    if items.is_empty() {
        return;
    }
    ctx.push(Finding::new(
        Code::ArtifactMissing,
        format!("missing from ASCEND_PROFILER_OUTPUT/: {}", items.join("; ")),
        Evidence::path(disp(out_dir)),
        format!(
            "look for `run failed` in the run's log to find the failing parser, then re-parse: {}",
            ctx.reparse()
        ),
    ).with_severity(severity));
}
