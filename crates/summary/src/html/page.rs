//! The summary and comparison pages.

use std::fmt::Write as _;

use super::chart::{Bar, Segment, Unit, chart};
use super::escape;
use super::views;
use crate::compare::{Change, Comparison, KernelDelta, PhaseComparison};
use crate::pipe::{Bound, Pipe};
use crate::run::RunSummary;
use crate::timeline::Mark;
use crate::units::{duration, fit, percent, signed};
use crate::warnings::Warning;
use crate::{PhaseRanks, Summary};

/// Kernel groups drawn per chart.
const CHART_ROWS: usize = 10;
/// Characters of a kernel name shown before `…` (the full name is on hover).
const LABEL_CHARS: usize = 40;

const STYLE: &str = "
:root{--fg:#1d2330;--muted:#5b6475;--bg:#fff;--card:#f5f7fa;--line:#dde2ea;
--computing:#3b7dd8;--comm:#e0732c;--free:#a3acb9;--kernel:#3b7dd8;--type:#6a54c9;--pipe:#2a9d76;
--rank:#3b7dd8;--slow:#d2453b;--fast:#2a9d76}
@media (prefers-color-scheme:dark){:root{--fg:#e6e9ef;--muted:#9aa3b2;--bg:#14171c;--card:#1d2128;--line:#2e3440}}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1100px;padding:12px;font:15px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;color:var(--fg);background:var(--bg)}
h1{font-size:1.4em;margin:.2em 0}h2{font-size:1.2em;margin:1.2em 0 .3em}h3{font-size:1em;margin:1em 0 .3em;color:var(--muted)}
.path,.dir{color:var(--muted);word-break:break-all;margin:.1em 0}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:10px 12px;margin:12px 0}
.facts{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:6px;margin:.5em 0}
.facts div{background:var(--bg);border:1px solid var(--line);border-radius:6px;padding:6px 8px}
.facts dt{font-size:.8em;color:var(--muted)}.facts dd{margin:0;font-weight:600}
figure.chart,figure.timeline,figure.memory-curve{margin:.4em 0 .8em}figcaption{font-size:.85em;color:var(--muted);margin-bottom:.2em}
.row{display:grid;grid-template-columns:minmax(6em,32%) 1fr minmax(5.5em,auto);gap:8px;align-items:center;margin:3px 0}
.row .label{overflow:hidden;text-overflow:ellipsis;white-space:nowrap;font-size:.9em}
.row .value{font-variant-numeric:tabular-nums;font-size:.9em;text-align:right;white-space:nowrap}
.row.highlight .label{font-weight:700;color:var(--slow)}
svg.bar{width:100%;height:14px;display:block;background:var(--bg);border-radius:2px}
rect.computing{fill:var(--computing)}rect.communication{fill:var(--comm)}rect.free{fill:var(--free)}
rect.kernel{fill:var(--kernel)}rect.type{fill:var(--type)}rect.pipe{fill:var(--pipe)}rect.rank{fill:var(--rank)}
.highlight rect.rank{fill:var(--slow)}rect.slower{fill:var(--slow)}rect.faster{fill:var(--fast)}
rect.added{fill:var(--slow);fill-opacity:.35;stroke:var(--slow);stroke-width:1.5}rect.removed{fill:var(--fast);fill-opacity:.35;stroke:var(--fast);stroke-width:1.5}
line.axis{stroke:var(--muted);stroke-width:2}
.legend{font-size:.8em;color:var(--muted)}.legend i{display:inline-block;width:.8em;height:.8em;margin:0 .25em 0 .6em;border-radius:2px}
.table-wrap{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:.85em}th,td{padding:3px 6px;border-bottom:1px solid var(--line);text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left;white-space:normal;word-break:break-all;min-width:12em}
th.t,td.t{text-align:left}
pre{white-space:pre-wrap;word-break:break-all;background:var(--bg);border:1px solid var(--line);border-radius:6px;padding:6px 8px;margin:.2em 0 .6em}
.verdict{font-size:1.1em;font-weight:600}.note{color:var(--muted);font-size:.9em}
.warning{border-left:4px solid #d29922;padding:2px 8px;margin:.3em 0}.warning code{font-weight:600}
.finding{background:var(--bg);border:1px solid var(--line);border-radius:6px;padding:6px 10px;margin:10px 0}
.finding h3{color:var(--fg);margin:.1em 0 .2em}.finding .title{margin:.2em 0;font-weight:600}
.sev{display:inline-block;font-size:.75em;font-weight:700;text-transform:uppercase;padding:0 .45em;margin-right:.5em;border-radius:4px;color:#fff;background:var(--muted)}
.sev.error{background:var(--slow)}.sev.warning{background:#b7791f}
.stake{margin:.2em 0}.action{border-left:4px solid var(--fast);padding:2px 8px;margin:.4em 0 .2em}
rect.stake{fill:var(--slow)}
rect.memory{fill:var(--pipe)}
.strip{display:grid;grid-template-columns:auto 1fr;gap:6px;align-items:stretch}
.lanes{display:grid;grid-template-rows:repeat(3,1fr);font-size:.75em;color:var(--muted)}
svg.strip{width:100%;height:54px;display:block;background:var(--bg);border-radius:2px}
rect.mark{fill:none;stroke:var(--slow);stroke-width:2;vector-effect:non-scaling-stroke}
p.axis{display:flex;justify-content:space-between;font-size:.75em;color:var(--muted);margin:0 0 .3em}
svg.curve{width:100%;height:140px;display:block;background:var(--bg);border-radius:2px}
polyline{fill:none;vector-effect:non-scaling-stroke;stroke-width:1.5}
polyline.allocated{stroke:var(--computing)}polyline.reserved{stroke:var(--comm);stroke-dasharray:4 3}
line.peak{stroke:var(--slow);stroke-width:1.5;vector-effect:non-scaling-stroke}
table.matrix{width:auto}table.matrix td,table.matrix th{text-align:center;min-width:3.2em;word-break:normal}
table.matrix th:first-child{min-width:5em}td.empty{background:transparent}
caption{text-align:left;color:var(--muted);padding:2px 0}
@media (max-width:600px){body{padding:6px;font-size:14px}.row{grid-template-columns:1fr auto;row-gap:1px;margin:5px 0}
.row .label{grid-column:1/-1;white-space:normal;word-break:break-all}}
";

/// The page's header: `npuprof <command>` and one line per path shown.
pub fn header(out: &mut String, command: &str, paths: &[&str]) {
    let _ = write!(out, "<header><h1>npuprof {command}</h1>");
    for path in paths {
        let _ = write!(out, "<p class=\"path\">{}</p>", escape(path));
    }
    let _ = writeln!(out, "</header>");
}

/// A whole page titled `title`: the head with the shared style, what `body` writes, the footer.
pub fn document(title: &str, body: impl FnOnce(&mut String)) -> String {
    let mut out = String::new();
    head(&mut out, title);
    body(&mut out);
    tail(&mut out);
    out
}

fn head(out: &mut String, title: &str) {
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style>{STYLE}</style></head><body>\n",
        escape(title)
    );
}

fn tail(out: &mut String) {
    out.push_str("<footer class=\"note\">Written by npuprof; self-contained, no network needed.</footer></body></html>\n");
}

/// A grid of named facts (`<dl class="facts">`), names and values escaped.
pub fn facts(out: &mut String, items: &[(&str, String)]) {
    out.push_str("<dl class=\"facts\">");
    for (name, value) in items {
        let _ = write!(
            out,
            "<div><dt>{}</dt><dd>{}</dd></div>",
            escape(name),
            escape(value)
        );
    }
    out.push_str("</dl>\n");
}

fn legend(out: &mut String, items: &[(&str, &str)]) {
    out.push_str("<p class=\"legend\">");
    for (var, name) in items {
        let _ = write!(out, "<i style=\"background:var(--{var})\"></i>{name}");
    }
    out.push_str("</p>\n");
}

fn run_title(run: &RunSummary) -> String {
    let phase = run.phase.as_deref().unwrap_or("run");
    format!("{phase} · {}", crate::ranks::rank_label(run.rank))
}

/// The summary page.
pub fn render_summary(summary: &Summary) -> String {
    render_summary_with(summary, |_| {})
}

/// The summary page with the sections `more` writes (already HTML: e.g. advise's findings)
/// after the warnings, before the ranks and runs.
pub fn render_summary_with(summary: &Summary, more: impl FnOnce(&mut String)) -> String {
    render_summary_marked(summary, &[], more)
}

/// [`render_summary_with`], each run's timeline strip also showing the `marks` of that run
/// (e.g. the gaps advise names) that fall in its step.
pub fn render_summary_marked(
    summary: &Summary,
    marks: &[Mark],
    more: impl FnOnce(&mut String),
) -> String {
    let path = summary.path.display().to_string();
    document(&format!("npuprof summary: {path}"), |out| {
        header(out, "summary", &[&path]);
        warnings(out, &summary.warnings);
        more(out);
        for ranks in &summary.ranks {
            ranks_section(out, ranks);
        }
        let mut phases: Vec<&Option<String>> = summary.runs.iter().map(|r| &r.phase).collect();
        phases.dedup();
        for phase in phases {
            let runs: Vec<&RunSummary> =
                summary.runs.iter().filter(|r| &r.phase == phase).collect();
            if runs
                .iter()
                .any(|r| r.communication.is_some() || r.matrix.is_some())
            {
                views::matrix_section(out, phase.as_deref(), &runs);
            }
        }
        for (index, run) in summary.runs.iter().enumerate() {
            run_section(out, index, run, marks);
        }
        out.push_str("<section id=\"next\"><h2>Open next</h2>");
        for step in &summary.next {
            let _ = write!(
                out,
                "<p class=\"note\">{}</p><pre><code>{}</code></pre>",
                escape(&step.what),
                escape(&step.action)
            );
        }
        out.push_str("</section>\n");
    })
}

fn ranks_section(out: &mut String, ranks: &PhaseRanks) {
    let phase = ranks.phase.as_deref().unwrap_or("run");
    let _ = write!(
        out,
        "<section class=\"ranks\" data-phase=\"{0}\"><h2>{0}: step time per rank</h2>",
        escape(phase)
    );
    let mut items = vec![("ranks", ranks.per_rank.len().to_string())];
    if let Some(rank) = ranks.slowest_rank {
        items.push(("slowest rank", rank.to_string()));
    }
    if let Some(ratio) = ranks.imbalance_ratio {
        items.push(("imbalance (slowest / fastest)", format!("{ratio:.3}")));
    }
    if let Some(spread) = ranks.own_spread {
        let straggler = ranks.straggler_rank.map_or_else(
            || format!("none (computing + free within {})", percent(spread)),
            |r| format!("rank {r} (+{} computing + free)", percent(spread)),
        );
        items.push(("straggler", straggler));
    }
    if let Some(rank) = ranks.waiter_rank {
        items.push(("waits most in collectives", format!("rank {rank}")));
    }
    facts(out, &items);
    let sentences = crate::ranks::rank_sentences(ranks);
    if !sentences.is_empty() {
        out.push_str("<ul class=\"notes\">");
        for sentence in sentences {
            let _ = write!(out, "<li>{}</li>", escape(&sentence));
        }
        out.push_str("</ul>");
    }
    let bars: Vec<Bar> = ranks
        .per_rank
        .iter()
        .map(|r| {
            let label = r
                .rank
                .map_or_else(|| r.dir.clone(), |n| format!("rank {n}"));
            let mut bar = Bar::single(&label, "rank", r.mean_step_us, duration(r.mean_step_us));
            bar.title = format!("{label} ({}): mean of {} steps", r.dir, r.steps);
            bar.highlight = ranks.imbalanced && r.rank.is_some() && r.rank == ranks.slowest_rank;
            bar
        })
        .collect();
    chart(
        out,
        "ranks",
        "mean step time per rank (slowest in red past a 5 % imbalance)",
        &bars,
        Unit::Micros,
        None,
        false,
    );
    out.push_str("</section>\n");
}

fn run_section(out: &mut String, index: usize, run: &RunSummary, marks: &[Mark]) {
    let _ = write!(
        out,
        "<section class=\"run\" id=\"run-{index}\"><h2>{}</h2><p class=\"dir\">{}</p>",
        escape(&run_title(run)),
        escape(&run.dir)
    );
    let mut items = Vec::new();
    if let Some(stats) = &run.step_stats {
        items.push(("steps", stats.count.to_string()));
        items.push(("mean step", duration(stats.mean_us)));
        items.push(("p50 step", duration(stats.p50_us)));
        items.push(("max step", duration(stats.max_us)));
    }
    if let Some(split) = &run.time_split {
        items.push(("computing", percent(split.computing)));
        items.push((
            "communication (not overlapped)",
            percent(split.communication_not_overlapped),
        ));
        items.push(("free", percent(split.free)));
    }
    if let Some(comm) = &run.communication {
        items.push((
            "communication",
            format!(
                "{} in collectives; {}",
                duration(comm.elapse_us),
                crate::comm::wait_phrase(comm.wait_us, comm.elapse_us)
            ),
        ));
        let source = if comm.transit_from_bandwidth {
            " (bandwidth section)"
        } else {
            ""
        };
        items.push(("transit", format!("{}{source}", duration(comm.transit_us))));
    }
    if let Some(k) = &run.kernels {
        items.push((
            "kernels",
            format!("{} ({} names)", k.rows, k.distinct_names),
        ));
        items.push(("kernel device time", duration(k.total_us)));
    }
    facts(out, &items);
    steps_chart(out, run);
    views::timeline_section(out, run, marks);
    kernel_charts(out, run);
    views::shapes_section(out, run);
    pipe_chart(out, run);
    views::memory_section(out, run);
    for note in &run.notes {
        let _ = write!(out, "<p class=\"note\">{}</p>", escape(note));
    }
    out.push_str("</section>\n");
}

fn steps_chart(out: &mut String, run: &RunSummary) {
    if run.steps.is_empty() {
        return;
    }
    out.push_str("<h3>Steps</h3>");
    legend(
        out,
        &[
            ("computing", "computing"),
            ("comm", "communication not overlapped"),
            ("free", "free"),
        ],
    );
    let bars: Vec<Bar> = run
        .steps
        .iter()
        .map(|s| {
            let label = s
                .step
                .map_or_else(|| "step".to_owned(), |n| format!("step {n}"));
            Bar {
                title: label.clone(),
                label,
                segments: vec![
                    Segment {
                        class: "computing",
                        value: s.computing_us,
                    },
                    Segment {
                        class: "communication",
                        value: s.communication_not_overlapped_us,
                    },
                    Segment {
                        class: "free",
                        value: s.free_us,
                    },
                ],
                value_text: duration(s.total_us),
                highlight: false,
            }
        })
        .collect();
    chart(
        out,
        "steps",
        "step time and its split",
        &bars,
        Unit::Micros,
        None,
        false,
    );
}

fn kernel_charts(out: &mut String, run: &RunSummary) {
    if run.top_kernels.is_empty() {
        return;
    }
    out.push_str("<h3>Top kernels by device time</h3>");
    let bars: Vec<Bar> = run
        .top_kernels
        .iter()
        .take(CHART_ROWS)
        .map(|k| {
            let mut bar = Bar::single(
                &fit(&k.name, LABEL_CHARS),
                "kernel",
                k.total_us,
                format!("{} · {}", duration(k.total_us), percent(k.share)),
            );
            bar.title = k.name.clone();
            bar
        })
        .collect();
    chart(
        out,
        "kernels",
        "total device time by kernel name",
        &bars,
        Unit::Micros,
        None,
        false,
    );
    out.push_str(
        "<div class=\"table-wrap\"><table class=\"kernels\"><thead><tr><th>name</th><th class=\"t\">type</th><th class=\"t\">core</th>\
         <th>count</th><th>total</th><th>mean</th><th>share</th><th>bound</th></tr></thead><tbody>",
    );
    for k in &run.top_kernels {
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"t\">{}</td><td class=\"t\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&k.name),
            escape(&k.kind),
            escape(&k.core),
            k.count,
            duration(k.total_us),
            duration(k.mean_us),
            percent(k.share),
            k.bound.map_or("–", Bound::label),
        );
    }
    out.push_str("</tbody></table></div>");
    out.push_str("<h3>By type</h3>");
    let bars: Vec<Bar> = run
        .by_type
        .iter()
        .take(CHART_ROWS)
        .map(|t| {
            let label = format!("{} ×{}", t.kind, t.count);
            Bar::single(
                &label,
                "type",
                t.total_us,
                format!("{} · {}", duration(t.total_us), percent(t.share)),
            )
        })
        .collect();
    chart(
        out,
        "types",
        "total device time by kernel type",
        &bars,
        Unit::Micros,
        None,
        false,
    );
}

fn pipe_chart(out: &mut String, run: &RunSummary) {
    let Some(pipe) = &run.pipe else { return };
    out.push_str("<h3>Pipe utilisation</h3>");
    let bars: Vec<Bar> = Pipe::ALL
        .iter()
        .map(|p| {
            let ratio = pipe.ratios.get(*p);
            Bar::single(p.as_str(), "pipe", ratio, percent(ratio))
        })
        .collect();
    let caption = format!(
        "time-weighted pipe ratios over the kernels with metrics ({} of kernel time)",
        percent(pipe.measured_share)
    );
    chart(out, "pipes", &caption, &bars, Unit::Ratio, Some(1.0), false);
}

/// The comparison page.
pub fn render_comparison(comparison: &Comparison) -> String {
    let (base, new) = (
        crate::compare::side_label(&comparison.base),
        crate::compare::side_label(&comparison.new),
    );
    document(&format!("npuprof compare: {base} → {new}"), |out| {
        header(
            out,
            "compare",
            &[&format!("base: {base}"), &format!("new: {new}")],
        );
        warnings(out, &comparison.warnings);
        for phase in &comparison.phases {
            phase_comparison(out, phase);
        }
        for line in &comparison.unmatched {
            let _ = write!(out, "<p class=\"note\">{}</p>", escape(line));
        }
    })
}

/// The warnings (`<p class="warning" data-code="…">`), before anything they qualify.
pub fn warnings(out: &mut String, warnings: &[Warning]) {
    for w in warnings {
        let _ = writeln!(
            out,
            "<p class=\"warning\" data-code=\"{code}\"><code>{code}</code> {}</p>",
            escape(&w.message),
            code = w.code.as_str(),
        );
    }
}

fn phase_comparison(out: &mut String, phase: &PhaseComparison) {
    let name = phase.phase.as_deref().unwrap_or("run");
    let _ = write!(
        out,
        "<section class=\"phase\" data-phase=\"{}\"><h2>{}</h2><p class=\"verdict\">{}</p>",
        escape(name),
        escape(name),
        escape(&phase.verdict)
    );
    if let (Some(noise), Some(line)) = (phase.noise_us, phase.noise_line()) {
        let _ = write!(
            out,
            "<p class=\"note\" data-noise=\"{noise}\">{}</p>",
            escape(&line)
        );
    }
    let name_of = |r: Option<u32>| r.map_or_else(|| "-".to_owned(), |r| r.to_string());
    for rank in &phase.per_rank {
        let time = rank.step.as_ref().unwrap_or(&rank.kernel_time);
        let largest = rank.largest.as_ref().map_or_else(String::new, |d| {
            format!("; most: {} in {}", signed(d.delta_us), d.key)
        });
        let _ = write!(
            out,
            "<p class=\"rank-delta\" data-rank=\"{}\">rank {} → {}: {} → {} ({}){}</p>",
            name_of(rank.new_rank),
            name_of(rank.base_rank),
            name_of(rank.new_rank),
            duration(time.base_us),
            duration(time.new_us),
            signed(time.delta_us),
            escape(&largest)
        );
    }
    let mut bars = Vec::new();
    if let Some(step) = &phase.step {
        bars.push(Bar::single(
            "base step",
            "computing",
            step.base_us,
            duration(step.base_us),
        ));
        bars.push(Bar::single(
            "new step",
            "computing",
            step.new_us,
            duration(step.new_us),
        ));
    }
    let k = &phase.kernel_time;
    if let Some(note) = &phase.kernel_time_note {
        let _ = write!(
            out,
            "<p class=\"note\">kernel time unknown: {}</p>",
            escape(note)
        );
    } else {
        bars.push(Bar::single(
            "base kernels",
            "kernel",
            k.base_us,
            duration(k.base_us),
        ));
        bars.push(Bar::single(
            "new kernels",
            "kernel",
            k.new_us,
            duration(k.new_us),
        ));
    }
    chart(
        out,
        "step",
        "time per step (mean over ranks)",
        &bars,
        Unit::Micros,
        None,
        false,
    );
    out.push_str("<h3>Largest changes by type</h3>");
    delta_chart(out, "type-deltas", &phase.by_type);
    out.push_str("<h3>Largest changes by kernel name</h3>");
    delta_chart(out, "name-deltas", &phase.by_name);
    out.push_str("</section>\n");
}

fn delta_chart(out: &mut String, id: &str, deltas: &[KernelDelta]) {
    let bars: Vec<Bar> = deltas
        .iter()
        .take(CHART_ROWS)
        .map(|d| {
            // Added and removed drawn apart from slower and faster: pale, outlined.
            let class = match d.change {
                Change::Added => "added",
                Change::Removed => "removed",
                _ if d.delta_us >= 0.0 => "slower",
                _ => "faster",
            };
            let change = d.change.as_str();
            let mut bar = Bar::single(
                &fit(&d.key, LABEL_CHARS),
                class,
                d.delta_us,
                signed(d.delta_us),
            );
            bar.title = format!(
                "{} ({change}): {} → {} per step, {:.2} → {:.2} calls",
                d.key,
                duration(d.base_us),
                duration(d.new_us),
                d.base_count,
                d.new_count
            );
            bar
        })
        .collect();
    chart(
        out,
        id,
        "change of time per step (red: slower, green: faster; pale and outlined: added, removed)",
        &bars,
        Unit::SignedMicros,
        None,
        true,
    );
}
