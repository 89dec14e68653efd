//! What a `grammar!` invocation asks for: where the grammar's text is, and
//! its settings.
//!
//! Three forms:
//!
//! - the grammar written inline, as Rust tokens: `grammar! { root ::= … }`;
//! - a string literal, then settings: `grammar!(r#"root ::= …"#, root = "…")`;
//! - settings alone, one of them `file`: `grammar!(file = "tools.xg")`.

use proc_macro2::{TokenStream, TokenTree};
use syn::parse::{Parse, ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{Ident, LitStr, Token};

/// Where the grammar's text is.
pub(crate) enum Source {
    /// Written inline, as the macro's tokens.
    Tokens(TokenStream),
    /// A string literal holding the text.
    Literal(LitStr),
    /// A file, by its path relative to the file that invokes the macro.
    File(LitStr),
}

/// A parsed invocation.
pub(crate) struct Request {
    /// The grammar's text.
    pub source: Source,
    /// The entry rule, if not `root`.
    pub root: Option<LitStr>,
    /// A `tokenizer.json` to precompute masks for at build time.
    pub tokenizer: Option<LitStr>,
}

/// One `name = "value"` setting.
struct Setting {
    name: Ident,
    value: LitStr,
}

impl Parse for Setting {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let name = input.parse()?;
        input.parse::<Token![=]>()?;
        let value = input.parse()?;
        Ok(Self { name, value })
    }
}

/// The settings each form takes.
const FILE_SETTINGS: &[&str] = &["file", "root", "tokenizer"];
const LITERAL_SETTINGS: &[&str] = &["root", "tokenizer"];

/// Parses the macro's input.
pub(crate) fn parse(input: TokenStream) -> syn::Result<Request> {
    let mut tokens = input.clone().into_iter();
    match (tokens.next(), tokens.next()) {
        (Some(TokenTree::Literal(_)), _) => {
            let parser = |stream: ParseStream| {
                let text: LitStr = stream.parse()?;
                let settings = if stream.is_empty() {
                    Punctuated::new()
                } else {
                    stream.parse::<Token![,]>()?;
                    Punctuated::<Setting, Token![,]>::parse_terminated(stream)?
                };
                Ok((text, settings))
            };
            let (text, settings) = parser.parse2(input)?;
            settings_into_request(Source::Literal(text), settings, LITERAL_SETTINGS)
        }
        (Some(TokenTree::Ident(_)), Some(TokenTree::Punct(eq))) if eq.as_char() == '=' => {
            let settings = Punctuated::<Setting, Token![,]>::parse_terminated.parse2(input)?;
            let file = settings
                .iter()
                .find(|setting| setting.name == "file")
                .map(|setting| setting.value.clone())
                .ok_or_else(|| {
                    syn::Error::new(
                        proc_macro2::Span::call_site(),
                        "`grammar!` takes the grammar inline, as a string literal, \
                         or from `file = \"path.xg\"`",
                    )
                })?;
            settings_into_request(Source::File(file), settings, FILE_SETTINGS)
        }
        _ => Ok(Request {
            source: Source::Tokens(input),
            root: None,
            tokenizer: None,
        }),
    }
}

fn settings_into_request(
    source: Source,
    settings: Punctuated<Setting, Token![,]>,
    allowed: &[&str],
) -> syn::Result<Request> {
    let mut request = Request {
        source,
        root: None,
        tokenizer: None,
    };
    let mut seen: Vec<String> = Vec::new();
    for Setting { name, value } in settings {
        let key = name.to_string();
        if !allowed.contains(&key.as_str()) {
            let known = allowed
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ");
            return Err(syn::Error::new(
                name.span(),
                format!("unknown setting `{key}` (this form of `grammar!` takes {known})"),
            ));
        }
        if seen.contains(&key) {
            return Err(syn::Error::new(
                name.span(),
                format!("`{key}` is set twice"),
            ));
        }
        match key.as_str() {
            "root" => request.root = Some(value),
            "tokenizer" => request.tokenizer = Some(value),
            _ => {} // `file`, taken above
        }
        seen.push(key);
    }
    Ok(request)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn parse_str(text: &str) -> syn::Result<Request> {
        parse(TokenStream::from_str(text).expect("tokens"))
    }

    #[test]
    fn the_three_forms_are_told_apart() {
        let inline = parse_str("root ::= \"a\" | b  b ::= [0-9]").unwrap();
        assert!(matches!(inline.source, Source::Tokens(_)));
        assert!(inline.root.is_none());

        let literal = parse_str("r#\"start ::= \"a\"\"#, root = \"start\"").unwrap();
        let Source::Literal(text) = &literal.source else {
            panic!("a literal")
        };
        assert_eq!(text.value(), "start ::= \"a\"");
        assert_eq!(literal.root.unwrap().value(), "start");

        let file = parse_str("file = \"g.xg\", tokenizer = \"t.json\",").unwrap();
        let Source::File(path) = &file.source else {
            panic!("a file")
        };
        assert_eq!(path.value(), "g.xg");
        assert_eq!(file.tokenizer.unwrap().value(), "t.json");
    }

    #[test]
    fn bad_settings_are_errors_that_say_why() {
        let message = |text: &str| parse_str(text).err().expect("an error").to_string();
        assert_eq!(
            message("root = \"start\""),
            "`grammar!` takes the grammar inline, as a string literal, or from `file = \"path.xg\"`"
        );
        assert_eq!(
            message("file = \"a.xg\", rot = \"x\""),
            "unknown setting `rot` (this form of `grammar!` takes `file`, `root`, `tokenizer`)"
        );
        assert_eq!(
            message("\"root ::= 1\", file = \"a.xg\""),
            "unknown setting `file` (this form of `grammar!` takes `root`, `tokenizer`)"
        );
        assert_eq!(
            message("file = \"a.xg\", file = \"b.xg\""),
            "`file` is set twice"
        );
        assert_eq!(message("file = 3"), "expected string literal");
        assert_eq!(message("\"a\" \"b\""), "expected `,`");
    }
}
