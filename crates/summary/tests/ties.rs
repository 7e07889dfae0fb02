//! Ties are broken by name, whatever the order of the rows: kernel groups of equal time, and
//! compare's deltas of equal size.

use std::fs;
use std::path::Path;

use npuprof_summary::compare::compare;
use npuprof_summary::{Options, Summary, summarize};

/// A one-rank run at `root` whose kernels are `(name, duration)` rows in this order.
fn run(root: &Path, rows: &[(&str, f64)]) -> Summary {
    let out = root.join("rank0_ascend_pt/ASCEND_PROFILER_OUTPUT");
    fs::create_dir_all(&out).expect("mkdir");
    fs::write(
        out.join("step_trace_time.csv"),
        "Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free\n1,1000,0,0,0,10\n",
    )
    .expect("write");
    let mut csv = String::from("Step Id,Name,Type,Accelerator Core,Start Time(us),Duration(us)\n");
    for (i, (name, us)) in rows.iter().enumerate() {
        csv.push_str(&format!(
            "1,{name},T{name},AI_CORE,{}\t,{us}\n",
            100 + 10 * i
        ));
    }
    fs::write(out.join("kernel_details.csv"), csv).expect("write");
    summarize(
        root,
        &Options {
            top: None,
            ..Options::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn names(summary: &Summary) -> Vec<String> {
    summary.runs[0]
        .top_kernels
        .iter()
        .map(|k| k.name.clone())
        .collect()
}

#[test]
fn equal_kernel_times_are_ordered_by_name_in_any_row_order() {
    let (one, two) = (
        tempfile::tempdir().expect("tmp"),
        tempfile::tempdir().expect("tmp"),
    );
    let forward = run(
        one.path(),
        &[("b", 5.0), ("a", 5.0), ("c", 5.0), ("z", 9.0)],
    );
    let backward = run(
        two.path(),
        &[("z", 9.0), ("c", 5.0), ("a", 5.0), ("b", 5.0)],
    );
    assert_eq!(names(&forward), ["z", "a", "b", "c"]);
    assert_eq!(names(&backward), names(&forward));
}

#[test]
fn equal_deltas_are_ordered_by_name_in_any_row_order() {
    let dirs: Vec<_> = (0..4).map(|_| tempfile::tempdir().expect("tmp")).collect();
    let base = run(dirs[0].path(), &[("b", 5.0), ("a", 5.0), ("c", 5.0)]);
    let new = run(dirs[1].path(), &[("b", 7.0), ("a", 7.0), ("c", 3.0)]);
    let base_reordered = run(dirs[2].path(), &[("c", 5.0), ("a", 5.0), ("b", 5.0)]);
    let new_reordered = run(dirs[3].path(), &[("c", 3.0), ("b", 7.0), ("a", 7.0)]);
    let keys = |base: &Summary, new: &Summary| -> Vec<String> {
        compare(base, new).phases[0]
            .by_name
            .iter()
            .map(|d| d.key.clone())
            .collect()
    };
    assert_eq!(keys(&base, &new), ["a", "b", "c"]);
    assert_eq!(keys(&base_reordered, &new_reordered), ["a", "b", "c"]);
}
