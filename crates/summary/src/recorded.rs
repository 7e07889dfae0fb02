//! How a run was recorded, from its `profiler_info*.json`: what two runs (or two ranks) must
//! share for their numbers to compare (see [`crate::mismatch`]).

use serde::Serialize;

use npuprof_runs::profiler_info::ProfilerInfo;

use crate::db_export::DbFiles;

/// Which export a run's numbers were read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// The text export (`ASCEND_PROFILER_OUTPUT/*.csv`, `communication.json`).
    Text,
    /// The db export (`ascend_pytorch_profiler*.db`, `analysis.db`).
    Db,
}

impl Source {
    /// The export a run's numbers are read from: the db export when a text file is missing
    /// and its database is there (`text_steps`/`text_kernels`: the text export's
    /// step_trace_time.csv / kernel_details.csv exist), else the text export when either
    /// exists.
    pub fn read_from(text_steps: bool, text_kernels: bool, db: &DbFiles) -> Option<Self> {
        let steps_from_db = !text_steps && db.analysis.is_some();
        let kernels_from_db = !text_kernels && db.profiler.is_some();
        if steps_from_db || kernels_from_db {
            Some(Source::Db)
        } else if text_steps || text_kernels {
            Some(Source::Text)
        } else {
            None
        }
    }

    /// The name used in reports (as in the JSON).
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Text => "text",
            Source::Db => "db",
        }
    }
}

/// What `profiler_info` says of the recording, each `None` when it does not say.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Recorded {
    /// `_profiler_level` as written (`Level0`, `Level1`, …).
    pub profiler_level: Option<String>,
    /// `_aic_metrics` as written (`ACL_AICORE_PIPE_UTILIZATION`, …).
    pub aic_metrics: Option<String>,
    /// `_export_type` (`text`, `db`, or both).
    pub export_type: Option<Vec<String>>,
    /// `torch_npu_version`.
    pub torch_npu_version: Option<String>,
    /// `cann_version`.
    pub cann_version: Option<String>,
}

impl Recorded {
    /// The fields of a parsed `profiler_info`.
    pub fn of(info: &ProfilerInfo) -> Self {
        Self {
            profiler_level: info
                .level
                .map(|l| l.as_str().to_owned())
                .or_else(|| info.level_raw.clone()),
            aic_metrics: info.aic_metrics.clone(),
            export_type: info.export_type.clone(),
            torch_npu_version: info.torch_npu_version.clone(),
            cann_version: info.cann_version.clone(),
        }
    }

    /// The torch_npu and CANN build, as one text (`torch_npu 2.7.1, CANN 8.3.RC1`).
    pub fn build(&self) -> Option<String> {
        let parts: Vec<String> = [
            ("torch_npu", &self.torch_npu_version),
            ("CANN", &self.cann_version),
        ]
        .into_iter()
        .filter_map(|(what, v)| v.as_ref().map(|v| format!("{what} {v}")))
        .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}
