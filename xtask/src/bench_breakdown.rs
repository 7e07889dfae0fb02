//! `cargo xtask bench breakdown`: `npuprof breakdown` against `npuprof verify` (the same trace
//! scanner, without the event parsing) on a generated multi-step run, one core, in the same run;
//! then, when msprof-analyze is installed (on PATH, or `--anchor PATH`; otherwise skipped, saying
//! why), `npuprof breakdown BASE NEW` (its compare of two runs) against msprof-analyze's
//! `compare` (whose `ModuleCompareStatistic` sheet is the module comparison) on the same two
//! runs, one core too. npuprof's times are medians of `--runs` after a warm-up; msprof-analyze
//! (minutes) is run once.
//!
//! The run directory (under `target/bench/breakdown/`, not committed; `--clean` deletes it)
//! holds the vendored AlexNet run's rank-0 `profiler_info_0.json` and `trace_view.json`, the
//! trace repeated `--steps` times (each copy's timestamps, launch-flow ids, fwdbwd ids and
//! `ProfilerStep#N` moved on by one step of 200 ms, so the module tree is the one-step tree with
//! every total × steps); the base run of the compare is a second run directory with the same two
//! files (the trace hard-linked). A third run directory holds the real PP step's
//! `kernel_details.csv` repeated with a new `Step Id` per copy (layer mode).

use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, bail};

use crate::bench_summary::{median_of, table};
use crate::bench_verify::{Measured, measure_any, one_core};
use crate::build::{build_npuprof, target_dir, workspace_root};

/// Options of the breakdown benchmark.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Steps of the generated trace (2.2 MB each) and kernel table (2,463 rows each).
    #[arg(long, default_value_t = 120)]
    pub steps: u64,
    /// Timed runs of each npuprof command (the median is reported), after one warm-up run.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Which msprof-analyze to time, if any.
    #[command(flatten)]
    pub anchor: crate::anchor::Options,
    /// Also time the fastest validating JSON readers on crates.io on the generated trace
    /// (`bench/json-parsers`, as `cargo xtask bench advise --parsers` does: `xtask/src/json_parsers.rs`).
    #[arg(long)]
    pub parsers: bool,
    /// Delete the generated files and exit.
    #[arg(long)]
    pub clean: bool,
}

const TRACE: &str = "crates/verify/tests/data/runs/msinsight-text-level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json";
/// The same run's profiler_info (its rank, and the profiler config msprof-analyze reads).
const PROFILER_INFO: &str =
    "crates/verify/tests/data/runs/msinsight-text-level1/rank0_ascend_pt/profiler_info_0.json";
const KERNELS: &str = "crates/verify/tests/data/Ascend-msinsight/test__st__level2__rank_0_ascend_pt__ASCEND_PROFILER_OUTPUT__kernel_details.csv";

/// One step, in µs.
const STEP_US: u64 = 200_000;

/// `ts` (µs as a decimal string) moved on by `shift` µs, every digit kept.
fn shifted(ts: &str, shift: u64) -> Option<String> {
    let (int, frac) = ts.split_once('.').unwrap_or((ts, ""));
    let int: u64 = int.parse().ok()?;
    Some(if frac.is_empty() {
        (int + shift).to_string()
    } else {
        format!("{}.{frac}", int + shift)
    })
}

/// An event with its members in the order written (serde_json's map sorts its keys; the
/// readers timed here read real files, where torch_npu writes `ph` first or last).
#[derive(Clone)]
struct Event(Vec<(String, serde_json::Value)>);

impl<'de> serde::Deserialize<'de> for Event {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> serde::de::Visitor<'de> for Members {
            type Value = Event;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an event object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Event, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry()? {
                    members.push(member);
                }
                Ok(Event(members))
            }
        }
        d.deserialize_map(Members)
    }
}

