//! What the contexts of a grammar's rules did with the rests of uncertain
//! tokens ([`ContextVerdicts`]), kept between masks (see
//! [`context`](super::context)).

use rustc_hash::FxHashMap;

use super::earley::{Start, Symbol};
use super::parse::Parse;
use crate::byteset::ByteSet;
use crate::cache::StateKey;

/// The most bytes of verdicts a grammar keeps; past it, they start over.
const VERDICTS_BYTES: usize = 16 << 20;

/// About the bytes one verdict takes in the map.
const VERDICT_BYTES: usize = 32;

/// First bytes of rests checked against a matcher: what can follow a rule
/// (see [`ContextVerdicts`]), or one parse state once a rule has matched
/// in it.
#[derive(Clone, Copy, Default)]
pub(super) struct FirstBytes {
    pub(super) checked: ByteSet,
    pub(super) taken: ByteSet,
}

impl FirstBytes {
    /// Checks `byte`, unless it was, with `context` (a matcher right after
    /// the rule, at row `base`): one step, undone.
    pub(super) fn check(&mut self, context: &mut Parse, base: usize, byte: u8) {
        if self.checked.contains(byte) {
            return;
        }
        self.checked.insert(byte);
        if context.push(Start::Scan(Symbol::Byte(byte)), 0) {
            self.taken.insert(byte);
        }
        context.truncate(base);
    }

    /// Whether a rest starting with `byte` is known to be refused.
    pub(super) fn refuses(self, byte: u8) -> bool {
        self.checked.contains(byte) && !self.taken.contains(byte)
    }
}

/// Per rule, token (trie rank) and place in the token: whether what can
/// follow the rule takes the token's rest there. And per parse state,
/// token and place: whether the state
/// takes the rest there ([`Matcher::rests_after`](super::Matcher)), one
/// small map per state, so that no insert rehashes them all (a 20 ms
/// step when they were one map of half a million).
#[derive(Default)]
pub(super) struct ContextVerdicts {
    verdicts: FxHashMap<(u32, u32, u8), bool>,
    /// Per rule: the first bytes of rests checked, and those of them that
    /// what can follow the rule takes. Most rests die at their first byte
    /// (the words after a space that ends a run of white space, where a
    /// value must start), and are rejected by it alone: no verdict each.
    first_bytes: FxHashMap<u32, FirstBytes>,
    after: FxHashMap<StateKey, FxHashMap<(u32, u8), bool>>,
    /// Verdicts held in `after`.
    after_len: usize,
}

impl ContextVerdicts {
    /// What is known of the first bytes of `rule`'s rests.
    pub(super) fn first_bytes(&self, rule: u32) -> FirstBytes {
        self.first_bytes.get(&rule).copied().unwrap_or_default()
    }

    /// Keeps what is known of the first bytes of `rule`'s rests.
    pub(super) fn keep_first_bytes(&mut self, rule: u32, first: FirstBytes) {
        self.first_bytes.insert(rule, first);
    }

    /// Whether what can follow `rule` takes the rest of token `rank` from
    /// byte `end` on, if known.
    pub(super) fn verdict(&self, rule: u32, rank: u32, end: u8) -> Option<bool> {
        self.verdicts.get(&(rule, rank, end)).copied()
    }

    /// Keeps verdicts of [`ContextVerdicts::verdict`] on `rule`'s rests
    /// (`(rank, end, taken)`), with what is known of their first bytes,
    /// starting over past the bound.
    pub(super) fn keep(
        &mut self,
        rule: u32,
        first: FirstBytes,
        found: impl ExactSizeIterator<Item = (u32, u8, bool)>,
    ) {
        self.make_room(found.len());
        self.first_bytes.insert(rule, first);
        for (rank, end, taken) in found {
            self.verdicts.insert((rule, rank, end), taken);
        }
    }

    /// About the bytes of the verdicts kept.
    pub(super) fn bytes(&self) -> usize {
        (self.verdicts.len() + self.after_len) * VERDICT_BYTES
            + self.first_bytes.len() * size_of::<(u32, FirstBytes)>()
    }

    /// Whether the parse state `state` takes the rest of token `rank` from
    /// byte `end` on, if known.
    pub(super) fn after(&self, state: StateKey) -> Option<&FxHashMap<(u32, u8), bool>> {
        self.after.get(&state)
    }

    /// Keeps verdicts of [`ContextVerdicts::after`], starting over past
    /// the bound.
    pub(super) fn keep_after(
        &mut self,
        state: StateKey,
        found: impl ExactSizeIterator<Item = (u32, u8, bool)>,
    ) {
        self.make_room(found.len());
        self.after_len += found.len();
        let verdicts = self.after.entry(state).or_default();
        for (rank, end, taken) in found {
            verdicts.insert((rank, end), taken);
        }
    }

    /// Clears every verdict if `more` would take them past the bound.
    fn make_room(&mut self, more: usize) {
        if (self.verdicts.len() + self.after_len + more) * VERDICT_BYTES > VERDICTS_BYTES {
            self.verdicts.clear();
            self.first_bytes.clear();
            self.after.clear();
            self.after_len = 0;
        }
    }
}
