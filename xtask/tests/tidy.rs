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
    non_test_source_of(&fs::read_to_string(path).expect("source"))
}

/// [`non_test_source`] of a text.
fn non_test_source_of(text: &str) -> String {
    let code = match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => text,
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

/// Names one repository uses for its profiler, keys and classes: they live in the repository
/// definitions (`crates/repository/definitions/*.yaml`), never as literals elsewhere.
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

/// Path segments and scripts of a repository's layout: they live in the definitions' `layout`
/// (`crates/repository/definitions/*.yaml`), read through `npuprof_repository::layout`. A string
/// literal in code (not tests, not comments) that is or holds one of these is an offence;
/// `join("config")` is one wherever it stands.
const LAYOUT_LITERALS: &[&str] = &[
    "\"models\"",
    "\"res\"",
    "join(\"config\")",
    "models/",
    "/config/",
    "/res/",
    "function.sh",
    "infer.sh",
    "executor/scripts",
];

/// Files allowed layout literals, each with its reason.
const LAYOUT_LITERAL_ALLOWED: &[(&str, &str)] = &[
    (
        "crates/cli/src/examples.rs",
        "the help's worked examples are commands on the bundled examples/recipes-mini, checked by \
         help_examples.rs: text for people, not paths npuprof builds",
    ),
    (
        "crates/runs/src/error.rs",
        "a static hint about verify's input (a result directory), for people: the output model \
         discovers the run directories inside it by their own markers, not by this path",
    ),
    (
        "crates/runs/src/profiler_info.rs",
        "`/config/common_config` is a JSON pointer into torch_npu's profiler_info.json, not a \
         repository path",
    ),
];

/// The string literals of some code, each with its quotes (a `'"'` character literal is not a
/// quote).
fn string_literals(code: &str) -> Vec<String> {
    let code = code.replace("'\"'", "'_'");
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    let mut escaped = false;
    for c in code.chars() {
        match current.as_mut() {
            None if c == '"' => current = Some(String::from('"')),
            None => {}
            Some(literal) => {
                literal.push(c);
                if c == '"' && !escaped {
                    out.extend(current.take());
                }
                escaped = c == '\\' && !escaped;
            }
        }
    }
    out
}

/// The code ([`non_test_source`]) of every `crates/*/src` file but the `allowed` ones (`(path,
/// reason)`), by its `/`-separated path relative to the workspace.
fn library_code_except(allowed: &[(&str, &str)]) -> Vec<(String, String)> {
    let root = workspace();
    let mut out = Vec::new();
    for dir in crates() {
        for file in rust_files(&dir.join("src")) {
            let rel = file
                .strip_prefix(&root)
                .expect("in the workspace")
                .to_string_lossy()
                .replace('\\', "/");
            if !allowed.iter().any(|(f, _)| *f == rel) {
                out.push((rel, non_test_source(&file)));
            }
        }
    }
    out
}

/// The layout literals `code` holds.
fn layout_literals(code: &str) -> Vec<String> {
    let literals = string_literals(code);
    LAYOUT_LITERALS
        .iter()
        .filter(|pattern| {
            if pattern.starts_with("join(") {
                code.contains(*pattern)
            } else if pattern.starts_with('"') {
                literals.iter().any(|l| l == *pattern)
            } else {
                literals.iter().any(|l| l.contains(*pattern))
            }
        })
        .map(|p| (*p).to_owned())
        .collect()
}

#[test]
fn no_layout_literal_outside_the_repository_definitions() {
    let mut offences = Vec::new();
    for (rel, code) in library_code_except(LAYOUT_LITERAL_ALLOWED) {
        for literal in layout_literals(&code) {
            offences.push(format!("{rel}: {literal}"));
        }
    }
    assert!(
        offences.is_empty(),
        "repository layout literals outside crates/repository/definitions (read them from the \
         definition's layout):\n{}",
        offences.join("\n")
    );
}

/// The names a serving-engine definition gives, read from every compiled-in `serving-engine`
/// definition (`crates/repository/definitions/*.yaml`): its serve command's options, its
/// profiler settings' variables, flag, keys and evidence, its endpoints, package, profiler files
/// and output names. Code reads them from the definition; none is written in a string literal.
fn engine_names() -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for d in npuprof_repository::Catalog::builtin().engines() {
        names.extend(d.command.options().map(|(_, n)| n.to_owned()));
        let h = &d.http;
        names.extend(
            [
                &h.health,
                &h.start,
                &h.stop,
                &h.completions,
                &h.chat,
                &h.ignore_eos_field,
            ]
            .map(String::clone),
        );
        for style in &d.styles {
            names.extend([style.dir_key(), style.stack_key()].map(str::to_owned));
            names.extend(style.flag.clone());
            names.push(style.evidence.clone());
            names.extend(
                [&style.dir_env, &style.stack_env, &style.shapes_env]
                    .into_iter()
                    .flatten()
                    .cloned(),
            );
            if let Some(body) = &style.body {
                names.extend(
                    [
                        &body.dir,
                        &body.stack,
                        &body.shapes,
                        &body.steps,
                        &body.by_stage,
                    ]
                    .map(String::clone),
                );
            }
            names.extend(style.host_files.iter().cloned());
        }
        let detect = &d.detect;
        names.extend([
            detect.package_dir.clone(),
            detect.checkout.text.clone(),
            detect.dist_info_prefix.clone(),
        ]);
        names.extend(detect.import_modules.iter().cloned());
        names.extend(detect.host_package.iter().cloned());
        names.extend(
            [
                &d.results.frontend_trace_suffix,
                &d.results.frontend_off_key,
                &d.async_parse_evidence,
                &d.worker_name_evidence,
                &d.run_prefix_evidence,
            ]
            .into_iter()
            .flatten()
            .cloned(),
        );
        names.extend(d.experimental_config.iter().map(|e| e.evidence.clone()));
        for mode in &d.exclusive_modes {
            names.extend(mode.evidence.iter().cloned());
        }
        if let Some(pd) = &d.pd {
            names.extend(pd.options.iter().cloned());
            names.extend(pd.proxy_files.iter().cloned());
        }
        names.extend(d.profiler_files.iter().cloned());
    }
    names.retain(|n| !n.is_empty() && !SHARED_NAMES.iter().any(|(shared, _)| shared == n));
    names.sort();
    names.dedup();
    names
}

