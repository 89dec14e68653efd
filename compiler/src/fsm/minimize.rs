//! Minimization of deterministic automata, exact, in two parts.
//!
//! The *core* — the nodes on a cycle and every node they reach — is
//! minimized by Valmari's partition refinement over transitions ("Fast
//! brief practical DFA minimization", 2012) in O(m log n), which handles
//! partial automata: a missing edge is not an edge to a dead node.
//! Byte-range labels are cut into the core's *byte classes* (maximal byte
//! ranges no edge boundary falls inside), so that two nodes are equivalent
//! exactly when they agree on every class; rule, repetition and token
//! labels are symbols of their own. Nodes start split by finality; the
//! partition of nodes and the partition of transitions ("cords", first by
//! symbol) refine each other until stable, each time walking only the
//! smaller half of a split.
//!
//! The other nodes lead only to each other and to the core, without a
//! cycle: taken after everything they lead to (Revuz's method for acyclic
//! automata), a node is equivalent to a node already classed exactly when
//! their *signatures* — finality, and each label (adjacent byte ranges
//! merged) with its target's class — are equal, one hash lookup each.
//! Tries are acyclic, and they are where automata grow large: "any property
//! name but these" leaves its trie of names by every byte but the few the
//! names go on with, and refining its thousands of nodes over tens of byte
//! classes each was most of the compile time of schemas with large objects.
//!
//! The input comes from determinizing a trimmed automaton, so every node
//! can reach a final node, which is what makes the result minimal.

use rustc_hash::FxHashMap;

use super::interned::Interned;
use super::{Edge, Fsm, Label, Node, node_id};
use crate::budget::{Budget, Exceeded};

/// The minimal automaton equivalent to the deterministic `dfa`; checks
/// `budget` as the partition is refined.
pub(super) fn minimize(dfa: &Fsm, budget: &Budget) -> Result<Fsm, Exceeded> {
    let core = core(dfa, budget)?;
    let mut classes = Classes {
        of: vec![u32::MAX; dfa.nodes.len()],
        count: 0,
    };
    if core.len() == dfa.nodes.len() {
        let blocks = refine(dfa, budget)?;
        classes.of.copy_from_slice(&blocks.set_of);
        classes.count = blocks.sets();
    } else {
        if !core.is_empty() {
            let blocks = refine(&restricted(dfa, &core, budget)?, budget)?;
            for (&node, &block) in core.iter().zip(&blocks.set_of) {
                classes.of[node as usize] = block;
            }
            classes.count = blocks.sets();
        }
        class_by_signature(dfa, &core, &mut classes, budget)?;
    }
    merge(dfa, &classes, budget)
}

/// Classes of equivalent nodes: `of[node]`, numbered `0..count`
/// (`u32::MAX` while a node has none).
struct Classes {
    of: Vec<u32>,
    count: usize,
}

/// The coarsest partition of `dfa`'s nodes into equivalent ones, by
/// Valmari's refinement.
fn refine(dfa: &Fsm, budget: &Budget) -> Result<Partition, Exceeded> {
    let transitions = Transitions::of(dfa, budget)?;
    coarsest_partition(dfa, &transitions, budget)
}

/// The automaton of the nodes `kept` (which lead only to each other),
/// numbered in their order.
fn restricted(dfa: &Fsm, kept: &[u32], budget: &Budget) -> Result<Fsm, Exceeded> {
    let mut number = vec![u32::MAX; dfa.nodes.len()];
    for (new, &old) in kept.iter().enumerate() {
        number[old as usize] = node_id(new);
    }
    let nodes = kept
        .iter()
        .map(|&old| {
            let node = &dfa.nodes[old as usize];
            budget.spend(1 + node.edges.len())?;
            Ok(Node {
                is_final: node.is_final,
                edges: node
                    .edges
                    .iter()
                    .map(|edge| Edge {
                        label: edge.label,
                        target: number[edge.target as usize],
                    })
                    .collect(),
            })
        })
        .collect::<Result<_, Exceeded>>()?;
    Ok(Fsm { nodes })
}

