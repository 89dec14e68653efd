//! Captures: the text of each match of a captured rule (`name [capture]
//! ::= …` in `.xg`), read off the rows a step adds.
//!
//! A rule's match ends in a row where an item of the rule is final (or its
//! dispatch ends); the item's origin is the row the match began in. A
//! matcher of a grammar with captured rules keeps the symbols it accepted
//! and the matches of captured rules its steps' rows hold, so asking costs
//! the matches, not the output. Grammars without captured rules keep
//! nothing.
//!
//! The text of a captured tag dispatch is its free text: up to the trigger
//! or stop string that ends it (excluded), not what its arms match, and
//! without the bytes at its end that may begin one; one with no free
//! text is not listed.

use rustc_hash::FxHashSet;

use super::Matcher;
use super::earley::Symbol;
use super::history::{History, awaited_rules};
use super::item::{Item, Kind};
use crate::grammar::Grammar;
use crate::scanner;
use crate::tables::RuleRecord;

/// A match of a captured rule ([`Matcher::captures`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capture {
    /// The rule's name.
    pub name: String,
    /// Where the match begins: the number of symbols (bytes, and tokens
    /// matched by id) accepted before it.
    pub start: usize,
    /// Where it ends: the number of symbols accepted up to its end.
    pub end: usize,
    /// Its text: the bytes it matched, with the name of a special token
    /// it matched (`<|sep|>`) where the matcher has a vocabulary.
    pub text: Vec<u8>,
}

impl Capture {
    /// The text as a string, invalid UTF-8 replaced by U+FFFD (a match
    /// written byte by byte may end inside a character).
    pub fn text_lossy(&self) -> String {
        String::from_utf8_lossy(&self.text).into_owned()
    }
}

/// A match of a captured rule: the rule, the rows it began and ended in,
/// and the row its text ends in (before `end` for a tag dispatch whose
/// free text a trigger or stop string ended).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Match {
    pub rule: u32,
    pub origin: u32,
    pub end: u32,
    pub text_end: u32,
}

/// What a matcher of a grammar with captured rules keeps.
#[derive(Clone, Debug, Default)]
pub(super) struct CaptureLog {
    /// The symbol each row after the first was built from.
    input: Vec<Symbol>,
    /// The matches of captured rules, by end row.
    matches: Vec<Match>,
}

impl CaptureLog {
    /// Records the symbol the next row is built from.
    pub(super) fn input(&mut self, symbol: Symbol) {
        self.input.push(symbol);
    }

    /// Records the matches of captured rules that end in the rows from
    /// `first` on.
    pub(super) fn scan(&mut self, grammar: &Grammar, history: &History, first: usize) {
        for row in first..history.rows() {
            let end = u32::try_from(row).expect("rows fit in u32");
            let before = self.matches.len();
            for item in history.row(row) {
                let Some(rule) = completed_rule(grammar, item) else {
                    continue;
                };
                if !grammar.rule(rule).is_captured() {
                    continue;
                }
                let text_end = free_text_end(grammar, history, &self.input, rule, item.origin, row);
                let found = Match {
                    rule,
                    origin: item.origin,
                    end,
                    text_end: u32::try_from(text_end).expect("rows fit in u32"),
                };
                // Several items (contexts, final nodes) end one match.
                if !self.matches[before..].contains(&found) {
                    self.matches.push(found);
                }
            }
        }
    }

    /// Every match recorded, by end row.
    pub(super) fn matches(&self) -> &[Match] {
        &self.matches
    }

    /// Forgets the rows from `rows` on.
    pub(super) fn truncate(&mut self, rows: usize) {
        self.input.truncate(rows.saturating_sub(1));
        let kept = self.matches.partition_point(|m| (m.end as usize) < rows);
        self.matches.truncate(kept);
    }
}

/// The scanner state of the free text of tag dispatch `rule`, begun at row
/// `origin`, in `row`, if the row is in that free text.
fn free_state(history: &History, row: usize, rule: u32, origin: u32) -> Option<u32> {
    history
        .row(row)
        .iter()
        .find(|item| item.kind == Kind::Free && item.a == rule && item.origin == origin)
        .map(|item| item.aux)
}

