//! Thompson construction from the normalized IR, then epsilon removal.

use rustc_hash::FxHashMap;

use super::{Edge, Fsm, Label, Node, node_id};
use crate::budget::{Budget, Exceeded};
use crate::ir::{Except, Expr, TokenSet};

/// The epsilon-free automaton of `expr`, trimmed to the nodes that are both
/// reachable and able to reach a final node. Token sets used by the
/// expression are appended to `token_sets` (equal sets shared). Checks
/// `budget` as nodes are made.
pub(super) fn build(
    expr: &Expr,
    token_sets: &mut Vec<TokenSet>,
    budget: &Budget,
) -> Result<Fsm, Exceeded> {
    let mut builder = Builder {
        finals: Vec::new(),
        edges: Vec::new(),
        token_sets,
        budget,
        exceeded: None,
    };
    let start = builder.node();
    let end = builder.expr(expr, start);
    if let Some(exceeded) = builder.exceeded {
        return Err(exceeded);
    }
    builder.finals[end as usize] = true;
    let built = Graph::new(builder.finals, &builder.edges);
    let epsilon_free = if builder
        .edges
        .iter()
        .any(|(_, edge)| edge.label == Label::Epsilon)
    {
        remove_epsilons(&built, budget)?
    } else {
        built
    };
    budget.check()?;
    trim(&epsilon_free, budget)
}

/// An automaton as flat arrays (no allocation per node, as an [`Fsm`]
/// has): node `n`'s edges are `edges[first[n]..first[n + 1]]`.
struct Graph {
    finals: Vec<bool>,
    first: Vec<u32>,
    edges: Vec<Edge>,
}

impl Graph {
    /// The graph of the nodes `0..finals.len()` and the edges `(tail,
    /// edge)`, each node's edges in the order given.
    fn new(finals: Vec<bool>, edges: &[(u32, Edge)]) -> Self {
        let count = finals.len();
        let mut first = vec![0u32; count + 1];
        for &(tail, _) in edges {
            first[tail as usize + 1] += 1;
        }
        for n in 0..count {
            first[n + 1] += first[n];
        }
        let mut fill = first.clone();
        let placeholder = Edge {
            label: Label::Epsilon,
            target: 0,
        };
        let mut sorted = vec![placeholder; edges.len()];
        for &(tail, edge) in edges {
            let at = &mut fill[tail as usize];
            sorted[*at as usize] = edge;
            *at += 1;
        }
        Self {
            finals,
            first,
            edges: sorted,
        }
    }

    fn len(&self) -> usize {
        self.finals.len()
    }

    fn edges(&self, node: u32) -> &[Edge] {
        &self.edges[self.first[node as usize] as usize..self.first[node as usize + 1] as usize]
    }
}

struct Builder<'a> {
    /// Per node, whether it is final.
    finals: Vec<bool>,
    /// Every edge with its tail, in the order made.
    edges: Vec<(u32, Edge)>,
    token_sets: &'a mut Vec<TokenSet>,
    budget: &'a Budget,
    /// Set when the budget ran out: choices and repetitions stop adding.
    exceeded: Option<Exceeded>,
}

