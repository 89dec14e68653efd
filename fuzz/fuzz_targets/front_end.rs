//! Fuzz target: any bytes through the whole compiler (lexer, parser,
//! resolver, diagnostics rendering, and for grammars that check, lowering,
//! normalization, automata, hashing and tables) must not panic, must give
//! spans that lie inside their file, and must produce valid tables that the
//! runtime matcher runs without panicking (on the input's own bytes), with
//! token masks that agree with accepting the token.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::Arc;

use xg_compiler::{Diagnostics, Request, pipeline, syntax};
use xg_runtime::{Grammar, Matcher, TokenId, Vocabulary};

fuzz_target!(|bytes: &[u8]| {
    let mut request = Request::ahead_of_time();
    let file = request
        .sources
        .add_bytes("input.xg", bytes, None, &mut request.diagnostics);
    let compiled = pipeline::compile(&mut request, file, "root");
    let Request {
        mut sources,
        diagnostics,
        ..
    } = request;
    if let Some(compiled) = compiled {
        let grammar = Grammar::new(compiled.tables).expect("compiled tables are valid");
        // Tokens: every byte, and the input's chunks.
        let chunks: Vec<&[u8]> = bytes.chunks(7).take(32).collect();
        let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        tokens.extend(chunks.iter().map(|c| c.to_vec()));
        let vocabulary = Arc::new(Vocabulary::from_byte_strings(&tokens, &[]).expect("vocabulary"));
        let mut matcher = Matcher::with_vocabulary(Arc::new(grammar), Arc::clone(&vocabulary));
        matcher.set_mask_budget(2_000_000);
        let mut mask = vec![0; vocabulary.mask_words()];
        for (k, chunk) in chunks.iter().enumerate() {
            let _ = matcher.forced_bytes();
            let _ = matcher.expected().to_string();
            if matcher.fill_next_token_bitmask(&mut mask).is_ok() {
                let id = TokenId::new(256 + k).expect("token id");
                let allowed = mask[id.as_usize() / 32] >> (id.as_usize() % 32) & 1 == 1;
                assert_eq!(
                    allowed,
                    matcher.fork().accept_token(id).is_ok(),
                    "mask and accept disagree"
                );
            }
            if matcher.accept_bytes(chunk).is_err() {
                let _ = matcher.rollback(1);
            }
        }
        let _ = matcher.can_terminate();
    }
    for diagnostic in diagnostics.iter() {
        let span = diagnostic.primary.span;
        let text = sources.text(span.file);
        assert!(span.start <= span.end && span.end <= text.len());
    }
    let _ = diagnostics.render(&sources, false);
    // A file that parses prints to text that parses again without errors.
    let mut parse_diagnostics = Diagnostics::new();
    let ast = syntax::parse(file, sources.text(file), &mut parse_diagnostics);
    if !parse_diagnostics.has_errors() {
        let printed = syntax::print(&ast);
        let again = sources.add("printed.xg", printed.clone(), None);
        let mut again_diagnostics = Diagnostics::new();
        let reparsed = syntax::parse(again, &printed, &mut again_diagnostics);
        assert!(
            !again_diagnostics.has_errors(),
            "printed text does not parse:\n{printed}"
        );
        assert_eq!(syntax::print(&reparsed), printed);
    }
});
