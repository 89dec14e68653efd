//! Vocabularies from real `tokenizer.json` files: kinds, sizes, stop tokens,
//! and every token's bytes checked against the `tokenizers` crate's decoder.

mod common;

use common::{REAL_TOKENIZERS, real_tokenizer};
use xg_runtime::{TokenId, TokenKind, TokenizerKind, Vocabulary};

fn token(id: usize) -> TokenId {
    TokenId::new(id).unwrap()
}

#[test]
fn real_vocabularies_load_with_their_kind_size_and_stop_token() {
    let expected = [
        ("llama-3.1", TokenizerKind::ByteLevel, 128_256, 128_009),
        ("qwen3", TokenizerKind::ByteLevel, 151_669, 151_645),
        ("gpt-oss", TokenizerKind::ByteLevel, 200_019, 200_002),
        ("llama-2", TokenizerKind::SentencePiece, 32_000, 2),
    ];
    for (tokenizer, (name, kind, size, eos)) in REAL_TOKENIZERS.iter().zip(expected) {
        assert_eq!(tokenizer.name, name);
        let (json, config) = real_tokenizer(tokenizer);
        let vocab = Vocabulary::from_tokenizer_json(&json, Some(&config)).unwrap();
        assert_eq!(vocab.tokenizer_kind(), kind, "{name}");
        assert_eq!(vocab.len(), size, "{name}");
        assert_eq!(vocab.stop_tokens(), &[token(eos)], "{name}");
        assert_eq!(vocab.kind_of(token(eos)), TokenKind::Special, "{name}");
        assert!(vocab.bytes(token(eos)).is_empty());
        // Every byte has a token of its own (byte-level alphabet, or
        // SentencePiece byte fallback).
        let mut single = [false; 256];
        for id in 0..vocab.len() {
            if let [byte] = vocab.bytes(token(id)) {
                single[usize::from(*byte)] = true;
            }
        }
        assert!(single.iter().all(|&b| b), "{name}: a byte has no token");
        // The fingerprint is stable for the same input and differs by stop set.
        let again = Vocabulary::from_tokenizer_json(&json, Some(&config)).unwrap();
        assert_eq!(vocab.fingerprint(), again.fingerprint());
        let more = again.with_stop_tokens(&[token(0)]).unwrap();
        assert_ne!(vocab.fingerprint(), more.fingerprint());
        // A model with more rows than the tokenizer: the padding is absent.
        let padded = vocab.clone().with_model_size(size + 64).unwrap();
        assert_eq!(padded.kind_of(token(size + 3)), TokenKind::Absent);
        assert_ne!(padded.fingerprint(), vocab.fingerprint());
        assert!(vocab.clone().with_model_size(size - 1).is_err());
        // Tokens by text: the stop token by its name, a text token by its
        // bytes (the lowest id), nothing for a text no token has.
        let eos_name =
            serde_json::from_slice::<serde_json::Value>(&config).unwrap()["eos_token"].clone();
        let eos_name = eos_name
            .as_str()
            .or_else(|| eos_name["content"].as_str())
            .unwrap()
            .to_owned();
        assert_eq!(vocab.token_by_text(&eos_name), Some(token(eos)), "{name}");
        let a = vocab.token_by_text("a").expect("a token for `a`");
        assert_eq!(vocab.bytes(a), b"a");
        assert!((0..a.as_usize()).all(|id| vocab.bytes(token(id)) != b"a"));
        assert_eq!(vocab.token_by_text("no token is this text, surely"), None);
    }
}

