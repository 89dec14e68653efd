//! Repetition state compression (XGrammar 2, §3.5 and Appendix C).
//!
//! `x{m,n}` with `n` above the threshold `T` would need `n` copies of `x`'s
//! automaton. Instead `x` becomes a rule `X` and the repetition becomes
//!
//! - `m ≥ T`: `X{m-T, n-T} x x … x` (`T` explicit copies), and
//! - `m < T`: `x{m,T} | X{1, n-T} x x … x`,
//!
//! where `X{a,b}` with a large `b` is a single automaton edge whose count the
//! matcher keeps. The copies at the end keep what must follow exact (the last
//! `T` repetitions are known to come), so masks stay precise near the end; the
//! states in the middle of the range share one edge and one mask cache entry.
//! `x{m,}` with `m > T` is `x{m,m} x*`. The number of states no longer grows
//! with the bounds.

use super::add_rule;
use crate::ir::{Expr, Grammar};

/// `T`: repetitions with bounds up to this are expanded into copies; larger
/// ones are compressed. Cost: up to `2T` copies of the repeated automaton per
/// compressed repetition.
pub const REPETITION_THRESHOLD: u32 = 8;

/// Whether a repetition with these bounds is too large to expand: after
/// compression, such a repetition repeats a rule and is one counted edge.
pub fn is_counted(min: u32, max: Option<u32>) -> bool {
    match max {
        Some(max) => max > REPETITION_THRESHOLD,
        None => min > REPETITION_THRESHOLD,
    }
}

/// Compresses every large repetition in every rule.
pub(super) fn compress(grammar: &mut Grammar) {
    // Rules added here have bodies that are already rewritten.
    for index in 0..grammar.rules.len() {
        let name = grammar.rules[index].name.clone();
        let mut next_id = 0;
        for part in [true, false] {
            let expr = if part {
                std::mem::replace(&mut grammar.rules[index].body, Expr::Empty)
            } else {
                match grammar.rules[index].lookahead.take() {
                    Some(lookahead) => lookahead,
                    None => continue,
                }
            };
            let expr = rewrite(expr, grammar, &name, &mut next_id);
            if part {
                grammar.rules[index].body = expr;
            } else {
                grammar.rules[index].lookahead = Some(expr);
            }
        }
    }
}

fn rewrite(expr: Expr, grammar: &mut Grammar, name: &str, next_id: &mut usize) -> Expr {
    const T: u32 = REPETITION_THRESHOLD;
    match expr {
        Expr::Sequence(items) => Expr::Sequence(
            items
                .into_iter()
                .map(|e| rewrite(e, grammar, name, next_id))
                .collect(),
        ),
        Expr::Choice(items) => Expr::Choice(
            items
                .into_iter()
                .map(|e| rewrite(e, grammar, name, next_id))
                .collect(),
        ),
        Expr::Repeat { expr, min, max } => {
            let inner = rewrite(*expr, grammar, name, next_id);
            if !is_counted(min, max) {
                return Expr::Repeat {
                    expr: Box::new(inner),
                    min,
                    max,
                };
            }
            let rule = match inner {
                Expr::Ref(id) => id,
                ref other => {
                    *next_id += 1;
                    add_rule(grammar, format!("{name}#repeat{next_id}"), other.clone())
                }
            };
            let copies = || std::iter::repeat_n(inner.clone(), T as usize);
            let counted = |min: u32, max: u32| Expr::Repeat {
                expr: Box::new(Expr::Ref(rule)),
                min,
                max: Some(max),
            };
            match max {
                None => {
                    // x{m,} = X{m-T, m-T} x^T x*
                    let mut items = vec![counted(min - T, min - T)];
                    items.extend(copies());
                    items.push(Expr::Repeat {
                        expr: Box::new(inner.clone()),
                        min: 0,
                        max: None,
                    });
                    Expr::Sequence(items)
                }
                Some(max) if min >= T => {
                    let mut items = vec![counted(min - T, max - T)];
                    items.extend(copies());
                    Expr::Sequence(items)
                }
                Some(max) => {
                    let mut long = vec![counted(1, max - T)];
                    long.extend(copies());
                    Expr::Choice(vec![
                        Expr::Repeat {
                            expr: Box::new(inner.clone()),
                            min,
                            max: Some(T),
                        },
                        Expr::Sequence(long),
                    ])
                }
            }
        }
        Expr::Dispatch(mut dispatch) => {
            for (_, arm) in &mut dispatch.arms {
                *arm = rewrite(std::mem::replace(arm, Expr::Empty), grammar, name, next_id);
            }
            Expr::Dispatch(dispatch)
        }
        Expr::TokenDispatch(mut dispatch) => {
            for (_, arm) in &mut dispatch.arms {
                *arm = rewrite(std::mem::replace(arm, Expr::Empty), grammar, name, next_id);
            }
            Expr::TokenDispatch(dispatch)
        }
        leaf @ (Expr::Empty | Expr::Bytes(_) | Expr::Class(_) | Expr::Ref(_) | Expr::Tokens(_)) => {
            leaf
        }
    }
}
