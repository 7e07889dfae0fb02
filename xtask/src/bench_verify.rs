//! `cargo xtask bench verify`: generate torch_npu outputs from the real samples and measure
//! `npuprof verify` against reference tools in the same run, with the median of `--runs` timed
//! runs after a warm-up.
//!
//! Generated under `target/bench/verify/` (not committed; `--clean` deletes it):
//! - `trace_run_ascend_pt/`: a trace_view.json of `--trace-gb` GB made of the real sample's
//!   host events, then its device events appended the way torch_npu appends them (`},{`), so the
//!   events have the real shapes (string `ts`, 64-bit flow ids, args objects, `Ascend Hardware`
//!   and `CANN` process_name metadata), and its broken variants (unterminated after the host
//!   phase, cut mid-event, closed with `},]`);
//! - `real_trace_run_ascend_pt/`: a real run's rank-0 trace (vendored with verify's tests)
//!   repeated to `--trace-gb` GB;
//! - `utf8_trace_run_ascend_pt/`: the same with a non-ASCII home directory in its paths, so
//!   the UTF-8 check runs on every piece;
//! - `dense_trace_run_ascend_pt/`: the real run's events as the guide's settings write them
//!   (`with_stack=False, record_shapes=False`: no Python tracer events, no shape or stack
//!   arguments; [`crate::dense_trace`]) repeated to `--trace-gb` GB: short events, no long string;
//! - `py_trace_run_ascend_pt/`: a smaller complete trace (`--python-trace-gb`) for `json.load`,
//!   which needs about 12× the file size in memory;
//! - `kernel_run_ascend_pt/`: a kernel_details.csv of `--rows` rows (the real 47-column header and
//!   the real rows, cycled, with the trailing TAB, doubled quotes and `N/A` as in the sample);
//! - `ranks/prof/{prefill,decode}/rank_<r>_ascend_pt/`: a `--ranks`-rank run of both phases,
//!   each run directory holding hard links to one `--rank-mb` MB trace and one kernel_details.csv.
//!
//! Compared: `wc -l` (a vectorised byte count, the floor for reading every byte) and npuprof on
//! one core (`taskset -c 0`); Python's `json.load`, `csv.reader` and
//! `pandas.read_csv(engine="pyarrow")` (installed into `target/bench/venv` with pip when the
//! system Python lacks it; reported as unavailable when that fails); the real-run trace on all
//! cores (scanned in segments) vs one; and the whole multi-rank run on one core vs all cores. Wall time is measured around each process; peak RSS comes from
//! `/usr/bin/time -f %M` when it exists.

use std::fs::{self, File};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, bail};
use npuprof_scan::trace_scan::{TraceScanner, TraceState};

use crate::build::{build_npuprof, target_dir, workspace_root};

/// Options of the verify benchmark.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Size of the generated trace_view.json, in GB (10^9 bytes).
    #[arg(long, default_value_t = 1.0)]
    pub trace_gb: f64,
    /// Rows of the generated kernel_details.csv.
    #[arg(long, default_value_t = 1_000_000)]
    pub rows: u64,
    /// Size of the trace both npuprof and Python's json.load read, in GB.
    #[arg(long, default_value_t = 0.1)]
    pub python_trace_gb: f64,
    /// Ranks of the generated multi-rank run (each with a prefill and a decode run directory).
    #[arg(long, default_value_t = 32)]
    pub ranks: u32,
    /// Size of each rank's trace in the multi-rank run, in MB (10^6 bytes).
    #[arg(long, default_value_t = 8.0)]
    pub rank_mb: f64,
    /// Timed runs of each command (the median is reported), after one warm-up run.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Delete the generated files and exit.
    #[arg(long)]
    pub clean: bool,
    /// Only time the in-process trace and kernel_details.csv scans on the already generated
    /// files, and the dense trace's first 2 MiB scanned in cache (for profiling and A/B runs).
    #[arg(long)]
    pub scan_only: bool,
}

/// The real samples vendored with verify's tests.
fn samples(root: &Path) -> PathBuf {
    root.join("crates/verify/tests/data")
}

const TRACE_SAMPLE: &str =
    "Ascend-mstt/profiler__msprof_analyze__test__ut__advisor__timeline_advice__trace_view.json";
const KERNEL_SAMPLE: &str = "Ascend-msinsight/test__st__level2__rank_0_ascend_pt__ASCEND_PROFILER_OUTPUT__kernel_details.csv";
/// A real run's trace (host and device events of one rank, with `\r\n` escapes in its
/// strings), repeated for the second trace input.
const REAL_TRACE_SAMPLE: &str =
    "runs/msinsight-text-level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json";
const INFO_SAMPLE: &str =
    "Ascend-msinsight/test__st__level2__rank_0_ascend_pt__profiler_info_0.json";

/// The real run's trace with a non-ASCII home directory in every path (`/home/` becomes
/// `/home/张伟/`), so its call stacks hold multi-byte UTF-8 as a user's may.
fn non_ascii_paths(sample: &[u8]) -> Vec<u8> {
    let (from, to) = (b"/home/".as_slice(), "/home/张伟/".as_bytes());
    let mut out = Vec::with_capacity(sample.len() + sample.len() / 8);
    let mut rest = sample;
    while let Some(at) = memchr::memmem::find(rest, from) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(to);
        rest = &rest[at + from.len()..];
    }
    out.extend_from_slice(rest);
    out
}

