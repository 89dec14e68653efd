//! A map bounded in bytes whose least recently used entries go first: the
//! pools of the mask cache (three maps to a shard, under one bound), its
//! grammars' memos, and the compiler's compile cache.
//!
//! Uses are stamped with a time the caller keeps (a counter under the
//! pool's lock, or one shared by many shards). Eviction goes back to three
//! quarters of the bound in one pass: the stamps and sizes are gathered
//! and sorted, the cut-off time that frees enough bytes is found, and every
//! entry used before it is dropped at once (no key is copied, no order is
//! kept between evictions). What an eviction takes out is handed back
//! ([`Evicted`]) to be freed after the pool's lock is released, on a thread
//! of its own when it is large: freeing a quarter of a full compile cache
//! (tens of megabytes of small allocations) took 10–25 ms, during which
//! every compilation waiting for the lock waited too.

use std::hash::Hash;

use rustc_hash::FxHashMap;

/// Entries with their sizes and last uses (see the module documentation).
pub struct Lru<K, V> {
    slots: FxHashMap<K, Slot<V>>,
    bytes: usize,
}

struct Slot<V> {
    value: V,
    bytes: usize,
    last_used: u64,
}

impl<K, V> Default for Lru<K, V> {
    fn default() -> Self {
        Self {
            slots: FxHashMap::default(),
            bytes: 0,
        }
    }
}

impl<K: Hash + Eq, V> Lru<K, V> {
    /// The value of `key`, marked as used at `now`.
    pub fn get(&mut self, key: &K, now: u64) -> Option<&V> {
        let slot = self.slots.get_mut(key)?;
        slot.last_used = now;
        Some(&slot.value)
    }

    /// The value of `key`, without marking a use.
    pub fn peek(&self, key: &K) -> Option<&V> {
        self.slots.get(key).map(|slot| &slot.value)
    }

    /// Keeps `value`, of about `bytes` bytes, under `key`, used at `now`,
    /// unless `key` has a value already (which stays): whether it was
    /// kept.
    pub fn insert(&mut self, key: K, value: V, bytes: usize, now: u64) -> bool {
        match self.slots.entry(key) {
            std::collections::hash_map::Entry::Occupied(_) => false,
            std::collections::hash_map::Entry::Vacant(vacant) => {
                vacant.insert(Slot {
                    value,
                    bytes,
                    last_used: now,
                });
                self.bytes += bytes;
                true
            }
        }
    }

    /// Sets the size of `key`'s value to about `bytes`, used at `now`:
    /// whether `key` has a value.
    pub fn resize(&mut self, key: &K, bytes: usize, now: u64) -> bool {
        let Some(slot) = self.slots.get_mut(key) else {
            return false;
        };
        self.bytes = self.bytes - slot.bytes + bytes;
        slot.bytes = bytes;
        slot.last_used = now;
        true
    }

    /// Every entry, in no order (no use is marked).
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.slots.iter().map(|(key, slot)| (key, &slot.value))
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The bytes of the entries, as given to [`Lru::insert`].
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Drops every entry.
    pub fn clear(&mut self) {
        self.slots.clear();
        self.bytes = 0;
    }
}

/// A map of a pool whose maps share one bound (see [`evict`]).
pub trait Pooled {
    /// The bytes of the entries.
    fn bytes(&self) -> usize;
    /// Adds the last use and size of each entry to `uses`.
    fn uses(&self, uses: &mut Vec<(u64, usize)>);
    /// Takes out the entries last used before `cutoff` into `evicted`.
    fn take_used_before(&mut self, cutoff: u64, evicted: &mut Evicted);
}

impl<K: Hash + Eq + Send + 'static, V: Send + 'static> Pooled for Lru<K, V> {
    fn bytes(&self) -> usize {
        self.bytes
    }

    fn uses(&self, uses: &mut Vec<(u64, usize)>) {
        uses.extend(self.slots.values().map(|slot| (slot.last_used, slot.bytes)));
    }

    fn take_used_before(&mut self, cutoff: u64, evicted: &mut Evicted) {
        let taken: Vec<(K, Slot<V>)> = self
            .slots
            .extract_if(|_, slot| slot.last_used < cutoff)
            .collect();
        let bytes: usize = taken.iter().map(|(_, slot)| slot.bytes).sum();
        self.bytes -= bytes;
        evicted.count += taken.len();
        evicted.bytes += bytes;
        if !taken.is_empty() {
            evicted.taken.push(Box::new(taken));
        }
    }
}

