//! The compile cache: what earlier compilations built, reused by later
//! ones — rule automata and the rules of embedded JSON Schemas.
//!
//! Grammars compiled at request time repeat each other: every tool list of
//! a server's requests embeds mostly the same argument schemas, and every
//! embedded schema brings the same JSON string, number and whitespace
//! rules. Building a rule's automaton (Thompson construction,
//! determinization, minimization) is most of a compilation, and it depends
//! only on the rule's body — up to which rules it refers to. So automata
//! are kept keyed by the body with its references numbered in order of
//! appearance (`fsm` does the renaming), and a body seen before, in this
//! grammar or an earlier one, costs a lookup and a relabelling. Likewise
//! the rules an embedded schema (`%json`) generates depend only on its
//! JSON text and the generator's options: a schema seen before costs a
//! lookup.
//!
//! The cache is thread-safe (a lock is held to look up or insert, never
//! while an entry is built), bounded in bytes (least recently used entries
//! go first, automata and schemas alike) and counts its hits and misses.
//!
//! Beneath every cache lie the *standard* automata: those of the JSON
//! Schema generator's building blocks (strings and their characters,
//! numbers, integers, any value, object and array, each format), in both
//! whitespace modes a server uses, built once per process when the first
//! schema is generated (about 5 ms; grammars without schemas never build
//! them) and never evicted. They were a third of the automata a schema's
//! compile built, every time a cache was new.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use rustc_hash::FxHashMap;
use xg_runtime::lru::{self, Lru, free_aside};

use crate::budget::Exceeded;
use crate::fsm::Fsm;
use crate::ir::{Expr, TokenSet};
use crate::json_schema::{self, Generated};

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
    /// Embedded schemas whose rules were found in the cache.
    pub schema_hits: u64,
    /// Embedded schemas generated (and then kept).
    pub schema_misses: u64,
    /// Entries removed to stay within the size bound.
    pub evictions: u64,
    /// Entries held now.
    pub entries: usize,
    /// Bytes held now (approximate: automata and generated rules, keys not
    /// counted).
    pub bytes: usize,
}

/// What an entry is kept under.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Key {
    /// A rule body, references renumbered.
    Body(Expr),
    /// A schema's JSON text and the generator's options.
    Schema(String, json_schema::Options),
}

/// A cached entry.
#[derive(Clone)]
enum Value {
    Automaton(Arc<Automaton>),
    Schema(Arc<Generated>),
}

/// The cache's entries, and the time of the last use.
#[derive(Default)]
struct Pool {
    entries: Lru<Key, Value>,
    clock: u64,
}

/// Automata of rule bodies shared by compilations (see the module docs).
///
/// One per process (or per tenant) is enough: pass the same cache to every
/// request's compilation, from any thread. Clones share the cache: a
/// grammar that builds its rules on first use keeps one.
#[derive(Clone)]
pub struct CompileCache {
    shared: Arc<Shared>,
}

/// What the clones of a [`CompileCache`] share.
struct Shared {
    pool: Mutex<Pool>,
    limit: usize,
    /// Whether lookups fall back on the standard automata (not while
    /// they are being built).
    standard: bool,
    hits: AtomicU64,
    misses: AtomicU64,
    schema_hits: AtomicU64,
    schema_misses: AtomicU64,
    evictions: AtomicU64,
}