/// Classes the nodes outside `core` (whose classes are set), each after
/// the nodes it leads to: a node with the signature of a node classed
/// before joins its class, any other starts one.
fn class_by_signature(
    dfa: &Fsm,
    core: &[u32],
    classes: &mut Classes,
    budget: &Budget,
) -> Result<(), Exceeded> {
    // Sized for every node up front: never rehashed while filled.
    let mut signatures = Interned::with_capacity(dfa.nodes.len());
    // The class of each signature kept.
    let mut class_of_signature: Vec<u32> = Vec::with_capacity(dfa.nodes.len());
    let mut signature = Vec::new();
    // One member of each of the core's classes stands for it.
    let mut seen = vec![false; classes.count];
    for &node in core {
        let class = classes.of[node as usize];
        if !std::mem::replace(&mut seen[class as usize], true) {
            signature_of(&dfa.nodes[node as usize], &classes.of, &mut signature);
            let hash = Interned::hash(&signature);
            match signatures.find(&signature, hash) {
                Some(id) => class_of_signature[id as usize] = class,
                None => {
                    signatures.insert(&signature, hash);
                    class_of_signature.push(class);
                }
            }
        }
    }
    for node in after_successors(dfa, &classes.of, budget)? {
        budget.spend(1 + dfa.nodes[node as usize].edges.len())?;
        signature_of(&dfa.nodes[node as usize], &classes.of, &mut signature);
        let hash = Interned::hash(&signature);
        let class = match signatures.find(&signature, hash) {
            Some(id) => class_of_signature[id as usize],
            None => {
                signatures.insert(&signature, hash);
                let class = node_id(classes.count);
                class_of_signature.push(class);
                classes.count += 1;
                class
            }
        };
        classes.of[node as usize] = class;
    }
    Ok(())
}

/// The nodes on a cycle and every node they reach, in increasing order.
fn core(dfa: &Fsm, budget: &Budget) -> Result<Vec<u32>, Exceeded> {
    let count = dfa.nodes.len();
    let mut in_core = Components::on_cycles(dfa, budget)?;
    let mut pending: Vec<u32> = (0..count).filter(|&n| in_core[n]).map(node_id).collect();
    while let Some(node) = pending.pop() {
        budget.spend(1 + dfa.nodes[node as usize].edges.len())?;
        for edge in &dfa.nodes[node as usize].edges {
            if !in_core[edge.target as usize] {
                in_core[edge.target as usize] = true;
                pending.push(edge.target);
            }
        }
    }
    Ok((0..count).filter(|&n| in_core[n]).map(node_id).collect())
}

/// Tarjan's strongly connected components, without recursion.
struct Components {
    index: Vec<u32>,
    low: Vec<u32>,
    on_stack: Vec<bool>,
    stack: Vec<u32>,
    /// The depth-first path: each node with the next of its edges to
    /// follow.
    path: Vec<(u32, usize)>,
    next_index: u32,
}

impl Components {
    /// Per node, whether it is on a cycle: in a component of several
    /// nodes, or with an edge to itself.
    fn on_cycles(dfa: &Fsm, budget: &Budget) -> Result<Vec<bool>, Exceeded> {
        let count = dfa.nodes.len();
        let mut on_cycle = vec![false; count];
        let mut search = Self {
            index: vec![u32::MAX; count],
            low: vec![0; count],
            on_stack: vec![false; count],
            stack: Vec::new(),
            path: Vec::new(),
            next_index: 0,
        };
        for root in 0..count {
            if search.index[root] == u32::MAX {
                search.visit(node_id(root));
                search.run(dfa, &mut on_cycle, budget)?;
            }
        }
        Ok(on_cycle)
    }

    fn visit(&mut self, node: u32) {
        self.index[node as usize] = self.next_index;
        self.low[node as usize] = self.next_index;
        self.next_index += 1;
        self.stack.push(node);
        self.on_stack[node as usize] = true;
        self.path.push((node, 0));
    }

    /// Follows the path until it is empty, marking the nodes on a cycle.
    fn run(&mut self, dfa: &Fsm, on_cycle: &mut [bool], budget: &Budget) -> Result<(), Exceeded> {
        while let Some(&mut (node, ref mut next)) = self.path.last_mut() {
            let n = node as usize;
            budget.spend(1)?;
            if let Some(edge) = dfa.nodes[n].edges.get(*next) {
                *next += 1;
                let target = edge.target;
                if target == node {
                    on_cycle[n] = true;
                }
                if self.index[target as usize] == u32::MAX {
                    self.visit(target);
                } else if self.on_stack[target as usize] {
                    self.low[n] = self.low[n].min(self.index[target as usize]);
                }
                continue;
            }
            self.path.pop();
            if let Some(&(caller, _)) = self.path.last() {
                self.low[caller as usize] = self.low[caller as usize].min(self.low[n]);
            }
            if self.low[n] == self.index[n] {
                let start = self
                    .stack
                    .iter()
                    .rposition(|&member| member == node)
                    .expect("a component's root is on the stack");
                let several = self.stack.len() - start > 1;
                for member in self.stack.drain(start..) {
                    self.on_stack[member as usize] = false;
                    on_cycle[member as usize] |= several;
                }
            }
        }
        Ok(())
    }
}

