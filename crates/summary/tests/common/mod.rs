//! Fixtures for the summary tests (also used by the CLI's summary and compare tests): the
//! vendored real 2-rank run (`data/real-2rank/`, see its NOTICE.md), copied into the layouts
//! torch_npu users have, and changed by named transformations.
#![allow(dead_code, reason = "each test binary uses its own subset")]

pub mod browser;

use std::fs;
use std::path::{Path, PathBuf};

/// The vendored real run: `rank0_ascend_pt/`, `rank1_ascend_pt/`.
pub fn real_run() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../summary/tests/data/real-2rank")
}

/// Copies rank 0 of the vendored AlexNet run with module events (`msinsight-text-level1`, the
/// verify crate's test data) to `to`, for tests that change one of its files.
pub fn alexnet_rank0_copy(to: &Path) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../verify/tests/data/runs/msinsight-text-level1/rank0_ascend_pt");
    copy_tree(&from, to);
}

/// The vendored real 2-rank db export (`data/db-level1/`, see its NOTICE.md): the same
/// workload as [`real_run`], recorded again with `export_type=db`.
pub fn db_run() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../summary/tests/data/db-level1")
}

/// The summary of every run under `path`, every kernel group kept (what compare reads).
pub fn summary_all(path: &Path) -> npuprof_summary::Summary {
    let options = npuprof_summary::Options {
        top: None,
        ..npuprof_summary::Options::default()
    };
    npuprof_summary::summarize(path, &options).unwrap_or_else(|e| panic!("{e}"))
}

/// The run of `rank` in `summary`.
pub fn run_of(summary: &npuprof_summary::Summary, rank: u32) -> &npuprof_summary::RunSummary {
    summary
        .runs
        .iter()
        .find(|r| r.rank == Some(rank))
        .unwrap_or_else(|| panic!("rank {rank} missing"))
}

/// The expected values `data/real-2rank/expected.py` computed.
pub fn expected() -> serde_json::Value {
    let text = fs::read_to_string(real_run().join("expected.json")).expect("expected.json");
    serde_json::from_str(&text).expect("expected.json is JSON")
}

/// `<binary> <subcommand> <args>` run inside `dir`, without colour (for the CLI's tests).
pub fn command_in(
    binary: &Path,
    dir: &Path,
    subcommand: &str,
    args: &[&str],
) -> std::process::Command {
    let mut cmd = std::process::Command::new(binary);
    cmd.current_dir(dir)
        .arg(subcommand)
        .args(args)
        .env("NO_COLOR", "1");
    cmd
}

/// Runs `cmd`, asserts that it succeeded, and returns its stdout.
pub fn stdout_of(cmd: &mut std::process::Command) -> String {
    let out = cmd.output().expect("run the command");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 stdout")
}

/// The example output of `$ <command>` in `docs/reports.md` (the lines after it up to the code
/// fence).
pub fn docs_example(command: &str) -> (Vec<String>, String) {
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/reports.md");
    let text = fs::read_to_string(page).expect("docs/reports.md");
    let start = text
        .find(&format!("$ {command}\n"))
        .unwrap_or_else(|| panic!("docs/reports.md has no example of `{command}`"));
    let body = &text[start + command.len() + 3..];
    let output = &body[..body.find("```").expect("closing fence")];
    let args = command
        .split_whitespace()
        .skip(1)
        .map(str::to_owned)
        .collect();
    (args, output.to_owned())
}

/// Where the run directories go.
#[derive(Debug, Clone, Copy)]
pub enum Layout {
    /// `<root>/rank{0,1}_ascend_pt`.
    Flat,
    /// A recipes result directory: `<root>/prof/{prefill,decode}/rank{0,1}_ascend_pt`.
    ResultDir,
    /// `<root>/{prefill,decode}/prof/rank{0,1}_ascend_pt`.
    PhaseThenProf,
}

/// The run directories of `layout` under `root`, as `(phase, dir)`.
pub fn run_dirs(root: &Path, layout: Layout) -> Vec<(Option<&'static str>, PathBuf)> {
    let ranks = ["rank0_ascend_pt", "rank1_ascend_pt"];
    let phases = ["prefill", "decode"];
    match layout {
        Layout::Flat => ranks.iter().map(|r| (None, root.join(r))).collect(),
        Layout::ResultDir => phases
            .iter()
            .flat_map(|p| {
                ranks
                    .iter()
                    .map(move |r| (Some(*p), root.join("prof").join(p).join(r)))
            })
            .collect(),
        Layout::PhaseThenProf => phases
            .iter()
            .flat_map(|p| {
                ranks
                    .iter()
                    .map(move |r| (Some(*p), root.join(p).join("prof").join(r)))
            })
            .collect(),
    }
}

/// A temp directory holding copies of the real run in `layout`.
pub fn real_copy(layout: Layout) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("temp dir");
    for (_, dir) in run_dirs(tmp.path(), layout) {
        let name = dir.file_name().expect("run dir name").to_owned();
        copy_tree(&real_run().join(name), &dir);
    }
    tmp
}