impl std::fmt::Debug for CompileCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompileCache")
            .field("limit", &self.shared.limit)
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
        Self::with(limit, true)
    }

    /// An empty cache that does not look among the standard automata.
    fn without_standard(limit: usize) -> Self {
        Self::with(limit, false)
    }

    fn with(limit: usize, standard: bool) -> Self {
        Self {
            shared: Arc::new(Shared {
                pool: Mutex::default(),
                limit,
                standard,
                hits: AtomicU64::new(0),
                misses: AtomicU64::new(0),
                schema_hits: AtomicU64::new(0),
                schema_misses: AtomicU64::new(0),
                evictions: AtomicU64::new(0),
            }),
        }
    }

    /// The cache's counters and size.
    pub fn stats(&self) -> CompileCacheStats {
        let pool = self.lock();
        CompileCacheStats {
            hits: self.shared.hits.load(Ordering::Relaxed),
            misses: self.shared.misses.load(Ordering::Relaxed),
            schema_hits: self.shared.schema_hits.load(Ordering::Relaxed),
            schema_misses: self.shared.schema_misses.load(Ordering::Relaxed),
            evictions: self.shared.evictions.load(Ordering::Relaxed),
            entries: pool.entries.len(),
            bytes: pool.entries.bytes(),
        }
    }

    /// Empties the cache (the counters stay).
    pub fn clear(&self) {
        let mut pool = self.lock();
        pool.entries.clear();
    }

    /// The automaton of the body `key` (references renumbered), built by
    /// `build` if it is not cached (a build that ran out of budget is not
    /// kept).
    pub(crate) fn automaton(
        &self,
        key: Expr,
        build: impl FnOnce(&Expr) -> Result<Automaton, Exceeded>,
    ) -> Result<Arc<Automaton>, Exceeded> {
        let key = Key::Body(key);
        if let Some(Value::Automaton(found)) = self.get(&key) {
            self.shared.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(found);
        }
        if self.shared.standard
            && let Key::Body(body) = &key
            && let Some(found) = STANDARD.get().and_then(|standard| standard.get(body))
        {
            self.shared.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(Arc::clone(found));
        }
        let Key::Body(body) = &key else {
            unreachable!("the key was made a body above")
        };
        let value = match build(body) {
            Ok(value) => Arc::new(value),
            Err(exceeded) => {
                // Stopped: the key (a rule's whole body) is freed aside.
                free_aside(key);
                return Err(exceeded);
            }
        };
        self.shared.misses.fetch_add(1, Ordering::Relaxed);
        let bytes = value.bytes();
        self.insert(key, Value::Automaton(Arc::clone(&value)), bytes);
        Ok(value)
    }

    /// The rules of the schema whose JSON text is `text`, generated with
    /// `options` by `generate` if they are not cached. Errors are not kept
    /// (they may come from a budget that a later compilation does not
    /// exceed).
    pub(crate) fn schema(
        &self,
        text: String,
        options: &json_schema::Options,
        generate: impl FnOnce() -> Result<Generated, Vec<json_schema::SchemaError>>,
    ) -> Result<Arc<Generated>, Vec<json_schema::SchemaError>> {
        if self.shared.standard {
            standard_automata();
        }
        let key = Key::Schema(text, options.clone());
        if let Some(Value::Schema(found)) = self.get(&key) {
            self.shared.schema_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(found);
        }
        let value = Arc::new(generate()?);
        self.shared.schema_misses.fetch_add(1, Ordering::Relaxed);
        let bytes = value.bytes();
        self.insert(key, Value::Schema(Arc::clone(&value)), bytes);
        Ok(value)
    }

    /// The entry of `key`, marked as just used.
    fn get(&self, key: &Key) -> Option<Value> {
        let mut pool = self.lock();
        pool.clock += 1;
        let now = pool.clock;
        pool.entries.get(key, now).cloned()
    }

    /// Keeps `value` (about `bytes` bytes) under `key`, unless another
    /// compilation did meanwhile; past the bound, the least recently used
    /// entries go until three quarters of it are left (freed once the lock
    /// is released, on a thread of their own when large).
    fn insert(&self, key: Key, value: Value, bytes: usize) {
        let mut pool = self.lock();
        pool.clock += 1;
        let now = pool.clock;
        if pool.entries.insert(key, value, bytes + SLOT_OVERHEAD, now) {
            let evicted = lru::evict(&mut [&mut pool.entries], self.shared.limit);
            drop(pool);
            self.shared
                .evictions
                .fetch_add(evicted.count as u64, Ordering::Relaxed);
            evicted.free();
        }
    }

    fn lock(&self) -> MutexGuard<'_, Pool> {
        // Every update leaves the pool consistent, so a panic elsewhere
        // while it was held does not make it unusable.
        self.shared
            .pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// The standard automata (see the module docs), once built.