/// The nodes without a class in `class_of` (none of them on a cycle), each
/// after every such node it leads to.
fn after_successors(dfa: &Fsm, class_of: &[u32], budget: &Budget) -> Result<Vec<u32>, Exceeded> {
    let count = dfa.nodes.len();
    let mut seen: Vec<bool> = class_of.iter().map(|&class| class != u32::MAX).collect();
    let mut order = Vec::with_capacity(count);
    let mut path: Vec<(u32, usize)> = Vec::new();
    for root in 0..count {
        if seen[root] {
            continue;
        }
        seen[root] = true;
        path.push((node_id(root), 0));
        while let Some(&mut (node, ref mut next)) = path.last_mut() {
            budget.spend(1)?;
            match dfa.nodes[node as usize].edges.get(*next) {
                Some(edge) => {
                    *next += 1;
                    if !seen[edge.target as usize] {
                        seen[edge.target as usize] = true;
                        path.push((edge.target, 0));
                    }
                }
                None => {
                    order.push(node);
                    path.pop();
                }
            }
        }
    }
    Ok(order)
}

/// Writes the signature of `node` into `signature`: its finality, then
/// each label with its target's class, adjacent byte ranges into one class
/// merged (every target has a class).
fn signature_of(node: &Node, class_of: &[u32], signature: &mut Vec<u32>) {
    signature.clear();
    signature.push(u32::from(node.is_final));
    // The byte range being extended: (lo, hi, class).
    let mut open: Option<(u32, u32, u32)> = None;
    for edge in &node.edges {
        let class = class_of[edge.target as usize];
        debug_assert_ne!(class, u32::MAX, "targets are classed first");
        if let Label::Bytes { lo, hi } = edge.label {
            let (lo, hi) = (u32::from(lo), u32::from(hi));
            match &mut open {
                Some((_, last, open_class)) if *last + 1 == lo && *open_class == class => {
                    *last = hi;
                }
                _ => {
                    if let Some((lo, hi, class)) = open.replace((lo, hi, class)) {
                        signature.extend([0, lo, hi, class]);
                    }
                }
            }
            continue;
        }
        if let Some((lo, hi, class)) = open.take() {
            signature.extend([0, lo, hi, class]);
        }
        match edge.label {
            Label::Rule(rule) => signature.extend([1, rule.as_u32(), 0, class]),
            Label::Repeat { rule, min, max } => signature.extend([
                2,
                rule.as_u32(),
                min,
                max.map_or(u32::MAX, |max| max),
                u32::from(max.is_some()),
                class,
            ]),
            Label::Tokens(set) => signature.extend([3, set, 0, class]),
            Label::Bytes { .. } | Label::Epsilon => {
                unreachable!("byte ranges are handled above; no epsilon edges remain")
            }
        }
    }
    if let Some((lo, hi, class)) = open {
        signature.extend([0, lo, hi, class]);
    }
}

/// Every edge as transitions over atomic symbols.
struct Transitions {
    /// `(tail, symbol, head)`.
    all: Vec<(u32, u32, u32)>,
    /// How many symbols there are: they are `0..symbols`.
    symbols: usize,
}

