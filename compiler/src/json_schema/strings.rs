//! JSON string bodies: characters as they are written inside quotes, the
//! strings of a pattern (ECMA-262 regex), literal strings, and strings that
//! are none of a given set.
//!
//! A constrained string (a pattern, a format, an enum, a property name) is
//! written in *canonical* form: every character as itself except `"`, `\`
//! and the control characters, which are escaped (`\"`, `\\`, `\n` or
//! `\u000a`, …). An unconstrained string accepts every escape JSON has.

use std::cell::RefCell;
use std::collections::HashMap;

use regex_syntax::hir::{Class, Hir, HirKind, Look};

use super::grammar::G;

/// Characters that must be escaped in a JSON string.
fn must_escape(c: char) -> bool {
    c == '"' || c == '\\' || c < '\u{20}'
}

/// The two-character escape of a control character, if JSON has one.
fn short_escape(c: char) -> Option<char> {
    match c {
        '\u{8}' => Some('b'),
        '\u{c}' => Some('f'),
        '\n' => Some('n'),
        '\r' => Some('r'),
        '\t' => Some('t'),
        _ => None,
    }
}

/// A hex digit in either case.
fn hex_digit(value: u32) -> G {
    let c = char::from_digit(value, 16).expect("a hex digit");
    G::class([(c, c), (c.to_ascii_uppercase(), c.to_ascii_uppercase())])
}

/// `\u00XX` for control character `c`, hex digits in either case.
fn unicode_escape(c: char) -> G {
    let value = u32::from(c);
    G::seq([
        G::lit("\\u00"),
        hex_digit(value >> 4),
        hex_digit(value & 0xF),
    ])
}

/// The printable ASCII characters written as themselves (all but `"` and
/// `\`): the characters property names are usually made of.
pub(crate) const PLAIN: [(char, char); 3] = [(' ', '!'), ('#', '['), (']', '~')];

/// Whether every character of `text` is one of the [`PLAIN`] ones.
pub(crate) fn is_plain(text: &str) -> bool {
    text.chars()
        .all(|c| PLAIN.iter().any(|&(lo, hi)| lo <= c && c <= hi))
}

/// Every character but the [`PLAIN`] ones: with them, any character.
pub(crate) const NOT_PLAIN: [(char, char); 4] = [
    ('\0', '\u{1f}'),
    ('"', '"'),
    ('\\', '\\'),
    ('\u{7f}', char::MAX),
];

/// One character of `ranges`, written canonically inside a JSON string.
pub(crate) fn encoded_class(ranges: &[(char, char)]) -> G {
    let raw: Vec<(char, char)> = ranges
        .iter()
        .flat_map(|&(lo, hi)| {
            // Cut out `"`, `\` and the controls.
            let cuts = [('\0', '\u{1f}'), ('"', '"'), ('\\', '\\')];
            let mut pieces = vec![(lo, hi)];
            for (cut_lo, cut_hi) in cuts {
                pieces = pieces
                    .into_iter()
                    .flat_map(|(a, b)| subtract((a, b), (cut_lo, cut_hi)))
                    .collect();
            }
            pieces
        })
        .collect();
    let mut alternatives = vec![G::class(raw)];
    let contains = |c: char| ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi);
    if contains('"') {
        alternatives.push(G::lit("\\\""));
    }
    if contains('\\') {
        alternatives.push(G::lit("\\\\"));
    }
    let controls: Vec<char> = ('\0'..='\u{1f}').filter(|&c| contains(c)).collect();
    if controls.len() == 32 {
        alternatives.push(G::seq([
            G::lit("\\"),
            G::alt([
                G::class([('b', 'b'), ('f', 'f'), ('n', 'n'), ('r', 'r'), ('t', 't')]),
                G::seq([
                    G::lit("u00"),
                    G::class([('0', '1')]),
                    G::class([('0', '9'), ('a', 'f'), ('A', 'F')]),
                ]),
            ]),
        ]));
    } else {
        for c in controls {
            if let Some(short) = short_escape(c) {
                alternatives.push(G::lit(format!("\\{short}")));
            }
            alternatives.push(unicode_escape(c));
        }
    }
    G::alt(alternatives)
}

