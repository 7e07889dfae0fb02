//! The rules on the vendored real 2-rank run (`crates/summary/tests/data/real-2rank`) and on
//! planted variants of it: each rule fires where it should, names what it should, and is
//! silent where it should be.

#[path = "../../summary/tests/common/mod.rs"]
mod common;
mod support;

use std::path::Path;

use common::{Layout, output_file, real_copy, real_run, rewrite_csv};
use npuprof_advise::{Advice, Code, Finding, Options, advise};

fn advice_of(path: &Path) -> Advice {
    support::advised(path, None, 5)
}

/// The codes found for `rank` (`None`: the phase-wide ones).
fn codes(advice: &Advice, rank: Option<u32>) -> Vec<Code> {
    let mut codes: Vec<Code> = advice
        .findings
        .iter()
        .filter(|f| f.rank == rank)
        .map(|f| f.code)
        .collect();
    codes.sort();
    codes
}

fn finding(advice: &Advice, code: Code, rank: Option<u32>) -> &Finding {
    advice
        .findings
        .iter()
        .find(|f| f.code == code && f.rank == rank)
        .unwrap_or_else(|| panic!("no {code:?} for rank {rank:?}: {:#?}", advice.findings))
}

/// The copy's rank directory.
fn rank_dir(tmp: &Path, rank: u32) -> std::path::PathBuf {
    tmp.join(format!("rank{rank}_ascend_pt"))
}

/// Sets `column` of the data rows of `file` for which `pick(row index, fields)` holds.
fn set_column(
    run: &Path,
    file: &str,
    column: &str,
    value: &str,
    mut pick: impl FnMut(usize, &[String]) -> bool,
) {
    let mut index = None;
    rewrite_csv(&output_file(run, file), |row, fields| {
        if row == 0 {
            index = fields.iter().position(|f| f == column);
            assert!(index.is_some(), "{file} has no column {column}");
        } else if let Some(i) = index
            && pick(row, fields)
        {
            fields[i] = value.to_owned();
        }
    });
}

#[test]
fn the_real_run_gets_what_it_shows_and_nothing_else() {
    let advice = advice_of(&real_run());
    assert_eq!(advice.runs.len(), 2);
    let mut want = vec![
        Code::CommunicationExposed,
        Code::DeviceIdle,
        Code::NoBound,
        Code::MemoryBound,
        Code::DynamicShape,
        Code::SmallPackets,
        Code::ByteAlignment,
    ];
    want.sort();
    assert_eq!(codes(&advice, Some(0)), want);
    assert_eq!(codes(&advice, Some(1)), want);
    // The ranks' own times differ by 2.7 % (under the 5 % spread): no straggler; their HCCS
    // bandwidths over transfers of 16 MB or more by 1.2 %: no slow link.
    assert_eq!(codes(&advice, None), vec![]);
    // Rank 0's step: 136581.009 µs; not overlapped 101963.203 µs; free 25744.05 µs.
    let exposed = finding(&advice, Code::CommunicationExposed, Some(0));
    assert!((exposed.at_stake_us - 101_963.203).abs() < 1e-6);
    let share = exposed.at_stake_share.unwrap_or_default();
    assert!((share - 101_963.203 / 136_581.009).abs() < 1e-6, "{share}");
    let idle = finding(&advice, Code::DeviceIdle, Some(0));
    assert!((idle.at_stake_us - 25_744.05).abs() < 1e-6);
    // Bound over the seven pipes, recomputed in Python from the CSV (max of each pipe's
    // columns, time-weighted per name, busiest under 80 % = no bound): 65 kernels idle
    // 1749.395885 µs; 8 memory-bound kernels, 4015.819 µs.
    let no_bound = finding(&advice, Code::NoBound, Some(0));
    assert!((no_bound.at_stake_us - 1749.395885).abs() < 1e-6);
    assert!(
        no_bound.title.starts_with("65 kernel(s)"),
        "{}",
        no_bound.title
    );
    let memory = finding(&advice, Code::MemoryBound, Some(0));
    assert!((memory.at_stake_us - 4015.819).abs() < 1e-6);
    assert!(memory.title.starts_with("8 kernel(s)"), "{}", memory.title);
    // The largest gaps on the timeline come after the step's count of gaps ≥ 10 µs.
    assert_eq!(idle.evidence[0].count, Some(86));
    let largest = idle.evidence[1].time_us.unwrap_or_default();
    let next = idle.evidence[2].time_us.unwrap_or_default();
    assert!(largest >= next && largest > 1000.0, "{:#?}", idle.evidence);
}

