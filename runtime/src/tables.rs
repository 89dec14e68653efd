//! The grammar tables the matcher executes: flat arrays of fixed-size records.
//!
//! Everything is a `u32` or `u64` index or value in a `#[repr(C)]` record
//! with no padding (each record is [`bytemuck::Pod`]), so the arrays can be
//! written to a bundle and used in place from a memory map. The tables are
//! tokenizer-independent.
//!
//! # Layout
//!
//! - [`RuleRecord`]s, indexed by rule id: what kind of body, where its nodes
//!   are, its lookahead, its structural hashes, its name.
//! - [`NodeRecord`]s of all automata, rule by rule; a rule's start node is
//!   its first node. Node ids in edges are indices into this array.
//! - [`EdgeRecord`]s of all nodes, node by node.
//! - Token sets ([`TokenSetRecord`] over a pool of token ids), dispatches
//!   ([`DispatchRecord`] over [`PatternRecord`]s over a pool of bytes), and a
//!   pool of rule names.
//!
//! [`Tables::validate`] checks every index, so tables from an untrusted
//! source can be used without further checks.

use std::fmt;

use bytemuck::{Pod, Zeroable};

/// A rule: its body and where to find it.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct RuleRecord {
    /// What the body is: [`RuleRecord::AUTOMATON`], [`RuleRecord::DISPATCH`]
    /// or [`RuleRecord::TOKEN_DISPATCH`].
    pub kind: u32,
    /// Automaton: the start node; dispatch: the index of its [`DispatchRecord`].
    pub body: u32,
    /// Automaton: the number of nodes (they follow `body`); otherwise 0.
    pub node_count: u32,
    /// The lookahead automaton's start node, or [`RuleRecord::NONE`].
    pub lookahead: u32,
    /// The lookahead automaton's node count (0 without a lookahead).
    pub lookahead_node_count: u32,
    /// The rule's name: offset into the name pool.
    pub name_offset: u32,
    /// The rule's name: length in bytes.
    pub name_len: u32,
    /// What the matcher does besides matching: [`RuleRecord::CAPTURE`] or 0.
    pub flags: u32,
    /// The most tokens one match may span (`[max_tokens=N]`), or 0 for no
    /// limit.
    pub max_tokens: u32,
    /// The most symbols (bytes, and tokens matched by id) one match may
    /// hold (`[max_bytes=N]`), or 0 for no limit.
    pub max_bytes: u32,
    /// Structural hash of the rule, lookahead included: the cross-grammar cache key.
    pub hash: u64,
    /// Structural hash of the body alone.
    pub automaton_hash: u64,
    /// Structural hash of the lookahead (0 without one).
    pub lookahead_hash: u64,
}

impl RuleRecord {
    /// The body is an automaton.
    pub const AUTOMATON: u32 = 0;
    /// The body is a tag dispatch.
    pub const DISPATCH: u32 = 1;
    /// The body is a token dispatch.
    pub const TOKEN_DISPATCH: u32 = 2;
    /// The body is an automaton not built yet: a grammar made with a
    /// [`RuleBuilder`](crate::RuleBuilder) builds it when a matcher first
    /// enters the rule. `body` is [`RuleRecord::NONE`] and the node counts
    /// are 0 until then; the hashes are the builder's.
    pub const PENDING: u32 = 3;
    /// "No such index".
    pub const NONE: u32 = u32::MAX;
    /// In `flags`: the matcher reports the text of each match of the rule
    /// ([`Matcher::captures`](crate::Matcher::captures)).
    pub const CAPTURE: u32 = 1;

    /// Whether the rule's matches are reported.
    pub fn is_captured(&self) -> bool {
        self.flags & Self::CAPTURE != 0
    }

    /// Whether the rule's matches are limited in tokens or bytes.
    pub fn is_limited(&self) -> bool {
        self.max_tokens != 0 || self.max_bytes != 0
    }
}

/// A node of an automaton.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct NodeRecord {
    /// Index of its first edge.
    pub first_edge: u32,
    /// Number of edges (they follow `first_edge`).
    pub edge_count: u32,
    /// 1 if a match may end here, else 0.
    pub is_final: u32,
}

/// An edge of an automaton.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct EdgeRecord {
    /// What the edge matches: one of the `EdgeRecord::` kinds.
    pub kind: u32,
    /// Bytes: lowest byte; rule and repeat: the rule; tokens: the token set.
    pub a: u32,
    /// Bytes: highest byte; repeat: least count.
    pub b: u32,
    /// Repeat: most count, or [`EdgeRecord::UNBOUNDED`].
    pub c: u32,
    /// The node the edge leads to.
    pub target: u32,
}

