//! [`Grammar`]: validated tables plus what the matcher derives from them once.

pub(crate) mod distances;
mod repeats;

pub(crate) use self::repeats::{Repeat, count_cap};

use std::collections::hash_map::Entry;
use std::fmt;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use self::distances::Distances;
use crate::byteset::ByteSet;
use crate::cache::PrecomputedEntries;
use crate::fnv::Fnv;
use crate::id::RuleId;
use crate::lazy::{self, Lazy, RuleBuilder};
use crate::scanner::Scanner;
use crate::tables::{Edge, EdgeRecord, PatternRecord, RuleRecord, Tables, TablesError};

/// The id of the next grammar built.
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// A compiled grammar, ready for matching.
///
/// Immutable and `Send + Sync`: build it once (from a compiler's tables, or
/// later from a bundle) and share it, behind an `Arc`, among every
/// [`Matcher`](crate::Matcher) that uses it.
#[derive(Clone)]
pub struct Grammar {
    tables: Tables,
    /// Who owns each node and edge, and what each node's edges do.
    owners: Owners,
    /// Per rule: whether it is short (see [`Grammar::is_short`]).
    short: Vec<bool>,
    /// Per rule: at least how many bytes a non-empty match of it takes, if
    /// a counted repetition repeats it, else 0 (see
    /// [`Grammar::match_bytes`]).
    match_bytes: Vec<u8>,
    /// Per rule `r`: its callers are `callers.1[callers.0[r]..callers.0[r + 1]]`,
    /// the callers of every rule, rule by rule.
    callers: OnceLock<(Vec<u32>, Vec<Caller>)>,
    /// Identifies the grammar among those of this process (mask-cache
    /// combinations are per grammar).
    id: u64,
    /// Per dispatch (tag dispatches only): its free-text scanner.
    scanners: Arc<[Option<Scanner>]>,
    /// Per dispatch: what keys its free text's mask-cache entries (see
    /// [`free_hashes`]).
    free_hashes: Arc<[u64]>,
    has_lookahead: bool,
    /// Whether a rule is captured ([`RuleRecord::CAPTURE`]).
    has_captures: bool,
    /// The rules whose matches are limited ([`RuleRecord::is_limited`]).
    limited: Arc<[u32]>,
    /// Why token masks cannot use the mask cache, if they cannot.
    cache_fallback: Option<CacheFallback>,
    /// Whether any rule matches tokens by id.
    uses_tokens: bool,
    /// Every token id the grammar names (sorted): ids it does not name are
    /// all alike to it.
    named_tokens: Arc<[u32]>,
    /// Mask-cache entries from the bundle the grammar was opened from.
    precomputed: Option<Arc<dyn PrecomputedEntries>>,
    /// How far each place is from the end of its rule (see
    /// [`Distances`]): made on first use, with every rule built, and
    /// shared by every snapshot.
    distances: Arc<OnceLock<Result<Arc<Distances>, Arc<str>>>>,
    /// For a grammar whose rules are built on first use: the builder and
    /// every rule built so far.
    lazy: Option<Arc<Lazy>>,
    /// How many rules are built (not pending).
    built_rules: usize,
    /// The newest snapshot of a lazy grammar, held by the grammar it was
    /// made from (`Grammar::lazy`'s) so that its matchers start from it.
    newest: Option<Arc<Newest>>,
    /// [`Grammar::newest`] of the grammar this snapshot was made from:
    /// weak, so that a snapshot never keeps itself alive.
    newest_of_first: Weak<Newest>,
}

/// The newest snapshot of a lazy grammar (see [`Grammar::latest`]).
type Newest = Mutex<Option<Arc<Grammar>>>;

/// A hold on the record of a lazy grammar's newest snapshot (see
/// [`Grammar::snapshots`]).
#[derive(Clone)]
pub(crate) struct Snapshots {
    _newest: Arc<Newest>,
}

impl fmt::Debug for Grammar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Grammar")
            .field("rules", &self.tables.rules.len())
            .field("nodes", &self.tables.nodes.len())
            .field("edges", &self.tables.edges.len())
            .finish_non_exhaustive()
    }
}

/// Why a grammar computes its token masks without the shared mask cache
/// (see [`Grammar::cache_fallback`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheFallback {
    /// A rule has lookahead (`(= …)`): a cache entry records what a rule
    /// allows, not what must follow it.
    Lookahead,
    /// Two rules share a structural hash but not a structure: tables
    /// written by hand or by another tool (the compiler's never are), on
    /// which shared entries could forbid a valid token.
    HashesDisagree,
}

impl std::fmt::Display for CacheFallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CacheFallback::Lookahead => "a rule has lookahead",
            CacheFallback::HashesDisagree => "two rules share a hash but not a structure",
        })
    }
}

impl Grammar {
    /// Validates `tables` and prepares them for matching.
    pub fn new(tables: Tables) -> Result<Self, TablesError> {
        if tables.has_pending() {
            return Err(TablesError::new(
                "pending rules need a rule builder (Grammar::lazy)",
            ));
        }
        Self::prepare(tables, None)
    }

