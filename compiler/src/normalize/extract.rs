//! Dispatches and their arms become rules of their own.

use super::{add_rule, units};
use crate::budget::{Budget, Exceeded};
use crate::ir::{Expr, Grammar};

/// Gives every dispatch (and token dispatch) that is not a whole rule body a
/// rule `parent#dispatchN`, and every dispatch arm that is not already a rule
/// reference a rule `parent#armN`.
pub(super) fn extract(grammar: &mut Grammar, budget: &Budget) -> Result<(), Exceeded> {
    // New rules are appended and visited too: arms may hold dispatches.
    let mut index = 0;
    while index < grammar.rules.len() {
        budget.spend(units(&grammar.rules[index].body))?;
        let mut body = std::mem::replace(&mut grammar.rules[index].body, Expr::Empty);
        let name = grammar.rules[index].name.clone();
        let mut next_id = 0;
        let mut fresh = |grammar: &mut Grammar, kind: &str, expr: Expr| {
            next_id += 1;
            Expr::Ref(add_rule(grammar, format!("{name}#{kind}{next_id}"), expr))
        };
        if let Expr::Dispatch(_) | Expr::TokenDispatch(_) = body {
            extract_arms(&mut body, &mut |arm| {
                *arm = fresh(grammar, "arm", std::mem::replace(arm, Expr::Empty));
            });
        } else {
            extract_nested(&mut body, &mut |dispatch| {
                *dispatch = fresh(
                    grammar,
                    "dispatch",
                    std::mem::replace(dispatch, Expr::Empty),
                );
            });
        }
        grammar.rules[index].body = body;
        index += 1;
    }
    Ok(())
}

/// Calls `f` on each arm of the dispatch `expr` that is not a rule reference.
fn extract_arms(expr: &mut Expr, f: &mut dyn FnMut(&mut Expr)) {
    let arms: Vec<&mut Expr> = match expr {
        Expr::Dispatch(dispatch) => dispatch.arms.iter_mut().map(|(_, arm)| arm).collect(),
        Expr::TokenDispatch(dispatch) => dispatch.arms.iter_mut().map(|(_, arm)| arm).collect(),
        _ => Vec::new(),
    };
    for arm in arms {
        if !matches!(arm, Expr::Ref(_)) {
            f(arm);
        }
    }
}

/// Calls `f` on every dispatch inside `expr` (which is not one itself).
fn extract_nested(expr: &mut Expr, f: &mut dyn FnMut(&mut Expr)) {
    match expr {
        Expr::Sequence(items) | Expr::Choice(items) => {
            for item in items {
                extract_nested(item, f);
            }
        }
        Expr::Repeat { expr, .. } => extract_nested(expr, f),
        Expr::Dispatch(_) | Expr::TokenDispatch(_) => f(expr),
        Expr::Empty
        | Expr::Bytes(_)
        | Expr::Class(_)
        | Expr::Ref(_)
        | Expr::RepeatRule { .. }
        | Expr::Tokens(_)
        | Expr::Except(_) => {}
    }
}
