//! byte-alignment and slow-link on the vendored real runs and on planted variants of the 2-rank
//! run's communication.json (sizes made aligned or unaligned, one rank's large transfers
//! slowed down), and what is said when the transfers cannot prove a finding.

#[path = "../../summary/tests/common/mod.rs"]
mod common;
mod support;

use std::path::{Path, PathBuf};

use common::{Layout, output_file, real_copy, real_run};
use npuprof_advise::{Advice, Code, Finding};

fn advice_of(path: &Path, rank: Option<u32>) -> Advice {
    support::advised(path, rank, 5)
}

fn found(advice: &Advice, code: Code, rank: u32) -> Option<&Finding> {
    advice
        .findings
        .iter()
        .find(|f| f.code == code && f.rank == Some(rank))
}

fn notes(advice: &Advice, rank: u32) -> &[String] {
    advice
        .runs
        .iter()
        .find(|r| r.rank == Some(rank))
        .map_or(&[], |r| r.notes.as_slice())
}

/// Checks that rank `rank`'s notes say slow links were not judged (one rank with links).
fn check_single_rank_note(advice: &Advice, rank: u32) {
    assert!(
        notes(advice, rank)
            .iter()
            .any(|n| n.contains("slow links across ranks not judged")),
        "{:?}",
        notes(advice, rank)
    );
}

/// The copy's communication.json of `rank`.
fn comm_file(tmp: &Path, rank: u32) -> PathBuf {
    output_file(
        &tmp.join(format!("rank{rank}_ascend_pt")),
        "communication.json",
    )
}

/// Rewrites every `Size Distribution` of `path`: `edit(size in MB, [count, time in ms])` gives
/// the new key (the size as text) and may change the count and time.
fn rewrite_sizes(path: &Path, edit: impl Fn(f64, &mut Vec<serde_json::Value>) -> String) {
    fn walk(
        value: &mut serde_json::Value,
        edit: &dyn Fn(f64, &mut Vec<serde_json::Value>) -> String,
    ) {
        let Some(map) = value.as_object_mut() else {
            return;
        };
        if let Some(sizes) = map
            .get_mut("Size Distribution")
            .and_then(|s| s.as_object_mut())
        {
            for (size, mut v) in std::mem::take(sizes) {
                let mb: f64 = size.parse().expect("a size in MB");
                let entry = v.as_array_mut().expect("[count, ms]");
                let key = edit(mb, entry);
                sizes.insert(key, v);
            }
        }
        for v in map.values_mut() {
            walk(v, edit);
        }
    }
    let text = std::fs::read_to_string(path).expect("read communication.json");
    let mut json: serde_json::Value = serde_json::from_str(&text).expect("json");
    walk(&mut json, &edit);
    std::fs::write(path, json.to_string()).expect("write communication.json");
}

/// `mb` rounded down to a whole number of 512-byte blocks, as text.
fn aligned(mb: f64) -> String {
    let bytes = (mb * 1e6).round() as u64;
    format!("{}", (bytes / 512 * 512) as f64 / 1e6)
}

#[test]
fn aligned_sizes_are_silent_and_one_planted_unaligned_size_is_named() {
    let tmp = real_copy(Layout::Flat);
    // Rank 0: every size a multiple of 512 B but 8.404992 MB made 8405000 B (8 B past
    // 16416 × 512), its 12 transfers per step taking 7.850436843749999 ms.
    rewrite_sizes(&comm_file(tmp.path(), 0), |mb, _| {
        if mb == 8.404992 {
            "8.405".to_owned()
        } else {
            aligned(mb)
        }
    });
    // Rank 1: every size aligned.
    rewrite_sizes(&comm_file(tmp.path(), 1), |mb, _| aligned(mb));
    let advice = advice_of(tmp.path(), None);
    assert!(found(&advice, Code::ByteAlignment, 1).is_none());
    let f = found(&advice, Code::ByteAlignment, 0).expect("byte-alignment on rank 0");
    assert!(
        (f.at_stake_us - 7_850.436_843_749_999).abs() < 1e-6,
        "{f:#?}"
    );
    assert!(
        f.title
            .starts_with("12 of 56 transfers on HCCS not a multiple of 512 B: 7.85 ms per step"),
        "{}",
        f.title
    );
    let labels: Vec<&str> = f.evidence.iter().map(|e| e.label.as_str()).collect();
    assert_eq!(labels, ["hcom_allReduce__586_1_1", "HCCS 8405000 B"]);
    assert_eq!(f.evidence[1].detail, "16416 × 512 B + 8 B");
    assert_eq!(f.evidence[1].count, Some(12));
}

