//! Tables: the automata and hashes of a grammar as the runtime's flat records
//! ([`xg_runtime::tables`]).

use xg_runtime::Automaton;
use xg_runtime::tables::{
    DispatchRecord, Edge, EdgeRecord, NodeRecord, PatternRecord, RuleRecord, Tables, TokenSetRecord,
};

use crate::fsm::{self, Body, Fsm, Label};
use crate::hash::RuleHash;

/// Lays out `grammar` (hashed, so node numbers are canonical) as tables.
pub fn build(grammar: &fsm::Grammar, hashes: &[RuleHash]) -> Tables {
    let rules: Vec<Laid> = grammar
        .rules
        .iter()
        .zip(hashes)
        .map(|(rule, hash)| Laid::Built(rule, *hash))
        .collect();
    let order: Vec<u64> = hashes.iter().map(|hash| hash.ir).collect();
    build_partial(grammar.root.as_u32(), &rules, &order, &grammar.token_sets)
}

/// A rule as [`build_partial`] lays it out.
#[derive(Clone, Copy, Debug)]
pub enum Laid<'a> {
    /// Built, with its hashes.
    Built(&'a fsm::Rule, RuleHash),
    /// An automaton to be built on first use ([`RuleRecord::PENDING`]):
    /// its name, its capture's name if it is captured, and its limit.
    Pending(&'a str, Option<&'a str>, crate::tree::Limit),
}

/// Lays out rules some of which are built: the tables of a grammar whose
/// other automata a [`xg_runtime::RuleBuilder`] builds on first use.
/// `order` holds every rule's IR hash (what edges to it are sorted by),
/// `token_sets` every token set any rule uses (built or not).
pub fn build_partial(
    root: u32,
    rules: &[Laid],
    order: &[u64],
    token_sets: &[crate::ir::TokenSet],
) -> Tables {
    let mut tables = Tables {
        root,
        ..Tables::default()
    };
    for set in token_sets {
        tables.token_sets.push(TokenSetRecord {
            offset: index(tables.token_pool.len()),
            len: index(set.ids.len()),
            negated: u32::from(set.negated),
        });
        tables
            .token_pool
            .extend(set.ids.iter().map(|id| id.as_u32()));
    }
    for laid in rules {
        let (name, capture, limit) = match laid {
            Laid::Built(rule, _) => (rule.name.as_str(), rule.capture.as_deref(), rule.limit),
            Laid::Pending(name, capture, limit) => (*name, *capture, *limit),
        };
        let max_tokens = limit.tokens.unwrap_or(0);
        let max_bytes = limit.bytes.unwrap_or(0);
        // A captured rule is named by its capture: the name matches are
        // reported under.
        let (name, flags) = match capture {
            Some(capture) => (capture, RuleRecord::CAPTURE),
            None => (name, 0),
        };
        let name_offset = index(tables.name_pool.len());
        tables.name_pool.extend_from_slice(name.as_bytes());
        let name_len = index(name.len());
        let Laid::Built(rule, hash) = laid else {
            tables.rules.push(RuleRecord {
                kind: RuleRecord::PENDING,
                body: RuleRecord::NONE,
                node_count: 0,
                lookahead: RuleRecord::NONE,
                lookahead_node_count: 0,
                name_offset,
                name_len,
                flags,
                max_tokens,
                max_bytes,
                hash: 0,
                automaton_hash: 0,
                lookahead_hash: 0,
            });
            continue;
        };
        let (kind, body, node_count) = match &rule.body {
            Body::Automaton(fsm) => (
                RuleRecord::AUTOMATON,
                add_automaton(&mut tables, fsm, order),
                index(fsm.nodes.len()),
            ),
            Body::Dispatch(dispatch) => {
                (RuleRecord::DISPATCH, add_dispatch(&mut tables, dispatch), 0)
            }
            Body::TokenDispatch(dispatch) => (
                RuleRecord::TOKEN_DISPATCH,
                add_token_dispatch(&mut tables, dispatch),
                0,
            ),
        };
        let (lookahead, lookahead_node_count) = match &rule.lookahead {
            Some(fsm) => (
                add_automaton(&mut tables, fsm, order),
                index(fsm.nodes.len()),
            ),
            None => (RuleRecord::NONE, 0),
        };
        tables.rules.push(RuleRecord {
            kind,
            body,
            node_count,
            lookahead,
            lookahead_node_count,
            name_offset,
            name_len,
            flags,
            max_tokens,
            max_bytes,
            hash: hash.rule,
            automaton_hash: hash.automaton,
            lookahead_hash: hash.lookahead.unwrap_or(0),
        });
    }
    tables
}

