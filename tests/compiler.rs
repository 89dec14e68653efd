//! The text-in, grammar-out entry (`Compiler`) and the request it builds:
//! each form a request carries compiles from its text into a grammar that
//! accepts and refuses what it should; bad text is a `Report` that renders
//! at the place it names; one cancel flag stops every form; a request's
//! warnings survive `finish`.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use serde_json::json;
use xg_compiler::tools::{Format, Options as ToolOptions};
use xg_compiler::{Compiler, Limits, Report, Severity, json_schema, pipeline};
use xg_runtime::{Grammar, Matcher, TokenId, Vocabulary};

/// Whether `grammar` accepts `text` as a whole output.
fn accepts(grammar: &Grammar, text: &str) -> bool {
    let mut matcher = Matcher::new(Arc::new(grammar.clone()));
    matcher.accept_str(text).is_ok() && matcher.can_terminate()
}

/// A vocabulary of single bytes and one special token, `<|call|>`.
fn vocabulary() -> Arc<Vocabulary> {
    let mut pieces: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    pieces.push(b"<|call|>".to_vec());
    let special = TokenId::new(256).unwrap();
    Arc::new(Vocabulary::from_byte_strings(&pieces, &[special]).unwrap())
}

fn forms(compiler: &Compiler) -> Vec<(&'static str, Result<Grammar, Report>)> {
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}},
                        "required": ["n"]});
    let tag = json!({"type": "structural_tag", "format": {"type": "tag",
        "begin": "<a>", "content": {"type": "json_schema", "json_schema": schema},
        "end": "</a>"}});
    let tools = json!([{"type": "function", "function": {"name": "f",
        "parameters": schema}}]);
    vec![
        (
            "json_schema",
            compiler.json_schema(&schema.to_string(), &json_schema::Options::default()),
        ),
        ("grammar", compiler.grammar("root ::= [a-c]+ \"!\"", "root")),
        ("regex", compiler.regex(r"\d{2}-[a-z]+")),
        ("structural_tag", compiler.structural_tag(&tag.to_string())),
        (
            "tools",
            compiler.tools(&tools.to_string(), &ToolOptions::new(Format::Qwen)),
        ),
    ]
}