/// `a` without the characters of `b`, as zero, one or two ranges.
fn subtract((lo, hi): (char, char), (cut_lo, cut_hi): (char, char)) -> Vec<(char, char)> {
    if cut_hi < lo || hi < cut_lo {
        return vec![(lo, hi)];
    }
    let mut out = Vec::new();
    if lo < cut_lo {
        out.push((lo, before(cut_lo)));
    }
    if cut_hi < hi {
        out.push((after(cut_hi), hi));
    }
    out
}

fn before(c: char) -> char {
    match c {
        '\u{E000}' => '\u{D7FF}',
        c => char::from_u32(u32::from(c) - 1).expect("not the first character"),
    }
}

fn after(c: char) -> char {
    match c {
        '\u{D7FF}' => '\u{E000}',
        c => char::from_u32(u32::from(c) + 1).expect("not the last character"),
    }
}

/// The text `value` as it is written inside a JSON string, canonically.
pub(crate) fn encoded_text(value: &str) -> G {
    // Runs of characters written as they are make one literal each, not
    // one per character joined after: property names and `enum` strings
    // are a tenth of a large schema's compile.
    let mut parts = Vec::new();
    let mut plain = String::new();
    for c in value.chars() {
        if must_escape(c) {
            if !plain.is_empty() {
                parts.push(G::Lit(std::mem::take(&mut plain)));
            }
            parts.push(encoded_class(&[(c, c)]));
        } else {
            plain.push(c);
        }
    }
    if !plain.is_empty() {
        parts.push(G::Lit(plain));
    }
    G::seq(parts)
}

/// A string body (between the quotes) that is none of `excluded`, written
/// canonically. Built from the trie of the excluded strings: a body ends
/// at a node where no excluded string ends, or leaves the trie by a
/// character no excluded string has there and goes on with anything.
/// `any` is one canonical character and `not_plain` one of the
/// [`NOT_PLAIN`] characters (usually shared rules).
///
/// The choice is written as three tries side by side — the bodies that
/// end inside the trie, those that leave it by a plain character, and
/// those that leave it by `not_plain` — each followed once by what comes
/// after, not once per node: the automaton is built with one tail for all
/// the nodes (a few nodes per character of the trie instead of a copy of
/// the tail's per character), which is most of the compile time of
/// schemas with many objects that allow extra properties.
///
/// `part` makes a rule of a subtrie: a trie is as deep as the longest
/// excluded string, and no rule body may nest that deep (see
/// [`super::grammar::MAX_HEIGHT`]).
pub(crate) fn encoded_text_except(
    excluded: &[&str],
    any: &G,
    not_plain: &G,
    part: &mut dyn FnMut(G) -> G,
) -> G {
    let mut set: Vec<Vec<char>> = excluded.iter().map(|s| s.chars().collect()).collect();
    set.sort();
    set.dedup();
    let tries = except_tries(&set, part);
    let rest = G::rep(any.clone(), 0, None);
    G::alt([
        tries.ends,
        G::seq([tries.leaves, rest.clone()]),
        G::seq([tries.leaves_not_plain, not_plain.clone(), rest]),
    ])
}

/// Levels of nesting the tries of a node may reach before they become
/// rules (two per character; a class or escape takes up to four): a
/// name of about 100 characters.
const TRIE_HEIGHT: usize = 200;

/// Below one node of the excluded strings' trie: the three ways a body
/// that is none of them goes on from there.
struct ExceptTries {
    /// Ends inside the trie, where no excluded string ends.
    ends: G,
    /// Goes down the trie, then takes a character no excluded string has
    /// next (a plain one where every excluded string goes on with a plain
    /// one, then `not_plain` is in `leaves_not_plain`).
    leaves: G,
    /// Goes down the trie to a node where `not_plain` leaves it.
    leaves_not_plain: G,
}

/// A node of the trie whose [`ExceptTries`] are being built: the choices
/// so far, and the runs of strings below it still to go.
struct TrieNode<'s> {
    depth: usize,
    /// Per next character, the strings that go on with it.
    runs: Vec<(char, &'s [Vec<char>])>,
    /// Runs done.
    next: usize,
    ends: Vec<G>,
    leaves: Vec<G>,
    leaves_not_plain: Vec<G>,
    /// Levels of nesting of the choices so far.
    height: usize,
}