#[test]
fn token_bytes_agree_with_the_tokenizers_decoder() {
    for tokenizer in REAL_TOKENIZERS {
        let (json, config) = real_tokenizer(tokenizer);
        let vocab = Vocabulary::from_tokenizer_json(&json, Some(&config)).unwrap();
        let reference = tokenizers::Tokenizer::from_bytes(&json).expect("tokenizers loads it");
        let mut compared = 0;
        for id in 0..vocab.len() {
            if vocab.kind_of(token(id)) != TokenKind::Text {
                continue;
            }
            let ours = vocab.bytes(token(id));
            let Ok(text) = std::str::from_utf8(ours) else {
                continue; // part of a character: the decoder cannot show it alone
            };
            // The decoder of a lone token strips SentencePiece's leading
            // space; compare between two copies of a neutral token instead.
            let id = u32::try_from(id).unwrap();
            let decoded = reference.decode(&[id], false).expect("decodes");
            let matches = decoded == text
                || (tokenizer.name == "llama-2"
                    && text.strip_prefix(' ') == Some(decoded.as_str()));
            assert!(
                matches,
                "{}: token {id}: ours {text:?}, theirs {decoded:?}",
                tokenizer.name
            );
            compared += 1;
        }
        assert!(
            compared > vocab.len() / 2,
            "{}: only {compared} compared",
            tokenizer.name
        );
    }
}

#[test]
fn piece_lists_decode_as_their_tokenizer_json_does() {
    // The pieces of each real tokenizer in id order (the form XGrammar's
    // TokenizerInfo takes), decoded by kind, give every token's bytes.
    for tokenizer in REAL_TOKENIZERS {
        let (json, config) = real_tokenizer(tokenizer);
        let vocab = Vocabulary::from_tokenizer_json(&json, Some(&config)).unwrap();
        let parsed: serde_json::Value = serde_json::from_slice(&json).unwrap();
        let mut pieces = vec![String::new(); vocab.len()];
        let mut special = Vec::new();
        for (piece, id) in parsed["model"]["vocab"].as_object().unwrap() {
            pieces[usize::try_from(id.as_u64().unwrap()).unwrap()].clone_from(piece);
        }
        for added in parsed["added_tokens"].as_array().unwrap() {
            let id = usize::try_from(added["id"].as_u64().unwrap()).unwrap();
            pieces[id] = added["content"].as_str().unwrap().to_owned();
            if added["special"].as_bool() == Some(true) {
                special.push(token(id));
            }
        }
        let from_pieces =
            Vocabulary::from_pieces(&pieces, vocab.tokenizer_kind(), &special).unwrap();
        assert_eq!(from_pieces.len(), vocab.len(), "{}", tokenizer.name);
        for id in (0..vocab.len()).map(token) {
            assert_eq!(
                from_pieces.kind_of(id),
                vocab.kind_of(id),
                "{} {id}",
                tokenizer.name
            );
            // Added text tokens are plain text in a tokenizer.json; a
            // piece list cannot tell them from the model's pieces.
            if vocab.kind_of(id) == TokenKind::Text
                && !parsed["added_tokens"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|a| a["id"].as_u64() == Some(id.as_usize() as u64))
            {
                assert_eq!(
                    from_pieces.bytes(id),
                    vocab.bytes(id),
                    "{} {id}",
                    tokenizer.name
                );
            }
        }
        assert!(from_pieces.stop_tokens().is_empty());
        let stop = vocab.stop_tokens()[0];
        let replaced = vocab.clone().with_stop_tokens_only(&[token(7)]).unwrap();
        assert_eq!(replaced.stop_tokens(), &[token(7)]);
        assert!(!replaced.is_stop(stop));
    }
}

