//! Behaviours of the runtime matcher on hand-written cases: ambiguity and
//! deep nesting stay polynomial, counted repetitions are exact, tag
//! dispatch handles tool-calling output, tokens matched by id, rejections say
//! where and what, and grammars are shared across threads.

mod common;

use std::sync::Arc;

use common::{library, runtime_grammar};
use xg_runtime::{Found, Grammar, Matcher, TokenId};

fn matcher(source: &str) -> Matcher {
    Matcher::new(runtime_grammar(source))
}

/// Whether `text`, fed in the given pieces, is accepted and complete.
fn accepts_in_pieces(matcher: &mut Matcher, pieces: &[&str]) -> bool {
    matcher.reset();
    pieces.iter().all(|p| matcher.accept_str(p).is_ok()) && matcher.can_terminate()
}

fn accepts(source: &str, text: &str) -> bool {
    accepts_in_pieces(&mut matcher(source), &[text])
}

#[test]
fn grammar_is_send_and_sync_and_shared() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Grammar>();
    send_sync::<Matcher>();
    let grammar = runtime_grammar(&library()[0]);
    let handles: Vec<_> = (0..2)
        .map(|k| {
            let grammar = Arc::clone(&grammar);
            std::thread::spawn(move || {
                let mut matcher = Matcher::new(grammar);
                matcher
                    .accept_str(&format!("[{k}, {{\"a\": true}}]"))
                    .unwrap();
                matcher.can_terminate()
            })
        })
        .collect();
    for handle in handles {
        assert!(handle.join().unwrap());
    }
}

/// `s ::= s s | "a"` is as ambiguous as a grammar gets: the items of row
/// `k` are O(k), so all rows hold O(n²) items.
fn ambiguous(length: usize) -> usize {
    let mut matcher = matcher(
        r#"root ::= s
        s ::= s s | "a""#,
    );
    // One step of `length` bytes: past the default step budget from a few
    // hundred bytes on, lifted here (the cost itself is what is measured).
    matcher.set_step_budget(u64::MAX);
    matcher.accept_bytes(&vec![b'a'; length]).unwrap();
    assert!(matcher.can_terminate());
    matcher.stats().items
}

#[test]
fn ambiguity_grows_polynomially() {
    let small = ambiguous(100);
    let large = ambiguous(200);
    // Doubling the input at most quadruples the items (plus slack).
    assert!(
        large <= small * 9 / 2,
        "{small} items for 100 bytes, {large} for 200"
    );
    assert!(large <= 5 * 200 * 200, "{large} items for 200 bytes");
}

/// The acceptance size: 2,000 bytes. Earley's cubic time on this grammar
/// makes it a release-mode test.
#[test]
#[cfg_attr(debug_assertions, ignore = "cubic time; run with --release")]
fn ambiguity_on_2000_bytes() {
    let items = ambiguous(2000);
    assert!(items <= 5 * 2000 * 2000, "{items} items");
}

#[test]
fn deep_json_nesting_does_not_overflow() {
    let depth = 10_000;
    let mut matcher = Matcher::new(runtime_grammar(&library()[0]));
    let text = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
    matcher.accept_str(&text).unwrap();
    assert!(matcher.can_terminate());
    let stats = matcher.stats();
    // A bounded number of items per row.
    assert!(stats.items <= 64 * stats.rows, "{stats:?}");
    let objects = format!("{}1{}", "{\"k\":".repeat(depth), "}".repeat(depth));
    matcher.reset();
    matcher.accept_str(&objects).unwrap();
    assert!(matcher.can_terminate());
}

#[test]
fn left_and_right_recursion() {
    let left = r#"root ::= list
        list ::= list "," [0-9] | [0-9]"#;
    let right = r#"root ::= list
        list ::= [0-9] "," list | [0-9]"#;
    let long = vec!["1"; 1000].join(",");
    let mut m = matcher(left);
    assert!(accepts_in_pieces(&mut m, &[&long]));
    // Left recursion: a bounded number of items per row.
    assert!(m.stats().items <= 16 * m.stats().rows, "{:?}", m.stats());
    // Right recursion: each completion at the end climbs every open list
    // (no Leo items yet), so rows grow linearly — quadratic in all.
    let mut m = matcher(right);
    assert!(accepts_in_pieces(&mut m, &[&long]));
    let rows = m.stats().rows;
    assert!(m.stats().items <= rows * rows, "{:?}", m.stats());
    for source in [left, right] {
        assert!(!accepts(source, "1,,2"));
        assert!(!accepts(source, "1,2,"));
    }
}

