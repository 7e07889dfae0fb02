//! `cargo xtask bench summary`: `npuprof summary` on a multi-million-row kernel_details.csv
//! against pandas `read_csv` + `groupby` doing the same grouping, in the same run, with
//! `npuprof verify` and `wc -l` on the same file for the streaming speed (medians of `--runs`
//! runs after a warm-up).
//!
//! The CSV (under `target/bench/summary/`, not committed; `--clean` deletes it) repeats the real
//! rows of the vendored 2-rank run (`crates/summary/tests/data/real-2rank`, 46 columns with pipe
//! metrics), so values have their real shapes (trailing TAB, doubled quotes, `N/A`). pandas reads
//! only the columns npuprof uses (name, type, core, duration, the pipe ratios) and groups by
//! `Name` and by `Type` (count and sum); the two top-kernel totals must agree. Both npuprof
//! commands are also timed on one core, and the reading alone in this process: summary's
//! columns split from every record against verify's whole pass over the file.
//!
//! Then a whole run as a real job writes it: `--ranks` ranks × prefill and decode, each run
//! directory holding a hard link to one `--rank-rows`-row kernel_details.csv; summary on one
//! core and on all cores, and verify on all cores, over the same directories.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};

use crate::bench_verify::{
    Measured, link_or_copy, measure, one_core, pandas_python, write_kernel_details,
};
use crate::build::{build_npuprof, target_dir, workspace_root};

/// Options of the summary benchmark.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Rows of the generated kernel_details.csv.
    #[arg(long, default_value_t = 5_000_000)]
    pub rows: u64,
    /// Ranks of the generated whole run (each with a prefill and a decode run directory).
    #[arg(long, default_value_t = 32)]
    pub ranks: u32,
    /// Rows of each rank's kernel_details.csv in the whole run.
    #[arg(long, default_value_t = 20_000)]
    pub rank_rows: u64,
    /// Timed runs of each command (the median is reported), after one warm-up run.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Delete the generated files and exit.
    #[arg(long)]
    pub clean: bool,
}

const SAMPLE: &str = "crates/summary/tests/data/real-2rank/rank0_ascend_pt";

/// The columns of the generated file that `npuprof summary` reads besides column 0 (see
/// npuprof-summary's `KernelColumns` and `PipeColumns`), which pandas reads too.
const COLUMNS: [&str; 10] = [
    "Name",
    "Type",
    "Accelerator Core",
    "Duration(us)",
    "aic_mac_ratio",
    "aiv_vec_ratio",
    "aic_mte2_ratio",
    "aiv_mte2_ratio",
    "aic_scalar_ratio",
    "aiv_scalar_ratio",
];

/// Groups the file `argv[1]` by name and by type, reading the columns `argv[2:]`.
const PANDAS: &str = r#"
import sys, pandas as pd
df = pd.read_csv(sys.argv[1], usecols=sys.argv[2:])
by_name = df.groupby("Name")["Duration(us)"].agg(["count", "sum"]).sort_values("sum", ascending=False)
by_type = df.groupby("Type")["Duration(us)"].agg(["count", "sum"])
print(by_name.index[0], repr(float(by_name["sum"].iloc[0])), int(by_name["count"].iloc[0]), len(by_type))
"#;

