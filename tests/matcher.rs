//! The runtime matcher agrees with the reference recognizer: after every
//! byte of sampled sentences, near-misses and random walks, on whether the
//! byte is accepted, whether the output may end, and what bytes are forced.
//! Rollback and fork end in the same state as replaying the surviving input.

mod common;

use std::sync::Arc;

use common::{
    CORPUS, LIBRARY, Rng, compile, library, random_grammar, runtime_grammar, sample, wide_grammar,
};
use proptest::prelude::*;
use xg_compiler::ir::reference::{Mode, Symbol, recognizes};
use xg_compiler::ir::{self};
use xg_runtime::{Grammar, Matcher};

fn viable(ir: &ir::Grammar, text: &[u8]) -> bool {
    recognizes(ir, &Symbol::text(text), Mode::Prefix)
}

fn complete(ir: &ir::Grammar, text: &[u8]) -> bool {
    recognizes(ir, &Symbol::text(text), Mode::Complete)
}

/// Feeds `text` byte by byte, comparing with the reference after each byte.
fn follow(
    ir: &ir::Grammar,
    grammar: &Arc<Grammar>,
    text: &[u8],
    rng: &mut Rng,
) -> Result<(), TestCaseError> {
    let mut matcher = Matcher::new(Arc::clone(grammar));
    let shown = String::from_utf8_lossy(text);
    for end in 0..=text.len() {
        let prefix = &text[..end];
        if end > 0 {
            let accepted = matcher.accept_bytes(&text[end - 1..end]).is_ok();
            prop_assert_eq!(
                accepted,
                viable(ir, prefix),
                "byte {} of {:?}",
                end - 1,
                shown
            );
            if !accepted {
                return Ok(());
            }
        }
        prop_assert_eq!(
            matcher.can_terminate(),
            complete(ir, prefix),
            "can_terminate after {} bytes of {:?}",
            end,
            shown
        );
        check_forced(ir, &matcher, prefix, rng)?;
    }
    Ok(())
}

/// Forced bytes: none where the output may end; otherwise the input extended
/// by them is viable, and other first bytes are not.
fn check_forced(
    ir: &ir::Grammar,
    matcher: &Matcher,
    prefix: &[u8],
    rng: &mut Rng,
) -> Result<(), TestCaseError> {
    let forced = matcher.forced_bytes();
    let Some(&first) = forced.first() else {
        return Ok(());
    };
    prop_assert!(!matcher.can_terminate());
    // Forced text can be long (`("ab"){4,}` nested in counts forces
    // hundreds of bytes); the reference is slow on long inputs, so the
    // first 32 bytes stand for it.
    let mut extended = prefix.to_vec();
    extended.extend_from_slice(&forced[..forced.len().min(32)]);
    prop_assert!(
        viable(ir, &extended),
        "forced {:?} after {:?}",
        forced,
        prefix
    );
    let mut others: Vec<u8> = b"ab{}\"0 <>,:=xyz\xC3".to_vec();
    others.push(u8::try_from(rng.below(256)).expect("byte"));
    for other in others.into_iter().filter(|&b| b != first) {
        let mut alternative = prefix.to_vec();
        alternative.push(other);
        prop_assert!(
            !viable(ir, &alternative),
            "{:?} forced after {:?}, but {:?} is viable",
            forced,
            prefix,
            char::from(other)
        );
    }
    Ok(())
}

/// A walk that mostly takes bytes the matcher says are allowed.
fn walk(grammar: &Arc<Grammar>, rng: &mut Rng) -> Vec<u8> {
    let mut matcher = Matcher::new(Arc::clone(grammar));
    let mut text = Vec::new();
    for _ in 0..rng.below(24) {
        let allowed: Vec<u8> = matcher.expected().bytes().collect();
        let byte = if allowed.is_empty() || rng.below(8) == 0 {
            b"ab<>{}0:x\xC3\xA9"[rng.below(11)]
        } else {
            allowed[rng.below(allowed.len())]
        };
        text.push(byte);
        if matcher.accept_bytes(&[byte]).is_err() {
            break;
        }
    }
    text
}

