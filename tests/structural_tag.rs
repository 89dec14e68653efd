//! The structural-tag front end: every format accepts what XGrammar's
//! documentation says it accepts and refuses the rest, byte by byte; a
//! tool-calling format runs token by token with Qwen3's real tokenizer
//! (masks checked at every step); bad tags are errors naming the JSON
//! pointer.

mod common;

use std::sync::Arc;

use common::{REAL_TOKENIZERS, real_tokenizer};
use serde_json::{Value, json};
use xg_compiler::{CompileCache, Limits, Request, pipeline};
use xg_runtime::{Grammar, Matcher, TokenId, Vocabulary};

fn compile_with(tag: &Value, vocabulary: Option<&Arc<Vocabulary>>) -> Result<Arc<Grammar>, String> {
    let mut request = Request::new(&Limits::default(), &CompileCache::default());
    if let Some(vocabulary) = vocabulary {
        request.sources.set_vocabulary(Arc::clone(vocabulary));
    }
    let file = request.add("tag.json", tag.to_string());
    pipeline::structural_tag(&mut request, tag, file)
        .map(Arc::new)
        .ok_or_else(|| request.diagnostics.render(&request.sources, false))
}

fn compile(format: &Value) -> Arc<Grammar> {
    let tag = json!({"type": "structural_tag", "format": format});
    compile_with(&tag, None).unwrap_or_else(|e| panic!("{e}"))
}

fn accepts(grammar: &Arc<Grammar>, text: &str) -> bool {
    let mut matcher = Matcher::new(Arc::clone(grammar));
    matcher.accept_str(text).is_ok() && matcher.can_terminate()
}

/// Asserts which texts `format` accepts in full and which it refuses.
fn check(format: &Value, accepted: &[&str], refused: &[&str]) {
    let grammar = compile(format);
    for text in accepted {
        assert!(accepts(&grammar, text), "{format}\nshould accept {text:?}");
    }
    for text in refused {
        assert!(!accepts(&grammar, text), "{format}\nshould refuse {text:?}");
    }
}

fn weather() -> Value {
    json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false})
}

