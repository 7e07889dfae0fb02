//! Builds torch_npu run directories from the real samples vendored in `crates/verify/tests/data/`
//! (see its NOTICE), as they sit in a cann-recipes result directory, plus the broken variants
//! verify must recognise. Shared by the verify crate's tests and the CLI's `verify` tests
//! (included by path). A missing sample panics: a test never passes without its data.
#![allow(dead_code, reason = "each test binary uses its own subset")]

use std::fs;
use std::path::{Path, PathBuf};

use npuprof_verify::finding::{Code, Severity};
use npuprof_verify::{NoProgress, Options, VerifyReport, verify};

mod samples;
pub use samples::*;

fn msinsight(name: &str) -> PathBuf {
    sample(&format!("Ascend-msinsight/{name}"))
}

/// The complete real 2-rank run (Level1 + PipeUtilization, text export): `rank{0,1}_ascend_pt`.
pub fn real_two_rank_run() -> PathBuf {
    let dir = samples().join("runs/msinsight-text-level1");
    for rank in 0..2 {
        sample(&format!(
            "runs/msinsight-text-level1/rank{rank}_ascend_pt/profiler_info_{rank}.json"
        ));
    }
    dir
}

/// The real MemoryL0 (`ACL_AICORE_L0B_AND_WIDTH`) kernel_details.csv of 2023 (32 columns).
pub fn memory_l0_kernel_details() -> PathBuf {
    msinsight(
        "server__src__test__test_data__test_rank_0__ASCEND_PROFILER_OUTPUT__kernel_details.csv",
    )
}

/// The real ArithmeticUtilization kernel_details.csv of 2023 (33 columns).
pub fn arithmetic_kernel_details() -> PathBuf {
    sample(
        "Ascend-mstt/profiler__msprof_analyze__test__ut__advisor__advisor_backend__compute_advice__kernel_details.csv",
    )
}

/// A file of the real Level2 rank-0 run (`ASCEND_PROFILER_OUTPUT/<name>`).
pub fn level2_output(name: &str) -> PathBuf {
    msinsight(&format!(
        "test__st__level2__rank_0_ascend_pt__ASCEND_PROFILER_OUTPUT__{name}"
    ))
}

/// The real profiler_info_0.json (Level2, PipeUtilization, skip_first 12, warmup 1, active 1).
pub fn level2_profiler_info() -> PathBuf {
    msinsight("test__st__level2__rank_0_ascend_pt__profiler_info_0.json")
}

/// The real Level0 kernel_details.csv (8 columns, CRLF, Step Id 50).
pub fn level0_kernel_details() -> PathBuf {
    msinsight(
        "test__data__pytorch__text__level0__rank0_ascend_pt__ASCEND_PROFILER_OUTPUT__kernel_details.csv",
    )
}

/// Headers the samples do not include (from torch_npu's writers).
pub const OPERATOR_DETAILS_HEADER: &str = "Name,Input Shapes,Call Stack,Host Self Duration(us),Host Total Duration(us),Device Self Duration(us),Device Total Duration(us),Device Self Duration With AICore(us),Device Total Duration With AICore(us)\n";
/// memory_record.csv header.
pub const MEMORY_RECORD_HEADER: &str = "Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB),Total Active(MB),Stream Ptr,Device Type\n";
/// operator_memory.csv header.
pub const OPERATOR_MEMORY_HEADER: &str = "Name,Size(KB),Allocation Time(us),Release Time(us),Active Release Time(us),Duration(us),Active Duration(us),Allocation Total Allocated(MB),Allocation Total Reserved(MB),Allocation Total Active(MB),Release Total Allocated(MB),Release Total Reserved(MB),Release Total Active(MB),Stream Ptr,Device Type\n";

/// A run directory being assembled.
pub struct Run {
    /// The `*_ascend_pt` directory.
    pub dir: PathBuf,
}

impl Run {
    /// `ASCEND_PROFILER_OUTPUT/`.
    pub fn out(&self) -> PathBuf {
        self.dir.join("ASCEND_PROFILER_OUTPUT")
    }

