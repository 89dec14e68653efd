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
        self.parse.grammar.uses_tokens() && self.viable(Symbol::Token(id))
    }

    /// Accepts one token of the model as one step, or rejects it and
    /// changes nothing. Needs a vocabulary ([`Matcher::with_vocabulary`]);
    /// without one every token is rejected.
    pub fn accept_token(&mut self, id: TokenId) -> Result<(), super::Rejection> {
        let Some(vocabulary) = self.vocabulary.clone() else {
            return Err(self.rejection(super::Found::Token(id)));
        };
        if vocabulary.is_stop(id) {
            self.terminate()?;
            self.ended_by = Some(id);
            return Ok(());
        }
        match vocabulary.kind_of(id) {
            TokenKind::Text if !self.terminated && !self.takes_by_id(id) => {
                self.accept_bytes(vocabulary.bytes(id))?;
                if let Some(step) = self.steps.last_mut() {
                    step.token = Some(id);
                }
                Ok(())
            }
            TokenKind::Text | TokenKind::Special => self.accept_token_id(id),
            TokenKind::Absent => Err(self.rejection(super::Found::Token(id))),
        }
    }

    /// How many of `tokens` the grammar accepts in a row from here (a
    /// speculative draft's valid prefix, what vLLM's `validate_tokens`
    /// asks); the matcher is left as it was. Costs the accepted tokens'
    /// steps, and their rollback.
    pub fn validate_tokens(&mut self, tokens: &[TokenId]) -> usize {
        let mut accepted = 0;
        for &token in tokens {
            if self.accept_token(token).is_err() {
                break;
            }
            accepted += 1;
            if self.is_terminated() {
                break;
            }
        }
        self.rollback(accepted)
            .expect("the steps just taken can be rolled back");
        accepted
    }

    /// Accepts `tokens` in order, one step each; at the first the grammar
    /// refuses, stops and returns how many were accepted with the
    /// rejection (the accepted ones stay: roll them back with
    /// [`Matcher::rollback`] if the whole draft must go).
    pub fn accept_tokens(&mut self, tokens: &[TokenId]) -> Result<(), (usize, super::Rejection)> {
        for (accepted, &token) in tokens.iter().enumerate() {
            self.accept_token(token)
                .map_err(|rejection| (accepted, rejection))?;
        }
        Ok(())
    }

    /// [`Matcher::accept_tokens`] for a batch, in parallel across cores:
    /// each matcher accepts its own tokens (one for a decoding step, a
    /// draft's for speculative decoding). Returns each matcher's result,
    /// in order; a matcher that refuses a token keeps the ones before it,
    /// the others are not affected.
    ///
    /// ```
    /// use xg_runtime::{Matcher, TokenId};
    ///
    /// // A decoding step of a batch: each sequence's sampled token.
    /// fn step(batch: &mut [&mut Matcher], sampled: &[TokenId]) -> Vec<bool> {
    ///     let mut jobs: Vec<(&mut Matcher, &[TokenId])> = batch
    ///         .iter_mut()
    ///         .zip(sampled)
    ///         .map(|(matcher, token)| (&mut **matcher, std::slice::from_ref(token)))
    ///         .collect();
    ///     let results = Matcher::accept_tokens_batch(&mut jobs);
    ///     results.iter().map(Result::is_ok).collect()
    /// }
    /// ```
    pub fn accept_tokens_batch(
        batch: &mut [(&mut Matcher, &[TokenId])],
    ) -> Vec<Result<(), (usize, super::Rejection)>> {
        use rayon::prelude::*;
        batch
            .par_iter_mut()
            .map(|(matcher, tokens)| matcher.accept_tokens(tokens))
            .collect()
    }

    /// Rolls each matcher of a batch back by its count of steps, or none of
    /// them: every count is checked first, and the first that asks for more
    /// steps than its matcher took is the error.
    pub fn rollback_batch(batch: &mut [(&mut Matcher, usize)]) -> Result<(), super::RollbackError> {
        for (matcher, steps) in batch.iter() {
            if *steps > matcher.steps() {
                return Err(super::RollbackError {
                    requested: *steps,
                    available: matcher.steps(),
                });
            }
        }
        for (matcher, steps) in batch.iter_mut() {
            matcher
                .rollback(*steps)
                .expect("every count was checked against its matcher's steps");
        }
        Ok(())
    }
}