impl serde::Serialize for Event {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (key, value) in &self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl Event {
    fn get(&self, key: &str) -> Option<&serde_json::Value> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    fn set(&mut self, key: &str, value: serde_json::Value) {
        if let Some((_, v)) = self.0.iter_mut().find(|(k, _)| k == key) {
            *v = value;
        }
    }
}

/// The trace of `steps` copies of the sample's events (metadata once), written to `path`.
fn write_trace(path: &Path, sample: &[u8], steps: u64) -> anyhow::Result<u64> {
    let events: Vec<Event> = serde_json::from_slice(sample).context("the sample")?;
    let (meta, rest): (Vec<_>, Vec<_>) = events
        .into_iter()
        .partition(|e| e.get("ph").and_then(|p| p.as_str()) == Some("M"));
    let mut out = std::io::BufWriter::new(fs::File::create(path)?);
    out.write_all(b"[")?;
    let mut first = true;
    let mut put = |out: &mut std::io::BufWriter<fs::File>, e: &Event| {
        let text = serde_json::to_string(e)?;
        if !first {
            out.write_all(b",\n")?;
        }
        first = false;
        out.write_all(text.as_bytes())?;
        anyhow::Ok(())
    };
    for e in &meta {
        put(&mut out, e)?;
    }
    let text = |e: &Event, key: &str| e.get(key).and_then(|v| v.as_str()).map(str::to_owned);
    for copy in 0..steps {
        let shift = STEP_US * copy;
        for e in &rest {
            let mut e = e.clone();
            if let Some(ts) = text(&e, "ts").and_then(|t| shifted(&t, shift)) {
                e.set("ts", ts.into());
            }
            let id = e.get("id").and_then(serde_json::Value::as_u64);
            match (text(&e, "cat").as_deref(), id) {
                (Some("async_npu"), Some(id)) => e.set("id", (id + shift * 1000).into()),
                (Some("fwdbwd"), Some(id)) => e.set("id", (id + 100_000 * copy).into()),
                _ => {}
            }
            if text(&e, "name").is_some_and(|n| n.starts_with("ProfilerStep#")) {
                e.set("name", format!("ProfilerStep#{}", 50 + copy).into());
            }
            put(&mut out, &e)?;
        }
    }
    out.write_all(b"]")?;
    out.flush()?;
    Ok(fs::metadata(path)?.len())
}

/// The kernel table of `steps` copies of the sample's rows, each with its own `Step Id`.
fn write_kernels(path: &Path, sample: &str, steps: u64) -> anyhow::Result<u64> {
    let mut lines = sample.lines();
    let header = lines.next().context("a header")?;
    let rows: Vec<&str> = lines.filter(|l| !l.is_empty()).collect();
    let mut out = std::io::BufWriter::new(fs::File::create(path)?);
    writeln!(out, "{header}")?;
    let mut line = String::new();
    for step in 0..steps {
        for row in &rows {
            let (_, rest) = row.split_once(',').context("a Step Id column")?;
            line.clear();
            let _ = write!(line, "{},{rest}", 13 + step);
            writeln!(out, "{line}")?;
        }
    }
    out.flush()?;
    Ok(fs::metadata(path)?.len())
}

/// Runs the breakdown benchmark.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let root = workspace_root();
    let out = target_dir(&root).join("bench/breakdown");
    if args.clean {
        if out.exists() {
            fs::remove_dir_all(&out).with_context(|| format!("removing {}", out.display()))?;
        }
        println!("removed {}", out.display());
        return Ok(());
    }
    if args.steps == 0 || args.runs == 0 {
        bail!("--steps and --runs must be positive");
    }
    let npuprof = build_npuprof(&root)?;
    let modules = out.join("modules/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT");
    let layers = out.join("layers/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT");
    fs::create_dir_all(&modules)?;
    fs::create_dir_all(&layers)?;
    let info = root.join(PROFILER_INFO);
    fs::copy(
        &info,
        out.join("modules/rank0_ascend_pt/profiler_info_0.json"),
    )?;
    let trace_bytes = write_trace(
        &modules.join("trace_view.json"),
        &fs::read(root.join(TRACE))?,
        args.steps,
    )?;
    let csv_bytes = write_kernels(
        &layers.join("kernel_details.csv"),
        &fs::read_to_string(root.join(KERNELS))?,
        args.steps,
    )?;
    println!(
        "generated {} ({} steps: trace {trace_bytes} bytes, kernel table {csv_bytes} bytes)",
        out.display(),
        args.steps
    );
    let timed = |command: &str, dir: &Path, allow_exit_1: bool| -> anyhow::Result<Measured> {
        let cmd: Command = one_core(
            &npuprof,
            &[command.as_ref(), dir.as_os_str(), "--json".as_ref()],
        );
        median_of(&cmd, args.runs, allow_exit_1)
    };
    let (modules_dir, layers_dir) = (out.join("modules"), out.join("layers"));
    let trace = modules.join("trace_view.json");
    let wc = median_of(
        &one_core(Path::new("wc"), &["-l".as_ref(), trace.as_os_str()]),
        args.runs,
        false,
    )?;
    let breakdown = timed("breakdown", &modules_dir, false)?;
    let verify = timed("verify", &modules_dir, true)?;
    let layer_mode = timed("breakdown", &layers_dir, false)?;
    let tree: serde_json::Value = serde_json::from_slice(&breakdown.stdout)?;
    let ddp = tree
        .pointer("/runs/0/modules/0")
        .map(|m| format!("{} {:.1} µs/step", m["name"], m["step_median_us"]))
        .unwrap_or_default();
    let layered: serde_json::Value = serde_json::from_slice(&layer_mode.stdout)?;
    let count = format!(
        "{} layers × {} steps",
        layered["runs"][0]["layers"]["count"], layered["runs"][0]["layers"]["steps"]
    );
    table(
        "trace_view.json",
        trace_bytes,
        &[
            ("wc -l, one core", &wc, "-"),
            ("npuprof breakdown (exact), one core", &breakdown, &ddp),
            ("npuprof verify (its scan), one core", &verify, "-"),
        ],
    );
    table(
        "kernel_details.csv",
        csv_bytes,
        &[("npuprof breakdown (layers), one core", &layer_mode, &count)],
    );
    println!();
    println!(
        "breakdown / verify on the trace, one core: {:.2} wall, {:.2} CPU",
        breakdown.secs / verify.secs.max(0.001),
        breakdown.cpu / verify.cpu.max(0.001)
    );
    println!(
        "breakdown (exact) / wc -l, one core: {:.2} CPU; verify / wc -l: {:.2} CPU",
        breakdown.cpu / wc.cpu.max(1e-6),
        verify.cpu / wc.cpu.max(1e-6)
    );
    if args.parsers {
        crate::json_parsers::run(&root, &(trace, wc.cpu), args.runs)?;
    }
    match args.anchor.find() {
        Ok(anchor) => against_compare(&npuprof, &anchor, args.runs, &out, &info, trace_bytes)?,
        Err(why) => println!("\nmsprof-analyze compare: skipped ({why})"),
    }
    println!(
        "generated files are kept in {} (delete with `cargo xtask bench breakdown --clean`)",
        out.display()
    );
    Ok(())
}