impl<'s> TrieNode<'s> {
    /// The node below which `strings` (sorted, sharing their first `depth`
    /// characters) go on, with the ways to leave the trie at it.
    fn new(strings: &'s [Vec<char>], depth: usize) -> Self {
        // Sorted: the strings that end here come first, then one run per
        // next character.
        let ends_here = strings.iter().take_while(|s| s.len() == depth).count();
        let mut runs: Vec<(char, &[Vec<char>])> = Vec::new();
        let mut rest = &strings[ends_here..];
        while let Some(first) = rest.first() {
            let c = first[depth];
            let len = rest.iter().take_while(|s| s[depth] == c).count();
            runs.push((c, &rest[..len]));
            rest = &rest[len..];
        }
        let all_plain = runs
            .iter()
            .all(|&(c, _)| PLAIN.iter().any(|&(lo, hi)| lo <= c && c <= hi));
        let mut other = if all_plain {
            PLAIN.to_vec()
        } else {
            vec![('\0', char::MAX)]
        };
        for &(c, _) in &runs {
            other = other
                .into_iter()
                .flat_map(|range| subtract(range, (c, c)))
                .collect();
        }
        let leave = if all_plain {
            G::class(other)
        } else {
            encoded_class(&other)
        };
        TrieNode {
            depth,
            runs,
            next: 0,
            ends: vec![if ends_here == 0 { G::Empty } else { G::Nothing }],
            leaves: vec![leave],
            leaves_not_plain: vec![if all_plain { G::Empty } else { G::Nothing }],
            height: 4,
        }
    }

    /// Adds the tries below the next run (`height` levels) to the choices.
    fn add_child(&mut self, below: ExceptTries, height: usize) {
        let (c, _) = self.runs[self.next];
        self.next += 1;
        let lead = encoded_class(&[(c, c)]);
        self.ends.push(G::seq([lead.clone(), below.ends]));
        self.leaves.push(G::seq([lead.clone(), below.leaves]));
        self.leaves_not_plain
            .push(G::seq([lead, below.leaves_not_plain]));
        self.height = self.height.max(height + 1);
    }
}

/// The [`ExceptTries`] of the trie of `strings` (sorted), built bottom-up
/// without recursion; tries `TRIE_HEIGHT` levels high go to `part`.
fn except_tries(strings: &[Vec<char>], part: &mut dyn FnMut(G) -> G) -> ExceptTries {
    let mut open = vec![TrieNode::new(strings, 0)];
    loop {
        let top = open.last_mut().expect("the root is open until the end");
        if let Some(&(_, run)) = top.runs.get(top.next) {
            let depth = top.depth + 1;
            open.push(TrieNode::new(run, depth));
            continue;
        }
        let node = open.pop().expect("the top node");
        let mut tries = ExceptTries {
            ends: G::alt(node.ends),
            leaves: G::alt(node.leaves),
            leaves_not_plain: G::alt(node.leaves_not_plain),
        };
        let mut height = node.height + 1;
        if height >= TRIE_HEIGHT {
            tries = ExceptTries {
                ends: part(tries.ends),
                leaves: part(tries.leaves),
                leaves_not_plain: part(tries.leaves_not_plain),
            };
            height = 0;
        }
        match open.last_mut() {
            Some(parent) => parent.add_child(tries, height),
            None => return tries,
        }
    }
}

/// Why a pattern cannot be turned into a grammar exactly.
#[derive(Debug)]
pub(crate) struct PatternError(pub(crate) String);

