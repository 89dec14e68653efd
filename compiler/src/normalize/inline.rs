//! Inlining small fragment rules into the rules that use them.
//!
//! A fragment is a rule with no references, no builtins, no lookahead, that
//! is not the entry rule, nor kept ([`Rule::keep`](crate::ir::Rule::keep)),
//! nor captured ([`Rule::capture`](crate::ir::Rule::capture)), and whose body has at most [`FRAGMENT_SIZE`] nodes.
//! Each reference to a fragment is replaced by a copy of its body, unless that
//! would make the using rule larger than [`RULE_SIZE`]. Rules that become
//! reference-free this way are fragments in the next round. Counted
//! repetitions keep their rule (the count needs one).
//!
//! A rule that is a choice takes the bodies of the reference-free rules
//! among its alternatives, of any size (the branches of a JSON Schema
//! `anyOf` of patterns), within [`CHOICE_SIZE`]: one automaton for them,
//! so that a mask walks the vocabulary once for them, not once per branch
//! (five unanchored patterns under `oneOf` made a 22 ms step of five
//! walks).

use super::units;
use crate::budget::{Budget, Exceeded};
use crate::ir::{Expr, Grammar};

/// Largest body (in expression nodes) a rule may have to be inlined.
pub const FRAGMENT_SIZE: usize = 24;

/// Inlining stops growing a rule at this many expression nodes.
pub const RULE_SIZE: usize = 512;

/// The largest choice (in expression nodes) whose terminal alternatives
/// are written into it (see the module documentation): four times
/// [`RULE_SIZE`], since the automata of the alternatives exist either
/// way, and a union whose subsets blow up stays nondeterministic.
pub const CHOICE_SIZE: usize = 4 * RULE_SIZE;

/// Inlines fragments until nothing changes.
pub(super) fn inline(grammar: &mut Grammar, budget: &Budget) -> Result<(), Exceeded> {
    loop {
        let terminal: Vec<bool> = (0..grammar.rules.len())
            .map(|i| {
                budget.spend(units(&grammar.rules[i].body))?;
                Ok(is_terminal(grammar, i))
            })
            .collect::<Result<_, Exceeded>>()?;
        // Neither kind of inlining changes a terminal rule this round.
        let fragments: Vec<Option<Expr>> = (grammar.rules.iter().zip(&terminal))
            .map(|(rule, &terminal)| {
                let is_fragment = terminal && size(&rule.body) <= FRAGMENT_SIZE;
                is_fragment.then(|| rule.body.clone())
            })
            .collect();
        let mut changed = inline_choices(grammar, &terminal, budget)?;
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

/// Whether rule `i` may be copied where it is used: not the entry rule,
/// kept, captured, limited nor with lookahead, and reference-free.
fn is_terminal(grammar: &Grammar, i: usize) -> bool {
    let rule = &grammar.rules[i];
    i != grammar.root.as_usize()
        && !rule.keep
        && rule.capture.is_none()
        && !rule.limit.is_some()
        && rule.lookahead.is_none()
        && is_reference_free(&rule.body)
}

/// Replaces, in each rule whose body is a choice, its alternatives that
/// are references to `terminal` rules ([`is_terminal`]) by the rules'
/// bodies, if the choice stays within [`CHOICE_SIZE`]. Whether any rule
/// changed.
fn inline_choices(
    grammar: &mut Grammar,
    terminal: &[bool],
    budget: &Budget,
) -> Result<bool, Exceeded> {
    let mut changed = false;
    for i in 0..grammar.rules.len() {
        let Expr::Choice(items) = &grammar.rules[i].body else {
            continue;
        };
        budget.spend(items.len())?;
        let mut total: usize = 1;
        let mut refers = false;
        for item in items {
            total = total.saturating_add(match item {
                Expr::Ref(id) if terminal[id.as_usize()] => {
                    refers = true;
                    size(&grammar.rules[id.as_usize()].body)
                }
                item => size(item),
            });
            if total > CHOICE_SIZE {
                break;
            }
        }
        if !refers || total > CHOICE_SIZE {
            continue;
        }
        let bodies: Vec<Expr> = items
            .iter()
            .map(|item| match item {
                Expr::Ref(id) if terminal[id.as_usize()] => {
                    grammar.rules[id.as_usize()].body.clone()
                }
                item => item.clone(),
            })
            .collect();
        grammar.rules[i].body = Expr::Choice(bodies);
        changed = true;
    }
    Ok(changed)
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