    /// Writes a file of the output directory.
    pub fn write(&self, name: &str, bytes: impl AsRef<[u8]>) -> &Self {
        let _ = fs::create_dir_all(self.out());
        let _ = fs::write(self.out().join(name), bytes);
        self
    }

    /// Removes a file of the output directory.
    pub fn remove(&self, name: &str) -> &Self {
        let _ = fs::remove_file(self.out().join(name));
        self
    }

    /// Rewrites profiler_info (as JSON text) with `edit`.
    pub fn edit_info(&self, edit: impl FnOnce(&mut serde_json::Value)) -> &Self {
        let path = self.info_path();
        let text = fs::read_to_string(&path).unwrap_or_default();
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        edit(&mut v);
        let _ = fs::write(&path, serde_json::to_string_pretty(&v).unwrap_or_default());
        self
    }

    /// The profiler_info file.
    pub fn info_path(&self) -> PathBuf {
        fs::read_dir(&self.dir)
            .ok()
            .and_then(|rd| {
                rd.filter_map(Result::ok).map(|e| e.path()).find(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("profiler_info"))
                })
            })
            .unwrap_or_else(|| self.dir.join("profiler_info_0.json"))
    }

    /// Writes `logs/<name>`.
    pub fn write_log(&self, name: &str, text: &str) -> &Self {
        let logs = self.dir.join("logs");
        let _ = fs::create_dir_all(&logs);
        let _ = fs::write(logs.join(name), text);
        self
    }
}

/// Copies a sample and makes the copy writable (`fs::copy` keeps permissions, and a checkout
/// may be read-only); panics when the sample is missing.
pub fn copy_writable(from: &Path, to: &Path) {
    use std::os::unix::fs::PermissionsExt;
    fs::copy(from, to).unwrap_or_else(|e| panic!("copying test data {}: {e}", from.display()));
    let _ = fs::set_permissions(to, fs::Permissions::from_mode(0o644));
}

/// Copies a directory tree of samples (regular files and directories), writable.
pub fn copy_tree_writable(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap_or_else(|e| panic!("{}: {e}", to.display()));
    let entries =
        fs::read_dir(from).unwrap_or_else(|e| panic!("test data {}: {e}", from.display()));
    for entry in entries.map(|e| e.unwrap_or_else(|e| panic!("{e}"))) {
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if src.is_dir() {
            copy_tree_writable(&src, &dst);
        } else {
            copy_writable(&src, &dst);
        }
    }
}

/// Assembles the real Level2 rank-`rank` run in `dir`: profiler_info_{rank}.json (rank_id
/// rewritten), the real CSVs and communication files, the real trace, and the files the real
/// run also had but the samples lack (operator_details, memory files: headers only).
pub fn real_run(dir: &Path, rank: u32) -> Run {
    let run = Run {
        dir: dir.to_path_buf(),
    };
    let _ = fs::create_dir_all(run.out());
    let info = String::from_utf8(read_sample(&level2_profiler_info())).unwrap_or_default();
    let info = info.replace("\"rank_id\": \"0\"", &format!("\"rank_id\": \"{rank}\""));
    let _ = fs::write(dir.join(format!("profiler_info_{rank}.json")), info);
    for name in [
        "kernel_details.csv",
        "op_statistic.csv",
        "api_statistic.csv",
        "step_trace_time.csv",
        "communication.json",
        "communication_matrix.json",
    ] {
        copy_writable(&level2_output(name), &run.out().join(name));
    }
    copy_writable(&trace_view(), &run.out().join("trace_view.json"));
    run.write("operator_details.csv", OPERATOR_DETAILS_HEADER);
    run.write("memory_record.csv", MEMORY_RECORD_HEADER);
    run.write("operator_memory.csv", OPERATOR_MEMORY_HEADER);
    run
}

/// A cann-recipes result directory `<root>/models/<model>/res/<date>/<case>/`.
pub struct ResultDir {
    /// The result directory.
    pub dir: PathBuf,
}

