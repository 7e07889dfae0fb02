//! `cargo xtask bench route`: `npuprof route` on a generated 20,000-file Python repository,
//! timed against `grep -rn torch_npu.profiler` on the same tree in the same run.
//!
//! The repository (under `target/bench/route-repo`) is deterministic: mostly ordinary Python
//! modules (`import torch`, a third also `import torch_npu`, no profiler words), 0.5% (option
//! `--profiler-permille`) with scattered `torch_npu.profiler` use, the
//! recipes-style wrapper and engine copied from `examples/recipes-mini`, run configs, and a
//! share of non-Python files (docs, JSON). It is regenerated when the file count changes.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};

use crate::build::{bench_npuprof, workspace_root};

/// Options of the route benchmark.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Number of files in the generated repository.
    #[arg(long, default_value_t = 20_000)]
    pub files: usize,
    /// Timed repetitions of each command (the median is reported).
    #[arg(long, default_value_t = 7)]
    pub reps: usize,
    /// Python files with scattered `torch_npu.profiler` use, per thousand files.
    #[arg(long, default_value_t = 5)]
    pub profiler_permille: u64,
    /// Use the existing release binary instead of building it.
    #[arg(long)]
    pub no_build: bool,
}

/// Runs the route benchmark.
pub fn run(args: &Args) -> anyhow::Result<()> {
    ensure!(args.reps > 0, "--reps must be at least 1");
    let root = workspace_root();
    let repo = root.join("target/bench/route-repo");
    generate(&root, &repo, args.files, args.profiler_permille)?;

    let npuprof = bench_npuprof(&root, args.no_build)?;

    // Sanity: the scan finds the wrapper in the generated tree.
    let out = Command::new(&npuprof)
        .arg("route")
        .arg(&repo)
        .arg("--json")
        .output()?;
    ensure!(
        out.status.success(),
        "npuprof route failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = String::from_utf8_lossy(&out.stdout);
    ensure!(
        json.contains("\"route\": \"framework\""),
        "unexpected route on the bench repo"
    );

    let mut route_cmd = Command::new(&npuprof);
    route_cmd.arg("route").arg(&repo).arg("--json");
    let mut grep_cmd = Command::new("grep");
    grep_cmd.args(["-rn", "torch_npu.profiler"]).arg(&repo);

    // One untimed run of each warms the page cache; then interleave the timed runs.
    time(&mut route_cmd)?;
    time(&mut grep_cmd)?;
    let mut route_times = Vec::new();
    let mut grep_times = Vec::new();
    for _ in 0..args.reps {
        route_times.push(time(&mut route_cmd)?);
        grep_times.push(time(&mut grep_cmd)?);
    }
    let route_median = median(&mut route_times);
    let grep_median = median(&mut grep_times);
    let ratio = route_median.as_secs_f64() / grep_median.as_secs_f64();
    println!(
        "repository: target/bench/route-repo ({} files, {} per mille with torch_npu.profiler use)",
        args.files, args.profiler_permille
    );
    println!(
        "repetitions: {} (median reported; one warm-up run each)",
        args.reps
    );
    println!("npuprof route --json        : {:8.1} ms", ms(route_median));
    println!("grep -rn torch_npu.profiler : {:8.1} ms", ms(grep_median));
    println!(
        "ratio npuprof / grep        : {ratio:8.2} ({})",
        verdict(ratio)
    );
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn verdict(ratio: f64) -> &'static str {
    if ratio <= 1.0 {
        "npuprof is not slower"
    } else {
        "npuprof is SLOWER than grep"
    }
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort_unstable();
    times[times.len() / 2]
}

fn time(cmd: &mut Command) -> anyhow::Result<Duration> {
    let start = Instant::now();
    let status = cmd.stdout(Stdio::null()).stderr(Stdio::null()).status()?;
    let elapsed = start.elapsed();
    // grep exits 1 when nothing matches; both must find something here.
    if !status.success() {
        bail!("{cmd:?} exited with {status}");
    }
    Ok(elapsed)
}

/// A small deterministic generator (xorshift), so every run builds the same tree.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const STAMP: &str = ".bench-route-stamp";

fn generate(root: &Path, repo: &Path, files: usize, permille: u64) -> anyhow::Result<()> {
    let stamp = format!("route-bench v4 files={files} profiler-permille={permille}\n");
    if std::fs::read_to_string(repo.join(STAMP)).is_ok_and(|s| s == stamp) {
        eprintln!("reusing {}", repo.display());
        return Ok(());
    }
    if repo.exists() {
        std::fs::remove_dir_all(repo).with_context(|| format!("removing {}", repo.display()))?;
    }
    eprintln!("generating {files} files in {}...", repo.display());
    let example = root.join("examples/recipes-mini");
    let mut written = 0;
    for rel in [
        "executor/utils/profiler_context.py",
        "executor/core/engine/execution_engine.py",
        "executor/model_runner.py",
        "executor/core/config/inference_config.py",
    ] {
        let text = std::fs::read(example.join(rel)).with_context(|| format!("reading {rel}"))?;
        write(repo, rel, &text)?;
        written += 1;
    }
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut index = 0;
    while written < files {
        let package = index % 50;
        let sub = (index / 50) % 20;
        let dir = format!("src/pkg_{package:02}/sub_{sub:02}");
        let roll = rng.below(1000);
        let (rel, body) = if roll < permille {
            (
                format!("{dir}/prof_{index:05}.py"),
                profiler_module(&mut rng, index),
            )
        } else if roll < 830 {
            (
                format!("{dir}/module_{index:05}.py"),
                plain_module(&mut rng, index),
            )
        } else if roll < 840 {
            let model = index % 40;
            (
                format!("models/model_{model:02}/config/cfg_{index:05}.yaml"),
                config(&mut rng),
            )
        } else if roll < 920 {
            (
                format!("docs/{dir}/notes_{index:05}.md"),
                doc(&mut rng, index),
            )
        } else {
            (format!("{dir}/data_{index:05}.json"), data(&mut rng))
        };
        write(repo, &rel, body.as_bytes())?;
        written += 1;
        index += 1;
    }
    write(repo, STAMP, stamp.as_bytes())?;
    Ok(())
}

fn write(repo: &Path, rel: &str, bytes: &[u8]) -> anyhow::Result<()> {
    let path = repo.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))
}

