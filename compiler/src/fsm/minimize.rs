//! Minimization of deterministic automata by partition refinement (Moore's
//! algorithm): nodes start split by finality and are split further by where
//! their edges lead, until nothing splits. Equivalent nodes end up merged,
//! and nodes that cannot reach a final node are removed afterwards.

use rustc_hash::FxHashMap;

use super::thompson::trim;
use super::{Edge, Fsm, Label, Node, node_id};

/// The minimal automaton equivalent to the deterministic `dfa`.
pub(super) fn minimize(dfa: &Fsm) -> Fsm {
    let count = dfa.nodes.len();
    let mut class: Vec<u32> = dfa.nodes.iter().map(|n| u32::from(n.is_final)).collect();
    let mut classes = 0;
    loop {
        let mut ids: FxHashMap<(u32, Vec<(Label, u32)>), u32> = FxHashMap::default();
        let next: Vec<u32> = (0..count)
            .map(|n| {
                let key = (class[n], signature(&dfa.nodes[n], &class));
                let fresh = node_id(ids.len());
                *ids.entry(key).or_insert(fresh)
            })
            .collect();
        let refined = ids.len();
        class = next;
        if refined == classes {
            break;
        }
        classes = refined;
    }
    // One node per class, numbered so that the start's class is 0.
    let mut number: Vec<u32> = vec![u32::MAX; classes];
    let mut representative = Vec::with_capacity(classes);
    for (n, &c) in class.iter().enumerate() {
        if number[c as usize] == u32::MAX {
            number[c as usize] = node_id(representative.len());
            representative.push(n);
        }
    }
    let nodes = representative
        .iter()
        .map(|&n| {
            let node = &dfa.nodes[n];
            let edges = signature(node, &class)
                .into_iter()
                .map(|(label, target)| Edge {
                    label,
                    target: number[target as usize],
                })
                .collect();
            Node {
                is_final: node.is_final,
                edges,
            }
        })
        .collect();
    trim(&Fsm { nodes })
}

/// A node's edges with targets replaced by their classes, adjacent byte
/// ranges into the same class merged: equal for equivalent nodes.
fn signature(node: &Node, class: &[u32]) -> Vec<(Label, u32)> {
    let mut out: Vec<(Label, u32)> = Vec::with_capacity(node.edges.len());
    for edge in &node.edges {
        let target = class[edge.target as usize];
        match (out.last_mut(), edge.label) {
            (Some((Label::Bytes { hi: last_hi, .. }, last)), Label::Bytes { lo, hi })
                if *last == target && u16::from(*last_hi) + 1 == u16::from(lo) =>
            {
                *last_hi = hi;
            }
            _ => out.push((edge.label, target)),
        }
    }
    out
}
