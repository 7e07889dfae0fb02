//! The reference pages under `docs/` are what the code renders now: `cargo xtask codegen`
//! writes them, this test (inside `cargo test`) fails when one is stale. The renderer is
//! xtask's, included as it is, and documents the `npuprof` that cargo built for these tests.

#[path = "../../../xtask/src/codegen/pages.rs"]
mod pages;

use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .expect("crates/cli sits two levels below the workspace root")
}

#[test]
fn generated_docs_are_up_to_date() {
    let pages = pages::all(root(), Path::new(env!("CARGO_BIN_EXE_npuprof"))).expect("render");
    let stale = pages::stale(root(), &pages);
    assert!(
        stale.is_empty(),
        "stale generated pages {stale:?}: run `cargo xtask codegen` and commit docs/"
    );
}

#[test]
fn the_pages_hold_what_the_code_defines() {
    let pages = pages::all(root(), Path::new(env!("CARGO_BIN_EXE_npuprof"))).expect("render");
    let page = |name: &str| {
        &pages
            .iter()
            .find(|p| p.path == name)
            .unwrap_or_else(|| panic!("no page {name}"))
            .text
    };
    for code in npuprof_verify::Code::ALL {
        assert!(page("docs/findings.md").contains(&format!("| `{}` |", code.as_str())));
    }
    for rule in npuprof_lint::RULES {
        assert!(page("docs/lint-rules.md").contains(&format!("| {} |", rule.id)));
    }
    for shape in &npuprof_repository::Definitions::builtin().shapes {
        assert!(page("docs/repositories.md").contains(&format!("| `{}` |", shape.id)));
    }
    let commands = page("docs/commands.md");
    for command in [
        "route", "plan", "patch", "verify", "collect", "summary", "revert",
    ] {
        assert!(
            commands.contains(&format!("\n## npuprof {command}\n")),
            "{command}"
        );
    }
    assert!(!commands.contains("\n## npuprof help\n"));
    let exit = page("docs/exit-codes.md");
    assert!(exit.contains("| 2 |") && exit.contains("| `not_found` |"));
    assert!(page("docs/json.md").contains("| `npuprof plan --json` | 2 |"));
    // Nothing of this machine: no absolute paths of the build.
    for page in &pages {
        assert!(
            !page.text.contains(env!("CARGO_MANIFEST_DIR")),
            "{}",
            page.path
        );
    }
}

#[test]
fn a_changed_or_missing_page_is_stale() {
    let pages = pages::all(root(), Path::new(env!("CARGO_BIN_EXE_npuprof"))).expect("render");
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("docs")).expect("docs/");
    for page in &pages {
        std::fs::write(dir.path().join(page.path), &page.text).expect("write");
    }
    assert!(pages::stale(dir.path(), &pages).is_empty());
    let findings = dir.path().join("docs/findings.md");
    let edited = std::fs::read_to_string(&findings).expect("read") + "a hand edit\n";
    std::fs::write(&findings, edited).expect("edit");
    std::fs::remove_file(dir.path().join("docs/json.md")).expect("remove");
    assert_eq!(
        pages::stale(dir.path(), &pages),
        ["docs/findings.md", "docs/json.md"]
    );
}