/// The generated inputs.
struct Inputs {
    big: PathBuf,
    big_trace: PathBuf,
    real: PathBuf,
    real_trace: PathBuf,
    utf8: PathBuf,
    utf8_trace: PathBuf,
    dense: PathBuf,
    dense_trace: PathBuf,
    variants: Vec<(String, PathBuf, &'static str)>,
    py: PathBuf,
    py_trace: PathBuf,
    kernels: PathBuf,
    kernel_csv: PathBuf,
    ranks: PathBuf,
    rank_runs: usize,
}

/// Runs the verify benchmark.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let root = workspace_root();
    let bench = target_dir(&root).join("bench");
    let out = bench.join("verify");
    if args.clean {
        if out.exists() {
            fs::remove_dir_all(&out).with_context(|| format!("removing {}", out.display()))?;
        }
        println!("removed {}", out.display());
        return Ok(());
    }
    if args.trace_gb <= 0.0
        || args.python_trace_gb <= 0.0
        || args.rank_mb <= 0.0
        || args.rows == 0
        || args.ranks == 0
        || args.runs == 0
    {
        bail!(
            "--trace-gb, --python-trace-gb, --rank-mb, --rows, --ranks and --runs must be positive"
        );
    }
    let big_trace = out.join("trace_run_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json");
    if args.scan_only {
        let dense = out.join("dense_trace_run_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json");
        for (what, trace) in [("trace", &big_trace), ("dense trace", &dense)] {
            let mut times: Vec<(f64, f64)> = (0..args.runs)
                .map(|_| {
                    let cpu0 = self_cpu();
                    let secs = time_scanner(trace)?;
                    Ok((secs, self_cpu() - cpu0))
                })
                .collect::<anyhow::Result<_>>()?;
            let secs = median(&mut times.iter().map(|t| t.0).collect::<Vec<_>>());
            let cpu = median(&mut times.iter_mut().map(|t| t.1).collect::<Vec<_>>());
            let len = trace.metadata()?.len();
            println!(
                "{what} scanner (library, one thread): {len} bytes in {secs:.3}s wall, {cpu:.3}s CPU (medians of {}) = {:.2} GB/s",
                args.runs,
                len as f64 / secs / 1e9
            );
        }
        time_in_cache(&dense, args.runs)?;
        println!("load average: {}", load_average());
        let csv = out.join("kernel_run_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv");
        let t = Instant::now();
        let scan = npuprof_scan::kernel_csv::scan_kernel_details(File::open(&csv)?, |_| {})?;
        let secs = t.elapsed().as_secs_f64();
        let len = csv.metadata()?.len();
        println!(
            "kernel_details.csv scan (library, one thread): {} rows, {len} bytes in {secs:.3}s = {:.2} GB/s",
            scan.rows,
            len as f64 / secs / 1e9
        );
        return Ok(());
    }
    let npuprof = build_npuprof(&root)?;
    let inputs = generate(&root, &out, args)?;
    let pandas = pandas_python(&bench);
    println!("load average at the start: {}", load_average());
    let mut bench = Bench {
        runs: args.runs,
        rows: Vec::new(),
    };
    measure_all(&mut bench, &npuprof, &inputs, args, pandas.as_deref())?;
    print_table(&bench.rows);
    print_ratios(&bench, &inputs, pandas.is_ok());
    if let Err(why) = &pandas {
        println!("pandas unavailable: {why}");
    }
    println!(
        "generated files are kept in {} (delete with `cargo xtask bench verify --clean`)",
        out.display()
    );
    Ok(())
}

