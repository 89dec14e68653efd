//! Tokens: accepting a model's token and computing the mask of the tokens
//! the grammar allows next.
//!
//! One rule decides both, so a token is allowed exactly when accepting it
//! succeeds:
//!
//! - a stop token is allowed where the output can end, and ends it;
//! - a special token matches only by id (`Token(…)`, token dispatch);
//! - a text token matches by id where the grammar takes it by id, and
//!   otherwise by its bytes;
//! - absent ids (padding) are never allowed.
//!
//! The mask walks the vocabulary's token trie with the matcher's own rows:
//! a byte is pushed per trie edge and popped on the way back, and a refused
//! byte skips its whole subtree.

use std::fmt;

use super::Matcher;
use super::earley::Symbol;
use crate::TokenId;
use crate::vocab::TokenKind;

/// A mask buffer too small for the vocabulary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MaskError {
    needed: usize,
    given: usize,
}

impl fmt::Display for MaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the token mask needs {} words of 32 bits, the buffer has {}",
            self.needed, self.given
        )
    }
}

impl std::error::Error for MaskError {}

fn set(mask: &mut [u32], id: TokenId) {
    mask[id.as_usize() / 32] |= 1 << (id.as_usize() % 32);
}

impl Matcher {
    /// Whether the grammar takes `id` by id here.
    fn takes_by_id(&mut self, id: TokenId) -> bool {
        self.grammar.uses_tokens() && self.viable(Symbol::Token(id))
    }

    /// Accepts one token of the model as one step, or rejects it and
    /// changes nothing. Needs a vocabulary ([`Matcher::with_vocabulary`]);
    /// without one every token is rejected.
    pub fn accept_token(&mut self, id: TokenId) -> Result<(), super::Rejection> {
        let Some(vocabulary) = self.vocabulary.clone() else {
            return Err(self.rejection(super::Found::Token(id)));
        };
        if vocabulary.is_stop(id) {
            return self.terminate();
        }
        match vocabulary.kind_of(id) {
            TokenKind::Text if !self.terminated && !self.takes_by_id(id) => {
                self.accept_bytes(vocabulary.bytes(id))
            }
            TokenKind::Text | TokenKind::Special => self.accept_token_id(id),
            TokenKind::Absent => Err(self.rejection(super::Found::Token(id))),
        }
    }

    /// Fills `mask` with the tokens allowed next: bit `i % 32` of word
    /// `i / 32` is set exactly when [`Matcher::accept_token`] would accept
    /// token `i`. The matcher is unchanged.
    pub fn fill_next_token_bitmask(&mut self, mask: &mut [u32]) -> Result<(), MaskError> {
        let Some(vocabulary) = self.vocabulary.clone() else {
            mask.fill(0);
            return Ok(());
        };
        let needed = vocabulary.mask_words();
        if mask.len() < needed {
            return Err(MaskError {
                needed,
                given: mask.len(),
            });
        }
        mask.fill(0);
        if self.terminated {
            return Ok(());
        }
        if self.can_terminate() {
            for &id in vocabulary.stop_tokens() {
                set(mask, id);
            }
        }
        // By id: only where the row takes tokens. Ids the grammar never
        // names are all alike, so one stands for them all; named ones are
        // tried one by one.
        if self.grammar.uses_tokens() && self.expected().allows_tokens() {
            let by_id = |vocabulary: &crate::Vocabulary, id: TokenId| {
                vocabulary.kind_of(id) != TokenKind::Absent && !vocabulary.is_stop(id)
            };
            let unnamed = TokenId::new(self.grammar.unnamed_token() as usize)
                .is_ok_and(|id| self.viable(Symbol::Token(id)));
            if unnamed {
                for index in 0..vocabulary.len() {
                    let id = TokenId::new(index).expect("vocabulary ids fit");
                    if by_id(&vocabulary, id) && !self.grammar.names_token(id.as_u32()) {
                        set(mask, id);
                    }
                }
            }
            let grammar = std::sync::Arc::clone(&self.grammar);
            for &named in grammar.named_tokens() {
                let Ok(id) = TokenId::new(named as usize) else {
                    continue;
                };
                if id.as_usize() < vocabulary.len()
                    && by_id(&vocabulary, id)
                    && self.viable(Symbol::Token(id))
                {
                    set(mask, id);
                }
            }
        }
        // By bytes: walk the trie.
        let trie = vocabulary.trie();
        let base = self.history.rows();
        for &id in trie.empty() {
            if !vocabulary.is_stop(id) {
                set(mask, id);
            }
        }
        let mut node = 0;
        while node < trie.len() {
            // Back up to this node's parent.
            self.truncate(base + trie.depth(node) - 1);
            if self.push(Some(Symbol::Byte(trie.byte(node)))) {
                for &id in trie.tokens(node) {
                    if !vocabulary.is_stop(id) {
                        set(mask, id);
                    }
                }
                node += 1;
            } else {
                node = trie.end(node);
            }
        }
        self.truncate(base);
        Ok(())
    }
}