/// The string bodies (canonically written) whose decoded text matches the
/// ECMA-262 `pattern` somewhere, as JSON Schema's `pattern` means it: not
/// anchored unless the pattern says `^` / `$`.
pub(crate) fn pattern_body(pattern: &str) -> Result<G, PatternError> {
    let translated = ecma_to_rust(pattern)?;
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(&translated)
        .map_err(|err| PatternError(describe_parse_error(&err)))?;
    let alternatives: Vec<&Hir> = match strip_captures(&hir).kind() {
        HirKind::Alternation(items) => items.iter().collect(),
        _ => vec![&hir],
    };
    let any = || G::rep(encoded_class(&[('\0', char::MAX)]), 0, None);
    // The alternatives grouped by their anchors, each group one choice
    // between its `any*` ends: `any* (A | B) any*`, not `any* A any* |
    // any* B any*`, whose automaton would remember which alternatives have
    // matched so far (2^n subsets where determinization gives up) instead
    // of only whether one has.
    let mut groups: [Vec<G>; 4] = Default::default();
    for alternative in alternatives {
        let mut items: Vec<&Hir> = match strip_captures(alternative).kind() {
            HirKind::Concat(items) => items.iter().collect(),
            _ => vec![alternative],
        };
        let anchored_start = matches!(
            items.first().map(|h| h.kind()),
            Some(HirKind::Look(Look::Start))
        );
        if anchored_start {
            items.remove(0);
        }
        let anchored_end = matches!(
            items.last().map(|h| h.kind()),
            Some(HirKind::Look(Look::End))
        );
        if anchored_end {
            items.pop();
        }
        let core = items
            .into_iter()
            .map(translate)
            .collect::<Result<Vec<G>, PatternError>>()?;
        groups[usize::from(anchored_start) * 2 + usize::from(anchored_end)].push(G::seq(core));
    }
    let mut out = Vec::new();
    for (anchors, group) in groups.into_iter().enumerate() {
        if group.is_empty() {
            continue;
        }
        let (anchored_start, anchored_end) = (anchors >= 2, anchors % 2 == 1);
        let mut core = G::alt(group);
        if !anchored_start {
            core = after_anything(core);
        }
        if !anchored_end {
            core = before_anything(core);
        }
        let mut parts = Vec::new();
        if !anchored_start {
            parts.push(any());
        }
        parts.push(core);
        if !anchored_end {
            parts.push(any());
        }
        out.push(G::seq(parts));
    }
    Ok(G::alt(out))
}

/// Whether a translated pattern part matches the empty string.
fn nullable(g: &G) -> bool {
    match g {
        G::Empty => true,
        G::Seq(items) => items.iter().all(nullable),
        G::Alt(items) => items.iter().any(nullable),
        G::Rep(inner, min, _) => *min == 0 || nullable(inner),
        G::Nothing | G::Lit(_) | G::Class(_) | G::Ref(_) | G::Except(_) => false,
    }
}

/// A smaller `p'` with `p' any*` = `p any*`, for a pattern not anchored at
/// its end: what may follow a match is free, so a nullable tail of the
/// match adds nothing (`https?://[\w.]+(:\d+)?(/.*)?` is found exactly
/// where `https?://[\w.]` is). Without the tail every state after the
/// match is one state (anything, then the closing quote), where the
/// optional parts kept states apart that masks had to tell apart.
fn before_anything(g: G) -> G {
    if nullable(&g) {
        return G::Empty;
    }
    match g {
        G::Seq(mut items) => {
            while items.last().is_some_and(nullable) {
                items.pop();
            }
            let last = items.pop().map(before_anything);
            G::seq(items.into_iter().chain(last))
        }
        G::Alt(items) => G::alt(items.into_iter().map(before_anything)),
        // `x{min,max} any*` is `x{min} any*`: the first `min - 1`, then
        // the last without its tail.
        G::Rep(inner, min, _) => {
            let rest = G::rep((*inner).clone(), min - 1, Some(min - 1));
            G::seq([rest, before_anything(*inner)])
        }
        g => g,
    }
}

/// A smaller `p'` with `any* p'` = `any* p`, for a pattern not anchored at
/// its start: [`before_anything`] at the other end.
fn after_anything(g: G) -> G {
    if nullable(&g) {
        return G::Empty;
    }
    match g {
        G::Seq(items) => {
            let mut items = items.into_iter().skip_while(nullable);
            let first = items.next().map(after_anything);
            G::seq(first.into_iter().chain(items))
        }
        G::Alt(items) => G::alt(items.into_iter().map(after_anything)),
        G::Rep(inner, min, _) => {
            let rest = G::rep((*inner).clone(), min - 1, Some(min - 1));
            G::seq([after_anything(*inner), rest])
        }
        g => g,
    }
}

/// A matcher for the ECMA-262 `pattern` (unanchored, as JSON Schema means
/// it), if it compiles.
///
/// Compiled patterns are kept per thread (at most [`PATTERN_MEMO`]): a
/// schema tests every declared property name against each of its
/// `patternProperties`, and building the matcher costs about 100 µs where
/// running it costs well under one (Snowplow's 130-property events spent
/// 35 ms compiling two patterns again and again).
pub(crate) fn pattern_regex(pattern: &str) -> Option<regex_automata::meta::Regex> {
    thread_local! {
        static COMPILED: RefCell<HashMap<String, Option<regex_automata::meta::Regex>>> =
            RefCell::new(HashMap::new());
    }
    COMPILED.with_borrow_mut(|compiled| {
        if let Some(regex) = compiled.get(pattern) {
            return regex.clone();
        }
        let regex = ecma_to_rust(pattern).ok().and_then(|rust| {
            regex_automata::meta::Builder::new()
                .configure(matcher_config())
                .build(&rust)
                .ok()
        });
        if compiled.len() >= PATTERN_MEMO {
            compiled.clear();
        }
        compiled.insert(pattern.to_owned(), regex.clone());
        regex
    })
}

