//! Context expansion: the rest of an uncertain token, after a place where
//! the item's rule can end in it, checked against what can follow the rule
//! anywhere in the grammar — most uncertain tokens die there, before the
//! full state is asked.
//!
//! What follows a rule is a property of the grammar, so the verdict on a
//! rest is too: its memos keep them ([`ContextVerdicts`](super::verdicts::ContextVerdicts)), and the next
//! combination with the rule — the next prefix of a property name, the
//! same string elsewhere — looks them up instead of building the rule's
//! context matcher again (for a rule used in thousands of places, a row of
//! a hundred thousand items).

use std::sync::Arc;

use super::item::{Item, Kind};
use super::memos::Masking;
use super::parse::Parse;
use super::verdicts::FirstBytes;
use super::walk::{Cost, MaskError, PrefixWalk, RankSet};
use crate::byteset::ByteSet;
use crate::grammar::{Caller, Grammar};
use crate::tables::RuleRecord;

/// The fewest uncertain tokens of an entry for which a combination checks
/// every first byte of the rule's rests before listing them (256 steps at
/// most, once per rule): white space before a value leaves some 50,000
/// tokens uncertain, which then go by runs of a refused first byte.
pub(super) const FIRST_BYTES_AT: u32 = 4096;

/// How large a rule's context may be: the most items that may wait for
/// the rule, and the most of its callers a lazy grammar builds at once to
/// know them. Past either, the rule's uncertain tokens are left to the
/// full state's check.
#[derive(Clone, Copy, Debug)]
pub(super) struct ContextLimits {
    items: usize,
    /// The most pending rules built for one context, all callers of the
    /// rule and of the rules that can end with it.
    builds: usize,
}

impl ContextLimits {
    /// For an entry that leaves few tokens uncertain. A rule waited for in
    /// many places (a string type used all over a large schema) has a
    /// context row of thousands of items, and walking rests through it
    /// costs more than checking the tokens against the full state, whose
    /// row holds only the places the parse is at (MaskBench, Llama 3.1:
    /// per-token p99 −14 %, p99.9 −29 %, mean unchanged); and building
    /// many callers costs a step more than that check saves.
    pub(super) const NARROW: Self = Self {
        items: 256,
        builds: 16,
    };

    /// For an entry that leaves thousands of tokens uncertain (white space
    /// before a value: every token that begins with it, 58,000 on Llama
    /// 3.1): even a wide context refuses most of them at their first byte
    /// once for the grammar, where the full state reads them all again at
    /// every value (every 10th MaskBench-full file with flexible white
    /// space, cold: per-token mean 47 → 28 µs, p99 1.4 → 0.5 ms).
    pub(super) const WIDE: Self = Self {
        items: 4096,
        builds: 64,
    };

    /// The limits for an entry that lists `listed` tokens as uncertain:
    /// wide from [`FIRST_BYTES_AT`] on, where the entry's first bytes are
    /// all checked too ([`FirstBytes::complete`]).
    pub(super) fn for_listed(listed: u32) -> Self {
        if listed >= FIRST_BYTES_AT {
            Self::WIDE
        } else {
            Self::NARROW
        }
    }
}

impl FirstBytes {
    /// Every byte checked as the first of a rest of `rule` (one step
    /// each from what can follow the rule; kept by the grammar), for a
    /// combination about to list the rests of many tokens: a run of them
    /// refused at that byte is then skipped at once. If the rule's context
    /// is not built ([`Following::Unknown`]), the bytes that can follow the
    /// rule anywhere in a lazy grammar ([`Grammar::follow_bytes`]), or what
    /// is known. Adds the Earley items built to `cost`.
    pub(super) fn complete(
        masking: Masking<'_>,
        rule: u32,
        cost: &mut Cost,
    ) -> Result<Self, MaskError> {
        let Masking { grammar, memos, .. } = masking;
        let mut first = memos.context_verdicts().first_bytes(rule);
        if first.checked == ByteSet::full() {
            return Ok(first);
        }
        // Called for entries past `FIRST_BYTES_AT` only: wide limits.
        match following(grammar, rule, ContextLimits::WIDE)? {
            // Too many callers to build: the bytes the builder reads from
            // the whole grammar, a superset of those the context takes.
            Following::Unknown => match grammar.follow_bytes(rule) {
                Some(taken) => {
                    first = Self {
                        checked: ByteSet::full(),
                        taken,
                    };
                }
                None => return Ok(first),
            },
            Following::Nothing => first.checked = ByteSet::full(),
            Following::Context(mut context) => {
                let base = context.history.rows();
                for byte in 0..=u8::MAX {
                    first.check(&mut context, base, byte);
                }
                cost.items += context.work;
                context.built()?;
            }
        }
        (memos.context_verdicts()).keep_first_bytes(rule, first);
        Ok(first)
    }
}

