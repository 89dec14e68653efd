//! FSM IR: one byte-level automaton per rule.
//!
//! An automaton's edges are labelled with byte ranges, rule references,
//! counted repetitions of a rule, or token sets. Construction ([`build`]):
//!
//! 1. Thompson construction from the normalized IR, with epsilon edges
//!    (`thompson.rs`);
//! 2. epsilon removal;
//! 3. determinization by subset construction over the labels (rule
//!    references and the other non-byte labels are symbols like bytes — a
//!    rule's automaton describes a language of symbol strings, which
//!    determinization keeps), within a size budget (`determinize.rs`);
//! 4. minimization by partition refinement, which also merges equivalent
//!    nodes and drops nodes from which no final node can be reached
//!    (`minimize.rs`).
//!
//! A rule whose automaton would grow past the budget when determinized keeps
//! its epsilon-free nondeterministic automaton; the matcher handles both, up
//! to [`MAX_NFA_NODES`] nodes (past it, the compilation fails).
//!
//! An automaton depends only on its rule's body up to which rules the body
//! refers to, so it is built for the body with references numbered in
//! order of appearance, kept in a [`CompileCache`], and relabelled with the
//! rule's real references: a body seen before — in this grammar, or in an
//! earlier one compiled with the same cache — is not built again.
//!
//! # Overview
//!
//! - [`Grammar`]: rule bodies ([`Body`]: an [`Fsm`] or a dispatch), lookahead
//!   automata, and the table of token sets.
//! - [`Fsm`], [`Node`], [`Edge`], [`Label`]: the automata.

mod determinize;
mod interned;
mod minimize;
mod thompson;

use std::fmt;

use xg_runtime::{RuleId, TokenId};

use crate::budget::{Budget, Exceeded, FREE_ASIDE_AT};
use crate::cache::{Automaton, CompileCache};
use crate::ir;
use xg_runtime::lru::free_aside;

/// A grammar as automata, ready for hashing and tables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grammar {
    /// All rules, indexed by [`RuleId`] (the normalized IR's ids).
    pub rules: Vec<Rule>,
    /// The entry rule.
    pub root: RuleId,
    /// Token sets used by [`Label::Tokens`] edges.
    pub token_sets: Vec<ir::TokenSet>,
}

impl Grammar {
    /// The rule with id `id`.
    pub fn rule(&self, id: RuleId) -> &Rule {
        &self.rules[id.as_usize()]
    }
}

/// One rule as an automaton (or a dispatch, which the matcher runs itself).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// The rule's name.
    pub name: String,
    /// What the rule matches.
    pub body: Body,
    /// The automaton of the text that must follow the rule, if asserted.
    pub lookahead: Option<Fsm>,
    /// Its matches are reported (see [`crate::tree::Rule::capture`]).
    pub capture: Option<String>,
    /// How long one match may be (see [`crate::tree::Limit`]).
    pub limit: crate::tree::Limit,
}

/// A rule body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    /// An automaton.
    Automaton(Fsm),
    /// Free text with tag dispatch; arms are rules.
    Dispatch(Dispatch),
    /// Free tokens with dispatch on trigger tokens; arms are rules.
    TokenDispatch(TokenDispatch),
}

/// Tag dispatch whose arms are rules (see [`ir::Dispatch`] for the semantics).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Dispatch {
    /// Trigger bytes → the rule that follows the trigger.
    pub arms: Vec<(Vec<u8>, RuleId)>,
    /// After an arm: back to free text (`true`) or end (`false`).
    pub repeat: bool,
    /// Strings that end the dispatch.
    pub stop: Vec<Vec<u8>>,
    /// Whether the dispatch may also end anywhere in free text.
    pub stop_at_end: bool,
    /// Strings free text must not contain.
    pub exclude: Vec<Vec<u8>>,
}

/// Token dispatch whose arms are rules (see [`ir::TokenDispatch`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TokenDispatch {
    /// Trigger token → the rule that follows it.
    pub arms: Vec<(TokenId, RuleId)>,
    /// After an arm: back to free tokens (`true`) or end (`false`).
    pub repeat: bool,
    /// Tokens that may not appear as free tokens.
    pub exclude: Vec<TokenId>,
}

/// An automaton. Node 0 is the start.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fsm {
    /// The nodes; edges refer to them by index.
    pub nodes: Vec<Node>,
}

