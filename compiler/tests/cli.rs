//! The `xg` command line: exit codes and output formats.

use std::path::PathBuf;
use std::process::Command;

fn xg(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_xg"))
        .args(args)
        .output()
        .expect("xg runs")
}

fn temp_grammar(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xg-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write grammar");
    path
}

#[test]
fn main_job_checks_the_embedded_examples() {
    let output = xg(&[]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("examples/tool_calling.xg: ok"), "{stdout}");
    assert!(stdout.contains("root ::= dispatch("), "{stdout}");
}

#[test]
fn check_reports_errors_as_json_and_fails() {
    let path = temp_grammar("bad.xg", "root ::= \"a\" b\n");
    let output = xg(&["check", "--format", "json", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    assert_eq!(report["errors"], 1);
    assert_eq!(report["diagnostics"][0]["code"], "undefined-rule");
    assert_eq!(report["diagnostics"][0]["primary"]["column"], 14);
}

#[test]
fn check_passes_with_warnings_and_honours_root() {
    let path = temp_grammar("warn.xg", "start ::= \"a\"\nunused ::= \"b\"\n");
    let output = xg(&[
        "check",
        "--root",
        "start",
        "--color",
        "never",
        path.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("warning[unreachable-rule]"), "{stderr}");
}

#[test]
fn fmt_prints_writes_and_checks() {
    let path = temp_grammar("fmt.xg", "root   ::=  \"a\"|(\"b\" \"c\")*\n");
    let path = path.to_str().unwrap();
    let printed = xg(&["fmt", path]);
    assert_eq!(
        String::from_utf8_lossy(&printed.stdout),
        "root ::= \"a\" | (\"b\" \"c\")*\n"
    );
    assert_eq!(xg(&["fmt", "--check", path]).status.code(), Some(1));
    assert!(xg(&["fmt", "--write", path]).status.success());
    assert!(xg(&["fmt", "--check", path]).status.success());
}

#[test]
fn unreadable_file_is_a_usage_error() {
    let output = xg(&["check", "/nonexistent/grammar.xg"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot read"));
}

#[test]
fn inspect_lists_rules_and_draws_one() {
    let path = temp_grammar(
        "inspect.xg",
        "root ::= item+\nitem ::= \"a\" | [0-9]{2,40} | \"\\\"\"\n",
    );
    let path = path.to_str().unwrap();
    let output = xg(&["inspect", path]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(
        stdout.contains("2 rules") || stdout.contains(" rules,"),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("item ") && l.contains("automaton")),
        "{stdout}"
    );
    let dot = xg(&["inspect", "--dot", "item", path]);
    let dot = String::from_utf8_lossy(&dot.stdout);
    assert!(dot.starts_with("digraph \"item\" {"), "{dot}");
    assert!(
        dot.contains("doublecircle") && dot.contains("[0-9]"),
        "{dot}"
    );
    assert!(dot.contains(r#"label="\\x22""#), "{dot}");
    let missing = xg(&["inspect", "--dot", "nope", path]);
    assert_eq!(missing.status.code(), Some(1));
}

#[test]
fn match_accepts_and_locates_failures() {
    let grammar = temp_grammar(
        "pairs.xg",
        "root ::= \"{\" pair (\",\" \"\\n\"? pair)* \"}\"\npair ::= key \":\" [0-9]+\nkey ::= [a-z]+\n",
    );
    let grammar = grammar.to_str().unwrap();
    let ok = xg(&["match", grammar, "--text", "{ab:1,cd:2}"]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );

    let bad = xg(&[
        "match",
        grammar,
        "--text",
        "{ab:1,\ncd:x}",
        "--color",
        "never",
    ]);
    assert_eq!(bad.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("at 2:4 (byte 10)"), "{stderr}");
    assert!(
        stderr.contains("unexpected \"x\"; expected [0-9]"),
        "{stderr}"
    );
    assert!(stderr.contains("2 │ cd:x}"), "{stderr}");

    let input = temp_grammar("output.txt", "{ab:1");
    let short = xg(&["match", grammar, "--file", input.to_str().unwrap()]);
    assert_eq!(short.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&short.stderr);
    assert!(stderr.contains("ends too early"), "{stderr}");
    assert!(stderr.contains("(byte 5)"), "{stderr}");

    // Another entry rule.
    let key = xg(&["match", grammar, "--rule", "key", "--text", "abc"]);
    assert!(
        key.status.success(),
        "{}",
        String::from_utf8_lossy(&key.stderr)
    );

    // A grammar that does not compile is an error, not a mismatch.
    let broken = temp_grammar("broken.xg", "root ::= missing\n");
    let output = xg(&["match", broken.to_str().unwrap(), "--text", "x"]);
    assert_eq!(output.status.code(), Some(2));
}

/// A tiny Hugging Face tokenizer: a BPE model over a few pieces, with an
/// end-of-sequence token.
fn temp_tokenizer() -> PathBuf {
    let tokenizer = serde_json::json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [{
            "id": 9, "content": "</s>", "single_word": false, "lstrip": false,
            "rstrip": false, "normalized": false, "special": true
        }],
        "normalizer": null,
        "pre_tokenizer": null,
        "post_processor": null,
        "decoder": null,
        "model": {
            "type": "BPE", "dropout": null, "unk_token": null,
            "continuing_subword_prefix": null, "end_of_word_suffix": null,
            "fuse_unk": false, "byte_fallback": false,
            "vocab": {"{": 0, "}": 1, "a": 2, "b": 3, ":": 4, "1": 5, "ab": 6, "ab:": 7, ",": 8},
            "merges": ["a b", "ab :"]
        }
    });
    let config = serde_json::json!({"eos_token": "</s>"});
    let path = temp_grammar("tokenizer.json", &tokenizer.to_string());
    temp_grammar("tokenizer_config.json", &config.to_string());
    path
}

#[test]
fn trace_shows_each_token_and_its_mask() {
    let grammar = temp_grammar(
        "trace.xg",
        "root ::= \"{\" pair (\",\" pair)* \"}\"\npair ::= [a-z]+ \":\" [0-9]+\n",
    );
    let tokenizer = temp_tokenizer();
    let args = |text: &'static str| {
        vec![
            "trace".to_owned(),
            grammar.to_str().unwrap().to_owned(),
            "--tokenizer".to_owned(),
            tokenizer.to_str().unwrap().to_owned(),
            "--text".to_owned(),
            text.to_owned(),
        ]
    };
    let run = |text| {
        let args = args(text);
        xg(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let ok = run("{ab:1,a:1}");
    let stdout = String::from_utf8_lossy(&ok.stdout);
    assert!(ok.status.success(), "{stdout}");
    assert!(stdout.contains("1 stop tokens"), "{stdout}");
    // `ab:` is one token; after `{`, the letters and `ab`, `ab:` are allowed.
    assert!(stdout.contains("\"ab:\""), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("\"ab:\"") && l.contains(" 4  yes")),
        "{stdout}"
    );
    assert!(stdout.contains("(end of output)"), "{stdout}");
    let bad = run("{ab:}");
    let stdout = String::from_utf8_lossy(&bad.stdout);
    assert_eq!(bad.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("refuses token 1 \"}\""), "{stdout}");
    let short = run("{ab:1");
    assert_eq!(short.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&short.stdout).contains("cannot end here"));
}