    /// A grammar whose [`RuleRecord::PENDING`] rules `builder` builds when
    /// a matcher first enters them (see [`RuleBuilder`]): what a compiler
    /// returns while a request waits, so that the work grows with what the
    /// output reaches, not with the size of the grammar.
    pub fn lazy(tables: Tables, builder: Box<dyn RuleBuilder>) -> Result<Self, TablesError> {
        let lazy = Arc::new(Lazy::new(builder, tables.clone()));
        let mut grammar = Self::prepare(tables, Some(lazy))?;
        let newest = Arc::new(Mutex::new(None));
        grammar.newest_of_first = Arc::downgrade(&newest);
        grammar.newest = Some(newest);
        Ok(grammar)
    }

    /// Whether every rule is built (always, but for a [`Grammar::lazy`]
    /// grammar that has not met all its rules yet).
    pub fn is_complete(&self) -> bool {
        self.built_rules == self.tables.rules.len()
    }

    /// This grammar with every rule built (itself if it has them all):
    /// what a bundle is written from.
    pub fn completed(&self) -> Result<Self, TablesError> {
        match &self.lazy {
            Some(lazy) if !self.is_complete() => {
                let tables = lazy.complete().map_err(TablesError::new)?;
                self.snapshot(tables)
            }
            _ => Ok(self.clone()),
        }
    }

    /// This grammar with `rules` built, if it has pending ones among them
    /// (or if other matchers built rules since): the latest snapshot, in
    /// which every node means what it means here. `Ok(None)` if nothing
    /// changed.
    pub(crate) fn extended(&self, rules: &[u32]) -> Result<Option<Arc<Self>>, String> {
        let Some(lazy) = &self.lazy else {
            return Ok(None);
        };
        if let Some(newest) = self.newest()
            && newest.built_rules > self.built_rules
            && rules
                .iter()
                .all(|&rule| newest.tables.rules[rule as usize].kind != RuleRecord::PENDING)
        {
            return Ok(Some(newest));
        }
        match lazy.with_rules(rules, self.built_rules)? {
            Some(tables) => {
                let next = Arc::new(self.snapshot(tables).map_err(|e| e.to_string())?);
                if let Some(newest) = self.newest_of_first.upgrade() {
                    let mut newest = newest.lock().unwrap_or_else(PoisonError::into_inner);
                    if newest
                        .as_ref()
                        .is_none_or(|n| n.built_rules < next.built_rules)
                    {
                        *newest = Some(Arc::clone(&next));
                    }
                }
                Ok(Some(next))
            }
            None => Ok(None),
        }
    }

    /// A later snapshot of this lazy grammar: `tables` extend this one's.
    /// It is the same grammar, with the same id: the mask memos kept under
    /// it (names of parse states, memoized steps kept with the snapshot
    /// they need, context verdicts made only for rules whose callers are
    /// all built) hold in every snapshot.
    ///
    /// Only what is new is derived: the automata appended (checked when
    /// they were built) and the rules now built.
    fn snapshot(&self, tables: Tables) -> Result<Self, TablesError> {
        let extends = tables.rules.len() == self.tables.rules.len()
            && tables.nodes.len() >= self.tables.nodes.len()
            && tables.edges.len() >= self.tables.edges.len();
        if !extends {
            return Err(TablesError::new(
                "a snapshot that does not extend the grammar",
            ));
        }
        let mut owners = self.owners.clone();
        let newly_built = |rule: usize| self.tables.rules[rule].kind == RuleRecord::PENDING;
        owners.extend(&tables, self.tables.nodes.len(), newly_built)?;
        let mut short = self.short.clone();
        let mut memo = Memo::new(&tables);
        for (rule, record) in tables.rules.iter().enumerate() {
            if newly_built(rule) && record.kind != RuleRecord::PENDING {
                short[rule] = is_short_rule(&tables, rule, &mut memo);
            }
        }
        let match_bytes = repeats::match_bytes(&tables, Some(&self.match_bytes), newly_built);
        Ok(Self {
            built_rules: lazy::built_count(&tables),
            tables,
            owners,
            short,
            match_bytes,
            callers: OnceLock::new(),
            id: self.id,
            scanners: Arc::clone(&self.scanners),
            free_hashes: Arc::clone(&self.free_hashes),
            has_lookahead: self.has_lookahead,
            has_captures: self.has_captures,
            limited: Arc::clone(&self.limited),
            cache_fallback: self.cache_fallback,
            uses_tokens: self.uses_tokens,
            named_tokens: Arc::clone(&self.named_tokens),
            precomputed: self.precomputed.clone(),
            distances: Arc::clone(&self.distances),
            lazy: self.lazy.clone(),
            newest: None,
            newest_of_first: Weak::clone(&self.newest_of_first),
        })
    }

    /// The newest snapshot of this lazy grammar, if one was made.
    fn newest(&self) -> Option<Arc<Self>> {
        let newest = self.newest_of_first.upgrade()?;
        let newest = newest.lock().unwrap_or_else(PoisonError::into_inner);
        newest.clone()
    }

