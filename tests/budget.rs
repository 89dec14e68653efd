//! The end of the output: [`Matcher::min_bytes_to_finish`],
//! [`Matcher::min_tokens_to_finish`] and token budgets
//! ([`Matcher::set_token_budget`]).

mod common;

use std::sync::Arc;

use common::{
    Rng, allowed_tokens as allowed, llama_vocabulary as llama, maskbench, runtime_grammar,
    schema_grammar,
};
use proptest::prelude::*;
use xg_compiler::json_schema::{Options, PropertyOrder, Whitespace};
use xg_runtime::{Matcher, StopReason, TokenId, Vocabulary};

fn is_set(mask: &[u32], id: TokenId) -> bool {
    mask[id.as_usize() / 32] & (1 << (id.as_usize() % 32)) != 0
}

/// The fewest bytes to an end, checked by its defining equation: zero
/// exactly where the output can end, else one more than the least over
/// every byte the matcher takes (and `None` exactly where no byte is
/// taken and it cannot end). Together these make it the length of a
/// shortest completion.
fn assert_shortest_completion(matcher: &mut Matcher, what: &str) {
    let here = matcher.min_bytes_to_finish();
    if matcher.can_terminate() {
        assert_eq!(here, Some(0), "{what}: can end here");
        return;
    }
    let mut least: Option<usize> = None;
    let mut after = |matcher: &mut Matcher, taken: bool| {
        if taken {
            let after = matcher.min_bytes_to_finish();
            matcher.rollback(1).unwrap();
            if let Some(after) = after {
                least = Some(least.map_or(after, |least| least.min(after)));
            }
        }
    };
    for byte in 0..=255u8 {
        let taken = matcher.accept_bytes(&[byte]).is_ok();
        after(matcher, taken);
    }
    for &id in BY_ID {
        let taken = matcher.accept_token_id(TokenId::new(id).unwrap()).is_ok();
        after(matcher, taken);
    }
    assert_eq!(here, least.map(|least| least + 1), "{what}");
}

/// Token ids the library's grammars match by id (Llama 3's special
/// tokens), and one they do not name.
const BY_ID: &[usize] = &[
    7, 128_000, 128_001, 128_006, 128_007, 128_008, 128_009, 128_010,
];

/// A random walk over bytes the matcher takes, checking the fewest bytes
/// to an end at every step.
fn walk_checking_shortest(grammar: &Arc<xg_runtime::Grammar>, rng: &mut Rng, steps: usize) {
    let mut matcher = Matcher::new(Arc::clone(grammar));
    for step in 0..steps {
        assert_shortest_completion(&mut matcher, &format!("step {step}"));
        let taken: Vec<u8> = (0..=255u8)
            .filter(|&byte| {
                let ok = matcher.accept_bytes(&[byte]).is_ok();
                if ok {
                    matcher.rollback(1).unwrap();
                }
                ok
            })
            .collect();
        let Some(&byte) = taken.get(rng.below(taken.len().max(1))) else {
            return;
        };
        matcher.accept_bytes(&[byte]).unwrap();
    }
}

