//! Tables: the automata and hashes of a grammar as the runtime's flat records
//! ([`xg_runtime::tables`]).

use xg_runtime::tables::{
    DispatchRecord, EdgeRecord, NodeRecord, PatternRecord, RuleRecord, Tables, TokenSetRecord,
};

use crate::fsm::{self, Body, Fsm, Label};
use crate::hash::RuleHash;

/// Lays out `grammar` (hashed, so node numbers are canonical) as tables.
pub fn build(grammar: &fsm::Grammar, hashes: &[RuleHash]) -> Tables {
    let mut tables = Tables {
        root: grammar.root.as_u32(),
        ..Tables::default()
    };
    for set in &grammar.token_sets {
        tables.token_sets.push(TokenSetRecord {
            offset: index(tables.token_pool.len()),
            len: index(set.ids.len()),
            negated: u32::from(set.negated),
        });
        tables
            .token_pool
            .extend(set.ids.iter().map(|id| id.as_u32()));
    }
    for (rule, hash) in grammar.rules.iter().zip(hashes) {
        let name_offset = index(tables.name_pool.len());
        tables.name_pool.extend_from_slice(rule.name.as_bytes());
        let (kind, body, node_count) = match &rule.body {
            Body::Automaton(fsm) => (
                RuleRecord::AUTOMATON,
                add_automaton(&mut tables, fsm, hashes),
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
                add_automaton(&mut tables, fsm, hashes),
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
            name_len: index(rule.name.len()),
            reserved: 0,
            hash: hash.rule,
            automaton_hash: hash.automaton,
            lookahead_hash: hash.lookahead.unwrap_or(0),
        });
    }
    tables
}

/// Appends an automaton's nodes and edges; returns its start node. A
/// node's edges are in canonical order — callees by structural hash, not
/// by rule id — so rules with equal hashes have equal tables in every
/// grammar (mask-cache keys name edges by their place in the node).
fn add_automaton(tables: &mut Tables, fsm: &Fsm, hashes: &[RuleHash]) -> u32 {
    let base = index(tables.nodes.len());
    for node in &fsm.nodes {
        tables.nodes.push(NodeRecord {
            first_edge: index(tables.edges.len()),
            edge_count: index(node.edges.len()),
            is_final: u32::from(node.is_final),
        });
        for edge in &node.edges {
            let (kind, a, b, c) = match edge.label {
                Label::Bytes { lo, hi } => (EdgeRecord::BYTES, u32::from(lo), u32::from(hi), 0),
                Label::Rule(rule) => (EdgeRecord::RULE, rule.as_u32(), 0, 0),
                Label::Repeat { rule, min, max } => (
                    EdgeRecord::REPEAT,
                    rule.as_u32(),
                    min,
                    max.unwrap_or(EdgeRecord::UNBOUNDED),
                ),
                Label::Tokens(set) => (EdgeRecord::TOKENS, set, 0, 0),
                // Epsilon edges are removed before automata are finished.
                Label::Epsilon => unreachable!("epsilon edge in a finished automaton"),
            };
            tables.edges.push(EdgeRecord {
                kind,
                a,
                b,
                c,
                target: base + edge.target,
            });
        }
        let first = tables.nodes.last().expect("just pushed").first_edge as usize;
        tables.edges[first..].sort_by_key(|edge| {
            let label = match edge.kind {
                EdgeRecord::RULE | EdgeRecord::REPEAT => hashes[edge.a as usize].rule,
                _ => u64::from(edge.a),
            };
            (edge.kind, label, edge.b, edge.c, edge.target)
        });
    }
    base
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
