//! Token masks are exact: after every step of random walks, the mask equals
//! the slow reference — each token checked by forking the matcher and
//! accepting it — on small vocabularies and on real tokenizers.

mod common;

use std::fmt::Write;
use std::sync::Arc;

use common::{
    CORPUS, LIBRARY, MODEL_GRAMMARS, ModelVocabulary, REAL_TOKENIZERS, Rng, compact, grammar_text,
    library, maskbench, maskbench_options, random_grammar, real_tokenizer, runtime_grammar,
    runtime_grammar_for, schema_grammar,
};
use proptest::prelude::*;
use serde_json::json;
use xg_runtime::{Grammar, MaskError, MaskStats, Matcher, TokenId, Vocabulary};

fn token(id: usize) -> TokenId {
    TokenId::new(id).unwrap()
}

fn allowed(mask: &[u32], id: TokenId) -> bool {
    mask[id.as_usize() / 32] & (1 << (id.as_usize() % 32)) != 0
}

/// Compares the mask with the reference on `ids`, then returns the allowed
/// ids among them.
fn check_mask(matcher: &mut Matcher, ids: &[TokenId]) -> Result<Vec<TokenId>, TestCaseError> {
    let vocabulary = Arc::clone(matcher.vocabulary().unwrap());
    let mut mask = vec![0; vocabulary.mask_words()];
    let before = (matcher.stats(), matcher.can_terminate());
    matcher.fill_next_token_bitmask(&mut mask).unwrap();
    prop_assert_eq!(
        (matcher.stats(), matcher.can_terminate()),
        before,
        "mask changed the state"
    );
    let mut allowed_ids = Vec::new();
    for &id in ids {
        let reference = matcher.fork().accept_token(id).is_ok();
        prop_assert_eq!(
            allowed(&mask, id),
            reference,
            "token {} ({:?}) after {} symbols",
            id,
            String::from_utf8_lossy(vocabulary.bytes(id)),
            matcher.position()
        );
        if reference {
            allowed_ids.push(id);
        }
    }
    Ok(allowed_ids)
}

/// A walk of up to `steps` tokens, each picked among the allowed ones,
/// checking the mask before every step.
fn walk(
    grammar: &Arc<Grammar>,
    vocabulary: &Arc<Vocabulary>,
    sample: impl Fn(&mut Rng) -> Vec<TokenId>,
    rng: &mut Rng,
    steps: usize,
) -> Result<(), TestCaseError> {
    let mut matcher = Matcher::with_vocabulary(Arc::clone(grammar), Arc::clone(vocabulary));
    for _ in 0..steps {
        let ids = sample(rng);
        let allowed_ids = check_mask(&mut matcher, &ids)?;
        // Prefer text, so walks get somewhere.
        let text: Vec<TokenId> = allowed_ids
            .iter()
            .copied()
            .filter(|&id| !vocabulary.is_stop(id))
            .collect();
        let Some(&next) = text.get(rng.below(text.len().max(1))) else {
            return Ok(());
        };
        matcher.accept_token(next).unwrap();
    }
    Ok(())
}

/// A small vocabulary: every byte the corpus uses, frequent multi-byte
/// pieces, a few special tokens (7–11 are the corpus's `Token(…)` ids) and
/// a stop token.
fn small_vocabulary() -> Arc<Vocabulary> {
    let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    for piece in [
        "ab", "abc", "<a>", "</a>", "<ab>", "{\"", "\":", "\"}", "\", \"", "true", "null", "12",
        "1.5", "<", "<e", "END", "ab:", "=1", "xyz", "yz", "é", "ê", "<x", "bad", "bd", "bc", "",
        " ",
    ] {
        tokens.push(piece.as_bytes().to_vec());
    }
    let special = [7, 8, 9, 10, 11, tokens.len()];
    tokens.push(b"<eos>".to_vec());
    let special: Vec<TokenId> = special.iter().map(|&i| token(i)).collect();
    let stop = *special.last().unwrap();
    Arc::new(
        Vocabulary::from_byte_strings(&tokens, &special)
            .unwrap()
            .with_stop_tokens(&[stop])
            .unwrap()
            .with_model_size(tokens.len() + 40)
            .unwrap(),
    )
}

proptest! {
    #![proptest_config(common::cases(32))]

    /// Every token, every step, on the corpus and the library.
    #[test]
    fn masks_are_exact_on_a_small_vocabulary(index in 0..CORPUS.len() + LIBRARY.len(), seed in any::<u64>()) {
        let source = CORPUS.get(index).map_or_else(|| library()[index - CORPUS.len()].clone(), |s| (*s).to_owned());
        let grammar = runtime_grammar(&source);
        let vocabulary = small_vocabulary();
        let all: Vec<TokenId> = (0..vocabulary.len()).map(token).collect();
        walk(&grammar, &vocabulary, |_| all.clone(), &mut Rng::new(seed), 12)?;
    }
}

