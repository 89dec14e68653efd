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

/// Reports rules that can never match: those that cannot finish
/// ([`check_productive`]) and those whose limit is below their shortest
/// match ([`check_limits`]).
pub(crate) fn check_rules(rules: &[Rule], diagnostics: &mut Diagnostics) {
    check_productive(rules, diagnostics);
    check_limits(rules, diagnostics);
}

/// Reports each rule whose limit (`[max_tokens=N]`, `[max_bytes=N]`) is
/// below the bytes of its shortest match: the matcher plans a match's way
/// out a byte per token, so such a rule could never match. True if none is.
pub(crate) fn check_limits(rules: &[Rule], diagnostics: &mut Diagnostics) -> bool {
    if rules.iter().all(|rule| !rule.limit.is_some()) {
        return true;
    }
    let mut hold = true;
    // The fewest bytes of a match of each rule, to a fixed point (a lower
    // bound where a form's least is not worked out: free text, tokens).
    let mut shortest = vec![u64::MAX; rules.len()];
    loop {
        let mut changed = false;
        for (index, rule) in rules.iter().enumerate() {
            let least = fewest_bytes(&rule.body, &shortest);
            if least < shortest[index] {
                shortest[index] = least;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    for (rule, &least) in rules.iter().zip(&shortest) {
        let limits = [
            ("max_bytes", rule.limit.bytes),
            ("max_tokens", rule.limit.tokens),
        ];
        for (name, limit) in limits {
            let Some(limit) = limit else { continue };
            if least != u64::MAX && least > u64::from(limit) {
                hold = false;
                diagnostics.push(
                    Diagnostic::error(
                        "limit-below-shortest",
                        format!(
                            "`{}` takes at least {least} bytes, more than `{name}={limit}` allows",
                            rule.name
                        ),
                        rule.span,
                        "this rule could never match",
                    )
                    .with_help(format!(
                        "the matcher keeps a way out of each match spelled a byte per token: \
                         raise the limit to {least} or more"
                    )),
                );
            }
        }
    }
    hold
}

/// The fewest bytes `expr` matches, given the rules' (`u64::MAX`: none
/// known yet).
fn fewest_bytes(expr: &Expr, shortest: &[u64]) -> u64 {
    match &expr.kind {
        // Free text ends with a stop string, or, if arms end it, an arm.
        ExprKind::Dispatch(dispatch) if !dispatch.stop_at_end => {
            let stops = dispatch.stop.iter().map(|stop| stop.len() as u64);
            let arms = (dispatch.arms.iter())
                .filter(|_| !dispatch.repeat)
                .map(|arm| {
                    (arm.trigger.len() as u64).saturating_add(fewest_bytes(&arm.body, shortest))
                });
            stops.chain(arms).min().unwrap_or(0)
        }
        ExprKind::Empty | ExprKind::TokenDispatch(_) | ExprKind::Dispatch(_) => 0,
        ExprKind::Literal(text) => text.len() as u64,
        ExprKind::Class(set) => set
            .ranges()
            .first()
            .map_or(u64::MAX, |&(low, _)| low.len_utf8() as u64),
        ExprKind::Regex(regex) => regex_syntax::parse(&regex.pattern)
            .ok()
            .and_then(|hir| hir.properties().minimum_len())
            .map_or(0, |least| least as u64),
        ExprKind::Tokens(_) => 1,
        ExprKind::Ref(id) => shortest[id.as_usize()],
        ExprKind::Sequence(items) => items
            .iter()
            .map(|item| fewest_bytes(item, shortest))
            .fold(0, u64::saturating_add),
        ExprKind::Choice(items) => items
            .iter()
            .map(|item| fewest_bytes(item, shortest))
            .min()
            .unwrap_or(u64::MAX),
        ExprKind::Repeat { expr, min, .. } => {
            if *min == 0 {
                0
            } else {
                fewest_bytes(expr, shortest).saturating_mul(u64::from(*min))
            }
        }
    }
}
