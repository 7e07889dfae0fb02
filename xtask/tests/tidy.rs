//! Tidy tests (rust-analyzer's habit): each keeps one invariant of ARCHITECTURE.md true by reading
//! the sources. They read files only; a failure names the file and the rule.

use std::fs;
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace")
        .to_path_buf()
}

/// The crate directories under `crates/`.
fn crates() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(workspace().join("crates"))
        .expect("crates/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no crates found");
    out
}

fn name(dir: &Path) -> String {
    dir.file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned()
}

/// Every `.rs` file below `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The code of a file: without its `#[cfg(test)]` module (tests may print and write) and
/// without comment lines.
fn non_test_source(path: &Path) -> String {
    let text = fs::read_to_string(path).expect("source");
    let code = match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => &text,
    };
    code.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Crates allowed to print: the binary. Crates allowed to write files: the binary and the journal
/// (the one writer, through its transaction).
const PRINTS: &[&str] = &["cli"];
const WRITES: &[&str] = &["cli", "journal"];

#[test]
fn libraries_never_print_or_write_files() {
    let print = [
        "println!",
        "eprintln!",
        "print!(",
        "eprint!(",
        "std::io::stdout",
        "std::io::stderr",
    ];
    let write = [
        "fs::write(",
        "File::create(",
        "OpenOptions::new",
        "fs::rename(",
        "fs::remove_file(",
        "fs::create_dir",
        "fs::remove_dir",
    ];
    let mut offences = Vec::new();
    for dir in crates() {
        let krate = name(&dir);
        for file in rust_files(&dir.join("src")) {
            let text = non_test_source(&file);
            let forbidden = print
                .iter()
                .filter(|_| !PRINTS.contains(&krate.as_str()))
                .chain(write.iter().filter(|_| !WRITES.contains(&krate.as_str())));
            for needle in forbidden {
                if text.contains(needle) {
                    offences.push(format!("{}: {needle}", file.display()));
                }
            }
        }
    }
    assert!(
        offences.is_empty(),
        "libraries print or write:\n{}",
        offences.join("\n")
    );
}

/// The binary's messages go through `errln!`/`errprint!` and its data through `output`: the
/// standard and anstream print macros panic when the stream cannot be written (a full disk),
/// and a panic in collect would leave the repository patched.
#[test]
fn the_binary_uses_no_panicking_print_macro() {
    let mut offences = Vec::new();
    for file in rust_files(&workspace().join("crates/cli/src")) {
        let text = non_test_source(&file);
        for (at, _) in text.match_indices("print") {
            let after = &text[at + "print".len()..];
            let is_macro = after.starts_with("!(") || after.starts_with("ln!(");
            let ours = text[..at].ends_with("err");
            if is_macro && !ours {
                let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
                let line = text[start..].lines().next().unwrap_or_default().trim();
                offences.push(format!("{}: {line}", file.display()));
            }
        }
    }
    assert!(
        offences.is_empty(),
        "print macros that panic on an output error (use errln!/errprint! or output::print_text):\n{}",
        offences.join("\n")
    );
}

#[test]
fn only_the_binary_parses_arguments_or_erases_error_types() {
    // Libraries return their own error enums (thiserror) so callers can tell failures apart;
    // anyhow and clap belong to the binary.
    for dir in crates() {
        let manifest = fs::read_to_string(dir.join("Cargo.toml")).expect("manifest");
        let deps = manifest.split("[dev-dependencies]").next().unwrap_or("");
        for (dependency, why) in [
            ("\nclap", "parses arguments (clap belongs to the binary)"),
            (
                "\nanyhow",
                "erases its error types (anyhow belongs to the binary)",
            ),
        ] {
            assert!(
                name(&dir) == "cli" || !deps.contains(dependency),
                "{}: a library {why}",
                dir.display()
            );
        }
    }
}

#[test]
fn no_command_builds_another_commands_arguments() {
    // Commands call libraries with domain requests; an `other::Args { .. }` literal would make
    // one command depend on another's flags.
    let mut offences = Vec::new();
    for file in rust_files(&workspace().join("crates/cli/src")) {
        let text = non_test_source(&file);
        if text.contains("::Args {") {
            offences.push(file.display().to_string());
        }
    }
    assert!(
        offences.is_empty(),
        "hand-built clap structs:\n{}",
        offences.join("\n")
    );
}

/// Names one repository uses for its profiler, keys and classes: they live in the target
/// definitions (`crates/repository/src/definitions.yaml`), never as literals elsewhere.
const TARGET_NAMES: &[&str] = &[
    "create_profiler",
    "define_profiler",
    "ProfilerManager",
    "ModelRunner",
    "current_profiler",
    "FakeContextManager",
    "set_status",
    "enable_profiler",
    "model_config",
    "scheduler_config",
    "data_config",
    "executor/utils/profiler_context.py",
    "executor/model_runner.py",
];

#[test]
fn no_target_name_literal_outside_the_target_definitions() {
    let mut offences = Vec::new();
    for dir in crates().into_iter().filter(|d| name(d) != "repository") {
        for file in rust_files(&dir.join("src")) {
            let text = non_test_source(&file);
            for name in TARGET_NAMES {
                if text.contains(&format!("\"{name}\"")) {
                    offences.push(format!("{}: \"{name}\"", file.display()));
                }
            }
        }
    }
    assert!(
        offences.is_empty(),
        "target names as literals outside crates/repository:\n{}",
        offences.join("\n")
    );
}