/// The unaligned transfers msprof-analyze 26.2.0's advisor reports on each rank of the same run
/// (`advisor all -d rankN_ascend_pt`, its byte-alignment table, from trace_view.json's HCCL
/// tasks): operator and abnormal duration (µs), which communication.json gives alike.
const ANCHOR_UNALIGNED: [(u32, [(&str, f64); 2]); 2] = [
    (
        0,
        [
            ("hcom_allReduce__586_0_1", 237.9447),
            ("hcom_allReduce__586_3_1", 159.0632),
        ],
    ),
    (
        1,
        [
            ("hcom_allReduce__586_0_1", 263.9253),
            ("hcom_allReduce__586_3_1", 171.8235),
        ],
    ),
];

/// Checks that the collectives (`hcom_…`) of `found`'s evidence are `want`, in order, with their
/// time per step within `tolerance` µs; returns their summed time.
fn check_collectives(found: &Finding, want: &[(&str, f64)], tolerance: f64) -> f64 {
    let got: Vec<(&str, f64)> = found
        .evidence
        .iter()
        .filter(|e| e.label.starts_with("hcom_"))
        .map(|e| (e.label.as_str(), e.time_us.unwrap_or_default()))
        .collect();
    assert_eq!(got.len(), want.len(), "{:?} {got:?}", found.rank);
    for ((name, us), (want_name, want_us)) in got.iter().zip(want) {
        assert_eq!(name, want_name, "{:?}", found.rank);
        assert!(
            (us - want_us).abs() < tolerance,
            "{:?} {name}: {us}",
            found.rank
        );
    }
    got.iter().map(|(_, us)| us).sum()
}

#[test]
fn the_real_run_has_the_unaligned_transfers_msprof_analyze_reports() {
    let advice = advice_of(&real_run());
    for (rank, ops) in ANCHOR_UNALIGNED {
        let found = finding(&advice, Code::ByteAlignment, Some(rank));
        check_collectives(found, &ops, 1e-3);
        let total: f64 = ops.iter().map(|(_, us)| us).sum();
        assert!(
            (found.at_stake_us - total).abs() < 1e-3,
            "{}",
            found.at_stake_us
        );
        // The sizes: the tail slices 1937312 B and 1162496 B, 2 transfers each of 56.
        assert!(
            found
                .title
                .starts_with("4 of 56 transfers on HCCS not a multiple of 512 B"),
            "{}",
            found.title
        );
        let sizes: Vec<&str> = found
            .evidence
            .iter()
            .filter(|e| e.label.starts_with("HCCS "))
            .map(|e| e.label.as_str())
            .collect();
        assert_eq!(sizes, ["HCCS 1937312 B", "HCCS 1162496 B"]);
    }
}

