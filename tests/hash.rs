//! Structural hashes: equal for the same structure under other names, in
//! other grammars and in other rule orders; different for different
//! structures; canonical node numbering along with them.

use std::fmt::Write;

use xg_compiler::hash::{self, RuleHash};
use xg_compiler::{Budget, CompileCache, Diagnostics, Sources, fsm, ir, normalize, pipeline};

struct Hashed {
    grammar: fsm::Grammar,
    hashes: Vec<RuleHash>,
}

impl Hashed {
    fn new(text: &str, root: &str) -> Self {
        let mut sources = Sources::new();
        let file = sources.add("test.xg", text, None);
        let mut diagnostics = Diagnostics::new();
        let tree = pipeline::check(&mut sources, file, root, &mut diagnostics);
        let ir = tree.map(|tree| ir::lower(&tree));
        let ir = ir.unwrap_or_else(|| panic!("{}", diagnostics.render(&sources, false)));
        let mut grammar = fsm::build(
            &normalize::normalize(ir),
            &Budget::unlimited(),
            &CompileCache::default(),
        )
        .unwrap();
        let hashes = hash::hash(&mut grammar, &Budget::unlimited()).unwrap();
        Self { grammar, hashes }
    }

    fn index(&self, name: &str) -> usize {
        self.grammar
            .rules
            .iter()
            .position(|r| r.name == name)
            .unwrap_or_else(|| panic!("no rule {name}"))
    }

    fn hash(&self, name: &str) -> u64 {
        self.hashes[self.index(name)].rule
    }

    /// The rule's automaton with references written as hashes: equal for
    /// equal structures with canonical numbering.
    fn canonical(&self, name: &str) -> String {
        let fsm::Body::Automaton(fsm) = &self.grammar.rules[self.index(name)].body else {
            panic!("{name} is not an automaton");
        };
        let mut out = String::new();
        for (n, node) in fsm.nodes.iter().enumerate() {
            let _ = write!(out, "{n}{}:", if node.is_final { "*" } else { "" });
            // Edges are kept sorted by label (rule ids differ between
            // grammars), so list them by their rendering.
            let mut edges: Vec<String> = Vec::new();
            for edge in &node.edges {
                let label = match edge.label {
                    fsm::Label::Rule(rule) => format!("<{:x}>", self.hashes[rule.as_usize()].rule),
                    fsm::Label::Repeat { rule, min, max } => {
                        format!("<{:x}>{{{min},{max:?}}}", self.hashes[rule.as_usize()].rule)
                    }
                    other => other.to_string(),
                };
                edges.push(format!(" {label}->{}", edge.target));
            }
            edges.sort();
            out += &edges.concat();
            out += "\n";
        }
        out
    }
}

#[test]
fn renamed_and_reordered_rules_hash_alike() {
    let a = Hashed::new(
        r#"
        root ::= list
        list ::= item ("," item)*
        item ::= [a-z]+ | "(" list ")"
        "#,
        "root",
    );
    let b = Hashed::new(
        r#"
        atom ::= "(" elements ")" | [a-z]+
        start ::= elements
        elements ::= atom ("," atom)*
        "#,
        "start",
    );
    assert_eq!(a.hash("list"), b.hash("elements"));
    assert_eq!(a.hash("item"), b.hash("atom"));
    assert_eq!(a.hash("root"), b.hash("start"));
    assert_eq!(a.canonical("list"), b.canonical("elements"));
    assert_eq!(a.canonical("item"), b.canonical("atom"));
    assert_ne!(a.hash("list"), a.hash("item"));
}

#[test]
fn a_shared_sub_grammar_hashes_alike_across_grammars() {
    let first = Hashed::new(
        r#"
        root ::= "{" string ":" [0-9]+ "}"
        string ::= "\"" [a-z]{2,30} "\""
        "#,
        "root",
    );
    let second = Hashed::new(
        r#"
        root ::= "[" text ("," text)* "]"
        text ::= "\"" [a-z]{2,30} "\""
        "#,
        "root",
    );
    assert_eq!(first.hash("string"), second.hash("text"));
    assert_eq!(first.canonical("string"), second.canonical("text"));
    assert_ne!(first.hash("root"), second.hash("root"));
}

#[test]
fn simple_cycles_hash_by_structure() {
    let one = Hashed::new(
        r#"root ::= a
        a ::= "x" b | "y"
        b ::= "z" a"#,
        "root",
    );
    let renamed = Hashed::new(
        r#"q ::= "z" p
        root ::= p
        p ::= "y" | "x" q"#,
        "root",
    );
    let different = Hashed::new(
        r#"root ::= a
        a ::= "x" b | "y"
        b ::= "w" a"#,
        "root",
    );
    assert_eq!(one.hash("a"), renamed.hash("p"));
    assert_eq!(one.hash("b"), renamed.hash("q"));
    assert_ne!(one.hash("a"), one.hash("b"));
    assert_ne!(one.hash("a"), different.hash("a"));
    assert_ne!(one.hash("b"), different.hash("b"));
}

