//! Pipeline metrics (PipeUtilization): which pipe a kernel keeps busy.
//!
//! Chips with the AI Cube / AI Vector split write `aic_*` and `aiv_*` ratio columns; older chips
//! write them without prefix (`mac_ratio`, `vec_ratio`, …). A pipe's value in a row is the
//! largest of its columns that hold a number (the other core's columns are 0 or `N/A`).

use serde::Serialize;

use crate::columns::{self, Header};

/// A pipe of the AI Core: what bounds a kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Pipe {
    /// The cube unit (matrix multiply): `aic_mac_ratio` / `mac_ratio`.
    Cube,
    /// The vector unit: `aiv_vec_ratio` / `vec_ratio`.
    Vector,
    /// Memory traffic into the core (MTE2): `aic_mte2_ratio`, `aiv_mte2_ratio` / `mte2_ratio`.
    Memory,
    /// Scalar code: `aic_scalar_ratio`, `aiv_scalar_ratio` / `scalar_ratio`.
    Scalar,
}

impl Pipe {
    /// Every pipe, in the order of [`PipeRatios`]' fields.
    pub const ALL: [Pipe; 4] = [Pipe::Cube, Pipe::Vector, Pipe::Memory, Pipe::Scalar];

    /// The accepted column spellings.
    pub(crate) fn spellings(self) -> &'static [&'static str] {
        match self {
            Pipe::Cube => &["aic_mac_ratio", "mac_ratio"],
            Pipe::Vector => &["aiv_vec_ratio", "vec_ratio"],
            Pipe::Memory => &["aic_mte2_ratio", "aiv_mte2_ratio", "mte2_ratio"],
            Pipe::Scalar => &["aic_scalar_ratio", "aiv_scalar_ratio", "scalar_ratio"],
        }
    }

    /// The name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Pipe::Cube => "cube",
            Pipe::Vector => "vector",
            Pipe::Memory => "memory",
            Pipe::Scalar => "scalar",
        }
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
}

impl PipeRatios {
    /// The ratio of one pipe.
    pub fn get(&self, pipe: Pipe) -> f64 {
        match pipe {
            Pipe::Cube => self.cube,
            Pipe::Vector => self.vector,
            Pipe::Memory => self.memory,
            Pipe::Scalar => self.scalar,
        }
    }

