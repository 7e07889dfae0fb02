//! Reading a large regular file through read-only memory maps, one window of a few MiB at a
//! time, instead of copying it into a buffer with `read` (the copy is about a third of a trace
//! scan's time on a cached file). Linux only (`MAP_POPULATE`); a caller reads what the
//! windows did not cover.
//!
//! A file that shrinks while it is mapped raises SIGBUS on the pages past its new end. A
//! process-wide handler replaces the rest of that window with zero pages and marks it, so the
//! read that faulted is retried and reads zeros, and the caller gets [`Shrunk`] instead of the
//! process dying. SIGBUS at any other address goes to the disposition that was there before.
//!
//! The second module of the workspace that allows `unsafe` (after `simd.rs`): the `mmap`,
//! `munmap` and `sigaction` calls, the signal handler, and the slice over a mapping. Each
//! `unsafe` block states why it is sound. Another process may change the file's bytes while
//! they are mapped (as it may between two `read`s): the scan then sees a mix of old and new
//! bytes and judges them as it judges any bytes; it never uses a byte to index memory
//! without a bounds check.
#![allow(unsafe_code)]

use std::fs::File;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The window mapped at a time (a multiple of every page size in use).
pub(crate) const WINDOW: usize = 4 << 20;
/// Files smaller than this are read: mapping would not pay for its set-up.
pub(crate) const MIN_LEN: u64 = 16 << 20;

/// The file shrank while one of its windows was mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shrunk {
    /// Offset of the window whose pages went missing.
    pub offset: u64,
}

/// Windows that may be mapped at once (one per thread scanning a file; a thread finding none
/// free reads instead).
const SLOTS: usize = 64;

/// A mapped window, for the signal handler: `start..end` in the address space.
struct Slot {
    used: AtomicBool,
    start: AtomicUsize,
    end: AtomicUsize,
    shrunk: AtomicBool,
}

static WINDOWS: [Slot; SLOTS] = [const {
    Slot {
        used: AtomicBool::new(false),
        start: AtomicUsize::new(0),
        end: AtomicUsize::new(0),
        shrunk: AtomicBool::new(false),
    }
}; SLOTS];

/// The page size, read when the handler is installed.
static PAGE: AtomicUsize = AtomicUsize::new(4096);

/// The SIGBUS disposition before ours; `None` when installing ours failed.
static PREVIOUS: OnceLock<Option<libc::sigaction>> = OnceLock::new();

/// Installs the SIGBUS handler once; whether it is in place.
fn handler_installed() -> bool {
    PREVIOUS
        .get_or_init(|| {
            // SAFETY: `sysconf` has no preconditions.
            let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
            match usize::try_from(page) {
                Ok(page) if page > 0 && WINDOW.is_multiple_of(page) => {
                    PAGE.store(page, Ordering::SeqCst);
                }
                _ => return None,
            }
            // SAFETY: a zeroed `sigaction` is a valid value (empty mask, no flags); the
            // handler has the three-argument signature that `SA_SIGINFO` asks for, and only
            // does what a signal handler may (atomics, `mmap`, `sigaction`).
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_sigbus as *const () as usize;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut action.sa_mask);
                let mut previous: libc::sigaction = std::mem::zeroed();
                (libc::sigaction(libc::SIGBUS, &action, &mut previous) == 0).then_some(previous)
            }
        })
        .is_some()
}

/// The SIGBUS handler: zero pages for the rest of a window of ours, else the previous
/// disposition (restored, so that the fault repeats under it).
extern "C" fn on_sigbus(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: with `SA_SIGINFO` the kernel passes a valid `siginfo_t`; `si_addr` is the
    // faulting address for SIGBUS.
    let addr = unsafe { (*info).si_addr() } as usize;
    for slot in &WINDOWS {
        let (start, end) = (
            slot.start.load(Ordering::SeqCst),
            slot.end.load(Ordering::SeqCst),
        );
        if start <= addr && addr < end {
            let page = addr & !(PAGE.load(Ordering::SeqCst) - 1);
            // SAFETY: `page..end` lies inside the window this slot holds, which only its
            // owner unmaps, after clearing `end`; replacing those pages with anonymous zero
            // pages leaves every address the owner may read readable.
            let zeros = unsafe {
                libc::mmap(
                    page as *mut libc::c_void,
                    end - page,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                    -1,
                    0,
                )
            };
            if zeros != libc::MAP_FAILED {
                slot.shrunk.store(true, Ordering::SeqCst);
                return;
            }
        }
    }
    if let Some(Some(previous)) = PREVIOUS.get() {
        // SAFETY: `previous` is the disposition `sigaction` returned at installation.
        unsafe { libc::sigaction(libc::SIGBUS, previous, std::ptr::null_mut()) };
    }
}

/// A window of the file, mapped read-only and registered with the handler.
struct Mapping {
    slot: &'static Slot,
    ptr: *mut libc::c_void,
    len: usize,
}

