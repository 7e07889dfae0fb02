//! Why a command failed (exit 2): the closed set of codes of the `--json` error document, and
//! the trait by which each library's error says its own code and hint.

use std::borrow::Cow;

use serde::Serialize;

/// What kind of failure ended a command with exit 2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The command line is wrong: unknown flag, missing or invalid value.
    Usage,
    /// A path, file, model, config or definition that was named does not exist.
    NotFound,
    /// The input exists but cannot be used: not a directory, a syntax error, no run output in it.
    InvalidInput,
    /// npuprof refused a change that would be unsafe or wrong; nothing was changed.
    Refused,
    /// Reading or writing failed (permissions, disk).
    Io,
    /// A bug in npuprof; nothing was written.
    Internal,
    /// The command could not complete for another reason; the message says why.
    Failed,
}

impl ErrorCode {
    /// Every code, in declaration order (the order of the documentation's table).
    pub const ALL: [ErrorCode; 7] = [
        ErrorCode::Usage,
        ErrorCode::NotFound,
        ErrorCode::InvalidInput,
        ErrorCode::Refused,
        ErrorCode::Io,
        ErrorCode::Internal,
        ErrorCode::Failed,
    ];

    /// The hint given when nothing more specific is known.
    pub fn default_hint(self) -> &'static str {
        match self {
            ErrorCode::Usage => "`npuprof <command> --help` lists each command's options",
            ErrorCode::NotFound => {
                "check the names and paths given (paths are relative to the current directory)"
            }
            ErrorCode::InvalidInput => "fix the input named in the message, then run again",
            ErrorCode::Refused => {
                "nothing was changed; fix the cause named in the message (`npuprof status` lists npuprof's changes)"
            }
            ErrorCode::Io => {
                "check the permissions of the paths in the message and the free disk space"
            }
            ErrorCode::Internal => {
                "this is a bug in npuprof (nothing was written); report it with the command line"
            }
            ErrorCode::Failed => "the message names the cause; fix it and run again",
        }
    }
}

/// An error's code and, when its library knows one, a specific hint at what to do (fixed
/// wording, or built from what the error found on disk).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classified {
    /// The code.
    pub code: ErrorCode,
    /// The specific hint; `None` for the code's default.
    pub hint: Option<Cow<'static, str>>,
}

impl Classified {
    /// A code with its default hint.
    pub const fn new(code: ErrorCode) -> Self {
        Self { code, hint: None }
    }

    /// A code with a specific hint.
    pub fn hinted(code: ErrorCode, hint: impl Into<Cow<'static, str>>) -> Self {
        Self {
            code,
            hint: Some(hint.into()),
        }
    }

    /// The code of an IO error, by its kind.
    pub fn of_io(err: &std::io::Error) -> Self {
        use std::io::ErrorKind as Kind;
        match err.kind() {
            Kind::NotFound => Self::new(ErrorCode::NotFound),
            Kind::NotADirectory | Kind::IsADirectory => Self::new(ErrorCode::InvalidInput),
            Kind::InvalidFilename => Self::hinted(
                ErrorCode::InvalidInput,
                "shorten the path (a name is at most 255 bytes, a path at most 4095 on Linux)",
            ),
            _ => Self::new(ErrorCode::Io),
        }
    }
}

/// A library error that knows its own code.
pub trait Classify {
    /// The code and hint of this error; `None` when a cause in its chain decides (the binary
    /// then looks at the next cause, and `failed` when none is known).
    fn classify(&self) -> Option<Classified>;
}

/// Reads the code of one cause when it is of one known error type (see [`known`]).
pub type KnownType = fn(&(dyn std::error::Error + 'static)) -> Option<Classified>;

/// The [`KnownType`] of `E`: its code when the cause is an `E` that knows it.
pub fn known<E: Classify + std::error::Error + 'static>(
    cause: &(dyn std::error::Error + 'static),
) -> Option<Classified> {
    cause.downcast_ref::<E>()?.classify()
}

/// The code of one cause: the first of `types` that knows it, else an IO error's by its kind.
pub fn classify_cause(
    cause: &(dyn std::error::Error + 'static),
    types: &[KnownType],
) -> Option<Classified> {
    types.iter().find_map(|of| of(cause)).or_else(|| {
        cause
            .downcast_ref::<std::io::Error>()
            .map(Classified::of_io)
    })
}

/// `err` and its causes, outermost first.
pub fn causes<'a>(
    err: &'a (dyn std::error::Error + 'static),
) -> impl Iterator<Item = &'a (dyn std::error::Error + 'static)> {
    std::iter::successors(Some(err), |cause| cause.source())
}

#[cfg(test)]
mod tests {
    use super::{Classified, ErrorCode};

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[derive(Debug, thiserror::Error)]
    #[error("refused")]
    struct Refusal;

    impl super::Classify for Refusal {
        fn classify(&self) -> Option<Classified> {
            Some(Classified::new(ErrorCode::Refused))
        }
    }

    #[test]
    fn the_outermost_cause_that_knows_its_code_decides() {
        let types: &[super::KnownType] = &[super::known::<Refusal>];
        let io = Outer(std::io::Error::from(std::io::ErrorKind::NotFound));
        let codes: Vec<Option<ErrorCode>> = super::causes(&io)
            .map(|c| super::classify_cause(c, types).map(|k| k.code))
            .collect();
        assert_eq!(codes, [None, Some(ErrorCode::NotFound)]);
        assert_eq!(
            super::classify_cause(&Refusal, types).map(|k| k.code),
            Some(ErrorCode::Refused)
        );
        assert_eq!(super::classify_cause(&Refusal, &[]), None);
    }

    #[test]
    fn io_errors_are_coded_by_kind() {
        let code = |kind: std::io::ErrorKind| Classified::of_io(&kind.into()).code;
        assert_eq!(code(std::io::ErrorKind::NotFound), ErrorCode::NotFound);
        assert_eq!(
            code(std::io::ErrorKind::IsADirectory),
            ErrorCode::InvalidInput
        );
        assert_eq!(code(std::io::ErrorKind::PermissionDenied), ErrorCode::Io);
        assert!(
            Classified::of_io(&std::io::ErrorKind::InvalidFilename.into())
                .hint
                .is_some()
        );
    }

    /// `ALL` holds every code once, in declaration order; the match makes a new variant a
    /// compile error here.
    #[test]
    fn all_holds_every_code_in_order() {
        for (i, code) in ErrorCode::ALL.into_iter().enumerate() {
            let position = match code {
                ErrorCode::Usage => 0,
                ErrorCode::NotFound => 1,
                ErrorCode::InvalidInput => 2,
                ErrorCode::Refused => 3,
                ErrorCode::Io => 4,
                ErrorCode::Internal => 5,
                ErrorCode::Failed => 6,
            };
            assert_eq!(i, position, "{code:?}");
        }
    }

    #[test]
    fn codes_serialise_in_snake_case_in_declaration_order() {
        let names: Vec<String> = ErrorCode::ALL
            .iter()
            .map(|c| serde_json::to_string(c).expect("serialises"))
            .collect();
        assert_eq!(
            names.join(","),
            r#""usage","not_found","invalid_input","refused","io","internal","failed""#
        );
    }
}
