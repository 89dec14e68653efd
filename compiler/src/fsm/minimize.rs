//! Minimization of deterministic automata in O(m log n) by Valmari's
//! partition refinement over transitions ("Fast brief practical DFA
//! minimization", 2012), which handles partial automata: a missing edge
//! is not an edge to a dead node.
//!
//! Byte-range labels are first cut into the automaton's *byte classes*
//! (maximal byte ranges no edge boundary falls inside), so that two nodes
//! are equivalent exactly when they agree on every class; rule, repetition
//! and token labels are symbols of their own. Nodes start split by
//! finality; the partition of nodes and the partition of transitions
//! ("cords", first by symbol) refine each other until stable, each time
//! walking only the smaller half of a split. The input comes from
//! determinizing a trimmed automaton, so every node can reach a final node,
//! which is what makes the result minimal.

use rustc_hash::FxHashMap;

use super::{Edge, Fsm, Label, Node, check_every_stride, node_id};
use crate::budget::{Budget, Exceeded};

/// The minimal automaton equivalent to the deterministic `dfa`; checks
/// `budget` as the partition is refined.
pub(super) fn minimize(dfa: &Fsm, budget: &Budget) -> Result<Fsm, Exceeded> {
    let transitions = Transitions::of(dfa);
    budget.check()?;
    let blocks = coarsest_partition(dfa, &transitions, budget)?;
    budget.check()?;
    Ok(merge(dfa, &blocks))
}

/// Every edge as transitions over atomic symbols.
struct Transitions {
    /// `(tail, symbol, head)`.
    all: Vec<(u32, u32, u32)>,
    /// How many symbols there are: they are `0..symbols`.
    symbols: usize,
}

impl Transitions {
    fn of(dfa: &Fsm) -> Self {
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
        Self {
            all,
            symbols: class as usize + 1,
        }
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

    fn members(&self, set: usize) -> &[u32] {
        &self.elements[self.first[set] as usize..self.past[set] as usize]
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
        check_every_stride(budget, cord + 1)?;
        for i in cords.first[cord]..cords.past[cord] {
            let t = cords.elements[i as usize];
            blocks.mark(all[t as usize].0);
        }
        blocks.split();
        cord += 1;
        while block < blocks.sets() {
            check_every_stride(budget, block)?;
            for i in blocks.first[block]..blocks.past[block] {
                let node = blocks.elements[i as usize] as usize;
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

/// One node per block, numbered in order of first reach from the start
/// following edges in label order (as `trim` numbers nodes, so equal
/// languages give equal automata); edges from any member (they agree),
/// adjacent ranges into the same block merged. No block needs trimming:
/// the input is trimmed, and merging keeps every node reachable and able
/// to reach a final node.
fn merge(dfa: &Fsm, blocks: &Partition) -> Fsm {
    if dfa.nodes.is_empty() {
        return Fsm::default();
    }
    let mut number = vec![u32::MAX; blocks.sets()];
    let start_block = blocks.set_of[0] as usize;
    number[start_block] = 0;
    // The block of each new node, and its member whose edges it takes.
    let mut order = vec![(start_block, 0usize)];
    let mut nodes = Vec::with_capacity(blocks.sets());
    while let Some(&(_, member)) = order.get(nodes.len()) {
        let node = &dfa.nodes[member];
        let mut edges: Vec<Edge> = Vec::with_capacity(node.edges.len());
        for edge in &node.edges {
            let block = blocks.set_of[edge.target as usize] as usize;
            if number[block] == u32::MAX {
                number[block] = node_id(order.len());
                order.push((block, blocks.members(block)[0] as usize));
            }
            let target = number[block];
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
    debug_assert_eq!(nodes.len(), blocks.sets(), "every block is reached");
    Fsm { nodes }
}