impl Transitions {
    fn of(dfa: &Fsm, budget: &Budget) -> Result<Self, Exceeded> {
        // Byte classes: cut 0..=255 at every edge boundary.
        let mut starts = [false; 257];
        let mut others: FxHashMap<Label, u32> = FxHashMap::default();
        for edge in dfa.nodes.iter().flat_map(|n| &n.edges) {
            match edge.label {
                Label::Bytes { lo, hi } => {
                    starts[usize::from(lo)] = true;
                    starts[usize::from(hi) + 1] = true;
                }
                label => {
                    let next = node_id(others.len());
                    others.entry(label).or_insert(next);
                }
            }
        }
        // class_of[b]: the class of byte b (classes numbered after the
        // other symbols).
        let mut class_of = [0u32; 256];
        let mut class = node_id(others.len());
        for b in 0..256 {
            if b > 0 && starts[b] {
                class += 1;
            }
            class_of[b] = class;
        }
        let mut all = Vec::new();
        for (tail, node) in dfa.nodes.iter().enumerate() {
            let tail = node_id(tail);
            budget.spend(1 + node.edges.len())?;
            for edge in &node.edges {
                match edge.label {
                    Label::Bytes { lo, hi } => {
                        let (first, last) = (class_of[usize::from(lo)], class_of[usize::from(hi)]);
                        all.extend((first..=last).map(|symbol| (tail, symbol, edge.target)));
                    }
                    label => all.push((tail, others[&label], edge.target)),
                }
            }
        }
        Ok(Self {
            all,
            symbols: class as usize + 1,
        })
    }
}

/// A partition of `0..n` refinable by marking elements and splitting every
/// set with marked elements in two (Valmari's data structure). A split set
/// keeps its number for the larger part; the smaller part gets a new one.
struct Partition {
    /// The elements, each set's contiguous.
    elements: Vec<u32>,
    /// Where each element is in `elements`.
    location: Vec<u32>,
    /// The set of each element.
    set_of: Vec<u32>,
    /// Each set's range in `elements`: `first..past`.
    first: Vec<u32>,
    past: Vec<u32>,
    /// How many of each set's elements are marked (they are at its front).
    marked: Vec<u32>,
    /// Sets with marked elements.
    touched: Vec<u32>,
}

impl Partition {
    /// One set of `n` elements (no sets if `n` is 0).
    fn new(n: usize) -> Self {
        let count = node_id(n);
        let sets = usize::from(n > 0);
        Self {
            elements: (0..count).collect(),
            location: (0..count).collect(),
            set_of: vec![0; n],
            first: vec![0; sets],
            past: vec![count; sets],
            marked: vec![0; sets],
            touched: Vec::new(),
        }
    }

    fn sets(&self) -> usize {
        self.first.len()
    }

    fn mark(&mut self, element: u32) {
        let set = self.set_of[element as usize] as usize;
        let at = self.location[element as usize] as usize;
        let front = (self.first[set] + self.marked[set]) as usize;
        if at < front {
            return; // already marked
        }
        let other = self.elements[front];
        self.elements[at] = other;
        self.location[other as usize] = node_id(at);
        self.elements[front] = element;
        self.location[element as usize] = node_id(front);
        if self.marked[set] == 0 {
            self.touched.push(node_id(set));
        }
        self.marked[set] += 1;
    }

    /// Splits every touched set into its marked and unmarked elements
    /// (unless all are marked); clears the marks.
    fn split(&mut self) {
        while let Some(set) = self.touched.pop() {
            let set = set as usize;
            let boundary = self.first[set] + self.marked[set];
            self.marked[set] = 0;
            if boundary == self.past[set] {
                continue;
            }
            let fresh = self.first.len();
            let marked_count = boundary - self.first[set];
            if marked_count <= self.past[set] - boundary {
                // The marked part is the smaller: it becomes the new set.
                self.first.push(self.first[set]);
                self.past.push(boundary);
                self.first[set] = boundary;
            } else {
                self.first.push(boundary);
                self.past.push(self.past[set]);
                self.past[set] = boundary;
            }
            self.marked.push(0);
            for at in self.first[fresh]..self.past[fresh] {
                self.set_of[self.elements[at as usize] as usize] = node_id(fresh);
            }
        }
    }
}

