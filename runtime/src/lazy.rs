//! Rules built on first use.
//!
//! A grammar compiled while a request waits need not build the automata of
//! rules its output never enters: a schema of thousands of definitions is
//! written, in one output, through a few of them. Such a grammar's tables
//! hold those rules as [`RuleRecord::PENDING`], and a [`RuleBuilder`] — the
//! compiler, through this interface the runtime defines — builds each when
//! a matcher first enters it.
//!
//! Built rules are appended to the grammar's tables in the order they were
//! asked for, by whichever matcher asked first, and never moved: a node
//! means the same in every snapshot of the grammar, so matchers, mask-cache
//! entries and memoized states made before a rule was built stay valid
//! after. A matcher that meets a pending rule in a step takes the latest
//! snapshot (building what is still missing) and makes the step again.

use std::fmt;
use std::sync::{Mutex, PoisonError};

use crate::byteset::ByteSet;
use crate::id::RuleId;
use crate::tables::{Edge, EdgeRecord, NodeRecord, RuleRecord, Tables, TablesError};

/// Builds the automata of a grammar's pending rules, so that a grammar
/// compiled while a request waits builds only the rules its output enters
/// (see [`Grammar::lazy`](crate::Grammar::lazy)). Implemented by the
/// compiler; the runtime calls it, at most once per rule, from whichever
/// thread first needs the rule.
pub trait RuleBuilder: Send + Sync {
    /// The automata of `rule`, a rule the grammar's tables hold as
    /// [`RuleRecord::PENDING`]. An error makes the step that needed the
    /// rule fail with it.
    fn build(&self, rule: RuleId) -> Result<BuiltRule, String>;

    /// Every rule whose automata refer to `rule` (built or pending): what
    /// can follow `rule` is known once they are all built.
    fn callers(&self, rule: RuleId) -> &[RuleId];

    /// The bytes that can come first after a match of `rule` anywhere in
    /// the grammar, built or pending. A mask refuses, at that byte, every
    /// token that runs on past `rule` where its callers are too many to
    /// build (white space before a value, called from every property): a
    /// byte left out that some text puts there makes masks refuse tokens
    /// the grammar allows, while extra bytes only cost time.
    fn follow_bytes(&self, rule: RuleId) -> ByteSet;
}

/// One automaton as table records, numbered on its own: node 0 is the
/// start, edge targets and nodes' first edges index these vectors.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Automaton {
    /// The nodes.
    pub nodes: Vec<NodeRecord>,
    /// The edges, node by node.
    pub edges: Vec<EdgeRecord>,
}

/// What a [`RuleBuilder`] builds for one rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuiltRule {
    /// The rule's automaton.
    pub body: Automaton,
    /// The automaton of its lookahead, if it has one.
    pub lookahead: Option<Automaton>,
    /// [`RuleRecord::hash`]: the structural hash of the rule as built.
    pub hash: u64,
    /// [`RuleRecord::automaton_hash`].
    pub automaton_hash: u64,
    /// [`RuleRecord::lookahead_hash`] (0 without a lookahead).
    pub lookahead_hash: u64,
}

/// A grammar's builder and the tables with every rule built so far.
pub(crate) struct Lazy {
    builder: Box<dyn RuleBuilder>,
    latest: Mutex<Tables>,
}

impl fmt::Debug for Lazy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lazy").finish_non_exhaustive()
    }
}

impl Lazy {
    pub(crate) fn new(builder: Box<dyn RuleBuilder>, tables: Tables) -> Self {
        Self {
            builder,
            latest: Mutex::new(tables),
        }
    }

    /// The tables with `rules` built (and every rule built before), if
    /// they differ from `current`'s rule count of built rules: `None` when
    /// `current` already has them all. Builds what is still pending.
    pub(crate) fn with_rules(
        &self,
        rules: &[u32],
        built_in_current: usize,
    ) -> Result<Option<Tables>, String> {
        // Every change leaves the tables whole: a rule is appended at once.
        let mut latest = self.latest.lock().unwrap_or_else(PoisonError::into_inner);
        // The rules asked for, then the rules each enters before any byte
        // (a chain of optional members is built at once, not one retry at
        // a time). Their other callees wait for a step that enters them:
        // building them with their caller made the first mask of a schema
        // build every property's value (MaskBench-full, every 10th file:
        // first mask 0.19 → 0.12 ms on average, later steps unchanged).
        let mut wanted: Vec<u32> = rules.to_vec();
        while let Some(rule) = wanted.pop() {
            let pending = latest
                .rules
                .get(rule as usize)
                .is_some_and(|record| record.kind == RuleRecord::PENDING);
            if !pending {
                continue;
            }
            let id = RuleId::new(rule as usize).map_err(|error| error.to_string())?;
            let built = self
                .builder
                .build(id)
                .map_err(|error| format!("building rule `{}`: {error}", latest.rule_name(rule)))?;
            append(&mut latest, rule, &built).map_err(|error| error.to_string())?;
            wanted.extend(entered(&built.body));
        }
        let built = built_count(&latest);
        Ok((built != built_in_current).then(|| latest.clone()))
    }

