//! The top-level block scan agrees with the YAML parser, and a block parse is placed in the
//! whole document and bounded by tree-sitter-yaml's row counter.

use std::path::{Path, PathBuf};

use npuprof_repository::yaml_blocks::{self, BlockError, MAX_LINES};
use yaml_serde::Value;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every YAML file of the examples, the patch fixtures and the shape definitions.
fn yaml_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![
        workspace().join("examples"),
        workspace().join("crates/patch/tests/fixtures/yaml"),
        workspace().join("crates/repository/src"),
    ];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable directory") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                files.push(path);
            }
        }
    }
    files.sort();
    assert!(files.len() > 20, "found only {files:?}");
    files
}

/// The top-level keys the block scan finds.
fn scanned_keys(text: &str) -> Vec<String> {
    yaml_blocks::blocks(text)
        .unwrap_or_else(|e| panic!("{e}:\n{text}"))
        .into_iter()
        .map(|b| b.key.expect("a simple key"))
        .collect()
}

/// The top-level keys yaml_serde reads, in order.
fn parsed_keys(text: &str) -> Vec<String> {
    let value: Value = yaml_serde::from_str(text.trim_start_matches('\u{feff}'))
        .unwrap_or_else(|e| panic!("{e}:\n{text}"));
    value
        .as_mapping()
        .expect("a mapping")
        .keys()
        .map(|k| k.as_str().expect("a string key").to_owned())
        .collect()
}

/// The scan finds the parser's keys, and each block alone parses to the document's entry.
fn check_agrees(name: &str, text: &str) {
    assert_eq!(scanned_keys(text), parsed_keys(text), "{name}");
    let whole: Value = yaml_serde::from_str(text.trim_start_matches('\u{feff}')).expect("parses");
    for block in yaml_blocks::blocks(text).expect("blocks") {
        // The block ends before its last newline, which a block scalar keeps.
        let alone = format!(
            "{}\n",
            text[block.bytes.clone()].trim_start_matches('\u{feff}')
        );
        if alone.contains('*') {
            continue; // an alias needs its anchor from another block
        }
        let alone: Value = yaml_serde::from_str(&alone)
            .unwrap_or_else(|e| panic!("{name}: block {:?} alone: {e}", block.key));
        let key = block.key.as_deref().expect("key");
        assert_eq!(alone.get(key), whole.get(key), "{name}: block {key}");
    }
}

#[test]
fn the_scan_agrees_with_the_parser_on_every_yaml_file_of_the_project() {
    for path in yaml_files() {
        let text = std::fs::read_to_string(&path).expect("utf-8");
        if yaml_serde::from_str::<Value>(&text).is_err() {
            continue; // the syntax-error fixture
        }
        check_agrees(&path.display().to_string(), &text);
    }
}

