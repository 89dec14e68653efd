//! The official JSON-Schema-Test-Suite (vendored in
//! `data/json-schema-test-suite`, drafts 2020-12, 7 and 4) through the JSON
//! Schema front end, at the byte level: every valid instance of a schema xg
//! compiles is accepted, and every invalid instance it accepts is covered by
//! a warning (a keyword approximated or ignored) — never relaxed silently.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use xg_compiler::json_schema::{Options, PropertyOrder, Whitespace};
use xg_compiler::{CompileCache, Limits, Request, Severity, pipeline};
use xg_runtime::{Grammar, Matcher};

/// `(path, test file)` for every file of the vendored suite.
fn suite() -> Vec<(String, Value)> {
    common::vendored_json("json-schema-test-suite/tests.tar.gz")
}

/// Cases whose valid instances xg does not accept by design, each with the
/// reason. Matched against `file: case description`.
const NOT_EXPECTED: &[(&str, &str)] = &[
    // Instances are written as serde_json prints them; integers are
    // taken in plain digits (`1.0` too), not with an exponent.
    (
        "bignum.json: integer /",
        "integers are written without an exponent",
    ),
    (
        "comparison works for very negative numbers",
        "integers are written without an exponent",
    ),
    ("float-overflow", "integers are written without an exponent"),
    // The draft comes from `$schema`; without one, 2020-12's rules apply
    // (keywords next to `$ref` count).
    (
        "draft4/ref.json: ref overrides any sibling keywords",
        "no `$schema`: 2020-12 rules",
    ),
    (
        "draft7/ref.json: ref overrides any sibling keywords",
        "no `$schema`: 2020-12 rules",
    ),
    // Annotations in 2020-12 (`format` asserts only in optional/format).
    (
        "/format.json",
        "xg enforces `format`; the core suite treats it as an annotation",
    ),
    (
        "format-assertion",
        "xg enforces `format`; the core suite treats it as an annotation",
    ),
    // Remote references need a network or a registry of documents.
    ("refRemote", "remote `$ref`s are not fetched"),
    ("remote ref", "remote `$ref`s are not fetched"),
    ("cross-draft", "remote `$ref`s are not fetched"),
    ("unknown metaschema", "remote `$ref`s are not fetched"),
    ("metaschema", "meta-schemas are not bundled"),
    (
        "schema that uses custom metaschema",
        "meta-schemas are not bundled",
    ),
];

/// Why a case is skipped, if it is.
fn not_expected(label: &str) -> Option<&'static str> {
    NOT_EXPECTED
        .iter()
        .find(|(pattern, _)| label.contains(pattern))
        .map(|&(_, reason)| reason)
}

/// Compiles a schema: the grammar and whether the report has warnings, or
/// the error messages.
fn compile(schema: &Value) -> Result<(Arc<Grammar>, Vec<String>), String> {
    let options = Options {
        whitespace: Whitespace::Compact,
        property_order: PropertyOrder::Any,
        ..Options::default()
    };
    let mut request = Request::new(&Limits::default(), &CompileCache::default());
    let file = request.add("schema.json", schema.to_string());
    let grammar = pipeline::json_schema(&mut request, schema, file, &options);
    let messages = |severity| {
        request
            .diagnostics
            .iter()
            .filter(|d| d.severity == severity)
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
    };
    match grammar {
        Some(grammar) => Ok((Arc::new(grammar), messages(Severity::Warning))),
        None => Err(messages(Severity::Error).join("; ")),
    }
}

fn accepts(grammar: &Arc<Grammar>, text: &str) -> bool {
    let mut matcher = Matcher::new(Arc::clone(grammar));
    matcher.accept_str(text).is_ok() && matcher.can_terminate()
}

#[derive(Default)]
struct Tally {
    cases: usize,
    compiled: usize,
    errors: Vec<String>,
    /// Schemas no value satisfies (refused with an error; all their
    /// instances are invalid).
    empty: usize,
    /// Schemas with a `$ref` xg does not resolve: to another document, or
    /// to an embedded resource by its `$id`.
    remote: usize,
    skipped: usize,
    valid: usize,
    invalid: usize,
    rejected: usize,
    warned: usize,
    refused_valid: Vec<String>,
    silently_accepted: Vec<String>,
}

#[test]
fn valid_instances_are_accepted_and_nothing_is_relaxed_silently() {
    let mut tally = Tally::default();
    let mut per_file: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (path, cases) in suite() {
        for case in cases.as_array().expect("a list of cases") {
            let label = format!("{path}: {}", case["description"].as_str().unwrap_or(""));
            tally.cases += 1;
            if not_expected(&label).is_some() {
                tally.skipped += 1;
                continue;
            }
            let (grammar, warnings) = match compile(&case["schema"]) {
                Ok(compiled) => compiled,
                Err(error) => {
                    let no_valid = case["tests"]
                        .as_array()
                        .is_some_and(|t| t.iter().all(|t| t["valid"] == Value::Bool(false)));
                    if no_valid && error.contains("accepts no value") {
                        // A schema no value satisfies is refused, rightly.
                        tally.empty += 1;
                    } else if error.contains("to another document") {
                        tally.remote += 1;
                    } else {
                        tally.errors.push(format!("{label}: {error}"));
                    }
                    continue;
                }
            };
            tally.compiled += 1;
            for test in case["tests"].as_array().expect("tests") {
                let text = serde_json::to_string(&test["data"]).expect("JSON");
                let what = format!("{label} / {}: {text}", test["description"]);
                if not_expected(&what).is_some() {
                    continue;
                }
                let accepted = accepts(&grammar, &text);
                let counts = per_file.entry(path.clone()).or_default();
                counts.0 += 1;
                if test["valid"] == Value::Bool(true) {
                    tally.valid += 1;
                    if !accepted {
                        tally.refused_valid.push(what);
                        counts.1 += 1;
                    }
                } else {
                    tally.invalid += 1;
                    if !accepted {
                        tally.rejected += 1;
                    } else if warnings.is_empty() {
                        tally.silently_accepted.push(what);
                        counts.1 += 1;
                    } else {
                        tally.warned += 1;
                    }
                }
            }
        }
    }
    eprintln!(
        "{} cases: {} compiled, {} errors, {} refused as empty, {} with unresolved `$ref`s, {} skipped; valid {}/{} accepted; invalid {}/{} rejected, {} accepted with a warning",
        tally.cases,
        tally.compiled,
        tally.errors.len(),
        tally.empty,
        tally.remote,
        tally.skipped,
        tally.valid - tally.refused_valid.len(),
        tally.valid,
        tally.rejected,
        tally.invalid,
        tally.warned,
    );
    for error in &tally.errors {
        eprintln!("  error {error}");
    }
    for refused in &tally.refused_valid {
        eprintln!("  refused valid {refused}");
    }
    for accepted in &tally.silently_accepted {
        eprintln!("  silently accepted invalid {accepted}");
    }
    assert!(tally.refused_valid.is_empty(), "valid instances refused");
    assert!(
        tally.silently_accepted.is_empty(),
        "invalid instances accepted without a warning"
    );
    assert!(tally.errors.is_empty(), "schemas that did not compile");
}
