//! Why a command failed (exit 2), as the closed set of codes in the `--json` error document.
//!
//! A [`Failure`] is built from a command's error by looking through its chain of causes for a
//! known error type (a [`Failure`] raised by the CLI itself, the libraries' error enums, an IO
//! error); the outermost known cause decides the code and the hint. The libraries' errors say
//! their own code ([`npuprof_severity::Classify`]); this module only lists their types. The
//! message is the whole chain, as printed on stderr.

use std::fmt;
use std::io;

use npuprof_journal::JournalError;
use npuprof_lint::LintError;
use npuprof_mcp::McpError;
use npuprof_patch::PatchError;
use npuprof_patch::inject::InjectError;
use npuprof_relocate::RelocateError;
use npuprof_repository::TargetError;
use npuprof_route::RouteError;
use npuprof_serve::ServeError;
pub use npuprof_severity::ErrorCode;
use npuprof_severity::{Classified, KnownType, classify_cause, known};
use npuprof_summary::SummaryError;
use npuprof_verify::VerifyError;
use npuprof_workflow::WorkflowError;
use serde::Serialize;

/// A failure with its code, message and a hint at what to do.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    code: ErrorCode,
    message: String,
    hint: String,
}

impl Failure {
    /// A failure with the code's default hint.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            hint: code.default_hint().to_owned(),
        }
    }

    /// Replaces the hint.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = hint.into();
        self
    }

    /// Classifies a command's error (see the module documentation).
    pub fn from_error(err: &anyhow::Error) -> Self {
        let message = message(err);
        let Classified { code, hint } = err
            .chain()
            .find_map(classify)
            .unwrap_or(Classified::new(ErrorCode::Failed));
        let failure = Self::new(code, message);
        match hint {
            Some(hint) => failure.with_hint(hint),
            None => failure,
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The hint when it says more than its code's generic default (what the plain-text error
    /// prints under the message).
    pub fn specific_hint(&self) -> Option<&str> {
        (self.hint != self.code.default_hint()).then_some(self.hint.as_str())
    }

    /// A command-line error from clap: its first line is the message; its tips and the usage
    /// line are the hint.
    pub fn from_clap(err: &clap::Error) -> Self {
        let text = err.to_string();
        let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
        let message = lines
            .next()
            .unwrap_or("invalid command line")
            .trim_start_matches("error: ")
            .to_owned();
        let mut hints: Vec<String> = Vec::new();
        for line in lines {
            if let Some(tip) = line.strip_prefix("tip: ") {
                hints.push(tip.to_owned());
            } else if let Some(usage) = line.strip_prefix("Usage: ") {
                hints.push(format!("usage: {usage} (`--help` lists the options)"));
            }
        }
        let failure = Self::new(ErrorCode::Usage, message);
        if hints.is_empty() {
            failure
        } else {
            failure.with_hint(hints.join("; "))
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

/// The whole chain of an error as one line, each cause once (as printed on stderr and in the
/// error document); a too-long path (ENAMETOOLONG, which the system words "File name too
/// long") is named as such.
pub fn message(err: &anyhow::Error) -> String {
    let mut out = npuprof_workflow::error_text(&**err);
    let too_long = err
        .chain()
        .filter_map(|cause| cause.downcast_ref::<io::Error>())
        .any(|io| io.kind() == io::ErrorKind::InvalidFilename);
    if too_long {
        out.push_str(" — path too long (ENAMETOOLONG: the path, or one name in it, exceeds the system's limit)");
    }
    out
}

/// The libraries' error types, each of which says its own code
/// ([`npuprof_severity::Classify`]); a cause of another type is not known.
const KNOWN: &[KnownType] = &[
    known::<RouteError>,
    known::<VerifyError>,
    known::<LintError>,
    known::<PatchError>,
    known::<InjectError>,
    known::<JournalError>,
    known::<RelocateError>,
    known::<SummaryError>,
    known::<WorkflowError>,
    known::<TargetError>,
    known::<ServeError>,
    known::<McpError>,
];

/// The code and hint of one cause of an error, if its type is known; a [`Failure`] keeps its
/// own hint.
fn classify(cause: &(dyn std::error::Error + 'static)) -> Option<Classified> {
    if let Some(failure) = cause.downcast_ref::<Failure>() {
        return Some(Classified::hinted(failure.code, failure.hint.clone()));
    }
    classify_cause(cause, KNOWN)
}

/// Whether `err` comes from writing to a reader that has gone (a closed pipe).
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain()
        .filter_map(|cause| cause.downcast_ref::<io::Error>())
        .any(|io| io.kind() == io::ErrorKind::BrokenPipe)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use anyhow::Context as _;

    use super::{ErrorCode, Failure};

    fn code_of(err: anyhow::Error) -> ErrorCode {
        Failure::from_error(&err).code
    }

    #[test]
    fn the_outermost_known_cause_decides() {
        let err = Err::<(), _>(npuprof_route::RouteError::NotFound(PathBuf::from("x")))
            .context("scanning")
            .unwrap_err();
        assert_eq!(code_of(err), ErrorCode::NotFound);
        let failure = Failure::from_error(
            &anyhow::Error::new(Failure::new(ErrorCode::Refused, "no")).context("outer"),
        );
        assert_eq!(failure.code, ErrorCode::Refused);
        assert_eq!(failure.message, "outer: no");
    }

    #[test]
    fn a_failure_keeps_its_own_hint_and_only_specific_hints_are_printed() {
        let own = Failure::new(ErrorCode::Usage, "no command `x`").with_hint("one of: a, b");
        let failure = Failure::from_error(&anyhow::Error::new(own).context("man"));
        assert_eq!(failure.hint, "one of: a, b");
        assert_eq!(failure.specific_hint(), Some("one of: a, b"));
        let generic = Failure::from_error(&anyhow::anyhow!("plain"));
        assert_eq!(generic.specific_hint(), None);
        let route = Failure::from_error(&anyhow::Error::new(npuprof_route::RouteError::NotFound(
            PathBuf::from("x"),
        )));
        assert!(
            route
                .specific_hint()
                .is_some_and(|hint| hint.contains("repository's root directory")),
            "{route:?}"
        );
    }

    #[test]
    fn journal_refusals_and_wrapped_causes() {
        use npuprof_journal::JournalError;
        let edited = JournalError::EditedSince {
            path: PathBuf::from("a.py"),
        };
        assert_eq!(code_of(edited.into()), ErrorCode::Refused);
        let missing = JournalError::Io {
            action: "read",
            path: PathBuf::from("a.py"),
            source: std::io::ErrorKind::NotFound.into(),
        };
        let rolled_back = JournalError::RolledBack {
            source: Box::new(missing),
        };
        assert_eq!(code_of(rolled_back.into()), ErrorCode::NotFound);
    }

    #[test]
    fn every_cause_is_printed_once_and_a_long_path_is_named() {
        let io = std::io::Error::from_raw_os_error(20);
        let text = io.to_string();
        let journal = npuprof_journal::JournalError::Io {
            action: "read",
            path: PathBuf::from("a.py"),
            source: io,
        };
        let rolled_back = npuprof_journal::JournalError::RolledBack {
            source: Box::new(journal),
        };
        let err = anyhow::Error::new(rolled_back).context("patching");
        let message = super::message(&err);
        assert_eq!(message.matches(&text).count(), 1, "{message}");
        assert!(
            message.starts_with("patching: cannot read `a.py`"),
            "{message}"
        );
        let long = std::fs::read("x".repeat(300)).unwrap_err();
        let message = super::message(&anyhow::Error::new(long).context("reading"));
        assert!(message.contains("path too long (ENAMETOOLONG"), "{message}");
    }

    #[test]
    fn io_errors_by_kind_and_unknown_errors_fail() {
        let missing = std::fs::read("/nonexistent/npuprof").unwrap_err();
        assert_eq!(code_of(missing.into()), ErrorCode::NotFound);
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert_eq!(code_of(denied.into()), ErrorCode::Io);
        assert_eq!(code_of(anyhow::anyhow!("plain")), ErrorCode::Failed);
    }

    /// The conventions page's table (written by hand) and the agent skill list exactly the
    /// codes there are.
    #[test]
    fn docs_and_skill_document_every_code() {
        let readme = include_str!("../../../docs/conventions.md");
        let skill = include_str!("skill/SKILL.md");
        let names: Vec<String> = ErrorCode::ALL
            .into_iter()
            .map(|code| {
                serde_json::to_value(code)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        let (_, section) = readme
            .split_once("## JSON errors")
            .expect("docs/conventions.md section");
        let (section, _) = section.split_once("\n## ").expect("end of the section");
        let rows = section
            .lines()
            .filter_map(|line| line.strip_prefix("| `"))
            .filter_map(|rest| rest.split_once("` |"))
            .map(|(code, _)| code);
        assert_eq!(
            rows.collect::<Vec<_>>(),
            names,
            "docs/conventions.md's JSON error table"
        );
        let listed = skill
            .split_once("error codes: ")
            .map(|(_, rest)| rest.split_once('.').map_or(rest, |(list, _)| list))
            .expect("the skill lists the error codes after `error codes: `");
        let listed: Vec<String> = listed
            .split(',')
            .map(|code| code.trim().trim_matches('`').to_owned())
            .collect();
        assert_eq!(listed, names, "the skill's list of error codes");
    }

    #[test]
    fn codes_serialise_in_snake_case() {
        let json = serde_json::to_value(Failure::new(ErrorCode::InvalidInput, "m")).unwrap();
        assert_eq!(json["code"], "invalid_input");
        assert_eq!(json["message"], "m");
        assert!(json["hint"].as_str().is_some_and(|h| !h.is_empty()));
    }
}
