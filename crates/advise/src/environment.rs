//! The rules on the environment torch_npu recorded with a run (`ENV_VARIABLES`): only the two
//! settings that change what the profile shows. The variables torch_npu records at their
//! defaults (`ACLNN_CACHE_LIMIT`, `HOST_CACHE_CAPACITY` unset, `PYTORCH_NPU_ALLOC_CONF` without
//! `expandable_segments`) and the cluster's own choices (`HCCL_ALGO`, `HCCL_RDMA_TC`/`SL`) are
//! not findings: nothing in a profile says they cost time.

use npuprof_summary::run::{EnvSource, RecordedEnv};
use npuprof_summary::units::{duration, percent};

use crate::RunData;
use crate::codes::Code;
use crate::finding::{Evidence, Finding};

/// The variable that makes every operator launch synchronous.
const LAUNCH_BLOCKING: &str = "ASCEND_LAUNCH_BLOCKING";
/// CANN's log level: 0 debug, 1 info, 2 warning, 3 error.
const LOG_LEVEL: &str = "ASCEND_GLOBAL_LOG_LEVEL";

/// The recorded value of `name` as an integer, with the evidence naming where it was read.
fn recorded(run: &RunData, name: &str) -> Option<(i64, Evidence)> {
    let (env, source): &(RecordedEnv, EnvSource) = run.env.as_ref()?;
    let value = env.get(name)?;
    let number = value.parse().ok()?;
    let detail = match source {
        EnvSource::Metadata => "profiler_metadata.json's ENV_VARIABLES (the profiled process)",
        EnvSource::Db => {
            "the profiler database's META_DATA (the process that parsed the run: for an \
             offline parse, not the profiled one)"
        }
    };
    let evidence = Evidence {
        label: format!("{name}={value}"),
        detail: detail.to_owned(),
        time_us: None,
        share: None,
        count: None,
        step: None,
        at_us: None,
    };
    Some((number, evidence))
}

pub(crate) fn launch_blocking(run: &RunData, _top: usize) -> Option<Finding> {
    let (value, evidence) = recorded(run, LAUNCH_BLOCKING)?;
    if value != 1 {
        return None;
    }
    let free = run.free_per_step();
    let title = match run.share(free) {
        Some(share) if free > 0.0 => format!(
            "{LAUNCH_BLOCKING}=1: every operator waited for the device; the {} free per step \
             ({} of the step) is the setting's",
            duration(free),
            percent(share)
        ),
        _ => format!("{LAUNCH_BLOCKING}=1: every operator waited for the device"),
    };
    let mut finding = Finding::new(Code::LaunchBlocking, title, free);
    finding.evidence.push(evidence);
    Some(finding)
}

pub(crate) fn debug_logging(run: &RunData, _top: usize) -> Option<Finding> {
    let (level, evidence) = recorded(run, LOG_LEVEL)?;
    let name = match level {
        0 => "debug",
        1 => "info",
        _ => return None,
    };
    let mut finding = Finding::new(
        Code::DebugLogging,
        format!("{LOG_LEVEL}={level}: CANN logged at {name} level during the run"),
        0.0,
    );
    finding.evidence.push(evidence);
    Some(finding)
}
