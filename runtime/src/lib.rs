//! The xg runtime: the part of xg an inference server links.
//!
//! The runtime executes tables produced by the xg compiler. It never depends on
//! the compiler: everything both sides must agree on — identifiers today, table
//! and bundle formats as they arrive — has its single home here, and the
//! compiler writes through it.
//!
//! # Overview
//!
//! - [`RuleId`] names a rule of a compiled grammar.
//! - [`TokenId`] names a token of a vocabulary.
//! - [`tables`]: the flat grammar tables the matcher executes.
//! - [`Grammar`]: validated tables, immutable and shared by every matcher.
//! - [`Matcher`]: one output's position in a grammar — accept, reject with
//!   the reason, roll back, fork, forced bytes (an Earley parser over the
//!   rule automata, with lookahead and tag dispatch), captures.
//! - [`ToolCallStream`]: a tool-calling turn's calls as events while the
//!   model writes them.
//! - [`Vocabulary`]: a model's tokens as bytes, loaded from a
//!   `tokenizer.json`, with its stop tokens and fingerprint.
//! - [`bundle`]: precompiled grammars (`.xgb`) — the format, the writer
//!   with precomputed mask entries, and the loader behind
//!   [`Grammar::open`], which maps a file and leaves the masks in it until
//!   a step needs one.
//! - [`StaticGrammar`]: a bundle built into the program (by the `grammar!`
//!   macro, or `include_bytes!`), opened on first use.
//!
//! Each module uses only those below it: ids, tables, scanners and lazy
//! rules; then the grammar, and beside it the vocabulary with its mask
//! cache; then the matcher (an Earley parse, the mask computation over
//! it, the user's `Matcher` on top); then bundles. The book's runtime
//! chapter draws the layers.
//!
//! ```
//! use xg_runtime::RuleId;
//!
//! let id = RuleId::new(3).unwrap();
//! assert_eq!(id.as_usize(), 3);
//! assert!(RuleId::new(RuleId::LIMIT).is_err());
//! ```
#![deny(missing_docs)]

pub mod bundle;
mod byteset;
mod cache;
mod embedded;
mod fnv;
mod grammar;
mod graph;
mod id;
mod lazy;
pub mod lru;
mod matcher;
mod scanner;
pub mod tables;
mod tails;
mod trie;
mod vocab;
mod zeros;

pub use self::bundle::BundleError;
pub use self::byteset::ByteSet;
pub use self::cache::{CacheStats, MaskCache};
pub use self::embedded::StaticGrammar;
pub use self::grammar::{CacheFallback, Grammar};
pub use self::graph::strongly_connected_components;
pub use self::id::{IdError, RuleId, TokenId};
pub use self::lazy::{Automaton, BuiltRule, RuleBuilder};
pub use self::matcher::{
    CONTEXT_TOKENS, Capture, DEFAULT_MASK_BUDGET, DEFAULT_STEP_BUDGET, DraftTree, Expected,
    ForcedTokens, Found, MaskError, MaskStats, Matcher, REASONING_CAPTURE, Rejection,
    RollbackError, Stats, StopReason, TEXT_CAPTURE, TOOL_CAPTURE_PREFIX, ToolCallEvent,
    ToolCallStream,
};
pub use self::scanner::{MAX_DISPATCH_PATTERN, MAX_DISPATCH_PATTERNS, dispatch_patterns_error};
pub use self::vocab::{TokenKind, TokenizerKind, VocabError, Vocabulary};
