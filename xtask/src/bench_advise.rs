//! `cargo xtask bench advise`: `npuprof advise` against `npuprof summary` on the same
//! multi-million-row kernel_details.csv (the brief: advise within 2× summary's time on one
//! core, memory bounded); then summary, advise and msprof-analyze's advisor on the same inputs
//! (a copy of the vendored real run, and a generated run of `--anchor-rows` rows: msprof-analyze
//! takes minutes and GBs on millions), when msprof-analyze is installed (on PATH, or
//! `--anchor PATH`; otherwise skipped, saying why). Medians of `--runs` runs after a warm-up.
//!
//! The run directory (under `target/bench/advise/`, not committed; `--clean` deletes it) holds
//! the real rows of the vendored 2-rank run repeated (a new `Step Id` per repetition) and that
//! run's step_trace_time.csv and communication.json, so every rule has its input.

use std::fs;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};

use crate::bench_summary::{median_of, table};
use crate::bench_verify::{Measured, measure, one_core, write_kernel_details};
use crate::build::{build_npuprof, target_dir, workspace_root};

/// Options of the advise benchmark.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Rows of the generated kernel_details.csv.
    #[arg(long, default_value_t = 2_000_000)]
    pub rows: u64,
    /// Timed runs of each npuprof command (the median is reported), after one warm-up run.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Which msprof-analyze to time, if any.
    #[command(flatten)]
    pub anchor: crate::anchor::Options,
    /// Rows of the generated file that summary, advise and msprof-analyze are timed on together
    /// (msprof-analyze takes about 10 minutes and 10 GB on 2M rows).
    #[arg(long, value_name = "N", default_value_t = ANCHOR_ROWS)]
    pub anchor_rows: u64,
    /// Size of the trace_view.json of the host-gap rows, in GB (10^9 bytes; 0: no such rows).
    #[arg(long, default_value_t = 2.0)]
    pub trace_gb: f64,
    /// Also time the fastest validating JSON readers on crates.io (serde_json, sonic-rs:
    /// `bench/json-parsers`, built here) on the host-gap rows' trace, in the same run.
    #[arg(long)]
    pub parsers: bool,
    /// Delete the generated files and exit.
    #[arg(long)]
    pub clean: bool,
}

/// The default `--anchor-rows`.
const ANCHOR_ROWS: u64 = 200_000;

/// The vendored real run the three tools are also timed on (both ranks: msprof-analyze then
/// runs its cluster analyses too).
const REAL_RUN: &str = "crates/summary/tests/data/real-2rank";

const SAMPLE: &str = "crates/summary/tests/data/real-2rank/rank0_ascend_pt";
const FILES: [&str; 2] = ["step_trace_time.csv", "communication.json"];

/// A run directory at `dir` with `rows` kernel rows; its kernel_details.csv size.
fn make_run(dir: &Path, sample: &Path, kernel_sample: &[u8], rows: u64) -> anyhow::Result<u64> {
    copy_run(sample, dir, &FILES)?;
    let output = dir.join("ASCEND_PROFILER_OUTPUT");
    write_kernel_details(&output.join("kernel_details.csv"), kernel_sample, rows)
}

/// A run directory at `dir` with the run `sample`'s profiler_info_0.json and its output files
/// `files`.
pub(crate) fn copy_run(sample: &Path, dir: &Path, files: &[&str]) -> anyhow::Result<()> {
    let output = dir.join("ASCEND_PROFILER_OUTPUT");
    fs::create_dir_all(&output)?;
    fs::copy(
        sample.join("profiler_info_0.json"),
        dir.join("profiler_info_0.json"),
    )?;
    for file in files {
        fs::copy(
            sample.join("ASCEND_PROFILER_OUTPUT").join(file),
            output.join(file),
        )
        .with_context(|| format!("copying {file}"))?;
    }
    Ok(())
}

