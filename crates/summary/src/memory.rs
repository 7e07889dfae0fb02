//! Device memory of one run (`profile_memory=True`): the allocator's curve and its peak from
//! `memory_record.csv`, the operators holding memory at that peak from `operator_memory.csv`,
//! and each module's reserve from `npu_module_mem.csv`.
//!
//! The files say MB and KB for 2^20 and 2^10 bytes (their values are whole bytes then); the
//! results are in bytes. Each file is read in one streaming pass with bounded memory: the
//! curve keeps at most [`CURVE_POINTS`]×2 points (neighbours merged, each keeping the largest
//! value of its span, so the peak stays drawn), the holders [`HOLDERS`], the modules
//! [`MAX_MODULES`].

use std::path::Path;

use npuprof_scan::csv_rows::Record;
use serde::Serialize;

use crate::columns::{self, Header, SkippedRow};
use crate::error::SummaryError;

/// The allocator's records over time, in [`crate::run::OUTPUT_DIR`].
pub const MEMORY_RECORD: &str = "memory_record.csv";
/// The memory each operator allocated and released, in [`crate::run::OUTPUT_DIR`].
pub const OPERATOR_MEMORY: &str = "operator_memory.csv";
/// Each module's reserve over time, in [`crate::run::OUTPUT_DIR`].
pub const MODULE_MEMORY: &str = "npu_module_mem.csv";

/// Points kept of the curve (between this and twice this).
pub const CURVE_POINTS: usize = 1000;
/// Operators listed as holding memory at the peak, largest first.
pub const HOLDERS: usize = 20;
/// Modules of `npu_module_mem.csv` kept (the rest as `(other)`).
pub const MAX_MODULES: usize = 1000;

/// The allocator components whose curve is drawn, the first one recorded: PyTorch's and the
/// graph engine's together, else either.
pub const CURVE_COMPONENTS: [&str; 3] = ["PTA+GE", "PTA", "GE"];
/// The component of `memory_record.csv` that is the whole process on the device.
pub const APP: &str = "APP";

/// A run's device memory; what could not be read is in `missing`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Memory {
    /// The component the curve and peak are of (`PTA+GE`, `PTA` or `GE`), when recorded.
    pub component: Option<String>,
    /// Records of that component.
    pub records: u64,
    /// The largest `Total Allocated` of the component, with the reserve and the time then.
    pub peak: Option<Peak>,
    /// The largest `Total Reserved` of the component.
    pub reserved_max_bytes: Option<u64>,
    /// The largest `Total Reserved` of the `APP` component: the process's memory on the device.
    pub app_reserved_max_bytes: Option<u64>,
    /// Reserved but not allocated at the peak (the allocator's cache): what more the peak
    /// could grow to (e.g. a KV cache) without the allocator asking the device for more.
    pub headroom_bytes: Option<u64>,
    /// Operators whose allocation was alive at the peak, largest first (at most [`HOLDERS`]).
    pub holders: Vec<Holder>,
    /// How many operator allocations were alive at the peak.
    pub holders_alive: u64,
    /// Their summed size (the rest of the peak was allocated before the recording, or by no
    /// recorded operator).
    pub held_bytes: u64,
    /// Modules of `npu_module_mem.csv` with a reserve, largest reserve first.
    pub modules: Vec<Module>,
    /// The files not there, or that could not be read and why.
    pub missing: Vec<String>,
    /// The curve (allocated and reserved over time), at most 2 × [`CURVE_POINTS`] points.
    #[serde(skip)]
    pub curve: Vec<Point>,
}

/// The peak of allocated memory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Peak {
    /// When (`Timestamp(us)`).
    pub at_us: f64,
    /// `Total Allocated` then.
    pub allocated_bytes: u64,
    /// `Total Reserved` then.
    pub reserved_bytes: Option<u64>,
}

/// An operator's allocation alive at the peak.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Holder {
    /// `Name` (`aten::mm`, `cann::…`).
    pub name: String,
    /// `Size(KB)`, in bytes.
    pub size_bytes: u64,
    /// `Allocation Time(us)`.
    pub allocated_at_us: f64,
    /// `Release Time(us)`; `None`: not released while recorded.
    pub released_at_us: Option<f64>,
}

