//! The advice as HTML: one self-contained page (`npuprof advise --html`), or its findings as
//! sections of summary's page. Built from summary's blocks (the page and its style, header, facts,
//! warnings, bar charts, escaping), so both pages look alike and the style is written once.
//!
//! Each finding is rendered from [`Finding`] and its [`Evidence`] alone (code, severity, title,
//! time at stake, evidence, action): a new advice code needs no change here. Every finding is an
//! `<article class="finding">` with `data-code`, `data-severity`, `data-rank` and
//! `data-at-stake-us` (the exact µs), inside one `<section class="advice" data-phase="…">` per
//! phase, in the advice's order (largest time at stake first). Text from the profile (kernel
//! names, directories) is escaped.

use std::fmt::Write as _;

use npuprof_summary::html::{Bar, Unit, chart, document, escape, facts, header, warnings};
use npuprof_summary::ranks::rank_label;
use npuprof_summary::units::{duration, percent};

use crate::{Advice, Evidence, Finding, RunInfo};

/// The advice page: the warnings first, then the findings of each phase.
pub fn render_advice(advice: &Advice) -> String {
    let path = advice.path.display().to_string();
    document(&format!("npuprof advise: {path}"), |out| {
        header(out, "advise", &[&path]);
        warnings(out, &advice.warnings);
        sections(out, advice);
    })
}

/// One `<section class="advice">` per phase of the advised runs (a phase without findings says
/// so): its ranks, a chart of the time at stake per finding, the findings, the runs' notes.
/// Without the warnings: the page they go into puts its own first.
pub fn sections(out: &mut String, advice: &Advice) {
    let mut start = 0;
    while start < advice.runs.len() {
        let phase = &advice.runs[start].phase;
        let end = start
            + advice.runs[start..]
                .iter()
                .take_while(|r| &r.phase == phase)
                .count();
        let findings: Vec<&Finding> = advice
            .findings
            .iter()
            .filter(|f| &f.phase == phase)
            .collect();
        phase_section(out, phase.as_deref(), &advice.runs[start..end], &findings);
        start = end;
    }
}

fn phase_section(out: &mut String, phase: Option<&str>, runs: &[RunInfo], findings: &[&Finding]) {
    let name = phase.unwrap_or("run");
    let _ = write!(
        out,
        "<section class=\"advice\" data-phase=\"{0}\"><h2>{0}: advice</h2>",
        escape(name)
    );
    let labels: Vec<String> = runs.iter().map(|r| rank_label(r.rank)).collect();
    let items: Vec<(&str, String)> = runs
        .iter()
        .zip(&labels)
        .map(|(r, label)| {
            let step = r.mean_step_us.map_or_else(
                || format!("{} steps, step time not known", r.steps),
                |m| format!("{} mean of {} step(s)", duration(m), r.steps),
            );
            (label.as_str(), step)
        })
        .collect();
    facts(out, &items);
    if findings.is_empty() {
        out.push_str("<p class=\"verdict\">no findings: nothing past the thresholds</p>");
    } else {
        let _ = write!(
            out,
            "<p class=\"verdict\">{} finding(s), largest time at stake first</p>",
            findings.len()
        );
        let bars: Vec<Bar> = findings
            .iter()
            .enumerate()
            .map(|(index, f)| {
                let label = format!("{}. {} · {}", index + 1, f.code.as_str(), whose(f));
                let mut bar = Bar::single(&label, "stake", f.at_stake_us, stake_text(f));
                bar.title = format!("{label}: {}", exact_us(f.at_stake_us));
                bar
            })
            .collect();
        chart(
            out,
            "stakes",
            "estimated time at stake per step, by finding",
            &bars,
            Unit::Micros,
            None,
            false,
        );
        for (index, finding) in findings.iter().enumerate() {
            finding_article(out, name, index + 1, finding);
        }
    }
    for run in runs {
        for note in &run.notes {
            let _ = write!(
                out,
                "<p class=\"note\">note ({}): {}</p>",
                escape(&rank_label(run.rank)),
                escape(note)
            );
        }
    }
    out.push_str("</section>\n");
}