impl EdgeRecord {
    /// One byte in `a..=b`.
    pub const BYTES: u32 = 0;
    /// A match of rule `a`.
    pub const RULE: u32 = 1;
    /// `b` to `c` consecutive matches of rule `a`.
    pub const REPEAT: u32 = 2;
    /// One token from token set `a`.
    pub const TOKENS: u32 = 3;
    /// A repeat's `c` when it has no upper bound.
    pub const UNBOUNDED: u32 = u32::MAX;

    /// The record of an edge that matches `edge` and leads to `target`.
    pub fn new(edge: Edge, target: u32) -> Self {
        let (kind, a, b, c) = match edge {
            Edge::Bytes { lo, hi } => (Self::BYTES, u32::from(lo), u32::from(hi), 0),
            Edge::Rule { rule } => (Self::RULE, rule, 0, 0),
            Edge::Repeat { rule, min, max } => {
                (Self::REPEAT, rule, min, max.unwrap_or(Self::UNBOUNDED))
            }
            Edge::Tokens { set } => (Self::TOKENS, set, 0, 0),
        };
        Self {
            kind,
            a,
            b,
            c,
            target,
        }
    }

    /// What the edge matches, if the record says something an edge can:
    /// a known kind, bytes within a byte and in order, a repeat whose
    /// bounds can be met. (Its rule or token set is checked against the
    /// tables that hold it.)
    pub fn decode(&self) -> Option<Edge> {
        match self.kind {
            Self::BYTES => Some(Edge::Bytes {
                lo: u8::try_from(self.a).ok()?,
                hi: u8::try_from(self.b)
                    .ok()
                    .filter(|&hi| u32::from(hi) >= self.a)?,
            }),
            Self::RULE => Some(Edge::Rule { rule: self.a }),
            Self::REPEAT if self.b <= self.c && self.c > 0 => Some(Edge::Repeat {
                rule: self.a,
                min: self.b,
                max: (self.c != Self::UNBOUNDED).then_some(self.c),
            }),
            Self::TOKENS => Some(Edge::Tokens { set: self.a }),
            _ => None,
        }
    }

    /// What the edge of validated tables matches (their every record
    /// decodes; read without checking again, as matchers do per step).
    #[inline]
    pub fn label(&self) -> Edge {
        // Validated: a byte edge's bounds are bytes.
        #[allow(clippy::cast_possible_truncation)]
        let byte = |value: u32| value as u8;
        match self.kind {
            Self::BYTES => Edge::Bytes {
                lo: byte(self.a),
                hi: byte(self.b),
            },
            Self::RULE => Edge::Rule { rule: self.a },
            Self::REPEAT => Edge::Repeat {
                rule: self.a,
                min: self.b,
                max: (self.c != Self::UNBOUNDED).then_some(self.c),
            },
            Self::TOKENS => Edge::Tokens { set: self.a },
            kind => unreachable!("validated edges have a known kind, not {kind}"),
        }
    }

    /// The rule the edge matches, once or repeatedly; `None` for bytes
    /// and tokens.
    #[inline]
    pub fn callee(&self) -> Option<u32> {
        matches!(self.kind, Self::RULE | Self::REPEAT).then_some(self.a)
    }

    /// Whether the edge matches `rule` once: `label() == Edge::Rule { rule }`,
    /// asked of every edge of a node when a rule's match completes.
    #[inline]
    pub fn calls(&self, rule: u32) -> bool {
        self.kind == Self::RULE && self.a == rule
    }
}

/// What an edge matches: an [`EdgeRecord`] read by its kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Edge {
    /// One byte in `lo..=hi`.
    Bytes {
        /// The lowest byte.
        lo: u8,
        /// The highest byte.
        hi: u8,
    },
    /// One match of a rule.
    Rule {
        /// The rule.
        rule: u32,
    },
    /// `min` to `max` consecutive matches of a rule.
    Repeat {
        /// The rule.
        rule: u32,
        /// The fewest matches.
        min: u32,
        /// The most matches; `None` for no bound.
        max: Option<u32>,
    },
    /// One token of a token set.
    Tokens {
        /// The token set (an index into [`Tables::token_sets`]).
        set: u32,
    },
}

/// A set of token ids: a slice of the token pool.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct TokenSetRecord {
    /// Offset into the token pool.
    pub offset: u32,
    /// Number of ids (sorted, distinct).
    pub len: u32,
    /// 1 if the set is the complement of the ids, else 0.
    pub negated: u32,
}

