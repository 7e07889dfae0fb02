//! The profiler's own `memory_bound` column (`mte2_ratio / max(mac_ratio, vec_ratio)`, written
//! on chips without the AIC/AIV split): where it is above 1, the kernel is memory-bound even
//! when no pipe reaches 80 %, and it is not also counted as bound by no pipe.

#[path = "../../summary/tests/common/mod.rs"]
mod common;
mod support;

use std::path::Path;

use common::{Layout, output_file, real_copy, rewrite_csv};
use npuprof_advise::{Advice, Code, Finding};

/// A kernel the pipe rule alone calls bound by no pipe (its busiest pipe, MTE2, at 55.6 %).
const UNSATURATED: &str = "aclnnInplaceCopy_TensorMoveAiCore_TensorMove";

fn advice_of(path: &Path) -> Advice {
    support::advised(path, None, 100)
}

/// The evidence labels and details of rank 0's `code` finding.
fn evidence(advice: &Advice, code: Code) -> Vec<(String, String)> {
    let finding: Option<&Finding> = advice
        .findings
        .iter()
        .find(|f| f.code == code && f.rank == Some(0));
    finding
        .map(|f| {
            let items = f.evidence.iter();
            items.map(|e| (e.label.clone(), e.detail.clone())).collect()
        })
        .unwrap_or_default()
}

/// Adds a `memory_bound` column to rank 0's kernel_details.csv: `bound` for the rows of
/// `kernel`, 0.4 for the others.
fn add_memory_bound(tmp: &Path, kernel: &str, bound: &str) {
    let file = output_file(&tmp.join("rank0_ascend_pt"), "kernel_details.csv");
    let mut name = None;
    rewrite_csv(&file, |row, fields| {
        if row == 0 {
            name = fields.iter().position(|f| f == "Name");
            fields.push("memory_bound".to_owned());
        } else {
            let here = name.is_some_and(|i| fields[i] == kernel);
            fields.push(if here { bound } else { "0.4" }.to_owned());
        }
    });
}

#[test]
fn the_profilers_memory_bound_column_above_one_marks_a_kernel_memory_bound() {
    let clean = advice_of(real_copy(Layout::Flat).path());
    let named = |items: &[(String, String)]| items.iter().any(|(label, _)| label == UNSATURATED);
    assert!(named(&evidence(&clean, Code::NoBound)));
    assert!(!named(&evidence(&clean, Code::MemoryBound)));

    let planted = real_copy(Layout::Flat);
    add_memory_bound(planted.path(), UNSATURATED, "2.3");
    let got = advice_of(planted.path());
    let memory = evidence(&got, Code::MemoryBound);
    let detail = memory.iter().find(|(label, _)| label == UNSATURATED);
    assert_eq!(
        detail.map(|(_, d)| d.as_str()),
        Some("memory_bound 2.30 in the profiler's own column (busiest pipe mte2 at 55.6%)")
    );
    assert!(!named(&evidence(&got, Code::NoBound)), "not counted twice");
    // The kernels the pipe rule calls memory-bound stay so; the column below 1 adds none.
    let clean_memory = evidence(&clean, Code::MemoryBound);
    assert_eq!(memory.len(), clean_memory.len() + 1);
}

#[test]
fn a_memory_bound_column_below_one_changes_nothing() {
    let clean = advice_of(real_copy(Layout::Flat).path());
    let planted = real_copy(Layout::Flat);
    add_memory_bound(planted.path(), UNSATURATED, "0.9");
    let got = advice_of(planted.path());
    for code in [Code::MemoryBound, Code::NoBound] {
        assert_eq!(evidence(&got, code), evidence(&clean, code), "{code:?}");
    }
}
