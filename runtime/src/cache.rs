//! The token-mask cache: per scanning item, which tokens it accepts, rejects,
//! or leaves uncertain — built on first use and shared by every grammar of
//! one vocabulary.
//!
//! # Overview
//!
//! - A [`Classified`] entry is what one item (an automaton node, or a tag
//!   dispatch's free text in one scanner state) does with every token on
//!   its own: *accepted* (the token's bytes stay inside the item's rule),
//!   *rejected* (they die inside it), or *uncertain* (the rule can end
//!   inside the token, so what follows the rule decides). Entries are keyed
//!   by (rule structure hash, state within the rule), so equal rules of
//!   different grammars share them.
//! - A [`Combined`] entry is one grammar's row of items: the union of their
//!   accepted tokens, and the uncertain tokens that survive *context
//!   expansion* — the rest of the token, after the rule's end, must be a
//!   start of what the grammar can put after that rule. What is left is
//!   checked against the full state at each step.
//! - [`MaskCache`] holds both, thread-safe, bounded in bytes (least
//!   recently used first out), with counters; and, under the same bound,
//!   what the mask computation keeps per grammar between masks
//!   ([`GrammarMemos`]).
//!
//! Entries are vocabulary-specific, so the cache lives in the
//! [`Vocabulary`](crate::Vocabulary).

use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use rustc_hash::FxHashMap;

use crate::TokenId;
use crate::lru::{self, Lru};
use crate::trie::TokenTrie;
use crate::zeros::written_zeros;

/// The default bound on a cache's size: 1 GiB.
pub const DEFAULT_CACHE_BYTES: usize = 1 << 30;

/// Bytes counted for each entry beyond its arrays.
const SLOT_OVERHEAD: usize = 64;

/// The most items above a scanning item that one entry covers.
pub(crate) const MAX_PARENTS: usize = 3;

/// What a cache entry is for: an item's state, and the items that wait for
/// its rule when the entry covers them too — up to renaming.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Key {
    /// The structural hash of the item's rule; in free text, the hash of
    /// what the dispatch does with text (its arms left out).
    pub rule_hash: u64,
    /// Which kind of item.
    pub kind: KeyKind,
    /// Node: its canonical index within the rule; free text: the scanner state.
    pub state: u32,
    /// The item that waits for the item's rule, the one that waits for
    /// that item's rule, and so on (the rest `None`).
    pub parents: [Option<Parent>; MAX_PARENTS],
}

/// An item that waits for a rule, in a [`Key`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Parent {
    /// The structural hash of the item's rule.
    pub rule_hash: u64,
    /// The canonical index of its node within the rule; with
    /// [`Place::After`], of the node the match of the rule it waits for
    /// takes it to.
    pub node: u32,
    /// Where at the node it is.
    pub place: Place,
    /// A counted repetition: the matches it still needs and the most it
    /// may still take, each capped where a token cannot tell them apart
    /// (`needed << 16 | room`).
    pub count: u32,
}

/// Which kind of item a [`Key`] is for (its number in bundles is its
/// place in this list).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum KeyKind {
    /// At an automaton node.
    Node,
    /// In a tag dispatch's free text.
    Free,
    /// In a token dispatch's free region.
    TokenFree,
}

impl KeyKind {
    /// The kind's number in bundles.
    pub(crate) fn code(self) -> u32 {
        match self {
            Self::Node => 0,
            Self::Free => 1,
            Self::TokenFree => 2,
        }
    }

    /// The kind numbered `code` in a bundle, if any.
    pub(crate) fn from_code(code: u32) -> Option<Self> {
        [Self::Node, Self::Free, Self::TokenFree]
            .into_iter()
            .find(|kind| kind.code() == code)
    }
}

/// Where at its node a [`Parent`] is. Ordered as the numbers bundles give
/// them ([`Place::code`]), so that keys sort alike in and out of bundles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Place {
    /// In the counted repetition of this edge of the node (its index among
    /// the node's edges).
    Repeat(u32),
    /// Known by the node the rule it waits for takes it to (its node has
    /// one such edge, or all lead there).
    After,
    /// At the node.
    AtNode,
}