const WORDS: [&str; 16] = [
    "hidden", "weight", "tokens", "batch", "cache", "layer", "scale", "offset", "mask", "expert",
    "router", "logits", "state", "block", "rank", "shard",
];

fn plain_module(rng: &mut Rng, index: usize) -> String {
    let mut s =
        format!("\"\"\"Module {index}: tensor helpers.\"\"\"\nimport math\n\nimport torch\n");
    // Ascend code often imports torch_npu everywhere (device setup); that alone is no evidence.
    if index.is_multiple_of(3) {
        s.push_str("import torch_npu\n");
    }
    s.push_str("\n\n");
    for f in 0..(3 + rng.below(12)) {
        let a = WORDS[rng.below(16) as usize];
        let b = WORDS[rng.below(16) as usize];
        let _ = writeln!(s, "def {a}_{b}_{f}({a}, {b}, eps=1e-6):");
        let _ = writeln!(s, "    # Combine {a} with {b}; keep the dtype.");
        for line in 0..(3 + rng.below(10)) {
            let _ = writeln!(
                s,
                "    {a} = {a} * math.sqrt({line} + eps) + {b}.sum(dim=-1, keepdim=True)"
            );
        }
        let _ = writeln!(
            s,
            "    for step in range({}):\n        {a} = torch.tanh({a})",
            2 + rng.below(5)
        );
        let _ = writeln!(s, "    return {a}\n\n");
    }
    s
}

fn profiler_module(rng: &mut Rng, index: usize) -> String {
    let mut s = format!("\"\"\"Debug helpers {index}.\"\"\"\nimport torch_npu\n\n\n");
    let _ = writeln!(s, "def capture_{index}(model, x):");
    let _ = writeln!(s, "    with torch_npu.profiler.profile(");
    let _ = writeln!(
        s,
        "        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler(\"./prof_{index}\"),"
    );
    let _ = writeln!(s, "    ):\n        return model(x)\n\n");
    s.push_str(&plain_module(rng, index));
    s
}

fn config(rng: &mut Rng) -> String {
    format!(
        "model_config:\n  model_name: \"m\"\n  enable_profiler: False   # [False, True]\n\nparallel_config:\n  world_size: {}\n\nscheduler_config:\n  max_new_tokens: {}\n",
        1 << rng.below(5),
        1 + rng.below(512)
    )
}

fn doc(rng: &mut Rng, index: usize) -> String {
    let mut s = format!("# Notes {index}\n\n");
    for _ in 0..(5 + rng.below(30)) {
        let _ = writeln!(
            s,
            "The {} of each {} is kept in the {} until the {} is flushed.",
            WORDS[rng.below(16) as usize],
            WORDS[rng.below(16) as usize],
            WORDS[rng.below(16) as usize],
            WORDS[rng.below(16) as usize]
        );
    }
    s
}

fn data(rng: &mut Rng) -> String {
    let values: Vec<String> = (0..(20 + rng.below(200)))
        .map(|_| rng.below(100_000).to_string())
        .collect();
    format!("{{\"values\": [{}]}}\n", values.join(", "))
}
