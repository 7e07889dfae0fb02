//! `cargo xtask bench verify`: generate GB-scale torch_npu outputs from the real samples and
//! measure `npuprof verify` against Python's json and csv modules in the same run.
//!
//! Generated under `target/bench/verify/` (not committed; `--clean` deletes it):
//! - `trace_run_ascend_pt/`: a trace_view.json of `--trace-gb` GB made of the real sample's
//!   host events, then its device events appended the way torch_npu appends them (`},{`), so the
//!   events have the real shapes (string `ts`, 64-bit flow ids, args objects, `Ascend Hardware`
//!   and `CANN` process_name metadata);
//! - its broken variants: unterminated after the host phase, cut mid-event, closed with `},]`;
//! - `kernel_run_ascend_pt/`: a kernel_details.csv of `--rows` rows (the real 47-column header and
//!   the real rows, cycled, with the trailing TAB, doubled quotes and `N/A` as in the sample);
//! - `py_trace_run_ascend_pt/`: a smaller complete trace (`--python-trace-gb`) on which both
//!   npuprof and `json.load` run, since `json.load` needs about 12× the file size in memory.
//!
//! Wall time and peak RSS come from `/usr/bin/time -f "%e %M"` when it exists, else from a
//! Python `resource.getrusage(RUSAGE_CHILDREN)` wrapper.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, bail};
use npuprof_verify::trace_scan::{TraceScanner, TraceState};

use crate::build::{build_npuprof, target_dir, workspace_root};

/// Options of the verify benchmark.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Size of the generated trace_view.json, in GB (10^9 bytes).
    #[arg(long, default_value_t = 2.0)]
    pub trace_gb: f64,
    /// Rows of the generated kernel_details.csv.
    #[arg(long, default_value_t = 5_000_000)]
    pub rows: u64,
    /// Size of the trace both npuprof and Python's json.load read, in GB.
    #[arg(long, default_value_t = 0.5)]
    pub python_trace_gb: f64,
    /// Delete the generated files and exit.
    #[arg(long)]
    pub clean: bool,
    /// Only time the in-process trace scanner on the already generated trace (for profiling).
    #[arg(long)]
    pub scan_only: bool,
}

fn samples(root: &Path) -> PathBuf {
    root.join("../shared/samples")
}

const TRACE_SAMPLE: &str =
    "Ascend-mstt/profiler__msprof_analyze__test__ut__advisor__timeline_advice__trace_view.json";
const KERNEL_SAMPLE: &str = "Ascend-msinsight/test__st__level2__rank_0_ascend_pt__ASCEND_PROFILER_OUTPUT__kernel_details.csv";
const INFO_SAMPLE: &str =
    "Ascend-msinsight/test__st__level2__rank_0_ascend_pt__profiler_info_0.json";

