//! Pipeline metrics (PipeUtilization): which of the seven AI Core pipes a kernel keeps busy, and
//! the one verdict on what bounds it ([`Bound::of`]) that summary, compare, advise and the HTML
//! pages all give.
//!
//! Chips with the AI Cube / AI Vector split write `aic_*` and `aiv_*` ratio columns; older chips
//! write them without prefix (`mac_ratio`, `vec_ratio`, …). A pipe's value in a row is the
//! largest of its columns that hold a number (the other core's columns are 0 or `N/A`); a row
//! whose ratios are all 0 or no number has no metrics.

use serde::{Serialize, Serializer};

use crate::columns::{self, Header};

/// A pipe of the AI Core: what bounds a kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Pipe {
    /// The cube unit (matrix multiply): `aic_mac_ratio` / `mac_ratio`.
    Cube,
    /// The vector unit: `aiv_vec_ratio` / `vec_ratio`.
    Vector,
    /// Scalar code: `aic_scalar_ratio`, `aiv_scalar_ratio` / `scalar_ratio`.
    Scalar,
    /// MTE1: L1 to L0 transfers: `aic_mte1_ratio` / `mte1_ratio`.
    Mte1,
    /// MTE2: global memory into the core: `aic_mte2_ratio`, `aiv_mte2_ratio` / `mte2_ratio`.
    Mte2,
    /// MTE3: the core back to global memory: `aiv_mte3_ratio` / `mte3_ratio`.
    Mte3,
    /// Fixpipe: cube results out (L0C to memory): `aic_fixpipe_ratio` / `fixpipe_ratio`.
    Fixpipe,
}

/// How many [`Pipe`]s there are.
pub const PIPES: usize = 7;

/// A kernel whose busiest pipe is busy less than this share of its time is bound by nothing
/// (latency, launch or synchronisation): msprof-analyze's "no bound" rule.
pub const BOUND_RATIO: f64 = 0.8;

/// A kernel whose own `memory_bound` column (the profiler's `mte2_ratio / max(mac_ratio,
/// vec_ratio)`, written on chips without the AIC/AIV split) is above this is memory-bound: the
/// CANN documentation's reading of that column (below 1, no memory bottleneck).
pub const VENDOR_MEMORY_BOUND: f64 = 1.0;

impl Pipe {
    /// Every pipe, in the order of the ratio arrays.
    pub const ALL: [Pipe; PIPES] = [
        Pipe::Cube,
        Pipe::Vector,
        Pipe::Scalar,
        Pipe::Mte1,
        Pipe::Mte2,
        Pipe::Mte3,
        Pipe::Fixpipe,
    ];

    /// The accepted column spellings.
    pub fn spellings(self) -> &'static [&'static str] {
        match self {
            Pipe::Cube => &["aic_mac_ratio", "mac_ratio"],
            Pipe::Vector => &["aiv_vec_ratio", "vec_ratio"],
            Pipe::Scalar => &["aic_scalar_ratio", "aiv_scalar_ratio", "scalar_ratio"],
            Pipe::Mte1 => &["aic_mte1_ratio", "mte1_ratio"],
            Pipe::Mte2 => &["aic_mte2_ratio", "aiv_mte2_ratio", "mte2_ratio"],
            Pipe::Mte3 => &["aiv_mte3_ratio", "mte3_ratio"],
            Pipe::Fixpipe => &["aic_fixpipe_ratio", "fixpipe_ratio"],
        }
    }

    /// Whether the pipe moves data (memory-bound when it is the bound).
    pub fn moves_data(self) -> bool {
        matches!(self, Pipe::Mte1 | Pipe::Mte2 | Pipe::Mte3 | Pipe::Fixpipe)
    }

    /// The name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Pipe::Cube => "cube",
            Pipe::Vector => "vector",
            Pipe::Scalar => "scalar",
            Pipe::Mte1 => "mte1",
            Pipe::Mte2 => "mte2",
            Pipe::Mte3 => "mte3",
            Pipe::Fixpipe => "fixpipe",
        }
    }
}

