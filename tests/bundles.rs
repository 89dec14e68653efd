//! Bundles: a grammar written with precomputed masks and opened again gives
//! the same masks as the grammar compiled in memory, at every step of
//! random walks; writing is deterministic; damaged, truncated, foreign and
//! mismatched bundles are refused with a clear error, never a panic, and
//! damage to a mask entry costs a rebuild, never a wrong mask.

mod common;

use std::sync::Arc;

use common::{
    LIBRARY, REAL_TOKENIZERS, Rng, library, real_tokenizer, runtime_grammar, walk_in_lockstep,
};
use xg_runtime::bundle::{self, BundleError, Masks, Precompute};
use xg_runtime::{Grammar, Matcher, TokenId, Vocabulary};

/// Grammars beyond the library: counted repetitions of short rules (keys
/// with parents and counts), tag dispatch free text.
const EXTRA: &[&str] = &[
    r#"root ::= "\"" [a-z0-9 ]{2,40} "\"" | [0-9]{1,5} "." [0-9]{2}"#,
    r#"root ::= "<" name ">" ( [^<]{0,200} ) "</" name ">"
       name ::= [a-z]+"#,
    r#"root ::= dispatch(stop="END") {
           "<a>" => "1" [0-9]* "</a>",
           "<b>" => [a-z]{3} "</b>",
       }"#,
];

fn grammars() -> Vec<(String, String)> {
    LIBRARY
        .iter()
        .map(|name| (*name).to_owned())
        .zip(library())
        .chain(
            EXTRA
                .iter()
                .enumerate()
                .map(|(k, text)| (format!("extra {k}"), (*text).to_owned())),
        )
        .collect()
}

fn small_vocabulary() -> Vocabulary {
    let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    for piece in [
        "ab", "abc", "<a>", "</a>", "{\"", "\":", "\"}", "\", \"", "true", "null", "12", "1.5",
        "</", "ab\"", "a b", "12.", "\"1", "<b>",
    ] {
        tokens.push(piece.as_bytes().to_vec());
    }
    let stop = TokenId::new(tokens.len()).unwrap();
    tokens.push(b"<eos>".to_vec());
    Vocabulary::from_byte_strings(&tokens, &[stop])
        .unwrap()
        .with_stop_tokens(&[stop])
        .unwrap()
}

/// Writes `grammar` with every mask entry precomputed for `vocabulary`,
/// opens it for a second copy of the vocabulary (an empty cache), and
/// walks both; the opened grammar must build no entry itself.
fn round_trip(grammar: &Arc<Grammar>, load: &dyn Fn() -> Vocabulary, seed: u64, what: &str) {
    let vocabulary = Arc::new(load());
    let masks = Masks::precompute(grammar, &vocabulary, Precompute::All);
    let bytes = bundle::write(grammar, Some(&masks)).unwrap();
    let fresh = Arc::new(load());
    let opened = Arc::new(Grammar::from_bundle(bytes, Some(&fresh)).unwrap());
    assert_eq!(opened.tables(), grammar.tables(), "{what}: tables");
    assert_eq!(opened.precomputed_entries(), masks.len());
    for walk in 0..3 {
        let memory = Matcher::with_vocabulary(Arc::clone(grammar), Arc::clone(&vocabulary));
        let bundled = Matcher::with_vocabulary(Arc::clone(&opened), Arc::clone(&fresh));
        walk_in_lockstep(memory, bundled, &mut Rng::new(seed + walk), 30, what);
    }
    let stats = fresh.mask_cache().stats();
    if grammar_uses_cache(grammar) {
        assert!(stats.loaded > 0, "{what}: no entry was loaded");
    }
    assert_eq!(
        stats.misses, 0,
        "{what}: an entry the walk used was not precomputed"
    );
}

/// Whether the grammar's masks go through the mask cache (no lookahead).
fn grammar_uses_cache(grammar: &Arc<Grammar>) -> bool {
    grammar
        .tables()
        .rules
        .iter()
        .all(|r| r.lookahead == u32::MAX)
}

#[test]
fn bundles_round_trip_on_a_small_vocabulary() {
    for (k, (name, text)) in grammars().iter().enumerate() {
        let grammar = runtime_grammar(text);
        round_trip(&grammar, &small_vocabulary, k as u64, name);
    }
}

#[test]
fn bundles_round_trip_on_a_real_vocabulary() {
    let (json, config) = real_tokenizer(&REAL_TOKENIZERS[0]);
    let load = || Vocabulary::from_tokenizer_json(&json, Some(&config)).unwrap();
    for (k, (name, text)) in grammars().iter().enumerate() {
        let grammar = runtime_grammar(text);
        round_trip(&grammar, &load, 100 + k as u64, name);
    }
}

