//! The regex front end against regex-automata's own matcher: for fixed and
//! random patterns, on strings sampled from the pattern's grammar (members
//! and near-misses) and random strings over the pattern's alphabet, the
//! compiled grammar accepts a string exactly when regex-automata matches
//! it in full — and, in `json_string` mode, only if it also has no `"`,
//! `\` or control character.

mod common;

use std::sync::Arc;

use common::{Rng, sample};
use proptest::prelude::*;
use regex_automata::meta::Regex;
use regex_automata::{Anchored, Input};
use xg_compiler::{CompileCache, Diagnostics, Limits, Request, Sources, ir, pipeline, regex};
use xg_runtime::{Grammar, Matcher};

/// Patterns that exercise each part of the dialect, each with a string it
/// matches in full (so no comparison is all misses).
const PATTERNS: &[(&str, &str)] = &[
    (r"[a-z]+@[a-z]+\.(com|org)", "ab@cd.org"),
    (r"\d{3}-\d{4}", "123-٤٥٦7"),
    (r"(\+|-)?\d+(\.\d+)?([eE][+-]?\d+)?", "-1.5e+3"),
    (r"\p{Greek}{2,5}|\p{Han}+", "αβγ"),
    (r"[^\s]{1,8}\s?\w*", "x\u{3000}é"),
    (r"(?i)hello (world|rust)", "HeLLo Rust"),
    (r"(?s)a.b|a.{2}c", "a\nb"),
    (r"a.b", "a😀b"),
    (r"^(ab|a)*b?$", "aabab"),
    (r"(|x)(y|)z{0,3}", "zz"),
    (r"[\x{0}-\x{7F}&&[^a-z]]{2}[é-ü]", "1@ö"),
    (r"(a{2,3}){2}b{3,}", "aaaaabbbb"),
    (r"[[:alpha:]][[:digit:]]*", "q42"),
    (r"\u{1F600}+|[😀-😏]x", "😃x"),
    (r#""[^"\\]*""#, "\"hi\""),
    (r"(?x) a b \x20 c", "ab c"),
    (r"a*?b+?c??", "aabbc"),
];

fn compile(pattern: &str, options: regex::Options) -> Arc<Grammar> {
    let mut request = Request::new(&Limits::default(), &CompileCache::default());
    let file = request.add("pattern", pattern);
    let grammar = pipeline::regex(&mut request, file, options)
        .unwrap_or_else(|| panic!("{}", request.diagnostics.render(&request.sources, false)));
    Arc::new(grammar)
}

fn ir_of(pattern: &str, options: regex::Options) -> ir::Grammar {
    let mut sources = Sources::new();
    let file = sources.add("pattern", pattern, None);
    let mut diagnostics = Diagnostics::new();
    let tree = regex::check(pattern, options, file, &mut diagnostics).expect("checked");
    ir::lower(&tree)
}

/// regex-automata's matcher for the whole-string reading of `pattern`.
fn reference(pattern: &str, options: regex::Options) -> Regex {
    Regex::builder()
        .syntax(
            regex_automata::util::syntax::Config::new()
                .case_insensitive(options.case_insensitive)
                .dot_matches_new_line(options.dot_matches_new_line),
        )
        .build(&format!(r"\A(?:{pattern})\z"))
        .expect("the reference compiles")
}

fn json_string_ok(text: &[u8]) -> bool {
    !text.iter().any(|&b| b == b'"' || b == b'\\' || b < 0x20)
}

/// Asserts that the grammar accepts `text` in full exactly when the
/// reference matches it (and, for `json_string`, it has nothing to escape).
/// Returns whether it was accepted.
fn agree(grammar: &Arc<Grammar>, reference: &Regex, json_string: bool, text: &[u8]) -> bool {
    let mut matcher = Matcher::new(Arc::clone(grammar));
    let accepted = matcher.accept_bytes(text).is_ok() && matcher.can_terminate();
    let input = Input::new(text).anchored(Anchored::Yes);
    let expected = reference.is_match(input) && (!json_string || json_string_ok(text));
    assert_eq!(
        accepted,
        expected,
        "pattern {:?} on {:?}",
        reference,
        String::from_utf8_lossy(text)
    );
    accepted
}

/// Characters a string over a pattern's alphabet is drawn from: the
/// pattern's own characters and a few others of every width.
fn alphabet(pattern: &str) -> Vec<char> {
    let mut chars: Vec<char> = pattern.chars().collect();
    chars.extend([
        'a', 'Z', '0', ' ', '\n', '"', '\\', 'é', 'β', '中', '😀', '\u{7}',
    ]);
    chars.sort_unstable();
    chars.dedup();
    chars
}

/// Compares the two on 120 strings.
fn check_pattern(pattern: &str, options: regex::Options, seed: u64) {
    let grammar = compile(pattern, options);
    let ir = ir_of(pattern, options);
    let reference = reference(pattern, options);
    let chars = alphabet(pattern);
    let mut rng = Rng::new(seed);
    for _ in 0..60 {
        let sampled = sample(&ir, &mut rng);
        let random: String = (0..rng.below(10))
            .map(|_| chars[rng.below(chars.len())])
            .collect();
        for text in [&sampled[..], random.as_bytes()] {
            agree(&grammar, &reference, options.json_string, text);
        }
    }
}

#[test]
fn fixed_patterns_agree_with_regex_automata() {
    let flags = regex::Options {
        case_insensitive: true,
        dot_matches_new_line: true,
        json_string: false,
    };
    for (i, &(pattern, member)) in PATTERNS.iter().enumerate() {
        for (j, options) in [
            regex::Options::default(),
            regex::Options {
                json_string: true,
                ..regex::Options::default()
            },
            flags,
        ]
        .into_iter()
        .enumerate()
        {
            check_pattern(pattern, options, (i * 3 + j) as u64);
            let grammar = compile(pattern, options);
            let reference = reference(pattern, options);
            let accepted = agree(&grammar, &reference, options.json_string, member.as_bytes());
            assert!(
                accepted || options.json_string,
                "{pattern} refuses {member:?}"
            );
        }
    }
}

/// A random pattern over a small alphabet: literals, classes, groups,
/// alternations and every repetition form.
fn random_pattern() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("a".to_string()),
        Just("b".to_string()),
        Just("é".to_string()),
        Just("[a-c]".to_string()),
        Just("[^b]".to_string()),
        Just(".".to_string()),
        Just(r"\d".to_string()),
        Just(r"\w".to_string()),
        Just(r"\p{Lu}".to_string()),
        Just("(?i:A)".to_string()),
    ];
    leaf.prop_recursive(4, 24, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 2..4).prop_map(|items| items.concat()),
            prop::collection::vec(inner.clone(), 2..4)
                .prop_map(|items| format!("({})", items.join("|"))),
            (inner, 0..7usize, 0..3u32).prop_map(|(e, form, n)| match form {
                0 => format!("(?:{e})*"),
                1 => format!("(?:{e})+"),
                2 => format!("(?:{e})?"),
                3 => format!("(?:{e}){{{n}}}"),
                4 => format!("(?:{e}){{{n},}}"),
                5 => format!("(?:{e}){{{n},{}}}", n + 2),
                _ => format!("(?:{e})*?"),
            }),
        ]
    })
}

