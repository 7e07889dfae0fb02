//! The breakdown as one self-contained page, in summary's style (`npuprof_summary::html`): per
//! run an icicle of the module tree (each node as wide as its device time, children under their
//! parent) or a strip of the layers (one bar per layer, as tall as its median span, outliers in
//! red) and, with the skill's files, its cluster tables; then the node × rank matrices. Inline SVG, no script, no network.

use std::fmt::Write as _;

use npuprof_summary::html::{document, escape, facts, header};
use npuprof_summary::units::{duration, percent};

use crate::layers::Layers;
use crate::matrix::Matrix;
use crate::structure::StructureBreakdown;
use crate::{Breakdown, Method, Module, RunBreakdown};

/// The icicle's width in SVG units.
const WIDTH: f64 = 1000.0;
/// One tree level's height in SVG units.
const ROW: f64 = 22.0;
/// The narrowest node labelled (SVG units).
const LABELLED: f64 = 60.0;

const STYLE: &str = "<style>
svg.icicle,svg.strip{width:100%;display:block;background:var(--bg);border-radius:4px}
svg.icicle rect{fill:var(--kernel);stroke:var(--bg);stroke-width:1}
svg.icicle rect.backward{fill:var(--type)}
svg.icicle text{font-size:11px;fill:#fff;pointer-events:none}
svg.strip rect{fill:var(--kernel)}svg.strip rect.k1{fill:var(--type)}svg.strip rect.k2{fill:var(--pipe)}
svg.strip rect.outlier{fill:var(--slow)}
td.slow{color:var(--slow);font-weight:600}
</style>";

/// The whole page.
pub fn render(result: &Breakdown) -> String {
    let path = result.path.display().to_string();
    document("npuprof breakdown", |out| {
        header(out, "breakdown", &[&path]);
        sections(out, result);
    })
}

/// The breakdown's sections (each run's tree or layers, the node × rank matrices), for a page
/// of its own or summary's page.
pub fn sections(out: &mut String, result: &Breakdown) {
    out.push_str(STYLE);
    for run in &result.runs {
        run_section(out, run);
    }
    for matrix in &result.ranks {
        matrix_section(out, matrix);
    }
}

fn run_section(out: &mut String, run: &RunBreakdown) {
    let title = format!(
        "{} · {}",
        run.phase.as_deref().unwrap_or("run"),
        npuprof_summary::ranks::rank_label(run.rank)
    );
    let _ = write!(
        out,
        "<section data-run=\"{}\"><h2>{}</h2><p class=\"dir\">{}</p>",
        escape(&run.dir),
        escape(&title),
        escape(&run.dir)
    );
    let method = match run.method {
        Method::Modules => "nn.Module tree (exact)",
        Method::Layers => "layers (inferred)",
        Method::None => "none",
    };
    facts(
        out,
        &[
            ("method", method.to_owned()),
            ("confidence", format!("{:?}", run.confidence).to_lowercase()),
            ("covered", percent(run.coverage)),
            ("kernel time", duration(run.kernel_us)),
        ],
    );
    if run.method == Method::Modules {
        icicle(out, &run.modules, run.kernel_us);
    }
    if let Some(layers) = &run.layers {
        strip(out, layers);
    }
    if let Some(by) = &run.structure {
        skill_tables(out, by);
    }
    for note in &run.notes {
        let _ = write!(out, "<p class=\"note\">{}</p>", escape(note));
    }
    out.push_str("</section>\n");
}

/// The module tree as an icicle: nodes depth first, each placed after its previous sibling.
fn icicle(out: &mut String, modules: &[Module], kernel_us: f64) {
    let depth = modules.iter().map(|m| m.depth).max().unwrap_or(0);
    let scale = if kernel_us > 0.0 {
        WIDTH / kernel_us
    } else {
        0.0
    };
    let _ = write!(
        out,
        "<figure class=\"chart\" data-chart=\"icicle\"><figcaption>Device time by module \
         (width: share of the run's kernel time; backward nodes in violet)</figcaption>\
         <svg class=\"icicle\" viewBox=\"0 0 {WIDTH} {}\" preserveAspectRatio=\"none\">",
        ROW * depth as f64
    );
    // Where the next node of each depth starts: its parent's x, moved on by each sibling.
    let mut next = vec![0.0f64; depth + 2];
    for m in modules {
        let x = next[m.depth];
        let w = m.total_us * scale;
        next[m.depth] = x + w;
        next[m.depth + 1] = x;
        if w <= 0.0 {
            continue;
        }
        let y = ROW * (m.depth - 1) as f64;
        let class = if m.backward {
            " class=\"backward\""
        } else {
            ""
        };
        let _ = write!(
            out,
            "<rect{class} x=\"{x:.2}\" y=\"{y}\" width=\"{w:.2}\" height=\"{ROW}\" \
             data-path=\"{}\" data-value=\"{:.3}\"><title>{} — {} ({})</title></rect>",
            escape(&m.path),
            m.total_us,
            escape(&m.path),
            duration(m.total_us),
            percent(m.share)
        );
        if w >= LABELLED {
            let _ = write!(
                out,
                "<text x=\"{:.2}\" y=\"{:.1}\">{}</text>",
                x + 3.0,
                y + ROW * 0.7,
                escape(&m.name)
            );
        }
    }
    out.push_str("</svg></figure>\n");
}

/// The layers as a strip of bars: height the layer's median span, colour its kind, outliers red.
fn strip(out: &mut String, layers: &Layers) {
    let n = layers.items.len().max(1) as f64;
    let top = layers
        .items
        .iter()
        .map(|it| it.median_us)
        .fold(0.0f64, f64::max);
    let height = 80.0;
    let _ = write!(
        out,
        "<figure class=\"chart\" data-chart=\"layers\"><figcaption>{} layers per step \
         ({} kind(s), {} confidence): median span per layer, outliers in red</figcaption>\
         <svg class=\"strip\" viewBox=\"0 0 {WIDTH} {height}\" preserveAspectRatio=\"none\">",
        layers.count,
        layers.kinds.len(),
        format!("{:?}", layers.confidence).to_lowercase()
    );
    let w = WIDTH / n;
    for it in &layers.items {
        let h = if top > 0.0 {
            height * it.median_us / top
        } else {
            0.0
        };
        let class = if layers.outliers.contains(&it.index) {
            "outlier".to_owned()
        } else {
            format!("k{}", it.kind % 3)
        };
        let _ = write!(
            out,
            "<rect class=\"{class}\" x=\"{:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{h:.2}\" \
             data-layer=\"{}\" data-value=\"{:.3}\"><title>layer {} (kind {}): {}</title></rect>",
            w * it.index as f64,
            height - h,
            (w - 1.0).max(0.5),
            it.index,
            it.median_us,
            it.index,
            it.kind,
            duration(it.median_us)
        );
    }
    out.push_str("</svg></figure>\n");
}

/// The breakdown by the skill's files as its report has it: per component type a table of its
/// clusters, bubble and TOTAL (medians over the steps), outlier layers in red.
fn skill_tables(out: &mut String, by: &StructureBreakdown) {
    let _ = write!(
        out,
        "<figure class=\"chart\" data-chart=\"skill\"><figcaption>The skill's structure: {} \
         layers declared{}, {} step(s), {} confidence (wall: union of a cluster's kernels; \
         bubble: TOTAL − union; TOTAL: span)</figcaption>",
        by.layers_declared,
        by.model_name
            .as_ref()
            .map_or_else(String::new, |m| format!(" for {}", escape(m))),
        by.steps.len(),
        format!("{:?}", by.confidence).to_lowercase()
    );
    for t in &by.summary {
        let _ = write!(
            out,
            "<div class=\"table-wrap\"><table data-component=\"{}\"><tr><th>{} × {}</th>\
             <th>median</th><th>p95</th><th>outlier layers (steps)</th></tr>",
            escape(&t.component),
            escape(&t.component),
            t.instances
        );
        for row in &t.rows {
            let outliers: Vec<String> = row
                .outliers
                .iter()
                .map(|o| format!("{} ({})", o.layer_idx, o.steps))
                .collect();
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td{}>{}</td></tr>",
                escape(&row.name),
                duration(row.median_us),
                duration(row.p95_us),
                if outliers.is_empty() {
                    ""
                } else {
                    " class=\"slow\""
                },
                escape(&outliers.join(", "))
            );
        }
        out.push_str("</table></div>");
    }
    for note in &by.notes {
        let _ = write!(out, "<p class=\"note\">{}</p>", escape(note));
    }
    out.push_str("</figure>\n");
}

fn matrix_section(out: &mut String, matrix: &Matrix) {
    let _ = write!(
        out,
        "<section data-matrix=\"{}\"><h2>{} · ranks</h2><div class=\"table-wrap\"><table><tr><th>node</th>",
        escape(matrix.phase.as_deref().unwrap_or("run")),
        escape(matrix.phase.as_deref().unwrap_or("run"))
    );
    for rank in &matrix.ranks {
        let _ = write!(
            out,
            "<th>{}</th>",
            escape(&npuprof_summary::ranks::rank_label(*rank))
        );
    }
    out.push_str("<th>spread</th></tr>");
    for row in &matrix.rows {
        let _ = write!(out, "<tr><td>{}</td>", escape(&row.node));
        for (c, us) in row.us.iter().enumerate() {
            let slow = matrix.ranks[c] == row.slowest_rank && row.spread_us > 0.0;
            let _ = write!(
                out,
                "<td{}>{}</td>",
                if slow { " class=\"slow\"" } else { "" },
                us.map_or_else(|| "-".to_owned(), duration)
            );
        }
        let _ = write!(out, "<td>{}</td></tr>", duration(row.spread_us));
    }
    out.push_str("</table></div></section>\n");
}
