//! One self-contained HTML page per summary or comparison: inline CSS and inline SVG bars, no
//! script, no network (the machines that hold profiles are often offline), readable from a
//! phone-sized screen up (each bar chart is rows of label, SVG bar and value that reflow).
//!
//! Every chart is a `<figure class="chart" data-chart="…">` whose rows are
//! `<div class="row" data-label="…" data-value="…">` holding one `<svg>` with one `<rect>` per
//! segment (`data-segment`, `data-value`): tests read the rendered DOM through these.
//!
//! The building blocks ([`document`], [`header`], [`facts`], [`warnings`], [`chart`], [`escape`]) are public
//! so that a crate above summary (advise) renders its page in the same style, and the binary can
//! put its sections into the summary page ([`render_summary_with`]).

mod chart;
mod page;
mod views;

pub use chart::{Bar, Segment, Unit, chart};
pub use page::{
    document, facts, header, render_comparison, render_summary, render_summary_marked,
    render_summary_with, warnings,
};

/// `text` escaped for HTML text and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