impl ResultDir {
    /// Creates `<root>/models/<model>/res/<date>/<case>/`.
    pub fn new(root: &Path, model: &str, date: &str, case: &str) -> Self {
        let dir = root
            .join("models")
            .join(model)
            .join("res")
            .join(date)
            .join(case);
        let _ = fs::create_dir_all(&dir);
        Self { dir }
    }

    /// Adds the real run for `phase`/`rank` (worker name as torch_npu writes it).
    pub fn add_run(&self, phase: &str, rank: u32) -> Run {
        let dir = self.dir.join("prof").join(phase).join(format!(
            "node1_{}_2026072517560{rank}123_ascend_pt",
            4000 + rank
        ));
        real_run(&dir, rank)
    }

    /// Writes `log_<rank>.log`.
    pub fn write_log(&self, rank: u32, text: &str) -> &Self {
        let _ = fs::write(self.dir.join(format!("log_{rank}.log")), text);
        self
    }
}

/// A clean rank log as cann-recipes writes it (nothing torch_npu complains about).
pub const CLEAN_LOG: &str = "\
[2026-07-25 17:55:01] INFO model loaded
[2026-07-25 17:55:40] INFO inference finished, 32 tokens
";

/// The cascade printed on stdout when every parser fails on a bad output disk (2.7.1+ format).
pub const ALL_PARSERS_FAILED_LOG: &str = "\
[2026-07-25 17:56:01] INFO inference finished
[2026-07-25 17:56:02] [ERROR] [66457] profiler.py: Task [CANNExportParser] run failed.
[2026-07-25 17:56:02] [ERROR] [66457] profiler.py: Task [CANNTimelineParser] run failed.
[2026-07-25 17:56:02] [ERROR] [66457] profiler.py: Task [KernelViewParser] run failed.
[2026-07-25 17:56:02] [ERROR] [66457] profiler.py: Task [MemoryViewParser] run failed.
[2026-07-25 17:56:02] [ERROR] [66457] profiler.py: Task [IntegrateParser] run failed.
[2026-07-25 17:56:03] [ERROR] [66457] profiler.py: Task [RelationParser] run failed.
[2026-07-25 17:56:03] [ERROR] [66457] profiler.py: Task [TraceViewParser] run failed.
[2026-07-25 17:56:03] [ERROR] [66457] profiler.py: Task [TraceStepTimeParser] run failed.
[2026-07-25 17:56:03] [ERROR] [66457] profiler.py: Task [OperatorViewParser] run failed.
[2026-07-25 17:56:03] [ERROR] [66457] profiler.py: Task [CANNAnalyzeParser] run failed.
[2026-07-25 17:56:03] [ERROR] [66457] profiler.py: Task [CommunicationParser] run failed.
";

/// Removes every CSV and communication file, and leaves the trace unterminated: what a run
/// looks like after every parser failed on a bad output filesystem.
pub fn break_like_bad_disk(run: &Run) {
    for name in [
        "kernel_details.csv",
        "op_statistic.csv",
        "api_statistic.csv",
        "step_trace_time.csv",
        "communication.json",
        "communication_matrix.json",
        "operator_details.csv",
        "memory_record.csv",
        "operator_memory.csv",
    ] {
        run.remove(name);
    }
    run.write("trace_view.json", trace_host_only());
}

/// The real kernel_details.csv with each line passed through `edit(line_index, line)`
/// (index 0 is the header; lines keep their terminators).
pub fn edited_kernel_details(edit: impl Fn(usize, &str) -> String) -> String {
    let text =
        String::from_utf8(read_sample(&level2_output("kernel_details.csv"))).unwrap_or_default();
    text.split_inclusive('\n')
        .enumerate()
        .map(|(i, l)| edit(i, l))
        .collect()
}

/// The real kernel_details.csv with the Step Id of row `i` (1-based) set to `step(i)`.
pub fn kernel_details_with_steps(step: impl Fn(usize) -> String) -> String {
    edited_kernel_details(|i, l| {
        if i == 0 {
            l.to_owned()
        } else {
            replace_field(l, 0, &step(i))
        }
    })
}