/// A tag dispatch or token dispatch.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct DispatchRecord {
    /// Index of its first pattern.
    pub first_pattern: u32,
    /// Number of patterns (they follow `first_pattern`).
    pub pattern_count: u32,
    /// 1: back to free text after an arm; 0: end after an arm.
    pub repeat: u32,
    /// 1: may end anywhere in free text (tag dispatch only).
    pub stop_at_end: u32,
}

/// A trigger, stop string or excluded string of a dispatch.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct PatternRecord {
    /// One of the `PatternRecord::` kinds.
    pub kind: u32,
    /// Tag dispatch: offset into the byte pool; token dispatch: the token id.
    pub offset: u32,
    /// Tag dispatch: length in bytes (never 0); token dispatch: 1.
    pub len: u32,
    /// A trigger's arm rule; [`RuleRecord::NONE`] otherwise.
    pub arm: u32,
}

impl PatternRecord {
    /// A trigger, followed by its arm.
    pub const TRIGGER: u32 = 0;
    /// A stop string.
    pub const STOP: u32 = 1;
    /// An excluded string or token.
    pub const EXCLUDE: u32 = 2;
}

/// The tables of one grammar.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tables {
    /// The entry rule.
    pub root: u32,
    /// Rules, indexed by rule id.
    pub rules: Vec<RuleRecord>,
    /// Nodes of all automata.
    pub nodes: Vec<NodeRecord>,
    /// Edges of all nodes.
    pub edges: Vec<EdgeRecord>,
    /// Token sets.
    pub token_sets: Vec<TokenSetRecord>,
    /// Pool of token ids for token sets.
    pub token_pool: Vec<u32>,
    /// Dispatches.
    pub dispatches: Vec<DispatchRecord>,
    /// Patterns of dispatches.
    pub patterns: Vec<PatternRecord>,
    /// Pool of pattern bytes.
    pub byte_pool: Vec<u8>,
    /// Pool of rule names (UTF-8).
    pub name_pool: Vec<u8>,
}

/// Why tables are not valid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TablesError {
    what: String,
}

impl fmt::Display for TablesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid grammar tables: {}", self.what)
    }
}

impl std::error::Error for TablesError {}

impl TablesError {
    /// An error saying what is wrong with the tables.
    pub(crate) fn new(what: impl Into<String>) -> Self {
        Self { what: what.into() }
    }
}

fn check(ok: bool, what: impl FnOnce() -> String) -> Result<(), TablesError> {
    if ok {
        Ok(())
    } else {
        Err(TablesError { what: what() })
    }
}

/// Whether `offset..offset + len` lies within `limit`.
fn within(offset: u32, len: u32, limit: usize) -> bool {
    (offset as usize)
        .checked_add(len as usize)
        .is_some_and(|end| end <= limit)
}

impl Tables {
    /// The name of rule `rule` (empty if out of range).
    pub fn rule_name(&self, rule: u32) -> &str {
        let Some(record) = self.rules.get(rule as usize) else {
            return "";
        };
        let start = record.name_offset as usize;
        self.name_pool
            .get(start..start + record.name_len as usize)
            .and_then(|bytes| std::str::from_utf8(bytes).ok())
            .unwrap_or("")
    }

