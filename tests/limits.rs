//! Rules limited in tokens or bytes (`name [max_tokens=N] ::= …`,
//! `[max_bytes=N]`): every match keeps to its limit, masks allow exactly
//! the tokens `accept_token` takes, and a walk never runs out of tokens.

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use common::{Rng, allowed_tokens as allowed, llama_vocabulary as llama, runtime_grammar};
use xg_runtime::{Matcher, TokenId, Vocabulary};

fn is_set(mask: &[u32], id: TokenId) -> bool {
    mask[id.as_usize() / 32] & (1 << (id.as_usize() % 32)) != 0
}

/// A grammar with limits, as `.xg` text with `{tokens}`/`{bytes}` where
/// the limits go, and the limits of its captures by name.
struct Limited {
    text: &'static str,
    /// Per captured rule: (most tokens, most bytes).
    limits: &'static [(&'static str, Option<usize>, Option<usize>)],
}

const LIMITED: &[Limited] = &[
    // Free text of a reasoning model, then a short answer.
    Limited {
        text: r#"
root ::= "<think>" thought "</think>" answer
thought [capture, max_tokens=12] ::= [^<]*
answer [capture, max_bytes=20] ::= [a-z ]+ "."
"#,
        limits: &[("thought", Some(12), None), ("answer", None, Some(20))],
    },
    // A recursive JSON value and a string, each limited.
    Limited {
        text: r#"
import "std/json.xg" as json;
root ::= "{\"a\": " value ", \"b\": " name "}"
value [capture, max_tokens=10] ::= json.value
name [capture, max_bytes=12] ::= json.string
"#,
        limits: &[("value", Some(10), None), ("name", None, Some(12))],
    },
    // Limits nested in one another, in a repetition.
    Limited {
        text: r#"
root ::= item ("," item)*
item [capture, max_tokens=6] ::= "[" word (" " word)* "]"
word [capture, max_bytes=5] ::= [a-z]+
"#,
        limits: &[("item", Some(6), None), ("word", None, Some(5))],
    },
];

/// The same grammar without its limits.
fn unlimited(text: &str) -> String {
    let mut out = text.to_owned();
    for attribute in [", max_tokens=", ", max_bytes="] {
        while let Some(at) = out.find(attribute) {
            let end = at + out[at..].find(']').unwrap();
            out.replace_range(at..end, "");
        }
    }
    out
}

/// Walks `limited` on `vocabulary` for up to `steps` tokens, each picked
/// at random among those the mask allows, beside the same grammar without
/// limits fed the same tokens. At every step: the mask is what
/// `accept_token` says for 16 random ids of the unlimited mask; with
/// `full_check`, where the masks differ, for every id of the unlimited
/// mask; the mask is never empty unless the output can end; and every
/// match of a limited rule so far keeps to its limit (from the matcher's
/// captures, against the tokens' lengths). Returns the steps where a
/// limit bound.
fn limit_walk(
    case: &Limited,
    vocabulary: &Arc<Vocabulary>,
    rng: &mut Rng,
    steps: usize,
    full_check: bool,
) -> usize {
    let limits: HashMap<&str, (Option<usize>, Option<usize>)> = case
        .limits
        .iter()
        .map(|&(name, tokens, bytes)| (name, (tokens, bytes)))
        .collect();
    let mut matcher = Matcher::with_vocabulary(runtime_grammar(case.text), Arc::clone(vocabulary));
    let mut free = Matcher::with_vocabulary(
        runtime_grammar(&unlimited(case.text)),
        Arc::clone(vocabulary),
    );
    let mut mask = vec![0u32; vocabulary.mask_words()];
    let mut free_mask = vec![0u32; vocabulary.mask_words()];
    // Symbols before each token.
    let mut starts = vec![0usize];
    let mut bound = 0;
    for step in 0..steps {
        matcher.fill_next_token_bitmask(&mut mask).unwrap();
        free.fill_next_token_bitmask(&mut free_mask).unwrap();
        let free_allowed = allowed(&free_mask, vocabulary);
        let binds = mask != free_mask;
        bound += usize::from(binds);
        let checked: Vec<TokenId> = if binds && full_check {
            free_allowed.clone()
        } else {
            (0..16)
                .filter_map(|_| free_allowed.get(rng.below(free_allowed.len().max(1))))
                .copied()
                .collect()
        };
        for id in checked {
            let accepted = matcher.fork().accept_token(id).is_ok();
            assert_eq!(accepted, is_set(&mask, id), "step {step}, token {id}");
        }
        let choices = allowed(&mask, vocabulary);
        if choices.is_empty() {
            assert!(matcher.can_terminate(), "nothing allowed at step {step}");
            break;
        }
        let next = choices[rng.below(choices.len())];
        matcher.accept_token(next).unwrap();
        free.accept_token(next).unwrap();
        starts.push(starts.last().unwrap() + vocabulary.bytes(next).len().max(1));
        let token_of = |symbol: usize| starts.partition_point(|&start| start <= symbol) - 1;
        for capture in matcher.captures() {
            let Some(&(tokens, bytes)) = limits.get(capture.name.as_str()) else {
                continue;
            };
            let held = capture.end - capture.start;
            if let Some(most) = bytes {
                assert!(held <= most, "{capture:?} holds {held} bytes");
            }
            if let (Some(most), true) = (tokens, held > 0) {
                let spanned = token_of(capture.end - 1) - token_of(capture.start) + 1;
                assert!(spanned <= most, "{capture:?} spans {spanned} tokens");
            }
        }
    }
    bound
}

