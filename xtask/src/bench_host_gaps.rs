//! The host-gap row of `cargo xtask bench advise`: `npuprof advise` reading a multi-GB
//! trace_view.json for what the host ran during the largest device gaps, against `wc -l` on the
//! same file in the same run, with peak memory (bounded: the scan engine holds one piece and
//! one event at a time, not the trace).
//!
//! Two run directories of the real 2-rank run's rank 0 (its kernel_details.csv, whose gaps the
//! vendored trace explains): one with the vendored trace_view.json repeated to `--trace-gb` GB
//! ([`crate::bench_verify::write_repeated`]), one without any; the difference of advise's times
//! is the trace's reading.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::bench_advise::copy_run;
use crate::bench_summary::{median_of, table};
use crate::bench_verify::{Measured, one_core, write_repeated};

/// The vendored real trace whose events are repeated.
const TRACE_SAMPLE: &str = "crates/advise/tests/data/trace-view/rank0_trace_view.json";
/// The run the trace belongs to.
const RUN_SAMPLE: &str = "crates/summary/tests/data/real-2rank/rank0_ascend_pt";
/// The run's files copied into both run directories.
const FILES: [&str; 3] = [
    "step_trace_time.csv",
    "communication.json",
    "kernel_details.csv",
];

/// Measures and prints the host-gap rows: `trace_gb` GB of trace, `runs` timed runs each;
/// returns the trace and the `wc -l` CPU seconds on it.
pub fn run(
    root: &Path,
    out: &Path,
    npuprof: &Path,
    trace_gb: f64,
    runs: usize,
) -> anyhow::Result<(PathBuf, f64)> {
    let with = out.join("host_gaps/with_trace/rank0_ascend_pt");
    let without = out.join("host_gaps/without_trace/rank0_ascend_pt");
    copy_run(&root.join(RUN_SAMPLE), &with, &FILES)?;
    copy_run(&root.join(RUN_SAMPLE), &without, &FILES)?;
    let sample = fs::read(root.join(TRACE_SAMPLE))?;
    let trace = with.join("ASCEND_PROFILER_OUTPUT/trace_view.json");
    let bytes = write_repeated(&trace, &sample, (trace_gb * 1e9) as u64)?;
    println!("generated {} ({bytes} bytes)", trace.display());
    let advise = |dir: &Path| {
        one_core(
            npuprof,
            &["advise".as_ref(), dir.as_os_str(), "--json".as_ref()],
        )
    };
    let wc = median_of(
        &one_core(Path::new("wc"), &["-l".as_ref(), trace.as_os_str()]),
        runs,
        false,
    )?;
    let with_trace = median_of(&advise(&with), runs, true)?;
    let without_trace = median_of(&advise(&without), runs, true)?;
    // The same validating scan without the events' reading: what checking the JSON costs.
    let verify = median_of(
        &one_core(
            npuprof,
            &["verify".as_ref(), with.as_os_str(), "--json".as_ref()],
        ),
        runs,
        true,
    )?;
    let named = names_host_activity(&with_trace)?;
    let result = if named {
        "host activity named"
    } else {
        "NO host activity named"
    };
    let rows: Vec<(&str, &Measured, &str)> = vec![
        ("wc -l, one core", &wc, "-"),
        (
            "npuprof advise with the trace, one core",
            &with_trace,
            result,
        ),
        (
            "npuprof advise without a trace, one core",
            &without_trace,
            "-",
        ),
        (
            "npuprof verify (the same validating scan), one core",
            &verify,
            "-",
        ),
    ];
    table("trace_view.json", bytes, &rows);
    let reading = |f: fn(&Measured) -> f64| (f(&with_trace) - f(&without_trace)).max(0.0);
    println!();
    println!(
        "host-gap reading (advise with the trace minus without) / wc -l, one core: {:.2} wall, {:.2} CPU ({:.2} GB/s); peak RSS {:.1} MB with the trace vs {:.1} MB without",
        reading(|m| m.secs) / wc.secs.max(1e-6),
        reading(|m| m.cpu) / wc.cpu.max(1e-6),
        bytes as f64 / reading(|m| m.secs).max(1e-6) / 1e9,
        with_trace.max_rss_kb as f64 / 1024.0,
        without_trace.max_rss_kb as f64 / 1024.0
    );
    println!(
        "verify's validating scan / wc -l, one core: {:.2} CPU; the reading of the events beyond it: {:.2}",
        verify.cpu / wc.cpu.max(1e-6),
        (reading(|m| m.cpu) - verify.cpu).max(0.0) / wc.cpu.max(1e-6)
    );
    Ok((trace, wc.cpu))
}

/// Whether advise's JSON names what the host ran in a gap.
fn names_host_activity(measured: &Measured) -> anyhow::Result<bool> {
    let text = std::str::from_utf8(&measured.stdout).context("advise printed non-UTF-8")?;
    Ok(text.contains("host meanwhile"))
}