/// Names a definition holds that are not the engine's own: torch_npu's API, which every
/// profiler call spells, and npuprof's own options. Each with its reason.
const SHARED_NAMES: &[(&str, &str)] = &[
    (
        "with_stack",
        "torch_npu.profiler.profile's argument, in every profiler call",
    ),
    (
        "record_shapes",
        "torch_npu.profiler.profile's argument, in every profiler call",
    ),
    (
        "_ExperimentalConfig",
        "torch_npu's class, which lint, patch and verify name",
    ),
    (
        "--model",
        "npuprof's own option (and one spelling of SGLang's --model-path)",
    ),
];

/// Files allowed engine names in their string literals, each with its reason.
const ENGINE_NAME_ALLOWED: &[(&str, &str)] = &[
    (
        "crates/cli/src/examples.rs",
        "the help's worked examples are command lines people type (a serve command with its \
         options), checked by help_examples.rs",
    ),
    (
        "crates/repository/src/catalog.rs",
        "the compiled-in definitions are listed by their file names",
    ),
];

/// The engine names (of `names`) that a string literal of `code` holds as a whole word: not
/// inside a longer identifier, option or path segment (`--tp-size` does not hold `-tp`).
fn engine_literals(code: &str, names: &[String]) -> Vec<String> {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let literals = string_literals(code);
    names
        .iter()
        .filter(|name| {
            literals.iter().any(|literal| {
                literal.match_indices(name.as_str()).any(|(at, _)| {
                    let before = literal[..at].chars().next_back();
                    let after = literal[at + name.len()..].chars().next();
                    !before.is_some_and(word) && !after.is_some_and(word)
                })
            })
        })
        .cloned()
        .collect()
}

#[test]
fn no_engine_name_literal_outside_the_engine_definitions() {
    let names = engine_names();
    let mut offences = Vec::new();
    for (rel, code) in library_code_except(ENGINE_NAME_ALLOWED) {
        for name in engine_literals(&code, &names) {
            offences.push(format!("{rel}: {name}"));
        }
    }
    assert!(
        offences.is_empty(),
        "serving-engine names in string literals of code (read them from the engine's \
         definition):\n{}",
        offences.join("\n")
    );
}

