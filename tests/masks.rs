//! Token masks are exact: after every step of random walks, the mask equals
//! the slow reference — each token checked by forking the matcher and
//! accepting it — on small vocabularies and on real tokenizers.

mod common;

use std::sync::Arc;

use common::{CORPUS, REAL_TOKENIZERS, Rng, library, real_tokenizer, runtime_grammar};
use proptest::prelude::*;
use xg_runtime::{Grammar, Matcher, TokenId, Vocabulary};

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
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Every token, every step, on the corpus and the library.
    #[test]
    fn masks_are_exact_on_a_small_vocabulary(index in 0..CORPUS.len() + 3, seed in any::<u64>()) {
        let source = CORPUS.get(index).map_or_else(|| library()[index - CORPUS.len()].clone(), |s| (*s).to_owned());
        let grammar = runtime_grammar(&source);
        let vocabulary = small_vocabulary();
        let all: Vec<TokenId> = (0..vocabulary.len()).map(token).collect();
        walk(&grammar, &vocabulary, |_| all.clone(), &mut Rng::new(seed), 12)?;
    }
}

/// Real vocabularies: a sample of ids per step in debug builds, all of them
/// in release.
#[test]
fn masks_are_exact_on_real_vocabularies() {
    let grammars: Vec<String> = library()
        .into_iter()
        .chain(CORPUS.iter().take(3).map(|s| (*s).to_owned()))
        .collect();
    let full = !cfg!(debug_assertions);
    for tokenizer in REAL_TOKENIZERS {
        let (json, config) = real_tokenizer(tokenizer);
        let vocabulary = Arc::new(Vocabulary::from_tokenizer_json(&json, Some(&config)).unwrap());
        let size = vocabulary.len();
        for (k, source) in grammars.iter().enumerate() {
            let grammar = runtime_grammar(source);
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
                10,
            );
            if let Err(error) = result {
                panic!("{} on grammar {k}: {error}", tokenizer.name);
            }
        }
    }
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