#[test]
fn exposed_communication_is_named_per_collective_and_adds_up_to_step_trace_time() {
    let advice = advice_of(&real_run());
    // Recomputed in Python from kernel_details.csv: each HCCL kernel's time outside the union
    // of the computing kernels; their sum is step_trace_time's Communication(Not Overlapped)
    // (101963.203 µs on rank 0, 96359.047 µs on rank 1) within the f64 timestamps' 0.5 µs.
    for (rank, not_overlapped, want) in [
        (
            0,
            101_963.203,
            [
                ("hcom_allReduce__586_0_1", 75_561.5),
                ("hcom_allReduce__586_3_1", 21_967.25),
                ("hcom_allReduce__586_1_1", 2_234.0),
                ("hcom_allReduce__586_2_1", 2_200.0),
            ],
        ),
        (
            1,
            96_359.047,
            [
                ("hcom_allReduce__586_0_1", 69_964.25),
                ("hcom_allReduce__586_3_1", 21_968.75),
                ("hcom_allReduce__586_1_1", 2_234.0),
                ("hcom_allReduce__586_2_1", 2_191.5),
            ],
        ),
    ] {
        let exposed = finding(&advice, Code::CommunicationExposed, Some(rank));
        let sum = check_collectives(exposed, &want, 0.5);
        assert!((sum - not_overlapped).abs() < 1.0, "rank {rank}: {sum}");
    }
    let first = &finding(&advice, Code::CommunicationExposed, Some(0)).evidence[0];
    assert_eq!(
        first.detail,
        "not overlapped of its 79.09 ms; waiting 5.65 ms"
    );
}

#[test]
fn findings_are_sorted_by_time_at_stake() {
    let advice = advice_of(&real_run());
    let stakes: Vec<f64> = advice.findings.iter().map(|f| f.at_stake_us).collect();
    assert!(stakes.windows(2).all(|w| w[0] >= w[1]), "{stakes:?}");
    let evidence = &finding(&advice, Code::NoBound, Some(0)).evidence;
    assert_eq!(evidence.len(), 5);
    let times: Vec<f64> = evidence.iter().filter_map(|e| e.time_us).collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "{times:?}");
}

#[test]
fn a_planted_ai_cpu_kernel_is_named_with_its_time() {
    let tmp = real_copy(Layout::Flat);
    let run = rank_dir(tmp.path(), 0);
    set_column(
        &run,
        "kernel_details.csv",
        "Accelerator Core",
        "AI_CPU",
        |row, _| row == 1,
    );
    set_column(
        &run,
        "kernel_details.csv",
        "Name",
        "StatelessDropOutGenMask",
        |row, _| row == 1,
    );
    let advice = advice_of(tmp.path());
    let found = finding(&advice, Code::AiCpu, Some(0));
    assert_eq!(found.evidence.len(), 1);
    assert_eq!(found.evidence[0].label, "StatelessDropOutGenMask");
    // Row 1 is trans_TransData_0, 53.741 µs, in the one recorded step.
    assert_eq!(found.at_stake_us, 53.741);
    assert!(found.title.starts_with("1 operator(s) run on the AI CPU"));
    assert!(!codes(&advice, Some(1)).contains(&Code::AiCpu));
}

#[test]
fn dynamic_shape_is_silent_when_every_operator_is_static() {
    let tmp = real_copy(Layout::Flat);
    let run = rank_dir(tmp.path(), 0);
    set_column(&run, "kernel_details.csv", "OP State", "static", |_, _| {
        true
    });
    let advice = advice_of(tmp.path());
    assert!(!codes(&advice, Some(0)).contains(&Code::DynamicShape));
    assert!(codes(&advice, Some(1)).contains(&Code::DynamicShape));
}

#[test]
fn without_op_state_many_input_shapes_mark_an_operator_dynamic() {
    let tmp = real_copy(Layout::Flat);
    let run = rank_dir(tmp.path(), 0);
    common::drop_column(&output_file(&run, "kernel_details.csv"), "OP State");
    // TransData has 30 distinct input shapes in the real run; Mul 16: both at the limit of 16.
    let advice = advice_of(tmp.path());
    let labels: Vec<&str> = finding(&advice, Code::DynamicShape, Some(0))
        .evidence
        .iter()
        .map(|e| e.label.as_str())
        .collect();
    assert_eq!(labels, ["TransData", "Mul"]);
}