    /// Checks every index and count, so that a matcher can follow the tables
    /// without bounds failures.
    pub fn validate(&self) -> Result<(), TablesError> {
        let rules = self.rules.len();
        check((self.root as usize) < rules, || {
            format!("root {} of {rules} rules", self.root)
        })?;
        for (i, rule) in self.rules.iter().enumerate() {
            check(
                within(rule.name_offset, rule.name_len, self.name_pool.len()),
                || format!("rule {i} name"),
            )?;
            check(
                std::str::from_utf8(self.rule_name_bytes(rule)).is_ok(),
                || format!("rule {i} name is not UTF-8"),
            )?;
            check(rule.flags & !RuleRecord::CAPTURE == 0, || {
                format!("rule {i} has unknown flags {:#x}", rule.flags)
            })?;
            self.validate_body(i, rule)?;
        }
        for (i, node) in self.nodes.iter().enumerate() {
            check(
                within(node.first_edge, node.edge_count, self.edges.len()),
                || format!("node {i} edges"),
            )?;
            check(node.is_final <= 1, || format!("node {i} finality"))?;
        }
        for (i, edge) in self.edges.iter().enumerate() {
            check((edge.target as usize) < self.nodes.len(), || {
                format!("edge {i} target")
            })?;
            let ok = match edge.decode() {
                Some(Edge::Bytes { .. }) => true,
                Some(Edge::Rule { rule } | Edge::Repeat { rule, .. }) => (rule as usize) < rules,
                Some(Edge::Tokens { set }) => (set as usize) < self.token_sets.len(),
                None => false,
            };
            check(ok, || format!("edge {i} label"))?;
        }
        for (i, set) in self.token_sets.iter().enumerate() {
            check(within(set.offset, set.len, self.token_pool.len()), || {
                format!("token set {i}")
            })?;
            check(set.negated <= 1, || format!("token set {i} negation"))?;
            let ids = &self.token_pool[set.offset as usize..(set.offset + set.len) as usize];
            check(ids.windows(2).all(|w| w[0] < w[1]), || {
                format!("token set {i} is not sorted")
            })?;
        }
        for (i, dispatch) in self.dispatches.iter().enumerate() {
            check(
                within(
                    dispatch.first_pattern,
                    dispatch.pattern_count,
                    self.patterns.len(),
                ),
                || format!("dispatch {i} patterns"),
            )?;
        }
        for (i, pattern) in self.patterns.iter().enumerate() {
            check(pattern.kind <= PatternRecord::EXCLUDE, || {
                format!("pattern {i} kind")
            })?;
            check(pattern.len > 0, || format!("pattern {i} is empty"))?;
            let arm_ok = match pattern.kind {
                PatternRecord::TRIGGER => (pattern.arm as usize) < rules,
                _ => pattern.arm == RuleRecord::NONE,
            };
            check(arm_ok, || format!("pattern {i} arm"))?;
        }
        // Token-dispatch patterns hold token ids, tag-dispatch patterns bytes.
        for (i, rule) in self.rules.iter().enumerate() {
            if rule.kind != RuleRecord::DISPATCH {
                continue;
            }
            let dispatch = self.dispatches[rule.body as usize];
            let first = dispatch.first_pattern as usize;
            for pattern in &self.patterns[first..first + dispatch.pattern_count as usize] {
                check(
                    within(pattern.offset, pattern.len, self.byte_pool.len()),
                    || format!("rule {i} pattern bytes"),
                )?;
            }
        }
        Ok(())
    }

    /// Checks where rule `i`'s body and lookahead are.
    fn validate_body(&self, i: usize, rule: &RuleRecord) -> Result<(), TablesError> {
        match rule.kind {
            RuleRecord::AUTOMATON => check(
                rule.node_count > 0 && within(rule.body, rule.node_count, self.nodes.len()),
                || format!("rule {i} nodes"),
            )?,
            RuleRecord::DISPATCH | RuleRecord::TOKEN_DISPATCH => {
                check((rule.body as usize) < self.dispatches.len(), || {
                    format!("rule {i} dispatch")
                })?;
            }
            RuleRecord::PENDING => check(
                rule.body == RuleRecord::NONE
                    && rule.node_count == 0
                    && rule.lookahead == RuleRecord::NONE,
                || format!("pending rule {i} has nodes"),
            )?,
            kind => check(false, || format!("rule {i} has kind {kind}"))?,
        }
        if rule.lookahead != RuleRecord::NONE {
            check(
                rule.lookahead_node_count > 0
                    && within(rule.lookahead, rule.lookahead_node_count, self.nodes.len()),
                || format!("rule {i} lookahead nodes"),
            )?;
        }
        Ok(())
    }

    /// The bytes the tables take: what a bundle of them holds, less its
    /// header.
    pub fn byte_size(&self) -> usize {
        size_of_val(self.rules.as_slice())
            + size_of_val(self.nodes.as_slice())
            + size_of_val(self.edges.as_slice())
            + size_of_val(self.token_sets.as_slice())
            + size_of_val(self.token_pool.as_slice())
            + size_of_val(self.dispatches.as_slice())
            + size_of_val(self.patterns.as_slice())
            + self.byte_pool.len()
            + self.name_pool.len()
    }

    /// Whether some rule is [`RuleRecord::PENDING`].
    pub fn has_pending(&self) -> bool {
        self.rules
            .iter()
            .any(|rule| rule.kind == RuleRecord::PENDING)
    }

    fn rule_name_bytes(&self, rule: &RuleRecord) -> &[u8] {
        let start = rule.name_offset as usize;
        &self.name_pool[start..start + rule.name_len as usize]
    }
}
