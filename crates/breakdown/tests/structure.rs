//! The cann-recipes-infer skill's files (`--structure`, `--rules`): on the real PP training
//! step (rank 0 of MindStudio Insight's PP2×DP2 run, vendored in
//! crates/verify/tests/data/Ascend-msinsight/, Mulan PSL v2) against the numbers the skill's own
//! scripts give on the same table (`tests/data/skill/oracle.txt`, made by `oracle.py`; see the
//! NOTICE there), on the synthetic MoE decode step with a planted slow layer, and the
//! validation of both files.

mod common;

use std::path::PathBuf;

use npuprof_breakdown::kernels::{self, KernelTable};
use npuprof_breakdown::skill::{self, SpecError};
use npuprof_breakdown::structure::{StructureBreakdown, apply};
use npuprof_breakdown::{Confidence, structure::TypeSection};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/skill")
        .join(name)
}

fn pp_table() -> KernelTable {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
        "../verify/tests/data/Ascend-msinsight/\
         test__st__level2__rank_0_ascend_pt__ASCEND_PROFILER_OUTPUT__kernel_details.csv",
    );
    kernels::read_detailed(&path).expect("the vendored table")
}

fn spec_text(name: &str) -> String {
    skill::read_file(&data(name)).expect("the vendored spec")
}

fn pp_breakdown() -> StructureBreakdown {
    let structure =
        skill::parse_structure(&spec_text("pp_structure_spec.json")).expect("structure");
    let rules = skill::parse_rules(&spec_text("pp-dense-28l_spec.json")).expect("rules");
    apply(&pp_table(), &structure, Some(&rules))
}

/// One row of `oracle.txt`: the skill's median, p95 and outlier layers.
struct OracleRow {
    component: String,
    name: String,
    median_us: f64,
    p95_us: f64,
    outliers: Vec<usize>,
}

