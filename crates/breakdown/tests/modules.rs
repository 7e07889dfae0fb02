//! Exact mode on the vendored 2-rank AlexNet DDP run (`msinsight-text-level1`, recorded with
//! `with_modules`): every module's device total equals msprof-analyze's on both ranks.
//!
//! Provenance of [`ORACLE`]: msprof-analyze 26.2.0 (PyPI), `msprof-analyze compare -d
//! rank1_ascend_pt -bp rank0_ascend_pt -o OUT` on that run; the sheet `ModuleCompareStatistic`
//! of the xlsx it writes, the `[ TOTAL ]` row of each module, "Device Total Time(ms)" of the
//! base (rank 0) and comparison (rank 1) profiles. The module names are written as the sheet
//! writes them without its spaces after `/` (`[ BACKWARD ]` as `[BACKWARD]`). msprof-analyze
//! reports a backward node's own kernels (one backward operator's), so backward rows are
//! compared with `self_us`; forward rows with `total_us`.

use std::path::PathBuf;

use npuprof_breakdown::{Confidence, Method, Options, Unattributed, breakdown};

/// (path, rank 0 device total ms, rank 1 device total ms) from msprof-analyze's
/// `ModuleCompareStatistic` sheet, `[ TOTAL ]` rows.
const ORACLE: &[(&str, f64, f64)] = &[
    (
        "/DistributedDataParallel_0",
        2.318946249999999,
        2.33532653125,
    ),
    (
        "/DistributedDataParallel_0/AlexNet_0",
        2.318946249999999,
        2.33532653125,
    ),
    (
        "/DistributedDataParallel_0/AlexNet_0/Sequential_0",
        1.6876136875,
        1.6847735,
    ),
    (
        "/DistributedDataParallel_0/AlexNet_0/Sequential_0/Conv2d_0",
        0.401248,
        0.400808,
    ),
    (
        "/DistributedDataParallel_0/AlexNet_0/Sequential_0/ReLU_0",
        0.0155003125,
        0.01500028125,
    ),
    (
        "/DistributedDataParallel_0/AlexNet_0/Sequential_0/MaxPool2d_0",
        0.21100421875,
        0.206624125,
    ),
    (
        "/DistributedDataParallel_0/AlexNet_0/Sequential_0/Conv2d_1",
        0.22082440625,
        0.221384375,
    ),
    (
        "/DistributedDataParallel_0/AlexNet_0/Sequential_0/ReLU_1",
        0.01302028125,
        0.01320025,
    ),
    (
        "/DistributedDataParallel_0/AlexNet_0/Sequential_0/MaxPool2d_1",
        0.1955639375,
        0.19514384375,
    ),
    (
        "/DistributedDataParallel_0/AlexNet_0/Sequential_0/Conv2d_2",
        0.157863125,
        0.159003125,
    ),
    (
        "/DistributedDataParallel_0/AlexNet_0/Sequential_0/ReLU_2",
        0.0099601875,
        0.01002021875,
    ),
    (
        "/DistributedDataParallel_0/AlexNet_0/Sequential_0/Conv2d_3",
        0.1966239375,
        0.1976839375,
    ),
    (
        "/DistributedDataParallel_0/AlexNet_0/Sequential_0/ReLU_3",
        0.006560125,
        0.006660125,
    ),
    (
        "/DistributedDataParallel_0/AlexNet_0/Sequential_0/Conv2d_4",
        0.13988278125,
        0.1389028125,
    ),
    (
        "/DistributedDataParallel_0/AlexNet_0/Sequential_0/ReLU_4",
        0.008020187500000001,
        0.00788015625,
    ),
    (
        "/DistributedDataParallel_0/AlexNet_0/Sequential_0/MaxPool2d_2",
        0.1115421875,
        0.11246225,
    ),
    (
        "/DistributedDataParallel_0/AlexNet_0/AdaptiveAvgPool2d_0",
        0.067741375,
        0.06266125,
    ),
    (
        "/DistributedDataParallel_0/AlexNet_0/Sequential_1",
        0.5635911875,
        0.58789178125,
    ),
    (
        "/DistributedDataParallel_0/AlexNet_0/Sequential_1/Dropout_0",
        0.02058040625,
        0.0209204375,
    ),
    (
        "/DistributedDataParallel_0/AlexNet_0/Sequential_1/Linear_0",
        0.34656690625,
        0.357367125,
    ),
    (
        "/DistributedDataParallel_0/AlexNet_0/Sequential_1/ReLU_5",
        0.00826015625,
        0.008380156250000001,
    ),
    (
        "/DistributedDataParallel_0/AlexNet_0/Sequential_1/Dropout_1",
        0.01326021875,
        0.01238028125,
    ),
    (
        "/DistributedDataParallel_0/AlexNet_0/Sequential_1/Linear_1",
        0.1149223125,
        0.1283425625,
    ),
    (
        "/DistributedDataParallel_0/AlexNet_0/Sequential_1/ReLU_6",
        0.0027600625,
        0.0030400625,
    ),
    (
        "/DistributedDataParallel_0/AlexNet_0/Sequential_1/Linear_2",
        0.057241125,
        0.05746115625,
    ),
    (
        "/CrossEntropyLoss_0",
        0.05482109374999999,
        0.05474103125000001,
    ),
    ("/Optimizer.zero_grad#SGD.zero_grad", 0.0, 0.0),
    ("/[BACKWARD]/CrossEntropyLoss_0", 0.02196040625, 0.0250405),
    (
        "/[BACKWARD]/DistributedDataParallel_0/AlexNet_0/Sequential_1/Linear_2",
        0.0607611875,
        0.05956118749999999,
    ),
    (
        "/[BACKWARD]/DistributedDataParallel_0/AlexNet_0/Sequential_1/ReLU_6",
        0.00884015625,
        0.0090201875,
    ),
    (
        "/[BACKWARD]/DistributedDataParallel_0/AlexNet_0/Sequential_1/Linear_1",
        0.11298221875,
        0.1107821875,
    ),
    (
        "/[BACKWARD]/DistributedDataParallel_0/AlexNet_0/Sequential_1/Dropout_1",
        0.01152021875,
        0.01134025,
    ),
    (
        "/[BACKWARD]/DistributedDataParallel_0/AlexNet_0/Sequential_1/ReLU_5",
        0.00816015625,
        0.0085601875,
    ),
    (
        "/[BACKWARD]/DistributedDataParallel_0/AlexNet_0/Sequential_1/Linear_0",
        0.3736674375,
        0.3750875,
    ),
    (
        "/[BACKWARD]/DistributedDataParallel_0/AlexNet_0/Sequential_1/Dropout_0",
        0.01280025,
        0.01284025,
    ),
    ("/[BACKWARD]/DistributedDataParallel_0/AlexNet_0", 0.0, 0.0),
    (
        "/[BACKWARD]/DistributedDataParallel_0/AlexNet_0/AdaptiveAvgPool2d_0",
        0.06170128125000001,
        0.059241125,
    ),
    (
        "/[BACKWARD]/DistributedDataParallel_0/AlexNet_0/Sequential_0/MaxPool2d_2",
        0.17644353125,
        0.17750359375,
    ),
    (
        "/[BACKWARD]/DistributedDataParallel_0/AlexNet_0/Sequential_0/ReLU_4",
        0.0163003125,
        0.01430025,
    ),
    (
        "/[BACKWARD]/DistributedDataParallel_0/AlexNet_0/Sequential_0/Conv2d_4",
        0.32754653125,
        0.3196663749999999,
    ),
    (
        "/[BACKWARD]/DistributedDataParallel_0/AlexNet_0/Sequential_0/ReLU_3",
        0.0156003125,
        0.0149803125,
    ),
    (
        "/[BACKWARD]/DistributedDataParallel_0/AlexNet_0/Sequential_0/Conv2d_3",
        0.4150483437499999,
        0.4178684375,
    ),
    (
        "/[BACKWARD]/DistributedDataParallel_0/AlexNet_0/Sequential_0/ReLU_2",
        0.01724034375,
        0.0163803125,
    ),
    (
        "/[BACKWARD]/DistributedDataParallel_0/AlexNet_0/Sequential_0/Conv2d_2",
        0.3839276875000001,
        0.37568759375,
    ),
    (
        "/[BACKWARD]/DistributedDataParallel_0/AlexNet_0/Sequential_0/MaxPool2d_1",
        0.18656375,
        0.18570375,
    ),
    (
        "/[BACKWARD]/DistributedDataParallel_0/AlexNet_0/Sequential_0/ReLU_1",
        0.02292046875,
        0.0220604375,
    ),
    (
        "/[BACKWARD]/DistributedDataParallel_0/AlexNet_0/Sequential_0/Conv2d_1",
        0.42236834375,
        0.42258859375,
    ),
    (
        "/[BACKWARD]/DistributedDataParallel_0/AlexNet_0/Sequential_0/MaxPool2d_0",
        0.191283875,
        0.18932378125,
    ),
    (
        "/[BACKWARD]/DistributedDataParallel_0/AlexNet_0/Sequential_0/ReLU_0",
        0.0264005625,
        0.0261605,
    ),
    (
        "/[BACKWARD]/DistributedDataParallel_0/AlexNet_0/Sequential_0/Conv2d_0",
        0.46868940625,
        0.47146940625,
    ),
    ("/Optimizer.step#SGD.step", 2.26494525, 2.25804509375),
];

