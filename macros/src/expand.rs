//! A `grammar!` invocation → the compiled grammar as an expression, or
//! compile errors.
//!
//! The real compiler runs here, at build time: front end, middle end,
//! tables, then the bundle writer. The expansion is
//!
//! ```text
//! {
//!     const _: &[u8] = ::core::include_bytes!("/abs/path/of/every/file/read");
//!     ::xg::StaticGrammar::new(b"XGBUNDLE…")
//! }
//! ```
//!
//! — the `include_bytes!` lines make Cargo rebuild the crate when a grammar
//! file, an imported file, a `%json` schema file or the tokenizer changes.

use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use proc_macro2::{Delimiter, Group, Ident, Literal, Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::LitStr;
use xg_compiler::{Diagnostic, Diagnostics, FileId, Severity, Sources, pipeline};
use xg_runtime::Vocabulary;
use xg_runtime::bundle::{self, Masks, Precompute};

use crate::inline::Inline;
use crate::request::{self, Request, Source};

/// Expands one invocation.
pub(crate) fn expand(input: TokenStream) -> TokenStream {
    let expanded = request::parse(input)
        .map_err(Failed::from)
        .and_then(|request| compile(&request));
    match expanded {
        Ok(tokens) | Err(Failed(tokens)) => tokens,
    }
}

/// Compile errors, as tokens to emit in place of the grammar.
struct Failed(TokenStream);

impl From<syn::Error> for Failed {
    fn from(error: syn::Error) -> Self {
        Self(error.to_compile_error())
    }
}

/// The folder relative paths are resolved against: that of the file that
/// invokes the macro (as for `include_str!`), or the crate's manifest
/// folder when the compiler names no real file (doctests, generated code).
fn base_folder() -> PathBuf {
    Span::call_site()
        .local_file()
        .and_then(|file| file.parent().map(Path::to_path_buf))
        .or_else(|| std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from))
        .unwrap_or_default()
}

/// The name diagnostics give the Rust file that invokes the macro.
fn invoking_file() -> String {
    Span::call_site().file()
}

/// The text of the grammar as given, added to `sources`.
struct Entry {
    file: FileId,
    /// For inline grammars: where each token came from.
    inline: Option<Inline>,
    /// Where errors that cannot point into the macro's tokens go.
    span: Span,
    /// Where the grammar's own text starts in the file (after the padding
    /// that puts a string literal's text at its line and column).
    text_start: usize,
}

fn compile(request: &Request) -> Result<TokenStream, Failed> {
    let base = base_folder();
    let mut compilation = xg_compiler::Request::ahead_of_time();
    let entry = add_entry(
        &request.source,
        &base,
        &mut compilation.sources,
        &mut compilation.diagnostics,
    )?;
    let root = request
        .root
        .as_ref()
        .map_or_else(|| "root".to_string(), LitStr::value);
    let compiled = pipeline::grammar(&mut compilation, entry.file, &root);
    let xg_compiler::Request {
        sources,
        diagnostics,
        ..
    } = compilation;
    let grammar = match compiled {
        Some(grammar) if !diagnostics.has_errors() => grammar,
        _ => return Err(Failed(errors(&diagnostics, &sources, &entry))),
    };
    let mut tracked = sources.files_read();
    let written = match &request.tokenizer {
        None => bundle::write(&grammar, None),
        Some(path) => {
            let (vocabulary, files) = load_vocabulary(path, &base)?;
            tracked.extend(files);
            let grammar = Arc::new(grammar);
            let masks = Masks::precompute(&grammar, &vocabulary, Precompute::Auto);
            bundle::write(&grammar, Some(&masks))
        }
    };
    let bundle = written
        .map_err(|error| Failed::from(syn::Error::new(Span::call_site(), error.to_string())))?;
    let warnings = warnings(&diagnostics, &sources, &entry);
    Ok(expansion(&bundle, &tracked, &warnings))
}