fn oracle() -> Vec<OracleRow> {
    let text = std::fs::read_to_string(data("oracle.txt")).expect("oracle.txt");
    let mut component = String::new();
    let mut rows = Vec::new();
    for line in text.lines() {
        if line.starts_with("windows:") {
            assert_eq!(
                line,
                "windows: 112 npuprof instances, 112 skill instances, 112 identical"
            );
            continue;
        }
        if !line.starts_with(' ') {
            component = line.split(' ').next().unwrap_or_default().to_owned();
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let list = line[line.find('[').expect("[")..].trim_matches(['[', ']']);
        rows.push(OracleRow {
            component: component.clone(),
            name: words[0].to_owned(),
            median_us: words[2].parse().expect("median"),
            p95_us: words[4].parse().expect("p95"),
            outliers: list
                .split(", ")
                .filter(|s| !s.is_empty())
                .map(|s| s.parse().expect("layer"))
                .collect(),
        });
    }
    rows
}

/// The row `name` of a type's section: its median, p95 and outlier layers.
fn row_of(section: &TypeSection, name: &str) -> (f64, f64, Vec<usize>) {
    let series = match name {
        "bubble" => &section.bubble,
        "TOTAL" => &section.total,
        cluster => {
            &section
                .clusters
                .iter()
                .find(|c| c.cluster == cluster)
                .unwrap_or_else(|| panic!("cluster {cluster}"))
                .wall
        }
    };
    let layers = series
        .outliers
        .iter()
        .map(|&i| section.instances[i].layer_idx)
        .collect();
    (series.median_us, series.p95_us, layers)
}

/// Every row equals the skill's within its float rounding (0.6 µs, see the NOTICE); outliers
/// equal but for the two verdicts at a fence the NOTICE names.
fn check_against_the_skill(by: &StructureBreakdown) {
    let step = &by.steps[0];
    let rows = oracle();
    assert_eq!(rows.len(), 36);
    for row in rows {
        let section = step
            .sections
            .iter()
            .find(|s| s.component == row.component)
            .unwrap_or_else(|| panic!("component {}", row.component));
        let (median, p95, mut outliers) = row_of(section, &row.name);
        let at = format!("{}/{}", row.component, row.name);
        assert!(
            (median - row.median_us).abs() < 0.6,
            "{at}: median {median} vs {}",
            row.median_us
        );
        assert!(
            (p95 - row.p95_us).abs() < 0.6,
            "{at}: p95 {p95} vs {}",
            row.p95_us
        );
        match at.as_str() {
            "mlp/post_norm" => outliers.insert(0, 4),
            "attn_grad/input_norm_grad" => outliers.retain(|&l| l != 37),
            _ => {}
        }
        assert_eq!(outliers, row.outliers, "{at}");
    }
}

#[test]
fn the_real_pp_step_as_the_skills_own_scripts_break_it_down() {
    let by = pp_breakdown();
    assert_eq!(by.layers_declared, 56);
    assert_eq!(by.model_name.as_deref(), Some("pp-dense-28l"));
    assert_eq!((by.dropped_ai_cpu, by.dropped_fragments), (0, 0));
    assert_eq!(by.steps.len(), 1);
    let step = &by.steps[0];
    assert_eq!((step.step, step.passes, step.kernels), (Some(13), 1, 2463));
    // The windows the skill's matcher finds from a one-layer sample (oracle.txt's first line):
    // per type 28 instances; the first of each where layer mode's layer and the rules put it.
    let first: Vec<(&str, usize, usize, usize)> = step
        .sections
        .iter()
        .map(|s| {
            let i = &s.instances[0];
            (
                s.component.as_str(),
                s.instances.len(),
                i.first_kernel,
                i.kernels,
            )
        })
        .collect();
    assert_eq!(
        first,
        [
            ("attn", 28, 7, 26),
            ("mlp", 28, 33, 5),
            ("mlp_grad", 28, 885, 8),
            ("attn_grad", 28, 893, 28),
        ]
    );
    let phases: Vec<(&str, usize)> = step.sections[2]
        .instances
        .iter()
        .map(|i| (i.phase.as_str(), i.layer_idx))
        .step_by(14)
        .collect();
    assert_eq!(phases, [("backward_mb0", 28), ("backward_mb1", 42)]);
    check_against_the_skill(&by);
    // The embedding, the loss and the optimizer's tail are in no layer: 23.4 % of the compute
    // kernels, more than the skill's 5 % gate, so the result says it.
    assert_eq!(step.outside, 587);
    assert!((step.outside_compute_share - 572.0 / 2448.0).abs() < 1e-12);
    assert_eq!(by.confidence, Confidence::Low);
    assert!(
        by.notes
            .iter()
            .any(|n| n.contains("the skill would refuse"))
    );
    // Every kernel inside a component lands in a cluster (each type ends with catch_all).
    assert!(step.sections.iter().all(|s| s.unmatched.is_empty()));
    // TOTAL = wall + bubble, instance by instance: the clusters' walls add up to at least the
    // union (they may overlap), and the share reported is theirs over TOTAL.
    for s in &step.sections {
        for (i, total) in s.total.per_instance_us.iter().enumerate() {
            let walls: f64 = s.clusters.iter().map(|c| c.wall.per_instance_us[i]).sum();
            assert!(walls + s.bubble.per_instance_us[i] >= total - 1e-6);
        }
        let medians: f64 = s.clusters.iter().map(|c| c.wall.median_us).sum();
        let share = s.cluster_share.expect("clusters");
        assert!((share - medians / s.total.median_us).abs() < 1e-12);
    }
}

#[test]
fn the_skills_example_structure_reads_as_it_schedules() {
    let structure =
        skill::parse_structure(&spec_text("skill_example_structure_spec.json")).expect("parses");
    assert_eq!(structure.layer_count(), 9);
    let schedule: Vec<(&str, usize, String)> = structure
        .schedule()
        .iter()
        .map(|l| (l.phase, l.layer_idx, l.components.join("+")))
        .collect();
    assert_eq!(
        schedule,
        [
            ("main", 0, "mla+dense".to_owned()),
            ("main", 1, "mla+dense".to_owned()),
            ("main", 2, "mla+dense".to_owned()),
            ("main", 3, "mla+moe".to_owned()),
            ("main", 4, "mla+moe".to_owned()),
            ("main", 5, "mla+moe".to_owned()),
            ("mtp_head", 6, "mtp+moe".to_owned()),
            ("mtp_head", 7, "mtp+moe".to_owned()),
            ("mtp_head", 8, "mtp+moe".to_owned()),
        ]
    );
}

const MOE_STRUCTURE: &str = r#"{
  "model_hint": "DeepSeek-like decode: 3 dense + 58 MoE layers, one MTP layer",
  "phases": [
    {"name": "main", "layers": 61, "layer_compositions": [
      {"layer_range": [0, 2], "components": ["mla", "dense"]},
      {"layer_range": [3, 60], "components": ["mla", "moe"]}]},
    {"name": "mtp_head", "layers": 1,
     "layer_compositions": [{"layer_indices": [0], "components": ["mtp", "moe"]}]}
  ]
}"#;

