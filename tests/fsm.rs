//! The automata accept exactly the language of the normalized IR: the
//! reference recognizer gives the same answers on the IR and on the automata
//! (rewritten as one rule per node), complete and prefix, on sentences sampled
//! from each grammar and on near-misses.

mod common;

use common::{CORPUS, LIBRARY, compile, fsm_as_ir, library, random_grammar, same_language};
use proptest::prelude::*;
use xg_compiler::ir::reference::{Mode, Symbol, recognizes};
use xg_compiler::normalize;
use xg_compiler::{Budget, CompileCache, Limits, Request, fsm, ir, pipeline};

/// One compile cache for every test: automata built for one grammar are
/// relabelled into others, which must not change their language.
static CACHE: std::sync::LazyLock<CompileCache> = std::sync::LazyLock::new(CompileCache::default);

fn check_automata(source: &str, seed: u64) -> Result<(), TestCaseError> {
    let original = compile(source);
    let automata = fsm::build(
        &normalize::normalize(original.clone()),
        &Budget::unlimited(),
        &CACHE,
    )
    .unwrap();
    for rule in &automata.rules {
        if let fsm::Body::Automaton(fsm) = &rule.body
            && fsm.is_deterministic()
        {
            prop_assert_eq!(
                equivalence_classes(fsm),
                fsm.nodes.len(),
                "{}: rule {} is not minimal",
                source,
                rule.name
            );
        }
    }
    same_language(&original, &fsm_as_ir(&automata), source, seed, 6)
}

/// The number of classes of equivalent nodes of a deterministic automaton,
/// by the textbook refinement one byte at a time (slow, obviously right):
/// a minimal automaton has one node per class.
fn equivalence_classes(fsm: &fsm::Fsm) -> usize {
    let step = |node: &fsm::Node, byte: u8| {
        node.edges.iter().find_map(|edge| match edge.label {
            fsm::Label::Bytes { lo, hi } if lo <= byte && byte <= hi => Some(edge.target),
            _ => None,
        })
    };
    let mut class: Vec<usize> = fsm.nodes.iter().map(|n| usize::from(n.is_final)).collect();
    loop {
        let signatures: Vec<_> = fsm
            .nodes
            .iter()
            .enumerate()
            .map(|(n, node)| {
                let bytes: Vec<Option<usize>> = (0..=255u8)
                    .map(|b| step(node, b).map(|t| class[t as usize]))
                    .collect();
                let others: Vec<(fsm::Label, usize)> = node
                    .edges
                    .iter()
                    .filter(|e| !matches!(e.label, fsm::Label::Bytes { .. }))
                    .map(|e| (e.label, class[e.target as usize]))
                    .collect();
                (class[n], bytes, others)
            })
            .collect();
        let mut distinct = signatures.clone();
        distinct.sort();
        distinct.dedup();
        let next: Vec<usize> = signatures
            .iter()
            .map(|s| distinct.binary_search(s).expect("present"))
            .collect();
        let before = class
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        class = next;
        if distinct.len() == before {
            return distinct.len();
        }
    }
}

/// Each text is a complete match of both the IR `original` and its
/// automata `rewritten` exactly when `expected` says so.
fn expect_complete(original: &ir::Grammar, rewritten: &ir::Grammar, cases: &[(&str, bool)]) {
    for &(text, expected) in cases {
        let input = Symbol::text(text);
        assert_eq!(
            recognizes(rewritten, &input, Mode::Complete),
            expected,
            "{text}"
        );
        assert_eq!(
            recognizes(original, &input, Mode::Complete),
            expected,
            "{text} (IR)"
        );
    }
}

