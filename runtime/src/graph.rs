//! Graph algorithms over rules.

/// The strongly connected components of a graph given by each node's
/// successors (`references[n]`), each sorted, successors before the nodes
/// that reach them: rules' callees before their callers. Tarjan's
/// algorithm, with an explicit stack, so deep grammars cannot overflow the
/// call stack. The compiler's structural hashes and the runtime's
/// distances both walk rules in this order.
pub fn strongly_connected_components(references: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let count = references.len();
    let mut index = vec![usize::MAX; count];
    let mut low = vec![0; count];
    let mut on_stack = vec![false; count];
    let mut stack = Vec::new();
    let mut out = Vec::new();
    let mut next_index = 0;
    for root in 0..count {
        if index[root] != usize::MAX {
            continue;
        }
        // Frames: (node, next edge to look at).
        let mut frames = vec![(root, 0)];
        index[root] = next_index;
        low[root] = next_index;
        next_index += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (node, ref mut edge)) = frames.last_mut() {
            if let Some(&target) = references[node].get(*edge) {
                *edge += 1;
                if index[target] == usize::MAX {
                    index[target] = next_index;
                    low[target] = next_index;
                    next_index += 1;
                    stack.push(target);
                    on_stack[target] = true;
                    frames.push((target, 0));
                } else if on_stack[target] {
                    low[node] = low[node].min(index[target]);
                }
                continue;
            }
            frames.pop();
            if let Some(&(parent, _)) = frames.last() {
                low[parent] = low[parent].min(low[node]);
            }
            if low[node] == index[node] {
                let mut component = Vec::new();
                while let Some(member) = stack.pop() {
                    on_stack[member] = false;
                    component.push(member);
                    if member == node {
                        break;
                    }
                }
                component.sort_unstable();
                out.push(component);
            }
        }
    }
    out
}
