//! The decode window a user asks for, validated once for every command (the bounds live here,
//! not in one subcommand's argument parser).

use std::fmt;

use serde::Serialize;

/// The largest `active` or `skip_first` npuprof accepts: far beyond any real window, small
/// enough that every simulation and token budget stays bounded.
pub const MAX_WINDOW_STEPS: u64 = 1_000_000;

/// A requested decode window: `active` steps recorded after `skip_first` skipped ones (`None`
/// keeps the value the repository has).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Window {
    active: u64,
    skip_first: Option<u64>,
}

/// Why a window was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowError {
    /// The argument at fault (`active` or `skip_first`).
    pub field: &'static str,
    /// The value given.
    pub value: u64,
}

impl fmt::Display for WindowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let range = if self.field == "active" { "1" } else { "0" };
        write!(
            f,
            "decode {} {} is out of range ({range}..={MAX_WINDOW_STEPS})",
            self.field, self.value
        )
    }
}

impl std::error::Error for WindowError {}

impl Window {
    /// The window, if `active` is in `1..=MAX_WINDOW_STEPS` and `skip_first` in
    /// `0..=MAX_WINDOW_STEPS`.
    pub fn new(active: u64, skip_first: Option<u64>) -> Result<Self, WindowError> {
        if !(1..=MAX_WINDOW_STEPS).contains(&active) {
            return Err(WindowError {
                field: "active",
                value: active,
            });
        }
        if let Some(skip) = skip_first.filter(|s| *s > MAX_WINDOW_STEPS) {
            return Err(WindowError {
                field: "skip_first",
                value: skip,
            });
        }
        Ok(Self { active, skip_first })
    }

    /// Recorded steps.
    pub fn active(self) -> u64 {
        self.active
    }

    /// Skipped steps before the window; `None` keeps the repository's value.
    pub fn skip_first(self) -> Option<u64> {
        self.skip_first
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_enforced_for_both_fields() {
        assert!(Window::new(0, None).is_err());
        assert!(Window::new(MAX_WINDOW_STEPS + 1, None).is_err());
        assert!(Window::new(5_000_000_000, None).is_err());
        assert!(Window::new(1, Some(MAX_WINDOW_STEPS + 1)).is_err());
        let w = Window::new(30, Some(0)).unwrap();
        assert_eq!((w.active(), w.skip_first()), (30, Some(0)));
    }
}