/// The entries an eviction took out of a pool, not freed yet: free them
/// ([`Evicted::free`]) once the pool's lock is released.
#[must_use = "evicted entries are freed by `free`, after the pool's lock is released"]
#[derive(Default)]
pub struct Evicted {
    /// How many entries were taken out.
    pub count: usize,
    /// Their bytes, as given to [`Lru::insert`].
    pub bytes: usize,
    taken: Vec<Box<dyn Send>>,
}

/// The fewest evicted bytes [`Evicted::free`] frees on a thread of its own
/// (starting one costs some 20 µs, about what freeing 64 KiB of small
/// entries does).
const FREE_ASIDE_BYTES: usize = 64 << 10;

impl Evicted {
    /// Frees the entries: here if they are few, else on a thread of their
    /// own ([`free_aside`]).
    pub fn free(self) {
        if self.bytes >= FREE_ASIDE_BYTES {
            free_aside(self.taken);
        }
    }
}

/// Frees `value` on a thread of its own, so that the caller does not wait
/// for it (a large structure of small allocations takes milliseconds); if
/// no thread can be started, `value` is freed here.
pub fn free_aside<T: Send + 'static>(value: T) {
    // If the thread cannot start, the closure, and `value` in it, is
    // dropped right here.
    let detached = std::thread::Builder::new()
        .name("xg-free".into())
        .spawn(move || drop(value));
    drop(detached);
}

/// Past `limit` bytes in `maps` together, takes out everything used before
/// a cut-off time chosen so that they are back to three quarters of
/// `limit`.
pub fn evict(maps: &mut [&mut dyn Pooled], limit: usize) -> Evicted {
    let mut evicted = Evicted::default();
    let bytes: usize = maps.iter().map(|map| map.bytes()).sum();
    if bytes <= limit {
        return evicted;
    }
    let target = limit / 4 * 3;
    let mut uses = Vec::new();
    for map in maps.iter() {
        map.uses(&mut uses);
    }
    uses.sort_unstable();
    let mut left = bytes;
    let mut cutoff = 0;
    for (used, size) in uses {
        if left <= target {
            break;
        }
        left -= size;
        cutoff = used + 1;
    }
    for map in maps.iter_mut() {
        map.take_used_before(cutoff, &mut evicted);
    }
    evicted
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{Lru, Pooled, evict};

    /// Eviction drops the least recently used first, across maps that
    /// share the bound, until three quarters of it are left; a use keeps
    /// an entry.
    #[test]
    fn the_least_recently_used_go_first_across_maps() {
        let mut numbers: Lru<u32, u32> = Lru::default();
        let mut names: Lru<&str, u32> = Lru::default();
        for i in 0..10 {
            assert!(numbers.insert(i, i, 10, u64::from(i)));
        }
        assert!(
            !numbers.insert(3, 99, 10, 20),
            "a present key keeps its value"
        );
        assert_eq!(numbers.peek(&3), Some(&3));
        assert!(names.insert("late", 0, 10, 30));
        // Entry 0 is used after all the others.
        assert_eq!(numbers.get(&0, 40), Some(&0));
        // 110 bytes over a bound of 100: back to 75, so 4 entries go
        // (the oldest uses: 1, 2, 3, 4).
        let evicted = evict(&mut [&mut numbers, &mut names], 100);
        assert_eq!((evicted.count, evicted.bytes), (4, 40));
        evicted.free();
        assert_eq!(numbers.bytes() + Pooled::bytes(&names), 70);
        assert!((1..=4).all(|i| numbers.peek(&i).is_none()));
        assert!(numbers.peek(&0).is_some() && numbers.peek(&5).is_some());
        assert!(names.peek(&"late").is_some());
        assert_eq!(evict(&mut [&mut numbers, &mut names], 100).count, 0);
    }

    /// An eviction hands its entries back instead of freeing them while
    /// the caller holds the pool's lock; they are freed by `free`.
    #[test]
    fn evicted_entries_live_until_freed() {
        let value = Arc::new(7);
        let mut pool: Lru<u32, Arc<i32>> = Lru::default();
        assert!(pool.insert(0, Arc::clone(&value), 60, 0));
        assert!(pool.insert(1, Arc::new(8), 60, 1));
        let evicted = evict(&mut [&mut pool], 100);
        assert_eq!(evicted.count, 1);
        assert!(pool.peek(&0).is_none());
        assert_eq!(Arc::strong_count(&value), 2, "held by the eviction");
        evicted.free();
        assert_eq!(Arc::strong_count(&value), 1);
    }
}
