//! Findings: what is wrong (or notable), where the evidence is, and what to do next.

use serde::{Deserialize, Serialize};

/// How bad a finding is (the one definition, npuprof-severity's). Exit code 1 when any finding
/// is an error.
pub use npuprof_severity::Severity;

/// One code's entry in the registry: what [`Code::info`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeInfo {
    /// The code.
    pub code: Code,
    /// The stable kebab-case spelling (JSON and human output).
    pub name: &'static str,
    /// The severity a finding of this code has unless its check knows better (a build, a
    /// schedule or the recorded level can raise or lower it; the finding carries the one chosen).
    pub severity: Severity,
    /// A short title (a few words, no final stop).
    pub title: &'static str,
    /// One line of Markdown: what the finding means.
    pub meaning: &'static str,
    /// One line of Markdown: the usual next action (each finding's own `next_action` is the
    /// concrete one, with paths and commands).
    pub next_action: &'static str,
}

macro_rules! codes {
    ($( $variant:ident = ($text:literal, $severity:ident, $title:literal, $meaning:literal, $next:literal); )+) => {
        /// Stable finding codes (kebab-case in JSON and human output), in order of priority:
        /// findings of one severity are listed in this order.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub enum Code {
            $( #[doc = $meaning] #[serde(rename = $text)] $variant, )+
        }

        /// Every code's entry, in the order of [`Code::ALL`].
        pub const REGISTRY: &[CodeInfo] = &[
            $( CodeInfo {
                code: Code::$variant,
                name: $text,
                severity: Severity::$severity,
                title: $title,
                meaning: $meaning,
                next_action: $next,
            }, )+
        ];

        impl Code {
            /// Every code, in documentation order.
            pub const ALL: &'static [Code] = &[$(Code::$variant),+];
        }
    };
}

impl Code {
    /// This code's entry of the registry.
    pub fn info(self) -> &'static CodeInfo {
        // The variants and the entries are generated in the same order.
        &REGISTRY[self as usize]
    }

    /// The stable kebab-case spelling.
    pub fn as_str(self) -> &'static str {
        self.info().name
    }

    /// The severity a finding of this code has unless its check knows better.
    pub fn default_severity(self) -> Severity {
        self.info().severity
    }
}