fn run_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../verify/tests/data/runs/msinsight-text-level1")
}

#[test]
fn every_module_total_equals_msprof_analyze_on_both_ranks() {
    let result = breakdown(&run_dir(), &Options::default()).expect("breakdown");
    assert_eq!(result.runs.len(), 2);
    for (rank, run) in result.runs.iter().enumerate() {
        assert_eq!(run.rank, Some(rank as u32));
        assert_eq!(run.method, Method::Modules);
        assert_eq!(run.confidence, Confidence::Exact);
        let mut compared = 0;
        for &(path, rank0_ms, rank1_ms) in ORACLE {
            let expected_us = 1000.0 * if rank == 0 { rank0_ms } else { rank1_ms };
            let module = run
                .modules
                .iter()
                .find(|m| m.path == path)
                .unwrap_or_else(|| panic!("rank {rank}: no module {path}"));
            let got = if module.backward {
                module.self_us
            } else {
                module.total_us
            };
            assert!(
                (got - expected_us).abs() < 0.001,
                "rank {rank} {path}: {got} µs, msprof-analyze {expected_us} µs"
            );
            compared += 1;
        }
        assert_eq!(compared, ORACLE.len());
    }
}

#[test]
fn the_ledger_adds_up_exactly() {
    let result = breakdown(&run_dir(), &Options::default()).expect("breakdown");
    for run in &result.runs {
        let ledger = run.ledger.as_ref().expect("exact mode has a ledger");
        let unattributed: u64 = ledger.unattributed.iter().map(|l| l.ps).sum();
        assert_eq!(ledger.owned_ps + unattributed, ledger.total_ps);
        assert!(ledger.owned_ps > 0);
        // The collective's device tasks have no launch flow: listed, never owned.
        let comm = ledger
            .unattributed
            .iter()
            .find(|l| l.reason == Unattributed::CommunicationUnlinked)
            .expect("the all-reduce's tasks");
        assert!(comm.kernels > 0);
        // The roots' totals are the owned time.
        let roots: f64 = run
            .modules
            .iter()
            .filter(|m| m.depth == 1)
            .map(|m| m.total_us)
            .sum();
        assert!((roots - ledger.owned_ps as f64 / 1e6).abs() < 1e-6);
        assert!((run.coverage - ledger.owned_ps as f64 / ledger.total_ps as f64).abs() < 1e-12);
        let compute = (ledger.total_ps - comm.ps) as f64;
        assert!((run.compute_coverage - ledger.owned_ps as f64 / compute).abs() < 1e-12);
        assert!(run.compute_coverage > run.coverage && run.compute_coverage <= 1.0);
    }
}