/// A walk of up to `length` bytes that the matcher accepts.
fn valid_walk(grammar: &Arc<Grammar>, rng: &mut Rng, length: usize) -> Vec<u8> {
    let mut matcher = Matcher::new(Arc::clone(grammar));
    let mut text = Vec::new();
    'walk: while text.len() < length {
        let expected = matcher.expected();
        let mut candidates: Vec<u8> = expected.bytes().collect();
        if expected.allows_text() {
            candidates.extend_from_slice(b"ab<>{}0:x ");
        }
        for _ in 0..16 {
            let Some(&byte) = candidates.get(rng.below(candidates.len().max(1))) else {
                break 'walk;
            };
            if matcher.accept_bytes(&[byte]).is_ok() {
                text.push(byte);
                continue 'walk;
            }
        }
        break;
    }
    text
}

fn check_matcher(source: &str, seed: u64) -> Result<(), TestCaseError> {
    let ir = compile(source);
    let grammar = runtime_grammar(source);
    let mut rng = Rng::new(seed);
    for round in 0..6 {
        let text = if round % 2 == 0 {
            sample(&ir, &mut rng)
        } else {
            walk(&grammar, &mut rng)
        };
        follow(&ir, &grammar, &text, &mut rng)?;
    }
    Ok(())
}

/// The library grammar that embeds JSON Schemas: it costs the reference
/// about a second a case, so it gets fixed seeds, not the long run's count.
const EMBEDDED_SCHEMAS: &str = "examples/tool_calling.xg";

/// The indices of the other library grammars.
fn reference_friendly() -> Vec<usize> {
    (0..LIBRARY.len())
        .filter(|&i| LIBRARY[i] != EMBEDDED_SCHEMAS)
        .collect()
}

#[test]
fn matcher_agrees_with_the_reference_on_embedded_schemas() {
    let index = LIBRARY
        .iter()
        .position(|&path| path == EMBEDDED_SCHEMAS)
        .expect("in the library");
    let source = &library()[index];
    for seed in 0..8 {
        check_matcher(source, seed).unwrap();
    }
}

/// Rows large enough to be indexed by awaited rule, with empty matches
/// completed in them and matches completed from them.
#[test]
fn matcher_agrees_with_the_reference_on_wide_rows() {
    let source = wide_grammar();
    for seed in 0..6 {
        check_matcher(&source, seed).unwrap();
    }
}

proptest! {
    #![proptest_config(common::cases(48))]

    #[test]
    fn matcher_agrees_with_the_reference(index in 0..CORPUS.len(), seed in any::<u64>()) {
        check_matcher(CORPUS[index], seed)?;
    }

    #[test]
    fn matcher_agrees_with_the_reference_on_the_library(index in prop::sample::select(reference_friendly()), seed in any::<u64>()) {
        check_matcher(&library()[index], seed)?;
    }

    #[test]
    fn matcher_agrees_with_the_reference_on_random_grammars(source in random_grammar(), seed in any::<u64>()) {
        check_matcher(&source, seed)?;
    }
}

/// Everything observable about a matcher's state, to compare two of them.
fn observe(
    matcher: &Matcher,
) -> (
    xg_runtime::Stats,
    bool,
    xg_runtime::Expected,
    Vec<u8>,
    usize,
) {
    (
        matcher.stats(),
        matcher.can_terminate(),
        matcher.expected(),
        matcher.forced_bytes(),
        matcher.steps(),
    )
}

#[derive(Clone, Debug)]
enum Op {
    /// Accept the next `n` bytes of the target text.
    Accept(usize),
    /// Accept a byte that is probably wrong.
    Junk(u8),
    Rollback(usize),
    /// Continue on a fork; the original must not change.
    Fork,
    Reset,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (1..24usize).prop_map(Op::Accept),
        1 => any::<u8>().prop_map(Op::Junk),
        2 => (0..5usize).prop_map(Op::Rollback),
        1 => Just(Op::Fork),
        1 => Just(Op::Reset),
    ]
}