#[test]
fn unaligned_transfers_under_one_percent_of_the_link_time_are_silent() {
    let tmp = real_copy(Layout::Flat);
    // Only the 1162496-byte tail slices stay unaligned: 0.159 ms of rank 0's 27.3 ms on HCCS.
    rewrite_sizes(&comm_file(tmp.path(), 0), |mb, _| {
        if mb == 1.162496 {
            mb.to_string()
        } else {
            aligned(mb)
        }
    });
    let advice = advice_of(tmp.path(), None);
    assert!(found(&advice, Code::ByteAlignment, 0).is_none());
    assert!(found(&advice, Code::ByteAlignment, 1).is_some());
}

/// The advice on a copy of the real run whose rank 1's transfers of 16 MB or more take
/// `factor` times as long.
fn with_slower_large_transfers(factor: f64) -> Advice {
    let tmp = real_copy(Layout::Flat);
    rewrite_sizes(&comm_file(tmp.path(), 1), |mb, entry| {
        if mb >= 16.0 {
            let ms = entry[1].as_f64().expect("ms");
            entry[1] = serde_json::Value::from(ms * factor);
        }
        mb.to_string()
    });
    advice_of(tmp.path(), None)
}

#[test]
fn a_rank_whose_large_transfers_are_twice_as_slow_has_a_slow_link() {
    // Rank 1's transfers of 16 MB or more (18.890752 MB × 12 in 13.160122937499999 ms and
    // 18.776064 MB × 2 in 2.2376847187499997 ms) take twice as long.
    let advice = with_slower_large_transfers(2.0);
    assert!(found(&advice, Code::SlowLink, 0).is_none());
    let f = found(&advice, Code::SlowLink, 1).expect("slow-link on rank 1");
    let large_mb = 18.890752 * 12.0 + 18.776064 * 2.0;
    let best = large_mb / (13.069_241_187_500_003 + 2.136_402_687_5);
    let slow_ms = 2.0 * (13.160_122_937_499_999 + 2.237_684_718_749_999_7);
    let extra_us = (slow_ms - large_mb / best) * 1000.0;
    assert!((f.at_stake_us - extra_us).abs() < 1e-6, "{f:#?}");
    assert!((best - 17.378).abs() < 1e-3, "{best}");
    assert!(
        f.title.starts_with(&format!(
            "rank 1's HCCS reaches {:.1} GB/s, 50.6% below rank 0's 17.4 GB/s: ",
            large_mb / slow_ms
        )),
        "{}",
        f.title
    );
    assert_eq!(f.dir.as_deref(), Some("rank1_ascend_pt"));
    assert_eq!(f.evidence[0].label, "HCCS rank 1");
    assert!(
        f.evidence[0]
            .detail
            .ends_with("rank 0 reaches 17.4 GB/s (rank0_ascend_pt)"),
        "{}",
        f.evidence[0].detail
    );
    assert_eq!(f.evidence[0].count, Some(14));
    // The findings stay sorted by time at stake.
    let stakes: Vec<f64> = advice.findings.iter().map(|f| f.at_stake_us).collect();
    assert!(stakes.windows(2).all(|w| w[0] >= w[1]), "{stakes:?}");
}

#[test]
fn a_link_fifteen_percent_slower_is_not_a_slow_link() {
    let advice = with_slower_large_transfers(1.15);
    assert!(found(&advice, Code::SlowLink, 1).is_none());
    assert!(found(&advice, Code::SlowLink, 0).is_none());
}