/// The coarsest partition of the nodes compatible with finality and the
/// transitions: each set is a class of equivalent nodes.
fn coarsest_partition(
    dfa: &Fsm,
    transitions: &Transitions,
    budget: &Budget,
) -> Result<Partition, Exceeded> {
    let all = &transitions.all;
    let mut blocks = Partition::new(dfa.nodes.len());
    for (n, node) in dfa.nodes.iter().enumerate() {
        if node.is_final {
            blocks.mark(node_id(n));
        }
    }
    blocks.split();

    // Cords: transitions grouped by symbol, in a counting sort (symbols
    // are few).
    let mut cords = Partition::new(all.len());
    let mut starts = vec![0u32; transitions.symbols + 1];
    for &(_, symbol, _) in all {
        starts[symbol as usize + 1] += 1;
    }
    for symbol in 0..transitions.symbols {
        starts[symbol + 1] += starts[symbol];
    }
    let mut fill = starts.clone();
    for (t, &(_, symbol, _)) in all.iter().enumerate() {
        let at = &mut fill[symbol as usize];
        cords.elements[*at as usize] = node_id(t);
        cords.location[t] = *at;
        *at += 1;
    }
    cords.first.clear();
    cords.past.clear();
    cords.marked.clear();
    for symbol in 0..transitions.symbols {
        let (first, past) = (starts[symbol], starts[symbol + 1]);
        if first == past {
            continue;
        }
        let cord = node_id(cords.first.len());
        for &t in &cords.elements[first as usize..past as usize] {
            cords.set_of[t as usize] = cord;
        }
        cords.first.push(first);
        cords.past.push(past);
        cords.marked.push(0);
    }

    // Incoming transitions of each node: into[offsets[n]..offsets[n + 1]].
    let mut offsets = vec![0u32; dfa.nodes.len() + 1];
    for &(_, _, head) in all {
        offsets[head as usize + 1] += 1;
    }
    for n in 0..dfa.nodes.len() {
        offsets[n + 1] += offsets[n];
    }
    let mut into = vec![0u32; all.len()];
    let mut fill = offsets.clone();
    for (t, &(_, _, head)) in all.iter().enumerate() {
        into[fill[head as usize] as usize] = node_id(t);
        fill[head as usize] += 1;
    }

    // Block 0 need not be a splitter: it is what the others leave.
    let mut block = 1;
    let mut cord = 0;
    while cord < cords.sets() {
        budget.spend((cords.past[cord] - cords.first[cord]) as usize + 1)?;
        for i in cords.first[cord]..cords.past[cord] {
            let t = cords.elements[i as usize];
            blocks.mark(all[t as usize].0);
        }
        blocks.split();
        cord += 1;
        while block < blocks.sets() {
            budget.spend(1)?;
            for i in blocks.first[block]..blocks.past[block] {
                let node = blocks.elements[i as usize] as usize;
                budget.spend(1 + (offsets[node + 1] - offsets[node]) as usize)?;
                for &t in &into[offsets[node] as usize..offsets[node + 1] as usize] {
                    cords.mark(t);
                }
            }
            cords.split();
            block += 1;
        }
    }
    Ok(blocks)
}

/// One node per class, numbered in order
/// of first reach from the start following edges in label order (as
/// `trim` numbers nodes, so equal languages give equal automata); edges
/// from any member (they agree), adjacent ranges into the same class
/// merged. No class needs trimming: the input is trimmed, and merging
/// keeps every node reachable and able to reach a final node.
fn merge(dfa: &Fsm, classes: &Classes, budget: &Budget) -> Result<Fsm, Exceeded> {
    if dfa.nodes.is_empty() {
        return Ok(Fsm::default());
    }
    let (class_of, classes) = (&classes.of, classes.count);
    let mut member_of = vec![u32::MAX; classes];
    for (node, &class) in class_of.iter().enumerate() {
        let member = &mut member_of[class as usize];
        if *member == u32::MAX {
            *member = node_id(node);
        }
    }
    let mut number = vec![u32::MAX; classes];
    let start_class = class_of[0] as usize;
    number[start_class] = 0;
    // The member of each new node's class whose edges it takes.
    let mut order = vec![0usize];
    let mut nodes = Vec::with_capacity(classes);
    while let Some(&member) = order.get(nodes.len()) {
        let node = &dfa.nodes[member];
        budget.spend(1 + node.edges.len())?;
        let mut edges: Vec<Edge> = Vec::with_capacity(node.edges.len());
        for edge in &node.edges {
            let class = class_of[edge.target as usize] as usize;
            if number[class] == u32::MAX {
                number[class] = node_id(order.len());
                order.push(member_of[class] as usize);
            }
            let target = number[class];
            match (edges.last_mut(), edge.label) {
                (
                    Some(Edge {
                        label: Label::Bytes { hi: last_hi, .. },
                        target: last,
                    }),
                    Label::Bytes { lo, hi },
                ) if *last == target && u16::from(*last_hi) + 1 == u16::from(lo) => {
                    *last_hi = hi;
                }
                _ => edges.push(Edge {
                    label: edge.label,
                    target,
                }),
            }
        }
        nodes.push(Node {
            is_final: node.is_final,
            edges,
        });
    }
    debug_assert_eq!(nodes.len(), classes, "every class is reached");
    Ok(Fsm { nodes })
}
