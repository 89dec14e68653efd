//! Grammars whose rule automata are built on first use.
//!
//! A request's grammar — a JSON Schema of thousands of definitions, a tool
//! list — is compiled while the request waits, and one output enters few of
//! its rules. [`grammar`] does the work every rule needs (normalizing,
//! hashing the IR) and builds the automata of the rules that must be built
//! now (dispatches, and rules large enough that building them may fail or
//! take long, so that those errors and costs stay at compile time); the
//! others are [`RuleRecord::PENDING`](xg_runtime::tables::RuleRecord) in
//! the tables, and [`Rules`] — the runtime's [`RuleBuilder`] — builds each
//! when a matcher first enters it, exactly as it would have been built
//! here (the same automaton, numbering and hashes).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock, PoisonError};

use xg_runtime::{BuiltRule, ByteSet, Grammar, RuleBuilder, RuleId};

use crate::budget::{Budget, Exceeded, Limits};
use crate::cache::CompileCache;
use crate::fsm::{self, Body};
use crate::hash::{self, IrHash};
use crate::ir::{self, Expr};
use crate::tables::{self, Laid};
use xg_runtime::lru::free_aside;

/// The most nodes a rule's automaton is estimated to have for it to be
/// built on first use; larger ones are built with the grammar.
const LAZY_NODES: usize = 4096;

/// Builds the pending automata of one grammar (see the module docs).
struct Rules {
    grammar: ir::Grammar,
    /// Per rule: the rules whose IR refers to it.
    callers: Vec<Vec<RuleId>>,
    ir: Vec<IrHash>,
    token_sets: Vec<ir::TokenSet>,
    cache: CompileCache,
    /// The compilation's memory limit, for each rule built later.
    memory: Option<usize>,
    /// What each rule can begin with, read when the runtime first asks
    /// what can follow a rule.
    starts: OnceLock<ir::Starts>,
    /// What can follow each rule asked about: the runtime asks again
    /// whenever its verdicts start over (they are bounded), and walking
    /// every caller of white space reads most of the grammar.
    follows: Mutex<HashMap<RuleId, [u64; 4]>>,
}

impl RuleBuilder for Rules {
    fn callers(&self, rule: RuleId) -> &[RuleId] {
        self.callers.get(rule.as_usize()).map_or(&[], Vec::as_slice)
    }

    fn follow_bytes(&self, rule: RuleId) -> ByteSet {
        let starts = (self.starts).get_or_init(|| ir::Starts::new(&self.grammar, &self.callers));
        let mut known = self.follows.lock().unwrap_or_else(PoisonError::into_inner);
        let words = *known
            .entry(rule)
            .or_insert_with(|| starts.follow(&self.grammar, &self.callers, rule).words());
        ByteSet::from_words(words)
    }

    fn build(&self, rule: RuleId) -> Result<BuiltRule, String> {
        let source = (self.grammar.rules)
            .get(rule.as_usize())
            .ok_or_else(|| format!("no rule {rule}"))?;
        // Within the memory limit, not the time limit: the compilation
        // this grammar came from is over.
        let budget = Budget::new(Limits {
            memory: self.memory,
            ..Limits::unlimited()
        });
        let mut token_sets = self.token_sets.clone();
        let mut built = fsm::build_rule(source, &mut token_sets, &budget, &self.cache)
            .map_err(|exceeded| exceeded.to_string())?;
        let hash = hash::built(
            &self.ir[rule.as_usize()],
            &mut built,
            &self.ir,
            &token_sets,
            &budget,
        )
        .map_err(|exceeded| exceeded.to_string())?;
        let order = |callee: u32| self.ir[callee as usize].rule;
        let Body::Automaton(fsm) = &built.body else {
            return Err(format!("rule {rule} is not an automaton"));
        };
        Ok(BuiltRule {
            body: tables::records(fsm, &order),
            lookahead: built
                .lookahead
                .as_ref()
                .map(|fsm| tables::records(fsm, &order)),
            hash: hash.rule,
            automaton_hash: hash.automaton,
            lookahead_hash: hash.lookahead.unwrap_or(0),
        })
    }
}

/// The runtime grammar of a normalized `grammar`, its small automata built
/// on first use; the rest is built here within `budget`, with automata
/// from (and for) `cache`. A grammar with lookahead has every rule built
/// here: whether the mask cache serves a grammar must be known before its
/// first mask.
pub(crate) fn grammar(
    grammar: ir::Grammar,
    budget: &Budget,
    cache: &CompileCache,
) -> Result<Result<Grammar, xg_runtime::tables::TablesError>, Exceeded> {
    let references = match hash::references_of(&grammar, budget) {
        Ok(references) => references,
        Err(exceeded) => {
            free_aside(grammar);
            return Err(exceeded);
        }
    };
    let (ir, token_sets, built) = match build_now(&grammar, &references, budget, cache) {
        Ok(parts) => parts,
        Err(exceeded) => {
            // Out of budget: return now, free the grammar (and the
            // references, a list per rule) aside.
            free_aside((grammar, references));
            return Err(exceeded);
        }
    };
    let laid: Vec<Laid> = grammar
        .rules
        .iter()
        .zip(&built)
        .map(|(rule, built)| match built {
            Some((automata, hash)) => Laid::Built(automata, *hash),
            None => Laid::Pending(&rule.name, rule.capture.as_deref(), rule.limit),
        })
        .collect();
    let order: Vec<u64> = ir.iter().map(|hash| hash.rule).collect();
    let tables = tables::build_partial(grammar.root.as_u32(), &laid, &order, &token_sets);
    drop(laid);
    drop(built);
    let mut callers = vec![Vec::new(); grammar.rules.len()];
    for (caller, callees) in references.iter().enumerate() {
        let Ok(id) = RuleId::new(caller) else {
            continue;
        };
        for &callee in callees {
            callers[callee].push(id);
        }
    }
    let rules = Rules {
        grammar,
        callers,
        ir,
        token_sets,
        cache: cache.clone(),
        memory: budget.limits().memory,
        starts: OnceLock::new(),
        follows: Mutex::default(),
    };
    Ok(Grammar::lazy(tables, Box::new(rules)))
}