proptest! {
    #![proptest_config(common::cases(64))]

    /// Any interleaving of accepts, rejections, rollbacks, forks and resets
    /// ends in the state of replaying the surviving steps.
    #[test]
    fn rollback_and_fork_equal_replay(
        index in 0..CORPUS.len() + 1,
        seed in any::<u64>(),
        ops in prop::collection::vec(op(), 1..60),
    ) {
        let source = CORPUS.get(index).map_or_else(|| library()[0].clone(), |s| (*s).to_owned());
        let grammar = runtime_grammar(&source);
        let mut rng = Rng::new(seed);
        // Long enough to cross the history's segments of 64 rows.
        let target = valid_walk(&grammar, &mut rng, 160);
        let mut matcher = Matcher::new(Arc::clone(&grammar));
        let mut surviving: Vec<Vec<u8>> = Vec::new();
        for op in ops {
            let at: usize = surviving.iter().map(Vec::len).sum();
            match op {
                Op::Accept(_) | Op::Junk(_) => {
                    let chunk = match op {
                        Op::Junk(b) => vec![b],
                        Op::Accept(n) => target[at.min(target.len())..(at + n).min(target.len())].to_vec(),
                        _ => unreachable!(),
                    };
                    let before = observe(&matcher);
                    match matcher.accept_bytes(&chunk) {
                        Ok(()) => surviving.push(chunk),
                        Err(_) => prop_assert_eq!(observe(&matcher), before),
                    }
                }
                Op::Rollback(n) => {
                    if n <= surviving.len() {
                        matcher.rollback(n).unwrap();
                        surviving.truncate(surviving.len() - n);
                    } else {
                        prop_assert!(matcher.rollback(n).is_err());
                    }
                }
                Op::Fork => {
                    let original = matcher.clone();
                    let before = observe(&original);
                    let mut fork = matcher.fork();
                    let _ = fork.accept_bytes(&target[at.min(target.len())..]);
                    fork.reset();
                    prop_assert_eq!(observe(&original), before);
                    matcher = matcher.fork();
                }
                Op::Reset => {
                    matcher.reset();
                    surviving.clear();
                }
            }
        }
        let mut replay = Matcher::new(grammar);
        for chunk in &surviving {
            replay.accept_bytes(chunk).unwrap();
        }
        prop_assert_eq!(observe(&matcher), observe(&replay));
    }
}

/// Grammars that match tokens by id.
const TOKEN_GRAMMARS: &[&str] = &[
    r#"root ::= Token(7) [a-b]+ ExcludeToken(7, 8) | "x" Token(9, 10)*"#,
    r#"root ::= TokenTagDispatch((9, arm), (10, b), excludes=(11))
       arm ::= "a" Token(7) | "ab"
       b ::= "b""#,
    r#"root ::= TokenTagDispatch((9, arm), loop_after_dispatch=false) "x"?
       arm ::= [ab]+ Token(8)"#,
];

proptest! {
    #![proptest_config(common::cases(64))]

    /// Inputs mixing bytes and tokens matched by id agree with the reference
    /// after every symbol.
    #[test]
    fn tokens_agree_with_the_reference(
        index in 0..TOKEN_GRAMMARS.len() + 1,
        symbols in prop::collection::vec(0..14usize, 0..12),
    ) {
        let source = TOKEN_GRAMMARS.get(index).map_or_else(|| library()[2].clone(), |s| (*s).to_owned());
        let ir = compile(&source);
        let mut matcher = Matcher::new(runtime_grammar(&source));
        let tokens = [7, 8, 9, 10, 11, 128_008, 128_009, 128_010];
        let mut input = Vec::new();
        for symbol in symbols {
            let symbol = match symbol.checked_sub(tokens.len()) {
                None => Symbol::Token(xg_runtime::TokenId::new(tokens[symbol]).unwrap()),
                Some(byte) => Symbol::Byte(b"abx<{ "[byte]),
            };
            input.push(symbol);
            let accepted = match symbol {
                Symbol::Byte(b) => matcher.accept_bytes(&[b]).is_ok(),
                Symbol::Token(t) => matcher.accept_token_id(t).is_ok(),
            };
            prop_assert_eq!(accepted, recognizes(&ir, &input, Mode::Prefix), "{:?}", input);
            if !accepted {
                break;
            }
            prop_assert_eq!(matcher.can_terminate(), recognizes(&ir, &input, Mode::Complete), "{:?}", input);
        }
    }
}

