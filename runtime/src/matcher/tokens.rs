//! Tokens: accepting a model's token.
//!
//! One rule decides what a token does, here and in the token mask
//! ([`super::mask`]), so a token is allowed exactly when accepting it
//! succeeds:
//!
//! - a stop token is allowed where the output can end, and ends it;
//! - a special token matches only by id (`Token(…)`, token dispatch);
//! - a text token matches by id where the grammar takes it by id, and
//!   otherwise by its bytes;
//! - absent ids (padding) are never allowed.

use super::Matcher;
use super::earley::Symbol;
use crate::TokenId;
use crate::vocab::TokenKind;

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
}
