//! How far each place of a grammar is from the end of its rule's match, in
//! symbols (a byte of text, or a token matched by id): what
//! [`Matcher::min_bytes_to_finish`](crate::Matcher::min_bytes_to_finish)
//! and token budgets add up over a parse.
//!
//! Three tables, computed once per grammar with every rule built:
//!
//! - per rule, the fewest symbols of a match (`shortest`);
//! - per node, the fewest symbols from it to the end of its rule's match
//!   (`to_end`), and per scanner state of a tag dispatch's free text the
//!   same (`free`);
//! - per rule, the most that any place inside a match may still need
//!   (`most`): a bound on where a token can leave a parse, used to skip
//!   budget checks that cannot fail. A rule that nests itself with
//!   something after the nested match has no bound, but a token opens at
//!   most one nested match per byte: the value holds for places a token of
//!   up to each of [`TOKEN_LENGTHS`] bytes reaches.
//!
//! Rules are visited callees first, one strongly connected component of the
//! call graph at a time; a component's rules are iterated to a fixed point.
//! Lookahead automata are not part of a match and are left out.

use crate::grammar::Grammar;
use crate::graph::strongly_connected_components;
use crate::scanner;
use crate::tables::{Edge, EdgeRecord, PatternRecord, RuleRecord};

/// "No end can be reached" (or, for [`Distances::most`], "no bound").
pub(crate) const UNREACHABLE: u64 = u64::MAX;

/// The token lengths [`Distances::most`] is kept for. A rule that nests
/// itself with text after the nested match has no bound on what a place in
/// it may need, but a token opens at most one nested match per byte: each
/// round of the iteration over a cycle of rules adds a level, and after
/// `length + 1` rounds the values hold for tokens of up to `length` bytes.
/// The last (the longest tokens of real vocabularies have a few hundred
/// bytes) bounds every token; the shorter ones are tighter for short
/// tokens.
pub(crate) const TOKEN_LENGTHS: [usize; 11] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];

/// The bound for tokens of any length (up to the last of [`TOKEN_LENGTHS`]).
pub(crate) const ANY_LENGTH: usize = TOKEN_LENGTHS.len() - 1;

/// The distances of one grammar (see the module documentation).
#[derive(Debug)]
pub(crate) struct Distances {
    shortest: Vec<u64>,
    to_end: Vec<u64>,
    /// Per dispatch (by its index), per scanner state; empty for token
    /// dispatches.
    free: Vec<Vec<u64>>,
    /// Per length of [`TOKEN_LENGTHS`], per rule: `most` for tokens of up
    /// to that many bytes.
    most_within: Vec<Vec<u64>>,
    /// Per node: the most any place reachable from it inside its rule's
    /// match may need to end that match, for tokens of any length.
    most_from: Vec<u64>,
    /// Per length of [`TOKEN_LENGTHS`], per rule: whether every rule
    /// limited in tokens or bytes that a match of it may hold keeps its
    /// limit when a token of up to that many bytes opens it (see
    /// [`Distances::limits_fit`]).
    limits_fit: Vec<Vec<bool>>,
}

impl Distances {
    /// The distances of `grammar`, which must have every rule built.
    pub(crate) fn of(grammar: &Grammar) -> Self {
        let tables = grammar.tables();
        let mut distances = Self {
            shortest: vec![UNREACHABLE; tables.rules.len()],
            to_end: vec![UNREACHABLE; tables.nodes.len()],
            free: vec![Vec::new(); tables.dispatches.len()],
            most_within: vec![vec![0; tables.rules.len()]; TOKEN_LENGTHS.len()],
            most_from: vec![UNREACHABLE; tables.nodes.len()],
            limits_fit: vec![vec![true; tables.rules.len()]; TOKEN_LENGTHS.len()],
        };
        let components = components(grammar);
        for component in &components {
            loop {
                let mut changed = false;
                for &rule in component {
                    changed |= distances.settle_shortest(grammar, rule);
                }
                if !changed {
                    break;
                }
            }
            // Per token length, from the callees' values for that length;
            // after `length + 1` rounds the values hold for tokens of up
            // to `length` bytes, or sooner, once they settle.
            for (kept, &length) in TOKEN_LENGTHS.iter().enumerate() {
                for _ in 0..=length {
                    let mut changed = false;
                    for &rule in component {
                        let most = distances.most_of(grammar, rule, kept);
                        if most != distances.most_within[kept][rule as usize] {
                            distances.most_within[kept][rule as usize] = most;
                            changed = true;
                        }
                    }
                    if !changed {
                        break;
                    }
                }
            }
        }
        for (rule, record) in tables.rules.iter().enumerate() {
            if record.kind == RuleRecord::AUTOMATON {
                let rule = u32::try_from(rule).expect("rules fit in u32");
                distances.settle_most_from(grammar, rule);
            }
        }
        if grammar.has_limits() {
            for component in &components {
                distances.settle_limits_fit(grammar, component);
            }
        }
        distances
    }