fn add_entry(
    source: &Source,
    base: &Path,
    sources: &mut Sources,
    diagnostics: &mut Diagnostics,
) -> Result<Entry, Failed> {
    let entry = match source {
        Source::Tokens(tokens) => {
            let inline = Inline::new(tokens.clone());
            let file = sources.add_trusted(invoking_file(), &inline.text, base.to_path_buf());
            Entry {
                file,
                inline: Some(inline),
                span: Span::call_site(),
                text_start: 0,
            }
        }
        Source::Literal(literal) => {
            let (name, text, text_start) = literal_text(literal);
            let file = sources.add_trusted(name, text, base.to_path_buf());
            Entry {
                file,
                inline: None,
                span: literal.span(),
                text_start,
            }
        }
        Source::File(path) => {
            let full = base.join(path.value());
            let file = sources
                .load_as(&full, path.value(), diagnostics)
                .map_err(|error| {
                    syn::Error::new(
                        path.span(),
                        format!("cannot read `{}`: {error}", full.display()),
                    )
                })?;
            Entry {
                file,
                inline: None,
                span: path.span(),
                text_start: 0,
            }
        }
    };
    Ok(entry)
}

/// The name and text of a string literal's grammar, and where its value
/// starts in that text. A literal that holds its text verbatim (a raw
/// string, or one without escapes) is placed at its own line and column of
/// the Rust file, whose name it takes, so positions in diagnostics are the
/// Rust file's; any other is named after where it is.
fn literal_text(literal: &LitStr) -> (String, String, usize) {
    let value = literal.value();
    let span = literal.span();
    // Where the value starts in the literal's source (after `"`, `r#"`…),
    // if the source holds the value verbatim.
    let verbatim = span.source_text().and_then(|source| {
        let (open, close) = (source.find('"')?, source.rfind('"')?);
        (open < close && source[open + 1..close] == value).then_some(open + 1)
    });
    let start = span.start();
    let Some(prefix) = verbatim else {
        let name = format!(
            "the string at {}:{}:{}",
            invoking_file(),
            start.line,
            start.column + 1
        );
        return (name, value, 0);
    };
    let mut text = "\n".repeat(start.line.saturating_sub(1));
    text.push_str(&" ".repeat(start.column + prefix));
    let text_start = text.len();
    text.push_str(&value);
    (invoking_file(), text, text_start)
}

/// The vocabulary of the `tokenizer.json` (or `.json.gz`) at `path`, with
/// the end-of-sequence token of the `tokenizer_config.json` beside it if
/// there is one; and the files read.
fn load_vocabulary(path: &LitStr, base: &Path) -> Result<(Vocabulary, Vec<PathBuf>), Failed> {
    let full = base.join(path.value());
    let error = |message: String| Failed::from(syn::Error::new(path.span(), message));
    let json = read_maybe_gzipped(&full)
        .map_err(|e| error(format!("cannot read `{}`: {e}", full.display())))?;
    let mut files = vec![full.clone()];
    let config = ["tokenizer_config.json", "tokenizer_config.json.gz"]
        .iter()
        .map(|name| full.with_file_name(name))
        .find(|beside| beside.is_file());
    let config = match config {
        Some(beside) => {
            let bytes = read_maybe_gzipped(&beside)
                .map_err(|e| error(format!("cannot read `{}`: {e}", beside.display())))?;
            files.push(beside);
            Some(bytes)
        }
        None => None,
    };
    let vocabulary = Vocabulary::from_tokenizer_json(&json, config.as_deref())
        .map_err(|e| error(format!("`{}`: {e}", full.display())))?;
    Ok((vocabulary, files))
}

fn read_maybe_gzipped(path: &Path) -> std::io::Result<Vec<u8>> {
    let bytes = std::fs::read(path)?;
    if path.extension().is_some_and(|e| e == "gz") {
        let mut json = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut json)?;
        return Ok(json);
    }
    Ok(bytes)
}