/// A node of an automaton.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Node {
    /// Whether a match may end here.
    pub is_final: bool,
    /// Outgoing edges, sorted by label then target.
    pub edges: Vec<Edge>,
}

/// An edge of an automaton.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Edge {
    /// What the edge matches.
    pub label: Label,
    /// The node it leads to.
    pub target: u32,
}

/// What an edge matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Label {
    /// One byte in `lo..=hi`.
    Bytes {
        /// Lowest byte.
        lo: u8,
        /// Highest byte.
        hi: u8,
    },
    /// A match of another rule.
    Rule(RuleId),
    /// `min` to `max` consecutive matches of a rule, counted by the matcher
    /// (a compressed repetition).
    Repeat {
        /// The repeated rule.
        rule: RuleId,
        /// Least count.
        min: u32,
        /// Most count, if bounded.
        max: Option<u32>,
    },
    /// One token from `Grammar::token_sets[index]`.
    Tokens(u32),
    /// Nothing (only during construction).
    Epsilon,
}

impl Fsm {
    /// The number of edges.
    pub fn edge_count(&self) -> usize {
        self.nodes.iter().map(|node| node.edges.len()).sum()
    }

    /// Whether every node has at most one edge per label and byte ranges do
    /// not overlap (so a matcher follows one path).
    pub fn is_deterministic(&self) -> bool {
        self.nodes.iter().all(|node| {
            node.edges
                .windows(2)
                .all(|pair| match (pair[0].label, pair[1].label) {
                    (Label::Bytes { hi, .. }, Label::Bytes { lo, .. }) => hi < lo,
                    (a, b) => a != b,
                })
        })
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let byte = |b: u8| {
            if b.is_ascii_graphic() && b != b'"' && b != b'\\' {
                char::from(b).to_string()
            } else {
                format!("\\x{b:02X}")
            }
        };
        match *self {
            Label::Bytes { lo, hi } if lo == hi => write!(f, "{}", byte(lo)),
            Label::Bytes { lo, hi } => write!(f, "[{}-{}]", byte(lo), byte(hi)),
            Label::Rule(rule) => write!(f, "<{rule}>"),
            Label::Repeat {
                rule,
                min,
                max: Some(max),
            } => write!(f, "<{rule}>{{{min},{max}}}"),
            Label::Repeat {
                rule,
                min,
                max: None,
            } => write!(f, "<{rule}>{{{min},}}"),
            Label::Tokens(index) => write!(f, "tokens#{index}"),
            Label::Epsilon => f.write_str("ε"),
        }
    }
}

/// How many nodes an automaton under construction gains between two
/// checks of its size against the memory limit.
const MEMORY_STRIDE: usize = 4096;

/// What an automaton of `nodes` and `edges` takes while it is built, for
/// the compilation's memory limit: its edges in the construction's flat
/// lists (twice, before and after epsilon removal) and in the finished
/// automaton's per-node vectors, and its nodes in each.
pub(crate) fn building_bytes(nodes: usize, edges: usize) -> usize {
    let edge = size_of::<Edge>();
    let node = size_of::<Node>() + 2 * size_of::<u32>() + 1;
    nodes
        .saturating_mul(node)
        .saturating_add(edges.saturating_mul(3 * edge + 4))
}

/// What a finished automaton takes (see [`building_bytes`]).
pub(crate) fn finished_bytes(fsm: &Fsm) -> usize {
    fsm.nodes.len() * size_of::<Node>() + fsm.edge_count() * size_of::<Edge>()
}

/// The most nodes a rule's automaton may keep when it cannot be made
/// deterministic. A matcher holds up to one item per node and origin in
/// every row: a nondeterministic chain of 60,000 nodes (a long periodic
/// pattern searched for anywhere) made rows of tens of thousands of items
/// and ran a server out of memory on a matching output.
pub const MAX_NFA_NODES: usize = 4096;

