//! One step of one rank on the device, as lanes: computing, communication and free time, from
//! `kernel_details.csv`'s `Start Time(us)` and `Duration(us)` of the step's rows (read in the
//! same pass as the kernel groups, [`crate::kernels::aggregate_with`]).
//!
//! The step drawn is the median step by `step_trace_time.csv`'s total ([`representative`]): a
//! typical step, not the first (often slow) or the longest. Memory is bounded: at most
//! [`MAX_INTERVALS`] rows of the step are kept (the rest counted and said), and a lane of more
//! than [`SLOTS`] intervals is drawn as [`SLOTS`] slots, each with the share of it the lane was
//! busy (neighbouring slots of the same share merged): what is drawn still adds up to the
//! lane's time, it is only blurred.

use serde::Serialize;

use crate::steps::Step;

/// Rows of the drawn step kept; the rest are counted in [`Timeline::dropped`].
pub const MAX_INTERVALS: usize = 50_000;

/// The drawn resolution: a lane of more intervals than this is drawn as this many slots.
pub const SLOTS: usize = 1000;

/// The `Accelerator Core`s of communication tasks.
pub const COMMUNICATION_CORES: [&str; 2] = ["HCCL", "COMMUNICATION"];

/// Whether a row's `Accelerator Core` field is a communication task's.
pub fn is_communication(core: &[u8]) -> bool {
    let core = core.trim_ascii();
    COMMUNICATION_CORES.iter().any(|c| c.as_bytes() == core)
}

/// A lane of the strip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Lane {
    /// Computing tasks (every core but communication).
    Computing,
    /// Communication tasks (`HCCL`).
    Communication,
    /// No task of either kind ran.
    Free,
}

impl Lane {
    /// Top to bottom.
    pub const ALL: [Lane; 3] = [Lane::Computing, Lane::Communication, Lane::Free];

    /// The lane's name (and CSS class).
    pub fn as_str(self) -> &'static str {
        match self {
            Lane::Computing => "computing",
            Lane::Communication => "communication",
            Lane::Free => "free",
        }
    }
}

/// The step to draw: the median step of `steps` by total (the lower of the two middle ones for
/// an even count), and why, in words; `None` without numbered steps.
pub fn representative(steps: &[Step]) -> Option<(u64, String)> {
    let mut numbered: Vec<(f64, u64)> = steps
        .iter()
        .filter_map(|s| s.step.map(|n| (s.total_us, n)))
        .collect();
    if numbered.is_empty() {
        return None;
    }
    numbered.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (_, step) = numbered[(numbered.len() - 1) / 2];
    let why = if numbered.len() == 1 {
        "the only step recorded".to_owned()
    } else {
        format!(
            "the median of {} steps by step_trace_time's total",
            numbered.len()
        )
    };
    Some((step, why))
}

/// A `Start Time(us)` field in ns: exact for torch_npu's `<µs>.<3 digits>` (a ~1.7e15 µs
/// clock, where an `f64` of µs keeps only quarters of a µs); other numbers through `f64`.
pub fn start_ns(field: &[u8]) -> Option<i64> {
    let text = field.trim_ascii();
    let (whole, fraction) =
        text.split_at(text.iter().position(|&b| b == b'.').unwrap_or(text.len()));
    let fraction = fraction.get(1..).unwrap_or_default();
    let digits = |b: &[u8]| !b.is_empty() && b.iter().all(u8::is_ascii_digit);
    if digits(whole) && (fraction.is_empty() || digits(fraction)) {
        let ns = fraction
            .iter()
            .chain(std::iter::repeat(&b'0'))
            .take(3)
            .fold(0i64, |n, d| n * 10 + i64::from(d - b'0'));
        let exact = std::str::from_utf8(whole)
            .ok()
            .and_then(|w| w.parse::<i64>().ok())
            .and_then(|micros| micros.checked_mul(1000)?.checked_add(ns));
        if exact.is_some() {
            return exact;
        }
    }
    let micros = npuprof_scan::decimal::parse_f64(text).filter(|x| x.is_finite())?;
    Some((micros * 1000.0).round() as i64)
}

/// The rows of one step, as read (bounded).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Intervals {
    /// `(start, end, communication)` in ns of the `Start Time(us)` clock, in file order.
    spans: Vec<(i64, i64, bool)>,
    /// Rows of the step past [`MAX_INTERVALS`].
    dropped: u64,
}

impl Intervals {
    /// Adds a row of the step: its `Start Time(us)` field and duration (µs); a start that is no
    /// number is left out.
    pub(crate) fn add(&mut self, start: &[u8], duration_us: f64, communication: bool) {
        if self.spans.len() >= MAX_INTERVALS {
            self.dropped += 1;
            return;
        }
        let Some(start) = start_ns(start) else { return };
        let end = start.saturating_add((duration_us * 1000.0).round() as i64);
        self.spans.push((start, end, communication));
    }

