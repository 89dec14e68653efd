//! What every walk that builds a mask shares: what it costs ([`Cost`]),
//! how it fails ([`MaskError`]), byte strings fed to a matcher in sorted
//! order ([`PrefixWalk`]), and sets of trie ranks ([`RankSet`]).

use std::fmt;

use super::earley::{Start, Symbol};
use super::parse::Parse;
use crate::zeros::written_zeros;

/// What building entries cost.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Cost {
    /// Earley items built: what a mask's budget bounds.
    pub items: u64,
    /// Trie nodes visited.
    pub nodes: u64,
    /// Rests of uncertain tokens walked through a rule's context.
    pub rests: u64,
}

/// Why no mask was computed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MaskError {
    /// The mask buffer is smaller than the vocabulary.
    BufferTooSmall {
        /// Words of 32 bits the vocabulary needs.
        needed: usize,
        /// Words the buffer has.
        given: usize,
    },
    /// Computing the mask would build more Earley items than the matcher's
    /// budget allows: the grammar is too costly here.
    BudgetExceeded {
        /// The budget, in Earley items.
        budget: u64,
    },
    /// The links of a draft tree do not form a tree (see
    /// [`Matcher::fill_draft_tree_bitmasks`](crate::Matcher::fill_draft_tree_bitmasks)): what is wrong.
    DraftTree(String),
    /// A rule the grammar builds on first use could not be built (see
    /// [`RuleBuilder`](crate::RuleBuilder)): why.
    Build(String),
}

impl fmt::Display for MaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BufferTooSmall { needed, given } => write!(
                f,
                "the token mask needs {needed} words of 32 bits, the buffer has {given}"
            ),
            Self::BudgetExceeded { budget } => write!(
                f,
                "computing the token mask needs more than the budget of {budget} Earley items"
            ),
            Self::DraftTree(problem) => write!(f, "not a draft tree: {problem}"),
            Self::Build(problem) => write!(f, "the grammar could not be built: {problem}"),
        }
    }
}

impl std::error::Error for MaskError {}

/// Byte strings fed to a matcher in sorted order, each pushed after the
/// longest prefix it shares with the one before, and popped as needed.
#[derive(Default)]
pub(super) struct PrefixWalk {
    /// The bytes pushed past the base row.
    path: Vec<u8>,
    /// A byte refused right after `path`.
    refused: Option<u8>,
}

impl PrefixWalk {
    /// Whether `parse` (at row `base` plus the path; its new rows part of
    /// step `step`) takes `bytes` from `base`, and how many bytes that
    /// pushed.
    pub(super) fn accepts(
        &mut self,
        parse: &mut Parse,
        step: usize,
        base: usize,
        bytes: &[u8],
    ) -> (bool, u64) {
        let shared = self
            .path
            .iter()
            .zip(bytes)
            .take_while(|(a, b)| a == b)
            .count();
        if shared < self.path.len() {
            parse.truncate(base + shared);
            self.path.truncate(shared);
            self.refused = None;
        }
        if self.refused.is_some() && bytes.get(shared) == self.refused.as_ref() {
            return (false, 0);
        }
        let mut pushed = 0;
        for &byte in &bytes[shared..] {
            pushed += 1;
            if parse.push(Start::Scan(Symbol::Byte(byte)), step) {
                self.path.push(byte);
                self.refused = None;
            } else {
                self.refused = Some(byte);
                return (false, pushed);
            }
        }
        (true, pushed)
    }
}

/// A set of trie ranks as a bitset.
pub(super) struct RankSet(Vec<u64>);

impl RankSet {
    pub(super) fn new(ranks: usize) -> Self {
        Self(written_zeros(ranks.div_ceil(64)))
    }

    pub(super) fn contains(&self, rank: u32) -> bool {
        self.0[rank as usize / 64] & (1 << (rank % 64)) != 0
    }

    pub(super) fn insert(&mut self, rank: u32) {
        self.0[rank as usize / 64] |= 1 << (rank % 64);
    }

    /// The ranks in the set, in order.
    pub(super) fn ranks(&self) -> Box<[u32]> {
        let mut ranks = Vec::new();
        for (w, &word) in self.0.iter().enumerate() {
            let mut word = word;
            while word != 0 {
                let bit = word.trailing_zeros();
                ranks.push(u32::try_from(w * 64).expect("trie ranks fit in u32") + bit);
                word &= word - 1;
            }
        }
        ranks.into()
    }
}