    /// A hold on the record of this lazy grammar's newest snapshot, for a
    /// matcher to keep: the grammar first made holds it, but its user may
    /// drop that grammar once a matcher exists, and without the record
    /// later walks and matchers would start from their own snapshots
    /// again (rebuilding rules, refused the memos kept with later ones).
    /// Snapshots point at the record weakly, so it never keeps itself
    /// alive.
    pub(crate) fn snapshots(&self) -> Option<Snapshots> {
        let newest = self.newest_of_first.upgrade()?;
        Some(Snapshots { _newest: newest })
    }

    /// How many rules are built (not pending): the snapshots of a lazy
    /// grammar are ordered by it.
    pub(crate) fn built_rules(&self) -> usize {
        self.built_rules
    }

    /// The newest snapshot of this grammar a matcher holds, if newer than
    /// this one (itself otherwise): matchers that start from it need not
    /// build its rules again.
    pub(crate) fn latest(self: &Arc<Self>) -> Arc<Self> {
        if self.lazy.is_none() {
            return Arc::clone(self);
        }
        match self.newest() {
            Some(newest) if newest.built_rules > self.built_rules => newest,
            _ => Arc::clone(self),
        }
    }

    /// Validates `tables` and derives what matchers look up.
    fn prepare(tables: Tables, lazy: Option<Arc<Lazy>>) -> Result<Self, TablesError> {
        tables.validate()?;
        let mut owners = Owners::default();
        owners.extend(&tables, 0, |_| true)?;
        let has_lookahead = tables.rules.iter().any(|r| r.lookahead != RuleRecord::NONE);
        let short = short_rules(&tables);
        let match_bytes = repeats::match_bytes(&tables, None, |_| true);
        let callers = OnceLock::from(callers(&tables));
        let scanners = scanners(&tables)?;
        let free_hashes = free_hashes(&tables);
        let uses_tokens = !tables.token_sets.is_empty()
            || (tables.edges.iter()).any(|e| matches!(e.label(), Edge::Tokens { .. }))
            || tables
                .rules
                .iter()
                .any(|r| r.kind == RuleRecord::TOKEN_DISPATCH);
        let mut named_tokens = tables.token_pool.clone();
        for rule in &tables.rules {
            if rule.kind == RuleRecord::TOKEN_DISPATCH {
                let dispatch = tables.dispatches[rule.body as usize];
                let first = dispatch.first_pattern as usize;
                named_tokens.extend(
                    tables.patterns[first..first + dispatch.pattern_count as usize]
                        .iter()
                        .map(|p| p.offset),
                );
            }
        }
        named_tokens.sort_unstable();
        named_tokens.dedup();
        let cache_fallback = if has_lookahead {
            Some(CacheFallback::Lookahead)
        } else if lazy.is_none() && !hashes_agree(&tables) {
            Some(CacheFallback::HashesDisagree)
        } else {
            None
        };
        Ok(Self {
            cache_fallback,
            owners,
            short,
            match_bytes,
            callers,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            scanners: scanners.into(),
            free_hashes: free_hashes.into(),
            has_lookahead,
            has_captures: tables.rules.iter().any(RuleRecord::is_captured),
            limited: (0..)
                .zip(&tables.rules)
                .filter(|(_, rule)| rule.is_limited())
                .map(|(id, _)| id)
                .collect(),
            uses_tokens,
            named_tokens: named_tokens.into(),
            precomputed: None,
            distances: Arc::default(),
            built_rules: lazy::built_count(&tables),
            newest: None,
            newest_of_first: Weak::new(),
            lazy,
            tables,
        })
    }

    /// The number of mask-cache entries the grammar's bundle carries.
    pub fn precomputed_entries(&self) -> usize {
        self.precomputed.as_ref().map_or(0, |section| section.len())
    }

    /// Holds `section`'s entries for as long as the grammar lives, and
    /// offers them to the mask cache of each vocabulary they are for.
    pub(crate) fn set_precomputed(&mut self, section: Arc<dyn PrecomputedEntries>) {
        self.precomputed = Some(section);
    }

    /// The mask entries of the bundle the grammar was opened from, if it
    /// carries any.
    pub(crate) fn precomputed(&self) -> Option<&Arc<dyn PrecomputedEntries>> {
        self.precomputed.as_ref()
    }

    /// The tables this grammar executes.
    pub fn tables(&self) -> &Tables {
        &self.tables
    }

    /// How far each place is from the end of its rule. A grammar whose
    /// rules are built on first use builds them all here, once: the
    /// fewest symbols of a rule depend on every rule it may call.
    pub(crate) fn distances(&self) -> Result<Arc<Distances>, Arc<str>> {
        self.distances
            .get_or_init(|| {
                if self.is_complete() {
                    return Ok(Arc::new(Distances::of(self)));
                }
                let complete = self
                    .completed()
                    .map_err(|error| Arc::from(error.to_string()))?;
                Ok(Arc::new(Distances::of(&complete)))
            })
            .clone()
    }

