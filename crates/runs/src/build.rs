//! A torch_npu build, told by profiler_info's `torch_npu_version` (with its `.postN`) and
//! `cann_version`, and the behaviour that follows from it. Behaviour follows the build date, not
//! the 2.x number: 2.7.1.post11 (2026) behaves like 2.14.0, plain 2.7.1 (2025) like the older
//! builds. Each trait was read in the wheels' `torch_npu/profiler/**`; a build that records no
//! version (2.1.0.post10 and older write none) is [`Build::unknown`], and every trait is then
//! `None`: the checks that need it say so instead of guessing.

use std::fmt;

/// A `torch_npu_version` as numbers: `2.7.1.post11` → (2, 7, 1, 11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version {
    /// Major.
    pub major: u32,
    /// Minor.
    pub minor: u32,
    /// Patch.
    pub patch: u32,
    /// The `.postN` number, 0 without one.
    pub post: u32,
}

impl Version {
    /// Reads `2.5.1`, `2.7.1.post11`, `v2.14.0+gitabc` (anything after the numbers is ignored);
    /// `None` when it does not start with `major.minor`.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim().trim_start_matches('v');
        let mut parts = text.split('.');
        let num = |s: Option<&str>| -> Option<u32> {
            let s = s?;
            let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        };
        let major = num(parts.next())?;
        let minor = num(parts.next())?;
        let patch = num(parts.next()).unwrap_or(0);
        let post = parts
            .next()
            .and_then(|p| p.strip_prefix("post"))
            .and_then(|p| num(Some(p)))
            .unwrap_or(0);
        Some(Self {
            major,
            minor,
            patch,
            post,
        })
    }

    fn at_least(self, major: u32, minor: u32) -> bool {
        (self.major, self.minor) >= (major, minor)
    }

    /// A 2026 build: 2.10.0 and newer, or the 2.7.1.post11 line.
    fn is_2026(self) -> bool {
        self.at_least(2, 10)
            || ((self.major, self.minor, self.patch) == (2, 7, 1) && self.post >= 11)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if self.post > 0 {
            write!(f, ".post{}", self.post)?;
        }
        Ok(())
    }
}

/// What torch_npu does when a `PROF_*` directory belongs to another user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnerCheck {
    /// Not checked (2.5.1 and older).
    None,
    /// The CANN export raises: parsing fails (2.7.1, 2.10.0).
    Fatal,
    /// A logged warning; parsing goes on (2.7.1.post11, 2.14.0).
    Warning,
}

/// The torch_npu build that wrote a run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Build {
    /// The recorded `torch_npu_version`, as written.
    pub torch_npu_version: Option<String>,
    /// The recorded `cann_version`, as written.
    pub cann_version: Option<String>,
    /// The parsed version, when it is one.
    pub version: Option<Version>,
}

impl Build {
    /// From profiler_info's two fields.
    pub fn new(torch_npu_version: Option<&str>, cann_version: Option<&str>) -> Self {
        Self {
            torch_npu_version: torch_npu_version.map(str::to_owned),
            cann_version: cann_version.map(str::to_owned),
            version: torch_npu_version.and_then(Version::parse),
        }
    }

    /// No version recorded: 2.1.0.post10 or older, or profiler_info missing.
    pub fn unknown() -> Self {
        Self::default()
    }

    /// Whether the build is known.
    pub fn is_known(&self) -> bool {
        self.version.is_some()
    }

    /// How messages name it: `torch_npu 2.7.1.post11` or `an unknown torch_npu build`.
    pub fn describe(&self) -> String {
        match (&self.torch_npu_version, self.version) {
            (Some(text), Some(_)) => format!("torch_npu {text}"),
            (Some(text), None) => format!("torch_npu \"{text}\" (not a version npuprof can read)"),
            _ => "an unknown torch_npu build (profiler_info records no torch_npu_version, as 2.1.0.post10 and older do)".to_owned(),
        }
    }

    fn trait_of(&self, f: impl Fn(Version) -> bool) -> Option<bool> {
        self.version.map(f)
    }