/// The busiest pipe of `ratios` (in [`Pipe::ALL`] order) and its ratio; `None` when every
/// ratio is 0.
pub fn busiest(ratios: &[f64; PIPES]) -> Option<(Pipe, f64)> {
    Pipe::ALL
        .into_iter()
        .zip(ratios.iter().copied())
        .filter(|(_, r)| *r > 0.0)
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// What bounds a kernel: the one verdict summary, compare, advise and the HTML pages give.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    /// Its busiest pipe is busy [`BOUND_RATIO`] or more of its time.
    Pipe(Pipe, f64),
    /// The profiler's own `memory_bound` column is above [`VENDOR_MEMORY_BOUND`] (the value),
    /// whatever the pipes say.
    Memory(f64),
    /// No pipe reaches [`BOUND_RATIO`]: bound by nothing (latency, launch, synchronisation);
    /// the busiest pipe and its ratio.
    Nothing(Pipe, f64),
}

impl Bound {
    /// The verdict on a kernel from its time-weighted pipe ratios (in [`Pipe::ALL`] order) and
    /// its time-weighted `memory_bound` column: the vendor's column where it marks the kernel
    /// memory-bound, else the pipes with the no-bound threshold. `None` without metrics.
    pub fn of(ratios: Option<&[f64; PIPES]>, memory_bound: Option<f64>) -> Option<Self> {
        if let Some(bound) = memory_bound.filter(|b| *b > VENDOR_MEMORY_BOUND) {
            return Some(Bound::Memory(bound));
        }
        let (pipe, ratio) = busiest(ratios?)?;
        Some(if ratio >= BOUND_RATIO {
            Bound::Pipe(pipe, ratio)
        } else {
            Bound::Nothing(pipe, ratio)
        })
    }

    /// The label in reports and JSON: the pipe's name, `memory` (the profiler's column) or
    /// `none`.
    pub fn label(self) -> &'static str {
        match self {
            Bound::Pipe(pipe, _) => pipe.as_str(),
            Bound::Memory(_) => "memory",
            Bound::Nothing(..) => "none",
        }
    }

    /// Whether the kernel is bound by data movement (a data pipe, or the profiler's column).
    pub fn by_memory(self) -> bool {
        match self {
            Bound::Pipe(pipe, _) => pipe.moves_data(),
            Bound::Memory(_) => true,
            Bound::Nothing(..) => false,
        }
    }

    /// The busiest pipe and its ratio, when the verdict came from the pipes.
    pub fn busiest(self) -> Option<(Pipe, f64)> {
        match self {
            Bound::Pipe(pipe, ratio) | Bound::Nothing(pipe, ratio) => Some((pipe, ratio)),
            Bound::Memory(_) => None,
        }
    }
}

impl Serialize for Bound {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.label())
    }
}

/// Time-weighted mean ratio of each pipe (0–1; pipes run in parallel, so they need not sum to 1).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PipeRatios {
    /// Cube (MAC) ratio.
    pub cube: f64,
    /// Vector ratio.
    pub vector: f64,
    /// MTE2 (memory in) ratio.
    pub memory: f64,
    /// Scalar ratio.
    pub scalar: f64,
    /// MTE1 (L1 to L0) ratio.
    pub mte1: f64,
    /// MTE3 (the core out to memory) ratio.
    pub mte3: f64,
    /// Fixpipe (cube results out) ratio.
    pub fixpipe: f64,
}

impl PipeRatios {
    /// The ratios in [`Pipe::ALL`] order.
    pub fn from_array(r: [f64; PIPES]) -> Self {
        let [cube, vector, scalar, mte1, memory, mte3, fixpipe] = r;
        Self {
            cube,
            vector,
            memory,
            scalar,
            mte1,
            mte3,
            fixpipe,
        }
    }

    /// The ratios in [`Pipe::ALL`] order.
    pub fn to_array(&self) -> [f64; PIPES] {
        Pipe::ALL.map(|p| self.get(p))
    }

    /// The ratio of one pipe.
    pub fn get(&self, pipe: Pipe) -> f64 {
        match pipe {
            Pipe::Cube => self.cube,
            Pipe::Vector => self.vector,
            Pipe::Scalar => self.scalar,
            Pipe::Mte1 => self.mte1,
            Pipe::Mte2 => self.memory,
            Pipe::Mte3 => self.mte3,
            Pipe::Fixpipe => self.fixpipe,
        }
    }
}

