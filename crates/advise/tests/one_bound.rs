//! One bound verdict per kernel: summary's kernel table and advise's kernel profile read the
//! same rows with the same pipe reader and give every kernel the same [`Bound`]
//! ([`Bound::of`]), on real kernel tables: the PP2×DP2 training run's rank 0 (MindStudio
//! Insight's `test/st/level2`, torch_npu 2.7.1, vendored in verify's tests/data) and the
//! 2-rank AlexNet run (`crates/summary/tests/data/real-2rank`).
//!
//! Frozen counts recomputed with Python's csv module: per name, each pipe's ratio the largest
//! of its columns per row, time-weighted over the rows with a ratio above 0; bound when the
//! busiest is at 80 % or more, else `none`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use npuprof_advise::profile::read_kernels;
use npuprof_summary::kernels::aggregate;
use npuprof_summary::pipe::{Bound, Pipe};

fn data(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

const ST_LEVEL2_RANK0: &str = "../verify/tests/data/Ascend-msinsight/\
     test__st__level2__rank_0_ascend_pt__ASCEND_PROFILER_OUTPUT__kernel_details.csv";

/// Every kernel name with its verdict, from summary and from advise; asserts they agree.
fn verdicts(path: &Path) -> BTreeMap<String, Bound> {
    let table = aggregate(path).unwrap_or_else(|e| panic!("{e}"));
    let profile = read_kernels(path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(table.by_name.len(), profile.kernels.len());
    let advised: BTreeMap<&str, Option<Bound>> = profile
        .kernels
        .iter()
        .map(|k| (k.name.as_str(), k.bound))
        .collect();
    let mut out = BTreeMap::new();
    for kernel in &table.by_name {
        let advise = advised.get(kernel.name.as_str()).copied().flatten();
        assert_eq!(kernel.bound, advise, "{}", kernel.name);
        if let Some(bound) = kernel.bound {
            out.insert(kernel.name.clone(), bound);
        }
    }
    out
}

fn label_counts(verdicts: &BTreeMap<String, Bound>) -> BTreeMap<&'static str, usize> {
    let mut counts = BTreeMap::new();
    for bound in verdicts.values() {
        *counts.entry(bound.label()).or_default() += 1;
    }
    counts
}

#[test]
fn summary_and_advise_give_every_kernel_of_the_pp_run_the_same_bound() {
    let verdicts = verdicts(&data(ST_LEVEL2_RANK0));
    let counts = label_counts(&verdicts);
    let want: BTreeMap<&str, usize> = [("mte2", 12), ("mte3", 2), ("none", 29), ("scalar", 1)]
        .into_iter()
        .collect();
    assert_eq!(counts, want);
    // The MatMul summary once called scalar-bound (argmax of four pipes): MTE2 at 85.6 %.
    let matmul = verdicts.get("aclnnMatmul_MatMulV3Common_MatMulV3");
    let (pipe, ratio) = matmul
        .and_then(|b| b.busiest())
        .unwrap_or((Pipe::Cube, 0.0));
    assert_eq!(
        (matmul.map(|b| b.label()), pipe),
        (Some("mte2"), Pipe::Mte2)
    );
    assert_eq!(format!("{ratio:.3}"), "0.856");
}

#[test]
fn summary_and_advise_agree_on_the_alexnet_run_and_conv2d_backprop_is_bound_by_nothing() {
    for rank in [0, 1] {
        let path = data(&format!(
            "../summary/tests/data/real-2rank/rank{rank}_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv"
        ));
        let verdicts = verdicts(&path);
        let conv = verdicts.get("Conv2DBackpropFilter10").copied();
        assert!(
            matches!(conv, Some(Bound::Nothing(Pipe::Mte1, r)) if r < 0.8),
            "{conv:?}"
        );
    }
}
