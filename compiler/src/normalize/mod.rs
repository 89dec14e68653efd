//! Normalize: IR → IR passes that prepare rules for automaton construction.
//!
//! Passes, in order:
//!
//! 1. `extract` — every dispatch becomes the whole body of a rule, and each
//!    of its arms a reference to a rule of its own. AFTER THIS POINT: a
//!    dispatch only appears as a rule body, and its arms are `Expr::Ref`s.
//! 2. `compress` — repetitions with bounds above [`REPETITION_THRESHOLD`]
//!    become a counted repetition of a rule (one automaton edge, counted at
//!    run time), after the XGrammar 2 paper (§3.5). AFTER THIS POINT: every
//!    `Repeat` is small enough to expand into copies; the others are
//!    `RepeatRule`s, which become one counted edge.
//! 3. `inline` — small reference-free rules are copied into the rules that
//!    use them, so terminals sit in one automaton (fewer rule boundaries,
//!    fewer uncertain tokens). Growth is bounded.
//!
//! No pass changes the language of any original rule; the test suite checks
//! this with the reference recognizer.

mod compress;
mod extract;
mod inline;

pub use self::compress::{EXPANSION_LIMIT, REPETITION_THRESHOLD};
pub use self::inline::{FRAGMENT_SIZE, RULE_SIZE};
use crate::budget::{Budget, Exceeded};
use crate::ir::{Expr, Grammar, Rule};
use xg_runtime::RuleId;
use xg_runtime::lru::free_aside;

/// Runs every normalization pass, in order.
pub fn normalize(grammar: Grammar) -> Grammar {
    normalize_within(grammar, &Budget::unlimited()).expect("an unlimited budget")
}

/// [`normalize`] within `budget`, checked as each pass goes from rule to
/// rule (a request's grammar may be large: an object of 80,000 properties
/// is one rule of 80,000 choices).
pub fn normalize_within(mut grammar: Grammar, budget: &Budget) -> Result<Grammar, Exceeded> {
    type Pass = fn(&mut Grammar, &Budget) -> Result<(), Exceeded>;
    let passes: [Pass; 3] = [extract::extract, compress::compress, inline::inline];
    for pass in passes {
        if let Err(exceeded) = budget.check().and_then(|()| pass(&mut grammar, budget)) {
            // Out of budget: return now, free the grammar aside.
            free_aside(grammar);
            return Err(exceeded);
        }
    }
    Ok(grammar)
}

/// The units of work a pass spends on `expr`: one, and one per item of its
/// top level, where the rules of large requests are large (an object's
/// choice of 80,000 properties); known without walking it.
fn units(expr: &Expr) -> usize {
    match expr {
        Expr::Sequence(items) | Expr::Choice(items) => 1 + items.len(),
        _ => 1,
    }
}

/// Adds a rule named `name` with `body` and returns its id.
fn add_rule(grammar: &mut Grammar, name: String, body: Expr) -> RuleId {
    let id = RuleId::new(grammar.rules.len()).expect("rule count stays below the limit");
    grammar.rules.push(Rule {
        name,
        body,
        lookahead: None,
        keep: false,
        capture: None,
        limit: crate::tree::Limit::default(),
    });
    id
}
