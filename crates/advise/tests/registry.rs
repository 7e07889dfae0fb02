//! The advise code table of `docs/reports.md` equals the registry (`Code::ALL`, with severity and title).

use npuprof_advise::Code;

#[test]
fn the_docs_code_table_matches_the_registry() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/reports.md");
    let readme = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("docs/reports.md: {e}"));
    let start = readme
        .find("<!-- advise-codes:start")
        .unwrap_or_else(|| panic!("docs/reports.md lacks the advise code table markers"));
    let end = readme[start..]
        .find("<!-- advise-codes:end -->")
        .map_or_else(
            || panic!("docs/reports.md lacks the end marker"),
            |e| start + e,
        );
    let documented: Vec<&str> = readme[start..end]
        .lines()
        .filter(|l| l.starts_with("| `"))
        .collect();
    let registry: Vec<String> = Code::ALL
        .iter()
        .map(|c| {
            let def = c.def();
            format!(
                "| `{}` | {} | {} |",
                def.code,
                def.severity.as_str(),
                def.title
            )
        })
        .collect();
    assert_eq!(
        documented, registry,
        "docs/reports.md advise code table (Code::ALL order)"
    );
}
