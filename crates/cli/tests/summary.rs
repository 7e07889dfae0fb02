//! `npuprof summary` on the vendored real 2-rank run (`crates/summary/tests/data/real-2rank`):
//! terminal and JSON snapshots, selection, errors, colour, width, and the HTML page rendered
//! in headless Chromium with its charts checked against independently computed values.

#[path = "../../summary/tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::process::Command;

use common::browser::{Row, charts, chromium_or_skip, render};
use common::{
    Layout, command_in, drop_a_field, drop_column, expected, output_file, real_copy, real_run,
    run_dirs, stdout_of,
};
use insta_cmd::{assert_cmd_snapshot, get_cargo_bin};

/// `npuprof summary <args>` run inside `dir`, without colour.
fn summary_in(dir: &Path, args: &[&str]) -> Command {
    command_in(&get_cargo_bin("npuprof"), dir, "summary", args)
}

/// The directory that holds the vendored run, so paths in the output read `real-2rank/…`.
fn data_dir() -> std::path::PathBuf {
    real_run().parent().expect("data dir").to_path_buf()
}

fn settings(tmp: &Path) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.add_filter(&regex_escape(&tmp.display().to_string()), "[TMP]");
    s
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$#&-~".contains(c);
            special
                .then_some('\\')
                .into_iter()
                .chain(std::iter::once(c))
        })
        .collect()
}

#[test]
fn terminal_report_of_the_real_run() {
    assert_cmd_snapshot!("real_human", summary_in(&data_dir(), &["real-2rank"]));
}

#[test]
fn the_docs_example_is_real_output() {
    let (args, want) = common::docs_example("npuprof summary real-2rank --rank 0 --top 5");
    let args: Vec<&str> = args.iter().skip(1).map(String::as_str).collect();
    assert_eq!(stdout_of(&mut summary_in(&data_dir(), &args)), want);
}

#[test]
fn json_report_of_the_real_run() {
    assert_cmd_snapshot!(
        "real_json",
        summary_in(&data_dir(), &["real-2rank", "--json", "--top", "3"])
    );
}

#[test]
fn json_numbers_match_the_independent_computation() {
    let text = stdout_of(&mut summary_in(
        &data_dir(),
        &["real-2rank", "--json", "--top", "5"],
    ));
    let json: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let want = expected();
    assert_eq!(json["schema_version"], 1);
    for rank in [0, 1] {
        let run = &json["runs"][rank];
        let want = &want["runs"][rank.to_string()];
        assert_eq!(run["rank"], rank);
        assert_eq!(run["steps"][0]["total_us"], want["steps"][0]["total_us"]);
        assert_eq!(run["kernels"]["rows"], want["kernels"]["rows"]);
        for (got, want) in run["top_kernels"].as_array().into_iter().flatten().zip(
            want["kernels"]["top_names"]
                .as_array()
                .into_iter()
                .flatten(),
        ) {
            assert_eq!(got["name"], want["name"]);
            assert_eq!(got["count"], want["count"]);
            let (g, w) = (got["total_us"].as_f64(), want["total_us"].as_f64());
            assert!(
                g.zip(w).is_some_and(|(g, w)| (g - w).abs() < 1e-9 * w),
                "{g:?} vs {w:?}"
            );
        }
    }
    assert_eq!(json["ranks"][0]["slowest_rank"], want["slowest_rank"]);
}

#[test]
fn phase_and_rank_select_one_run_of_a_result_directory() {
    let tmp = real_copy(Layout::ResultDir);
    settings(tmp.path()).bind(|| {
        assert_cmd_snapshot!(
            "result_dir_decode_rank1",
            summary_in(
                tmp.path(),
                &[".", "--phase", "decode", "--rank", "1", "--top", "3"]
            )
        );
    });
}

/// A phase or rank the profile does not have is named with what it has; without a path the
/// current directory is summarised (as verify does).
#[test]
fn an_unknown_phase_or_rank_lists_what_exists() {
    let tmp = real_copy(Layout::ResultDir);
    settings(tmp.path()).bind(|| {
        assert_cmd_snapshot!(
            "unknown_phase",
            summary_in(tmp.path(), &["--phase", "decod"])
        );
        assert_cmd_snapshot!(
            "unknown_rank",
            summary_in(tmp.path(), &["--phase", "decode", "--rank", "5"])
        );
    });
}

