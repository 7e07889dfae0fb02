//! The seven pipes of an AI Core that can bound a kernel, and where their ratios are in
//! `kernel_details.csv` (PipeUtilization): `aic_*`/`aiv_*` columns on chips with the cube /
//! vector split, unprefixed ones on older chips. A pipe's value in a row is the largest of its
//! columns that hold a number.

use npuprof_summary::columns::Header;
use npuprof_summary::pipe::RatioValues;
use serde::Serialize;

/// A pipe of the AI Core.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// The cube unit (matrix multiply, `mac`).
    Cube,
    /// The vector unit.
    Vector,
    /// Scalar code.
    Scalar,
    /// MTE1: L1 to L0 transfers.
    Mte1,
    /// MTE2: global memory into the core.
    Mte2,
    /// MTE3: the core back to global memory.
    Mte3,
    /// Fixpipe: cube results out (L0C to memory).
    Fixpipe,
}

/// How many [`Unit`]s there are.
pub const UNITS: usize = 7;

impl Unit {
    /// Every pipe, in the order of the ratio arrays.
    pub const ALL: [Unit; UNITS] = [
        Unit::Cube,
        Unit::Vector,
        Unit::Scalar,
        Unit::Mte1,
        Unit::Mte2,
        Unit::Mte3,
        Unit::Fixpipe,
    ];

    /// The ratio columns of this pipe.
    pub(crate) fn spellings(self) -> &'static [&'static str] {
        match self {
            Unit::Cube => &["aic_mac_ratio", "mac_ratio"],
            Unit::Vector => &["aiv_vec_ratio", "vec_ratio"],
            Unit::Scalar => &["aic_scalar_ratio", "aiv_scalar_ratio", "scalar_ratio"],
            Unit::Mte1 => &["aic_mte1_ratio", "mte1_ratio"],
            Unit::Mte2 => &["aic_mte2_ratio", "aiv_mte2_ratio", "mte2_ratio"],
            Unit::Mte3 => &["aiv_mte3_ratio", "mte3_ratio"],
            Unit::Fixpipe => &["aic_fixpipe_ratio", "fixpipe_ratio"],
        }
    }

    /// Whether the pipe moves data (memory-bound when it is the busiest).
    pub fn moves_data(self) -> bool {
        matches!(self, Unit::Mte1 | Unit::Mte2 | Unit::Mte3 | Unit::Fixpipe)
    }

    /// The name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Cube => "cube",
            Unit::Vector => "vector",
            Unit::Scalar => "scalar",
            Unit::Mte1 => "mte1",
            Unit::Mte2 => "mte2",
            Unit::Mte3 => "mte3",
            Unit::Fixpipe => "fixpipe",
        }
    }
}

/// The busiest pipe of `ratios` and its ratio; `None` when every ratio is 0.
pub fn busiest(ratios: &[f64; UNITS]) -> Option<(Unit, f64)> {
    Unit::ALL
        .into_iter()
        .zip(ratios.iter().copied())
        .filter(|(_, r)| *r > 0.0)
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// Where the ratio columns of each pipe are in a header: (column, index in [`Unit::ALL`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct UnitColumns(pub(crate) Vec<(usize, usize)>);

impl UnitColumns {
    /// The ratio columns present in `header` (empty without PipeUtilization).
    pub(crate) fn new(header: &Header) -> Self {
        Self(
            Unit::ALL
                .iter()
                .enumerate()
                .flat_map(|(u, unit)| {
                    let found = unit.spellings().iter().filter_map(|s| header.find(&[s]));
                    found.map(move |column| (column, u))
                })
                .collect(),
        )
    }

    /// The row's ratio per pipe from `field(column)` (a field and its first eight bytes, the
    /// values of short fields looked up in `seen`); `None` when no ratio column holds a
    /// number, or every ratio is 0 (rows without metrics: communication, AI CPU, `N/A`).
    pub(crate) fn row<'a>(
        &self,
        seen: &mut RatioValues,
        field: impl Fn(usize) -> Option<(&'a [u8], u64)>,
    ) -> Option<[f64; UNITS]> {
        let mut ratios = [0.0; UNITS];
        let mut any = false;
        for &(column, unit) in &self.0 {
            let value = field(column).map_or(f64::NAN, |(f, word)| seen.value(f, word));
            // A NaN (no number) compares false.
            if value > ratios[unit] {
                ratios[unit] = value;
                any = true;
            }
        }
        any.then_some(ratios)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_pipe_takes_its_largest_column_and_zero_rows_have_no_metrics() {
        let header = Header::new(
            "Name,aic_mac_ratio,aic_mte1_ratio,aic_fixpipe_ratio,aiv_vec_ratio,aiv_mte2_ratio,aic_mte2_ratio,aiv_mte3_ratio"
                .split(',')
                .map(str::as_bytes),
        );
        let cols = UnitColumns::new(&header);
        static ROW: [&str; 8] = ["k", "0.1", "0.2", "0.3", "0.0", "0.9", "0.4", "0.5"];
        let field = |row: &'static [&'static str]| {
            move |i: usize| {
                let f = row[i].as_bytes();
                Some((f, npuprof_scan::decimal::word(f)))
            }
        };
        let seen = &mut RatioValues::default();
        let got = cols.row(seen, field(&ROW));
        assert_eq!(got, Some([0.1, 0.0, 0.0, 0.2, 0.9, 0.5, 0.3]));
        assert_eq!(got.as_ref().and_then(busiest), Some((Unit::Mte2, 0.9)));
        static ZEROS: [&str; 8] = ["k", "0", "0.0", "N/A", "0", "0", "0", "0"];
        assert_eq!(cols.row(seen, field(&ZEROS)), None);
    }
}
