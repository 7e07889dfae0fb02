//! The advice page (`npuprof_advise::html`) on the vendored real 2-rank run
//! (`crates/summary/tests/data/real-2rank`): a snapshot of its findings part, each finding's
//! fields rendered from the `Finding` in the advice's order, nothing loaded from elsewhere, and
//! untrusted kernel names escaped.

#[path = "../../summary/tests/common/mod.rs"]
mod common;
mod support;

use std::path::Path;

use common::{Layout, output_file, real_copy, real_run, rewrite_csv};
use npuprof_advise::Advice;
use npuprof_advise::html::{render_advice, sections};

fn advice_of(path: &Path) -> Advice {
    support::advised(path, None, 3)
}

/// `html` with a line break before each article, table row and chart row, for a readable diff.
fn lines(html: &str) -> String {
    let mut out = html.to_owned();
    for tag in [
        "<article",
        "<tr>",
        "<div class=\"row",
        "<p class=\"",
        "<figure",
    ] {
        out = out.replace(tag, &format!("\n{tag}"));
    }
    out
}

#[test]
fn the_findings_part_of_the_real_run() {
    let mut out = String::new();
    sections(&mut out, &advice_of(&real_run()));
    insta::assert_snapshot!("html_real_findings", lines(&out));
}

/// The value of `attribute="…"` in each `<article` of `html`, in order.
fn article_attributes(html: &str, attribute: &str) -> Vec<String> {
    html.split("<article ")
        .skip(1)
        .map(|a| {
            let tag = &a[..a.find('>').expect("tag end")];
            let key = format!("{attribute}=\"");
            tag.find(&key).map_or_else(String::new, |start| {
                let rest = &tag[start + key.len()..];
                rest[..rest.find('"').expect("quote")].to_owned()
            })
        })
        .collect()
}

#[test]
fn every_finding_is_rendered_from_its_fields_in_the_advice_order() {
    let advice = advice_of(&real_run());
    assert!(advice.findings.len() >= 3, "{:?}", advice.findings);
    let page = render_advice(&advice);
    let codes = article_attributes(&page, "data-code");
    let want: Vec<&str> = advice.findings.iter().map(|f| f.code.as_str()).collect();
    assert_eq!(codes, want);
    let severities = article_attributes(&page, "data-severity");
    let want: Vec<&str> = advice
        .findings
        .iter()
        .map(|f| f.severity.as_str())
        .collect();
    assert_eq!(severities, want);
    let stakes: Vec<f64> = article_attributes(&page, "data-at-stake-us")
        .iter()
        .map(|s| s.parse().expect("a number"))
        .collect();
    let want: Vec<f64> = advice.findings.iter().map(|f| f.at_stake_us).collect();
    assert_eq!(stakes, want);
    // One phase here: largest time at stake first.
    assert!(stakes.windows(2).all(|w| w[0] >= w[1]), "{stakes:?}");
    let ranks = article_attributes(&page, "data-rank");
    let want: Vec<String> = advice
        .findings
        .iter()
        .map(|f| f.rank.map_or_else(String::new, |r| r.to_string()))
        .collect();
    assert_eq!(ranks, want);
    for (article, finding) in page.split("<article ").skip(1).zip(&advice.findings) {
        let article = &article[..article.find("</article>").expect("article end")];
        let escaped = npuprof_summary::html::escape;
        assert!(article.contains(&escaped(&finding.title)), "{article}");
        assert!(article.contains("do: "), "{article}");
        for item in &finding.evidence {
            assert!(article.contains(&escaped(&item.label)), "{article}");
        }
        assert!(
            article.contains(&npuprof_summary::units::duration(finding.at_stake_us)),
            "{article}"
        );
    }
}

#[test]
fn the_page_loads_nothing_from_elsewhere() {
    let page = render_advice(&advice_of(&real_run()));
    assert!(page.starts_with("<!doctype html>"));
    for loader in [
        "http://", "https://", "<script", "<link", "<img", "<iframe", "src=", "href=", "url(",
        "@import",
    ] {
        assert!(!page.contains(loader), "the page must be offline: {loader}");
    }
}

#[test]
fn a_kernel_name_with_markup_is_escaped() {
    let tmp = real_copy(Layout::Flat);
    let run = tmp.path().join("rank0_ascend_pt");
    let (mut name, mut core) = (0, 0);
    rewrite_csv(&output_file(&run, "kernel_details.csv"), |row, fields| {
        if row == 0 {
            name = fields.iter().position(|f| f == "Name").expect("Name");
            core = fields
                .iter()
                .position(|f| f == "Accelerator Core")
                .expect("Accelerator Core");
        } else if row == 1 {
            "<script>alert(1)</script>".clone_into(&mut fields[name]);
            "AI_CPU".clone_into(&mut fields[core]);
        }
    });
    let advice = advice_of(tmp.path());
    assert!(
        advice.findings.iter().any(|f| f
            .evidence
            .iter()
            .any(|e| e.label == "<script>alert(1)</script>")),
        "the planted AI CPU kernel is evidence: {:?}",
        advice.findings
    );
    let page = render_advice(&advice);
    assert!(!page.contains("<script"), "unescaped markup in the page");
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
}
