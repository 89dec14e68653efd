//! Fuzz target: request-time grammars from untrusted input. The first byte
//! picks the front end — JSON Schema (in one of its layouts), structural
//! tag, regex, `.xg` text or a tool list — and the rest is its text.
//! Compiling within tight limits must not panic, hang or overflow the
//! stack of a 2 MiB thread (a server's worker); diagnostics must lie inside
//! their files; no file is read from disk; and a grammar that compiles must
//! run in the matcher on the input's own bytes.
//!
//! With the first byte's high bit set, the text is grown before use: split
//! at `\x01` into `a b c d e`, it becomes `a + b×n + c + d×n + e` (up to
//! about 20 KB), so that a short input makes a long name, a huge literal
//! or nesting thousands deep (`b` = `[`, `d` = `]`). Not more: the time
//! limit does not yet hold inside every stage, and a 200,000-character
//! required name took 8 s in the instrumented build (the run's per-input
//! timeout is 10 s).
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::Arc;
use std::time::Duration;

use xg_compiler::json_schema::{Options, Whitespace};
use xg_compiler::{CompileCache, Limits, Request, pipeline, regex, tools};
use xg_runtime::Matcher;

/// The stack of the thread each input is compiled on.
const STACK: usize = 2 << 20;

/// Most bytes the repeated parts of a grown text add.
const GROWN: usize = 20_000;

fuzz_target!(|bytes: &[u8]| {
    let Some((&selector, rest)) = bytes.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let text = if selector & 0x80 == 0 {
        text.to_string()
    } else {
        grow(text)
    };
    let kind = selector & 0x7f;
    std::thread::Builder::new()
        .stack_size(STACK)
        .spawn(move || compile_and_run(kind, &text))
        .expect("a thread")
        .join()
        .expect("no panic");
});

/// `a + b×n + c + d×n + e` for `text` split at `\x01` into five parts.
fn grow(text: &str) -> String {
    let parts: Vec<&str> = text.splitn(5, '\u{1}').collect();
    let [a, b, c, d, e] = parts[..] else {
        return text.to_string();
    };
    let n = GROWN / (b.len() + d.len()).max(1);
    [a, &b.repeat(n), c, &d.repeat(n), e].concat()
}

fn compile_and_run(kind: u8, text: &str) {
    let limits = Limits {
        time: Some(Duration::from_millis(500)),
        ..Limits::default()
    };
    let mut request = Request::new(&limits, &CompileCache::default());
    let file = request.add("input", text);
    let json = || serde_json::from_str::<serde_json::Value>(text).ok();
    let grammar = match kind % 5 {
        0 => {
            let Some(value) = json() else {
                return;
            };
            let whitespace = match kind / 5 % 3 {
                0 => Whitespace::Flexible { max: Some(3) },
                1 => Whitespace::Compact,
                _ => Whitespace::Pretty { indent: 2 },
            };
            let options = Options {
                whitespace,
                ..Options::default()
            };
            pipeline::json_schema(&mut request, &value, file, &options)
        }
        1 => {
            let Some(value) = json() else {
                return;
            };
            pipeline::structural_tag(&mut request, &value, file)
        }
        2 => pipeline::regex(&mut request, file, regex::Options::default()),
        3 => pipeline::grammar_within(&mut request, file, "root"),
        _ => {
            let Some(value) = json() else {
                return;
            };
            let options = tools::Options::new(tools::Format::Qwen);
            pipeline::tools(&mut request, &value, file, &options)
        }
    };
    let Request {
        sources,
        diagnostics,
        ..
    } = request;
    assert!(
        sources.files_read().is_empty(),
        "text from a request read {:?}",
        sources.files_read()
    );
    if let Some(grammar) = grammar {
        let mut matcher = Matcher::new(Arc::new(grammar));
        for chunk in text.as_bytes().chunks(5).take(32) {
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
}