/// Whose the finding is: its rank, else its directory, else the phase's ranks.
fn whose(finding: &Finding) -> String {
    match (finding.rank, &finding.dir) {
        (Some(rank), _) => format!("rank {rank}"),
        (None, Some(dir)) => dir.clone(),
        (None, None) => "ranks of the phase".to_owned(),
    }
}

/// The time at stake, rounded, with its share of the step when known.
fn stake_text(finding: &Finding) -> String {
    finding.at_stake_share.map_or_else(
        || duration(finding.at_stake_us),
        |s| format!("{} · {}", duration(finding.at_stake_us), percent(s)),
    )
}

/// A time for a tooltip: exact to the nanosecond, with its unit.
fn exact_us(us: f64) -> String {
    format!("{us:.3} µs per step")
}

fn finding_article(out: &mut String, phase: &str, number: usize, finding: &Finding) {
    let severity = finding.severity.as_str();
    let rank = finding
        .rank
        .map_or_else(String::new, |r| format!(" data-rank=\"{r}\""));
    let _ = write!(
        out,
        "<article class=\"finding\" id=\"finding-{}-{number}\" data-code=\"{code}\" data-severity=\"{severity}\"{rank} data-at-stake-us=\"{}\">\
         <h3>{number}. <span class=\"sev {severity}\">{severity}</span><code>{code}</code> · {}</h3>\
         <p class=\"title\">{}</p>",
        escape(phase),
        finding.at_stake_us,
        escape(&whose(finding)),
        escape(&finding.title),
        code = finding.code.as_str(),
    );
    let share = finding
        .at_stake_share
        .map_or_else(String::new, |s| format!(" ({} of the step)", percent(s)));
    let _ = write!(
        out,
        "<p class=\"stake\">at stake <b title=\"{}\">{}</b> per step{share}</p>",
        exact_us(finding.at_stake_us),
        duration(finding.at_stake_us)
    );
    if !finding.evidence.is_empty() {
        evidence_table(out, &finding.evidence);
    }
    let _ = writeln!(
        out,
        "<p class=\"action\">do: {}</p></article>",
        with_code_spans(&finding.action)
    );
}

fn evidence_table(out: &mut String, evidence: &[Evidence]) {
    out.push_str(
        "<div class=\"table-wrap\"><table class=\"evidence\"><thead><tr><th>evidence</th><th class=\"t\">detail</th>\
         <th>time per step</th><th>share of step</th><th>count</th><th>step</th><th>at (µs)</th></tr></thead><tbody>",
    );
    let dash = || "–".to_owned();
    for item in evidence {
        let time = item.time_us.map_or_else(dash, |t| {
            format!("<span title=\"{}\">{}</span>", exact_us(t), duration(t))
        });
        let share = item.share.map_or_else(dash, |s| {
            format!(
                "<span title=\"{:.4} % of the mean step\">{}</span>",
                s * 100.0,
                percent(s)
            )
        });
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"t\">{}</td><td>{time}</td><td>{share}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&item.label),
            escape(&item.detail),
            item.count.map_or_else(dash, |c| c.to_string()),
            item.step.map_or_else(dash, |s| s.to_string()),
            item.at_us.map_or_else(dash, |a| format!("{a:.3}")),
        );
    }
    out.push_str("</tbody></table></div>");
}

/// `text` escaped, its `` `…` `` spans (commands, code) as `<code>`.
fn with_code_spans(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let parts: Vec<&str> = text.split('`').collect();
    // An odd number of parts: every backtick is paired.
    let paired = parts.len() % 2 == 1;
    for (index, part) in parts.iter().enumerate() {
        if paired && index % 2 == 1 {
            let _ = write!(out, "<code>{}</code>", escape(part));
        } else {
            if !paired && index > 0 {
                out.push('`');
            }
            out.push_str(&escape(part));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::with_code_spans;

    #[test]
    fn backtick_spans_become_code_and_a_lone_backtick_stays() {
        assert_eq!(
            with_code_spans("run `a <b>` then `c`"),
            "run <code>a &lt;b&gt;</code> then <code>c</code>"
        );
        assert_eq!(with_code_spans("a ` b"), "a ` b");
        assert_eq!(with_code_spans("plain"), "plain");
    }
}
