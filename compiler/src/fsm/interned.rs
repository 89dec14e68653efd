//! Slices of `u32` kept once each: the subsets of nodes determinization
//! makes, the signatures of nodes minimization classes.

use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

/// Slices each kept once, numbered in order of insertion: stored one after
/// another in one buffer (slice `i` is `items[starts[i]..starts[i + 1]]`)
/// and found by content through a hash table. No allocation per slice, so
/// a million of them are made and freed at once, not one by one (freeing
/// them one by one took tens of milliseconds that no budget check could
/// interrupt).
pub(super) struct Interned {
    items: Vec<u32>,
    starts: Vec<usize>,
    /// `(hash, id)` of every slice.
    table: HashTable<(u64, u32)>,
}

impl Interned {
    /// Room for `slices` slices of about one item each.
    pub(super) fn with_capacity(slices: usize) -> Self {
        let mut starts = Vec::with_capacity(slices + 1);
        starts.push(0);
        Self {
            items: Vec::with_capacity(slices),
            starts,
            table: HashTable::with_capacity(slices),
        }
    }

    /// How many slices are kept.
    pub(super) fn len(&self) -> usize {
        self.starts.len() - 1
    }

    /// How many items the slices hold in all.
    pub(super) fn total(&self) -> usize {
        self.items.len()
    }

    /// Slice `id`.
    pub(super) fn get(&self, id: usize) -> &[u32] {
        &self.items[self.starts[id]..self.starts[id + 1]]
    }

    /// The hash [`Interned::find`] and [`Interned::insert`] take.
    pub(super) fn hash(slice: &[u32]) -> u64 {
        FxBuildHasher.hash_one(slice)
    }

    /// The id of `slice` (whose hash is `hash`), if it is kept.
    pub(super) fn find(&self, slice: &[u32], hash: u64) -> Option<u32> {
        self.table
            .find(hash, |&(h, id)| h == hash && self.get(id as usize) == slice)
            .map(|&(_, id)| id)
    }

    /// Keeps `slice` (not kept yet; its hash is `hash`) and returns its id.
    pub(super) fn insert(&mut self, slice: &[u32], hash: u64) -> u32 {
        let id = u32::try_from(self.len()).expect("fewer slices than 2^32");
        self.items.extend_from_slice(slice);
        self.starts.push(self.items.len());
        self.table.insert_unique(hash, (hash, id), |&(h, _)| h);
        id
    }
}
