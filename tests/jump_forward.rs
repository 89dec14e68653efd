//! Jump-forward in tokens ([`Matcher::forced_tokens`]) against the real
//! tokenizers: at every step of a MaskBench instance written token by token
//! as the tokenizer writes it, the forced tokens are the tokenizer's own
//! tokens of the whole instance at that place.

mod common;

use std::sync::Arc;

use common::{REAL_TOKENIZERS, compact, maskbench, real_tokenizer, schema_grammar};
use xg_compiler::json_schema::{Options, PropertyOrder, Whitespace};
use xg_runtime::{Matcher, TokenId, Vocabulary};

fn ids(encoding: &tokenizers::Encoding) -> Vec<TokenId> {
    encoding
        .get_ids()
        .iter()
        .map(|&id| TokenId::new(id as usize).expect("a token id"))
        .collect()
}

/// Every 10th file of the vendored MaskBench sample (properties in the
/// schema's order, so keys are forced), its first valid instance that
/// follows that order, token by token on Llama 3.1, Qwen3 and gpt-oss
/// (byte-level BPE: a fragment tokenizes as it does inside a text). At each
/// step the forced tokens, after their rollback, must be the instance's own
/// next tokens; and there must be hundreds of such steps.
#[test]
fn forced_tokens_are_the_tokenizers_own_on_real_vocabularies() {
    let options = Options {
        whitespace: Whitespace::Compact,
        property_order: PropertyOrder::Given,
        ..Options::default()
    };
    let files = maskbench();
    for tokenizer_files in &REAL_TOKENIZERS[..3] {
        let (json, config) = real_tokenizer(tokenizer_files);
        let vocabulary = Arc::new(Vocabulary::from_tokenizer_json(&json, Some(&config)).unwrap());
        let tokenizer = tokenizers::Tokenizer::from_bytes(&json).unwrap();
        let tokenize = |text: &str| ids(&tokenizer.encode(text, false).expect("encodes"));
        let cache = xg_compiler::CompileCache::default();
        let (mut jumps, mut taken_back, mut forced_tokens) = (0, 0, 0);
        for (name, doc) in files.iter().step_by(10) {
            let Ok(grammar) = schema_grammar(&doc["schema"], &options, &cache) else {
                continue;
            };
            let instance = doc["tests"].as_array().unwrap().iter().find_map(|test| {
                let text = compact(&test["data"]);
                let mut matcher = Matcher::new(Arc::clone(&grammar));
                (test["valid"] == true && matcher.accept_str(&text).is_ok()).then_some(text)
            });
            let Some(text) = instance else { continue };
            let tokens = tokenize(&text);
            let mut matcher =
                Matcher::with_vocabulary(Arc::clone(&grammar), Arc::clone(&vocabulary));
            for (at, &token) in tokens.iter().enumerate() {
                let jump = matcher.forced_tokens(tokenize);
                if !jump.tokens.is_empty() {
                    jumps += 1;
                    taken_back += jump.rollback;
                    forced_tokens += jump.tokens.len();
                    assert!(
                        jump.rollback <= at.min(xg_runtime::CONTEXT_TOKENS),
                        "{name}: rollback too far"
                    );
                    let from = at - jump.rollback;
                    let expected = &tokens[from..(from + jump.tokens.len()).min(tokens.len())];
                    assert_eq!(
                        jump.tokens,
                        expected,
                        "{} {name} at token {at} of {text:?}: forced {:?}",
                        tokenizer_files.name,
                        String::from_utf8_lossy(&matcher.forced_bytes()),
                    );
                }
                matcher.accept_token(token).unwrap();
            }
        }
        eprintln!(
            "{}: {jumps} jumps, {forced_tokens} forced tokens, {taken_back} taken back",
            tokenizer_files.name
        );
        assert!(
            jumps > 100,
            "{}: too few jumps to tell",
            tokenizer_files.name
        );
    }
}

/// A model that starts a word the grammar then forces (`"a` of
/// `"application/json"`) wrote tokens the tokenizer would not have: the
/// jump takes them back, and the output after it is the tokenizer's own
/// tokens of the whole text so far, on each byte-level BPE tokenizer.
#[test]
fn forced_tokens_take_back_a_word_the_model_began() {
    let grammar = common::runtime_grammar(
        r#"root ::= "{\"type\":\"" ("application/json" | "text/plain" | "multipart/form-data") "\"}""#,
    );
    for tokenizer_files in &REAL_TOKENIZERS[..3] {
        let (json, config) = real_tokenizer(tokenizer_files);
        let vocabulary = Arc::new(Vocabulary::from_tokenizer_json(&json, Some(&config)).unwrap());
        let tokenizer = tokenizers::Tokenizer::from_bytes(&json).unwrap();
        let tokenize = |text: &str| ids(&tokenizer.encode(text, false).expect("encodes"));
        let mut taken_back = 0;
        for (began, whole) in [
            (r#"{"type":"a"#, r#"{"type":"application/json"}"#),
            (r#"{"type":"te"#, r#"{"type":"text/plain"}"#),
            (r#"{"type":"multi"#, r#"{"type":"multipart/form-data"}"#),
        ] {
            let mut written = tokenize(began);
            let mut matcher =
                Matcher::with_vocabulary(Arc::clone(&grammar), Arc::clone(&vocabulary));
            matcher.accept_tokens(&written).unwrap();
            let jump = matcher.forced_tokens(tokenize);
            assert!(!jump.tokens.is_empty(), "{}: {began}", tokenizer_files.name);
            taken_back += jump.rollback;
            matcher.rollback(jump.rollback).unwrap();
            matcher.accept_tokens(&jump.tokens).unwrap();
            written.truncate(written.len() - jump.rollback);
            written.extend(&jump.tokens);
            let canonical = tokenize(whole);
            assert_eq!(
                written,
                canonical[..written.len().min(canonical.len())],
                "{}: {began} -> {whole}",
                tokenizer_files.name
            );
        }
        assert!(
            taken_back > 0,
            "{}: no token taken back",
            tokenizer_files.name
        );
    }
}
