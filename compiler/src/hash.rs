//! Structural hashing of rules (after XGrammar 2, §3.3 and Appendix A),
//! from the byte-level IR rather than from the automata.
//!
//! Two rules get the same hash when they have the same structure — the same
//! body and lookahead, referring to rules with the same structure —
//! whatever they are called, whichever grammar they are in, in whatever
//! order the rules were written. The runtime's cross-grammar mask cache keys
//! on these hashes, so equal hashes must mean equal automata, node for node:
//! that is what the construction below guarantees (up to 64-bit
//! collisions).
//!
//! - **From the IR** ([`ir_hashes`]): a rule's hash covers its normalized
//!   body and lookahead, each reference keyed by the referenced rule's hash.
//!   It needs no automaton, so it is known for every rule before any
//!   automaton is built: a rule's automaton can be built when it is first
//!   needed and still sort its edges, and be found in the mask cache, by
//!   the hashes of the rules it calls.
//! - **Order**: rules are hashed leaves first, by strongly connected
//!   components of the reference graph in reverse topological order.
//! - **Cycles**: inside a component, rules are coloured by colour
//!   refinement — first with references inside the component replaced by a
//!   marker, then with them replaced by the previous round's colours (each
//!   rule's own colour mixed in, so every round refines the last) until the
//!   number of distinct colours stops growing — at most `n` rounds for `n`
//!   rules, usually a handful. The partition is then stable: a colour names
//!   a class of rules that unfold alike *within the component*, and the
//!   last round's colours, each a class's structure with its references
//!   named by class, together describe the component's quotient graph. A
//!   rule's hash combines its colour with that description (the set of
//!   last-round colours), so equal hashes mean equal quotient graphs and
//!   the same class in them: the rules unfold into the same infinite
//!   structure, hence the same language, whatever component each is in.
//!   (A colour alone is not enough: two components whose classes are
//!   alike for fewer rounds than refinement took elsewhere — two lists of
//!   items whose items differ two references away — would stop with equal
//!   colours for different rules.) For a simple cycle this is the
//!   rotation-combined hash of Algorithm 2, generalised to any component.
//! - **The automaton itself** ([`built`]): equal IR gives equal automata —
//!   the construction is a function of the body with its references
//!   numbered locally — but only within one build of the compiler. So the
//!   hash the runtime keys on also covers the rule's own automaton as built
//!   (node by node, finality and edges, references by IR hash): a bundle
//!   written by another version never passes its nodes off as this one's.
//! - A rule's hash covers its lookahead; [`RuleHash::automaton`] is the hash
//!   without it (an automaton-only cache hit reuses accepted and rejected
//!   tokens and rechecks the uncertain ones).

use std::collections::BTreeSet;

use xg_runtime::RuleId;

use crate::budget::{Budget, Exceeded};
use crate::fsm::{self, Body, Fsm, Label};
use crate::ir::{self, Expr};

/// The structural hashes of one rule, as the runtime keys on them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RuleHash {
    /// The rule's structure, lookahead included: the cache key.
    pub rule: u64,
    /// The structure of the rule's body alone.
    pub automaton: u64,
    /// The structure of its lookahead, if it has one.
    pub lookahead: Option<u64>,
    /// The hash of its IR ([`IrHash::rule`]): what the edges that call it
    /// are ordered by, known before its automaton is built.
    pub ir: u64,
}

/// The hashes of one rule's IR: what it matches, with the rules it refers
/// to, but not how its automaton is numbered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IrHash {
    /// Body and lookahead: equal for rules that unfold alike.
    pub rule: u64,
    /// The body alone.
    pub body: u64,
    /// The lookahead alone, if the rule has one.
    pub lookahead: Option<u64>,
}

/// Hashes every rule of `grammar` and of its automata (`automata`, built
/// from `grammar`) — [`ir_hashes`], then [`built`] per rule — and numbers
/// every automaton's nodes canonically. Indexed by rule id; checks
/// `budget` as it goes.
pub fn hash(
    grammar: &ir::Grammar,
    automata: &mut fsm::Grammar,
    budget: &Budget,
) -> Result<Vec<RuleHash>, Exceeded> {
    let ir = ir_hashes(grammar, budget)?;
    let fsm::Grammar {
        rules, token_sets, ..
    } = automata;
    rules
        .iter_mut()
        .zip(&ir)
        .map(|(rule, hash)| built(hash, rule, &ir, token_sets, budget))
        .collect()
}

