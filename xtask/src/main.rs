//! Developer tasks: `cargo xtask bench route|verify|summary|advise`.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod bench_advise;
mod bench_route;
mod bench_summary;
mod bench_verify;
mod build;

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
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().task {
        Task::Bench(Bench::Route(args)) => bench_route::run(&args),
        Task::Bench(Bench::Verify(args)) => bench_verify::run(&args),
        Task::Bench(Bench::Summary(args)) => bench_summary::run(&args),
        Task::Bench(Bench::Advise(args)) => bench_advise::run(&args),
    }
}