/// What can follow a rule (see [`following`]).
enum Following {
    /// A matcher standing right after the rule, everywhere the grammar
    /// (perhaps a later snapshot, with the rule's callers built) uses it.
    Context(Box<Parse>),
    /// Nothing can follow the rule: every rest is refused.
    Nothing,
    /// More items wait for the rule, or more of its callers are not built,
    /// than the [`ContextLimits`] allow: rests are left to
    /// the full state.
    Unknown,
}

/// What can follow `rule` in `grammar`, within `limits`; a lazy grammar
/// builds the callers it has not built yet, when they are few.
fn following(
    grammar: &Arc<Grammar>,
    rule: u32,
    limits: ContextLimits,
) -> Result<Following, MaskError> {
    let mut grammar = Arc::clone(grammar);
    let waiting = loop {
        match waiting_items(&grammar, rule, limits) {
            Waiting::Items(items) => break items,
            Waiting::Pending(rules) => match grammar.extended(&rules) {
                Ok(Some(next)) => grammar = next,
                Ok(None) => return Err(MaskError::Build("a caller was not built".into())),
                Err(failure) => return Err(MaskError::Build(failure)),
            },
            Waiting::TooMany => return Ok(Following::Unknown),
        }
    };
    Ok(match Parse::context(&grammar, &waiting, rule) {
        Some(context) => Following::Context(Box::new(context)),
        None => Following::Nothing,
    })
}

/// The rest of an uncertain token after a place its item's rule can end.
pub(super) struct Rest<'a> {
    pub bytes: &'a [u8],
    /// The token's trie rank.
    pub rank: u32,
    /// Where in the token the rest starts.
    pub end: u8,
}

/// Adds to `uncertain` the tokens of `rests` whose rest what can follow
/// `rule` takes (the others are rejected; the caller leaves out those
/// whose first byte [`FirstBytes`] knows to be refused), with the verdicts
/// the grammar's memos keep; those missing are checked with the rule's
/// context parse and kept — or, for a rule whose context is past
/// `limits` (how large a context the entry is worth), all left uncertain.
/// Adds the Earley items built to `cost`, and stops past `budget`.
pub(super) fn expand(
    masking: Masking<'_>,
    (rule, limits): (u32, ContextLimits),
    mut rests: Vec<Rest<'_>>,
    uncertain: &mut RankSet,
    budget: u64,
    cost: &mut Cost,
) -> Result<(), MaskError> {
    let Masking { grammar, memos, .. } = masking;
    let mut first = {
        let known = memos.context_verdicts();
        let first = known.first_bytes(rule);
        rests.retain(|rest| match known.verdict(rule, rest.rank, rest.end) {
            Some(taken) => {
                if taken {
                    uncertain.insert(rest.rank);
                }
                false
            }
            None => true,
        });
        first
    };
    if rests.is_empty() {
        return Ok(());
    }
    let context = match following(grammar, rule, limits)? {
        Following::Context(context) => Some(context),
        Following::Nothing => None,
        Following::Unknown => {
            for rest in &rests {
                uncertain.insert(rest.rank);
            }
            return Ok(());
        }
    };
    let mut found = Vec::with_capacity(rests.len());
    if let Some(mut context) = context {
        let base = context.history.rows();
        // The first bytes not checked yet, one step each; the rests they
        // refuse go without sorting or a verdict of their own.
        for rest in &rests {
            first.check(&mut context, base, rest.bytes[0]);
        }
        rests.retain(|rest| first.taken.contains(rest.bytes[0]));
        rests.sort_unstable_by(|a, b| (a.bytes, a.rank).cmp(&(b.bytes, b.rank)));
        cost.rests += rests.len() as u64;
        let mut walk = PrefixWalk::default();
        for rest in &rests {
            if uncertain.contains(rest.rank) {
                continue;
            }
            let taken = walk.accepts(&mut context, 0, base, rest.bytes).0;
            if taken {
                uncertain.insert(rest.rank);
            }
            found.push((rest.rank, rest.end, taken));
            if cost.items + context.work > budget {
                cost.items += context.work;
                return Err(MaskError::BudgetExceeded { budget });
            }
        }
        cost.items += context.work;
        context.built()?;
    } else {
        // Nothing can follow the rule: every rest is rejected.
        found.extend(rests.iter().map(|rest| (rest.rank, rest.end, false)));
    }
    (memos.context_verdicts()).keep(rule, first, found.into_iter());
    Ok(())
}