/// The real kernel_details.csv without its `Step Id` column, as a run without a schedule (or
/// with torch_npu's default one, which marks no ProfilerStep) writes it.
pub fn kernel_details_without_step_id() -> String {
    edited_kernel_details(|_, l| l.split_once(',').map_or("", |(_, rest)| rest).to_owned())
}

/// Replaces field `col` (0-based; every field before it must be unquoted) of a CSV line.
pub fn replace_field(line: &str, col: usize, value: &str) -> String {
    let mut parts: Vec<&str> = line.splitn(col + 2, ',').collect();
    if parts.len() > col {
        parts[col] = value;
    }
    parts.join(",")
}

/// Escapes a literal for an insta filter regex.
pub fn regex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// How a generated `ascend_pytorch_profiler_<rank>.db` differs from a good one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DbVariant {
    /// TASK, STRING_IDS and COMPUTE_TASK_INFO with rows, as a parsed run has them.
    Good,
    /// The same tables without rows.
    EmptyTables,
    /// No COMPUTE_TASK_INFO table.
    MissingTable,
    /// The good database cut to half its size (the writer killed, the disk full).
    Truncated,
    /// Cut as well, with the header's page count marked stale (as files from SQLite before
    /// 3.7.0 have it), so only SQLite itself can tell.
    TruncatedStaleHeader,
}

/// A profiler database made with SQLite (the table names of real exports).
pub fn profiler_db(variant: DbVariant) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("p.db");
    let conn = rusqlite::Connection::open(&path).unwrap_or_else(|e| panic!("{e}"));
    let mut sql = String::from(
        "CREATE TABLE TASK (startNs INTEGER, endNs INTEGER, globalTaskId INTEGER);
         CREATE TABLE STRING_IDS (id INTEGER PRIMARY KEY, value TEXT);
         CREATE TABLE NPU_INFO (id INTEGER, name TEXT);",
    );
    if variant != DbVariant::MissingTable {
        sql.push_str("CREATE TABLE COMPUTE_TASK_INFO (name INTEGER, globalTaskId INTEGER, blockDim INTEGER);");
    }
    if variant != DbVariant::EmptyTables {
        // Enough rows for several pages, so that cutting the file loses data.
        sql.push_str(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
             INSERT INTO TASK SELECT i * 1000, i * 1000 + 500, i FROM n;
             INSERT INTO STRING_IDS VALUES (1, 'MatMulV2'), (2, 'aclnnAdd');",
        );
        if variant != DbVariant::MissingTable {
            sql.push_str("INSERT INTO COMPUTE_TASK_INFO SELECT 1, globalTaskId, 24 FROM TASK;");
        }
    }
    conn.execute_batch(&sql).unwrap_or_else(|e| panic!("{e}"));
    drop(conn);
    let bytes = fs::read(&path).unwrap_or_else(|e| panic!("{e}"));
    match variant {
        DbVariant::Truncated => bytes[..bytes.len() / 2].to_vec(),
        DbVariant::TruncatedStaleHeader => {
            let mut cut = bytes[..bytes.len() / 2].to_vec();
            // version-valid-for (offset 92) no longer equals the change counter (offset 24).
            cut[92..96].copy_from_slice(&[0xff; 4]);
            cut
        }
        _ => bytes,
    }
}