    /// The entry rule.
    pub fn root(&self) -> RuleId {
        RuleId::of_table(self.tables.root)
    }

    /// The name of `rule` (empty if out of range).
    pub fn rule_name(&self, rule: RuleId) -> &str {
        self.tables.rule_name(rule.as_u32())
    }

    pub(crate) fn rule(&self, rule: u32) -> &RuleRecord {
        &self.tables.rules[rule as usize]
    }

    pub(crate) fn edges(&self, node: u32) -> &[EdgeRecord] {
        let node = &self.tables.nodes[node as usize];
        let first = node.first_edge as usize;
        &self.tables.edges[first..first + node.edge_count as usize]
    }

    /// The counted repetition of edge `edge` (the edge a repetition's
    /// Earley item names).
    pub(crate) fn repeat(&self, edge: u32) -> Repeat {
        let record = &self.tables.edges[edge as usize];
        match record.label() {
            Edge::Repeat { rule, min, max } => Repeat {
                rule,
                min,
                max,
                target: record.target,
            },
            other => unreachable!("a repetition's item names a repeat edge, not {other:?}"),
        }
    }

    /// The index of the first edge of `node` (edges of a node are contiguous).
    pub(crate) fn first_edge(&self, node: u32) -> u32 {
        self.tables.nodes[node as usize].first_edge
    }

    pub(crate) fn is_final(&self, node: u32) -> bool {
        self.tables.nodes[node as usize].is_final == 1
    }

    pub(crate) fn node_rule(&self, node: u32) -> u32 {
        self.owners.node_rule[node as usize]
    }

    pub(crate) fn in_lookahead(&self, node: u32) -> bool {
        self.owners.node_in_lookahead[node as usize]
    }

    pub(crate) fn waits(&self, node: u32) -> bool {
        self.owners.node_waits[node as usize]
    }

    /// Whether an item at `node` scans bytes.
    pub(crate) fn scans(&self, node: u32) -> bool {
        self.owners.node_scans[node as usize]
    }

    /// The node that edge `edge` leaves.
    pub(crate) fn edge_node(&self, edge: u32) -> u32 {
        self.owners.edge_node[edge as usize]
    }

    /// Whether every match of `rule` is text of at most [`SHORT_RULE_BYTES`]
    /// bytes — a character, an escape, a digit — or white space of at most
    /// [`SHORT_WHITE_SPACE_BYTES`]: a rule that usually ends inside a token,
    /// so mask-cache entries for its items are built together with the
    /// item that waits for it.
    pub(crate) fn is_short(&self, rule: u32) -> bool {
        self.short[rule as usize]
    }

    /// At least how many bytes a non-empty match of `rule` takes, where a
    /// counted repetition repeats it (1 elsewhere): a token ends fewer of
    /// its matches than its bytes over that, plus two (see
    /// [`count_cap`]) — a pattern that counts words counts one per two
    /// bytes or more.
    pub(crate) fn match_bytes(&self, rule: u32) -> usize {
        usize::from(self.match_bytes[rule as usize].max(1))
    }

    /// The rules that call `rule` but are not built yet (none, but in a
    /// lazy grammar): until they are, [`Grammar::callers`] does not list
    /// all its callers.
    pub(crate) fn pending_callers(&self, rule: u32) -> Vec<u32> {
        let Some(lazy) = &self.lazy else {
            return Vec::new();
        };
        lazy.callers(rule)
            .filter(|&caller| self.tables.rules[caller as usize].kind == RuleRecord::PENDING)
            .collect()
    }

    /// The bytes that can come first after a match of `rule` anywhere in
    /// the grammar, pending rules included, as its builder reads them from
    /// what it builds from ([`RuleBuilder::follow_bytes`]); `None` for a
    /// grammar without a builder.
    pub(crate) fn follow_bytes(&self, rule: u32) -> Option<ByteSet> {
        self.lazy.as_ref().map(|lazy| lazy.follow_bytes(rule))
    }

    /// Every place that calls `rule`, in table order (in a lazy grammar,
    /// every built place: see [`Grammar::pending_callers`]).
    pub(crate) fn callers(&self, rule: u32) -> &[Caller] {
        // A snapshot of a lazy grammar lists them when first asked.
        let (start, callers) = self.callers.get_or_init(|| callers(&self.tables));
        let from = start[rule as usize] as usize;
        let to = start[rule as usize + 1] as usize;
        &callers[from..to]
    }

    /// The grammar's id among those of this process.
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Whether token masks may use the shared mask cache.
    pub(crate) fn is_cacheable(&self) -> bool {
        self.cache_fallback.is_none()
    }

    /// Why this grammar computes every token mask without the shared mask
    /// cache (walking every token at every step: milliseconds, not
    /// microseconds), if it does. Grammars the compiler emits use the
    /// cache unless they have lookahead.
    pub fn cache_fallback(&self) -> Option<CacheFallback> {
        self.cache_fallback
    }

    /// Whether a rule is captured: its matchers keep their input.
    pub(crate) fn has_captures(&self) -> bool {
        self.has_captures
    }