    /// Adds a row of the step by its start in ns (a db export's `startNs`) and duration (µs).
    pub(crate) fn add_ns(&mut self, start: i64, duration_us: f64, communication: bool) {
        if self.spans.len() >= MAX_INTERVALS {
            self.dropped += 1;
            return;
        }
        let end = start.saturating_add((duration_us * 1000.0).round() as i64);
        self.spans.push((start, end, communication));
    }

    /// Adds the rows that follow in the file (the cap keeps what one pass keeps).
    pub(crate) fn absorb(&mut self, next: Intervals) {
        let room = MAX_INTERVALS - self.spans.len();
        let kept = next.spans.len().min(room);
        self.dropped += next.dropped + (next.spans.len() - kept) as u64;
        self.spans.extend(next.spans.into_iter().take(kept));
    }

    /// The step's lanes; `None` when it had no row.
    pub(crate) fn timeline(self, step: u64, why: String) -> Option<Timeline> {
        let start = self.spans.iter().map(|s| s.0).min()?;
        let end = self.spans.iter().map(|s| s.1).fold(start, i64::max);
        let window = end - start;
        let lane = |communication: bool| {
            union(
                self.spans
                    .iter()
                    .filter(|s| s.2 == communication)
                    .map(|s| (s.0 - start, s.1 - start)),
            )
        };
        let (computing, communication) = (lane(false), lane(true));
        let busy = union(computing.iter().chain(&communication).copied());
        let free = complement(&busy, window);
        let ns = |spans: &[(i64, i64)]| spans.iter().map(|(a, b)| b - a).sum::<i64>();
        let length = |spans: &[(i64, i64)]| micros(ns(spans));
        let exact = computing.len() + communication.len() + free.len();
        let lanes: Vec<(Lane, Vec<Drawn>)> = [
            (Lane::Computing, &computing),
            (Lane::Communication, &communication),
            (Lane::Free, &free),
        ]
        .into_iter()
        .map(|(lane, spans)| {
            let drawn = if spans.len() <= SLOTS {
                spans
                    .iter()
                    .map(|&(a, b)| Drawn {
                        start_us: micros(a),
                        end_us: micros(b),
                        busy: 1.0,
                    })
                    .collect()
            } else {
                slots(spans, window)
            };
            (lane, drawn)
        })
        .collect();
        let drawn = lanes.iter().map(|(_, s)| s.len()).sum();
        Some(Timeline {
            step,
            why,
            start_us: micros(start),
            window_us: micros(window),
            computing_us: length(&computing),
            communication_us: length(&communication),
            overlapped_us: micros(ns(&computing) + ns(&communication) - ns(&busy)),
            free_us: length(&free),
            tasks: self.spans.len() as u64,
            dropped: self.dropped,
            intervals: exact,
            drawn,
            lanes,
        })
    }
}

/// One step of one rank on the device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Timeline {
    /// The step drawn (its `Step Id`).
    pub step: u64,
    /// Why this step ([`representative`]).
    pub why: String,
    /// The step's first task start, in the `Start Time(us)` clock.
    pub start_us: f64,
    /// From the first task start to the last task end (µs): the strip's width.
    pub window_us: f64,
    /// Time at least one computing task ran.
    pub computing_us: f64,
    /// Time at least one communication task ran.
    pub communication_us: f64,
    /// Time both ran.
    pub overlapped_us: f64,
    /// Time neither ran, within the window.
    pub free_us: f64,
    /// Rows of the step read.
    pub tasks: u64,
    /// Rows of the step past [`MAX_INTERVALS`], not drawn.
    pub dropped: u64,
    /// Intervals of the three lanes.
    pub intervals: usize,
    /// Intervals drawn (at most [`SLOTS`] per lane).
    pub drawn: usize,
    /// Per lane, what is drawn, in order.
    #[serde(skip)]
    pub lanes: Vec<(Lane, Vec<Drawn>)>,
}

/// A drawn part of a lane: from `start_us` to `end_us` (offsets from the step's first task),
/// busy for the share `busy` of it (1 for an interval drawn as it is).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Drawn {
    /// Its start (µs from [`Timeline::start_us`]).
    pub start_us: f64,
    /// Its end.
    pub end_us: f64,
    /// The share of it the lane was busy.
    pub busy: f64,
}

/// A span to mark on a run's strip (e.g. a gap advise names): where it starts in the
/// `Start Time(us)` clock, how long it is, and what it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// The run directory, as [`crate::RunSummary::dir`] names it.
    pub dir: String,
    /// Its start, in the `Start Time(us)` clock.
    pub start_us: f64,
    /// Its length (µs).
    pub length_us: f64,
    /// What it is (shown on hover).
    pub label: String,
}

/// `ns` in µs.
fn micros(ns: i64) -> f64 {
    ns as f64 / 1000.0
}