#[test]
fn counted_repetition_is_exact_at_large_bounds() {
    let mut m = matcher("root ::= [a-z]{0,100000}");
    let text = "q".repeat(100_000);
    assert!(accepts_in_pieces(&mut m, &[&text]));
    assert!(m.accept_str("q").is_err());
    assert!(m.can_terminate());
    let mut m = matcher(r#"root ::= ("ab"){3000,5000} "!""#);
    assert!(!accepts_in_pieces(&mut m, &[&"ab".repeat(2999), "!"]));
    assert!(accepts_in_pieces(&mut m, &[&"ab".repeat(3000), "!"]));
    assert!(accepts_in_pieces(&mut m, &[&"ab".repeat(5000), "!"]));
    assert!(!accepts_in_pieces(&mut m, &[&"ab".repeat(5001)]));
}

#[test]
fn nullable_rules_and_empty_repetitions() {
    let source = r#"root ::= a{2,5} "x" b*
        a ::= "" | "y"
        b ::= c c
        c ::= "" | "z""#;
    for (text, expected) in [
        ("x", true),
        ("yyyyyx", true),
        ("yyyyyyx", false),
        ("xzzz", true),
        ("xa", false),
    ] {
        assert_eq!(accepts(source, text), expected, "{text}");
    }
}

#[test]
fn lookahead_is_enforced() {
    let source = r#"root ::= (name | number)* end
        name ::= [a-z]+ (= [0-9])
        number ::= [0-9]+
        end ::= ";" | [a-z] "!""#;
    assert!(accepts(source, "ab12cd3;"));
    assert!(accepts(source, "ab1b!"));
    let mut m = matcher(source);
    m.accept_str("ab").unwrap();
    // After `ab`, only a digit can follow: `b` ends no name, and `ab` is no `end`.
    let rejection = m.accept_str("!").unwrap_err();
    assert_eq!(rejection.position(), 2);
    assert_eq!(rejection.found(), Found::Byte(b'!'));
    assert!(m.accept_str("1").is_ok());
}

#[test]
fn forced_bytes_jump_forward() {
    let source = r#"root ::= "{\"name\": \"" [a-z]+ "\", \"id\": " [0-9]"#;
    let mut m = matcher(source);
    assert_eq!(m.forced_bytes(), b"{\"name\": \"");
    m.accept_str("{\"name\": \"bob").unwrap();
    assert_eq!(m.forced_bytes(), b"");
    m.accept_str("\"").unwrap();
    assert_eq!(m.forced_bytes(), b", \"id\": ");
    // The state is unchanged by asking.
    m.accept_str(", \"id\": 7").unwrap();
    assert!(m.can_terminate());
    assert_eq!(m.forced_bytes(), b"");
}

const TOOLS: &str = r#"
root ::= dispatch(stop_eos=true, exclude=("<|im_start|>")) {
    "<tool_call>" => ws call ws "</tool_call>",
}
call ::= "{\"name\": " name ", \"arguments\": " object "}"
name ::= "\"get_weather\"" | "\"search\""
object ::= "{" ws (pair (ws "," ws pair)*)? ws "}"
pair ::= string ws ":" ws value
value ::= string | [0-9]+ | object
string ::= "\"" [^"\\]* "\""
ws ::= [ \n]*
"#;

#[test]
fn tool_calling_text_and_calls() {
    let mut m = matcher(TOOLS);
    let call = r#"<tool_call>{"name": "search", "arguments": {"q": "rust {braces}", "opts": {"n": {"deep": 3}}}}</tool_call>"#;
    let text = format!(
        "Let me look. {call}\nAnd the weather: <tool_call>\n{{\"name\": \"get_weather\", \"arguments\": {{}}}}\n</tool_call> done <tool"
    );
    assert!(accepts_in_pieces(&mut m, &[&text]));
    // The same output in small pieces, triggers split across accepts.
    let pieces: Vec<String> = text
        .as_bytes()
        .chunks(3)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect();
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    assert!(text.is_ascii());
    assert!(accepts_in_pieces(&mut m, &pieces));
    // Inside a call, the arm's grammar rules.
    m.reset();
    m.accept_str("hi <tool_call>{\"name\": ").unwrap();
    assert!(m.accept_str("\"delete\"").is_err());
    assert!(!m.can_terminate());
    // A partial trigger at the end is free text.
    m.reset();
    m.accept_str("see <tool_ca").unwrap();
    assert!(m.can_terminate());
    // Excluded strings never appear in free text, even split.
    m.reset();
    m.accept_str("ok <|im_").unwrap();
    assert!(m.accept_str("start|>").is_err());
    assert!(m.accept_str("end|>").is_ok());
}

#[test]
fn dispatch_stop_strings_and_once() {
    let source = r#"root ::= dispatch(once, stop=("<|end|>")) { "<a>" => [0-9]+ "</a>" } "!"?"#;
    assert!(accepts(source, "text <|end|>"));
    assert!(accepts(source, "text <|end|>!"));
    assert!(!accepts(source, "text"), "no stop string");
    assert!(accepts(source, "x <a>12</a>"), "once: ends after the arm");
    assert!(accepts(source, "x <a>12</a>!"));
    assert!(!accepts(source, "x <a>12</a> more"));
    assert!(!accepts(source, "x <a>1x</a>"));
    let looping = r#"root ::= dispatch(stop=("<|end|>")) { "<a>" => [0-9]+ "</a>" }"#;
    assert!(accepts(looping, "x <a>1</a> y <a>2</a> z<|end|>"));
    assert!(!accepts(looping, "x <a>1</a> y"));
}

#[test]
fn tokens_matched_by_id() {
    let token = |id: usize| TokenId::new(id).unwrap();
    let mut m = matcher(r"root ::= Token(7) [a-z]+ ExcludeToken(7, 8)");
    assert!(m.accept_token_id(token(6)).is_err());
    m.accept_token_id(token(7)).unwrap();
    m.accept_str("abc").unwrap();
    assert!(m.accept_token_id(token(8)).is_err());
    m.accept_token_id(token(3)).unwrap();
    assert!(m.can_terminate());
    let source = r#"root ::= TokenTagDispatch((9, arm), loop_after_dispatch=false, excludes=(10))
        arm ::= "x" Token(11)"#;
    let mut m = matcher(source);
    m.accept_str("free text").unwrap();
    m.accept_token_id(token(5)).unwrap();
    assert!(m.can_terminate());
    assert!(m.accept_token_id(token(10)).is_err());
    m.accept_token_id(token(9)).unwrap();
    assert!(!m.can_terminate());
    m.accept_str("x").unwrap();
    m.accept_token_id(token(11)).unwrap();
    assert!(m.can_terminate());
    assert!(m.accept_str("more").is_err(), "dispatched once");
}

#[test]
fn rejections_say_where_and_what() {
    let mut m = Matcher::new(runtime_grammar(&library()[0]));
    m.accept_str("{\"a\": [1, 2").unwrap();
    let rejection = m.accept_str(", }").unwrap_err();
    assert_eq!(rejection.position(), 13);
    assert_eq!(rejection.found(), Found::Byte(b'}'));
    let message = rejection.to_string();
    assert!(message.contains("at 13"), "{message}");
    assert!(message.contains("\"[\""), "{message}");
    assert!(message.contains("\"{\""), "{message}");
    // Nothing of the rejected step was kept.
    assert_eq!(m.position(), 11);
    m.accept_str("]}").unwrap();
    assert!(m.can_terminate());
    m.terminate().unwrap();
    assert!(m.is_terminated());
    assert!(m.accept_str(" ").is_err());
    m.rollback(1).unwrap();
    assert!(!m.is_terminated());
    assert!(m.accept_str(" ").is_ok());
    assert!(m.rollback(5).is_err());
}