    /// Whether a rule's matches are limited in tokens or bytes: its
    /// matchers check each step and mask against the limits.
    pub(crate) fn has_limits(&self) -> bool {
        !self.limited.is_empty()
    }

    /// The rules whose matches are limited in tokens or bytes.
    pub(crate) fn limited(&self) -> &[u32] {
        &self.limited
    }

    pub(crate) fn has_lookahead(&self) -> bool {
        self.has_lookahead
    }

    pub(crate) fn scanner(&self, dispatch: u32) -> Option<&Scanner> {
        self.scanners[dispatch as usize].as_ref()
    }

    /// The hash that keys the mask-cache entries of the free text of
    /// `rule`, a tag or token dispatch.
    pub(crate) fn free_hash(&self, rule: u32) -> u64 {
        self.free_hashes[self.rule(rule).body as usize]
    }

    pub(crate) fn dispatch(&self, rule: &RuleRecord) -> &crate::tables::DispatchRecord {
        &self.tables.dispatches[rule.body as usize]
    }

    /// The `index`-th pattern of `dispatch`.
    pub(crate) fn pattern(&self, global: u32) -> &PatternRecord {
        &self.tables.patterns[global as usize]
    }

    pub(crate) fn uses_tokens(&self) -> bool {
        self.uses_tokens
    }

    /// Every token id the grammar names, sorted.
    pub(crate) fn named_tokens(&self) -> &[u32] {
        &self.named_tokens
    }

    /// Whether the grammar names `token` anywhere.
    pub(crate) fn names_token(&self, token: u32) -> bool {
        self.named_tokens.binary_search(&token).is_ok()
    }

    /// A token id the grammar does not name: it stands for all of them.
    pub(crate) fn unnamed_token(&self) -> u32 {
        // The first gap in the sorted names.
        let mut candidate = 0;
        for &named in self.named_tokens.iter() {
            if named != candidate {
                break;
            }
            candidate += 1;
        }
        candidate
    }

    pub(crate) fn token_set_contains(&self, set: u32, token: u32) -> bool {
        let set = &self.tables.token_sets[set as usize];
        let ids = &self.tables.token_pool[set.offset as usize..(set.offset + set.len) as usize];
        ids.binary_search(&token).is_ok() != (set.negated == 1)
    }
}

/// Per node and edge, what owns it; per node, what its edges do.
#[derive(Clone, Default)]
struct Owners {
    /// Per node: the rule whose automaton holds it.
    node_rule: Vec<u32>,
    /// Per node: whether it is in its rule's lookahead automaton.
    node_in_lookahead: Vec<bool>,
    /// Per node: whether it has rule or repeat edges.
    node_waits: Vec<bool>,
    /// Per node: whether it has byte edges.
    node_scans: Vec<bool>,
    /// Per edge: the node it leaves.
    edge_node: Vec<u32>,
}

impl Owners {
    /// Derives what `tables` adds from node `first` on, for the rules
    /// `claimed` picks (their automata must be among the nodes added):
    /// each automaton owns its node range alone, and its edges stay in it.
    fn extend(
        &mut self,
        tables: &Tables,
        first: usize,
        claimed: impl Fn(usize) -> bool,
    ) -> Result<(), TablesError> {
        let nodes = tables.nodes.len();
        self.node_rule.resize(nodes, RuleRecord::NONE);
        self.node_in_lookahead.resize(nodes, false);
        self.edge_node.resize(tables.edges.len(), RuleRecord::NONE);
        for node in &tables.nodes[first..] {
            let edges = &tables.edges
                [node.first_edge as usize..(node.first_edge + node.edge_count) as usize];
            self.node_waits
                .push(edges.iter().any(|e| e.callee().is_some()));
            self.node_scans.push(
                edges
                    .iter()
                    .any(|e| matches!(e.label(), Edge::Bytes { .. })),
            );
        }
        for (n, node) in tables.nodes.iter().enumerate().skip(first) {
            let n = u32::try_from(n).expect("validated tables index in u32");
            let edges = node.first_edge as usize..(node.first_edge + node.edge_count) as usize;
            for owner in &mut self.edge_node[edges] {
                if *owner == RuleRecord::NONE {
                    *owner = n;
                }
            }
        }
        for (i, rule) in tables.rules.iter().enumerate() {
            if !claimed(i) {
                continue;
            }
            let rule_id = u32::try_from(i).expect("validated tables index in u32");
            if rule.kind == RuleRecord::AUTOMATON {
                self.claim(tables, rule_id, rule.body, rule.node_count, false)?;
            }
            if rule.lookahead != RuleRecord::NONE {
                self.claim(
                    tables,
                    rule_id,
                    rule.lookahead,
                    rule.lookahead_node_count,
                    true,
                )?;
            }
        }
        Ok(())
    }