/// One module's largest reserve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Module {
    /// `Component` (`HCCL`, `RUNTIME`, …).
    pub component: String,
    /// The largest `Total Reserved`.
    pub reserved_max_bytes: u64,
}

/// A point of the curve: the largest values over the records it stands for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// The first record's time.
    pub at_us: f64,
    /// The largest `Total Allocated` (bytes).
    pub allocated_bytes: u64,
    /// The largest `Total Reserved` (bytes).
    pub reserved_bytes: u64,
}

/// `mb` (2^20 bytes) in bytes.
fn mb_bytes(mb: f64) -> u64 {
    (mb * 1_048_576.0).round().max(0.0) as u64
}

/// Reads the memory files of the text export directory `output`; a missing or unreadable file
/// is said in [`Memory::missing`] (never an error: memory is recorded only with
/// `profile_memory=True`). Rows with the wrong number of fields go to `skipped`. `None` when
/// none of the three files is there.
pub fn read_memory(output: &Path, skipped: &mut Vec<SkippedRow>) -> Option<Memory> {
    let files = [MEMORY_RECORD, OPERATOR_MEMORY, MODULE_MEMORY];
    if !files.iter().any(|f| output.join(f).is_file()) {
        return None;
    }
    let mut memory = Memory::default();
    let unread = |memory: &mut Memory, file: &str, why: String| {
        memory.missing.push(format!("{file}: {why}"));
    };
    let record = output.join(MEMORY_RECORD);
    if !record.is_file() {
        unread(
            &mut memory,
            MEMORY_RECORD,
            "not there: no curve and no peak".to_owned(),
        );
    } else if let Err(e) = read_records(&record, &mut memory, skipped) {
        memory.missing.push(format!("{e}; not shown"));
    }
    let operators = output.join(OPERATOR_MEMORY);
    let peak_at = memory.peak.as_ref().map(|p| p.at_us);
    if !operators.is_file() {
        unread(
            &mut memory,
            OPERATOR_MEMORY,
            "not there: who holds the peak unknown".to_owned(),
        );
    } else if let Some(at) = peak_at
        && let Err(e) = read_holders(&operators, at, &mut memory, skipped)
    {
        memory.missing.push(format!("{e}; not shown"));
    }
    let modules = output.join(MODULE_MEMORY);
    if !modules.is_file() {
        unread(
            &mut memory,
            MODULE_MEMORY,
            "not there: module reserves unknown".to_owned(),
        );
    } else if let Err(e) = read_modules(&modules, &mut memory, skipped) {
        memory.missing.push(format!("{e}; not shown"));
    }
    Some(memory)
}