    /// [`Distances::limits_fit`] for the rules of `component` (their
    /// callees' settled).
    fn settle_limits_fit(&mut self, grammar: &Grammar, component: &[u32]) {
        for (length, &bytes) in TOKEN_LENGTHS.iter().enumerate() {
            let opened_fits = |callee: u32| {
                let record = grammar.rule(callee);
                let most = self.most_within[length][callee as usize];
                (record.max_tokens == 0 || most.saturating_add(1) <= u64::from(record.max_tokens))
                    && (record.max_bytes == 0
                        || most.saturating_add(bytes as u64) <= u64::from(record.max_bytes))
            };
            // A component's rules hold one another: one verdict for all.
            let fit = component.iter().all(|&rule| {
                callees(grammar, rule).into_iter().all(|callee| {
                    opened_fits(callee)
                        && (component.contains(&callee) || self.limits_fit[length][callee as usize])
                })
            });
            for &rule in component {
                self.limits_fit[length][rule as usize] = fit;
            }
        }
    }

    /// Whether every rule limited in tokens or bytes that a match of
    /// `rule` may hold keeps its limit where a token of up to
    /// `TOKEN_LENGTHS[length]` bytes opens it: a match the token opens
    /// holds at most the token's bytes and needs at most
    /// [`Distances::most_within`] more to end, spelled a token each.
    pub(crate) fn limits_fit(&self, length: usize, rule: u32) -> bool {
        self.limits_fit[length][rule as usize]
    }

    /// [`Distances::most`] for tokens of up to `TOKEN_LENGTHS[length]`
    /// bytes.
    pub(crate) fn most_within(&self, length: usize, rule: u32) -> u64 {
        self.most_within[length][rule as usize]
    }

    /// [`Distances::most_from`] for tokens of up to
    /// `TOKEN_LENGTHS[length]` bytes: found by a walk of the automaton
    /// (kept only for tokens of any length).
    pub(crate) fn most_from_within(&self, grammar: &Grammar, length: usize, node: u32) -> u64 {
        if length == ANY_LENGTH {
            return self.most_from(node);
        }
        let record = grammar.rule(grammar.node_rule(node));
        let mut seen = vec![false; record.node_count as usize];
        let mut open = vec![node];
        seen[(node - record.body) as usize] = true;
        let mut most = 0u64;
        while let Some(at) = open.pop() {
            most = most.max(self.most_at(grammar, at, length));
            for edge in grammar.edges(at) {
                let place = (edge.target - record.body) as usize;
                if !seen[place] {
                    seen[place] = true;
                    open.push(edge.target);
                }
            }
        }
        most
    }

    /// The most any place reachable from `node` inside its rule's match
    /// (as deep as a token of the longest of [`TOKEN_LENGTHS`] nests) may need to end that
    /// match.
    pub(crate) fn most_from(&self, node: u32) -> u64 {
        self.most_from[node as usize]
    }

    /// What a place at `node` may need, itself or inside a rule it calls,
    /// for tokens of up to `TOKEN_LENGTHS[length]` bytes (the rules'
    /// current values while they are being found).
    fn most_at(&self, grammar: &Grammar, node: u32, length: usize) -> u64 {
        let most_of = |rule: u32| self.most_within(length, rule);
        let here = self.to_end(node);
        if here == UNREACHABLE {
            return UNREACHABLE;
        }
        let mut most = here;
        for edge in grammar.edges(node) {
            let after = self.to_end(edge.target);
            let inside = match edge.label() {
                Edge::Rule { rule } => most_of(rule).saturating_add(after),
                Edge::Repeat { rule, min, .. } => {
                    let left = times(u64::from(min.saturating_sub(1)), self.shortest(rule));
                    most_of(rule).saturating_add(left).saturating_add(after)
                }
                Edge::Bytes { .. } | Edge::Tokens { .. } => 0,
            };
            most = most.max(inside);
        }
        most
    }