/// A run whose profiler_info records no rank (a path-B run: no `RANK`, no torch.distributed)
/// says so in words, in the terminal and in the HTML page.
#[test]
fn an_unknown_rank_is_said_in_words() {
    let tmp = real_copy(Layout::Flat);
    let run = &run_dirs(tmp.path(), Layout::Flat)[0].1;
    for entry in std::fs::read_dir(run).expect("run dir") {
        let path = entry.expect("entry").path();
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("profiler_info"))
        {
            std::fs::remove_file(path).expect("remove profiler_info");
        }
    }
    let out = summary_in(run, &["--html", "page.html"])
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("run · rank not recorded   ."), "{text}");
    let page = std::fs::read_to_string(run.join("page.html")).expect("the page");
    assert!(page.contains("run · rank not recorded"), "{page}");
    assert!(!page.contains("rank ?"), "{page}");
}

/// The kernel table's columns stay aligned whatever the core type: `MIX_AIC`/`MIX_AIV` rows
/// (mixed cube-vector kernels) are as wide as `AIC`, `AIV`, `HCCL` and `AI_CPU` ones.
#[test]
fn the_kernel_table_aligns_every_core_type() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().join("rank0_ascend_pt/ASCEND_PROFILER_OUTPUT");
    std::fs::create_dir_all(&out).expect("mkdir");
    std::fs::write(
        out.join("step_trace_time.csv"),
        "Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free\n1,1000,0,0,0,10\n",
    )
    .expect("write");
    let mut csv = String::from(
        "Step Id,Name,Type,OP State,Accelerator Core,Start Time(us),Duration(us),aic_mac_ratio\n",
    );
    let cores = [
        "AI_CORE",
        "AI_VECTOR_CORE",
        "MIX_AIC",
        "MIX_AIV",
        "AI_CPU",
        "HCCL",
    ];
    for (i, core) in cores.iter().enumerate() {
        csv.push_str(&format!(
            "1,kernel_{i},Type{i},static,{core},{}\t,{},0.5\n",
            100 + i * 100,
            60 - i
        ));
    }
    std::fs::write(out.join("kernel_details.csv"), csv).expect("write");
    let text = stdout_of(&mut summary_in(tmp.path(), &[]));
    let rows: Vec<&str> = text
        .lines()
        .filter(|line| line.trim_end().ends_with(|c: char| c.is_ascii_digit()))
        .filter(|line| line.contains("kernel_"))
        .collect();
    assert_eq!(rows.len(), cores.len(), "{text}");
    // The name is the last column: it starts at the same character in every row.
    let starts: Vec<usize> = rows
        .iter()
        .map(|row| row.chars().count() - "kernel_0".len())
        .collect();
    assert!(starts.iter().all(|s| *s == starts[0]), "{text}");
    let header = text
        .lines()
        .find(|line| line.trim_end().ends_with(" name"))
        .expect("the table's header");
    assert_eq!(header.chars().count() - "name".len(), starts[0], "{text}");
    insta::with_settings!({filters => vec![(r"\S+_ascend_pt", "[RUN]")]}, {
        insta::assert_snapshot!("kernel_table_every_core_type", text);
    });
}

#[test]
fn missing_path_and_missing_column_exit_2() {
    let tmp = real_copy(Layout::Flat);
    let run = &run_dirs(tmp.path(), Layout::Flat)[1].1;
    drop_column(&output_file(run, "kernel_details.csv"), "Name");
    settings(tmp.path()).bind(|| {
        assert_cmd_snapshot!("missing_path", summary_in(tmp.path(), &["nope"]));
        assert_cmd_snapshot!(
            "missing_name_column",
            summary_in(tmp.path(), &["rank1_ascend_pt"])
        );
    });
}

#[test]
fn a_malformed_row_is_named_skipped_and_exits_1_for_summary_compare_and_advise() {
    let tmp = real_copy(Layout::Flat);
    let rank0 = &run_dirs(tmp.path(), Layout::Flat)[0].1;
    drop_a_field(&output_file(rank0, "kernel_details.csv"), 15);
    let named = "rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv line 16 has 45 fields, the header has 46: row skipped";
    let bin = get_cargo_bin("npuprof");
    for (command, args) in [
        ("summary", vec!["."]),
        ("summary", vec![".", "--json"]),
        ("compare", vec![".", "."]),
        ("advise", vec!["."]),
    ] {
        let out = command_in(&bin, tmp.path(), command, &args)
            .output()
            .expect("runs");
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(1), "{command} {args:?}: {stderr}");
        // compare names the side: `warning: base: rows were skipped: …`.
        let side = if command == "compare" { "base: " } else { "" };
        assert!(
            stderr.contains(&format!(
                "warning: {side}rows were skipped: rank 0: {named}"
            )),
            "{command}: {stderr}"
        );
        if command == "summary" && args.len() == 1 {
            assert!(stdout.starts_with("warning[skipped-rows]: "), "{stdout}");
            assert!(stdout.contains("run · rank 0") && stdout.contains("run · rank 1"));
        }
        if args.contains(&"--json") {
            let json: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
            assert_eq!(json["warnings"][0]["code"], "skipped-rows", "{json}");
            assert_eq!(json["runs"][0]["skipped_rows"][0]["line"], 16);
            assert_eq!(json["runs"][0]["kernels"]["rows"], 190);
            assert_eq!(json["runs"][1]["kernels"]["rows"], 191);
        }
    }
}

