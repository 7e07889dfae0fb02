//! `--parsers` of `cargo xtask bench advise` and `cargo xtask bench breakdown`: the fastest
//! validating JSON readers on crates.io (serde_json, sonic-rs; `bench/json-parsers`, a workspace
//! of its own built here) timed on the bench's trace in the same run as `wc -l`: what any reader
//! that checks the JSON costs, against npuprof's readers.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;

use crate::bench_verify::{measure, median, one_core};

/// The reference readers' modes (`bench/json-parsers/src/main.rs` says what each does) and how
/// the table names them.
const PARSER_MODES: [(&str, &str); 4] = [
    ("serde-validate", "serde_json, validate only"),
    ("sonic-validate", "sonic-rs, validate only"),
    ("serde-fields", "serde_json, ph/ts/dur of each event"),
    ("sonic-fields", "sonic-rs, ph/ts/dur of each event"),
];

/// Times the fastest validating JSON readers on crates.io on `trace` (one core, the median of
/// `runs` after a warm-up, the parse alone: the harness reads the file first) against `wc -l`
/// (`wc_cpu`, CPU seconds in the same run): what a reader that checks the JSON costs.
pub fn run(root: &Path, (trace, wc_cpu): &(PathBuf, f64), runs: usize) -> anyhow::Result<()> {
    let manifest = root.join("bench/json-parsers/Cargo.toml");
    let target = crate::build::target_dir(root).join("bench/json-parsers");
    eprintln!("building {} ...", manifest.display());
    let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["build", "--release", "--quiet", "--manifest-path"])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target)
        .status()
        .context("cargo build of bench/json-parsers")?;
    anyhow::ensure!(status.success(), "cargo build of bench/json-parsers failed");
    let harness = target.join("release/json-parsers");
    println!();
    println!("| reader, one core | parse s (median) | / wc -l CPU | events |");
    println!("|---|---|---|---|");
    for (mode, what) in PARSER_MODES {
        let cmd = one_core(&harness, &[mode.as_ref(), trace.as_os_str()]);
        eprintln!("timing json-parsers {mode} ...");
        measure(&cmd, false)?;
        let mut secs = Vec::new();
        let mut events = 0;
        for _ in 0..runs.max(1) {
            let measured = measure(&cmd, false)?;
            let line: serde_json::Value =
                serde_json::from_slice(&measured.stdout).context("json-parsers printed no JSON")?;
            secs.push(line["parse_s"].as_f64().context("no parse_s")?);
            events = line["events"].as_u64().unwrap_or(0);
        }
        let secs = median(&mut secs);
        println!(
            "| {what} | {secs:.2} | {:.2} | {events} |",
            secs / wc_cpu.max(1e-6)
        );
    }
    Ok(())
}