fn generate(root: &Path, out: &Path, args: &Args) -> anyhow::Result<Inputs> {
    let samples = samples(root);
    let trace_sample = fs::read(samples.join(TRACE_SAMPLE))
        .with_context(|| format!("reading {}", samples.join(TRACE_SAMPLE).display()))?;
    let kernel_sample = fs::read(samples.join(KERNEL_SAMPLE))?;
    let info = fs::read(samples.join(INFO_SAMPLE))?;
    fs::create_dir_all(out)?;

    let big = run_dir(out, "trace_run_ascend_pt", &info)?;
    let big_trace = big.join("ASCEND_PROFILER_OUTPUT/trace_view.json");
    let t = Instant::now();
    let layout = write_trace(&big_trace, &trace_sample, (args.trace_gb * 1e9) as u64)?;
    eprintln!(
        "generated {} ({} bytes) in {:.1}s",
        big_trace.display(),
        layout.len,
        t.elapsed().as_secs_f64()
    );
    let variants = write_variants(out, &info, &big_trace, &layout)?;

    let real = run_dir(out, "real_trace_run_ascend_pt", &info)?;
    let real_trace = real.join("ASCEND_PROFILER_OUTPUT/trace_view.json");
    let real_sample = fs::read(samples.join(REAL_TRACE_SAMPLE))
        .with_context(|| format!("reading {}", samples.join(REAL_TRACE_SAMPLE).display()))?;
    let len = write_repeated(&real_trace, &real_sample, (args.trace_gb * 1e9) as u64)?;
    eprintln!("generated {} ({len} bytes)", real_trace.display());
    let utf8 = run_dir(out, "utf8_trace_run_ascend_pt", &info)?;
    let utf8_trace = utf8.join("ASCEND_PROFILER_OUTPUT/trace_view.json");
    let utf8_sample = non_ascii_paths(&real_sample);
    let len = write_repeated(&utf8_trace, &utf8_sample, (args.trace_gb * 1e9) as u64)?;
    eprintln!("generated {} ({len} bytes)", utf8_trace.display());
    let dense = run_dir(out, "dense_trace_run_ascend_pt", &info)?;
    let dense_trace = dense.join("ASCEND_PROFILER_OUTPUT/trace_view.json");
    let dense_sample = crate::dense_trace::as_guide_settings(&real_sample);
    let len = write_repeated(&dense_trace, &dense_sample, (args.trace_gb * 1e9) as u64)?;
    eprintln!("generated {} ({len} bytes)", dense_trace.display());

    let py = run_dir(out, "py_trace_run_ascend_pt", &info)?;
    let py_trace = py.join("ASCEND_PROFILER_OUTPUT/trace_view.json");
    write_trace(
        &py_trace,
        &trace_sample,
        (args.python_trace_gb * 1e9) as u64,
    )?;

    let kernels = run_dir(out, "kernel_run_ascend_pt", &info)?;
    let kernel_csv = kernels.join("ASCEND_PROFILER_OUTPUT/kernel_details.csv");
    let kernel_len = write_kernel_details(&kernel_csv, &kernel_sample, args.rows)?;
    eprintln!(
        "generated {} ({} rows, {kernel_len} bytes)",
        kernel_csv.display(),
        args.rows
    );

    // The multi-rank run: one trace and one CSV, hard-linked into every run directory.
    let ranks = out.join("ranks");
    if ranks.exists() {
        fs::remove_dir_all(&ranks)?;
    }
    let rank_trace = out.join("rank_trace_view.json");
    let rank_len = write_trace(&rank_trace, &trace_sample, (args.rank_mb * 1e6) as u64)?.len;
    let rank_csv = out.join("rank_kernel_details.csv");
    let rank_rows = (rank_len / 1000).max(1);
    write_kernel_details(&rank_csv, &kernel_sample, rank_rows)?;
    let mut rank_runs = 0;
    for phase in ["prefill", "decode"] {
        for r in 0..args.ranks {
            let dir = run_dir(
                &ranks.join("prof").join(phase),
                &format!("rank_{r}_ascend_pt"),
                &info,
            )?;
            let o = dir.join("ASCEND_PROFILER_OUTPUT");
            link_or_copy(&rank_trace, &o.join("trace_view.json"))?;
            link_or_copy(&rank_csv, &o.join("kernel_details.csv"))?;
            rank_runs += 1;
        }
    }
    Ok(Inputs {
        big,
        big_trace,
        real,
        real_trace,
        utf8,
        utf8_trace,
        dense,
        dense_trace,
        variants,
        py,
        py_trace,
        kernels,
        kernel_csv,
        ranks,
        rank_runs,
    })
}

pub(crate) fn link_or_copy(src: &Path, dst: &Path) -> anyhow::Result<()> {
    if fs::hard_link(src, dst).is_err() {
        fs::copy(src, dst)?;
    }
    Ok(())
}

