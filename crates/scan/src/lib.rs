//! npuprof-scan: the scanning engine that verify and summary read large files with.
//!
//! A streaming trace_view.json scanner ([`trace_scan`]: SIMD stage 1, shapes and grammar in
//! stage 2, a byte-at-a-time reference), the SIMD CSV splitter ([`csv_rows`]) and the
//! kernel_details.csv scan built on it ([`kernel_csv`]), the number reader ([`decimal`]), and
//! the segments a large file is read in on all cores ([`file_ranges`]). On Linux a large trace is
//! read through read-only memory maps with a process-wide SIGBUS handler. All of npuprof's
//! `unsafe` code lives here (`simd.rs`, `mapped.rs`); the crate knows nothing of findings. Unix
//! only: it reads one file at offsets from several threads.

#[cfg(not(unix))]
compile_error!("npuprof-scan needs Unix (it reads files at offsets); on Windows, use WSL");

pub mod csv_rows;
pub mod decimal;
pub mod file_ranges;
pub mod kernel_csv;
pub mod trace_scan;

#[cfg(target_os = "linux")]
mod mapped;
mod simd;
