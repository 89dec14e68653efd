//! Whole-grammar checks on the resolved rules: productivity and reachability.

use xg_runtime::RuleId;

use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::tree::{Expr, ExprKind, Rule};

/// Reports every rule that can never produce a finite string (every way
/// through it needs itself, or another such rule, again).
///
/// A rule is checked again only when a rule it refers to turns out to
/// finish, so this is linear in the references whatever order the rules
/// come in (rounds over every rule until nothing changed took one round per
/// link of a chain: minutes for a tool list of 90,000 rules).
pub(crate) fn check_productive(rules: &[Rule], diagnostics: &mut Diagnostics) {
    let mut referrers: Vec<Vec<usize>> = vec![Vec::new(); rules.len()];
    for (i, rule) in rules.iter().enumerate() {
        let mut add = |id: RuleId| referrers[id.as_usize()].push(i);
        visit_refs(&rule.body, &mut add);
        if let Some(lookahead) = &rule.lookahead {
            visit_refs(lookahead, &mut add);
        }
    }
    let mut productive = vec![false; rules.len()];
    // A rule waits in `work` at most once at a time.
    let mut queued = vec![true; rules.len()];
    let mut work: Vec<usize> = (0..rules.len()).rev().collect();
    while let Some(i) = work.pop() {
        queued[i] = false;
        let rule = &rules[i];
        if productive[i]
            || !can_finish(&rule.body, &productive)
            || !rule
                .lookahead
                .as_ref()
                .is_none_or(|la| can_finish(la, &productive))
        {
            continue;
        }
        productive[i] = true;
        for &referrer in &referrers[i] {
            if !productive[referrer] && !queued[referrer] {
                queued[referrer] = true;
                work.push(referrer);
            }
        }
    }
    for (i, rule) in rules.iter().enumerate() {
        if productive[i] {
            continue;
        }
        let id = RuleId::new(i).expect("rule ids fit");
        let mut needed = Vec::new();
        visit_refs(&rule.body, &mut |other| {
            if other != id && !productive[other.as_usize()] && !needed.contains(&other) {
                needed.push(other);
            }
        });
        let help = if refers_to(&rule.body, id) {
            format!(
                "every alternative of `{}` needs `{}` again; add one that does not (a base case)",
                rule.name, rule.name
            )
        } else if let Some(other) = needed.first() {
            format!(
                "it needs `{}`, which never finishes either",
                rules[other.as_usize()].name
            )
        } else {
            "it needs a character class that matches nothing".to_string()
        };
        diagnostics.push(
            Diagnostic::error(
                "non-productive",
                format!("rule `{}` can never produce a finite string", rule.name),
                rule.span,
                "no finite text matches this rule",
            )
            .with_help(help),
        );
    }
}

/// Whether some finite text matches `expr`, given which rules are known to finish.
fn can_finish(expr: &Expr, productive: &[bool]) -> bool {
    match &expr.kind {
        ExprKind::Class(set) => !set.is_empty(),
        ExprKind::Ref(id) => productive[id.as_usize()],
        ExprKind::Sequence(items) => items.iter().all(|e| can_finish(e, productive)),
        ExprKind::Choice(items) => items.iter().any(|e| can_finish(e, productive)),
        ExprKind::Repeat { expr, min, .. } => *min == 0 || can_finish(expr, productive),
        ExprKind::Tokens(set) => set.negated || !set.ids.is_empty(),
        // Free text (with or without dispatch) can always end; the other
        // terminals always match something.
        ExprKind::Empty
        | ExprKind::Literal(_)
        | ExprKind::Regex(_)
        | ExprKind::Dispatch(_)
        | ExprKind::TokenDispatch(_) => true,
    }
}

fn refers_to(expr: &Expr, target: RuleId) -> bool {
    let mut found = false;
    visit_refs(expr, &mut |id| found |= id == target);
    found
}

/// Calls `f` on every rule `expr` refers to.
fn visit_refs(expr: &Expr, f: &mut dyn FnMut(RuleId)) {
    match &expr.kind {
        ExprKind::Ref(id) => f(*id),
        ExprKind::Sequence(items) | ExprKind::Choice(items) => {
            for item in items {
                visit_refs(item, f);
            }
        }
        ExprKind::Repeat { expr, .. } => visit_refs(expr, f),
        ExprKind::Dispatch(dispatch) => dispatch
            .arms
            .iter()
            .for_each(|arm| visit_refs(&arm.body, f)),
        ExprKind::TokenDispatch(dispatch) => dispatch
            .arms
            .iter()
            .for_each(|arm| visit_refs(&arm.body, f)),
        ExprKind::Empty
        | ExprKind::Literal(_)
        | ExprKind::Class(_)
        | ExprKind::Regex(_)
        | ExprKind::Tokens(_) => {}
    }
}

/// Warns about the rules in `candidates` (the entry file's) that `root` never uses.
pub(crate) fn warn_unreachable(
    rules: &[Rule],
    root: RuleId,
    candidates: &[RuleId],
    diagnostics: &mut Diagnostics,
) {
    let mut reached = vec![false; rules.len()];
    let mut stack = vec![root];
    reached[root.as_usize()] = true;
    while let Some(id) = stack.pop() {
        let rule = &rules[id.as_usize()];
        let mut visit = |next: RuleId| {
            if !reached[next.as_usize()] {
                reached[next.as_usize()] = true;
                stack.push(next);
            }
        };
        visit_refs(&rule.body, &mut visit);
        if let Some(lookahead) = &rule.lookahead {
            visit_refs(lookahead, &mut visit);
        }
    }
    let root_name = &rules[root.as_usize()].name;
    for &id in candidates {
        if !reached[id.as_usize()] {
            let rule = &rules[id.as_usize()];
            diagnostics.push(
                Diagnostic::warning(
                    "unreachable-rule",
                    format!("rule `{}` is never used", rule.name),
                    rule.span,
                    format!("not reachable from `{root_name}`"),
                )
                .with_help("remove it, or refer to it from a rule that is used"),
            );
        }
    }
}