/// A Python with pandas and pyarrow: the system one, else `<bench>/venv` (created and filled
/// with pip when missing; `bench` is `target/bench`). `Err` says why there is none.
pub(crate) fn pandas_python(bench: &Path) -> Result<PathBuf, String> {
    let has_pandas = |python: &Path| {
        Command::new(python)
            .args(["-c", "import pandas, pyarrow"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let system = PathBuf::from("python3");
    if has_pandas(&system) {
        return Ok(system);
    }
    let venv = bench.join("venv");
    let python = venv.join("bin/python");
    if has_pandas(&python) {
        return Ok(python);
    }
    eprintln!(
        "installing pandas and pyarrow into {} with pip...",
        venv.display()
    );
    let created = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .map_err(|e| format!("python3 -m venv: {e}"))?;
    if !created.success() {
        return Err("`python3 -m venv` failed".to_owned());
    }
    let pip = Command::new(venv.join("bin/pip"))
        .args(["install", "-q", "pandas", "pyarrow"])
        .status()
        .map_err(|e| format!("pip: {e}"))?;
    if !pip.success() || !has_pandas(&python) {
        return Err("`pip install pandas pyarrow` failed (is PyPI reachable?)".to_owned());
    }
    Ok(python)
}

/// Times the in-process scanner (one thread) on `trace`.
fn time_scanner(trace: &Path) -> anyhow::Result<f64> {
    let t = Instant::now();
    let scan = TraceScanner::scan_file(
        &File::open(trace).with_context(|| format!("opening {}", trace.display()))?,
        |_| {},
    )?;
    let secs = t.elapsed().as_secs_f64();
    if scan.state != TraceState::Complete {
        bail!("generated trace scanned as {:?}", scan.state);
    }
    Ok(secs)
}

/// Bytes of the dense trace that [`time_in_cache`] scans again and again (they stay in the L2
/// cache).
const IN_CACHE: usize = 2 << 20;

/// Times the in-process scanner on the first [`IN_CACHE`] bytes of `trace`, scanned 1000 times
/// per run, and prints the median and the least CPU time of `runs` in seconds per GB: the
/// scan's own speed without the memory's, which other work on the machine varies most (for
/// A/B runs).
fn time_in_cache(trace: &Path, runs: usize) -> anyhow::Result<()> {
    const REPEAT: usize = 1000;
    let mut head = vec![0; IN_CACHE];
    File::open(trace)?.read_exact(&mut head)?;
    let mut per_gb: Vec<f64> = (0..runs)
        .map(|_| {
            let cpu0 = self_cpu();
            for _ in 0..REPEAT {
                let mut scanner = TraceScanner::new();
                scanner.feed(&head);
                std::hint::black_box(scanner.finish());
            }
            (self_cpu() - cpu0) / (IN_CACHE * REPEAT) as f64 * 1e9
        })
        .collect();
    let least = per_gb.iter().copied().fold(f64::INFINITY, f64::min);
    println!(
        "dense trace scanner in cache ({} MiB x {REPEAT}, one thread): {:.4} s/GB CPU median, {least:.4} least (of {runs})",
        IN_CACHE >> 20,
        median(&mut per_gb)
    );
    Ok(())
}

/// Times the in-process scanner (one thread) on `trace` `runs` times; records the median row.
fn time_library(
    bench: &mut Bench,
    input: &'static str,
    trace: &Path,
    runs: usize,
) -> anyhow::Result<()> {
    let mut lib: Vec<(f64, f64)> = (0..runs)
        .map(|_| {
            let cpu0 = self_cpu();
            let secs = time_scanner(trace)?;
            Ok((secs, self_cpu() - cpu0))
        })
        .collect::<anyhow::Result<_>>()?;
    bench.rows.push(Row {
        input,
        bytes: size(trace),
        tool: LIBRARY.to_owned(),
        secs: median(&mut lib.iter().map(|l| l.0).collect::<Vec<_>>()),
        cpu: median(&mut lib.iter_mut().map(|l| l.1).collect::<Vec<_>>()),
        max_rss_kb: 0,
        verdict: "complete".to_owned(),
    });
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

/// Writes a trace of about `target` bytes: the events of the trace `sample` repeated.
pub(crate) fn write_repeated(path: &Path, sample: &[u8], target: u64) -> anyhow::Result<u64> {
    let events = sample
        .trim_ascii()
        .strip_prefix(b"[")
        .and_then(|s| s.strip_suffix(b"]"))
        .context("the real trace sample is not a closed array")?
        .trim_ascii();
    let mut w = BufWriter::with_capacity(8 << 20, File::create(path)?);
    w.write_all(b"[")?;
    w.write_all(events)?;
    let mut len = events.len() as u64 + 2;
    while len + events.len() as u64 + 2 <= target {
        w.write_all(b",\n")?;
        w.write_all(events)?;
        len += events.len() as u64 + 2;
    }
    w.write_all(b"]")?;
    w.flush()?;
    Ok(len)
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
    let mut input = File::open(src)?.take(len);
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

/// The medians collected so far.
struct Bench {
    runs: usize,
    rows: Vec<Row>,
}

/// One line of the result table.
struct Row {
    input: &'static str,
    bytes: u64,
    tool: String,
    /// Median wall time.
    secs: f64,
    /// Median CPU time (user + system; NaN when unknown).
    cpu: f64,
    /// Highest peak RSS over the runs (0 when unknown).
    max_rss_kb: u64,
    verdict: String,
}

/// What to run and how to judge its output.
struct Case<'a> {
    input: &'static str,
    bytes: u64,
    tool: String,
    cmd: Command,
    /// Checks stdout and says what it found (the verdict column).
    check: &'a dyn Fn(&[u8]) -> anyhow::Result<String>,
}

impl Bench {
    /// One warm-up run, then `runs` timed runs; records the median.
    fn run(&mut self, case: Case<'_>) -> anyhow::Result<()> {
        self.run_prepared(case, None)
    }

    /// `npuprof verify` of `dir` on one core, then on all cores.
    fn one_and_all_cores(
        &mut self,
        npuprof: &Path,
        input: &'static str,
        bytes: u64,
        dir: &Path,
        check: &dyn Fn(&[u8]) -> anyhow::Result<String>,
    ) -> anyhow::Result<()> {
        for (tool, pinned) in [(ONE_CORE, true), (ALL_CORES, false)] {
            self.run(Case {
                input,
                bytes,
                tool: tool.to_owned(),
                cmd: verify_cmd(npuprof, dir, pinned),
                check,
            })?;
        }
        Ok(())
    }

    /// `runs` timed runs, each after evicting `file` from the page cache; records the median.
    fn run_cold(&mut self, case: Case<'_>, file: &Path) -> anyhow::Result<()> {
        self.run_prepared(case, Some(file))
    }

    fn run_prepared(&mut self, case: Case<'_>, evict: Option<&Path>) -> anyhow::Result<()> {
        self.run_interleaved(vec![case], evict)
    }

    /// The cases in turn, one warm-up round then `runs` timed rounds (each after evicting
    /// `file`, when given, and then without a warm-up): a slow spell of the machine falls on
    /// every case alike, not on one of them.
    fn run_interleaved(
        &mut self,
        cases: Vec<Case<'_>>,
        evict: Option<&Path>,
    ) -> anyhow::Result<()> {
        for case in &cases {
            eprintln!("timing {} on {} ...", case.tool, case.input);
        }
        let mut times = vec![Vec::with_capacity(self.runs); cases.len()];
        let mut cpus = vec![Vec::with_capacity(self.runs); cases.len()];
        let mut max_rss_kb = vec![0; cases.len()];
        let mut verdicts = vec![String::new(); cases.len()];
        let first = usize::from(evict.is_some());
        for i in first..=self.runs {
            for (k, case) in cases.iter().enumerate() {
                if let Some(file) = evict {
                    evict_from_page_cache(file)?;
                }
                let m = measure(&case.cmd, true)?;
                verdicts[k] = (case.check)(&m.stdout)
                    .with_context(|| format!("{} on {}", case.tool, case.input))?;
                if i > 0 {
                    times[k].push(m.secs);
                    cpus[k].push(m.cpu);
                    max_rss_kb[k] = max_rss_kb[k].max(m.max_rss_kb);
                }
            }
        }
        for (k, case) in cases.into_iter().enumerate() {
            self.rows.push(Row {
                input: case.input,
                bytes: case.bytes,
                tool: case.tool,
                secs: median(&mut times[k]),
                cpu: median(&mut cpus[k]),
                max_rss_kb: max_rss_kb[k],
                verdict: std::mem::take(&mut verdicts[k]),
            });
        }
        Ok(())
    }

    fn secs(&self, input: &str, tool: &str) -> Option<f64> {
        self.row(input, tool).map(|r| r.secs)
    }

    fn cpu(&self, input: &str, tool: &str) -> Option<f64> {
        self.row(input, tool).map(|r| r.cpu)
    }

    fn row(&self, input: &str, tool: &str) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| r.input == input && r.tool == tool)
    }
}

/// Drops `file`'s pages from the page cache without root: its dirty pages are written first
/// (`fdatasync`), then `posix_fadvise(POSIX_FADV_DONTNEED)` discards the clean ones. The
/// hypervisor's own disk cache, if any, is out of reach.
fn evict_from_page_cache(file: &Path) -> anyhow::Result<()> {
    let code = format!(
        "import os; fd = os.open({:?}, os.O_RDONLY); os.fdatasync(fd); \
         os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)",
        lossy(file)
    );
    let status = python(&code).status()?;
    if !status.success() {
        bail!("could not evict {} from the page cache", file.display());
    }
    Ok(())
}

pub(crate) fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

const ONE_CORE: &str = "npuprof verify, 1 core";
const ALL_CORES: &str = "npuprof verify, all cores";
const WC: &str = "wc -l, 1 core";
const LIBRARY: &str = "scanner library, 1 thread";
const JSON_LOAD: &str = "python3 json.load";
const PY_CSV: &str = "python3 csv.reader";
const PANDAS: &str = "pandas.read_csv pyarrow";
const TRACE: &str = "trace (valid)";
const REAL_TRACE: &str = "real-run trace (valid)";
const UTF8_TRACE: &str = "real-run trace, non-ASCII paths (valid)";
const DENSE_TRACE: &str = "dense trace, guide's settings (valid)";
const PY_TRACE: &str = "small trace (valid)";
const CSV: &str = "kernel_details.csv";
const RANKS: &str = "multi-rank run";
const COLD_TRACE: &str = "trace, evicted (cold)";
const COLD_CSV: &str = "kernel_details.csv, cold";

/// `cmd` pinned to the first core.
pub(crate) fn one_core(program: &Path, args: &[&std::ffi::OsStr]) -> Command {
    let mut c = Command::new("taskset");
    c.arg("-c").arg("0").arg(program).args(args);
    c
}

fn verify_cmd(npuprof: &Path, dir: &Path, pinned: bool) -> Command {
    let args = ["verify".as_ref(), dir.as_os_str(), "--json".as_ref()];
    if pinned {
        one_core(npuprof, &args)
    } else {
        let mut c = Command::new(npuprof);
        c.args(args);
        c
    }
}

fn size(path: &Path) -> u64 {
    path.metadata().map(|m| m.len()).unwrap_or(0)
}

/// `wc -l` and npuprof verify (one core) on the trace `file` of the run `dir`, in turn.
fn against_wc(
    bench: &mut Bench,
    npuprof: &Path,
    input: &'static str,
    dir: &Path,
    file: &Path,
    lines: &dyn Fn(&[u8]) -> anyhow::Result<String>,
    complete: &dyn Fn(&[u8]) -> anyhow::Result<String>,
) -> anyhow::Result<()> {
    let bytes = size(file);
    bench.run_interleaved(
        vec![
            Case {
                input,
                bytes,
                tool: WC.to_owned(),
                cmd: one_core(Path::new("wc"), &["-l".as_ref(), file.as_os_str()]),
                check: lines,
            },
            Case {
                input,
                bytes,
                tool: ONE_CORE.to_owned(),
                cmd: verify_cmd(npuprof, dir, true),
                check: complete,
            },
        ],
        None,
    )
}

fn measure_all(
    bench: &mut Bench,
    npuprof: &Path,
    inputs: &Inputs,
    args: &Args,
    pandas: Result<&Path, &String>,
) -> anyhow::Result<()> {
    let any = |_: &[u8]| Ok("-".to_owned());
    let lines = |out: &[u8]| {
        let text = String::from_utf8_lossy(out);
        Ok(format!(
            "{} lines",
            text.split_whitespace().next().unwrap_or("?")
        ))
    };
    let state_is = |want: &'static str| {
        move |out: &[u8]| -> anyhow::Result<String> {
            let state = json_str(out, "/runs/0/artifacts/trace_view/state");
            if state.as_deref() != Some(want) {
                bail!("npuprof reported trace state {state:?}, expected {want}");
            }
            Ok(want.to_owned())
        }
    };
    let complete = state_is("complete");

    // The big trace, one core: wc -l, npuprof, the library alone.
    against_wc(
        bench,
        npuprof,
        TRACE,
        &inputs.big,
        &inputs.big_trace,
        &lines,
        &complete,
    )?;
    time_library(bench, TRACE, &inputs.big_trace, args.runs)?;
    // The real run's trace, repeated: wc -l and npuprof.
    against_wc(
        bench,
        npuprof,
        REAL_TRACE,
        &inputs.real,
        &inputs.real_trace,
        &lines,
        &complete,
    )?;
    // The same on all cores: one file in segments.
    bench.run(Case {
        input: REAL_TRACE,
        bytes: size(&inputs.real_trace),
        tool: ALL_CORES.to_owned(),
        cmd: verify_cmd(npuprof, &inputs.real, false),
        check: &complete,
    })?;
    // The same with multi-byte UTF-8 in its strings.
    against_wc(
        bench,
        npuprof,
        UTF8_TRACE,
        &inputs.utf8,
        &inputs.utf8_trace,
        &lines,
        &complete,
    )?;
    // The real run's events as the guide's settings write them: short events, no long strings.
    against_wc(
        bench,
        npuprof,
        DENSE_TRACE,
        &inputs.dense,
        &inputs.dense_trace,
        &lines,
        &complete,
    )?;
    time_library(bench, DENSE_TRACE, &inputs.dense_trace, args.runs)?;
    for (label, dir, want) in &inputs.variants {
        let check = state_is(want);
        bench.run(Case {
            input: leak(label),
            bytes: size(&dir.join("ASCEND_PROFILER_OUTPUT/trace_view.json")),
            tool: ONE_CORE.to_owned(),
            cmd: verify_cmd(npuprof, dir, true),
            check: &check,
        })?;
    }

    // The small trace: npuprof vs json.load.
    let py_bytes = size(&inputs.py_trace);
    bench.run(Case {
        input: PY_TRACE,
        bytes: py_bytes,
        tool: ONE_CORE.to_owned(),
        cmd: verify_cmd(npuprof, &inputs.py, true),
        check: &complete,
    })?;
    bench.run(Case {
        input: PY_TRACE,
        bytes: py_bytes,
        tool: JSON_LOAD.to_owned(),
        cmd: python(&format!(
            "import json; json.load(open({:?}))",
            lossy(&inputs.py_trace)
        )),
        check: &any,
    })?;

    // kernel_details.csv: wc -l, npuprof, Python's csv module, pandas with pyarrow.
    let csv_bytes = size(&inputs.kernel_csv);
    let rows = args.rows;
    let rows_ok = move |out: &[u8]| -> anyhow::Result<String> {
        let seen = json_u64(out, "/runs/0/artifacts/kernel_details/rows");
        if seen != Some(rows) {
            bail!("npuprof counted {seen:?} kernel rows, expected {rows}");
        }
        Ok(format!("{rows} rows"))
    };
    bench.run(Case {
        input: CSV,
        bytes: csv_bytes,
        tool: WC.to_owned(),
        cmd: one_core(
            Path::new("wc"),
            &["-l".as_ref(), inputs.kernel_csv.as_os_str()],
        ),
        check: &lines,
    })?;
    bench.one_and_all_cores(npuprof, CSV, csv_bytes, &inputs.kernels, &rows_ok)?;
    let csv_path = lossy(&inputs.kernel_csv);
    bench.run(Case {
        input: CSV,
        bytes: csv_bytes,
        tool: PY_CSV.to_owned(),
        cmd: python(&format!(
            "import csv; print(sum(1 for _ in csv.reader(open({csv_path:?}, newline=''))))"
        )),
        check: &lines,
    })?;
    if let Ok(py) = pandas {
        bench.run(Case {
            input: CSV,
            bytes: csv_bytes,
            tool: PANDAS.to_owned(),
            cmd: python_with(
                py,
                &format!(
                    "import pandas as pd; print(len(pd.read_csv({csv_path:?}, engine='pyarrow')))"
                ),
            ),
            check: &lines,
        })?;
    }

    // The whole multi-rank run: one core, then all cores.
    let runs = inputs.rank_runs;
    let all_runs = move |out: &[u8]| -> anyhow::Result<String> {
        let v: serde_json::Value = serde_json::from_slice(out)?;
        let n = v.pointer("/runs").and_then(|r| r.as_array()).map(Vec::len);
        if n != Some(runs) {
            bail!("npuprof verified {n:?} run directories, expected {runs}");
        }
        Ok(format!("{runs} run dirs"))
    };
    let rank_bytes = dir_bytes(&inputs.ranks)?;
    bench.one_and_all_cores(npuprof, RANKS, rank_bytes, &inputs.ranks, &all_runs)?;

    // Cold cache: the same files evicted from the page cache before each run.
    for (input, file, dir, check) in [
        (
            COLD_TRACE,
            &inputs.big_trace,
            &inputs.big,
            &complete as &dyn Fn(&[u8]) -> _,
        ),
        (COLD_CSV, &inputs.kernel_csv, &inputs.kernels, &rows_ok),
    ] {
        bench.run_cold(
            Case {
                input,
                bytes: size(file),
                tool: WC.to_owned(),
                cmd: one_core(Path::new("wc"), &["-l".as_ref(), file.as_os_str()]),
                check: &lines,
            },
            file,
        )?;
        bench.run_cold(
            Case {
                input,
                bytes: size(file),
                tool: ONE_CORE.to_owned(),
                cmd: verify_cmd(npuprof, dir, true),
                check,
            },
            file,
        )?;
    }
    Ok(())
}

/// The variants' labels live as long as the benchmark.
fn leak(s: &str) -> &'static str {
    Box::leak(s.to_owned().into_boxed_str())
}