/// Documents whose column-0 lines are not all keys, each named for what it tests.
const TRICKY: &[(&str, &str)] = &[
    (
        "comments and a document start",
        "%YAML 1.2\n---\n# a: 1\na: 1\n\n# b\nb: 2 # c: 3\n",
    ),
    ("a bom", "\u{feff}a: 1\nb: 2\n"),
    ("crlf", "a:\r\n  x: 1\r\nb: 2\r\n"),
    (
        "a block scalar with quotes and keys",
        "a: |\n  say \"hi\n  b: no\n\n  [c\nd: 1\n",
    ),
    (
        "a folded scalar under a sequence",
        "a:\n  - >-\n    it's \"open\n  - x\nb: 1\n",
    ),
    (
        "a block scalar of a nested key",
        "a:\n  - k: |\n      \"x\n    j: 1\nb: 2\n",
    ),
    (
        "a double-quoted scalar over lines",
        "a: \"one\n  b: two \\\" three\"\nc: 1\n",
    ),
    (
        "a single-quoted scalar over lines",
        "a: 'it''s\n  b: x'\nc: 1\n",
    ),
    (
        "a flow sequence over lines",
        "a: [1,\n  {b: \"]\"},\n  3]\nc: 1\n",
    ),
    (
        "a flow mapping with a comment",
        "a: {x: 1, # }\n  y: 2}\nc: 1\n",
    ),
    (
        "a plain scalar over lines",
        "a: one\n  \"two\n  [three\nb: 1\n",
    ),
    (
        "apostrophes and brackets in plain scalars",
        "a: it's a[0]\nb: x #'\nc: 'y'\n",
    ),
    ("quoted keys", "\"a b\": 1\n'c''d': 2\ne f: 3\n"),
    (
        "anchors, tags and merge keys",
        "base: &b\n  x: 1\nm:\n  <<: *b\n  y: !!str 2\nn: &c [1]\n",
    ),
    ("a tab after the colon", "a:\t1\nb:\n  c: 2\n"),
    ("an indented top level", "  a: 1\n  b:\n    c: 2\n"),
    ("a key with a colon inside", "a:b: 1\nhttp://x: 2\n"),
    (
        "a key-like line at column 0 inside double quotes",
        "a: \"one\nb: two\"\nc: 1\n",
    ),
    (
        "a key-like line at column 0 inside single quotes",
        "a: 'one\nb: two'\nc: 1\n",
    ),
    (
        "a key-like line at column 0 inside a flow sequence",
        "a: [1,\nb: 2]\nc: 1\n",
    ),
    (
        "a flow sequence closed at column 0",
        "a: [1,\n  2\n]\nc: 1\n",
    ),
    (
        "a comment at column 0 after a block scalar",
        "a: |\n  x\n# b: 1\nc: 1\n",
    ),
];

#[test]
fn the_scan_agrees_with_the_parser_on_tricky_documents() {
    for (name, text) in TRICKY {
        check_agrees(name, text);
    }
}

#[test]
fn blocks_leave_out_trailing_comments_and_blank_lines() {
    let text = "# head\na:\n  x: 1\n  # inner\n  y: 2\n\n# about b\nb: |\n  text\n\n";
    let blocks = yaml_blocks::blocks(text).expect("blocks");
    let texts: Vec<&str> = blocks.iter().map(|b| &text[b.bytes.clone()]).collect();
    assert_eq!(texts, ["a:\n  x: 1\n  # inner\n  y: 2", "b: |\n  text"]);
    assert_eq!((blocks[1].first_row, blocks[1].last_row), (7, 8));
}

#[test]
fn a_second_document_ends_the_scan() {
    assert_eq!(scanned_keys("a: 1\n---\nb: 2\n"), ["a"]);
    assert_eq!(scanned_keys("---\na: 1\n...\nb: 2\n"), ["a"]);
}

#[test]
fn a_top_level_that_is_no_block_mapping_is_named() {
    for (text, line) in [
        ("- a\n- b\n", 1),
        ("a: 1\nplain\n", 2),
        ("a: 1\nb:c\n", 2),
        ("{a: 1}\n", 1),
        ("  a: 1\nb: 2\n", 2),
    ] {
        match yaml_blocks::blocks(text) {
            Err(BlockError::NotAMapping { line: l, .. }) => assert_eq!(l, line, "{text:?}"),
            other => panic!("{text:?}: {other:?}"),
        }
    }
}

/// `lines` entries `kN: N` under `key:`, between `before` and `after` other top-level keys.
fn document(before: usize, key: &str, lines: usize, after: usize) -> String {
    let mut text = String::new();
    for i in 0..before {
        text.push_str(&format!("before_{i}: {i}\n"));
    }
    text.push_str(&format!("{key}:\n"));
    for i in 1..lines {
        text.push_str(&format!("  k{i}: {i}\n"));
    }
    for i in 0..after {
        text.push_str(&format!("after_{i}: {i}\n"));
    }
    text
}

