//! Fuzz target: any bytes through the whole compiler (lexer, parser,
//! resolver, diagnostics rendering, and for grammars that check, lowering,
//! normalization, automata, hashing and tables) must not panic, must give
//! spans that lie inside their file, and must produce valid tables.
#![no_main]

use libfuzzer_sys::fuzz_target;
use xg_compiler::{Diagnostics, Sources, pipeline, syntax};

fuzz_target!(|bytes: &[u8]| {
    let mut sources = Sources::new();
    let mut diagnostics = Diagnostics::new();
    let file = sources.add_bytes("input.xg", bytes, None, &mut diagnostics);
    if let Some(compiled) = pipeline::compile(&mut sources, file, "root", &mut diagnostics) {
        assert!(compiled.tables.validate().is_ok());
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