impl Builder<'_> {
    fn node(&mut self) -> u32 {
        self.finals.push(false);
        let nodes = self.finals.len();
        if self.exceeded.is_none()
            && let Err(exceeded) = self.budget.spend(1).and_then(|()| {
                if nodes.is_multiple_of(super::MEMORY_STRIDE) {
                    self.budget
                        .check_memory(super::building_bytes(nodes, self.edges.len()))
                } else {
                    Ok(())
                }
            })
        {
            self.exceeded = Some(exceeded);
        }
        node_id(nodes - 1)
    }

    fn edge(&mut self, from: u32, label: Label, target: u32) {
        self.edges.push((from, Edge { label, target }));
    }

    /// Adds the automaton of `expr` starting at `from`; returns its end node.
    fn expr(&mut self, expr: &Expr, from: u32) -> u32 {
        match expr {
            Expr::Empty => from,
            Expr::Bytes(bytes) => bytes.iter().fold(from, |at, &byte| {
                let next = self.node();
                self.edge(at, Label::Bytes { lo: byte, hi: byte }, next);
                next
            }),
            Expr::Class(set) => {
                let to = self.node();
                for (lo, hi) in set.ranges() {
                    self.edge(from, Label::Bytes { lo, hi }, to);
                }
                to
            }
            Expr::Sequence(items) => items.iter().fold(from, |at, item| self.expr(item, at)),
            Expr::Choice(items) => {
                let to = self.node();
                self.choice_to(items, from, to);
                to
            }
            Expr::Repeat { expr, min, max } => self.repeat(expr, *min, *max, from),
            Expr::RepeatRule { rule, min, max } => {
                let to = self.node();
                let label = Label::Repeat {
                    rule: *rule,
                    min: *min,
                    max: *max,
                };
                self.edge(from, label, to);
                to
            }
            Expr::Ref(rule) => {
                let to = self.node();
                self.edge(from, Label::Rule(*rule), to);
                to
            }
            Expr::Tokens(set) => {
                let index = match self.token_sets.iter().position(|s| s == set) {
                    Some(index) => index,
                    None => {
                        self.token_sets.push(set.clone());
                        self.token_sets.len() - 1
                    }
                };
                let to = self.node();
                let index = u32::try_from(index).expect("token sets stay below 2^32");
                self.edge(from, Label::Tokens(index), to);
                to
            }
            Expr::Except(except) => self.except(except, from, &mut FxHashMap::default()),
            // `normalize` gives every dispatch a rule of its own, whose body
            // is not built here; a nested one matches nothing.
            Expr::Dispatch(_) | Expr::TokenDispatch(_) => self.node(),
        }
    }

    /// Adds the automaton of `expr` from `from` to the existing node `to`
    /// (a choice's shared end): the last edges of literals, classes and
    /// sequences lead to `to` itself, so a choice of many alternatives
    /// (a Unicode class has hundreds) adds no epsilon edges, which epsilon
    /// removal would multiply by the edges leaving `to`.
    fn expr_to(&mut self, expr: &Expr, from: u32, to: u32) {
        match expr {
            Expr::Bytes(bytes) if !bytes.is_empty() => {
                let (&last, init) = bytes.split_last().expect("not empty");
                let at = self.expr(&Expr::Bytes(init.to_vec()), from);
                self.edge(at, Label::Bytes { lo: last, hi: last }, to);
            }
            Expr::Class(set) => {
                for (lo, hi) in set.ranges() {
                    self.edge(from, Label::Bytes { lo, hi }, to);
                }
            }
            Expr::Sequence(items) if !items.is_empty() => self.sequence_to(items, from, to),
            Expr::Choice(items) => self.choice_to(items, from, to),
            expr => {
                let end = self.expr(expr, from);
                self.edge(end, Label::Epsilon, to);
            }
        }
    }

    /// Adds the sequence `items` (not empty) from `from` to `to`.
    fn sequence_to(&mut self, items: &[Expr], from: u32, to: u32) {
        let (last, init) = items.split_last().expect("not empty");
        let at = init.iter().fold(from, |at, item| self.expr(item, at));
        self.expr_to(last, at, to);
    }

    /// The node `byte` leads to from `node` in `trie` (by parent and byte),
    /// made with its edge if there is none yet.
    fn trie_child(&mut self, trie: &mut FxHashMap<(u32, u8), u32>, node: u32, byte: u8) -> u32 {
        if let Some(&child) = trie.get(&(node, byte)) {
            return child;
        }
        let child = self.node();
        self.edge(node, Label::Bytes { lo: byte, hi: byte }, child);
        trie.insert((node, byte), child);
        child
    }

    /// Adds a choice's alternatives from `from` to `to`. Those that begin
    /// with literal bytes go down one trie of these bytes, so the choice
    /// is deterministic where they differ: a JSON object's members and an
    /// enum's strings all begin with `"`, and merging thousands of such
    /// alternatives was left to subset construction. An [`Except`] right
    /// after the bytes (an object's other property names) builds its trie
    /// in the same one: the declared names' members go on from its nodes,
    /// where it neither ends nor leaves by their bytes.
    fn choice_to(&mut self, items: &[Expr], from: u32, to: u32) {
        let mut trie: FxHashMap<(u32, u8), u32> = FxHashMap::default();
        for item in items {
            if self.exceeded.is_some() {
                break;
            }
            let (lead, rest): (&[u8], &[Expr]) = match item {
                Expr::Bytes(bytes) => (bytes, &[]),
                Expr::Sequence(items) => match items.split_first() {
                    Some((Expr::Bytes(bytes), rest)) => (bytes, rest),
                    _ => (&[], &[]),
                },
                _ => (&[], &[]),
            };
            if lead.is_empty() {
                self.expr_to(item, from, to);
                continue;
            }
            let mut at = from;
            for &byte in lead {
                at = self.trie_child(&mut trie, at, byte);
            }
            let (at, rest) = match rest.split_first() {
                Some((Expr::Except(except), rest)) => (self.except(except, at, &mut trie), rest),
                _ => (at, rest),
            };
            if rest.is_empty() {
                self.edge(at, Label::Epsilon, to);
            } else {
                self.sequence_to(rest, at, to);
            }
        }
    }

    /// Adds the trie of `except`'s excluded strings from `from` (see
    /// [`Except`]), built without recursion; returns its end. Each trie
    /// node ends (unless a string ends there), goes down by the next byte
    /// of some string, or leaves for one loop over units by another plain
    /// byte or by `other` (built once, entered from every node by an
    /// epsilon edge: one edge per node when it is a reference). Trie nodes
    /// are looked up in and added to `trie` (by parent and byte).
    fn except(&mut self, except: &Except, from: u32, trie: &mut FxHashMap<(u32, u8), u32>) -> u32 {
        let end = self.node();
        let rest = self.node();
        for (lo, hi) in except.plain.ranges() {
            self.edge(rest, Label::Bytes { lo, hi }, rest);
        }
        let other = self.node();
        self.expr_to(&except.other, other, rest);
        self.edge(rest, Label::Epsilon, other);
        self.edge(rest, Label::Epsilon, end);
        let mut pending = vec![(from, &except.excluded[..], 0)];
        while let Some((node, strings, depth)) = pending.pop() {
            if self.exceeded.is_some() {
                break;
            }
            let ends_here = strings.iter().take_while(|s| s.len() == depth).count();
            if ends_here == 0 {
                self.edge(node, Label::Epsilon, end);
            }
            let mut leave = except.plain;
            let mut below = &strings[ends_here..];
            while let Some(first) = below.first() {
                let byte = first[depth];
                let run = below.iter().take_while(|s| s[depth] == byte).count();
                leave = leave.without(byte);
                let child = self.trie_child(trie, node, byte);
                pending.push((child, &below[..run], depth + 1));
                below = &below[run..];
            }
            for (lo, hi) in leave.ranges() {
                self.edge(node, Label::Bytes { lo, hi }, rest);
            }
            self.edge(node, Label::Epsilon, other);
        }
        end
    }

    fn repeat(&mut self, expr: &Expr, min: u32, max: Option<u32>, from: u32) -> u32 {
        let mut at = from;
        for _ in 0..min {
            if self.exceeded.is_some() {
                return at;
            }
            at = self.expr(expr, at);
        }
        match max {
            None => {
                // x*: a loop through a fresh node.
                let hub = self.node();
                self.edge(at, Label::Epsilon, hub);
                let end = self.expr(expr, hub);
                self.edge(end, Label::Epsilon, hub);
                hub
            }
            Some(max) => {
                let exit = self.node();
                for _ in min..max {
                    if self.exceeded.is_some() {
                        break;
                    }
                    self.edge(at, Label::Epsilon, exit);
                    at = self.expr(expr, at);
                }
                self.edge(at, Label::Epsilon, exit);
                exit
            }
        }
    }
}