const MOE_RULES: &str = r#"{
  "model_name": "deepseek-like",
  "component_clusters": {
    "moe": [
      {"cluster": "norm", "rules": [{"op_name_regex": "^AddRmsNorm"}]},
      {"cluster": "dispatch", "rules": [{"op_name_regex": "^aiv_all_to_all"}]},
      {"cluster": "gate", "rules": [{"op_name": "MoeGatingTopK"}]},
      {"cluster": "experts", "rules": [{"op_name": "GroupedMatmul"}, {"op_name": "DequantSwigluQuant"}]},
      {"cluster": "combine", "rules": [{"op_name_regex": "^MoeDistributeCombine"}]}
    ],
    "mla": [
      {"cluster": "attention", "rules": [{"op_name": "FusedInferAttentionScore"}]}
    ],
    "dense": [
      {"cluster": "norm", "rules": [{"op_name_regex": "^AddRmsNorm"}]},
      {"cluster": "mlp", "rules": [{"op_name_regex": "^(MatMulV3|SwiGlu)$"}]}
    ],
    "mtp": [
      {"cluster": "prefix", "rules": [{"op_name_regex": "^(RmsNorm|ConcatD|MatMulV3)$"}]},
      {"cluster": "attention", "rules": [{"op_name": "FusedInferAttentionScore"}]}
    ]
  }
}"#;

#[test]
fn the_moe_decode_split_by_the_structure_finds_the_slow_layer_on_every_step() {
    let structure = skill::parse_structure(MOE_STRUCTURE).expect("structure");
    let rules = skill::parse_rules(MOE_RULES).expect("rules");
    let by = apply(&common::decode_steps(4), &structure, Some(&rules));
    assert_eq!(by.steps.len(), 4);
    assert_eq!(by.confidence, Confidence::High, "{:?}", by.notes);
    let counts: Vec<(&str, usize)> = by
        .summary
        .iter()
        .map(|t| (t.component.as_str(), t.instances))
        .collect();
    // The rules' order, then the structure's other types by name.
    assert_eq!(counts, [("moe", 59), ("mla", 61), ("dense", 3), ("mtp", 1)]);
    let step = &by.steps[0];
    // A MoE layer: attention to mla, from its norm on to moe (7 kernels: 1 + 6).
    let mla = &step.sections[1].instances[3];
    let moe = &step.sections[0].instances[0];
    assert_eq!((mla.layer_idx, mla.kernels), (3, 1));
    assert_eq!(
        (moe.layer_idx, moe.first_kernel, moe.kernels),
        (3, mla.first_kernel + 1, 6)
    );
    // The MTP layer: its prefix and attention to mtp, the MoE block to moe.
    let mtp = &step.sections[3].instances[0];
    let mtp_moe = step.sections[0].instances.last().expect("mtp's moe");
    assert_eq!(
        (mtp.phase.as_str(), mtp.layer_idx, mtp.kernels),
        ("mtp_head", 61, 5)
    );
    assert_eq!((mtp_moe.layer_idx, mtp_moe.kernels), (61, 6));
    // The planted layer: its experts and its TOTAL outliers in all 4 steps, nothing else.
    let moe_rows = &by.summary[0].rows;
    for row in moe_rows {
        let flagged: Vec<(usize, usize)> = row
            .outliers
            .iter()
            .map(|o| (o.layer_idx, o.steps))
            .collect();
        match row.name.as_str() {
            "experts" | "TOTAL" => assert_eq!(flagged, [(common::SLOW_LAYER, 4)], "{}", row.name),
            _ => assert!(
                flagged.iter().all(|f| f.0 != common::SLOW_LAYER),
                "{}",
                row.name
            ),
        }
    }
    let experts = moe_rows
        .iter()
        .find(|r| r.name == "experts")
        .expect("experts");
    assert!(
        (experts.median_us - 66.0).abs() < 1.0,
        "{}",
        experts.median_us
    );
}

