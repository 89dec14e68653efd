//! The JSON Schema front end on the MaskBench sample (vendored in
//! `data/maskbench`), token by token with the Llama 3.1 tokenizer: every
//! schema that compiles accepts all its valid instances, and invalid ones
//! are rejected as far as a grammar can.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use xg_compiler::json_schema::{self, Options, PropertyOrder};
use xg_compiler::{Budget, CompileCache, Limits, Request, pipeline};
use xg_runtime::{Grammar, Matcher, TokenId, Vocabulary};

use common::{
    REAL_TOKENIZERS, compact, maskbench, maskbench_options, real_tokenizer, schema_grammar,
};

/// One compile cache for every schema of a run, as a server keeps one: the
/// rules schemas share are generated and built once, and the runs check
/// that grammars compiled from the cache accept what they should.
static CACHE: std::sync::LazyLock<CompileCache> = std::sync::LazyLock::new(CompileCache::default);

fn compile(schema: &Value, options: &Options) -> Result<Arc<Grammar>, String> {
    schema_grammar(schema, options, &CACHE)
}

/// The index of the first token the grammar refuses (its mask bit is clear),
/// counting the stop token after the text; `None` if all are allowed.
fn first_refused(
    grammar: &Arc<Grammar>,
    vocabulary: &Arc<Vocabulary>,
    tokens: &[TokenId],
) -> Option<usize> {
    let mut matcher = Matcher::with_vocabulary(Arc::clone(grammar), Arc::clone(vocabulary));
    let mut mask = vec![0u32; vocabulary.mask_words()];
    let stop = vocabulary.stop_tokens()[0];
    for (i, &token) in tokens.iter().chain([&stop]).enumerate() {
        matcher.fill_next_token_bitmask(&mut mask).expect("a mask");
        let allowed = mask[token.as_usize() / 32] >> (token.as_usize() % 32) & 1 == 1;
        if !allowed {
            // The matcher agrees with the mask.
            assert!(matcher.fork().accept_token(token).is_err());
            return Some(i);
        }
        matcher.accept_token(token).expect("an allowed token");
    }
    None
}

/// What one run over the sample found.
#[derive(Default)]
struct Outcome {
    files: usize,
    errors: Vec<String>,
    valid: usize,
    refused_valid: Vec<String>,
    invalid: usize,
    refused_invalid: usize,
    compile_times: Vec<Duration>,
}

/// How instances are fed to the grammar.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    /// Token by token with the real tokenizer, each token's mask bit checked.
    Tokens,
    /// Byte by byte (fast: no masks).
    Bytes,
}

/// The index of the first byte the grammar refuses, counting the end.
fn first_refused_byte(grammar: &Arc<Grammar>, text: &str) -> Option<usize> {
    let mut matcher = Matcher::new(Arc::clone(grammar));
    match matcher.accept_str(text) {
        Err(rejection) => Some(rejection.position()),
        Ok(()) => (!matcher.can_terminate()).then_some(text.len()),
    }
}

fn run(files: &[(String, Value)], options: &Options, level: Level) -> Outcome {
    let (json, config) = real_tokenizer(&REAL_TOKENIZERS[0]);
    let vocabulary = Arc::new(Vocabulary::from_tokenizer_json(&json, Some(&config)).unwrap());
    let tokenizer = tokenizers::Tokenizer::from_bytes(&json).unwrap();
    let mut outcome = Outcome {
        files: files.len(),
        ..Outcome::default()
    };
    for (name, doc) in files {
        let started = Instant::now();
        let grammar = match compile(&doc["schema"], options) {
            Ok(g) => g,
            Err(e) => {
                outcome.errors.push(format!("{name}: {e}"));
                continue;
            }
        };
        let compiled = started.elapsed();
        outcome.compile_times.push(compiled);
        for test in doc["tests"].as_array().unwrap() {
            let text = compact(&test["data"]);
            let encoding = tokenizer.encode(text.as_str(), false).unwrap();
            let tokens: Vec<TokenId> = encoding
                .get_ids()
                .iter()
                .map(|&id| TokenId::new(id as usize).unwrap())
                .collect();
            let refused = match level {
                Level::Tokens => first_refused(&grammar, &vocabulary, &tokens),
                Level::Bytes => first_refused_byte(&grammar, &text),
            };
            if test["valid"] == Value::Bool(true) {
                outcome.valid += 1;
                if let Some(at) = refused {
                    let shown: String = match level {
                        Level::Tokens => tokens[..at.min(tokens.len())]
                            .iter()
                            .flat_map(|&t| vocabulary.bytes(t).iter().copied())
                            .map(char::from)
                            .collect(),
                        Level::Bytes => {
                            String::from_utf8_lossy(&text.as_bytes()[..at]).into_owned()
                        }
                    };
                    let tail: String = shown
                        .chars()
                        .rev()
                        .take(80)
                        .collect::<Vec<_>>()
                        .into_iter()
                        .rev()
                        .collect();
                    outcome
                        .refused_valid
                        .push(format!("{name}: token {at} after …{tail}"));
                }
            } else {
                outcome.invalid += 1;
                outcome.refused_invalid += usize::from(refused.is_some());
            }
        }
        if started.elapsed() > Duration::from_secs(2) {
            eprintln!(
                "slow: {name}: compile {compiled:?}, total {:?}",
                started.elapsed()
            );
        }
    }
    outcome
}

