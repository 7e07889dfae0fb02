//! What the Python tracer cost on a collect with a structure window (`collect --breakdown`):
//! each run (phase × rank) of the structure window against the same run of the timing window,
//! by the median step time summary gives both (`step_trace_time.csv`'s totals, the same rule as
//! everywhere). `with_modules=True` turns torch_npu's Python tracer on, which adds host time to
//! every traced call; the timing window keeps the guide's settings, so the difference of the two
//! medians is what the tracer cost on this run, as far as the two windows' steps do the same
//! work (decode steps of one batch do; a prefill of another length does not). It is said as
//! measured, with both step counts, never extrapolated.

use std::path::Path;

use npuprof_summary::Summary;
use serde::Serialize;

/// One run's step time in both windows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TracerCost {
    /// The phase, when known.
    pub phase: Option<String>,
    /// The rank, when known.
    pub rank: Option<u32>,
    /// The timing window's median step (µs).
    pub timing_p50_us: f64,
    /// Its recorded steps.
    pub timing_steps: usize,
    /// The structure window's median step (µs).
    pub structure_p50_us: f64,
    /// Its recorded steps.
    pub structure_steps: usize,
}

impl TracerCost {
    /// The structure window's median step over the timing window's, minus one: the share the
    /// tracer added (negative when the structure window's steps were shorter).
    pub fn added(&self) -> f64 {
        self.structure_p50_us / self.timing_p50_us - 1.0
    }
}

/// The runs both windows recorded steps of, paired by phase and rank, in the timing window's
/// order; a run with no steps (or a zero median) in either window is left out. Where a window
/// holds several runs of one phase and rank (collects run again into one result directory),
/// the k-th of each window are paired: summary lists them in the order of their directories'
/// names, which torch_npu stamps with the time.
pub fn tracer_cost(timing: &Summary, structure: &Summary) -> Vec<TracerCost> {
    let mut taken = vec![false; structure.runs.len()];
    timing
        .runs
        .iter()
        .filter_map(|run| {
            let k = (0..structure.runs.len()).find(|&k| {
                let s = &structure.runs[k];
                !taken[k] && s.phase == run.phase && s.rank == run.rank
            })?;
            taken[k] = true;
            let timed = run.step_stats.as_ref().filter(|s| s.p50_us > 0.0)?;
            let traced = structure.runs[k]
                .step_stats
                .as_ref()
                .filter(|s| s.p50_us > 0.0)?;
            Some(TracerCost {
                phase: run.phase.clone(),
                rank: run.rank,
                timing_p50_us: timed.p50_us,
                timing_steps: timed.count,
                structure_p50_us: traced.p50_us,
                structure_steps: traced.count,
            })
        })
        .collect()
}

/// [`tracer_cost`] of the timing window's summary (`timing`, `None` when it could not be
/// summarised) and the structure window's result directory (what summary finds under it);
/// empty when either has no summary.
pub fn tracer_cost_of(timing: Option<&Summary>, structure: &Path) -> Vec<TracerCost> {
    let options = npuprof_summary::Options::default();
    match (timing, npuprof_summary::summarize(structure, &options)) {
        (Some(timing), Ok(structure)) => tracer_cost(timing, &structure),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::Path;

    use super::*;

    /// A run directory of `phase` and `rank` whose step_trace_time.csv holds `steps` (µs).
    fn run(root: &Path, phase: &str, rank: u32, steps: &[f64]) {
        run_named(root, phase, &format!("node_{rank}"), rank, steps);
    }

    fn run_named(root: &Path, phase: &str, name: &str, rank: u32, steps: &[f64]) {
        let out = root
            .join(phase)
            .join(format!("{name}_ascend_pt"))
            .join("ASCEND_PROFILER_OUTPUT");
        fs::create_dir_all(&out).expect("dirs");
        let mut csv = String::from(
            "Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,\
             Stage,Bubble,Communication(Not Overlapped and Exclude Receive),Preparing\n",
        );
        for (i, total) in steps.iter().enumerate() {
            csv.push_str(&format!("{i},{total},0,0,0,0,{total},0,0,0\n"));
        }
        fs::write(out.join("step_trace_time.csv"), csv).expect("csv");
        fs::write(
            out.parent().expect("run dir").join("profiler_info_0.json"),
            format!(r#"{{"config": {{}}, "rank_id": {rank}}}"#),
        )
        .expect("info");
    }

    fn summary(root: &Path) -> Summary {
        npuprof_summary::summarize(root, &npuprof_summary::Options::default()).expect("summary")
    }

    #[test]
    fn each_run_is_paired_with_its_own_phase_and_rank() {
        let timing = tempfile::tempdir().expect("temp");
        let structure = tempfile::tempdir().expect("temp");
        run(timing.path(), "decode", 0, &[100.0, 110.0, 105.0, 400.0]);
        run(timing.path(), "decode", 1, &[200.0, 200.0]);
        run(timing.path(), "prefill", 0, &[900.0]);
        run(structure.path(), "decode", 0, &[126.0, 120.0]);
        run(structure.path(), "decode", 1, &[190.0]);
        let costs = tracer_cost(&summary(timing.path()), &summary(structure.path()));
        let got: Vec<_> = costs
            .iter()
            .map(|c| {
                let added = (c.added() * 1000.0).round() / 1000.0;
                (
                    c.phase.as_deref(),
                    c.rank,
                    c.timing_p50_us,
                    c.structure_p50_us,
                    added,
                )
            })
            .collect();
        // The lower middle of an even count, as summary takes it; prefill has no pair.
        assert_eq!(
            got,
            [
                (Some("decode"), Some(0), 105.0, 120.0, 0.143),
                (Some("decode"), Some(1), 200.0, 190.0, -0.05),
            ]
        );
        assert_eq!((costs[0].timing_steps, costs[0].structure_steps), (4, 2));
    }

    #[test]
    fn a_run_with_a_zero_median_in_either_window_is_left_out() {
        let timing = tempfile::tempdir().expect("temp");
        let structure = tempfile::tempdir().expect("temp");
        run(timing.path(), "decode", 0, &[0.0, 0.0, 5.0]);
        run(structure.path(), "decode", 0, &[120.0]);
        run(timing.path(), "decode", 1, &[100.0]);
        run(structure.path(), "decode", 1, &[0.0]);
        run(timing.path(), "prefill", 0, &[900.0]);
        run(structure.path(), "prefill", 0, &[990.0]);
        let costs = tracer_cost(&summary(timing.path()), &summary(structure.path()));
        let runs: Vec<_> = costs.iter().map(|c| (c.phase.as_deref(), c.rank)).collect();
        assert_eq!(runs, [(Some("prefill"), Some(0))]);
    }

    #[test]
    fn runs_of_one_phase_and_rank_are_paired_in_their_order() {
        let timing = tempfile::tempdir().expect("temp");
        let structure = tempfile::tempdir().expect("temp");
        run_named(timing.path(), "decode", "vm_1_2026120601", 0, &[100.0]);
        run_named(timing.path(), "decode", "vm_2_2026120602", 0, &[300.0]);
        run_named(structure.path(), "decode", "vm_1_2026120601", 0, &[110.0]);
        run_named(structure.path(), "decode", "vm_2_2026120602", 0, &[330.0]);
        let costs = tracer_cost(&summary(timing.path()), &summary(structure.path()));
        let pairs: Vec<_> = costs
            .iter()
            .map(|c| (c.timing_p50_us, c.structure_p50_us))
            .collect();
        assert_eq!(pairs, [(100.0, 110.0), (300.0, 330.0)]);
    }
}