/// What [`waiting_items`] found.
enum Waiting {
    /// Row 0 of the context parse.
    Items(Vec<Item>),
    /// More than the limits allow.
    TooMany,
    /// Rules to build first (in a lazy grammar): every pending caller of
    /// the rules the row would take items from, so that one extension of
    /// the grammar builds them all.
    Pending(Vec<u32>),
}

/// Every item that waits for `rule`, or for a rule that can end with it,
/// anywhere in the grammar: row 0 of the context parse of `rule`; none
/// as soon as there are more than `limits` allow (the walk stops there),
/// or the rules to build before it can be known.
///
/// In a lazy grammar the walk goes on through pending callers (the
/// builder knows who calls them), so that every rule to build is found in
/// one walk and built in one snapshot, and [`ContextLimits::builds`]
/// bounds them all. Building them caller by caller, each in a snapshot of
/// its own, made `Kubernetes---kb_1161`'s first mask build 179 rules in
/// 179 snapshots, each listing every caller of the grammar again: 26 ms,
/// now 1 ms (every 10th MaskBench-full file, cold: steps over 1 ms
/// 773 → 504, per-token mean unchanged).
fn waiting_items(grammar: &Grammar, rule: u32, limits: ContextLimits) -> Waiting {
    let tables = grammar.tables();
    let item = |kind, a, aux| Item {
        kind,
        a,
        aux,
        origin: 0,
        pred: 0,
        ctx: 0,
    };
    let mut row = Vec::new();
    let mut in_row = rustc_hash::FxHashSet::default();
    let mut pending = Vec::new();
    let mut seen = vec![false; tables.rules.len()];
    let mut work = vec![rule];
    seen[rule as usize] = true;
    // Each pending rule, once built, puts at least one item in the row.
    let too_many = |row: &Vec<Item>, pending: &Vec<u32>| row.len() + pending.len() > limits.items;
    while let Some(r) = work.pop() {
        // What follows a rule some of whose callers are not built yet is
        // not known until they are; few are built, many give up.
        let unbuilt = grammar.pending_callers(r);
        if unbuilt.len() > limits.builds {
            return Waiting::TooMany;
        }
        for caller in unbuilt {
            if !seen[caller as usize] {
                seen[caller as usize] = true;
                pending.push(caller);
                work.push(caller);
            }
        }
        if pending.len() > limits.builds || too_many(&row, &pending) {
            return Waiting::TooMany;
        }
        if r == grammar.root().as_u32() {
            row.push(item(Kind::Root, r, 0));
        }
        for &caller in grammar.callers(r) {
            let waiter = match caller {
                Caller::Node(node) => item(Kind::Node, node, 0),
                Caller::Repeat { .. } => item(Kind::Wild, r, 0),
                Caller::Arm { rule, pattern } => {
                    let kind = if grammar.rule(rule).kind == RuleRecord::DISPATCH {
                        Kind::Arm
                    } else {
                        Kind::TokenArm
                    };
                    item(kind, rule, pattern)
                }
            };
            if in_row.insert(waiter) {
                row.push(waiter);
                if too_many(&row, &pending) {
                    return Waiting::TooMany;
                }
            }
            // The waiter's own rule can end after `r`: its callers wait too.
            let owner = match waiter.kind {
                Kind::Node => grammar.node_rule(waiter.a),
                Kind::Arm | Kind::TokenArm => waiter.a,
                _ => continue,
            };
            if !seen[owner as usize] {
                seen[owner as usize] = true;
                work.push(owner);
            }
        }
    }
    if !pending.is_empty() {
        return Waiting::Pending(pending);
    }
    if row.len() > limits.items {
        return Waiting::TooMany;
    }
    Waiting::Items(row)
}