    /// The busiest pipe; `None` when every ratio is 0.
    pub fn bound(&self) -> Option<Pipe> {
        Pipe::ALL
            .into_iter()
            .filter(|p| self.get(*p) > 0.0)
            .max_by(|a, b| self.get(*a).total_cmp(&self.get(*b)))
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
pub(crate) struct PipeColumns {
    /// Each ratio column, and the index of its pipe in [`Pipe::ALL`].
    columns: Vec<(usize, usize)>,
}

impl PipeColumns {
    /// The ratio columns present in `header`; `None` when there are none (no PipeUtilization).
    pub(crate) fn new(header: &Header) -> Option<Self> {
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
    pub(crate) fn indices(&self) -> impl Iterator<Item = usize> + '_ {
        self.columns.iter().map(|&(column, _)| column)
    }

    /// The same columns, each moved to `to(column)` (its position among the fields picked).
    pub(crate) fn remap(&self, to: impl Fn(usize) -> usize) -> Self {
        Self {
            columns: self.columns.iter().map(|&(c, p)| (to(c), p)).collect(),
        }
    }

    /// The row's ratio per pipe, from each field and its first eight bytes
    /// ([`Record::get_word`](npuprof_scan::csv_rows::Record::get_word)), the values of short
    /// fields looked up in `seen`; `None` when no ratio column holds a number (e.g. `N/A` for
    /// communication and AI CPU rows). Text that is not a number counts as no value.
    #[inline(always)]
    pub(crate) fn row<'a>(
        &self,
        seen: &mut RatioValues,
        field: impl Fn(usize) -> Option<(&'a [u8], u64)>,
    ) -> Option<[f64; 4]> {
        let mut any = false;
        // Four variables rather than an array indexed by the pipe: they stay in registers.
        let (mut cube, mut vector, mut memory, mut scalar) = (0.0_f64, 0.0, 0.0, 0.0);
        for &(column, pipe) in &self.columns {
            let value = field(column).map_or(f64::NAN, |(field, word)| seen.value(field, word));
            any |= !value.is_nan();
            let ratio = match pipe {
                0 => &mut cube,
                1 => &mut vector,
                2 => &mut memory,
                _ => &mut scalar,
            };
            // The maximum of the values, which start at 0 (a NaN compares false).
            if value > *ratio {
                *ratio = value;
            }
        }
        any.then_some([cube, vector, memory, scalar])
    }
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

/// Sums of duration × ratio, to be divided by the summed duration.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct PipeSums {
    weighted: [f64; 4],
    time_us: f64,
}

impl PipeSums {
    /// Adds one kernel of `duration_us` with `ratios`.
    pub(crate) fn add(&mut self, duration_us: f64, ratios: [f64; 4]) {
        for (sum, ratio) in self.weighted.iter_mut().zip(ratios) {
            *sum += duration_us * ratio;
        }
        self.time_us += duration_us;
    }

    /// Adds the sums of other kernels.
    pub(crate) fn absorb(&mut self, other: &PipeSums) {
        for (sum, more) in self.weighted.iter_mut().zip(other.weighted) {
            *sum += more;
        }
        self.time_us += other.time_us;
    }

    /// The weighted means; `None` when nothing with metrics was added.
    pub(crate) fn ratios(&self) -> Option<PipeRatios> {
        if self.time_us <= 0.0 {
            return None;
        }
        let [cube, vector, memory, scalar] = self.weighted.map(|w| w / self.time_us);
        Some(PipeRatios {
            cube,
            vector,
            memory,
            scalar,
        })
    }

    /// Summed duration of the kernels with metrics.
    pub(crate) fn time_us(&self) -> f64 {
        self.time_us
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ratios of a test row.
    fn ratios<const N: usize>(cols: &PipeColumns, row: [&str; N]) -> Option<[f64; 4]> {
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
        let split = header("Name,aic_mac_ratio,aic_mte2_ratio,aiv_vec_ratio,aiv_mte2_ratio");
        let row = ["k", "0.5", "0.1", "0.0", "0.3"];
        let got = PipeColumns::new(&split).and_then(|c| ratios(&c, row));
        assert_eq!(got, Some([0.5, 0.0, 0.3, 0.0]));
        let plain = header("Name,vec_ratio,mac_ratio,scalar_ratio,mte2_ratio");
        let row = ["k", "0.7", "0", "0.2", "0.1"];
        let got = PipeColumns::new(&plain).and_then(|c| ratios(&c, row));
        assert_eq!(got, Some([0.0, 0.7, 0.1, 0.2]));
    }

    #[test]
    fn no_metric_columns_and_na_rows_give_none() {
        assert!(PipeColumns::new(&header("Name,Duration(us)")).is_none());
        let cols = PipeColumns::new(&header("Name,aic_mac_ratio,aiv_vec_ratio"));
        let of = |row: [&str; 3]| cols.as_ref().and_then(|c| ratios(c, row));
        assert_eq!(of(["hcom", "N/A", "N/A"]), None);
        // Zeros are values: the row has metrics.
        assert_eq!(of(["k", "0.0", "0"]), Some([0.0; 4]));
        assert_eq!(of(["k", "0.0", "0.25"]), Some([0.0, 0.25, 0.0, 0.0]));
        // Long fields and text.
        assert_eq!(
            of(["k", "0.123456789", "x"]),
            Some([0.123456789, 0.0, 0.0, 0.0])
        );
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
    fn bound_is_the_busiest_pipe() {
        let mut sums = PipeSums::default();
        sums.add(10.0, [0.1, 0.0, 0.8, 0.05]);
        sums.add(30.0, [0.9, 0.0, 0.2, 0.05]);
        let ratios = sums.ratios();
        assert_eq!(ratios.and_then(|r| r.bound()), Some(Pipe::Cube));
        assert_eq!(
            ratios.map(|r| r.memory),
            Some((10.0 * 0.8 + 30.0 * 0.2) / 40.0)
        );
        assert_eq!(PipeSums::default().ratios(), None);
    }
}