impl Place {
    /// The place's number in bundles: a repetition's edge, else one of
    /// the two highest numbers (no node has that many edges).
    pub(crate) fn code(self) -> u32 {
        match self {
            Self::Repeat(edge) => edge,
            Self::After => u32::MAX - 1,
            Self::AtNode => u32::MAX,
        }
    }

    /// The place numbered `code` in a bundle.
    pub(crate) fn from_code(code: u32) -> Self {
        match code {
            u32::MAX => Self::AtNode,
            0xFFFF_FFFE => Self::After,
            edge => Self::Repeat(edge),
        }
    }
}

/// A set of tokens in the smallest of three forms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TokenSet {
    /// The ids in the set, sorted.
    Ids(Box<[u32]>),
    /// The ids of the vocabulary's text tokens *not* in the set, sorted.
    Complement(Box<[u32]>),
    /// A bitset in mask layout.
    Bits(Box<[u32]>),
}

impl TokenSet {
    /// The set whose bitset is `bits` (`count` bits set, if the caller
    /// knows), among the text tokens `universe` (a bitset of the same
    /// width with `total` bits set). Knowing the counts spares two passes
    /// over the vocabulary's width on every entry built.
    pub(crate) fn new(
        bits: Vec<u32>,
        count: Option<usize>,
        universe: &[u32],
        total: usize,
    ) -> Self {
        let count = count.unwrap_or_else(|| bits.iter().map(|w| w.count_ones() as usize).sum());
        let smallest = count.min(total - count).min(bits.len());
        if smallest == count {
            Self::Ids(ids_of(bits.iter().copied(), count))
        } else if smallest == total - count {
            Self::Complement(ids_of(
                universe.iter().zip(&bits).map(|(u, b)| u & !b),
                total - count,
            ))
        } else {
            Self::Bits(bits.into())
        }
    }

    /// The set of the tokens of the trie ranks in `ranges` (sorted and
    /// disjoint, `count` ranks in all). Costs the smaller of the set and
    /// its complement, not the set: a walk that accepts nearly every token
    /// (the inside of a string) stores what it rejects.
    pub(crate) fn from_ranks(ranges: &[(u32, u32)], count: usize, trie: &TokenTrie) -> Self {
        let (universe, total, ranked) = (trie.universe(), trie.universe_len(), trie.ranked());
        let smallest = count.min(total - count).min(universe.len());
        // A few ids are gathered and sorted: a bitset of the vocabulary
        // (16 KiB for Llama 3.1, zeroed, then scanned) cost more than the
        // walk of most entries (every 10th MaskBench-full file with
        // flexible white space: 6 % of the time building entries).
        if smallest <= SORTED_IDS_UP_TO && (smallest == count || smallest == total - count) {
            let mut ids: Vec<u32> = Vec::with_capacity(smallest);
            each_range(ranges, total, smallest == count, |ranks| {
                ids.extend(ranked[ranks].iter().map(|id| id.as_u32()));
            });
            ids.sort_unstable();
            return if smallest == count {
                Self::Ids(ids.into())
            } else {
                Self::Complement(ids.into())
            };
        }
        Self::from_ranks_in_bits(ranges, count, trie)
    }

    /// [`TokenSet::from_ranks`] through a bitset of the vocabulary.
    fn from_ranks_in_bits(ranges: &[(u32, u32)], count: usize, trie: &TokenTrie) -> Self {
        let (universe, total, ranked) = (trie.universe(), trie.universe_len(), trie.ranked());
        let smallest = count.min(total - count).min(universe.len());
        let mut bits = written_zeros(universe.len());
        let marks_the_set = count <= total - count;
        each_range(ranges, total, marks_the_set, |ranks| {
            for &id in &ranked[ranks] {
                let id = id.as_usize();
                bits[id / 32] |= 1 << (id % 32);
            }
        });
        if smallest == count {
            Self::Ids(ids_of(bits.into_iter(), count))
        } else if smallest == total - count {
            Self::Complement(ids_of(bits.into_iter(), total - count))
        } else if marks_the_set {
            Self::Bits(bits.into())
        } else {
            for (word, &all) in bits.iter_mut().zip(universe) {
                *word = all & !*word;
            }
            Self::Bits(bits.into())
        }
    }