#[test]
fn one_rank_or_no_large_transfer_is_said_not_judged() {
    // `--rank 0`: one rank's links, nothing to compare with; the bandwidth is in the evidence.
    let advice = advice_of(&real_run(), Some(0));
    check_single_rank_note(&advice, 0);
    let exposed = found(&advice, Code::CommunicationExposed, 0).expect("communication-exposed");
    let hccs = exposed
        .evidence
        .iter()
        .find(|e| e.label == "HCCS")
        .expect("HCCS evidence");
    assert_eq!(
        hccs.detail,
        "427.6 MB at 15.7 GB/s; ≥ 16 MB transfers: 264.2 MB at 17.4 GB/s"
    );
    // Every transfer under 16 MB on both ranks: no bandwidth to compare, and it is said.
    let tmp = real_copy(Layout::Flat);
    for rank in [0, 1] {
        rewrite_sizes(&comm_file(tmp.path(), rank), |mb, _| {
            (if mb >= 16.0 { mb - 8.0 } else { mb }).to_string()
        });
    }
    let advice = advice_of(tmp.path(), None);
    assert!(advice.findings.iter().all(|f| f.code != Code::SlowLink));
    assert!(
        notes(&advice, 1).iter().any(|n| n
            == "HCCS: no transfer of 16 MB or more, where the link reaches its bandwidth: slow link not judged"),
        "{:?}",
        notes(&advice, 1)
    );
    // Both ranks read: no single-rank note on the real run.
    let both = advice_of(&real_run(), None);
    assert!(notes(&both, 0).is_empty(), "{:?}", notes(&both, 0));
}

/// The level2 run of the vendored MindStudio Insight samples (rank 0 of 4 ranks), put into a
/// run directory.
fn level2_run() -> tempfile::TempDir {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../verify/tests/data/Ascend-msinsight");
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = tmp.path().join("rank_0_ascend_pt");
    let out = run.join("ASCEND_PROFILER_OUTPUT");
    std::fs::create_dir_all(&out).expect("mkdir");
    let prefix = "test__st__level2__rank_0_ascend_pt__";
    std::fs::copy(
        data.join(format!("{prefix}profiler_info_0.json")),
        run.join("profiler_info_0.json"),
    )
    .expect("copy profiler_info");
    for file in [
        "communication.json",
        "step_trace_time.csv",
        "kernel_details.csv",
    ] {
        std::fs::copy(
            data.join(format!("{prefix}ASCEND_PROFILER_OUTPUT__{file}")),
            out.join(file),
        )
        .unwrap_or_else(|e| panic!("copy {file}: {e}"));
    }
    tmp
}

#[test]
fn the_real_level2_run_is_aligned_and_its_96_byte_transfers_are_not_judged() {
    // Its HCCS sizes are multiples of 512 B (125829120 B, …) but three of 96 B (9.6e-05 MB),
    // too small to be judged, as msprof-analyze's check leaves sizes of 512 B or less out.
    let tmp = level2_run();
    let advice = advice_of(tmp.path(), None);
    assert_eq!(advice.runs.len(), 1);
    assert!(found(&advice, Code::ByteAlignment, 0).is_none());
    assert!(advice.findings.iter().all(|f| f.code != Code::SlowLink));
    check_single_rank_note(&advice, 0);
    // Planted: the 96-byte transfers taking 10 ms: still not judged (512 B or less) …
    let path = output_file(&tmp.path().join("rank_0_ascend_pt"), "communication.json");
    let slow_tiny = |key: &'static str| {
        move |mb: f64, entry: &mut Vec<serde_json::Value>| {
            if mb < 1e-3 {
                entry[1] = serde_json::Value::from(10.0);
                key.to_owned()
            } else {
                mb.to_string()
            }
        }
    };
    rewrite_sizes(&path, slow_tiny("9.6e-05"));
    let advice = advice_of(tmp.path(), None);
    assert!(found(&advice, Code::ByteAlignment, 0).is_none());
    // … and made 1000 B: judged, unaligned, named.
    rewrite_sizes(&path, slow_tiny("0.001"));
    let advice = advice_of(tmp.path(), None);
    let f = found(&advice, Code::ByteAlignment, 0).expect("byte-alignment");
    assert!(
        f.evidence.iter().any(|e| e.label == "HCCS 1000 B"),
        "{:#?}",
        f.evidence
    );
}