/// A good `analysis.db` (StepTraceTime).
pub fn analysis_db() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("a.db");
    let conn = rusqlite::Connection::open(&path).unwrap_or_else(|e| panic!("{e}"));
    conn.execute_batch("CREATE TABLE StepTraceTime (step TEXT, computing REAL); INSERT INTO StepTraceTime VALUES ('13', 1.5);")
        .unwrap_or_else(|e| panic!("{e}"));
    drop(conn);
    fs::read(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs verify on `path` with options changed by `tweak`; panics when verify cannot run.
pub fn run_verify(path: &Path, tweak: impl FnOnce(&mut Options)) -> VerifyReport {
    let mut opts = Options {
        path: path.to_path_buf(),
        ..Options::default()
    };
    tweak(&mut opts);
    match verify(&opts, &NoProgress) {
        Ok(r) => r,
        Err(e) => panic!("verify failed on {}: {e}", path.display()),
    }
}

/// Asserts the exact multiset of (severity, code) of the report's findings.
pub fn check_codes(report: &VerifyReport, expected: &[(Severity, Code)]) {
    let mut got: Vec<(Severity, Code)> = report
        .findings
        .iter()
        .map(|f| (f.severity, f.code))
        .collect();
    let mut want = expected.to_vec();
    got.sort();
    want.sort();
    assert_eq!(
        got,
        want,
        "findings: {:#?}",
        report
            .findings
            .iter()
            .map(|f| format!("{} {} {}", f.severity.as_str(), f.code.as_str(), f.message))
            .collect::<Vec<_>>()
    );
    let has_error = expected.iter().any(|(s, _)| *s == Severity::Error);
    assert_eq!(report.ok, !has_error);
}

/// No finding's next action contains `needle` (advice the run already followed).
pub fn check_no_action(report: &VerifyReport, needle: &str) {
    for f in &report.findings {
        assert!(
            !f.next_action.contains(needle),
            "{:?} advises {needle:?}: {}",
            f.code,
            f.next_action
        );
    }
}

/// The next action of the first finding with `code` contains `needle`.
pub fn check_next_action(report: &VerifyReport, code: Code, needle: &str) {
    let f = report.findings.iter().find(|f| f.code == code);
    let action = f.map(|f| f.next_action.as_str()).unwrap_or_default();
    assert!(
        action.contains(needle),
        "{code:?}: {action:?} lacks {needle:?}"
    );
}

/// Copies the real 2-rank run into `dest` (`dest/rank{0,1}_ascend_pt`) and returns its ranks.
pub fn copy_real_run(dest: &Path) -> [Run; 2] {
    copy_tree_writable(&real_two_rank_run(), dest);
    [0, 1].map(|r| Run {
        dir: dest.join(format!("rank{r}_ascend_pt")),
    })
}

/// The trace without the `process_name` metadata event of process `name` (the rest unchanged,
/// still valid JSON).
pub fn without_process_name(trace: &[u8], name: &str) -> Vec<u8> {
    let text = String::from_utf8_lossy(trace).into_owned();
    let tail = format!("\"args\": {{\"name\": \"{name}\"}}, \"ph\": \"M\"}}");
    let end = text
        .find(&tail)
        .unwrap_or_else(|| panic!("the trace has no process_name event for {name}"))
        + tail.len();
    let start = text[..end]
        .rfind("{\"name\": \"process_name\"")
        .unwrap_or_else(|| panic!("no event start before {name}"));
    let rest = &text[end..];
    let rest = rest
        .strip_prefix(", ")
        .or_else(|| rest.strip_prefix(','))
        .unwrap_or(rest);
    format!("{}{rest}", &text[..start]).into_bytes()
}

/// A CSV with each header name passed through `rename` (`None` drops the column from every
/// row); quoting is kept valid by reading and writing with the csv crate.
pub fn rewrite_csv_columns(bytes: &[u8], rename: impl Fn(&str) -> Option<String>) -> Vec<u8> {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(bytes);
    let mut out = csv::Writer::from_writer(Vec::new());
    let mut keep: Vec<bool> = Vec::new();
    for (i, record) in rdr.byte_records().enumerate() {
        let record = record.unwrap_or_else(|e| panic!("{e}"));
        if i == 0 {
            let names: Vec<Option<String>> = record
                .iter()
                .map(|f| rename(String::from_utf8_lossy(f).trim()))
                .collect();
            keep = names.iter().map(Option::is_some).collect();
            let _ = out.write_record(names.into_iter().flatten());
        } else {
            let fields = record
                .iter()
                .zip(&keep)
                .filter(|(_, k)| **k)
                .map(|(f, _)| f);
            let _ = out.write_record(fields);
        }
    }
    out.into_inner().unwrap_or_else(|e| panic!("{e}"))
}

/// The pipeline-metric header of chips without the AIC/AIV split: `aic_`/`aiv_`
/// prefixes dropped (the AIC column kept where both exist), no `Mix Block Dim`, no `Context ID`.
pub fn unprefixed_pipe_column(name: &str) -> Option<String> {
    match name {
        "Mix Block Dim" | "Context ID" => None,
        n if n.starts_with("aiv_")
            && !matches!(
                n,
                "aiv_vec_time(us)" | "aiv_vec_ratio" | "aiv_mte3_time(us)" | "aiv_mte3_ratio"
            ) =>
        {
            None
        }
        n => Some(
            n.strip_prefix("aic_")
                .or_else(|| n.strip_prefix("aiv_"))
                .unwrap_or(n)
                .to_owned(),
        ),
    }
}

/// Rewrites profiler_info's schedule keys in the 2023 style (`_wait`, `_active`, ...).
pub fn underscore_schedule(v: &mut serde_json::Value) {
    if let Some(serde_json::Value::Object(s)) = v.pointer_mut("/config/common_config/schedule") {
        let old = std::mem::take(s);
        for (k, val) in old {
            s.insert(format!("_{k}"), val);
        }
    }
}

/// Makes a FIFO at `path` (with the system's `mkfifo`).
pub fn make_fifo(path: &Path) {
    let _ = fs::remove_file(path);
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap_or_else(|e| panic!("mkfifo: {e}"));
    assert!(status.success(), "mkfifo {} failed", path.display());
}

/// Runs verify in a thread and fails the test if it does not finish within 60 s (a blocking
/// read would otherwise hang the suite).
pub fn run_verify_bounded(
    path: &Path,
    tweak: impl FnOnce(&mut Options) + Send + 'static,
) -> VerifyReport {
    let path = path.to_path_buf();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(run_verify(&path, tweak));
    });
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .unwrap_or_else(|_| {
            panic!("verify did not finish within 60 s (blocked on a special file?)")
        })
}