/// Where the text of `rule`'s match from row `origin` to row `end` ends:
/// `end`, unless the rule is a tag dispatch — then where the trigger or
/// stop string that ended its free text begins, or, for a match that ends
/// in free text, before the bytes there that may begin one.
fn free_text_end(
    grammar: &Grammar,
    history: &History,
    input: &[Symbol],
    rule: u32,
    origin: u32,
    end: usize,
) -> usize {
    let record = grammar.rule(rule);
    if record.kind != RuleRecord::DISPATCH {
        return end;
    }
    // The last row of the free text: its strings end a row after it.
    let mut row = end;
    while row > origin as usize && free_state(history, row, rule, origin).is_none() {
        row -= 1;
    }
    let state = free_state(history, row, rule, origin);
    if row == end {
        let depth = state
            .zip(grammar.scanner(record.body))
            .map_or(0, |(state, scanner)| scanner.depth(state));
        return end.saturating_sub(depth).max(origin as usize);
    }
    let (Some(state), Some(scanner), Some(&Symbol::Byte(byte))) =
        (state, grammar.scanner(record.body), input.get(row))
    else {
        return row;
    };
    let (_, found) = scanner.step(state, byte);
    if found == scanner::NONE {
        return row;
    }
    let pattern = grammar.pattern(grammar.dispatch(record).first_pattern + found);
    (row + 1)
        .saturating_sub(pattern.len as usize)
        .max(origin as usize)
}

/// The rule `item` is in and the row its match began in, if the item can
/// still take input (it is not a match that has ended and can go no
/// further).
fn live_rule(grammar: &Grammar, item: &Item) -> Option<(u32, u32)> {
    let rule = match item.kind {
        Kind::Node if grammar.in_lookahead(item.a) || grammar.edges(item.a).is_empty() => {
            return None;
        }
        Kind::Node => grammar.node_rule(item.a),
        Kind::Repeat => grammar.node_rule(grammar.edge_node(item.a)),
        Kind::Free | Kind::TokenFree | Kind::Arm | Kind::TokenArm => item.a,
        Kind::Ended | Kind::Root | Kind::SeedEnd | Kind::Wild | Kind::Done | Kind::Any => {
            return None;
        }
    };
    Some((rule, item.origin))
}

/// The rule whose match `item` ends, if it ends one.
fn completed_rule(grammar: &Grammar, item: &Item) -> Option<u32> {
    match item.kind {
        Kind::Node if grammar.is_final(item.a) && !grammar.in_lookahead(item.a) => {
            Some(grammar.node_rule(item.a))
        }
        Kind::Free if grammar.dispatch(grammar.rule(item.a)).stop_at_end == 1 => Some(item.a),
        Kind::Ended | Kind::TokenFree => Some(item.a),
        _ => None,
    }
}

impl Matcher {
    /// The matches of the grammar's captured rules (`name [capture] ::=
    /// …`, or `[capture="label"]` to report them under another name) in
    /// the output so far, by where they begin and end: each rule's longest
    /// match from each start (a number's digits are one capture, not one
    /// per digit), rules captured under one name that match the same text
    /// listed once. A match is listed as soon as it ends; in a grammar that
    /// reads the same text in more than one way, a match that a later
    /// symbol rules out stays listed. Empty for grammars without captured
    /// rules; [`Matcher::rollback`] takes back the matches of the steps it
    /// undoes.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use xg_runtime::{Grammar, Matcher};
    /// # fn demo(grammar: Arc<Grammar>) {
    /// // call ::= "<call name=\"" name "\">" args "</call>"
    /// // name [capture] ::= [a-z_]+
    /// let mut matcher = Matcher::new(grammar);
    /// matcher.accept_str("<call name=\"get_weather\">").unwrap();
    /// let name = &matcher.captures()[0];
    /// assert_eq!((name.name.as_str(), name.text_lossy()), ("name", "get_weather".into()));
    /// # }
    /// ```
    pub fn captures(&self) -> Vec<Capture> {
        let Some(log) = &self.captures else {
            return Vec::new();
        };
        let mut longest: Vec<Match> = Vec::with_capacity(log.matches.len());
        let mut by_start = log.matches.clone();
        // Stable: a rule's matches from one start stay in end order.
        by_start.sort_by_key(|m| (m.origin, m.rule));
        for found in by_start {
            match longest.last_mut() {
                Some(last) if (last.origin, last.rule) == (found.origin, found.rule) => {
                    *last = found;
                }
                _ => longest.push(found),
            }
        }
        let name = |found: &Match| self.parse.grammar.tables().rule_name(found.rule);
        longest.sort_by(|a, b| (a.origin, a.end, name(a)).cmp(&(b.origin, b.end, name(b))));
        // Rules captured under one name that match the same text are one
        // capture.
        longest.dedup_by(|a, b| (a.origin, a.end, name(a)) == (b.origin, b.end, name(b)));
        // A tag dispatch's free text only, and only when it has some.
        longest.retain(|found| found.text_end > found.origin || !self.is_dispatch(found.rule));
        longest
            .into_iter()
            .map(|found| Capture {
                name: name(&found).to_owned(),
                start: found.origin as usize,
                end: found.end as usize,
                text: self.symbol_text(&log.input[found.origin as usize..found.text_end as usize]),
            })
            .collect()
    }