#[test]
fn basic_formats() {
    check(
        &json!({"type": "const_string", "value": "Hello, World!"}),
        &["Hello, World!"],
        &["Hello", "Hello, World!!"],
    );
    check(
        &json!({"type": "json_schema", "json_schema": weather()}),
        &[r#"{"city": "Paris"}"#, r#"{ "city" : "Oslo" }"#],
        &[r#"{"town": "Paris"}"#, r#"{"city": "Paris", "x": 1}"#],
    );
    // XGrammar's defaults: strict mode (no other properties), any whitespace.
    check(
        &json!({"type": "json_schema", "json_schema": {"type": "object", "properties": {"a": {"type": "integer"}}}}),
        &[r#"{"a": 1}"#, "{}"],
        &[r#"{"a": 1, "b": 2}"#],
    );
    check(
        &json!({"type": "json_schema", "json_schema": weather(), "any_whitespace": false}),
        &[r#"{"city": "Paris"}"#],
        &[r#"{"city":"Paris"}"#, r#"{ "city": "Paris"}"#],
    );
    check(
        &json!({"type": "json_schema", "json_schema": weather(), "any_whitespace": false, "indent": 2}),
        &["{\n  \"city\": \"Paris\"\n}"],
        &[r#"{"city": "Paris"}"#, "{\n    \"city\": \"Paris\"\n}"],
    );
    check(
        &json!({"type": "regex", "pattern": r"\d{3}-\d{4}"}),
        &["555-0199"],
        &["555-01999", "5550199"],
    );
    check(
        &json!({"type": "grammar", "grammar": "root ::= \"(\" root \")\" | \"x\""}),
        &["x", "((x))"],
        &["((x)", ""],
    );
    check(
        &json!({"type": "any_text"}),
        &["", "anything at all </end>"],
        &[],
    );
    check(
        &json!({"type": "any_text", "excludes": ["bad"]}),
        &["good", "ba d"],
        &["so bad"],
    );
}

#[test]
fn combinators() {
    let a = json!({"type": "const_string", "value": "a"});
    let b = json!({"type": "const_string", "value": "b"});
    check(
        &json!({"type": "sequence", "elements": [a, b]}),
        &["ab"],
        &["a", "ba"],
    );
    check(
        &json!({"type": "or", "elements": [a, b]}),
        &["a", "b"],
        &["ab", ""],
    );
    check(
        &json!({"type": "optional", "content": a}),
        &["", "a"],
        &["aa"],
    );
    check(&json!({"type": "plus", "content": a}), &["a", "aaa"], &[""]);
    check(
        &json!({"type": "star", "content": a}),
        &["", "aaaa"],
        &["b"],
    );
    check(
        &json!({"type": "repeat", "min": 2, "max": 3, "content": a}),
        &["aa", "aaa"],
        &["a", "aaaa"],
    );
    check(
        &json!({"type": "repeat", "min": 2, "max": -1, "content": a}),
        &["aa", "aaaaaaa"],
        &["a"],
    );
}

#[test]
fn tags_and_their_ends() {
    check(
        &json!({"type": "tag", "begin": "<r>", "content": {"type": "const_string", "value": "x"}, "end": "</r>"}),
        &["<r>x</r>"],
        &["<r>x", "<r>y</r>"],
    );
    check(
        &json!({"type": "tag", "begin": "<r>", "content": {"type": "const_string", "value": "x"}, "end": ["</r>", "</answer>"]}),
        &["<r>x</r>", "<r>x</answer>"],
        &["<r>x</q>"],
    );
    // Free text inside a tag ends at the first end string.
    let think = json!({"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>"});
    check(
        &think,
        &["<think></think>", "<think>a < b </thin </think>"],
        &["<think>a</think>b</think>", "<think>open"],
    );
    check(
        &json!({"type": "sequence", "elements": [think, {"type": "const_string", "value": "Answer."}]}),
        &["<think>hmm</think>Answer."],
        &["<think>hmm</think>Answer.</think>Answer."],
    );
    // The end is found through sequences and alternatives at the tag's end.
    check(
        &json!({"type": "tag", "begin": "[", "content": {"type": "sequence", "elements": [
            {"type": "const_string", "value": "n="},
            {"type": "or", "elements": [{"type": "any_text"}, {"type": "const_string", "value": "0"}]}
        ]}, "end": "]"}),
        &["[n=0]", "[n=abc]", "[n=]"],
        &["[n=a]b]"],
    );
}

fn tool(name: &str) -> Value {
    json!({"type": "tag", "begin": format!("<function={name}>"), "content": {"type": "json_schema", "json_schema": weather()}, "end": "</function>"})
}

#[test]
fn triggered_tags() {
    let format = |at_least_one: bool, stop_after_first: bool| {
        json!({"type": "triggered_tags", "triggers": ["<function="],
               "tags": [tool("get_weather"), tool("get_time")],
               "at_least_one": at_least_one, "stop_after_first": stop_after_first})
    };
    let call = r#"<function=get_weather>{"city": "Paris"}</function>"#;
    let other = r#"<function=get_time>{"city": "Oslo"}</function>"#;
    check(
        &format(false, false),
        &[
            "",
            "just text",
            call,
            &format!("text {call} more {other} end"),
        ],
        &[
            r#"<function=nope>{"city": "Paris"}</function>"#,
            r#"<function=get_weather>{"town": "Paris"}</function>"#,
            r#"x <function=get_weather>{"city": "Paris"}"#,
        ],
    );
    check(
        &format(true, false),
        &[call, &format!("{call} then {other}")],
        &["", "text first", &format!("text {call}")],
    );
    check(
        &format(false, true),
        &["", "text", &format!("text {call}")],
        &[&format!("{call}{other}"), &format!("{call} trailing")],
    );
    check(
        &format(true, true),
        &[call, other],
        &["", &format!("{call}{other}")],
    );
    // Inside a tag, the dispatch ends with the tag's end.
    check(
        &json!({"type": "tag", "begin": "<calls>", "content": format(false, false), "end": "</calls>"}),
        &["<calls></calls>", &format!("<calls>a {call} b</calls>")],
        &[&format!("<calls>{call}</calls>x</calls>")],
    );
    check(
        &json!({"type": "tag", "begin": "<calls>", "content": format(false, true), "end": "</calls>"}),
        &["<calls>a</calls>", &format!("<calls>a {call}</calls>")],
        &[&format!("<calls>a {call} b</calls>")],
    );
}

#[test]
fn tags_with_separator() {
    let format = |at_least_one: bool, stop_after_first: bool| {
        json!({"type": "tags_with_separator", "separator": ",",
               "tags": [tool("get_weather"), tool("get_time")],
               "at_least_one": at_least_one, "stop_after_first": stop_after_first})
    };
    let call = r#"<function=get_weather>{"city": "Paris"}</function>"#;
    let other = r#"<function=get_time>{"city": "Oslo"}</function>"#;
    check(
        &format(false, false),
        &["", call, &format!("{call},{other},{call}")],
        &[&format!("{call} {other}"), &format!("{call},"), "text"],
    );
    check(&format(true, false), &[call], &[""]);
    check(
        &format(false, true),
        &["", call],
        &[&format!("{call},{other}")],
    );
}

#[test]
fn dispatch() {
    let digits = json!({"type": "regex", "pattern": "[0-9]+;"});
    check(
        &json!({"type": "dispatch", "rules": [["n=", digits]], "excludes": ["!"]}),
        &["", "a n=12; b n=3;", "no trigger"],
        &["n=x;", "wow!"],
    );
    check(
        &json!({"type": "dispatch", "rules": [["n=", digits]], "loop": false}),
        &["a n=12;"],
        &["a n=12; b"],
    );
}

#[test]
fn token_formats_resolve_text_through_the_vocabulary() {
    let (json, config) = real_tokenizer(&REAL_TOKENIZERS[1]); // Qwen3
    let vocabulary = Vocabulary::from_tokenizer_json(&json, Some(&config)).unwrap();
    let end_of_text = vocabulary.token_by_text("<|endoftext|>").unwrap();
    let im_end = vocabulary.token_by_text("<|im_end|>").unwrap();
    let tag = json!({"type": "structural_tag", "format": {"type": "sequence", "elements": [
        {"type": "const_string", "value": "Done"},
        {"type": "token", "token": "<|endoftext|>"},
        {"type": "exclude_token", "exclude_tokens": [end_of_text.as_usize()]},
        {"type": "any_tokens", "exclude_tokens": ["<|endoftext|>"]}
    ]}});
    // Tokens by text need the vocabulary.
    let error = compile_with(&tag, None).unwrap_err();
    assert!(error.contains("#/format/elements/1/token"), "{error}");
    assert!(
        error.contains("compile with the model's vocabulary"),
        "{error}"
    );

    let vocabulary = Arc::new(vocabulary);
    let grammar = compile_with(&tag, Some(&vocabulary)).unwrap();
    let mut matcher = Matcher::with_vocabulary(grammar, Arc::clone(&vocabulary));
    matcher.accept_str("Done").unwrap();
    let mut mask = vec![0u32; vocabulary.mask_words()];
    matcher.fill_next_token_bitmask(&mut mask).unwrap();
    let allowed: Vec<usize> = (0..vocabulary.len())
        .filter(|&id| mask[id / 32] >> (id % 32) & 1 == 1)
        .collect();
    assert_eq!(allowed, vec![end_of_text.as_usize()]);
    matcher.accept_token(end_of_text).unwrap();
    // One token that is not <|endoftext|>, then any tokens but it; the stop
    // token <|im_end|> only where the output can end.
    assert!(matcher.fork().accept_token(end_of_text).is_err());
    assert!(matcher.fork().accept_token(im_end).is_err());
    let hello = vocabulary.token_by_text("hello").unwrap();
    matcher.accept_token(hello).unwrap();
    matcher.accept_token(hello).unwrap();
    assert!(matcher.fork().accept_token(end_of_text).is_err());
    assert!(matcher.can_terminate());
    matcher.accept_token(im_end).unwrap();
}

#[test]
fn token_triggered_tags_and_token_dispatch() {
    let (json, config) = real_tokenizer(&REAL_TOKENIZERS[1]); // Qwen3
    let vocabulary = Vocabulary::from_tokenizer_json(&json, Some(&config)).unwrap();
    let call = vocabulary.token_by_text("<tool_call>").unwrap();
    let call_end = vocabulary.token_by_text("</tool_call>").unwrap();
    let a = vocabulary.token_by_text("a").unwrap();
    let tag = json!({"type": "structural_tag", "format": {"type": "token_triggered_tags",
        "trigger_tokens": ["<tool_call>"],
        "tags": [{"type": "tag", "begin": {"type": "token", "token": "<tool_call>"},
                  "content": {"type": "const_string", "value": "x"},
                  "end": {"type": "token", "token": "</tool_call>"}}]}});
    let vocabulary = Arc::new(vocabulary);
    let grammar = compile_with(&tag, Some(&vocabulary)).unwrap();
    let mut matcher = Matcher::with_vocabulary(Arc::clone(&grammar), Arc::clone(&vocabulary));
    let x = vocabulary.token_by_text("x").unwrap();
    for token in [a, call, x, call_end, a, call, x, call_end] {
        matcher.accept_token(token).unwrap();
    }
    assert!(matcher.can_terminate());
    let mut matcher = Matcher::with_vocabulary(Arc::clone(&grammar), Arc::clone(&vocabulary));
    matcher.accept_token(call).unwrap();
    assert!(matcher.fork().accept_token(a).is_err());

    let dispatch = json!({"type": "structural_tag", "format": {"type": "token_dispatch",
        "rules": [[call.as_usize(), {"type": "const_string", "value": "x"}]], "loop": false}});
    let grammar = compile_with(&dispatch, Some(&vocabulary)).unwrap();
    let mut matcher = Matcher::with_vocabulary(grammar, Arc::clone(&vocabulary));
    for token in [a, a, call, x] {
        matcher.accept_token(token).unwrap();
    }
    assert!(matcher.can_terminate());
    assert!(matcher.fork().accept_token(a).is_err());
}

/// Qwen3-style reasoning and tool calls, token by token with the real
/// tokenizer: every token of a realistic output is allowed by its mask,
/// and a wrong tool name is refused at the token where it goes wrong.
#[test]
fn tool_calls_token_by_token_with_a_real_tokenizer() {
    let (json, config) = real_tokenizer(&REAL_TOKENIZERS[1]); // Qwen3
    let vocabulary = Arc::new(Vocabulary::from_tokenizer_json(&json, Some(&config)).unwrap());
    let tokenizer = tokenizers::Tokenizer::from_bytes(&json).unwrap();
    let tool = |name: &str, schema: Value| {
        json!({"type": "tag",
               "begin": format!("<tool_call>\n{{\"name\": \"{name}\", \"arguments\": "),
               "content": {"type": "json_schema", "json_schema": schema},
               "end": "}\n</tool_call>"})
    };
    let tag = json!({"type": "structural_tag", "format": {"type": "sequence", "elements": [
        {"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>"},
        {"type": "triggered_tags", "triggers": ["<tool_call>"], "tags": [
            tool("get_weather", json!({"type": "object", "properties": {
                "city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
                "required": ["city"]})),
            tool("search", json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}))
        ]}
    ]}});
    let grammar = compile_with(&tag, Some(&vocabulary)).unwrap();
    let tokens = |text: &str| -> Vec<TokenId> {
        tokenizer
            .encode(text, false)
            .unwrap()
            .get_ids()
            .iter()
            .map(|&id| TokenId::new(id as usize).unwrap())
            .collect()
    };
    let output = "<think>\nThe user wants the weather in Zürich — and \"news\".\n</think>\n\n\
        I'll look both up.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\", \"unit\": \"celsius\"}}\n</tool_call>\n\
        <tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"news \\\"today\\\" 日本\"}}\n</tool_call>";
    let ids = tokens(output);
    let stop = vocabulary.stop_tokens()[0];
    let mut matcher = Matcher::with_vocabulary(Arc::clone(&grammar), Arc::clone(&vocabulary));
    let mut mask = vec![0u32; vocabulary.mask_words()];
    for (i, &token) in ids.iter().chain([&stop]).enumerate() {
        matcher.fill_next_token_bitmask(&mut mask).unwrap();
        let allowed = mask[token.as_usize() / 32] >> (token.as_usize() % 32) & 1 == 1;
        assert!(allowed, "token {i} ({token}) refused by the mask");
        if token != stop {
            matcher.accept_token(token).unwrap();
        }
    }
    assert!(matcher.can_terminate());

    let wrong =
        "<think>ok</think><tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
    let ids = tokens(wrong);
    let mut matcher = Matcher::with_vocabulary(grammar, Arc::clone(&vocabulary));
    let mut refused_at = None;
    let mut text = Vec::new();
    for &token in &ids {
        matcher.fill_next_token_bitmask(&mut mask).unwrap();
        if mask[token.as_usize() / 32] >> (token.as_usize() % 32) & 1 == 0 {
            assert!(matcher.fork().accept_token(token).is_err());
            refused_at = Some(String::from_utf8_lossy(&text).into_owned());
            break;
        }
        text.extend_from_slice(vocabulary.bytes(token));
        matcher.accept_token(token).unwrap();
    }
    let before = refused_at.expect("the wrong tool name is refused");
    // `get_weather` and `search` are the tools: `get` is fine, `_time` is not.
    assert!(
        before.ends_with("\"name\": \"get"),
        "refused after {before:?}"
    );
}

#[test]
fn legacy_form_and_bare_formats() {
    let legacy = json!({"type": "structural_tag",
        "structures": [{"begin": "<function=get_weather>", "schema": weather(), "end": "</function>"}],
        "triggers": ["<function="]});
    let grammar = compile_with(&legacy, None).unwrap();
    assert!(accepts(
        &grammar,
        r#"hi <function=get_weather>{"city": "Paris"}</function>"#
    ));
    assert!(!accepts(&grammar, r"<function=get_weather>{}</function>"));
    // As vLLM and SGLang send it: without the `type`.
    let mut untyped = legacy.clone();
    untyped.as_object_mut().unwrap().remove("type");
    let grammar = compile_with(&untyped, None).unwrap();
    assert!(accepts(
        &grammar,
        r#"<function=get_weather>{"city": "Oslo"}</function>"#
    ));
    let bare = compile_with(&json!({"type": "const_string", "value": "ok"}), None).unwrap();
    assert!(accepts(&bare, "ok"));
}

#[test]
fn bad_tags_are_errors_naming_the_place() {
    for (format, expected) in [
        (
            json!({"type": "nope"}),
            "#/format: unknown format type `nope`",
        ),
        (
            json!({"type": "const_string"}),
            "#/format: `const_string` needs `value`",
        ),
        (
            json!({"type": "repeat", "min": 3, "max": 1, "content": {"type": "any_text"}}),
            "`max` (1) must be -1 (no bound) or at least `min` (3)",
        ),
        (
            json!({"type": "triggered_tags", "triggers": ["<a"], "tags": [tool("x")]}),
            "#/format/tags/0/begin: `<function=x>` must start with exactly one trigger",
        ),
        (
            json!({"type": "sequence", "elements": [{"type": "json_schema", "json_schema": {"$ref": "#/nowhere"}}]}),
            "#/format/elements/0/json_schema/$ref",
        ),
        (
            json!({"type": "dispatch", "rules": [["<a>", {"type": "any_text"}]], "excludes": ["a"]}),
            "the trigger `<a>` contains the excluded `a`",
        ),
        (
            json!({"type": "json_schema", "json_schema": {}, "style": "yaml"}),
            "#/format/style: unknown argument style `yaml`",
        ),
        (
            json!({"type": "json_schema", "json_schema": {}, "any_whitespace": false, "indent": "\t"}),
            "#/format/indent: `indent` must be a whole number of spaces up to 32",
        ),
    ] {
        let tag = json!({"type": "structural_tag", "format": format});
        let error = compile_with(&tag, None).unwrap_err();
        assert!(error.contains(expected), "{tag}\n{error}");
    }
    // Errors inside an embedded grammar or regex point into its text.
    let tag = json!({"type": "structural_tag", "format": {"type": "regex", "pattern": "a(?=b)"}});
    let error = compile_with(&tag, None).unwrap_err();
    assert!(error.contains("#/format/pattern:1:2"), "{error}");
    let tag = json!({"type": "structural_tag", "format": {"type": "grammar", "grammar": "root ::= missing"}});
    let error = compile_with(&tag, None).unwrap_err();
    assert!(
        error.contains("undefined") && error.contains("#/format/grammar:1:10"),
        "{error}"
    );
    // A tag left out for its begin is still read and lowered: the errors
    // inside it are reported with the begin's, each at the tag's place in
    // the list (the second tag here, after one without content).
    let tag = json!({"type": "structural_tag", "format": {
        "type": "triggered_tags", "triggers": ["<a"],
        "tags": [
            {"begin": "<a>", "end": "</a>"},
            {"begin": "<b>", "end": "</b>", "content": {"type": "json_schema", "json_schema": {"$ref": "#/nowhere"}}},
        ],
    }});
    let error = compile_with(&tag, None).unwrap_err();
    for expected in [
        "#/format/tags/0: a tag needs `content`",
        "#/format/tags/1/begin: `<b>` must start with exactly one trigger",
        "#/format/tags/1/content/json_schema/$ref",
    ] {
        assert!(error.contains(expected), "{expected}\n{error}");
    }
}

/// The `json_schema` format's XML argument styles: a string argument is raw
/// text up to its closing tag (quotes, `<` and line breaks as they are), an
/// enum its values, others JSON by their schema; arguments in the schema's
/// order, the required ones present; line breaks around values optional.
/// XGrammar's older `qwen_xml_parameter` type is `qwen_xml`.
#[test]
fn xml_argument_styles() {
    let schema = json!({"type": "object", "properties": {
        "name": {"type": "string"}, "age": {"type": "integer", "minimum": 0},
        "mode": {"enum": ["fast", "slow"]}, "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["name", "age"]});
    let style = |style: &str| json!({"type": "json_schema", "json_schema": schema, "style": style});
    check(
        &style("qwen_xml"),
        &[
            "<parameter=name>Bob</parameter><parameter=age>100</parameter>",
            "<parameter=name>\n\"Bob&lt;\" <b>\nsecond line\n</parameter>\n<parameter=age>\n7\n</parameter>\n",
            "<parameter=name>A</parameter><parameter=age>1</parameter><parameter=mode>slow</parameter><parameter=tags>[\"x\", \"y\"]</parameter>",
        ],
        &[
            "<parameter=name>Bob</parameter>",
            "<parameter=age>1</parameter><parameter=name>Bob</parameter>",
            "<parameter=name>A</parameter><parameter=age>-1</parameter>",
            "<parameter=name>A</parameter><parameter=age>1</parameter><parameter=mode>medium</parameter>",
            "<parameter=name>A</parameter><parameter=age>1</parameter><parameter=tags>x</parameter>",
            "<parameter=name>A</parameter><parameter=age>1</parameter><parameter=other>1</parameter>",
        ],
    );
    check(
        &json!({"type": "qwen_xml_parameter", "json_schema": schema}),
        &["<parameter=name>Bob</parameter><parameter=age>100</parameter>"],
        &["<parameter=name>Bob</parameter>"],
    );
    check(
        &style("glm_xml"),
        &[
            "<arg_key>name</arg_key>\n<arg_value>Bob \"B\"</arg_value>\n<arg_key>age</arg_key>\n<arg_value>3</arg_value>\n",
            "<arg_key>name</arg_key><arg_value>Bob</arg_value><arg_key>age</arg_key><arg_value>3</arg_value>",
        ],
        &[
            "<arg_key>name</arg_key><arg_value>Bob</arg_value><arg_key>age</arg_key><arg_value>three</arg_value>",
        ],
    );
    check(
        &style("minimax_xml"),
        &["<parameter name=\"name\">Bob</parameter>\n<parameter name=\"age\">3</parameter>\n"],
        &["<parameter name=\"name\">Bob</parameter><parameter name=\"age\">\"3\"</parameter>"],
    );
    check(
        &style("deepseek_xml"),
        &[
            "<｜DSML｜parameter name=\"name\" string=\"true\">Bob</｜DSML｜parameter>\n<｜DSML｜parameter name=\"age\" string=\"false\">3</｜DSML｜parameter>\n",
        ],
        &[
            "<｜DSML｜parameter name=\"name\" string=\"true\">Bob</｜DSML｜parameter><｜DSML｜parameter name=\"age\" string=\"true\">3</｜DSML｜parameter>",
        ],
    );
    // Kimi K3's XTML (markers as text here): each value typed, a string
    // raw, an integer a `number`; no line breaks around values.
    let xtml = |key: &str, kind: &str, value: &str| {
        format!(
            "<|open|>argument key=\"{key}\" type=\"{kind}\"<|sep|>{value}<|close|>argument<|sep|>"
        )
    };
    let (bob, three) = (
        xtml("name", "string", "Bob <b>\"B\"\n"),
        xtml("age", "number", "3"),
    );
    check(
        &style("kimi_k3_xml"),
        &[
            &format!("{bob}{three}"),
            &format!("{bob}{three}{}", xtml("mode", "string", "fast")),
            &format!("{bob}{three}{}", xtml("tags", "array", "[\"x\", \"y\"]")),
        ],
        &[
            &bob,
            &format!("{bob}{}", xtml("age", "string", "3")),
            &format!("{bob}{}", xtml("age", "number", "\"3\"")),
            &format!("{bob}{three}{}", xtml("mode", "string", "medium")),
            &format!("{bob}\n{three}"),
        ],
    );
}

/// `max_tokens` on `any_text` bounds the text with its end; on
/// `any_tokens` the tokens. Without a vocabulary each step is a token: a
/// step past the limit is refused, and the end is all that is left.
#[test]
fn free_text_and_tokens_within_max_tokens() {
    let think = compile(&json!({
        "type": "tag", "begin": "<think>",
        "content": {"type": "any_text", "max_tokens": 12}, "end": "</think>"
    }));
    let mut matcher = Matcher::new(Arc::clone(&think));
    matcher.accept_str("<think>").unwrap();
    for word in ["a", "b", "c", "d"] {
        matcher.accept_str(word).unwrap();
    }
    // Four steps of text and eight bytes of end, a step each: a fifth
    // step of text would leave the end seven.
    let refused = matcher.accept_str("e").unwrap_err();
    assert!(refused.is_over_limit(), "{refused}");
    matcher.accept_str("e</think>").unwrap();
    assert!(matcher.can_terminate());

    let tokens = json!({"type": "any_tokens", "max_tokens": 2});
    let vocabulary = qwen3();
    let tag = json!({"type": "structural_tag", "format": tokens});
    let grammar = compile_with(&tag, Some(&vocabulary)).unwrap();
    let mut matcher = Matcher::with_vocabulary(grammar, Arc::clone(&vocabulary));
    let mut mask = vec![0u32; vocabulary.mask_words()];
    for _ in 0..2 {
        matcher.fill_next_token_bitmask(&mut mask).unwrap();
        let some = TokenId::new(1000).unwrap();
        assert!(mask[1000 / 32] & (1 << (1000 % 32)) != 0);
        matcher.accept_token(some).unwrap();
    }
    matcher.fill_next_token_bitmask(&mut mask).unwrap();
    let allowed: Vec<usize> = (0..vocabulary.len())
        .filter(|&id| mask[id / 32] & (1 << (id % 32)) != 0)
        .filter(|&id| !vocabulary.is_stop(TokenId::new(id).unwrap()))
        .collect();
    assert!(
        allowed.is_empty(),
        "{} tokens past the limit",
        allowed.len()
    );
    assert!(matcher.can_terminate());

    let short = json!({"type": "structural_tag", "format": {
        "type": "tag", "begin": "<think>",
        "content": {"type": "any_text", "max_tokens": 4}, "end": "</think>"
    }});
    let error = compile_with(&short, None).unwrap_err();
    assert!(error.contains("takes at least 8 bytes"), "{error}");
    let zero = json!({"type": "structural_tag", "format": {"type": "any_text", "max_tokens": 0}});
    let error = compile_with(&zero, None).unwrap_err();
    assert!(error.contains("/max_tokens"), "{error}");
}

fn qwen3() -> Arc<Vocabulary> {
    let (json, config) = real_tokenizer(&REAL_TOKENIZERS[1]); // Qwen3
    Arc::new(Vocabulary::from_tokenizer_json(&json, Some(&config)).unwrap())
}