#[test]
fn a_straggler_rank_is_named_and_the_waiter_told_apart() {
    let tmp = real_copy(Layout::Flat);
    // Rank 1 computes 4 ms longer than rank 0: its own time is ~14 % over rank 0's.
    set_column(
        &rank_dir(tmp.path(), 1),
        "step_trace_time.csv",
        "Computing",
        "13878.295",
        |_, _| true,
    );
    let advice = advice_of(tmp.path());
    let slow = finding(&advice, Code::SlowRank, Some(1));
    assert!(
        slow.title.starts_with("rank 1 is the straggler"),
        "{}",
        slow.title
    );
    // Rank 0 waits 5.65 ms in its first all-reduce, rank 1 hardly at all.
    assert!(slow.title.contains("rank 0 waits most"), "{}", slow.title);
    let own = |rank: f64| rank;
    let spread = own(13_878.295 + 26_675.274) - own(8_873.756 + 25_744.05);
    assert!(
        (slow.at_stake_us - spread).abs() < 1e-3,
        "{}",
        slow.at_stake_us
    );
    assert!(
        slow.action
            .contains("npuprof compare rank0_ascend_pt rank1_ascend_pt")
    );
    assert_eq!(slow.evidence[0].label, "rank 1");
}

#[test]
fn device_idle_is_silent_when_the_step_has_little_free_time() {
    let tmp = real_copy(Layout::Flat);
    set_column(
        &rank_dir(tmp.path(), 0),
        "step_trace_time.csv",
        "Free",
        "100",
        |_, _| true,
    );
    let advice = advice_of(tmp.path());
    assert!(!codes(&advice, Some(0)).contains(&Code::DeviceIdle));
    assert!(codes(&advice, Some(1)).contains(&Code::DeviceIdle));
}

#[test]
fn a_planted_bubble_is_the_largest_gap() {
    let tmp = real_copy(Layout::Flat);
    let run = rank_dir(tmp.path(), 0);
    // Every kernel from row 100 on starts 200 ms later (longer than any kernel, the 79 ms
    // all-reduce included): a bubble of more than 100 ms before row 100.
    let mut start = None;
    let mut name_col = None;
    let mut before = String::new();
    rewrite_csv(&output_file(&run, "kernel_details.csv"), |row, fields| {
        if row == 0 {
            start = fields.iter().position(|f| f == "Start Time(us)");
            name_col = fields.iter().position(|f| f == "Name");
        } else if row >= 100
            && let (Some(s), Some(n)) = (start, name_col)
        {
            let value: f64 = fields[s].trim().parse().unwrap_or_default();
            fields[s] = format!("{:.3}\t", value + 200_000.0);
            if row == 100 {
                before.clone_from(&fields[n]);
            }
        }
    });
    let advice = advice_of(tmp.path());
    let gap = &finding(&advice, Code::DeviceIdle, Some(0)).evidence[1];
    assert!(gap.time_us.unwrap_or_default() > 100_000.0, "{gap:?}");
    let before = npuprof_summary::units::fit(&before, 27);
    assert!(
        gap.detail.ends_with(&format!("before {before}")),
        "{}",
        gap.detail
    );
    assert_eq!(gap.step, Some(50));
}

#[test]
fn rows_out_of_start_order_list_no_gap() {
    let tmp = real_copy(Layout::Flat);
    let run = rank_dir(tmp.path(), 0);
    set_column(
        &run,
        "kernel_details.csv",
        "Start Time(us)",
        "1736408883700000.000\t",
        |row, _| row == 50,
    );
    let advice = advice_of(tmp.path());
    let idle = finding(&advice, Code::DeviceIdle, Some(0));
    assert!(
        idle.evidence.iter().all(|e| e.label == "preparing"),
        "{:#?}",
        idle.evidence
    );
    let notes = &advice.runs[0].notes;
    assert!(
        notes.iter().any(|n| n.contains("not in start order")),
        "{notes:?}"
    );
    // Nor an exposed time per collective: the collectives by elapsed time instead.
    let exposed = finding(&advice, Code::CommunicationExposed, Some(0));
    assert_eq!(exposed.evidence[0].label, "hcom_allReduce__586_0_1");
    assert_eq!(exposed.evidence[0].detail, "waiting 5.65 ms per step");
}

