//! Developer tasks: `cargo xtask bench route|verify|summary|lint|advise|breakdown`,
//! `cargo xtask fidelity`, `cargo xtask codegen`.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod anchor;
mod bench_advise;
mod bench_breakdown;
mod bench_host_gaps;
mod bench_lint;
mod bench_route;
mod bench_summary;
mod bench_verify;
mod build;
mod codegen;
mod dense_trace;
mod fidelity;
mod json_parsers;

use clap::{Parser, Subcommand};

/// npuprof developer tasks.
#[derive(Debug, Parser)]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Debug, Subcommand)]
enum Task {
    /// Benchmarks, each measured against a reference tool in the same run.
    #[command(subcommand)]
    Bench(Bench),
    /// Checks npuprof's torch_npu facts against the real torch-npu wheels (needs PyPI).
    Fidelity(fidelity::Args),
    /// Writes the reference pages under `docs/` from the code (`--check`: exit 1 when stale).
    Codegen(codegen::Args),
}

#[derive(Debug, Subcommand)]
enum Bench {
    /// `npuprof route` on a generated 20,000-file repository vs `grep -rn`.
    Route(bench_route::Args),
    /// `npuprof verify` on a generated GB-scale run vs Python's json and csv modules.
    Verify(bench_verify::Args),
    /// `npuprof summary` on a multi-million-row kernel_details.csv vs pandas read_csv + groupby.
    Summary(bench_summary::Args),
    /// `npuprof advise` against `npuprof summary` on the same file, and msprof-analyze's advisor.
    Advise(bench_advise::Args),
    /// `npuprof breakdown` on a generated multi-step trace and kernel table vs `npuprof verify`,
    /// and its compare of two runs vs msprof-analyze's `compare`.
    Breakdown(bench_breakdown::Args),
    /// `npuprof lint` on a generated file with 2000 windows vs the same with 200, and vs
    /// Python's `ast.parse`.
    Lint(bench_lint::Args),
}

fn main() -> anyhow::Result<std::process::ExitCode> {
    match Cli::parse().task {
        Task::Bench(Bench::Route(args)) => bench_route::run(&args),
        Task::Bench(Bench::Verify(args)) => bench_verify::run(&args),
        Task::Bench(Bench::Summary(args)) => bench_summary::run(&args),
        Task::Bench(Bench::Advise(args)) => bench_advise::run(&args),
        Task::Bench(Bench::Breakdown(args)) => bench_breakdown::run(&args),
        Task::Bench(Bench::Lint(args)) => bench_lint::run(&args),
        // Exit 2 on an error, as 1 means a stale page (or drift).
        Task::Codegen(args) => {
            return Ok(codegen::run(&args).unwrap_or_else(|e| {
                eprintln!("error: {e:#}");
                std::process::ExitCode::from(2)
            }));
        }
        Task::Fidelity(args) => {
            return Ok(fidelity::run(&args).unwrap_or_else(|e| {
                eprintln!("error: {e:#}");
                std::process::ExitCode::from(2)
            }));
        }
    }?;
    Ok(std::process::ExitCode::SUCCESS)
}
