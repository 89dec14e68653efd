//! The `.xg` lexer: text → tokens, with escapes decoded and lexical errors reported.
//!
//! The lexer does the context-sensitive work so the LALR(1) grammar stays
//! simple:
//!
//! - an identifier followed by `::=` is a [`Tok::RuleName`], so a rule body ends
//!   where the next rule begins without needing a separator; so is one
//!   followed by a bracketed attribute list and `::=` (`name [capture] ::=`),
//!   whose brackets are then [`Tok::LBracket`] and [`Tok::RBracket`] rather
//!   than a character class;
//! - `import`, `dispatch` and the XGrammar macro names are keywords only where
//!   they are used as such (`import "…"`, `dispatch {`/`dispatch (`,
//!   `Token (`), so they stay usable as rule names;
//! - string literals, character classes, `/regex/` terminals and the JSON
//!   object after `%json` are single tokens whose contents are decoded here.
//!
//! Errors (unterminated literals, bad escapes, reversed ranges, stray
//! characters) are recorded and lexing goes on, so one run reports them all.

use super::ast::{CharClass, ClassItem, Comment, PerlClass};
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::source::{FileId, Span};

/// The XGrammar macros xg accepts.
pub(crate) const MACROS: &[&str] = &[
    "TagDispatch",
    "Token",
    "ExcludeToken",
    "TokenTagDispatch",
    "Regex",
];

/// Whether the text at `at` is a bracketed list of attribute tokens
/// (names, numbers, strings, `=`, `,`, parentheses) followed by `::=`: a
/// rule's attributes (`[capture] ::=`), not a character class, which no
/// `::=` can follow.
fn attributes_then_rule(src: &str, at: usize) -> bool {
    let mut probe = Cursor::new(src);
    probe.pos = at;
    if probe.peek() != Some('[') {
        return false;
    }
    probe.bump();
    loop {
        probe.pos = probe.next_non_space();
        match probe.peek() {
            Some(']') => {
                probe.bump();
                return probe.src[probe.next_non_space()..].starts_with("::=");
            }
            Some('"') => {
                let open = probe.pos;
                probe.bump();
                probe.string_body(open);
                if !probe.errors.is_empty() {
                    return false;
                }
            }
            Some('=' | ',' | '(' | ')') => {
                probe.bump();
            }
            Some(c) if is_name_continue(c) => {
                while probe.peek().is_some_and(is_name_continue) {
                    probe.bump();
                }
            }
            _ => return false,
        }
    }
}

/// A token of the `.xg` language.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok {
    /// An identifier that starts a rule (it is followed by `::=`).
    RuleName(String),
    Ident(String),
    Int(u64),
    /// `-1` (XGrammar's spelling of an unbounded repetition).
    MinusOne,
    Str(String),
    Class(CharClass),
    Regex {
        pattern: String,
        flags: String,
    },
    /// The raw text of the JSON object after `%json` or `%python`.
    JsonObject(String),
    Import,
    Dispatch,
    Json,
    Python,
    Macro(String),
    DefinedAs,
    Pipe,
    LParen,
    RParen,
    LookaheadOpen,
    LBrace,
    RBrace,
    /// `[` opening a rule's attributes.
    LBracket,
    /// `]` closing a rule's attributes.
    RBracket,
    Comma,
    Question,
    Star,
    Plus,
    Eq,
    FatArrow,
    Semi,
    Dot,
}

/// A string decoded from source text, with the source offset of every byte.
pub(crate) struct Decoded {
    /// The decoded text.
    pub text: String,
    /// `offsets[i]` is the offset (in the scanned text) of the escape or
    /// character that produced byte `i` of `text`; one extra entry is the
    /// offset of the closing delimiter (or of the end, if there is none).
    pub offsets: Vec<usize>,
}

/// The tokens and comments of one file.
pub(crate) struct Lexed {
    pub tokens: Vec<(usize, Tok, usize)>,
    pub comments: Vec<Comment>,
    pub blank_lines: Vec<usize>,
}