#[test]
fn without_pipe_metrics_or_communication_those_rules_are_silent() {
    let tmp = real_copy(Layout::Flat);
    let run = rank_dir(tmp.path(), 0);
    let csv = output_file(&run, "kernel_details.csv");
    for column in [
        "aic_mac_ratio",
        "aic_scalar_ratio",
        "aic_mte1_ratio",
        "aic_mte2_ratio",
        "aic_fixpipe_ratio",
        "aiv_vec_ratio",
        "aiv_scalar_ratio",
        "aiv_mte2_ratio",
        "aiv_mte3_ratio",
    ] {
        common::drop_column(&csv, column);
    }
    std::fs::remove_file(output_file(&run, "communication.json")).unwrap_or_else(|e| panic!("{e}"));
    let advice = advice_of(tmp.path());
    let rank0 = codes(&advice, Some(0));
    for silent in [Code::NoBound, Code::MemoryBound, Code::SmallPackets] {
        assert!(!rank0.contains(&silent), "{silent:?} in {rank0:?}");
    }
    assert!(
        advice.runs[0]
            .notes
            .iter()
            .any(|n| n.contains("bound not judged"))
    );
    // Without communication.json the wait is unknown, and the action says so rather than
    // telling the user what to do about a wait of 5 %.
    let exposed = finding(&advice, Code::CommunicationExposed, Some(0));
    assert!(
        exposed
            .action
            .starts_with("the wait in collectives is not recorded here (communication.json"),
        "{}",
        exposed.action
    );
}