fn lossy(p: &Path) -> String {
    p.display().to_string()
}

/// Bytes of the trace and CSV files under `dir`.
fn dir_bytes(dir: &Path) -> anyhow::Result<u64> {
    let mut total = 0;
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            total += dir_bytes(&path)?;
        } else if path
            .file_name()
            .is_some_and(|n| n == "trace_view.json" || n == "kernel_details.csv")
        {
            total += size(&path);
        }
    }
    Ok(total)
}

/// `python3 -c code`.
pub(crate) fn python(code: &str) -> Command {
    python_with(Path::new("python3"), code)
}

/// `<python> -c code`.
fn python_with(python: &Path, code: &str) -> Command {
    let mut c = Command::new(python);
    c.arg("-c").arg(code);
    c
}

/// One measured command.
pub(crate) struct Measured {
    /// Wall time.
    pub(crate) secs: f64,
    /// CPU time, user + system (NaN when unknown).
    pub(crate) cpu: f64,
    /// Peak resident memory (0 when unknown).
    pub(crate) max_rss_kb: u64,
    /// What it printed.
    pub(crate) stdout: Vec<u8>,
}

/// Runs `cmd` (under `/usr/bin/time -f %M` for the peak RSS when it exists), timing the wall
/// clock around it. Exit code 0 is accepted, and 1 (verify's "findings") when `allow_exit_1`.
pub(crate) fn measure(cmd: &Command, allow_exit_1: bool) -> anyhow::Result<Measured> {
    let (measured, status, _) = measure_any(cmd, Stdio::inherit())?;
    let code = status.code().unwrap_or(-1);
    if !(code == 0 || (allow_exit_1 && code == 1)) {
        bail!("{} exited with {code}", cmd.get_program().to_string_lossy());
    }
    Ok(measured)
}

