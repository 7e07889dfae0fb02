//! Why a patch was refused.

use crate::edit::EditError;

/// A refusal: the input is not what npuprof can safely edit, or (internal) an edit went wrong.
#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    /// The input does not parse.
    #[error(
        "{language} syntax error at line {line}, column {column}: {detail}; fix it first (npuprof edits only files that parse)"
    )]
    Syntax {
        /// `Python` or `YAML`.
        language: &'static str,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong, or the text around the error.
        detail: String,
    },
    /// An expected definition or key is missing.
    #[error("{what} not found; found instead: {found}")]
    NotFound {
        /// What was looked for.
        what: String,
        /// What is there instead.
        found: String,
    },
    /// The input is valid but cannot be patched as asked.
    #[error("{0}")]
    Refused(String),
    /// npuprof produced a bad edit (a bug): nothing is written.
    #[error("internal error, nothing written: {0}")]
    Internal(String),
    /// Two computed edits overlap (a bug): nothing is written.
    #[error("internal error, nothing written: {0}")]
    Edit(#[from] EditError),
}

impl npuprof_severity::Classify for PatchError {
    fn classify(&self) -> Option<npuprof_severity::Classified> {
        use npuprof_severity::{Classified, ErrorCode};
        Some(match self {
            PatchError::Syntax { .. } => Classified::hinted(
                ErrorCode::InvalidInput,
                "fix the syntax error first: npuprof edits only files that parse",
            ),
            PatchError::NotFound { .. } => Classified::hinted(
                ErrorCode::NotFound,
                "`npuprof route . --json` says whether the repository is path A (patch) or path B (inject)",
            ),
            PatchError::Refused(_) => Classified::new(ErrorCode::Refused),
            PatchError::Internal(_) | PatchError::Edit(_) => Classified::new(ErrorCode::Internal),
        })
    }
}