/// How [`pattern_regex`] builds its matchers: without the fully built
/// DFA and the one-pass DFA. Each is only run on property names and listed
/// values (a few bytes, a few times), where the lazy DFA answers as fast,
/// and building the dense DFA cost ~500 K instructions a pattern — a fifth
/// of compiling `service-schema.json`, whose 276 patterns are each a word.
fn matcher_config() -> regex_automata::meta::Config {
    regex_automata::meta::Config::new()
        .dfa(false)
        .onepass(false)
}

/// How many compiled patterns [`pattern_regex`] keeps per thread.
const PATTERN_MEMO: usize = 256;

fn strip_captures(hir: &Hir) -> &Hir {
    match hir.kind() {
        HirKind::Capture(capture) => strip_captures(&capture.sub),
        _ => hir,
    }
}

fn translate(hir: &Hir) -> Result<G, PatternError> {
    Ok(match hir.kind() {
        HirKind::Empty => G::Empty,
        HirKind::Literal(literal) => {
            let text = std::str::from_utf8(&literal.0)
                .map_err(|_| PatternError("the pattern matches bytes that are not UTF-8".into()))?;
            encoded_text(text)
        }
        HirKind::Class(Class::Unicode(class)) => {
            let ranges: Vec<(char, char)> = class
                .ranges()
                .iter()
                .map(|r| (r.start(), r.end()))
                .collect();
            encoded_class(&ranges)
        }
        HirKind::Class(Class::Bytes(_)) => {
            return Err(PatternError(
                "byte classes are not supported in a pattern".into(),
            ));
        }
        HirKind::Look(look) => {
            return Err(PatternError(format!(
                "the assertion {} can only be used at the start or end of a pattern",
                look_name(*look)
            )));
        }
        HirKind::Repetition(repetition) => {
            G::rep(translate(&repetition.sub)?, repetition.min, repetition.max)
        }
        HirKind::Capture(capture) => translate(&capture.sub)?,
        HirKind::Concat(items) => {
            G::seq(items.iter().map(translate).collect::<Result<Vec<_>, _>>()?)
        }
        HirKind::Alternation(items) => {
            G::alt(items.iter().map(translate).collect::<Result<Vec<_>, _>>()?)
        }
    })
}

fn look_name(look: Look) -> &'static str {
    match look {
        Look::Start | Look::StartLF | Look::StartCRLF => "`^`",
        Look::End | Look::EndLF | Look::EndCRLF => "`$`",
        _ => "`\\b` (word boundary)",
    }
}

fn describe_parse_error(err: &regex_syntax::Error) -> String {
    let text = err.to_string();
    if text.contains("look-around") {
        "look-around (`(?=`, `(?!`, `(?<=`, `(?<!`) is not supported".to_string()
    } else if text.contains("backreferences") {
        "backreferences are not supported".to_string()
    } else {
        // regex-syntax's message is multi-line with a caret; keep its last line.
        let last = text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or(&text);
        last.trim_start_matches("error: ").to_string()
    }
}