#[test]
fn every_line_fits_100_columns() {
    let tmp = real_copy(Layout::ResultDir);
    let text = stdout_of(&mut summary_in(tmp.path(), &[".", "--top", "40"]));
    for line in text.lines() {
        assert!(
            line.chars().count() <= 100,
            "{} columns: {line}",
            line.chars().count()
        );
    }
}

#[test]
fn colour_only_when_forced_and_never_with_no_color() {
    const ESC: char = '\u{1b}';
    let run = |env: &[(&str, &str)]| {
        let mut cmd = summary_in(&data_dir(), &["real-2rank"]);
        cmd.env_remove("NO_COLOR").env_remove("CLICOLOR_FORCE");
        for (k, v) in env {
            cmd.env(k, v);
        }
        stdout_of(&mut cmd)
    };
    assert!(!run(&[]).contains(ESC), "no colour into a pipe");
    assert!(run(&[("CLICOLOR_FORCE", "1")]).contains(ESC));
    assert!(!run(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]).contains(ESC));
}

fn chart<'a>(charts: &'a [(String, Vec<Row>)], id: &str) -> Vec<&'a Vec<Row>> {
    charts
        .iter()
        .filter(|(c, _)| c == id)
        .map(|(_, rows)| rows)
        .collect()
}

fn check_close(what: &str, got: f64, want: f64) {
    assert!(
        (got - want).abs() <= 1e-6 * want.abs().max(1.0),
        "{what}: {got} vs {want}"
    );
}

/// Bar widths are written with 2 decimals.
fn check_width(what: &str, got: f64, want: f64) {
    assert!(
        (got - want).abs() <= 0.005 + 1e-9,
        "{what}: width {got} vs {want}"
    );
}

#[test]
fn html_page_renders_in_chromium_with_the_real_numbers() {
    let Some(chromium) = chromium_or_skip("html_page_renders_in_chromium_with_the_real_numbers")
    else {
        return;
    };
    let tmp = tempfile::tempdir().expect("temp dir");
    let page = tmp.path().join("summary.html");
    stdout_of(summary_in(&data_dir(), &["real-2rank", "--html"]).arg(&page));
    let html = std::fs::read_to_string(&page).expect("page");
    for external in ["http://", "https://", "<script", "<link"] {
        assert!(
            !html.contains(external),
            "the page must be self-contained: {external}"
        );
    }
    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("npuprof-html");
    let dom = render(&chromium, &page, &artifacts.join("summary-phone.png"));
    std::fs::write(artifacts.join("summary-dom.html"), &dom).expect("keep the DOM");
    let charts = charts(&dom);
    let want = expected();

    // Per-rank step times: one bar per rank, the slowest at full width.
    let ranks = chart(&charts, "ranks");
    assert_eq!(ranks.len(), 1);
    let labels: Vec<&str> = ranks[0].iter().map(|r| r.label.as_str()).collect();
    assert_eq!(labels, ["rank 0", "rank 1"]);
    let totals: Vec<f64> = ["0", "1"]
        .iter()
        .map(|r| {
            want["runs"][r]["steps"][0]["total_us"]
                .as_f64()
                .unwrap_or_default()
        })
        .collect();
    check_close("rank 0 bar", ranks[0][0].value, totals[0]);
    check_close("rank 1 bar", ranks[0][1].value, totals[1]);
    check_width("slowest width", ranks[0][0].rects[0].2, 1000.0);
    check_width(
        "other width",
        ranks[0][1].rects[0].2,
        1000.0 * totals[1] / totals[0],
    );

    // Steps: one stacked bar per step, computing + communication + free = the total.
    let steps = chart(&charts, "steps");
    assert_eq!(steps.len(), 2);
    for (rows, total) in steps.iter().zip(&totals) {
        let segments: Vec<&str> = rows[0].rects.iter().map(|r| r.0.as_str()).collect();
        assert_eq!(segments, ["computing", "communication", "free"]);
        check_close("step bar", rows[0].rects.iter().map(|r| r.1).sum(), *total);
    }

    // Top kernels and types: the independent top names, in order, with their totals.
    let kernels = chart(&charts, "kernels");
    assert_eq!(kernels.len(), 2);
    for (rows, rank) in kernels.iter().zip(["0", "1"]) {
        assert_eq!(rows.len(), 10);
        let top = want["runs"][rank]["kernels"]["top_names"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for (row, want) in rows.iter().zip(&top) {
            check_close(
                "kernel bar",
                row.value,
                want["total_us"].as_f64().unwrap_or_default(),
            );
        }
    }
    let types = chart(&charts, "types");
    let hccl = want["runs"]["0"]["kernels"]["by_type"]["hcom_allReduce_"]["total_us"].as_f64();
    assert_eq!(types[0][0].label, "hcom_allReduce_ ×4");
    check_close("type bar", types[0][0].value, hccl.unwrap_or_default());

    // Pipes: the seven ratios of the one bound rule on a 0–1 scale; MTE2 (the memory pipe)
    // is the independent computation's `memory`.
    let pipes = chart(&charts, "pipes");
    let labels: Vec<&str> = pipes[0].iter().map(|r| r.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "cube", "vector", "scalar", "mte1", "mte2", "mte3", "fixpipe"
        ]
    );
    let memory = want["runs"]["0"]["kernels"]["pipe"]["memory"]
        .as_f64()
        .unwrap_or_default();
    check_close("mte2 ratio", pipes[0][4].value, memory);
    check_width("mte2 width", pipes[0][4].rects[0].2, 1000.0 * memory);
    assert!(dom.contains("msprof-analyze advisor all -d"));
}

