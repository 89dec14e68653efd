//! Data-driven tests of the `.xg` front end.
//!
//! - `data/diagnostics/*.xg`: each file is checked with entry rule `root`; the
//!   rendered diagnostics must equal `NAME.stderr` beside it. Together the
//!   files must produce every diagnostic code the front end has.
//! - `data/syntax/*.xg`: each file uses some syntax forms and must check with
//!   no diagnostic at all; `xg fmt`'s output must equal `NAME.fmt`, be a fixed
//!   point, and parse to the same tree.
//!
//! Set `XG_BLESS=1` to rewrite the expected files from the current output;
//! `XG_FILTER=text` runs only the files whose name contains `text`.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::strip_spans;
use xg_compiler::{Diagnostics, Request, Sources, pipeline, syntax};
use xg_runtime::{TokenId, Vocabulary};

/// Every diagnostic code the front end can produce; each must appear in some
/// `data/diagnostics` file.
const CODES: &[&str] = &[
    "attribute-value",
    "bad-dispatch-option",
    "bad-escape",
    "bad-macro-argument",
    "bad-range",
    "bad-regex-flag",
    "dispatch-conflict",
    "duplicate-attribute",
    "duplicate-rule",
    "duplicate-trigger",
    "expected-rule",
    "import-cycle",
    "import-not-found",
    "invalid-json",
    "invalid-regex",
    "invalid-syntax",
    "invalid-utf8",
    "json-schema",
    "json-schema-approximated",
    "json-schema-not-found",
    "limit-below-shortest",
    "missing-root",
    "name-clash",
    "nesting-too-deep",
    "non-productive",
    "number-too-large",
    "repetition-too-large",
    "reversed-range",
    "single-quoted-string",
    "token-needs-vocabulary",
    "undefined-rule",
    "unexpected-character",
    "unexpected-end",
    "unexpected-token",
    "unknown-attribute",
    "unknown-directive",
    "unreachable-rule",
    "unreachable-trigger",
    "unterminated-class",
    "unterminated-json",
    "unterminated-regex",
    "unterminated-string",
    "unused-import",
];

fn data_dir(kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join(kind)
}

/// The `.xg` files directly in `dir`, filtered by `XG_FILTER`.
fn cases(dir: &Path) -> Vec<PathBuf> {
    let filter = std::env::var("XG_FILTER").unwrap_or_default();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("test data folder exists")
        .map(|entry| entry.expect("readable folder").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "xg"))
        .filter(|path| path.to_string_lossy().contains(&filter))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no test files in {}", dir.display());
    files
}

/// Checks `path` as the test suite sees it: named relative to the data folder,
/// so output does not depend on where the checkout is.
fn check(path: &Path, kind: &str) -> (Sources, Diagnostics) {
    let mut request = Request::ahead_of_time();
    let bytes = std::fs::read(path).expect("readable test file");
    let name = format!("{kind}/{}", path.file_name().unwrap().to_string_lossy());
    let file = request.sources.add_bytes(
        name,
        &bytes,
        path.parent().map(Path::to_path_buf),
        &mut request.diagnostics,
    );
    pipeline::check(&mut request, file, "root");
    (request.sources, request.diagnostics)
}

/// Compares `actual` with the file at `expected`, or rewrites it under `XG_BLESS`.
fn compare(expected: &Path, actual: &str, failures: &mut Vec<String>) {
    if std::env::var_os("XG_BLESS").is_some() {
        std::fs::write(expected, actual).expect("writable expected file");
        return;
    }
    let want = std::fs::read_to_string(expected).unwrap_or_default();
    if want != actual {
        failures.push(format!(
            "{}: output differs\n--- expected\n{want}\n--- actual\n{actual}",
            expected.display()
        ));
    }
}