/// Small grammars with the features the distances add up: nested rules,
/// counted repetitions, alternatives of different lengths, recursion.
#[test]
fn min_bytes_to_finish_is_a_shortest_completion() {
    let grammars = [
        r#"root ::= "{\"a\": " [0-9]+ "}""#,
        "root ::= \"<\" inner \">\"\ninner ::= \"x\" inner \"y\" | \"ab\" | \"\"",
        r#"root ::= ("ab" | "cdef"){2,4} "!""#,
        "root ::= item (\",\" item)*\nitem ::= [a-z]{3,5} | \"[\" root \"]\"",
    ];
    let mut rng = Rng::new(7);
    for text in grammars {
        let grammar = runtime_grammar(text);
        for _ in 0..5 {
            walk_checking_shortest(&grammar, &mut rng, 30);
        }
    }
    let grammar = runtime_grammar(r#"root ::= "{\"a\": " [0-9]+ "}""#);
    let mut matcher = Matcher::new(grammar);
    assert_eq!(matcher.min_bytes_to_finish(), Some(8));
    matcher.accept_str("{\"a\": 12").unwrap();
    assert_eq!(matcher.min_bytes_to_finish(), Some(1));
}

proptest! {
    #![proptest_config(common::cases(48))]

    /// Random grammars (nesting, repetition ranges, empty alternatives):
    /// the fewest bytes to an end meets its defining equation at every
    /// step of a random walk.
    #[test]
    fn min_bytes_to_finish_holds_on_random_grammars(text in common::random_grammar(), seed in any::<u64>()) {
        let grammar = runtime_grammar(&text);
        let mut rng = Rng::new(seed);
        walk_checking_shortest(&grammar, &mut rng, 12);
    }
}

/// The grammars of `grammars/` (tag dispatch, free text, tool calls) and
/// every 40th schema of the vendored MaskBench sample (grammars whose
/// rules are built on first use): the defining equation along random
/// byte walks.
#[test]
fn min_bytes_to_finish_holds_on_the_library_and_schemas() {
    let mut rng = Rng::new(11);
    for (path, text) in common::LIBRARY.iter().zip(common::library()) {
        let grammar = runtime_grammar(&text);
        for _ in 0..2 {
            walk_checking_shortest(&grammar, &mut rng, 40);
        }
        eprintln!("{path}: checked");
    }
    let cache = xg_compiler::CompileCache::default();
    for (name, doc) in maskbench().iter().step_by(40) {
        let Ok(grammar) = schema_grammar(&doc["schema"], &compact_options(), &cache) else {
            continue;
        };
        walk_checking_shortest(&grammar, &mut rng, 40);
        eprintln!("{name}: checked");
    }
}

fn compact_options() -> Options {
    Options {
        whitespace: Whitespace::Compact,
        property_order: PropertyOrder::Given,
        ..Options::default()
    }
}

/// Walks `grammar` with a budget of `budget` tokens, each token picked at
/// random among those the mask allows. Checks at every step that the mask
/// says what `accept_token` does on 16 random ids, that the fewest tokens
/// to an end is a lower bound (against where the walk first could end),
/// and that the walk can end within the budget. With `full_check`, at the
/// step where the fewest bytes to an end first fill the budget left, every
/// token the grammar allows is tried against the budgeted mask. Returns
/// the steps the walk took.
fn budget_walk(
    grammar: &Arc<xg_runtime::Grammar>,
    vocabulary: &Arc<Vocabulary>,
    budget: usize,
    rng: &mut Rng,
    full_check: bool,
    what: &str,
) -> usize {
    let mut matcher = Matcher::with_vocabulary(Arc::clone(grammar), Arc::clone(vocabulary))
        .with_token_budget(budget);
    let mut mask = vec![0u32; vocabulary.mask_words()];
    let mut bounds = Vec::new();
    let mut checked_fully = !full_check;
    for step in 0..budget {
        if matcher.can_terminate() {
            // A lower bound: no token is needed from where it can end.
            for (at, &bound) in bounds.iter().enumerate() {
                assert!(
                    bound <= step - at,
                    "{what}: {bound} tokens at step {at}, ended at {step}"
                );
            }
            bounds.clear();
        }
        bounds.push(matcher.min_tokens_to_finish().unwrap());
        matcher.fill_next_token_bitmask(&mut mask).unwrap();
        for _ in 0..16 {
            let id = TokenId::new(rng.below(vocabulary.len())).unwrap();
            let accepted = matcher.fork().accept_token(id).is_ok();
            assert_eq!(
                accepted,
                is_set(&mask, id),
                "{what}: step {step}, token {id}"
            );
        }
        let left = budget - step;
        if !checked_fully && matcher.min_bytes_to_finish().unwrap() + 1 >= left {
            checked_fully = true;
            let mut free = matcher.fork();
            free.set_token_budget(None);
            let mut unbounded = vec![0u32; vocabulary.mask_words()];
            free.fill_next_token_bitmask(&mut unbounded).unwrap();
            for id in allowed(&unbounded, vocabulary) {
                let accepted = matcher.fork().accept_token(id).is_ok();
                assert_eq!(
                    accepted,
                    is_set(&mask, id),
                    "{what}: step {step}, token {id}"
                );
            }
        }
        let choices = allowed(&mask, vocabulary);
        if choices.is_empty() {
            assert!(
                matcher.can_terminate(),
                "{what}: nothing allowed at step {step}"
            );
            return step;
        }
        let next = choices[rng.below(choices.len())];
        matcher.accept_token(next).unwrap();
    }
    assert!(
        matcher.can_terminate(),
        "{what}: the budget is spent and the output cannot end"
    );
    assert_eq!(matcher.stop_reason(), Some(StopReason::Budget), "{what}");
    matcher.fill_next_token_bitmask(&mut mask).unwrap();
    assert!(
        allowed(&mask, vocabulary).is_empty(),
        "{what}: tokens past the budget"
    );
    budget
}

/// The MaskBench files of the folder `$XG_MASKBENCH` names (sorted by
/// name), if it is set: for runs on the full set; else the vendored
/// sample.
fn schemas() -> Vec<(String, serde_json::Value)> {
    let Some(dir) = std::env::var_os("XG_MASKBENCH") else {
        return maskbench();
    };
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("the XG_MASKBENCH folder")
        .filter_map(|entry| Some(entry.ok()?.path()))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .filter_map(|path| {
            let text = std::fs::read_to_string(&path).ok()?;
            let name = path.file_name()?.to_string_lossy().into_owned();
            Some((name, serde_json::from_str(&text).ok()?))
        })
        .collect()
}

/// Random walks with budgets over every `step`-th schema of the vendored
/// MaskBench sample on Llama 3.1: a tight budget (the fewest bytes to an
/// end, plus 3) and a loose one (three times that, plus 30). Every
/// `full_every`-th schema also checks every allowed token where the budget
/// starts to bind. Returns the number of walks.
fn schema_budget_walks(step: usize, full_every: usize) -> usize {
    let vocabulary = llama();
    let cache = xg_compiler::CompileCache::default();
    let mut rng = Rng::new(5);
    let mut walks = 0;
    for (index, (name, doc)) in schemas().iter().enumerate().step_by(step) {
        let Ok(grammar) = schema_grammar(&doc["schema"], &compact_options(), &cache) else {
            continue;
        };
        let shortest = Matcher::new(Arc::clone(&grammar))
            .min_bytes_to_finish()
            .unwrap();
        for budget in [shortest + 3, 3 * shortest + 30] {
            let what = format!("{name} with {budget} tokens");
            let full_check = index % full_every == 0;
            budget_walk(&grammar, &vocabulary, budget, &mut rng, full_check, &what);
            walks += 1;
        }
    }
    eprintln!("{walks} walks ended within their budget");
    walks
}

/// Every 100th schema of the vendored MaskBench sample (6 schemas, 12
/// walks), every allowed token checked on each first walk: the walks end
/// within their budget and the masks agree with `accept_token`.
#[test]
fn budget_walks_end_within_their_budget_on_llama() {
    assert!(schema_budget_walks(100, 100) >= 10);
}

/// The same on every 10th schema (57 schemas, over 100 walks), every
/// allowed token checked on every 50th: for release builds (`.ci/run`
/// runs it). With `XG_MASKBENCH` naming a folder of MaskBench files, on
/// every 10th of those.
#[test]
#[ignore = "minutes in a debug build; .ci/run runs it in release"]
fn budget_walks_end_within_their_budget_on_llama_every_10th_schema() {
    assert!(schema_budget_walks(10, 50) >= 100);
}

/// Walks over the library's tool-calling grammars (tag dispatch, free text
/// that may go on forever) with a budget of 48 tokens on Llama 3.1, every
/// allowed token checked where the budget starts to bind.
#[test]
fn budget_walks_end_within_their_budget_in_free_text() {
    let vocabulary = llama();
    let mut rng = Rng::new(9);
    for path in [
        "examples/tool_calling.xg",
        "std/reasoning.xg",
        "std/qwen.xg",
    ] {
        let grammar = runtime_grammar(&common::grammar_text(path));
        budget_walk(&grammar, &vocabulary, 48, &mut rng, true, path);
    }
}

/// Where the rest of the output is forced to an end, the fewest tokens to
/// finish is the fewest tokens of the vocabulary that spell it (found here
/// by trying every token at every place).
#[test]
fn min_tokens_to_finish_spells_forced_text() {
    let vocabulary = llama();
    let text = "The quick brown fox jumps over the lazy dog, twice: again and again!";
    let grammar = runtime_grammar(&format!(
        "root ::= {}",
        serde_json::to_string(text).unwrap()
    ));
    let mut matcher = Matcher::with_vocabulary(grammar, Arc::clone(&vocabulary));
    for start in [0, 1, 10, 37] {
        if start > 0 {
            matcher.reset();
            matcher.accept_str(&text[..start]).unwrap();
        }
        let rest = &text.as_bytes()[start..];
        let mut fewest = vec![usize::MAX; rest.len() + 1];
        fewest[0] = 0;
        for at in 0..rest.len() {
            if fewest[at] == usize::MAX {
                continue;
            }
            for index in 0..vocabulary.len() {
                let bytes = vocabulary.bytes(TokenId::new(index).unwrap());
                if !bytes.is_empty() && rest[at..].starts_with(bytes) {
                    let end = at + bytes.len();
                    fewest[end] = fewest[end].min(fewest[at] + 1);
                }
            }
        }
        assert_eq!(
            matcher.min_tokens_to_finish(),
            Some(fewest[rest.len()]),
            "from {start}"
        );
    }
    matcher.accept_str(&text[37..]).unwrap();
    assert_eq!(matcher.min_tokens_to_finish(), Some(0));
}

/// A step that would leave no way to end in time is refused and changes
/// nothing; the budget is counted in steps and a rollback gives them back;
/// `stop_reason` says the budget ended the output.
#[test]
fn a_budget_refuses_steps_that_cannot_end_in_time() {
    let grammar = runtime_grammar(r#"root ::= "[" ([a-z]+ ("," [a-z]+)*)? "]""#);
    let mut matcher = Matcher::new(grammar).with_token_budget(4);
    matcher.accept_str("[ab").unwrap();
    matcher.accept_str(",c").unwrap();
    assert_eq!(matcher.tokens_left(), Some(2));
    // After ",": one step left, and a name and "]" need two.
    let refused = matcher.accept_str(",").unwrap_err();
    assert!(refused.is_over_token_budget(), "{refused}");
    assert_eq!(matcher.position(), 5);
    matcher.accept_str("d").unwrap();
    matcher.accept_str("]").unwrap();
    assert_eq!(matcher.stop_reason(), Some(StopReason::Budget));
    matcher.rollback(2).unwrap();
    assert_eq!(matcher.stop_reason(), None);
    matcher.set_token_budget(None);
    matcher.accept_str(",").unwrap();
}

/// A budget shorter than the shortest ending spelled byte by byte: every
/// allowed token follows a shortest ending all the way (it leaves its
/// length fewer bytes to go), and there is always one — on Llama 3.1, a
/// schema's object needs 24 bytes and gets 12 tokens.
#[test]
fn a_budget_below_the_byte_plan_follows_a_shortest_ending() {
    let vocabulary = llama();
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"name": {"type": "string"}, "tags": {"type": "array"}},
        "required": ["name", "tags"]
    });
    let cache = xg_compiler::CompileCache::default();
    let grammar = schema_grammar(&schema, &compact_options(), &cache).unwrap();
    let mut matcher =
        Matcher::with_vocabulary(grammar, Arc::clone(&vocabulary)).with_token_budget(12);
    let mut mask = vec![0u32; vocabulary.mask_words()];
    let mut rng = Rng::new(1);
    let mut behind = 0;
    while !matcher.can_terminate() {
        let before = matcher.min_bytes_to_finish().unwrap();
        matcher.fill_next_token_bitmask(&mut mask).unwrap();
        let choices = allowed(&mask, &vocabulary);
        assert!(!choices.is_empty());
        // Once long tokens catch up with the plan, the budget is an
        // ordinary one.
        if before <= matcher.tokens_left().unwrap() {
            matcher
                .accept_token(choices[rng.below(choices.len())])
                .unwrap();
            continue;
        }
        behind += 1;
        for &id in &choices {
            let mut after = matcher.fork();
            after.accept_token(id).unwrap();
            let length = vocabulary.bytes(id).len();
            assert_eq!(
                after.min_bytes_to_finish(),
                Some(before - length),
                "token {id}"
            );
        }
        matcher
            .accept_token(choices[rng.below(choices.len())])
            .unwrap();
    }
    assert!(behind > 0);
}
