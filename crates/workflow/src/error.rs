//! Why a workflow stopped.

use std::path::PathBuf;

use npuprof_journal::JournalError;
use npuprof_patch::PatchError;
use npuprof_relocate::RelocateError;
use npuprof_repository::TargetError;
use npuprof_route::RouteError;
use npuprof_schedule::WindowError;
use npuprof_verify::VerifyError;

/// Why a workflow stopped. A library's error is kept whole (its message and its kind), so the
/// binary classifies it as it would the library's own.
#[derive(Debug, thiserror::Error)]
pub enum WorkflowError {
    /// The journal refused or failed.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The repository could not be routed.
    #[error(transparent)]
    Route(#[from] RouteError),
    /// The target could not be resolved.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// The target could not be resolved, and the repository has no built-in profiler to patch
    /// (route: path B).
    #[error(transparent)]
    NoProfiler(Box<NoProfiler>),
    /// The window is out of bounds.
    #[error(transparent)]
    Window(#[from] WindowError),
    /// The run could not be verified.
    #[error(transparent)]
    Verify(#[from] VerifyError),
    /// The output could not be relocated.
    #[error(transparent)]
    Relocate(#[from] RelocateError),
    /// An `inject` path cannot be used.
    #[error(transparent)]
    InjectPath(#[from] crate::inject::PathError),
    /// The harness could not be rendered.
    #[error(transparent)]
    Harness(#[from] crate::inject::HarnessError),
    /// A file could not be patched; nothing was changed.
    #[error("refusing to patch `{path}`: {refusal}; nothing was changed")]
    Patch {
        /// The file, relative to the repository.
        path: String,
        /// Why (in the message, so not a source).
        refusal: PatchError,
    },
    /// A file to edit is not UTF-8.
    #[error("`{}` is not UTF-8; refusing to edit it", .0.display())]
    NotUtf8(PathBuf),
    /// A file to change is outside the repository that journals it.
    #[error(
        "`{}` is outside the repository `{}`: give `--repo` the directory that holds it",
        path.display(),
        repo.display()
    )]
    OutsideRepository {
        /// The file.
        path: PathBuf,
        /// The repository.
        repo: PathBuf,
    },
    /// The repository is not a directory.
    #[error("the repository `{}` is not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// A file could not be read.
    #[error("cannot read `{}`", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The plan asks for more steps than are simulated.
    #[error(
        "a decode window over {limit} steps is not simulated (skip_first + repeat × (wait + warmup + active) = {steps}); no inference run profiles that many steps"
    )]
    Unbounded {
        /// The window's steps.
        steps: u64,
        /// The largest simulated.
        limit: u64,
    },
    /// The target has nothing to plan or patch.
    #[error("{0}")]
    NotPlannable(String),
    /// `collect` stopped (the message says why); every change is reverted.
    #[error(transparent)]
    Collect(#[from] crate::collect::Stop),
}

/// A target that could not be resolved in a repository without a built-in profiler to patch
/// (route: path B): what route proposes instead, the resolution error as the cause.
#[derive(Debug, thiserror::Error)]
#[error("this repository has no built-in profiler to patch (route: path B); {next}")]
pub struct NoProfiler {
    /// What route proposes instead (`run \`npuprof inject …\``).
    pub next: String,
    /// Why the target could not be resolved.
    pub source: TargetError,
}

impl npuprof_severity::Classify for WorkflowError {
    /// A library's error inside the workflow is coded as that library's; `None` when a cause
    /// (or nothing known) decides.
    fn classify(&self) -> Option<npuprof_severity::Classified> {
        use npuprof_severity::{Classified, ErrorCode};
        match self {
            WorkflowError::Journal(err) => err.classify(),
            WorkflowError::Route(err) => err.classify(),
            WorkflowError::Target(err) => err.classify(),
            WorkflowError::NoProfiler(err) => err.source.classify(),
            WorkflowError::Relocate(err) => err.classify(),
            WorkflowError::Verify(err) => err.classify(),
            WorkflowError::Patch { refusal, .. } => refusal.classify(),
            WorkflowError::Harness(err) => err.source.classify(),
            WorkflowError::InjectPath(err) => Some(Classified::hinted(
                if err.missing {
                    ErrorCode::NotFound
                } else {
                    ErrorCode::InvalidInput
                },
                "give --entry and --out as files inside the repository",
            )),
            WorkflowError::NotUtf8(_)
            | WorkflowError::NotADirectory(_)
            | WorkflowError::OutsideRepository { .. } => {
                Some(Classified::new(ErrorCode::InvalidInput))
            }
            WorkflowError::Window(_) | WorkflowError::Unbounded { .. } => {
                Some(Classified::new(ErrorCode::Usage))
            }
            WorkflowError::NotPlannable(_) => Some(Classified::new(ErrorCode::Refused)),
            WorkflowError::Read { source, .. } => Some(Classified::of_io(source)),
            WorkflowError::Collect(_) => None,
        }
    }
}

impl WorkflowError {
    /// The code of this error as the binary's error document gives it: the outermost cause in
    /// its chain that knows its code decides (an IO error by its kind), else `failed`.
    pub fn code(&self) -> npuprof_severity::ErrorCode {
        use npuprof_severity::{KnownType, causes, classify_cause, known};
        const KNOWN: &[KnownType] = &[
            known::<WorkflowError>,
            known::<TargetError>,
            known::<JournalError>,
            known::<RouteError>,
            known::<PatchError>,
            known::<VerifyError>,
            known::<RelocateError>,
        ];
        causes(self)
            .find_map(|cause| classify_cause(cause, KNOWN))
            .map_or(npuprof_severity::ErrorCode::Failed, |known| known.code)
    }
}

/// An error with its causes, `: `-separated, each said once: a cause whose text the message
/// already holds (an error that quotes its source, as `cannot read x: <the OS error>` does) is
/// not repeated.
pub fn error_text(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(c) = cause {
        let said = c.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        cause = c.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::error_text;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot read `x`: {source}")]
    struct Quotes {
        source: std::io::Error,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("reading the config")]
    struct Wraps(#[source] std::io::Error);

    #[test]
    fn a_cause_the_message_quotes_is_said_once() {
        let denied = || std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let quoted = error_text(&Quotes { source: denied() });
        assert_eq!(quoted, format!("cannot read `x`: {}", denied()));
        let wrapped = error_text(&Wraps(denied()));
        assert_eq!(wrapped, format!("reading the config: {}", denied()));
    }
}
