//! Masks for a speculative decoder's draft tree, in one call.
//!
//! A draft model proposes a tree of tokens (EAGLE and its successors): node
//! 0 is where the output is now, and every other node a token that follows
//! its parent. The target model scores every node at once and needs a
//! mask per node: what the grammar allows after the path from the root to
//! it. The tree is walked depth first — accept a node's token, fill its
//! row, go down, roll the token back — so it costs one step and one mask
//! per node, never a replay of the path from the root.

use super::Matcher;
use super::walk::MaskError;
use crate::TokenId;

/// A draft tree: per node its token, first child and next sibling (node
/// indices; negative for none), as servers lay them out
/// (`retrieve_next_token`, `retrieve_next_sibling`, `draft_tokens`).
///
/// Node 0 is the root: the position the matcher is at. Its token is the
/// one the target model last produced, already accepted, and is not
/// looked at.
#[derive(Clone, Copy, Debug)]
pub struct DraftTree<'a> {
    /// Each node's token.
    pub tokens: &'a [TokenId],
    /// Each node's first child, or a negative number.
    pub first_child: &'a [i64],
    /// Each node's next sibling, or a negative number.
    pub next_sibling: &'a [i64],
}

impl DraftTree<'_> {
    /// Checks that the links form a tree under node 0: one link per node,
    /// every index in range, no node reached twice (nodes no link reaches
    /// are allowed: their rows stay empty).
    fn check(&self) -> Result<(), String> {
        let count = self.tokens.len();
        if count == 0 {
            return Err("a draft tree has at least its root".to_owned());
        }
        if self.first_child.len() != count || self.next_sibling.len() != count {
            return Err(format!(
                "{count} tokens, {} first children and {} next siblings: one of each per node",
                self.first_child.len(),
                self.next_sibling.len()
            ));
        }
        let link = |from: usize, to: i64, what: &str| match usize::try_from(to) {
            Err(_) => Ok(None),
            Ok(0) => Err(format!("node {from}'s {what} is the root")),
            Ok(to) if to >= count => Err(format!(
                "node {from}'s {what} is node {to}, past the {count} nodes"
            )),
            Ok(to) => Ok(Some(to)),
        };
        if self.next_sibling[0] >= 0 {
            return Err("the root has no siblings".to_owned());
        }
        let mut seen = vec![false; count];
        seen[0] = true;
        let mut open = vec![0];
        while let Some(node) = open.pop() {
            let mut child = link(node, self.first_child[node], "first child")?;
            while let Some(next) = child {
                if std::mem::replace(&mut seen[next], true) {
                    return Err(format!("node {next} is reached twice"));
                }
                open.push(next);
                child = link(next, self.next_sibling[next], "next sibling")?;
            }
        }
        Ok(())
    }
}