/// Builds the automata of a normalized grammar (see the module docs),
/// checking `budget` before each rule and every 4,096 steps inside one (a
/// single rule of an object with 80,000 properties took a second);
/// automata built before are taken from `cache`, new ones added to it. A
/// rule whose automaton stays nondeterministic past [`MAX_NFA_NODES`]
/// nodes is an error.
pub fn build(
    grammar: &ir::Grammar,
    budget: &Budget,
    cache: &CompileCache,
) -> Result<Grammar, Exceeded> {
    let mut token_sets = Vec::new();
    let mut bytes = 0usize;
    let rules = grammar
        .rules
        .iter()
        .map(|rule| {
            budget.check()?;
            budget.check_memory(bytes)?;
            let built = build_rule(rule, &mut token_sets, budget, cache)?;
            if let Body::Automaton(fsm) = &built.body {
                bytes = bytes.saturating_add(finished_bytes(fsm));
            }
            Ok(built)
        })
        .collect::<Result<_, _>>()?;
    Ok(Grammar {
        rules,
        root: grammar.root,
        token_sets,
    })
}

/// The automata of one rule of a normalized grammar, token sets its edges
/// use added to `token_sets` (equal sets shared).
pub fn build_rule(
    rule: &ir::Rule,
    token_sets: &mut Vec<ir::TokenSet>,
    budget: &Budget,
    cache: &CompileCache,
) -> Result<Rule, Exceeded> {
    let body = match &rule.body {
        ir::Expr::Dispatch(dispatch) => Body::Dispatch(Dispatch {
            arms: dispatch
                .arms
                .iter()
                .map(|(trigger, arm)| (trigger.clone(), arm_rule(arm)))
                .collect(),
            repeat: dispatch.repeat,
            stop: dispatch.stop.clone(),
            stop_at_end: dispatch.stop_at_end,
            exclude: dispatch.exclude.clone(),
        }),
        ir::Expr::TokenDispatch(dispatch) => Body::TokenDispatch(TokenDispatch {
            arms: dispatch
                .arms
                .iter()
                .map(|(token, arm)| (*token, arm_rule(arm)))
                .collect(),
            repeat: dispatch.repeat,
            exclude: dispatch.exclude.clone(),
        }),
        expr => Body::Automaton(automaton(expr, token_sets, budget, cache)?),
    };
    Ok(Rule {
        name: rule.name.clone(),
        body,
        lookahead: rule
            .lookahead
            .as_ref()
            .map(|la| automaton(la, token_sets, budget, cache))
            .transpose()?,
        capture: rule.capture.clone(),
        limit: rule.limit,
    })
}

/// A node index as stored in edges.
fn node_id(index: usize) -> u32 {
    u32::try_from(index).expect("automata stay below 2^32 nodes")
}

/// The rule an extracted dispatch arm refers to.
fn arm_rule(arm: &ir::Expr) -> RuleId {
    match arm {
        ir::Expr::Ref(id) => *id,
        // `normalize` makes every arm a reference; anything else is a bug.
        other => unreachable!("dispatch arm not extracted: {other}"),
    }
}

/// The minimal (or, past the budget, epsilon-free) automaton of `expr`,
/// from `cache` if it holds the automaton of a body equal up to references.
/// Token sets its edges use are added to `token_sets` (equal sets shared).
/// An epsilon-free automaton past [`MAX_NFA_NODES`] nodes is an error.
fn automaton(
    expr: &ir::Expr,
    token_sets: &mut Vec<ir::TokenSet>,
    budget: &Budget,
    cache: &CompileCache,
) -> Result<Fsm, Exceeded> {
    let mut references = References::default();
    let key = references.number(expr, budget)?;
    budget.check()?;
    let built = cache.automaton(key, |key| {
        budget.check()?;
        if let Some(words) = literal_choice(key) {
            let trie = trie(words, budget)?;
            let minimal = minimize::minimize(&trie, budget);
            return Ok(Automaton {
                fsm: done_with(trie, minimal)?,
                token_sets: Vec::new(),
            });
        }
        let mut local_sets = Vec::new();
        let nfa = match key {
            ir::Expr::Choice(items) if items.iter().all(is_byte_pattern) => {
                if let Some(factored) = factored(items) {
                    let fsm =
                        minimal(thompson::build(&factored, &mut Vec::new(), budget)?, budget)?;
                    if fsm.is_deterministic() {
                        return Ok(Automaton {
                            fsm,
                            token_sets: Vec::new(),
                        });
                    }
                }
                union_of_minimal(items, budget)?
            }
            _ => thompson::build(key, &mut local_sets, budget)?,
        };
        Ok(Automaton {
            fsm: minimal(nfa, budget)?,
            token_sets: local_sets,
        })
    })?;
    // What the construction made is freed by now (milliseconds for a
    // large automaton): check before copying the automaton out.
    budget.check()?;
    let nodes = built.fsm.nodes.len();
    if nodes > MAX_NFA_NODES && !built.fsm.is_deterministic() {
        return Err(Exceeded::Automaton { nodes });
    }
    let sets: Vec<u32> = built
        .token_sets
        .iter()
        .map(|set| {
            let index = match token_sets.iter().position(|s| s == set) {
                Some(index) => index,
                None => {
                    token_sets.push(set.clone());
                    token_sets.len() - 1
                }
            };
            u32::try_from(index).expect("token sets stay below 2^32")
        })
        .collect();
    let relabel = |label: Label| match label {
        Label::Rule(local) => Label::Rule(references.rules[local.as_usize()]),
        Label::Repeat { rule, min, max } => Label::Repeat {
            rule: references.rules[rule.as_usize()],
            min,
            max,
        },
        Label::Tokens(local) => Label::Tokens(sets[local as usize]),
        label @ (Label::Bytes { .. } | Label::Epsilon) => label,
    };
    let mut nodes = Vec::with_capacity(built.fsm.nodes.len());
    for node in &built.fsm.nodes {
        if let Err(exceeded) = budget.spend(1 + node.edges.len()) {
            if nodes.len() >= FREE_ASIDE_AT {
                free_aside(nodes);
            }
            return Err(exceeded);
        }
        let mut edges: Vec<Edge> = (node.edges.iter())
            .map(|edge| Edge {
                label: relabel(edge.label),
                target: edge.target,
            })
            .collect();
        // Edges are sorted by label; real rule ids need not keep the order
        // of the local ones.
        edges.sort_unstable();
        nodes.push(Node {
            is_final: node.is_final,
            edges,
        });
    }
    Ok(Fsm { nodes })
}

