//! npuprof-severity: how bad a finding is, one definition for every command that judges
//! (verify's findings, advise's advice, lint's rules, relocate's pre-flight problems).
//!
//! The order is the order of attention: [`Severity::Error`] sorts first, so a report sorted by
//! severity lists the errors before the warnings and these before the facts.
//!
//! [`code`] holds the other judgement every library shares: why a command failed
//! ([`ErrorCode`]), which each library's error says of itself ([`Classify`]).

pub mod code;

pub use code::{Classified, Classify, ErrorCode, KnownType, causes, classify_cause, known};

use serde::{Deserialize, Serialize};

/// How bad a finding is. Only errors make a judging command exit 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The profile (or the output the run will write) is unusable, missing or incomplete.
    Error,
    /// The profile is usable but lacks something, is distorted, or is at risk.
    Warning,
    /// A fact worth knowing, or an expectation that could not be checked.
    Info,
}

impl Severity {
    /// Every severity, most severe first (the order of [`Ord`]).
    pub const ALL: [Severity; 3] = [Severity::Error, Severity::Warning, Severity::Info];

    /// The lower-case name used in human and JSON output (`error`, `warning`, `info`).
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Severity;

    #[test]
    fn errors_sort_first_and_names_are_the_json_spellings() {
        let mut shuffled = [Severity::Info, Severity::Error, Severity::Warning];
        shuffled.sort();
        assert_eq!(shuffled, Severity::ALL);
        for s in Severity::ALL {
            let json = serde_json::to_string(&s).expect("serialises");
            assert_eq!(json, format!("\"{}\"", s.as_str()));
            assert_eq!(s.to_string(), s.as_str());
            let back: Severity = serde_json::from_str(&json).expect("deserialises");
            assert_eq!(back, s);
        }
    }
}