/// Runs the summary benchmark.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let root = workspace_root();
    let out = target_dir(&root).join("bench/summary");
    if args.clean {
        if out.exists() {
            fs::remove_dir_all(&out).with_context(|| format!("removing {}", out.display()))?;
        }
        println!("removed {}", out.display());
        return Ok(());
    }
    if args.rows == 0 || args.runs == 0 || args.ranks == 0 || args.rank_rows == 0 {
        bail!("--rows, --runs, --ranks and --rank-rows must be positive");
    }
    let py = pandas_python(&target_dir(&root).join("bench"))
        .map_err(|why| anyhow::anyhow!("the reference needs pandas: {why}"))?;
    let sample = root.join(SAMPLE);
    let kernel_sample = fs::read(sample.join("ASCEND_PROFILER_OUTPUT/kernel_details.csv"))?;
    let npuprof = build_npuprof(&root)?;
    let run = out.join("kernel_run_ascend_pt");
    let csv = run.join("ASCEND_PROFILER_OUTPUT/kernel_details.csv");
    fs::create_dir_all(csv.parent().context("csv dir")?)?;
    fs::copy(
        sample.join("profiler_info_0.json"),
        run.join("profiler_info_0.json"),
    )?;
    let t = Instant::now();
    let bytes = write_kernel_details(&csv, &kernel_sample, args.rows)?;
    println!(
        "generated {} ({} rows, {bytes} bytes) in {:.1}s",
        csv.display(),
        args.rows,
        t.elapsed().as_secs_f64()
    );

    let mut summary = Command::new(&npuprof);
    summary
        .arg("summary")
        .arg(&run)
        .arg("--json")
        .arg("--top")
        .arg("20");
    let ours = median_of(&summary, args.runs, false)?;
    let (name, total, count) = npuprof_top(&ours.stdout).context("npuprof JSON")?;
    let mut pandas_cmd = Command::new(&py);
    pandas_cmd.arg("-c").arg(PANDAS).arg(&csv).args(COLUMNS);
    let pandas = median_of(&pandas_cmd, args.runs, false)?;
    let mut verify = Command::new(&npuprof);
    verify.arg("verify").arg(&run).arg("--json");
    let verified = median_of(&verify, args.runs, true)?;
    let mut wc = Command::new("wc");
    wc.arg("-l").arg(&csv);
    let wc = median_of(&wc, args.runs, false)?;
    // The cost per row: both commands on one core.
    let pinned = |command: &str, more: &[&str]| {
        let mut pinned_args: Vec<&std::ffi::OsStr> =
            vec![command.as_ref(), run.as_os_str(), "--json".as_ref()];
        pinned_args.extend(more.iter().map(std::ffi::OsStr::new));
        one_core(&npuprof, &pinned_args)
    };
    let ours_one = median_of(&pinned("summary", &["--top", "20"]), args.runs, false)?;
    let verified_one = median_of(&pinned("verify", &[]), args.runs, true)?;
    let theirs = String::from_utf8_lossy(&pandas.stdout).trim().to_owned();
    let mut parts = theirs.split_whitespace();
    let (p_name, p_total, p_count) = (
        parts.next().unwrap_or_default(),
        parts
            .next()
            .and_then(|t| t.parse::<f64>().ok())
            .unwrap_or(f64::NAN),
        parts
            .next()
            .and_then(|c| c.parse::<u64>().ok())
            .unwrap_or_default(),
    );
    let agree = name == p_name && count == p_count && (total - p_total).abs() <= 1e-6 * total;
    if !agree {
        bail!("npuprof's top kernel ({name}, {total}, ×{count}) differs from pandas' ({theirs})");
    }
    let top = format!("{name}: {total:.3} µs ×{count}");
    table(
        "kernel_details.csv",
        bytes,
        &[
            ("npuprof summary", &ours, &top),
            ("pandas read_csv + groupby", &pandas, &top),
            ("npuprof verify", &verified, "-"),
            ("wc -l", &wc, "-"),
            ("npuprof summary, one core", &ours_one, "-"),
            ("npuprof verify, one core", &verified_one, "-"),
        ],
    );
    println!();
    println!(
        "npuprof summary is {:.1}× faster than pandas in wall time ({:.1}× in CPU time) and uses {:.1}× less memory (both agree on the top kernel)",
        pandas.secs / ours.secs.max(0.01),
        pandas.cpu / ours.cpu.max(0.01),
        pandas.max_rss_kb as f64 / ours.max_rss_kb.max(1) as f64
    );
    println!(
        "npuprof summary / npuprof verify on the same file: {:.2} wall, {:.2} CPU",
        ours.secs / verified.secs.max(0.01),
        ours.cpu / verified.cpu.max(0.01)
    );
    println!(
        "npuprof summary / npuprof verify on the same file, one core: {:.2} wall, {:.2} CPU",
        ours_one.secs / verified_one.secs.max(0.01),
        ours_one.cpu / verified_one.cpu.max(0.01)
    );
    reading(&csv, args.runs)?;
    whole_run(args, &out, &sample, &kernel_sample, &npuprof)?;
    println!(
        "generated files are kept in {} (delete with `cargo xtask bench summary --clean`)",
        out.display()
    );
    Ok(())
}