/// The expression that stands for the grammar.
fn expansion(bundle: &[u8], tracked: &[PathBuf], warnings: &TokenStream) -> TokenStream {
    let includes = tracked.iter().map(|path| {
        let path = path.canonicalize().unwrap_or_else(|_| path.clone());
        let path = path.display().to_string();
        quote!(
            const _: &[u8] = ::core::include_bytes!(#path);
        )
    });
    let bytes = Literal::byte_string(bundle);
    quote!({
        #(#includes)*
        #warnings
        ::xg::StaticGrammar::new(#bytes)
    })
}

/// Every error of `diagnostics` as a `compile_error!`, then a placeholder
/// grammar so nothing else fails to type.
fn errors(diagnostics: &Diagnostics, sources: &Sources, entry: &Entry) -> TokenStream {
    let errors = diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|diagnostic| {
            let (first, last, message) = locate(diagnostic, sources, entry);
            compile_error(first, last, &message)
        });
    quote!({
        #(#errors)*
        ::xg::StaticGrammar::new(b"")
    })
}

/// Where the compiler should show `diagnostic`, and with what message: at
/// the exact tokens for a place in an inline grammar; otherwise at the
/// path or literal, with the source excerpt.
fn locate(diagnostic: &Diagnostic, sources: &Sources, entry: &Entry) -> (Span, Span, String) {
    let at = &diagnostic.primary.span;
    let in_entry = at.file == entry.file;
    let tokens = entry
        .inline
        .as_ref()
        .filter(|_| in_entry)
        .and_then(|inline| inline.spans(at.start, at.end));
    match tokens {
        Some((first, last)) => (first, last, short_message(diagnostic, sources)),
        // Not a place in the text (a missing entry rule): the message alone.
        None if in_entry && at.start < entry.text_start.max(1) => {
            (entry.span, entry.span, short_message(diagnostic, sources))
        }
        None => {
            // The excerpt, under the message and code said once.
            let excerpt = diagnostic.render(sources, false);
            let excerpt = excerpt.split_once('\n').map_or("", |(_, rest)| rest);
            let message = format!(
                "{} [{}]\n{}",
                diagnostic.message,
                diagnostic.code,
                excerpt.trim_end()
            );
            (entry.span, entry.span, message)
        }
    }
}

/// Every warning of `diagnostics` as the use of a deprecated item whose
/// note is the warning: the one way a procedural macro makes the Rust
/// compiler warn on stable. (`#[allow(deprecated)]` silences them.)
fn warnings(diagnostics: &Diagnostics, sources: &Sources, entry: &Entry) -> TokenStream {
    let warnings = diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Warning)
        .map(|diagnostic| {
            let (first, _, message) = locate(diagnostic, sources, entry);
            let name = Ident::new("grammar_warning", first);
            quote!(
                const _: () = {
                    #[allow(non_camel_case_types)]
                    #[deprecated(note = #message)]
                    struct #name;
                    let _ = #name;
                };
            )
        });
    quote!(#(#warnings)*)
}

/// A diagnostic whose excerpt the Rust compiler shows: its message, then
/// its labels and help as notes.
fn short_message(diagnostic: &Diagnostic, sources: &Sources) -> String {
    let mut message = format!("{} [{}]", diagnostic.message, diagnostic.code);
    // The compiler's underline says "here" already.
    if !matches!(diagnostic.primary.message.as_str(), "" | "here") {
        write!(message, "\n= note: {}", diagnostic.primary.message).ok();
    }
    for label in &diagnostic.secondary {
        let (line, column) = sources.line_column(label.span.file, label.span.start);
        let name = sources.name(label.span.file);
        let what = if label.message.is_empty() {
            "see"
        } else {
            &label.message
        };
        write!(message, "\n= note: {what}: {name}:{line}:{column}").ok();
    }
    for help in &diagnostic.help {
        write!(message, "\n= help: {help}").ok();
    }
    message
}

/// `::core::compile_error! { "message" }`, its path spanned at `first` and
/// its braces at `last`: the compiler underlines from one to the other.
fn compile_error(first: Span, last: Span, message: &str) -> TokenStream {
    let path = quote_spanned!(first=> ::core::compile_error!);
    let mut literal = Literal::string(message);
    literal.set_span(last);
    let mut body = Group::new(Delimiter::Brace, quote!(#literal));
    body.set_span(last);
    quote!(#path #body)
}
