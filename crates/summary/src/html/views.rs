//! The views of one run beyond its bars: the one-step timeline strip, the memory curve with its
//! peak and holders, the kernels by name and input shapes, and per phase the communication
//! matrix as a heat map. Each says what is missing instead of failing.
//!
//! Test hooks: the strip is `<figure class="timeline" data-step>` whose `<rect>`s carry
//! `data-lane` (or `data-mark`), `data-start` and `data-end` (µs from the step's first task)
//! and `data-busy` (the share of it the lane was busy);
//! the curve is `<figure class="memory-curve">` with `data-peak` (bytes); each heat map is a
//! `<table class="matrix">` whose cells carry `data-src`, `data-dst` and `data-bandwidth`.

use std::fmt::Write as _;

use super::chart::{Bar, Unit, chart};
use super::escape;
use crate::matrix::{Link, MatrixOp, rank_order};
use crate::memory::{MEMORY_RECORD, Memory};
use crate::run::RunSummary;
use crate::timeline::{Lane, Mark, SLOTS, Timeline};
use crate::units::{bytes, duration, fit, percent};

/// Rows of the shapes table and holders table.
const TABLE_ROWS: usize = 10;
/// Characters of an input-shapes text shown (the whole text on hover).
const SHAPE_CHARS: usize = 48;
/// Ranks drawn per side of a heat map (the rest said).
const MATRIX_RANKS: usize = 64;
/// The SVG width of the strip and curve.
const WIDTH: f64 = 1000.0;

/// The strip of the run's representative step, with the `marks` of this run that fall in it.
pub(super) fn timeline_section(out: &mut String, run: &RunSummary, marks: &[Mark]) {
    out.push_str("<h3>One step on the device</h3>");
    let Some(t) = &run.timeline else {
        let why = run.timeline_missing.as_deref().unwrap_or("not recorded");
        let _ = write!(
            out,
            "<p class=\"note\" data-missing=\"timeline\">no timeline: {}</p>",
            escape(why)
        );
        return;
    };
    let marks: Vec<&Mark> = marks
        .iter()
        .filter(|m| m.dir == run.dir)
        .filter(|m| m.start_us + m.length_us > t.start_us && m.start_us < t.start_us + t.window_us)
        .collect();
    let lane_height = 12.0;
    let height = lane_height * Lane::ALL.len() as f64;
    let scale = if t.window_us > 0.0 {
        WIDTH / t.window_us
    } else {
        0.0
    };
    let _ = write!(
        out,
        "<figure class=\"timeline\" data-step=\"{}\" data-window=\"{}\"><figcaption>step {} ({}), \
         first task start to last task end: {}; computing {}, communication {} ({} overlapped), \
         free {}</figcaption>",
        t.step,
        t.window_us,
        t.step,
        escape(&t.why),
        duration(t.window_us),
        duration(t.computing_us),
        duration(t.communication_us),
        duration(t.overlapped_us),
        duration(t.free_us),
    );
    out.push_str("<div class=\"strip\"><div class=\"lanes\">");
    for lane in Lane::ALL {
        let _ = write!(out, "<span>{}</span>", lane.as_str());
    }
    let _ = write!(
        out,
        "</div><svg class=\"strip\" viewBox=\"0 0 {WIDTH} {height}\" preserveAspectRatio=\"none\" \
         role=\"img\" aria-label=\"step {} timeline\">",
        t.step
    );
    for (row, (lane, spans)) in t.lanes.iter().enumerate() {
        let y = row as f64 * lane_height;
        for d in spans {
            let _ = write!(
                out,
                "<rect class=\"{lane}\" data-lane=\"{lane}\" data-start=\"{a}\" data-end=\"{b}\" data-busy=\"{busy}\" \
                 x=\"{x:.2}\" y=\"{y}\" width=\"{w:.2}\" height=\"{h}\" fill-opacity=\"{busy:.3}\">\
                 <title>{lane}: +{at} for {long}{share}</title></rect>",
                lane = lane.as_str(),
                a = d.start_us,
                b = d.end_us,
                busy = d.busy,
                x = d.start_us * scale,
                w = ((d.end_us - d.start_us) * scale).max(0.5),
                h = lane_height - 2.0,
                at = duration(d.start_us),
                long = duration(d.end_us - d.start_us),
                share = if d.busy < 1.0 {
                    format!(", busy {}", percent(d.busy))
                } else {
                    String::new()
                },
            );
        }
    }
    for mark in &marks {
        let a = (mark.start_us - t.start_us).max(0.0);
        let b = (mark.start_us + mark.length_us - t.start_us).min(t.window_us);
        let _ = write!(
            out,
            "<rect class=\"mark\" data-mark=\"{}\" data-start=\"{a}\" data-end=\"{b}\" x=\"{:.2}\" y=\"0\" \
             width=\"{:.2}\" height=\"{height}\"><title>{}</title></rect>",
            escape(&mark.label),
            a * scale,
            ((b - a) * scale).max(1.0),
            escape(&mark.label),
        );
    }
    out.push_str("</svg></div>");
    let _ = write!(
        out,
        "<p class=\"axis\"><span>+0</span><span>+{}</span></p>",
        duration(t.window_us)
    );
    strip_notes(out, t, marks.len());
    out.push_str("</figure>\n");
}