/// Reading alone, in this process on one thread (medians of `runs`): summary's reading of
/// its columns (every record split at them, nothing computed) against verify's whole pass.
fn reading(csv: &Path, runs: usize) -> anyhow::Result<()> {
    use npuprof_scan::csv_rows::{CsvEngine, CsvRows};
    use npuprof_scan::kernel_csv::{MAX_RECORD_BYTES, scan_kernel_details};
    let open = || fs::File::open(csv).with_context(|| format!("opening {}", csv.display()));
    let mut rows = CsvRows::new(open()?, CsvEngine::Simd, MAX_RECORD_BYTES as usize);
    let header: Vec<String> = match rows.next_record()? {
        Some(record) => record
            .iter()
            .map(|f| String::from_utf8_lossy(f).trim().to_owned())
            .collect(),
        None => bail!("{} is empty", csv.display()),
    };
    let mut picks = vec![0];
    for name in COLUMNS {
        picks.push(
            header
                .iter()
                .position(|h| h == name)
                .with_context(|| format!("no column {name}"))?,
        );
    }
    picks.sort_unstable();
    let summary_read = || -> anyhow::Result<u64> {
        let mut rows = CsvRows::new(open()?, CsvEngine::Simd, MAX_RECORD_BYTES as usize);
        rows.next_record()?;
        let (mut records, mut fields) = (0_u64, 0_usize);
        while let Some(record) = rows.next_record_columns(&picks)? {
            records += 1;
            fields += record.iter().map(<[u8]>::len).sum::<usize>();
        }
        std::hint::black_box(fields);
        Ok(records)
    };
    let verify_read = || -> anyhow::Result<u64> { Ok(scan_kernel_details(open()?, |_| {})?.rows) };
    // In turn, so that a slow spell of the machine falls on both.
    let (mut summary_secs, mut verify_secs) = (Vec::new(), Vec::new());
    let (mut summary_rows, mut verify_rows) = (0, 0);
    for _ in 0..runs {
        let t = Instant::now();
        summary_rows = summary_read()?;
        summary_secs.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        verify_rows = verify_read()?;
        verify_secs.push(t.elapsed().as_secs_f64());
    }
    let summary_secs = crate::bench_verify::median(&mut summary_secs);
    let verify_secs = crate::bench_verify::median(&mut verify_secs);
    if summary_rows != verify_rows {
        bail!("summary's reading saw {summary_rows} rows, verify's {verify_rows}");
    }
    println!();
    println!(
        "reading alone, one thread: summary's {} columns {summary_secs:.3} s, verify's whole pass {verify_secs:.3} s: {:.2}",
        picks.len(),
        summary_secs / verify_secs.max(1e-6)
    );
    Ok(())
}

