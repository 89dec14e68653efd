//! Inlining small fragment rules into the rules that use them.
//!
//! A fragment is a rule with no references, no builtins, no lookahead, that
//! is not the entry rule, nor kept ([`Rule::keep`](crate::ir::Rule::keep)),
//! nor captured ([`Rule::capture`](crate::ir::Rule::capture)), and whose body has at most [`FRAGMENT_SIZE`] nodes.
//! Each reference to a fragment is replaced by a copy of its body, unless that
//! would make the using rule larger than [`RULE_SIZE`]. Rules that become
//! reference-free this way are fragments in the next round. Counted
//! repetitions keep their rule (the count needs one).

use super::units;
use crate::budget::{Budget, Exceeded};
use crate::ir::{Expr, Grammar};

/// Largest body (in expression nodes) a rule may have to be inlined.
pub const FRAGMENT_SIZE: usize = 24;

/// Inlining stops growing a rule at this many expression nodes.
pub const RULE_SIZE: usize = 512;

/// Inlines fragments until nothing changes.
pub(super) fn inline(grammar: &mut Grammar, budget: &Budget) -> Result<(), Exceeded> {
    loop {
        let fragments: Vec<Option<Expr>> = grammar
            .rules
            .iter()
            .enumerate()
            .map(|(i, rule)| {
                budget.spend(units(&rule.body))?;
                let is_fragment = i != grammar.root.as_usize()
                    && !rule.keep
                    && rule.capture.is_none()
                    && !rule.limit.is_some()
                    && rule.lookahead.is_none()
                    && is_reference_free(&rule.body)
                    && size(&rule.body) <= FRAGMENT_SIZE;
                Ok(is_fragment.then(|| rule.body.clone()))
            })
            .collect::<Result<_, Exceeded>>()?;
        let mut changed = false;
        for rule in &mut grammar.rules {
            for part in std::iter::once(&mut rule.body).chain(rule.lookahead.as_mut()) {
                budget.spend(units(part))?;
                let mut room = RULE_SIZE.saturating_sub(size(part));
                changed |= substitute(part, &fragments, &mut room);
            }
        }
        if !changed {
            return Ok(());
        }
    }
}

/// Replaces references to fragments within `room` extra nodes.
fn substitute(expr: &mut Expr, fragments: &[Option<Expr>], room: &mut usize) -> bool {
    match expr {
        Expr::Ref(id) => match &fragments[id.as_usize()] {
            Some(body) if size(body) <= *room => {
                *room -= size(body);
                *expr = body.clone();
                true
            }
            _ => false,
        },
        Expr::Sequence(items) | Expr::Choice(items) => {
            let mut changed = false;
            for item in items {
                changed |= substitute(item, fragments, room);
            }
            changed
        }
        Expr::Repeat { expr, .. } => substitute(expr, fragments, room),
        Expr::Empty
        | Expr::Bytes(_)
        | Expr::Class(_)
        | Expr::RepeatRule { .. }
        | Expr::Dispatch(_)
        | Expr::Tokens(_)
        | Expr::TokenDispatch(_)
        | Expr::Except(_) => false,
    }
}

/// Whether `expr` refers to no rule and uses no builtin.
fn is_reference_free(expr: &Expr) -> bool {
    match expr {
        Expr::Empty | Expr::Bytes(_) | Expr::Class(_) => true,
        Expr::Sequence(items) | Expr::Choice(items) => items.iter().all(is_reference_free),
        Expr::Repeat { expr, .. } => is_reference_free(expr),
        Expr::Ref(_)
        | Expr::RepeatRule { .. }
        | Expr::Dispatch(_)
        | Expr::Tokens(_)
        | Expr::TokenDispatch(_)
        | Expr::Except(_) => false,
    }
}

/// The size of `expr`: its expression nodes, a literal counting one per
/// byte (each becomes an automaton node, in every copy inlined).
pub(crate) fn size(expr: &Expr) -> usize {
    1 + match expr {
        Expr::Bytes(bytes) => bytes.len().saturating_sub(1),
        Expr::Sequence(items) | Expr::Choice(items) => items.iter().map(size).sum(),
        Expr::Repeat { expr, .. } => size(expr),
        Expr::Dispatch(dispatch) => dispatch.arms.iter().map(|(_, arm)| size(arm)).sum(),
        Expr::TokenDispatch(dispatch) => dispatch.arms.iter().map(|(_, arm)| size(arm)).sum(),
        // A node per byte of the trie, at most.
        Expr::Except(except) => except.excluded.iter().map(Vec::len).sum(),
        Expr::Empty | Expr::Class(_) | Expr::Ref(_) | Expr::RepeatRule { .. } | Expr::Tokens(_) => {
            0
        }
    }
}
