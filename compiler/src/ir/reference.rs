//! A slow, obviously correct recognizer that interprets the grammar IR
//! directly: the oracle every faster matcher is tested against.
//!
//! # Semantics
//!
//! For every rule `r` and input position `i`, the recognizer computes the
//! set of positions `j` such that `input[i..j]` matches `r`, and whether the
//! input ends *inside* some match of `r` starting at `i` ("open"). These are
//! the least fixed point of the rules' equations, found by iterating from
//! empty sets until nothing changes — so left recursion, nullable rules and
//! ambiguity need no special care. It costs polynomial time in the input
//! length; keep inputs short.
//!
//! - A lookahead `(= X)` on a rule keeps only the ends `j` after which the
//!   input continues with a match of `X` (in [`Mode::Prefix`], an input that
//!   ends inside a match of `X` counts too).
//! - A dispatch scans free text for its patterns; at the first position where
//!   one ends (the longest if several end there) a trigger hands over to its
//!   arm, a stop string ends the dispatch, an excluded string kills the path.
//!   Free text may end anywhere before that if `stop_at_end`.
//! - `Token(…)`/`ExcludeToken(…)` match one [`Symbol::Token`]. A token
//!   dispatch's free region accepts bytes and tokens other than its triggers
//!   and excluded tokens.
//! - An [`Except`](super::Except) matches what its trie spelled out as
//!   choices does ([`Except::spelled_out`](super::Except::spelled_out)).

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};

use xg_runtime::TokenId;

use super::{Dispatch, Expr, Grammar, Rule, TokenDispatch};

/// One input symbol: a byte of text, or a special token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Symbol {
    /// A byte of output text.
    Byte(u8),
    /// A token matched by id (`Token(…)` and friends).
    Token(TokenId),
}

impl Symbol {
    /// The bytes of `text` as symbols.
    pub fn text(text: impl AsRef<[u8]>) -> Vec<Symbol> {
        text.as_ref().iter().map(|&b| Symbol::Byte(b)).collect()
    }
}

/// What is asked of the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The whole input must be a sentence of the grammar.
    Complete,
    /// The input must be the start of some sentence.
    Prefix,
}

/// Whether `input` is a sentence of `grammar` (`Mode::Complete`) or the start
/// of one (`Mode::Prefix`).
pub fn recognizes(grammar: &Grammar, input: &[Symbol], mode: Mode) -> bool {
    let spelled;
    let grammar = if grammar.rules.iter().any(|rule| has_except(&rule.body)) {
        spelled = Grammar {
            rules: grammar
                .rules
                .iter()
                .map(|rule| Rule {
                    body: spell_out_excepts(&rule.body),
                    ..rule.clone()
                })
                .collect(),
            root: grammar.root,
        };
        &spelled
    } else {
        grammar
    };
    let mut recognizer = Recognizer::new(grammar, input, mode);
    recognizer.solve();
    let root = &recognizer.table[grammar.root.as_usize()][0];
    root.ends.contains(&input.len()) || (mode == Mode::Prefix && root.open)
}

/// Whether `expr` holds an [`Expr::Except`].
fn has_except(expr: &Expr) -> bool {
    match expr {
        Expr::Except(_) => true,
        Expr::Sequence(items) | Expr::Choice(items) => items.iter().any(has_except),
        Expr::Repeat { expr, .. } => has_except(expr),
        Expr::Dispatch(dispatch) => dispatch.arms.iter().any(|(_, arm)| has_except(arm)),
        Expr::TokenDispatch(dispatch) => dispatch.arms.iter().any(|(_, arm)| has_except(arm)),
        Expr::Empty
        | Expr::Bytes(_)
        | Expr::Class(_)
        | Expr::Ref(_)
        | Expr::RepeatRule { .. }
        | Expr::Tokens(_) => false,
    }
}