/// Runs `cmd` as [`measure`] does, its stderr going to `stderr`, whatever its exit status: the
/// measurement, the status and the stderr captured (empty unless `stderr` is piped).
pub(crate) fn measure_any(
    cmd: &Command,
    stderr: Stdio,
) -> anyhow::Result<(Measured, std::process::ExitStatus, Vec<u8>)> {
    let program = cmd.get_program().to_owned();
    let argv: Vec<_> = cmd.get_args().map(ToOwned::to_owned).collect();
    let time_out = std::env::temp_dir().join(format!("npuprof-bench-rss-{}", std::process::id()));
    let timed = Path::new("/usr/bin/time").exists();
    let mut c = if timed {
        let mut c = Command::new("/usr/bin/time");
        c.arg("-f")
            .arg("%U %S %M")
            .arg("-o")
            .arg(&time_out)
            .arg(&program);
        c
    } else {
        Command::new(&program)
    };
    c.args(&argv).stderr(stderr);
    let t = Instant::now();
    let output = c.output()?;
    let secs = t.elapsed().as_secs_f64();
    let (cpu, max_rss_kb) = if timed {
        let text = fs::read_to_string(&time_out).unwrap_or_default();
        let _ = fs::remove_file(&time_out);
        let f: Vec<f64> = text
            .lines()
            .last()
            .unwrap_or_default()
            .split_whitespace()
            .map(|x| x.parse().unwrap_or(f64::NAN))
            .collect();
        match f[..] {
            [u, s, m] => (u + s, m as u64),
            _ => (f64::NAN, 0),
        }
    } else {
        (f64::NAN, 0)
    };
    let measured = Measured {
        secs,
        cpu,
        max_rss_kb,
        stdout: output.stdout,
    };
    Ok((measured, output.status, output.stderr))
}

