//! Fault injection at every write step, to prove that a kill at any point is finished by
//! re-running the same command.
//!
//! Every operation that changes the filesystem calls [`step`] first with its name (`mkdir`,
//! `write_temp`, `rename`, `write_in_place`, `unlink`, `rmdir`, `symlink`, `probe`), and a
//! commit's rollback calls it before undoing each step (`rollback`). Two ways to act on a step:
//! - the environment variable `NPUPROF_FAILPOINT=<name>:<n>[:<effect>]` (or `any:<n>`), several
//!   separated by commas, acts just before the n-th step of that name: effect `abort` (the
//!   default) makes the process `abort()` — the same as a `kill -9` there —, `enospc` makes the
//!   step fail with "No space left on device" (a full disk; `rollback:1:enospc` makes the first
//!   undo of a rollback fail too). It is read once; without it a step costs one relaxed load.
//! - [`with_hook`] runs a closure at every step of the calling thread (in-process tests: swap a
//!   directory for a symlink mid-revert, fail a step).

use std::cell::RefCell;
use std::io;
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The environment variable that arms the abort failpoint.
pub const FAILPOINT_ENV: &str = "NPUPROF_FAILPOINT";

/// What a hook sees: the step's name, the path it acts on and its 1-based number among the
/// steps this hook saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step<'a> {
    /// The step's name (`rename`, `unlink`, ...).
    pub name: &'static str,
    /// The path acted on (repository-relative for journal writes).
    pub path: &'a Path,
    /// 1-based count of steps seen by the hook so far, this one included.
    pub number: u64,
}

type Hook = Box<dyn FnMut(Step<'_>) -> io::Result<()>>;

thread_local! {
    static HOOK: RefCell<Option<(Hook, u64)>> = const { RefCell::new(None) };
}

/// What an armed environment failpoint does at its step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Effect {
    /// `abort()`: a kill at that point.
    Abort,
    /// The step fails with ENOSPC: a full disk.
    NoSpace,
}

impl Effect {
    fn parse(word: &str) -> Option<Self> {
        match word {
            "abort" => Some(Effect::Abort),
            "enospc" => Some(Effect::NoSpace),
            _ => None,
        }
    }
}

/// One armed environment failpoint: the step name (`any` for every step), its number and effect.
struct Armed {
    name: String,
    at: u64,
    effect: Effect,
    seen: AtomicU64,
}

/// Parses one `<name>:<n>[:<effect>]`.
fn parse_armed(spec: &str) -> Option<Armed> {
    let mut parts = spec.trim().split(':');
    let name = parts.next()?.to_owned();
    let at = parts.next()?.parse().ok()?;
    let effect = match parts.next() {
        Some(word) => Effect::parse(word)?,
        None => Effect::Abort,
    };
    parts.next().is_none().then_some(Armed {
        name,
        at,
        effect,
        seen: AtomicU64::new(0),
    })
}

/// What the environment failpoint does to this process, for a notice on stderr (`None` when
/// `NPUPROF_FAILPOINT` is unset or empty): the steps armed, and the specs ignored as malformed.
pub fn env_notice() -> Option<String> {
    let value = std::env::var(FAILPOINT_ENV)
        .ok()
        .filter(|v| !v.trim().is_empty())?;
    let (armed, ignored): (Vec<&str>, Vec<&str>) = value
        .split(',')
        .map(str::trim)
        .partition(|spec| parse_armed(spec).is_some());
    let mut notice = if armed.is_empty() {
        format!("{FAILPOINT_ENV} is set but arms nothing")
    } else {
        format!(
            "{FAILPOINT_ENV}={} is set: this process aborts or fails a write on purpose at {} \
             (fault injection for tests); unset it for real work",
            value.trim(),
            armed.join(", ")
        )
    };
    if !ignored.is_empty() {
        notice.push_str(&format!(
            " (ignored, not `<step>:<n>[:abort|enospc]`: {})",
            ignored.join(", ")
        ));
    }
    Some(notice)
}

fn armed() -> &'static [Armed] {
    static ARMED: OnceLock<Vec<Armed>> = OnceLock::new();
    ARMED.get_or_init(|| {
        std::env::var(FAILPOINT_ENV)
            .map(|value| value.split(',').filter_map(parse_armed).collect())
            .unwrap_or_default()
    })
}

/// Marks a write step named `name` on `path`: aborts the process or fails the step when an
/// environment failpoint says so, and runs this thread's hook (whose error fails the step).
pub fn step(name: &'static str, path: &Path) -> io::Result<()> {
    for armed in armed() {
        if (armed.name == "any" || armed.name == name)
            && armed.seen.fetch_add(1, Ordering::Relaxed) + 1 == armed.at
        {
            match armed.effect {
                Effect::Abort => std::process::abort(),
                Effect::NoSpace => {
                    return Err(io::Error::from_raw_os_error(
                        rustix::io::Errno::NOSPC.raw_os_error(),
                    ));
                }
            }
        }
    }
    HOOK.with(|hook| match hook.borrow_mut().as_mut() {
        Some((hook, count)) => {
            *count += 1;
            hook(Step {
                name,
                path,
                number: *count,
            })
        }
        None => Ok(()),
    })
}

/// Runs `body` with `hook` called at every write step of this thread; the hook's error makes
/// that step fail with it.
pub fn with_hook<T>(
    hook: impl FnMut(Step<'_>) -> io::Result<()> + 'static,
    body: impl FnOnce() -> T,
) -> T {
    let previous = HOOK.with(|h| h.borrow_mut().replace((Box::new(hook), 0)));
    let result = body();
    HOOK.with(|h| *h.borrow_mut() = previous);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_with_and_without_an_effect() {
        let abort = parse_armed("rename:3").unwrap();
        assert_eq!(
            (abort.name.as_str(), abort.at, abort.effect),
            ("rename", 3, Effect::Abort)
        );
        let full = parse_armed("rollback:1:enospc").unwrap();
        assert_eq!(
            (full.name.as_str(), full.at, full.effect),
            ("rollback", 1, Effect::NoSpace)
        );
        for bad in ["rename", "rename:x", "rename:1:explode", "rename:1:abort:2"] {
            assert!(parse_armed(bad).is_none(), "{bad} accepted");
        }
    }
}