/// The automata of a grammar's rules, built on first use, and what is
/// built now.
type BuiltNow = Vec<Option<(fsm::Rule, hash::RuleHash)>>;

/// The IR hashes and token sets of `grammar` (whose rules refer to
/// `references`), and the automata of the rules that must be built now
/// (`None` for the others), within `budget`.
fn build_now(
    grammar: &ir::Grammar,
    references: &[Vec<usize>],
    budget: &Budget,
    cache: &CompileCache,
) -> Result<(Vec<IrHash>, Vec<ir::TokenSet>, BuiltNow), Exceeded> {
    let all_now = grammar.rules.iter().any(|rule| rule.lookahead.is_some());
    let ir = hash::ir_hashes_with(grammar, references, budget)?;
    let mut token_sets = token_sets(grammar, budget)?;
    let mut built = Vec::with_capacity(grammar.rules.len());
    let mut bytes = 0usize;
    for (rule, hashes) in grammar.rules.iter().zip(&ir) {
        let mut now_or_later = || {
            let now = all_now
                || matches!(rule.body, Expr::Dispatch(_) | Expr::TokenDispatch(_))
                || estimated_nodes(&rule.body, budget)? > LAZY_NODES;
            if !now {
                return Ok(None);
            }
            budget.check()?;
            budget.check_memory(bytes)?;
            let mut automata = fsm::build_rule(rule, &mut token_sets, budget, cache)?;
            if let Body::Automaton(fsm) = &automata.body {
                bytes = bytes.saturating_add(fsm::finished_bytes(fsm));
            }
            match hash::built(hashes, &mut automata, &ir, &token_sets, budget) {
                Ok(hash) => Ok(Some((automata, hash))),
                Err(exceeded) => {
                    free_aside(automata);
                    Err(exceeded)
                }
            }
        };
        match now_or_later() {
            Ok(rule) => built.push(rule),
            Err(exceeded) => {
                // Stopped: the automata built so far are freed aside.
                free_aside(built);
                return Err(exceeded);
            }
        }
    }
    Ok((ir, token_sets, built))
}

/// Every token set the grammar's rules use (bodies and lookaheads), each
/// once, in order of first use: the tables hold them all before any
/// automaton is built.
fn token_sets(grammar: &ir::Grammar, budget: &Budget) -> Result<Vec<ir::TokenSet>, Exceeded> {
    let mut sets: Vec<ir::TokenSet> = Vec::new();
    for rule in &grammar.rules {
        let mut open: Vec<&Expr> = std::iter::once(&rule.body)
            .chain(rule.lookahead.as_ref())
            .collect();
        while let Some(expr) = open.pop() {
            budget.spend(1)?;
            match expr {
                Expr::Tokens(set) if !sets.contains(set) => sets.push(set.clone()),
                Expr::Sequence(items) | Expr::Choice(items) => open.extend(items.iter().rev()),
                Expr::Repeat { expr, .. } => open.push(expr),
                Expr::Except(except) => open.push(&except.other),
                _ => {}
            }
        }
    }
    Ok(sets)
}

/// About how many nodes the automaton of `expr` may have: its size with
/// counted repetitions multiplied out (saturating).
fn estimated_nodes(expr: &Expr, budget: &Budget) -> Result<usize, Exceeded> {
    // (expression, how many copies of it the automaton holds)
    let mut open = vec![(expr, 1usize)];
    let mut nodes = 0usize;
    while let Some((expr, copies)) = open.pop() {
        budget.spend(1)?;
        let own = match expr {
            Expr::Bytes(bytes) => bytes.len(),
            Expr::Sequence(items) | Expr::Choice(items) => {
                open.extend(items.iter().map(|item| (item, copies)));
                1
            }
            Expr::Repeat { expr, min, max } => {
                let times = max.unwrap_or(*min).max(*min).max(1) as usize;
                open.push((expr, copies.saturating_mul(times)));
                1
            }
            Expr::Except(except) => {
                open.push((&except.other, copies));
                except.excluded.iter().map(Vec::len).sum()
            }
            Expr::Empty
            | Expr::Class(_)
            | Expr::Ref(_)
            | Expr::RepeatRule { .. }
            | Expr::Tokens(_)
            | Expr::Dispatch(_)
            | Expr::TokenDispatch(_) => 1,
        };
        nodes = nodes.saturating_add(own.saturating_mul(copies));
        if nodes > LAZY_NODES {
            return Ok(nodes);
        }
    }
    Ok(nodes)
}