    /// The set of the tokens of `extra` (the tokens a walk took at once, a
    /// bitset in mask layout from [`TokenTrie::plain_within`] or
    /// [`TokenTrie::class_within`]) and of the trie ranks in `ranges`
    /// (sorted and disjoint). Only the ranks of `others` (ascending: the
    /// tokens of other kinds) are looked up: a walk that takes its plain
    /// tokens from `extra` accepts no plain token `extra` leaves out, and
    /// most of the vocabulary is plain (the inside of a string accepts it
    /// nearly whole, a hundred thousand ranks looked up one by one).
    pub(crate) fn from_ranks_and(
        ranges: &[(u32, u32)],
        extra: &[u32],
        others: &[u32],
        trie: &TokenTrie,
    ) -> Self {
        let ranked = trie.ranked();
        debug_assert!(
            ranges
                .iter()
                .flat_map(|&(start, end)| start..end)
                .all(|rank| {
                    let id = ranked[rank as usize].as_usize();
                    others.binary_search(&rank).is_ok() || extra[id / 32] & 1 << (id % 32) != 0
                }),
            "a walk that takes tokens at once accepted one of them it left out"
        );
        let mut bits = extra.to_vec();
        // Both are sorted: one pass over each.
        let mut ranges = ranges.iter().peekable();
        for &rank in others {
            while ranges.next_if(|&&(_, end)| end <= rank).is_some() {}
            let Some(&&(start, _)) = ranges.peek() else {
                break;
            };
            if start <= rank {
                let id = ranked[rank as usize].as_usize();
                bits[id / 32] |= 1 << (id % 32);
            }
        }
        Self::new(bits, None, trie.universe(), trie.universe_len())
    }

    /// The set of the tokens of `bits` (in mask layout) and of the trie
    /// ranks in `ranges`, each looked up.
    pub(crate) fn from_ranks_over(ranges: &[(u32, u32)], bits: &[u32], trie: &TokenTrie) -> Self {
        let ranked = trie.ranked();
        let mut bits = bits.to_vec();
        for rank in ranges.iter().flat_map(|&(start, end)| start..end) {
            let id = ranked[rank as usize].as_usize();
            bits[id / 32] |= 1 << (id % 32);
        }
        Self::new(bits, None, trie.universe(), trie.universe_len())
    }

    /// Adds the set to `mask`; `scratch` is a buffer of the mask's width.
    pub(crate) fn add_to(&self, mask: &mut [u32], universe: &[u32], scratch: &mut Vec<u32>) {
        match self {
            Self::Ids(ids) => {
                for &id in ids {
                    mask[id as usize / 32] |= 1 << (id % 32);
                }
            }
            Self::Bits(bits) => {
                for (word, bits) in mask.iter_mut().zip(bits.iter()) {
                    *word |= bits;
                }
            }
            Self::Complement(ids) => {
                scratch.clear();
                scratch.extend_from_slice(universe);
                for &id in ids {
                    scratch[id as usize / 32] &= !(1 << (id % 32));
                }
                for (word, bits) in mask.iter_mut().zip(scratch.iter()) {
                    *word |= bits;
                }
            }
        }
    }

    fn bytes(&self) -> usize {
        let (Self::Ids(words) | Self::Complement(words) | Self::Bits(words)) = self;
        words.len() * 4
    }
}

/// Calls `f` with each range of `ranges` (sorted and disjoint trie ranks)
/// if `inside`, else with each range between them, up to `total`.
fn each_range(
    ranges: &[(u32, u32)],
    total: usize,
    inside: bool,
    mut f: impl FnMut(std::ops::Range<usize>),
) {
    let mut next = 0;
    for &(start, end) in ranges {
        let (start, end) = (start as usize, end as usize);
        if inside {
            f(start..end);
        } else {
            f(next..start);
        }
        next = end;
    }
    if !inside {
        f(next..total);
    }
}

