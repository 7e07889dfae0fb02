//! Findings: what is wrong (or notable), where the evidence is, and what to do next.

use serde::{Deserialize, Serialize};

/// How bad a finding is. Exit code 1 when any finding is an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The profile is unusable or incomplete.
    Error,
    /// The profile is usable but something is suspicious.
    Warning,
    /// A fact worth knowing, or an expectation that could not be checked.
    Info,
}

impl Severity {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

macro_rules! codes {
    ($( $(#[$doc:meta])* $variant:ident = $text:literal ),+ $(,)?) => {
        /// Stable finding codes (kebab-case in JSON and human output), in order of priority:
        /// findings of one severity are listed in this order.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub enum Code {
            $( $(#[$doc])* #[serde(rename = $text)] $variant, )+
        }

        impl Code {
            /// Every code, in documentation order.
            pub const ALL: &'static [Code] = &[$(Code::$variant),+];

            /// The stable kebab-case spelling.
            pub fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $text,)+ }
            }
        }
    };
}

codes! {
    /// Every parser failed and no CSV exists: the known bad-output-filesystem failure.
    OutputFilesystem = "output-filesystem",
    /// Parser tasks `run failed`; the root task is named.
    ParserFailed = "parser-failed",
    /// A root-cause message from the parser.
    ParserRootCause = "parser-root-cause",
    /// An expected phase (`prefill`/`decode`) has no run directory.
    PhaseMissing = "phase-missing",
    /// A rank has no run directory in a phase.
    RankMissing = "rank-missing",
    /// `--merge`: a rank appears in more than one node's report (or twice in one).
    RankDuplicate = "rank-duplicate",
    /// The profiler stopped in WARMUP: the run directory was deleted.
    ScheduleStopInWarmup = "schedule-stop-in-warmup",
    /// `ASCEND_PROFILER_OUTPUT/` is absent.
    OutputDirMissing = "output-dir-missing",
    /// `profiler_info*.json` is not valid JSON.
    ProfilerInfoInvalid = "profiler-info-invalid",
    /// A `trace_view_temp.json` was left behind: parsing never finished.
    TraceTempLeftover = "trace-temp-leftover",
    /// `trace_view.json` is empty.
    TraceEmpty = "trace-empty",
    /// `trace_view.json` ends cleanly after an event without the closing `]`.
    TraceUnterminated = "trace-unterminated",
    /// `trace_view.json` ends in the middle of an event.
    TraceCutMidEvent = "trace-cut-mid-event",
    /// `trace_view.json` closes with `},]`: the device timeline was empty.
    TraceEmptyDeviceTimeline = "trace-empty-device-timeline",
    /// `trace_view.json` has a syntax error before its end.
    TraceMalformed = "trace-malformed",
    /// `trace_view.json` is a JSON object, not torch_npu's bare array.
    TraceNotArray = "trace-not-array",
    /// The `Ascend Hardware` or `CANN` process is missing from the trace.
    TraceProcessMissing = "trace-process-missing",
    /// A file is over torch_npu's size cap (JSON 10 GiB, CSV 5 GiB) and is treated as empty.
    FileOverSizeCap = "file-over-size-cap",
    /// The log says a file exceeded torch_npu's preset size.
    SizeCapWarning = "size-cap-warning",
    /// A file or directory exists but could not be read (permission denied, I/O error).
    FileUnreadable = "file-unreadable",
    /// A FIFO, socket, device or directory where a file belongs: skipped without reading.
    FileNotRegular = "file-not-regular",
    /// A git-lfs pointer file where the data belongs.
    FileLfsPointer = "file-lfs-pointer",
    /// An artifact is empty (0 bytes).
    FileEmpty = "file-empty",
    /// A CSV record runs past the size limit (NULs, no line ending, an unclosed quote) or the
    /// header is absurdly wide: read only up to there.
    CsvCorrupt = "csv-corrupt",
    /// A `.db` of a db export is not SQLite, is cut short, or SQLite cannot read it.
    DbInvalid = "db-invalid",
    /// A `.db` lacks tables every parsed run has.
    DbTablesMissing = "db-tables-missing",
    /// A `.db`'s essential tables hold no rows.
    DbTablesEmpty = "db-tables-empty",
    /// kernel_details.csv has the minimal (Level0) header.
    KernelHeaderMinimal = "kernel-header-minimal",
    /// kernel_details.csv lacks columns expected for the recorded level or metric group.
    KernelColumnsMissing = "kernel-columns-missing",
    /// kernel_details.csv rows whose field count differs from the header.
    KernelRowsMalformed = "kernel-rows-malformed",
    /// A kernel_details.csv column is present but empty in every row.
    KernelColumnEmpty = "kernel-column-empty",
    /// kernel_details.csv has a header but no rows.
    KernelNoRows = "kernel-no-rows",
    /// Steps the schedule records are absent from kernel_details.csv.
    StepsMissing = "steps-missing",
    /// Step Ids the schedule does not record.
    StepsUnexpected = "steps-unexpected",
    /// step_trace_time.csv lacks recorded steps.
    StepTraceMissingSteps = "step-trace-missing-steps",
    /// `--merge`: ranks of one phase recorded different steps.
    StepsInconsistent = "steps-inconsistent",
    /// The first recorded step is ≥ 10× the median of the others: compilation inside the window.
    CompileInWindow = "compile-in-window",
    /// An artifact required by the recorded configuration is absent.
    ArtifactMissing = "artifact-missing",
    /// The profiler stopped in RECORD: incomplete data (harmless without a schedule).
    ScheduleStopInRecord = "schedule-stop-in-record",
    /// The profiler stopped in RECORD_AND_SAVE: the cycle may not have completed.
    ScheduleCycleIncomplete = "schedule-cycle-incomplete",
    /// An invalid schedule transition (`RECORD followed by NONE`, ...): raw data not parsed.
    ScheduleTransition = "schedule-transition",
    /// The output directory belongs to another user (`chown` message); an error on builds
    /// whose CANN export stops on it.
    OutputOwner = "output-owner",
    /// The CANN toolkit's files belong to another user (`chown` message naming the toolkit).
    ToolkitOwner = "toolkit-owner",
    /// `Failed to get acl to npu flow events`: kernels cannot be tied to steps (Step Id).
    AclFlowMissing = "acl-flow-missing",
    /// NPU activity, raw data, no failure and no kernels: the window recorded no kernels.
    NoKernelsInWindow = "no-kernels-in-window",
    /// A build that writes `analyse.done` after every parse left none: parsing did not end.
    AnalyseDoneMissing = "analyse-done-missing",
    /// More run directories for one phase and rank than the schedule's `repeat`.
    RunDuplicate = "run-duplicate",
    /// A cycle of a `repeat ≥ 2` schedule is in none of the phase's run directories.
    CycleMissing = "cycle-missing",
    /// A cycle is in more than one run directory, or the cycles are out of timestamp order.
    CycleDuplicate = "cycle-duplicate",
    /// No `profiler_info*.json`: the configuration is unknown.
    ProfilerInfoMissing = "profiler-info-missing",
    /// kernel_details.csv rows with an empty `Step Id`.
    KernelStepIdEmpty = "kernel-step-id-empty",
    /// db export: text artifacts are not expected.
    DbExport = "db-export",
    /// Part of the expectation is unknown, so it was not checked.
    ExpectationUnknown = "expectation-unknown",
    /// The number of ranks is not known (no `--ranks`, no `log_<rank>.log`, no `parallel_group_info`).
    WorldSizeUnknown = "world-size-unknown",
    /// Only some ranks of the run are here (normal for one node of a multi-node run).
    RankSubset = "rank-subset",
    /// `analyse.done` exists although the run has errors (it is written even when parsing fails).
    AnalyseDoneNotSuccess = "analyse-done-not-success",
}

/// Where the evidence for a finding is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// File or directory.
    pub path: Option<String>,
    /// 1-based line number.
    pub line: Option<u64>,
    /// Byte offset in the file.
    pub byte_offset: Option<u64>,
}