/// Runs the verify benchmark.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let root = workspace_root();
    let out = target_dir(&root).join("bench/verify");
    if args.clean {
        if out.exists() {
            fs::remove_dir_all(&out).with_context(|| format!("removing {}", out.display()))?;
        }
        println!("removed {}", out.display());
        return Ok(());
    }
    if args.trace_gb <= 0.0 || args.python_trace_gb <= 0.0 || args.rows == 0 {
        bail!("--trace-gb, --python-trace-gb and --rows must be positive");
    }
    if args.scan_only {
        return time_scanner(
            &out.join("trace_run_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json"),
        );
    }
    let samples = samples(&root);
    let trace_sample = fs::read(samples.join(TRACE_SAMPLE))
        .with_context(|| format!("reading {}", samples.join(TRACE_SAMPLE).display()))?;
    let kernel_sample = fs::read(samples.join(KERNEL_SAMPLE))?;
    let info = fs::read(samples.join(INFO_SAMPLE))?;

    let npuprof = build_npuprof(&root)?;

    fs::create_dir_all(&out)?;
    let trace_bytes = (args.trace_gb * 1e9) as u64;
    let py_bytes = (args.python_trace_gb * 1e9).min(args.trace_gb * 1e9) as u64;

    let big = run_dir(&out, "trace_run_ascend_pt", &info)?;
    let big_trace = big.join("ASCEND_PROFILER_OUTPUT/trace_view.json");
    let t = Instant::now();
    let layout = write_trace(&big_trace, &trace_sample, trace_bytes)?;
    println!(
        "generated {} ({} bytes) in {:.1}s",
        big_trace.display(),
        layout.len,
        t.elapsed().as_secs_f64()
    );
    let variants = write_variants(&out, &info, &big_trace, &layout)?;

    let py = run_dir(&out, "py_trace_run_ascend_pt", &info)?;
    let py_trace = py.join("ASCEND_PROFILER_OUTPUT/trace_view.json");
    write_trace(&py_trace, &trace_sample, py_bytes)?;

    let kernels = run_dir(&out, "kernel_run_ascend_pt", &info)?;
    let kernel_csv = kernels.join("ASCEND_PROFILER_OUTPUT/kernel_details.csv");
    let t = Instant::now();
    let kernel_len = write_kernel_details(&kernel_csv, &kernel_sample, args.rows)?;
    println!(
        "generated {} ({} rows, {kernel_len} bytes) in {:.1}s",
        kernel_csv.display(),
        args.rows,
        t.elapsed().as_secs_f64()
    );

    time_scanner(&big_trace)?;

    let mut rows: Vec<Row> = Vec::new();
    let verify = |dir: &Path| {
        let mut c = Command::new(&npuprof);
        c.arg("verify").arg(dir).arg("--json");
        c
    };
    let mut check_state =
        |label: &str, dir: &Path, want: &str, file: &Path| -> anyhow::Result<()> {
            let m = measure(&verify(dir), true)?;
            let state = trace_state(&m.stdout);
            if state.as_deref() != Some(want) {
                bail!("{label}: npuprof reported trace state {state:?}, expected {want}");
            }
            rows.push(Row::new(
                label,
                file,
                "npuprof verify",
                &m,
                Some(state.unwrap_or_default()),
            ));
            Ok(())
        };
    check_state("trace (valid)", &big, "complete", &big_trace)?;
    for (label, dir, want) in &variants {
        let file = dir.join("ASCEND_PROFILER_OUTPUT/trace_view.json");
        check_state(label, dir, want, &file)?;
    }
    check_state("trace for python (valid)", &py, "complete", &py_trace)?;
    let py_json = measure(
        &python(&format!(
            "import json; json.load(open({:?}))",
            py_trace.display().to_string()
        )),
        false,
    )?;
    rows.push(Row::new(
        "trace for python (valid)",
        &py_trace,
        "python3 json.load",
        &py_json,
        None,
    ));

    let m = measure(&verify(&kernels), true)?;
    let rows_seen = kernel_rows(&m.stdout);
    if rows_seen != Some(args.rows) {
        bail!(
            "npuprof counted {rows_seen:?} kernel rows, expected {}",
            args.rows
        );
    }
    rows.push(Row::new(
        "kernel_details.csv",
        &kernel_csv,
        "npuprof verify",
        &m,
        Some(format!("{} rows", args.rows)),
    ));
    let py_csv = measure(
        &python(&format!(
            "import csv,sys; print(sum(1 for _ in csv.reader(open({:?}, newline=''))))",
            kernel_csv.display().to_string()
        )),
        false,
    )?;
    let py_count = String::from_utf8_lossy(&py_csv.stdout).trim().to_owned();
    rows.push(Row::new(
        "kernel_details.csv",
        &kernel_csv,
        "python3 csv",
        &py_csv,
        Some(format!("{py_count} lines")),
    ));

    print_table(&rows);
    print_ratios(&rows);
    println!(
        "generated files are kept in {} (delete with `cargo xtask bench verify --clean`)",
        out.display()
    );
    Ok(())
}

/// Times the in-process scanner (one thread) on `trace`.
fn time_scanner(trace: &Path) -> anyhow::Result<()> {
    let t = Instant::now();
    let scan = TraceScanner::scan_reader(
        File::open(trace).with_context(|| format!("opening {}", trace.display()))?,
        |_| {},
    )?;
    let secs = t.elapsed().as_secs_f64();
    if scan.state != TraceState::Complete {
        bail!("generated trace scanned as {:?}", scan.state);
    }
    println!(
        "scanner (library, one thread): {} bytes, {} events in {secs:.2}s = {:.2} GB/s",
        scan.bytes,
        scan.events,
        scan.bytes as f64 / secs / 1e9
    );
    Ok(())
}

fn run_dir(out: &Path, name: &str, info: &[u8]) -> anyhow::Result<PathBuf> {
    let dir = out.join(name);
    fs::create_dir_all(dir.join("ASCEND_PROFILER_OUTPUT"))?;
    fs::write(dir.join("profiler_info_0.json"), info)?;
    Ok(dir)
}

/// Byte positions of a generated trace.
struct TraceLayout {
    /// Total length.
    len: u64,
    /// Offset of the `,` before the device events.
    device_append: u64,
}

