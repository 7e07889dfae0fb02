//! Waiting said as time and as a share of the time in collectives, on real communication.json
//! files: the 2-rank AlexNet run (`tests/data/real-2rank`, torch_npu writing `Transit Time`) and
//! rank 0 of the PP2×DP2 training run (MindStudio Insight's `test/st/level2`, torch_npu 2.7.1,
//! `Transit Time(ms)` 0 for every operator; vendored in verify's tests/data).
//!
//! Frozen values recomputed with Python's json module over the operators (the vendor's
//! `Total Op Info` left out): AlexNet rank 0 elapse 105.992 ms, wait 5.941 ms, transit 3.683 ms;
//! st-level2 rank 0: 15 operators, elapse 420.174 ms, wait 164.144 ms, transit 0, bandwidth
//! section RDMA 0 + SDMA 92.973 ms.

use std::path::Path;

use npuprof_summary::comm::{Communication, read_communication, wait_phrase};

fn comm(path: &str) -> Communication {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    read_communication(&path).unwrap_or_else(|e| panic!("{e}"))
}

fn ms(us: f64) -> String {
    format!("{:.3}", us / 1000.0)
}

#[test]
fn the_alexnet_rank_waits_five_percent_of_its_collectives_not_sixty() {
    let c = comm("tests/data/real-2rank/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/communication.json");
    assert_eq!(
        (c.ops, ms(c.elapse_us), ms(c.wait_us)),
        (4, "105.992".into(), "5.941".into())
    );
    assert_eq!(
        (ms(c.transit_us), c.transit_from_bandwidth),
        ("3.683".into(), false)
    );
    // What the reports say now, and the ratio they said before (wait / (wait + transit)).
    assert_eq!(
        wait_phrase(c.wait_us, c.elapse_us),
        "waits 5.94 ms, 5.6% of its time in collectives"
    );
    assert_eq!(
        c.wait_ratio.map(|r| format!("{r:.3}")),
        Some("0.617".into())
    );
}

#[test]
fn a_zero_transit_is_taken_from_the_bandwidth_section_on_torch_npu_2_7_1() {
    let c = comm(
        "../verify/tests/data/Ascend-msinsight/test__st__level2__rank_0_ascend_pt__ASCEND_PROFILER_OUTPUT__communication.json",
    );
    assert_eq!(
        (c.ops, ms(c.elapse_us), ms(c.wait_us)),
        (15, "420.174".into(), "164.144".into())
    );
    assert_eq!(
        (ms(c.transit_us), c.transit_from_bandwidth),
        ("92.973".into(), true)
    );
    assert_eq!(
        wait_phrase(c.wait_us, c.elapse_us),
        "waits 164.14 ms, 39.1% of its time in collectives"
    );
}
