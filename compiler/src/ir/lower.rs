//! Lowering the resolved tree to the grammar IR.

use super::{Dispatch, Expr, Grammar, Rule, TokenDispatch, TokenSet, regex, utf8};
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::tree;

/// Lowers a resolved grammar to bytes. Rule ids are kept. `None` if some part
/// cannot be lowered yet (reported in `diagnostics`).
pub fn lower(grammar: &tree::Grammar, diagnostics: &mut Diagnostics) -> Option<Grammar> {
    let errors = diagnostics.error_count();
    let mut lowerer = Lowerer { diagnostics };
    let rules = grammar
        .rules
        .iter()
        .map(|rule| Rule {
            name: rule.name.clone(),
            body: lowerer.expr(&rule.body),
            lookahead: rule.lookahead.as_ref().map(|la| lowerer.expr(la)),
        })
        .collect();
    (diagnostics.error_count() == errors).then_some(Grammar {
        rules,
        root: grammar.root,
    })
}

struct Lowerer<'a> {
    diagnostics: &'a mut Diagnostics,
}

impl Lowerer<'_> {
    fn expr(&mut self, expr: &tree::Expr) -> Expr {
        match &expr.kind {
            tree::ExprKind::Empty => Expr::Empty,
            tree::ExprKind::Literal(text) => Expr::Bytes(text.as_bytes().to_vec()),
            tree::ExprKind::Class(set) => utf8::char_set(set),
            tree::ExprKind::Regex(pattern) => regex::lower(pattern).unwrap_or_else(Expr::nothing),
            tree::ExprKind::Ref(id) => Expr::Ref(*id),
            tree::ExprKind::Sequence(items) => {
                Expr::Sequence(items.iter().map(|e| self.expr(e)).collect())
            }
            tree::ExprKind::Choice(items) => {
                Expr::Choice(items.iter().map(|e| self.expr(e)).collect())
            }
            tree::ExprKind::Repeat { expr, min, max } => Expr::Repeat {
                expr: Box::new(self.expr(expr)),
                min: *min,
                max: *max,
            },
            tree::ExprKind::Dispatch(dispatch) => Expr::Dispatch(Dispatch {
                arms: dispatch
                    .arms
                    .iter()
                    .map(|arm| (arm.trigger.as_bytes().to_vec(), self.expr(&arm.body)))
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
                    .map(|arm| (arm.trigger, self.expr(&arm.body)))
                    .collect(),
                repeat: dispatch.repeat,
                exclude: dispatch.exclude.clone(),
            }),
            tree::ExprKind::JsonSchema(_) => {
                self.diagnostics.push(
                    Diagnostic::error(
                        "json-schema-not-compiled",
                        "`%json` schemas are checked, but this version of xg cannot compile them to a grammar",
                        expr.span,
                        "embedded JSON Schema",
                    )
                    .with_help("the JSON Schema compiler is the next front end to land; until then, write the JSON structure as rules (see `std/json.xg`)"),
                );
                Expr::nothing()
            }
        }
    }
}