#[test]
fn mutually_recursive_json_hashes_alike_under_other_names() {
    let library = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../grammars/std/json.xg"
    ))
    .unwrap();
    let original = Hashed::new(&library, "root");
    // The same grammar with every rule renamed and the rules reversed.
    let names = [
        "root",
        "value",
        "object",
        "member",
        "array",
        "string",
        "character",
        "escape",
        "hex",
        "number",
        "integer",
        "fraction",
        "exponent",
        "ws",
    ];
    let pattern = regex::Regex::new(&format!(r"\b({})\b", names.join("|"))).unwrap();
    let renamed = pattern.replace_all(&library, "j_$1");
    let mut lines: Vec<&str> = renamed.lines().filter(|l| l.contains("::=")).collect();
    lines.reverse();
    let renamed = Hashed::new(&lines.join("\n"), "j_root");
    for name in ["value", "object", "array", "string", "number"] {
        assert_eq!(
            original.hash(name),
            renamed.hash(&format!("j_{name}")),
            "{name}"
        );
    }
    assert_ne!(original.hash("object"), original.hash("array"));
}

#[test]
fn different_structures_hash_differently() {
    let bodies = [
        r#""x""#,
        r#""y""#,
        r#""xy""#,
        r#""x"*"#,
        r#""x"+"#,
        r#""x"?"#,
        "[a-b]",
        "[a-c]",
        r#""x" | "y" "z""#,
        r#""x"{2,20}"#,
        r#""x"{2,21}"#,
        r#""x"{3,20}"#,
        r#"[^"]*"#,
        r#"("a" | "b")* "c""#,
        r#""a"* ("b" | "c")"#,
        "Token(1)",
        "Token(2)",
        "ExcludeToken(1)",
    ];
    let mut seen = std::collections::HashMap::new();
    for body in bodies {
        let hashed = Hashed::new(&format!("root ::= {body}"), "root");
        if let Some(previous) = seen.insert(hashed.hash("root"), body) {
            panic!("{previous} and {body} hash alike");
        }
    }
}

#[test]
fn lookahead_changes_the_rule_hash_not_the_automaton_hash() {
    let plain = Hashed::new("root ::= word \";\"\nword ::= [a-z]+ [0-9]", "root");
    let asserted = Hashed::new(
        "root ::= word \";\"\nword ::= [a-z]+ [0-9] (= \";\")",
        "root",
    );
    let (p, a) = (
        plain.hashes[plain.index("word")],
        asserted.hashes[asserted.index("word")],
    );
    assert_eq!(p.automaton, a.automaton);
    assert_ne!(p.rule, a.rule);
    assert!(p.lookahead.is_none() && a.lookahead.is_some());
}

mod properties {
    use super::Hashed;
    use proptest::prelude::*;

    /// Grammars written one rule per line, with their rule names.
    const GRAMMARS: &[(&str, &[&str])] = &[
        (
            "root ::= pair (\",\" pair)*\npair ::= key \":\" value\nkey ::= \"\\\"\" [a-z]{1,12} \"\\\"\"\nvalue ::= key | [0-9]+ | \"[\" (value (\",\" value)*)? \"]\"",
            &["root", "pair", "key", "value"],
        ),
        (
            "root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= term \"*\" atom | atom\natom ::= [0-9]+ | \"(\" expr \")\"",
            &["root", "expr", "term", "atom"],
        ),
        (
            "root ::= alpha | beta\nalpha ::= \"x\" beta | \"\"\nbeta ::= \"y\" alpha gamma\ngamma ::= [a-z]{0,20} (= \";\")",
            &["root", "alpha", "beta", "gamma"],
        ),
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Renaming every rule and shuffling the rules changes no hash.
        #[test]
        fn hashes_ignore_names_and_order(index in 0..GRAMMARS.len(), order in Just(()).prop_perturb(|(), mut rng| rng.random::<u64>())) {
            let (text, names) = GRAMMARS[index];
            let original = Hashed::new(text, "root");
            let pattern = regex::Regex::new(&format!(r"\b({})\b", names.join("|"))).unwrap();
            let renamed = pattern.replace_all(text, "r_$1");
            let mut lines: Vec<&str> = renamed.lines().collect();
            // A deterministic shuffle from the generated number.
            let mut state = order | 1;
            for i in (1..lines.len()).rev() {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                lines.swap(i, usize::try_from(state % (i as u64 + 1)).unwrap());
            }
            let shuffled = Hashed::new(&lines.join("\n"), "r_root");
            for name in names {
                prop_assert_eq!(original.hash(name), shuffled.hash(&format!("r_{name}")), "{}", name);
                prop_assert_eq!(original.canonical(name), shuffled.canonical(&format!("r_{name}")).replace("r_", ""), "{}", name);
            }
        }
    }
}
