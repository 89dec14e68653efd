//! The `xg` command line: exit codes and output formats.

use std::path::PathBuf;
use std::process::Command;

fn xg(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_xg"))
        .args(args)
        .output()
        .expect("xg runs")
}

/// A path in Cargo's folder for integration tests' files (under `target/`,
/// the same each run: nothing piles up in the system's temporary folder).
fn scratch(name: &str) -> PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

fn temp_grammar(name: &str, text: &str) -> PathBuf {
    let dir = scratch("cli-test");
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write grammar");
    path
}

#[test]
fn main_job_generates_a_valid_tool_call() {
    let output = xg(&["--seed", "3"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("the output is valid"), "{stdout}");
    assert!(stdout.contains("time to first mask"), "{stdout}");
    // The output between the rules is one call of an offered tool.
    let generated = stdout
        .split("──\n")
        .nth(1)
        .map(str::trim_end)
        .expect("the output between its rules");
    assert!(
        generated.starts_with("<tool_call>\n{\"name\": \""),
        "{generated}"
    );
    assert!(generated.ends_with("}\n</tool_call>"), "{generated}");
    let json = &generated["<tool_call>\n".len()..generated.len() - "\n</tool_call>".len()];
    let call: serde_json::Value = serde_json::from_str(json).expect("the call is JSON");
    assert!(["get_weather", "search_flights"].contains(&call["name"].as_str().unwrap()));

    // Another grammar from a file.
    let path = temp_grammar("digits.xg", "root ::= [0-9]{3}\n");
    let output = xg(&["--grammar", path.to_str().unwrap(), "--seed", "1"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(
        stdout.contains("3 tokens") || stdout.contains("2 tokens") || stdout.contains("1 tokens"),
        "{stdout}"
    );
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
        "root ::= item+\nitem ::= \"a\" | [0-9]{2,6} | \"\\\"\"\n",
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
    // `--root` everywhere, `--rule` its alias.
    let key = xg(&["match", grammar, "--rule", "key", "--text", "abc"]);
    assert!(key.status.success());
    let key = xg(&["match", grammar, "--root", "key", "--text", "abc"]);
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

/// Pairs in braces, for [`temp_tokenizer`]'s vocabulary: `{ab:1,a:1}`.
const PAIRS: &str = "root ::= \"{\" pair (\",\" pair)* \"}\"\npair ::= [a-z]+ \":\" [0-9]+\n";

#[test]
fn trace_shows_each_token_and_its_mask() {
    let grammar = temp_grammar("trace.xg", PAIRS);
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

/// A grammar with lookahead computes its masks without the mask cache,
/// and `xg trace` says so; one without says nothing.
/// With `--token-budget`, each step shows the tokens left and the fewest
/// bytes to an end, and a token that would leave no way to end in time
/// stops the trace with that reason.
#[test]
fn trace_under_a_token_budget() {
    let grammar = temp_grammar("budget.xg", PAIRS);
    let tokenizer = temp_tokenizer();
    let trace = |budget: &str| {
        xg(&[
            "trace",
            grammar.to_str().unwrap(),
            "--tokenizer",
            tokenizer.to_str().unwrap(),
            "--text",
            "{ab:1,a:1}",
            "--token-budget",
            budget,
        ])
    };
    let roomy = trace("20");
    let stdout = String::from_utf8_lossy(&roomy.stdout);
    assert!(roomy.status.success(), "{stdout}");
    assert!(stdout.contains("left/end"), "{stdout}");
    // Before the first token: 20 left, and `{a:0}` is the shortest ending.
    assert!(
        stdout.lines().any(|l| l.trim_end().ends_with("20/5")),
        "{stdout}"
    );
    let tight = trace("5");
    let stdout = String::from_utf8_lossy(&tight.stdout);
    assert!(!tight.status.success(), "{stdout}");
    assert!(stdout.contains("within its budget of 5 tokens"), "{stdout}");
}

#[test]
fn trace_names_a_grammar_that_masks_without_the_cache() {
    let tokenizer = temp_tokenizer();
    let trace = |name: &str, text: &str| {
        let grammar = temp_grammar(name, text);
        let output = xg(&[
            "trace",
            grammar.to_str().unwrap(),
            "--tokenizer",
            tokenizer.to_str().unwrap(),
            "--text",
            "ab",
        ]);
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(output.status.success(), "{stdout}");
        stdout
    };
    let note = "every mask is computed without the mask cache: a rule has lookahead";
    let with = trace("lookahead.xg", "root ::= a \"b\"\na ::= \"a\" (= \"b\")\n");
    assert!(with.contains(note), "{with}");
    let without = trace("plain.xg", "root ::= a \"b\"\na ::= \"a\"\n");
    assert!(!without.contains("without the mask cache"), "{without}");
}

/// A reader that stops early (`xg trace … | head`) ends the program
/// quietly: no panic, exit code 0.
#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;

    let grammar = temp_grammar("pipe.xg", PAIRS);
    let tokenizer = temp_tokenizer();
    // Thousands of steps: far more output than a pipe holds.
    let text = format!("{{{}a:1}}", "a:1,".repeat(1500));
    let mut child = Command::new(env!("CARGO_BIN_EXE_xg"))
        .args([
            "trace",
            grammar.to_str().unwrap(),
            "--tokenizer",
            tokenizer.to_str().unwrap(),
            "--text",
            &text,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("xg runs");
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.contains("tokens"), "{first}");
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{:?}: {stderr}", output.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// A byte-level BPE tokenizer (as GPT-2 and Llama 3 write them) with one
/// token per printable ASCII character and an end-of-sequence token.
fn byte_level_tokenizer() -> PathBuf {
    let mut vocab = serde_json::Map::new();
    for byte in 0x21u8..=0x7E {
        vocab.insert(char::from(byte).to_string(), vocab.len().into());
    }
    vocab.insert("\u{120}".to_string(), vocab.len().into()); // the space
    let eos = vocab.len();
    let tokenizer = serde_json::json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [{
            "id": eos, "content": "<|eos|>", "single_word": false, "lstrip": false,
            "rstrip": false, "normalized": false, "special": true
        }],
        "normalizer": null,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
        "post_processor": null,
        "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
        "model": {
            "type": "BPE", "dropout": null, "unk_token": null,
            "continuing_subword_prefix": null, "end_of_word_suffix": null,
            "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
            "vocab": vocab, "merges": []
        }
    });
    let dir = scratch("bench-test");
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(dir.join("tokenizer.json"), tokenizer.to_string()).expect("write");
    std::fs::write(
        dir.join("tokenizer_config.json"),
        r#"{"eos_token": "<|eos|>"}"#,
    )
    .expect("write");
    dir.join("tokenizer.json")
}

/// Three MaskBench files in a directory of their own: two that compile
/// (one valid and one invalid instance each) and one that does not.
fn maskbench_files() -> PathBuf {
    let dir = scratch("bench-files");
    std::fs::create_dir_all(&dir).expect("temp dir");
    let files = [
        (
            "a_object.json",
            serde_json::json!({
                "schema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                "tests": [{"data": {"a": 12}, "valid": true}, {"data": {"a": "x"}, "valid": false}]
            }),
        ),
        (
            "b_string.json",
            serde_json::json!({
                "schema": {"type": "string", "maxLength": 3},
                "tests": [{"data": "a b", "valid": true}, {"data": "abcd", "valid": false}]
            }),
        ),
        (
            "c_remote.json",
            serde_json::json!({
                "schema": {"$ref": "https://example.com/elsewhere.json"},
                "tests": [{"data": 1, "valid": true}]
            }),
        ),
    ];
    for (name, document) in files {
        std::fs::write(dir.join(name), document.to_string()).expect("write");
    }
    dir
}

/// Runs `xg bench maskbench` on the three files with `engine` and `extra`
/// options; its stdout and results. Its stderr, not a terminal here, gets
/// no count of the files done (a log would get every count on one line).
fn bench(engine: &str, extra: &[&str]) -> (String, Vec<serde_json::Value>) {
    let tokenizer = byte_level_tokenizer();
    let files = maskbench_files();
    let out = files.join(format!("results-{engine}-{}.jsonl", extra.join("")));
    let mut args = vec![
        "bench",
        "maskbench",
        "--tokenizer",
        tokenizer.to_str().unwrap(),
        "--engine",
        engine,
        "--out",
        out.to_str().unwrap(),
        files.to_str().unwrap(),
    ];
    args.extend(extra);
    let output = xg(&args);
    let (stdout, results) = bench_results(&output, &out);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("/3 files"), "{stderr}");
    let svg = std::fs::read_to_string(out.with_extension("svg")).expect("a plot");
    assert!(svg.starts_with("<svg") && svg.contains("time to first mask"));
    (stdout, results)
}

/// A successful `xg bench` run's stdout and the JSON lines it wrote to `out`.
fn bench_results(
    output: &std::process::Output,
    out: &std::path::Path,
) -> (String, Vec<serde_json::Value>) {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results = std::fs::read_to_string(out)
        .expect("results")
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON lines"))
        .collect();
    (stdout, results)
}

/// Checks one engine's results on the three files.
fn check_results(results: &[serde_json::Value], engine: &str) {
    let mine: Vec<&serde_json::Value> = results.iter().filter(|r| r["engine"] == engine).collect();
    assert_eq!(mine.len(), 3, "{results:?}");
    for result in &mine[..2] {
        assert!(
            result["compile_us"].as_f64().is_some_and(|us| us > 0.0),
            "{result}"
        );
        let tests = result["tests"].as_array().expect("tests");
        let outcome = |test: &serde_json::Value| (test["valid"].clone(), test["accepted"].clone());
        assert_eq!(outcome(&tests[0]), (true.into(), true.into()), "{result}");
        assert_eq!(outcome(&tests[1]), (false.into(), false.into()), "{result}");
        // Every step belongs to its test.
        let steps: u64 = tests
            .iter()
            .map(|t| t["steps"].as_u64().expect("steps"))
            .sum();
        let times = result["token_us"].as_array().expect("times").len();
        assert!(times > 0 && steps == times as u64, "{result}");
    }
    assert!(mine[2]["compile_error"].is_string(), "{}", mine[2]);
}

#[test]
fn bench_maskbench_reports_each_file_and_a_summary() {
    let (stdout, results) = bench("xg", &[]);
    check_results(&results, "xg");
    assert!(
        stdout.contains("warm caches, properties in the given order"),
        "{stdout}"
    );
    assert!(stdout.contains("valid accepted"), "{stdout}");
    assert!(stdout.contains("2/2"), "{stdout}");
    assert!(stdout.contains("steps over 10 ms"), "{stdout}");
    let (stdout, results) = bench("xg", &["--cold", "--order", "any", "--worst", "2"]);
    check_results(&results, "xg");
    assert!(
        stdout.contains("cold caches, properties in any order"),
        "{stdout}"
    );
    assert!(
        stdout.contains("the 2 files with the highest mean step"),
        "{stdout}"
    );
}

#[cfg(feature = "llguidance")]
#[test]
fn bench_maskbench_runs_llguidance_side_by_side() {
    let (stdout, results) = bench("all", &[]);
    check_results(&results, "xg");
    check_results(&results, "llguidance");
    assert!(
        stdout.contains("files every engine compiled (2)"),
        "{stdout}"
    );
    assert!(stdout.contains("time as a multiple of xg's"), "{stdout}");
}

/// The vendored Qwen3 tokenizer, unpacked into a directory of its own
/// (one per `tag`: tests run at once).
fn qwen3_tokenizer(tag: &str) -> PathBuf {
    let dir = scratch(&format!("qwen3-{tag}"));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("tokenizer.json");
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/tokenizers/qwen3");
    let gzipped = std::fs::File::open(data.join("tokenizer.json.gz")).expect("vendored tokenizer");
    let mut json = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(gzipped), &mut json)
        .expect("gzip");
    std::fs::write(&path, json).expect("write");
    path
}

/// Two BFCL-style MaskBench files: three tools, a valid call of each (in
/// a directory per `tag`).
fn bfcl_files(tag: &str) -> PathBuf {
    let dir = scratch(&format!("bfcl-{tag}"));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let weather = serde_json::json!({"type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
        "required": ["city"]});
    let time = serde_json::json!({"type": "object",
        "properties": {"zone": {"enum": ["UTC", "CET"]}}, "required": ["zone"]});
    let files = [
        (
            "BFCL_a.json",
            serde_json::json!({
                "schema": {"anyOf": [
                    {"type": "object", "properties": {"get_weather": weather}, "required": ["get_weather"]},
                    {"type": "object", "properties": {"get_time": time}, "required": ["get_time"]}]},
                "tests": [{"data": {"get_weather": {"city": "Oslo", "days": 2}}, "valid": true},
                          {"data": {"get_time": {"zone": "CET"}}, "valid": true}]
            }),
        ),
        (
            "BFCL_b.json",
            serde_json::json!({
                "schema": {"type": "object", "properties": {"search": {"type": "object",
                    "properties": {"query": {"type": "string"}}, "required": ["query"]}},
                    "required": ["search"]},
                "tests": [{"data": {"search": {"query": "café \"au lait\""}}, "valid": true}]
            }),
        ),
    ];
    for (name, document) in files {
        std::fs::write(dir.join(name), document.to_string()).expect("write");
    }
    dir
}

/// Runs `xg bench tools` on the BFCL files with `engine`; its stdout and
/// results.
fn bench_tools(engine: &str) -> (String, Vec<serde_json::Value>) {
    let tokenizer = qwen3_tokenizer(engine);
    let files = bfcl_files(engine);
    let out = files.join(format!("tools-{engine}.jsonl"));
    let output = xg(&[
        "bench",
        "tools",
        "--tokenizer",
        tokenizer.to_str().unwrap(),
        "--engine",
        engine,
        "--tools",
        "1,3",
        "--requests",
        "3",
        "--out",
        out.to_str().unwrap(),
        files.to_str().unwrap(),
    ]);
    bench_results(&output, &out)
}

/// Checks one engine's tool-calling results: every request compiled and
/// its turn accepted, token by token.
fn check_tool_results(results: &[serde_json::Value], engine: &str) {
    let mine: Vec<&serde_json::Value> = results.iter().filter(|r| r["engine"] == engine).collect();
    assert_eq!(mine.len(), 6, "{results:?}");
    for result in mine {
        assert_eq!(result["accepted"], true, "{result}");
        assert!(result["compile_us"].as_f64().is_some_and(|us| us > 0.0));
        assert!(result["token_us"].as_array().is_some_and(|t| t.len() > 10));
    }
}

#[test]
fn bench_tools_compiles_requests_and_accepts_their_turns() {
    let (stdout, results) = bench_tools("xg");
    check_tool_results(&results, "xg");
    assert!(stdout.contains("3 tools from the BFCL files"), "{stdout}");
    // The second request reuses automata of the first.
    let xg_rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("xg"))
        .collect();
    assert_eq!(xg_rows.len(), 2, "{stdout}");
    assert!(xg_rows.iter().all(|row| row.contains("3/3")), "{stdout}");
}

#[cfg(feature = "llguidance")]
#[test]
fn bench_tools_runs_llguidance_side_by_side() {
    let (stdout, results) = bench_tools("all");
    check_tool_results(&results, "xg");
    check_tool_results(&results, "llguidance");
    assert!(stdout.contains("llguidance"), "{stdout}");
}

#[test]
fn compile_writes_a_bundle_that_inspect_describes_and_trace_uses() {
    let grammar = temp_grammar(
        "bundle.xg",
        "root ::= \"{\" pair (\",\" pair)* \"}\"\npair ::= [a-z]+ \":\" [0-9]+\n",
    );
    let tokenizer = temp_tokenizer();
    let (grammar, tokenizer) = (grammar.to_str().unwrap(), tokenizer.to_str().unwrap());
    let out = grammar.replace(".xg", ".xgb");
    let again = grammar.replace(".xg", "-again.xgb");
    for path in [&out, &again] {
        let output = xg(&[
            "compile",
            grammar,
            "--tokenizer",
            tokenizer,
            "--precompute",
            "all",
            "-o",
            path,
        ]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stderr}");
        assert!(stderr.contains("entries precomputed"), "{stderr}");
    }
    // Deterministic: the same input gives the same bytes.
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&again).unwrap());
    let output = xg(&["inspect", &out]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("format version 4"), "{stdout}");
    assert!(stdout.contains("mask index"), "{stdout}");
    assert!(!stdout.contains("DAMAGED"), "{stdout}");
    let output = xg(&[
        "trace",
        &out,
        "--tokenizer",
        tokenizer,
        "--text",
        "{ab:1,a:1}",
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("0 entries built"), "{stdout}");
    // A damaged bundle is refused with the reason.
    let mut bytes = std::fs::read(&out).unwrap();
    bytes[600] ^= 1;
    let damaged = grammar.replace(".xg", "-damaged.xgb");
    std::fs::write(&damaged, bytes).unwrap();
    let output = xg(&["match", &damaged, "--text", "{a:1}"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("damaged bundle"), "{stderr}");
}

#[test]
fn compile_without_a_tokenizer_writes_tables_only() {
    let grammar = temp_grammar("tables.xg", "root ::= [0-9]+\n");
    let grammar = grammar.to_str().unwrap();
    let out = grammar.replace(".xg", ".xgb");
    let output = xg(&["compile", grammar, "-o", &out]);
    assert!(output.status.success());
    let output = xg(&["inspect", &out]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("vocabulary: any"), "{stdout}");
    assert!(xg(&["match", &out, "--text", "123"]).status.success());
    let output = xg(&["compile", grammar, "-o", &out, "--precompute", "all"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--tokenizer"));
}

#[test]
fn json_schema_points_at_the_offending_keyword() {
    let path = temp_grammar(
        "bad_schema.json",
        "{\n  \"type\": \"object\",\n  \"properties\": {\"age\": {\"type\": \"integr\"}}\n}\n",
    );
    let output = xg(&["json-schema", "--color", "never", path.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("error[json-schema]"), "{stderr}");
    // The excerpt underlines the bad type name on line 3, not the schema's start.
    assert!(stderr.contains("bad_schema.json:3:"), "{stderr}");
    assert!(stderr.contains("^^^^^^^^ here"), "{stderr}");

    let path = temp_grammar(
        "approximated.json",
        "{\"type\": \"array\",\n \"uniqueItems\": true}\n",
    );
    let output = xg(&["json-schema", "--color", "never", path.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("warning[json-schema-approximated]"),
        "{stderr}"
    );
    assert!(stderr.contains("approximated.json:2:"), "{stderr}");
}

#[test]
fn tools_writes_the_grammar_of_a_tool_calling_turn() {
    let path = temp_grammar(
        "tools.json",
        r#"[{"type": "function", "function": {"name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]"#,
    );
    let output = xg(&["tools", "--format", "qwen", path.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("\"<tool_call>\" =>"), "{stdout}");
    assert!(
        stdout.contains("args_get_weather [capture=\"tool:get_weather\"] ::= %json {"),
        "{stdout}"
    );
    assert!(stderr.contains("compiled in"), "{stderr}");

    // The printed grammar is a grammar: `xg match` runs it.
    let grammar = temp_grammar("tools.xg", &stdout);
    let call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>";
    let matched = xg(&["match", grammar.to_str().unwrap(), "--text", call]);
    assert!(
        matched.status.success(),
        "{}",
        String::from_utf8_lossy(&matched.stderr)
    );

    let output = xg(&[
        "tools",
        "--format",
        "qwen",
        "--tool-choice",
        "lookup",
        path.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("`lookup`, which is not a listed tool")
    );

    // `--allowed-tools` with the mode in `--tool-choice`.
    let tools = path.to_str().unwrap();
    let allowed = [
        "tools",
        "--format",
        "qwen",
        "--allowed-tools",
        "get_weather",
    ];
    let output = xg(&[&allowed[..], &["--tool-choice", "required", tools]].concat());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("tool choice required of `get_weather`"),
        "{stdout}"
    );
    let output = xg(&[&allowed[..], &["--tool-choice", "none", tools]].concat());
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("the mode"));
}

/// The subcommands listed by `xg [COMMAND…] --help`.
fn subcommands(command: &[&str]) -> Vec<String> {
    let mut args = command.to_vec();
    args.push("--help");
    let help = String::from_utf8(xg(&args).stdout).expect("UTF-8 help");
    help.lines()
        .skip_while(|line| *line != "Commands:")
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(String::from)
        .collect()
}

#[test]
fn the_cli_reference_documents_every_subcommand_and_flag() {
    let reference =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../book/src/cli.md"))
            .expect("the CLI reference exists");
    let sections: Vec<&str> = reference.split("\n## ").skip(1).collect();
    let mut commands = vec![Vec::new()];
    for name in subcommands(&[]) {
        let nested = subcommands(&[&name]);
        if nested.is_empty() {
            commands.push(vec![name]);
        } else {
            commands.extend(nested.into_iter().map(|sub| vec![name.clone(), sub]));
        }
    }
    assert!(commands.len() >= 12, "{commands:?}");
    let mut missing = Vec::new();
    for command in &commands {
        let title = format!(
            "`{}",
            ["xg"]
                .into_iter()
                .chain(command.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" ")
        );
        let Some(section) = sections.iter().find(|section| {
            section
                .strip_prefix(&title)
                .is_some_and(|rest| rest.starts_with([' ', '`']))
        }) else {
            missing.push(format!("no section {title}`"));
            continue;
        };
        let mut args: Vec<&str> = command.iter().map(String::as_str).collect();
        args.push("--help");
        let help = String::from_utf8(xg(&args).stdout).expect("UTF-8 help");
        for flag in help
            .lines()
            .filter(|line| line.trim_start().starts_with('-'))
            .filter_map(|line| line.split_whitespace().find(|word| word.starts_with("--")))
            .map(|flag| flag.trim_end_matches(','))
            .filter(|flag| *flag != "--help" && *flag != "--version" && *flag != "--color")
        {
            if !section.contains(flag) {
                missing.push(format!("{title}` does not describe {flag}"));
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

/// A bundle path that is a folder: one clear error naming it as a folder,
/// the path said once; a missing bundle's error names its path once, with
/// the OS's reason once.
#[test]
fn a_folder_named_like_a_bundle_is_one_clear_error() {
    let dir = scratch("cli-folder.xgb");
    std::fs::create_dir_all(&dir).expect("temp dir");
    let folder = dir.to_str().expect("utf-8 path");
    let output = xg(&["match", folder, "--text", "x"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("is a folder, not a grammar file"),
        "{stderr}"
    );
    assert_eq!(stderr.matches(folder).count(), 1, "{stderr}");
    let missing = dir.join("missing.xgb");
    let missing = missing.to_str().expect("utf-8 path");
    let output = xg(&["match", missing, "--text", "x"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.matches(missing).count(), 1, "{stderr}");
    assert_eq!(stderr.matches("os error").count(), 1, "{stderr}");
    let _ = std::fs::remove_dir(&dir);
}

/// `--tokenizer` takes a gzip-compressed `tokenizer.json` (decided by
/// content: the vendored Qwen3 file, and a copy of it named `.json`), and
/// the name `qwen3` for the one built into the tool; a missing file says
/// what was expected.
#[test]
fn tokenizers_are_read_by_content_or_by_name() {
    let grammar = temp_grammar("gz.xg", "root ::= \"[\" [0-9]+ \"]\"\n");
    let vendored = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../data/tokenizers/qwen3/tokenizer.json.gz"
    );
    // In a folder of its own: no tokenizer_config.json beside it.
    let dir = scratch("cli-gz");
    std::fs::create_dir_all(&dir).expect("temp dir");
    let renamed = dir.join("compressed-tokenizer.json");
    std::fs::copy(vendored, &renamed).expect("copy");
    for tokenizer in [vendored, renamed.to_str().unwrap(), "qwen3"] {
        let out = xg(&[
            "trace",
            grammar.to_str().unwrap(),
            "--tokenizer",
            tokenizer,
            "--text",
            "[42]",
        ]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{tokenizer}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The stop token comes from the tokenizer_config.json beside it
        // (or the embedded one); the copy has none beside it.
        let stop = if tokenizer == renamed.to_str().unwrap() {
            "0 stop tokens"
        } else {
            "1 stop tokens"
        };
        assert!(
            stdout.contains("151669 ids") && stdout.contains(stop),
            "{tokenizer}: {stdout}"
        );
    }
    let missing = xg(&[
        "trace",
        grammar.to_str().unwrap(),
        "--tokenizer",
        "no-such-tokenizer.json",
        "--text",
        "[1]",
    ]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("or `qwen3` for the built-in one"));
}

/// Every command takes every grammar form, decided by content: a JSON
/// Schema saved as `.schema` (once parsed as `.xg`: ~30 errors) and a
/// structural tag saved as `.txt` go through check, fmt, inspect, match,
/// trace, compile and the main job's `--grammar`.
#[test]
fn every_command_takes_schemas_and_tags_whatever_their_name() {
    let schema = temp_grammar(
        "person.schema",
        r#"{"type": "object", "properties": {"age": {"type": "integer", "maximum": 150}}, "required": ["age"]}"#,
    );
    let tag = temp_grammar(
        "tag.txt",
        r#"{"type": "structural_tag", "format": {"type": "const_string", "value": "hi"}}"#,
    );
    let (schema, tag) = (schema.to_str().unwrap(), tag.to_str().unwrap());
    let run = |args: &[&str]| {
        let out = xg(args);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code(), text)
    };
    let (code, text) = run(&["check", schema, tag]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("person.schema: ok") && text.contains("tag.txt: ok"),
        "{text}"
    );
    let (code, text) = run(&["fmt", schema]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.starts_with("root ::= \"{\""), "{text}");
    let (code, text) = run(&["inspect", schema]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("entry `root`"), "{text}");
    let (code, text) = run(&["match", schema, "--text", r#"{"age": 36}"#]);
    assert_eq!(code, Some(0), "{text}");
    let (code, _) = run(&["match", schema, "--text", r#"{"age": 151}"#]);
    assert_eq!(code, Some(1));
    let (code, text) = run(&["match", tag, "--text", "hi"]);
    assert_eq!(code, Some(0), "{text}");
    let (code, text) = run(&[
        "trace",
        schema,
        "--tokenizer",
        "qwen3",
        "--text",
        r#"{"age":3}"#,
    ]);
    assert_eq!(code, Some(0), "{text}");
    let bundle = scratch("cli-person.xgb");
    let (code, text) = run(&["compile", schema, "-o", bundle.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{text}");
    let (code, text) = run(&["--grammar", schema, "--no-additional-properties"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("\"age\""), "{text}");
    // A schema is printed, never rewritten, by fmt.
    let (code, text) = run(&["fmt", "--write", schema]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("apply to `.xg` files"), "{text}");
}

/// The quick start's mistake, run as the book shows it: `xg check` on its
/// `answer.xg` with `numbr` for `number` prints the book's excerpt (and no
/// follow-on warning that `number` is unused: the suggestion is taken as
/// meant).
#[test]
fn the_quick_start_shows_what_check_prints() {
    let grammar = book_block("quick-start.md", "xg", "Save this as `answer.xg`");
    let shown = book_block("quick-start.md", "text", "refers\nto `numbr`");
    let dir = scratch("quick-start");
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(
        dir.join("answer.xg"),
        grammar.replace("| number\n", "| numbr\n"),
    )
    .expect("answer.xg");
    let out = Command::new(env!("CARGO_BIN_EXE_xg"))
        .args(["check", "--color", "never", "answer.xg"])
        .current_dir(&dir)
        .output()
        .expect("xg runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.starts_with(&shown),
        "the book shows\n{shown}\nxg prints\n{stderr}"
    );
    assert!(stderr.contains("1 error(s), 0 warning(s)"), "{stderr}");
}

/// An object whose properties are in another order than the schema's is
/// refused (the schema's order is the default) with a help saying so and
/// naming `--any-order`; a value the schema refuses gets a help naming the
/// place in the schema and its constraints.
#[test]
fn match_says_when_the_properties_order_is_the_reason() {
    let schema = temp_grammar(
        "order.json",
        r#"{"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "maximum": 150}}, "required": ["name", "age"]}"#,
    );
    let schema = schema.to_str().unwrap();
    let swapped = xg(&["match", schema, "--text", r#"{"age": 36, "name": "Ada"}"#]);
    let stderr = String::from_utf8_lossy(&swapped.stderr);
    assert_eq!(swapped.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("`--any-order` accepts them"), "{stderr}");
    let any = xg(&[
        "match",
        schema,
        "--any-order",
        "--text",
        r#"{"age": 36, "name": "Ada"}"#,
    ]);
    assert_eq!(any.status.code(), Some(0));
    let too_old = xg(&["match", schema, "--text", r#"{"name": "Ada", "age": 151}"#]);
    let stderr = String::from_utf8_lossy(&too_old.stderr);
    assert_eq!(too_old.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("--any-order"), "{stderr}");
    // It names the place in the schema that refuses the value instead, and
    // none of the rules the schema was made into.
    assert!(
        stderr.contains(
            r#"the schema at `#/properties/age` refuses it: {"type":"integer","maximum":150}"#
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains(r#"unexpected "1"; expected one of"#) && !stderr.contains("(in "),
        "{stderr}"
    );
    // Inside items reached through a `$ref`, where the value's rule is
    // inlined into its caller: the place is found from the instance path.
    let people = temp_grammar(
        "people.json",
        r##"{"definitions": {"person": {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0, "maximum": 150}}, "required": ["name", "age"]}},
            "type": "object", "properties": {"people": {"type": "array", "items": {"$ref": "#/definitions/person"}}}, "required": ["people"]}"##,
    );
    let output = xg(&[
        "match",
        people.to_str().unwrap(),
        "--text",
        r#"{"people": [{"name": "Ada", "age": 36}, {"name": "Bob", "age": 151}]}"#,
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            r#"the schema at `#/definitions/person/properties/age` refuses it: {"type":"integer","minimum":0,"maximum":150}"#
        ),
        "{stderr}"
    );
    // After a complete value, the container: a required member not
    // written yet, or an array that is still open.
    let help = |text: &str| {
        let output = xg(&["match", people.to_str().unwrap(), "--text", text]);
        assert_eq!(output.status.code(), Some(1));
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        let line = stderr
            .lines()
            .find(|line| line.contains("help: the schema"));
        line.unwrap_or_else(|| panic!("{stderr}")).to_string()
    };
    let missing = help(r#"{"people": [{"name": "Ada"}]}"#);
    assert!(
        missing.contains("the schema at `#/definitions/person` requires `age`, not written yet"),
        "{missing}"
    );
    let open = help(r#"{"people": [{"name": "Ada", "age": 36}"#);
    assert!(
        open.contains("the schema at `#/properties/people` refuses it"),
        "{open}"
    );
}

/// The code block in `language` (```` ```text ````, ```` ```xg ````) of
/// book page `page` that follows the first occurrence of `after`.
fn book_block(page: &str, language: &str, after: &str) -> String {
    let text =
        std::fs::read_to_string(format!("{}/../book/src/{page}", env!("CARGO_MANIFEST_DIR")))
            .expect("the book page");
    let from = text.find(after).expect("the paragraph");
    let fence = format!("```{language}\n");
    let start = text[from..].find(&fence).expect("the block") + from + fence.len();
    let end = text[start..].find("```").expect("its end") + start;
    text[start..end].to_string()
}

/// `xg` run in `dir` with `args`: its exit code, stdout and stderr.
fn xg_in(dir: &std::path::Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_xg"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("xg runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The book's sample outputs are what the commands print: the diagnostic
/// at the top of the diagnostics page (`xg check` on a rule defined twice),
/// the JSON Schema report of the CLI reference, and the grammar `xg tools`
/// writes on the tool-calling page.
#[test]
fn the_books_sample_outputs_are_what_xg_prints() {
    let dir = scratch("book-samples");
    std::fs::create_dir_all(&dir).expect("temp dir");

    std::fs::write(
        dir.join("grammar.xg"),
        "root ::= item\nitem ::= \"a\"\nitem ::= \"b\"\n",
    )
    .expect("grammar.xg");
    let shown = book_block("diagnostics.md", "text", "help where it helps");
    let (code, _, stderr) = xg_in(&dir, &["check", "--color", "never", "grammar.xg"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.starts_with(&shown),
        "the book shows\n{shown}\nxg prints\n{stderr}"
    );

    std::fs::write(
        dir.join("person.json"),
        r#"{"type": "object", "properties": {"age": {"type": "integer", "minimum": 0}, "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true}}}"#,
    )
    .expect("person.json");
    let shown = book_block("cli.md", "text", "for `person.json`");
    let (code, stdout, stderr) = xg_in(&dir, &["json-schema", "person.json", "--report"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        stdout, shown,
        "the book shows\n{shown}\nxg prints\n{stdout}"
    );

    std::fs::write(
        dir.join("tools.json"),
        r#"[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]"#,
    )
    .expect("tools.json");
    let shown = book_block(
        "tool-calling.md",
        "text",
        "xg tools --format qwen tools.json",
    );
    let (code, stdout, stderr) = xg_in(&dir, &["tools", "--format", "qwen", "tools.json"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        stdout, shown,
        "the book shows\n{shown}\nxg prints\n{stdout}"
    );
}
