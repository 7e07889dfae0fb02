//! What lint's integration tests share: findings rendered like the CLI prints them.

use npuprof_lint::Finding;

/// `path:line:col: CODE [severity] message` and an indented `fix:` line per finding.
pub fn render(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|f| {
            format!(
                "{}:{}:{}: {} [{}] {}\n  fix: {}\n",
                f.path,
                f.line,
                f.column,
                f.code.as_str(),
                f.severity.as_str(),
                f.message,
                f.fix
            )
        })
        .collect()
}