#[test]
fn diagnostics_match_snapshots() {
    let mut failures = Vec::new();
    let mut seen = BTreeSet::new();
    for path in cases(&data_dir("diagnostics")) {
        let (sources, diagnostics) = check(&path, "diagnostics");
        if diagnostics.is_empty() {
            failures.push(format!(
                "{}: expected diagnostics, got none",
                path.display()
            ));
        }
        seen.extend(diagnostics.iter().map(|d| d.code));
        compare(
            &path.with_extension("stderr"),
            &diagnostics.render(&sources, false),
            &mut failures,
        );
    }
    if std::env::var("XG_FILTER").is_err() {
        for code in CODES {
            if !seen.contains(code) {
                failures.push(format!("no test file produces diagnostic `{code}`"));
            }
        }
        for code in &seen {
            if !CODES.contains(code) {
                failures.push(format!("diagnostic `{code}` is missing from CODES"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The tree of a file with every span removed, for comparing two parses.
fn items_without_spans(sources: &mut Sources, name: &str, text: &str) -> String {
    let file = sources.add(name, text, None);
    let mut diagnostics = Diagnostics::new();
    let ast = syntax::parse(file, text, &mut diagnostics);
    assert!(
        !diagnostics.has_errors(),
        "{name} does not parse:\n{}",
        diagnostics.render(sources, false)
    );
    strip_spans(&format!("{:?}", ast.items))
}

#[test]
fn syntax_forms_check_cleanly_and_format_canonically() {
    let mut failures = Vec::new();
    for path in cases(&data_dir("syntax")) {
        let (sources, diagnostics) = check(&path, "syntax");
        if !diagnostics.is_empty() {
            failures.push(format!(
                "{}:\n{}",
                path.display(),
                diagnostics.render(&sources, false)
            ));
            continue;
        }
        let mut sources = Sources::new();
        let text = std::fs::read_to_string(&path).expect("readable");
        let file = sources.add("original", text.clone(), None);
        let mut diagnostics = Diagnostics::new();
        let formatted = syntax::print(&syntax::parse(file, &text, &mut diagnostics));
        compare(&path.with_extension("fmt"), &formatted, &mut failures);

        let file = sources.add("formatted", formatted.clone(), None);
        let again = syntax::print(&syntax::parse(file, &formatted, &mut diagnostics));
        if again != formatted {
            failures.push(format!(
                "{}: formatting is not a fixed point:\n{again}",
                path.display()
            ));
        }
        let before = items_without_spans(&mut sources, "before", &text);
        let after = items_without_spans(&mut sources, "after", &formatted);
        if before != after {
            failures.push(format!("{}: formatting changed the tree", path.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn json_format_locates_every_diagnostic() {
    let path = data_dir("diagnostics").join("many_errors.xg");
    let (sources, diagnostics) = check(&path, "diagnostics");
    let json = diagnostics.to_json(&sources);
    let list = json.as_array().expect("an array");
    assert_eq!(list.len(), diagnostics.iter().count());
    let first = &list[0];
    assert_eq!(first["severity"], "error");
    assert_eq!(first["code"], "undefined-rule");
    assert_eq!(first["primary"]["file"], "diagnostics/many_errors.xg");
    assert_eq!(first["primary"]["line"], 2);
    assert_eq!(first["primary"]["column"], 22);
    assert!(
        list.iter()
            .all(|d| d["primary"]["line"].as_u64().unwrap() >= 1)
    );
}

/// A vocabulary with the special tokens the standard library's formats
/// name (Harmony's, Mistral's), for checking them.
fn format_tokens() -> Arc<Vocabulary> {
    let mut names = vec![
        "<|channel|>",
        "<|message|>",
        "<|constrain|>",
        "<|end|>",
        "<|start|>",
        "[TOOL_CALLS]",
    ];
    // The markers of the families no package carries a tokenizer of.
    for (_, vocabulary) in common::MODEL_GRAMMARS {
        if let common::ModelVocabulary::Markers(markers) = vocabulary {
            names.extend(
                markers
                    .iter()
                    .filter(|m| !names.contains(m))
                    .collect::<Vec<_>>(),
            );
        }
    }
    let special: Vec<TokenId> = (0..names.len()).map(|i| TokenId::new(i).unwrap()).collect();
    Arc::new(Vocabulary::from_byte_strings(&names, &special).unwrap())
}

#[test]
fn tokens_named_by_text_resolve_in_the_vocabulary() {
    let names = ["<|call|>", "<|end|>", "call", "x"];
    let special = [TokenId::new(0).unwrap(), TokenId::new(1).unwrap()];
    let vocabulary = Vocabulary::from_byte_strings(&names, &special)
        .and_then(|v| v.with_stop_tokens(&special[1..]))
        .unwrap();
    let check = |text: &str| {
        let mut request = Request::ahead_of_time();
        request.sources.set_vocabulary(Arc::new(vocabulary.clone()));
        let file = request.add("tokens.xg", text);
        let tree = pipeline::check(&mut request, file, "root");
        let codes: Vec<&str> = request.diagnostics.iter().map(|d| d.code).collect();
        (tree, codes)
    };
    // Special tokens by name, text tokens by their text, ids as before.
    let (tree, codes) = check("root ::= Token(\"<|call|>\", \"call\", 3) ExcludeToken(\"x\")");
    assert!(codes.is_empty(), "{codes:?}");
    let tree = format!("{:?}", tree.unwrap());
    assert!(
        tree.contains("ids: [TokenId(0), TokenId(2), TokenId(3)]"),
        "{tree}"
    );
    let (tree, codes) = check("root ::= Token(\"<|nope|>\") | Token(\"<|end|>\")");
    assert!(tree.is_none());
    assert_eq!(codes, ["unknown-token", "stop-token"]);
}

#[test]
fn every_grammar_in_the_library_checks_cleanly() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../grammars");
    let mut checked = 0;
    let tokens = format_tokens();
    for folder in ["std", "examples"] {
        for path in cases(&root.join(folder)) {
            let mut request = Request::ahead_of_time();
            request.sources.set_vocabulary(Arc::clone(&tokens));
            let file = request
                .sources
                .load(&path, &mut request.diagnostics)
                .expect("readable");
            let grammar = pipeline::check(&mut request, file, "root");
            assert!(
                grammar.is_some() && request.diagnostics.is_empty(),
                "{}:\n{}",
                path.display(),
                request.diagnostics.render(&request.sources, false)
            );
            let text = request.sources.text(file).to_string();
            let formatted = syntax::print(&syntax::parse(file, &text, &mut request.diagnostics));
            assert_eq!(
                formatted,
                text,
                "{} is not in canonical form (run `xg fmt --write`)",
                path.display()
            );
            checked += 1;
        }
    }
    let std_files = cases(&root.join("std")).len();
    assert_eq!(
        xg_compiler::std_paths().count(),
        std_files,
        "every grammars/std file is embedded"
    );
    assert_eq!(
        xg_compiler::EXAMPLES.len(),
        checked - std_files,
        "every example is embedded"
    );
}

/// The ```xg code blocks of `text`, with the line each starts on.
fn xg_blocks(text: &str) -> Vec<(usize, String)> {
    let mut blocks = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (number, line) in text.lines().enumerate() {
        match &mut current {
            None if line.trim_start() == "```xg" => current = Some((number + 1, String::new())),
            None => {}
            Some(_) if line.trim_start().starts_with("```") => blocks.extend(current.take()),
            Some((_, block)) => {
                block.push_str(line);
                block.push('\n');
            }
        }
    }
    blocks
}

#[test]
fn grammars_in_the_book_and_readme_check_cleanly() {
    let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut documents: Vec<PathBuf> = std::fs::read_dir(repository.join("book/src"))
        .expect("the book exists")
        .map(|entry| entry.expect("readable").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    documents.push(repository.join("README.md"));
    let mut failures = Vec::new();
    let mut checked = 0;
    for document in documents {
        let text = std::fs::read_to_string(&document).expect("readable");
        for (line, block) in xg_blocks(&text) {
            let mut request = Request::ahead_of_time();
            let name = format!("{}:{line}", document.file_name().unwrap().to_string_lossy());
            let file = request.add(name.clone(), block);
            let grammar = pipeline::check(&mut request, file, "root");
            if grammar.is_none() || !request.diagnostics.is_empty() {
                failures.push(format!(
                    "{name}:\n{}",
                    request.diagnostics.render(&request.sources, false)
                ));
            }
            checked += 1;
        }
    }
    assert!(checked >= 15, "only {checked} examples found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn deepest_allowed_nesting_goes_through_every_stage() {
    let depth = xg_compiler::syntax::MAX_NESTING;
    let deep = format!(
        "root ::= {}\"a\"{}\n",
        "(\"x\" | ".repeat(depth),
        ")*".repeat(depth)
    );
    let mut request = Request::ahead_of_time();
    let file = request.add("deep.xg", deep.clone());
    let grammar = pipeline::check(&mut request, file, "root");
    assert!(
        grammar.is_some(),
        "{}",
        request.diagnostics.render(&request.sources, false)
    );
    let ast = syntax::parse(file, &deep, &mut request.diagnostics);
    let printed = syntax::print(&ast);
    assert!(printed.starts_with("root ::= (\"x\" | (\"x\""), "{printed}");
}

/// A diagnostic on a very long line (a minified schema) shows the stretch
/// of the line around its label, cut with `…`, at the original line and
/// column — not the whole line.
#[test]
fn diagnostics_on_long_lines_show_an_excerpt_at_the_true_column() {
    let filler = (0..400)
        .map(|i| format!("\"p{i}\": {{\"type\": \"string\"}}, "))
        .collect::<Vec<_>>()
        .concat();
    let text = format!(
        "{{\"type\": \"object\", \"properties\": {{{filler}\"odd\": {{\"type\": \"string\", \"format\": \"bogus\"}}}}}}"
    );
    let column = text.find("\"bogus\"").unwrap() + 1;
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut request = Request::new(
        &xg_compiler::Limits::default(),
        &xg_compiler::CompileCache::default(),
    );
    let file = request.add("long.json", text.clone());
    let options = xg_compiler::json_schema::Options::default();
    let grammar = xg_compiler::pipeline::json_schema(&mut request, &schema, file, &options);
    assert!(grammar.is_some());
    let rendered = request.diagnostics.render(&request.sources, false);
    assert!(
        rendered.contains(&format!("long.json:1:{column}")),
        "{rendered}"
    );
    assert!(rendered.contains("…"), "{rendered}");
    assert!(rendered.contains("\"format\": \"bogus\""), "{rendered}");
    assert!(
        rendered.len() < 1_000,
        "{} bytes:\n{rendered}",
        rendered.len()
    );
    // The label's carets sit under the format's name in the excerpt.
    let lines: Vec<&str> = rendered.lines().collect();
    let source = lines
        .iter()
        .position(|l| l.contains("\"format\": \"bogus\""))
        .unwrap();
    let byte = lines[source].find("\"bogus\"").unwrap();
    let chars = lines[source][..byte].chars().count();
    assert_eq!(
        lines[source + 1].chars().position(|c| c == '^'),
        Some(chars),
        "{rendered}"
    );
}
