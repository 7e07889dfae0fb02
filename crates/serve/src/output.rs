//! The profile directory: the run directories and frontend traces a stop left, and when they
//! are complete (every expected rank there and nothing in them changing for a quiet period).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::settings::ServeSettings;

/// What the profile directory holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// Run directories (`*<run_dir_suffix>`), sorted.
    pub runs: Vec<PathBuf>,
    /// The API process's own traces (names holding `frontend_trace_suffix`), sorted.
    pub frontend: Vec<PathBuf>,
}

/// Lists `dir` (not recursive; a missing directory is empty).
pub fn list(dir: &Path, settings: &ServeSettings) -> Listing {
    let mut listing = Listing::default();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return listing;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && name.ends_with(&settings.run_dir_suffix) {
            listing.runs.push(entry.path());
        } else if settings
            .frontend_trace_suffix
            .as_deref()
            .is_some_and(|suffix| name.contains(suffix))
        {
            listing.frontend.push(entry.path());
        }
    }
    listing.runs.sort();
    listing.frontend.sort();
    listing
}

/// What a walk of the run directories saw: every file's size and modification time.
type Fingerprint = BTreeMap<PathBuf, (u64, Option<SystemTime>)>;

/// Files walked per run directory at most (a run holds dozens; this bounds a pathological one).
const MAX_FILES: usize = 100_000;

fn fingerprint(runs: &[PathBuf]) -> Fingerprint {
    let mut seen = Fingerprint::new();
    let mut stack: Vec<PathBuf> = runs.to_vec();
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if seen.len() >= MAX_FILES * runs.len().max(1) {
                return seen;
            }
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                stack.push(entry.path());
            }
            seen.insert(entry.path(), (meta.len(), meta.modified().ok()));
        }
    }
    seen
}

/// How waiting for the output ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    /// Every expected run directory is there and nothing changed for the quiet period.
    Quiet(Listing),
    /// The deadline passed first: what was there, and whether it was still changing.
    TimedOut {
        /// What the directory held.
        listing: Listing,
        /// Whether files were still being written (else ranks were missing).
        changing: bool,
    },
    /// `stop()` said to give up.
    Stopped,
}

/// How long nothing may change before the output counts as complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quiet {
    /// When every run directory is parsed.
    pub parsed: Duration,
    /// When one is not (yet).
    pub raw: Duration,
}

/// Waits until `ranks` run directories (at least one) exist in `dir` and nothing in them has
/// changed for the `quiet` period, checking every `poll`, until `deadline` or until `stop`
/// returns true.
pub fn settle(
    dir: &Path,
    settings: &ServeSettings,
    ranks: usize,
    quiet: Quiet,
    deadline: Instant,
    poll: Duration,
    stop: &mut dyn FnMut() -> bool,
) -> Settled {
    let mut last: Option<(Fingerprint, Instant)> = None;
    loop {
        let listing = list(dir, settings);
        let now = Instant::now();
        let print = fingerprint(&listing.runs);
        let quiet_since = match &last {
            Some((before, since)) if *before == print => *since,
            _ => now,
        };
        let enough = listing.runs.len() >= ranks.max(1);
        let quiet = if listing.runs.iter().all(|r| parsed(r)) {
            quiet.parsed
        } else {
            quiet.raw
        };
        if enough && now.duration_since(quiet_since) >= quiet {
            return Settled::Quiet(listing);
        }
        if now >= deadline {
            return Settled::TimedOut {
                changing: enough || now.duration_since(quiet_since) < quiet,
                listing,
            };
        }
        if stop() {
            return Settled::Stopped;
        }
        last = Some((print, quiet_since));
        std::thread::sleep(poll.min(deadline.saturating_duration_since(now)));
    }
}

/// Whether a run directory has been parsed (holds `ASCEND_PROFILER_OUTPUT/`).
pub fn parsed(run: &Path) -> bool {
    run.join("ASCEND_PROFILER_OUTPUT").is_dir()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::{ConfigStyle, Engine, for_engine};

    /// An engine that parses after the stop: the raw run falls quiet, then the parse writes
    /// `ASCEND_PROFILER_OUTPUT/`; the longer quiet period of an unparsed run waits for it.
    #[test]
    fn an_unparsed_run_waits_the_longer_quiet_period_for_a_late_parse() {
        let dir = tempfile::tempdir().expect("temp dir");
        let run = dir.path().join("w_1_ascend_pt");
        std::fs::create_dir_all(run.join("FRAMEWORK")).expect("mkdir");
        let late = run.join("ASCEND_PROFILER_OUTPUT");
        let writer = {
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(300));
                std::fs::create_dir(late).expect("mkdir");
            })
        };
        let settings = for_engine(
            Engine::by_id("vllm-ascend").unwrap(),
            ConfigStyle::ProfilerConfig,
        );
        let quiet = Quiet {
            parsed: Duration::from_millis(50),
            raw: Duration::from_secs(5),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        let settled = settle(
            dir.path(),
            &settings,
            1,
            quiet,
            deadline,
            Duration::from_millis(20),
            &mut || false,
        );
        let parsed_when_settled = parsed(&run);
        writer.join().expect("writer");
        assert!(
            matches!(settled, Settled::Quiet(ref l) if l.runs == std::slice::from_ref(&run)),
            "{settled:?}"
        );
        assert!(parsed_when_settled, "settled before the late parse");
    }

    #[test]
    fn missing_ranks_at_the_deadline_are_not_taken_for_writing() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("w_1_ascend_pt/ASCEND_PROFILER_OUTPUT"))
            .expect("mkdir");
        let settings = for_engine(
            Engine::by_id("vllm-ascend").unwrap(),
            ConfigStyle::ProfilerConfig,
        );
        let quiet = Quiet {
            parsed: Duration::from_millis(50),
            raw: Duration::from_millis(50),
        };
        let settled = settle(
            dir.path(),
            &settings,
            2,
            quiet,
            Instant::now() + Duration::from_millis(300),
            Duration::from_millis(20),
            &mut || false,
        );
        assert!(
            matches!(settled, Settled::TimedOut { changing: false, ref listing } if listing.runs.len() == 1),
            "{settled:?}"
        );
    }
}