/// The `data-*` attributes of every `<tag …>` of `dom` whose opening has `class="{class}"`,
/// as `(name, value)` pairs in order.
fn elements<'a>(dom: &'a str, tag: &str, class: &str) -> Vec<Vec<(&'a str, &'a str)>> {
    let open = format!("<{tag} class=\"{class}\"");
    dom.match_indices(&open)
        .map(|(at, _)| {
            let element = &dom[at..];
            let head = &element[..element.find('>').unwrap_or(element.len())];
            head.split(" data-")
                .skip(1)
                .filter_map(|a| {
                    let (name, rest) = a.split_once("=\"")?;
                    Some((name, rest.split('"').next().unwrap_or_default()))
                })
                .collect()
        })
        .collect()
}

fn data<'a>(attrs: &[(&'a str, &'a str)], name: &str) -> &'a str {
    attrs
        .iter()
        .find(|(n, _)| *n == name)
        .map_or("", |(_, v)| v)
}

fn number(text: &str) -> f64 {
    text.parse()
        .unwrap_or_else(|_| panic!("not a number: {text:?}"))
}

/// Every timeline strip, memory curve, shapes chart and heat map, rendered in Chromium: there,
/// drawn (rects, polylines and coloured cells with the run's numbers), and advise's gaps marked
/// where summary's own free lane is (the two commands agree on where the device idles).
#[test]
fn the_timeline_memory_shapes_and_matrix_render_in_chromium() {
    let Some(chromium) =
        chromium_or_skip("the_timeline_memory_shapes_and_matrix_render_in_chromium")
    else {
        return;
    };
    let tmp = tempfile::tempdir().expect("temp dir");
    let page = tmp.path().join("summary.html");
    stdout_of(summary_in(&data_dir(), &["real-2rank", "--html"]).arg(&page));
    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("npuprof-html");
    let dom = render(&chromium, &page, &artifacts.join("views-phone.png"));
    std::fs::write(artifacts.join("views-dom.html"), &dom).expect("keep the DOM");
    let want = expected();

    // The strip: one per rank, step 50, as wide as the independent window.
    let strips = elements(&dom, "figure", "timeline");
    assert_eq!(strips.len(), 2, "one strip per rank");
    for (rank, strip) in ["0", "1"].iter().zip(&strips) {
        let t = &want["runs"][rank]["timeline"];
        assert_eq!(data(strip, "step"), "50");
        let window = number(data(strip, "window"));
        check_close(
            "window",
            window,
            t["window_us"].as_f64().unwrap_or_default(),
        );
    }
    let figure = |class: &str, index: usize| -> &str {
        let open = format!("<figure class=\"{class}\"");
        let start = dom.match_indices(&open).nth(index).map_or(0, |(at, _)| at);
        let rest = &dom[start..];
        &rest[..rest.find("</figure>").unwrap_or(rest.len())]
    };
    for (index, rank) in ["0", "1"].iter().enumerate() {
        let strip = figure("timeline", index);
        let t = &want["runs"][rank]["timeline"];
        let lane = |name: &str| -> Vec<(f64, f64, f64)> {
            elements(strip, "rect", name)
                .iter()
                .map(|r| {
                    let busy = number(data(r, "busy"));
                    (number(data(r, "start")), number(data(r, "end")), busy)
                })
                .collect()
        };
        let (computing, communication, free) =
            (lane("computing"), lane("communication"), lane("free"));
        assert!(!computing.is_empty() && !communication.is_empty() && !free.is_empty());
        // Drawn as recorded (fewer than a thousand intervals a lane): fully opaque, adding up
        // to the independent lane times.
        let length = |spans: &[(f64, f64, f64)]| {
            spans.iter().map(|(a, b, busy)| (b - a) * busy).sum::<f64>()
        };
        for (what, spans, key) in [
            ("computing", &computing, "computing_us"),
            ("communication", &communication, "communication_us"),
            ("free", &free, "free_us"),
        ] {
            assert!(spans.iter().all(|s| s.2 == 1.0), "{what}");
            check_close(what, length(spans), t[key].as_f64().unwrap_or_default());
        }
        // advise's gaps: marked, each inside the free lane.
        let marks = elements(strip, "rect", "mark");
        assert!(
            !marks.is_empty(),
            "rank {rank}: advise names gaps in this step"
        );
        for mark in &marks {
            let (a, b) = (number(data(mark, "start")), number(data(mark, "end")));
            assert!(
                free.iter()
                    .any(|(fa, fb, _)| *fa <= a + 0.5 && b <= fb + 0.5),
                "rank {rank}: the gap {a}..{b} is not in the free lane"
            );
        }
    }

    // Memory: the curve with the peak of the independent computation; the top holder first.
    let curves = elements(&dom, "figure", "memory-curve");
    assert_eq!(curves.len(), 2);
    for (rank, curve) in ["0", "1"].iter().zip(&curves) {
        let m = &want["runs"][rank]["memory"];
        assert_eq!(
            data(curve, "peak"),
            m["peak_allocated_bytes"]
                .as_u64()
                .unwrap_or_default()
                .to_string()
        );
        assert!(number(data(curve, "points")) > 100.0);
    }
    let memory_curve = figure("memory-curve", 0);
    assert_eq!(memory_curve.matches("<polyline ").count(), 2);
    assert!(memory_curve.contains("<line class=\"peak\""));
    let top = &want["runs"]["0"]["memory"]["top_holder"];
    let holder = format!(
        "<tr data-bytes=\"{}\"><td>{}</td>",
        top["size_bytes"].as_u64().unwrap_or_default(),
        top["name"].as_str().unwrap_or_default()
    );
    let holders = dom
        .find("<table class=\"holders\"")
        .expect("the holders table");
    assert_eq!(
        dom[holders..].find("<tr data-bytes"),
        dom[holders..].find(&holder)
    );
    let charts = charts(&dom);
    let modules = chart(&charts, "modules");
    let module = &want["runs"]["0"]["memory"]["top_module"];
    assert_eq!(
        modules[0][0].label,
        module["component"].as_str().unwrap_or_default()
    );
    check_close(
        "module bar",
        modules[0][0].value,
        module["reserved_max_bytes"].as_f64().unwrap_or_default(),
    );
    check_width("module width", modules[0][0].rects[0].2, 1000.0);

    // Kernels by name and input shapes: the longest group with shapes, with its total.
    let shapes = chart(&charts, "shapes");
    let w = &want["runs"]["0"]["shapes"]["top_with_shapes"];
    let row = shapes[0]
        .iter()
        .find(|r| {
            r.label.starts_with(
                w["name"]
                    .as_str()
                    .unwrap_or_default()
                    .get(..10)
                    .unwrap_or_default(),
            )
        })
        .expect("the top group with shapes");
    check_close(
        "shape bar",
        row.value,
        w["total_us"].as_f64().unwrap_or_default(),
    );

    // The heat map: the phase's two ranks' rows, each link's bandwidth, coloured.
    let matrix = dom.find("<table class=\"matrix\"").expect("a heat map");
    let table = &dom[matrix..matrix + dom[matrix..].find("</table>").unwrap_or(0)];
    for rank in ["0", "1"] {
        let links = want["runs"][rank]["matrix"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        for (pair, bandwidth) in links {
            let (src, dst) = pair.split_once('-').unwrap_or_default();
            let cell = format!("<td data-src=\"{src}\" data-dst=\"{dst}\" data-bandwidth=\"");
            let at = table
                .find(&cell)
                .unwrap_or_else(|| panic!("no cell {pair}"));
            let value = &table[at + cell.len()..];
            let value = number(value.split('"').next().unwrap_or_default());
            check_close(&pair, value, bandwidth.as_f64().unwrap_or_default());
            assert!(
                table[at..]
                    .split('>')
                    .next()
                    .unwrap_or_default()
                    .contains("style=\"background:")
            );
        }
    }
    assert!(!dom.contains("data-missing"), "every view has its files");
}

/// A run without memory files, matrix or steps: each view says what is missing.
#[test]
fn missing_views_say_what_is_missing() {
    let tmp = real_copy(Layout::Flat);
    for (_, dir) in run_dirs(tmp.path(), Layout::Flat) {
        for file in [
            "memory_record.csv",
            "operator_memory.csv",
            "npu_module_mem.csv",
            "communication_matrix.json",
            "step_trace_time.csv",
        ] {
            std::fs::remove_file(output_file(&dir, file)).expect("remove");
        }
    }
    let page = tmp.path().join("page.html");
    stdout_of(summary_in(tmp.path(), &["--html"]).arg(&page));
    let html = std::fs::read_to_string(&page).expect("page");
    for (view, says) in [
        (
            "timeline",
            "no timeline: no numbered step in step_trace_time.csv to choose one from",
        ),
        (
            "memory",
            "no memory files (memory_record.csv, operator_memory.csv, npu_module_mem.csv)",
        ),
        ("matrix", "no communication_matrix.json in this phase"),
    ] {
        assert!(
            html.contains(&format!("data-missing=\"{view}\">{says}")),
            "{view}: {html}"
        );
    }
}

/// Runs `cmd` to completion within a minute (killed and failed otherwise: a hang).
fn output_within_a_minute(cmd: &mut Command) -> std::process::Output {
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("the command hung: {cmd:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// Replaces rank 0's `profiler_info_0.json` by `make(path)` and checks that summary and compare
/// finish in bounded time, say what the file is, and take the rank from its name.
fn check_unusable_profiler_info(make: impl Fn(&Path), says: &str) {
    let tmp = real_copy(Layout::Flat);
    let info = run_dirs(tmp.path(), Layout::Flat)[0]
        .1
        .join("profiler_info_0.json");
    std::fs::remove_file(&info).unwrap();
    make(&info);
    let output = output_within_a_minute(&mut summary_in(tmp.path(), &[".", "--json"]));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{says}: {stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(&format!("profiler_info_0.json: {says}")),
        "{says}: {stdout}"
    );
    let compare = output_within_a_minute(&mut command_in(
        &get_cargo_bin("npuprof"),
        tmp.path(),
        "compare",
        &["rank0_ascend_pt", "rank1_ascend_pt", "--json"],
    ));
    assert!(
        compare.status.code().is_some_and(|c| c < 2),
        "{says}: {}",
        String::from_utf8_lossy(&compare.stderr)
    );
}

#[test]
fn a_fifo_or_huge_profiler_info_is_named_and_never_read() {
    check_unusable_profiler_info(
        |path| {
            let status = Command::new("mkfifo").arg(path).status().unwrap();
            assert!(status.success());
        },
        "it is a FIFO (named pipe), not a regular file",
    );
    // A 6 GiB sparse file: reading it whole would take 6 GiB.
    check_unusable_profiler_info(
        |path| {
            std::fs::File::create(path)
                .unwrap()
                .set_len(6 << 30)
                .unwrap();
        },
        "it is 6442450944 bytes, over the 1048576 bytes",
    );
}

#[test]
fn a_kernel_details_over_torch_npus_cap_is_refused_unread() {
    let tmp = real_copy(Layout::Flat);
    let run = &run_dirs(tmp.path(), Layout::Flat)[0].1;
    let csv = output_file(run, "kernel_details.csv");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&csv)
        .unwrap()
        .set_len(6 << 30)
        .unwrap();
    let output = output_within_a_minute(&mut summary_in(tmp.path(), &["rank0_ascend_pt"]));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("kernel_details.csv: it is 6442450944 bytes, over the 5368709120 bytes"),
        "{stderr}"
    );
}

/// The rank section as printed and drawn: on the real run (rank 0 3.5 % slower, under the 5 %
/// threshold) no red mark and "no straggler"; with 20 ms more computing on rank 1, rank 1 is
/// named the straggler and rank 0 the rank waiting for it, and rank 1 is red in the terminal
/// (colour forced) and highlighted in the HTML page.
#[test]
fn the_red_mark_and_the_straggler_only_past_the_threshold() {
    let check = |root: &Path| -> (String, String, String) {
        let page = root.join("page.html");
        let plain = stdout_of(summary_in(root, &["--html"]).arg(&page));
        let coloured = stdout_of(
            summary_in(root, &[])
                .env("CLICOLOR_FORCE", "1")
                .env_remove("NO_COLOR"),
        );
        let html = std::fs::read_to_string(&page).expect("page");
        (plain, coloured, html)
    };
    let real = real_copy(Layout::Flat);
    let (plain, coloured, html) = check(real.path());
    assert!(
        plain.contains("no straggler: computing + free time within"),
        "{plain}"
    );
    let ranks_line = |text: &str| {
        text.lines()
            .find(|l| l.contains("rank 0 ") && l.contains("rank 1 "))
            .map(str::to_owned)
            .unwrap_or_else(|| panic!("no rank line in {text}"))
    };
    assert!(!ranks_line(&coloured).contains("\u{1b}[31m"), "{coloured}");
    assert!(
        !html.contains("class=\"row highlight\""),
        "no highlight under 5 %"
    );

    let planted = real_copy(Layout::Flat);
    let rank1 = &run_dirs(planted.path(), Layout::Flat)[1].1;
    common::add_to_steps(rank1, "Computing", 20_000.0);
    let (plain, coloured, html) = check(planted.path());
    let joined = plain.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(joined.contains("straggler rank 1: "), "{plain}");
    assert!(
        joined.contains("rank 0 waits most in collectives"),
        "{plain}"
    );
    let line = ranks_line(&coloured);
    assert!(line.contains("\u{1b}[31mrank 1 "), "{line:?}");
    assert!(!line.contains("\u{1b}[31mrank 0 "), "{line:?}");
    assert!(
        html.contains("<div class=\"row highlight\" data-label=\"rank 1\""),
        "rank 1 highlighted"
    );
    assert!(!html.contains("<div class=\"row highlight\" data-label=\"rank 0\""));
    assert!(html.contains("<dt>straggler</dt><dd>rank 1 ("), "{html}");
    assert!(html.contains("<dt>waits most in collectives</dt><dd>rank 0</dd>"));
}

/// `--html FILE` never writes through a link: a repository that ships `summary.html ->
/// <a file of the user's>` gets a refusal (exit 2) and the linked file keeps its bytes; a
/// regular file is replaced whole (written beside it and renamed), with no temporary left.
#[test]
fn the_html_page_is_not_written_through_a_symlink() {
    let tmp = tempfile::tempdir().expect("tmp");
    let victim = tmp.path().join("bashrc");
    std::fs::write(&victim, "export PATH=/usr/bin\n").expect("write");
    std::os::unix::fs::symlink(&victim, tmp.path().join("summary.html")).expect("symlink");
    let run = data_dir().join("real-2rank");
    let run = run.to_str().expect("UTF-8 path");
    for command in ["summary", "advise"] {
        let output = Command::new(get_cargo_bin("npuprof"))
            .current_dir(tmp.path())
            .args([command, run, "--html", "summary.html"])
            .env("NO_COLOR", "1")
            .output()
            .expect("run");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{command}: {stderr}");
        assert!(stderr.contains("symbolic link"), "{command}: {stderr}");
        assert_eq!(
            std::fs::read_to_string(&victim).expect("read"),
            "export PATH=/usr/bin\n"
        );
    }
    std::fs::remove_file(tmp.path().join("summary.html")).expect("rm");
    std::fs::write(tmp.path().join("summary.html"), "old page").expect("write");
    let output = Command::new(get_cargo_bin("npuprof"))
        .current_dir(tmp.path())
        .args(["summary", run, "--html", "summary.html"])
        .env("NO_COLOR", "1")
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let page = std::fs::read_to_string(tmp.path().join("summary.html")).expect("page");
    assert!(
        page.starts_with("<!DOCTYPE html>") || page.starts_with("<!doctype html>"),
        "{}",
        &page[..40.min(page.len())]
    );
    let names: Vec<String> = std::fs::read_dir(tmp.path())
        .expect("ls")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
}

/// A run whose kernel_details.csv and op_statistic.csv are links to a file outside it (a
/// secret) gets no byte of that file quoted by verify, summary or advise, in text or JSON.
#[test]
fn no_report_quotes_a_file_linked_from_outside_the_run() {
    let tmp = tempfile::tempdir().expect("tmp");
    let secret = tmp.path().join("secret.txt");
    std::fs::write(&secret, "SECRET-TOKEN-LINE,abc\n").expect("write");
    let run = tmp.path().join("run/rank0_ascend_pt");
    common::alexnet_rank0_copy(&run);
    for name in ["kernel_details.csv", "op_statistic.csv"] {
        let file = run.join("ASCEND_PROFILER_OUTPUT").join(name);
        std::fs::remove_file(&file).expect("rm");
        std::os::unix::fs::symlink(&secret, &file).expect("symlink");
    }
    for command in ["verify", "summary", "advise"] {
        for json in [false, true] {
            let mut args = vec![command, "run"];
            if json {
                args.push("--json");
            }
            let out = Command::new(get_cargo_bin("npuprof"))
                .current_dir(tmp.path())
                .args(&args)
                .env("NO_COLOR", "1")
                .output()
                .expect("run");
            let all = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(!all.contains("SECRET"), "{args:?}: {all}");
            assert!(
                all.contains("symbolic link out of its directory"),
                "{args:?}: {all}"
            );
        }
    }
}

/// A duration that is no finite number of 0 or more (`inf`, `1e309`, `-1e300`) is named by its
/// line: verify reports it as an error (counted as 0, never summed), summary refuses the row
/// like text; no report prints `inf` or `NaN`.
#[test]
fn non_finite_or_negative_durations_are_named_by_their_line() {
    for bad in ["inf", "1e309", "-1e300"] {
        let tmp = tempfile::tempdir().expect("tmp");
        let run = tmp.path().join("run/rank0_ascend_pt");
        common::alexnet_rank0_copy(&run);
        let csv = run.join("ASCEND_PROFILER_OUTPUT/kernel_details.csv");
        let text = std::fs::read_to_string(&csv).expect("csv");
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        let header: Vec<&str> = lines[0].split(',').collect();
        let column = header
            .iter()
            .position(|h| *h == "Duration(us)")
            .expect("a Duration(us) column");
        let mut fields: Vec<String> = lines[3].split(',').map(str::to_owned).collect();
        fields[column] = bad.to_owned();
        lines[3] = fields.join(",");
        std::fs::write(&csv, lines.join("\n") + "\n").expect("write");
        let run_cmd = |command: &str| {
            let out = Command::new(get_cargo_bin("npuprof"))
                .current_dir(tmp.path())
                .args([command, "run", "--json"])
                .env("NO_COLOR", "1")
                .output()
                .expect("run");
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
            )
        };
        let (code, verify) = run_cmd("verify");
        assert_eq!(code, Some(1), "{bad}: {verify}");
        let report: serde_json::Value = serde_json::from_str(&verify).expect("JSON");
        let finding = report["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .find(|f| f["code"] == "kernel-duration-invalid")
            .unwrap_or_else(|| panic!("{bad}: {verify}"));
        let message = finding["message"].as_str().expect("message");
        assert!(
            message.contains("line 4") && message.contains(bad),
            "{message}"
        );
        let (code, summary) = run_cmd("summary");
        assert_eq!(code, Some(2), "{bad}: {summary}");
        assert!(summary.contains("line 4"), "{bad}: {summary}");
        for output in [&verify, &summary] {
            let lower = output.to_lowercase();
            assert!(
                !lower.contains("nan%") && !lower.contains("inf s"),
                "{output}"
            );
        }
    }
}

/// summary's page holds breakdown's sections for the same runs: on the AlexNet run, the
/// nn.Module tree (exact) of each rank as an icicle, and the node × rank matrix.
#[test]
fn the_summary_page_has_a_breakdown_section() {
    let tmp = tempfile::tempdir().expect("tmp");
    let run = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../verify/tests/data/runs/msinsight-text-level1");
    let page = tmp.path().join("summary.html");
    let out = Command::new(get_cargo_bin("npuprof"))
        .arg("summary")
        .arg(&run)
        .arg("--html")
        .arg(&page)
        .env("NO_COLOR", "1")
        .output()
        .expect("run");
    assert!(out.status.code().is_some_and(|c| c < 2), "{out:?}");
    let html = std::fs::read_to_string(&page).expect("page");
    assert_eq!(
        html.matches("<svg class=\"icicle\"").count(),
        2,
        "one tree per rank"
    );
    assert!(html.contains("nn.Module tree (exact)"));
}
