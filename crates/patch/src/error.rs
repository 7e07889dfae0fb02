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