/// Calls `each(header, record)` for every data row of the CSV `path` with the header's number
/// of fields (the others recorded in `skipped`).
fn each_row(
    path: &Path,
    skipped: &mut Vec<SkippedRow>,
    mut each: impl FnMut(&Header, &Record<'_>) -> Result<(), SummaryError>,
) -> Result<(), SummaryError> {
    let mut rows = columns::open(path, 0)?;
    let header = columns::read_header(&mut rows, path)?;
    while let Some(record) = columns::next(&mut rows, path)? {
        if record.len() == 1 && columns::text(record.get(0).unwrap_or_default()).is_empty() {
            continue; // a blank line
        }
        if header.keep(path, &record, skipped)? {
            each(&header, &record)?;
        }
    }
    Ok(())
}

/// Field `column` of `record` as a number (`None` when empty or `N/A`), an error naming the
/// line otherwise.
fn number_at(
    path: &Path,
    header: &Header,
    record: &Record<'_>,
    column: Option<usize>,
) -> Result<Option<f64>, SummaryError> {
    let Some(column) = column else {
        return Ok(None);
    };
    let field = record.get(column).unwrap_or_default();
    columns::number(field)
        .map(|n| n.filter(|n| n.is_finite()))
        .map_err(|()| columns::bad_number(path, record, header, column, field))
}

/// The curve of each allocator component, bounded.
#[derive(Default)]
struct Curve {
    points: Vec<Point>,
    /// Records per point.
    stride: u64,
    /// Records in the last point.
    filled: u64,
}

impl Curve {
    fn add(&mut self, point: Point) {
        let stride = self.stride.max(1);
        match self.points.last_mut() {
            Some(last) if self.filled < stride => {
                last.allocated_bytes = last.allocated_bytes.max(point.allocated_bytes);
                last.reserved_bytes = last.reserved_bytes.max(point.reserved_bytes);
                self.filled += 1;
            }
            _ => {
                self.points.push(point);
                self.filled = 1;
            }
        }
        if self.points.len() >= 2 * CURVE_POINTS && self.filled >= stride {
            self.points = self
                .points
                .chunks(2)
                .map(|pair| Point {
                    at_us: pair[0].at_us,
                    allocated_bytes: pair.iter().map(|p| p.allocated_bytes).max().unwrap_or(0),
                    reserved_bytes: pair.iter().map(|p| p.reserved_bytes).max().unwrap_or(0),
                })
                .collect();
            self.stride = stride * 2;
        }
    }
}

/// One allocator component's curve and extremes.
#[derive(Default)]
struct Component {
    curve: Curve,
    records: u64,
    peak: Option<Peak>,
    reserved_max: Option<u64>,
}

fn read_records(
    path: &Path,
    memory: &mut Memory,
    skipped: &mut Vec<SkippedRow>,
) -> Result<(), SummaryError> {
    let mut components: [Component; 3] = Default::default();
    let mut app_max: Option<u64> = None;
    let mut cols = None;
    each_row(path, skipped, |header, record| {
        let (component, time, allocated, reserved) = *cols.get_or_insert_with(|| {
            (
                header.find(&["Component"]),
                header.find(&["Timestamp(us)"]),
                header.find(&["Total Allocated(MB)"]),
                header.find(&["Total Reserved(MB)"]),
            )
        });
        let name = component.map_or("", |i| columns::text(record.get(i).unwrap_or_default()));
        let reserved = number_at(path, header, record, reserved)?.map(mb_bytes);
        if name == APP {
            app_max = app_max.max(reserved);
            return Ok(());
        }
        let Some(slot) = CURVE_COMPONENTS.iter().position(|c| *c == name) else {
            return Ok(());
        };
        let (Some(at), Some(allocated)) = (
            number_at(path, header, record, time)?,
            number_at(path, header, record, allocated)?.map(mb_bytes),
        ) else {
            return Ok(());
        };
        let c = &mut components[slot];
        c.records += 1;
        c.reserved_max = c.reserved_max.max(reserved);
        c.curve.add(Point {
            at_us: at,
            allocated_bytes: allocated,
            reserved_bytes: reserved.unwrap_or(0),
        });
        if c.peak
            .as_ref()
            .is_none_or(|p| allocated > p.allocated_bytes)
        {
            c.peak = Some(Peak {
                at_us: at,
                allocated_bytes: allocated,
                reserved_bytes: reserved,
            });
        }
        Ok(())
    })?;
    memory.app_reserved_max_bytes = app_max;
    if let Some((name, c)) = CURVE_COMPONENTS
        .iter()
        .zip(components)
        .find(|(_, c)| c.records > 0)
    {
        memory.component = Some((*name).to_owned());
        memory.records = c.records;
        memory.reserved_max_bytes = c.reserved_max;
        memory.headroom_bytes = c
            .peak
            .as_ref()
            .and_then(|p| Some(p.reserved_bytes?.saturating_sub(p.allocated_bytes)));
        memory.peak = c.peak;
        memory.curve = c.curve.points;
    }
    Ok(())
}

fn read_holders(
    path: &Path,
    at: f64,
    memory: &mut Memory,
    skipped: &mut Vec<SkippedRow>,
) -> Result<(), SummaryError> {
    let mut holders: Vec<Holder> = Vec::new();
    let mut cols = None;
    let (mut alive, mut held) = (0u64, 0u64);
    each_row(path, skipped, |header, record| {
        let (name, size, allocated, released) = *cols.get_or_insert_with(|| {
            (
                header.find(&["Name"]),
                header.find(&["Size(KB)"]),
                header.find(&["Allocation Time(us)"]),
                header.find(&["Release Time(us)"]),
            )
        });
        let (Some(size), Some(allocated_at)) = (
            number_at(path, header, record, size)?,
            number_at(path, header, record, allocated)?,
        ) else {
            return Ok(());
        };
        let released_at = number_at(path, header, record, released)?;
        let holds = size > 0.0 && allocated_at <= at && released_at.is_none_or(|r| r > at);
        if !holds {
            return Ok(());
        }
        let size_bytes = (size * 1024.0).round() as u64;
        alive += 1;
        held += size_bytes;
        holders.push(Holder {
            name: name
                .map_or("", |i| columns::text(record.get(i).unwrap_or_default()))
                .to_owned(),
            size_bytes,
            allocated_at_us: allocated_at,
            released_at_us: released_at,
        });
        if holders.len() >= 2 * HOLDERS {
            largest_first(&mut holders);
        }
        Ok(())
    })?;
    largest_first(&mut holders);
    memory.holders = holders;
    memory.holders_alive = alive;
    memory.held_bytes = held;
    Ok(())
}

/// The [`HOLDERS`] largest, largest first (then the earliest allocated, then by name).
fn largest_first(holders: &mut Vec<Holder>) {
    holders.sort_by(|a, b| {
        b.size_bytes
            .cmp(&a.size_bytes)
            .then(a.allocated_at_us.total_cmp(&b.allocated_at_us))
            .then(a.name.cmp(&b.name))
    });
    holders.truncate(HOLDERS);
}

fn read_modules(
    path: &Path,
    memory: &mut Memory,
    skipped: &mut Vec<SkippedRow>,
) -> Result<(), SummaryError> {
    let mut modules: Vec<Module> = Vec::new();
    let mut cols = None;
    each_row(path, skipped, |header, record| {
        let (component, reserved) = *cols.get_or_insert_with(|| {
            (
                header.find(&["Component"]),
                header.find(&["Total Reserved(MB)"]),
            )
        });
        let Some(reserved) = number_at(path, header, record, reserved)?.map(mb_bytes) else {
            return Ok(());
        };
        let name = component.map_or("", |i| columns::text(record.get(i).unwrap_or_default()));
        let i = match modules.iter().position(|m| m.component == name) {
            Some(i) => i,
            None if modules.len() < MAX_MODULES => {
                modules.push(Module {
                    component: name.to_owned(),
                    reserved_max_bytes: 0,
                });
                modules.len() - 1
            }
            None => match modules
                .iter()
                .position(|m| m.component == crate::kernels::OTHER)
            {
                Some(i) => i,
                None => {
                    modules.push(Module {
                        component: crate::kernels::OTHER.to_owned(),
                        reserved_max_bytes: 0,
                    });
                    modules.len() - 1
                }
            },
        };
        let m = &mut modules[i];
        m.reserved_max_bytes = m.reserved_max_bytes.max(reserved);
        Ok(())
    })?;
    modules.retain(|m| m.reserved_max_bytes > 0);
    modules.sort_by(|a, b| {
        b.reserved_max_bytes
            .cmp(&a.reserved_max_bytes)
            .then(a.component.cmp(&b.component))
    });
    memory.modules = modules;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_curve_stays_bounded_and_keeps_the_peak() {
        let mut curve = Curve::default();
        for i in 0..100_000u64 {
            let allocated = if i == 77_777 { 1 << 40 } else { i };
            curve.add(Point {
                at_us: i as f64,
                allocated_bytes: allocated,
                reserved_bytes: 5,
            });
        }
        assert!(
            curve.points.len() <= 2 * CURVE_POINTS,
            "{}",
            curve.points.len()
        );
        assert!(curve.points.len() >= CURVE_POINTS / 2);
        let top = curve.points.iter().map(|p| p.allocated_bytes).max();
        assert_eq!(top, Some(1 << 40));
        assert_eq!(curve.points[0].at_us, 0.0);
    }

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(mb_bytes(935.9951171875), 981_462_016);
    }
}
