//! Captures: the text of each match of a captured rule (`name [capture]
//! ::= …` in `.xg`), read off the rows a step adds.
//!
//! A rule's match ends in a row where an item of the rule is final (or its
//! dispatch ends); the item's origin is the row the match began in. A
//! matcher of a grammar with captured rules keeps the symbols it accepted
//! and the matches of captured rules its steps' rows hold, so asking costs
//! the matches, not the output. Grammars without captured rules keep
//! nothing.

use super::Matcher;
use super::earley::Symbol;
use super::history::History;
use super::item::{Item, Kind};
use crate::grammar::Grammar;

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
    /// Its text: the bytes it matched, with the text of a token matched
    /// by id where the matcher has a vocabulary.
    pub text: Vec<u8>,
}

impl Capture {
    /// The text as a string, invalid UTF-8 replaced by U+FFFD (a match
    /// written byte by byte may end inside a character).
    pub fn text_lossy(&self) -> String {
        String::from_utf8_lossy(&self.text).into_owned()
    }
}

/// A match of a captured rule: the rule, and the rows it began and ended in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Match {
    rule: u32,
    origin: u32,
    end: u32,
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
                let found = Match {
                    rule,
                    origin: item.origin,
                    end,
                };
                // Several items (contexts, final nodes) end one match.
                if !self.matches[before..].contains(&found) {
                    self.matches.push(found);
                }
            }
        }
    }

    /// Forgets the rows from `rows` on.
    pub(super) fn truncate(&mut self, rows: usize) {
        self.input.truncate(rows.saturating_sub(1));
        let kept = self.matches.partition_point(|m| (m.end as usize) < rows);
        self.matches.truncate(kept);
    }
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
    /// …`, or `[capture = "label"]` to report them under another name) in
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
        let name = |found: &Match| self.grammar.rule_name(found.rule);
        longest.sort_by(|a, b| (a.origin, a.end, name(a)).cmp(&(b.origin, b.end, name(b))));
        // Rules captured under one name that match the same text are one
        // capture.
        longest.dedup_by(|a, b| (a.origin, a.end, name(a)) == (b.origin, b.end, name(b)));
        longest
            .into_iter()
            .map(|found| Capture {
                name: name(&found).to_owned(),
                start: found.origin as usize,
                end: found.end as usize,
                text: self.symbol_text(&log.input[found.origin as usize..found.end as usize]),
            })
            .collect()
    }

    /// The text of `symbols`.
    fn symbol_text(&self, symbols: &[Symbol]) -> Vec<u8> {
        let mut text = Vec::with_capacity(symbols.len());
        for symbol in symbols {
            match symbol {
                Symbol::Byte(byte) => text.push(*byte),
                Symbol::Token(token) => {
                    if let Some(vocabulary) = &self.vocabulary {
                        text.extend_from_slice(vocabulary.bytes(*token));
                    }
                }
            }
        }
        text
    }
}