    /// [`Distances::most_from`] for the nodes of `rule`: the largest
    /// [`Distances::most_at`] over what each node reaches.
    fn settle_most_from(&mut self, grammar: &Grammar, rule: u32) {
        let record = *grammar.rule(rule);
        let nodes = record.body..record.body + record.node_count;
        for node in nodes.clone() {
            self.most_from[node as usize] = self.most_at(grammar, node, ANY_LENGTH);
        }
        loop {
            let mut changed = false;
            for node in nodes.clone().rev() {
                let mut most = self.most_from(node);
                for edge in grammar.edges(node) {
                    most = most.max(self.most_from(edge.target));
                }
                if most != self.most_from(node) {
                    self.most_from[node as usize] = most;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// The fewest symbols of a match of `rule`.
    pub(crate) fn shortest(&self, rule: u32) -> u64 {
        self.shortest[rule as usize]
    }

    /// The fewest symbols from `node` to the end of its rule's match.
    pub(crate) fn to_end(&self, node: u32) -> u64 {
        self.to_end[node as usize]
    }

    /// The fewest symbols that end the free text of dispatch rule `rule`
    /// from scanner state `state`.
    pub(crate) fn free(&self, grammar: &Grammar, rule: u32, state: u32) -> u64 {
        let body = grammar.rule(rule).body as usize;
        self.free[body]
            .get(state as usize)
            .copied()
            .unwrap_or(UNREACHABLE)
    }

    /// The most symbols any place inside a match of `rule` may still need
    /// to end it ([`UNREACHABLE`] if unbounded).
    pub(crate) fn most(&self, rule: u32) -> u64 {
        self.most_within[ANY_LENGTH][rule as usize]
    }

    /// What an edge costs to cross, with its rule's shortest match.
    fn edge_cost(&self, edge: &EdgeRecord) -> u64 {
        match edge.label() {
            Edge::Bytes { .. } | Edge::Tokens { .. } => 1,
            Edge::Rule { rule } => self.shortest(rule),
            Edge::Repeat { rule, min, .. } => times(u64::from(min), self.shortest(rule)),
        }
    }

    /// Recomputes `rule`'s distances from its callees'; whether its
    /// shortest match changed.
    fn settle_shortest(&mut self, grammar: &Grammar, rule: u32) -> bool {
        let record = *grammar.rule(rule);
        let shortest = match record.kind {
            RuleRecord::AUTOMATON => {
                let nodes = record.body..record.body + record.node_count;
                // Bellman–Ford over the automaton: few sweeps, as automata
                // are small and mostly acyclic.
                loop {
                    let mut changed = false;
                    for node in nodes.clone().rev() {
                        let mut best = if grammar.is_final(node) {
                            0
                        } else {
                            UNREACHABLE
                        };
                        for edge in grammar.edges(node) {
                            let through = self
                                .edge_cost(edge)
                                .saturating_add(self.to_end(edge.target));
                            best = best.min(through);
                        }
                        if best != self.to_end[node as usize] {
                            self.to_end[node as usize] = best;
                            changed = true;
                        }
                    }
                    if !changed {
                        break;
                    }
                }
                self.to_end(record.body)
            }
            RuleRecord::DISPATCH => {
                self.settle_free(grammar, &record);
                self.free[record.body as usize]
                    .get(scanner::START as usize)
                    .copied()
                    .unwrap_or(UNREACHABLE)
            }
            // Token dispatch: its free region may end at once.
            RuleRecord::TOKEN_DISPATCH => 0,
            _ => UNREACHABLE,
        };
        let changed = shortest != self.shortest[rule as usize];
        self.shortest[rule as usize] = shortest;
        changed
    }

    /// The fewest symbols that end a tag dispatch's free text from each
    /// scanner state: a stop string, the end of the text where it may
    /// end, or a trigger and its arm (and, for a repeating dispatch, free
    /// text again).
    fn settle_free(&mut self, grammar: &Grammar, record: &RuleRecord) {
        let Some(scanner) = grammar.scanner(record.body) else {
            return;
        };
        let dispatch = *grammar.dispatch(record);
        let states = scanner.states() as usize;
        let mut free = std::mem::take(&mut self.free[record.body as usize]);
        free.resize(states, UNREACHABLE);
        loop {
            let mut changed = false;
            let again = if dispatch.repeat == 1 {
                free[scanner::START as usize]
            } else {
                0
            };
            for state in (0..states).rev() {
                let state32 = u32::try_from(state).expect("scanner states fit in u32");
                let mut best = if dispatch.stop_at_end == 1 {
                    0
                } else {
                    UNREACHABLE
                };
                for byte in 0..=255u8 {
                    let (next, found) = scanner.step(state32, byte);
                    let rest = if found == scanner::NONE {
                        free[next as usize]
                    } else {
                        let pattern = grammar.pattern(dispatch.first_pattern + found);
                        match pattern.kind {
                            PatternRecord::STOP => 0,
                            PatternRecord::TRIGGER => {
                                self.shortest(pattern.arm).saturating_add(again)
                            }
                            _ => UNREACHABLE,
                        }
                    };
                    best = best.min(rest.saturating_add(1));
                }
                if best < free[state] {
                    free[state] = best;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        self.free[record.body as usize] = free;
    }

    /// The most any place inside a match of `rule` may need to end it, for
    /// tokens of up to `TOKEN_LENGTHS[length]` bytes, from its callees'
    /// current values.
    fn most_of(&self, grammar: &Grammar, rule: u32, length: usize) -> u64 {
        let record = *grammar.rule(rule);
        match record.kind {
            RuleRecord::AUTOMATON => (record.body..record.body + record.node_count)
                .map(|node| self.most_at(grammar, node, length))
                .max()
                .unwrap_or(0),
            RuleRecord::DISPATCH => {
                let free = &self.free[record.body as usize];
                let mut most = free.iter().copied().max().unwrap_or(UNREACHABLE);
                let dispatch = *grammar.dispatch(&record);
                let again = if dispatch.repeat == 1 {
                    free.get(scanner::START as usize)
                        .copied()
                        .unwrap_or(UNREACHABLE)
                } else {
                    0
                };
                for p in dispatch.first_pattern..dispatch.first_pattern + dispatch.pattern_count {
                    let pattern = grammar.pattern(p);
                    if pattern.kind == PatternRecord::TRIGGER {
                        let arm = self.most_within(length, pattern.arm);
                        most = most.max(arm.saturating_add(again));
                    }
                }
                most
            }
            RuleRecord::TOKEN_DISPATCH => {
                let dispatch = *grammar.dispatch(&record);
                let mut most = 0;
                for p in dispatch.first_pattern..dispatch.first_pattern + dispatch.pattern_count {
                    let pattern = grammar.pattern(p);
                    if pattern.kind == PatternRecord::TRIGGER {
                        most = most.max(self.most_within(length, pattern.arm));
                    }
                }
                most
            }
            _ => UNREACHABLE,
        }
    }
}

/// `count` matches of `each` symbols, saturating.
fn times(count: u64, each: u64) -> u64 {
    if count == 0 {
        0
    } else {
        each.saturating_mul(count)
    }
}

/// The rules `rule` calls: by its edges, or as its dispatch's arms.
fn callees(grammar: &Grammar, rule: u32) -> Vec<u32> {
    let record = *grammar.rule(rule);
    let mut callees = Vec::new();
    match record.kind {
        RuleRecord::AUTOMATON => {
            for node in record.body..record.body + record.node_count {
                for edge in grammar.edges(node) {
                    if let Some(callee) = edge.callee() {
                        callees.push(callee);
                    }
                }
            }
        }
        RuleRecord::DISPATCH | RuleRecord::TOKEN_DISPATCH => {
            let dispatch = *grammar.dispatch(&record);
            for p in dispatch.first_pattern..dispatch.first_pattern + dispatch.pattern_count {
                let pattern = grammar.pattern(p);
                if pattern.kind == PatternRecord::TRIGGER {
                    callees.push(pattern.arm);
                }
            }
        }
        _ => {}
    }
    callees.sort_unstable();
    callees.dedup();
    callees
}

/// The strongly connected components of the call graph, callees before
/// callers.
fn components(grammar: &Grammar) -> Vec<Vec<u32>> {
    let rules = grammar.tables().rules.len();
    let calls: Vec<Vec<usize>> = (0..rules)
        .map(|rule| {
            let rule = u32::try_from(rule).expect("rules fit in u32");
            callees(grammar, rule)
                .into_iter()
                .map(|callee| callee as usize)
                .collect()
        })
        .collect();
    strongly_connected_components(&calls)
        .into_iter()
        .map(|component| {
            (component.into_iter())
                .map(|rule| u32::try_from(rule).expect("rules fit in u32"))
                .collect()
        })
        .collect()
}