/// The strings of `expr` if it is a choice of strings and nothing else
/// (a JSON Schema `enum` or `const` of strings): what [`trie`] builds.
fn literal_choice(expr: &ir::Expr) -> Option<Vec<&[u8]>> {
    let ir::Expr::Choice(items) = expr else {
        return None;
    };
    if items.is_empty() {
        return None;
    }
    items
        .iter()
        .map(|item| match item {
            ir::Expr::Bytes(bytes) => Some(bytes.as_slice()),
            ir::Expr::Empty => Some(&[][..]),
            _ => None,
        })
        .collect()
}

/// The trie of `words`: deterministic and trimmed as subset construction
/// would leave the choice of them, and as small as the words, where
/// Thompson's construction and the subsets of its thousands of branches
/// took milliseconds for an `enum` of a few thousand strings (MaskBench's
/// `cryproj` schemas: 20 ms to compile, twice LLGuidance's). Minimized
/// afterwards like any other automaton (a trie has no cycle: one signature
/// lookup per node), so the result is the same minimal automaton.
fn trie(mut words: Vec<&[u8]>, budget: &Budget) -> Result<Fsm, Exceeded> {
    // Sorted, a word shares with the trie exactly its common prefix with
    // the word before, and its new edges come after every edge there.
    words.sort_unstable();
    words.dedup();
    let mut nodes = vec![Node::default()];
    let mut path: Vec<u32> = vec![0];
    let mut previous: &[u8] = &[];
    for word in words {
        budget.spend(1 + word.len())?;
        let shared = word
            .iter()
            .zip(previous)
            .take_while(|(a, b)| a == b)
            .count();
        path.truncate(shared + 1);
        for &byte in &word[shared..] {
            let target = node_id(nodes.len());
            nodes.push(Node::default());
            let from = *path.last().expect("the root is on the path") as usize;
            nodes[from].edges.push(Edge {
                label: Label::Bytes { lo: byte, hi: byte },
                target,
            });
            path.push(target);
        }
        nodes[*path.last().expect("the root is on the path") as usize].is_final = true;
        previous = word;
    }
    Ok(Fsm { nodes })
}

/// The minimal automaton of the epsilon-free `nfa`, or `nfa` itself if
/// its subsets would blow up (see [`determinize::determinize`]).
fn minimal(nfa: Fsm, budget: &Budget) -> Result<Fsm, Exceeded> {
    // Most bodies are deterministic once their epsilon edges are gone:
    // subset construction would only copy them.
    if nfa.is_deterministic() {
        let minimal = minimize::minimize(&nfa, budget);
        return done_with(nfa, minimal);
    }
    match determinize::determinize(&nfa, budget) {
        Ok(Some(dfa)) => {
            drop(nfa);
            let minimal = minimize::minimize(&dfa, budget);
            done_with(dfa, minimal)
        }
        Ok(None) => Ok(nfa),
        Err(exceeded) => done_with(nfa, Err(exceeded)),
    }
}

