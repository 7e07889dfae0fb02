//! Horizontal bar charts in inline SVG.

use std::fmt::Write as _;

use super::escape;
use crate::units::{bytes, duration, percent, signed};

/// What a chart's values are, for the tooltip of each segment: the value rounded as the page
/// shows it, then exact, with its unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A duration in µs.
    Micros,
    /// A change of duration in µs (`+`/`-`).
    SignedMicros,
    /// A share or ratio, 0–1.
    Ratio,
    /// A size in bytes.
    Bytes,
}

impl Unit {
    /// `value` for a tooltip: `1.23 ms (1234.568 µs)`, `-250.0 µs (-250.000 µs)`, `12.3% (0.1234)`.
    pub fn tooltip(self, value: f64) -> String {
        match self {
            Unit::Micros => format!("{} ({value:.3} µs)", duration(value)),
            Unit::SignedMicros => format!("{} ({value:+.3} µs)", signed(value)),
            Unit::Ratio => format!("{} ({value:.4})", percent(value)),
            Unit::Bytes => format!("{} ({value:.0} bytes)", bytes(value as u64)),
        }
    }
}

/// One part of a bar.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// CSS class and `data-segment` (e.g. `computing`); coloured by the page's style.
    pub class: &'static str,
    /// Its length, in the chart's unit (µs or a ratio); negative values are drawn leftwards
    /// from the middle in a diverging chart.
    pub value: f64,
}

/// One row of a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// The row label (shown, and in `data-label`).
    pub label: String,
    /// The full text on hover (e.g. the untruncated kernel name).
    pub title: String,
    /// The segments, drawn one after the other.
    pub segments: Vec<Segment>,
    /// The value shown after the bar.
    pub value_text: String,
    /// Whether the row is highlighted (e.g. the slowest rank).
    pub highlight: bool,
}

impl Bar {
    /// A one-segment bar.
    pub fn single(label: &str, class: &'static str, value: f64, value_text: String) -> Self {
        Self {
            label: label.to_owned(),
            title: label.to_owned(),
            segments: vec![Segment { class, value }],
            value_text,
            highlight: false,
        }
    }

    fn total(&self) -> f64 {
        self.segments.iter().map(|s| s.value).sum()
    }
}

/// The SVG coordinate width of every bar.
const WIDTH: f64 = 1000.0;

/// A chart: a caption and its rows, scaled to the longest bar (or to `scale` when given, e.g.
/// 1.0 for ratios), each segment's tooltip written in `unit`. `diverging` draws negative values
/// left of the middle.
pub fn chart(
    out: &mut String,
    id: &str,
    caption: &str,
    bars: &[Bar],
    unit: Unit,
    scale: Option<f64>,
    diverging: bool,
) {
    let max = scale.unwrap_or_else(|| {
        bars.iter()
            .map(|b| {
                if diverging {
                    b.total().abs()
                } else {
                    b.total()
                }
            })
            .fold(0.0, f64::max)
    });
    let _ = write!(
        out,
        "<figure class=\"chart\" data-chart=\"{}\"><figcaption>{}</figcaption>",
        escape(id),
        escape(caption)
    );
    for bar in bars {
        row(out, bar, unit, max, diverging);
    }
    out.push_str("</figure>\n");
}

fn row(out: &mut String, bar: &Bar, unit: Unit, max: f64, diverging: bool) {
    let _ = write!(
        out,
        "<div class=\"row{}\" data-label=\"{}\" data-value=\"{}\"><span class=\"label\" title=\"{}\">{}</span>\
         <svg class=\"bar\" viewBox=\"0 0 {WIDTH} 10\" preserveAspectRatio=\"none\" role=\"img\" aria-label=\"{}: {}\">",
        if bar.highlight { " highlight" } else { "" },
        escape(&bar.label),
        bar.total(),
        escape(&bar.title),
        escape(&bar.label),
        escape(&bar.label),
        escape(&bar.value_text),
    );
    let per_value = if max > 0.0 { WIDTH / max } else { 0.0 };
    let (per_value, mut x) = if diverging {
        (per_value / 2.0, WIDTH / 2.0)
    } else {
        (per_value, 0.0)
    };
    for segment in &bar.segments {
        let width = (segment.value.abs() * per_value).min(WIDTH);
        let left = if segment.value < 0.0 { x - width } else { x };
        let _ = write!(
            out,
            "<rect class=\"{0}\" data-segment=\"{0}\" data-value=\"{1}\" x=\"{left:.2}\" y=\"0\" width=\"{width:.2}\" height=\"10\"><title>{0}: {2}</title></rect>",
            segment.class,
            segment.value,
            unit.tooltip(segment.value)
        );
        if segment.value >= 0.0 {
            x += width;
        }
    }
    if diverging {
        let _ = write!(
            out,
            "<line class=\"axis\" x1=\"{0}\" y1=\"0\" x2=\"{0}\" y2=\"10\"/>",
            WIDTH / 2.0
        );
    }
    let _ = write!(
        out,
        "</svg><span class=\"value\">{}</span></div>",
        escape(&bar.value_text)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each segment's tooltip says its value rounded as shown, then exact, with the unit.
    #[test]
    fn segment_tooltips_have_units_and_rounding() {
        let cases = [
            (Unit::Micros, 1234.5678, "kernel: 1.23 ms (1234.568 µs)"),
            (
                Unit::SignedMicros,
                -250.0,
                "kernel: -250.0 µs (-250.000 µs)",
            ),
            (Unit::Ratio, 0.12345, "kernel: 12.3% (0.1235)"),
        ];
        for (unit, value, want) in cases {
            let mut out = String::new();
            let bar = Bar::single("k", "kernel", value, String::new());
            chart(
                &mut out,
                "c",
                "caption",
                &[bar],
                unit,
                None,
                unit == Unit::SignedMicros,
            );
            assert!(out.contains(&format!("<title>{want}</title>")), "{out}");
        }
    }
}