#[test]
fn a_bundle_without_masks_round_trips_its_tables() {
    for (name, text) in grammars() {
        let grammar = runtime_grammar(&text);
        let opened = Grammar::from_bundle(grammar.to_bundle().unwrap(), None).unwrap();
        assert_eq!(opened.tables(), grammar.tables(), "{name}");
        assert_eq!(opened.precomputed_entries(), 0);
        let info = bundle::inspect(&grammar.to_bundle().unwrap()).unwrap();
        assert_eq!(info.vocabulary, None);
        assert_eq!(info.rules, grammar.tables().rules.len());
    }
}

#[test]
fn writing_is_deterministic() {
    let vocabulary = small_vocabulary();
    for (name, text) in grammars() {
        let write = || {
            let grammar = runtime_grammar(&text);
            let masks = Masks::precompute(&grammar, &vocabulary, Precompute::All);
            bundle::write(&grammar, Some(&masks)).unwrap()
        };
        assert!(write() == write(), "{name}");
    }
}

#[test]
fn precompute_policies_pick_the_costliest_entries() {
    let (json, config) = real_tokenizer(&REAL_TOKENIZERS[0]);
    let vocabulary = Vocabulary::from_tokenizer_json(&json, Some(&config)).unwrap();
    let grammar = runtime_grammar(&library()[0]);
    let all = Masks::precompute(&grammar, &vocabulary, Precompute::All);
    let auto = Masks::precompute(&grammar, &vocabulary, Precompute::Auto);
    let three = Masks::precompute(&grammar, &vocabulary, Precompute::Costliest(3));
    let none = Masks::precompute(&grammar, &vocabulary, Precompute::None);
    assert_eq!(all.len(), all.candidates());
    assert!(
        !auto.is_empty() && auto.len() < all.len(),
        "{auto:?} of {all:?}"
    );
    assert_eq!(three.len(), 3);
    assert!(none.is_empty());
    // Every policy gives the same masks.
    let grammar_with = |masks: &Masks| {
        let fresh = Arc::new(Vocabulary::from_tokenizer_json(&json, Some(&config)).unwrap());
        let bytes = bundle::write(&grammar, Some(masks)).unwrap();
        (
            Arc::new(Grammar::from_bundle(bytes, Some(&fresh)).unwrap()),
            fresh,
        )
    };
    let vocabulary = Arc::new(vocabulary);
    for masks in [&auto, &three] {
        let (opened, fresh) = grammar_with(masks);
        let memory = Matcher::with_vocabulary(Arc::clone(&grammar), Arc::clone(&vocabulary));
        let bundled = Matcher::with_vocabulary(opened, fresh);
        walk_in_lockstep(memory, bundled, &mut Rng::new(7), 25, "policy");
    }
}

/// A bundle with masks for the small vocabulary, and the grammar.
fn sample_bundle() -> (Vec<u8>, Arc<Grammar>) {
    let grammar = runtime_grammar(EXTRA[1]);
    let masks = Masks::precompute(&grammar, &small_vocabulary(), Precompute::All);
    (bundle::write(&grammar, Some(&masks)).unwrap(), grammar)
}

/// Where the mask index of `bytes` starts: every byte before it is checked
/// when the bundle is opened.
fn mask_index_offset(bytes: &[u8]) -> usize {
    let info = bundle::inspect(bytes).unwrap();
    let index = info.sections.iter().find(|s| s.name == "mask index");
    usize::try_from(index.unwrap().offset).unwrap()
}