/// Splits `text` into tokens, reporting lexical errors to `diagnostics`.
pub(crate) fn lex(file: FileId, text: &str, diagnostics: &mut Diagnostics) -> Lexed {
    let mut lexer = Lexer {
        cursor: Cursor::new(text),
        tokens: Vec::new(),
        comments: Vec::new(),
        blank_lines: Vec::new(),
        attributes: Attributes::Outside,
    };
    lexer.run(file);
    for error in lexer.cursor.errors {
        diagnostics.push(error.into_diagnostic(file));
    }
    Lexed {
        tokens: lexer.tokens,
        comments: lexer.comments,
        blank_lines: lexer.blank_lines,
    }
}

/// Decodes the string literal at the start of `source` (which begins with `"`).
pub(crate) fn decode_literal(source: &str) -> Decoded {
    let mut cursor = Cursor::new(source);
    cursor.bump();
    cursor.string_body(0)
}

/// Decodes the `/regex/` literal at the start of `source` (which begins with `/`).
pub(crate) fn decode_regex(source: &str) -> Decoded {
    let mut cursor = Cursor::new(source);
    cursor.bump();
    cursor.regex_body(0)
}

struct LexError {
    start: usize,
    end: usize,
    code: &'static str,
    message: String,
    label: String,
    help: Option<String>,
}

impl LexError {
    fn into_diagnostic(self, file: FileId) -> Diagnostic {
        let diagnostic = Diagnostic::error(
            self.code,
            self.message,
            Span::new(file, self.start, self.end),
            self.label,
        );
        match self.help {
            Some(help) => diagnostic.with_help(help),
            None => diagnostic,
        }
    }
}

struct Lexer<'a> {
    cursor: Cursor<'a>,
    tokens: Vec<(usize, Tok, usize)>,
    comments: Vec<Comment>,
    blank_lines: Vec<usize>,
    /// Where the lexer is in a rule's attribute list.
    attributes: Attributes,
}

/// Where the lexer is in a rule's attribute list (`name [capture] ::=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Attributes {
    /// Not in one: `[` opens a character class.
    Outside,
    /// After a rule name that has one: the next `[` opens it.
    Next,
    /// Inside it: `]` closes it.
    Inside,
}