/// `npuprof breakdown BASE NEW --json` (medians of `runs` after a warm-up) and msprof-analyze's
/// `compare -d NEW -bp BASE -o OUT` (once, after npuprof: the traces are in the page cache by
/// then) on the generated run (`<out>/modules`, the new run) and a base run of the same trace,
/// both pinned to one core.
fn against_compare(
    npuprof: &Path,
    anchor: &Path,
    runs: usize,
    out: &Path,
    info: &Path,
    trace_bytes: u64,
) -> anyhow::Result<()> {
    let new = out.join("modules");
    let base = out.join("base");
    let rank = Path::new("rank0_ascend_pt");
    let output = base.join(rank).join("ASCEND_PROFILER_OUTPUT");
    fs::create_dir_all(&output)?;
    fs::copy(info, base.join(rank).join("profiler_info_0.json"))?;
    // The same trace under a second name: a hard link, so no second copy of it is written; a
    // copy where the file system has no hard links.
    let (from, to) = (
        new.join(rank)
            .join("ASCEND_PROFILER_OUTPUT/trace_view.json"),
        output.join("trace_view.json"),
    );
    if to.exists() {
        fs::remove_file(&to)?;
    }
    if fs::hard_link(&from, &to).is_err() {
        fs::copy(&from, &to).with_context(|| format!("copying {}", from.display()))?;
    }
    let compare = median_of(
        &one_core(
            npuprof,
            &[
                "breakdown".as_ref(),
                base.as_os_str(),
                new.as_os_str(),
                "--json".as_ref(),
            ],
        ),
        runs,
        false,
    )?;
    let waterfall: serde_json::Value = serde_json::from_slice(&compare.stdout)?;
    let pair = &waterfall["pairs"][0];
    let compared = format!(
        "{} nodes, {:.2} → {:.2} ms/step",
        pair["rows"].as_array().map_or(0, Vec::len),
        pair["base_us"].as_f64().unwrap_or(f64::NAN) / 1000.0,
        pair["new_us"].as_f64().unwrap_or(f64::NAN) / 1000.0
    );
    // msprof-analyze writes its xlsx (named by the time) into OUT: a fresh OUT, so that an xlsx
    // found there is this run's. Its log (stdout and stderr) is kept beside it.
    let report = out.join("anchor-compare");
    if report.exists() {
        fs::remove_dir_all(&report)?;
    }
    fs::create_dir_all(&report)?;
    let cmd = one_core(
        anchor,
        &[
            "compare".as_ref(),
            "-d".as_ref(),
            new.join(rank).as_os_str(),
            "-bp".as_ref(),
            base.join(rank).as_os_str(),
            "-o".as_ref(),
            report.as_os_str(),
        ],
    );
    eprintln!(
        "timing {} compare on {} against {} (minutes) ...",
        anchor.display(),
        new.display(),
        base.display()
    );
    let (msprof, status, stderr) = measure_any(&cmd, Stdio::piped())?;
    let log = out.join("anchor-compare.log");
    fs::write(&log, [msprof.stdout.as_slice(), &stderr].concat())?;
    let written = fs::read_dir(&report)?
        .filter_map(Result::ok)
        .any(|e| e.file_name().to_string_lossy().ends_with(".xlsx"));
    // The xlsx is a zip whose sheet names are compressed: without a zip reader here, its
    // `ModuleCompareStatistic` sheet is not checked, only that the xlsx was written. On a
    // failure the result cell says why in msprof-analyze's last line (a `|` in it would split
    // the table's cell).
    let last_line = |bytes: &[u8]| {
        String::from_utf8_lossy(bytes)
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| l.trim().replace('|', "/"))
    };
    let failed = !status.success() || !written;
    let result = if failed {
        let why = last_line(&stderr)
            .or_else(|| last_line(&msprof.stdout))
            .unwrap_or_else(|| "no output".to_owned());
        let what = if status.success() {
            "no xlsx written"
        } else {
            "failed"
        };
        format!("{what} ({status}): {why}")
    } else {
        "its xlsx written (sheets not read)".to_owned()
    };
    table(
        "trace_view.json, base and new",
        2 * trace_bytes,
        &[
            ("npuprof breakdown BASE NEW, one core", &compare, &compared),
            ("msprof-analyze compare, one core", &msprof, &result),
        ],
    );
    println!();
    if failed {
        println!(
            "msprof-analyze compare failed: no ratio (its log: {})",
            log.display()
        );
    } else {
        println!(
            "msprof-analyze compare / npuprof breakdown BASE NEW: {:.0}× wall, {:.0}× CPU, {:.0}× memory (its log: {})",
            msprof.secs / compare.secs.max(0.001),
            msprof.cpu / compare.cpu.max(0.001),
            msprof.max_rss_kb as f64 / compare.max_rss_kb.max(1) as f64,
            log.display()
        );
    }
    Ok(())
}