/// Whether `expr` matches bytes alone: no rule, token or exclusion.
fn is_byte_pattern(expr: &ir::Expr) -> bool {
    match expr {
        ir::Expr::Empty | ir::Expr::Bytes(_) | ir::Expr::Class(_) => true,
        ir::Expr::Sequence(items) | ir::Expr::Choice(items) => items.iter().all(is_byte_pattern),
        ir::Expr::Repeat { expr, .. } => is_byte_pattern(expr),
        _ => false,
    }
}

/// The choice of `items` with what every item begins with and ends with
/// taken out of it — `a b₁ c | a b₂ c` as `a (b₁ | b₂) c`, the same
/// language — or `None` if the items share no first or last part.
///
/// Unanchored patterns under `anyOf` or `oneOf` (`"…NEW…"`, `"…EXECUTED…"`)
/// are each a string's quote, any characters, the word, any characters
/// and the quote: as a choice of their automata, a subset of the union
/// remembers which words were seen (seven words of a status field made
/// more subsets than determinization allows: a 12 ms first mask, then
/// seven walks of the vocabulary per step); factored, one search for the
/// seven words remembers only whether one was.
fn factored(items: &[ir::Expr]) -> Option<ir::Expr> {
    let parts: Vec<&[ir::Expr]> = items
        .iter()
        .map(|item| match item {
            ir::Expr::Sequence(parts) => parts.as_slice(),
            item => std::slice::from_ref(item),
        })
        .collect();
    let (first, rest) = parts.split_first()?;
    if rest.is_empty() {
        return None;
    }
    let shortest = parts.iter().map(|p| p.len()).min()?;
    let shared =
        |at: &dyn Fn(&[ir::Expr]) -> &ir::Expr| rest.iter().all(|other| at(other) == at(first));
    let mut prefix = 0;
    while prefix < shortest && shared(&|p| &p[prefix]) {
        prefix += 1;
    }
    let mut suffix = 0;
    while prefix + suffix < shortest && shared(&|p| &p[p.len() - 1 - suffix]) {
        suffix += 1;
    }
    if prefix + suffix == 0 {
        return None;
    }
    let middles = parts
        .iter()
        .map(|p| match &p[prefix..p.len() - suffix] {
            [] => ir::Expr::Empty,
            [one] => one.clone(),
            many => ir::Expr::Sequence(many.to_vec()),
        })
        .collect();
    let mut sequence = first[..prefix].to_vec();
    sequence.push(ir::Expr::Choice(middles));
    sequence.extend_from_slice(&first[first.len() - suffix..]);
    Some(ir::Expr::Sequence(sequence))
}

/// The union of the minimal automata of `alternatives` (byte patterns), as
/// one automaton whose start takes every alternative's first edges. Subset
/// construction over it meets at most one state per alternative in a
/// subset: built from the alternatives' Thompson automata instead, a choice
/// of five unanchored patterns (`"…customer…"` under `oneOf`) made 1,000
/// subsets for a minimal automaton of 54 states.
fn union_of_minimal(alternatives: &[ir::Expr], budget: &Budget) -> Result<Fsm, Exceeded> {
    let mut nodes = vec![Node::default()];
    let mut start_edges = Vec::new();
    for alternative in alternatives {
        let fsm = minimal(
            thompson::build(alternative, &mut Vec::new(), budget)?,
            budget,
        )?;
        // The alternative's start is copied only if an edge comes back to
        // it: the union stays trimmed, as minimizing it needs.
        let entered = fsm
            .nodes
            .iter()
            .flat_map(|n| &n.edges)
            .any(|e| e.target == 0);
        let skipped = usize::from(!entered);
        let base = node_id(nodes.len() - skipped);
        let moved = |edge: &Edge| Edge {
            target: edge.target + base,
            ..*edge
        };
        nodes[0].is_final |= fsm.nodes[0].is_final;
        start_edges.extend(fsm.nodes[0].edges.iter().map(moved));
        nodes.extend(fsm.nodes.into_iter().skip(skipped).map(|node| Node {
            edges: node.edges.iter().map(moved).collect(),
            ..node
        }));
    }
    start_edges.sort_unstable();
    start_edges.dedup();
    nodes[0].edges = start_edges;
    Ok(Fsm { nodes })
}

