//! The layouts of the JSON Schema front end (compact, flexible, pretty) on
//! the vendored JSON-Schema-Test-Suite: a layout never changes which values
//! are accepted, only how they are written. The pretty layout accepts
//! exactly what a pretty-printer writes (serde_json's, which writes as
//! Python's `json.dumps(value, indent=N, ensure_ascii=False)`) and nothing
//! else; the flexible one accepts both.

mod common;

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use serde_json::ser::{PrettyFormatter, Serializer};
use xg_compiler::json_schema::{
    DEFAULT_MAX_WHITESPACE, Options, PRETTY_DEPTH, PropertyOrder, Whitespace,
};
use xg_compiler::{CompileCache, Limits, Request, pipeline};
use xg_runtime::{Grammar, Matcher};

fn compile(schema: &Value, whitespace: Whitespace) -> Option<Arc<Grammar>> {
    compile_in(schema, whitespace, PropertyOrder::Any)
}

fn compile_in(
    schema: &Value,
    whitespace: Whitespace,
    property_order: PropertyOrder,
) -> Option<Arc<Grammar>> {
    let key_separator = match whitespace {
        Whitespace::Pretty { .. } => ": ",
        _ => ":",
    };
    let options = Options {
        whitespace,
        key_separator: key_separator.to_string(),
        property_order,
        ..Options::default()
    };
    let mut request = Request::new(&Limits::default(), &CompileCache::default());
    let file = request.add("schema.json", schema.to_string());
    pipeline::json_schema(&mut request, schema, file, &options).map(Arc::new)
}

fn accepts(grammar: &Arc<Grammar>, text: &str) -> bool {
    let mut matcher = Matcher::new(Arc::clone(grammar));
    matcher.accept_str(text).is_ok() && matcher.can_terminate()
}

/// `value` pretty-printed with `indent` spaces per level.
fn pretty(value: &Value, indent: usize) -> String {
    let indent = " ".repeat(indent);
    let mut out = Vec::new();
    let mut serializer =
        Serializer::with_formatter(&mut out, PrettyFormatter::with_indent(indent.as_bytes()));
    value.serialize(&mut serializer).expect("JSON");
    String::from_utf8(out).expect("UTF-8")
}

#[test]
fn layouts_accept_the_same_values() {
    let (mut instances, mut nested) = (0, 0);
    for (path, cases) in common::vendored_json("json-schema-test-suite/tests.tar.gz") {
        for case in cases.as_array().expect("a list of cases") {
            let schema = &case["schema"];
            let Some(compact) = compile(schema, Whitespace::Compact) else {
                continue;
            };
            let flexible = compile(schema, Whitespace::Flexible { max: None }).expect("compiles");
            let pretty_2 = compile(schema, Whitespace::Pretty { indent: 2 }).expect("compiles");
            let pretty_4 = compile(schema, Whitespace::Pretty { indent: 4 }).expect("compiles");
            for test in case["tests"].as_array().expect("tests") {
                let data = &test["data"];
                let label = format!("{path}: {} / {}", case["description"], test["description"]);
                let text = serde_json::to_string(data).expect("JSON");
                let (two, four) = (pretty(data, 2), pretty(data, 4));
                let expected = accepts(&compact, &text);
                instances += 1;
                assert_eq!(accepts(&flexible, &text), expected, "{label}: {text}");
                assert_eq!(accepts(&flexible, &two), expected, "{label}: {two}");
                assert_eq!(accepts(&pretty_2, &two), expected, "{label}: {two}");
                assert_eq!(accepts(&pretty_4, &four), expected, "{label}: {four}");
                if two != text {
                    // Only the pretty layout, and only its own indentation.
                    nested += 1;
                    assert!(!accepts(&pretty_2, &text), "{label}: {text}");
                    assert!(!accepts(&pretty_2, &four), "{label}: {four}");
                    assert!(!accepts(&pretty_4, &two), "{label}: {two}");
                }
            }
        }
    }
    assert!(instances > 3000 && nested > 1000, "{instances} {nested}");
}

#[test]
fn pretty_layout_is_exact_up_to_its_depth_and_flexible_beyond() {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "children": {"type": "array", "items": {"$ref": "#"}},
            "name": {"type": "string"}
        },
        "additionalProperties": false
    });
    let grammar = compile(&schema, Whitespace::Pretty { indent: 2 }).expect("compiles");
    let mut tree = serde_json::json!({"name": "leaf"});
    for depth in 0..PRETTY_DEPTH + 4 {
        tree = serde_json::json!({"name": format!("n{depth}"), "children": [tree, {}]});
        let text = pretty(&tree, 2);
        assert!(accepts(&grammar, &text), "{text}");
        // One space too many before the leaf's member.
        let wrong = text.replacen("\"name\": \"leaf\"", " \"name\": \"leaf\"", 1);
        let leaf = 2 * (depth + 1);
        assert_eq!(
            accepts(&grammar, &wrong),
            leaf > PRETTY_DEPTH,
            "leaf at depth {leaf}: {wrong}"
        );
    }
    assert!(accepts(&grammar, "{}"));
    assert!(!accepts(&grammar, "{\n}"));
    assert!(accepts(&grammar, "{\n  \"children\": []\n}"));
    assert!(!accepts(&grammar, "{\n  \"children\": [\n  ]\n}"));
}