/// The most ids [`TokenSet::from_ranks`] gathers and sorts; past it, a
/// bitset of the vocabulary is cheaper.
const SORTED_IDS_UP_TO: usize = 1024;

/// The ids of the bits set in `words` (mask layout), `count` of them.
fn ids_of(words: impl Iterator<Item = u32>, count: usize) -> Box<[u32]> {
    let mut ids = Vec::with_capacity(count);
    for (w, mut word) in words.enumerate() {
        while word != 0 {
            let bit = word.trailing_zeros();
            ids.push(u32::try_from(w * 32).expect("ids fit in u32") + bit);
            word &= word - 1;
        }
    }
    ids.into()
}

/// Uncertain tokens that share where the item's rule can end inside them:
/// the trie ranks `start..end` (tokens in the trie's depth-first order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Group {
    pub start: u32,
    pub end: u32,
    /// Bit `j`: the rule can end after the tokens' first `j` bytes
    /// (1 ≤ j < 63); bit 63: at 63 bytes or more, or (free text) a trigger
    /// completes in them — either way the full state decides.
    pub ends: u64,
}

/// What one item does with every token, on its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Classified {
    /// Tokens whose bytes stay inside the item's rule.
    pub accepted: TokenSet,
    /// Tokens whose bytes run past the rule's end.
    pub groups: Box<[Group]>,
}

impl Classified {
    fn bytes(&self) -> usize {
        self.accepted.bytes() + self.groups.len() * 16
    }
}

/// The entries of one row's items combined, in one grammar: the tokens
/// some item accepts, and the tokens to check against the full state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Combined {
    pub accepted: TokenSet,
    /// Trie ranks, sorted.
    pub uncertain: Box<[u32]>,
}

impl Combined {
    fn bytes(&self) -> usize {
        self.accepted.bytes() + self.uncertain.len() * 4
    }
}

/// How an entry or combination was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// It was cached.
    Hit,
    /// It was built now.
    Built,
    /// It was read from a bundle's precomputed entries.
    Loaded,
}

/// Counters and sizes of a [`MaskCache`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Row combinations found: the step used them as they were.
    pub hits: u64,
    /// Row combinations built from entries that were all cached (entries
    /// of other rows or other grammars reused).
    pub partial_hits: u64,
    /// Item entries built by walking the token trie.
    pub misses: u64,
    /// Item entries read from bundles' precomputed entries.
    pub loaded: u64,
    /// Entries and combinations removed to stay within the size bound.
    pub evictions: u64,
    /// Item entries held now.
    pub entries: usize,
    /// Row combinations held now.
    pub combinations: usize,
    /// Parse states whose uncertain tokens were found checked: the step
    /// did not check them again.
    pub state_hits: u64,
    /// Parse states whose checked uncertain tokens are held now.
    pub states: usize,
    /// Bytes held now (approximate: the entries' arrays).
    pub bytes: usize,
}

/// A parse state of some grammar's matcher: its names' generation and its
/// name (see [`crate::Matcher::fill_next_token_bitmask`]).
pub(crate) type StateKey = (u64, u32);

/// The uncertain tokens the full check accepted at one parse state.
pub(crate) type Verdicts = Box<[TokenId]>;

/// A grammar's row combination: the grammar's id and the sorted keys and
/// rules of the row's items.
type CombinationKey = (u64, Box<[(Key, u32)]>);

/// One shard of the cache: the entries whose keys hash to it.
#[derive(Default)]
struct Pool {
    entries: Lru<Key, Arc<Classified>>,
    combinations: Lru<CombinationKey, Arc<Combined>>,
    /// Per parse state: the uncertain tokens of its row that the full
    /// check accepted.
    states: Lru<StateKey, Arc<Verdicts>>,
}

impl Pool {
    /// The bytes of its entries, combinations and state verdicts.
    fn bytes(&self) -> usize {
        self.entries.bytes() + self.combinations.bytes() + self.states.bytes()
    }
}

/// Shards of a [`MaskCache`]. A long-running cache holds millions of
/// entries: in one map, growing it moved them all at once under the lock
/// (steps of 100–200 ms in a warm MaskBench run), and every lookup of
/// every thread waited on the one lock. Each shard grows, evicts and
/// locks on its own.
const SHARDS: usize = 64;

