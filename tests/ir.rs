//! The grammar IR and its reference recognizer.
//!
//! The reference recognizer is the oracle for every faster matcher, so it is
//! itself checked against independent implementations: Rust's `char` for
//! character classes, the `regex` crate for regex terminals, serde_json for
//! `std/json.xg`, and hand-written cases for the grammar features.

use std::fmt::Write;

use proptest::prelude::*;
mod common;

use common::compile;
use xg_compiler::ir;
use xg_compiler::ir::reference::{Mode, Symbol, recognizes};

fn accepts(grammar: &ir::Grammar, text: &str) -> bool {
    recognizes(grammar, &Symbol::text(text), Mode::Complete)
}

fn viable(grammar: &ir::Grammar, text: &str) -> bool {
    recognizes(grammar, &Symbol::text(text), Mode::Prefix)
}

#[test]
fn recursion_nullable_rules_and_ambiguity() {
    let grammar = compile(
        r#"
        root ::= list
        list ::= list "," item | item      # left recursive
        item ::= "a" item | "" | "b"        # right recursive and nullable
        "#,
    );
    for text in ["", "a", "aab", ",", "a,,b", "aaa,b,"] {
        assert!(accepts(&grammar, text), "{text:?}");
    }
    for text in ["ba", "c", "a,c"] {
        assert!(!accepts(&grammar, text), "{text:?}");
    }
    let ambiguous = compile(r#"root ::= root root | "x" | """#);
    assert!(accepts(&ambiguous, "xxxxxxxx"));
    assert!(!accepts(&ambiguous, "xxy"));
}

#[test]
fn prefixes_are_viable_only_if_they_can_finish() {
    let grammar = compile(r#"root ::= "ab" [0-9]+ "!" | "zz" []"#);
    for text in ["", "a", "ab", "ab1", "ab12!"] {
        assert!(viable(&grammar, text), "{text:?}");
    }
    // The `zz` alternative can never finish, so its prefixes are not viable.
    for text in ["z", "zz", "b", "ab!", "ab1!x"] {
        assert!(!viable(&grammar, text), "{text:?}");
    }
    assert!(!accepts(&grammar, "ab1"));
}

#[test]
fn repetition_bounds_are_exact() {
    let grammar = compile(r#"root ::= "a"{2,4} ("b"{3})? "c"{2,}"#);
    for text in ["aacc", "aaaacc", "aabbbccc", "aaacccccc"] {
        assert!(accepts(&grammar, text), "{text:?}");
    }
    for text in ["acc", "aaaaacc", "aabbcc", "aac"] {
        assert!(!accepts(&grammar, text), "{text:?}");
    }
    let nullable = compile(r#"root ::= ("a"?){3,5} "x""#);
    assert!(
        accepts(&nullable, "x") && accepts(&nullable, "aaaaax") && !accepts(&nullable, "aaaaaax")
    );
}

#[test]
fn lookahead_requires_the_following_text() {
    let grammar = compile(
        r#"
        root ::= word (";" word)* "."
        word ::= [a-z]+ (= ";" | ".")
        "#,
    );
    assert!(accepts(&grammar, "ab;c."));
    assert!(viable(&grammar, "ab"));
    let strict = compile(
        r#"
        root ::= a [a-z]*
        a ::= "x" (= "y")
        "#,
    );
    assert!(accepts(&strict, "xy") && accepts(&strict, "xyz"));
    assert!(!accepts(&strict, "x") && !accepts(&strict, "xz"));
    assert!(viable(&strict, "x") && !viable(&strict, "xz"));
}

#[test]
fn dispatch_semantics() {
    let grammar = compile(
        r#"
        root ::= dispatch(stop=("<end>"), exclude=("<bad>")) {
            "<n>" => [0-9]+ "</n>",
            "<w>" => [a-z]+ "</w>",
        }
        "#,
    );
    for text in [
        "<end>",
        "hi <end>",
        "x<n>12</n>y<w>ab</w><end>",
        "<n>1</n><n>2</n><end>",
        "<e<end>",
    ] {
        assert!(accepts(&grammar, text), "{text:?}");
    }
    for text in ["hi", "<n>x</n><end>", "a<bad>b<end>", "<end>x", "<n>1</n>"] {
        assert!(!accepts(&grammar, text), "{text:?}");
    }
    // A partial trigger at the end is still free text.
    for text in ["hello <", "<n", "<n>12", "<n>12</n> <en"] {
        assert!(viable(&grammar, text), "{text:?}");
    }
    assert!(!viable(&grammar, "<n>a") && !viable(&grammar, "x<bad>"));

    let once = compile(r#"root ::= dispatch(once) { "<a>" => "1" } "!""#);
    assert!(accepts(&once, "text<a>1!") && accepts(&once, "text!") && accepts(&once, "!"));
    assert!(!accepts(&once, "<a>1 more<a>1!"));
    // Free text ends anywhere; the dispatch may also end before a following
    // element even where that element's text would complete a trigger.
    let follow = compile(r#"root ::= dispatch { "<a>" => "x" } "a>""#);
    assert!(accepts(&follow, "<a>") && accepts(&follow, "<a>xa>"));
}

#[test]
fn token_sets_match_token_symbols() {
    use xg_runtime::TokenId;
    let grammar = compile("root ::= \"x\" Token(7, 9) ExcludeToken(7)");
    let token = |id: usize| Symbol::Token(TokenId::new(id).unwrap());
    let mut input = Symbol::text("x");
    input.extend([token(9), token(8)]);
    assert!(recognizes(&grammar, &input, Mode::Complete));
    input[2] = token(7);
    assert!(!recognizes(&grammar, &input, Mode::Complete));
    assert!(recognizes(&grammar, &input[..2], Mode::Prefix));
}

/// A Unicode class given as ranges, in `.xg` syntax.
fn class_source(ranges: &[(char, char)], negated: bool) -> String {
    let mut source = String::from(if negated { "root ::= [^" } else { "root ::= [" });
    for &(a, b) in ranges {
        let _ = write!(source, "\\U{:08X}-\\U{:08X}", u32::from(a), u32::from(b));
    }
    source.push(']');
    source
}

fn interesting_char() -> impl Strategy<Value = char> {
    prop_oneof![
        any::<char>(),
        prop::sample::select(vec![
            '\0',
            '\x7F',
            '\u{80}',
            '\u{7FF}',
            '\u{800}',
            '\u{D7FF}',
            '\u{E000}',
            '\u{FFFF}',
            '\u{10000}',
            '\u{10FFFF}',
        ]),
    ]
}

proptest! {
    /// A class matches exactly the UTF-8 encodings of its characters: one
    /// character in the set, nothing else.
    #[test]
    fn classes_match_exactly_their_characters_encodings(
        ranges in prop::collection::vec((interesting_char(), interesting_char()), 1..4),
        negated in any::<bool>(),
        probes in prop::collection::vec(interesting_char(), 8),
        bytes in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..5), 8),
    ) {
        let ranges: Vec<(char, char)> = ranges.into_iter().map(|(a, b)| (a.min(b), a.max(b))).collect();
        let set = xg_compiler::tree::CharSet::from_ranges(ranges.iter().copied());
        // An empty class is a non-productive rule, which the front end rejects.
        prop_assume!(!(if negated { set.complement() } else { set }).is_empty());
        let grammar = compile(&class_source(&ranges, negated));
        let in_set = |c: char| ranges.iter().any(|&(a, b)| a <= c && c <= b) != negated;
        for c in probes {
            prop_assert_eq!(accepts(&grammar, &c.to_string()), in_set(c), "{:?}", c);
        }
        for bytes in bytes {
            let expected = std::str::from_utf8(&bytes)
                .ok()
                .and_then(|s| {
                    let mut chars = s.chars();
                    let c = chars.next()?;
                    chars.next().is_none().then_some(c)
                })
                .is_some_and(in_set);
            prop_assert_eq!(recognizes(&grammar, &Symbol::text(&bytes), Mode::Complete), expected, "{:?}", bytes);
        }
    }

    /// Regex terminals accept what the `regex` crate matches in full.
    #[test]
    fn regex_terminals_agree_with_the_regex_crate(
        pattern in prop::sample::select(vec![
            "[a-c]+x?", "(ab|a)*b", "a{2,3}|b{0,2}c", "[^a]é", "(?i)Ab[c-e]", "\\d{1,3}(\\.\\d+)?",
            "(a|bc)*(c|)", "[α-γ]{2}", ".?.", "(?s).a", "x(y(z)?)+", "[\\w&&[^_]]+",
        ]),
        subject in "[abcxyzABC0-9.é αβγ_\n-]{0,6}",
    ) {
        let grammar = compile(&format!("root ::= /{pattern}/"));
        let reference = regex::Regex::new(&format!("^(?:{pattern})$")).unwrap();
        prop_assert_eq!(accepts(&grammar, &subject), reference.is_match(&subject), "{} on {:?}", pattern, subject);
    }

    /// `std/json.xg` accepts exactly the texts serde_json parses (for texts
    /// whose numbers fit serde_json's range).
    #[test]
    fn std_json_agrees_with_serde_json(pieces in prop::collection::vec(prop::sample::select(vec![
        "{", "}", "[", "]", ",", ":", "\"a\"", "\"", "\\n", "1", "-", "0", ".", "e", "2", "true", "null", " ", "\n", "x",
    ]), 0..9)) {
        let text = pieces.concat();
        let grammar = compile("import \"std/json.xg\" as json;\nroot ::= json.root");
        let serde = serde_json::from_str::<serde_json::Value>(&text);
        let out_of_range = serde.as_ref().err().is_some_and(|e| e.to_string().contains("out of range"));
        prop_assume!(!out_of_range);
        prop_assert_eq!(accepts(&grammar, &text), serde.is_ok(), "{:?}", text);
    }
}

proptest! {
    /// `ByteSet::ranges` (a word at a time) gives the maximal runs of
    /// member bytes, as a byte-by-byte scan finds them.
    #[test]
    fn byte_set_ranges_are_the_maximal_runs(ranges in prop::collection::vec((any::<u8>(), any::<u8>()), 0..6)) {
        let mut set = ir::ByteSet::empty();
        for &(a, b) in &ranges {
            set.insert_range(a.min(b), a.max(b));
        }
        let mut expected: Vec<(u8, u8)> = Vec::new();
        for byte in 0..=255u8 {
            if set.contains(byte) {
                match expected.last_mut() {
                    Some((_, hi)) if u16::from(*hi) + 1 == u16::from(byte) => *hi = byte,
                    _ => expected.push((byte, byte)),
                }
            }
        }
        prop_assert_eq!(set.ranges(), expected);
    }
}