/// Names a serving engine uses for its profiler settings, endpoints and package: they live in
/// its definition (`crates/repository/definitions/*.yaml`), never as literals in code.
const ENGINE_NAMES: &[&str] = &[
    "VLLM_TORCH_PROFILER_DIR",
    "VLLM_TORCH_PROFILER_WITH_STACK",
    "torch_profiler_dir",
    "torch_profiler_with_stack",
    "--profiler-config",
    "/start_profile",
    "/stop_profile",
    "vllm_ascend",
    ".async_llm",
];

#[test]
fn no_engine_name_literal_outside_the_engine_definitions() {
    let mut offences = Vec::new();
    for dir in crates() {
        for file in rust_files(&dir.join("src")) {
            let text = non_test_source(&file);
            for name in ENGINE_NAMES {
                if text.contains(&format!("\"{name}\"")) {
                    offences.push(format!("{}: \"{name}\"", file.display()));
                }
            }
        }
    }
    assert!(
        offences.is_empty(),
        "serving-engine names as literals in code:\n{}",
        offences.join("\n")
    );
}

#[test]
fn every_dependency_is_used() {
    let mut offences = Vec::new();
    for dir in crates().into_iter().chain([workspace().join("xtask")]) {
        let manifest = fs::read_to_string(dir.join("Cargo.toml")).expect("manifest");
        let mut sources = String::new();
        for sub in ["src", "tests", "benches", "build.rs"] {
            for file in rust_files(&dir.join(sub)) {
                sources.push_str(&fs::read_to_string(file).expect("source"));
            }
        }
        let mut section = "";
        for line in manifest.lines() {
            let line = line.trim();
            if line.starts_with('[') {
                section = line;
                continue;
            }
            if !matches!(section, "[dependencies]" | "[dev-dependencies]") {
                continue;
            }
            let Some(dep) = line.split(['.', '=', ' ']).next().filter(|d| !d.is_empty()) else {
                continue;
            };
            let ident = dep.replace('-', "_");
            if !sources.contains(&ident) {
                offences.push(format!("{}: {dep}", dir.display()));
            }
        }
    }
    assert!(
        offences.is_empty(),
        "dependencies never used:\n{}",
        offences.join("\n")
    );
}

#[test]
fn architecture_md_maps_every_crate() {
    let text = fs::read_to_string(workspace().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    for dir in crates() {
        let heading = format!("### `crates/{}`", name(&dir));
        assert!(text.contains(&heading), "ARCHITECTURE.md lacks `{heading}`");
    }
}

#[test]
fn architecture_md_line_counts_are_true() {
    let text = fs::read_to_string(workspace().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let (mut binary, mut largest_library) = (0usize, 0usize);
    for dir in crates() {
        let krate = name(&dir);
        let actual: usize = rust_files(&dir.join("src"))
            .iter()
            .map(|f| fs::read_to_string(f).expect("source").lines().count())
            .sum();
        if krate == "cli" {
            binary = actual;
        } else {
            largest_library = largest_library.max(actual);
        }
        let row = format!("| {krate} | ");
        let listed: usize = text
            .lines()
            .find_map(|l| l.strip_prefix(&row))
            .and_then(|rest| rest.trim_end_matches(['|', ' ']).parse().ok())
            .unwrap_or_else(|| panic!("ARCHITECTURE.md has no line-count row for {krate}"));
        let (lo, hi) = (listed * 8 / 10, listed * 12 / 10);
        assert!(
            (lo..=hi).contains(&actual),
            "ARCHITECTURE.md says {krate} has {listed} lines; it has {actual}"
        );
    }
    // The binary parses arguments and prints; logic that grows it belongs in a library.
    assert!(
        binary * 3 <= largest_library * 2,
        "the binary ({binary} lines) is over two thirds of the largest library ({largest_library})"
    );
}

#[test]
fn readme_families_table_names_every_definition() {
    let readme = fs::read_to_string(workspace().join("README.md")).expect("README.md");
    let defs = fs::read_to_string(workspace().join("crates/repository/src/definitions.yaml"))
        .expect("definitions");
    for line in defs.lines() {
        let Some(model) = line.trim().strip_prefix("- model: ") else {
            continue;
        };
        assert!(
            readme.contains(model.trim()),
            "README's families table does not name `{}`",
            model.trim()
        );
    }
}

/// The modules that allow `unsafe` (the workspace denies it): vector code and memory maps.
const UNSAFE_MODULES: &[&str] = &["crates/verify/src/simd.rs", "crates/verify/src/mapped.rs"];

#[test]
fn unsafe_is_allowed_only_in_the_listed_modules() {
    let root = workspace();
    let mut allowing: Vec<String> = ["crates", "xtask"]
        .iter()
        .flat_map(|dir| rust_files(&root.join(dir)))
        .filter(|f| {
            fs::read_to_string(f).expect("source").lines().any(|l| {
                let l = l.trim_start();
                l.starts_with("#![allow(unsafe_code") || l.starts_with("#[allow(unsafe_code")
            })
        })
        .map(|f| {
            f.strip_prefix(&root)
                .expect("in the workspace")
                .to_string_lossy()
                .replace('\\', "/")
        })
        .collect();
    allowing.sort();
    let mut listed: Vec<String> = UNSAFE_MODULES.iter().map(|m| (*m).to_owned()).collect();
    listed.sort();
    assert_eq!(allowing, listed, "modules that allow `unsafe`");
    let text = fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    for module in UNSAFE_MODULES {
        assert!(
            text.contains(&format!("`{module}`")),
            "ARCHITECTURE.md does not name `{module}` among the modules that allow `unsafe`"
        );
    }
}
