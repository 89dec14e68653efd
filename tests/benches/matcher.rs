//! Throughput of the runtime matcher: bytes per second through `std/json.xg`
//! and the arithmetic example, fed whole and byte by byte (one step per
//! byte, as a server feeding single-byte tokens would).
//!
//! `cargo bench -p xg-tests --bench matcher` prints one line per case: the
//! median of several runs, in MB/s, with Earley items per byte. Then the
//! same JSON document as a call's captured arguments, fed byte by byte, and
//! with a tool-call event stream polled after every byte: what captures and
//! events cost. Then what rolling one step back (and taking it again) costs
//! after 10, 1,000 and 100,000 steps: the same, whatever the depth.

#![allow(
    clippy::cast_precision_loss,
    reason = "byte and item counts of a benchmark are far below 2^52"
)]

use std::fmt::Write;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use xg_compiler::{Request, pipeline};
use xg_runtime::{Grammar, Matcher, ToolCallStream};

fn grammar(name: &str, text: &str) -> Arc<Grammar> {
    let mut request = Request::ahead_of_time();
    let file = request.add(name, text);
    let grammar = pipeline::grammar(&mut request, file, "root")
        .unwrap_or_else(|| panic!("{}", request.diagnostics.render(&request.sources, false)));
    Arc::new(grammar)
}

/// A JSON document of about `size` bytes: records with strings, numbers,
/// booleans, nested objects and arrays.
fn json_document(size: usize) -> String {
    let mut out = String::from("[");
    let mut k = 0u64;
    while out.len() < size {
        if k > 0 {
            out.push_str(", ");
        }
        let _ = write!(
            out,
            "{{\"id\": {k}, \"name\": \"item number {k}\", \"price\": {}.{:02}, \"tags\": [\"a\", \"b{}\"], \
             \"active\": {}, \"owner\": {{\"first\": \"Ada\", \"last\": \"Lovelace\", \"age\": {}}}, \"note\": null}}",
            k * 7 % 1000,
            k % 100,
            k % 13,
            k.is_multiple_of(2),
            20 + k % 60
        );
        k += 1;
    }
    out.push(']');
    out
}

fn arithmetic(size: usize) -> String {
    let mut out = String::from("1");
    let mut k = 0u64;
    while out.len() < size {
        let _ = write!(out, "+({k}*{}-{}.5)/3", k % 17, k % 5);
        k += 1;
    }
    out
}

/// Median seconds of `run` over enough repetitions to fill about a second.
fn measure(mut run: impl FnMut()) -> f64 {
    let mut times = Vec::new();
    let started = Instant::now();
    while times.len() < 5 || (started.elapsed() < Duration::from_secs(1) && times.len() < 50) {
        let t = Instant::now();
        run();
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn bench(label: &str, grammar: &Arc<Grammar>, input: &str) {
    let whole = measure(|| {
        let mut matcher = Matcher::new(Arc::clone(grammar));
        matcher.accept_str(black_box(input)).expect("input matches");
        assert!(matcher.can_terminate());
    });
    let stepwise = measure(|| {
        let mut matcher = Matcher::new(Arc::clone(grammar));
        for byte in black_box(input).as_bytes() {
            matcher
                .accept_bytes(std::slice::from_ref(byte))
                .expect("input matches");
        }
    });
    let mut matcher = Matcher::new(Arc::clone(grammar));
    matcher.accept_str(input).expect("input matches");
    let stats = matcher.stats();
    let mb = input.len() as f64 / 1e6;
    println!(
        "{label:<28} {:>8} bytes  whole {:>7.2} MB/s  byte-steps {:>7.2} MB/s  {:>5.1} items/byte",
        input.len(),
        mb / whole,
        mb / stepwise,
        stats.items as f64 / input.len() as f64
    );
}

/// `document` as the captured arguments of a call, byte by byte: plain, and
/// with a [`ToolCallStream`] polled after every byte (the events must
/// stream the whole document).
fn events(document: &str) {
    let call = grammar(
        "call.xg",
        "import \"std/json.xg\" as json;\n\
         root ::= \"<call>\" args \"</call>\"\n\
         args [capture=\"tool:f\"] ::= json.value\n",
    );
    let input = format!("<call>{document}</call>");
    let feed = |poll: bool| {
        let mut matcher = Matcher::new(Arc::clone(&call));
        let mut stream = ToolCallStream::new();
        let mut events = 0;
        for byte in black_box(&input).as_bytes() {
            matcher
                .accept_bytes(std::slice::from_ref(byte))
                .expect("input matches");
            if poll {
                events += stream.poll(&matcher).len();
            }
        }
        events
    };
    assert!(
        feed(true) > document.len() / 2,
        "the arguments are streamed"
    );
    let mb = input.len() as f64 / 1e6;
    let captured = measure(|| {
        feed(false);
    });
    let polled = measure(|| {
        feed(true);
    });
    println!(
        "json as captured arguments   {:>8} bytes  byte-steps {:>7.2} MB/s  polled each byte {:>7.2} MB/s",
        input.len(),
        mb / captured,
        mb / polled
    );
}

/// Rollback of one step, and the step taken again, after `steps` one-byte
/// steps of the JSON document: median nanoseconds.
fn rollback(grammar: &Arc<Grammar>, document: &str, steps: usize) {
    let bytes = &document.as_bytes()[..steps];
    let mut matcher = Matcher::new(Arc::clone(grammar));
    for byte in bytes {
        matcher
            .accept_bytes(std::slice::from_ref(byte))
            .expect("input matches");
    }
    let last = std::slice::from_ref(&bytes[steps - 1]);
    let seconds = measure(|| {
        for _ in 0..1000 {
            matcher.rollback(1).expect("a step to roll back");
            matcher
                .accept_bytes(black_box(last))
                .expect("input matches");
        }
    });
    println!(
        "rollback 1 + accept 1 after {steps:>7} steps  {:>7.0} ns",
        seconds / 1000.0 * 1e9
    );
}

fn main() {
    let json = grammar(
        "std/json.xg",
        xg_compiler::std_text("std/json.xg").expect("std json"),
    );
    let arithmetic_grammar = grammar("arithmetic.xg", xg_compiler::EXAMPLES[0].1);
    bench("json (std/json.xg)", &json, &json_document(64 * 1024));
    bench(
        "arithmetic (left recursive)",
        &arithmetic_grammar,
        &arithmetic(16 * 1024),
    );
    events(&json_document(64 * 1024));
    let document = json_document(128 * 1024);
    for steps in [10, 1_000, 100_000] {
        rollback(&json, &document, steps);
    }
}
