//! `cargo xtask bench lint`: `npuprof lint` on one generated Python file with many profiled
//! windows (default 2000, about 0.8 MB), timed against Python's own `ast.parse` of the same
//! file in the same run, and against a file with a tenth of the windows: lint is linear when
//! ten times the windows take about ten times as long.
//!
//! The file (under `target/bench/lint/`) mixes the shapes lint reads: module-level windows,
//! windows in functions reached through a dispatch table after a warm-up, `start()`/`stop()`
//! windows that do not close, and context managers that never step their profiler.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};

use crate::build::{bench_npuprof, target_dir, workspace_root};

/// Options of the lint benchmark.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Profiled windows in the generated file.
    #[arg(long, default_value_t = 2000)]
    pub windows: usize,
    /// Timed repetitions of each command (the median is reported).
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    /// Use the existing release binary instead of building it.
    #[arg(long)]
    pub no_build: bool,
}

/// Runs the lint benchmark.
pub fn run(args: &Args) -> anyhow::Result<()> {
    ensure!(args.reps > 0, "--reps must be at least 1");
    ensure!(args.windows >= 40, "--windows must be at least 40");
    let root = workspace_root();
    let dir = target_dir(&root).join("bench/lint");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let big = dir.join("windows_full.py");
    let small = dir.join("windows_tenth.py");
    std::fs::write(&big, generate(args.windows))?;
    std::fs::write(&small, generate(args.windows / 10))?;
    let npuprof = bench_npuprof(&root, args.no_build)?;

    // Sanity: lint finds the generated problems (exit 1: error findings).
    let out = Command::new(&npuprof)
        .arg("lint")
        .arg(&big)
        .arg("--json")
        .output()?;
    ensure!(
        out.status.code() == Some(1),
        "npuprof lint exited with {}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let json = String::from_utf8_lossy(&out.stdout);
    let findings = json.matches("\"code\":").count();
    ensure!(findings > 0, "no findings on the generated file");

    let mut lint_big = Command::new(&npuprof);
    lint_big.arg("lint").arg(&big);
    let mut lint_small = Command::new(&npuprof);
    lint_small.arg("lint").arg(&small);
    let mut python = Command::new("python3");
    python
        .args(["-c", "import ast, sys; ast.parse(open(sys.argv[1]).read())"])
        .arg(&big);
    let python_ok = python.status().is_ok_and(|s| s.success());

    time(&mut lint_big, true)?;
    time(&mut lint_small, true)?;
    let (mut big_times, mut small_times, mut python_times) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..args.reps {
        big_times.push(time(&mut lint_big, true)?);
        small_times.push(time(&mut lint_small, true)?);
        if python_ok {
            python_times.push(time(&mut python, false)?);
        }
    }
    let big_median = median(&mut big_times);
    let small_median = median(&mut small_times);
    println!(
        "file: {} ({} windows, {} KB, {findings} findings)",
        big.display(),
        args.windows,
        size_kb(&big)
    );
    println!(
        "repetitions: {} (median reported; one warm-up run each)",
        args.reps
    );
    println!(
        "npuprof lint, {:5} windows     : {:8.1} ms",
        args.windows,
        ms(big_median)
    );
    println!(
        "npuprof lint, {:5} windows     : {:8.1} ms",
        args.windows / 10,
        ms(small_median)
    );
    println!(
        "ratio 10x windows / 1x         : {:8.2} (linear: about 10; quadratic: about 100)",
        big_median.as_secs_f64() / small_median.as_secs_f64()
    );
    if python_ok {
        let python_median = median(&mut python_times);
        println!(
            "python3 ast.parse, same file   : {:8.1} ms",
            ms(python_median)
        );
        println!(
            "ratio npuprof lint / ast.parse : {:8.2}",
            big_median.as_secs_f64() / python_median.as_secs_f64()
        );
    } else {
        println!("python3 unavailable: the ast.parse reference is skipped");
    }
    Ok(())
}

fn size_kb(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len() / 1024)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort_unstable();
    times[times.len() / 2]
}

/// Times one run; lint exits 1 on error findings, which the generated file has.
fn time(cmd: &mut Command, findings_expected: bool) -> anyhow::Result<Duration> {
    let start = Instant::now();
    let status = cmd.stdout(Stdio::null()).stderr(Stdio::null()).status()?;
    let elapsed = start.elapsed();
    let expected = if findings_expected { Some(1) } else { Some(0) };
    if status.code() != expected {
        bail!("{cmd:?} exited with {status}");
    }
    Ok(elapsed)
}

const HEADER: &str = "import os
from contextlib import contextmanager

import torch_npu

N = 8
CONFIG = torch_npu.profiler._ExperimentalConfig(
    profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
    aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
)


def model(x):
    return x

";

/// The profile call every window uses, with its output directory `i`.
fn profile(i: usize) -> String {
    format!(
        "torch_npu.profiler.profile(experimental_config=CONFIG, schedule=torch_npu.profiler.schedule(wait=0, warmup=1, active=N, repeat=1), on_trace_ready=torch_npu.profiler.tensorboard_trace_handler(\"./prof/{i}\"))"
    )
}

/// A Python file with `windows` windows of four shapes, and a `main()` that warms up and
/// dispatches to the functions through a table.
fn generate(windows: usize) -> String {
    let mut out = String::from(HEADER);
    let mut table = Vec::new();
    let mut direct = Vec::new();
    for i in 0..windows {
        let p = profile(i);
        match i % 4 {
            0 => {
                let _ = writeln!(
                    out,
                    "with {p} as prof_{i}:\n    for _ in range(N + 2):\n        model({i})\n        prof_{i}.step()\n"
                );
            }
            1 => {
                let _ = writeln!(
                    out,
                    "def measure_{i}(net, x):\n    with {p} as prof:\n        for _ in range(N + 2):\n            net(x)\n            prof.step()\n\n"
                );
                table.push(format!("    \"m{i}\": measure_{i},\n"));
            }
            2 => {
                let _ = writeln!(
                    out,
                    "def short_{i}(net, x):\n    prof = {p}\n    prof.start()\n    for _ in range(N):\n        net(x)\n        prof.step()\n    prof.stop()\n\n"
                );
                direct.push(format!("    short_{i}(net, x)\n"));
            }
            _ => {
                let _ = writeln!(
                    out,
                    "@contextmanager\ndef profiled_{i}():\n    with {p}:\n        yield\n\n"
                );
            }
        }
    }
    out.push_str("TABLE = {\n");
    out.extend(table);
    out.push_str("}\n\n\ndef main(net, x):\n    net(x)\n    for name in TABLE:\n        TABLE[name](net, x)\n");
    out.extend(direct);
    out.push_str("\n\nif __name__ == \"__main__\":\n    main(model, 1)\n");
    out
}
