//! Normalization never changes a grammar's language: the reference
//! recognizer gives the same answers, complete and prefix, before and after,
//! on sentences sampled from each grammar and on near-misses.

mod common;

use common::{compile, same_language};
use proptest::prelude::*;
use xg_compiler::ir::reference::{Mode, Symbol, recognizes};
use xg_compiler::normalize;

/// Grammars that exercise every normalization (and the corner cases around it).
const CORPUS: &[&str] = &[
    // left recursion, nullable rules, empty alternatives
    r#"root ::= list
       list ::= list "," item | item | ""
       item ::= "a" | "" | "(" list ")""#,
    // nested repetition, small and large
    r#"root ::= ("a" "b"?){2,3} ("c"{0,12} "d")+ [0-9]{10,} "!""#,
    r#"root ::= [a-z]{0,40} "." | "x"{20,30}"#,
    r#"root ::= ("ab" | "a"){9,11}"#,
    r#"root ::= digit{3,20} "-" digit{12}
       digit ::= [0-9]"#,
    // multi-byte classes, any character, negation
    r"root ::= [é-ü]+ [^] [^a-z]{1,10} .{0,9}",
    // fragments of fragments, and a rule used many times
    r#"root ::= pair ("," pair)*
       pair ::= key ":" value
       key ::= "\"" [a-z]* "\""
       value ::= key | [0-9]+ | "[" (value ("," value)*)? "]""#,
    // lookahead, dispatch
    r#"root ::= word (" " word)* "."
       word ::= [a-z]+ (= " " | ".")"#,
    r#"root ::= dispatch(stop=("<end>")) { "<n>" => [0-9]{1,12} "</n>", "<w>" => word "</w>" }
       word ::= [a-z]{2,9}"#,
];

fn check_same_language(source: &str, seed: u64) -> Result<(), TestCaseError> {
    let original = compile(source);
    let normalized = normalize::normalize(original.clone());
    same_language(&original, &normalized, source, seed, 8)
}

proptest! {
    #![proptest_config(common::cases(64))]

    #[test]
    fn normalization_keeps_the_language(index in 0..CORPUS.len(), seed in any::<u64>()) {
        check_same_language(CORPUS[index], seed)?;
    }

    #[test]
    fn compressed_repetitions_keep_their_bounds(min in 0u32..30, extra in 0u32..30, seed in any::<u64>()) {
        let max = min + extra;
        let source = format!("root ::= (\"a\" | \"bc\"){{{min},{max}}} \"!\"");
        check_same_language(&source, seed)?;
        let normalized = normalize::normalize(compile(&source));
        for count in [min.saturating_sub(1), min, max, max + 1] {
            let text = format!("{}!", "a".repeat(count as usize));
            let expected = (min..=max).contains(&count);
            prop_assert_eq!(recognizes(&normalized, &Symbol::text(&text), Mode::Complete), expected, "{}", count);
        }
    }
}

#[test]
fn large_repetitions_add_few_rules() {
    let normalized = normalize::normalize(compile("root ::= [a-z]{0,100000}"));
    assert!(
        normalized.rules.len() <= 2,
        "{} rules",
        normalized.rules.len()
    );
    let printed = normalized.rule(normalized.root).body.to_string();
    assert!(printed.contains("{0,100000}"), "{printed}");
}