/// Writes a trace of about `target` bytes: host events repeated, then device events appended.
fn write_trace(path: &Path, sample: &[u8], target: u64) -> anyhow::Result<TraceLayout> {
    let needle = br#",{"name": "process_name", "pid": 800"#;
    let append = sample
        .windows(needle.len())
        .position(|w| w == needle)
        .context("the trace sample has no device part")?;
    let host = &sample[1..append];
    let device = &sample[append + 1..sample.len() - 1];
    let host_share = target * host.len() as u64 / (host.len() + device.len()) as u64;
    let mut w = BufWriter::with_capacity(8 << 20, File::create(path)?);
    let mut len = 0u64;
    let put = |w: &mut BufWriter<File>, len: &mut u64, b: &[u8]| -> std::io::Result<()> {
        *len += b.len() as u64;
        w.write_all(b)
    };
    put(&mut w, &mut len, b"[")?;
    put(&mut w, &mut len, host)?;
    while len + host.len() as u64 + 2 <= host_share {
        put(&mut w, &mut len, b", ")?;
        put(&mut w, &mut len, host)?;
    }
    let device_append = len;
    put(&mut w, &mut len, b",")?;
    put(&mut w, &mut len, device)?;
    while len + device.len() as u64 + 3 <= target {
        put(&mut w, &mut len, b", ")?;
        put(&mut w, &mut len, device)?;
    }
    put(&mut w, &mut len, b"]")?;
    w.flush()?;
    Ok(TraceLayout { len, device_append })
}

/// The broken variants, each in its own run directory: (label, dir, expected state).
fn write_variants(
    out: &Path,
    info: &[u8],
    valid: &Path,
    layout: &TraceLayout,
) -> anyhow::Result<Vec<(String, PathBuf, &'static str)>> {
    let mut variants = Vec::new();
    // Host phase only: everything before the device append, no closing `]`.
    let dir = run_dir(out, "unterminated_run_ascend_pt", info)?;
    let f = dir.join("ASCEND_PROFILER_OUTPUT/trace_view.json");
    copy_prefix(valid, &f, layout.device_append)?;
    variants.push(("trace unterminated".to_owned(), dir, "unterminated"));
    // Killed while appending: cut 40 bytes into the last device event.
    let dir = run_dir(out, "cut_run_ascend_pt", info)?;
    let f = dir.join("ASCEND_PROFILER_OUTPUT/trace_view.json");
    copy_prefix(valid, &f, layout.len - 60)?;
    variants.push(("trace cut mid-event".to_owned(), dir, "cut-mid-event"));
    // Empty device append: host events, then `,]`.
    let dir = run_dir(out, "comma_run_ascend_pt", info)?;
    let f = dir.join("ASCEND_PROFILER_OUTPUT/trace_view.json");
    copy_prefix(valid, &f, layout.device_append)?;
    fs::OpenOptions::new()
        .append(true)
        .open(&f)?
        .write_all(b",]")?;
    variants.push(("trace `},]`".to_owned(), dir, "trailing-comma-close"));
    Ok(variants)
}

fn copy_prefix(src: &Path, dst: &Path, len: u64) -> anyhow::Result<()> {
    let mut input = std::io::Read::take(File::open(src)?, len);
    let mut output = BufWriter::with_capacity(8 << 20, File::create(dst)?);
    std::io::copy(&mut input, &mut output)?;
    output.flush()?;
    Ok(())
}

/// Writes `rows` data rows: the real header and the real rows cycled, Step Id advancing by one
/// every pass over the sample.
pub(crate) fn write_kernel_details(path: &Path, sample: &[u8], rows: u64) -> anyhow::Result<u64> {
    let text = std::str::from_utf8(sample)?;
    let mut lines = text.split_inclusive('\n');
    let header = lines.next().context("empty kernel sample")?;
    let body: Vec<&str> = lines.filter(|l| !l.trim().is_empty()).collect();
    if body.is_empty() {
        bail!("kernel sample has no rows");
    }
    let mut w = BufWriter::with_capacity(8 << 20, File::create(path)?);
    w.write_all(header.as_bytes())?;
    let mut len = header.len() as u64;
    for i in 0..rows {
        let line = body[(i % body.len() as u64) as usize];
        let step = 13 + i / body.len() as u64;
        let rest = line.split_once(',').map_or(line, |(_, r)| r);
        let prefix = format!("{step},");
        w.write_all(prefix.as_bytes())?;
        w.write_all(rest.as_bytes())?;
        len += (prefix.len() + rest.len()) as u64;
    }
    w.flush()?;
    Ok(len)
}

pub(crate) fn python(code: &str) -> Command {
    let mut c = Command::new("python3");
    c.arg("-c").arg(code);
    c
}