// Each entry: code = (JSON spelling, default severity, title, meaning, usual next action).
codes! {
    OutputFilesystem = ("output-filesystem", Error, "Bad output filesystem",
        "Every parser failed and no CSV exists: the known bad-output-filesystem failure.",
        "write the output to a local disk (`npuprof relocate`), run again, and verify");
    ParserFailed = ("parser-failed", Error, "Parser tasks failed",
        "Parser tasks `run failed`; the root task is named.",
        "fix the root task's cause (its log line is the evidence), then re-parse with `torch_npu.profiler.profiler.analyse(<run dir>)`");
    ParserRootCause = ("parser-root-cause", Error, "Parser root cause",
        "A root-cause message from the parser.",
        "fix what the message names, then re-parse the run directory");
    PhaseMissing = ("phase-missing", Error, "Phase missing",
        "An expected phase (`prefill`/`decode`) has no run directory.",
        "check that the phase's profiler was enabled and its window reached (`npuprof plan`), then run again");
    RankMissing = ("rank-missing", Error, "Rank missing",
        "A rank has no run directory in a phase.",
        "read that rank's log for a crash or an early exit; copy its output here if it ran on another node");
    RankDuplicate = ("rank-duplicate", Error, "Rank reported twice",
        "`--merge`: a rank appears in more than one node's report (or twice in one).",
        "merge each node's report once; remove the duplicate report");
    ScheduleStopInWarmup = ("schedule-stop-in-warmup", Error, "Stopped in WARMUP",
        "The profiler stopped in WARMUP: the run directory was deleted.",
        "run enough steps for the window to close (`npuprof plan` shows how many), then run again");
    OutputDirMissing = ("output-dir-missing", Error, "No ASCEND_PROFILER_OUTPUT",
        "`ASCEND_PROFILER_OUTPUT/` is absent.",
        "parsing did not run or did not finish: re-parse the run directory and read its log");
    ServingOutputPartial = ("serving-output-partial", Error, "Serving output still being written",
        "Serving output: a run directory's files changed moments ago and it is incomplete: the engine is still writing or parsing it after the stop.",
        "wait until its files stop changing, then verify again");
    ServingNotParsed = ("serving-not-parsed", Error, "Serving output not parsed yet",
        "Serving output: a run directory holds raw data only (the engine's daemon workers do not parse).",
        "parse it offline with the `analyse(...)` command given, then verify again");
    ServingPairIncomplete = ("serving-pair-incomplete", Error, "Rank missing from a start/stop pair",
        "Serving output: a start/stop pair has no run directory for some rank.",
        "read the missing ranks' worker logs, or copy their output here; then verify again");
    ProfilerInfoInvalid = ("profiler-info-invalid", Error, "profiler_info is not JSON",
        "`profiler_info*.json` is not valid JSON.",
        "the run was cut short while writing it: run again");
    TraceTempLeftover = ("trace-temp-leftover", Error, "Trace parsing never finished",
        "A `trace_view_temp.json` was left behind: parsing never finished.",
        "re-parse the run directory (and check the disk has room)");
    TraceEmpty = ("trace-empty", Error, "Trace empty",
        "`trace_view.json` is empty.",
        "re-parse the run directory; if it stays empty, read the parser's log");
    TraceUnterminated = ("trace-unterminated", Error, "Trace unterminated",
        "`trace_view.json` ends cleanly after an event without the closing `]`.",
        "the writer stopped early (killed, disk full): re-parse the run directory");
    TraceCutMidEvent = ("trace-cut-mid-event", Error, "Trace cut mid-event",
        "`trace_view.json` ends in the middle of an event.",
        "the file was truncated (disk full, killed, partial copy): re-parse or copy it again");
    TraceEmptyDeviceTimeline = ("trace-empty-device-timeline", Error, "Empty device timeline",
        "`trace_view.json` closes with `},]`: the device timeline was empty.",
        "no device data reached the parser: check the window recorded NPU work, then run again");
    TraceMalformed = ("trace-malformed", Error, "Trace malformed",
        "`trace_view.json` has a syntax error before its end.",
        "the file is damaged at the reported byte: re-parse the run directory");
    TraceNotArray = ("trace-not-array", Warning, "Trace is not an array",
        "`trace_view.json` is a JSON object, not torch_npu's bare array.",
        "check which tool wrote the file; torch_npu writes a bare array");
    TraceProcessMissing = ("trace-process-missing", Error, "Trace process missing",
        "The `Ascend Hardware` or `CANN` process is missing from the trace.",
        "the device data was not parsed: read the parser's log and re-parse");
    FileOverSizeCap = ("file-over-size-cap", Error, "File over torch_npu's size cap",
        "A file is over torch_npu's size cap (JSON 10 GiB, CSV 5 GiB) and is treated as empty.",
        "record fewer steps or a lower level (`npuprof plan`), then run again");
    SizeCapWarning = ("size-cap-warning", Error, "Size cap reported",
        "The log says a file exceeded torch_npu's preset size.",
        "record fewer steps or a lower level, then run again");
    FileUnreadable = ("file-unreadable", Error, "File unreadable",
        "A file or directory exists but could not be read (permission denied, I/O error).",
        "fix the permissions or the disk, then verify again");
    FileNotRegular = ("file-not-regular", Error, "Not a regular file",
        "A FIFO, socket, device or directory where a file belongs: skipped without reading.",
        "replace it with the real file (copy the run again)");
    FileLfsPointer = ("file-lfs-pointer", Error, "git-lfs pointer",
        "A git-lfs pointer file where the data belongs.",
        "fetch the data (`git lfs pull`), then verify again");
    FileEmpty = ("file-empty", Error, "File empty",
        "An artifact is empty (0 bytes).",
        "re-parse the run directory; if it stays empty, read the parser's log");
    CsvCorrupt = ("csv-corrupt", Error, "CSV corrupt",
        "A CSV record runs past the size limit (NULs, no line ending, an unclosed quote) or the header is absurdly wide: read only up to there.",
        "the file is damaged at the reported line: re-parse the run directory");
    DbInvalid = ("db-invalid", Error, "Database invalid",
        "A `.db` of a db export is not SQLite, is cut short, or SQLite cannot read it.",
        "re-parse the run directory (and check the disk has room)");
    DbTablesMissing = ("db-tables-missing", Error, "Database tables missing",
        "A `.db` lacks tables every parsed run has.",
        "the export did not finish: re-parse the run directory");
    DbTablesEmpty = ("db-tables-empty", Error, "Database tables empty",
        "A `.db`'s essential tables hold no rows.",
        "nothing was recorded or the export failed: check the window, then re-parse or run again");
    KernelHeaderMinimal = ("kernel-header-minimal", Warning, "Minimal kernel header",
        "kernel_details.csv has the minimal (Level0) header.",
        "for shapes, streams and AI Core metrics, pass an `_ExperimentalConfig` with `ProfilerLevel.Level1` and run again");
    KernelColumnsMissing = ("kernel-columns-missing", Error, "Kernel columns missing",
        "kernel_details.csv lacks columns expected for the recorded level or metric group.",
        "re-parse the run directory with the CANN that recorded it");
    KernelDurationInvalid = ("kernel-duration-invalid", Error, "Kernel durations invalid",
        "Rows of kernel_details.csv whose `Duration(us)` is not a finite number of 0 or more (`inf`, `1e309`, a negative value): counted as 0, never summed or printed.",
        "re-parse the run (a writer never produces such values: the file was edited or damaged), or collect again");
    KernelRowsMalformed = ("kernel-rows-malformed", Error, "Kernel rows malformed",
        "kernel_details.csv rows whose field count differs from the header.",
        "the file is damaged at the reported line: re-parse the run directory");
    KernelColumnEmpty = ("kernel-column-empty", Warning, "Kernel column empty",
        "A kernel_details.csv column is present but empty in every row.",
        "check the metric group and level that should fill it");
    KernelNoRows = ("kernel-no-rows", Warning, "No kernel rows",
        "kernel_details.csv has a header but no rows.",
        "check the window recorded NPU work (`npuprof plan`), then run again");
    KernelTotalsDisagree = ("kernel-totals-disagree", Error, "Kernel totals disagree",
        "kernel_details.csv's computing rows or time differ from op_statistic.csv's total or step_trace_time's Computing (they agree on intact runs): the table lost rows or was rewritten.",
        "re-parse the run directory (the raw data is intact when PROF_* is) and verify again");
    TraceTotalsDisagree = ("trace-totals-disagree", Error, "Trace totals disagree",
        "trace_view.json's Overlap Analysis lane holds less Computing than step_trace_time.csv records (they agree on intact runs): the trace lost events, e.g. cut and re-closed.",
        "re-parse the run directory (the raw data is intact when PROF_* is) and verify again");
    CommunicationCountDisagrees = ("communication-count-disagrees", Warning, "Communication count disagrees",
        "kernel_details.csv's communication rows (HCCL / COMMUNICATION) differ in number from communication.json's operators (equal on intact runs).",
        "re-parse the run directory and verify again; until then trust neither file's communication totals");
    StepsMissing = ("steps-missing", Error, "Recorded steps missing",
        "Steps the schedule records are absent from kernel_details.csv.",
        "check that `step()` is called once per step inside the window, then run again");
    WindowNotRequested = ("window-not-requested", Error, "Not the window asked for",
        "`collect`: the run recorded another window than the one npuprof patched in (a shorter or shifted window, or another schedule): the profiler that ran is not the one patched.",
        "find where the run builds or rebinds its profiler (a monkeypatch, a decorator, a conditional import, `__defaults__`) and patch that, or collect with path B (`npuprof inject`)");
    StepsUnexpected = ("steps-unexpected", Warning, "Unexpected steps",
        "Step Ids the schedule does not record.",
        "check the schedule passed to the profiler against the one expected (`npuprof plan`)");
    StepTraceMissingSteps = ("step-trace-missing-steps", Warning, "Step trace lacks steps",
        "step_trace_time.csv lacks recorded steps.",
        "re-parse the run directory; compare with kernel_details.csv's Step Ids");
    StepsInconsistent = ("steps-inconsistent", Warning, "Ranks recorded different steps",
        "`--merge`: ranks of one phase recorded different steps.",
        "check that every rank ran the same schedule and step count");
    CompileInWindow = ("compile-in-window", Warning, "Compilation in the window",
        "The first recorded step is ≥ 10× the median of the others: compilation inside the window.",
        "warm up before the window (raise `skip_first` or `wait`), then run again");
    ArtifactMissing = ("artifact-missing", Error, "Artifact missing",
        "An artifact required by the recorded configuration is absent.",
        "re-parse the run directory; if it stays absent, read the parser's log");
    ScheduleStopInRecord = ("schedule-stop-in-record", Warning, "Stopped in RECORD",
        "The profiler stopped in RECORD: incomplete data (harmless without a schedule).",
        "run enough steps for the window to close, with one closing `step()` (`npuprof plan`)");
    ScheduleCycleIncomplete = ("schedule-cycle-incomplete", Info, "Stopped in RECORD_AND_SAVE: cycle saved",
        "The profiler stopped in RECORD_AND_SAVE: stop() closes the open step and saves and parses the cycle; its last step holds no forward in a forward-then-`step()` loop.",
        "none needed; for kernels in the cycle's last step, call `step()` once more after the last recorded forward");
    ScheduleTransition = ("schedule-transition", Warning, "Invalid schedule transition",
        "An invalid schedule transition (`RECORD followed by NONE`, ...): raw data not parsed.",
        "fix the schedule or the `step()` calls (`npuprof lint`), then run again");
    OutputOwner = ("output-owner", Warning, "Output owned by another user",
        "The output directory belongs to another user (`chown` message); an error on builds whose CANN export stops on it.",
        "`chown` the output directory to your user, or write the output to a directory you own (`npuprof relocate`)");
    ToolkitOwner = ("toolkit-owner", Warning, "Toolkit owned by another user",
        "The CANN toolkit's files belong to another user (`chown` message naming the toolkit).",
        "fix the toolkit's ownership, or source a CANN toolkit installed by your user; then re-parse");
    AclFlowMissing = ("acl-flow-missing", Warning, "No ACL-to-NPU flow events",
        "`Failed to get acl to npu flow events`: kernels cannot be tied to steps (Step Id).",
        "check the window recorded NPU work between its `step()` calls, then run again");
    NoKernelsInWindow = ("no-kernels-in-window", Warning, "No kernels in the window",
        "NPU activity, raw data, no failure and no kernels: the window recorded no kernels.",
        "move the window onto steps that run the model (`npuprof plan`), then run again");
    AnalyseDoneMissing = ("analyse-done-missing", Warning, "analyse.done missing",
        "A build that writes `analyse.done` after every parse left none: parsing did not end.",
        "re-parse the run directory and read its log");
    RunDuplicate = ("run-duplicate", Warning, "Run directories duplicated",
        "More run directories for one phase and rank than the schedule's `repeat` (when the cycles are not known from Step Ids).",
        "remove the output of earlier runs, or verify one run's directories");
    CycleMissing = ("cycle-missing", Error, "Cycle missing",
        "A cycle of the schedule is in none of the phase's run directories (torch_npu writes one directory per cycle).",
        "make the run last for every cycle (npuprof plan), or verify the complete output");
    CycleDuplicate = ("cycle-duplicate", Warning, "Cycle duplicated or out of order",
        "A cycle is in more than one run directory, or the directories' timestamps are out of cycle order: leftovers of another run are mixed in.",
        "verify a fresh result directory, or move the older *_ascend_pt directories away");
    ProfilerInfoMissing = ("profiler-info-missing", Warning, "profiler_info missing",
        "No `profiler_info*.json`: the configuration is unknown.",
        "the run did not finish writing: re-parse or run again; the checks that need it were skipped");
    KernelStepIdEmpty = ("kernel-step-id-empty", Info, "Empty Step Id",
        "kernel_details.csv rows with an empty `Step Id`.",
        "kernels outside any step: usually work between `step()` calls, nothing to do");
    DbExport = ("db-export", Info, "db export",
        "db export: text artifacts are not expected.",
        "nothing: the `.db` files are checked instead");
    ServingOutput = ("serving-output", Info, "Serving output",
        "A serving engine's output: no schedule, one run directory per rank per start/stop pair (named here).",
        "nothing: summarise one pair's run directories at a time");
    ServingFrontendTrace = ("serving-frontend-trace", Info, "Frontend trace",
        "The serving API process's own CPU trace beside the run directories: not a rank.",
        "nothing: verify leaves it out");
    ExpectationUnknown = ("expectation-unknown", Info, "Expectation unknown",
        "Part of the expectation is unknown, so it was not checked.",
        "name the run config (`--model`/`--yaml`) or the window so verify knows what to expect");
    WorldSizeUnknown = ("world-size-unknown", Info, "World size unknown",
        "The number of ranks is not known (no `--ranks`, no `log_<rank>.log`, no `parallel_group_info`).",
        "pass `--ranks` to check that every rank is present");
    RankSubset = ("rank-subset", Info, "Subset of ranks",
        "Only some ranks of the run are here (normal for one node of a multi-node run).",
        "verify each node and merge the reports (`--merge`) to check the whole run");
    AnalyseDoneNotSuccess = ("analyse-done-not-success", Info, "analyse.done despite errors",
        "`analyse.done` exists although the run has errors (it is written even when parsing fails).",
        "nothing: the file does not mean success; fix the errors reported");
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
    /// A finding of `code` without phase or rank, with the code's registry severity (the
    /// registry decides; a check that knows better says so with [`Finding::with_severity`]).
    pub fn new(
        code: Code,
        message: impl Into<String>,
        evidence: Evidence,
        next_action: impl Into<String>,
    ) -> Self {
        Self {
            severity: code.default_severity(),
            code,
            message: message.into(),
            evidence,
            next_action: next_action.into(),
            phase: None,
            rank: None,
        }
    }

    /// The finding with another severity than its code's registry one: for the checks whose
    /// verdict depends on the torch_npu build, the schedule, the recorded level or the evidence.
    pub fn with_severity(mut self, severity: Severity) -> Self {
        self.severity = severity;
        self
    }

    /// Sets phase and rank.
    pub fn at(mut self, phase: Option<&str>, rank: Option<u32>) -> Self {
        self.phase = phase.map(str::to_owned);
        self.rank = rank;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_its_entry() {
        assert_eq!(REGISTRY.len(), Code::ALL.len());
        let mut names = std::collections::HashSet::new();
        let mut titles = std::collections::HashSet::new();
        for (entry, &code) in REGISTRY.iter().zip(Code::ALL) {
            assert_eq!(entry.code, code);
            assert_eq!(code.info(), entry);
            assert!(names.insert(entry.name), "{} twice", entry.name);
            assert!(titles.insert(entry.title), "title {:?} twice", entry.title);
            for (what, text) in [
                ("title", entry.title),
                ("meaning", entry.meaning),
                ("next action", entry.next_action),
            ] {
                assert!(!text.trim().is_empty(), "{}: empty {what}", entry.name);
                assert!(!text.contains('\n'), "{}: {what} spans lines", entry.name);
            }
            assert!(
                !entry.title.ends_with('.'),
                "{}: title ends with a stop",
                entry.name
            );
        }
    }

    #[test]
    fn the_json_spelling_is_the_registry_name() {
        for &code in Code::ALL {
            let json = serde_json::to_string(&code).expect("serialise");
            assert_eq!(json, format!("\"{}\"", code.as_str()));
            let back: Code = serde_json::from_str(&json).expect("parse");
            assert_eq!(back, code);
        }
        assert_eq!(Code::OutputFilesystem.as_str(), "output-filesystem");
        assert_eq!(
            Code::AnalyseDoneNotSuccess.as_str(),
            "analyse-done-not-success"
        );
    }

    #[test]
    fn a_finding_takes_its_codes_severity_unless_its_check_knows_better() {
        for &code in Code::ALL {
            let f = Finding::new(code, "m", Evidence::default(), "n");
            assert_eq!(f.severity, code.info().severity, "{}", code.as_str());
        }
        let warning = Finding::new(Code::TraceNotArray, "m", Evidence::default(), "n");
        assert_eq!(warning.severity, Severity::Warning);
        let raised = warning.with_severity(Severity::Error);
        assert_eq!(
            (raised.code, raised.severity),
            (Code::TraceNotArray, Severity::Error)
        );
    }

    #[test]
    fn default_severities_are_the_registry_ones() {
        assert_eq!(Code::OutputFilesystem.default_severity(), Severity::Error);
        assert_eq!(Code::TraceNotArray.default_severity(), Severity::Warning);
        assert_eq!(Code::RankSubset.default_severity(), Severity::Info);
    }
}