fn strip_notes(out: &mut String, t: &Timeline, marks: usize) {
    let mut notes = Vec::new();
    if t.drawn < t.intervals {
        notes.push(format!(
            "{} intervals drawn as {}: a lane of more than {SLOTS} is drawn in {SLOTS} slots of the \
             step, each as opaque as the share of it the lane was busy",
            t.intervals, t.drawn
        ));
    }
    if t.dropped > 0 {
        notes.push(format!(
            "{} tasks of the step past the first {} not drawn",
            t.dropped, t.tasks
        ));
    }
    if marks > 0 {
        notes.push(format!(
            "{marks} marked span{} (outlined): the gaps advise names in this step",
            if marks == 1 { "" } else { "s" }
        ));
    }
    for note in notes {
        let _ = write!(out, "<p class=\"note\">{}</p>", escape(&note));
    }
}

/// Kernels by name and input shapes: a chart of the longest and a table.
pub(super) fn shapes_section(out: &mut String, run: &RunSummary) {
    if run.by_shape.is_empty() {
        return;
    }
    out.push_str("<h3>Kernels by name and input shapes</h3>");
    let bars: Vec<Bar> = run
        .by_shape
        .iter()
        .take(TABLE_ROWS)
        .map(|g| {
            let label = if g.shapes.is_empty() {
                g.name.clone()
            } else {
                format!("{} [{}]", g.name, g.shapes)
            };
            let mut bar = Bar::single(
                &fit(&label, 40),
                "kernel",
                g.total_us,
                format!("{} · ×{}", duration(g.total_us), g.count),
            );
            bar.title = label;
            bar
        })
        .collect();
    chart(
        out,
        "shapes",
        "total device time by kernel name and input shapes",
        &bars,
        Unit::Micros,
        None,
        false,
    );
    out.push_str(
        "<div class=\"table-wrap\"><table class=\"shapes\"><thead><tr><th>name</th><th class=\"t\">input shapes</th>\
         <th class=\"t\">type</th><th>count</th><th>total</th><th>mean</th><th>share</th></tr></thead><tbody>",
    );
    for g in run.by_shape.iter().take(TABLE_ROWS) {
        let shapes = if g.shapes.is_empty() {
            "–"
        } else {
            &g.shapes
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"t\" title=\"{}\">{}</td><td class=\"t\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&g.name),
            escape(shapes),
            escape(&fit(shapes, SHAPE_CHARS)),
            escape(&g.kind),
            g.count,
            duration(g.total_us),
            duration(g.mean_us),
            percent(g.share),
        );
    }
    out.push_str("</tbody></table></div>");
}

/// The run's memory: facts, the curve with its peak, the holders, the modules.
pub(super) fn memory_section(out: &mut String, run: &RunSummary) {
    out.push_str("<h3>Device memory</h3>");
    let Some(memory) = &run.memory else {
        out.push_str(
            "<p class=\"note\" data-missing=\"memory\">no memory files (memory_record.csv, \
             operator_memory.csv, npu_module_mem.csv): record with profile_memory=True to see \
             the curve, the peak and who holds it</p>",
        );
        return;
    };
    let mut items = Vec::new();
    if let Some(peak) = &memory.peak {
        items.push(("peak allocated", bytes(peak.allocated_bytes)));
        if let Some(reserved) = peak.reserved_bytes {
            items.push(("reserved at the peak", bytes(reserved)));
        }
    }
    if let Some(headroom) = memory.headroom_bytes {
        items.push(("headroom (reserved − allocated)", bytes(headroom)));
    }
    if let Some(app) = memory.app_reserved_max_bytes {
        items.push(("process on the device (APP, max)", bytes(app)));
    }
    if memory.holders_alive > 0 {
        items.push((
            "held by operators at the peak",
            format!(
                "{} in {} allocations",
                bytes(memory.held_bytes),
                memory.holders_alive
            ),
        ));
    }
    super::facts(out, &items);
    curve(out, memory);
    holders(out, memory);
    if !memory.modules.is_empty() {
        let bars: Vec<Bar> = memory
            .modules
            .iter()
            .take(TABLE_ROWS)
            .map(|m| {
                Bar::single(
                    &m.component,
                    "memory",
                    m.reserved_max_bytes as f64,
                    bytes(m.reserved_max_bytes),
                )
            })
            .collect();
        chart(
            out,
            "modules",
            "largest reserve per module (npu_module_mem.csv)",
            &bars,
            Unit::Bytes,
            None,
            false,
        );
    }
    if memory.peak.is_some() {
        out.push_str(
            "<p class=\"note\">In inference, a KV cache allocated up front counts as allocated: \
             the headroom is what the allocator holds beyond the peak. The device's total \
             memory is not in these files.</p>",
        );
    }
    for missing in &memory.missing {
        let _ = write!(
            out,
            "<p class=\"note\" data-missing=\"memory\">{}</p>",
            escape(missing)
        );
    }
}

