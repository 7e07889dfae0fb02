//! `npuprof lint`: static checks of Python code that uses torch_npu.profiler.

use std::io::Write;
use std::path::PathBuf;

use anstyle::{AnsiColor, Style};
use npuprof_lint::{Finding, Severity};

use crate::exit::Exit;
use crate::output::{print_json, stderr_colored, stdout_colored};

/// Arguments of `npuprof lint`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Files or directories to check (directories: `*.py`, respecting .gitignore). Default: `.`.
    #[arg(value_name = "PATHS")]
    pub paths: Vec<PathBuf>,
    /// Print `{findings: [...], files_checked}` as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs `npuprof lint`: exit 0 without error findings, 1 with, 2 when it cannot run.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths
    };
    let report = npuprof_lint::lint_paths(&paths)?;
    let errors = report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    if args.json {
        print_json(&report)?;
    } else {
        let mut out = crate::output::stdout();
        let color = stdout_colored();
        for finding in &report.findings {
            write_finding(&mut out, finding, color)?;
        }
        let warnings = report
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Warning)
            .count();
        let infos = report.findings.len() - errors - warnings;
        let summary = if report.findings.is_empty() {
            format!(
                "npuprof lint: no findings ({} file(s) checked)",
                report.files_checked
            )
        } else {
            format!(
                "npuprof lint: {} finding(s): {errors} error(s), {warnings} warning(s), {infos} info ({} file(s) checked)",
                report.findings.len(),
                report.files_checked
            )
        };
        let style = if stderr_colored() {
            Style::new().bold()
        } else {
            Style::new()
        };
        anstream::eprintln!("{style}{summary}{style:#}");
    }
    Ok(if errors > 0 { Exit::Findings } else { Exit::Ok })
}

/// `path:line:col: CODE [severity] message` and an indented `fix:` line, like ruff.
fn write_finding(out: &mut impl Write, finding: &Finding, color: bool) -> anyhow::Result<()> {
    let (bold, code_style) = if color {
        let tint = match finding.severity {
            Severity::Error => AnsiColor::Red,
            Severity::Warning => AnsiColor::Yellow,
            Severity::Info => AnsiColor::Cyan,
        };
        (
            Style::new().bold(),
            Style::new().bold().fg_color(Some(tint.into())),
        )
    } else {
        (Style::new(), Style::new())
    };
    writeln!(
        out,
        "{bold}{}:{}:{}:{bold:#} {code_style}{} [{}]{code_style:#} {}",
        finding.path,
        finding.line,
        finding.column,
        finding.code.as_str(),
        finding.severity.as_str(),
        finding.message
    )?;
    writeln!(out, "  fix: {}", finding.fix)?;
    Ok(())
}