    /// The matches of captured rules so far, if the grammar has captured
    /// rules.
    pub(super) fn capture_matches(&self) -> Option<&[Match]> {
        self.captures.as_ref().map(CaptureLog::matches)
    }

    fn is_dispatch(&self, rule: u32) -> bool {
        self.parse.grammar.rule(rule).kind == RuleRecord::DISPATCH
    }

    /// Where the free text of tag dispatch `rule`, begun at row `origin`,
    /// is: `None` if `rule` is not a tag dispatch; else the row up to which
    /// it is free text for certain (the bytes after it may begin a trigger
    /// or stop string), and whether it has ended.
    pub(super) fn free_text(&self, rule: u32, origin: u32) -> Option<(usize, bool)> {
        let record = self.parse.grammar.rule(rule);
        if record.kind != RuleRecord::DISPATCH {
            return None;
        }
        let last = self.parse.history.rows() - 1;
        if let Some(state) = free_state(&self.parse.history, last, rule, origin) {
            if self.terminated {
                return Some((last, true));
            }
            let scanner = self.parse.grammar.scanner(record.body)?;
            return Some((last.saturating_sub(scanner.depth(state)), false));
        }
        let input = self.captures.as_ref().map_or(&[][..], |log| &log.input[..]);
        let end = free_text_end(
            &self.parse.grammar,
            &self.parse.history,
            input,
            rule,
            origin,
            last,
        );
        Some((end, true))
    }

    /// The text of the input from row `start` to row `end`.
    pub(super) fn input_text(&self, start: usize, end: usize) -> Vec<u8> {
        self.captures
            .as_ref()
            .map_or_else(Vec::new, |log| self.symbol_text(&log.input[start..end]))
    }

    /// The rule matches in progress: each rule, with the row its match
    /// began in, that some parse of the output so far is inside of and
    /// that can still take input — the rules of the last row's items, and
    /// of the items each of them will return to, up to the root.
    pub(super) fn live_rules(&self) -> FxHashSet<(u32, u32)> {
        let grammar = &*self.parse.grammar;
        let mut live = FxHashSet::default();
        let mut work: Vec<(u32, u32)> = self
            .parse
            .history
            .last()
            .iter()
            .filter_map(|item| live_rule(grammar, item))
            .collect();
        while let Some((rule, origin)) = work.pop() {
            if !live.insert((rule, origin)) {
                continue;
            }
            // The items that wait for the match: in its first row.
            let row = origin as usize;
            let items = self.parse.history.row(row);
            let mut parent = |item: &Item| {
                let mut waits = false;
                awaited_rules(grammar, item, |awaited| waits |= awaited == rule);
                if waits && let Some(found) = live_rule(grammar, item) {
                    work.push(found);
                }
            };
            match self.parse.history.waiting(row) {
                Some(waiting) => {
                    for &place in waiting.get(rule) {
                        parent(&items[place as usize]);
                    }
                }
                None => items.iter().for_each(parent),
            }
        }
        live
    }

    /// The text of `symbols`.
    fn symbol_text(&self, symbols: &[Symbol]) -> Vec<u8> {
        let mut text = Vec::with_capacity(symbols.len());
        for symbol in symbols {
            match symbol {
                Symbol::Byte(byte) => text.push(*byte),
                Symbol::Token(token) => {
                    if let Some(vocabulary) = &self.vocabulary {
                        text.extend_from_slice(vocabulary.written(*token));
                    }
                }
            }
        }
        text
    }
}