/// Properties in the declared order, each optional one present or absent
/// (all 64 subsets of six, with and without a required one, with and
/// without extra members after them): compact, flexible and pretty
/// layouts each accept exactly the subsets that hold the required member,
/// written their way — the flexible one also with white space before every
/// comma and the closing bracket (its grammar writes the white space after
/// a member once, before the choice of what follows) — and none with
/// members out of order or twice.
#[test]
fn declared_order_accepts_every_subset_of_optional_members() {
    let values = [
        ("a", serde_json::json!(1)),
        ("b", serde_json::json!(true)),
        ("c", serde_json::json!(2)),
        ("d", serde_json::json!(null)),
        ("e", serde_json::json!(3)),
        ("f", serde_json::json!("x")),
    ];
    let properties: serde_json::Map<String, Value> = values
        .iter()
        .map(|(name, value)| {
            let kind = match value {
                Value::Bool(_) => "boolean",
                Value::Null => "null",
                Value::String(_) => "string",
                _ => "integer",
            };
            (name.to_string(), serde_json::json!({ "type": kind }))
        })
        .collect();
    let (mut accepted, mut rejected) = (0, 0);
    for required in [false, true] {
        for extras in [false, true] {
            let mut schema = serde_json::json!({
                "type": "object",
                "properties": properties,
                "additionalProperties": if extras { serde_json::json!({"type": "integer"}) } else { serde_json::json!(false) },
            });
            if required {
                schema["required"] = serde_json::json!(["c"]);
            }
            let given = |whitespace| {
                compile_in(&schema, whitespace, PropertyOrder::Given).expect("compiles")
            };
            let compact = given(Whitespace::Compact);
            let flexible = given(Whitespace::Flexible { max: None });
            let pretty_2 = given(Whitespace::Pretty { indent: 2 });
            for subset in 0..1u32 << values.len() {
                // serde_json's map keeps keys sorted: a to f, then z.
                let mut object: serde_json::Map<String, Value> = values
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| subset & 1 << i != 0)
                    .map(|(_, (name, value))| (name.to_string(), value.clone()))
                    .collect();
                if extras {
                    object.insert("z".into(), serde_json::json!(7));
                }
                let value = Value::Object(object);
                let expected = !required || subset & 1 << 2 != 0;
                let text = serde_json::to_string(&value).expect("JSON");
                let two = pretty(&value, 2);
                let spaced = two.replace(',', " ,").replace('}', "\t}");
                for (grammar, text) in [
                    (&compact, &text),
                    (&flexible, &text),
                    (&flexible, &two),
                    (&flexible, &spaced),
                    (&pretty_2, &two),
                ] {
                    assert_eq!(accepts(grammar, text), expected, "{schema}: {text}");
                    if expected {
                        accepted += 1;
                    } else {
                        rejected += 1;
                    }
                }
            }
            for text in [
                r#"{"c":2,"a":1}"#,
                r#"{"c":2,"c":2}"#,
                r#"{"a":1,"c":2,"b":true}"#,
            ] {
                assert!(!accepts(&compact, text), "{schema}: {text}");
                assert!(!accepts(&flexible, text), "{schema}: {text}");
            }
        }
    }
    assert!(accepted > 600 && rejected > 150, "{accepted} {rejected}");
}

#[test]
fn an_indent_too_wide_is_an_error() {
    assert!(compile(&serde_json::json!({}), Whitespace::Pretty { indent: 1000 }).is_none());
}

#[test]
fn flexible_whitespace_runs_are_bounded_by_default() {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"child": {"$ref": "#"}, "name": {"type": "string"}}
    });
    let default = Options::default().whitespace;
    assert_eq!(
        default,
        Whitespace::Flexible {
            max: Some(DEFAULT_MAX_WHITESPACE)
        }
    );
    let grammar = compile(&schema, default).expect("compiles");
    // A pretty-printer's output seven levels deep at four spaces a level.
    let mut tree = serde_json::json!({"name": "leaf"});
    for _ in 0..6 {
        tree = serde_json::json!({"child": tree});
    }
    let text = pretty(&tree, 4);
    assert!(
        text.contains(&format!("\n{}\"name\"", " ".repeat(28))),
        "{text}"
    );
    assert!(accepts(&grammar, &text), "{text}");
    // A run of 32 is taken; the 33rd whitespace character is refused, and
    // the matcher is as it was.
    let limit = DEFAULT_MAX_WHITESPACE as usize;
    let mut matcher = Matcher::new(Arc::clone(&grammar));
    matcher.accept_str("{").expect("an object");
    matcher
        .accept_str(&" \n".repeat(limit / 2))
        .expect("32 whitespace characters");
    let steps = matcher.steps();
    assert!(matcher.accept_str(" ").is_err());
    assert!(matcher.accept_str("\n").is_err());
    assert_eq!(matcher.steps(), steps);
    matcher
        .accept_str("\"name\":\"x\"}")
        .expect("the value goes on");
    assert!(matcher.can_terminate());
    // Unbounded when asked.
    let unbounded = compile(&schema, Whitespace::Flexible { max: None }).expect("compiles");
    assert!(accepts(&unbounded, &format!("{{{}}}", " ".repeat(10_000))));
}