#[test]
fn the_engine_names_come_from_the_definitions_and_are_found_in_literals() {
    let names = engine_names();
    for expected in [
        "--tensor-parallel-size",
        "-tp",
        "--pipeline-parallel-size",
        "-pp",
        "--served-model-name",
        "--host",
        "--port",
        "VLLM_TORCH_PROFILER_DIR",
        "VLLM_TORCH_PROFILER_WITH_STACK",
        "torch_profiler_dir",
        "torch_profiler_with_stack",
        "--profiler-config",
        "/health",
        "/start_profile",
        "/stop_profile",
        "/v1/completions",
        "vllm_ascend",
        ".async_llm",
        "ignore_frontend",
        "ignore_eos",
        "sglang",
        "vllm",
        "SGLANG_TORCH_PROFILER_DIR",
        "SGLANG_PROFILE_WITH_STACK",
        "SGLANG_PROFILE_RECORD_SHAPES",
        "output_dir",
        "num_steps",
        "profile_by_stage",
        "--model-path",
        "--tp-size",
        "msmonitor_use_daemon",
        "profile_prefix",
        "--kv-transfer-config",
        "--disaggregation-mode",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} not in {names:?}"
        );
    }
    let code = r#"let known = ["--tensor-parallel-size", "--tp-size", "x-tp"];
        let hint = format!("its {key} or VLLM_TORCH_PROFILER_DIR");
        let url = format!("{base}/start_profile");
        // "--port" in a comment is not code
        let word = "PORT"; let tp = "tp";"#;
    let code = non_test_source_of(code);
    assert_eq!(
        engine_literals(&code, &names),
        [
            "--tensor-parallel-size",
            "--tp-size",
            "/start_profile",
            "VLLM_TORCH_PROFILER_DIR"
        ]
    );
}

#[test]
fn every_engine_name_allowance_is_needed() {
    let names = engine_names();
    for (file, _) in ENGINE_NAME_ALLOWED {
        assert!(
            !engine_literals(&non_test_source(&workspace().join(file)), &names).is_empty(),
            "{file} is allowed engine names but holds none: drop it from the list"
        );
    }
}

#[test]
fn every_layout_literal_allowance_is_needed() {
    for (file, _) in LAYOUT_LITERAL_ALLOWED {
        assert!(
            !layout_literals(&non_test_source(&workspace().join(file))).is_empty(),
            "{file} is allowed layout literals but holds none: drop it from the list"
        );
    }
}