/// The phase's pipe shares: ratios weighted by kernel duration over the kernels with metrics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PipeShares {
    /// Time-weighted mean ratio of each pipe.
    pub ratios: PipeRatios,
    /// Device time of the kernels that carry pipe metrics (the weights' sum).
    pub measured_us: f64,
    /// `measured_us` / all kernel time.
    pub measured_share: f64,
}

/// Where the pipes' ratio columns are in a header.
#[derive(Debug, Clone, Default)]
pub struct PipeColumns {
    /// Each ratio column, and the index of its pipe in [`Pipe::ALL`].
    columns: Vec<(usize, usize)>,
}

impl PipeColumns {
    /// The ratio columns present in `header`; `None` when there are none (no PipeUtilization).
    pub fn new(header: &Header) -> Option<Self> {
        let columns: Vec<_> = Pipe::ALL
            .iter()
            .enumerate()
            .flat_map(|(p, pipe)| {
                let found = pipe.spellings().iter().filter_map(|s| header.find(&[s]));
                found.map(move |column| (column, p))
            })
            .collect();
        (!columns.is_empty()).then_some(Self { columns })
    }

    /// Every column read.
    pub fn indices(&self) -> impl Iterator<Item = usize> + '_ {
        self.columns.iter().map(|&(column, _)| column)
    }

    /// The same columns, each moved to `to(column)` (its position among the fields picked).
    pub fn remap(&self, to: impl Fn(usize) -> usize) -> Self {
        Self {
            columns: self.columns.iter().map(|&(c, p)| (to(c), p)).collect(),
        }
    }

    /// The row's ratio per pipe (in [`Pipe::ALL`] order), from each field and its first eight
    /// bytes ([`Record::get_word`](npuprof_scan::csv_rows::Record::get_word)), the values of
    /// short fields looked up in `seen`; `None` when no ratio column holds a number above 0
    /// (`N/A` for communication and AI CPU rows, or zeros: a row without metrics). Text that is
    /// not a number counts as no value.
    #[inline(always)]
    pub fn row<'a>(
        &self,
        seen: &mut RatioValues,
        field: impl Fn(usize) -> Option<(&'a [u8], u64)>,
    ) -> Option<[f64; PIPES]> {
        let mut ratios = [0.0; PIPES];
        let mut any = false;
        for &(column, pipe) in &self.columns {
            let value = field(column).map_or(f64::NAN, |(field, word)| seen.value(field, word));
            // The maximum of the values, which start at 0 (a NaN compares false).
            if let Some(ratio) = ratios.get_mut(pipe)
                && value > *ratio
            {
                *ratio = value;
                any = true;
            }
        }
        any.then_some(ratios)
    }
}

/// A db export's metric values of one kernel (one per pipe, in [`Pipe::ALL`] order), read as a
/// CSV row is: a pipe's largest value, `None` when none is above 0.
pub fn db_row(values: &[Option<f64>]) -> Option<[f64; PIPES]> {
    let mut ratios = [0.0; PIPES];
    let mut any = false;
    for (ratio, value) in ratios.iter_mut().zip(values) {
        if let Some(value) = value.filter(|v| *v > *ratio) {
            *ratio = value;
            any = true;
        }
    }
    any.then_some(ratios)
}

/// The values of the short ratio fields seen, by their bytes: torch_npu writes ratios with
/// three decimals, so a few hundred distinct fields make up nearly every row.
pub struct RatioValues {
    /// Direct-mapped: a field's key (see [`RatioValues::value`]) and its value, NaN for none.
    slots: Box<[(u64, f64)]>,
}

impl Default for RatioValues {
    fn default() -> Self {
        Self {
            slots: vec![(0, 0.0); 1 << Self::BITS].into_boxed_slice(),
        }
    }
}

impl RatioValues {
    /// 1024 slots (16 KiB).
    const BITS: u32 = 10;