/// Short rules (characters, digits) inside counted repetitions, whose
/// mask-cache entries cover the repetition and count how many matches it
/// still needs and allows; short rules several items wait for; and JSON
/// Schema strings and arrays with bounds. Walks are long enough to reach
/// the bounds.
const COUNTED: &[&str] = &[
    r#"root ::= """ ch{1,255} """ ("," """ ch{0,20} """)* | "<" ch{24} ">"
       ch ::= [a-z0-9 ] | "\\" [nt"] | [é-ü]"#,
    r#"root ::= "[" hex{24} "]" | "(" (hex{1,4} ":"){6} hex{1,4} ")" | hex{9,} "."
       hex ::= [0-9A-Fa-f]"#,
    r#"root ::= ch ch | ch "x" ch{2,30} | ch{9,40} "!" | (ch | ch ch){10,12} "?"
       ch ::= "a" | "ab" | "b""#,
    r#"root ::= %json {"type": "object", "properties": {"a": {"type": "string", "maxLength": 12}, "b": {"type": "string", "pattern": "^[a-f0-9]{24}$"}, "c": {"type": "array", "items": {"type": "string", "minLength": 2, "maxLength": 30}, "maxItems": 12}}, "required": ["a", "b", "c"]}"#,
    // A count from the start of the output, the least count crossed inside
    // a token, repetitions of repetitions, a rule repeating itself.
    r#"root ::= ch{3,6} ("-" ch{0,4})? | "[" (ch{2,3}){2,4} "]" | "{" r "}"
       r ::= ch{0,3} | "(" r{1,3} ")"
       ch ::= [a-z0-9 ] | "\\" [nt"] | [é-ü]"#,
    // A counted character class in a pattern (its tokens sorted by length
    // at once), up to its bound.
    r#"root ::= %json {"type": "object", "properties": {"n": {"type": "string", "pattern": "^[A-Za-z0-9 &'()*,\\-./@]{1,12}$"}}, "required": ["n"]}"#,
    // Counted words (near the bound, only tokens long enough to reach it
    // are walked; the others take the verdicts of a count far from it or
    // before it).
    r#"root ::= %json {"type": "object", "properties": {"w": {"type": "string", "pattern": "^(?:\\S+\\s+){0,90}\\S+$"}}, "required": ["w"]}"#,
    r#"root ::= (w ":")+ "=1"
       w ::= ch+ (" "+ ch+){0,6}
       ch ::= [ab]"#,
];

proptest! {
    #![proptest_config(common::cases(32))]

    /// Every token, every step, on grammars with counted repetitions of
    /// short rules, with walks long enough to reach their bounds.
    #[test]
    fn masks_are_exact_in_counted_repetitions(index in 0..COUNTED.len(), seed in any::<u64>()) {
        let grammar = runtime_grammar(COUNTED[index]);
        let vocabulary = small_vocabulary();
        let all: Vec<TokenId> = (0..vocabulary.len()).map(token).collect();
        walk(&grammar, &vocabulary, |_| all.clone(), &mut Rng::new(seed), 80)?;
    }
}

/// One small vocabulary for every case of a property, so its mask cache is
/// shared across grammars the way a server's is; `evicting` is bounded so
/// tightly that entries are dropped all the time.
fn shared_vocabulary(evicting: bool) -> Arc<Vocabulary> {
    static ROOMY: std::sync::OnceLock<Arc<Vocabulary>> = std::sync::OnceLock::new();
    static TIGHT: std::sync::OnceLock<Arc<Vocabulary>> = std::sync::OnceLock::new();
    let (cell, limit) = if evicting {
        (&TIGHT, 2048)
    } else {
        (&ROOMY, 1 << 30)
    };
    Arc::clone(
        cell.get_or_init(|| {
            Arc::new(Arc::unwrap_or_clone(small_vocabulary()).with_cache_limit(limit))
        }),
    )
}

proptest! {
    #![proptest_config(common::cases(64))]

    /// Random grammars share one mask cache (entries built for one grammar
    /// serve the next wherever rules have the same structure).
    #[test]
    fn masks_are_exact_on_random_grammars(source in random_grammar(), seed in any::<u64>(), evicting in any::<bool>()) {
        let grammar = runtime_grammar(&source);
        let vocabulary = shared_vocabulary(evicting);
        let all: Vec<TokenId> = (0..vocabulary.len()).map(token).collect();
        walk(&grammar, &vocabulary, |_| all.clone(), &mut Rng::new(seed), 10)?;
    }
}

/// Real vocabularies: every grammar under `grammars/` (the library on each
/// real tokenizer, the grammars that name a model's tokens on that model's
/// or on bytes and its markers)
/// and a few of the corpus; a sample of ids per step in debug builds, all
/// of them in release.
#[test]
fn masks_are_exact_on_real_vocabularies() {
    let grammars: Vec<String> = library()
        .into_iter()
        .chain(CORPUS.iter().take(3).map(|s| (*s).to_owned()))
        .chain(COUNTED.iter().map(|s| (*s).to_owned()))
        .collect();
    let counted = grammars.len() - COUNTED.len();
    let mut runs: Vec<(ModelVocabulary, Vec<(String, usize)>)> = REAL_TOKENIZERS
        .iter()
        .map(|tokenizer| {
            let walks = grammars
                .iter()
                .enumerate()
                .map(|(k, source)| (source.clone(), if k >= counted { 40 } else { 10 }))
                .collect();
            (ModelVocabulary::Real(tokenizer), walks)
        })
        .collect();
    for &(path, vocabulary) in MODEL_GRAMMARS {
        runs.push((vocabulary, vec![(grammar_text(path), 20)]));
    }
    let full = !cfg!(debug_assertions);
    for (model, walks) in runs {
        let vocabulary = Arc::new(model.load());
        let size = vocabulary.len();
        for (k, (source, steps)) in walks.iter().enumerate() {
            let grammar = runtime_grammar_for(source, Some(&vocabulary));
            let sample = |rng: &mut Rng| -> Vec<TokenId> {
                if full {
                    return (0..size).map(token).collect();
                }
                let mut ids: Vec<TokenId> = (0..600).map(|_| token(rng.below(size))).collect();
                ids.extend(vocabulary.stop_tokens());
                ids
            };
            let result = walk(
                &grammar,
                &vocabulary,
                sample,
                &mut Rng::new(k as u64 + 1),
                *steps,
            );
            if let Err(error) = result {
                panic!("{} on grammar {k}: {error}", model.name());
            }
        }
    }
}

/// The walks above cover every grammar the project ships.
#[test]
fn the_library_lists_every_grammar_under_grammars() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../grammars");
    let mut found = Vec::new();
    for folder in std::fs::read_dir(&root).unwrap() {
        let folder = folder.unwrap().path();
        for file in std::fs::read_dir(&folder).unwrap() {
            let path = file.unwrap().path();
            if path.extension().is_some_and(|e| e == "xg") {
                found.push(path.strip_prefix(&root).unwrap().display().to_string());
            }
        }
    }
    found.sort();
    let mut listed: Vec<String> = LIBRARY
        .iter()
        .chain(MODEL_GRAMMARS.iter().map(|(path, _)| path))
        .map(|p| (*p).to_owned())
        .collect();
    listed.sort();
    assert_eq!(found, listed);
}

/// JSON Schema grammars on the real byte-level vocabularies (Llama 3.1,
/// Qwen3, gpt-oss): along a valid instance of every 47th MaskBench file,
/// tokenized by the model's own tokenizer, the mask equals the reference
/// at each of the first 48 steps — on a sample of ids (with the next
/// token and the stop tokens), and in release builds on every id at every
/// eighth step.
#[test]
fn masks_are_exact_along_maskbench_instances_on_real_vocabularies() {
    let cache = xg_compiler::CompileCache::default();
    let instances: Vec<(String, Arc<Grammar>, String)> = maskbench()
        .into_iter()
        .step_by(47)
        .filter_map(|(name, doc)| {
            let grammar = schema_grammar(&doc["schema"], &maskbench_options(), &cache).ok()?;
            let tests = doc["tests"].as_array()?;
            let valid = tests.iter().find(|test| test["valid"] == true)?;
            Some((name, grammar, compact(&valid["data"])))
        })
        .collect();
    assert!(instances.len() >= 10, "{} instances", instances.len());
    let full = !cfg!(debug_assertions);
    for tokenizer in &REAL_TOKENIZERS[..3] {
        let (json, config) = real_tokenizer(tokenizer);
        let vocabulary = Arc::new(Vocabulary::from_tokenizer_json(&json, Some(&config)).unwrap());
        let model = tokenizers::Tokenizer::from_bytes(&json).unwrap();
        let all: Vec<TokenId> = (0..vocabulary.len()).map(token).collect();
        let mut rng = Rng::new(47);
        for (name, grammar, text) in &instances {
            let encoding = model.encode(text.as_str(), false).unwrap();
            let mut matcher =
                Matcher::with_vocabulary(Arc::clone(grammar), Arc::clone(&vocabulary));
            for (step, &id) in encoding.get_ids().iter().take(48).enumerate() {
                let next = token(id as usize);
                let ids = if full && step % 8 == 0 {
                    all.clone()
                } else {
                    let mut ids: Vec<TokenId> =
                        (0..600).map(|_| token(rng.below(all.len()))).collect();
                    ids.extend(vocabulary.stop_tokens());
                    ids.push(next);
                    ids
                };
                let allowed = check_mask(&mut matcher, &ids)
                    .unwrap_or_else(|error| panic!("{} on {name}: {error}", tokenizer.name));
                assert!(
                    allowed.contains(&next),
                    "{} on {name}: step {step}",
                    tokenizer.name
                );
                matcher.accept_token(next).unwrap();
            }
        }
    }
}

/// A JSON Schema grammar builds most rules when a matcher first enters
/// them. Along every instance of every 25th MaskBench file (every 100th
/// in debug builds), valid or not, tokenized by Llama 3.1's tokenizer,
/// the masks of the lazy grammar — its matchers one after another, each
/// starting from what the earlier ones built, so that masks of one
/// snapshot meet states of the next — equal, bit for bit, those of the
/// same grammar with every rule built first, each with a vocabulary (and
/// mask cache) of its own; the first 40 steps of each instance (12 in
/// debug builds). Compact and flexible white space: with flexible, what
/// can follow white space is read from the lazy grammar's rules where its
/// callers are too many to build, and from the full state in the built one.
#[test]
fn rules_built_on_first_use_give_the_masks_of_rules_built_first() {
    use xg_compiler::json_schema::{DEFAULT_MAX_WHITESPACE, Options, Whitespace};
    let flexible = Options {
        whitespace: Whitespace::Flexible {
            max: Some(DEFAULT_MAX_WHITESPACE),
        },
        ..maskbench_options()
    };
    for options in [maskbench_options(), flexible] {
        lazy_and_built_masks_agree(&options);
    }
}

fn lazy_and_built_masks_agree(options: &xg_compiler::json_schema::Options) {
    let full = !cfg!(debug_assertions);
    let (json, config) = real_tokenizer(&REAL_TOKENIZERS[0]);
    let load = || Arc::new(Vocabulary::from_tokenizer_json(&json, Some(&config)).unwrap());
    let model = tokenizers::Tokenizer::from_bytes(&json).unwrap();
    let mut compared = 0;
    for (name, doc) in maskbench().into_iter().step_by(if full { 25 } else { 100 }) {
        let cache = xg_compiler::CompileCache::default();
        let Ok(lazy) = schema_grammar(&doc["schema"], options, &cache) else {
            continue;
        };
        // Compiled again, so that building it whole builds nothing for
        // the lazy one.
        let whole = schema_grammar(&doc["schema"], options, &cache).unwrap();
        if whole.is_complete() {
            // Nothing left to build on first use.
            continue;
        }
        let built = Arc::new(whole.completed().unwrap());
        assert!(built.is_complete());
        let (lazy_vocabulary, built_vocabulary) = (load(), load());
        for test in doc["tests"].as_array().unwrap() {
            let text = compact(&test["data"]);
            let encoding = model.encode(text.as_str(), false).unwrap();
            let mut on_lazy =
                Matcher::with_vocabulary(Arc::clone(&lazy), Arc::clone(&lazy_vocabulary));
            let mut on_built =
                Matcher::with_vocabulary(Arc::clone(&built), Arc::clone(&built_vocabulary));
            let mut lazy_mask = vec![0; lazy_vocabulary.mask_words()];
            let mut built_mask = vec![0; built_vocabulary.mask_words()];
            for (step, &id) in (encoding.get_ids().iter())
                .take(if full { 40 } else { 12 })
                .enumerate()
            {
                on_lazy.fill_next_token_bitmask(&mut lazy_mask).unwrap();
                on_built.fill_next_token_bitmask(&mut built_mask).unwrap();
                assert!(
                    lazy_mask == built_mask,
                    "{name}, step {step} of {text}, {:?}",
                    options.whitespace
                );
                compared += 1;
                let next = token(id as usize);
                if !allowed(&built_mask, next) {
                    break;
                }
                on_lazy.accept_token(next).unwrap();
                on_built.accept_token(next).unwrap();
            }
        }
    }
    assert!(compared >= 40, "{compared} masks compared");
}

#[test]
fn mask_errors_and_tokens_without_a_vocabulary() {
    let grammar = runtime_grammar("root ::= \"a\"");
    let vocabulary = small_vocabulary();
    let mut matcher = Matcher::with_vocabulary(Arc::clone(&grammar), Arc::clone(&vocabulary));
    let mut short = vec![0; vocabulary.mask_words() - 1];
    let error = matcher.fill_next_token_bitmask(&mut short).unwrap_err();
    assert!(error.to_string().contains("needs"), "{error}");
    let mut mask = vec![u32::MAX; vocabulary.mask_words()];
    matcher.fill_next_token_bitmask(&mut mask).unwrap();
    assert!(allowed(&mask, token(usize::from(b'a'))));
    assert!(!allowed(&mask, token(usize::from(b'b'))));
    // Padding rows are never allowed.
    assert!(!allowed(&mask, token(vocabulary.len() - 1)));
    let stop = vocabulary.stop_tokens()[0];
    assert!(!allowed(&mask, stop));
    matcher.accept_token(token(usize::from(b'a'))).unwrap();
    matcher.fill_next_token_bitmask(&mut mask).unwrap();
    assert!(allowed(&mask, stop));
    matcher.accept_token(stop).unwrap();
    assert!(matcher.is_terminated());
    matcher.fill_next_token_bitmask(&mut mask).unwrap();
    assert!(mask.iter().all(|&w| w == 0));
    let mut bare = Matcher::new(grammar);
    assert!(bare.accept_token(token(97)).is_err());
}

#[test]
fn equal_rules_share_entries_across_grammars() {
    // Recursive rules, so that inlining leaves them rules of their own.
    let vocabulary = Arc::new(Arc::unwrap_or_clone(small_vocabulary()).with_cache_limit(1 << 30));
    let first = runtime_grammar(
        "root ::= \"[\" item (\",\" item)* \"]\"\nitem ::= [a-z]+ | \"<a>\" | \"(\" item \")\"",
    );
    let second = runtime_grammar(
        "entry ::= \"(\" word \")\"\nroot ::= entry | \"[\" w (\",\" w)* \"]\"\nw ::= [a-z]+ | \"<a>\" | \"(\" w \")\"\nword ::= \"x\"",
    );
    let mut mask = vec![0; vocabulary.mask_words()];
    let mut matcher = Matcher::with_vocabulary(first, Arc::clone(&vocabulary));
    matcher.accept_str("[").unwrap();
    matcher.fill_next_token_bitmask(&mut mask).unwrap();
    let built = matcher.last_mask_stats().built;
    assert!(built > 0, "{:?}", matcher.last_mask_stats());
    let before = vocabulary.mask_cache().stats();
    let mut other = Matcher::with_vocabulary(second, Arc::clone(&vocabulary));
    other.accept_str("[").unwrap();
    let mut other_mask = vec![0; vocabulary.mask_words()];
    other.fill_next_token_bitmask(&mut other_mask).unwrap();
    let stats = other.last_mask_stats();
    assert_eq!(stats.built, 0, "{stats:?}");
    assert!(stats.hits + stats.partial_hits > 0, "{stats:?}");
    assert_eq!(vocabulary.mask_cache().stats().misses, before.misses);
    assert_eq!(mask, other_mask);
}

/// A tag dispatch's free-text entries leave its arms out: grammars that
/// differ only in what follows a trigger (a request's tools) share them,
/// and the tokens that complete a trigger are decided by the full state.
#[test]
fn free_text_entries_are_shared_by_dispatches_with_other_arms() {
    // Tokens that run from free text through a trigger into an arm.
    let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    for piece in [
        "<a>", "<a>1", "<a>12", "<a>y", "<a>é", "ab<a>", "b<a>bc", "<x", "<x=", "<x=1", "<ab>",
        "12</a>", "</a>", "END", "yz", "bc", "ab ", "é",
    ] {
        tokens.push(piece.as_bytes().to_vec());
    }
    let vocabulary = Arc::new(Vocabulary::from_byte_strings(&tokens, &[]).unwrap());
    let all: Vec<TokenId> = (0..vocabulary.len()).map(token).collect();
    let arms = [
        "[0-9]+ \"</a>\"",
        "(\"yz\" | \"bc\") \"</a>\"",
        "\"é\"* \"END\"",
    ];
    for (k, arm) in arms.iter().enumerate() {
        let source =
            format!("root ::= dispatch(stop=(\"END\")) {{ \"<a>\" => {arm}, \"<x\" => \"=1\" }}");
        let grammar = runtime_grammar(&source);
        let mut matcher = Matcher::with_vocabulary(grammar, Arc::clone(&vocabulary));
        check_mask(&mut matcher, &all).unwrap();
        let stats = matcher.last_mask_stats();
        if k > 0 {
            assert_eq!(stats.built, 0, "{source}: {stats:?}");
        }
        for text in ["ab ", "<", "<ab> <a"] {
            let mut inside = matcher.fork();
            inside.accept_str(text).unwrap();
            check_mask(&mut inside, &all).unwrap();
            assert!(
                k == 0 || inside.last_mask_stats().built == 0,
                "{source} after {text:?}"
            );
        }
        // Into the arm, and back to free text after it.
        matcher.accept_str("ab<a>").unwrap();
        check_mask(&mut matcher, &all).unwrap();
        let rest = ["12</a>", "bc</a>", "éé"][k];
        matcher.accept_str(rest).unwrap();
        check_mask(&mut matcher, &all).unwrap();
    }
}

/// Grammars whose copies of one rule (`std/json.xg` imported by two JSON
/// Schema embeds, say) have equal structure use the mask cache: their
/// tables list each node's edges in the same order in every copy.
#[test]
fn grammars_with_equal_rules_use_the_cache() {
    let vocabulary = small_vocabulary();
    let no_lookahead: Vec<String> = library()
        .into_iter()
        .filter(|text| !text.contains("(="))
        .collect();
    assert!(no_lookahead.iter().any(|text| text.contains("%json")));
    for text in no_lookahead {
        let mut matcher = Matcher::with_vocabulary(runtime_grammar(&text), Arc::clone(&vocabulary));
        let mut mask = vec![0; vocabulary.mask_words()];
        matcher.fill_next_token_bitmask(&mut mask).unwrap();
        assert!(matcher.last_mask_stats().cached, "{text}");
    }
}

#[test]
fn a_mask_over_budget_is_a_clear_error_and_changes_nothing() {
    // Ambiguous: every byte costs many items. Each matcher gets a grammar
    // and a vocabulary of its own, so no step memoized by another mask
    // makes it cheaper.
    let fresh = || {
        let grammar = runtime_grammar("root ::= root root | \"a\" | \"ab\"");
        let mut matcher = Matcher::with_vocabulary(grammar, small_vocabulary());
        matcher.accept_str(&"a".repeat(40)).unwrap();
        matcher
    };
    let words = small_vocabulary().mask_words();
    let mut expected = vec![0; words];
    let mut matcher = fresh();
    matcher.fill_next_token_bitmask(&mut expected).unwrap();
    let cost = matcher.last_mask_stats().items;
    assert!(cost > 1, "{:?}", matcher.last_mask_stats());
    let mut matcher = fresh();
    let before = matcher.stats();
    matcher.set_mask_budget(cost - 1);
    let mut mask = vec![u32::MAX; words];
    let error = matcher.fill_next_token_bitmask(&mut mask).unwrap_err();
    assert_eq!(error, MaskError::BudgetExceeded { budget: cost - 1 });
    assert!(
        error
            .to_string()
            .contains(&format!("budget of {}", cost - 1)),
        "{error}"
    );
    assert!(mask.iter().all(|&w| w == 0));
    assert_eq!(matcher.stats(), before);
    matcher.set_mask_budget(cost);
    matcher.fill_next_token_bitmask(&mut mask).unwrap();
    assert_eq!(mask, expected);
}

#[test]
fn batch_masks_equal_single_masks() {
    let vocabulary = small_vocabulary();
    let words = vocabulary.mask_words();
    let mut matchers: Vec<Matcher> = library()
        .iter()
        .chain(
            CORPUS
                .iter()
                .map(|s| (*s).to_owned())
                .collect::<Vec<_>>()
                .iter(),
        )
        .map(|source| Matcher::with_vocabulary(runtime_grammar(source), Arc::clone(&vocabulary)))
        .collect();
    let mut expected = vec![0; words * matchers.len()];
    for (matcher, row) in matchers.iter_mut().zip(expected.chunks_mut(words)) {
        matcher.fill_next_token_bitmask(row).unwrap();
    }
    let mut batch = vec![0; words * matchers.len()];
    let mut refs: Vec<&mut Matcher> = matchers.iter_mut().collect();
    let results = Matcher::fill_next_token_bitmasks(&mut refs, &mut batch);
    assert_eq!(results.len(), refs.len());
    assert!(results.iter().all(Result::is_ok));
    assert_eq!(batch, expected);
    // Rows too narrow: every matcher says so.
    let mut narrow = vec![0; refs.len()];
    let results = Matcher::fill_next_token_bitmasks(&mut refs, &mut narrow);
    assert!(
        results
            .iter()
            .all(|r| matches!(r, Err(MaskError::BufferTooSmall { .. })))
    );
}

#[test]
fn equal_rules_in_different_contexts_keep_their_contexts() {
    // `a` and `b` have one structure (one cache entry) but different
    // followers; both are in the first row.
    let grammar = runtime_grammar(
        "root ::= a \":\" | b \",\"\na ::= [x-z]+ | \"(\" a \")\"\nb ::= [x-z]+ | \"(\" b \")\"",
    );
    let tokens = ["x", "x:", "x,", "x;", "(x),", "(x):", ":", ","];
    let vocabulary = Arc::new(Vocabulary::from_byte_strings(&tokens, &[]).unwrap());
    let mut matcher = Matcher::with_vocabulary(grammar, Arc::clone(&vocabulary));
    let ids: Vec<TokenId> = (0..tokens.len()).map(token).collect();
    let allowed_ids = check_mask(&mut matcher, &ids).unwrap();
    let texts: Vec<&str> = allowed_ids.iter().map(|id| tokens[id.as_usize()]).collect();
    assert_eq!(texts, ["x", "x:", "x,", "(x),", "(x):"]);
}

/// Rows alike but for whether the output may end there are different
/// configurations of a trie walk (a CI run found a walk that merged two
/// such rows and rejected `bd` at the first step).
#[test]
fn masks_tell_rows_that_can_end_from_rows_that_cannot() {
    let source = "root ::= (([^a] | r1)){9,}\nr1 ::= ([a-c] [a-c])? | \"x\" r1 \"y\"\n";
    let grammar = runtime_grammar(source);
    let vocabulary = small_vocabulary();
    let all: Vec<TokenId> = (0..vocabulary.len()).map(token).collect();
    for seed in 0..8 {
        walk(
            &grammar,
            &vocabulary,
            |_| all.clone(),
            &mut Rng::new(seed),
            12,
        )
        .unwrap();
    }
}

/// Tables whose rules claim equal structural hashes for different
/// structures (written by hand, damaged, forged) must not share mask-cache
/// entries between those rules: masks stay exact. `word` and `number` are
/// called from the same place, so with equal hashes their entries' keys
/// would coincide.
#[test]
fn rules_with_forged_equal_hashes_do_not_share_entries() {
    let honest = runtime_grammar(
        "root ::= word | number
         word ::= \"(\" word \")\" | [a-z]+ \"!\"
         number ::= \"(\" number \")\" | [0-9]+ \"?\"",
    );
    let mut tables = honest.tables().clone();
    assert!(tables.rules.len() >= 3, "{tables:?}");
    for rule in &mut tables.rules {
        rule.hash = 7;
    }
    let forged = Arc::new(Grammar::new(tables).unwrap());
    let vocabulary = small_vocabulary();
    let all: Vec<TokenId> = (0..vocabulary.len()).map(token).collect();
    for seed in 0..16 {
        walk(
            &forged,
            &vocabulary,
            |_| all.clone(),
            &mut Rng::new(seed),
            8,
        )
        .unwrap();
    }
}

/// Tokens of every UTF-8 shape — whole characters of each length, lead
/// bytes cut short, continuation bytes alone, overlong forms, surrogates,
/// bytes that never occur — inside strings that take any character, a
/// range of them, or none: the subtrees taken at once must hold exactly the
/// tokens the reference accepts.
#[test]
fn masks_are_exact_on_tokens_of_every_utf8_shape() {
    let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    for piece in [
        &b"\xC3\xA9"[..],
        b"\xC3\xA9a",
        b"a\xC3\xA9",
        b"\xE4\xB8\xAD",
        b"\xE4\xB8",
        b"\xE4\xB8\xADx\xE4",
        b"\xF0\x9F\x98\x80",
        b"\xF0\x9F\x98",
        b"\xF0\x9F",
        b"\xF4\x8F\xBF\xBF",
        b"\xF4\x90\x80\x80",
        b"\xE0\xA0\x80",
        b"\xE0\x80\x80",
        b"\xED\x9F\xBF",
        b"\xED\xA0\x80",
        b"\xC0\x80",
        b"\xA9\xA9",
        b"\xC3\xA9\xA9",
        b"\xC3a",
        b"ab\xC3\xA9\xC3\xB6\"",
        b"\xC3\xA9\"",
        b"\xE2\x80\x9C\"}",
        b"\xC3\xBC\xC3\xBD",
        b"a\xC3\xA9\xC3\xA9",
        b"x\xE4\xB8\xAD\xE4\xB8\xAD",
        b"a\xA9",
        b"b\xC3a",
        b"c\xED\xA0\x80",
        b"d\xC0\x80",
        b"e\xF4\x90\x80\x80",
    ] {
        tokens.push(piece.to_vec());
    }
    let vocabulary = Arc::new(Vocabulary::from_byte_strings(&tokens, &[]).unwrap());
    let all: Vec<TokenId> = (0..vocabulary.len()).map(token).collect();
    for source in [
        r#"root ::= "\"" [^"\\]* "\"" "}""#,
        r#"root ::= "\"" ([a-z] | [é-ü])* "\"" "}""#,
        r#"root ::= "\"" ([a-z] | [\u0080-\u07FF])* "\"" "}""#,
        r#"root ::= "\"" [^"\\\U00010000-\U0010FFFF]* "\"" "}""#,
        r#"root ::= "\"" [a-z]* "\"" "}""#,
        r#"root ::= "\"" [a-z]* ([^\u0000-\u007F] [a-z]*)? "\"" "}""#,
    ] {
        let grammar = runtime_grammar(source);
        for seed in 0..12 {
            walk(
                &grammar,
                &vocabulary,
                |_| all.clone(),
                &mut Rng::new(seed),
                8,
            )
            .unwrap_or_else(|error| panic!("{source}: {error}"));
        }
    }
}

/// The Earley steps memoized by the walks that build a grammar's entries
/// outlive the entries: in a mask cache too small to keep any entry (its
/// grammars' memos hold an eighth of it, apart), the same output walked
/// again builds every entry again, but from the steps the first walk
/// memoized, with fewer Earley items — and its masks are still exact.
#[test]
fn walks_from_one_rule_share_memoized_steps_and_stay_exact() {
    let grammar = runtime_grammar(
        r#"root ::= "{" key ":" key "}"
key ::= "\"" ("alpha" | "alpine" | "beta" | [c-z] char*) "\""
char ::= [a-z] | "\\" ["\\n] | [é-ê]"#,
    );
    let vocabulary = Arc::new(small_vocabulary().as_ref().clone().with_cache_limit(4096));
    let ids: Vec<TokenId> = (0..vocabulary.len()).map(token).collect();
    let run = || {
        let mut matcher = Matcher::with_vocabulary(Arc::clone(&grammar), Arc::clone(&vocabulary));
        let mut items = 0;
        for prefix in ["{\"", "a", "lph", "a\":\"", "a", "l", "pine\"", "}"] {
            check_mask(&mut matcher, &ids).unwrap();
            let stats = matcher.last_mask_stats();
            assert_eq!((stats.built, stats.hits), (stats.entries, 0));
            items += stats.items;
            matcher.accept_str(prefix).unwrap();
        }
        assert!(matcher.can_terminate());
        items
    };
    let first = run();
    let again = run();
    assert!(
        again < first,
        "{again} Earley items with the steps of an earlier walk, {first} without"
    );
}

/// A parse state that comes back (every item of an array of strings
/// starts in one, every character inside one string leaves it as it was)
/// checks its uncertain tokens once: later steps at that state, in this
/// matcher or another of the grammar, reuse the verdicts — and the masks
/// stay exact, after rollbacks too.
#[test]
fn parse_states_seen_before_reuse_their_checked_tokens_and_stay_exact() {
    let grammar = runtime_grammar(
        r#"root ::= "[" item ("," item)* "]"
item ::= "\"" [a-z]* "\"" | "{" "\"k\":" item "}""#,
    );
    let tokens = [
        "[",
        "]",
        ",",
        "\"",
        "\",",
        "\",\"",
        "\"]",
        "\"}",
        "\"}]",
        "a",
        "ab",
        "b\"",
        "{",
        "}",
        "\"k\":",
        "{\"k\":\"",
        "</s>",
    ];
    let vocabulary = with_stop_last(&tokens);
    let ids: Vec<TokenId> = (0..tokens.len()).map(token).collect();
    let text = [
        "[",
        "\"",
        "ab",
        "a",
        "\",\"",
        "ab",
        "a",
        "\",",
        "{\"k\":\"",
        "ab",
        "\"}",
        ",",
        "\"",
        "ab",
        "\"]",
    ];
    let steps = |matcher: &mut Matcher, seen: &mut Vec<(bool, bool)>| {
        for piece in text {
            check_mask(matcher, &ids).unwrap();
            let stats = matcher.last_mask_stats();
            seen.push((stats.state_hits > 0, stats.uncertain > 0));
            let id = tokens.iter().position(|t| *t == piece).unwrap();
            matcher.accept_token(token(id)).unwrap();
        }
        check_mask(matcher, &ids).unwrap();
        assert!(matcher.can_terminate());
    };
    let mut first = Vec::new();
    let mut matcher = Matcher::with_vocabulary(Arc::clone(&grammar), Arc::clone(&vocabulary));
    steps(&mut matcher, &mut first);
    // Inside the first string ("ab", then "a" leads back to the same
    // state) and at the second item's start, states recur.
    assert_eq!(
        first[2],
        (false, true),
        "the first step inside a string is new"
    );
    assert!(
        first[3].0,
        "the second step inside the string repeats the state"
    );
    assert!(
        first[5].0,
        "the second item's string starts where the first did"
    );
    // Inside the object the string is in another context: a new state.
    assert_eq!(first[9], (false, true));
    let hits = vocabulary.mask_cache().stats().state_hits;
    assert!(hits >= 3);

    // Another matcher of the grammar starts with every state known: no
    // step checks a token again.
    let mut second = Vec::new();
    let mut other = Matcher::with_vocabulary(Arc::clone(&grammar), Arc::clone(&vocabulary));
    steps(&mut other, &mut second);
    for (step, (&(seen, checked), &again)) in first.iter().zip(&second).enumerate() {
        assert_eq!(again, (seen || checked, false), "step {step}");
    }

    // Rolled back into the object and taken elsewhere: still exact.
    other.rollback(7).unwrap();
    for piece in ["\"", "b\"", "]"] {
        check_mask(&mut other, &ids).unwrap();
        let id = tokens.iter().position(|t| *t == piece).unwrap();
        other.accept_token(token(id)).unwrap();
    }
    check_mask(&mut other, &ids).unwrap();
    assert!(other.can_terminate());
}

/// A vocabulary of `tokens`, the last of which is the stop token.
fn with_stop_last<B: AsRef<[u8]>>(tokens: &[B]) -> Arc<Vocabulary> {
    let stop = token(tokens.len() - 1);
    Arc::new(
        Vocabulary::from_byte_strings(tokens, &[stop])
            .unwrap()
            .with_stop_tokens(&[stop])
            .unwrap(),
    )
}

/// `extra`, then every string of one to three pieces of `alphabet`, then a
/// stop token.
fn up_to_triples(extra: &[&str], alphabet: &[&str]) -> Vec<String> {
    let mut tokens: Vec<String> = extra.iter().map(|&t| t.to_owned()).collect();
    for a in alphabet {
        tokens.push((*a).to_owned());
        for b in alphabet {
            tokens.push(format!("{a}{b}"));
            for c in alphabet {
                tokens.push(format!("{a}{b}{c}"));
            }
        }
    }
    tokens.push("</s>".to_owned());
    tokens
}

/// Feeds `pieces` (tokens of `tokens`, the last one the stop token) to a
/// matcher of `grammar`, checking every mask against the reference, and
/// returns what each mask cost.
fn mask_stats_along(grammar: Arc<Grammar>, tokens: &[String], pieces: &[&str]) -> Vec<MaskStats> {
    let vocabulary = with_stop_last(tokens);
    let ids: Vec<TokenId> = (0..tokens.len()).map(token).collect();
    let mut matcher = Matcher::with_vocabulary(grammar, vocabulary);
    let mut stats = Vec::new();
    for piece in pieces {
        check_mask(&mut matcher, &ids).unwrap();
        stats.push(matcher.last_mask_stats());
        let id = tokens.iter().position(|t| t == piece).unwrap();
        matcher.accept_token(token(id)).unwrap();
    }
    check_mask(&mut matcher, &ids).unwrap();
    assert!(matcher.can_terminate());
    stats
}

/// [`mask_stats_along`]: the trie nodes each mask walked building entries.
fn nodes_walked_along(grammar: Arc<Grammar>, tokens: &[String], pieces: &[&str]) -> Vec<u64> {
    let stats = mask_stats_along(grammar, tokens, pieces);
    stats.iter().map(|stats| stats.nodes_walked).collect()
}

/// An object with property names that share prefixes, and tokens for
/// [`PROPERTY_NAME_TEXT`]: its characters, and every pair and triple over
/// a small alphabet with the characters that end a name, escape in it or
/// follow it (not the ones that go on with "alp…": the trie below them is
/// the part each prefix walks anew).
fn property_names() -> (Arc<Grammar>, Vec<String>) {
    let grammar = runtime_grammar(
        r#"root ::= %json {"type": "object", "properties": {"alpha": {"type": "integer"}, "alpine": {"type": "integer"}, "alps": {"type": "integer"}, "beta": {"type": "integer"}}}"#,
    );
    let alphabet = ["a", "b", "l", "x", "\"", "\\", ":", "1", ",", "é", "}"];
    (
        grammar,
        up_to_triples(&["{", "p", "i", "n", "e"], &alphabet),
    )
}

/// An instance of [`property_names`]' object, one piece per token.
const PROPERTY_NAME_TEXT: [&str; 12] =
    ["{", "\"", "a", "l", "p", "i", "n", "e", "\"", ":", "1", "}"];

/// Property names: each prefix of a name is a new automaton state, so each
/// step inside a name builds entries — but a character that leaves every
/// known name leads, whatever the prefix, into the same "any other name"
/// configuration. What a walk finds below such a trie node is recorded
/// once and replayed by the walks of later prefixes, which then visit a
/// fraction of the trie; the masks stay exact.
#[test]
fn walks_replay_what_earlier_walks_found_below_shared_configurations() {
    let (grammar, tokens) = property_names();
    let walked = nodes_walked_along(Arc::clone(&grammar), &tokens, &PROPERTY_NAME_TEXT);
    // The walk after `{"` meets the other-name configuration below many
    // trie nodes and records what is below it from the second on; the
    // walks of later prefixes replay it.
    let first = walked[2];
    for (step, &nodes) in walked.iter().enumerate().skip(4).take(4) {
        assert!(
            nodes * 5 < first,
            "step {step} walked {nodes} trie nodes, the first prefix {first}: {walked:?}"
        );
    }
}

/// In a grammar whose rules are built on first use, a walk may build rules
/// the user's matcher has not reached yet, in a later snapshot; the next
/// walk starts from the newest snapshot and takes the memo the last one
/// kept there. The grammar holds the record of its newest snapshot, and so
/// does every matcher of it: a user who keeps only the matcher (the
/// grammar dropped once the matcher is made) loses nothing — its masks
/// walk exactly the trie nodes they walk with the grammar kept.
#[test]
fn matchers_of_a_dropped_lazy_grammar_still_start_walks_from_its_newest_snapshot() {
    let (_, tokens) = property_names();
    let schema = json!({"type": "object", "properties": {
        "alpha": {"type": "integer"}, "alpine": {"type": "integer"},
        "alps": {"type": "integer"}, "beta": {"type": "integer"}}});
    let lazy = || {
        let cache = xg_compiler::CompileCache::default();
        let grammar = schema_grammar(&schema, &maskbench_options(), &cache);
        grammar.unwrap()
    };
    let kept = lazy();
    assert!(
        !kept.is_complete(),
        "the test needs rules built on first use"
    );
    let with_grammar = nodes_walked_along(Arc::clone(&kept), &tokens, &PROPERTY_NAME_TEXT);
    let dropped = nodes_walked_along(lazy(), &tokens, &PROPERTY_NAME_TEXT);
    assert_eq!(dropped, with_grammar);
    // And the walks are worth sharing: later prefixes replay the first's.
    assert!(with_grammar[6] * 5 < with_grammar[2], "{with_grammar:?}");
}

/// Inside a string of bounded length every character steps the count down,
/// so no configuration leads back to itself; but all plain characters lead
/// to the same next one, so a subtree no deeper than the characters left is
/// accepted without visiting it. Far from the bound an entry visits little
/// more than the trie's first level; near it, more — and the masks are
/// exact all the way.
#[test]
fn bounded_strings_take_subtrees_that_fit_at_once() {
    let grammar = runtime_grammar(r#"root ::= "\"" [a-z\x80-\x10FFFF]{0,12} "\"""#);
    let letters = ["a", "b", "c", "d", "e", "é"];
    let tokens = up_to_triples(&["\"", "\"\""], &letters);
    let text = ["\"", "abc", "dé", "eab", "cd", "é", "a", "\""];
    let walked = nodes_walked_along(Arc::clone(&grammar), &tokens, &text);
    // After the opening quote, 12 characters are left: every subtree fits.
    let first_level = letters.len() + 1;
    assert!(
        walked[1] < 3 * first_level as u64,
        "{} trie nodes walked with 12 characters left: {walked:?}",
        walked[1]
    );
}

/// A trie node inside a character (after a lead byte of CJK text, say) is
/// taken at once when every way to finish the character leads to one
/// configuration from which all below is viable — instead of a walk
/// through every continuation byte of every character below it. The masks
/// stay exact.
#[test]
fn characters_begun_above_a_trie_node_are_finished_at_once() {
    let grammar = runtime_grammar(r#"root ::= "\"" [^"\\]* "\"""#);
    // The CJK characters share their lead byte, and two or three of them
    // their second one too.
    let pieces = ["中", "丮", "乀", "乁", "乂", "a", "é"];
    let tokens = up_to_triples(&["\""], &pieces);
    let text = ["\"", "中a", "é", "\""];
    let walked = nodes_walked_along(Arc::clone(&grammar), &tokens, &text);
    // The trie's first level: the quote, `a`, and the lead bytes of é and
    // of the CJK characters; nothing below it.
    let first_level = 4;
    assert!(
        walked[1] <= first_level,
        "{} trie nodes walked inside a string: {walked:?}",
        walked[1]
    );
}

/// The Earley step from a configuration over a byte stands for every byte
/// its items scan alike (the same automaton edges take them): building the
/// entry inside a string steps once for all letters, not once per letter.
#[test]
fn one_step_stands_for_the_bytes_a_configuration_scans_alike() {
    let grammar = runtime_grammar(r#"root ::= "\"" [a-z]* "\"""#);
    let mut tokens: Vec<String> = ('a'..='z').map(String::from).collect();
    tokens.extend(["\"".to_owned(), "</s>".to_owned()]);
    let vocabulary = with_stop_last(&tokens);
    let ids: Vec<TokenId> = (0..tokens.len()).map(token).collect();
    let mut matcher = Matcher::with_vocabulary(grammar, vocabulary);
    matcher.accept_str("\"").unwrap();
    check_mask(&mut matcher, &ids).unwrap();
    let items = matcher.last_mask_stats().items;
    assert!(
        items < 26,
        "{items} Earley items to build the entry of a string over 26 letters"
    );
}

/// One grammar used with two vocabularies (a grammar compiled once, two
/// models): what walks memoized for one vocabulary's trie is never
/// replayed on the other's, and every mask of both stays exact.
#[test]
fn a_grammar_used_with_two_vocabularies_keeps_their_walks_apart() {
    let (grammar, first) = property_names();
    // Other tokens, so the same trie node numbers stand for other bytes.
    let fewer = ["a", "b", "l", "\"", "\\", ":", "1", ",", "é", "}"];
    let second = up_to_triples(&["{", "p", "i", "n", "e", "ab", "zz"], &fewer);
    for tokens in [&first, &second, &first, &second] {
        nodes_walked_along(Arc::clone(&grammar), tokens, &PROPERTY_NAME_TEXT);
    }
}

/// A grammar of `number` waited for in `places` places, and what each mask
/// along `k7:1234,7` cost in Earley items (the masks checked against the
/// reference).
fn number_in_places(places: usize) -> Vec<u64> {
    let places: Vec<String> = (0..places)
        .map(|place| format!("\"k{place}:\" number \",{place}\""))
        .collect();
    let mut source = format!("root ::= {}", places.join(" | "));
    // Recursive, so that it stays a rule of its own.
    source.push_str("\nnumber ::= [1-9] [0-9]{0,5} | \"(\" number \")\"");
    let grammar = runtime_grammar(&source);
    let mut tokens: Vec<String> = ["k", "7", ":", "1", "2", "3", "4", ",", ",7", "3,", "3,7"]
        .map(String::from)
        .to_vec();
    tokens.push("</s>".to_owned());
    let text = ["k", "7", ":", "1", "2", "3", "4", ",7"];
    let stats = mask_stats_along(Arc::clone(&grammar), &tokens, &text);
    stats.iter().map(|stats| stats.items).collect()
}

/// What can follow a rule is a property of the grammar, and so is whether
/// it takes the rest of an uncertain token: the verdicts are kept, and
/// later rows with the rule (each count of a bounded number here, every
/// prefix of a property name in JSON) look them up instead of building the
/// rule's context again — a row of a hundred items for a rule used in a
/// hundred places. The masks stay exact.
#[test]
fn what_follows_a_rule_is_checked_once_per_token() {
    let items = number_in_places(200);
    // The context of `number` is built once, where the number starts
    // (mask 3); the masks inside it (4 to 7) look its verdicts up.
    let (first, later) = (items[3], &items[4..]);
    for &count in later {
        assert!(
            count * 4 < first,
            "{count} Earley items inside the number, {first} where it starts: {items:?}"
        );
    }
}

/// A rule waited for in more places than a context is built for (here
/// 300): its uncertain tokens are checked against the full state, whose
/// row holds only the place the parse is at, and no context row of
/// hundreds of items is built. The masks stay exact.
#[test]
fn a_rule_used_everywhere_leaves_its_tokens_to_the_full_state() {
    let contexts = number_in_places(200);
    let everywhere = number_in_places(300);
    assert!(
        everywhere[3] * 4 < contexts[3],
        "{everywhere:?} with 300 places, {contexts:?} with 200"
    );
}

/// Inside a property name, every prefix is its own automaton state, and at
/// each one an escaped or non-ASCII character may start. The character's
/// rule starts in the row, entered by the name's own items, whose walks go
/// through it: it needs no entry of its own (and one, if built, would be
/// known by where the character takes it — "any other name", whatever the
/// prefix — and reused). Each prefix builds only the entries of the name's
/// two items, the declared names' and any other name's; the masks stay
/// exact.
#[test]
fn a_character_that_leaves_every_name_is_not_built_again_at_each_prefix() {
    let (grammar, tokens) = property_names();
    let stats = mask_stats_along(Arc::clone(&grammar), &tokens, &PROPERTY_NAME_TEXT);
    let built: Vec<u32> = stats.iter().map(|stats| stats.built).collect();
    for step in 2..=8 {
        assert!(
            built[step] <= 2,
            "step {step} built {} entries: {built:?}",
            built[step],
        );
    }
}

/// Cross-grammar reuse: a hundred schemas, each with property names of its
/// own, whose values are a string and a number. The entries of the string
/// and number rules are built by the first grammar and found in the
/// vocabulary's cache by the 99 others; inside the values, the two entries
/// a later grammar builds are its object's own: the item after the number
/// (which may end after any digit), and the white space after it, short
/// and so covered with the object's items that wait for it. The masks stay
/// exact.
#[test]
fn a_hundred_schemas_build_their_shared_value_entries_once() {
    let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    for piece in [
        "{\"", "\":", "\",\"", "hello", " wor", "ld", "12", ".5", "e3", "\"}", "}",
    ] {
        tokens.push(piece.as_bytes().to_vec());
    }
    tokens.push(b"</s>".to_vec());
    let vocabulary = with_stop_last(&tokens);
    let all: Vec<TokenId> = (0..vocabulary.len()).map(token).collect();
    let mut mask = vec![0; vocabulary.mask_words()];
    let mut built_in_values = Vec::new();
    for k in 0..100 {
        let grammar = runtime_grammar(&format!(
            r#"root ::= %json {{"type": "object", "properties": {{"name{k}": {{"type": "string"}}, "size{k}": {{"type": "number"}}}}, "required": ["name{k}", "size{k}"], "additionalProperties": false}}"#
        ));
        let text = format!(r#"{{"name{k}":"hello world","size{k}":12.5e3}}"#);
        let string = text.find("hello").unwrap()..text.find("\",").unwrap();
        let number = text.find(":12").unwrap() + 2..text.len() - 1;
        let mut matcher = Matcher::with_vocabulary(grammar, Arc::clone(&vocabulary));
        let mut built = 0;
        for (at, byte) in text.bytes().enumerate() {
            if k % 10 == 0 {
                check_mask(&mut matcher, &all).unwrap();
            } else {
                matcher.fill_next_token_bitmask(&mut mask).unwrap();
            }
            if string.contains(&at) || number.contains(&at) {
                built += matcher.last_mask_stats().built;
            }
            matcher.accept_token(token(usize::from(byte))).unwrap();
        }
        assert!(matcher.can_terminate());
        built_in_values.push(built);
    }
    assert!(built_in_values[0] > 3, "{built_in_values:?}");
    assert!(
        built_in_values[1..].iter().all(|&b| b == 2),
        "{built_in_values:?}"
    );
}

/// A string pattern that counts words (`(\S+\s+){0,99}`: MaskBench's
/// o21053 family): the repeated word is no short rule, yet a token that
/// runs past a word (` cat`) goes on in the next match within the entry,
/// whose key covers the repetition's count; it is not left to the
/// full-state check at every step (57,882 such tokens a step on Llama 3.1
/// before). Masks exact against the reference at every step.
#[test]
fn tokens_running_past_a_counted_word_are_decided_by_the_entry() {
    let grammar = runtime_grammar(
        r#"root ::= %json {"type": "string", "pattern": "^(?:\\S+\\s+){0,99}\\S+$"}"#,
    );
    let tokens: Vec<String> = [
        "\"", "the", " cat", " sat", "cat", " ", "s", " on", "x\"", "</s>",
    ]
    .iter()
    .map(|t| (*t).to_owned())
    .collect();
    let pieces = ["\"", "the", " cat", " sat", " on", " cat", "\""];
    let stats = mask_stats_along(Arc::clone(&grammar), &tokens, &pieces);
    // Three such tokens at every step inside the text before.
    let uncertain: Vec<u32> = stats.iter().map(|s| s.uncertain).collect();
    assert!(uncertain.iter().all(|&n| n == 0), "{uncertain:?}");
}

/// Where a rule ends inside a token (a string's closing quote inside `",`,
/// a number's last digit inside `1}`), the rest of the token is checked
/// from the state where the rule has just matched, with verdicts kept per
/// state: every token that can end a rule — each containing `"`, `,`, `}`,
/// `]` or `:` — is checked against the reference at every step along
/// instances of schemas built for it (bounded strings of several lengths
/// among many optional properties, nullable values, nested objects and
/// arrays), on Llama 3.1, in both property orders.
#[test]
fn rests_after_rule_ends_are_exact_on_a_real_vocabulary() {
    use serde_json::json;
    use xg_compiler::json_schema::{Options, PropertyOrder};

    let mut properties = serde_json::Map::new();
    for (i, max) in [3, 12, 50, 255, 8, 128].iter().cycle().take(24).enumerate() {
        properties.insert(
            format!("p{i}"),
            json!({"type": ["string", "null"], "maxLength": max}),
        );
    }
    properties.insert("n".into(), json!({"type": "integer", "minimum": 0}));
    properties.insert(
        "tags".into(),
        json!({"type": "array", "items": {"type": "string", "maxLength": 10}}),
    );
    properties.insert(
        "inner".into(),
        json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "number"}}}),
    );
    let schema = json!({"type": "object", "properties": properties, "additionalProperties": false});
    let instance = json!({
        "p0": "USD", "p1": null, "p2": "Chrome 96.0", "p3": "en-US", "p7": "ab\"c",
        "p9": "my_app_name", "p12": "end", "n": 1920,
        "tags": ["a", "bb", "Hi, you"], "inner": {"a": "x", "b": -1.5e3},
    });
    let (vocabulary, model) = first_real_vocabulary();
    let enders: Vec<TokenId> = (0..vocabulary.len())
        .map(token)
        .filter(|&id| vocabulary.bytes(id).iter().any(|b| b"\",}]:".contains(b)))
        .collect();
    for order in [PropertyOrder::Given, PropertyOrder::Any] {
        let options = Options {
            property_order: order,
            ..maskbench_options()
        };
        let cache = xg_compiler::CompileCache::default();
        let grammar = schema_grammar(&schema, &options, &cache).unwrap();
        let text = compact(&instance);
        let ids = model.encode(text.as_str(), false).unwrap();
        let mut matcher = Matcher::with_vocabulary(Arc::clone(&grammar), Arc::clone(&vocabulary));
        for (step, &id) in ids.get_ids().iter().enumerate() {
            let next = token(id as usize);
            let mut checked = enders.clone();
            checked.push(next);
            let allowed = check_mask(&mut matcher, &checked)
                .unwrap_or_else(|error| panic!("{order:?}, step {step}: {error}"));
            assert!(allowed.contains(&next), "{order:?}: step {step}");
            matcher.accept_token(next).unwrap();
        }
    }
}

/// The tokens from a draft tree's root (left out) down to `node`.
fn path_to(node: usize, tokens: &[TokenId], parent_of: &[usize]) -> Vec<TokenId> {
    let mut path = vec![];
    let mut at = node;
    while at != 0 {
        path.push(tokens[at]);
        at = parent_of[at];
    }
    path.reverse();
    path
}

/// Draft-tree masks (`Matcher::fill_draft_tree_bitmasks`) equal one mask
/// per node computed by replaying the node's path on a fork, on random
/// trees of 1 to 40 nodes along a JSON instance on Llama 3.1 (children
/// mostly among the tokens the parent allows, some refused, some stop
/// tokens); the matcher is unchanged afterwards; malformed trees are
/// refused with nothing written.
#[test]
fn draft_tree_masks_equal_a_replay_per_node() {
    use xg_runtime::DraftTree;

    let (vocabulary, model) = first_real_vocabulary();
    let grammar = runtime_grammar(&grammar_text("std/json.xg"));
    let words = vocabulary.mask_words();
    let text = r#"{"name": "Ada", "tags": ["x", 1.5e3, true], "n": null}"#;
    let ids = model.encode(text, false).unwrap();
    let mut matcher = Matcher::with_vocabulary(Arc::clone(&grammar), Arc::clone(&vocabulary));
    let mut rng = Rng::new(11);
    let allowed_in = |mask: &[u32]| -> Vec<TokenId> {
        (0..vocabulary.len())
            .map(token)
            .filter(|&id| allowed(mask, id))
            .collect()
    };
    for (step, &id) in ids.get_ids().iter().enumerate() {
        // A random tree: each new node hangs below a random earlier one.
        let count = 1 + rng.below(40);
        let mut tokens = vec![token(0)];
        let mut parent_of = vec![usize::MAX];
        let mut mask = vec![0u32; words];
        for node in 1..count {
            let parent = rng.below(node);
            let mut fork = matcher.fork();
            let reachable = path_to(parent, &tokens, &parent_of)
                .into_iter()
                .all(|t| fork.accept_token(t).is_ok());
            let pick = if reachable && rng.below(5) != 0 {
                fork.fill_next_token_bitmask(&mut mask).unwrap();
                let ok = allowed_in(&mask);
                ok.get(rng.below(ok.len().max(1))).copied()
            } else {
                None
            };
            tokens.push(pick.unwrap_or_else(|| token(rng.below(vocabulary.len()))));
            parent_of.push(parent);
        }
        let mut first_child = vec![-1i64; count];
        let mut next_sibling = vec![-1i64; count];
        for node in (1..count).rev() {
            let parent = parent_of[node];
            next_sibling[node] = first_child[parent];
            first_child[parent] = i64::try_from(node).unwrap();
        }
        let tree = DraftTree {
            tokens: &tokens,
            first_child: &first_child,
            next_sibling: &next_sibling,
        };
        let before = (matcher.stats(), matcher.steps(), matcher.can_terminate());
        let mut masks = vec![u32::MAX; count * words];
        matcher.fill_draft_tree_bitmasks(tree, &mut masks).unwrap();
        assert_eq!(
            (matcher.stats(), matcher.steps(), matcher.can_terminate()),
            before,
            "step {step}: the tree changed the matcher"
        );
        for node in 0..count {
            let mut fork = matcher.fork();
            let mut expected = vec![0u32; words];
            if path_to(node, &tokens, &parent_of)
                .into_iter()
                .all(|t| fork.accept_token(t).is_ok())
            {
                fork.fill_next_token_bitmask(&mut expected).unwrap();
            }
            assert!(
                masks[node * words..(node + 1) * words] == expected[..],
                "step {step}, node {node} of {count}"
            );
        }
        matcher.accept_token(token(id as usize)).unwrap();
    }

    let tokens = [token(0), token(1), token(2)];
    let mut masks = vec![7u32; 3 * words];
    for (first_child, next_sibling) in [
        ([1i64, 2, 1], [-1i64, -1, -1]), // node 1 reached twice
        ([1, -1, -1], [-1, 3, -1]),      // past the nodes
        ([1, -1, -1], [-1, 0, -1]),      // back to the root
    ] {
        let tree = DraftTree {
            tokens: &tokens,
            first_child: &first_child,
            next_sibling: &next_sibling,
        };
        let error = matcher
            .fill_draft_tree_bitmasks(tree, &mut masks)
            .unwrap_err();
        assert!(matches!(error, MaskError::DraftTree(_)), "{error}");
        assert!(masks.iter().all(|&word| word == 7), "a refused tree wrote");
    }
}

/// A batch of draft trees (`fill_draft_tree_bitmasks_batch`) fills the
/// same rows as one call per matcher, rows wider than the vocabulary's
/// cleared past it; lengths that disagree fail every matcher and write
/// nothing.
#[test]
fn draft_tree_batches_equal_one_call_per_matcher() {
    use xg_runtime::DraftTree;

    let vocabulary = small_vocabulary();
    let words = vocabulary.mask_words() + 1;
    let grammars = [
        runtime_grammar(&grammar_text("std/json.xg")),
        runtime_grammar("root ::= (\"a\" | \"b\" \" \")+ \"!\""),
    ];
    // Single bytes are tokens of their own value: 0 -> 1 "a", 2 "{";
    // 1 -> 3 "b" -> 4 " " -> 5 "!".
    let tokens: Vec<TokenId> = [0, b'a', b'{', b'b', b' ', b'!']
        .iter()
        .map(|&b| token(usize::from(b)))
        .collect();
    let first_child = [1i64, 3, -1, 4, 5, -1];
    let next_sibling = [-1i64, 2, -1, -1, -1, -1];
    let tree = DraftTree {
        tokens: &tokens,
        first_child: &first_child,
        next_sibling: &next_sibling,
    };
    let mut singles = vec![0u32; 2 * 6 * words];
    for (matcher_rows, grammar) in singles.chunks_mut(6 * words).zip(&grammars) {
        let mut matcher = Matcher::with_vocabulary(Arc::clone(grammar), Arc::clone(&vocabulary));
        matcher
            .fill_draft_tree_bitmasks(tree, matcher_rows)
            .unwrap();
    }
    let mut matchers: Vec<Matcher> = grammars
        .iter()
        .map(|g| Matcher::with_vocabulary(Arc::clone(g), Arc::clone(&vocabulary)))
        .collect();
    let mut refs: Vec<&mut Matcher> = matchers.iter_mut().collect();
    let mut batch = vec![u32::MAX; 2 * 6 * words];
    let results = Matcher::fill_draft_tree_bitmasks_batch(&mut refs, &[tree, tree], &mut batch);
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert_eq!(batch, singles);
    assert!(batch.chunks(words).all(|row| row[words - 1] == 0));
    // Beyond the roots, some node was taken and masked.
    let deeper = |rows: &[u32]| {
        rows.chunks(words)
            .skip(1)
            .any(|row| row.iter().any(|&w| w != 0))
    };
    assert!(singles.chunks(6 * words).any(deeper));
    let mut untouched = vec![7u32; 2 * 6 * words];
    let results = Matcher::fill_draft_tree_bitmasks_batch(&mut refs, &[tree], &mut untouched);
    assert!(
        results
            .iter()
            .all(|r| matches!(r, Err(MaskError::DraftTree(_))))
    );
    assert!(untouched.iter().all(|&w| w == 7));
}

/// Batches of accepts and rollbacks (`accept_tokens_batch`,
/// `rollback_batch`) leave each matcher where one call per matcher leaves
/// it: four JSON outputs on Llama 3.1, three tokens a call (one output
/// refused midway), masks equal after every batch and after rolling back
/// different counts; a rollback batch with one count past its matcher's
/// steps moves no matcher.
#[test]
fn accept_and_rollback_batches_equal_one_call_per_matcher() {
    let schema = json!({"type": "object", "properties": {
        "name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name", "age"], "additionalProperties": false});
    let texts = [
        r#"{"name":"Ada","age":36}"#,
        r#"{"name":"Grace Hopper","age":85}"#,
        r#"{"name":"x","age":-1}"#,
        r#"{"name":"Alan","age":4.5}"#, // refused at the fraction
    ];
    let (vocabulary, model) = first_real_vocabulary();
    let cache = xg_compiler::CompileCache::default();
    let grammar = schema_grammar(&schema, &maskbench_options(), &cache).unwrap();
    let outputs: Vec<Vec<TokenId>> = texts
        .iter()
        .map(|text| {
            let ids = model.encode(*text, false).unwrap();
            ids.get_ids().iter().map(|&id| token(id as usize)).collect()
        })
        .collect();
    let new_matcher = || Matcher::with_vocabulary(Arc::clone(&grammar), Arc::clone(&vocabulary));
    let mut batch: Vec<Matcher> = texts.iter().map(|_| new_matcher()).collect();
    let mut single: Vec<Matcher> = texts.iter().map(|_| new_matcher()).collect();
    let same_masks = |batch: &mut [Matcher], single: &mut [Matcher], when: &str| {
        for (i, (b, s)) in batch.iter_mut().zip(single.iter_mut()).enumerate() {
            let mut masks = [
                vec![0u32; vocabulary.mask_words()],
                vec![0u32; vocabulary.mask_words()],
            ];
            b.fill_next_token_bitmask(&mut masks[0]).unwrap();
            s.fill_next_token_bitmask(&mut masks[1]).unwrap();
            assert_eq!(b.steps(), s.steps(), "{when}, output {i}");
            assert!(masks[0] == masks[1], "{when}, output {i}: masks differ");
        }
    };
    let longest = outputs.iter().map(Vec::len).max().unwrap();
    let mut refused = vec![false; texts.len()];
    for start in (0..longest).step_by(3) {
        let chunks: Vec<&[TokenId]> = outputs
            .iter()
            .map(|ids| &ids[start.min(ids.len())..(start + 3).min(ids.len())])
            .collect();
        let mut jobs: Vec<(&mut Matcher, &[TokenId])> =
            batch.iter_mut().zip(chunks.iter().copied()).collect();
        let results = Matcher::accept_tokens_batch(&mut jobs);
        for (i, (matcher, chunk)) in single.iter_mut().zip(&chunks).enumerate() {
            let expected = matcher.accept_tokens(chunk);
            assert_eq!(
                results[i].as_ref().map_err(|(taken, _)| *taken),
                expected.as_ref().map_err(|(taken, _)| *taken),
                "tokens {start}.., output {i}"
            );
            refused[i] |= expected.is_err();
        }
        same_masks(&mut batch, &mut single, &format!("after tokens {start}.."));
    }
    assert_eq!(refused, [false, false, false, true]);
    let counts = [1, 4, 0, batch[3].steps()];
    let mut jobs: Vec<(&mut Matcher, usize)> = batch.iter_mut().zip(counts).collect();
    Matcher::rollback_batch(&mut jobs).unwrap();
    for (matcher, count) in single.iter_mut().zip(counts) {
        matcher.rollback(count).unwrap();
    }
    same_masks(&mut batch, &mut single, "after the rollback batch");
    let steps: Vec<usize> = batch.iter().map(Matcher::steps).collect();
    let too_many = [0, 0, steps[2] + 1, 0];
    let mut jobs: Vec<(&mut Matcher, usize)> = batch.iter_mut().zip(too_many).collect();
    assert!(Matcher::rollback_batch(&mut jobs).is_err());
    assert_eq!(batch.iter().map(Matcher::steps).collect::<Vec<_>>(), steps);
    same_masks(&mut batch, &mut single, "after a refused rollback batch");
}

/// Inside a string of bounded length every *plain* token — whole printable
/// characters, no quote, no backslash — is accepted when its characters
/// fit the count left and refused when not, whatever they are; an entry
/// takes all of them at once by their number of characters and walks only
/// the trie below the other tokens. On Llama 3.1's vocabulary, along texts
/// tokenized by its tokenizer, the masks equal the reference (every token
/// in release builds, 600 sampled and the next one in debug builds) at
/// every step: strings with bounds in a schema (escapes, non-ASCII text,
/// a minimum), where no length decides (a pattern's letters, a rule that
/// may end before its count is done), and a count past the longest token.
/// In the schema with bounds no entry walks a quarter of the trie (near
/// the end of a count, a walk that takes a subtree at once only when all
/// of it fits visits nearly every node).
#[test]
fn plain_tokens_in_bounded_strings_are_sorted_by_length_at_once() {
    let cases: [(&str, &str); 6] = [
        (
            r#"root ::= %json {"type": "object", "properties": {"a": {"type": "string", "minLength": 3, "maxLength": 40}, "b": {"type": "string", "maxLength": 5}}, "required": ["a", "b"]}"#,
            r#"{"a":"héllo wörld, \"quoted\" 漢字 and\n more text!","b":"abc"}"#,
        ),
        (
            r#"root ::= "\"" [^"\\\x00-\x1F]{0,6} "\"" | "<" [^"\\\x00-\x1F]{2,8}"#,
            "<ab cdé f",
        ),
        (
            r#"root ::= %json {"type": "string", "pattern": "^[a-z ]{0,12}$"}"#,
            r#""abc def ghi""#,
        ),
        (
            r#"root ::= %json {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 300}}"#,
            r#"["first item of the array, long enough to take several tokens","b"]"#,
        ),
        (
            r#"root ::= "'" [^"\\\x00-\x1F]{1,4} "'" [^"\\\x00-\x1F]{0,3}"#,
            "'ab'cd",
        ),
        (
            r#"root ::= "|" name "ing things" | "[" name "]"
               name ::= [^"\\\x00-\x1F]{1,3}"#,
            "| bring things",
        ),
    ];
    let (vocabulary, model) = first_real_vocabulary();
    for (source, text) in cases {
        let grammar = runtime_grammar_for(source, Some(&vocabulary));
        let bounded = source.contains("\"maxLength\": 40");
        masks_along(&vocabulary, &model, grammar, text, |step, stats| {
            let walked = stats.nodes_walked;
            assert!(
                !bounded || walked < vocabulary.len() as u64 / 4,
                "{source}: step {step}: {walked} trie nodes walked"
            );
        });
    }
}

/// A `pattern` without anchors is a search: the string must contain a match
/// somewhere. No character leads every state of the search to one same
/// state (`w` moves a search for "wifi" on, `a` does not), so no chain of
/// common targets takes a subtree at once; but every character keeps the
/// search alive, in one of a few states. A walk takes a subtree at once
/// when the states its bytes lead to, and theirs on, form such a closed
/// set: on Llama 3.1 no entry visits a tenth of the trie (fewer nodes
/// than a fifth of its tokens; a search for "wifi" visited 202,000 of its
/// 275,000 nodes before), and every mask equals the reference (every token
/// in release builds): with a count inside the search, alternatives, a
/// closing quote refused until a match is seen, and escapes and non-ASCII
/// characters along the way.
#[test]
fn searches_in_strings_take_subtrees_whose_states_stay_viable_at_once() {
    let cases: [(&str, &str); 5] = [
        (
            r#"root ::= %json {"type": "object", "properties": {"type": {"type": "string", "pattern": "wifi"}, "mode": {"type": "string", "pattern": "monitor"}}, "required": ["type", "mode"]}"#,
            r#"{"type": "my wifi, or wi-fi: wifi 漢字 \"wifi\"", "mode": "monitor"}"#,
        ),
        (
            r#"root ::= %json {"oneOf": [{"type": "string", "pattern": "99"}, {"type": "string", "pattern": "77"}]}"#,
            r#""the 9 and 99 of it, not 7 ""#,
        ),
        (
            r#"root ::= %json {"type": "string", "pattern": "f-[0-9]+"}"#,
            r#""file f-x f-12 and on é""#,
        ),
        (
            r#"root ::= %json {"type": "string", "pattern": "[a-z]{3}-[0-9]{2}"}"#,
            r#""ab-12 then abc-12 then more""#,
        ),
        (
            r#"root ::= %json {"type": "array", "items": {"type": "string", "pattern": "ok|fine"}}"#,
            r#"["it is ok", "so fine", "not\nok"]"#,
        ),
    ];
    walks_stay_under(&cases, |vocabulary| vocabulary.len() as u64 / 5);
}

/// Checks the masks along each case's text (a grammar and a text it
/// takes) on Llama 3.1 as [`masks_along`] does, and that no step walks
/// `limit` trie nodes or more.
fn walks_stay_under(cases: &[(&str, &str)], limit: impl Fn(&Vocabulary) -> u64) {
    let (vocabulary, model) = first_real_vocabulary();
    let limit = limit(&vocabulary);
    for (source, text) in cases {
        let grammar = runtime_grammar_for(source, Some(&vocabulary));
        masks_along(&vocabulary, &model, grammar, text, |step, stats| {
            let walked = stats.nodes_walked;
            assert!(
                walked < limit,
                "{source}: {text}: step {step}: {walked} trie nodes walked"
            );
        });
    }
}

/// The vocabulary of the first of [`REAL_TOKENIZERS`] (Llama 3.1) and its
/// tokenizer, to tokenize the texts masks are checked along.
fn first_real_vocabulary() -> (Arc<Vocabulary>, tokenizers::Tokenizer) {
    let (json, config) = real_tokenizer(&REAL_TOKENIZERS[0]);
    let vocabulary = Arc::new(Vocabulary::from_tokenizer_json(&json, Some(&config)).unwrap());
    let model = tokenizers::Tokenizer::from_bytes(&json).unwrap();
    (vocabulary, model)
}

/// Feeds `text`, tokenized by `model`, to a matcher of `grammar`, checking
/// every mask against the reference (every token in release builds, 600
/// sampled and the next one in debug builds) and that the next token is
/// allowed, and hands each mask's stats to `each`; the text must be able
/// to end the output.
fn masks_along(
    vocabulary: &Arc<Vocabulary>,
    model: &tokenizers::Tokenizer,
    grammar: Arc<Grammar>,
    text: &str,
    mut each: impl FnMut(usize, MaskStats),
) {
    let all: Vec<TokenId> = (0..vocabulary.len()).map(token).collect();
    let full = !cfg!(debug_assertions);
    let mut rng = Rng::new(text.len() as u64);
    let mut matcher = Matcher::with_vocabulary(grammar, Arc::clone(vocabulary));
    let encoding = model.encode(text, false).unwrap();
    for (step, &id) in encoding.get_ids().iter().enumerate() {
        let next = token(id as usize);
        let sample = if full {
            all.clone()
        } else {
            let mut ids: Vec<TokenId> = (0..600).map(|_| token(rng.below(all.len()))).collect();
            ids.push(next);
            ids
        };
        let allowed = check_mask(&mut matcher, &sample)
            .unwrap_or_else(|error| panic!("{text}: step {step}: {error}"));
        assert!(allowed.contains(&next), "{text}: step {step}");
        each(step, matcher.last_mask_stats());
        matcher.accept_token(next).unwrap();
    }
    assert!(matcher.can_terminate(), "{text}");
}

/// A token that starts with white space where a value may follow (` the`,
/// ` {"`) is uncertain in the entry of the white space's rule: its rest
/// after the space is for what follows the rule. Most such rests die at
/// their first byte — a value starts with one of a few bytes — and are
/// refused by it alone, each first byte checked once per rule, instead of
/// each rest walked through the rule's context: on Llama 3.1, where over
/// 40,000 tokens start with a space, no mask along an array of values
/// walks 10,000 rests (the first walked 61,000 before; 4,400 now, those
/// starting with `t`, `f`, a digit, a quote…). The masks equal the
/// reference (every token in release builds, 600 sampled and the next one
/// in debug builds).
#[test]
fn rests_after_white_space_are_refused_by_their_first_byte() {
    let source = r#"root ::= %json {"type": "array", "items": {"type": ["integer", "boolean", "string", "object"]}}"#;
    let text = r#"[1, true, "a b", {"k": [2, false]},  3 ]"#;
    let (vocabulary, model) = first_real_vocabulary();
    let spaced = (0..vocabulary.len())
        .filter(|&id| vocabulary.bytes(token(id)).first() == Some(&b' '))
        .count();
    assert!(spaced > 40_000, "{spaced} tokens start with a space");
    let grammar = runtime_grammar_for(source, Some(&vocabulary));
    masks_along(&vocabulary, &model, grammar, text, |step, stats| {
        let rests = stats.context_rests;
        assert!(rests < 10_000, "step {step}: {rests} rests walked");
    });
}

/// Where a value may be followed by white space that a rule may end after,
/// every token that begins with white space (58,000 on Llama 3.1) is
/// uncertain in the white space's entry: an object whose every member's
/// tail is a rule led by optional white space (`from_i ::= (ws "," ws
/// member_i)? from_i+1`, as the JSON Schema front end wrote objects before
/// it wrote the white space after a member once). In an object of 300
/// members its context (600 places) is built
/// and refuses most rests at their first byte once for the grammar: masks
/// leave fewer than 10,000 tokens uncertain. In one of 2,500 members the
/// context is too large: the rests are checked from the parse state once
/// the white space has matched, and there too most die at their first
/// byte (only `,` or `}` may follow a member's value), checked once each:
/// no mask walks 10,000 rests (one walked the rests of all 58,000 before).
/// The masks equal the reference (every token in release builds, 600
/// sampled and the next one in debug builds).
#[test]
fn rests_after_white_space_die_at_their_first_byte() {
    let (vocabulary, model) = first_real_vocabulary();
    let object = |members: usize| {
        let member = |i: usize| {
            let kind = if i.is_multiple_of(2) { "int" } else { "bool" };
            format!(r#""\"p{i}\"" ws ":" ws {kind}"#)
        };
        let mut source = String::from(concat!(
            "root ::= \"{\" ws (first ws | ()) \"}\"\n",
            "ws ::= [ \\t\\n\\r]{0,32}\n",
            "int ::= \"-\"? [0-9]+\n",
            "bool ::= \"true\" | \"false\"\n",
        ));
        let first: Vec<String> = (0..members)
            .map(|i| format!("{} from_{}", member(i), i + 1))
            .collect();
        writeln!(source, "first ::= {}", first.join(" | ")).expect("a String");
        for i in 1..members {
            let next = i + 1;
            writeln!(
                source,
                r#"from_{i} ::= (ws "," ws {})? from_{next}"#,
                member(i)
            )
            .expect("a String");
        }
        writeln!(source, "from_{members} ::= ()").expect("a String");
        runtime_grammar_for(&source, Some(&vocabulary))
    };
    let text = r#"{"p0": 12, "p1": true,  "p2":7 , "p3": false }"#;
    let mut most = 0;
    masks_along(&vocabulary, &model, object(300), text, |step, stats| {
        assert!(
            stats.uncertain < 10_000,
            "300 members, step {step}: {stats:?}"
        );
        most = most.max(stats.uncertain);
    });
    let text = r#"{"p0": 12 }"#;
    masks_along(&vocabulary, &model, object(2_500), text, |step, stats| {
        let rests = stats.state_rests;
        assert!(rests < 10_000, "2,500 members, step {step}: {stats:?}");
        most = most.max(stats.uncertain);
    });
    // The case the test is about happened: white space left tens of
    // thousands of tokens uncertain for the full state.
    assert!(most > 40_000, "at most {most} uncertain tokens");
}

/// In a grammar built on first use, white space before a value is called
/// from every object's rule: with 300 object-valued properties, too many
/// are pending to build them for the rule's context. What can follow it is
/// then read from the whole grammar (`RuleBuilder::follow_bytes`: a value,
/// a comma, a colon or a bracket), so the tokens that go on with a letter
/// after the space are refused by that byte: no mask leaves 10,000 tokens
/// uncertain (58,000 were, at every value, before). The masks equal the
/// reference (every token in release builds, 600 sampled and the next one
/// in debug builds).
#[test]
fn white_space_in_a_lazy_grammar_is_followed_by_what_the_grammar_allows() {
    let (vocabulary, model) = first_real_vocabulary();
    let properties: serde_json::Map<String, serde_json::Value> = (0..300)
        .map(|i| {
            let inner = serde_json::json!({
                "type": "object",
                "properties": {"a": {"type": "integer"}, format!("b{i}"): {"type": "boolean"}}
            });
            (format!("p{i}"), inner)
        })
        .collect();
    let schema = serde_json::json!({"type": "object", "properties": properties});
    let options = xg_compiler::json_schema::Options::default();
    let grammar = schema_grammar(&schema, &options, &xg_compiler::CompileCache::default()).unwrap();
    let text = r#"{"p0": {"a": 12, "b0": true}, "p1":{ "a" :3 } ,"p7": {} }"#;
    masks_along(&vocabulary, &model, grammar, text, |step, stats| {
        assert!(stats.uncertain < 10_000, "step {step}: {stats:?}");
    });
}

/// Strings that must hold a word somewhere (`pattern` without anchors),
/// alone and as `oneOf` branches, and a URL pattern: inside them most
/// letters lead to different parse states, which walks take node by node.
/// Along each instance on Llama 3.1 the mask equals the reference on
/// every id at every 4th step and on 2,000 random ids at the others (on
/// 600 random ids at every step in debug builds).
#[test]
fn masks_are_exact_inside_strings_that_must_hold_a_word() {
    let cases = [
        (
            json!({"type": "array", "items": {"type": "string", "oneOf": [
                {"pattern": "customer"}, {"pattern": "maker"}, {"pattern": "admin"}]}}),
            json!(["customer", "a maker of things", "the café admin ü 日本"]),
        ),
        (
            json!({"type": "object", "properties": {
                "type": {"type": "string", "pattern": "wifi"},
                "name": {"type": "string", "pattern": "[a-z][a-z0-9]*"}},
                "required": ["type", "name"]}),
            json!({"type": "my wifi ünïcode", "name": "wlan0"}),
        ),
        (
            json!({"type": "string",
                   "pattern": "(https?://([-\\w\\.]+)+(:\\d+)?(/([\\w/_\\.]*(\\?\\S+)?)?)?)"}),
            json!("see https://www.example.com/path/to/resource?query=parameter"),
        ),
    ];
    let vocabulary = common::llama_vocabulary();
    let (json, _) = real_tokenizer(&REAL_TOKENIZERS[0]);
    let model = tokenizers::Tokenizer::from_bytes(&json).unwrap();
    let all: Vec<TokenId> = (0..vocabulary.len()).map(token).collect();
    let full = !cfg!(debug_assertions);
    let mut rng = Rng::new(11);
    let cache = xg_compiler::CompileCache::default();
    for (schema, instance) in &cases {
        let grammar = schema_grammar(schema, &maskbench_options(), &cache).unwrap();
        let text = compact(instance);
        let encoding = model.encode(text.as_str(), false).unwrap();
        let mut matcher = Matcher::with_vocabulary(grammar, Arc::clone(&vocabulary));
        for (step, &id) in encoding.get_ids().iter().enumerate() {
            let next = token(id as usize);
            let ids = if full && step % 4 == 0 {
                all.clone()
            } else {
                let mut ids: Vec<TokenId> = (0..if full { 2000 } else { 600 })
                    .map(|_| token(rng.below(all.len())))
                    .collect();
                ids.push(next);
                ids
            };
            let allowed = check_mask(&mut matcher, &ids)
                .unwrap_or_else(|error| panic!("{schema} at step {step}: {error}"));
            assert!(allowed.contains(&next), "{schema}: step {step}");
            matcher.accept_token(next).unwrap();
        }
        assert!(matcher.can_terminate(), "{schema}");
    }
}

/// Inside a JSON string every plain character leads back to the same
/// configuration, so what it does with a token depends only on the
/// token's tail — its bytes from the first quote, backslash, control byte
/// or broken character — and a walk sorts Llama 3.1's 2,600 distinct
/// tails once per such configuration instead of visiting the 7,400 trie
/// nodes above those tokens. Along string values (escapes, non-ASCII
/// text, quotes inside) and free property names, every mask equals the
/// reference (every token in release builds, 600 sampled and the next one
/// in debug builds) and no step walks 4,000 trie nodes (7,400 to 8,200
/// before at each string's first character).
#[test]
fn tokens_inside_strings_are_sorted_by_their_tails() {
    let cases: [(&str, &str); 3] = [
        (
            r#"root ::= %json {"type": "object", "properties": {"note": {"type": "string"}, "n": {"type": "integer"}}, "required": ["note", "n"]}"#,
            r#"{"note": "a \"quoted\" word,\ta tab \\ é漢字 \u00e9 and more", "n": 7}"#,
        ),
        (
            r#"root ::= %json {"type": "object", "additionalProperties": {"type": "integer"}}"#,
            r#"{"alpha": 1, "a \"b\"": 2, "naïve": 3}"#,
        ),
        (
            r#"root ::= %json {"type": "array", "items": {"type": "string"}}"#,
            r#"["x", "line\nbreak", "", "\"\""]"#,
        ),
    ];
    walks_stay_under(&cases, |_| 4_000);
}

/// A walk's configurations hold the count of a repetition only as far as
/// a token can tell it apart (how many matches it still needs and has room
/// for, each up to the longest token's length and two), so inside a string
/// far from its bounds every plain character leads back to the same
/// configuration and tokens are sorted by their tails as in an unbounded
/// one. Along strings that start far from their bounds and run up to
/// them (`maxLength` 1024 and 150, `minLength` 140), every mask equals the
/// reference (every token in release builds, 600 sampled and the next one
/// in debug builds); in the long string no step walks 4,000 trie nodes
/// (7,700 before, at its first character).
#[test]
fn counts_far_from_their_bounds_share_configurations() {
    let long = "a \\\"quoted\\\" word, é漢字 ".repeat(8);
    let cases = [(
        r#"root ::= %json {"type": "string", "maxLength": 1024}"#.to_owned(),
        format!("\"{long}\""),
    )];
    let cases: Vec<(&str, &str)> = cases
        .iter()
        .map(|(g, t)| (g.as_str(), t.as_str()))
        .collect();
    walks_stay_under(&cases, |_| 4_000);
    // Near the bounds the counts are told apart again.
    let (vocabulary, model) = first_real_vocabulary();
    let up_to = format!("\"{}\"", "word, \\\"é\\\" ".repeat(15));
    let bounded = [
        (
            r#"root ::= %json {"type": "string", "maxLength": 150}"#,
            &up_to,
        ),
        (
            r#"root ::= %json {"type": "string", "minLength": 140}"#,
            &up_to,
        ),
    ];
    for (source, text) in bounded {
        let grammar = runtime_grammar_for(source, Some(&vocabulary));
        masks_along(&vocabulary, &model, grammar, text, |_, _| {});
    }
}

/// Inside a `maxLength` of 100, each entry after the string's first takes
/// the verdicts of the entry of the step before for the tokens too short
/// to reach the bound, whatever token that step took: words of eight
/// characters and more moved the count past the three counts named before,
/// and the next entry walked 7,800 trie nodes where it now walks under
/// 4,000. Every mask equals the reference.
#[test]
fn a_count_moved_on_by_a_long_word_takes_the_entry_of_the_step_before() {
    let (vocabulary, model) = first_real_vocabulary();
    let source = r#"root ::= %json {"type": "string", "maxLength": 100}"#;
    let text = "\"Example of a bibliographic record: extraordinarily comprehensive documentation\"";
    let grammar = runtime_grammar_for(source, Some(&vocabulary));
    let mut walked = Vec::new();
    masks_along(&vocabulary, &model, grammar, text, |_, stats| {
        walked.push(stats.nodes_walked);
    });
    assert!(
        walked[2..].iter().all(|&nodes| nodes < 4_000),
        "trie nodes walked per step: {walked:?}"
    );
}

/// Inside a counted class with the space (`[A-Za-z0-9 &'()*,\-./@£]{4,32}`),
/// the tokens that begin with class bytes are sorted by where their run of
/// them stops: from each configuration of the count the stops are stepped
/// once and the tails after those taken sorted, and the steps along the
/// count meet those configurations again. On Llama 3.1 only the first step
/// inside the string walks 1,000 trie nodes or more (the walk of the trie
/// above those tokens took 3,400 to 15,400 at each step). Every mask
/// equals the reference (every token in release builds, 600 sampled and
/// the next one in debug builds) along that string up to two characters
/// before its bound (30 characters, `£` among them) and along strings where the byte that stops
/// a run is taken only past a count (`getValue` under
/// `[a-z]{3,8}[A-Z][a-z]{0,8}`) or leads to the next count (a UUID), each
/// followed by more of the object.
#[test]
fn tokens_of_a_counted_class_are_sorted_by_where_their_run_stops() {
    let (vocabulary, model) = first_real_vocabulary();
    let name = r#"root ::= %json {"type": "object", "properties": {
        "name": {"type": "string", "pattern": "^[A-Za-z0-9 &'()*,\\-./@£]{4,32}$"},
        "kind": {"enum": ["joint", "single"]}
    }, "required": ["name", "kind"], "additionalProperties": false}"#;
    let text = r#"{"name":"My Savings (Joint) Account £12","kind":"joint"}"#;
    let grammar = runtime_grammar_for(name, Some(&vocabulary));
    let mut walked = Vec::new();
    masks_along(&vocabulary, &model, grammar, text, |_, stats| {
        walked.push(stats.nodes_walked);
    });
    assert_eq!(
        walked.iter().filter(|&&nodes| nodes >= 1_000).count(),
        1,
        "trie nodes walked per step: {walked:?}"
    );
    let codes = r#"root ::= %json {"type": "object", "properties": {
        "code": {"type": "string", "pattern": "^[a-z]{3,8}[A-Z][a-z]{0,8}$"},
        "id": {"type": "string", "pattern": "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"}
    }, "required": ["code", "id"], "additionalProperties": false}"#;
    let grammar = runtime_grammar_for(codes, Some(&vocabulary));
    let text = r#"{"code":"getValue","id":"123e4567-e89b-12d3-a456-426614174000"}"#;
    masks_along(&vocabulary, &model, grammar, text, |_, _| {});
}