/// Rewrites an ECMA-262 pattern in regex-syntax's dialect: `\d`, `\w` and
/// their negations are ASCII-only, `\s` is ECMA's white space and line
/// terminators (with U+FEFF, without U+0085), `.` stops at every line
/// terminator, and `[^]` is any character.
fn ecma_to_rust(pattern: &str) -> Result<String, PatternError> {
    const NOT_DIGIT: &str = "\\x00-/:-\\x{10FFFF}";
    const NOT_WORD: &str = "\\x00-/:-@\\[-\\^`\\{-\\x{10FFFF}";
    const SPACE: &str = "\\t\\n\\x0B\\x0C\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}";
    const NOT_SPACE: &str = "\\x00-\\x08\\x0E-\\x1F\\x21-\\x{9F}\\x{A1}-\\x{167F}\\x{1681}-\\x{1FFF}\\x{200B}-\\x{2027}\\x{202A}-\\x{202E}\\x{2030}-\\x{205E}\\x{2060}-\\x{2FFF}\\x{3001}-\\x{FEFE}\\x{FF00}-\\x{10FFFF}";
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(next) = chars.next() else {
                    return Err(PatternError("the pattern ends with a lone `\\`".into()));
                };
                let replacement = match (next, in_class) {
                    ('d', false) => Some("[0-9]".to_string()),
                    ('d', true) => Some("0-9".to_string()),
                    ('D', false) => Some("[^0-9]".to_string()),
                    ('D', true) => Some(NOT_DIGIT.to_string()),
                    ('w', false) => Some("[0-9A-Za-z_]".to_string()),
                    ('w', true) => Some("0-9A-Za-z_".to_string()),
                    ('W', false) => Some("[^0-9A-Za-z_]".to_string()),
                    ('W', true) => Some(NOT_WORD.to_string()),
                    ('s', false) => Some(format!("[{SPACE}]")),
                    ('s', true) => Some(SPACE.to_string()),
                    ('S', false) => Some(format!("[{NOT_SPACE}]")),
                    ('S', true) => Some(NOT_SPACE.to_string()),
                    ('/', _) => Some("/".to_string()),
                    _ => None,
                };
                match replacement {
                    Some(text) => out.push_str(&text),
                    None => {
                        out.push('\\');
                        out.push(next);
                    }
                }
            }
            '[' if !in_class => {
                if chars.peek() == Some(&'^') {
                    chars.next();
                    if chars.peek() == Some(&']') {
                        chars.next();
                        out.push_str("[\\x00-\\x{10FFFF}]");
                        continue;
                    }
                    out.push_str("[^");
                } else {
                    out.push('[');
                }
                in_class = true;
                // A `]` right after `[` or `[^` is a literal in regex-syntax
                // but ends an empty class in ECMA; ECMA's `[]` matches nothing.
                if chars.peek() == Some(&']') {
                    return Err(PatternError("an empty class `[]` never matches".into()));
                }
            }
            '[' => out.push_str("\\["),
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            '.' if !in_class => out.push_str("[^\\n\\r\\x{2028}\\x{2029}]"),
            c => out.push(c),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ecma_classes_are_ascii() {
        assert_eq!(ecma_to_rust(r"^\d+$").unwrap(), "^[0-9]+$");
        assert_eq!(ecma_to_rust(r"[\w.-]").unwrap(), "[0-9A-Za-z_.-]");
        assert_eq!(ecma_to_rust(r"a\/b").unwrap(), "a/b");
        assert!(ecma_to_rust("[]").is_err());
        let space = pattern_regex(r"^\s$").unwrap();
        let not_space = pattern_regex(r"^[\S]$").unwrap();
        for c in ['\u{feff}', '\u{2028}', '\t', '\u{a0}'] {
            assert!(space.is_match(&c.to_string()) && !not_space.is_match(&c.to_string()));
        }
        for c in ['\u{85}', 'a', '\u{200b}'] {
            assert!(!space.is_match(&c.to_string()) && not_space.is_match(&c.to_string()));
        }
    }

    #[test]
    fn text_is_encoded_as_runs_with_each_escaped_character_on_its_own() {
        // As the text one character at a time, joined: the reference.
        let one_at_a_time = |text: &str| {
            G::seq(text.chars().map(|c| {
                if must_escape(c) {
                    encoded_class(&[(c, c)])
                } else {
                    G::lit(c.to_string())
                }
            }))
        };
        for text in [
            "name",
            "",
            "a\"b",
            "\\",
            "tab\there",
            "\"\"",
            "caf\u{e9}\u{1}",
            "x\ny\"z\\",
        ] {
            assert_eq!(encoded_text(text), one_at_a_time(text), "{text:?}");
        }
        assert_eq!(encoded_text("name"), G::lit("name"));
    }

    #[test]
    fn lookaround_and_backreferences_are_refused() {
        assert!(
            pattern_body("(?=a)b")
                .unwrap_err()
                .0
                .contains("look-around")
        );
        assert!(
            pattern_body(r"(a)\1")
                .unwrap_err()
                .0
                .contains("backreference")
        );
        assert!(pattern_body(r"a\bb").unwrap_err().0.contains("boundary"));
    }
}