#[test]
fn the_rank_matrix_names_the_slowest_rank_per_module() {
    let result = breakdown(&run_dir(), &Options::default()).expect("breakdown");
    assert_eq!(result.ranks.len(), 1);
    let matrix = &result.ranks[0];
    assert_eq!(matrix.method, Method::Modules);
    assert_eq!(matrix.ranks, [Some(0), Some(1)]);
    let row = |path: &str| {
        matrix
            .rows
            .iter()
            .find(|r| r.node == path)
            .unwrap_or_else(|| panic!("no row {path}"))
    };
    // msprof-analyze's totals: rank 1 is slower on DistributedDataParallel_0 (2.3353 ms vs
    // 2.3189 ms), rank 0 on Conv2d_0 (0.401248 ms vs 0.400808 ms).
    let ddp = row("/DistributedDataParallel_0");
    assert_eq!(ddp.slowest_rank, Some(1));
    assert!((ddp.spread_us - (2335.32653125 - 2318.94625)).abs() < 0.001);
    let conv = row("/DistributedDataParallel_0/AlexNet_0/Sequential_0/Conv2d_0");
    assert_eq!(conv.slowest_rank, Some(0));
    assert!(conv.us.iter().all(Option::is_some));
    assert_eq!(matrix.rows.len(), result.runs[0].modules.len());
}

