//! Fuzz target: request-time grammars from untrusted input. The first byte
//! picks the front end — JSON Schema (in one of its layouts), structural
//! tag or regex — and the rest is its text. Compiling within tight limits must not panic or hang,
//! diagnostics must lie inside their files, and a grammar that compiles
//! must run in the matcher on the input's own bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::Arc;
use std::time::Duration;

use xg_compiler::json_schema::{Options, Whitespace};
use xg_compiler::{CompileCache, Diagnostics, Limits, Sources, pipeline, regex};
use xg_runtime::Matcher;

fuzz_target!(|bytes: &[u8]| {
    let Some((&selector, rest)) = bytes.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let limits = Limits {
        time: Some(Duration::from_millis(500)),
        ..Limits::default()
    };
    let mut sources = Sources::new();
    let file = sources.add("input", text, None);
    let mut diagnostics = Diagnostics::new();
    let cache = CompileCache::default();
    let grammar = match selector % 3 {
        0 | 1 => {
            let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else {
                return;
            };
            if selector % 3 == 0 {
                let whitespace = match selector / 3 % 3 {
                    0 => Whitespace::Flexible { max: Some(3) },
                    1 => Whitespace::Compact,
                    _ => Whitespace::Pretty { indent: 2 },
                };
                let options = Options {
                    whitespace,
                    ..Options::default()
                };
                pipeline::json_schema(
                    &value,
                    &options,
                    &limits,
                    &cache,
                    &sources,
                    file,
                    &mut diagnostics,
                )
            } else {
                pipeline::structural_tag(
                    &value,
                    None,
                    &limits,
                    &cache,
                    &mut sources,
                    file,
                    &mut diagnostics,
                )
            }
        }
        _ => pipeline::regex(
            text,
            regex::Options::default(),
            &limits,
            &cache,
            file,
            &mut diagnostics,
        ),
    };
    if let Some(grammar) = grammar {
        let mut matcher = Matcher::new(Arc::new(grammar));
        for chunk in rest.chunks(5).take(32) {
            let _ = matcher.forced_bytes();
            if matcher.accept_bytes(chunk).is_err() {
                break;
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
});