/// The shard of `key`.
fn shard_of<K: std::hash::Hash>(key: &K) -> usize {
    use std::hash::BuildHasher;
    let hash = rustc_hash::FxBuildHasher.hash_one(key);
    // The high bits: FxHash mixes them best.
    usize::try_from(hash >> 58).expect("six bits") % SHARDS
}

/// What the mask computation keeps per grammar between masks (memoized
/// steps, names of parse states, context verdicts): the cache holds it for
/// each grammar, keyed by grammar id, under its bound, without knowing
/// more of it than its size.
pub(crate) trait GrammarMemos: Default + Send + Sync + 'static {
    /// About the bytes it holds now.
    fn bytes(&self) -> usize;
}

/// The share of a cache's bound that grammars' memos may hold together
/// (one part in this many); entries, combinations and state verdicts hold
/// the rest.
const MEMOS_SHARE: usize = 8;

/// Mask-cache entries computed ahead of time and read in place (a
/// bundle's mask section): the cache asks for an entry when a matcher
/// first needs its key, so holding many costs nothing until then.
pub(crate) trait PrecomputedEntries: Send + Sync {
    /// The fingerprint of the vocabulary the entries are for.
    fn fingerprint(&self) -> u64;
    /// Identifies the entries' content: a section attached twice is
    /// looked up once.
    fn id(&self) -> u64;
    /// The number of entries.
    fn len(&self) -> usize;
    /// The entry for `key`, if there is one and it is sound for the
    /// vocabulary of `trie` (a damaged entry is as good as absent).
    fn find(&self, key: &Key, trie: &TokenTrie) -> Option<Classified>;
}

/// The mask cache shared by every grammar and matcher of one vocabulary.
///
/// It holds two kinds of entries: per item (shared across grammars by rule
/// structure) and per row combination of items (per grammar: the union of
/// the items' accepted tokens and the uncertain tokens left once each
/// item's rule is followed by what the grammar can put after it).
/// Thread-safe: matchers on many threads look entries up at once (a lock
/// is held only to find or insert, never while an entry is built).
pub struct MaskCache {
    pools: Box<[Mutex<Pool>]>,
    /// The time of the last use, for least-recently-used eviction.
    clock: AtomicU64,
    limit: usize,
    hits: AtomicU64,
    partial_hits: AtomicU64,
    misses: AtomicU64,
    loaded: AtomicU64,
    evictions: AtomicU64,
    state_hits: AtomicU64,
    /// Precomputed entries of the bundles of live grammars, looked up
    /// when an entry is not in the pool.
    sections: Mutex<Vec<Weak<dyn PrecomputedEntries>>>,
    /// What ends each entry's match after its accepted tokens, for token
    /// budgets, and the bytes they take: at most [`END_COSTS_BYTES`], all
    /// dropped when full (only matchers with a budget make them, and
    /// remaking one costs a walk of its entry).
    end_costs: Mutex<(FxHashMap<Key, Arc<EndCosts>>, usize)>,
    /// Per grammar id: its [`GrammarMemos`], with the size last reported.
    memos: Mutex<Lru<u64, Arc<dyn Any + Send + Sync>>>,
}

/// The most bytes of [`EndCosts`] a cache keeps.
const END_COSTS_BYTES: usize = 64 << 20;

/// The fewest symbols that end an entry's match (the topmost it covers)
/// after each token the entry accepts: the least of them, and the tokens
/// that need more, with what they need. Equal entries of different
/// grammars have equal costs, like their tokens.
#[derive(Debug, Default)]
pub(crate) struct EndCosts {
    pub least: u64,
    /// `(token id, cost)` of every accepted token whose cost is above
    /// `least`, by id.
    pub above: Box<[(u32, u64)]>,
}