/// The IR of a JSON Schema (default options) and its automata.
fn schema_automata(schema: &serde_json::Value) -> (ir::Grammar, fsm::Grammar) {
    let generated = xg_compiler::json_schema::generate(
        schema,
        &xg_compiler::json_schema::Options::default(),
        &Budget::unlimited(),
    )
    .unwrap();
    let original = generated.to_ir();
    let automata = fsm::build(
        &normalize::normalize(original.clone()),
        &Budget::unlimited(),
        &CACHE,
    )
    .unwrap();
    (original, automata)
}

/// The nodes of all automata (a dispatch counts as one).
fn node_count(grammar: &fsm::Grammar) -> usize {
    grammar
        .rules
        .iter()
        .map(|rule| match &rule.body {
            fsm::Body::Automaton(fsm) => fsm.nodes.len(),
            _ => 1,
        })
        .sum()
}

proptest! {
    #![proptest_config(common::cases(64))]

    #[test]
    fn automata_accept_the_language_of_the_ir(index in 0..CORPUS.len(), seed in any::<u64>()) {
        check_automata(CORPUS[index], seed)?;
    }

    #[test]
    fn library_automata_accept_the_language_of_the_ir(index in 0..LIBRARY.len(), seed in any::<u64>()) {
        check_automata(&library()[index], seed)?;
    }
}

fn root_fsm(grammar: &fsm::Grammar) -> &fsm::Fsm {
    match &grammar.rule(grammar.root).body {
        fsm::Body::Automaton(fsm) => fsm,
        other => panic!("root is not an automaton: {other:?}"),
    }
}