/// The whole-run part: summary on one core and on all cores, and verify on all cores, over
/// `--ranks` × 2 run directories of one `--rank-rows`-row kernel_details.csv each.
fn whole_run(
    args: &Args,
    out: &Path,
    sample: &Path,
    kernel_sample: &[u8],
    npuprof: &Path,
) -> anyhow::Result<()> {
    let ranks = out.join("ranks");
    if ranks.exists() {
        fs::remove_dir_all(&ranks)?;
    }
    let rank_csv = out.join("rank_kernel_details.csv");
    let rank_bytes = write_kernel_details(&rank_csv, kernel_sample, args.rank_rows)?;
    let mut runs = 0_u64;
    for phase in ["prefill", "decode"] {
        for r in 0..args.ranks {
            let dir = ranks
                .join("prof")
                .join(phase)
                .join(format!("rank_{r}_ascend_pt"));
            fs::create_dir_all(dir.join("ASCEND_PROFILER_OUTPUT"))?;
            fs::copy(
                sample.join("profiler_info_0.json"),
                dir.join(format!("profiler_info_{r}.json")),
            )?;
            link_or_copy(
                &rank_csv,
                &dir.join("ASCEND_PROFILER_OUTPUT/kernel_details.csv"),
            )?;
            runs += 1;
        }
    }
    let bytes = rank_bytes * runs;
    let summary_args = ["summary".as_ref(), ranks.as_os_str(), "--json".as_ref()];
    let mut all_cores = Command::new(npuprof);
    all_cores.args(summary_args);
    let one = median_of(&one_core(npuprof, &summary_args), args.runs, false)?;
    let all = median_of(&all_cores, args.runs, false)?;
    let summarised = |m: &Measured| -> anyhow::Result<()> {
        let v: serde_json::Value = serde_json::from_slice(&m.stdout)?;
        let n = v.pointer("/runs").and_then(|r| r.as_array()).map(Vec::len);
        if n != Some(runs as usize) {
            bail!("npuprof summarised {n:?} run directories, expected {runs}");
        }
        Ok(())
    };
    summarised(&one)?;
    summarised(&all)?;
    let mut verify = Command::new(npuprof);
    verify.arg("verify").arg(&ranks).arg("--json");
    let verified = median_of(&verify, args.runs, true)?;
    let input = format!("whole run ({runs} × kernel_details.csv)");
    let runs_done = format!("{runs} runs");
    table(
        &input,
        bytes,
        &[
            ("npuprof summary, one core", &one, &runs_done),
            ("npuprof summary, all cores", &all, &runs_done),
            ("npuprof verify, all cores", &verified, "-"),
        ],
    );
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    println!();
    println!(
        "whole run: summary on all cores / (one core / {cores} cores): {:.2}",
        all.secs / (one.secs / cores as f64).max(0.01)
    );
    println!(
        "whole run: npuprof summary / npuprof verify, all cores: {:.2} wall, {:.2} CPU",
        all.secs / verified.secs.max(0.01),
        all.cpu / verified.cpu.max(0.01)
    );
    Ok(())
}

/// One warm-up run of `cmd`, then `runs` timed ones: the median wall and CPU times, the highest
/// peak RSS and the last output.
pub(crate) fn median_of(
    cmd: &Command,
    runs: usize,
    allow_exit_1: bool,
) -> anyhow::Result<Measured> {
    eprintln!("timing {} ...", cmd.get_program().to_string_lossy());
    measure(cmd, allow_exit_1)?;
    let all: Vec<Measured> = (0..runs)
        .map(|_| measure(cmd, allow_exit_1))
        .collect::<anyhow::Result<_>>()?;
    let mid = |f: fn(&Measured) -> f64| {
        let mut v: Vec<f64> = all.iter().map(f).collect();
        crate::bench_verify::median(&mut v)
    };
    let (secs, cpu) = (mid(|m| m.secs), mid(|m| m.cpu));
    let max_rss_kb = all.iter().map(|m| m.max_rss_kb).max().unwrap_or(0);
    let stdout = all.into_iter().last().map(|m| m.stdout).unwrap_or_default();
    Ok(Measured {
        secs,
        cpu,
        max_rss_kb,
        stdout,
    })
}

fn npuprof_top(json: &[u8]) -> Option<(String, f64, u64)> {
    let v: serde_json::Value = serde_json::from_slice(json).ok()?;
    let top = v.pointer("/runs/0/top_kernels/0")?;
    Some((
        top.get("name")?.as_str()?.to_owned(),
        top.get("total_us")?.as_f64()?,
        top.get("count")?.as_u64()?,
    ))
}

/// A Markdown table of `(tool, measured, result)` rows on `bytes` of `input`.
pub(crate) fn table(input: &str, bytes: u64, rows: &[(&str, &Measured, &str)]) {
    println!();
    println!("| tool | input | median wall s | GB/s | median CPU s | peak RSS | result |");
    println!("|---|---|---|---|---|---|---|");
    for (tool, m, result) in rows {
        println!(
            "| {tool} | {:.2} GB {input} | {:.2} | {:.2} | {:.2} | {:.1} MB | {result} |",
            bytes as f64 / 1e9,
            m.secs,
            bytes as f64 / m.secs.max(1e-6) / 1e9,
            m.cpu,
            m.max_rss_kb as f64 / 1024.0
        );
    }
}