/// A temp directory holding a copy of the real db export (`rank{0,1}_ascend_pt`).
pub fn db_copy() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("temp dir");
    copy_tree(&db_run(), tmp.path());
    tmp
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("create dir");
    for entry in fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("dir entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).expect("copy file");
        }
    }
}

/// `ASCEND_PROFILER_OUTPUT/<file>` of a run directory.
pub fn output_file(run: &Path, file: &str) -> PathBuf {
    run.join("ASCEND_PROFILER_OUTPUT").join(file)
}

/// Rewrites a CSV file record by record (the header is record 0); quoting is re-done by the
/// csv writer, which keeps the values.
pub fn rewrite_csv(path: &Path, mut edit: impl FnMut(usize, &mut Vec<String>)) {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_path(path)
        .expect("open csv");
    let mut writer = csv::Writer::from_writer(Vec::new());
    for (index, record) in reader.records().enumerate() {
        let mut fields: Vec<String> = record.expect("record").iter().map(str::to_owned).collect();
        edit(index, &mut fields);
        writer.write_record(&fields).expect("write record");
    }
    fs::write(path, writer.into_inner().expect("flush")).expect("write csv");
}

/// Transformation: add `us` to `column` of every step of the run's step_trace_time.csv.
pub fn add_to_steps(run: &Path, column: &str, us: f64) {
    let mut index = 0;
    rewrite_csv(&output_file(run, "step_trace_time.csv"), |row, fields| {
        if row == 0 {
            index = fields.iter().position(|f| f == column).expect("column");
        } else {
            let old: f64 = fields[index].parse().expect("number");
            fields[index] = format!("{}", old + us);
        }
    });
}

/// Transformation: remove a column (by exact header name) from a CSV file.
pub fn drop_column(path: &Path, name: &str) {
    let mut index = None;
    rewrite_csv(path, |row, fields| {
        if row == 0 {
            index = fields.iter().position(|f| f == name);
        }
        if let Some(i) = index {
            fields.remove(i);
        }
    });
}

/// Transformation: multiply `Duration(us)` of the kernels of `type_name` by `factor`, and add
/// the added time to the step's `Computing` in step_trace_time.csv, as a slower kernel would.
/// Returns the added time (µs).
pub fn slow_down_type(run: &Path, type_name: &str, factor: f64) -> f64 {
    let (mut type_col, mut duration_col, mut added) = (0, 0, 0.0);
    rewrite_csv(&output_file(run, "kernel_details.csv"), |row, fields| {
        if row == 0 {
            type_col = fields
                .iter()
                .position(|f| f == "Type")
                .expect("Type column");
            duration_col = fields
                .iter()
                .position(|f| f == "Duration(us)")
                .expect("Duration column");
        } else if fields[type_col] == type_name {
            let old: f64 = fields[duration_col].trim().parse().expect("duration");
            added += old * (factor - 1.0);
            fields[duration_col] = format!("{}", old * factor);
        }
    });
    let mut computing = 0;
    rewrite_csv(&output_file(run, "step_trace_time.csv"), |row, fields| {
        if row == 0 {
            computing = fields
                .iter()
                .position(|f| f == "Computing")
                .expect("Computing");
        } else {
            let old: f64 = fields[computing].parse().expect("computing");
            fields[computing] = format!("{}", old + added);
        }
    });
    added
}

/// Transformation: drop the last field of data row `row` (1-based) of the file, line by line (the file
/// has no line break inside quotes): the field-count mismatch of the 2023 export. Returns the
/// dropped row's `Duration(us)`. The file's line ends (CRLF in the real exports) are kept.
pub fn drop_a_field(path: &Path, row: usize) -> f64 {
    let text = fs::read_to_string(path).expect("read");
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_owned).collect();
    let header: Vec<&str> = lines[0].trim_end().split(',').collect();
    let column = header
        .iter()
        .position(|f| *f == "Duration(us)")
        .expect("Duration(us)");
    let mut duration = 0.0;
    rewrite_csv(path, |i, fields| {
        if i == row {
            duration = fields[column].trim().parse().expect("duration");
        }
    });
    let line = &mut lines[row];
    let cut = line.rfind(',').expect("fields");
    line.replace_range(cut..line.trim_end().len(), "");
    fs::write(path, lines.concat()).expect("write");
    duration
}

/// Transformation: remove every kernel row of `type_name`.
pub fn remove_type(run: &Path, type_name: &str) {
    let path = output_file(run, "kernel_details.csv");
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_path(&path)
        .expect("open csv");
    let mut writer = csv::Writer::from_writer(Vec::new());
    let mut type_col = None;
    for record in reader.records() {
        let record = record.expect("record");
        let column = *type_col.get_or_insert_with(|| {
            record
                .iter()
                .position(|f| f == "Type")
                .expect("Type column")
        });
        if &record[column] != type_name {
            writer.write_record(&record).expect("write");
        }
    }
    fs::write(&path, writer.into_inner().expect("flush")).expect("write csv");
}

/// Transformation: cut a file to its first `bytes` bytes.
pub fn truncate(path: &Path, bytes: usize) {
    let data = fs::read(path).expect("read");
    fs::write(path, &data[..bytes.min(data.len())]).expect("write");
}