/// A git-lfs pointer file as `git lfs` leaves it when the object was never fetched.
pub const LFS_POINTER: &str = "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 2218825\n";

/// Whether this process ignores file permissions (root): permission tests cannot deny it.
pub fn permissions_are_bypassed(dir: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let probe = dir.join(".perm-probe");
    let _ = fs::write(&probe, b"x");
    let _ = fs::set_permissions(&probe, fs::Permissions::from_mode(0o000));
    let readable = fs::read(&probe).is_ok();
    let _ = fs::set_permissions(&probe, fs::Permissions::from_mode(0o644));
    let _ = fs::remove_file(&probe);
    readable
}

/// A node directory `<root>/<name>` holding `ranks` of a `world`-rank run, each a copy of a real
/// rank with its rank rewritten (profiler_info name and `rank_id`) and the HCCL default group in
/// profiler_metadata.json's `parallel_group_info`, as torch_npu records it.
pub fn node_of_real_run(root: &Path, name: &str, ranks: &[u32], world: u32) -> PathBuf {
    let dir = root.join(name);
    for &rank in ranks {
        let src = real_two_rank_run().join(format!("rank{}_ascend_pt", rank % 2));
        let run = Run {
            dir: dir.join(format!("rank{rank}_ascend_pt")),
        };
        copy_tree_writable(&src, &run.dir);
        let info = run.info_path();
        fs::rename(&info, run.dir.join(format!("profiler_info_{rank}.json")))
            .unwrap_or_else(|e| panic!("{e}"));
        run.edit_info(|v| v["rank_id"] = serde_json::json!(rank));
        let all: Vec<u32> = (0..world).collect();
        let metadata = serde_json::json!({
            "parallel_group_info": {
                "10.0.0.1%eth0_60000_0_1764246877073569": {
                    "group_name": "default_group",
                    "group_rank": rank,
                    "global_ranks": all,
                }
            },
            "trace_id": "1764246877073569",
        });
        fs::write(run.dir.join("profiler_metadata.json"), metadata.to_string())
            .unwrap_or_else(|e| panic!("{e}"));
    }
    dir
}