    fn claim(
        &mut self,
        tables: &Tables,
        rule: u32,
        start: u32,
        count: u32,
        lookahead: bool,
    ) -> Result<(), TablesError> {
        let range = start..start + count;
        for node in range.clone() {
            if self.node_rule[node as usize] != RuleRecord::NONE {
                return Err(TablesError::new(format!("node {node} is in two automata")));
            }
            self.node_rule[node as usize] = rule;
            self.node_in_lookahead[node as usize] = lookahead;
            let record = &tables.nodes[node as usize];
            let first = record.first_edge as usize;
            let edges = &tables.edges[first..first + record.edge_count as usize];
            if let Some(edge) = edges.iter().find(|e| !range.contains(&e.target)) {
                return Err(TablesError::new(format!(
                    "an edge of node {node} leaves its automaton for node {}",
                    edge.target
                )));
            }
        }
        Ok(())
    }
}

/// Per dispatch (tag dispatches only): its free-text scanner.
fn scanners(tables: &Tables) -> Result<Vec<Option<Scanner>>, TablesError> {
    let mut scanners = vec![None; tables.dispatches.len()];
    for rule in &tables.rules {
        if rule.kind != RuleRecord::DISPATCH {
            continue;
        }
        let dispatch = tables.dispatches[rule.body as usize];
        let first = dispatch.first_pattern as usize;
        let patterns: Vec<&[u8]> = tables.patterns[first..first + dispatch.pattern_count as usize]
            .iter()
            .map(|p| &tables.byte_pool[p.offset as usize..(p.offset + p.len) as usize])
            .collect();
        let scanner = Scanner::new(&patterns).map_err(TablesError::new)?;
        scanners[rule.body as usize] = Some(scanner);
    }
    Ok(scanners)
}

/// Per dispatch: what its free text does with text, as a hash. For a tag
/// dispatch, its patterns (kind and bytes, in order: the order numbers the
/// scanner's states) and whether it may end anywhere; for a token
/// dispatch, nothing (text passes, tokens are matched by id). Never the
/// arms: free-text entries leave the tokens that complete a trigger to the
/// full state, so grammars that differ only in their arms — a request's
/// tools — share them.
fn free_hashes(tables: &Tables) -> Vec<u64> {
    let mut hashes = vec![0; tables.dispatches.len()];
    for rule in &tables.rules {
        let mut hash = Fnv::new();
        match rule.kind {
            RuleRecord::DISPATCH => {
                let dispatch = tables.dispatches[rule.body as usize];
                hash.write(b"xg-free-text-1");
                hash.write(&dispatch.stop_at_end.to_le_bytes());
                let first = dispatch.first_pattern as usize;
                for pattern in &tables.patterns[first..first + dispatch.pattern_count as usize] {
                    hash.write(&pattern.kind.to_le_bytes());
                    hash.write(&pattern.len.to_le_bytes());
                    hash.write(
                        &tables.byte_pool
                            [pattern.offset as usize..(pattern.offset + pattern.len) as usize],
                    );
                }
            }
            RuleRecord::TOKEN_DISPATCH => hash.write(b"xg-token-free-region-1"),
            _ => continue,
        }
        hashes[rule.body as usize] = hash.0;
    }
    hashes
}

/// A place in the tables that calls a rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Caller {
    /// A rule edge of node `node`.
    Node(u32),
    /// The counted repetition `edge` of node `node`.
    Repeat { node: u32, edge: u32 },
    /// Trigger `pattern` of the tag or token dispatch rule `rule`.
    Arm { rule: u32, pattern: u32 },
}

/// Per rule, its callers (as offsets into one list), in table order.
fn callers(tables: &Tables) -> (Vec<u32>, Vec<Caller>) {
    let mut per_rule: Vec<Vec<Caller>> = vec![Vec::new(); tables.rules.len()];
    let id = |i: usize| u32::try_from(i).expect("validated tables index in u32");
    for (r, record) in tables.rules.iter().enumerate() {
        if record.kind == RuleRecord::PENDING {
            continue;
        }
        if record.kind == RuleRecord::AUTOMATON {
            for node in record.body..record.body + record.node_count {
                for (edge, callee) in calls_at(tables, node) {
                    per_rule[callee as usize].push(edge);
                }
            }
            continue;
        }
        let dispatch = tables.dispatches[record.body as usize];
        for pattern in dispatch.first_pattern..dispatch.first_pattern + dispatch.pattern_count {
            let arm = tables.patterns[pattern as usize];
            if arm.kind == PatternRecord::TRIGGER {
                per_rule[arm.arm as usize].push(Caller::Arm {
                    rule: id(r),
                    pattern,
                });
            }
        }
    }
    let mut start = Vec::with_capacity(per_rule.len() + 1);
    let mut all = Vec::new();
    for callers in per_rule {
        start.push(id(all.len()));
        all.extend(callers);
    }
    start.push(id(all.len()));
    (start, all)
}

/// The calls that the edges of `node` make: each with the rule called.
fn calls_at(tables: &Tables, node: u32) -> impl Iterator<Item = (Caller, u32)> + '_ {
    let first = tables.nodes[node as usize].first_edge;
    let count = tables.nodes[node as usize].edge_count;
    (first..first + count).filter_map(move |edge| {
        let record = &tables.edges[edge as usize];
        match record.label() {
            Edge::Rule { rule } => Some((Caller::Node(node), rule)),
            Edge::Repeat { rule, .. } => Some((Caller::Repeat { node, edge }, rule)),
            Edge::Bytes { .. } | Edge::Tokens { .. } => None,
        }
    })
}