fn report(label: &str, outcome: &Outcome) {
    let mut times = outcome.compile_times.clone();
    times.sort();
    // Percent-rank: the value below which `percent` of the times fall.
    let at = |percent: usize| {
        times
            .get(times.len().saturating_sub(1) * percent / 100)
            .copied()
            .unwrap_or_default()
    };
    eprintln!(
        "{label}: {}/{} compiled; valid accepted {}/{}; invalid rejected {}/{}; compile p50 {:?} p90 {:?} max {:?}",
        outcome.files - outcome.errors.len(),
        outcome.files,
        outcome.valid - outcome.refused_valid.len(),
        outcome.valid,
        outcome.refused_invalid,
        outcome.invalid,
        at(50),
        at(90),
        at(100),
    );
    for e in &outcome.errors {
        eprintln!("  error {e}");
    }
    for r in outcome.refused_valid.iter().take(20) {
        eprintln!("  refused {r}");
    }
}

/// Every file byte by byte, and every 10th token by token; slow in debug
/// builds, so run by `.ci/run` in release.
#[test]
#[cfg_attr(debug_assertions, ignore = "release only (.ci/run runs it)")]
fn maskbench_valid_instances_are_accepted() {
    let files = maskbench();
    let outcome = run(&files, &maskbench_options(), Level::Bytes);
    report("bytes, any order", &outcome);
    assert!(outcome.refused_valid.is_empty(), "valid instances refused");
    // Compile errors only for the few schemas too large for the default
    // time budget (2 s).
    assert!(
        outcome.errors.len() <= 4 && outcome.errors.iter().all(|e| e.contains("took longer")),
        "{:?}",
        outcome.errors
    );
    // Most invalid instances are decidable by a grammar.
    assert!(outcome.refused_invalid * 100 >= outcome.invalid * 95);
    let sample: Vec<(String, Value)> = files.into_iter().step_by(10).collect();
    let outcome = run(&sample, &maskbench_options(), Level::Tokens);
    report("tokens, any order, every 10th file", &outcome);
    assert!(outcome.refused_valid.is_empty(), "valid instances refused");
}

/// Every 60th file token by token, so debug builds check the whole path.
#[test]
fn maskbench_sample_is_accepted_token_by_token() {
    let files: Vec<(String, Value)> = maskbench().into_iter().step_by(60).collect();
    let outcome = run(&files, &maskbench_options(), Level::Tokens);
    report("sample", &outcome);
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    assert!(outcome.refused_valid.is_empty(), "valid instances refused");
    assert!(outcome.refused_invalid > 0);
}

/// A reporting aid: every file token by token (long: the figures for the
/// book and the closing notes).
#[test]
#[ignore = "a reporting aid: every file token by token"]
fn report_tokens() {
    report(
        "tokens, any order",
        &run(&maskbench(), &maskbench_options(), Level::Tokens),
    );
}

/// A reporting aid for the book: the figures in the schema's order.
#[test]
#[ignore = "a reporting aid: prints the figures in PropertyOrder::Given"]
fn report_given_order() {
    let options = Options {
        property_order: PropertyOrder::Given,
        ..maskbench_options()
    };
    report("given order", &run(&maskbench(), &options, Level::Bytes));
}

#[test]
#[ignore = "a profiling aid: XG_FILE=name of a MaskBench file or path of a schema"]
fn profile_one() {
    let wanted = std::env::var("XG_FILE").unwrap();
    let doc = match std::fs::read_to_string(&wanted) {
        Ok(text) => serde_json::json!({ "schema": serde_json::from_str::<Value>(&text).unwrap() }),
        Err(_) => {
            maskbench()
                .into_iter()
                .find(|(n, _)| *n == wanted)
                .unwrap()
                .1
        }
    };
    let options = maskbench_options();
    let t = Instant::now();
    let generated = json_schema::generate(&doc["schema"], &options, &Budget::unlimited()).unwrap();
    eprintln!(
        "generate {:?}, {} rules",
        t.elapsed(),
        generated.rule_count()
    );
    let mut request = Request::ahead_of_time();
    let file = request.add("s", "");
    let tree = json_schema::check(&mut request, &doc["schema"], file, &options).unwrap();
    let t = Instant::now();
    let g = xg_compiler::ir::lower(&tree);
    eprintln!("lower {:?}", t.elapsed());
    let t = Instant::now();
    let g = xg_compiler::normalize::normalize(g);
    eprintln!("normalize {:?}", t.elapsed());
    let t = Instant::now();
    let repeat: u32 = std::env::var("XG_REPEAT").map_or(1, |r| r.parse().unwrap());
    let mut automata = xg_compiler::fsm::build(
        &g,
        &Budget::unlimited(),
        &xg_compiler::CompileCache::default(),
    )
    .unwrap();
    for _ in 1..repeat {
        automata = xg_compiler::fsm::build(
            &g,
            &Budget::unlimited(),
            &xg_compiler::CompileCache::default(),
        )
        .unwrap();
    }
    eprintln!("fsm {:?}", t.elapsed() / repeat);
    let t = Instant::now();
    let hashes = xg_compiler::hash::hash(&g, &mut automata, &Budget::unlimited()).unwrap();
    eprintln!("hash {:?}", t.elapsed());
    let t = Instant::now();
    let _ = xg_compiler::tables::build(&automata, &hashes);
    eprintln!("tables {:?}", t.elapsed());
}