/// Appends an automaton's nodes and edges; returns its start node.
fn add_automaton(tables: &mut Tables, fsm: &Fsm, order: &[u64]) -> u32 {
    let built = records(fsm, &|rule| order[rule as usize]);
    let base = index(tables.nodes.len());
    let edge_base = index(tables.edges.len());
    tables
        .nodes
        .extend(built.nodes.iter().map(|node| NodeRecord {
            first_edge: node.first_edge + edge_base,
            ..*node
        }));
    tables
        .edges
        .extend(built.edges.iter().map(|edge| EdgeRecord {
            target: edge.target + base,
            ..*edge
        }));
    base
}

/// An automaton as records numbered on their own (node 0 the start). A
/// node's edges are in canonical order — callees by `order` (the IR hash
/// of the rule), not by rule id — so rules with equal hashes have equal
/// records in every grammar (mask-cache keys name edges by their place in
/// the node), whether built with the grammar or on first use.
pub fn records(fsm: &Fsm, order: &dyn Fn(u32) -> u64) -> Automaton {
    let mut built = Automaton::default();
    for node in &fsm.nodes {
        let first = built.edges.len();
        built.nodes.push(NodeRecord {
            first_edge: index(first),
            edge_count: index(node.edges.len()),
            is_final: u32::from(node.is_final),
        });
        for edge in &node.edges {
            let label = match edge.label {
                Label::Bytes { lo, hi } => Edge::Bytes { lo, hi },
                Label::Rule(rule) => Edge::Rule {
                    rule: rule.as_u32(),
                },
                Label::Repeat { rule, min, max } => Edge::Repeat {
                    rule: rule.as_u32(),
                    min,
                    max,
                },
                Label::Tokens(set) => Edge::Tokens { set },
                // Epsilon edges are removed before automata are finished.
                Label::Epsilon => unreachable!("epsilon edge in a finished automaton"),
            };
            built.edges.push(EdgeRecord::new(label, edge.target));
        }
        // By kind, then by what the edge matches (a callee by its order),
        // then by the record's other fields.
        built.edges[first..].sort_by_key(|edge| {
            let label = edge.callee().map_or(u64::from(edge.a), order);
            (edge.kind, label, edge.b, edge.c, edge.target)
        });
    }
    built
}

fn add_dispatch(tables: &mut Tables, dispatch: &fsm::Dispatch) -> u32 {
    let first_pattern = index(tables.patterns.len());
    let triggers = dispatch
        .arms
        .iter()
        .map(|(bytes, arm)| (PatternRecord::TRIGGER, bytes, arm.as_u32()));
    let stops = dispatch
        .stop
        .iter()
        .map(|bytes| (PatternRecord::STOP, bytes, RuleRecord::NONE));
    let excludes = dispatch
        .exclude
        .iter()
        .map(|bytes| (PatternRecord::EXCLUDE, bytes, RuleRecord::NONE));
    for (kind, bytes, arm) in triggers.chain(stops).chain(excludes) {
        tables.patterns.push(PatternRecord {
            kind,
            offset: index(tables.byte_pool.len()),
            len: index(bytes.len()),
            arm,
        });
        tables.byte_pool.extend_from_slice(bytes);
    }
    push_dispatch(tables, first_pattern, dispatch.repeat, dispatch.stop_at_end)
}

fn add_token_dispatch(tables: &mut Tables, dispatch: &fsm::TokenDispatch) -> u32 {
    let first_pattern = index(tables.patterns.len());
    let triggers = dispatch
        .arms
        .iter()
        .map(|(token, arm)| (PatternRecord::TRIGGER, *token, arm.as_u32()));
    let excludes = dispatch
        .exclude
        .iter()
        .map(|token| (PatternRecord::EXCLUDE, *token, RuleRecord::NONE));
    for (kind, token, arm) in triggers.chain(excludes) {
        tables.patterns.push(PatternRecord {
            kind,
            offset: token.as_u32(),
            len: 1,
            arm,
        });
    }
    push_dispatch(tables, first_pattern, dispatch.repeat, false)
}

fn push_dispatch(tables: &mut Tables, first_pattern: u32, repeat: bool, stop_at_end: bool) -> u32 {
    tables.dispatches.push(DispatchRecord {
        first_pattern,
        pattern_count: index(tables.patterns.len()) - first_pattern,
        repeat: u32::from(repeat),
        stop_at_end: u32::from(stop_at_end),
    });
    index(tables.dispatches.len() - 1)
}

/// A table index; tables are limited to `u32` entries.
fn index(value: usize) -> u32 {
    u32::try_from(value).expect("grammar tables stay below 2^32 entries")
}
