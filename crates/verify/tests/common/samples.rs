//! The real samples vendored in `crates/verify/tests/data/` (see its NOTICE) and the broken
//! traces made from them: what the verify crate's tests, the CLI's and the scanning engine's
//! share (included by path; nothing here needs npuprof-verify). A missing sample panics: a test
//! never passes without its data.
#![allow(dead_code, reason = "each test binary uses its own subset")]

use std::fs;
use std::path::{Path, PathBuf};

/// The vendored samples, `crates/verify/tests/data` (found from the verify, scan and cli crates).
pub fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../verify/tests/data")
}

/// A vendored sample file; panics when it is missing.
pub fn sample(rel: &str) -> PathBuf {
    let path = samples().join(rel);
    assert!(
        path.is_file(),
        "test data missing: {} (vendored under crates/verify/tests/data)",
        path.display()
    );
    path
}

/// The bytes of a vendored sample file; panics when it cannot be read.
pub fn read_sample(path: &Path) -> Vec<u8> {
    fs::read(path).unwrap_or_else(|e| panic!("test data unreadable: {}: {e}", path.display()))
}

/// The real trace_view.json (3670 events, host then device events).
pub fn trace_view() -> PathBuf {
    sample(
        "Ascend-mstt/profiler__msprof_analyze__test__ut__advisor__timeline_advice__trace_view.json",
    )
}

/// The real trace's bytes.
pub fn trace_bytes() -> Vec<u8> {
    read_sample(&trace_view())
}

/// Offset of the `,` torch_npu writes before appending the device events (the first device
/// event is the `Ascend Hardware` process_name metadata of pid 800).
pub fn device_append_offset(trace: &[u8]) -> usize {
    let needle = br#",{"name": "process_name", "pid": 800"#;
    trace
        .windows(needle.len())
        .position(|w| w == needle)
        .unwrap_or_else(|| panic!("the real trace lacks its device append point"))
}

/// The trace as written after the host phase only (no closing `]`).
pub fn trace_host_only() -> Vec<u8> {
    let t = trace_bytes();
    t[..device_append_offset(&t)].to_vec()
}

/// The trace cut in the middle of the first device event.
pub fn trace_cut_mid_event() -> Vec<u8> {
    let t = trace_bytes();
    let at = device_append_offset(&t) + 40;
    t[..at].to_vec()
}

/// The trace closed after an empty device append: `...},]`.
pub fn trace_trailing_comma() -> Vec<u8> {
    let mut t = trace_host_only();
    t.extend_from_slice(b",]");
    t
}