fn json_str(json: &[u8], pointer: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(json).ok()?;
    v.pointer(pointer)?.as_str().map(str::to_owned)
}

fn json_u64(json: &[u8], pointer: &str) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_slice(json).ok()?;
    v.pointer(pointer)?.as_u64()
}

fn print_table(rows: &[Row]) {
    println!();
    println!(
        "{:<26} {:>14} {:<27} {:>9} {:>9} {:>9} {:>11}  verdict",
        "input", "bytes", "tool", "median s", "GB/s", "CPU s", "peak RSS MB"
    );
    for r in rows {
        let gbps = r.bytes as f64 / r.secs.max(1e-6) / 1e9;
        let rss = if r.max_rss_kb == 0 {
            "-".to_owned()
        } else {
            format!("{:.1}", r.max_rss_kb as f64 / 1024.0)
        };
        println!(
            "{:<26} {:>14} {:<27} {:>9.3} {:>9.2} {:>9.2} {:>11}  {}",
            r.input, r.bytes, r.tool, r.secs, gbps, r.cpu, rss, r.verdict
        );
    }
}

/// Prints `label`: the ratio of wall times and of CPU times (the figure a loaded machine
/// distorts least), and whether the wall-time ratio meets the goal (`at_most` or at least).
fn ratio(label: &str, wall: Option<f64>, cpu: Option<f64>, goal: Option<(f64, bool)>) {
    let Some(w) = wall else {
        println!("{label}: not measured");
        return;
    };
    let verdict = match goal {
        Some((g, true)) => format!(" (goal <= {g}: {})", if w <= g { "met" } else { "MISSED" }),
        Some((g, false)) => format!(" (goal >= {g}: {})", if w >= g { "met" } else { "MISSED" }),
        None => String::new(),
    };
    println!(
        "{label}: {w:.2} wall, {:.2} CPU{verdict}",
        cpu.unwrap_or(f64::NAN)
    );
}

