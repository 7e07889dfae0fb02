//! The rank section: the straggler (most computing + free per step) told apart from the rank
//! that waits most, both only past the anchor's 5 % spread; the slowest marked only past it;
//! ties to the lower rank; Level0's single `N/A` type explained.

mod common;

use std::path::Path;

use common::{Layout, add_to_steps, output_file, real_copy, rewrite_csv, run_dirs};
use npuprof_summary::ranks::{PhaseRanks, RANK_SPREAD};
use npuprof_summary::{Options, Summary, summarize};

fn summary(path: &Path) -> Summary {
    summarize(path, &Options::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn ranks(path: &Path) -> PhaseRanks {
    summary(path).ranks.into_iter().next().expect("a phase")
}

#[test]
fn the_real_run_has_no_straggler_and_no_marked_slowest_rank() {
    let r = ranks(real_copy(Layout::Flat).path());
    // Own time per step, Computing + Free of step_trace_time.csv (µs).
    let own0 = "8873.756000000001".parse::<f64>().unwrap_or_default()
        + "25744.050000000003".parse::<f64>().unwrap_or_default();
    let own1 = "8878.295000000006".parse::<f64>().unwrap_or_default()
        + "26675.27399999998".parse::<f64>().unwrap_or_default();
    let spread = r.own_spread.expect("two ranks");
    assert!((spread - (own1 - own0) / own0).abs() < 1e-12, "{spread}");
    assert!(spread < RANK_SPREAD);
    assert_eq!((r.straggler_rank, r.waiter_rank), (None, None));
    // Rank 0's step is 3.5 % longer: the slowest, yet under the threshold, so not marked.
    assert_eq!(r.slowest_rank, Some(0));
    assert!(!r.imbalanced);
}

#[test]
fn a_planted_straggler_is_named_and_the_rank_waiting_for_it_too() {
    let copy = real_copy(Layout::Flat);
    let rank1 = &run_dirs(copy.path(), Layout::Flat)[1].1;
    add_to_steps(rank1, "Computing", 20_000.0);
    let r = ranks(copy.path());
    assert_eq!(r.straggler_rank, Some(1));
    // Rank 0 waits 5.94 ms in collectives, rank 1 0.19 ms (communication.json).
    assert_eq!(r.waiter_rank, Some(0));
    assert!(r.own_spread.is_some_and(|s| s > RANK_SPREAD));
    assert_eq!(r.slowest_rank, Some(1));
    assert!(r.imbalanced);
}

#[test]
fn the_longest_step_of_a_waiting_rank_is_not_a_straggler() {
    // Rank 0's step grows by 20 ms of exposed communication only: it is the slowest (and
    // marked, past 5 %), yet its own time did not grow, so no rank is the straggler.
    let copy = real_copy(Layout::Flat);
    let rank0 = &run_dirs(copy.path(), Layout::Flat)[0].1;
    add_to_steps(rank0, "Communication(Not Overlapped)", 20_000.0);
    let r = ranks(copy.path());
    assert_eq!(r.slowest_rank, Some(0));
    assert!(r.imbalanced);
    assert_eq!(r.straggler_rank, None);
}

#[test]
fn ties_go_to_the_lower_rank() {
    let copy = real_copy(Layout::Flat);
    let dirs = run_dirs(copy.path(), Layout::Flat);
    std::fs::copy(
        output_file(&dirs[0].1, "step_trace_time.csv"),
        output_file(&dirs[1].1, "step_trace_time.csv"),
    )
    .expect("copy steps");
    let r = ranks(copy.path());
    assert_eq!((r.slowest_rank, r.fastest_rank), (Some(0), Some(0)));
    assert_eq!(r.imbalance_ratio, Some(1.0));
}

#[test]
fn a_single_na_type_is_explained() {
    let copy = real_copy(Layout::Flat);
    assert!(
        summary(copy.path()).runs[0]
            .notes
            .iter()
            .all(|n| !n.contains("Level0")),
        "the real Level1 run has types"
    );
    let rank0 = &run_dirs(copy.path(), Layout::Flat)[0].1;
    let mut index = 0;
    rewrite_csv(&output_file(rank0, "kernel_details.csv"), |row, fields| {
        if row == 0 {
            index = fields.iter().position(|f| f == "Type").expect("Type");
        } else {
            fields[index] = "N/A".to_owned();
        }
    });
    let s = summary(copy.path());
    assert_eq!(s.runs[0].by_type.len(), 1);
    assert!(
        s.runs[0]
            .notes
            .iter()
            .any(|n| n.starts_with("every kernel's Type is N/A (Level0 records no operator types)")),
        "{:?}",
        s.runs[0].notes
    );
}