impl Matcher {
    /// Fills one mask row per node of `tree` (rows one after another in
    /// `masks`, each `masks.len()` divided by the nodes wide, at least
    /// [`Vocabulary::mask_words`](crate::Vocabulary::mask_words)):
    /// row `i` allows what the grammar takes after the path from the root
    /// to node `i`. A node whose token its parent's row refuses gets an
    /// empty row, and so does everything below it; nodes no link reaches
    /// too. The matcher is left as it was.
    ///
    /// Costs one step and one mask per node on an allowed path: the walk
    /// goes depth first and rolls each token back when it leaves it.
    ///
    /// ```
    /// use xg_runtime::{DraftTree, Matcher, MaskError, TokenId};
    ///
    /// // Root, then `a` and `b` after it, then `c` after `a`.
    /// fn tree_masks(matcher: &mut Matcher, [a, b, c]: [TokenId; 3]) -> Result<Vec<u32>, MaskError> {
    ///     let tokens = [TokenId::new(0).unwrap(), a, b, c];
    ///     let tree = DraftTree {
    ///         tokens: &tokens,
    ///         first_child: &[1, 3, -1, -1],
    ///         next_sibling: &[-1, 2, -1, -1],
    ///     };
    ///     let words = matcher.vocabulary().map_or(0, |v| v.mask_words());
    ///     let mut masks = vec![0; 4 * words];
    ///     matcher.fill_draft_tree_bitmasks(tree, &mut masks)?;
    ///     Ok(masks) // row 3: what may follow `a c`
    /// }
    /// ```
    pub fn fill_draft_tree_bitmasks(
        &mut self,
        tree: DraftTree<'_>,
        masks: &mut [u32],
    ) -> Result<(), MaskError> {
        tree.check().map_err(MaskError::DraftTree)?;
        let count = tree.tokens.len();
        let needed = self
            .vocabulary()
            .map_or(0, |vocabulary| vocabulary.mask_words());
        let width = masks.len() / count;
        if width < needed {
            return Err(MaskError::BufferTooSmall {
                needed: count * needed,
                given: masks.len(),
            });
        }
        let masks = &mut masks[..count * width];
        // Rows are cleared as they are filled; the rest at the end.
        let mut filled = vec![false; count];
        filled[0] = true;
        if let Err(error) = self.fill_next_token_bitmask(&mut masks[..width]) {
            masks.fill(0);
            return Err(error);
        }
        // Per node on the path: the node, and the next child to visit.
        let mut path: Vec<(usize, i64)> = vec![(0, tree.first_child[0])];
        let result = loop {
            let Some(&mut (node, ref mut next)) = path.last_mut() else {
                break Ok(());
            };
            let Ok(child) = usize::try_from(*next) else {
                path.pop();
                if node != 0 {
                    self.rollback(1)
                        .expect("the draft's own steps can be rolled back");
                }
                continue;
            };
            *next = tree.next_sibling[child];
            let token = tree.tokens[child];
            let parent = &masks[node * width..(node + 1) * width];
            let allowed = token.as_usize() < width * 32
                && parent[token.as_usize() / 32] >> (token.as_usize() % 32) & 1 == 1;
            if !allowed || self.accept_token(token).is_err() {
                continue;
            }
            path.push((child, tree.first_child[child]));
            filled[child] = true;
            if let Err(error) = self.fill_next_token_bitmask(&mut masks[child * width..][..width]) {
                break Err(error);
            }
        };
        if result.is_err() {
            // Back to the root: one step per node still on the path.
            self.rollback(path.len().saturating_sub(1))
                .expect("the draft's own steps can be rolled back");
            masks.fill(0);
            return result;
        }
        for (row, _) in masks
            .chunks_mut(width.max(1))
            .zip(&filled)
            .filter(|(_, f)| !**f)
        {
            row.fill(0);
        }
        result
    }
}

impl Matcher {
    /// [`Matcher::fill_draft_tree_bitmasks`] for a batch, in parallel
    /// across cores: matcher `i` fills `trees[i]`'s rows, which follow the
    /// rows of the trees before it in `masks` (each row `width` words,
    /// `masks.len()` divided by the nodes of all the trees). Returns each
    /// matcher's result, in order; a batch whose lengths disagree fails
    /// every matcher with [`MaskError::DraftTree`] and writes nothing.
    pub fn fill_draft_tree_bitmasks_batch(
        matchers: &mut [&mut Matcher],
        trees: &[DraftTree<'_>],
        masks: &mut [u32],
    ) -> Vec<Result<(), MaskError>> {
        use rayon::prelude::*;
        let nodes: usize = trees.iter().map(|tree| tree.tokens.len()).sum();
        if matchers.len() != trees.len() || nodes == 0 || !masks.len().is_multiple_of(nodes) {
            let problem = format!(
                "{} matchers, {} trees of {nodes} nodes, {} mask words: one tree per matcher, \
                 rows of equal width",
                matchers.len(),
                trees.len(),
                masks.len()
            );
            return vec![Err(MaskError::DraftTree(problem)); matchers.len()];
        }
        let width = masks.len() / nodes;
        let mut rows = Vec::with_capacity(trees.len());
        let mut rest = masks;
        for tree in trees {
            let (mine, after) = rest.split_at_mut(tree.tokens.len() * width);
            rows.push(mine);
            rest = after;
        }
        matchers
            .par_iter_mut()
            .zip(trees.par_iter())
            .zip(rows.into_par_iter())
            .map(|((matcher, tree), rows)| matcher.fill_draft_tree_bitmasks(*tree, rows))
            .collect()
    }
}
