//! Structural hashes: equal for the same structure under other names, in
//! other grammars and in other rule orders; different for different
//! structures; canonical node numbering along with them.

use std::fmt::Write;

use xg_compiler::hash::{self, RuleHash};
use xg_compiler::{Budget, CompileCache, Request, fsm, ir, normalize, pipeline};

struct Hashed {
    grammar: fsm::Grammar,
    hashes: Vec<RuleHash>,
}

impl Hashed {
    fn new(text: &str, root: &str) -> Self {
        let mut request = Request::ahead_of_time();
        let file = request.add("test.xg", text);
        let tree = pipeline::check(&mut request, file, root);
        let ir = tree.map(|tree| ir::lower(&tree));
        let ir =
            ir.unwrap_or_else(|| panic!("{}", request.diagnostics.render(&request.sources, false)));
        let ir = normalize::normalize(ir);
        let mut grammar = fsm::build(&ir, &Budget::unlimited(), &CompileCache::default()).unwrap();
        let hashes = hash::hash(&ir, &mut grammar, &Budget::unlimited()).unwrap();
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

/// Two lists whose items differ two references away (the shape of a
/// JSON Schema with two recursive definitions that differ in one key):
/// colour refinement inside each component stops after one round, when
/// the lists still look alike. Their hashes must differ all the same.
#[test]
fn components_alike_for_fewer_rounds_than_they_refine_hash_apart() {
    let text = r#"root ::= l1 | l2
        l1 ::= "[" i1* "]"
        i1 ::= "s" | g1
        g1 ::= "{g" l1 "}"
        l2 ::= "[" i2* "]"
        i2 ::= "s" | g2
        g2 ::= "{f" l2 "}""#;
    let two = Hashed::new(text, "root");
    for (a, b) in [("l1", "l2"), ("i1", "i2"), ("g1", "g2")] {
        assert_ne!(two.hash(a), two.hash(b), "{a} and {b}");
    }
    // The first component alone, renamed, in another grammar: alike.
    let one = Hashed::new(
        r#"root ::= list
        item ::= "s" | group
        list ::= "[" item* "]"
        group ::= "{g" list "}""#,
        "root",
    );
    for (a, b) in [("l1", "list"), ("i1", "item"), ("g1", "group")] {
        assert_eq!(two.hash(a), one.hash(b), "{a} and {b}");
        assert_eq!(two.canonical(a), one.canonical(b), "{a} and {b}");
    }
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
    use std::fmt::Write as _;

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

    /// Rings of mutually recursive rules, `r{ring}_{i}` calling the next
    /// rule of its ring: each rule's position tells it from the others of
    /// its ring at once (refinement stops after a round), and a letter of
    /// its own from a small set makes rings agree for a few references
    /// and differ further on.
    fn rings() -> impl Strategy<Value = String> {
        (2..5usize, 2..5usize).prop_flat_map(|(rings, size)| {
            prop::collection::vec(prop::sample::select(&['a', 'b'][..]), rings * size).prop_map(
                move |letters| {
                    let firsts: Vec<String> = (0..rings).map(|r| format!("r{r}_0")).collect();
                    let mut text = format!("root ::= {}\n", firsts.join(" | "));
                    for r in 0..rings {
                        for i in 0..size {
                            let letter = letters[r * size + i];
                            let next = (i + 1) % size;
                            let _ =
                                writeln!(text, "r{r}_{i} ::= \"{i}\" r{r}_{next} | \"{letter}\"");
                        }
                    }
                    text
                },
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Rules with equal hashes have equal automata, node for node, with
        /// references to rules of equal hashes: what lets the mask cache
        /// share entries by hash (the runtime checks it at load and turns
        /// the cache off if not).
        #[test]
        fn equal_hashes_mean_equal_structure(text in rings()) {
            let hashed = Hashed::new(&text, "root");
            let names: Vec<String> = hashed.grammar.rules.iter().map(|r| r.name.clone()).collect();
            for a in &names {
                for b in &names {
                    if hashed.hash(a) == hashed.hash(b) {
                        prop_assert_eq!(hashed.canonical(a), hashed.canonical(b), "{} and {} in\n{}", a, b, text);
                    }
                }
            }
        }

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