/// The same automaton without epsilon edges: each node gets the edges and
/// finality of its epsilon closure. Only the start and the nodes a
/// non-epsilon edge leads to are kept (numbered in order of first reach):
/// the others — a choice's shared end, a loop's hub — are entered only
/// through their closures, and building their edges only to drop them
/// took as long as the rest. `budget` is checked as nodes are made.
fn remove_epsilons(graph: &Graph, budget: &Budget) -> Result<Graph, Exceeded> {
    // `seen[n] == stamp` marks the nodes of the current closure, so one
    // array serves every node's search.
    let mut seen = vec![u32::MAX; graph.len()];
    let mut number = vec![u32::MAX; graph.len()];
    let mut order = vec![0u32];
    number[0] = 0;
    let mut stack = Vec::new();
    let mut closure = Vec::new();
    let mut finals = Vec::new();
    let mut first = vec![0u32];
    let mut edges: Vec<Edge> = Vec::new();
    while let Some(&stamp) = order.get(finals.len()) {
        budget.spend(1)?;
        closure.clear();
        stack.push(stamp);
        seen[stamp as usize] = stamp;
        while let Some(node) = stack.pop() {
            closure.push(node);
            budget.spend(graph.edges(node).len())?;
            for edge in graph.edges(node) {
                if edge.label == Label::Epsilon && seen[edge.target as usize] != stamp {
                    seen[edge.target as usize] = stamp;
                    stack.push(edge.target);
                }
            }
        }
        let start = edges.len();
        for &n in &closure {
            for edge in graph.edges(n) {
                if edge.label == Label::Epsilon {
                    continue;
                }
                let target = &mut number[edge.target as usize];
                if *target == u32::MAX {
                    *target = node_id(order.len());
                    order.push(edge.target);
                }
                edges.push(Edge {
                    label: edge.label,
                    target: *target,
                });
            }
        }
        edges[start..].sort_unstable();
        let kept = dedup_in_place(&mut edges[start..]);
        edges.truncate(start + kept);
        first.push(node_id(edges.len()));
        finals.push(closure.iter().any(|&n| graph.finals[n as usize]));
    }
    Ok(Graph {
        finals,
        first,
        edges,
    })
}

