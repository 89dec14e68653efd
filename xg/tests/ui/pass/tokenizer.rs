//! Masks precomputed at build time for a tokenizer, used at run time.
use std::io::Read;
use std::sync::Arc;
use xg::{Matcher, StaticGrammar, Vocabulary};

static DIGITS: StaticGrammar = xg::grammar!(
    "root ::= \"[\" [0-9]+ (\", \" [0-9]+)* \"]\"",
    tokenizer = "../../../../data/tokenizers/qwen3/tokenizer.json.gz",
);

fn main() {
    assert!(DIGITS.precomputed_entries() > 0);
    let gzipped = include_bytes!("../../../../data/tokenizers/qwen3/tokenizer.json.gz");
    let config = include_bytes!("../../../../data/tokenizers/qwen3/tokenizer_config.json");
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(&gzipped[..]).read_to_end(&mut json).unwrap();
    let vocabulary = Arc::new(Vocabulary::from_tokenizer_json(&json, Some(config)).unwrap());

    let mut matcher = Matcher::with_vocabulary(DIGITS.grammar(), Arc::clone(&vocabulary));
    let mut mask = vec![0u32; vocabulary.mask_words()];
    for piece in ["[", "1", ",", " ", "2", "]"] {
        matcher.fill_next_token_bitmask(&mut mask).unwrap();
        let id = vocabulary.token_by_text(piece).unwrap();
        assert!(mask[id.as_usize() / 32] & (1 << (id.as_usize() % 32)) != 0);
        matcher.accept_token(id).unwrap();
    }
    let stats = vocabulary.mask_cache().stats();
    assert!(stats.loaded > 0, "{stats:?}");
}
