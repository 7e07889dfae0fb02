//! `--fix`: applies the findings' mechanical edits to one file's text, re-parses and re-lints
//! the result. Text in, text out; the caller writes.

use npuprof_patch::{Edit, Edits};
use npuprof_syntax::{first_error, parse};

use crate::finding::Finding;
use crate::lint_source;

/// Why a file's fixes were refused.
#[derive(Debug, thiserror::Error)]
pub enum FixError {
    /// The fixed text does not parse, though the original did.
    #[error("{path}: the fixed file would have a syntax error on line {line}; nothing changed")]
    NewSyntaxError {
        /// The file.
        path: String,
        /// 1-based line of the first error in the fixed text.
        line: usize,
    },
}

/// The outcome of fixing one file.
#[derive(Debug, Clone)]
pub struct Fixed {
    /// The fixed text (the original when nothing was fixable).
    pub text: String,
    /// The findings whose edits were applied.
    pub applied: Vec<Finding>,
    /// The findings of the fixed text.
    pub remaining: Vec<Finding>,
}

/// Applies every mechanical fix of `source` whose edits do not overlap an earlier one,
/// re-parses the result (refusing new syntax errors) and lints it again.
pub fn fix_source(path: &str, source: &str) -> Result<Fixed, FixError> {
    let findings = lint_source(path, source);
    let mut chosen: Vec<Edit> = Vec::new();
    let mut applied = Vec::new();
    for finding in findings.into_iter().filter(|f| !f.edits.is_empty()) {
        let mut candidate = chosen.clone();
        candidate.extend(finding.edits.iter().cloned());
        if Edits::new(source, candidate.clone()).is_ok() {
            chosen = candidate;
            applied.push(finding);
        }
    }
    if applied.is_empty() {
        return Ok(Fixed {
            text: source.to_owned(),
            applied,
            remaining: lint_source(path, source),
        });
    }
    let edits = Edits::new(source, chosen).expect("checked edit by edit above");
    let text = edits.apply(source);
    let was_valid = parse(source).is_some_and(|t| !t.root_node().has_error());
    if was_valid
        && let Some(error) = parse(&text)
            .and_then(|t| first_error(t.root_node()).map(|e| e.start_position().row + 1))
    {
        return Err(FixError::NewSyntaxError {
            path: path.to_owned(),
            line: error,
        });
    }
    let remaining = lint_source(path, &text);
    Ok(Fixed {
        text,
        applied,
        remaining,
    })
}