/// The hashes of every rule's IR, indexed by rule id; checks `budget` per
/// component of the reference graph.
pub fn ir_hashes(grammar: &ir::Grammar, budget: &Budget) -> Result<Vec<IrHash>, Exceeded> {
    ir_hashes_with(grammar, &references_of(grammar, budget)?, budget)
}

/// Per rule, the rules it refers to (body and lookahead), by index.
/// Spends a unit of `budget` per expression node.
pub(crate) fn references_of(
    grammar: &ir::Grammar,
    budget: &Budget,
) -> Result<Vec<Vec<usize>>, Exceeded> {
    grammar
        .rules
        .iter()
        .map(|rule| references(rule, budget))
        .collect()
}

/// [`ir_hashes`] with the grammar's [`references_of`] known.
pub(crate) fn ir_hashes_with(
    grammar: &ir::Grammar,
    references: &[Vec<usize>],
    budget: &Budget,
) -> Result<Vec<IrHash>, Exceeded> {
    let mut hashes: Vec<Option<IrHash>> = vec![None; grammar.rules.len()];
    for component in xg_runtime::strongly_connected_components(references) {
        // Hashing spends per node; the clock is read once per batch.
        budget.spend(component.len())?;
        let cyclic = component.len() > 1 || references[component[0]].contains(&component[0]);
        if !cyclic {
            // Every reference is to a rule hashed already.
            let r = component[0];
            let key = |target: usize| hashes[target].map_or(INSIDE_MARKER, |h| h.rule);
            let (body, lookahead) = parts(&grammar.rules[r], &key, budget)?;
            hashes[r] = Some(IrHash {
                rule: combine(body, lookahead.unwrap_or(NO_LOOKAHEAD)),
                body,
                lookahead,
            });
            continue;
        }
        let colours = component_colours(grammar, &hashes, &component, budget)?;
        let quotient = quotient_hash(&colours);
        for (&r, &colour) in component.iter().zip(&colours) {
            let (body, lookahead) = parts(
                &grammar.rules[r],
                &|target| key_of(&hashes, &component, &colours, target),
                budget,
            )?;
            hashes[r] = Some(IrHash {
                rule: combine(quotient, colour),
                body,
                lookahead,
            });
        }
    }
    Ok(hashes
        .into_iter()
        .map(|h| h.expect("every rule is in a component"))
        .collect())
}

/// The hashes of `rule` as built, from its IR hashes `ir`: each part
/// combined with its automaton's structure — references keyed by the IR
/// hashes `all` (indexed by rule id), token sets by their ids in
/// `token_sets` — and each automaton renumbered in its canonical order.
pub fn built(
    ir: &IrHash,
    rule: &mut fsm::Rule,
    all: &[IrHash],
    token_sets: &[ir::TokenSet],
    budget: &Budget,
) -> Result<RuleHash, Exceeded> {
    let key = |label: Label| label_key(label, all, token_sets);
    let canonical = |fsm: &mut Fsm| {
        let (hash, order) = automaton_hash(fsm, &key, budget)?;
        renumber(fsm, &order, budget)?;
        Ok(hash)
    };
    let body = match &mut rule.body {
        Body::Automaton(fsm) => canonical(fsm)?,
        // A dispatch's structure is all in its IR hash.
        Body::Dispatch(_) | Body::TokenDispatch(_) => DISPATCH_SHAPE,
    };
    let lookahead = rule.lookahead.as_mut().map(canonical).transpose()?;
    Ok(RuleHash {
        rule: combine(combine(ir.rule, body), lookahead.unwrap_or(NO_LOOKAHEAD)),
        automaton: combine(ir.body, body),
        lookahead: ir
            .lookahead
            .zip(lookahead)
            .map(|(ir, shape)| combine(ir, shape)),
        ir: ir.rule,
    })
}