    /// The value of a ratio field whose first eight bytes are `word`
    /// ([`Record::get_word`](npuprof_scan::csv_rows::Record::get_word)); NaN when it holds
    /// none.
    #[inline(always)]
    pub fn value(&mut self, field: &[u8], word: u64) -> f64 {
        let compute = || match columns::number(field) {
            Ok(Some(value)) => value,
            _ => f64::NAN,
        };
        if !(1..8).contains(&field.len()) {
            return compute();
        }
        // The word of a field of 1 to 7 bytes has a zero last byte: the length goes there (and
        // no key is 0, the empty slots' key).
        let key = word | (field.len() as u64) << 56;
        let slot = (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - Self::BITS)) as usize;
        let Some(cached) = self.slots.get_mut(slot) else {
            return compute();
        };
        if cached.0 != key {
            *cached = (key, compute());
        }
        cached.1
    }
}

/// Sums of duration × ratio, to be divided by the summed duration, and of duration ×
/// `memory_bound` (the profiler's own column) over the rows with a number there: one kernel
/// name's (its [`Bound`]) or a phase's.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PipeSums {
    weighted: [f64; PIPES],
    time_us: f64,
    bound_weighted: f64,
    bound_us: f64,
}

impl PipeSums {
    /// Adds one kernel of `duration_us` with `ratios`.
    pub fn add(&mut self, duration_us: f64, ratios: [f64; PIPES]) {
        for (sum, ratio) in self.weighted.iter_mut().zip(ratios) {
            *sum += duration_us * ratio;
        }
        self.time_us += duration_us;
    }

    /// Adds one kernel of `duration_us` whose `memory_bound` column holds `bound`.
    pub fn add_memory_bound(&mut self, duration_us: f64, bound: f64) {
        self.bound_weighted += duration_us * bound;
        self.bound_us += duration_us;
    }

    /// Adds the sums of other kernels.
    pub fn absorb(&mut self, other: &PipeSums) {
        for (sum, more) in self.weighted.iter_mut().zip(other.weighted) {
            *sum += more;
        }
        self.time_us += other.time_us;
        self.bound_weighted += other.bound_weighted;
        self.bound_us += other.bound_us;
    }

    /// The weighted means; `None` when nothing with metrics was added.
    pub fn ratios(&self) -> Option<PipeRatios> {
        if self.time_us <= 0.0 {
            return None;
        }
        Some(PipeRatios::from_array(
            self.weighted.map(|w| w / self.time_us),
        ))
    }

    /// The time-weighted `memory_bound`; `None` when no row had one.
    pub fn memory_bound(&self) -> Option<f64> {
        (self.bound_us > 0.0).then(|| self.bound_weighted / self.bound_us)
    }

    /// The verdict on the kernels summed ([`Bound::of`]).
    pub fn bound(&self) -> Option<Bound> {
        Bound::of(
            self.ratios().map(|r| r.to_array()).as_ref(),
            self.memory_bound(),
        )
    }