fn print_ratios(b: &Bench, inputs: &Inputs, pandas: bool) {
    println!();
    let div = |a: Option<f64>, c: Option<f64>| Some(a? / c?.max(1e-6));
    let both = |label: &str, (i1, t1): (&str, &str), (i2, t2): (&str, &str), goal| {
        ratio(
            label,
            div(b.secs(i1, t1), b.secs(i2, t2)),
            div(b.cpu(i1, t1), b.cpu(i2, t2)),
            goal,
        );
    };
    both(
        "trace: npuprof verify (1 core) / wc -l (1 core)",
        (TRACE, ONE_CORE),
        (TRACE, WC),
        Some((3.0, true)),
    );
    both(
        "trace: scanner library (1 thread) / wc -l (1 core)",
        (TRACE, LIBRARY),
        (TRACE, WC),
        Some((3.0, true)),
    );
    both(
        "real-run trace: npuprof verify (1 core) / wc -l (1 core)",
        (REAL_TRACE, ONE_CORE),
        (REAL_TRACE, WC),
        Some((3.0, true)),
    );
    both(
        "real-run trace, non-ASCII paths: npuprof verify (1 core) / wc -l (1 core)",
        (UTF8_TRACE, ONE_CORE),
        (UTF8_TRACE, WC),
        Some((3.0, true)),
    );
    both(
        "dense trace (guide's settings): npuprof verify (1 core) / wc -l (1 core)",
        (DENSE_TRACE, ONE_CORE),
        (DENSE_TRACE, WC),
        Some((3.0, true)),
    );
    both(
        "dense trace (guide's settings): scanner library (1 thread) / wc -l (1 core)",
        (DENSE_TRACE, LIBRARY),
        (DENSE_TRACE, WC),
        Some((3.0, true)),
    );
    both(
        "small trace: python3 json.load / npuprof verify (1 core)",
        (PY_TRACE, JSON_LOAD),
        (PY_TRACE, ONE_CORE),
        None,
    );
    both(
        "kernel_details.csv: npuprof verify (1 core) / wc -l (1 core)",
        (CSV, ONE_CORE),
        (CSV, WC),
        None,
    );
    both(
        "kernel_details.csv: python3 csv.reader / npuprof verify (1 core)",
        (CSV, PY_CSV),
        (CSV, ONE_CORE),
        Some((10.0, false)),
    );
    if pandas {
        both(
            "kernel_details.csv: pandas.read_csv(engine=\"pyarrow\") / npuprof verify (1 core)",
            (CSV, PANDAS),
            (CSV, ONE_CORE),
            Some((3.0, false)),
        );
    }
    both(
        "cold trace: npuprof verify (1 core) / wc -l (1 core)",
        (COLD_TRACE, ONE_CORE),
        (COLD_TRACE, WC),
        None,
    );
    both(
        "cold kernel_details.csv: npuprof verify (1 core) / wc -l (1 core)",
        (COLD_CSV, ONE_CORE),
        (COLD_CSV, WC),
        None,
    );
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    // All cores against the ideal: one core's time shared by the cores.
    let to_ideal = |input| {
        div(
            b.secs(input, ALL_CORES),
            b.secs(input, ONE_CORE).map(|s| s / cores as f64),
        )
    };
    let all_cores = format!("all cores / (1 core / {cores} cores)");
    ratio(
        &format!(
            "multi-rank run ({} run dirs): {all_cores}",
            inputs.rank_runs
        ),
        to_ideal(RANKS),
        None,
        Some((1.2, true)),
    );
    ratio(
        &format!("real-run trace in segments: {all_cores}"),
        to_ideal(REAL_TRACE),
        None,
        None,
    );
    ratio(
        &format!("kernel_details.csv in segments: {all_cores}"),
        to_ideal(CSV),
        None,
        None,
    );
    println!("load average at the end: {}", load_average());
}

/// `/proc/loadavg`'s first three fields (other work on the machine distorts wall times).
fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}

/// CPU time (user + system) of this process so far, in seconds, from `/proc/self/stat`
/// (clock ticks of 1/100 s); NaN where that file does not exist.
fn self_cpu() -> f64 {
    let Ok(stat) = fs::read_to_string("/proc/self/stat") else {
        return f64::NAN;
    };
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 of the file are the 12th and 13th after the command name.
    let tick = |i: usize| {
        f.get(i)
            .and_then(|x| x.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    (tick(11) + tick(12)) / 100.0
}