/// Random walks over each grammar with limits on Llama 3.1, `walks`
/// walks of up to 40 tokens each: the limits bind, the masks agree with
/// `accept_token`, and every match keeps to its limit.
fn limit_walks(walks: usize, full_check: bool) {
    let vocabulary = llama();
    let mut rng = Rng::new(11);
    for case in LIMITED {
        let bound: usize = (0..walks)
            .map(|_| limit_walk(case, &vocabulary, &mut rng, 40, full_check))
            .sum();
        assert!(bound > 0, "no limit bound in {}", case.text);
    }
}

/// Two walks per grammar, 16 random ids of the unlimited mask checked at
/// each step.
#[test]
fn limit_walks_keep_every_match_within_its_limit_on_llama() {
    limit_walks(2, false);
}

/// Eight walks per grammar, every id of the unlimited mask checked where
/// a limit binds (release, `.ci/run`).
#[test]
#[ignore = "slow in debug: run with --release --include-ignored"]
fn limit_walks_checked_in_full_on_llama() {
    limit_walks(8, true);
}

/// Without a vocabulary each step is a token: a match of a rule with
/// `max_bytes` takes no byte past its limit, one with `max_tokens` no
/// step past it, and a refused step says why and changes nothing.
#[test]
fn steps_past_a_limit_are_refused() {
    let grammar = runtime_grammar(
        r#"
root ::= "<" word ">" text "."
word [max_bytes=3] ::= [a-z]+
text [max_tokens=2] ::= [a-z ]*
"#,
    );
    let mut matcher = Matcher::new(Arc::clone(&grammar));
    matcher.accept_str("<abc").unwrap();
    let refused = matcher.accept_str("d").unwrap_err();
    assert!(refused.is_over_limit(), "{refused}");
    assert_eq!(matcher.position(), 4);
    assert_eq!(matcher.min_bytes_to_finish(), Some(2));
    matcher.accept_str(">").unwrap();
    matcher.accept_str("hello").unwrap();
    matcher.accept_str(" world").unwrap();
    // Two steps spent inside `text`: only its end may follow.
    let refused = matcher.accept_str("s").unwrap_err();
    assert!(refused.is_over_limit(), "{refused}");
    matcher.accept_str(".").unwrap();
    assert!(matcher.can_terminate());

    // A step that ends the match inside it counts too.
    let mut matcher = Matcher::new(grammar);
    matcher.accept_str("<ab>a").unwrap();
    matcher.accept_str("b").unwrap();
    assert!(matcher.accept_str("c.").is_err());
    assert!(matcher.accept_str(".").is_ok());
}

/// The fewest bytes to an end count what a limit leaves: a match near
/// its limit must end, so the way out is the way taken.
#[test]
fn the_fewest_bytes_to_an_end_keep_to_the_limits() {
    let grammar = runtime_grammar(
        r#"
root ::= item+ ";"
item [max_bytes=4] ::= "a" | "bbbb" | "cc" item
"#,
    );
    let mut matcher = Matcher::new(grammar);
    assert_eq!(matcher.min_bytes_to_finish(), Some(2));
    matcher.accept_str("cc").unwrap();
    // "cc" then an item of at most 2 bytes: "a".
    assert_eq!(matcher.min_bytes_to_finish(), Some(2));
    assert!(matcher.accept_str("cc").is_err());
    assert!(matcher.accept_str("bbbb").is_err());
    matcher.accept_str("a;").unwrap();
    assert!(matcher.can_terminate());
}
