//! `cargo xtask bench advise`: `npuprof advise` against `npuprof summary` on the same
//! multi-million-row kernel_details.csv (the brief: advise within 2× summary's time on one
//! core, memory bounded), and against msprof-analyze's advisor when `--anchor` names its
//! executable (it takes minutes and GBs on millions of rows: `--anchor-rows` gives it a smaller
//! file of its own, reported with its size). Medians of `--runs` runs after a warm-up.
//!
//! The run directory (under `target/bench/advise/`, not committed; `--clean` deletes it) holds
//! the real rows of the vendored 2-rank run repeated (a new `Step Id` per repetition) and that
//! run's step_trace_time.csv and communication.json, so every rule has its input.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

use crate::bench_summary::{median_of, table};
use crate::bench_verify::{Measured, one_core, write_kernel_details};
use crate::build::{build_npuprof, target_dir, workspace_root};

/// Options of the advise benchmark.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Rows of the generated kernel_details.csv.
    #[arg(long, default_value_t = 2_000_000)]
    pub rows: u64,
    /// Timed runs of each command (the median is reported), after one warm-up run.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// msprof-analyze's executable, to time its advisor (`advisor all -d RUN`) too.
    #[arg(long, value_name = "PATH")]
    pub anchor: Option<PathBuf>,
    /// Rows of the anchor's own kernel_details.csv (default: the same file as npuprof's).
    #[arg(long, value_name = "N")]
    pub anchor_rows: Option<u64>,
    /// Size of the trace_view.json of the host-gap rows, in GB (10^9 bytes; 0: no such rows).
    #[arg(long, default_value_t = 2.0)]
    pub trace_gb: f64,
    /// Delete the generated files and exit.
    #[arg(long)]
    pub clean: bool,
}

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
    let mut rows: Vec<(&str, &Measured, &str)> = vec![
        ("npuprof advise, one core", &advise_one, &found),
        ("npuprof summary, one core", &summary_one, "-"),
        ("npuprof advise, all cores", &advise_all, &found),
        ("npuprof summary, all cores", &summary_all, "-"),
    ];
    let anchor = match &args.anchor {
        Some(program) => Some(time_anchor(
            program,
            args,
            &out,
            &sample,
            &kernel_sample,
            &run,
        )?),
        None => None,
    };
    let same_input = anchor.as_ref().is_some_and(|a| a.2 == bytes);
    if let Some((measured, label, _)) = anchor.as_ref().filter(|_| same_input) {
        rows.push((label.as_str(), measured, "-"));
    }
    table("kernel_details.csv", bytes, &rows);
    if let Some((measured, label, anchor_bytes)) = anchor.as_ref().filter(|_| !same_input) {
        table(
            "kernel_details.csv",
            *anchor_bytes,
            &[(label.as_str(), measured, "-")],
        );
    }
    println!();
    println!(
        "npuprof advise / npuprof summary, one core: {:.2} wall, {:.2} CPU; peak RSS {:.1} MB vs {:.1} MB",
        advise_one.secs / summary_one.secs.max(0.001),
        advise_one.cpu / summary_one.cpu.max(0.001),
        advise_one.max_rss_kb as f64 / 1024.0,
        summary_one.max_rss_kb as f64 / 1024.0
    );
    if let Some((measured, _, _)) = anchor.as_ref().filter(|_| same_input) {
        println!(
            "msprof-analyze advisor / npuprof advise (one core): {:.0}× the wall time",
            measured.secs / advise_one.secs.max(0.001)
        );
    }
    if args.trace_gb > 0.0 {
        crate::bench_host_gaps::run(&root, &out, &npuprof, args.trace_gb, args.runs)?;
    }
    println!(
        "generated files are kept in {} (delete with `cargo xtask bench advise --clean`)",
        out.display()
    );
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

/// msprof-analyze's advisor on `run` (or on a run of `--anchor-rows` rows), once after a
/// warm-up; its times, the table label and the size of its kernel_details.csv.
fn time_anchor(
    program: &Path,
    args: &Args,
    out: &Path,
    sample: &Path,
    kernel_sample: &[u8],
    run: &Path,
) -> anyhow::Result<(Measured, String, u64)> {
    let (dir, rows) = match args.anchor_rows {
        Some(rows) => {
            let dir = out.join("anchor").join("rank0_ascend_pt");
            make_run(&dir, sample, kernel_sample, rows)?;
            (dir, rows)
        }
        None => (run.to_path_buf(), args.rows),
    };
    let bytes = fs::metadata(dir.join("ASCEND_PROFILER_OUTPUT/kernel_details.csv"))?.len();
    let report = out.join("anchor-report");
    fs::create_dir_all(&report)?;
    let mut cmd = Command::new(program);
    cmd.args(["advisor", "all", "-d"])
        .arg(&dir)
        .arg("-o")
        .arg(&report);
    let measured = median_of(&cmd, 1, true)?;
    Ok((
        measured,
        format!("msprof-analyze advisor all ({rows} rows)"),
        bytes,
    ))
}