    /// `<run>/logs/profiler_*.log` written by the parser (ProfilerLogger, from 2.5.1).
    pub fn writes_logs_dir(&self) -> Option<bool> {
        self.trait_of(|v| v.at_least(2, 5))
    }

    /// The task status table at the end of a parser log (2.7.1 and newer).
    pub fn logs_status_table(&self) -> Option<bool> {
        self.trait_of(|v| v.at_least(2, 7))
    }

    /// `trace_view_temp.json` written first and renamed when done (2.5.1 and older).
    pub fn writes_trace_temp(&self) -> Option<bool> {
        self.trait_of(|v| !v.at_least(2, 7))
    }

    /// An empty `ASCEND_PROFILER_OUTPUT/analyse.done` after every parse by the trace handler,
    /// even a failed one (2.10.0, 2.7.1.post11, 2.14.0; never by an offline `analyse()`).
    pub fn writes_analyse_done(&self) -> Option<bool> {
        self.trait_of(Version::is_2026)
    }

    /// Stdout lines `[YYYY-mm-dd HH:MM:SS] [LEVEL]` with brackets (2.7.1 and newer).
    pub fn bracketed_stdout(&self) -> Option<bool> {
        self.trait_of(|v| v.at_least(2, 7))
    }

    /// What a `PROF_*` directory owned by another user does.
    pub fn owner_check(&self) -> Option<OwnerCheck> {
        self.version.map(|v| {
            if !v.at_least(2, 7) {
                OwnerCheck::None
            } else if v.at_least(2, 14) || (v.is_2026() && !v.at_least(2, 10)) {
                OwnerCheck::Warning
            } else {
                OwnerCheck::Fatal
            }
        })
    }

    /// Whether a CANN toolkit ownership problem stops the export (2.7.1 and 2.10.0 raise; 2.14.0
    /// and 2.7.1.post11 only log it).
    pub fn toolkit_owner_fatal(&self) -> Option<bool> {
        self.owner_check().map(|c| c == OwnerCheck::Fatal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_with_post_suffixes() {
        let v = Version::parse("2.7.1.post11").unwrap_or_else(|| panic!("parse"));
        assert_eq!((v.major, v.minor, v.patch, v.post), (2, 7, 1, 11));
        assert_eq!(v.to_string(), "2.7.1.post11");
        assert_eq!(
            Version::parse("v2.14.0+git1a2b").map(|v| (v.major, v.minor)),
            Some((2, 14))
        );
        assert_eq!(Version::parse("unknown"), None);
    }

    #[test]
    fn behaviour_follows_the_build_date() {
        let plain = Build::new(Some("2.7.1"), Some("8.3.RC1"));
        let post11 = Build::new(Some("2.7.1.post11"), None);
        let new = Build::new(Some("2.14.0"), None);
        let mid = Build::new(Some("2.10.0"), None);
        let old = Build::new(Some("2.5.1"), None);
        assert_eq!(plain.writes_analyse_done(), Some(false));
        assert_eq!(post11.writes_analyse_done(), Some(true));
        assert_eq!(new.writes_analyse_done(), Some(true));
        assert_eq!(mid.writes_analyse_done(), Some(true));
        assert_eq!(plain.owner_check(), Some(OwnerCheck::Fatal));
        assert_eq!(mid.owner_check(), Some(OwnerCheck::Fatal));
        assert_eq!(post11.owner_check(), Some(OwnerCheck::Warning));
        assert_eq!(new.owner_check(), Some(OwnerCheck::Warning));
        assert_eq!(old.owner_check(), Some(OwnerCheck::None));
        assert_eq!(old.writes_trace_temp(), Some(true));
        assert_eq!(plain.writes_trace_temp(), Some(false));
        assert_eq!(old.bracketed_stdout(), Some(false));
        assert_eq!(plain.bracketed_stdout(), Some(true));
        assert_eq!(
            Build::new(Some("2.1.0"), None).writes_logs_dir(),
            Some(false)
        );
    }

    #[test]
    fn an_unknown_build_claims_nothing() {
        let b = Build::unknown();
        assert!(!b.is_known());
        assert_eq!(b.writes_analyse_done(), None);
        assert_eq!(b.owner_check(), None);
        assert!(b.describe().contains("unknown torch_npu build"));
    }
}