#[test]
fn automata_are_minimal_and_deterministic() {
    // a*b | a*c — 3 nodes when minimal: start (loop on a), after b/c (final).
    let grammar = fsm::build(
        &normalize::normalize(compile(r#"root ::= "a"* "b" | "a"* "c""#)),
        &Budget::unlimited(),
        &CACHE,
    )
    .unwrap();
    let fsm = root_fsm(&grammar);
    assert!(fsm.is_deterministic());
    assert_eq!(fsm.nodes.len(), 2, "{fsm:?}");
    // Every rule of the JSON grammar is deterministic.
    let json = fsm::build(
        &normalize::normalize(compile(&library()[0])),
        &Budget::unlimited(),
        &CACHE,
    )
    .unwrap();
    for rule in &json.rules {
        if let fsm::Body::Automaton(fsm) = &rule.body {
            assert!(fsm.is_deterministic(), "{}", rule.name);
        }
    }
}

#[test]
fn acyclic_nodes_merge_with_equivalent_nodes_after_a_cycle() {
    // After "a" and after "c"+ "x" only "y" may follow: the first node is
    // on no cycle, the second is reached from the loop on "c". Minimal:
    // start, the loop, expects "y", final.
    let grammar = fsm::build(
        &normalize::normalize(compile(r#"root ::= "a" "y" | "c"+ "x" "y""#)),
        &Budget::unlimited(),
        &CACHE,
    )
    .unwrap();
    let fsm = root_fsm(&grammar);
    assert!(fsm.is_deterministic());
    assert_eq!(fsm.nodes.len(), 4, "{fsm:?}");
    assert_eq!(equivalence_classes(fsm), 4);
}

#[test]
fn extra_property_names_compile_to_minimal_automata() {
    // Names sharing prefixes and suffixes: the automaton of "any other
    // name" is a trie leaving by every other character into a loop, its
    // equivalent subtries merged.
    let names = [
        "id", "idx", "name", "names", "nameId", "typeId", "type", "types", "kind", "kindId",
        "value", "values", "valueId", "ab", "abc", "abd", "xbc", "xbd", "été", "café",
    ];
    let properties: Vec<String> = names
        .iter()
        .map(|name| format!(r#""{name}": {{"type": "integer"}}"#))
        .collect();
    let schema: serde_json::Value = serde_json::from_str(&format!(
        r#"{{"type": "object", "properties": {{{}}}}}"#,
        properties.join(", ")
    ))
    .unwrap();
    let (original, automata) = schema_automata(&schema);
    let mut checked = 0;
    for rule in &automata.rules {
        if let fsm::Body::Automaton(fsm) = &rule.body
            && fsm.is_deterministic()
        {
            assert_eq!(
                equivalence_classes(fsm),
                fsm.nodes.len(),
                "rule {} is not minimal",
                rule.name
            );
            checked += 1;
        }
    }
    assert!(checked > 5, "{checked} automata checked");
    let rewritten = fsm_as_ir(&automata);
    expect_complete(
        &original,
        &rewritten,
        &[
            (r#"{"id":1,"idy":2}"#, true),
            (r#"{"idy":[true]}"#, true),
            (r#"{"nam":"x"}"#, true),
            (r#"{"name":"x"}"#, false),
            (r#"{"name":1}"#, true),
            (r#"{"abe":{}}"#, true),
            (r#"{"xbd":null}"#, false),
            (r#"{"été":null}"#, false),
            (r#"{"étés":null}"#, true),
        ],
    );
}

#[test]
fn huge_repetitions_stay_small_and_exact() {
    let source = "root ::= [a-z]{0,100000}";
    let grammar = fsm::build(
        &normalize::normalize(compile(source)),
        &Budget::unlimited(),
        &CACHE,
    )
    .unwrap();
    let nodes = node_count(&grammar);
    assert!(nodes <= 4, "{nodes} nodes");
    let counted = root_fsm(&grammar)
        .nodes
        .iter()
        .flat_map(|n| &n.edges)
        .find_map(|e| match e.label {
            fsm::Label::Repeat { min, max, .. } => Some((min, max)),
            _ => None,
        });
    assert_eq!(counted, Some((0, Some(100_000))));
    // The counted edge reaches exactly 100000; the same construction is
    // checked end to end, at its boundary, on a range the reference
    // recognizer can afford.
    let grammar = fsm::build(
        &normalize::normalize(compile("root ::= [a-z]{0,300}")),
        &Budget::unlimited(),
        &CACHE,
    )
    .unwrap();
    let rewritten = fsm_as_ir(&grammar);
    for (length, expected) in [(0, true), (299, true), (300, true), (301, false)] {
        let input = Symbol::text("q".repeat(length));
        assert_eq!(
            recognizes(&rewritten, &input, Mode::Complete),
            expected,
            "{length}"
        );
    }
    assert!(recognizes(
        &rewritten,
        &Symbol::text("q".repeat(300)),
        Mode::Prefix
    ));
    assert!(!recognizes(
        &rewritten,
        &Symbol::text("q".repeat(301)),
        Mode::Prefix
    ));
}

#[test]
fn ir_helper_sanity() {
    // The rewriting helper itself: a grammar's automata rewritten as rules
    // accept what the grammar does on a hand-picked case.
    let original: ir::Grammar = compile(r#"root ::= "x" [0-9]{2}"#);
    let rewritten = fsm_as_ir(
        &fsm::build(
            &normalize::normalize(original),
            &Budget::unlimited(),
            &CACHE,
        )
        .unwrap(),
    );
    assert!(recognizes(&rewritten, &Symbol::text("x12"), Mode::Complete));
    assert!(!recognizes(&rewritten, &Symbol::text("x1"), Mode::Complete));
}

proptest! {
    #![proptest_config(common::cases(48))]

    /// Random grammars (nested repetitions, multi-byte classes, recursion):
    /// the automata accept exactly what the IR does.
    #[test]
    fn random_grammars_compile_to_equivalent_automata(source in random_grammar(), seed in any::<u64>()) {
        check_automata(&source, seed)?;
    }
}

proptest! {
    #![proptest_config(common::cases(64))]

    /// Choices of strings with shared prefixes, some multi-byte (a JSON
    /// Schema `enum`, built as a trie rather than by subsets): minimal, and
    /// the language of the IR.
    #[test]
    fn choices_of_strings_compile_to_minimal_equivalent_automata(
        words in proptest::collection::vec("[ab\u{e9}]{1,6}", 2..40),
        seed in any::<u64>(),
    ) {
        let choice: Vec<String> = words.iter().map(|word| format!("\"{word}\"")).collect();
        check_automata(&format!("root ::= {}", choice.join(" | ")), seed)?;
    }
}

proptest! {
    #![proptest_config(common::cases(64))]

    /// A choice of rules of byte patterns (a JSON Schema `anyOf` of
    /// patterns): the choice takes the bodies of those that call no rule
    /// once normalized (a large counted repetition becomes a rule of its
    /// own), is minimal, and has the language of the IR.
    #[test]
    fn choices_of_pattern_rules_compile_to_one_minimal_equivalent_automaton(
        source in common::choice_of_pattern_rules(),
        seed in any::<u64>(),
    ) {
        check_automata(&source, seed)?;
        let automata = fsm::build(
            &normalize::normalize(compile(&source)),
            &Budget::unlimited(),
            &CACHE,
        )
        .unwrap();
        let fsm::Body::Automaton(root) = &automata.rules[0].body else {
            panic!("the root is an automaton");
        };
        let callees = |fsm: &fsm::Fsm| -> Vec<usize> {
            let labels = fsm.nodes.iter().flat_map(|n| &n.edges).map(|e| e.label);
            labels
                .filter_map(|label| match label {
                    fsm::Label::Rule(rule) | fsm::Label::Repeat { rule, .. } => Some(rule.as_usize()),
                    _ => None,
                })
                .collect()
        };
        for callee in callees(root) {
            let rule = &automata.rules[callee];
            let calls = match &rule.body {
                fsm::Body::Automaton(fsm) => !callees(fsm).is_empty(),
                _ => true,
            };
            prop_assert!(calls, "{} calls {}, which calls no rule", source, rule.name);
        }
    }
}

/// A choice of words searched for inside a string (a JSON Schema `oneOf`
/// of unanchored `pattern`s, from `Github_hard---o12278`: each branch a
/// quote, any characters, the word, any characters, the quote) compiles to
/// one deterministic, minimal automaton with the language of the IR: the
/// parts every branch shares are taken out of the choice, so that a subset
/// remembers whether a word was seen, not which. As a union of the seven
/// branches' automata it stayed nondeterministic (more subsets than
/// determinization allows, 12 ms to find out), and a mask walked the
/// vocabulary once per branch.
#[test]
fn a_choice_of_words_searched_for_in_a_string_is_one_deterministic_automaton() {
    let schema = serde_json::json!({"type": "string", "oneOf": [
        {"pattern": "NEW"}, {"pattern": "ON_APPROVAL"}, {"pattern": "ON_SIGNING"},
        {"pattern": "ON_MODIFICATION"}, {"pattern": "EXECUTED"},
        {"pattern": "DEPRECATED"}, {"pattern": "REJECTED"}
    ]});
    let (original, automata) = schema_automata(&schema);
    let root = root_fsm(&automata);
    assert!(
        root.is_deterministic(),
        "{} nodes, not deterministic",
        root.nodes.len()
    );
    assert_eq!(equivalence_classes(root), root.nodes.len(), "not minimal");
    let rewritten = fsm_as_ir(&automata);
    expect_complete(
        &original,
        &rewritten,
        &[
            (r#""NEW""#, true),
            (r#""a NEW one, EXECUTED""#, true),
            (r#""ON_SIGNIN""#, false),
            (r#""ON_\nSIGNING""#, false),
            (r#""\tREJECTED\n""#, true),
            (r#""NEW"#, false),
            (r#""""#, false),
        ],
    );
}

/// A repetition of at most zero matches is the empty text and leaves no
/// rule behind, even around a counted repetition (which gets a rule of its
/// own): the choice below takes `t1`'s body. Found by
/// `choices_of_pattern_rules_compile_to_one_minimal_equivalent_automaton`.
#[test]
fn a_repetition_of_at_most_zero_matches_is_empty_and_calls_no_rule() {
    let source =
        "root ::= t1 | t2\nt1 ::= ((\"a\"){1,9}){0,0}\nt2 ::= [a-c]* ([é-ê] \"a\") [a-c]*\n";
    check_automata(source, 0).unwrap();
    let normalized = normalize::normalize(compile(source));
    assert!(
        normalized
            .rules
            .iter()
            .all(|rule| !rule.name.contains("#repeat")),
        "{:?}",
        normalized
            .rules
            .iter()
            .map(|rule| &rule.name)
            .collect::<Vec<_>>()
    );
    let grammar = fsm::build(&normalized, &Budget::unlimited(), &CACHE).unwrap();
    let fsm::Body::Automaton(root) = &grammar.rules[0].body else {
        panic!("the root is an automaton");
    };
    let calls = root
        .nodes
        .iter()
        .flat_map(|n| &n.edges)
        .any(|e| matches!(e.label, fsm::Label::Rule(_) | fsm::Label::Repeat { .. }));
    assert!(!calls, "the root calls a rule");
}

#[test]
fn nested_repetitions_do_not_explode() {
    // 8^6 copies if expanded naively.
    let source = r#"root ::= (((((("ab" [0-9]){8}){8}){8}){8}){8}){8}"#;
    let grammar = fsm::build(
        &normalize::normalize(compile(source)),
        &Budget::unlimited(),
        &CACHE,
    )
    .unwrap();
    let nodes = node_count(&grammar);
    assert!(nodes < 5_000, "{nodes} nodes");
    let rewritten = fsm_as_ir(&grammar);
    assert!(recognizes(
        &rewritten,
        &Symbol::text("ab1ab2"),
        Mode::Prefix
    ));
    assert!(!recognizes(
        &rewritten,
        &Symbol::text("ab1ac"),
        Mode::Prefix
    ));
}

/// The compiled form of `source` (automata numbered canonically, hashes,
/// tables) with automata from `cache`.
fn compiled_with(source: &str, cache: &CompileCache) -> (fsm::Grammar, Vec<u64>, String) {
    let mut request = Request::new(&Limits::unlimited(), cache);
    let file = request.add("test.xg", source);
    let tree = pipeline::check(&mut request, file, "root").unwrap();
    let compiled = pipeline::compile_tree(&mut request, &tree).unwrap();
    let hashes = compiled.hashes.iter().map(|h| h.rule).collect();
    (compiled.automata, hashes, format!("{:?}", compiled.tables))
}

#[test]
fn a_shared_compile_cache_changes_nothing() {
    let grammars: Vec<String> = CORPUS
        .iter()
        .map(ToString::to_string)
        .chain(library())
        .collect();
    let alone: Vec<_> = grammars
        .iter()
        .map(|g| compiled_with(g, &CompileCache::default()))
        .collect();
    // Forwards, then backwards: every grammar meets automata built for
    // the others (the JSON rules, the dispatch arms, the small literals).
    let shared = CompileCache::default();
    for round in 0..2 {
        let order: Vec<usize> = if round == 0 {
            (0..grammars.len()).collect()
        } else {
            (0..grammars.len()).rev().collect()
        };
        for i in order {
            assert!(
                compiled_with(&grammars[i], &shared) == alone[i],
                "grammar {i} compiles differently with a shared cache:\n{}",
                grammars[i]
            );
        }
    }
    let stats = shared.stats();
    assert!(stats.hits > stats.misses, "{stats:?}");
    // A tiny bound evicts, and still changes nothing.
    let tiny = CompileCache::new(4096);
    for (grammar, expected) in grammars.iter().zip(&alone) {
        assert!(compiled_with(grammar, &tiny) == *expected);
    }
    assert!(tiny.stats().evictions > 0 && tiny.stats().bytes <= 4096);
}