    /// Summed duration of the kernels with metrics.
    pub fn time_us(&self) -> f64 {
        self.time_us
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ratios of a test row.
    fn ratios<const N: usize>(cols: &PipeColumns, row: [&str; N]) -> Option<[f64; PIPES]> {
        let field = |i: usize| {
            let field = row.get(i)?.as_bytes();
            Some((field, npuprof_scan::decimal::word(field)))
        };
        cols.row(&mut RatioValues::default(), field)
    }

    fn header(names: &str) -> Header {
        Header::new(names.split(',').map(str::as_bytes))
    }

    #[test]
    fn both_spellings_are_read() {
        let split = header(
            "Name,aic_mac_ratio,aic_mte2_ratio,aiv_vec_ratio,aiv_mte2_ratio,aic_mte1_ratio,aiv_mte3_ratio,aic_fixpipe_ratio",
        );
        let row = ["k", "0.5", "0.1", "0.0", "0.3", "0.6", "0.05", "0.2"];
        let got = PipeColumns::new(&split).and_then(|c| ratios(&c, row));
        assert_eq!(got, Some([0.5, 0.0, 0.0, 0.6, 0.3, 0.05, 0.2]));
        assert_eq!(got.as_ref().and_then(busiest), Some((Pipe::Mte1, 0.6)));
        let plain = header("Name,vec_ratio,mac_ratio,scalar_ratio,mte2_ratio");
        let row = ["k", "0.7", "0", "0.2", "0.1"];
        let got = PipeColumns::new(&plain).and_then(|c| ratios(&c, row));
        assert_eq!(got, Some([0.0, 0.7, 0.2, 0.0, 0.1, 0.0, 0.0]));
    }

    #[test]
    fn no_metric_columns_and_na_rows_give_none() {
        assert!(PipeColumns::new(&header("Name,Duration(us)")).is_none());
        let cols = PipeColumns::new(&header("Name,aic_mac_ratio,aiv_vec_ratio"));
        let of = |row: [&str; 3]| cols.as_ref().and_then(|c| ratios(c, row));
        assert_eq!(of(["hcom", "N/A", "N/A"]), None);
        // A row of zeros has no metrics (advise and summary read rows alike).
        assert_eq!(of(["k", "0.0", "0"]), None);
        assert_eq!(
            of(["k", "0.0", "0.25"]),
            Some([0.0, 0.25, 0.0, 0.0, 0.0, 0.0, 0.0])
        );
        // Long fields and text.
        assert_eq!(
            of(["k", "0.123456789", "x"]),
            Some([0.123456789, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
        );
        assert_eq!(
            db_row(&[None, Some(0.0), Some(0.4)]),
            Some([0.0, 0.0, 0.4, 0.0, 0.0, 0.0, 0.0])
        );
        assert_eq!(db_row(&[None, Some(0.0)]), None);
    }

    /// A field's value is the same whether it is computed or looked up, in any slot.
    #[test]
    fn looked_up_values_are_the_fields_values() {
        let mut seen = RatioValues::default();
        let fields: Vec<String> = (0..5000)
            .map(|i| format!("{}.{:03}", i % 3, i % 1000))
            .chain(["N/A", "", "0", "1e3", "abc", "0.1234567"].map(String::from))
            .collect();
        for _ in 0..2 {
            for field in &fields {
                let want = columns::number(field.as_bytes()).ok().flatten();
                let word = npuprof_scan::decimal::word(field.as_bytes());
                let got = seen.value(field.as_bytes(), word);
                assert_eq!((!got.is_nan()).then_some(got), want, "{field}");
            }
        }
    }

    #[test]
    fn the_verdict_is_the_busiest_pipe_past_the_threshold_or_the_vendors_column() {
        // Cube: (10 × 0.1 + 30 × 0.9) / 40 = 0.7, MTE2: (10 × 0.8 + 30 × 0.2) / 40 = 0.35.
        let mut sums = PipeSums::default();
        sums.add(10.0, [0.1, 0.0, 0.05, 0.0, 0.8, 0.0, 0.0]);
        sums.add(30.0, [0.9, 0.0, 0.05, 0.0, 0.2, 0.0, 0.0]);
        let ratios = sums.ratios();
        assert_eq!(ratios.map(|r| r.memory), Some(0.35));
        assert_eq!(sums.bound(), Some(Bound::Nothing(Pipe::Cube, 0.7)));
        assert_eq!(sums.bound().map(Bound::label), Some("none"));
        // At 80 % the pipe bounds it.
        sums.add(40.0, [0.9, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(sums.bound(), Some(Bound::Pipe(Pipe::Cube, 0.8)));
        // The profiler's own column above 1 wins over the pipes; at 1 or below it does not.
        sums.add_memory_bound(80.0, 1.0);
        assert_eq!(sums.bound().map(Bound::label), Some("cube"));
        sums.add_memory_bound(80.0, 2.0);
        assert_eq!(sums.bound(), Some(Bound::Memory(1.5)));
        assert!(sums.bound().is_some_and(Bound::by_memory));
        assert_eq!(PipeSums::default().ratios(), None);
        assert_eq!(PipeSums::default().bound(), None);
        let mte3 = [0.0, 0.0, 0.0, 0.0, 0.0, 0.85, 0.0];
        assert_eq!(
            Bound::of(Some(&mte3), None),
            Some(Bound::Pipe(Pipe::Mte3, 0.85))
        );
        assert!(Bound::of(Some(&mte3), None).is_some_and(Bound::by_memory));
    }
}