/// `expr` with every [`Expr::Except`] spelled out.
fn spell_out_excepts(expr: &Expr) -> Expr {
    match expr {
        Expr::Except(except) => except.spelled_out(),
        Expr::Sequence(items) => Expr::Sequence(items.iter().map(spell_out_excepts).collect()),
        Expr::Choice(items) => Expr::Choice(items.iter().map(spell_out_excepts).collect()),
        Expr::Repeat { expr, min, max } => Expr::Repeat {
            expr: Box::new(spell_out_excepts(expr)),
            min: *min,
            max: *max,
        },
        Expr::Dispatch(dispatch) => Expr::Dispatch(Dispatch {
            arms: dispatch
                .arms
                .iter()
                .map(|(trigger, arm)| (trigger.clone(), spell_out_excepts(arm)))
                .collect(),
            ..dispatch.clone()
        }),
        Expr::TokenDispatch(dispatch) => Expr::TokenDispatch(TokenDispatch {
            arms: dispatch
                .arms
                .iter()
                .map(|(token, arm)| (*token, spell_out_excepts(arm)))
                .collect(),
            ..dispatch.clone()
        }),
        leaf @ (Expr::Empty
        | Expr::Bytes(_)
        | Expr::Class(_)
        | Expr::Ref(_)
        | Expr::RepeatRule { .. }
        | Expr::Tokens(_)) => leaf.clone(),
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Outcome {
    /// Positions where a match starting here can end.
    ends: BTreeSet<usize>,
    /// Whether the input ends inside a match starting here.
    open: bool,
}

impl Outcome {
    fn at(end: usize) -> Self {
        Self {
            ends: BTreeSet::from([end]),
            open: false,
        }
    }

    fn merge(&mut self, other: Outcome) {
        self.ends.extend(other.ends);
        self.open |= other.open;
    }
}

struct Recognizer<'a> {
    grammar: &'a Grammar,
    input: &'a [Symbol],
    mode: Mode,
    /// `table[rule][position]`: the current approximation.
    table: Vec<Vec<Outcome>>,
    /// Which rules can match some string (for "open" to mean "can finish").
    productive: Vec<bool>,
    /// Outcomes of repetitions (by address and position) under the current
    /// table; emptied whenever the table changes. Nested repetitions would
    /// otherwise be evaluated again and again.
    repeats: RefCell<HashMap<(*const Expr, usize), Outcome>>,
}

impl<'a> Recognizer<'a> {
    fn new(grammar: &'a Grammar, input: &'a [Symbol], mode: Mode) -> Self {
        let positions = input.len() + 1;
        let mut recognizer = Self {
            grammar,
            input,
            mode,
            table: vec![vec![Outcome::default(); positions]; grammar.rules.len()],
            productive: vec![false; grammar.rules.len()],
            repeats: RefCell::default(),
        };
        recognizer.solve_productive();
        recognizer
    }

    fn solve_productive(&mut self) {
        loop {
            let mut changed = false;
            for (i, rule) in self.grammar.rules.iter().enumerate() {
                if !self.productive[i]
                    && self.can_match(&rule.body)
                    && rule.lookahead.as_ref().is_none_or(|la| self.can_match(la))
                {
                    self.productive[i] = true;
                    changed = true;
                }
            }
            if !changed {
                return;
            }
        }
    }

    /// Whether `expr` matches at least one string (given `productive`).
    fn can_match(&self, expr: &Expr) -> bool {
        match expr {
            Expr::Empty | Expr::Bytes(_) | Expr::TokenDispatch(_) => true,
            Expr::Dispatch(dispatch) => self.dispatch_can_end(dispatch),
            Expr::Class(set) => !set.is_empty(),
            Expr::Sequence(items) => items.iter().all(|e| self.can_match(e)),
            Expr::Choice(items) => items.iter().any(|e| self.can_match(e)),
            Expr::Repeat { expr, min, .. } => *min == 0 || self.can_match(expr),
            Expr::Ref(id) => self.productive[id.as_usize()],
            Expr::RepeatRule { rule, min, .. } => *min == 0 || self.productive[rule.as_usize()],
            Expr::Tokens(set) => set.negated || !set.ids.is_empty(),
            Expr::Except(_) => unreachable!("spelled out before recognizing"),
        }
    }

    /// Whether a dispatch has a way to end: at a stop string, anywhere in free
    /// text, or (dispatching once) after an arm.
    fn dispatch_can_end(&self, dispatch: &Dispatch) -> bool {
        dispatch.stop_at_end
            || !dispatch.stop.is_empty()
            || (!dispatch.repeat && dispatch.arms.iter().any(|(_, arm)| self.can_match(arm)))
    }

    /// Iterates the rule equations to their least fixed point.
    ///
    /// A match starting at a position depends only on matches starting at
    /// the same or later positions, so positions are solved from the end of
    /// the input backwards, each until its rules stop changing.
    fn solve(&mut self) {
        for position in (0..=self.input.len()).rev() {
            loop {
                let mut changed = false;
                for rule in (0..self.grammar.rules.len()).rev() {
                    let outcome = self.rule_at(rule, position);
                    if outcome != self.table[rule][position] {
                        self.table[rule][position] = outcome;
                        self.repeats.borrow_mut().clear();
                        changed = true;
                    }
                }
                if !changed {
                    break;
                }
            }
        }
    }

    fn rule_at(&self, rule: usize, position: usize) -> Outcome {
        let rule = &self.grammar.rules[rule];
        let mut outcome = self.eval(&rule.body, position);
        if let Some(lookahead) = &rule.lookahead {
            outcome.ends.retain(|&end| {
                let after = self.eval(lookahead, end);
                !after.ends.is_empty() || (self.mode == Mode::Prefix && after.open)
            });
        }
        outcome
    }

    fn byte(&self, position: usize) -> Option<u8> {
        match self.input.get(position) {
            Some(Symbol::Byte(b)) => Some(*b),
            _ => None,
        }
    }

    fn eval(&self, expr: &Expr, i: usize) -> Outcome {
        let n = self.input.len();
        match expr {
            Expr::Empty => Outcome::at(i),
            Expr::Bytes(bytes) => {
                let matched = (0..bytes.len())
                    .take_while(|&k| self.byte(i + k) == Some(bytes[k]))
                    .count();
                if matched == bytes.len() {
                    Outcome::at(i + bytes.len())
                } else {
                    Outcome {
                        ends: BTreeSet::new(),
                        open: i + matched == n,
                    }
                }
            }
            Expr::Class(set) => match self.byte(i) {
                Some(b) if set.contains(b) => Outcome::at(i + 1),
                _ => Outcome {
                    ends: BTreeSet::new(),
                    open: i == n && !set.is_empty(),
                },
            },
            Expr::Sequence(items) => {
                let mut current = BTreeSet::from([i]);
                let mut open = false;
                for (k, item) in items.iter().enumerate() {
                    let rest_can_match = items[k + 1..].iter().all(|e| self.can_match(e));
                    let mut next = BTreeSet::new();
                    for &j in &current {
                        let outcome = self.eval(item, j);
                        open |= outcome.open && rest_can_match;
                        next.extend(outcome.ends);
                    }
                    current = next;
                }
                Outcome {
                    ends: current,
                    open,
                }
            }
            Expr::Choice(items) => {
                let mut outcome = Outcome::default();
                for item in items {
                    outcome.merge(self.eval(item, i));
                }
                outcome
            }
            Expr::Repeat {
                expr: inner,
                min,
                max,
            } => {
                let key = (std::ptr::from_ref(expr), i);
                if let Some(outcome) = self.repeats.borrow().get(&key) {
                    return outcome.clone();
                }
                let outcome = self.repeat(inner, *min, *max, i);
                self.repeats.borrow_mut().insert(key, outcome.clone());
                outcome
            }
            Expr::Ref(id) => self.table[id.as_usize()][i].clone(),
            Expr::RepeatRule { rule, min, max } => self.repeat(&Expr::Ref(*rule), *min, *max, i),
            Expr::Dispatch(dispatch) => self.dispatch(dispatch, i),
            Expr::Tokens(set) => match self.input.get(i) {
                Some(Symbol::Token(id)) if set.ids.contains(id) != set.negated => {
                    Outcome::at(i + 1)
                }
                _ => Outcome {
                    ends: BTreeSet::new(),
                    open: i == n && (set.negated || !set.ids.is_empty()),
                },
            },
            Expr::TokenDispatch(dispatch) => self.token_dispatch(dispatch, i),
            Expr::Except(_) => unreachable!("spelled out before recognizing"),
        }
    }

    fn repeat(&self, expr: &Expr, min: u32, max: Option<u32>, i: usize) -> Outcome {
        let mut outcome = Outcome::default();
        let mut level = BTreeSet::from([i]);
        let mut count: u32 = 0;
        let can_match = self.can_match(expr);
        loop {
            if count >= min {
                outcome.ends.extend(level.iter().copied());
            }
            if max.is_some_and(|max| count >= max) || level.is_empty() {
                return outcome;
            }
            let mut next = BTreeSet::new();
            for &j in &level {
                let step = self.eval(expr, j);
                outcome.open |= step.open && can_match;
                next.extend(step.ends);
            }
            count += 1;
            // Positions never decrease, so once a level repeats (the
            // expression matched only the empty string) every later level is
            // the same: what it can add, it has added.
            if next == level && count >= min {
                outcome.ends.extend(next);
                return outcome;
            }
            level = next;
        }
    }

    /// The first pattern ending at or after `from + 1`, scanning free text that
    /// starts at `from`: `(end, pattern kind, arm index)`.
    fn first_pattern(&self, dispatch: &Dispatch, from: usize) -> Option<(usize, Pattern)> {
        let n = self.input.len();
        for end in from + 1..=n {
            let mut best: Option<(usize, Pattern)> = None;
            let candidates = dispatch
                .arms
                .iter()
                .enumerate()
                .map(|(k, (t, _))| (t, Pattern::Trigger(k)))
                .chain(dispatch.stop.iter().map(|s| (s, Pattern::Stop)))
                .chain(dispatch.exclude.iter().map(|s| (s, Pattern::Exclude)));
            for (bytes, kind) in candidates {
                let fits = bytes.len() <= end - from
                    && (0..bytes.len()).all(|k| self.byte(end - bytes.len() + k) == Some(bytes[k]));
                if fits && best.is_none_or(|(len, _)| bytes.len() > len) {
                    best = Some((bytes.len(), kind));
                }
            }
            if let Some((_, kind)) = best {
                return Some((end, kind));
            }
        }
        None
    }

    fn dispatch(&self, dispatch: &Dispatch, i: usize) -> Outcome {
        let n = self.input.len();
        let mut outcome = Outcome::default();
        let found = self.first_pattern(dispatch, i);
        // Free text runs from `i` to just before the first pattern ends, and
        // only over bytes.
        let text_end = found.map_or(n, |(end, _)| end - 1);
        let bytes_end = (i..=text_end)
            .find(|&p| p < n && self.byte(p).is_none())
            .unwrap_or(text_end);
        if dispatch.stop_at_end {
            outcome.ends.extend(i..=bytes_end);
        }
        let can_end = self.dispatch_can_end(dispatch);
        if found.is_none() && bytes_end == n {
            outcome.open |= can_end;
        }
        let Some((end, kind)) = found else {
            return outcome;
        };
        if end - 1 > bytes_end {
            // A token symbol interrupted the free text before the pattern.
            return outcome;
        }
        match kind {
            Pattern::Exclude => {}
            Pattern::Stop => {
                outcome.ends.insert(end);
            }
            Pattern::Trigger(k) => {
                let arm = self.eval(&dispatch.arms[k].1, end);
                outcome.open |= arm.open && can_end;
                for after in arm.ends {
                    if dispatch.repeat {
                        outcome.merge(self.dispatch(dispatch, after));
                    } else {
                        outcome.ends.insert(after);
                    }
                }
            }
        }
        outcome
    }

    fn token_dispatch(&self, dispatch: &TokenDispatch, i: usize) -> Outcome {
        let n = self.input.len();
        let mut outcome = Outcome::default();
        let mut p = i;
        loop {
            outcome.ends.insert(p);
            if p == n {
                outcome.open = true;
                return outcome;
            }
            match self.input[p] {
                Symbol::Token(id) if dispatch.exclude.contains(&id) => return outcome,
                Symbol::Token(id) => {
                    if let Some((_, arm)) = dispatch.arms.iter().find(|(t, _)| *t == id) {
                        let arm = self.eval(arm, p + 1);
                        outcome.open |= arm.open;
                        for after in arm.ends {
                            if dispatch.repeat {
                                outcome.merge(self.token_dispatch(dispatch, after));
                            } else {
                                outcome.ends.insert(after);
                            }
                        }
                        return outcome;
                    }
                }
                Symbol::Byte(_) => {}
            }
            p += 1;
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pattern {
    Trigger(usize),
    Stop,
    Exclude,
}