#[test]
fn every_form_compiles_from_its_text() {
    let compiler = Compiler::new(Limits::default());
    let samples = [
        ("json_schema", r#"{"n": 3}"#, r#"{"n": "3"}"#),
        ("grammar", "abca!", "abd!"),
        ("regex", "42-xg", "4-xg"),
        ("structural_tag", r#"<a>{"n": 1}</a>"#, r#"<a>{"m": 1}</a>"#),
        (
            "tools",
            "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"n\": 2}}\n</tool_call>",
            "<tool_call>\n{\"name\": \"g\"",
        ),
    ];
    for ((form, grammar), (name, good, bad)) in forms(&compiler).into_iter().zip(samples) {
        assert_eq!(form, name);
        let grammar = grammar.unwrap_or_else(|report| panic!("{form}: {report}"));
        assert!(accepts(&grammar, good), "{form} refuses {good:?}");
        assert!(!accepts(&grammar, bad), "{form} accepts {bad:?}");
    }
    // The compiler's one cache: the schema, in three forms, was generated
    // fewer than three times.
    let stats = compiler.cache().stats();
    assert!(
        stats.schema_misses < 3 && stats.schema_hits > 0,
        "{stats:?}"
    );
}

#[test]
fn json_syntax_errors_are_reports_at_their_line_and_column() {
    let compiler = Compiler::new(Limits::default());
    let text = "{\"type\": \"object\",\n \"properties\": }";
    let failures = [
        compiler.json_schema(text, &json_schema::Options::default()),
        compiler.structural_tag(text),
        compiler.tools(text, &ToolOptions::new(Format::Qwen)),
    ];
    for failure in failures {
        let report = failure.expect_err("not JSON");
        let error = report.diagnostics().iter().next().expect("an error");
        assert_eq!(error.code, "json");
        assert!(error.message.contains("is not valid JSON"), "{report}");
        let span = error.primary.span;
        assert_eq!(&report.sources().text(span.file)[span.start..], "}");
        // Rendered with the place: line 2.
        assert!(report.to_string().contains(":2:"), "{report}");
    }
}

#[test]
fn a_set_cancel_flag_stops_every_form() {
    let limits = Limits {
        cancel: Some(Arc::new(AtomicBool::new(true))),
        ..Limits::default()
    };
    let compiler = Compiler::new(limits);
    for (form, grammar) in forms(&compiler) {
        let report = grammar.expect_err(form);
        let error = report.diagnostics().iter().next().expect("an error");
        assert_eq!(error.severity, Severity::Error);
        assert!(error.message.contains("cancelled"), "{form}: {report}");
    }
}

#[test]
fn tokens_given_by_text_need_the_compilers_vocabulary() {
    let tag = json!({"type": "tag", "begin": {"type": "token", "token": "<|call|>"},
                     "content": {"type": "const_string", "value": "x"}, "end": "."})
    .to_string();
    let without = Compiler::new(Limits::default()).structural_tag(&tag);
    assert!(
        without
            .expect_err("no vocabulary")
            .to_string()
            .contains("vocabulary")
    );
    let vocabulary = vocabulary();
    let grammar = Compiler::new(Limits::default())
        .with_vocabulary(Arc::clone(&vocabulary))
        .structural_tag(&tag)
        .expect("the vocabulary has the token");
    let mut matcher = Matcher::with_vocabulary(Arc::new(grammar), vocabulary);
    matcher.accept_token(TokenId::new(256).unwrap()).unwrap();
    matcher.accept_str("x.").unwrap();
    assert!(matcher.can_terminate());
}

/// The grammar of the JSON Schema `text` through a request, and what the
/// request reported.
fn schema_through_a_request(text: &str) -> (Grammar, Report) {
    let schema: serde_json::Value = serde_json::from_str(text).unwrap();
    let compiler = Compiler::new(Limits::default());
    let mut request = compiler.request();
    let file = request.add("schema.json", text.to_string());
    let grammar = pipeline::json_schema(
        &mut request,
        &schema,
        file,
        &json_schema::Options::default(),
    );
    request.finish(grammar).expect("compiles")
}

#[test]
fn a_request_keeps_its_warnings() {
    let schema = json!({"type": "string", "unknownKeyword": 1});
    let (grammar, report) = schema_through_a_request(&schema.to_string());
    assert!(accepts(&grammar, "\"ok\""));
    let warning = report.diagnostics().iter().next().expect("a warning");
    assert_eq!(warning.severity, Severity::Warning);
    assert!(report.to_string().contains("unknownKeyword"), "{report}");
}

/// A keyword ignored or approximated alike at many places is one warning,
/// at its first place, that counts the others; the schema's own report
/// still lists every place.
#[test]
fn warnings_alike_at_many_places_are_said_once() {
    let text = r#"{
  "type": "object",
  "properties": {
    "a": {"type": "string", "vendorHint": 1},
    "b": {"type": "string", "vendorHint": 2},
    "c": {"type": "array", "uniqueItems": true, "vendorHint": 3}
  }
}"#;
    let (grammar, report) = schema_through_a_request(text);
    assert!(accepts(&grammar, r#"{"a": "x", "c": [1, 2]}"#));
    let warnings: Vec<_> = report.diagnostics().iter().collect();
    assert_eq!(warnings.len(), 2, "{report}");
    let vendor = warnings
        .iter()
        .find(|w| w.message.contains("`vendorHint`"))
        .expect("a warning for vendorHint");
    assert!(
        vendor.message.contains("#/properties/a is ignored")
            && vendor.message.contains("and at 2 more places"),
        "{}",
        vendor.message
    );
    // At the value of the first place's keyword.
    let span = &vendor.primary.span;
    assert_eq!(&text[span.start..span.end], "1");
    assert!(text[..span.start].ends_with(r#""a": {"type": "string", "vendorHint": "#));
    let unique = warnings
        .iter()
        .find(|w| w.message.contains("`uniqueItems`"))
        .expect("a warning for uniqueItems");
    assert!(!unique.message.contains("more place"), "{}", unique.message);

    let schema: serde_json::Value = serde_json::from_str(text).unwrap();
    let options = json_schema::Options::default();
    let budget = xg_compiler::Budget::new(Limits::default());
    let generated = json_schema::generate(&schema, &options, &budget).expect("generates");
    let places = generated
        .report
        .warnings()
        .filter(|n| n.keyword == "vendorHint");
    assert_eq!(places.count(), 3);
}
