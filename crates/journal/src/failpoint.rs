//! Fault injection at every write step, to prove that a kill at any point is finished by
//! re-running the same command.
//!
//! Every operation that changes the filesystem calls [`step`] first with its name (`mkdir`,
//! `write_temp`, `rename`, `write_in_place`, `unlink`, `rmdir`, `symlink`, `probe`). Two ways to
//! act on a step:
//! - the environment variable `NPUPROF_FAILPOINT=<name>:<n>` (or `any:<n>`) makes the process
//!   `abort()` just before the n-th step of that name — the same as a `kill -9` there. It is read
//!   once; without it a step costs one relaxed atomic load.
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

/// The armed environment failpoint: the step name (`any` for every step) and its number.
struct Armed {
    name: String,
    at: u64,
    seen: AtomicU64,
}

fn armed() -> Option<&'static Armed> {
    static ARMED: OnceLock<Option<Armed>> = OnceLock::new();
    ARMED
        .get_or_init(|| {
            let value = std::env::var(FAILPOINT_ENV).ok()?;
            let (name, at) = value.rsplit_once(':')?;
            Some(Armed {
                name: name.to_owned(),
                at: at.parse().ok()?,
                seen: AtomicU64::new(0),
            })
        })
        .as_ref()
}

/// Marks a write step named `name` on `path`: aborts the process when the environment failpoint says so,
/// and runs this thread's hook (whose error fails the step).
pub fn step(name: &'static str, path: &Path) -> io::Result<()> {
    if let Some(armed) = armed()
        && (armed.name == "any" || armed.name == name)
        && armed.seen.fetch_add(1, Ordering::Relaxed) + 1 == armed.at
    {
        std::process::abort();
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
