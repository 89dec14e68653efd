//! An Earley parse on its own ([`Parse`]): the rows, the lookahead
//! threads, the grammar snapshot it is in and the work it did. The user's
//! [`Matcher`](super::Matcher) holds one and adds steps, budgets, captures
//! and masks; the walks that build masks run parses of two other kinds,
//! made here: *seeded* ones for mask-cache entries ([`Parse::seeded`]) and
//! *context* ones for what can follow a rule ([`Parse::context`]), told
//! apart by their row 0 ([`Kind::SeedEnd`], [`Kind::Wild`]).

use std::sync::Arc;

use super::earley::{self, Limits, Scratch, Start};
use super::history::{CAN_TERMINATE, History};
use super::item::{Item, Kind};
use super::lookahead::Lookahead;
use super::walk::MaskError;
use crate::grammar::Grammar;

/// An Earley parse: rows of items over a grammar (see the module
/// documentation).
pub(super) struct Parse {
    /// The snapshot of the grammar the rows are in (a lazy grammar's
    /// latest as the parse needed rules built).
    pub grammar: Arc<Grammar>,
    pub history: History,
    pub lookahead: Lookahead,
    scratch: Scratch,
    /// Earley items built so far: the measure of work for budgets.
    pub work: u64,
    /// Why a rule the grammar builds on first use could not be built, if
    /// one could not: every row since has been refused.
    pub failure: Option<Arc<str>>,
    /// Whether new rows check the limits of limited rules (see
    /// [`Limits`]): a matcher's own steps do, the parses that build masks
    /// do not.
    pub check_limits: bool,
}

impl Clone for Parse {
    fn clone(&self) -> Self {
        Self {
            grammar: Arc::clone(&self.grammar),
            history: self.history.clone(),
            lookahead: self.lookahead.clone(),
            scratch: Scratch::default(),
            work: 0,
            failure: self.failure.clone(),
            check_limits: self.check_limits,
        }
    }
}

impl Parse {
    /// A parse with no rows yet, in the newest snapshot of `grammar` any
    /// matcher made (what other matchers of a lazy grammar built serves
    /// this one too).
    pub(super) fn new(grammar: Arc<Grammar>) -> Self {
        let newest = grammar.latest();
        Self {
            grammar: if Arc::ptr_eq(&newest, &grammar) {
                grammar
            } else {
                newest
            },
            history: History::default(),
            lookahead: Lookahead::default(),
            scratch: Scratch::default(),
            work: 0,
            failure: None,
            check_limits: false,
        }
    }

    /// A parse whose only item is `seed` (in the main context) below
    /// `parents` (topmost first, each waiting for the rule of the one
    /// below it, the lowest for `seed`'s), each in a row of its own, above
    /// row 0's [`Kind::SeedEnd`] for `rule`: where the topmost's rule
    /// `rule` ends, the row can end. Mask-cache entries are built with it.
    pub(super) fn seeded(grammar: &Arc<Grammar>, seed: Item, parents: &[Item], rule: u32) -> Self {
        let mut parse = Self::new(Arc::clone(grammar));
        let end = Item {
            kind: Kind::SeedEnd,
            a: rule,
            aux: 0,
            origin: 0,
            pred: 0,
            ctx: 0,
        };
        parse.history.push(&parse.grammar, &[end], 0, 0);
        for &parent in parents {
            let origin = u32::try_from(parse.history.rows() - 1).expect("rows fit in u32");
            let parent = Item {
                origin,
                pred: 0,
                ctx: 0,
                ..parent
            };
            parse.history.push(&parse.grammar, &[parent], 0, 0);
        }
        let seed = Item {
            origin: u32::try_from(parse.history.rows() - 1).expect("rows fit in u32"),
            pred: 0,
            ctx: 0,
            ..seed
        };
        let viable = parse.push(Start::Seed(seed), 0);
        debug_assert!(viable);
        parse
    }

    /// A parse at the point where `rule` has just matched, in every
    /// context the grammar calls it from: row 0 holds every item that
    /// waits for `rule` or, transitively, for a rule that can end with it
    /// (`waiting`); row 1 completes `rule`. What it accepts next is what
    /// the grammar can put after `rule` (context expansion). `None` if
    /// nothing can follow `rule`.
    pub(super) fn context(grammar: &Arc<Grammar>, waiting: &[Item], rule: u32) -> Option<Self> {
        let mut parse = Self::new(Arc::clone(grammar));
        parse.history.push(&parse.grammar, waiting, 0, 0);
        parse.push(Start::Complete(rule), 0).then_some(parse)
    }

    /// This parse's first `rows` rows alone.
    pub(super) fn cut_back(&self, rows: usize) -> Self {
        let mut history = self.history.clone();
        history.truncate(rows);
        let mut lookahead = self.lookahead.clone();
        lookahead.truncate(rows);
        Self {
            history,
            lookahead,
            ..Self::new(Arc::clone(&self.grammar))
        }
    }

    /// `Err` if a rule the grammar builds on first use could not be built
    /// (the rows since are not to be trusted).
    pub(super) fn built(&self) -> Result<(), MaskError> {
        match &self.failure {
            Some(failure) => Err(MaskError::Build(failure.to_string())),
            None => Ok(()),
        }
    }

    /// Builds and appends the row from `start`, made by step `step` (of
    /// the matcher's steps; 0 in the parses that build masks); false (and
    /// nothing changed) if no derivation survives it.
    pub(super) fn push(&mut self, start: Start, step: usize) -> bool {
        if self.failure.is_some() {
            return false;
        }
        let step = u32::try_from(step).expect("steps fit in u32");
        let rows = self.history.rows();
        let settled = loop {
            let limits = if self.check_limits {
                Limits::Checked { step }
            } else {
                Limits::Ignored
            };
            let settled = earley::build(
                &self.grammar,
                &self.history,
                (&mut self.lookahead, &mut self.scratch),
                start,
                limits,
            );
            self.work += self.scratch.work();
            if self.scratch.missing().is_empty() {
                break settled;
            }
            // The row predicted rules not built yet: build them, and make
            // the row again in the grammar that has them.
            self.lookahead.truncate(rows);
            match self.grammar.extended(self.scratch.missing()) {
                Ok(Some(grammar)) => self.grammar = grammar,
                Ok(None) => {
                    self.failure =
                        Some("a rule the grammar builds on first use was not built".into());
                    return false;
                }
                Err(failure) => {
                    self.failure = Some(failure.into());
                    return false;
                }
            }
        };
        if settled.viable {
            let flags = if settled.can_terminate {
                CAN_TERMINATE
            } else {
                0
            };
            self.history
                .push(&self.grammar, self.scratch.items(), flags, step);
        } else {
            self.lookahead.truncate(rows);
        }
        settled.viable
    }

    /// Drops the rows from `rows` on.
    pub(super) fn truncate(&mut self, rows: usize) {
        self.history.truncate(rows);
        self.lookahead.truncate(rows);
    }

    /// Whether the last row can end the parse (a match of the root; in a
    /// seeded parse, of the seed's topmost rule).
    pub(super) fn can_end(&self) -> bool {
        self.history.flags(self.history.rows() - 1) & CAN_TERMINATE != 0
    }
}
