//! `cargo xtask bench breakdown`: `npuprof breakdown` against `npuprof verify` (the same trace
//! scanner, without the event parsing) on a generated multi-step run, one core, in the same run.
//!
//! The run directory (under `target/bench/breakdown/`, not committed; `--clean` deletes it)
//! holds the vendored AlexNet run's rank-0 `trace_view.json` repeated `--steps` times (each
//! copy's timestamps, launch-flow ids, fwdbwd ids and `ProfilerStep#N` moved on by one step of
//! 200 ms, so the module tree is the one-step tree with every total × steps) and, in a second
//! run directory, the real PP step's `kernel_details.csv` repeated with a new `Step Id` per
//! copy (layer mode).

use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};

use crate::bench_summary::{median_of, table};
use crate::bench_verify::{Measured, one_core};
use crate::build::{build_npuprof, target_dir, workspace_root};

/// Options of the breakdown benchmark.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Steps of the generated trace (2.2 MB each) and kernel table (2,463 rows each).
    #[arg(long, default_value_t = 120)]
    pub steps: u64,
    /// Timed runs of each command (the median is reported), after one warm-up run.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Delete the generated files and exit.
    #[arg(long)]
    pub clean: bool,
}

const TRACE: &str = "crates/verify/tests/data/runs/msinsight-text-level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json";
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
        "generated files are kept in {} (delete with `cargo xtask bench breakdown --clean`)",
        out.display()
    );
    Ok(())
}