impl Lexer<'_> {
    fn run(&mut self, file: FileId) {
        while let Some(c) = self.cursor.peek() {
            let start = self.cursor.pos;
            if c.is_whitespace() {
                self.cursor.bump();
                if c == '\n' {
                    let rest = &self.cursor.src[self.cursor.pos..];
                    let line = &rest[..rest.find('\n').unwrap_or(rest.len())];
                    if line.trim().is_empty() && rest.contains('\n') {
                        self.blank_lines.push(self.cursor.pos);
                    }
                }
                continue;
            }
            if c == '#' || self.cursor.starts_with("//") {
                let end = self.cursor.line_end();
                let line_start = self.cursor.src[..start].rfind('\n').map_or(0, |i| i + 1);
                self.comments.push(Comment {
                    text: self.cursor.src[start..end].trim_end().to_string(),
                    span: Span::new(file, start, end),
                    own_line: self.cursor.src[line_start..start].trim().is_empty(),
                });
                self.cursor.pos = end;
                continue;
            }
            let tok = self.token(c, start);
            if let Some(tok) = tok {
                self.tokens.push((start, tok, self.cursor.pos));
            }
        }
    }

    /// Lexes the token starting with `c` at `start`; `None` after an error
    /// that produced no token.
    fn token(&mut self, c: char, start: usize) -> Option<Tok> {
        let cursor = &mut self.cursor;
        let punct = |cursor: &mut Cursor, len: usize, tok: Tok| {
            cursor.pos += len;
            Some(tok)
        };
        match c {
            '"' => {
                cursor.bump();
                Some(Tok::Str(cursor.string_body(start).text))
            }
            '[' if self.attributes == Attributes::Next => {
                self.attributes = Attributes::Inside;
                punct(cursor, 1, Tok::LBracket)
            }
            ']' if self.attributes == Attributes::Inside => {
                self.attributes = Attributes::Outside;
                punct(cursor, 1, Tok::RBracket)
            }
            '[' => {
                cursor.bump();
                Some(Tok::Class(cursor.class_body(start)))
            }
            '/' => {
                cursor.bump();
                let pattern = cursor.regex_body(start).text;
                let flags_start = cursor.pos;
                while cursor.peek().is_some_and(|c| c.is_ascii_alphanumeric()) {
                    cursor.bump();
                }
                let flags = cursor.src[flags_start..cursor.pos].to_string();
                Some(Tok::Regex { pattern, flags })
            }
            '%' => self.directive(start),
            ':' if cursor.starts_with("::=") => punct(cursor, 3, Tok::DefinedAs),
            '(' if cursor.starts_with("(=") => punct(cursor, 2, Tok::LookaheadOpen),
            '=' if cursor.starts_with("=>") => punct(cursor, 2, Tok::FatArrow),
            '-' if cursor.starts_with("-1")
                && !cursor.src[start + 2..].starts_with(|c: char| c.is_ascii_digit()) =>
            {
                punct(cursor, 2, Tok::MinusOne)
            }
            '|' => punct(cursor, 1, Tok::Pipe),
            '(' => punct(cursor, 1, Tok::LParen),
            ')' => punct(cursor, 1, Tok::RParen),
            '{' => punct(cursor, 1, Tok::LBrace),
            '}' => punct(cursor, 1, Tok::RBrace),
            ',' => punct(cursor, 1, Tok::Comma),
            '?' => punct(cursor, 1, Tok::Question),
            '*' => punct(cursor, 1, Tok::Star),
            '+' => punct(cursor, 1, Tok::Plus),
            '=' => punct(cursor, 1, Tok::Eq),
            ';' => punct(cursor, 1, Tok::Semi),
            '.' => punct(cursor, 1, Tok::Dot),
            c if c.is_ascii_digit() => Some(self.integer(start)),
            c if is_name_start(c) => Some(self.word(start)),
            '\'' if cursor.single_quoted(start).is_some() => {
                // A string in single quotes (other EBNF dialects): one error,
                // and the text read as the string meant, so that nothing
                // follows from it (its letters are not rule names).
                let end = cursor.single_quoted(start).expect("checked above");
                let text = cursor.src[start + 1..end - 1].to_string();
                cursor.pos = end;
                cursor.error(
                    start,
                    end,
                    "single-quoted-string",
                    "string literals use double quotes",
                    "single quotes",
                    Some("write it in double quotes: \"…\""),
                );
                Some(Tok::Str(text))
            }
            _ => {
                cursor.bump();
                let (message, help) = match c {
                    ':' => (
                        "expected `::=`".to_string(),
                        Some("a rule is written `name ::= expression`"),
                    ),
                    '\'' => (
                        "unexpected `'`".to_string(),
                        Some("string literals use double quotes: \"…\""),
                    ),
                    _ => (format!("unexpected character `{}`", c.escape_debug()), None),
                };
                cursor.error(
                    start,
                    cursor.pos,
                    "unexpected-character",
                    message,
                    "not valid here",
                    help,
                );
                None
            }
        }
    }

    fn integer(&mut self, start: usize) -> Tok {
        let cursor = &mut self.cursor;
        while cursor.peek().is_some_and(|c| c.is_ascii_digit()) {
            cursor.bump();
        }
        let digits = &cursor.src[start..cursor.pos];
        if let Ok(value) = digits.parse() {
            Tok::Int(value)
        } else {
            let end = cursor.pos;
            cursor.error(
                start,
                end,
                "number-too-large",
                "number is too large",
                "does not fit in 64 bits",
                None,
            );
            Tok::Int(u64::MAX)
        }
    }

    fn word(&mut self, start: usize) -> Tok {
        let cursor = &mut self.cursor;
        while cursor.peek().is_some_and(is_name_continue) {
            cursor.bump();
        }
        let word = cursor.src[start..cursor.pos].to_string();
        let next = cursor.next_non_space();
        if cursor.src[next..].starts_with("::=") {
            return Tok::RuleName(word);
        }
        if self.attributes == Attributes::Outside && attributes_then_rule(cursor.src, next) {
            self.attributes = Attributes::Next;
            return Tok::RuleName(word);
        }
        let next_char = cursor.src[next..].chars().next();
        match (word.as_str(), next_char) {
            ("import", Some('"')) => Tok::Import,
            ("dispatch", Some('{' | '(')) => Tok::Dispatch,
            (name, Some('(')) if MACROS.contains(&name) => Tok::Macro(word),
            _ => Tok::Ident(word),
        }
    }

    /// `%json` or `%python` followed by a JSON object or a path string.
    fn directive(&mut self, start: usize) -> Option<Tok> {
        let cursor = &mut self.cursor;
        cursor.bump();
        while cursor.peek().is_some_and(is_name_continue) {
            cursor.bump();
        }
        let word = &cursor.src[start + 1..cursor.pos];
        let directive = if word == "python" {
            Tok::Python
        } else {
            Tok::Json
        };
        if word != "json" && word != "python" {
            let end = cursor.pos;
            let message = if word.is_empty() {
                "expected a directive name after `%`".to_string()
            } else {
                format!("unknown directive `%{word}`")
            };
            cursor.error(
                start,
                end,
                "unknown-directive",
                message,
                "",
                Some("the directives are `%json` and `%python`"),
            );
            // Go on as if it were `%json`, the likely intent, so nothing cascades.
        }
        self.tokens.push((start, directive, self.cursor.pos));
        let open = self.cursor.next_non_space();
        if self.cursor.src[open..].starts_with('{') {
            self.cursor.pos = open;
            let errors = self.cursor.errors.len();
            let end = self.cursor.json_object_end();
            // An unterminated object (reported) stands in as `{}`, so the
            // schema check does not report the same mistake again.
            let raw = if self.cursor.errors.len() > errors {
                "{}".to_string()
            } else {
                self.cursor.src[open..end].to_string()
            };
            self.tokens.push((open, Tok::JsonObject(raw), end));
        }
        None
    }
}

