//! The compile cache: automata of rule bodies built by earlier compilations,
//! reused by later ones.
//!
//! Grammars compiled at request time repeat each other: every tool list of
//! a server's requests embeds mostly the same argument schemas, and every
//! embedded schema brings the same JSON string, number and whitespace
//! rules. Building a rule's automaton (Thompson construction,
//! determinization, minimization) is most of a compilation, and it depends
//! only on the rule's body — up to which rules it refers to. So automata
//! are kept keyed by the body with its references numbered in order of
//! appearance (`fsm` does the renaming), and a body seen before, in this
//! grammar or an earlier one, costs a lookup and a relabelling.
//!
//! The cache is thread-safe (a lock is held to look up or insert, never
//! while an automaton is built), bounded in bytes (least recently used
//! entries go first) and counts its hits and misses.

use std::collections::hash_map::Entry::Vacant;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rustc_hash::FxHashMap;

use crate::fsm::Fsm;
use crate::ir::{Expr, TokenSet};

/// The default bound on a compile cache's size: 64 MiB.
pub const DEFAULT_COMPILE_CACHE_BYTES: usize = 64 << 20;

/// Bytes counted for each entry beyond its automaton.
const SLOT_OVERHEAD: usize = 128;

/// A rule body's automaton, with references and token sets numbered as in
/// its key.
#[derive(Debug)]
pub(crate) struct Automaton {
    /// The automaton: `Label::Rule(i)` is the key's `i`-th referenced rule,
    /// `Label::Tokens(i)` is `token_sets[i]`.
    pub fsm: Fsm,
    /// The token sets its edges use.
    pub token_sets: Vec<TokenSet>,
}

impl Automaton {
    /// The approximate bytes it holds.
    pub fn bytes(&self) -> usize {
        let edges = self.fsm.edge_count() * size_of::<crate::fsm::Edge>();
        let nodes = self.fsm.nodes.len() * size_of::<crate::fsm::Node>();
        let sets: usize = self
            .token_sets
            .iter()
            .map(|set| set.ids.len() * size_of::<xg_runtime::TokenId>())
            .sum();
        edges + nodes + sets
    }
}

/// Counters and sizes of a [`CompileCache`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompileCacheStats {
    /// Automata found in the cache.
    pub hits: u64,
    /// Automata built (and then kept).
    pub misses: u64,
    /// Entries removed to stay within the size bound.
    pub evictions: u64,
    /// Entries held now.
    pub entries: usize,
    /// Bytes held now (approximate: automata, keys not counted).
    pub bytes: usize,
}

struct Slot {
    value: Arc<Automaton>,
    bytes: usize,
    last_used: u64,
}

#[derive(Default)]
struct Pool {
    automata: FxHashMap<Expr, Slot>,
    bytes: usize,
    clock: u64,
}

/// Automata of rule bodies shared by compilations (see the module docs).
///
/// One per process (or per tenant) is enough: pass the same cache to every
/// request's compilation, from any thread.
pub struct CompileCache {
    pool: Mutex<Pool>,
    limit: usize,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
}

impl std::fmt::Debug for CompileCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompileCache")
            .field("limit", &self.limit)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl Default for CompileCache {
    fn default() -> Self {
        Self::new(DEFAULT_COMPILE_CACHE_BYTES)
    }
}

impl CompileCache {
    /// An empty cache holding at most about `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Self {
            pool: Mutex::default(),
            limit,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        }
    }

    /// The cache's counters and size.
    pub fn stats(&self) -> CompileCacheStats {
        let pool = self.lock();
        CompileCacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            entries: pool.automata.len(),
            bytes: pool.bytes,
        }
    }

    /// Empties the cache (the counters stay).
    pub fn clear(&self) {
        let mut pool = self.lock();
        pool.automata.clear();
        pool.bytes = 0;
    }

    /// The automaton of the body `key` (references renumbered), built by
    /// `build` if it is not cached.
    pub(crate) fn automaton(
        &self,
        key: Expr,
        build: impl FnOnce(&Expr) -> Automaton,
    ) -> Arc<Automaton> {
        {
            let mut pool = self.lock();
            pool.clock += 1;
            let now = pool.clock;
            if let Some(slot) = pool.automata.get_mut(&key) {
                slot.last_used = now;
                self.hits.fetch_add(1, Ordering::Relaxed);
                return Arc::clone(&slot.value);
            }
        }
        let value = Arc::new(build(&key));
        self.misses.fetch_add(1, Ordering::Relaxed);
        let bytes = value.bytes() + SLOT_OVERHEAD;
        let mut pool = self.lock();
        pool.clock += 1;
        let now = pool.clock;
        if let Vacant(vacant) = pool.automata.entry(key) {
            vacant.insert(Slot {
                value: Arc::clone(&value),
                bytes,
                last_used: now,
            });
            pool.bytes += bytes;
            self.evict(&mut pool);
        }
        value
    }

    /// Past the bound, removes the least recently used entries until the
    /// pool is back to three quarters of it.
    fn evict(&self, pool: &mut Pool) {
        if pool.bytes <= self.limit {
            return;
        }
        let target = self.limit / 4 * 3;
        let mut order: Vec<(u64, Expr)> = pool
            .automata
            .iter()
            .map(|(key, slot)| (slot.last_used, key.clone()))
            .collect();
        order.sort_unstable_by_key(|(used, _)| *used);
        for (_, key) in order {
            if pool.bytes <= target {
                break;
            }
            if let Some(slot) = pool.automata.remove(&key) {
                pool.bytes -= slot.bytes;
                self.evictions.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Pool> {
        // Every update leaves the pool consistent, so a panic elsewhere
        // while it was held does not make it unusable.
        self.pool.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
