//! Repetition state compression (after XGrammar 2, §3.5 and Appendix C).
//!
//! `x{m,n}` with `n` above the threshold `T` would need `n` copies of `x`'s
//! automaton. Instead `x` becomes a rule `X` and the repetition becomes
//! `X#{m,n}` ([`Expr::RepeatRule`]): a single automaton edge whose count
//! the matcher keeps. The number of states no longer grows with the bounds.
//!
//! XGrammar follows the counted edge with `T` explicit copies of `x`, so
//! that masks stay precise near the end of the range. xg does not need
//! them: its mask cache keys an item inside a counted repetition by how
//! many matches the repetition still needs and allows, up to what one
//! token can tell apart, so masks are exact at every count. The copies
//! would make the parse ambiguous (after `k` matches the text could be in
//! the repetition or in any copy) and cost work at every byte.
//!
//! Small bounds multiply too when repetitions nest (`((x{8}){8}){8}` is 512
//! copies): a repetition whose expansion would exceed [`EXPANSION_LIMIT`]
//! expression nodes is counted as well.

use super::{add_rule, units};
use crate::budget::{Budget, Exceeded};
use crate::ir::{Expr, Grammar};

/// `T`: repetitions with bounds up to this are expanded into copies; larger
/// ones are counted.
pub const REPETITION_THRESHOLD: u32 = 8;

/// The most expression nodes one repetition may expand to; past this it is
/// counted instead (so no grammar makes automata grow exponentially).
pub const EXPANSION_LIMIT: usize = 2048;

/// Compresses every large repetition in every rule.
pub(super) fn compress(grammar: &mut Grammar, budget: &Budget) -> Result<(), Exceeded> {
    // Rules added here have bodies that are already rewritten.
    for index in 0..grammar.rules.len() {
        budget.spend(units(&grammar.rules[index].body))?;
        let name = grammar.rules[index].name.clone();
        let mut next_id = 0;
        let body = std::mem::replace(&mut grammar.rules[index].body, Expr::Empty);
        let body = rewrite(body, grammar, &name, &mut next_id);
        grammar.rules[index].body = body;
        if let Some(lookahead) = grammar.rules[index].lookahead.take() {
            let lookahead = rewrite(lookahead, grammar, &name, &mut next_id);
            grammar.rules[index].lookahead = Some(lookahead);
        }
    }
    Ok(())
}

fn rewrite(expr: Expr, grammar: &mut Grammar, name: &str, next_id: &mut usize) -> Expr {
    const T: u32 = REPETITION_THRESHOLD;
    let mut recurse = |e: Expr| rewrite(e, grammar, name, next_id);
    match expr {
        Expr::Sequence(items) => Expr::Sequence(items.into_iter().map(&mut recurse).collect()),
        Expr::Choice(items) => Expr::Choice(items.into_iter().map(&mut recurse).collect()),
        // No copies: only the empty text, whatever is repeated (which
        // must not leave a rule behind: a choice takes the body of a rule
        // that calls none).
        Expr::Repeat { max: Some(0), .. } => Expr::Empty,
        Expr::Repeat { expr, min, max } => {
            let inner = recurse(*expr);
            let copies_needed = max.unwrap_or(min).max(min).saturating_add(1) as usize;
            let small = max.map_or(min <= T, |max| max <= T);
            let affordable = expanded_size(&inner).saturating_mul(copies_needed) <= EXPANSION_LIMIT;
            if small && affordable {
                return Expr::Repeat {
                    expr: Box::new(inner),
                    min,
                    max,
                };
            }
            let rule = match inner {
                Expr::Ref(id) => id,
                other => {
                    *next_id += 1;
                    add_rule(grammar, format!("{name}#repeat{next_id}"), other)
                }
            };
            Expr::RepeatRule { rule, min, max }
        }
        Expr::Dispatch(mut dispatch) => {
            for (_, arm) in &mut dispatch.arms {
                *arm = recurse(std::mem::replace(arm, Expr::Empty));
            }
            Expr::Dispatch(dispatch)
        }
        Expr::TokenDispatch(mut dispatch) => {
            for (_, arm) in &mut dispatch.arms {
                *arm = recurse(std::mem::replace(arm, Expr::Empty));
            }
            Expr::TokenDispatch(dispatch)
        }
        leaf @ (Expr::Empty
        | Expr::Bytes(_)
        | Expr::Class(_)
        | Expr::Ref(_)
        | Expr::RepeatRule { .. }
        | Expr::Tokens(_)
        | Expr::Except(_)) => leaf,
    }
}

/// The number of expression nodes `expr` has once its repetitions are
/// expanded into copies (counted repetitions stay one node).
fn expanded_size(expr: &Expr) -> usize {
    match expr {
        Expr::Sequence(items) | Expr::Choice(items) => items
            .iter()
            .fold(1, |total, item| total.saturating_add(expanded_size(item))),
        Expr::Repeat { expr, min, max } => {
            let copies = max.unwrap_or(*min).max(*min).saturating_add(1) as usize;
            expanded_size(expr).saturating_mul(copies).saturating_add(1)
        }
        Expr::Dispatch(dispatch) => dispatch.arms.iter().fold(1, |total, (_, arm)| {
            total.saturating_add(expanded_size(arm))
        }),
        Expr::TokenDispatch(dispatch) => dispatch.arms.iter().fold(1, |total, (_, arm)| {
            total.saturating_add(expanded_size(arm))
        }),
        Expr::Bytes(bytes) => bytes.len().max(1),
        Expr::Except(except) => except.excluded.iter().map(Vec::len).sum::<usize>().max(1),
        Expr::Empty | Expr::Class(_) | Expr::Ref(_) | Expr::RepeatRule { .. } | Expr::Tokens(_) => {
            1
        }
    }
}
