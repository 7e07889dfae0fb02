//! Horizontal bar charts in inline SVG.

use std::fmt::Write as _;

use super::escape;

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
/// 1.0 for ratios). `diverging` draws negative values left of the middle.
pub fn chart(
    out: &mut String,
    id: &str,
    caption: &str,
    bars: &[Bar],
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
        row(out, bar, max, diverging);
    }
    out.push_str("</figure>\n");
}

fn row(out: &mut String, bar: &Bar, max: f64, diverging: bool) {
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
    let unit = if max > 0.0 { WIDTH / max } else { 0.0 };
    let (unit, mut x) = if diverging {
        (unit / 2.0, WIDTH / 2.0)
    } else {
        (unit, 0.0)
    };
    for segment in &bar.segments {
        let width = (segment.value.abs() * unit).min(WIDTH);
        let left = if segment.value < 0.0 { x - width } else { x };
        let _ = write!(
            out,
            "<rect class=\"{0}\" data-segment=\"{0}\" data-value=\"{1}\" x=\"{left:.2}\" y=\"0\" width=\"{width:.2}\" height=\"10\"><title>{0}: {1}</title></rect>",
            segment.class, segment.value
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