/// The longest match of a rule that [`Grammar::is_short`] calls short.
pub(crate) const SHORT_RULE_BYTES: u32 = 16;

/// How deep rule calls are followed when sizing a rule; rules that call
/// deeper count as long.
const SHORT_RULE_DEPTH: usize = 32;

/// What is known of the longest match of a rule.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Longest {
    Unknown,
    /// Being sized: a call back to it is recursion.
    Sizing,
    /// At most [`SHORT_RULE_BYTES`] bytes, or `None`: longer, unbounded,
    /// or not only text.
    Known(Option<u32>),
}

/// The longest run of white space a rule made of white space alone may
/// match and still be short: JSON Schema's flexible layout allows 32
/// (`DEFAULT_MAX_WHITESPACE`), and tokens end such runs inside them (` }`,
/// `\n  "`), like a character's.
pub(crate) const SHORT_WHITE_SPACE_BYTES: u32 = 32;

/// Per rule: whether it is short.
fn short_rules(tables: &Tables) -> Vec<bool> {
    let mut memo = Memo::new(tables);
    (0..tables.rules.len())
        .map(|rule| is_short_rule(tables, rule, &mut memo))
        .collect()
}

/// What sizing rules has found so far, per rule.
struct Memo {
    longest: Vec<Longest>,
    /// Whether the rule reads white space alone (`None`: not known yet).
    white_space: Vec<Option<bool>>,
}

impl Memo {
    fn new(tables: &Tables) -> Self {
        Self {
            longest: vec![Longest::Unknown; tables.rules.len()],
            white_space: vec![None; tables.rules.len()],
        }
    }
}

/// Whether `rule` is short: every match at most [`SHORT_RULE_BYTES`]
/// bytes, or at most [`SHORT_WHITE_SPACE_BYTES`] of white space.
fn is_short_rule(tables: &Tables, rule: usize, memo: &mut Memo) -> bool {
    longest_match(tables, rule, &mut memo.longest, 0).is_some()
        || (reads_white_space_only(tables, rule, &mut memo.white_space, 0)
            && longest_path(
                tables,
                &tables.rules[rule],
                &mut memo.longest,
                0,
                SHORT_WHITE_SPACE_BYTES,
            )
            .is_some())
}

/// Whether `rule`'s edges read only JSON white space bytes, directly or
/// through the rules they call (or repeat), each looked at once: a rule
/// met again while it is looked at, or past [`SHORT_RULE_DEPTH`] calls,
/// counts as reading more (a chain of rules that each call the next twice
/// took 20 s to size before).
fn reads_white_space_only(
    tables: &Tables,
    rule: usize,
    known: &mut [Option<bool>],
    depth: usize,
) -> bool {
    if let Some(found) = known[rule] {
        return found;
    }
    let record = tables.rules[rule];
    if depth > SHORT_RULE_DEPTH
        || record.kind != RuleRecord::AUTOMATON
        || record.lookahead != RuleRecord::NONE
    {
        return false;
    }
    known[rule] = Some(false);
    let white = |byte: u32| matches!(byte, 0x09 | 0x0A | 0x0D | 0x20);
    let nodes = record.body as usize..(record.body + record.node_count) as usize;
    let found = tables.nodes[nodes].iter().all(|node| {
        let first = node.first_edge as usize;
        (tables.edges[first..first + node.edge_count as usize].iter()).all(|edge| {
            match edge.label() {
                Edge::Bytes { lo, hi } => (u32::from(lo)..=u32::from(hi)).all(white),
                Edge::Rule { rule } | Edge::Repeat { rule, .. } => {
                    reads_white_space_only(tables, rule as usize, known, depth + 1)
                }
                Edge::Tokens { .. } => false,
            }
        })
    });
    known[rule] = Some(found);
    found
}

/// The longest match of `rule` in bytes, if it is short.
fn longest_match(tables: &Tables, rule: usize, memo: &mut [Longest], depth: usize) -> Option<u32> {
    match memo[rule] {
        Longest::Known(bytes) => return bytes,
        Longest::Sizing => return None,
        Longest::Unknown if depth > SHORT_RULE_DEPTH => return None,
        Longest::Unknown => {}
    }
    let record = tables.rules[rule];
    if record.kind != RuleRecord::AUTOMATON || record.lookahead != RuleRecord::NONE {
        memo[rule] = Longest::Known(None);
        return None;
    }
    memo[rule] = Longest::Sizing;
    let longest = longest_path(tables, &record, memo, depth, SHORT_RULE_BYTES);
    memo[rule] = Longest::Known(longest);
    longest
}