/// `outcome`, freeing `used`, an automaton the construction is done with:
/// here if the construction goes on, on a thread of its own if it stopped
/// and `used` is large (a million nodes take tens of milliseconds to free,
/// which a cancelled compilation would wait for).
fn done_with<T>(used: Fsm, outcome: Result<T, Exceeded>) -> Result<T, Exceeded> {
    if outcome.is_err() && used.nodes.len() >= FREE_ASIDE_AT {
        free_aside(used);
    }
    outcome
}

/// The rules a body refers to, numbered in order of first appearance.
#[derive(Default)]
struct References {
    rules: Vec<RuleId>,
    index: rustc_hash::FxHashMap<RuleId, RuleId>,
}

impl References {
    /// The local number of `rule`.
    fn local(&mut self, rule: RuleId) -> RuleId {
        *self.index.entry(rule).or_insert_with(|| {
            self.rules.push(rule);
            RuleId::new(self.rules.len() - 1).expect("fewer references than rules")
        })
    }

    /// `expr` with each rule it refers to replaced by its local number,
    /// spending a unit of `budget` per node.
    fn number(&mut self, expr: &ir::Expr, budget: &Budget) -> Result<ir::Expr, Exceeded> {
        budget.spend(1)?;
        let mut all = |items: &[ir::Expr]| -> Result<Vec<ir::Expr>, Exceeded> {
            items.iter().map(|item| self.number(item, budget)).collect()
        };
        Ok(match expr {
            ir::Expr::Sequence(items) => ir::Expr::Sequence(all(items)?),
            ir::Expr::Choice(items) => ir::Expr::Choice(all(items)?),
            ir::Expr::Ref(rule) => ir::Expr::Ref(self.local(*rule)),
            ir::Expr::RepeatRule { rule, min, max } => ir::Expr::RepeatRule {
                rule: self.local(*rule),
                min: *min,
                max: *max,
            },
            ir::Expr::Repeat { expr, min, max } => ir::Expr::Repeat {
                expr: Box::new(self.number(expr, budget)?),
                min: *min,
                max: *max,
            },
            ir::Expr::Except(except) => ir::Expr::Except(ir::Except {
                excluded: except.excluded.clone(),
                plain: except.plain,
                other: Box::new(self.number(&except.other, budget)?),
            }),
            // Dispatches nested in a body match nothing (`normalize` gives
            // each its own rule), and the rest refers to no rule.
            other => other.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The automaton of `expr` the way every other body is built:
    /// Thompson's construction, subsets, minimization.
    fn general(expr: &ir::Expr) -> Fsm {
        let budget = Budget::unlimited();
        let nfa = thompson::build(expr, &mut Vec::new(), &budget).unwrap();
        let dfa = if nfa.is_deterministic() {
            nfa
        } else {
            determinize::determinize(&nfa, &budget).unwrap().unwrap()
        };
        minimize::minimize(&dfa, &budget).unwrap()
    }

    #[test]
    fn a_choice_of_strings_is_built_as_subsets_would_build_it() {
        let choices: [&[&str]; 6] = [
            &[
                "\"UTF-8\"",
                "\"UTF-16\"",
                "\"UTF-16BE\"",
                "\"UTF-16LE\"",
                "\"ASCII\"",
            ],
            &["a", "ab", "abc", "b", "bc", "c", ""],
            &["x", "x", "xy"],
            &["ing", "ring", "sing", "string", "sting", "thing"],
            &["\u{e9}t\u{e9}", "\u{e9}", "e", "\u{1F600}"],
            &["AD-02", "AD-03", "AE-01", "AE-02", "AF-BAL", "AF-BAM"],
        ];
        for words in choices {
            let expr = ir::Expr::Choice(
                words
                    .iter()
                    .map(|w| {
                        if w.is_empty() {
                            ir::Expr::Empty
                        } else {
                            ir::Expr::Bytes(w.as_bytes().to_vec())
                        }
                    })
                    .collect(),
            );
            let strings = literal_choice(&expr).expect("a choice of strings");
            let budget = Budget::unlimited();
            let fast = minimize::minimize(&trie(strings, &budget).unwrap(), &budget).unwrap();
            assert_eq!(fast, general(&expr), "{words:?}");
        }
    }
}
