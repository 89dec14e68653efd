//! What the mask computation of one grammar keeps between masks: the
//! Earley steps its trie walks memoized ([`StepStore`]), the names of the
//! parse states its matchers met ([`StateNames`]) and what the contexts
//! of its rules did with the rests of uncertain tokens
//! ([`ContextVerdicts`]).
//!
//! They are per grammar and per vocabulary, and only masks use them, so
//! the vocabulary's [`MaskCache`](crate::MaskCache) holds them, keyed by
//! the grammar's id (which every snapshot of a lazy grammar shares) and
//! counted against the cache's bound; a matcher takes its grammar's memos
//! once, when it is made for a vocabulary. Masks never depend on them:
//! memos dropped (evicted, or started over past their own bounds) cost
//! only the work of remaking them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::memo::StepStore;
use super::states::StateNames;
use super::verdicts::ContextVerdicts;
use crate::cache::GrammarMemos;
use crate::grammar::Grammar;
use crate::vocab::Vocabulary;

/// What building a grammar's mask entries for a vocabulary works with.
#[derive(Clone, Copy)]
pub(super) struct Masking<'a> {
    pub grammar: &'a Arc<Grammar>,
    pub vocabulary: &'a Vocabulary,
    pub memos: &'a MaskMemos,
}

/// One grammar's mask memos for one vocabulary (see the module
/// documentation).
#[derive(Default)]
pub(crate) struct MaskMemos {
    steps: Mutex<StepStore>,
    states: Mutex<StateNames>,
    contexts: Mutex<ContextVerdicts>,
    /// The bytes last reported to the cache.
    reported: AtomicUsize,
}

/// The least change in size worth reporting to the cache.
const REPORT_BYTES: usize = 64 << 10;

impl MaskMemos {
    /// The Earley steps trie walks memoized, kept between walks.
    pub(super) fn step_store(&self) -> MutexGuard<'_, StepStore> {
        // Every update leaves the store consistent.
        self.steps.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The names of the parse states met so far.
    pub(super) fn state_names(&self) -> MutexGuard<'_, StateNames> {
        // Every update leaves the names consistent.
        self.states.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What the contexts of the grammar's rules did with the rests of
    /// uncertain tokens.
    pub(super) fn context_verdicts(&self) -> MutexGuard<'_, ContextVerdicts> {
        // Every update leaves the verdicts consistent.
        self.contexts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Their size now, if it moved by [`REPORT_BYTES`] or more since it
    /// was last reported (and it is reported now).
    pub(super) fn size_to_report(&self) -> Option<usize> {
        let bytes = self.bytes();
        let reported = self.reported.load(Ordering::Relaxed);
        if bytes.abs_diff(reported) < REPORT_BYTES {
            return None;
        }
        self.reported.store(bytes, Ordering::Relaxed);
        Some(bytes)
    }
}

impl GrammarMemos for MaskMemos {
    fn bytes(&self) -> usize {
        self.step_store().bytes() + self.state_names().bytes() + self.context_verdicts().bytes()
    }
}