#[test]
fn a_structure_that_does_not_fit_the_kernel_stream_breaks_nothing_down() {
    let structure = skill::parse_structure(
        r#"{"phases": [{"name": "main", "layers": 60,
            "layer_compositions": [{"layer_range": [0, 59], "components": ["layer"]}]}]}"#,
    )
    .expect("structure");
    let by = apply(&common::decode_steps(2), &structure, None);
    assert!(by.steps.is_empty());
    assert_eq!(by.confidence, Confidence::None);
    assert!(by.notes.iter().any(|n| {
        n.contains("step 1: its kernel stream shows 62 layers, the structure declares 60")
    }));
    // Half the layers: the step runs the structure twice (passes), without rules TOTAL only.
    let half = skill::parse_structure(
        r#"{"phases": [{"name": "main", "layers": 31,
            "layer_compositions": [{"layer_range": [0, 30], "components": ["layer"]}]}]}"#,
    )
    .expect("structure");
    let by = apply(&common::decode_steps(2), &half, None);
    assert_eq!(by.steps[0].passes, 2);
    let section = &by.steps[0].sections[0];
    assert!(!section.has_rules && section.clusters.is_empty());
    assert_eq!(section.instances.len(), 62);
    assert_eq!(section.instances[31].pass, 1);
    assert_eq!(section.instances[31].layer_idx, 0);
}

/// The file is refused, naming the field and why.
fn check_refused(result: Result<impl std::fmt::Debug, SpecError>, field: &str, why: &str) {
    let e = result.expect_err("refused");
    assert_eq!(e.field, field, "{e}");
    assert!(e.reason.contains(why), "{e}");
}

fn structure_with(compositions: &str) -> String {
    format!(
        r#"{{"phases": [{{"name": "main", "layers": 4, "layer_compositions": {compositions}}}]}}"#
    )
}