#[test]
fn the_layout_literal_check_reads_string_literals() {
    let code =
        r#"let a = repo.join("models"); let q = '"'; let b = format!("x \"models/\" {}", 1);"#;
    assert_eq!(layout_literals(code), ["\"models\"", "models/"]);
    assert!(layout_literals(r#"let models = "model_config"; // models/"#).is_empty());
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
    let (mut binary, mut libraries) = (0usize, 0usize);
    for dir in crates() {
        let krate = name(&dir);
        let actual: usize = rust_files(&dir.join("src"))
            .iter()
            .map(|f| fs::read_to_string(f).expect("source").lines().count())
            .sum();
        if krate == "cli" {
            binary = actual;
        } else {
            libraries += actual;
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
    // The binary parses arguments and prints; logic that grows it belongs in a library. (Measured
    // against all libraries together: splitting a library must not loosen or tighten the rule.)
    assert!(
        binary * 6 <= libraries,
        "the binary ({binary} lines) is over a sixth of the libraries together ({libraries})"
    );
}

#[test]
fn the_families_table_names_every_definition() {
    let readme = fs::read_to_string(workspace().join("docs/repositories-and-route.md"))
        .expect("docs/repositories-and-route.md");
    let mut defs = String::new();
    for entry in fs::read_dir(workspace().join("crates/repository/definitions")).expect("dir") {
        defs.push_str(&fs::read_to_string(entry.expect("entry").path()).expect("definition"));
    }
    for line in defs.lines() {
        let Some(model) = line.trim().strip_prefix("- model: ") else {
            continue;
        };
        assert!(
            readme.contains(model.trim()),
            "docs/repositories-and-route.md's families table does not name `{}`",
            model.trim()
        );
    }
}

/// The `.rs` files of `crates/` and `xtask/` that `keep` admits, `/`-separated relative to the
/// workspace root.
fn workspace_files_where(keep: impl Fn(&Path) -> bool) -> Vec<String> {
    let root = workspace();
    ["crates", "xtask"]
        .iter()
        .flat_map(|dir| rust_files(&root.join(dir)))
        .filter(|f| keep(f))
        .map(|f| {
            f.strip_prefix(&root)
                .expect("in the workspace")
                .to_string_lossy()
                .replace('\\', "/")
        })
        .collect()
}

/// The modules that allow `unsafe` (the workspace denies it): vector code and memory maps.
const UNSAFE_MODULES: &[&str] = &["crates/scan/src/simd.rs", "crates/scan/src/mapped.rs"];

#[test]
fn unsafe_is_allowed_only_in_the_listed_modules() {
    let root = workspace();
    let mut allowing = workspace_files_where(|f| {
        fs::read_to_string(f).expect("source").lines().any(|l| {
            let l = l.trim_start();
            l.starts_with("#![allow(unsafe_code") || l.starts_with("#[allow(unsafe_code")
        })
    });
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

#[test]
fn one_severity_is_defined() {
    let defining = workspace_files_where(|f| {
        non_test_source(f).lines().any(|l| {
            l.trim_start().starts_with("pub enum Severity")
                || l.trim_start().starts_with("enum Severity")
        })
    });
    assert_eq!(
        defining,
        ["crates/severity/src/lib.rs"],
        "Severity is defined once, in npuprof-severity (others re-export it)"
    );
}

/// The crate that holds all `unsafe` code: the scanning engine.
const ENGINE: &str = "scan";

/// Whether `code` uses the `unsafe` keyword (a whole word, outside comment lines).
fn uses_unsafe(code: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    code.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .any(|l| {
            l.match_indices("unsafe").any(|(i, _)| {
                let before = l[..i].chars().next_back();
                let after = l[i + "unsafe".len()..].chars().next();
                !before.is_some_and(word) && !after.is_some_and(word)
            })
        })
}

#[test]
fn no_crate_above_the_engine_uses_unsafe() {
    assert!(uses_unsafe("    unsafe { f() }") && uses_unsafe("pub unsafe fn f() {}"));
    assert!(!uses_unsafe(
        "#![deny(unsafe_code)]\n// unsafe here is a comment"
    ));
    let root = workspace();
    let dirs = crates()
        .into_iter()
        .filter(|d| name(d) != ENGINE)
        .flat_map(|d| [d.join("src"), d.join("tests"), d.join("benches")])
        .chain([root.join("xtask/src")]);
    let offences: Vec<String> = dirs
        .flat_map(|d| rust_files(&d))
        .filter(|f| uses_unsafe(&fs::read_to_string(f).expect("source")))
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        offences.is_empty(),
        "`unsafe` outside crates/{ENGINE}:\n{}",
        offences.join("\n")
    );
    for module in UNSAFE_MODULES {
        assert!(
            module.starts_with(&format!("crates/{ENGINE}/src/")),
            "{module} allows `unsafe` outside the engine"
        );
    }
}

/// ARCHITECTURE.md's layers, bottom up: `| <n> | crate, crate |` rows.
fn layers(text: &str) -> std::collections::BTreeMap<String, usize> {
    let mut out = std::collections::BTreeMap::new();
    for line in text.lines() {
        let mut cells = line.split('|').map(str::trim);
        let (Some(""), Some(n), Some(names)) = (cells.next(), cells.next(), cells.next()) else {
            continue;
        };
        let Ok(layer) = n.parse::<usize>() else {
            continue;
        };
        for krate in names.split(',').map(str::trim).filter(|c| !c.is_empty()) {
            assert!(
                out.insert(krate.to_owned(), layer).is_none(),
                "ARCHITECTURE.md lists {krate} in two layers"
            );
        }
    }
    out
}

/// The workspace crates a manifest depends on (`npuprof-<name>`, dev-dependencies included).
fn workspace_dependencies(manifest: &str) -> Vec<String> {
    let mut section = "";
    let mut out = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
        } else if section.ends_with("dependencies]")
            && let Some(dep) = line.strip_prefix("npuprof-")
        {
            let dep = dep.split(['.', '=', ' ']).next().unwrap_or_default();
            out.push(dep.to_owned());
        }
    }
    out
}

#[test]
fn dependencies_point_down_the_layers_only() {
    let text = fs::read_to_string(workspace().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let layers = layers(&text);
    let mut offences = Vec::new();
    for dir in crates() {
        let krate = name(&dir);
        let Some(&own) = layers.get(&krate) else {
            offences.push(format!("{krate}: in no layer of ARCHITECTURE.md"));
            continue;
        };
        let manifest = fs::read_to_string(dir.join("Cargo.toml")).expect("manifest");
        for dep in workspace_dependencies(&manifest) {
            match layers.get(&dep) {
                Some(&below) if below < own => {}
                Some(&other) => offences.push(format!(
                    "{krate} (layer {own}) depends on {dep} (layer {other}): not below it"
                )),
                None => offences.push(format!("{krate}: {dep} is in no layer")),
            }
        }
    }
    assert!(
        offences.is_empty(),
        "dependencies that do not point down:\n{}",
        offences.join("\n")
    );
    assert_eq!(layers.get(ENGINE), Some(&0), "the engine is at the bottom");
}

/// What a Python value evaluator is made of, each with why it belongs to the semantic layer.
const EVALUATOR_MARKERS: &[(&str, &str)] = &[
    (
        "\"string_content\"",
        "reads string literals (`semantic::literal`)",
    ),
    ("\"interpolation\"", "reads f-strings (`semantic::value`)"),
    (
        "\"aliased_import\"",
        "resolves import aliases (`semantic::imports`)",
    ),
    (
        "\"default_parameter\"",
        "reads parameters (`semantic::params`)",
    ),
    (
        "\"typed_parameter\"",
        "reads parameters (`semantic::params`)",
    ),
    ("fn eval(", "evaluates expressions (`semantic::value`)"),
    ("fn eval_", "evaluates expressions (`semantic::value`)"),
    ("fn evaluate(", "evaluates expressions (`semantic::value`)"),
    (
        "fn resolve_value",
        "resolves names to values (`semantic::resolve`)",
    ),
];

/// One Python semantic layer: only `crates/syntax` reads literals, imports and parameters or
/// evaluates expressions; every other crate asks its `semantic` module.
#[test]
fn python_values_are_evaluated_only_in_the_semantic_layer() {
    let mut offences = Vec::new();
    for dir in crates().into_iter().filter(|d| name(d) != "syntax") {
        for file in rust_files(&dir.join("src")) {
            let text = non_test_source(&file);
            for (marker, why) in EVALUATOR_MARKERS {
                if text.contains(marker) {
                    offences.push(format!("{}: {marker} {why}", file.display()));
                }
            }
        }
    }
    assert!(
        offences.is_empty(),
        "Python evaluated outside npuprof_syntax::semantic:\n{}",
        offences.join("\n")
    );
}

/// What reads or writes files, lists directories or asks the filesystem about a path, in Rust code.
const FILE_IO: &[&str] = &[
    "fs::",
    "File::",
    "OpenOptions",
    "DirBuilder",
    ".canonicalize(",
    ".exists(",
    ".is_dir(",
    ".is_file(",
    ".metadata(",
    ".read_link(",
];

/// The binary's own file IO, each allowance with its reason: `(file, needle, reason)`.
const BINARY_FILE_IO_ALLOWED: &[(&str, &str, &str)] = &[];

/// The file IO needles in `code`.
fn file_io(code: &str) -> Vec<&'static str> {
    FILE_IO
        .iter()
        .copied()
        .filter(|needle| code.contains(needle))
        .collect()
}

/// The binary parses, calls and prints: it reads and writes no file of its own (the
/// libraries read; the journal writes), the allowances aside.
#[test]
fn the_binary_has_no_file_reads_or_writes_of_its_own() {
    let cli = workspace().join("crates/cli/src");
    let mut offences = Vec::new();
    for file in rust_files(&cli) {
        let rel = file
            .strip_prefix(workspace())
            .expect("in the workspace")
            .to_string_lossy()
            .replace('\\', "/");
        for needle in file_io(&non_test_source(&file)) {
            let allowed = BINARY_FILE_IO_ALLOWED
                .iter()
                .any(|(path, allowed, _)| *path == rel && *allowed == needle);
            if !allowed {
                offences.push(format!("{rel}: {needle}"));
            }
        }
    }
    assert!(
        offences.is_empty(),
        "the binary reads or writes files itself (move it into a library, or allow it with a reason):\n{}",
        offences.join("\n")
    );
    for (path, needle, reason) in BINARY_FILE_IO_ALLOWED {
        assert!(!reason.is_empty(), "{path}: give the allowance a reason");
        assert!(
            file_io(&non_test_source(&workspace().join(path))).contains(needle),
            "{path} is allowed `{needle}` but does not use it: drop it from the list"
        );
    }
}

#[test]
fn the_file_io_check_sees_reads_writes_and_listings() {
    for code in [
        "let t = std::fs::read_to_string(p)?;",
        "use std::fs; let d = fs::read_dir(p);",
        "let f = File::open(p)?;",
        "let f = std::fs::OpenOptions::new().open(p);",
        "std::fs::DirBuilder::new().create(p)",
        "let abs = path.canonicalize()?;",
        "if !log.is_file() { bail!() }",
        "if dir.join(\"x\").exists() {}",
    ] {
        assert!(!file_io(code).is_empty(), "{code}");
    }
    assert!(file_io("let t = npuprof_repository::nearby::yaml_files_in(dir);").is_empty());
}