fn curve(out: &mut String, memory: &Memory) {
    let (Some(peak), Some(first), Some(last)) =
        (&memory.peak, memory.curve.first(), memory.curve.last())
    else {
        return;
    };
    let top = memory
        .curve
        .iter()
        .map(|p| p.reserved_bytes.max(p.allocated_bytes))
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let span = (last.at_us - first.at_us).max(1.0);
    let height = 120.0;
    let x = |at: f64| (at - first.at_us) / span * WIDTH;
    let y = |b: u64| height - b as f64 / top * (height - 4.0);
    let line = |value: fn(&crate::memory::Point) -> u64| -> String {
        let mut points = String::new();
        for p in &memory.curve {
            let _ = write!(points, "{:.1},{:.1} ", x(p.at_us), y(value(p)));
        }
        points
    };
    let component = memory.component.as_deref().unwrap_or("");
    let _ = write!(
        out,
        "<figure class=\"memory-curve\" data-peak=\"{peak_bytes}\" data-points=\"{points}\"><figcaption>\
         {component} allocated (solid) and reserved (dashed) over {span} ({MEMORY_RECORD}); the peak, \
         {peak_text} at +{peak_at}, marked</figcaption><svg class=\"curve\" viewBox=\"0 0 {WIDTH} {height}\" \
         preserveAspectRatio=\"none\" role=\"img\" aria-label=\"memory over time\">\
         <polyline class=\"reserved\" points=\"{reserved}\"/><polyline class=\"allocated\" points=\"{allocated}\"/>\
         <line class=\"peak\" x1=\"{px:.1}\" x2=\"{px:.1}\" y1=\"0\" y2=\"{height}\"><title>peak: {peak_text}</title></line></svg>",
        peak_bytes = peak.allocated_bytes,
        points = memory.curve.len(),
        component = escape(component),
        span = duration(span),
        peak_text = bytes(peak.allocated_bytes),
        peak_at = duration(peak.at_us - first.at_us),
        reserved = line(|p| p.reserved_bytes),
        allocated = line(|p| p.allocated_bytes),
        px = x(peak.at_us),
    );
    let _ = write!(
        out,
        "<p class=\"axis\"><span>0 · +0</span><span>{} · +{}</span></p></figure>",
        bytes(top as u64),
        duration(span)
    );
}

fn holders(out: &mut String, memory: &Memory) {
    if memory.holders.is_empty() {
        return;
    }
    out.push_str(
        "<div class=\"table-wrap\"><table class=\"holders\"><caption class=\"note\">who holds the \
         peak: operator allocations alive then, largest first</caption><thead><tr><th>operator</th>\
         <th>size</th><th>allocated</th><th>released</th></tr></thead><tbody>",
    );
    let peak_at = memory.peak.as_ref().map_or(0.0, |p| p.at_us);
    for h in memory.holders.iter().take(TABLE_ROWS) {
        let released = h.released_at_us.map_or_else(
            || "not while recorded".to_owned(),
            |r| format!("+{} after", duration(r - peak_at)),
        );
        let _ = write!(
            out,
            "<tr data-bytes=\"{}\"><td>{}</td><td>{}</td><td>{} before</td><td>{}</td></tr>",
            h.size_bytes,
            escape(&h.name),
            bytes(h.size_bytes),
            duration(peak_at - h.allocated_at_us),
            escape(&released),
        );
    }
    out.push_str("</tbody></table></div>");
}

