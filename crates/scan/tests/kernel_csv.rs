//! kernel_details.csv read in segments gives what one pass gives, whatever the segment size,
//! and reports its progress up to the file's length.

use std::io::{Seek, Write};
use std::sync::atomic::{AtomicU64, Ordering};

use npuprof_scan::kernel_csv::{KernelScan, scan_kernel_details, scan_kernel_file_in_segments};

/// The real rank-0 file of the Level1 run vendored in verify's test data (CRLF, 46 columns, quoted shapes).
fn real_csv() -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../verify/tests/data/runs/msinsight-text-level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv"
    );
    std::fs::read(path).expect("vendored kernel_details.csv")
}

/// The header of `csv` and its rows `copies` times.
fn repeated(csv: &[u8], copies: usize) -> Vec<u8> {
    let body = memchr::memchr(b'\n', csv).map_or(csv.len(), |i| i + 1);
    let mut doc = csv[..body].to_vec();
    for _ in 0..copies {
        doc.extend_from_slice(&csv[body..]);
    }
    doc
}

/// The scan with summed durations rounded off the last bits, which the order of the
/// additions may change.
fn rounded(mut scan: KernelScan) -> KernelScan {
    let by_core = [&mut scan.communication, &mut scan.computing];
    for step in scan.steps.values_mut().chain(by_core) {
        step.duration_us = format!("{:.12e}", step.duration_us)
            .parse()
            .unwrap_or(f64::NAN);
    }
    scan
}

/// Segments of each size give the one-pass scan and report every byte (of a file read to
/// its end) once.
fn check_segments(doc: &[u8], sizes: impl IntoIterator<Item = u64>) {
    let mut file = tempfile::tempfile().expect("temp file");
    file.write_all(doc).expect("write");
    let want = scan_kernel_details(doc, |_| {}).expect("one pass");
    assert!(want.rows > 0, "{want:?}");
    for size in sizes {
        // As opened: the one-pass fallback reads from the file's offset.
        file.rewind().expect("rewind");
        let seen = AtomicU64::new(0);
        let got = scan_kernel_file_in_segments(&file, size, |n| {
            seen.fetch_add(n, Ordering::Relaxed);
        })
        .expect("segments");
        assert_eq!(rounded(got), rounded(want.clone()), "segments of {size}");
        if want.corruption.is_none() {
            assert_eq!(
                seen.into_inner(),
                doc.len() as u64,
                "progress, segments of {size}"
            );
        }
    }
}

#[test]
fn segments_of_a_real_file_give_the_one_pass_scan() {
    let crlf = repeated(&real_csv(), 20);
    check_segments(&crlf, [333, 1000, 4096, 20_000, 1 << 20]);
    let lf: Vec<u8> = crlf.iter().copied().filter(|&b| b != b'\r').collect();
    check_segments(&lf, [333, 4096, 50_000]);
}

#[test]
fn line_breaks_inside_quotes_at_boundaries_read_as_one_pass() {
    // Past a quoted `\n`, `9,b,7` and `c,d",2` read as rows of three fields.
    let mut doc = String::from("Step Id,Name,Duration(us)\r\n");
    for i in 0..200 {
        doc.push_str(&format!(
            "{},k{},1.5\r\n1,\"a\n9,b,7\nc,d\",2\r\n",
            i % 3,
            i % 7
        ));
    }
    check_segments(doc.as_bytes(), 8..90);
}

#[test]
fn what_one_pass_reports_by_line_or_order_is_kept() {
    let real = repeated(&real_csv(), 6);
    let body = memchr::memchr(b'\n', &real).map_or(0, |i| i + 1);
    // A ragged row, and empty and bad step numbers, late in the file.
    let mut ragged = real.clone();
    ragged.extend_from_slice(b"7,short,row\r\n,x\r\nnot-a-step,y\r\n");
    ragged.extend_from_slice(&real[body..]);
    check_segments(&ragged, [1000, 20_000]);
    // A record over the limit (1 MiB) late in the file: the error at its line.
    let mut huge = real.clone();
    huge.extend_from_slice(b"8,\"");
    huge.extend(std::iter::repeat_n(b'x', (1 << 20) + 10));
    huge.extend_from_slice(b"\",1\r\n");
    huge.extend_from_slice(&real[body..]);
    check_segments(&huge, [50_000, 400_000]);
    // A column with a value only in the last rows, and one with none.
    let mut sparse = String::from("Step Id,Name,Duration(us),Late,Never\n");
    for i in 0..3000 {
        let late = if i > 2990 { "v" } else { "" };
        sparse.push_str(&format!("{},k{},2.25,{late},\n", i / 100, i % 11));
    }
    check_segments(sparse.as_bytes(), [100, 1000, 10_000]);
}