fn is_name_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_name_continue(c: char) -> bool {
    c == '_' || c == '-' || c == '.' || c.is_alphanumeric()
}

/// A position in source text, with the decoding routines shared by the
/// lexer and by later stages that need byte offsets inside a literal.
struct Cursor<'a> {
    src: &'a str,
    pos: usize,
    errors: Vec<LexError>,
}

/// What an escape sequence stands for.
enum Escaped {
    Char(char),
    Perl(PerlClass),
}

#[derive(Clone, Copy, PartialEq)]
enum Context {
    String,
    Class,
}

impl<'a> Cursor<'a> {
    fn new(src: &'a str) -> Self {
        Self {
            src,
            pos: 0,
            errors: Vec::new(),
        }
    }

    fn peek(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn starts_with(&self, s: &str) -> bool {
        self.src[self.pos..].starts_with(s)
    }

    fn line_end(&self) -> usize {
        self.src[self.pos..]
            .find('\n')
            .map_or(self.src.len(), |i| self.pos + i)
    }

    fn next_non_space(&self) -> usize {
        let rest = &self.src[self.pos..];
        self.pos + (rest.len() - rest.trim_start().len())
    }

    fn error(
        &mut self,
        start: usize,
        end: usize,
        code: &'static str,
        message: impl Into<String>,
        label: impl Into<String>,
        help: Option<&str>,
    ) {
        self.errors.push(LexError {
            start,
            end,
            code,
            message: message.into(),
            label: label.into(),
            help: help.map(str::to_string),
        });
    }

    /// The body of a string literal whose opening quote was at `open`.
    /// Where a string in single quotes opened at `open` ends (after its
    /// closing quote), if it closes on the same line without a backslash.
    fn single_quoted(&self, open: usize) -> Option<usize> {
        let rest = &self.src[open + 1..];
        let close = rest.find(['\'', '\n', '\r', '\\'])?;
        (rest.as_bytes()[close] == b'\'').then_some(open + 1 + close + 1)
    }

    fn string_body(&mut self, open: usize) -> Decoded {
        let mut decoded = Decoded {
            text: String::new(),
            offsets: Vec::new(),
        };
        loop {
            let at = self.pos;
            match self.peek() {
                None | Some('\n' | '\r') => {
                    let end = self.pos;
                    self.error(
                        open,
                        end,
                        "unterminated-string",
                        "unterminated string literal",
                        "this string is never closed",
                        Some(
                            "missing `\"`? A string cannot span lines; write a line break as `\\n`",
                        ),
                    );
                    break;
                }
                Some('"') => {
                    decoded.offsets.push(self.pos);
                    self.bump();
                    return decoded;
                }
                Some('\\') => {
                    self.bump();
                    if let Some(Escaped::Char(c)) = self.escape(at, Context::String) {
                        push_char(&mut decoded, c, at);
                    }
                }
                Some(c) => {
                    self.bump();
                    push_char(&mut decoded, c, at);
                }
            }
        }
        decoded.offsets.push(self.pos);
        decoded
    }

    /// The body of a `/regex/` whose opening slash was at `open`. `\/` becomes
    /// `/`; every other escape is kept for the regex parser.
    fn regex_body(&mut self, open: usize) -> Decoded {
        let mut decoded = Decoded {
            text: String::new(),
            offsets: Vec::new(),
        };
        loop {
            let at = self.pos;
            match self.peek() {
                None | Some('\n' | '\r') => {
                    let end = self.pos;
                    self.error(
                        open,
                        end,
                        "unterminated-regex",
                        "unterminated regular expression",
                        "this regex is never closed",
                        Some("missing `/`? Write a slash inside the pattern as `\\/`"),
                    );
                    break;
                }
                Some('/') => {
                    decoded.offsets.push(self.pos);
                    self.bump();
                    return decoded;
                }
                Some('\\') => {
                    self.bump();
                    match self.peek() {
                        Some('/') => {
                            self.bump();
                            push_char(&mut decoded, '/', at);
                        }
                        Some(c) if c != '\n' && c != '\r' => {
                            self.bump();
                            push_char(&mut decoded, '\\', at);
                            push_char(&mut decoded, c, at + 1);
                        }
                        _ => push_char(&mut decoded, '\\', at),
                    }
                }
                Some(c) => {
                    self.bump();
                    push_char(&mut decoded, c, at);
                }
            }
        }
        decoded.offsets.push(self.pos);
        decoded
    }

    /// The body of a character class whose `[` was at `open`.
    fn class_body(&mut self, open: usize) -> CharClass {
        let mut class = CharClass {
            negated: false,
            items: Vec::new(),
        };
        if self.peek() == Some('^') {
            self.bump();
            class.negated = true;
        }
        loop {
            let at = self.pos;
            let lo = match self.class_char(open) {
                ClassChar::End => break,
                ClassChar::Skip => continue,
                ClassChar::Item(Escaped::Perl(perl)) => {
                    class.items.push(ClassItem::Perl(perl));
                    continue;
                }
                ClassChar::Item(Escaped::Char(c)) => c,
            };
            let is_range = self.peek() == Some('-') && !self.src[self.pos + 1..].starts_with(']');
            if !is_range {
                class.items.push(ClassItem::Range(lo, lo));
                continue;
            }
            self.bump();
            match self.class_char(open) {
                ClassChar::End => {
                    // Unterminated (reported); keep what was read.
                    class.items.push(ClassItem::Range(lo, lo));
                    break;
                }
                ClassChar::Skip => {}
                ClassChar::Item(Escaped::Perl(_)) => {
                    let end = self.pos;
                    self.error(
                        at,
                        end,
                        "bad-range",
                        "a range cannot end in a class escape",
                        "",
                        Some("write `-` as `\\-` to match it literally"),
                    );
                }
                ClassChar::Item(Escaped::Char(hi)) if hi < lo => {
                    let end = self.pos;
                    self.error(
                        at,
                        end,
                        "reversed-range",
                        format!(
                            "reversed range `{}-{}`",
                            lo.escape_debug(),
                            hi.escape_debug()
                        ),
                        "the start of this range is after its end",
                        Some(&format!(
                            "write it as `{}-{}`",
                            hi.escape_debug(),
                            lo.escape_debug()
                        )),
                    );
                    // Keep the characters so later checks do not cascade.
                    class.items.push(ClassItem::Range(hi, lo));
                }
                ClassChar::Item(Escaped::Char(hi)) => class.items.push(ClassItem::Range(lo, hi)),
            }
        }
        class
    }

    fn class_char(&mut self, open: usize) -> ClassChar {
        let at = self.pos;
        match self.peek() {
            None | Some('\n' | '\r') => {
                let end = self.pos;
                self.error(
                    open,
                    end,
                    "unterminated-class",
                    "unterminated character class",
                    "this class is never closed",
                    Some("missing `]`? Write a literal `]` inside a class as `\\]`"),
                );
                ClassChar::End
            }
            Some(']') => {
                self.bump();
                ClassChar::End
            }
            Some('\\') => {
                self.bump();
                self.escape(at, Context::Class)
                    .map_or(ClassChar::Skip, ClassChar::Item)
            }
            Some(c) => {
                self.bump();
                ClassChar::Item(Escaped::Char(c))
            }
        }
    }

    /// Decodes the escape whose backslash was at `at` (already consumed).
    fn escape(&mut self, at: usize, context: Context) -> Option<Escaped> {
        let Some(c) = self.peek() else {
            self.error(
                at,
                self.pos,
                "bad-escape",
                "incomplete escape at end of input",
                "",
                None,
            );
            return None;
        };
        if c == '\n' || c == '\r' {
            self.error(
                at,
                self.pos,
                "bad-escape",
                "incomplete escape at end of line",
                "",
                None,
            );
            return None;
        }
        self.bump();
        let simple = match c {
            '"' | '\\' | '/' | '\'' | '?' => Some(c),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'b' => Some('\u{8}'),
            'f' => Some('\u{c}'),
            'a' => Some('\u{7}'),
            'v' => Some('\u{b}'),
            '0' => Some('\0'),
            'e' => Some('\u{1b}'),
            '-' | ']' | '[' | '^' | '$' | '.' | '*' | '+' | '(' | ')' | '{' | '}' | '|'
                if context == Context::Class =>
            {
                Some(c)
            }
            _ => None,
        };
        if let Some(c) = simple {
            return Some(Escaped::Char(c));
        }
        let perl = match c {
            'd' => Some(PerlClass::Digit),
            'D' => Some(PerlClass::NotDigit),
            'w' => Some(PerlClass::Word),
            'W' => Some(PerlClass::NotWord),
            's' => Some(PerlClass::Space),
            'S' => Some(PerlClass::NotSpace),
            _ => None,
        };
        match (perl, context) {
            (Some(perl), Context::Class) => return Some(Escaped::Perl(perl)),
            (Some(_), Context::String) => {
                let end = self.pos;
                self.error(
                    at,
                    end,
                    "bad-escape",
                    format!("class escape `\\{c}` in a string literal"),
                    "only valid inside `[…]`",
                    Some(&format!("use a class such as `[\\{c}]` outside the string")),
                );
                return None;
            }
            (None, _) => {}
        }
        let digits = match c {
            'x' => (1, 8),
            'u' => (4, 4),
            'U' => (8, 8),
            _ => {
                let end = self.pos;
                let help = match context {
                    Context::String => {
                        "valid escapes: \\\" \\\\ \\/ \\' \\n \\r \\t \\b \\f \\a \\v \\0 \\e \\xHH \\uHHHH \\UHHHHHHHH"
                    }
                    Context::Class => {
                        "valid escapes: those of strings, \\- \\] \\[ \\^ and \\d \\D \\w \\W \\s \\S"
                    }
                };
                self.error(
                    at,
                    end,
                    "bad-escape",
                    format!("unknown escape `\\{}`", c.escape_debug()),
                    "",
                    Some(help),
                );
                return None;
            }
        };
        self.hex_escape(at, c, digits)
    }

    /// `\x` (1–8 hex digits), `\u` (4) or `\U` (8), after the letter.
    fn hex_escape(
        &mut self,
        at: usize,
        letter: char,
        (least, most): (usize, usize),
    ) -> Option<Escaped> {
        let start = self.pos;
        while self.pos - start < most && self.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
            self.bump();
        }
        let hex = &self.src[start..self.pos];
        if hex.len() < least {
            let end = self.pos;
            let expected = if least == most {
                format!("exactly {least}")
            } else {
                format!("{least} to {most}")
            };
            self.error(
                at,
                end,
                "bad-escape",
                format!("`\\{letter}` needs {expected} hex digits"),
                "",
                None,
            );
            return None;
        }
        let value = u32::from_str_radix(hex, 16).unwrap_or(u32::MAX);
        if let Some(c) = char::from_u32(value) {
            Some(Escaped::Char(c))
        } else {
            let end = self.pos;
            self.error(
                at,
                end,
                "bad-escape",
                format!("`\\{letter}{hex}` is not a Unicode scalar value"),
                "surrogates and values above 10FFFF are not characters",
                None,
            );
            None
        }
    }