/// Per phase, each operator's communication matrix over the phase's runs, as a heat map of
/// bandwidth (the links of a rank to itself are `LOCAL` copies, outside the colour scale).
pub(super) fn matrix_section(out: &mut String, phase: Option<&str>, runs: &[&RunSummary]) {
    let mut ops: Vec<MatrixOp> = Vec::new();
    for matrix in runs.iter().filter_map(|r| r.matrix.as_ref()) {
        for op in &matrix.ops {
            match ops
                .iter_mut()
                .find(|o| o.op == op.op && o.group == op.group)
            {
                Some(into) => into.links.extend(op.links.iter().cloned()),
                None => ops.push(op.clone()),
            }
        }
    }
    let name = phase.unwrap_or("run");
    let _ = write!(
        out,
        "<section class=\"matrix\" data-phase=\"{0}\"><h2>{0}: communication matrix</h2>",
        escape(name)
    );
    if ops.is_empty() {
        out.push_str(
            "<p class=\"note\" data-missing=\"matrix\">no communication_matrix.json in this phase's \
             runs (it is written for multi-card runs at Level1 or Level2)</p></section>\n",
        );
        return;
    }
    out.push_str(
        "<p class=\"note\">Bandwidth per link (GB/s) of each operator type's total over the \
         recorded steps, from each rank's communication_matrix.json; darker is faster; a rank to \
         itself (grey) is a local copy, left out of the scale.</p>",
    );
    for op in &ops {
        heat_map(out, op);
    }
    let dropped: u64 = runs
        .iter()
        .filter_map(|r| r.matrix.as_ref())
        .map(|m| m.dropped_links)
        .sum();
    if dropped > 0 {
        let _ = write!(
            out,
            "<p class=\"note\">{dropped} links past the first {} of a run not read</p>",
            crate::matrix::MAX_LINKS
        );
    }
    out.push_str("</section>\n");
}

fn heat_map(out: &mut String, op: &MatrixOp) {
    let mut sources: Vec<&str> = op.links.iter().map(|l| l.src.as_str()).collect();
    let mut targets: Vec<&str> = op.links.iter().map(|l| l.dst.as_str()).collect();
    for side in [&mut sources, &mut targets] {
        side.sort_by(|a, b| rank_order(a, b));
        side.dedup();
    }
    let cut = sources.len() > MATRIX_RANKS || targets.len() > MATRIX_RANKS;
    sources.truncate(MATRIX_RANKS);
    targets.truncate(MATRIX_RANKS);
    let max = op
        .links
        .iter()
        .filter(|l| l.src != l.dst)
        .map(|l| l.bandwidth_gbps)
        .fold(0.0, f64::max);
    let _ = write!(
        out,
        "<div class=\"table-wrap\"><table class=\"matrix\" data-op=\"{0}\" data-group=\"{1}\"><caption>{0} \
         (group {1})</caption><thead><tr><th>src \\ dst</th>",
        escape(&op.op),
        escape(&op.group)
    );
    for dst in &targets {
        let _ = write!(out, "<th>{}</th>", escape(dst));
    }
    out.push_str("</tr></thead><tbody>");
    for src in &sources {
        let _ = write!(out, "<tr><th>{}</th>", escape(src));
        for dst in &targets {
            let link = op.links.iter().find(|l| l.src == *src && l.dst == *dst);
            cell(out, link, max);
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
    if cut {
        let _ = write!(
            out,
            "<p class=\"note\">the first {MATRIX_RANKS} ranks of each side drawn</p>"
        );
    }
}

fn cell(out: &mut String, link: Option<&Link>, max: f64) {
    let Some(l) = link else {
        out.push_str("<td class=\"empty\"></td>");
        return;
    };
    let style = if l.src == l.dst || max <= 0.0 {
        "background:var(--line)".to_owned()
    } else {
        // 15 % to 100 % of the colour: the slowest link stays visible.
        let share = (l.bandwidth_gbps / max).clamp(0.0, 1.0);
        format!(
            "background:color-mix(in srgb,var(--comm) {:.0}%,transparent)",
            15.0 + 85.0 * share
        )
    };
    let _ = write!(
        out,
        "<td data-src=\"{}\" data-dst=\"{}\" data-bandwidth=\"{}\" style=\"{style}\" title=\"{} → {}: {}, \
         {:.1} MB in {:.3} ms\">{:.1}</td>",
        escape(&l.src),
        escape(&l.dst),
        l.bandwidth_gbps,
        escape(&l.src),
        escape(&l.dst),
        escape(&l.transport),
        l.size_mb,
        l.time_ms,
        l.bandwidth_gbps,
    );
}