/// The colours of a cyclic component's rules (sorted indices). Round 0
/// keys references inside the component by a marker; the colours are then
/// refined — each rule's colour mixed with its hash under the previous
/// round's colours — until the number of distinct colours stops growing
/// (at most `n` rounds for `n` rules; isomorphic components take the same
/// rounds, so get the same colours).
fn component_colours(
    grammar: &ir::Grammar,
    hashes: &[Option<IrHash>],
    component: &[usize],
    budget: &Budget,
) -> Result<Vec<u64>, Exceeded> {
    let markers = vec![INSIDE_MARKER; component.len()];
    let local = |r: usize, colours: &[u64]| {
        let (body, lookahead) = parts(
            &grammar.rules[r],
            &|t| key_of(hashes, component, colours, t),
            budget,
        )?;
        Ok(combine(body, lookahead.unwrap_or(NO_LOOKAHEAD)))
    };
    let mut colours: Vec<u64> = component
        .iter()
        .map(|&r| local(r, &markers))
        .collect::<Result<_, Exceeded>>()?;
    let mut distinct = distinct_count(&colours);
    for _ in 0..component.len() {
        budget.spend(component.len())?;
        let next: Vec<u64> = component
            .iter()
            .zip(&colours)
            .map(|(&r, &own)| Ok(combine(own, local(r, &colours)?)))
            .collect::<Result<_, Exceeded>>()?;
        let count = distinct_count(&next);
        colours = next;
        if count == distinct {
            break;
        }
        distinct = count;
    }
    Ok(colours)
}

/// The description of a component's quotient graph from its stable
/// colours: the set of them, each a class's structure with its references
/// named by class (see the module docs).
fn quotient_hash(colours: &[u64]) -> u64 {
    let mut classes = colours.to_vec();
    classes.sort_unstable();
    classes.dedup();
    classes.into_iter().fold(QUOTIENT_SEED, combine)
}

fn distinct_count(colours: &[u64]) -> usize {
    let mut sorted = colours.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    sorted.len()
}

/// The key a reference to `target` contributes: its colour if it is in the
/// component (sorted rule indices, `colours` in the same order), else its
/// final hash.
fn key_of(hashes: &[Option<IrHash>], component: &[usize], colours: &[u64], target: usize) -> u64 {
    match component.binary_search(&target) {
        Ok(i) => colours[i],
        Err(_) => hashes[target].map_or(INSIDE_MARKER, |h| h.rule),
    }
}

const INSIDE_MARKER: u64 = 0x9E37_79B9_7F4A_7C15;
const QUOTIENT_SEED: u64 = 0xD6E8_FEB8_6659_FD93;
const NO_LOOKAHEAD: u64 = 0x2545_F491_4F6C_DD1D;
const DISPATCH_SHAPE: u64 = 0x5851_F42D_4C95_7F2D;

/// The hashes of a rule's body and lookahead, references keyed by `key`;
/// spends a unit of `budget` per node.
fn parts(
    rule: &ir::Rule,
    key: &dyn Fn(usize) -> u64,
    budget: &Budget,
) -> Result<(u64, Option<u64>), Exceeded> {
    // A rule's limits (`[max_tokens=N]`) are not part of it: the mask cache
    // holds what the grammar without its limits allows, the same for
    // every count, and the matcher applies the limits after.
    Ok((
        expr_hash(&rule.body, key, budget)?,
        (rule.lookahead.as_ref())
            .map(|la| expr_hash(la, key, budget))
            .transpose()?,
    ))
}