/// Runs the advise benchmark.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let root = workspace_root();
    let out = target_dir(&root).join("bench/advise");
    if args.clean {
        if out.exists() {
            fs::remove_dir_all(&out).with_context(|| format!("removing {}", out.display()))?;
        }
        println!("removed {}", out.display());
        return Ok(());
    }
    if args.rows == 0 || args.runs == 0 {
        bail!("--rows and --runs must be positive");
    }
    let sample = root.join(SAMPLE);
    let kernel_sample = fs::read(sample.join("ASCEND_PROFILER_OUTPUT/kernel_details.csv"))?;
    let npuprof = build_npuprof(&root)?;
    let run = out.join("rank0_ascend_pt");
    let bytes = make_run(&run, &sample, &kernel_sample, args.rows)?;
    println!(
        "generated {} ({} rows, {bytes} bytes)",
        run.display(),
        args.rows
    );
    let command = |name: &'static str| -> [&std::ffi::OsStr; 3] {
        [name.as_ref(), run.as_os_str(), "--json".as_ref()]
    };
    let advise_one = median_of(&one_core(&npuprof, &command("advise")), args.runs, true)?;
    let summary_one = median_of(&one_core(&npuprof, &command("summary")), args.runs, false)?;
    let mut advise_all = Command::new(&npuprof);
    advise_all.args(command("advise"));
    let advise_all = median_of(&advise_all, args.runs, true)?;
    let mut summary_all = Command::new(&npuprof);
    summary_all.args(command("summary"));
    let summary_all = median_of(&summary_all, args.runs, false)?;
    let findings = count_findings(&advise_one)?;
    let found = format!("{findings} findings");
    let rows: Vec<(&str, &Measured, &str)> = vec![
        ("npuprof advise, one core", &advise_one, &found),
        ("npuprof summary, one core", &summary_one, "-"),
        ("npuprof advise, all cores", &advise_all, &found),
        ("npuprof summary, all cores", &summary_all, "-"),
    ];
    table("kernel_details.csv", bytes, &rows);
    println!();
    println!(
        "npuprof advise / npuprof summary, one core: {:.2} wall, {:.2} CPU; peak RSS {:.1} MB vs {:.1} MB",
        advise_one.secs / summary_one.secs.max(0.001),
        advise_one.cpu / summary_one.cpu.max(0.001),
        advise_one.max_rss_kb as f64 / 1024.0,
        summary_one.max_rss_kb as f64 / 1024.0
    );
    match args.anchor.find() {
        Ok(anchor) => same_inputs(&npuprof, &anchor, args, &out, &sample, &kernel_sample)?,
        Err(why) => println!("\nmsprof-analyze: skipped ({why})"),
    }
    if args.trace_gb > 0.0 {
        let trace = crate::bench_host_gaps::run(&root, &out, &npuprof, args.trace_gb, args.runs)?;
        if args.parsers {
            crate::json_parsers::run(&root, &trace, args.runs)?;
        }
    }
    println!(
        "generated files are kept in {} (delete with `cargo xtask bench advise --clean`)",
        out.display()
    );
    Ok(())
}

/// summary, advise and msprof-analyze's advisor on the same inputs: a copy of the vendored
/// real run, and a generated run of `--anchor-rows` rows. npuprof's times are medians of
/// `--runs` after a warm-up, on all cores; msprof-analyze is run once (the inputs are in the
/// page cache by then).
fn same_inputs(
    npuprof: &Path,
    anchor: &Path,
    args: &Args,
    out: &Path,
    sample: &Path,
    kernel_sample: &[u8],
) -> anyhow::Result<()> {
    let real = out.join("real-2rank");
    // A copy: msprof-analyze writes next to what it reads (it checkpoints a db export's WAL).
    if real.exists() {
        fs::remove_dir_all(&real)?;
    }
    copy_tree(&workspace_root().join(REAL_RUN), &real)?;
    // The rank directory itself: the advisor takes a directory of several ranks, or one rank's.
    let run = out.join("anchor").join("rank0_ascend_pt");
    let bytes = make_run(&run, sample, kernel_sample, args.anchor_rows)?;
    let inputs = [
        (
            real,
            "the vendored real 2-rank run (191 kernel rows per rank)".to_owned(),
        ),
        (
            run,
            format!(
                "{} MB kernel_details.csv ({} rows), generated",
                bytes / 1_000_000,
                args.anchor_rows
            ),
        ),
    ];
    println!();
    println!("| tool | input | median wall s | median CPU s | peak RSS | result |");
    println!("|---|---|---|---|---|---|");
    for (index, (dir, input)) in inputs.iter().enumerate() {
        let npuprof_cmd = |name: &str| {
            let mut cmd = Command::new(npuprof);
            cmd.arg(name).arg(dir).arg("--json");
            cmd
        };
        let summary = median_of(&npuprof_cmd("summary"), args.runs, false)?;
        let advise = median_of(&npuprof_cmd("advise"), args.runs, true)?;
        let found = format!("{} findings", count_findings(&advise)?);
        let report = out.join(format!("anchor-report-{index}"));
        if report.exists() {
            fs::remove_dir_all(&report)?;
        }
        fs::create_dir_all(&report)?;
        let mut cmd = Command::new(anchor);
        cmd.args(["advisor", "all", "-d"])
            .arg(dir)
            .arg("-o")
            .arg(&report);
        eprintln!(
            "timing {} advisor all on {} ...",
            anchor.display(),
            dir.display()
        );
        let advisor = measure(&cmd, false)?;
        let written = fs::read_dir(&report)?
            .filter_map(Result::ok)
            .any(|e| e.file_name().to_string_lossy().ends_with(".html"));
        let advisor_result = if written {
            "its HTML report"
        } else {
            "no report written (see its log above)"
        };
        for (tool, m, result) in [
            ("npuprof summary", &summary, "-"),
            ("npuprof advise", &advise, found.as_str()),
            ("msprof-analyze advisor all", &advisor, advisor_result),
        ] {
            println!(
                "| {tool} | {input} | {:.2} | {:.2} | {:.1} MB | {result} |",
                m.secs,
                m.cpu,
                m.max_rss_kb as f64 / 1024.0
            );
        }
        println!(
            "| msprof-analyze / advise | same | {:.0}× | {:.0}× | | |",
            advisor.secs / advise.secs.max(0.001),
            advisor.cpu / advise.cpu.max(0.001)
        );
    }
    Ok(())
}

/// Copies the directory tree `from` to `to`.
fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// The findings in advise's JSON output.
fn count_findings(measured: &Measured) -> anyhow::Result<usize> {
    let json: serde_json::Value = serde_json::from_slice(&measured.stdout)?;
    json.pointer("/findings")
        .and_then(|f| f.as_array())
        .map(Vec::len)
        .context("advise JSON has no findings array")
}