#[test]
fn byte_string_vocabularies_and_errors() {
    let vocab = Vocabulary::from_byte_strings(&["a", "bc", "", "<eos>"], &[token(3)])
        .unwrap()
        .with_stop_tokens(&[token(3)])
        .unwrap();
    assert_eq!(vocab.len(), 4);
    assert_eq!(vocab.bytes(token(1)), b"bc");
    assert_eq!(vocab.kind_of(token(3)), TokenKind::Special);
    assert!(vocab.is_stop(token(3)));
    assert_eq!(vocab.kind_of(token(9)), TokenKind::Absent);
    assert!(Vocabulary::from_byte_strings(&["a"], &[token(5)]).is_err());
    assert!(vocab.clone().with_stop_tokens(&[token(7)]).is_err());
    for bad in [
        &b"not json"[..],
        b"{}",
        b"{\"model\": {}}",
        b"{\"model\": {\"vocab\": {\"a\": -1}}}",
    ] {
        let error = Vocabulary::from_tokenizer_json(bad, None).unwrap_err();
        assert!(
            error.to_string().starts_with("invalid vocabulary"),
            "{error}"
        );
    }
    let config = br#"{"eos_token": "<missing>"}"#;
    let json = br#"{"model": {"type": "BPE", "vocab": {"a": 0}}}"#;
    assert!(Vocabulary::from_tokenizer_json(json, Some(config)).is_err());
    assert_eq!(
        Vocabulary::from_tokenizer_json(json, None)
            .unwrap()
            .tokenizer_kind(),
        TokenizerKind::Raw
    );
}

/// Hostile tokenizer files (issue 40): an id near `u32::MAX` is an error
/// naming it (not a 128 GB allocation), an id given to two tokens is an
/// error, and an empty token is never allowed.
#[test]
fn tokenizer_files_with_bad_ids_or_empty_tokens() {
    let far = format!(
        r#"{{"model": {{"type": "BPE", "vocab": {{"a": 0, "b": {}}}}}}}"#,
        u32::MAX - 1
    );
    let error = Vocabulary::from_tokenizer_json(far.as_bytes(), None).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("token id 4294967294 is far beyond"),
        "{error}"
    );
    let added_far = format!(
        r#"{{"model": {{"type": "BPE", "vocab": {{"a": 0}}}}, "added_tokens": [{{"id": {}, "content": "<x>", "special": true}}]}}"#,
        u32::MAX - 2
    );
    let error = Vocabulary::from_tokenizer_json(added_far.as_bytes(), None).unwrap_err();
    assert!(error.to_string().contains("far beyond"), "{error}");

    let twice = br#"{"model": {"type": "BPE", "vocab": {"a": 0, "b": 0}}}"#;
    let error = Vocabulary::from_tokenizer_json(twice, None).unwrap_err();
    assert!(
        error.to_string().contains("token id 0 is given twice"),
        "{error}"
    );
    let added_over = br#"{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}},
        "added_tokens": [{"id": 1, "content": "<eos>", "special": true}]}"#;
    let error = Vocabulary::from_tokenizer_json(added_over, None).unwrap_err();
    assert!(
        error.to_string().contains("token id 1 is given twice"),
        "{error}"
    );
    // Restating a token of the vocabulary as an added token (Llama 2's
    // `<s>`) is fine.
    let restated = br#"{"model": {"type": "BPE", "vocab": {"a": 0, "<s>": 1}},
        "added_tokens": [{"id": 1, "content": "<s>", "special": true}]}"#;
    let vocab = Vocabulary::from_tokenizer_json(restated, None).unwrap();
    assert_eq!(vocab.kind_of(token(1)), TokenKind::Special);

    // An empty token is absent: never in a mask, never accepted.
    let empty = br#"{"model": {"type": "BPE", "vocab": {"a": 0, "": 1}}}"#;
    let vocab = std::sync::Arc::new(Vocabulary::from_tokenizer_json(empty, None).unwrap());
    assert_eq!(vocab.kind_of(token(1)), TokenKind::Absent);
    let grammar = common::runtime_grammar("root ::= \"a\"*");
    let mut matcher = xg_runtime::Matcher::with_vocabulary(grammar, std::sync::Arc::clone(&vocab));
    let mut mask = vec![0u32; vocab.mask_words()];
    matcher.fill_next_token_bitmask(&mut mask).unwrap();
    assert_eq!(mask[0] & 0b11, 0b01);
    assert!(matcher.accept_token(token(1)).is_err());
}