impl std::fmt::Debug for MaskCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MaskCache")
            .field("limit", &self.limit)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl MaskCache {
    /// An empty cache holding at most about `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Self {
            pools: (0..SHARDS).map(|_| Mutex::default()).collect(),
            clock: AtomicU64::new(0),
            limit,
            hits: AtomicU64::new(0),
            partial_hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            loaded: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            state_hits: AtomicU64::new(0),
            sections: Mutex::default(),
            end_costs: Mutex::default(),
            memos: Mutex::default(),
        }
    }

    /// The bound on the cache's size, in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The cache's counters and size.
    pub fn stats(&self) -> CacheStats {
        let mut stats = CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            partial_hits: self.partial_hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            loaded: self.loaded.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            state_hits: self.state_hits.load(Ordering::Relaxed),
            ..CacheStats::default()
        };
        for shard in 0..SHARDS {
            let pool = self.lock(shard);
            stats.entries += pool.entries.len();
            stats.combinations += pool.combinations.len();
            stats.states += pool.states.len();
            stats.bytes += pool.bytes();
        }
        stats.bytes += self.lock_memos().bytes();
        stats
    }

    /// Empties the cache (the counters stay).
    pub fn clear(&self) {
        for shard in 0..SHARDS {
            let mut pool = self.lock(shard);
            pool.entries.clear();
            pool.combinations.clear();
            pool.states.clear();
        }
        self.lock_memos().clear();
    }

    fn lock(&self, shard: usize) -> std::sync::MutexGuard<'_, Pool> {
        // A panic elsewhere cannot leave a shard inconsistent: every change
        // is made under its lock and completes.
        self.pools[shard]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_memos(&self) -> std::sync::MutexGuard<'_, Lru<u64, Arc<dyn Any + Send + Sync>>> {
        // Every change is made under the lock and completes.
        self.memos.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The memos of grammar `grammar` (a grammar's id), made empty if the
    /// cache holds none.
    pub(crate) fn memos<M: GrammarMemos>(&self, grammar: u64) -> Arc<M> {
        let now = self.tick();
        let mut memos = self.lock_memos();
        if let Some(kept) = memos.get(&grammar, now)
            && let Ok(kept) = Arc::clone(kept).downcast::<M>()
        {
            return kept;
        }
        let made = Arc::new(M::default());
        let erased: Arc<dyn Any + Send + Sync> = Arc::clone(&made) as _;
        memos.insert(grammar, erased, SLOT_OVERHEAD, now);
        made
    }

    /// Records that grammar `grammar`'s memos now hold about `bytes`;
    /// past their share of the bound, the memos of the grammars least
    /// recently used go (their matchers keep them; the next matchers make
    /// new ones).
    pub(crate) fn memos_resized(&self, grammar: u64, bytes: usize) {
        let now = self.tick();
        let mut memos = self.lock_memos();
        if !memos.resize(&grammar, bytes + SLOT_OVERHEAD, now) {
            return;
        }
        let evicted = lru::evict(&mut [&mut *memos], self.limit / MEMOS_SHARE);
        drop(memos);
        self.evictions
            .fetch_add(evicted.count as u64, Ordering::Relaxed);
        evicted.free();
    }

    /// The time now, for least-recently-used eviction.
    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// The combination of grammar `grammar`'s row whose items have entry
    /// keys and rules `keys` (sorted, distinct), built with `build` if it
    /// is not cached.
    pub(crate) fn combination<E>(
        &self,
        grammar: u64,
        keys: &[(Key, u32)],
        build: impl FnOnce() -> Result<(Combined, bool), E>,
    ) -> Result<(Arc<Combined>, Lookup), E> {
        let found = self.find_or_build(
            |pool| &mut pool.combinations,
            (grammar, keys.into()),
            || {
                let (combined, reused) = build()?;
                if reused {
                    self.partial_hits.fetch_add(1, Ordering::Relaxed);
                }
                let bytes = combined.bytes() + keys.len() * 16;
                Ok((combined, bytes))
            },
        )?;
        if found.1 == Lookup::Hit {
            self.hits.fetch_add(1, Ordering::Relaxed);
        }
        Ok(found)
    }

    /// The uncertain tokens that the full check accepted at parse state
    /// `state`, checked with `check` if they are not cached. The cut to
    /// the candidates is a function of the state (its row decides its
    /// combination), so the verdicts are too.
    pub(crate) fn checked<E>(
        &self,
        state: StateKey,
        check: impl FnOnce() -> Result<Vec<TokenId>, E>,
    ) -> Result<(Arc<Verdicts>, Lookup), E> {
        let found = self.find_or_build(
            |pool| &mut pool.states,
            state,
            || {
                let accepted: Verdicts = check()?.into();
                let bytes = size_of_val(&*accepted);
                Ok((accepted, bytes))
            },
        )?;
        if found.1 == Lookup::Hit {
            self.state_hits.fetch_add(1, Ordering::Relaxed);
        }
        Ok(found)
    }

    /// Makes the precomputed entries of `section` (for this cache's
    /// vocabulary) available, for as long as a grammar holds them.
    pub(crate) fn attach(&self, section: &Arc<dyn PrecomputedEntries>) {
        let mut sections = self.sections.lock().unwrap_or_else(PoisonError::into_inner);
        sections.retain(|weak| weak.strong_count() > 0);
        let known = sections
            .iter()
            .filter_map(Weak::upgrade)
            .any(|known| known.id() == section.id());
        if !known {
            sections.push(Arc::downgrade(section));
        }
    }

    /// The precomputed entry for `key` in an attached section, if any.
    fn precomputed(&self, key: &Key, trie: &TokenTrie) -> Option<Classified> {
        let sections: Vec<Arc<dyn PrecomputedEntries>> = self
            .sections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        sections.iter().find_map(|section| section.find(key, trie))
    }

    /// The entry for `key` if the pool holds it (nothing is built, loaded
    /// or counted).
    pub(crate) fn cached_entry(&self, key: &Key) -> Option<Arc<Classified>> {
        let pool = self.lock(shard_of(key));
        pool.entries.peek(key).map(Arc::clone)
    }

    /// The [`EndCosts`] of the entry for `key`, made with `make` unless
    /// kept.
    pub(crate) fn end_costs<E>(
        &self,
        key: Key,
        make: impl FnOnce() -> Result<EndCosts, E>,
    ) -> Result<Arc<EndCosts>, E> {
        // Every update leaves the map consistent.
        let kept = || {
            self.end_costs
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
        };
        if let Some(costs) = kept().0.get(&key) {
            return Ok(Arc::clone(costs));
        }
        let costs = Arc::new(make()?);
        let bytes = SLOT_OVERHEAD + size_of_val(&*costs.above);
        let mut kept = kept();
        let (map, held) = &mut *kept;
        if *held + bytes > END_COSTS_BYTES {
            map.clear();
            *held = 0;
        }
        if map.insert(key, Arc::clone(&costs)).is_none() {
            *held += bytes;
        }
        Ok(costs)
    }

    /// The entry for `key`: cached, else precomputed in an attached bundle,
    /// else built with `build`.
    pub(crate) fn entry<E>(
        &self,
        key: Key,
        trie: &TokenTrie,
        build: impl FnOnce() -> Result<Classified, E>,
    ) -> Result<(Arc<Classified>, Lookup), E> {
        let mut loaded = false;
        let found = self.find_or_build(
            |pool| &mut pool.entries,
            key,
            || {
                let classified = match self.precomputed(&key, trie) {
                    Some(classified) => {
                        loaded = true;
                        self.loaded.fetch_add(1, Ordering::Relaxed);
                        classified
                    }
                    None => {
                        self.misses.fetch_add(1, Ordering::Relaxed);
                        build()?
                    }
                };
                let bytes = classified.bytes();
                Ok((classified, bytes))
            },
        )?;
        Ok(match found {
            (entry, Lookup::Built) if loaded => (entry, Lookup::Loaded),
            found => found,
        })
    }

    /// The value for `key` in the map `map` picks, or the one `build` makes
    /// (with its size in bytes), built without holding the lock and then
    /// inserted unless another thread got there first.
    fn find_or_build<K: std::hash::Hash + Eq, T, E>(
        &self,
        map: impl Fn(&mut Pool) -> &mut Lru<K, Arc<T>>,
        key: K,
        build: impl FnOnce() -> Result<(T, usize), E>,
    ) -> Result<(Arc<T>, Lookup), E> {
        let shard = shard_of(&key);
        {
            let now = self.tick();
            let mut pool = self.lock(shard);
            if let Some(value) = map(&mut pool).get(&key, now) {
                return Ok((Arc::clone(value), Lookup::Hit));
            }
        }
        let (value, bytes) = build()?;
        let value = Arc::new(value);
        let now = self.tick();
        let mut pool = self.lock(shard);
        if map(&mut pool).insert(key, Arc::clone(&value), bytes + SLOT_OVERHEAD, now) {
            // Past its share of the bound, a shard drops its least
            // recently used entries, combinations and state verdicts
            // together, freed once the lock is released.
            let Pool {
                entries,
                combinations,
                states,
            } = &mut *pool;
            let bound = (self.limit - self.limit / MEMOS_SHARE) / SHARDS;
            let evicted = lru::evict(&mut [entries, combinations, states], bound);
            drop(pool);
            self.evictions
                .fetch_add(evicted.count as u64, Ordering::Relaxed);
            evicted.free();
        }
        Ok((value, Lookup::Built))
    }
}

