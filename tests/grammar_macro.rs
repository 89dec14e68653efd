//! `grammar!` builds the grammar the compiler builds at run time from the
//! same text: equal tables and, on a real vocabulary, equal masks at every
//! step of random walks; the masks it precomputes for a tokenizer at build
//! time are the ones a run-time build makes.

mod common;

use std::io::Read;
use std::sync::Arc;

use common::{REAL_TOKENIZERS, Rng, real_tokenizer, runtime_grammar, walk_in_lockstep};
use xg::{Matcher, StaticGrammar, Vocabulary};

static TOOL_CALLING: StaticGrammar = xg::grammar!(file = "../grammars/examples/tool_calling.xg");
static ARITHMETIC: StaticGrammar = xg::grammar!(file = "../grammars/examples/arithmetic.xg");
static JSON: StaticGrammar = xg::grammar!(file = "../grammars/std/json.xg");

/// An inline grammar and the same text as a string.
static INLINE: StaticGrammar = xg::grammar! {
    root ::= "{\"id\": " id ", \"tags\": [" (tag (", " tag){0,4})? "]}"
    id ::= [1-9] [0-9]{0,5}
    tag ::= "\"" [a-z_]{1,12} "\""
};
const INLINE_TEXT: &str = r#"
    root ::= "{\"id\": " id ", \"tags\": [" (tag (", " tag){0,4})? "]}"
    id ::= [1-9] [0-9]{0,5}
    tag ::= "\"" [a-z_]{1,12} "\""
"#;

fn cases() -> [(&'static str, &'static StaticGrammar, &'static str); 4] {
    [
        (
            "tool_calling.xg",
            &TOOL_CALLING,
            include_str!("../grammars/examples/tool_calling.xg"),
        ),
        (
            "arithmetic.xg",
            &ARITHMETIC,
            include_str!("../grammars/examples/arithmetic.xg"),
        ),
        ("json.xg", &JSON, include_str!("../grammars/std/json.xg")),
        ("inline", &INLINE, INLINE_TEXT),
    ]
}

#[test]
fn tables_equal_those_compiled_at_run_time() {
    for (name, embedded, text) in cases() {
        let compiled = runtime_grammar(text);
        assert_eq!(embedded.tables(), compiled.tables(), "{name}");
        assert_eq!(embedded.precomputed_entries(), 0, "{name}");
    }
}

#[test]
fn masks_equal_those_of_the_grammar_compiled_at_run_time() {
    let (json, config) = real_tokenizer(&REAL_TOKENIZERS[0]);
    let load = || Arc::new(Vocabulary::from_tokenizer_json(&json, Some(&config)).unwrap());
    for (k, (name, embedded, text)) in cases().into_iter().enumerate() {
        // Two vocabularies: each grammar builds its own cache entries.
        let (ours, theirs) = (load(), load());
        let compiled = runtime_grammar(text);
        for walk in 0..3 {
            let expected = Matcher::with_vocabulary(Arc::clone(&compiled), Arc::clone(&theirs));
            let tested = Matcher::with_vocabulary(embedded.grammar(), Arc::clone(&ours));
            let seed = 10 * k as u64 + walk;
            walk_in_lockstep(expected, tested, &mut Rng::new(seed), 40, name);
        }
    }
}

/// Precomputed at build time for the vendored Qwen3 tokenizer.
static PRECOMPUTED: StaticGrammar = xg::grammar!(
    file = "../grammars/examples/arithmetic.xg",
    tokenizer = "../data/tokenizers/qwen3/tokenizer.json.gz",
);

#[test]
fn masks_precomputed_at_build_time_are_loaded_and_exact() {
    let gzipped = include_bytes!("../data/tokenizers/qwen3/tokenizer.json.gz");
    let config = include_bytes!("../data/tokenizers/qwen3/tokenizer_config.json");
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(&gzipped[..])
        .read_to_end(&mut json)
        .unwrap();
    let load = || Arc::new(Vocabulary::from_tokenizer_json(&json, Some(config)).unwrap());
    let (ours, theirs) = (load(), load());
    assert!(PRECOMPUTED.precomputed_entries() > 0);
    let compiled = runtime_grammar(include_str!("../grammars/examples/arithmetic.xg"));
    for walk in 0..3 {
        let expected = Matcher::with_vocabulary(Arc::clone(&compiled), Arc::clone(&theirs));
        let tested = Matcher::with_vocabulary(PRECOMPUTED.grammar(), Arc::clone(&ours));
        walk_in_lockstep(expected, tested, &mut Rng::new(walk), 40, "arithmetic.xg");
    }
    let stats = ours.mask_cache().stats();
    assert!(stats.loaded > 0, "{stats:?}");
}

/// `#` comments in an inline grammar, whose words are Rust tokens, end at
/// the end of their line, as in a `.xg` file.
static HASH_COMMENTS: StaticGrammar = xg::grammar! {
    root ::= "yes" | "no" | other   # an answer, or the other
    other ::= "maybe"               # a third "rule" ::= here is only a comment
};

#[test]
fn hash_comments_in_inline_grammars_end_at_the_line_end() {
    for (text, accepted) in [("yes", true), ("maybe", true), ("here", false)] {
        let mut matcher = Matcher::new(HASH_COMMENTS.grammar());
        let taken = matcher.accept_str(text).is_ok() && matcher.can_terminate();
        assert_eq!(taken, accepted, "{text}");
    }
    assert_eq!(HASH_COMMENTS.rule_name(HASH_COMMENTS.root()), "root");
}