/// Moves the distinct items of the sorted `items` to its front; returns
/// how many there are.
fn dedup_in_place(items: &mut [Edge]) -> usize {
    let mut kept = 0;
    for at in 0..items.len() {
        if kept == 0 || items[at] != items[kept - 1] {
            items[kept] = items[at];
            kept += 1;
        }
    }
    kept
}

/// Keeps the nodes reachable from node 0 that can reach a final node,
/// renumbered in order of first reach; node 0 stays the start.
fn trim(graph: &Graph, budget: &Budget) -> Result<Fsm, Exceeded> {
    let count = graph.len();
    // The edges reversed, by target: `sources[starts[n]..starts[n + 1]]`
    // lead into node n (one buffer, not one per node).
    let mut starts = vec![0u32; count + 1];
    for edge in &graph.edges {
        starts[edge.target as usize + 1] += 1;
    }
    for n in 0..count {
        starts[n + 1] += starts[n];
    }
    let mut sources = vec![0u32; starts[count] as usize];
    let mut fill = starts.clone();
    for from in 0..count {
        budget.spend(1 + graph.edges(node_id(from)).len())?;
        for edge in graph.edges(node_id(from)) {
            let at = &mut fill[edge.target as usize];
            sources[*at as usize] = node_id(from);
            *at += 1;
        }
    }
    let mut alive = vec![false; count];
    let mut stack: Vec<u32> = (0..count)
        .filter(|&n| graph.finals[n])
        .map(node_id)
        .collect();
    for &n in &stack {
        alive[n as usize] = true;
    }
    while let Some(node) = stack.pop() {
        let into = starts[node as usize] as usize..starts[node as usize + 1] as usize;
        budget.spend(1 + into.len())?;
        for &from in &sources[into] {
            if !alive[from as usize] {
                alive[from as usize] = true;
                stack.push(from);
            }
        }
    }
    let mut number = vec![u32::MAX; count];
    let mut order = vec![0u32];
    number[0] = 0;
    let mut next = 0;
    while next < order.len() {
        let node = order[next];
        next += 1;
        budget.spend(1 + graph.edges(node).len())?;
        for edge in graph.edges(node) {
            let target = edge.target as usize;
            if alive[target] && number[target] == u32::MAX {
                number[target] = node_id(order.len());
                order.push(edge.target);
            }
        }
    }
    let nodes = order
        .iter()
        .map(|&old| {
            budget.spend(1 + graph.edges(old).len())?;
            let mut edges: Vec<Edge> = graph
                .edges(old)
                .iter()
                .filter(|edge| alive[edge.target as usize])
                .map(|edge| Edge {
                    label: edge.label,
                    target: number[edge.target as usize],
                })
                .collect();
            edges.sort_unstable();
            edges.dedup();
            Ok(Node {
                is_final: graph.finals[old as usize],
                edges,
            })
        })
        .collect::<Result<_, Exceeded>>()?;
    Ok(Fsm { nodes })
}