/// One measured command.
pub(crate) struct Measured {
    /// Wall time.
    pub(crate) secs: f64,
    /// Peak resident memory.
    pub(crate) max_rss_kb: u64,
    /// What it printed.
    pub(crate) stdout: Vec<u8>,
}

/// Runs `cmd` under `/usr/bin/time -f "%e %M"` (or a Python getrusage wrapper).
pub(crate) fn measure(cmd: &Command, allow_exit_1: bool) -> anyhow::Result<Measured> {
    let program = cmd.get_program().to_owned();
    let argv: Vec<_> = cmd.get_args().map(ToOwned::to_owned).collect();
    let time_out = tempfile_path("time");
    let mut c;
    if Path::new("/usr/bin/time").exists() {
        c = Command::new("/usr/bin/time");
        c.arg("-f")
            .arg("%e %M")
            .arg("-o")
            .arg(&time_out)
            .arg(&program)
            .args(&argv);
    } else {
        let wrapper = "import resource,subprocess,sys,time\n\
                       t=time.time(); r=subprocess.run(sys.argv[2:]); e=time.time()-t\n\
                       m=resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n\
                       open(sys.argv[1],'w').write(f'{e:.2f} {m}')\n\
                       sys.exit(r.returncode)";
        c = Command::new("python3");
        c.arg("-c")
            .arg(wrapper)
            .arg(&time_out)
            .arg(&program)
            .args(&argv);
    }
    let output = c.stderr(Stdio::inherit()).output()?;
    let code = output.status.code().unwrap_or(-1);
    if !(code == 0 || (allow_exit_1 && code == 1)) {
        bail!("{} exited with {code}", program.to_string_lossy());
    }
    let text = fs::read_to_string(&time_out)?;
    let _ = fs::remove_file(&time_out);
    let last = text.lines().last().unwrap_or_default();
    let mut parts = last.split_whitespace();
    let secs: f64 = parts.next().unwrap_or("0").parse().unwrap_or(0.0);
    let max_rss_kb: u64 = parts.next().unwrap_or("0").parse().unwrap_or(0);
    Ok(Measured {
        secs,
        max_rss_kb,
        stdout: output.stdout,
    })
}

fn tempfile_path(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("npuprof-bench-{tag}-{}.txt", std::process::id()))
}

fn trace_state(json: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(json).ok()?;
    v.pointer("/runs/0/artifacts/trace_view/state")?
        .as_str()
        .map(str::to_owned)
}

fn kernel_rows(json: &[u8]) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_slice(json).ok()?;
    v.pointer("/runs/0/artifacts/kernel_details/rows")?.as_u64()
}

/// One line of the result table.
struct Row {
    input: String,
    bytes: u64,
    tool: &'static str,
    secs: f64,
    max_rss_kb: u64,
    verdict: String,
}

impl Row {
    fn new(
        input: &str,
        file: &Path,
        tool: &'static str,
        m: &Measured,
        verdict: Option<String>,
    ) -> Self {
        Self {
            input: input.to_owned(),
            bytes: file.metadata().map(|m| m.len()).unwrap_or(0),
            tool,
            secs: m.secs,
            max_rss_kb: m.max_rss_kb,
            verdict: verdict.unwrap_or_else(|| "-".to_owned()),
        }
    }
}

fn print_table(rows: &[Row]) {
    println!();
    println!(
        "{:<26} {:>14} {:<18} {:>8} {:>9} {:>11}  verdict",
        "input", "bytes", "tool", "wall s", "GB/s", "peak RSS MB"
    );
    for r in rows {
        let gbps = if r.secs > 0.0 {
            r.bytes as f64 / r.secs / 1e9
        } else {
            f64::INFINITY
        };
        println!(
            "{:<26} {:>14} {:<18} {:>8.2} {:>9.2} {:>11.1}  {}",
            r.input,
            r.bytes,
            r.tool,
            r.secs,
            gbps,
            r.max_rss_kb as f64 / 1024.0,
            r.verdict
        );
    }
}

fn print_ratios(rows: &[Row]) {
    println!();
    for input in ["trace for python (valid)", "kernel_details.csv"] {
        let ours = rows
            .iter()
            .find(|r| r.input == input && r.tool == "npuprof verify");
        let theirs = rows
            .iter()
            .find(|r| r.input == input && r.tool != "npuprof verify");
        if let (Some(a), Some(b)) = (ours, theirs) {
            println!(
                "{input}: npuprof verify vs {}: {:.1}x faster (wall), {:.1}x less peak memory",
                b.tool,
                b.secs / a.secs.max(0.005),
                b.max_rss_kb as f64 / a.max_rss_kb.max(1) as f64
            );
        }
    }
}