/// A match of a counted word (`(\S+\s+){0,99}`) takes at least two bytes,
/// so a token of Llama 3.1's longest 128 bytes ends at most 65 of them:
/// counts 66 or more below the bound are told apart no further, and the
/// words of a sentence share their entries: along a 13-word sentence no
/// mask from the fifth on builds one (every word built one before, each
/// a walk of 60,000 trie nodes). Along the same sentence under a bound of
/// 13 words, where every count is its own entry, and under the far bound,
/// every mask equals the reference (every token in release builds, 600
/// sampled and the next one in debug builds).
#[test]
fn words_far_from_their_bound_share_entries() {
    let (vocabulary, model) = first_real_vocabulary();
    let text = "\"What is the meaning of life, the universe and everything, asked the man.\"";
    let far = r#"root ::= %json {"type": "string", "pattern": "^(?:\\S+\\s+){0,99}\\S+$"}"#;
    let grammar = runtime_grammar_for(far, Some(&vocabulary));
    let mut built = Vec::new();
    masks_along(&vocabulary, &model, grammar, text, |_, stats| {
        built.push(stats.built);
    });
    assert!(
        built[4..].iter().all(|&n| n == 0),
        "entries built per step: {built:?}"
    );
    let near = r#"root ::= %json {"type": "string", "pattern": "^(?:\\S+\\s+){0,12}\\S+$"}"#;
    let grammar = runtime_grammar_for(near, Some(&vocabulary));
    masks_along(&vocabulary, &model, grammar, text, |_, _| {});
}
