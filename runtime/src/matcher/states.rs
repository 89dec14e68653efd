//! Whole parse states named by configuration, so that what a state's
//! uncertain tokens did is looked up when the state comes back.
//!
//! A row's future depends only on its items and, through each item's
//! origin, on the row there (see [`super::memo`]). Naming every row by its
//! items with each origin replaced by the name of the row it points to
//! (down to row 0) gives the *state* of the whole parse: two positions with
//! one state accept exactly the same continuations. Such positions are
//! common — every character inside one string, the start of every value
//! of one object's additional properties, every item of an array — and at
//! each of them a token mask checks the same uncertain tokens against the
//! same rows. The mask cache keeps those verdicts per state
//! ([`crate::MaskCache`]), so the check runs once per state instead of
//! once per step.
//!
//! Names are kept per grammar and shared by its matchers; they are only
//! used for grammars without lookahead, whose rows are all there is to the
//! state.

use std::sync::atomic::{AtomicU64, Ordering};

use rustc_hash::FxHashMap;

use super::Matcher;
use super::item::Item;
use super::memo::{SELF, inert};

/// A row whose state is not named yet.
const UNNAMED: u32 = u32::MAX;
/// The most bytes of names a grammar keeps; past it, naming starts over
/// under a new generation.
const NAMES_BYTES: usize = 32 << 20;

/// The generation of the next set of names: names of one generation are
/// never confused with another's, whatever the grammar.
static NEXT_GENERATION: AtomicU64 = AtomicU64::new(0);

/// The names of the states a grammar's matchers have met.
pub(super) struct StateNames {
    ids: FxHashMap<Box<[Item]>, u32>,
    bytes: usize,
    generation: u64,
}

impl Default for StateNames {
    fn default() -> Self {
        Self {
            ids: FxHashMap::default(),
            bytes: 0,
            generation: NEXT_GENERATION.fetch_add(1, Ordering::Relaxed),
        }
    }
}

impl StateNames {
    /// The bytes of the names kept.
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    /// The name of the state `items` (origins already replaced), added if
    /// new; `None` once the names fill their bound, which starts a new
    /// generation.
    fn intern(&mut self, items: &[Item]) -> Option<u32> {
        if let Some(&id) = self.ids.get(items) {
            return Some(id);
        }
        let bytes = size_of_val(items) + 64;
        if self.bytes + bytes > NAMES_BYTES {
            *self = Self::default();
            return None;
        }
        let id = u32::try_from(self.ids.len()).expect("names fit in u32");
        self.bytes += bytes;
        self.ids.insert(items.into(), id);
        Some(id)
    }
}

/// A matcher's rows named by their states, as far as it has named them,
/// and the generation of the names.
#[derive(Clone)]
pub(super) struct RowStates {
    names: Vec<u32>,
    generation: u64,
}

impl RowStates {
    /// No row named yet.
    pub(super) fn new() -> Self {
        Self {
            names: Vec::new(),
            generation: u64::MAX,
        }
    }

    /// Forgets the names of the rows from `rows` on (they are gone).
    pub(super) fn truncate(&mut self, rows: usize) {
        self.names.truncate(rows);
    }

    /// The names of the first `rows` rows only (a copy cut back there).
    pub(super) fn prefix(&self, rows: usize) -> Self {
        Self {
            names: self.names[..rows.min(self.names.len())].to_vec(),
            generation: self.generation,
        }
    }

    /// Takes the names `other` — a copy of this matcher cut back to its
    /// first `rows` rows, then grown — gave those rows, where this one has
    /// none yet: what a copy named stays named.
    pub(super) fn adopt(&mut self, other: &RowStates, rows: usize) {
        if other.generation != self.generation {
            if !self.names.is_empty() {
                return;
            }
            self.generation = other.generation;
        }
        let rows = rows.min(other.names.len());
        if self.names.len() < rows {
            self.names.resize(rows, UNNAMED);
        }
        for (mine, &theirs) in self.names[..rows].iter_mut().zip(&other.names[..rows]) {
            if *mine == UNNAMED {
                *mine = theirs;
            }
        }
    }

    fn restart(&mut self, generation: u64) {
        self.names.clear();
        self.generation = generation;
    }
}

impl Matcher {
    /// The state of the whole parse at the last row: (generation, name).
    /// Rows met before keep their names, so this names only the rows added
    /// since the last call (and the rows their items began at).
    pub(super) fn state(&mut self, names: &mut StateNames) -> Option<(u64, u32)> {
        debug_assert!(!self.parse.grammar.has_lookahead());
        let grammar = std::sync::Arc::clone(&self.parse.grammar);
        if self.states.generation != names.generation {
            self.states.restart(names.generation);
        }
        let row_names = &mut self.states.names;
        let rows = self.parse.history.rows();
        row_names.resize(rows, UNNAMED);
        let mut shape = Vec::new();
        let mut stack = vec![rows - 1];
        while let Some(&row) = stack.last() {
            if row_names[row] != UNNAMED {
                stack.pop();
                continue;
            }
            let items = self.parse.history.row(row);
            let waiting = stack.len();
            for &item in items {
                let origin = item.origin as usize;
                if origin != row && row_names[origin] == UNNAMED && !inert(&grammar, item) {
                    stack.push(origin);
                }
            }
            if stack.len() > waiting {
                continue;
            }
            shape.clear();
            shape.extend(
                items
                    .iter()
                    .filter(|&&item| !inert(&grammar, item))
                    .map(|&item| {
                        let origin = match item.origin as usize {
                            origin if origin == row => SELF,
                            origin => row_names[origin],
                        };
                        Item { origin, ..item }
                    }),
            );
            let Some(name) = names.intern(&shape) else {
                self.states.restart(names.generation);
                return None;
            };
            row_names[row] = name;
            stack.pop();
        }
        Some((names.generation, self.states.names[rows - 1]))
    }
}
