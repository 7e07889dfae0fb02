//! `npuprof lint`: static checks of Python code that uses torch_npu.profiler. `--diff` prints
//! the mechanical fixes as a unified diff; `--fix` applies them through one journaled
//! transaction (`npuprof revert` restores the files).

use std::io::Write;
use std::path::{Path, PathBuf};

use anstyle::{AnsiColor, Style};
use npuprof_lint::{FileFix, Finding, Report, Severity};
use npuprof_patch::diff::unified_diff;

use crate::exit::Exit;
use crate::output::{print_json, stderr_colored, stdout_colored};

/// Arguments of `npuprof lint`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Files or directories to check (directories: `*.py`, respecting .gitignore). Default: `.`.
    #[arg(value_name = "PATHS")]
    pub paths: Vec<PathBuf>,
    /// Print `{schema_version, findings: [...], files_checked}` as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Apply the mechanical fixes (add the closing `prof.step()`, raise a `range(...)` bound),
    /// journaled in `--repo` so that `npuprof revert` restores the files.
    #[arg(long, conflicts_with = "diff")]
    pub fix: bool,
    /// Print the mechanical fixes as a unified diff and change nothing (exit 1 when there are some).
    #[arg(long)]
    pub diff: bool,
    /// The repository that holds the files and the journal, for `--fix`.
    #[arg(long, default_value = ".", value_name = "DIR")]
    pub repo: PathBuf,
}

/// Runs `npuprof lint`: exit 0 without error findings, 1 with, 2 when it cannot run.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths
    };
    let (report, fixes) = if args.fix || args.diff {
        let (fixes, report) = npuprof_lint::fix_paths(&paths)?;
        (report, fixes)
    } else {
        (npuprof_lint::lint_paths(&paths)?, Vec::new())
    };
    if args.diff {
        return print_diff(&fixes, &report);
    }
    if args.fix {
        apply(&args.repo, &fixes)?;
    }
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
        errln!("{style}{summary}{style:#}");
    }
    Ok(if errors > 0 { Exit::Findings } else { Exit::Ok })
}

/// Prints every file's fixes as one unified diff; exit 1 when there are fixes.
fn print_diff(fixes: &[FileFix], report: &Report) -> anyhow::Result<Exit> {
    let mut out = crate::output::stdout();
    for fix in fixes {
        let path = fix.path.display().to_string();
        write!(
            out,
            "{}",
            unified_diff(&path, &fix.original, &fix.fixed.text)
        )?;
    }
    let applied: usize = fixes.iter().map(|f| f.fixed.applied.len()).sum();
    errln!(
        "npuprof lint: {applied} fixable finding(s) in {} file(s); {} finding(s) would remain ({} file(s) checked)",
        fixes.len(),
        report.findings.len(),
        report.files_checked
    );
    Ok(if fixes.is_empty() {
        Exit::Ok
    } else {
        Exit::Findings
    })
}

/// Writes the fixed files through one journaled transaction on `repo`, then says what changed.
fn apply(repo: &Path, fixes: &[FileFix]) -> anyhow::Result<()> {
    if fixes.is_empty() {
        return Ok(());
    }
    npuprof_workflow::lint_fix::apply(repo, fixes)?;
    for fix in fixes {
        for finding in &fix.fixed.applied {
            errln!(
                "fixed {}:{}: {} ({})",
                finding.path,
                finding.line,
                finding.code.as_str(),
                finding.code.name()
            );
        }
    }
    errln!("`npuprof revert` restores the original files");
    Ok(())
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