    /// Scans the JSON object starting at `self.pos` (a `{`) to its matching `}`,
    /// skipping braces inside JSON strings; returns the end offset.
    fn json_object_end(&mut self) -> usize {
        let open = self.pos;
        let mut depth = 0usize;
        let mut in_string = false;
        while let Some(c) = self.bump() {
            match (in_string, c) {
                (true, '\\') => {
                    self.bump();
                }
                (_, '"') => in_string = !in_string,
                (false, '{' | '[') => depth += 1,
                (false, '}' | ']') => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return self.pos;
                    }
                }
                _ => {}
            }
        }
        self.error(
            open,
            open + 1,
            "unterminated-json",
            "unterminated JSON object",
            "this `{` is never closed",
            Some("the schema after `%json` must be one complete JSON object"),
        );
        self.pos
    }
}

enum ClassChar {
    End,
    Skip,
    Item(Escaped),
}

fn push_char(decoded: &mut Decoded, c: char, at: usize) {
    let mut buffer = [0; 4];
    for _ in c.encode_utf8(&mut buffer).bytes() {
        decoded.offsets.push(at);
    }
    decoded.text.push(c);
}

#[cfg(test)]
mod tests {
    use super::{Tok, decode_literal, decode_regex, lex};
    use crate::diagnostic::Diagnostics;
    use crate::source::Sources;