static STANDARD: OnceLock<FxHashMap<Expr, Arc<Automaton>>> = OnceLock::new();

/// The standard automata, built on the first call.
fn standard_automata() -> &'static FxHashMap<Expr, Arc<Automaton>> {
    STANDARD.get_or_init(|| {
        let cache = CompileCache::without_standard(usize::MAX);
        let budget = crate::Budget::unlimited();
        let mut schemas = vec![
            serde_json::json!({}),
            serde_json::json!({"type": "string"}),
            serde_json::json!({"type": "number"}),
            serde_json::json!({"type": "integer"}),
            serde_json::json!({"type": "boolean"}),
            serde_json::json!({"type": "object"}),
            serde_json::json!({"type": "array"}),
        ];
        for format in json_schema::KNOWN_FORMATS {
            schemas.push(serde_json::json!({"type": "string", "format": format}));
        }
        let whitespace = [
            json_schema::Whitespace::Compact,
            json_schema::Options::default().whitespace,
        ];
        for whitespace in whitespace {
            let options = json_schema::Options {
                whitespace,
                ..json_schema::Options::default()
            };
            for schema in &schemas {
                let Ok(generated) = json_schema::generate(schema, &options, &budget) else {
                    continue;
                };
                let Ok(grammar) = generated.to_ir_within(&budget) else {
                    continue;
                };
                let grammar = crate::normalize::normalize(grammar);
                // Unlimited: cannot run out.
                let _ = crate::fsm::build(&grammar, &budget, &cache);
            }
        }
        let pool = cache.lock();
        pool.entries
            .iter()
            .filter_map(|(key, value)| match (key, value) {
                (Key::Body(body), Value::Automaton(automaton)) => {
                    Some((body.clone(), Arc::clone(automaton)))
                }
                _ => None,
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The automata of `schema`'s grammar, built with `cache`.
    fn automata(schema: &serde_json::Value, cache: &CompileCache) -> crate::fsm::Grammar {
        let budget = crate::Budget::unlimited();
        let options = json_schema::Options::default();
        let generated = cache
            .schema(schema.to_string(), &options, || {
                json_schema::generate(schema, &options, &budget)
            })
            .expect("a valid schema");
        let grammar = crate::normalize::normalize(generated.to_ir());
        crate::fsm::build(&grammar, &budget, cache).expect("no limits")
    }

    #[test]
    fn standard_automata_serve_a_new_cache_and_change_nothing() {
        let date_time = serde_json::json!({"type": "string", "format": "date-time"});
        let fresh = CompileCache::default();
        let with_standard = automata(&date_time, &fresh);
        assert_eq!(fresh.stats().misses, 0, "{:?}", fresh.stats());
        assert!(fresh.stats().hits > 0);
        let alone = CompileCache::without_standard(DEFAULT_COMPILE_CACHE_BYTES);
        assert_eq!(automata(&date_time, &alone), with_standard);
        assert!(alone.stats().misses > 0);
        // A schema of its own: its object is built, its pieces are not.
        let object = serde_json::json!({
            "type": "object",
            "properties": {"when": date_time, "n": {"type": "integer"}, "s": {"type": "string"}}
        });
        let fresh = CompileCache::default();
        let with_standard = automata(&object, &fresh);
        let alone = CompileCache::without_standard(DEFAULT_COMPILE_CACHE_BYTES);
        assert_eq!(automata(&object, &alone), with_standard);
        assert!(
            fresh.stats().misses < alone.stats().misses,
            "{:?} {:?}",
            fresh.stats(),
            alone.stats()
        );
    }
}
