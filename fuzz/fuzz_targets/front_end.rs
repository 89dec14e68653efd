//! Fuzz target: any bytes through the whole compiler (lexer, parser,
//! resolver, diagnostics rendering, and for grammars that check, lowering,
//! normalization, automata, hashing and tables) must not panic, must give
//! spans that lie inside their file, and must produce valid tables that the
//! runtime matcher runs without panicking (on the input's own bytes).
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::Arc;

use xg_compiler::{Diagnostics, Sources, pipeline, syntax};
use xg_runtime::{Grammar, Matcher};

fuzz_target!(|bytes: &[u8]| {
    let mut sources = Sources::new();
    let mut diagnostics = Diagnostics::new();
    let file = sources.add_bytes("input.xg", bytes, None, &mut diagnostics);
    if let Some(compiled) = pipeline::compile(&mut sources, file, "root", &mut diagnostics) {
        let grammar = Grammar::new(compiled.tables).expect("compiled tables are valid");
        let mut matcher = Matcher::new(Arc::new(grammar));
        for chunk in bytes.chunks(7).take(32) {
            let _ = matcher.forced_bytes();
            let _ = matcher.expected().to_string();
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
        assert!(!again_diagnostics.has_errors(), "printed text does not parse:\n{printed}");
        assert_eq!(syntax::print(&reparsed), printed);
    }
});