#[test]
fn small_packets_are_silent_when_transfers_are_large() {
    let tmp = real_copy(Layout::Flat);
    let path = output_file(&rank_dir(tmp.path(), 0), "communication.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
    // Every packet size key of the distribution ("2.064384": [...]) made 64 MB or more.
    let mut json: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    enlarge_packets(&mut json);
    std::fs::write(&path, json.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let advice = advice_of(tmp.path());
    assert!(!codes(&advice, Some(0)).contains(&Code::SmallPackets));
    assert!(codes(&advice, Some(1)).contains(&Code::SmallPackets));
}

fn enlarge_packets(value: &mut serde_json::Value) {
    if let Some(map) = value.as_object_mut() {
        if let Some(sizes) = map
            .get_mut("Size Distribution")
            .and_then(|s| s.as_object_mut())
        {
            let old = std::mem::take(sizes);
            for (size, v) in old {
                let mb: f64 = size.parse().unwrap_or_default();
                sizes.insert(format!("{}", mb + 64.0), v);
            }
        }
        map.values_mut().for_each(enlarge_packets);
    }
}

#[test]
fn phase_and_rank_select_and_an_empty_selection_is_an_error() {
    let tmp: tempfile::TempDir = real_copy(Layout::ResultDir);
    let decode = advise(
        tmp.path(),
        &Options {
            phase: Some("decode".to_owned()),
            rank: Some(1),
            top: 5,
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(decode.runs.len(), 1);
    assert!(
        decode
            .findings
            .iter()
            .all(|f| f.phase.as_deref() == Some("decode") && f.rank == Some(1))
    );
    // Both phases: findings grouped by phase, prefill first.
    let both = advice_of(tmp.path());
    let phases: Vec<Option<&str>> = both.findings.iter().map(|f| f.phase.as_deref()).collect();
    let first_decode = phases
        .iter()
        .position(|p| *p == Some("decode"))
        .unwrap_or_default();
    assert!(phases[..first_decode].iter().all(|p| *p == Some("prefill")));
    assert!(phases[first_decode..].iter().all(|p| *p == Some("decode")));
    let none = advise(
        tmp.path(),
        &Options {
            phase: Some("decode".to_owned()),
            rank: Some(7),
            top: 5,
        },
    );
    let message = none.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        message.contains("no rank 7 in phase decode: the profile has rank 0, 1"),
        "{message}"
    );
}

#[test]
fn json_of_the_real_run() {
    let advice = advise(
        &real_run(),
        &Options {
            phase: None,
            rank: Some(0),
            top: 2,
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut json = serde_json::to_value(&advice).unwrap_or_else(|e| panic!("{e}"));
    json["path"] = serde_json::Value::from("[REAL]");
    insta::assert_json_snapshot!("real_rank0", json);
}

#[test]
fn a_db_export_gets_the_findings_of_the_text_export_of_the_same_workload() {
    // db-level1 is the workload of real-2rank recorded again with export_type=db: the same
    // rules fire on each rank, links included (analysis.db's CommAnalyzerBandwidth).
    let db = advice_of(&common::db_run());
    let text = advice_of(&real_run());
    for rank in [Some(0), Some(1)] {
        assert_eq!(codes(&db, rank), codes(&text, rank), "rank {rank:?}");
    }
    // The packets of rank 0 in CommAnalyzerBandwidth: 12 + 2 HCCS transfers per operator, 4
    // operators; those of hcom_allReduce__210_2_1 are 18.9 and 18.8 MB, the rest under 16 MB.
    let packets = finding(&db, Code::SmallPackets, Some(0));
    assert!(
        packets
            .evidence
            .iter()
            .any(|e| e.detail == "42 of 56 transfers under 16 MB"),
        "{:#?}",
        packets.evidence
    );
    assert_eq!(db.runs.len(), 2);
    for run in &db.runs {
        // analysis.db's StepTraceTime of the vendored run: one step, 50.
        assert_eq!(run.steps, 1, "{run:?}");
        assert!(run.mean_step_us.is_some_and(|m| m > 100_000.0), "{run:?}");
        assert!(
            run.notes
                .iter()
                .any(|n| n.starts_with("db export:") && n.contains("no text export")),
            "{:?}",
            run.notes
        );
    }
    // The host calls in the device gaps are read from the profiler database, as the text
    // export's trace_view.json gives them, and the action names the database, not a
    // trace_view.json the run does not have.
    for rank in [Some(0), Some(1)] {
        let idle = finding(&db, Code::DeviceIdle, rank);
        assert!(
            idle.evidence
                .iter()
                .any(|e| e.detail.contains("; host meanwhile: ") && e.detail.contains("(Python)")),
            "{:#?}",
            idle.evidence
        );
        assert!(
            idle.action
                .starts_with("open the run's profiler database (ascend_pytorch_profiler*.db)"),
            "{}",
            idle.action
        );
        // (The vendored text export keeps no trace_view.json: its action says so.)
        assert!(
            finding(&text, Code::DeviceIdle, rank)
                .action
                .starts_with("copy the run's trace_view.json here")
        );
    }
    // The kernels are read: the largest no-bound kernel of rank 0 has a name and a time.
    let f = finding(&db, Code::NoBound, Some(0));
    assert!(
        f.evidence
            .first()
            .is_some_and(|e| e.time_us.is_some_and(|t| t > 0.0))
    );
}

#[test]
fn ranks_recorded_differently_are_named_before_the_findings() {
    let tmp = real_copy(Layout::Flat);
    let info = rank_dir(tmp.path(), 1).join("profiler_info_1.json");
    let text = std::fs::read_to_string(&info).expect("read");
    std::fs::write(&info, text.replacen("\"Level1\"", "\"Level2\"", 1)).expect("write");
    let advice = advice_of(tmp.path());
    let got: Vec<_> = advice
        .warnings
        .iter()
        .map(|w| (w.code.as_str(), w.message.as_str()))
        .collect();
    assert_eq!(
        got,
        [(
            "profiler-level",
            "profiler levels differ: rank 0 Level1, rank 1 Level2 (kernel columns, pipe metrics and communication detail differ with the level)"
        )]
    );
    assert!(advice_of(&real_run()).warnings.is_empty());
}

/// Appends steps `first_step + 1 ..= first_step + extra` to rank `rank`'s step_trace_time.csv,
/// each the real step's row with every time divided by `divisor`.
fn add_shorter_steps(tmp: &Path, rank: u32, extra: u64, divisor: f64) {
    let path = output_file(&rank_dir(tmp, rank), "step_trace_time.csv");
    let text = std::fs::read_to_string(&path).expect("read step_trace_time.csv");
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let real: Vec<String> = lines[1].split(',').map(str::to_owned).collect();
    let first: u64 = real[0].parse().expect("a Step");
    for k in 1..=extra {
        let mut row = vec![(first + k).to_string()];
        row.extend(real[1..].iter().map(|f| {
            let v: f64 = f.parse().expect("a time");
            (v / divisor).to_string()
        }));
        lines.push(row.join(","));
    }
    std::fs::write(&path, lines.join("\n") + "\n").expect("write step_trace_time.csv");
}

#[test]
fn a_first_step_twenty_times_the_others_is_an_outlier_with_its_excess_at_stake() {
    let tmp = real_copy(Layout::Flat);
    // Rank 0: the real step 50 (136581.009 µs) and steps 51-53 at a twentieth of it.
    add_shorter_steps(tmp.path(), 0, 3, 20.0);
    let advice = advice_of(tmp.path());
    let outlier = finding(&advice, Code::FirstStepOutlier, Some(0));
    let (first, median) = (136_581.009, 136_581.009 / 20.0);
    assert!(
        outlier
            .title
            .starts_with("the first recorded step 50 takes 136.58 ms, 20.0× the median 6.83 ms"),
        "{}",
        outlier.title
    );
    assert!((outlier.at_stake_us - (first - median) / 4.0).abs() < 1e-6);
    assert_eq!(outlier.evidence[0].step, Some(50));
    assert!((outlier.evidence[1].time_us.unwrap_or_default() - median).abs() < 1e-6);
    assert!(!codes(&advice, Some(1)).contains(&Code::FirstStepOutlier));
}

#[test]
fn a_first_step_five_times_the_others_is_not_an_outlier() {
    let tmp = real_copy(Layout::Flat);
    add_shorter_steps(tmp.path(), 0, 3, 5.0);
    let advice = advice_of(tmp.path());
    assert!(!codes(&advice, Some(0)).contains(&Code::FirstStepOutlier));
}

/// Puts the real rank 0's trace_view.json (vendored in `tests/data/trace-view`) into the copy.
fn add_trace_view(tmp: &Path) -> std::path::PathBuf {
    let vendored =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/trace-view/rank0_trace_view.json");
    let path = output_file(&rank_dir(tmp, 0), "trace_view.json");
    std::fs::copy(vendored, &path).expect("copy trace_view.json");
    path
}

/// Checks that evidence item `i` of a device-idle finding names `text`.
fn check_gap_detail(idle: &Finding, i: usize, text: &str) {
    let detail = &idle.evidence[i].detail;
    assert!(detail.contains(text), "{detail}");
}

#[test]
fn the_host_activity_in_the_largest_gaps_is_named_from_trace_view() {
    let tmp = real_copy(Layout::Flat);
    add_trace_view(tmp.path());
    let advice = advice_of(tmp.path());
    let idle = finding(&advice, Code::DeviceIdle, Some(0));
    // With the trace here, the action opens it; rank 1's directory has none, and its action
    // says so.
    assert!(
        idle.action.starts_with("open trace_view.json"),
        "{}",
        idle.action
    );
    let without = finding(&advice, Code::DeviceIdle, Some(1));
    assert!(
        without
            .action
            .starts_with("copy the run's trace_view.json here (every text export writes it"),
        "{}",
        without.action
    );
    // Recomputed in Python: the largest gap (1318.75 µs, after the first Conv2D) is the host
    // compiling the next Conv2D (`Dequeue@Conv2D` 1130 µs, aclopCompileAndExecute 1126 µs).
    let largest = &idle.evidence[1];
    assert!(
        (largest.time_us.unwrap_or_default() - 1318.75).abs() < 0.5,
        "{largest:#?}"
    );
    assert!(
        largest.detail.ends_with(
            "; host meanwhile: Dequeue@Conv2D (Python) 1.13 ms, AscendCL@aclopCompileAndExecute (CANN) 1.13 ms, aten::conv2d (Python) 672.2 µs"
        ),
        "{}",
        largest.detail
    );
    // The next gaps are the host in aten::linear; rank 1 has no trace: nothing named.
    check_gap_detail(idle, 2, "host meanwhile: aten::linear (Python)");
    let other = finding(&advice, Code::DeviceIdle, Some(1));
    assert!(
        other
            .evidence
            .iter()
            .all(|e| !e.detail.contains("host meanwhile"))
    );
}

#[test]
fn a_cut_trace_view_names_what_came_before_the_cut_and_says_so() {
    let tmp = real_copy(Layout::Flat);
    let path = add_trace_view(tmp.path());
    let bytes = std::fs::read(&path).expect("read trace_view.json");
    // Cut in the middle of the device events (after every host event of the step).
    std::fs::write(&path, &bytes[..bytes.len() - 1000]).expect("cut trace_view.json");
    let advice = advice_of(tmp.path());
    let idle = finding(&advice, Code::DeviceIdle, Some(0));
    check_gap_detail(idle, 1, "host meanwhile: Dequeue@Conv2D");
    let run = support::run_of(&advice, 0);
    assert!(
        run.notes
            .iter()
            .any(|n| n.contains("trace_view.json: ends before the array closes")),
        "{:?}",
        run.notes
    );
}

/// kernel_details.csv and step_trace_time.csv count steps apart (here the kernel table holds
/// its one real step twice, as steps 50 and 51): each is divided by its own count, so the
/// kernels' figures per step stay those of the real step, and a note says so.
#[test]
fn kernel_figures_are_per_step_of_the_kernel_table_when_it_counts_other_steps() {
    let real = advice_of(real_copy(Layout::Flat).path());
    let tmp = real_copy(Layout::Flat);
    let file = output_file(&tmp.path().join("rank0_ascend_pt"), "kernel_details.csv");
    let text = std::fs::read_to_string(&file).expect("read kernel_details.csv");
    let (header, body) = text.split_once('\n').expect("a header");
    let again: String = body
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let (step, rest) = line.split_once(',').expect("Step Id first");
            assert_eq!(step, "50", "the real run records step 50");
            format!("51,{rest}\n")
        })
        .collect();
    std::fs::write(&file, format!("{header}\n{body}{again}")).expect("write");
    let twice = advice_of(tmp.path());
    for code in [Code::MemoryBound, Code::NoBound] {
        let (want, got) = (
            finding(&real, code, Some(0)),
            finding(&twice, code, Some(0)),
        );
        let close = |a: f64, b: f64| (a - b).abs() < 1e-6 * b.abs().max(1.0);
        assert!(close(got.at_stake_us, want.at_stake_us), "{code:?}");
        let first = |f: &Finding| f.evidence[0].time_us.expect("a time");
        assert!(close(first(got), first(want)), "{code:?}");
    }
    // The time split is step_trace_time's, per its own step.
    assert_eq!(
        finding(&twice, Code::DeviceIdle, Some(0)).at_stake_us,
        finding(&real, Code::DeviceIdle, Some(0)).at_stake_us
    );
    let run = support::run_of(&twice, 0);
    assert!(
        run.notes.iter().any(|n| n.starts_with(
            "kernel_details.csv holds 2 step(s), step_trace_time.csv 1: kernel figures are per step"
        )),
        "{:?}",
        run.notes
    );
}