/// The runtime grammar of a byte-level grammar, compiled with no limits.
fn ir_grammar(grammar: xg_compiler::ir::Grammar) -> Arc<Grammar> {
    let normalized = xg_compiler::normalize::normalize(grammar);
    let mut automata =
        xg_compiler::fsm::build(&normalized, &Budget::unlimited(), &CACHE).expect("no limits");
    let hashes = xg_compiler::hash::hash(&normalized, &mut automata, &Budget::unlimited())
        .expect("no limits");
    let tables = xg_compiler::tables::build(&automata, &hashes);
    Arc::new(Grammar::new(tables).expect("the compiler's tables validate"))
}

/// `pipeline::json_schema` lowers the generated rules to bytes directly;
/// the result is what lowering their resolved tree gives (as an embedded
/// `%json` is compiled): rule for rule, but for extra property names,
/// which the tree spells out as a trie and the direct lowering keeps
/// whole (`ir::Except`) — there both grammars refuse every test instance
/// at the same byte, and every near-miss of a declared name.
#[test]
fn generated_rules_lower_directly_as_their_tree_does() {
    let options = maskbench_options();
    let mut compared_by_instances = 0;
    for (name, doc) in maskbench().into_iter().step_by(10) {
        let budget = || Budget::new(Limits::default());
        let Ok(generated) = json_schema::generate(&doc["schema"], &options, &budget()) else {
            continue;
        };
        let mut request = Request::new(&Limits::default(), &CompileCache::default());
        let file = request.add("schema.json", "");
        let tree = json_schema::check(&mut request, &doc["schema"], file, &options).unwrap();
        let direct = generated.to_ir();
        let lowered = xg_compiler::ir::lower(&tree);
        assert_eq!(direct.root, lowered.root, "{name}");
        let mut excepts = false;
        for (rule, other) in direct.rules.iter().zip(&lowered.rules) {
            if rule.body.to_string().contains("except(") {
                excepts = true;
                assert_eq!(rule.name, other.name, "{name}");
            } else {
                assert!(rule == other, "{name}: rule {}", rule.name);
            }
        }
        if !excepts {
            assert_eq!(direct.rules.len(), lowered.rules.len(), "{name}");
            continue;
        }
        compared_by_instances += 1;
        let (direct, lowered) = (ir_grammar(direct), ir_grammar(lowered));
        let mut texts: Vec<String> = doc["tests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|test| compact(&test["data"]))
            .collect();
        // Each declared top-level name, and its near misses, as a key.
        if let Some(properties) = doc["schema"]["properties"].as_object() {
            for key in properties.keys() {
                let mut shorter = key.clone();
                shorter.pop();
                for near in [key.clone(), format!("{key}x"), shorter, format!("{key}é")] {
                    texts.push(serde_json::json!({ near: null }).to_string());
                }
            }
        }
        for text in &texts {
            assert_eq!(
                first_refused_byte(&direct, text),
                first_refused_byte(&lowered, text),
                "{name}: {text}"
            );
        }
    }
    assert!(compared_by_instances > 5, "{compared_by_instances}");
}

/// `xg json-schema` prints `.xg` text: it parses, compiles, and accepts
/// and rejects the same instances as the grammar built directly.
#[test]
fn printed_grammars_round_trip_through_the_parser() {
    let options = maskbench_options();
    for (name, doc) in maskbench().into_iter().step_by(30) {
        let Ok(direct) = compile(&doc["schema"], &options) else {
            continue;
        };
        let generated =
            json_schema::generate(&doc["schema"], &options, &Budget::new(Limits::default()))
                .unwrap();
        let mut request = Request::ahead_of_time();
        let file = request.add(name.as_str(), generated.to_xg());
        let printed = pipeline::grammar(&mut request, file, "root").unwrap_or_else(|| {
            panic!(
                "{name}:\n{}",
                request.diagnostics.render(&request.sources, false)
            )
        });
        let printed = Arc::new(printed);
        for test in doc["tests"].as_array().unwrap() {
            let text = compact(&test["data"]);
            assert_eq!(
                first_refused_byte(&direct, &text),
                first_refused_byte(&printed, &text),
                "{name}: {text}"
            );
        }
    }
}

/// A schema embedded with `%json` in a `.xg` grammar accepts and rejects
/// the same instances as the schema compiled directly with the default
/// options, after the grammar's own text.
#[test]
fn embedded_schemas_match_direct_compilation() {
    let options = Options::default();
    for (name, doc) in maskbench().into_iter().skip(7).step_by(40) {
        let Ok(direct) = compile(&doc["schema"], &options) else {
            continue;
        };
        let text = format!("root ::= \"result: \" %json {}", doc["schema"]);
        let mut request = Request::ahead_of_time();
        let file = request.add(name.as_str(), text);
        let embedded = pipeline::grammar(&mut request, file, "root").unwrap_or_else(|| {
            panic!(
                "{name}:\n{}",
                request.diagnostics.render(&request.sources, false)
            )
        });
        let embedded = Arc::new(embedded);
        for test in doc["tests"].as_array().unwrap() {
            let text = compact(&test["data"]);
            let expected = first_refused_byte(&direct, &text).map(|at| at + "result: ".len());
            assert_eq!(
                first_refused_byte(&embedded, &format!("result: {text}")),
                expected,
                "{name}: {text}"
            );
        }
    }
}

/// An any-order object tracks which of its properties were written with a
/// rule per set of them (2^8 for eight): each set's rule must stay a few
/// references, not a copy of every key, or the grammar grows by the length
/// of the keys times 256. Its language stays exact: any order, each
/// required property once, optional ones anywhere.
#[test]
fn any_order_objects_track_their_properties_in_little_space() {
    let names: Vec<String> = (0..8)
        .map(|i| format!("a_rather_long_property_name_number_{i}"))
        .collect();
    let mut properties = serde_json::Map::new();
    for name in &names {
        properties.insert(name.clone(), serde_json::json!({"type": "boolean"}));
    }
    for extra in ["x", "y", "z"] {
        properties.insert(extra.into(), serde_json::json!({"type": "integer"}));
    }
    let schema = serde_json::json!({
        "type": "object",
        "properties": properties,
        "required": names,
        "additionalProperties": false,
    });
    let grammar = compile(&schema, &maskbench_options()).expect("compiles");
    let nodes = grammar.tables().nodes.len();
    // With the keys copied into every set's rule: about 20,000 (now 2,500).
    assert!(nodes < 8_000, "{nodes} automaton nodes");

    let member = |i: usize| format!("\"{}\":true", names[i]);
    let object = |order: &[usize], extras: &str| {
        let mut members: Vec<String> = order.iter().map(|&i| member(i)).collect();
        if !extras.is_empty() {
            members.insert(members.len() / 2, extras.to_string());
        }
        format!("{{{}}}", members.join(","))
    };
    let accepts = |text: &str| first_refused_byte(&grammar, text).is_none();
    assert!(accepts(&object(&[0, 1, 2, 3, 4, 5, 6, 7], "")));
    assert!(accepts(&object(
        &[7, 3, 5, 1, 0, 6, 2, 4],
        "\"y\":1,\"x\":2"
    )));
    // A required property missing, or written twice.
    assert!(!accepts(&object(&[7, 3, 5, 1, 0, 6, 2], "")));
    assert!(!accepts(&object(&[7, 3, 5, 1, 0, 6, 2, 4, 3], "")));
    // An undeclared property.
    assert!(!accepts(&object(&[0, 1, 2, 3, 4, 5, 6, 7], "\"w\":1")));
}

/// Rules the schema generates twice (every non-empty string property, every
/// object of one shape, and then what refers to them) become one shared
/// rule, and the grammar keeps its language. An object of additional
/// properties is a loop, not a rule that refers to itself: each property
/// does not nest the rest one rule deeper.
#[test]
fn equal_generated_rules_are_one_rule() {
    let point = serde_json::json!({
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
        "required": ["x", "y"],
        "additionalProperties": false,
    });
    // Equal rules from schemas that differ (here, in their descriptions;
    // equal schemas share their rule from the start).
    let mut to = point.clone();
    to["description"] = "where it ends".into();
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "first": {"type": "string", "minLength": 1},
            "second": {"type": "string", "minLength": 1, "description": "2nd"},
            "third": {"type": "string", "minLength": 1, "title": "3rd"},
            "from": point,
            "to": to,
        },
        "required": ["first", "from"],
        "additionalProperties": {"type": "string", "minLength": 1},
    });
    let options = maskbench_options();
    let generated = json_schema::generate(&schema, &options, &Budget::unlimited()).unwrap();
    let text = generated.to_xg();
    // One rule for the three strings (and the additional properties' values), one
    // for the two points.
    let rules_with = |needle: &str| text.lines().filter(|l| l.contains(needle)).count();
    assert_eq!(rules_with("json_char+"), 1, "{text}");
    assert_eq!(rules_with("\"\\\"x\\\":\""), 1, "{text}");
    assert!(text.contains("shared_"), "{text}");
    // The key of an extra property is built once, as a rule, and written
    // out where it is used: a key's automaton sees the `:` after it.
    assert!(!text.contains("other_key"), "{text}");
    assert_eq!(rules_with("canonical_char*"), 1, "{text}");

    let grammar = compile(&schema, &options).unwrap();
    let accepts = |text: &str| first_refused_byte(&grammar, text).is_none();
    assert!(accepts(r#"{"first":"a","from":{"x":1,"y":2}}"#));
    assert!(accepts(
        r#"{"to":{"y":1,"x":2},"third":"c","first":"a","more":"m","from":{"x":1,"y":2},"extra":"e"}"#
    ));
    assert!(!accepts(r#"{"first":"","from":{"x":1,"y":2}}"#));
    assert!(!accepts(r#"{"first":"a","from":{"x":1}}"#));
    assert!(!accepts(r#"{"first":"a","to":{"x":1,"y":2}}"#));
    assert!(!accepts(r#"{"first":"a","from":{"x":1,"y":2},"more":""}"#));
}

/// Schemas that inline their definitions repeat one subschema in many
/// places. Every copy takes the rule of the first, so the rule count does
/// not grow with the copies (50 copies fit in a budget of 40 rules), and
/// the report still names each copy's keywords at the copy's place.
#[test]
fn copies_of_a_subschema_share_its_rules_and_its_report() {
    let item = serde_json::json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "tags": {
                "type": "object",
                "properties": {"first": {"type": "integer"}, "second": {"type": "integer"}},
                "dependentRequired": {"first": ["second"]},
            },
        },
        "required": ["name"],
        "additionalProperties": false,
    });
    let copies = 50;
    let properties: serde_json::Map<String, Value> = (0..copies)
        .map(|i| (format!("copy_{i}"), item.clone()))
        .collect();
    let schema = serde_json::json!({"type": "object", "properties": properties});
    let options = maskbench_options();
    let limits = Limits {
        max_rules: 40,
        ..Limits::default()
    };
    let generated = json_schema::generate(&schema, &options, &Budget::new(limits))
        .expect("the copies share their rules");
    for i in 0..copies {
        let pointer = format!("#/properties/copy_{i}/properties/tags");
        assert!(
            generated
                .report
                .warnings()
                .any(|n| n.pointer == pointer && n.keyword == "dependentRequired"),
            "no note for {pointer}"
        );
    }

    let grammar = compile(&schema, &options).unwrap();
    let accepts = |text: &str| first_refused_byte(&grammar, text).is_none();
    assert!(accepts(
        r#"{"copy_7":{"name":"a","tags":{"first":1}},"copy_49":{"name":"b"}}"#
    ));
    assert!(!accepts(r#"{"copy_7":{"name":""}}"#));
    assert!(!accepts(r#"{"copy_49":{"name":"b","other":1}}"#));
}

/// A `patternProperties` member whose value schema is the one every other
/// key takes (`{}` beside an unsaid `additionalProperties`) adds nothing:
/// it is left out, so the key is one branch (not a counted repetition of
/// 255 characters beside any other name, which every mask walked) and no
/// approximation is reported. Where any other key takes any value, a
/// pattern member adds nothing to the language either (a key matching the
/// pattern may take the other keys' schema, as noted): it is left out too,
/// with its note. A pattern that a declared name matches keeps its member
/// and its note; the texts each schema accepts are as before.
#[test]
fn pattern_members_that_add_nothing_to_other_keys_are_left_out() {
    let options = maskbench_options();
    let generate = |schema: &Value| {
        json_schema::generate(schema, &options, &Budget::new(Limits::default()))
            .expect("the schema generates")
    };
    let notes = |schema: &Value| {
        (generate(schema).report.warnings())
            .filter(|note| note.keyword == "patternProperties")
            .count()
    };
    let same = serde_json::json!({"type": "object", "patternProperties": {"^.{1,255}$": {}}});
    let other = serde_json::json!({
        "type": "object",
        "patternProperties": {"^x": {"type": "integer"}},
    });
    let shadowing = serde_json::json!({
        "type": "object",
        "properties": {"xa": {"type": "string"}},
        "patternProperties": {"^x": {}},
    });
    let hex_keys = serde_json::json!({
        "type": "object",
        "patternProperties": {"[0-9a-f]{32}": {"type": "null"}},
    });
    let closed = serde_json::json!({
        "type": "object",
        "patternProperties": {"^x": {"type": "integer"}},
        "additionalProperties": {"type": "string"},
    });
    assert_eq!(notes(&same), 0);
    assert!(notes(&other) > 0);
    assert!(notes(&hex_keys) > 0);
    assert!(notes(&shadowing) > 0);
    // The pattern's key is spelled out only where other keys take less
    // than any value.
    assert!(
        !generate(&other).to_xg().contains("\"x\""),
        "{}",
        generate(&other).to_xg()
    );
    assert!(!generate(&hex_keys).to_xg().contains("{30}"));
    assert!(generate(&closed).to_xg().contains("\"x\""));
    assert!(generate(&shadowing).to_xg().contains("\"x\""));

    let accepts = |schema: &Value, text: &str| {
        first_refused_byte(&compile(schema, &options).unwrap(), text).is_none()
    };
    assert!(accepts(&same, r#"{"key":{},"":[1],"a b":"c"}"#));
    assert!(accepts(&other, r#"{"x1":2,"y":"any"}"#));
    assert!(
        accepts(&other, r#"{"x1":"any"}"#),
        "other keys' schema, as noted"
    );
    assert!(accepts(&shadowing, r#"{"xa":"s","xb":[]}"#));
    assert!(accepts(
        &hex_keys,
        r#"{"0123456789abcdef0123456789abcdef":null,"k":1}"#
    ));
    assert!(accepts(&closed, r#"{"x1":2,"y":"s"}"#));
    assert!(!accepts(&closed, r#"{"y":2}"#));
}

/// A `$ref` with annotations beside it merges into the node of its target:
/// every such property shares the target's rule, so the rule count does
/// not grow with them (12 references to a root of 20 properties fit in a
/// budget of 60 rules; built one by one they take about 260). A reference
/// with a keyword that constrains (`required`) keeps a rule of its own.
#[test]
fn references_merging_into_an_equal_node_share_its_rule() {
    let mut properties: serde_json::Map<String, Value> = (0..8)
        .map(|i| (format!("text_{i}"), serde_json::json!({"type": "string"})))
        .collect();
    for i in 0..12 {
        let reference = serde_json::json!({"$ref": "#", "description": format!("nested {i}")});
        properties.insert(format!("nested_{i}"), reference);
    }
    properties.insert(
        "strict".into(),
        serde_json::json!({"$ref": "#", "required": ["text_0"]}),
    );
    let schema = serde_json::json!({"type": "object", "properties": properties});
    let options = maskbench_options();
    let limits = Limits {
        max_rules: 60,
        ..Limits::default()
    };
    json_schema::generate(&schema, &options, &Budget::new(limits))
        .expect("the references share the root's rule");

    let grammar = compile(&schema, &options).unwrap();
    let accepts = |text: &str| first_refused_byte(&grammar, text).is_none();
    assert!(accepts(
        r#"{"nested_3":{"nested_11":{"text_1":"a"}},"text_0":"b"}"#
    ));
    assert!(accepts(r#"{"strict":{"text_0":"a","nested_0":{}}}"#));
    assert!(!accepts(r#"{"strict":{"text_1":"a"}}"#));
    assert!(!accepts(r#"{"nested_3":{"nested_11":{"text_1":1}}}"#));
}

/// Names from a small alphabet with plain, escaped and non-ASCII
/// characters, so that random keys often share prefixes with them.
fn key_name() -> impl proptest::strategy::Strategy<Value = String> {
    proptest::string::string_regex("[ab\"\\\\é\n]{0,3}").expect("a valid pattern")
}

proptest::proptest! {
    #![proptest_config(common::cases(64))]

    /// An object whose declared properties are booleans and whose extra
    /// properties are integers: a key takes an integer exactly when it is
    /// none of the declared names (prefixes and extensions of them
    /// included), in either property order.
    #[test]
    fn extra_properties_are_exactly_the_undeclared_keys(
        names in proptest::collection::vec(key_name(), 0..5),
        keys in proptest::collection::vec(key_name(), 1..6),
    ) {
        let properties: serde_json::Map<String, Value> = names
            .iter()
            .map(|n| (n.clone(), serde_json::json!({"type": "boolean"})))
            .collect();
        let schema = serde_json::json!({
            "type": "object",
            "properties": properties,
            "additionalProperties": {"type": "integer"},
        });
        for order in [PropertyOrder::Given, PropertyOrder::Any] {
            let options = Options { property_order: order, ..maskbench_options() };
            let grammar = compile(&schema, &options).unwrap();
            for key in names.iter().chain(&keys) {
                let declared = names.contains(key);
                for (value, fits) in [("true", declared), ("1", !declared)] {
                    let text = format!("{{{}:{value}}}", compact(&Value::from(key.as_str())));
                    let accepted = first_refused_byte(&grammar, &text).is_none();
                    proptest::prop_assert_eq!(accepted, fits, "{} ({:?})", text, order);
                }
            }
        }
    }
}

/// A `pattern` of alternatives is one choice between its `any*` ends (per
/// combination of anchors): its automaton is deterministic and small, so
/// that once an alternative has matched, every character leads to one
/// state (a few dozen nodes; kept apart, the alternatives' automaton
/// remembered which of them had matched and did not determinize).
#[test]
fn pattern_alternatives_share_their_unanchored_ends() {
    let pattern = "UTC|(Africa/[A-Za-z]+)|(America/[A-Za-z]+)|(Antarctica/[A-Za-z]+)|\
        (Arctic/[A-Za-z]+)|(Asia/[A-Za-z]+)|(Atlantic/[A-Za-z]+)|(Australia/[A-Za-z]+)|\
        (Europe/[A-Za-z]+)|(Indian/[A-Za-z]+)|(Pacific/[A-Za-z]+)|^z$|^y|x$";
    let schema = serde_json::json!({"type": "string", "pattern": pattern});
    let mut request = Request::new(&Limits::default(), &CompileCache::default());
    let file = request.add("schema.json", schema.to_string());
    let tree = json_schema::check(&mut request, &schema, file, &Options::default()).unwrap();
    let compiled = pipeline::compile_tree(&mut request, &tree).unwrap();
    let xg_compiler::fsm::Body::Automaton(fsm) = &compiled.automata.rules[0].body else {
        panic!("an automaton");
    };
    assert!(fsm.is_deterministic());
    assert!(fsm.nodes.len() < 200, "{} nodes", fsm.nodes.len());
    let grammar = compile(&schema, &Options::default()).unwrap();
    for (text, valid) in [
        ("\"UTC\"", true),
        ("\"at UTC+1\"", true),
        ("\"Europe/Paris, then Asia/\"", true),
        ("\"Asia/\"", false),
        ("\"z\"", true),
        ("\"zz\"", false),
        ("\"yes\"", true),
        ("\"a y\"", false),
        ("\"box\"", true),
        ("\"xa\"", false),
        ("\"utc\"", false),
    ] {
        assert_eq!(
            first_refused_byte(&grammar, text).is_none(),
            valid,
            "{text}"
        );
    }
}

/// A `pattern` not anchored at an end is compiled without the parts a match
/// may leave off there (`https?://[a-z]+(/.*)?` is found where
/// `https?://[a-z]` is), so that every state after a match is one state:
/// a URL pattern's masks walked the whole vocabulary at every step (1.1 ms a
/// step) while its optional path kept states apart. Random patterns with
/// optional, repeated and alternative parts at either end, some anchored,
/// accept exactly the strings regex-automata finds them in (exact ones:
/// those without an approximation note).
fn search_pattern() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just("a".to_string()),
        Just("b".to_string()),
        Just("[a-c]".to_string()),
        Just("[^a]".to_string()),
    ];
    let part = leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 2..4).prop_map(|items| items.concat()),
            prop::collection::vec(inner.clone(), 2..3)
                .prop_map(|items| format!("(?:{})", items.join("|"))),
            (inner, 0..6usize, 0..3u32).prop_map(|(e, form, n)| match form {
                0 => format!("(?:{e})*"),
                1 => format!("(?:{e})+"),
                2 => format!("(?:{e})?"),
                3 => format!("(?:{e}){{{n}}}"),
                4 => format!("(?:{e}){{{n},}}"),
                _ => format!("(?:{e}){{{n},{}}}", n + 1),
            }),
        ]
    });
    let alternative = (any::<bool>(), part, any::<bool>()).prop_map(|(start, p, end)| {
        format!(
            "{}{p}{}",
            if start { "^" } else { "" },
            if end { "$" } else { "" }
        )
    });
    prop::collection::vec(alternative, 1..3).prop_map(|items| items.join("|"))
}

proptest::proptest! {
    #![proptest_config(common::cases(64))]

    #[test]
    fn patterns_are_found_where_regex_automata_finds_them(
        pattern in search_pattern(),
        subjects in proptest::collection::vec("[abc]{0,6}", 24),
    ) {
        let schema = serde_json::json!({"type": "string", "pattern": pattern});
        let budget = Budget::new(Limits::default());
        let generated = json_schema::generate(&schema, &Options::default(), &budget).unwrap();
        // Exact patterns only (`^a|^a$` is parsed as `^a(?:|$)`, whose
        // inner `$` is approximated).
        proptest::prop_assume!(generated.report.warnings().next().is_none());
        let grammar = compile(&schema, &Options::default()).unwrap();
        let reference = regex_automata::meta::Regex::new(&pattern).unwrap();
        for subject in &subjects {
            let text = compact(&Value::from(subject.as_str()));
            let accepted = first_refused_byte(&grammar, &text).is_none();
            proptest::prop_assert_eq!(accepted, reference.is_match(subject), "{} on {}", pattern, text);
        }
    }
}

/// Length limits a pattern leaves unenforced are reported as what they are
/// and where they are: a `minLength` in a definition that meets a
/// `pattern` on one branch is approximated at the definition (not a
/// `maxLength` at the pattern's place), a `maxLength` on the other branch,
/// with no pattern, stays enforced, and a `minLength` of 0 limits nothing.
#[test]
fn length_limits_next_to_a_pattern_are_reported_where_they_are() {
    use json_schema::Treatment::{Approximated, Enforced};
    let treatment = |schema: &Value, pointer: &str, keyword: &str| {
        let generated =
            json_schema::generate(schema, &Options::default(), &Budget::new(Limits::default()))
                .expect("the schema generates");
        let notes = generated.report.notes.iter();
        let mut found = notes.filter(|n| n.pointer == pointer && n.keyword == keyword);
        found.next().map(|n| n.treatment)
    };
    let schema = serde_json::json!({
        "allOf": [{"$ref": "#/definitions/s"}],
        "anyOf": [{"pattern": "^a"}, {"maxLength": 5}],
        "definitions": {"s": {"type": "string", "minLength": 2}},
    });
    assert_eq!(
        treatment(&schema, "#/definitions/s", "minLength"),
        Some(Approximated)
    );
    assert_eq!(treatment(&schema, "#/anyOf/1", "maxLength"), Some(Enforced));
    assert_eq!(treatment(&schema, "#/anyOf/0", "maxLength"), None);
    let zero =
        serde_json::json!({"type": "string", "pattern": "^a", "minLength": 0, "maxLength": 9});
    assert_eq!(treatment(&zero, "#", "minLength"), Some(Enforced));
    assert_eq!(treatment(&zero, "#", "maxLength"), Some(Approximated));
}

/// In the given order, properties merged from several subschemas come in
/// the order a reader of the schema sees them: `allOf` members as listed,
/// a chosen `anyOf`/`oneOf` branch where the choice is written (before or
/// after the sibling `properties`), a `$ref` where it is written — whatever
/// order the subschemas' pointers sort in. (`allOf` merged last member
/// first; branches merged after everything else.)
#[test]
fn merged_properties_keep_document_order() {
    let options = Options {
        whitespace: json_schema::Whitespace::Compact,
        property_order: PropertyOrder::Given,
        ..Options::default()
    };
    let cases = [
        (
            r##"{"definitions": {"address": {"properties": {"street": {"type": "string"}}}},
                "allOf": [{"$ref": "#/definitions/address"}, {"properties": {"kind": {"type": "string"}}}]}"##,
            r#"{"street":"Elm","kind":"home"}"#,
            r#"{"kind":"home","street":"Elm"}"#,
        ),
        (
            r#"{"oneOf": [{"properties": {"shape": {"const": "circle"}}, "required": ["radius"]},
                          {"properties": {"shape": {"const": "square"}}, "required": ["side"]}],
                "properties": {"radius": {"type": "number"}, "side": {"type": "number"}, "shape": {"type": "string"}}}"#,
            r#"{"shape":"circle","radius":1}"#,
            r#"{"radius":1,"shape":"circle"}"#,
        ),
        (
            r##"{"definitions": {"node": {"properties": {"ast": {"type": "string"}, "type": {"type": "string"}},
                    "anyOf": [{"properties": {"type": {"const": "leaf"}, "data": {"type": "string"}}}]}},
                "patternProperties": {"^r": {"$ref": "#/definitions/node"}}, "additionalProperties": false}"##,
            r#"{"r1":{"ast":"a","type":"leaf","data":"x"}}"#,
            r#"{"r1":{"type":"leaf","ast":"a","data":"x"}}"#,
        ),
    ];
    for (schema, in_order, out_of_order) in cases {
        let schema: Value = serde_json::from_str(schema).unwrap();
        let grammar = compile(&schema, &options).unwrap();
        assert_eq!(
            first_refused_byte(&grammar, in_order),
            None,
            "{schema}: {in_order}"
        );
        assert!(
            first_refused_byte(&grammar, out_of_order).is_some(),
            "{schema}: {out_of_order}"
        );
    }
}

/// Listed values (`enum`, `const`) are checked against the `pattern`s of
/// the schemas they are conjoined with, and a choice between constants
/// under such a conjunction gets rules only for the branches that can
/// match: Azure Pipelines' schema pairs 238 task-name patterns with 238
/// task-name constants (56,644 conjunctions, one rule each before, 0.48 s).
/// Here 150 × 150 must stay under a 2,000-rule limit, `extra` (listed but
/// matching no pattern) is refused, and the report says the patterns are
/// enforced.
#[test]
fn listed_values_are_checked_against_the_patterns_they_meet() {
    let names: Vec<String> = (0..150).map(|i| format!("Task{i}@1")).collect();
    let mut listed: Vec<Value> = names
        .iter()
        .map(|n| serde_json::json!({"enum": [n]}))
        .collect();
    listed.push(serde_json::json!({"const": "extra"}));
    let branches: Vec<Value> = names
        .iter()
        .map(|n| {
            serde_json::json!({
                "properties": {"task": {"pattern": format!("^{}$", n.replace('@', "\\@"))}},
                "required": ["task"],
            })
        })
        .collect();
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"task": {"anyOf": listed}},
        "additionalProperties": false,
        "anyOf": branches,
    });
    let limits = Limits {
        max_rules: 2_000,
        ..Limits::default()
    };
    let generated = json_schema::generate(&schema, &Options::default(), &Budget::new(limits))
        .unwrap_or_else(|errors| panic!("{errors:?}"));
    let enforced = generated
        .report
        .notes
        .iter()
        .filter(|note| note.keyword == "pattern")
        .all(|note| note.treatment == json_schema::Treatment::Enforced);
    assert!(enforced, "{:?}", generated.report.notes);
    let grammar = compile(&schema, &Options::default()).unwrap();
    for name in [&names[0], &names[77], &names[149]] {
        let text = format!(r#"{{"task":"{name}"}}"#);
        assert_eq!(first_refused_byte(&grammar, &text), None, "{text}");
    }
    for text in [r#"{"task":"extra"}"#, r#"{"task":"Task150@1"}"#, "{}"] {
        assert!(first_refused_byte(&grammar, text).is_some(), "{text}");
    }
}
