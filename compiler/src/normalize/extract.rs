//! Dispatch arms become rules of their own.

use super::add_rule;
use crate::ir::{Expr, Grammar};

/// Replaces every dispatch arm that is not already a rule reference by a
/// reference to a new rule `parent#armN` with the arm as its body.
pub(super) fn extract(grammar: &mut Grammar) {
    // New rules are appended and visited too: arms may hold dispatches.
    let mut index = 0;
    while index < grammar.rules.len() {
        let mut body = std::mem::replace(&mut grammar.rules[index].body, Expr::Empty);
        let name = grammar.rules[index].name.clone();
        let mut counter = 0;
        visit(&mut body, &mut |arm| {
            if !matches!(arm, Expr::Ref(_)) {
                let arm_body = std::mem::replace(arm, Expr::Empty);
                *arm = Expr::Ref(add_rule(grammar, format!("{name}#arm{counter}"), arm_body));
                counter += 1;
            }
        });
        grammar.rules[index].body = body;
        index += 1;
    }
}

/// Calls `f` on every dispatch arm in `expr`.
fn visit(expr: &mut Expr, f: &mut dyn FnMut(&mut Expr)) {
    match expr {
        Expr::Sequence(items) | Expr::Choice(items) => items.iter_mut().for_each(|e| visit(e, f)),
        Expr::Repeat { expr, .. } => visit(expr, f),
        Expr::Dispatch(dispatch) => dispatch.arms.iter_mut().for_each(|(_, arm)| f(arm)),
        Expr::TokenDispatch(dispatch) => dispatch.arms.iter_mut().for_each(|(_, arm)| f(arm)),
        Expr::Empty | Expr::Bytes(_) | Expr::Class(_) | Expr::Ref(_) | Expr::Tokens(_) => {}
    }
}
