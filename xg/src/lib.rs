//! xg: a structured-generation engine for LLM inference.
//!
//! One dependency for an inference server written in Rust: the runtime
//! (every item of `xg_runtime` is here: [`Grammar`], [`Matcher`],
//! [`Vocabulary`], [`bundle`], …), the [`grammar!`] macro that compiles
//! grammars at build time, and — feature `compiler`, on by default — the
//! [`compiler`] for grammars that arrive with requests (JSON Schemas,
//! regular expressions, structural tags, `.xg` text); with feature
//! `schemars`, typed outputs (`xg::typed`): the grammar of a Rust type's
//! JSON, and the output read back as that type.
//!
//! ```
//! use std::sync::Arc;
//! use xg::{Matcher, StaticGrammar, TokenId, Vocabulary};
//!
//! static ANSWER: StaticGrammar = xg::grammar! {
//!     root ::= "yes" | "no" | number
//!     number ::= [0-9]+
//! };
//!
//! let tokens: [&[u8]; 5] = [b"yes", b"no", b"4", b"42", b"</s>"];
//! let stop = TokenId::new(4).unwrap();
//! let vocabulary = Vocabulary::from_byte_strings(&tokens, &[stop])
//!     .and_then(|v| v.with_stop_tokens(&[stop]))
//!     .unwrap();
//! let mut matcher = Matcher::with_vocabulary(ANSWER.grammar(), Arc::new(vocabulary));
//! matcher.accept_token(TokenId::new(3).unwrap()).unwrap(); // "42"
//! let mut mask = vec![0u32; 1];
//! matcher.fill_next_token_bitmask(&mut mask).unwrap();
//! assert_eq!(mask[0], 0b11100); // more digits, or stop
//! ```

pub use xg_runtime::*;

/// Compiles a `.xg` grammar at build time into a [`StaticGrammar`].
///
/// Three forms:
///
/// ```
/// # use xg::StaticGrammar;
/// // Inline: the grammar is the macro's input.
/// static ANSWER: StaticGrammar = xg::grammar! {
///     root ::= "yes" | "no" | number   // Rust comments are allowed
///     number ::= [0-9]+
/// };
///
/// // A string literal, for text Rust cannot split into tokens (`'`,
/// // unbalanced brackets, escapes Rust does not know, comments that are
/// // not Rust tokens), with settings after it.
/// static LIST: StaticGrammar = xg::grammar!(
///     r#"
///     list ::= "[" item ("," item)* "]"   # a `.xg` comment
///     item ::= [^\[\],]+
///     "#,
///     root = "list",
/// );
///
/// // A file, relative to the file that invokes the macro (as for
/// // `include_str!`); editing it, or any file it imports, rebuilds the crate.
/// # /*
/// static TOOLS: StaticGrammar = xg::grammar!(file = "grammars/tools.xg");
/// # */
/// # assert_eq!(LIST.rule_name(LIST.root()), "list");
/// ```
///
/// Settings: `root = "rule"` (the entry rule; `root` by default),
/// `tokenizer = "path/tokenizer.json"` (also `.json.gz`; masks precomputed
/// for that vocabulary are embedded too — see below), and `file` in the
/// file form.
///
/// The whole compiler runs at build time — front end, middle end, tables —
/// and the result is embedded as a bundle (the `.xgb` format), which
/// [`StaticGrammar`] opens in place on first use. Token masks are built
/// just in time at run time, as for any grammar; with `tokenizer`, the
/// costliest mask-cache entries for that model are built at build time and
/// embedded as well (they are used when a [`Matcher`] has exactly that
/// vocabulary: same tokens, same stop tokens).
///
/// Grammar errors are compile errors: in inline grammars at the exact
/// tokens, every error at once; in a file or a string, with the excerpt
/// and `file:line:col`. Warnings (an unused rule, an approximated JSON
/// Schema keyword) are deprecation warnings at the same places — the one
/// way a procedural macro can warn on stable Rust.
///
/// Inline grammars must be Rust tokens: strings with Rust's escapes only
/// (`\n`, `\t`, `\"`, `\\`, `\x41`, `\u{e9}` is not `.xg`), no `'`, and
/// `//` comments (or `#` comments whose words are Rust tokens). Anything
/// else goes in a string literal.
pub use xg_macros::grammar;

/// The xg compiler: `.xg` text, JSON Schemas, regular expressions and
/// structural tags compiled at run time.
#[cfg(feature = "compiler")]
pub use xg_compiler as compiler;

#[cfg(feature = "schemars")]
pub mod typed;
#[cfg(feature = "schemars")]
pub use typed::{GrammarForType, TypedMatcher};

/// The Rust examples of the README and of the book's pages that use this
/// crate, compiled and run as doctests.
#[cfg(doctest)]
mod documentation {
    #[doc = include_str!("../../README.md")]
    struct Readme;

    #[doc = include_str!("../../book/src/quick-start.md")]
    struct QuickStart;

    #[doc = include_str!("../../book/src/grammar-macro.md")]
    struct GrammarMacro;

    #[doc = include_str!("../../book/src/rust-api.md")]
    struct RustApi;

    #[cfg(feature = "schemars")]
    #[doc = include_str!("../../book/src/typed-outputs.md")]
    struct TypedOutputs;
}
