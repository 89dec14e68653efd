//! The xg compiler: `.xg` grammars, JSON Schemas, regular expressions and
//! structural tags → checked grammars → tables for the xg runtime.
//!
//! # Overview
//!
//! - [`Compiler`]: text in, grammar out, for each form a request carries;
//!   [`Request`] is one compilation's context (its texts in [`Sources`],
//!   its errors and warnings in [`Diagnostics`], the shared
//!   [`CompileCache`], its [`Budget`]) that every stage takes.
//! - [`syntax`]: text → [`syntax::ast::File`], and the canonical printer.
//! - [`resolve`](mod@resolve): files and imports → one checked [`tree::Grammar`].
//! - [`ir`]: the grammar IR over bytes, [`ir::lower`] from the resolved tree,
//!   and [`ir::reference`], the slow recognizer every matcher is tested against.
//! - [`json_schema`]: JSON Schema → grammar, with a report of every keyword.
//! - [`regex`](mod@regex): a request-time regular expression → grammar.
//! - [`structural_tag`]: XGrammar's structural-tag JSON → grammar.
//! - [`tools`]: a request's tool definitions and a model family's format → grammar.
//! - [`budget`]: compile limits (rules, time, cancellation) for request-time
//!   grammars.
//! - [`pipeline`]: the stages in order; [`pipeline::check`] is the front end.
//!
//! ```
//! use xg_compiler::{Request, pipeline};
//!
//! let mut request = Request::ahead_of_time();
//! let file = request.add(
//!     "answer.xg",
//!     r#"
//!     import "std/json.xg" as json;
//!     root ::= "yes" | "no" | number | json.string
//!     number ::= [0-9]+
//!     "#,
//! );
//! let grammar = pipeline::check(&mut request, file, "root").unwrap();
//! assert!(request.diagnostics.is_empty());
//! assert_eq!(grammar.rule(grammar.root).name, "root");
//! ```

pub mod budget;
mod cache;
mod diagnostic;
pub mod fsm;
pub mod hash;
pub mod ir;
pub mod json_schema;
mod lazy;
pub mod normalize;
pub mod pipeline;
pub mod regex;
pub mod request;
pub mod resolve;
mod source;
mod stdlib;
pub mod structural_tag;
pub mod syntax;
pub mod tables;
pub mod tools;
pub mod tree;

pub use self::budget::{Budget, Exceeded, Limits};
pub use self::cache::{CompileCache, CompileCacheStats, DEFAULT_COMPILE_CACHE_BYTES};
pub use self::diagnostic::{Diagnostic, Diagnostics, Label, MAX_DIAGNOSTICS, Severity};
pub use self::request::{Compiler, Report, Request};
pub use self::source::{FileId, ImportTarget, MAX_FILE_BYTES, Sources, Span};
pub use self::stdlib::{EXAMPLES, get as std_text, paths as std_paths};

/// The Rust examples of the README and the book, compiled and run as doctests.
#[cfg(doctest)]
mod documentation {
    #[doc = include_str!("../../book/src/json-schema.md")]
    struct JsonSchema;

    #[doc = include_str!("../../book/src/regex.md")]
    struct Regex;

    #[doc = include_str!("../../book/src/structural-tags.md")]
    struct StructuralTags;

    #[doc = include_str!("../../book/src/tool-calling.md")]
    struct ToolCalling;

    #[doc = include_str!("../../book/src/masks.md")]
    struct Masks;

    #[doc = include_str!("../../book/src/bundles.md")]
    struct Bundles;
}
