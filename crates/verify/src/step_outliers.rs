//! First-step outliers: the pure decision behind `compile-in-window`, shared with advise's
//! `first-step-outlier` (one definition of the rule and its threshold).

use std::collections::BTreeMap;

/// A first recorded step this many times the median of the others or longer is an outlier
/// (graph compilation or warm-up inside the window).
pub const FIRST_STEP_RATIO: f64 = 10.0;

/// A first recorded step much longer than the others.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FirstStepOutlier {
    /// Its Step Id.
    pub step: u64,
    /// Its duration (µs).
    pub duration_us: f64,
    /// The median duration of the other steps (µs).
    pub median_us: f64,
    /// How many other steps the median is of.
    pub others: usize,
}

impl FirstStepOutlier {
    /// How many times the median the first step takes.
    pub fn ratio(&self) -> f64 {
        self.duration_us / self.median_us
    }

    /// The first step's time beyond the median (µs): what it would save if it were typical.
    pub fn excess_us(&self) -> f64 {
        self.duration_us - self.median_us
    }
}

fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    })
}

/// The first step (lowest Step Id) of `durations` (Step Id, µs; several rows of one step count
/// as its longest) when it takes at least [`FIRST_STEP_RATIO`] times the median of the others;
/// `None` with fewer than two steps or a median of zero.
pub fn first_step_outlier(
    durations: impl IntoIterator<Item = (u64, f64)>,
) -> Option<FirstStepOutlier> {
    let mut per: BTreeMap<u64, f64> = BTreeMap::new();
    for (step, d) in durations {
        let e = per.entry(step).or_insert(d);
        *e = e.max(d);
    }
    let mut steps = per.into_iter();
    let (step, duration_us) = steps.next()?;
    let mut rest: Vec<f64> = steps.map(|(_, d)| d).collect();
    let median_us = median(&mut rest)?;
    (median_us > 0.0 && duration_us >= FIRST_STEP_RATIO * median_us).then_some(FirstStepOutlier {
        step,
        duration_us,
        median_us,
        others: rest.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_step_is_judged_against_the_median_of_the_others() {
        let o = first_step_outlier([(3, 1000.0), (4, 90.0), (5, 100.0), (6, 500.0)]);
        assert_eq!(
            o,
            Some(FirstStepOutlier {
                step: 3,
                duration_us: 1000.0,
                median_us: 100.0,
                others: 3
            })
        );
        assert_eq!(o.map(|o| o.excess_us()), Some(900.0));
        // Just under ten times: not an outlier; a later long step is not the first.
        assert_eq!(first_step_outlier([(3, 999.0), (4, 100.0)]), None);
        assert_eq!(first_step_outlier([(3, 100.0), (4, 5000.0)]), None);
        // The rows of one step count as its longest, in any order.
        let o = first_step_outlier([(4, 100.0), (3, 50.0), (3, 1000.0), (5, 100.0)]);
        assert_eq!(o.map(|o| (o.step, o.duration_us)), Some((3, 1000.0)));
        assert_eq!(first_step_outlier([(3, 1000.0)]), None);
        assert_eq!(first_step_outlier([(3, 1000.0), (4, 0.0)]), None);
    }
}