impl Evidence {
    /// Evidence pointing at a path.
    pub fn path(path: impl Into<String>) -> Self {
        Self {
            path: Some(path.into()),
            ..Self::default()
        }
    }

    /// Evidence pointing at a line of a file.
    pub fn line(path: impl Into<String>, line: u64) -> Self {
        Self {
            path: Some(path.into()),
            line: Some(line),
            byte_offset: None,
        }
    }

    /// Evidence pointing at a byte of a file.
    pub fn offset(path: impl Into<String>, offset: u64) -> Self {
        Self {
            path: Some(path.into()),
            line: None,
            byte_offset: Some(offset),
        }
    }

    /// `path:line` or `path@byte` for human output.
    pub fn display(&self) -> String {
        let mut s = self.path.clone().unwrap_or_default();
        if let Some(line) = self.line {
            s.push_str(&format!(":{line}"));
        }
        if let Some(off) = self.byte_offset {
            s.push_str(&format!(" (byte {off})"));
        }
        s
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// error, warning or info.
    pub severity: Severity,
    /// Stable code.
    pub code: Code,
    /// What was found.
    pub message: String,
    /// Where.
    pub evidence: Evidence,
    /// What to do next: a command or a concrete step.
    pub next_action: String,
    /// The phase the finding is about, when it is about one.
    pub phase: Option<String>,
    /// The rank the finding is about, when it is about one.
    pub rank: Option<u32>,
}

impl Finding {
    /// A finding without phase or rank.
    pub fn new(
        severity: Severity,
        code: Code,
        message: impl Into<String>,
        evidence: Evidence,
        next_action: impl Into<String>,
    ) -> Self {
        Self {
            severity,
            code,
            message: message.into(),
            evidence,
            next_action: next_action.into(),
            phase: None,
            rank: None,
        }
    }

    /// Sets phase and rank.
    pub fn at(mut self, phase: Option<&str>, rank: Option<u32>) -> Self {
        self.phase = phase.map(str::to_owned);
        self.rank = rank;
        self
    }
}