/// The union of `spans`, in order, overlapping and touching ones joined.
fn union(spans: impl Iterator<Item = (i64, i64)>) -> Vec<(i64, i64)> {
    let mut spans: Vec<(i64, i64)> = spans.collect();
    spans.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::new();
    for (a, b) in spans {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// What `busy` (a union, in order) leaves free of `0..window`.
fn complement(busy: &[(i64, i64)], window: i64) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    let mut at = 0;
    for &(a, b) in busy {
        if a > at {
            out.push((at, a));
        }
        at = at.max(b);
    }
    if window > at {
        out.push((at, window));
    }
    out
}

/// `spans` (disjoint, in order, within `0..window` ns) as [`SLOTS`] slots of the window, each
/// with the share of it they cover; empty slots left out, neighbours of one share merged.
fn slots(spans: &[(i64, i64)], window: i64) -> Vec<Drawn> {
    let width = window as f64 / SLOTS as f64;
    let mut covered = vec![0.0f64; SLOTS];
    for &(a, b) in spans {
        let (a, b) = (a as f64, b as f64);
        let first = ((a / width) as usize).min(SLOTS - 1);
        let last = ((b / width) as usize).min(SLOTS - 1);
        for (slot, cover) in covered.iter_mut().enumerate().take(last + 1).skip(first) {
            let (from, to) = (slot as f64 * width, (slot + 1) as f64 * width);
            *cover += (b.min(to) - a.max(from)).max(0.0);
        }
    }
    let mut out: Vec<Drawn> = Vec::new();
    for (slot, cover) in covered.into_iter().enumerate() {
        if cover <= 0.0 {
            continue;
        }
        let busy = (cover / width).min(1.0);
        let start = slot as f64 * width / 1000.0;
        let end = (slot + 1) as f64 * width / 1000.0;
        match out.last_mut() {
            Some(last) if (last.busy - busy).abs() < 1e-9 && (last.end_us - start).abs() < 1e-9 => {
                last.end_us = end;
            }
            _ => out.push(Drawn {
                start_us: start,
                end_us: end,
                busy,
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(n: u64, total: f64) -> Step {
        crate::steps::computing_step(Some(n), total)
    }

    #[test]
    fn start_times_are_read_to_the_ns() {
        assert_eq!(
            start_ns(b"1736408883704643.212\t"),
            Some(1_736_408_883_704_643_212)
        );
        assert_eq!(start_ns(b" 12.5"), Some(12_500));
        assert_eq!(start_ns(b"1e3"), Some(1_000_000));
        assert_eq!(start_ns(b"N/A"), None);
    }

    #[test]
    fn the_median_step_is_drawn() {
        let steps = [
            step(1, 900.0),
            step(2, 100.0),
            step(3, 300.0),
            step(4, 200.0),
        ];
        let (n, why) = representative(&steps).unwrap_or_default();
        assert_eq!(n, 4, "200 is the lower middle of 100, 200, 300, 900");
        assert_eq!(why, "the median of 4 steps by step_trace_time's total");
        assert_eq!(representative(&[]), None);
    }

    #[test]
    fn lanes_split_overlap_and_free_time() {
        let mut rows = Intervals::default();
        rows.add(b"100.000\t", 10.0, false); // 0..10
        rows.add(b"105", 20.0, true); // 5..25
        rows.add(b"130.0", 10.0, false); // 30..40
        rows.add(b"N/A", 10.0, false); // no start: left out
        let t = rows.timeline(7, String::new());
        let t = t.map(|t| {
            (
                t.window_us,
                t.computing_us,
                t.communication_us,
                t.overlapped_us,
                t.free_us,
            )
        });
        assert_eq!(t, Some((40.0, 20.0, 20.0, 5.0, 5.0)));
        assert_eq!(Intervals::default().timeline(1, String::new()), None);
    }

    #[test]
    fn many_intervals_are_drawn_as_slots_that_add_up_and_the_cap_counts_the_rest() {
        let mut rows = Intervals::default();
        for i in 0..5000 {
            rows.add(format!("{}", i * 10).as_bytes(), 4.0, false);
        }
        let Some(t) = rows.timeline(1, String::new()) else {
            panic!("no timeline")
        };
        assert_eq!(t.intervals, 5000 + 4999);
        for (lane, exact) in [(0, t.computing_us), (2, t.free_us)] {
            let drawn = &t.lanes[lane].1;
            assert!(drawn.len() <= SLOTS, "{}", drawn.len());
            let time: f64 = drawn.iter().map(|d| (d.end_us - d.start_us) * d.busy).sum();
            assert!((time - exact).abs() < 1e-6 * exact, "{time} vs {exact}");
        }
        // About five rows per slot, each 40 % busy: every slot about as opaque.
        let busy: Vec<f64> = t.lanes[0].1.iter().map(|d| d.busy).collect();
        assert!(busy.iter().all(|b| (0.3..=0.5).contains(b)), "{busy:?}");
        let mut first = Intervals::default();
        let mut next = Intervals::default();
        for _ in 0..MAX_INTERVALS - 1 {
            first.add(b"0", 1.0, false);
        }
        for _ in 0..3 {
            next.add(b"0", 1.0, true);
        }
        first.absorb(next);
        assert_eq!((first.spans.len(), first.dropped), (MAX_INTERVALS, 2));
    }
}