impl Default for MaskCache {
    fn default() -> Self {
        Self::new(DEFAULT_CACHE_BYTES)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::{GrammarMemos, MEMOS_SHARE, MaskCache, TokenSet};
    use crate::vocab::Vocabulary;

    #[derive(Default)]
    struct Held(AtomicUsize);

    impl GrammarMemos for Held {
        fn bytes(&self) -> usize {
            self.0.load(Ordering::Relaxed)
        }
    }

    /// A grammar's memos are one object while the cache holds them; they
    /// count in the cache's size, and past their share of the bound the
    /// least recently used grammar's go (a new one is made for it), while
    /// the one just resized stays.
    #[test]
    fn grammar_memos_are_kept_per_grammar_within_their_share() {
        let cache = MaskCache::new(8 << 20);
        let share = cache.limit() / MEMOS_SHARE;
        let first: Arc<Held> = cache.memos(1);
        assert!(Arc::ptr_eq(&first, &cache.memos(1)));
        let second: Arc<Held> = cache.memos(2);
        assert!(!Arc::ptr_eq(&first, &second));
        first.0.store(share / 2, Ordering::Relaxed);
        cache.memos_resized(1, first.bytes());
        assert!(cache.stats().bytes >= share / 2);
        second.0.store(share / 2 + 1, Ordering::Relaxed);
        cache.memos_resized(2, second.bytes());
        assert!(Arc::ptr_eq(&second, &cache.memos(2)));
        assert!(!Arc::ptr_eq(&first, &cache.memos(1)));
        assert_eq!(cache.stats().evictions, 1);
    }

    /// Gathering and sorting the ids of a small set (or of a small
    /// complement) gives the set a bitset of the vocabulary gives.
    #[test]
    fn sorted_ids_and_bitsets_make_the_same_sets() {
        let tokens: Vec<String> = (0..5000).map(|i| format!("{}t{i}", i % 7)).collect();
        let vocabulary = Vocabulary::from_byte_strings(&tokens, &[]).unwrap();
        let trie = vocabulary.trie();
        let total = u32::try_from(trie.universe_len()).unwrap();
        let mut state = 7u64;
        let mut next = |below: u32| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            u32::try_from(state >> 33).unwrap() % below
        };
        for round in 0..200 {
            // Disjoint sorted ranges: few ranks, or nearly all of them.
            let mut ranges = Vec::new();
            let mut at = 0;
            let wide = round % 2 == 1;
            while at < total {
                let gap = if wide { next(10) } else { next(600) + 1 };
                let len = if wide { next(600) + 1 } else { next(8) };
                let start = (at + gap).min(total);
                let end = (start + len).min(total);
                if end > start {
                    ranges.push((start, end));
                }
                at = end + 1;
            }
            let count = ranges.iter().map(|(s, e)| (e - s) as usize).sum();
            assert_eq!(
                TokenSet::from_ranks(&ranges, count, trie),
                TokenSet::from_ranks_in_bits(&ranges, count, trie),
                "round {round}"
            );
        }
    }
}