/// An expression's hash, references keyed by `key`: each node's kind and
/// fields combined with its children's hashes — in order, but for a
/// choice, whose order does not change what it matches (nor its minimal
/// automaton). Walked with a stack of its own: bodies may be deep.
fn expr_hash(expr: &Expr, key: &dyn Fn(usize) -> u64, budget: &Budget) -> Result<u64, Exceeded> {
    enum Step<'e> {
        Enter(&'e Expr),
        /// The node and how many children it has.
        Exit(&'e Expr, usize),
    }
    let mut steps = vec![Step::Enter(expr)];
    let mut values: Vec<u64> = Vec::new();
    while let Some(step) = steps.pop() {
        match step {
            Step::Enter(expr) => {
                budget.spend(1)?;
                let exit = steps.len();
                steps.push(Step::Exit(expr, 0));
                match expr {
                    Expr::Sequence(items) | Expr::Choice(items) => {
                        steps.extend(items.iter().map(Step::Enter));
                    }
                    Expr::Repeat { expr, .. } => steps.push(Step::Enter(expr)),
                    Expr::Except(except) => steps.push(Step::Enter(&except.other)),
                    Expr::Dispatch(dispatch) => {
                        steps.extend(dispatch.arms.iter().map(|(_, arm)| Step::Enter(arm)));
                    }
                    Expr::TokenDispatch(dispatch) => {
                        steps.extend(dispatch.arms.iter().map(|(_, arm)| Step::Enter(arm)));
                    }
                    Expr::Empty
                    | Expr::Bytes(_)
                    | Expr::Class(_)
                    | Expr::Ref(_)
                    | Expr::RepeatRule { .. }
                    | Expr::Tokens(_) => {}
                }
                let count = steps.len() - exit - 1;
                steps[exit] = Step::Exit(expr, count);
                // Children are taken first to last.
                steps[exit + 1..].reverse();
            }
            Step::Exit(expr, count) => {
                // The children's hashes are the last `count` values.
                let below = values.len() - count;
                if matches!(expr, Expr::Choice(_)) {
                    values[below..].sort_unstable();
                }
                let own = node_hash(expr, key);
                let hash = values[below..].iter().fold(own, |h, &v| combine(h, v));
                values.truncate(below);
                values.push(hash);
            }
        }
    }
    Ok(values.pop().expect("the root's hash"))
}

/// What an expression node is, apart from its children: kind, sizes and
/// fields, references keyed by `key`.
fn node_hash(expr: &Expr, key: &dyn Fn(usize) -> u64) -> u64 {
    let class = |h: u64, set: &ir::ByteSet| set.words().into_iter().fold(h, combine);
    let strings = |h: u64, strings: &[Vec<u8>]| {
        strings
            .iter()
            .fold(combine(h, strings.len() as u64), |h, s| {
                combine(h, bytes_hash(s))
            })
    };
    match expr {
        Expr::Empty => 1,
        Expr::Bytes(bytes) => combine(2, bytes_hash(bytes)),
        Expr::Class(set) => class(3, set),
        Expr::Sequence(items) => combine(4, items.len() as u64),
        Expr::Choice(items) => combine(5, items.len() as u64),
        Expr::Repeat { min, max, .. } => combine(combine(6, u64::from(*min)), bound(*max)),
        Expr::Ref(rule) => combine(7, key(rule.as_usize())),
        Expr::RepeatRule { rule, min, max } => combine(
            combine(combine(8, key(rule.as_usize())), u64::from(*min)),
            bound(*max),
        ),
        Expr::Dispatch(dispatch) => {
            let flags = u64::from(dispatch.repeat) | u64::from(dispatch.stop_at_end) << 1;
            let triggers: Vec<Vec<u8>> = dispatch.arms.iter().map(|(t, _)| t.clone()).collect();
            let h = strings(combine(9, flags), &triggers);
            strings(strings(h, &dispatch.stop), &dispatch.exclude)
        }
        Expr::Tokens(set) => combine(10, token_set_hash(set)),
        Expr::TokenDispatch(dispatch) => {
            let h = combine(11, u64::from(dispatch.repeat));
            let h = (dispatch.arms.iter())
                .fold(combine(h, dispatch.arms.len() as u64), |h, (t, _)| {
                    combine(h, u64::from(t.as_u32()))
                });
            (dispatch.exclude.iter()).fold(combine(h, dispatch.exclude.len() as u64), |h, t| {
                combine(h, u64::from(t.as_u32()))
            })
        }
        Expr::Except(except) => strings(class(12, &except.plain), &except.excluded),
    }
}

/// Algorithm 1: breadth first over sorted edges, hashing finality, labels and
/// target numbers. Returns the hash and the order the nodes were reached in.
fn automaton_hash(
    fsm: &Fsm,
    key: &dyn Fn(Label) -> u64,
    budget: &Budget,
) -> Result<(u64, Vec<u32>), Exceeded> {
    let mut keyed = KeyedEdges::of(fsm, key, budget)?;
    if keyed.tied {
        let colours = node_colours(fsm, &keyed, budget)?;
        keyed.break_ties(&colours);
    }
    let order = keyed.canonical_order(budget)?;
    let mut number = vec![0u64; fsm.nodes.len()];
    for (position, &node) in order.iter().enumerate() {
        number[node as usize] = position as u64;
    }
    let mut h = combine(3, fsm.nodes.len() as u64);
    for &node in &order {
        budget.spend(1 + keyed.at(node).len())?;
        h = combine(h, u64::from(fsm.nodes[node as usize].is_final));
        for &(_, label, _, target) in keyed.at(node) {
            h = combine(combine(h, label), number[target as usize]);
        }
    }
    Ok((h, order))
}

/// Every node's edges as `(not bytes, label key, target colour, target)`,
/// sorted: byte edges first in byte order, then the others by key; ties by
/// the targets' colours. Keyed and sorted once for the colours, the order
/// and the hash.
struct KeyedEdges {
    /// Node `n`'s edges are `edges[starts[n]..starts[n + 1]]`.
    starts: Vec<usize>,
    edges: Vec<(bool, u64, u64, u32)>,
    /// Whether some node has two edges with the same key to different
    /// targets (colours must break the tie).
    tied: bool,
}

impl KeyedEdges {
    /// The edges with colours all zero.
    fn of(fsm: &Fsm, key: &dyn Fn(Label) -> u64, budget: &Budget) -> Result<Self, Exceeded> {
        let mut starts = Vec::with_capacity(fsm.nodes.len() + 1);
        let mut edges = Vec::with_capacity(fsm.edge_count());
        let mut tied = false;
        for node in &fsm.nodes {
            budget.spend(1 + node.edges.len())?;
            let first = edges.len();
            starts.push(first);
            edges.extend(node.edges.iter().map(|edge| {
                let is_bytes = matches!(edge.label, Label::Bytes { .. });
                (!is_bytes, key(edge.label), 0, edge.target)
            }));
            let own = &mut edges[first..];
            own.sort_unstable();
            tied |= own
                .windows(2)
                .any(|pair| pair[0].1 == pair[1].1 && pair[0].3 != pair[1].3);
        }
        starts.push(edges.len());
        Ok(Self {
            starts,
            edges,
            tied,
        })
    }

    /// Node `node`'s edges.
    fn at(&self, node: u32) -> &[(bool, u64, u64, u32)] {
        &self.edges[self.starts[node as usize]..self.starts[node as usize + 1]]
    }

    /// Sorts each node's edges again with its targets' `colours`.
    fn break_ties(&mut self, colours: &[u64]) {
        for edge in &mut self.edges {
            edge.2 = colours[edge.3 as usize];
        }
        for node in self.starts.windows(2) {
            self.edges[node[0]..node[1]].sort_unstable();
        }
    }

    /// Nodes in breadth-first order from the start over sorted edges.
    fn canonical_order(&self, budget: &Budget) -> Result<Vec<u32>, Exceeded> {
        let mut seen = vec![false; self.starts.len() - 1];
        let mut order = vec![0u32];
        seen[0] = true;
        let mut next = 0;
        while next < order.len() {
            let node = order[next];
            next += 1;
            budget.spend(1 + self.at(node).len())?;
            for &(_, _, _, target) in self.at(node) {
                if !seen[target as usize] {
                    seen[target as usize] = true;
                    order.push(target);
                }
            }
        }
        Ok(order)
    }
}

/// Colours of an automaton's nodes from refinement until stable: start by
/// finality, then repeatedly mix in the sorted `(label, target colour)` pairs.
/// Isomorphic automata get the same colours on corresponding nodes, so
/// colours break ties between edges whose labels have equal keys (two
/// references to rules of the same structure) in a way that does not depend
/// on how nodes happen to be numbered.
/// When no node has two edges with equal keys to different targets (the
/// common case: byte edges of a deterministic automaton), colours are not
/// needed and [`automaton_hash`] skips the refinement.
///
/// Refinement takes up to one round per node on a chain (the automaton a
/// long pattern keeps when determinization gives up), so the rounds stop
/// at [`COLOUR_WORK`] node visits in all. Colours only order ties; the hash
/// covers every node and edge whatever the order, so colours that stopped
/// early can only give two numberings of one automaton different hashes
/// (less sharing), never two automata one hash.
fn node_colours(fsm: &Fsm, keyed: &KeyedEdges, budget: &Budget) -> Result<Vec<u64>, Exceeded> {
    let mut colours: Vec<u64> = fsm.nodes.iter().map(|n| u64::from(n.is_final)).collect();
    let mut distinct = 0;
    let mut rounds = (COLOUR_WORK / fsm.nodes.len().max(1)).max(MIN_COLOUR_ROUNDS);
    let mut pairs: Vec<(u64, u64)> = Vec::new();
    loop {
        if rounds == 0 {
            return Ok(colours);
        }
        rounds -= 1;
        let next: Vec<u64> = (0..fsm.nodes.len())
            .map(|node| {
                let edges = keyed.at(u32::try_from(node).expect("node ids fit"));
                budget.spend(1 + edges.len())?;
                pairs.clear();
                pairs.extend(
                    edges
                        .iter()
                        .map(|&(_, label, _, target)| (label, colours[target as usize])),
                );
                pairs.sort_unstable();
                Ok(pairs.iter().fold(colours[node], |h, &(label, target)| {
                    combine(combine(h, label), target)
                }))
            })
            .collect::<Result<_, Exceeded>>()?;
        let count = next.iter().collect::<BTreeSet<_>>().len();
        colours = next;
        if count == distinct {
            return Ok(colours);
        }
        distinct = count;
    }
}

/// The node visits colour refinement may make in one automaton (see
/// [`node_colours`]): full refinement for automata up to thousands of
/// nodes, a bounded number of rounds beyond.
const COLOUR_WORK: usize = 1 << 22;

/// The rounds of colour refinement every automaton gets.
const MIN_COLOUR_ROUNDS: usize = 16;

/// Renumbers `fsm`'s nodes in `order` (a canonical order: start first).
fn renumber(fsm: &mut Fsm, order: &[u32], budget: &Budget) -> Result<(), Exceeded> {
    let mut number = vec![0u32; fsm.nodes.len()];
    for (position, &node) in order.iter().enumerate() {
        number[node as usize] = u32::try_from(position).expect("node ids fit");
    }
    let mut old = std::mem::take(&mut fsm.nodes);
    let mut nodes: Vec<fsm::Node> = order
        .iter()
        .map(|&n| std::mem::take(&mut old[n as usize]))
        .collect();
    for node in &mut nodes {
        budget.spend(1 + node.edges.len())?;
        for edge in &mut node.edges {
            edge.target = number[edge.target as usize];
        }
        node.edges.sort_unstable();
    }
    fsm.nodes = nodes;
    Ok(())
}

/// A label's sort and hash key: bytes by value, references by the IR
/// hash of the rule, token sets by their ids.
fn label_key(label: Label, all: &[IrHash], token_sets: &[ir::TokenSet]) -> u64 {
    let rule = |rule: RuleId| all[rule.as_usize()].rule;
    match label {
        Label::Bytes { lo, hi } => u64::from(lo) << 8 | u64::from(hi),
        Label::Rule(target) => combine(0x1_0000, rule(target)),
        Label::Repeat {
            rule: target,
            min,
            max,
        } => combine(
            combine(combine(0x2_0000, rule(target)), u64::from(min)),
            bound(max),
        ),
        Label::Tokens(index) => token_set_hash(&token_sets[index as usize]),
        Label::Epsilon => 0x4_0000,
    }
}

fn bound(max: Option<u32>) -> u64 {
    max.map_or(u64::MAX, u64::from)
}

fn token_set_hash(set: &ir::TokenSet) -> u64 {
    set.ids
        .iter()
        .fold(combine(0x3_0000, u64::from(set.negated)), |h, id| {
            combine(h, u64::from(id.as_u32()))
        })
}

/// The rules `rule` refers to (body and lookahead), by index.
fn references(rule: &ir::Rule, budget: &Budget) -> Result<Vec<usize>, Exceeded> {
    let mut out = Vec::new();
    let mut open: Vec<&Expr> = std::iter::once(&rule.body)
        .chain(rule.lookahead.as_ref())
        .collect();
    while let Some(expr) = open.pop() {
        budget.spend(1)?;
        match expr {
            Expr::Ref(target) | Expr::RepeatRule { rule: target, .. } => {
                out.push(target.as_usize());
            }
            Expr::Sequence(items) | Expr::Choice(items) => open.extend(items),
            Expr::Repeat { expr, .. } => open.push(expr),
            Expr::Dispatch(dispatch) => open.extend(dispatch.arms.iter().map(|(_, arm)| arm)),
            Expr::TokenDispatch(dispatch) => {
                open.extend(dispatch.arms.iter().map(|(_, arm)| arm));
            }
            Expr::Except(except) => open.push(&except.other),
            Expr::Empty | Expr::Bytes(_) | Expr::Class(_) | Expr::Tokens(_) => {}
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}
/// Mixes `value` into `state`; not commutative, so order matters.
fn combine(state: u64, value: u64) -> u64 {
    // splitmix64's finalizer over a multiply-xor of the two.
    let mut z =
        state.wrapping_mul(0xBF58_476D_1CE4_E5B9) ^ value.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn bytes_hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(combine(4, bytes.len() as u64), |h, &b| {
        combine(h, u64::from(b))
    })
}
