//! The `grammar!` macro of xg: `.xg` grammars compiled at build time and
//! built into the program. Use it through the `xg` crate (`xg::grammar!`),
//! whose documentation describes it.

mod expand;
mod inline;
mod request;

/// A grammar compiled at build time: the `.xg` text inline, in a string
/// literal, or in a file; the expression is an `xg::StaticGrammar`.
///
/// See the `xg` crate's documentation of `grammar!` for the forms,
/// settings and diagnostics.
#[proc_macro]
pub fn grammar(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    expand::expand(input.into()).into()
}