#[test]
fn truncated_bundles_are_refused() {
    let (bytes, _) = sample_bundle();
    for len in 0..bytes.len() {
        match Grammar::from_bundle(bytes[..len].to_vec(), None) {
            Err(BundleError::Truncated { found, .. }) => assert_eq!(found, len as u64),
            Err(BundleError::NotABundle) if len < 8 => {}
            other => panic!("{len} bytes: {other:?}"),
        }
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(matches!(
        Grammar::from_bundle(longer, None),
        Err(BundleError::Malformed(_))
    ));
}

#[test]
fn damage_outside_the_mask_entries_is_refused() {
    let (bytes, _) = sample_bundle();
    let index = mask_index_offset(&bytes);
    for at in 0..index {
        for bit in [0, 3, 7] {
            let mut damaged = bytes.clone();
            damaged[at] ^= 1 << bit;
            let result = Grammar::from_bundle(damaged, None);
            assert!(result.is_err(), "a flip at byte {at} went unnoticed");
        }
    }
}

#[test]
fn damaged_mask_entries_are_rebuilt_not_trusted() {
    let (bytes, grammar) = sample_bundle();
    let vocabulary = Arc::new(small_vocabulary());
    let mut rng = Rng::new(11);
    let index = mask_index_offset(&bytes);
    for trial in 0..60 {
        let mut damaged = bytes.clone();
        let at = index + rng.below(bytes.len() - index);
        damaged[at] ^= 1 << rng.below(8);
        let info = bundle::inspect(&damaged).unwrap();
        assert!(
            info.damaged_entries > 0 || info.sections.iter().any(|s| !s.checksum_ok),
            "trial {trial}: a flip at {at} went unnoticed by inspect"
        );
        let fresh = Arc::new(small_vocabulary());
        let opened = Arc::new(Grammar::from_bundle(damaged, Some(&fresh)).unwrap());
        let memory = Matcher::with_vocabulary(Arc::clone(&grammar), Arc::clone(&vocabulary));
        let bundled = Matcher::with_vocabulary(opened, fresh);
        walk_in_lockstep(memory, bundled, &mut Rng::new(trial), 20, "damaged");
    }
}

#[test]
fn foreign_and_mismatched_bundles_are_refused() {
    let (bytes, _) = sample_bundle();
    let mut magic = bytes.clone();
    magic[0] = b'Y';
    assert!(matches!(
        Grammar::from_bundle(magic, None),
        Err(BundleError::NotABundle)
    ));
    let mut version = bytes.clone();
    version[8] = 99;
    let error = Grammar::from_bundle(version, None).unwrap_err();
    assert!(matches!(
        error,
        BundleError::Version {
            found: 99,
            supported: xg_runtime::bundle::format::VERSION
        }
    ));
    assert!(error.to_string().contains("recompile"), "{error}");
    let other = small_vocabulary().with_model_size(400).unwrap();
    let error = Grammar::from_bundle(bytes.clone(), Some(&other)).unwrap_err();
    assert!(
        matches!(error, BundleError::OtherVocabulary { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("another vocabulary"), "{error}");
    // Without a vocabulary, the tables alone are usable.
    assert!(Grammar::from_bundle(bytes, None).is_ok());
    let missing = Grammar::open("/nonexistent/grammar.xgb", None).unwrap_err();
    assert!(
        missing.to_string().contains("/nonexistent/grammar.xgb"),
        "{missing}"
    );
}

#[test]
fn opening_a_file_maps_it() {
    let (bytes, grammar) = sample_bundle();
    let path = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sample.xgb");
    std::fs::write(&path, &bytes).unwrap();
    let vocabulary = Arc::new(small_vocabulary());
    let opened = Arc::new(Grammar::open(&path, Some(&vocabulary)).unwrap());
    assert_eq!(opened.tables(), grammar.tables());
    let reference = Arc::new(small_vocabulary());
    let memory = Matcher::with_vocabulary(grammar, reference);
    let bundled = Matcher::with_vocabulary(opened, Arc::clone(&vocabulary));
    walk_in_lockstep(memory, bundled, &mut Rng::new(3), 20, "mapped");
    assert!(vocabulary.mask_cache().stats().loaded > 0);
    let empty = path.with_file_name("empty.xgb");
    std::fs::write(&empty, b"").unwrap();
    assert!(matches!(
        Grammar::open(&empty, None),
        Err(BundleError::Truncated { found: 0, .. })
    ));
}

#[test]
fn a_bundles_entries_serve_other_grammars_while_it_is_open() {
    let vocabulary = Arc::new(small_vocabulary());
    // `word` refers to itself, so it stays a rule of its own.
    let source = runtime_grammar("root ::= \"[\" word \"]\"\nword ::= [a-z ]+ (\"-\" word)?");
    let masks = Masks::precompute(&source, &vocabulary, Precompute::All);
    let bytes = bundle::write(&source, Some(&masks)).unwrap();
    let fresh = Arc::new(small_vocabulary());
    let opened = Grammar::from_bundle(bytes, Some(&fresh)).unwrap();
    // Another grammar with the same `word` rule, compiled at request time.
    let other = runtime_grammar("root ::= \"{\" word \"}\"\nword ::= [a-z ]+ (\"-\" word)?");
    let mut matcher = Matcher::with_vocabulary(Arc::clone(&other), Arc::clone(&fresh));
    matcher.accept_str("{ab").unwrap();
    let mut mask = vec![0; fresh.mask_words()];
    matcher.fill_next_token_bitmask(&mut mask).unwrap();
    assert!(fresh.mask_cache().stats().loaded > 0);
    // Once the bundle's grammar is gone, its entries are too.
    drop(opened);
    fresh.mask_cache().clear();
    let before = fresh.mask_cache().stats();
    let mut matcher = Matcher::with_vocabulary(other, Arc::clone(&fresh));
    matcher.accept_str("{ab").unwrap();
    matcher.fill_next_token_bitmask(&mut mask).unwrap();
    let after = fresh.mask_cache().stats();
    assert_eq!(after.loaded, before.loaded);
    assert!(after.misses > before.misses);
}