/// The longest path through `rule`'s automaton in bytes, if at most
/// `limit`: edges are relaxed from a work list, and a path past the limit
/// (a loop that reads text, too) ends the search.
fn longest_path(
    tables: &Tables,
    rule: &RuleRecord,
    memo: &mut [Longest],
    depth: usize,
    limit: u32,
) -> Option<u32> {
    let start = rule.body as usize;
    let mut distance = vec![None; rule.node_count as usize];
    distance[0] = Some(0u32);
    let mut work = vec![start];
    let mut longest = 0;
    while let Some(node) = work.pop() {
        let here = distance[node - start].expect("queued nodes have a distance");
        let record = tables.nodes[node];
        let first = record.first_edge as usize;
        for edge in &tables.edges[first..first + record.edge_count as usize] {
            let bytes = match edge.label() {
                Edge::Bytes { .. } => 1,
                Edge::Rule { rule } => longest_match(tables, rule as usize, memo, depth + 1)?,
                Edge::Repeat { rule, max, .. } => {
                    let body = longest_match(tables, rule as usize, memo, depth + 1)?;
                    if body == 0 {
                        0
                    } else {
                        body.checked_mul(max?)?
                    }
                }
                Edge::Tokens { .. } => return None,
            };
            let there = here.checked_add(bytes)?;
            if there > limit {
                return None;
            }
            let target = edge.target as usize - start;
            if distance[target].is_none_or(|d| d < there) {
                distance[target] = Some(there);
                longest = longest.max(there);
                work.push(edge.target as usize);
            }
        }
    }
    Some(longest)
}

/// Whether rules with equal structural hashes have equal structure here:
/// the same automaton, node for node, calling rules with equal hashes (or
/// the same dispatch). The mask cache shares entries by hash, so tables
/// written by hand or damaged must not pass off one rule as another; such
/// grammars compute masks without the cache.
fn hashes_agree(tables: &Tables) -> bool {
    // Per hash: the first rule with it, and its shape once another rule has
    // the hash too (most hashes are a single rule's).
    let mut first: rustc_hash::FxHashMap<u64, (usize, Option<Vec<u64>>)> =
        rustc_hash::FxHashMap::default();
    for (index, rule) in tables.rules.iter().enumerate() {
        match first.entry(rule.hash) {
            Entry::Vacant(vacant) => {
                vacant.insert((index, None));
            }
            Entry::Occupied(mut occupied) => {
                let (earlier, seen) = occupied.get_mut();
                let seen = seen.get_or_insert_with(|| shape(tables, &tables.rules[*earlier]));
                if *seen != shape(tables, rule) {
                    return false;
                }
            }
        }
    }
    true
}

/// A rule's structure as numbers: node by node, finality and edges, with
/// targets relative to the rule and callees by hash.
fn shape(tables: &Tables, rule: &RuleRecord) -> Vec<u64> {
    let callee = |id: u32| tables.rules[id as usize].hash;
    let mut shape = vec![u64::from(rule.kind), rule.lookahead_hash];
    let automaton = |start: u32, count: u32, shape: &mut Vec<u64>| {
        shape.push(u64::from(count));
        for node in &tables.nodes[start as usize..(start + count) as usize] {
            shape.push(u64::from(node.is_final));
            let first = node.first_edge as usize;
            for edge in &tables.edges[first..first + node.edge_count as usize] {
                let label = match edge.label() {
                    Edge::Rule { rule } | Edge::Repeat { rule, .. } => callee(rule),
                    Edge::Tokens { set } => {
                        let set = tables.token_sets[set as usize];
                        shape.push(u64::from(set.negated));
                        shape.extend(
                            tables.token_pool[set.offset as usize..(set.offset + set.len) as usize]
                                .iter()
                                .map(|&t| u64::from(t)),
                        );
                        u64::from(set.len)
                    }
                    Edge::Bytes { lo, .. } => u64::from(lo),
                };
                shape.extend([
                    u64::from(edge.kind),
                    label,
                    u64::from(edge.b),
                    u64::from(edge.c),
                    u64::from(edge.target - start),
                ]);
            }
        }
    };
    match rule.kind {
        RuleRecord::AUTOMATON => automaton(rule.body, rule.node_count, &mut shape),
        _ => {
            let dispatch = tables.dispatches[rule.body as usize];
            shape.extend([u64::from(dispatch.repeat), u64::from(dispatch.stop_at_end)]);
            let first = dispatch.first_pattern as usize;
            for pattern in &tables.patterns[first..first + dispatch.pattern_count as usize] {
                shape.extend([u64::from(pattern.kind), u64::from(pattern.len)]);
                if pattern.arm != RuleRecord::NONE {
                    shape.push(callee(pattern.arm));
                }
                if rule.kind == RuleRecord::DISPATCH {
                    let bytes = &tables.byte_pool
                        [pattern.offset as usize..(pattern.offset + pattern.len) as usize];
                    shape.extend(bytes.iter().map(|&b| u64::from(b)));
                } else {
                    shape.push(u64::from(pattern.offset));
                }
            }
        }
    }
    if rule.lookahead != RuleRecord::NONE {
        automaton(rule.lookahead, rule.lookahead_node_count, &mut shape);
    }
    shape
}