#[test]
fn the_page_draws_every_node_with_time_inside_its_parent() {
    let result = breakdown(&run_dir(), &Options::default()).expect("breakdown");
    let page = npuprof_breakdown::html::render(&result);
    assert!(page.starts_with("<!doctype html>"));
    // Every node with device time is one rect; read them back.
    let rects: Vec<(String, f64, f64)> = page
        .split("<rect")
        .skip(1)
        .filter_map(|r| {
            let attr = |name: &str| {
                let start = r.find(&format!(" {name}=\""))? + name.len() + 3;
                Some(r[start..start + r[start..].find('"')?].to_owned())
            };
            Some((
                attr("data-path")?,
                attr("x")?.parse().ok()?,
                attr("width")?.parse().ok()?,
            ))
        })
        .collect();
    let with_time = |run: usize| {
        result.runs[run]
            .modules
            .iter()
            .filter(|m| m.total_us > 0.0)
            .count()
    };
    assert_eq!(rects.len(), with_time(0) + with_time(1));
    let rank0 = &rects[..with_time(0)];
    let find = |path: &str| rank0.iter().find(|r| r.0 == path).expect(path);
    let (parent, child) = (
        find("/DistributedDataParallel_0/AlexNet_0/Sequential_0"),
        find("/DistributedDataParallel_0/AlexNet_0/Sequential_0/Conv2d_1"),
    );
    assert!(child.1 >= parent.1 - 0.01 && child.1 + child.2 <= parent.1 + parent.2 + 0.01);
    assert!(page.contains("data-matrix=\"run\""));
}

#[test]
fn the_waterfall_from_rank_0_to_rank_1_adds_up() {
    let dir = run_dir();
    let (r0, r1) = (dir.join("rank0_ascend_pt"), dir.join("rank1_ascend_pt"));
    let compare = |a: &PathBuf, b: &PathBuf, depth| {
        npuprof_breakdown::compare::compare(a, b, &Options::default(), depth).expect("compare")
    };
    let same = compare(&r0, &r0, 3);
    assert_eq!(same.pairs.len(), 1);
    assert!(same.pairs[0].rows.iter().all(|r| r.delta_us == 0.0));
    // One run on each side: paired whatever their ranks.
    let fall = compare(&r0, &r1, 2);
    assert!(fall.notes.is_empty(), "{:?}", fall.notes);
    let pair = &fall.pairs[0];
    assert_eq!((pair.rank, pair.new_rank), (Some(0), Some(1)));
    let runs = breakdown(&dir, &Options::default())
        .expect("both ranks")
        .runs;
    // The rows add up to each run's kernel time per step (one step here).
    let base: f64 = pair.rows.iter().filter_map(|r| r.base_us).sum();
    let new: f64 = pair.rows.iter().filter_map(|r| r.new_us).sum();
    assert!((base - runs[0].kernel_us).abs() < 1e-6 && (pair.base_us - base).abs() < 1e-9);
    assert!((new - runs[1].kernel_us).abs() < 1e-6);
    // Cut at depth 2: AlexNet_0 counts with its total, msprof-analyze's on each rank.
    let alexnet = pair
        .rows
        .iter()
        .find(|r| r.node == "/DistributedDataParallel_0/AlexNet_0")
        .expect("AlexNet_0");
    assert!((alexnet.delta_us - (2335.32653125 - 2318.94625)).abs() < 0.001);
    // Largest change first.
    assert!(
        pair.rows
            .windows(2)
            .all(|w| w[0].delta_us.abs() >= w[1].delta_us.abs())
    );
    // Two ranks on each side: paired by rank.
    assert_eq!(compare(&dir, &dir, 2).pairs.len(), 2);
}
