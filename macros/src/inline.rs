//! An inline grammar's text, rebuilt from the macro's tokens.
//!
//! Each token is written where it stands in the Rust file — same line, same
//! column — so the `.xg` text has the user's layout and line numbers, and
//! each token's exact spelling (`Span::source_text`). Every piece of text
//! remembers the span it came from: a diagnostic's byte range in the text
//! maps back to the tokens the compiler error should point at.
//!
//! Comments are the Rust lexer's: `//` and `/* */` vanish before the macro
//! sees its input (doc comments arrive as attributes and are dropped here).

use proc_macro2::{Delimiter, LineColumn, Span, TokenStream, TokenTree};

/// The rebuilt text and where each of its tokens came from.
pub(crate) struct Inline {
    /// The grammar's text, laid out as in the Rust file.
    pub text: String,
    /// The tokens' byte ranges in `text`, in order, with their spans.
    pieces: Vec<Piece>,
}

struct Piece {
    start: usize,
    end: usize,
    span: Span,
}

impl Inline {
    /// Rebuilds the text of `tokens`.
    pub(crate) fn new(tokens: TokenStream) -> Self {
        let mut writer = Writer {
            inline: Inline {
                text: String::new(),
                pieces: Vec::new(),
            },
            at: LineColumn { line: 1, column: 0 },
        };
        writer.stream(tokens);
        writer.inline
    }

    /// The spans of the first and the last token that the byte range
    /// `start..end` of the text touches (an empty range: the token at or
    /// after it), or `None` if there are no tokens.
    pub(crate) fn spans(&self, start: usize, end: usize) -> Option<(Span, Span)> {
        let touched: Vec<&Piece> = self
            .pieces
            .iter()
            .filter(|p| p.start < end.max(start + 1) && p.end > start)
            .collect();
        let (first, last) = match (touched.first(), touched.last()) {
            (Some(first), Some(last)) => (*first, *last),
            _ => {
                let next = self.pieces.iter().find(|p| p.start >= start);
                let piece = next.or(self.pieces.last())?;
                (piece, piece)
            }
        };
        Some((first.span, last.span))
    }
}

struct Writer {
    inline: Inline,
    /// Where the end of the text is in the Rust file.
    at: LineColumn,
}

impl Writer {
    fn stream(&mut self, tokens: TokenStream) {
        let mut tokens = tokens.into_iter().peekable();
        while let Some(token) = tokens.next() {
            match token {
                TokenTree::Group(group) => {
                    let (open, close) = match group.delimiter() {
                        Delimiter::Parenthesis => ("(", ")"),
                        Delimiter::Bracket => ("[", "]"),
                        Delimiter::Brace => ("{", "}"),
                        Delimiter::None => ("", ""),
                    };
                    self.piece(group.span_open(), open);
                    self.stream(group.stream());
                    self.piece(group.span_close(), close);
                }
                TokenTree::Punct(punct)
                    if punct.as_char() == '#' && is_doc_comment(punct.span()) =>
                {
                    // A doc comment: `#` and its `[doc = "…"]`.
                    tokens.next();
                }
                TokenTree::Ident(_) | TokenTree::Punct(_) | TokenTree::Literal(_) => {
                    let text = token
                        .span()
                        .source_text()
                        .unwrap_or_else(|| token.to_string());
                    self.piece(token.span(), &text);
                }
            }
        }
    }

    /// Writes `text` where `span` starts, then records it as one piece.
    fn piece(&mut self, span: Span, text: &str) {
        if text.is_empty() {
            return;
        }
        self.move_to(span.start());
        let start = self.inline.text.len();
        self.inline.text.push_str(text);
        self.inline.pieces.push(Piece {
            start,
            end: self.inline.text.len(),
            span,
        });
        match text.rfind('\n') {
            Some(newline) => {
                self.at.line += text.matches('\n').count();
                self.at.column = text[newline + 1..].chars().count();
            }
            None => self.at.column += text.chars().count(),
        }
    }

    /// Pads the text to `to`: line breaks, then spaces. Tokens without a
    /// position ahead of the last one (made by other macros) get one space.
    fn move_to(&mut self, to: LineColumn) {
        let text = &mut self.inline.text;
        if to.line > self.at.line {
            text.extend(std::iter::repeat_n('\n', to.line - self.at.line));
            self.at = LineColumn {
                line: to.line,
                column: 0,
            };
        }
        if to.line == self.at.line && to.column >= self.at.column {
            text.extend(std::iter::repeat_n(' ', to.column - self.at.column));
            self.at.column = to.column;
        } else if !text.is_empty() && !text.ends_with(char::is_whitespace) {
            text.push(' ');
            self.at.column += 1;
        }
    }
}

/// Whether the `#` at `span` stands for a doc comment (`///`, `//!`, `/**`).
fn is_doc_comment(span: Span) -> bool {
    span.source_text()
        .is_some_and(|text| text.starts_with("//") || text.starts_with("/*"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn rebuild(text: &str) -> Inline {
        Inline::new(TokenStream::from_str(text).expect("tokens"))
    }

    #[test]
    fn layout_and_spelling_are_kept() {
        let source = "root ::= \"yes\" | number\n   number ::= [0-9]+ \"\\n\"";
        assert_eq!(rebuild(source).text, source);
    }

    #[test]
    fn comments_become_blank() {
        let inline = rebuild("a ::= \"x\" // a comment\n/* block */ b ::= [a-z]");
        assert_eq!(inline.text, "a ::= \"x\"\n            b ::= [a-z]");
    }

    #[test]
    fn byte_ranges_map_to_the_tokens_they_touch() {
        let inline = rebuild("root ::= numbr\nnumber ::= [0-9]+");
        let at = |start: usize, end: usize| {
            let (first, last) = inline.spans(start, end).expect("tokens");
            (first.start(), last.end())
        };
        let lc = |line, column| LineColumn { line, column };
        // `numbr`, exactly.
        assert_eq!(at(9, 14), (lc(1, 9), lc(1, 14)));
        // `[0-9]`: from the bracket to the bracket.
        assert_eq!(at(26, 31), (lc(2, 11), lc(2, 16)));
        // An empty range in whitespace: the next token.
        assert_eq!(at(14, 14), (lc(2, 0), lc(2, 6)));
        // At the end of the text: the last token.
        assert_eq!(at(99, 99), (lc(2, 16), lc(2, 17)));
    }
}