    /// The rules whose automata refer to `rule`.
    pub(crate) fn callers(&self, rule: u32) -> impl Iterator<Item = u32> + '_ {
        let callers = RuleId::new(rule as usize).map_or(&[][..], |id| self.builder.callers(id));
        callers.iter().map(|caller| caller.as_u32())
    }

    /// The bytes that can come first after `rule` (see
    /// [`RuleBuilder::follow_bytes`]).
    pub(crate) fn follow_bytes(&self, rule: u32) -> ByteSet {
        RuleId::new(rule as usize).map_or(ByteSet::full(), |id| self.builder.follow_bytes(id))
    }

    /// The tables with every rule built.
    pub(crate) fn complete(&self) -> Result<Tables, String> {
        let pending: Vec<u32> = {
            let latest = self.latest.lock().unwrap_or_else(PoisonError::into_inner);
            (0..latest.rules.len())
                .filter(|&r| latest.rules[r].kind == RuleRecord::PENDING)
                .map(|r| u32::try_from(r).expect("rule ids fit in u32"))
                .collect()
        };
        self.with_rules(&pending, usize::MAX)?;
        Ok(self
            .latest
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone())
    }
}

/// The rules an automaton calls at the nodes it reaches from its start
/// through calls alone (as if every callee could match nothing).
fn entered(automaton: &Automaton) -> Vec<u32> {
    let mut seen = vec![false; automaton.nodes.len()];
    let mut open = vec![0usize];
    let mut callees = Vec::new();
    seen[0] = true;
    while let Some(node) = open.pop() {
        let record = automaton.nodes[node];
        let edges = record.first_edge as usize..(record.first_edge + record.edge_count) as usize;
        for edge in &automaton.edges[edges] {
            if let Some(callee) = edge.callee() {
                callees.push(callee);
                let target = edge.target as usize;
                if !seen[target] {
                    seen[target] = true;
                    open.push(target);
                }
            }
        }
    }
    callees
}

/// How many rules of `tables` are built (not pending).
pub(crate) fn built_count(tables: &Tables) -> usize {
    tables
        .rules
        .iter()
        .filter(|record| record.kind != RuleRecord::PENDING)
        .count()
}

/// Appends `built` to `tables` as the automata of the pending `rule`, once
/// checked as [`Tables::validate`] checks the automata it holds.
fn append(tables: &mut Tables, rule: u32, built: &BuiltRule) -> Result<(), TablesError> {
    check(tables, &built.body)?;
    if let Some(lookahead) = &built.lookahead {
        check(tables, lookahead)?;
    }
    let body = add(tables, &built.body)?;
    let lookahead = match &built.lookahead {
        Some(automaton) => (add(tables, automaton)?, index(automaton.nodes.len())?),
        None => (RuleRecord::NONE, 0),
    };
    let node_count = index(built.body.nodes.len())?;
    let record = &mut tables.rules[rule as usize];
    record.kind = RuleRecord::AUTOMATON;
    record.body = body;
    record.node_count = node_count;
    (record.lookahead, record.lookahead_node_count) = lookahead;
    record.hash = built.hash;
    record.automaton_hash = built.automaton_hash;
    record.lookahead_hash = built.lookahead_hash;
    Ok(())
}

/// Checks that `automaton` keeps to itself and names only rules and token
/// sets `tables` has.
fn check(tables: &Tables, automaton: &Automaton) -> Result<(), TablesError> {
    let fail = |what: &str| Err(TablesError::new(format!("a built automaton {what}")));
    if automaton.nodes.is_empty() {
        return fail("has no nodes");
    }
    let nodes = automaton.nodes.len();
    let edges = automaton.edges.len();
    for node in &automaton.nodes {
        let end = (node.first_edge as usize).checked_add(node.edge_count as usize);
        if end.is_none_or(|end| end > edges) || node.is_final > 1 {
            return fail("has a malformed node");
        }
    }
    for edge in &automaton.edges {
        let label = match edge.decode() {
            Some(Edge::Bytes { .. }) => true,
            Some(Edge::Rule { rule } | Edge::Repeat { rule, .. }) => {
                (rule as usize) < tables.rules.len()
            }
            Some(Edge::Tokens { set }) => (set as usize) < tables.token_sets.len(),
            None => false,
        };
        if !label || edge.target as usize >= nodes {
            return fail("has a malformed edge");
        }
    }
    Ok(())
}

/// Appends an automaton's nodes and edges, renumbered into the tables;
/// returns its start node.
fn add(tables: &mut Tables, automaton: &Automaton) -> Result<u32, TablesError> {
    let base = index(tables.nodes.len())?;
    let edge_base = index(tables.edges.len())?;
    index(tables.nodes.len() + automaton.nodes.len())?;
    index(tables.edges.len() + automaton.edges.len())?;
    for node in &automaton.nodes {
        tables.nodes.push(NodeRecord {
            first_edge: node.first_edge + edge_base,
            ..*node
        });
    }
    for edge in &automaton.edges {
        tables.edges.push(EdgeRecord {
            target: edge.target + base,
            ..*edge
        });
    }
    Ok(base)
}

fn index(value: usize) -> Result<u32, TablesError> {
    u32::try_from(value).map_err(|_| TablesError::new("tables past 2^32 entries"))
}
