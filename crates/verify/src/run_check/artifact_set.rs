//! The artifact set a run's recorded configuration writes (as torch_npu's writers and real
//! output show), and one finding per severity for what is absent.

use std::path::Path;

use super::{Ctx, disp};
use crate::db::DbKind;
use crate::finding::{Code, Evidence, Finding, Severity};
use crate::profiler_info::ProfilerInfo;
use crate::report::Artifacts;

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

/// The text-export artifacts the configuration writes. `world_size` is the number of ranks
/// when known (communication files need several).
fn text_artifacts(info: Option<&ProfilerInfo>, world_size: Option<u32>) -> Vec<Expected> {
    let npu = info.and_then(ProfilerInfo::npu_activity);
    let cpu = info.and_then(ProfilerInfo::cpu_activity);
    let level = info.and_then(|i| i.level);
    let mut out = vec![expect(
        "trace_view.json",
        Severity::Error,
        "always written with text export",
    )];
    match npu {
        Some(true) => out.push(expect(
            "kernel_details.csv",
            Severity::Error,
            "NPU activity was recorded",
        )),
        None => out.push(expect(
            "kernel_details.csv",
            Severity::Warning,
            "expected when NPU activity is recorded; activities unknown",
        )),
        Some(false) => {}
    }
    if cpu == Some(true) {
        out.push(expect(
            "operator_details.csv",
            Severity::Warning,
            "CPU activity was recorded",
        ));
    }
    if npu == Some(true) {
        out.push(expect(
            "step_trace_time.csv",
            Severity::Warning,
            "NPU activity was recorded",
        ));
    }
    if level.is_some_and(|l| l.is_detailed()) && npu != Some(false) {
        for name in ["op_statistic.csv", "api_statistic.csv"] {
            out.push(expect(
                name,
                Severity::Error,
                "written at Level1 and Level2",
            ));
        }
        if world_size.is_some_and(|n| n > 1) {
            for name in ["communication.json", "communication_matrix.json"] {
                out.push(expect(
                    name,
                    Severity::Warning,
                    "Level1/2 with several ranks: expected when the ranks communicate",
                ));
            }
        }
    }
    if info.and_then(|i| i.profile_memory) == Some(true) {
        for name in ["memory_record.csv", "operator_memory.csv"] {
            out.push(expect(name, Severity::Warning, "profile_memory=True"));
        }
    }
    out
}

/// Decides and reports the expected artifact set.
pub(super) fn check_artifact_set(
    ctx: &mut Ctx<'_>,
    info: Option<&ProfilerInfo>,
    artifacts: &Artifacts,
    out_dir: &Path,
    world_size: Option<u32>,
) {
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
            Severity::Info,
            Code::DbExport,
            "db-only export: text artifacts (trace_view.json, CSVs) are not expected and were not checked",
            Evidence::path(disp(out_dir)),
            "open the .db in MindStudio Insight, or set export_type=[torch_npu.profiler.ExportType.Text] for text files",
        ));
        Vec::new()
    };
    absent.extend(text.iter().filter(|e| !has(e.name)));
    if info.and_then(|i| i.level).is_none() && info.is_none_or(ProfilerInfo::exports_text) {
        ctx.push(Finding::new(
            Severity::Info,
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
            ctx.reparse()
        ),
    ));
}
