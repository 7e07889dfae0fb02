//! A large `kernel_details.csv` in segments, a few per core at a time (Unix: the segments read
//! one open file at their offsets). See [`super::scan_kernel_file_in_segments`].

use std::fs::File;
use std::ops::ControlFlow;

use crate::file_ranges::{ReadAt, in_file_order, line_starts};

use super::{
    Bounded, KernelScan, MAX_COLUMNS, MAX_DISTINCT_STEPS, RowScan, header_names, set_empty_columns,
};

/// What a segment found: its counts and steps, and the columns it saw a value in.
struct Part {
    scan: KernelScan,
    non_empty: Vec<bool>,
}

impl Part {
    /// Adds the part that follows; `false` when the steps outgrow what a single pass keeps.
    fn absorb(&mut self, next: Part) -> bool {
        let (into, more) = (&mut self.scan, next.scan);
        into.rows += more.rows;
        into.ragged_rows += more.ragged_rows;
        into.empty_step_id_rows += more.empty_step_id_rows;
        into.bad_step_id_rows += more.bad_step_id_rows;
        into.invalid_durations += more.invalid_durations;
        if into.first_invalid_duration.is_none() {
            // A later segment counts its lines from its own start: the line is not known (0).
            into.first_invalid_duration = more.first_invalid_duration.map(|(_, text)| (0, text));
        }
        if let Some((low, high)) = more.start_range {
            super::widen(&mut into.start_range, low, high);
        }
        for (sum, part) in [
            (&mut into.communication, more.communication),
            (&mut into.computing, more.computing),
        ] {
            sum.kernels += part.kernels;
            sum.duration_us += part.duration_us;
        }
        for (step, kernels) in more.steps {
            let sum = into.steps.entry(step).or_default();
            sum.kernels += kernels.kernels;
            sum.duration_us += kernels.duration_us;
        }
        for (seen, also) in self.non_empty.iter_mut().zip(next.non_empty) {
            *seen |= also;
        }
        into.steps.len() <= MAX_DISTINCT_STEPS
    }
}

/// The scan of `file` (`len` bytes) in segments of about `segment` bytes; `None` when it must
/// be read in one pass (see [`super::scan_kernel_file_in_segments`]).
pub(super) fn scan(
    file: &File,
    len: u64,
    segment: u64,
    on_bytes: &(dyn Fn(u64) + Sync),
) -> std::io::Result<Option<KernelScan>> {
    let starts = line_starts(file, len, segment)?;
    if starts.len() < 2 {
        return Ok(None);
    }
    let mut header_rows = Bounded::new(ReadAt::new(file, 0, 0, |_| {}));
    let header = match header_rows.next(usize::MAX) {
        Ok(Some(record)) if record.len() <= MAX_COLUMNS => header_names(record.iter()),
        Ok(_) | Err(Ok(_)) => return Ok(None),
        Err(Err(e)) => return Err(e),
    };
    let mut whole: Option<Part> = None;
    let taken = in_file_order(
        &starts,
        len,
        |start, end| segment_scan(file, &header, start, end, len, on_bytes),
        |_, end, part| {
            let part = match part {
                Ok(Some(part)) => part,
                Ok(None) => return ControlFlow::Break(Ok(None)),
                Err(e) => return ControlFlow::Break(Err(e)),
            };
            let so_far = match whole.take() {
                None => part,
                Some(mut before) => {
                    if !before.absorb(part) {
                        return ControlFlow::Break(Ok(None));
                    }
                    before
                }
            };
            if end == len {
                let Part {
                    mut scan,
                    non_empty,
                } = so_far;
                scan.header = header.clone();
                set_empty_columns(&mut scan, &non_empty);
                return ControlFlow::Break(Ok(Some(scan)));
            }
            whole = Some(so_far);
            ControlFlow::Continue(())
        },
    );
    // The last segment ends at `len`, so `take` breaks on it at the latest.
    taken.unwrap_or(Ok(None))
}

/// The rows of `file` from `start` (just past a `\n`, or 0: past the header) up to the record
/// that starts at `end` (or to the end of the file at `len`); `None` when no record starts
/// there, or when a single pass would report what the segment found by a line or an order.
fn segment_scan(
    file: &File,
    header: &[String],
    start: u64,
    end: u64,
    len: u64,
    on_bytes: &(dyn Fn(u64) + Sync),
) -> std::io::Result<Option<Part>> {
    let mut rows = Bounded::new(ReadAt::new(file, start, end, on_bytes));
    let mut scan = KernelScan::default();
    let mut state = RowScan::new(header);
    if start == 0 {
        match rows.next(usize::MAX) {
            Ok(Some(_)) => {}
            Ok(None) | Err(Ok(_)) => return Ok(None),
            Err(Err(e)) => return Err(e),
        }
    }
    let stop = (end < len).then(|| end - start);
    loop {
        match rows.next(state.want()) {
            Ok(Some(record)) => {
                if let Some(stop) = stop {
                    // Reading from the `\n` before `stop` (after a `\r`) skips it as a blank
                    // line.
                    if record.byte() + 1 >= stop {
                        if record.byte() > stop {
                            return Ok(None);
                        }
                        break;
                    }
                }
                state.add(&mut scan, &record);
            }
            Ok(None) if stop.is_none() => break,
            Ok(None) | Err(Ok(_)) => return Ok(None),
            Err(Err(e)) => return Err(e),
        }
    }
    state.end_run(&mut scan);
    // A later segment counts its lines from its start; steps past the limit depend on order.
    if (start > 0 && scan.ragged_rows > 0) || scan.steps_capped {
        return Ok(None);
    }
    Ok(Some(Part {
        scan,
        non_empty: state.non_empty,
    }))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    /// A file of `rows` rows of three columns, with CRLF.
    fn file_of(rows: usize) -> (File, u64) {
        let mut doc = String::from("Step Id,Name,Duration(us)\r\n");
        for i in 0..rows {
            doc.push_str(&format!("{},k{},1.25\r\n", i / 50, i % 7));
        }
        let mut file = tempfile::tempfile().unwrap_or_else(|e| panic!("{e}"));
        file.write_all(doc.as_bytes())
            .unwrap_or_else(|e| panic!("{e}"));
        (file, doc.len() as u64)
    }

    #[test]
    fn a_regular_file_is_read_in_segments() {
        let (file, len) = file_of(2000);
        for segment in [64, 1000, 7000] {
            let scan = scan(&file, len, segment, &|_| {}).unwrap_or_else(|e| panic!("{e}"));
            let rows = scan.map(|s| (s.rows, s.steps.len(), s.header.len()));
            assert_eq!(rows, Some((2000, 40, 3)), "segments of {segment}");
        }
    }
}