#[test]
fn a_block_parse_has_the_positions_of_the_whole_document() {
    let text = document(40_000, "mid", 3, 40_000);
    let blocks = yaml_blocks::blocks(&text).expect("blocks");
    assert_eq!(blocks.len(), 80_001);
    let mid = yaml_blocks::find(&blocks, "mid").expect("mid");
    let tree = yaml_blocks::parse(&text, mid).expect("parses");
    let root = tree.root_node();
    assert!(!root.has_error());
    assert_eq!(root.start_position().row, 40_000);
    assert_eq!(root.start_byte(), mid.bytes.start);
    assert_eq!(root.end_byte(), mid.bytes.end);
    let last = text.rfind("k2: 2").expect("k2");
    let leaf = root
        .descendant_for_byte_range(last, last + 2)
        .expect("the key k2");
    assert_eq!(
        (leaf.start_position().row, leaf.start_byte()),
        (40_002, last)
    );
}

#[test]
fn a_block_of_max_lines_parses_and_one_more_is_refused() {
    let fits = document(2, "big", MAX_LINES, 2);
    let blocks = yaml_blocks::blocks(&fits).expect("blocks");
    let big = yaml_blocks::find(&blocks, "big").expect("big");
    assert_eq!(big.lines(), MAX_LINES);
    let tree = yaml_blocks::parse(&fits, big).expect("within the limit");
    assert!(!tree.root_node().has_error());

    let over = document(2, "big", MAX_LINES + 1, 2);
    let blocks = yaml_blocks::blocks(&over).expect("blocks");
    let big = yaml_blocks::find(&blocks, "big").expect("big");
    let err = yaml_blocks::parse(&over, big).expect_err("over the limit");
    assert_eq!(
        err.to_string(),
        "the top-level block `big` spans 32769 lines (3-32771); tree-sitter-yaml, which npuprof \
         reads YAML with, handles at most 32768 lines at once: move other entries out of `big` \
         or edit it by hand"
    );
    // The refusal is needed: the grammar itself fails on the longer block.
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&tree_sitter_yaml::LANGUAGE.into())
        .expect("language");
    let block = &over[big.bytes.clone()];
    assert!(
        parser
            .parse(block, None)
            .expect("tree")
            .root_node()
            .has_error()
    );
}

/// Nesting past [`MAX_DEPTH`] is refused before a parser sees it, naming the line where the
/// limit is passed (200 KB of `[` made route take 55 s and patch 100 s); block scalars' text,
/// comments and quoted brackets do not count, and the bundled run configs pass.
#[test]
fn nesting_past_the_limit_is_refused_at_its_line() {
    use npuprof_repository::yaml_blocks::{BlockError, MAX_DEPTH, check_depth};
    let bomb = format!("model_config:\n  x: {}\n", "[".repeat(200_000));
    let started = std::time::Instant::now();
    assert_eq!(
        check_depth(&bomb),
        Err(BlockError::TooDeep {
            line: 2,
            depth: MAX_DEPTH + 1
        })
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    // Deep indentation: each line one level deeper than the one before.
    let deep: String = (0..200)
        .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
        .collect();
    assert_eq!(
        check_depth(&deep),
        Err(BlockError::TooDeep {
            line: MAX_DEPTH + 1,
            depth: MAX_DEPTH + 1
        })
    );
    // What does not nest: a block scalar's text, brackets in quotes and comments.
    let text: String = (0..200)
        .map(|i| format!("{}line {i}\n", " ".repeat(i + 2)))
        .collect();
    let fine = format!(
        "notes: |\n{text}model_config:\n  name: \"{}\"  # {}\n  list: [1, [2, {{a: 3}}]]\n",
        "[".repeat(500),
        "{".repeat(500)
    );
    assert_eq!(check_depth(&fine), Ok(()));
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut stack = vec![examples];
    let mut checked = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).expect("dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                let text = std::fs::read_to_string(&path).expect("yaml");
                assert_eq!(check_depth(&text), Ok(()), "{}", path.display());
                checked += 1;
            }
        }
    }
    assert!(checked > 10, "{checked}");
}