    fn tokens(text: &str) -> Vec<Tok> {
        let mut sources = Sources::new();
        let file = sources.add("t.xg", text, None);
        let mut diagnostics = Diagnostics::new();
        let lexed = lex(file, text, &mut diagnostics);
        assert!(
            diagnostics.is_empty(),
            "{}",
            diagnostics.render(&sources, false)
        );
        lexed.tokens.into_iter().map(|(_, tok, _)| tok).collect()
    }

    #[test]
    fn keywords_depend_on_what_follows() {
        let ident = |s: &str| Tok::Ident(s.to_string());
        assert_eq!(
            tokens("dispatch import Token x"),
            [
                ident("dispatch"),
                ident("import"),
                ident("Token"),
                ident("x")
            ]
        );
        assert_eq!(tokens("dispatch {")[0], Tok::Dispatch);
        assert_eq!(tokens("import \"a\"")[0], Tok::Import);
        assert_eq!(tokens("Token (1)")[0], Tok::Macro("Token".into()));
        assert_eq!(
            tokens("dispatch\n  ::= x")[0],
            Tok::RuleName("dispatch".into())
        );
    }

    #[test]
    fn minus_one_only_alone() {
        assert_eq!(tokens("{1,-1}")[3], Tok::MinusOne);
        assert!(matches!(tokens("a-1")[0], Tok::Ident(ref s) if s == "a-1"));
    }

    #[test]
    fn hex_escapes_are_greedy_and_offsets_point_at_escapes() {
        let decoded = decode_literal(r#""\x41BC\u00e9z""#);
        assert_eq!(decoded.text, "\u{41BC}\u{e9}z");
        // Each byte maps to the start of the escape that produced it.
        assert_eq!(decoded.offsets, [1, 1, 1, 7, 7, 13, 14]);
    }

    #[test]
    fn regex_literals_unescape_only_slashes() {
        assert_eq!(decode_regex(r"/a\/b\d\\/").text, r"a/b\d\\");
        assert_eq!(
            tokens(r"/x\/y/is z"),
            [
                Tok::Regex {
                    pattern: "x/y".into(),
                    flags: "is".into()
                },
                Tok::Ident("z".into())
            ]
        );
    }
}