fn rules_with(rule: &str) -> String {
    format!(r#"{{"component_clusters": {{"attn": [{{"cluster": "a", "rules": [{rule}]}}]}}}}"#)
}

#[test]
fn a_structure_is_validated_field_by_field() {
    let parse = |t: &str| skill::parse_structure(t);
    check_refused(
        parse(&structure_with(
            r#"[{"layer_range": [0, 4], "components": ["a"]}]"#,
        )),
        "phases[0].layer_compositions[0].layer_range",
        "past the phase's 4 layers",
    );
    check_refused(
        parse(&structure_with(
            r#"[{"layer_range": [0, 2], "components": ["a"]}, {"layer_indices": [2, 3], "components": ["b"]}]"#,
        )),
        "phases[0].layer_compositions[1]",
        "layer 2 is already in a composition (a)",
    );
    check_refused(
        parse(&structure_with(
            r#"[{"layer_range": [0, 2], "components": ["a"]}]"#,
        )),
        "phases[0].layer_compositions",
        "layer(s) 3 in no composition",
    );
    check_refused(
        parse(&structure_with(r#"[{"components": ["a"]}]"#)),
        "phases[0].layer_compositions[0]",
        "neither layer_range nor layer_indices",
    );
    check_refused(
        parse(&structure_with(
            r#"[{"layer_range": [2, 1], "components": ["a"]}]"#,
        )),
        "phases[0].layer_compositions[0].layer_range",
        "the first layer after the last",
    );
    check_refused(
        parse(&structure_with(
            r#"[{"layer_range": [0, 3], "components": []}]"#,
        )),
        "phases[0].layer_compositions[0].components",
        "empty",
    );
    check_refused(
        parse(
            r#"{"phases": [{"name": "main", "layers": 4, "layer_compositions": [{"layer_range": [0, 3], "components": ["a"]}]}], "expected_layer_count": 5}"#,
        ),
        "expected_layer_count",
        "5, but the phases have 4 layers",
    );
    check_refused(
        parse(
            r#"{"phases": [{"name": "main", "layers": 18446744073709551615, "layer_compositions": []}]}"#,
        ),
        "phases[0].layers",
        "more than 100000 layers",
    );
    check_refused(parse(r#"{"phases": []}"#), "phases", "empty");
    check_refused(
        parse(r#"{"phases": [{"name": "main", "layer": 4}]}"#),
        "",
        "unknown field `layer`",
    );
    check_refused(
        parse(r#"{"model_hint": "x"}"#),
        "",
        "missing field `phases`",
    );
}

#[test]
fn rules_are_validated_field_by_field() {
    let parse = |t: &str| skill::parse_rules(t);
    check_refused(
        parse(&rules_with(r#"{"op_name_regex": "MatMul(V2"}"#)),
        "component_clusters.attn[0].rules[0].op_name_regex",
        "not a usable regex",
    );
    check_refused(
        parse(&rules_with(r#"{"op_name_regex": "^(?!Cast)"}"#)),
        "component_clusters.attn[0].rules[0].op_name_regex",
        "look-around is Python-only",
    );
    check_refused(
        parse(&rules_with(&format!(
            r#"{{"op_name_regex": "{}"}}"#,
            "a".repeat(5000)
        ))),
        "component_clusters.attn[0].rules[0].op_name_regex",
        "5000 bytes, longer than 4096",
    );
    check_refused(
        parse(&rules_with(r#"{"op_name_regex": "(a{1000}){1000}"}"#)),
        "component_clusters.attn[0].rules[0].op_name_regex",
        "not a usable regex",
    );
    check_refused(
        parse(&rules_with("{}")),
        "component_clusters.attn[0].rules[0]",
        "no condition: it would match every kernel",
    );
    check_refused(
        parse(&rules_with(r#"{"catch_all": true, "op_name": "Add"}"#)),
        "component_clusters.attn[0].rules[0]",
        "catch_all with conditions",
    );
    check_refused(
        parse(&rules_with(r#"{"op_nam": "Add"}"#)),
        "",
        "unknown field `op_nam`",
    );
    check_refused(
        parse(
            r#"{"component_clusters": {"attn": [
                {"cluster": "rest", "rules": [{"catch_all": true}]},
                {"cluster": "fa", "rules": [{"op_name": "FlashAttentionScore"}]}]}}"#,
        ),
        "component_clusters.attn[1]",
        "after the catch_all cluster `rest`: never reached",
    );
    check_refused(
        parse(
            r#"{"component_clusters": {"attn": [{"cluster": "a", "rules": [{"catch_all": true}]}],
                "attn": [{"cluster": "a", "rules": [{"catch_all": true}]}]}}"#,
        ),
        "",
        "key `attn` twice",
    );
    check_refused(
        parse(r#"{"outlier": {"method": "iqr", "k": -1}, "component_clusters": {}}"#),
        "outlier.k",
        "a factor in (0, 1000]",
    );
    check_refused(
        parse(r#"{"outlier": {"method": "mad", "k": 1}, "component_clusters": {}}"#),
        "",
        "unknown variant `mad`",
    );
    check_refused(
        parse(r#"{"component_clusters": {}}"#),
        "component_clusters",
        "empty",
    );
}

#[test]
fn a_spec_file_is_read_only_when_regular_and_small() {
    let dir = tempfile::tempdir().expect("temp dir");
    let big = dir.path().join("big.json");
    std::fs::write(&big, vec![b' '; (skill::MAX_FILE_BYTES + 1) as usize]).expect("write");
    check_refused(skill::read_file(&big), "", "larger than the 1048576 bytes");
    let missing = skill::read_file(&dir.path().join("none.json")).expect_err("missing");
    assert!(missing.missing);
    check_refused(skill::read_file(dir.path()), "", "not a regular file");
}
