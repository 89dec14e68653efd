//! Lowering the resolved tree to the grammar IR.

use super::{Dispatch, Expr, Grammar, Rule, TokenDispatch, TokenSet, regex, utf8};
use crate::tree;

/// Lowers a resolved grammar to bytes. Rule ids are kept.
pub fn lower(grammar: &tree::Grammar) -> Grammar {
    let rules = grammar
        .rules
        .iter()
        .map(|rule| Rule {
            name: rule.name.clone(),
            body: expr(&rule.body),
            lookahead: rule.lookahead.as_ref().map(expr),
            keep: rule.keep,
            capture: rule.capture.clone(),
            limit: rule.limit,
        })
        .collect();
    Grammar {
        rules,
        root: grammar.root,
    }
}

fn expr(tree_expr: &tree::Expr) -> Expr {
    match &tree_expr.kind {
        tree::ExprKind::Empty => Expr::Empty,
        tree::ExprKind::Literal(text) => Expr::Bytes(text.as_bytes().to_vec()),
        tree::ExprKind::Class(set) => utf8::char_set(set),
        tree::ExprKind::Regex(pattern) => regex::lower(pattern).unwrap_or_else(Expr::nothing),
        tree::ExprKind::Ref(id) => Expr::Ref(*id),
        tree::ExprKind::Sequence(items) => Expr::Sequence(items.iter().map(expr).collect()),
        tree::ExprKind::Choice(items) => Expr::Choice(items.iter().map(expr).collect()),
        tree::ExprKind::Repeat {
            expr: inner,
            min,
            max,
        } => Expr::Repeat {
            expr: Box::new(expr(inner)),
            min: *min,
            max: *max,
        },
        tree::ExprKind::Dispatch(dispatch) => Expr::Dispatch(Dispatch {
            arms: dispatch
                .arms
                .iter()
                .map(|arm| (arm.trigger.as_bytes().to_vec(), expr(&arm.body)))
                .collect(),
            repeat: dispatch.repeat,
            stop: dispatch
                .stop
                .iter()
                .map(|s| s.as_bytes().to_vec())
                .collect(),
            stop_at_end: dispatch.stop_at_end,
            exclude: dispatch
                .exclude
                .iter()
                .map(|s| s.as_bytes().to_vec())
                .collect(),
        }),
        tree::ExprKind::Tokens(set) => Expr::Tokens(TokenSet {
            ids: set.ids.clone(),
            negated: set.negated,
        }),
        tree::ExprKind::TokenDispatch(dispatch) => Expr::TokenDispatch(TokenDispatch {
            arms: dispatch
                .arms
                .iter()
                .map(|arm| (arm.trigger, expr(&arm.body)))
                .collect(),
            repeat: dispatch.repeat,
            exclude: dispatch.exclude.clone(),
        }),
    }
}
