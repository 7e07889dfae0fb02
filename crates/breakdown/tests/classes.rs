//! The class table lists every kernel type of the vendored real runs (a model part, or
//! explicitly `other`).

use std::path::{Path, PathBuf};

use npuprof_breakdown::classes::lookup;
use npuprof_breakdown::kernels;

/// Every `*kernel_details*.csv` below `dir`.
fn tables(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("test data").flatten() {
        let path = entry.path();
        if path.is_dir() {
            tables(&path, out);
        } else if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().ends_with("kernel_details.csv"))
        {
            out.push(path);
        }
    }
}

#[test]
fn every_type_of_the_vendored_runs_is_in_the_table() {
    let crates = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for krate in ["verify", "summary"] {
        tables(&crates.join(krate).join("tests/data"), &mut found);
    }
    assert!(found.len() >= 8, "vendored tables: {found:?}");
    let mut types = 0;
    let mut unlisted = Vec::new();
    for path in &found {
        let table = kernels::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for ty in &table.types {
            types += 1;
            if !lookup(ty).1 {
                unlisted.push(format!("{}: {ty}", path.display()));
            }
        }
    }
    assert!(types > 80);
    assert!(
        unlisted.is_empty(),
        "not in the class table:\n{}",
        unlisted.join("\n")
    );
}