proptest! {
    #![proptest_config(common::cases(64))]

    #[test]
    fn random_patterns_agree_with_regex_automata(
        pattern in random_pattern(),
        json_string in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let options = regex::Options { json_string, ..regex::Options::default() };
        check_pattern(&pattern, options, seed);
    }
}

#[test]
fn unsupported_features_are_errors_pointing_into_the_pattern() {
    for (pattern, message, at) in [
        (r"(a)\1", "backreferences are not supported", 3..5),
        ("a(?=b)", "look-around", 1..4),
        (r"a\bb", "cannot be used in a grammar terminal", 1..3),
        ("a(b", "unclosed group", 1..2),
        ("x{3,1}", "invalid repetition", 1..6),
    ] {
        let mut request = Request::new(&Limits::default(), &CompileCache::default());
        let file = request.add("pattern", pattern);
        let grammar = pipeline::regex(&mut request, file, regex::Options::default());
        assert!(grammar.is_none(), "{pattern}");
        let error = request.diagnostics.iter().next().expect("an error");
        assert!(
            error.message.contains(message),
            "{pattern}: {}",
            error.message
        );
        let span = error.primary.span;
        assert_eq!(span.start..span.end, at, "{pattern}");
    }
}

#[test]
fn anchors_at_the_edges_change_nothing() {
    let plain = compile("ab|c", regex::Options::default());
    let anchored = compile("^ab$|^c$", regex::Options::default());
    for text in ["ab", "c", "abc", "", "a"] {
        let full = |grammar: &Arc<Grammar>| {
            let mut matcher = Matcher::new(Arc::clone(grammar));
            matcher.accept_str(text).is_ok() && matcher.can_terminate()
        };
        assert_eq!(full(&plain), full(&anchored), "{text}");
    }
}
