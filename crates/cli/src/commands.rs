//! One module per subcommand; each has an `Args` struct and a `run` function.

mod advise;
mod breakdown;
mod collect;
mod compare;
mod completions;
mod inject;
mod lint;
mod man;
mod mcp;
mod patch;
mod plan;
mod plan_serve;
mod relocate;
mod revert;
mod route;
mod route_target;
mod skill;
mod status;
mod summary;
mod verify;

use clap::Subcommand;

use crate::exit::Exit;

/// The subcommands, in the order of the workflow.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Decide whether a repository's built-in profiler can be used (path A) or one must be injected (path B).
    Route(route::Args),
    /// Simulate the torch_npu schedule: recorded steps, clean close, step and token budget.
    Plan(plan::Args),
    /// Path A: set the profiling window in the framework's profiler and run config (`--dry-run` shows the diff).
    Patch(patch::Args),
    /// Path B: write a profiling harness into a repository without a profiler.
    Inject(inject::Args),
    /// Check Python code that uses torch_npu.profiler for mistakes that spoil a profile.
    Lint(lint::Args),
    /// Judge a profiling run's output and say what went wrong and what to do next.
    Verify(verify::Args),
    /// Point a model's output directory at a local disk (the bad-output-disk fix), revertibly.
    Relocate(relocate::Args),
    /// The whole workflow in one command: route, patch, run, verify, fix, revert.
    Collect(collect::Args),
    /// What a profile says: step split, top kernels, pipes, communication, ranks (terminal, JSON, HTML).
    Summary(summary::Args),
    /// Compare two profiles: step-time delta and the kernel deltas that explain it.
    Compare(compare::Args),
    /// What is wrong with a profile and what to do: findings with evidence, time at stake, next action.
    Advise(advise::Args),
    /// Break a profile down to the model's structure: nn.Module tree (exact) or inferred layers.
    Breakdown(breakdown::Args),
    /// List what npuprof has changed in a repository.
    Status(status::Args),
    /// Restore every file npuprof changed, byte for byte.
    Revert(revert::Args),
    /// Print the agent skill (SKILL.md) that teaches coding agents this workflow, or install it.
    Skill(skill::Args),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish).
    Completions(completions::Args),
    /// Print the manual page (roff), of npuprof or of one command.
    Man(man::Args),
    /// Serve every command as a tool for coding agents: a Model Context Protocol server on stdin/stdout.
    Mcp(mcp::Args),
}

impl Command {
    /// Runs the subcommand.
    pub fn run(self) -> anyhow::Result<Exit> {
        match self {
            Command::Route(args) => route::run(args),
            Command::Plan(args) => plan::run(args),
            Command::Patch(args) => patch::run(args),
            Command::Inject(args) => inject::run(args),
            Command::Lint(args) => lint::run(args),
            Command::Verify(args) => verify::run(args),
            Command::Relocate(args) => relocate::run(args),
            Command::Collect(args) => collect::run(args),
            Command::Summary(args) => summary::run(args),
            Command::Compare(args) => compare::run(args),
            Command::Advise(args) => advise::run(args),
            Command::Breakdown(args) => breakdown::run(args),
            Command::Status(args) => status::run(args),
            Command::Revert(args) => revert::run(args),
            Command::Skill(args) => skill::run(args),
            Command::Completions(args) => completions::run(args),
            Command::Man(args) => man::run(args),
            Command::Mcp(args) => mcp::run(args),
        }
    }
}