/// `validate_tokens` counts the valid prefix of a draft and leaves the
/// matcher as it was (its masks too); `accept_tokens` stops at the first
/// refused token, keeping those before it.
#[test]
fn drafts_are_validated_without_moving_and_accepted_up_to_a_refusal() {
    use xg_runtime::{TokenId, Vocabulary};
    let grammar = common::runtime_grammar(r#"root ::= "[" [0-9]+ ("," [0-9]+)* "]""#);
    let tokens: [&[u8]; 5] = [b"[", b"1", b",", b"]", b"x"];
    let vocabulary = Arc::new(Vocabulary::from_byte_strings(&tokens, &[]).unwrap());
    let id = |i: usize| TokenId::new(i).unwrap();
    let mut matcher = Matcher::with_vocabulary(grammar, vocabulary);
    let mut before = vec![0u32; 1];
    matcher.fill_next_token_bitmask(&mut before).unwrap();
    for (draft, valid) in [
        (vec![], 0),
        (vec![id(4)], 0),
        (vec![id(0), id(1), id(2), id(1), id(3)], 5),
        (vec![id(0), id(1), id(3), id(1)], 3),
    ] {
        assert_eq!(matcher.validate_tokens(&draft), valid, "{draft:?}");
        assert_eq!(matcher.steps(), 0);
        let mut after = vec![0u32; 1];
        matcher.fill_next_token_bitmask(&mut after).unwrap();
        assert_eq!(before, after);
    }
    let (accepted, _) = matcher.accept_tokens(&[id(0), id(1), id(4)]).unwrap_err();
    assert_eq!((accepted, matcher.steps()), (2, 2));
    assert!(matcher.accept_tokens(&[id(3)]).is_ok());
    assert!(matcher.can_terminate());
}

/// Why an output stops: it is complete with nothing after it, a stop token
/// or `terminate` ended it, or it goes on (`None`); a rollback undoes the
/// end and its reason.
#[test]
fn stop_reasons() {
    use xg_runtime::{StopReason, TokenId, Vocabulary};
    let grammar = runtime_grammar(r#"root ::= "ab" | "abc""#);
    let pieces: [&[u8]; 4] = [b"a", b"b", b"c", b"</s>"];
    let stop = TokenId::new(3).unwrap();
    let vocabulary = Vocabulary::from_byte_strings(&pieces, &[stop])
        .and_then(|vocabulary| vocabulary.with_stop_tokens(&[stop]))
        .unwrap();
    let mut matcher = Matcher::with_vocabulary(grammar, Arc::new(vocabulary));
    assert_eq!(matcher.stop_reason(), None);
    matcher.accept_str("ab").unwrap();
    // It may end, or go on with "c".
    assert_eq!(matcher.stop_reason(), None);
    matcher.accept_str("c").unwrap();
    assert_eq!(matcher.stop_reason(), Some(StopReason::Complete));
    matcher.accept_token(stop).unwrap();
    assert_eq!(matcher.stop_reason(), Some(StopReason::StopToken(stop)));
    matcher.rollback(1).unwrap();
    assert_eq!(matcher.stop_reason(), Some(StopReason::Complete));
    matcher.terminate().unwrap();
    assert_eq!(matcher.stop_reason(), Some(StopReason::Terminated));
    matcher.rollback(2).unwrap();
    assert_eq!(matcher.stop_reason(), None);
}

/// Captures: the matcher reports each captured rule's longest match from
/// each start, named after the rule; the text of a token matched by id is
/// its vocabulary's; a rollback takes back the matches of the steps it
/// undoes, and a rejected step adds none.
#[test]
fn captures_name_each_match_of_a_captured_rule() {
    use xg_runtime::{TokenId, Vocabulary};
    let grammar = runtime_grammar(
        r#"
        root ::= "<call " name ">" args "</call>" Token(2)
        name [capture] ::= [a-z_]+
        args [capture] ::= "{" (pair ("," pair)*)? "}"
        pair ::= key ":" [0-9]+
        key [capture] ::= [a-z]+
        "#,
    );
    let pieces: [&[u8]; 3] = [b"a", b"b", b"<end>"];
    let vocabulary = Arc::new(Vocabulary::from_byte_strings(&pieces, &[]).unwrap());
    let mut matcher = Matcher::with_vocabulary(grammar, vocabulary);
    let seen = |matcher: &Matcher| -> Vec<(String, usize, usize, String)> {
        let captures = matcher.captures();
        captures
            .iter()
            .map(|c| (c.name.clone(), c.start, c.end, c.text_lossy()))
            .collect()
    };
    let own = |list: &[(&str, usize, usize, &str)]| -> Vec<(String, usize, usize, String)> {
        let list = list.iter();
        list.map(|&(n, s, e, t)| (n.to_owned(), s, e, t.to_owned()))
            .collect()
    };
    matcher.accept_str("<call get_wea").unwrap();
    // A match so far: a name may end with any letter.
    assert_eq!(seen(&matcher), own(&[("name", 6, 13, "get_wea")]));
    matcher.accept_str("ther>{x:1,").unwrap();
    assert_eq!(
        seen(&matcher),
        own(&[("name", 6, 17, "get_weather"), ("key", 19, 20, "x")])
    );
    assert!(matcher.accept_str("y:}").is_err());
    matcher.accept_str("yz:2}</call>").unwrap();
    let all = own(&[
        ("name", 6, 17, "get_weather"),
        ("args", 18, 28, "{x:1,yz:2}"),
        ("key", 19, 20, "x"),
        ("key", 23, 25, "yz"),
    ]);
    assert_eq!(seen(&matcher), all);
    matcher.accept_token_id(TokenId::new(2).unwrap()).unwrap();
    assert_eq!(seen(&matcher), all);
    matcher.rollback(2).unwrap();
    assert_eq!(
        seen(&matcher),
        own(&[("name", 6, 17, "get_weather"), ("key", 19, 20, "x")])
    );
    // A grammar without captured rules reports none.
    let mut plain = Matcher::new(runtime_grammar("root ::= [a-z]+"));
    plain.accept_str("abc").unwrap();
    assert!(plain.captures().is_empty());
}

/// A special token matched inside a captured rule reads as its name, in
/// the capture and in a tool call's streamed arguments; a character written
/// over two steps is streamed whole once its second byte comes.
#[test]
fn special_tokens_in_captures_read_as_their_names() {
    use xg_runtime::{TokenId, ToolCallEvent, ToolCallStream, Vocabulary};
    let grammar = runtime_grammar(
        r#"
        root ::= "f" args "."
        args [capture="tool:f"] ::= "x" Token(2) "é" "y"
        "#,
    );
    let pieces: [&[u8]; 3] = [b"a", b"b", b"<|sep|>"];
    let sep = TokenId::new(2).unwrap();
    let vocabulary = Arc::new(Vocabulary::from_byte_strings(&pieces, &[sep]).unwrap());
    let mut matcher = Matcher::with_vocabulary(grammar, vocabulary);
    let mut stream = ToolCallStream::new();
    let mut deltas = Vec::new();
    let mut poll = |matcher: &mut Matcher, stream: &mut ToolCallStream| {
        for event in stream.poll(matcher) {
            if let ToolCallEvent::ArgumentsDelta { text, .. } = event {
                deltas.push(text);
            }
        }
    };
    matcher.accept_str("fx").unwrap();
    poll(&mut matcher, &mut stream);
    matcher.accept_token_id(sep).unwrap();
    poll(&mut matcher, &mut stream);
    for byte in "é".as_bytes() {
        matcher.accept_bytes(&[*byte]).unwrap();
        poll(&mut matcher, &mut stream);
    }
    matcher.accept_str("y.").unwrap();
    let last = stream.poll(&matcher);
    for event in &last {
        if let ToolCallEvent::ArgumentsDelta { text, .. } = event {
            deltas.push(text.clone());
        }
    }
    assert_eq!(deltas, ["x", "<|sep|>", "é", "y"]);
    assert!(last.contains(&ToolCallEvent::ToolCallFinished {
        index: 0,
        name: "f".into(),
        arguments: "x<|sep|>éy".into(),
    }));
    let captures = matcher.captures();
    assert_eq!(captures[0].text_lossy(), "x<|sep|>éy");
}

/// The matches [`Matcher::captures`] should report for `text` (accepted
/// whole), by the reference recognizer: for each captured rule `r` and each
/// start `i` where the grammar can call `r` after `text[..i]` — `text[..i]`
/// followed by a byte no grammar here uses (0xFF) is viable once `r` may
/// also be that byte — the longest `text[i..j]` that `r` matches; the
/// same span under the same name once.
fn reference_captures(ir: &ir::Grammar, text: &[u8]) -> Vec<(String, usize, usize)> {
    const MARK: u8 = 0xFF;
    let mut expected = Vec::new();
    for (index, rule) in ir.rules.iter().enumerate() {
        let Some(name) = &rule.capture else {
            continue;
        };
        let mut marked = ir.clone();
        marked.rules[index].body =
            ir::Expr::Choice(vec![rule.body.clone(), ir::Expr::Bytes(vec![MARK])]);
        let mut alone = ir.clone();
        alone.root = xg_runtime::RuleId::new(index).unwrap();
        for start in 0..=text.len() {
            let mut probe = text[..start].to_vec();
            probe.push(MARK);
            if !viable(&marked, &probe) {
                continue;
            }
            if let Some(end) = (start..=text.len())
                .rev()
                .find(|&end| complete(&alone, &text[start..end]))
            {
                expected.push((name.clone(), start, end));
            }
        }
    }
    expected.sort_by_key(|(name, start, end)| (*start, *end, name.clone()));
    expected.dedup();
    expected
}

proptest! {
    #![proptest_config(common::cases(48))]

    /// On random grammars with random rules captured (under their own
    /// names, or under one label several rules share), after each byte of
    /// walks the matcher accepts, the captures are the reference's.
    #[test]
    fn captures_agree_with_the_reference(
        source in random_grammar(),
        captured in prop::collection::vec(0..3u8, 4),
        seed in any::<u64>(),
    ) {
        let mut marked = String::new();
        for (line, capture) in source.lines().zip(&captured) {
            let line = match (line.split_once(" ::= "), capture) {
                (Some((name, body)), 1) => format!("{name} [capture] ::= {body}"),
                (Some((name, body)), 2) => format!("{name} [capture=\"shared\"] ::= {body}"),
                _ => line.to_owned(),
            };
            marked.push_str(&line);
            marked.push('\n');
        }
        let ir = compile(&marked);
        let grammar = runtime_grammar(&marked);
        let mut rng = Rng::new(seed);
        for _ in 0..3 {
            let text = valid_walk(&grammar, &mut rng, 16);
            let mut matcher = Matcher::new(Arc::clone(&grammar));
            for end in 1..=text.len() {
                matcher.accept_bytes(&text[end - 1..end]).unwrap();
                let seen: Vec<(String, usize, usize)> = matcher
                    .captures()
                    .into_iter()
                    .map(|c| {
                        prop_assert_eq!(&c.text, &text[c.start..c.end]);
                        Ok((c.name, c.start, c.end))
                    })
                    .collect::<Result<_, TestCaseError>>()?;
                let expected = reference_captures(&ir, &text[..end]);
                prop_assert_eq!(
                    seen,
                    expected,
                    "{} after {:?}",
                    marked,
                    String::from_utf8_lossy(&text[..end])
                );
            }
        }
    }
}