impl Mapping {
    /// Maps `len` bytes of `file` at `offset` (a multiple of [`WINDOW`]); `None` when no slot
    /// is free or `mmap` fails.
    fn new(file: &File, offset: u64, len: usize) -> Option<Self> {
        use std::os::fd::AsRawFd;
        let offset = libc::off_t::try_from(offset).ok()?;
        let slot = WINDOWS.iter().find(|s| {
            s.used
                .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
        })?;
        slot.shrunk.store(false, Ordering::SeqCst);
        // SAFETY: a new private read-only mapping chosen by the kernel (no address given),
        // of a file opened for reading; the result is checked.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_POPULATE,
                file.as_raw_fd(),
                offset,
            )
        };
        if ptr == libc::MAP_FAILED {
            slot.used.store(false, Ordering::SeqCst);
            return None;
        }
        let page = PAGE.load(Ordering::SeqCst);
        slot.start.store(ptr as usize, Ordering::SeqCst);
        slot.end
            .store(ptr as usize + len.next_multiple_of(page), Ordering::SeqCst);
        Some(Self { slot, ptr, len })
    }

    /// The window's bytes.
    fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr..ptr + len` is mapped readable until `self` is dropped (the handler
        // only swaps its pages for readable zero pages), and nothing writes through it.
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        self.slot.end.store(0, Ordering::SeqCst);
        self.slot.start.store(0, Ordering::SeqCst);
        // SAFETY: `ptr..ptr + len` is the mapping made in `new` (parts of it possibly replaced
        // by the handler), no longer borrowed: `bytes` borrows `self`.
        unsafe { libc::munmap(self.ptr, self.len) };
        self.slot.used.store(false, Ordering::SeqCst);
    }
}

/// Passes the bytes `start..end` of `file` to `each`, a window of up to `window` bytes (a
/// multiple of [`WINDOW`] or a divisor of it that is a multiple of the page size) at a time,
/// while `each` returns `true`; returns the offset reached (less than `end` when a window
/// could not be mapped or `each` stopped: the caller reads on from there), or [`Shrunk`] when
/// the file shrank under a window (whose missing bytes were passed as zeros).
pub(crate) fn for_each_window(
    file: &File,
    start: u64,
    end: u64,
    window: usize,
    mut each: impl FnMut(&[u8]) -> bool,
) -> Result<u64, Shrunk> {
    if start >= end || !handler_installed() {
        return Ok(start);
    }
    // Mappings start on a page: the first one may begin before `start`.
    let mut offset = start - start % PAGE.load(Ordering::SeqCst) as u64;
    let mut skip = (start - offset) as usize;
    while offset < end {
        let n = usize::try_from(end - offset).map_or(window, |rest| rest.min(window));
        let Some(mapping) = Mapping::new(file, offset, n) else {
            break;
        };
        let go_on = each(&mapping.bytes()[skip..]);
        if mapping.slot.shrunk.load(Ordering::SeqCst) {
            return Err(Shrunk { offset });
        }
        offset += n as u64;
        skip = 0;
        if !go_on {
            break;
        }
    }
    Ok(offset.max(start))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn file_of(len: usize) -> (tempfile::NamedTempFile, Vec<u8>) {
        let bytes: Vec<u8> = (0..len).map(|i| (i * 7 + i / 4093) as u8).collect();
        let mut file = tempfile::NamedTempFile::new().expect("temp file");
        file.write_all(&bytes).expect("write");
        (file, bytes)
    }

    #[test]
    fn windows_cover_the_file_in_order() {
        let len = 2 * WINDOW + 12_345;
        let (file, bytes) = file_of(len);
        let mut seen = Vec::new();
        let passed = for_each_window(file.as_file(), 0, len as u64, WINDOW, |w| {
            seen.extend_from_slice(w);
            true
        });
        assert_eq!(passed, Ok(len as u64));
        assert!(seen == bytes);
        // Stopped after the first window.
        let passed = for_each_window(file.as_file(), 0, len as u64, WINDOW, |_| false);
        assert_eq!(passed, Ok(WINDOW as u64));
    }

    #[test]
    fn a_range_from_inside_a_page_is_passed_from_its_first_byte() {
        let len = 2 * WINDOW + 777;
        let (file, bytes) = file_of(len);
        for (start, end) in [(5000, len), (WINDOW + 1, WINDOW + 9000), (3, 4)] {
            let mut seen = Vec::new();
            let reached =
                for_each_window(file.as_file(), start as u64, end as u64, WINDOW / 4, |w| {
                    seen.extend_from_slice(w);
                    true
                });
            assert_eq!(reached, Ok(end as u64));
            assert!(seen == bytes[start..end], "{start}..{end}");
        }
    }

    #[test]
    fn a_file_that_shrinks_under_a_window_is_an_error_not_a_crash() {
        let len = WINDOW + 100;
        let (file, bytes) = file_of(len);
        let mut tail = Vec::new();
        let passed = for_each_window(file.as_file(), 0, len as u64, WINDOW, |w| {
            file.as_file().set_len(10_000).expect("truncate");
            // Past the new end: SIGBUS, then zeros.
            tail = w[w.len() - 64..].to_vec();
            assert!(w[..10_000] == bytes[..10_000]);
            true
        });
        assert_eq!(passed, Err(Shrunk { offset: 0 }));
        assert_eq!(tail, vec![0; 64]);
        // The slot was released and the handler still serves the next mapping.
        let (file, _) = file_of(WINDOW);
        assert_eq!(
            for_each_window(file.as_file(), 0, WINDOW as u64, WINDOW, |_| true),
            Ok(WINDOW as u64)
        );
    }
}
