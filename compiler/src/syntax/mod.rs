//! Syntax: `.xg` text → [`ast::File`], with every syntax error reported.
//!
//! # Overview
//!
//! - [`parse`] lexes a file (`lexer.rs`), splits the tokens into items at each
//!   rule name and `import`, and parses each item with the LALRPOP grammar
//!   (`grammar.lalrpop`). An error in one rule does not hide errors in the
//!   next: every item is parsed on its own.
//! - [`ast`] is the tree as written; [`print()`] turns it back into canonical
//!   text (`xg fmt`).
//!
//! ```
//! use xg_compiler::{Diagnostics, Sources, syntax};
//!
//! let mut sources = Sources::new();
//! let file = sources.add("example.xg", "root ::= \"yes\" | \"no\"", None);
//! let mut diagnostics = Diagnostics::new();
//! let ast = syntax::parse(file, sources.text(file), &mut diagnostics);
//! assert!(diagnostics.is_empty());
//! assert_eq!(syntax::print(&ast), "root ::= \"yes\" | \"no\"\n");
//! ```

pub mod ast;
mod lexer;
pub(crate) mod print;

use lalrpop_util::ParseError;

use self::ast::{Expr, ExprKind};
use self::lexer::Tok;
pub(crate) use self::lexer::{decode_literal, decode_regex};
pub use self::print::print;
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::source::{FileId, Span};

lalrpop_util::lalrpop_mod!(
    #[allow(clippy::all, clippy::pedantic, missing_docs, unused_qualifications)]
    grammar,
    "/syntax/grammar.rs"
);

/// Parses one `.xg` file. Syntax errors go to `diagnostics`; the returned file
/// holds every item that parsed, and every rule that did not with an empty
/// body (so its name still resolves).
pub fn parse(file: FileId, text: &str, diagnostics: &mut Diagnostics) -> ast::File {
    let lexed = lexer::lex(file, text, diagnostics);
    let tokens = lexed.tokens;
    let starts: Vec<usize> = tokens
        .iter()
        .enumerate()
        .filter(|(_, (_, tok, _))| matches!(tok, Tok::RuleName(_) | Tok::Import))
        .map(|(i, _)| i)
        .collect();

    let first = starts.first().copied().unwrap_or(tokens.len());
    if first > 0 {
        let (start, _, end) = &tokens[0];
        diagnostics.push(
            Diagnostic::error(
                "expected-rule",
                "expected a rule or an import",
                Span::new(file, *start, *end),
                "this is not inside a rule",
            )
            .with_help(
                "a rule is written `name ::= expression`; an import `import \"path.xg\" as name;`",
            ),
        );
    }

    let parser = grammar::ItemParser::new();
    let mut items = Vec::new();
    // Where in `items` the rules rebuilt after a syntax error are.
    let mut recovered_rules = Vec::new();
    for (k, &start) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(tokens.len());
        let chunk = &tokens[start..end];
        if let Some(at) = too_deep(chunk) {
            diagnostics.push(
                Diagnostic::error(
                    "nesting-too-deep",
                    format!("groups are nested more than {MAX_NESTING} deep"),
                    Span::new(file, at.0, at.1),
                    "too deep here",
                )
                .with_help("split the expression into rules"),
            );
            if let Some(rule) = placeholder_rule(file, chunk) {
                recovered_rules.push(items.len());
                items.push(rule);
            }
            continue;
        }
        let mut recovered = Vec::new();
        let parsed = parser.parse(
            file,
            &mut recovered,
            chunk.iter().cloned().map(Ok::<_, UserError>),
        );
        for error in recovered {
            diagnostics.push(error.into_diagnostic());
        }
        match parsed {
            Ok(item) => items.push(item),
            Err(error) => {
                diagnostics.push(parse_error(file, chunk, error));
                if let Some(rule) = placeholder_rule(file, chunk) {
                    recovered_rules.push(items.len());
                    items.push(rule);
                }
            }
        }
    }
    keep_defined_references(&mut items, &recovered_rules);
    ast::File {
        items,
        comments: lexed.comments,
        blank_lines: lexed.blank_lines,
    }
}

/// In the rules recovered from syntax errors (at `recovered` in `items`),
/// keeps only the references to rules the file defines or imports: the
/// words of a broken body may be anything (`once` in `dispatch(once {`),
/// and an "undefined rule" made up from them would be noise.
fn keep_defined_references(items: &mut [ast::Item], recovered: &[usize]) {
    let mut defined: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut aliases: std::collections::HashSet<String> = std::collections::HashSet::new();
    for item in items.iter() {
        match item {
            ast::Item::Rule(rule) => {
                defined.insert(rule.name.text.clone());
            }
            ast::Item::Import(import) => {
                aliases.insert(import.alias.text.clone());
            }
        }
    }
    let known = |name: &str| match name.split_once('.') {
        Some((alias, _)) => aliases.contains(alias),
        None => defined.contains(name),
    };
    for &at in recovered {
        let ast::Item::Rule(rule) = &mut items[at] else {
            continue;
        };
        let references: Vec<Expr> = match std::mem::replace(&mut rule.body.kind, ExprKind::Empty) {
            ExprKind::Sequence(items) => items,
            kind => vec![Expr {
                kind,
                span: rule.body.span,
            }],
        };
        let kept: Vec<Expr> = references
            .into_iter()
            .filter(|expr| matches!(&expr.kind, ExprKind::Ref(name) if known(name)))
            .collect();
        if !kept.is_empty() {
            rule.body = sequence(kept, rule.body.span);
        }
    }
}

/// How deep parentheses, braces and lookaheads may nest in one item. Every
/// later stage walks expressions recursively; this bound keeps their stack
/// use small on any input (XGrammar's bound is 1000).
pub const MAX_NESTING: usize = 200;

/// The span of the first opening token past [`MAX_NESTING`], if any.
fn too_deep(chunk: &[(usize, Tok, usize)]) -> Option<(usize, usize)> {
    let mut depth = 0usize;
    for (start, tok, end) in chunk {
        match tok {
            Tok::LParen | Tok::LBrace | Tok::LookaheadOpen => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Some((*start, *end));
                }
            }
            Tok::RParen | Tok::RBrace => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// A rule whose body failed to parse is kept, so that one error does not
/// cause many: its name still resolves, and its body is the words of the
/// broken body as references, in order (then only those naming rules the
/// file has: [`keep_defined_references`]), so the rules it uses count as
/// used.
fn placeholder_rule(file: FileId, chunk: &[(usize, Tok, usize)]) -> Option<ast::Item> {
    let (start, Tok::RuleName(name), name_end) = chunk.first()? else {
        return None;
    };
    let end = chunk.last().map_or(*name_end, |(_, _, end)| *end);
    let span = Span::new(file, *start, end);
    let references: Vec<Expr> = chunk
        .iter()
        .filter_map(|(start, tok, end)| match tok {
            Tok::Ident(name) => Some(Expr {
                kind: ExprKind::Ref(name.clone()),
                span: Span::new(file, *start, *end),
            }),
            _ => None,
        })
        .collect();
    let body = if references.is_empty() {
        Expr {
            kind: ExprKind::Empty,
            span,
        }
    } else {
        sequence(references, span)
    };
    Some(ast::Item::Rule(ast::Rule {
        name: ast::Name {
            text: name.clone(),
            span: Span::new(file, *start, *name_end),
        },
        attributes: Vec::new(),
        body,
        lookahead: None,
        span,
    }))
}

/// An error raised by a grammar action (a semantic check during parsing).
#[derive(Clone, Debug)]
pub(crate) struct UserError {
    span: Span,
    message: String,
    label: String,
    help: Option<String>,
}

impl UserError {
    pub(crate) fn new(span: Span, message: impl Into<String>, label: impl Into<String>) -> Self {
        Self {
            span,
            message: message.into(),
            label: label.into(),
            help: None,
        }
    }

    pub(crate) fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    fn into_diagnostic(self) -> Diagnostic {
        let diagnostic = Diagnostic::error("invalid-syntax", self.message, self.span, self.label);
        match self.help {
            Some(help) => diagnostic.with_help(help),
            None => diagnostic,
        }
    }
}

/// Builds `a | b | …`, splicing nested choices so the tree stays flat.
pub(crate) fn choice(first: Expr, rest: Vec<Expr>, span: Span) -> Expr {
    if rest.is_empty() {
        return first;
    }
    let mut items = Vec::with_capacity(rest.len() + 1);
    for expr in std::iter::once(first).chain(rest) {
        match expr.kind {
            ExprKind::Choice(inner) => items.extend(inner),
            kind => items.push(Expr {
                kind,
                span: expr.span,
            }),
        }
    }
    Expr {
        kind: ExprKind::Choice(items),
        span,
    }
}

/// Builds `a b …`, splicing nested sequences so the tree stays flat.
pub(crate) fn sequence(mut exprs: Vec<Expr>, span: Span) -> Expr {
    if exprs.len() == 1 {
        return exprs.pop().expect("one item");
    }
    let mut items = Vec::with_capacity(exprs.len());
    for expr in exprs {
        match expr.kind {
            ExprKind::Sequence(inner) => items.extend(inner),
            kind => items.push(Expr {
                kind,
                span: expr.span,
            }),
        }
    }
    Expr {
        kind: ExprKind::Sequence(items),
        span,
    }
}

fn parse_error(
    file: FileId,
    chunk: &[(usize, Tok, usize)],
    error: ParseError<usize, Tok, UserError>,
) -> Diagnostic {
    let diagnostic = describe_parse_error(file, chunk, error);
    let is_import = matches!(chunk.first(), Some((_, Tok::Import, _)));
    if is_import && diagnostic.help.is_empty() {
        diagnostic.with_help("an import is written `import \"path.xg\" as name;`")
    } else {
        diagnostic
    }
}

fn describe_parse_error(
    file: FileId,
    chunk: &[(usize, Tok, usize)],
    error: ParseError<usize, Tok, UserError>,
) -> Diagnostic {
    let what = match chunk.first() {
        Some((_, Tok::RuleName(name), _)) => format!("rule `{name}`"),
        _ => "import".to_string(),
    };
    match error {
        ParseError::UnrecognizedToken {
            token: (start, tok, end),
            expected,
        } => {
            let span = Span::new(file, start, end);
            let before: Vec<&Tok> = chunk
                .iter()
                .take_while(|(s, _, _)| *s < start)
                .map(|(_, t, _)| t)
                .collect();
            let open = before.iter().fold(0i64, |depth, tok| match tok {
                Tok::LParen | Tok::LBrace | Tok::LookaheadOpen => depth + 1,
                Tok::RParen | Tok::RBrace => depth - 1,
                _ => depth,
            });
            let (message, label) = if matches!(tok, Tok::RParen | Tok::RBrace) && open <= 0 {
                (
                    format!("unmatched {} in {what}", describe(&tok)),
                    "nothing opens it".to_string(),
                )
            } else if expected.iter().all(|e| e.contains("(=")) {
                // Only a lookahead could follow: the body is complete.
                (
                    format!("unexpected {} in {what}", describe(&tok)),
                    format!("the body of the {what} ends before this"),
                )
            } else {
                (
                    format!("unexpected {} in {what}", describe(&tok)),
                    format!("expected {}", expected_list(&expected)),
                )
            };
            let diagnostic = Diagnostic::error("unexpected-token", message, span, label);
            let after_quantifier = matches!(
                before.last(),
                Some(Tok::Question | Tok::Star | Tok::Plus | Tok::RBrace)
            );
            match tok {
                Tok::Question | Tok::Star | Tok::Plus | Tok::LBrace if after_quantifier => {
                    diagnostic.with_help("to repeat a repetition, group it first: `(x*)+`")
                }
                Tok::Eq => diagnostic.with_help("a rule is written `name ::= expression`"),
                _ if before.contains(&&Tok::LookaheadOpen) => {
                    diagnostic.with_help("a lookahead `(= …)` can only end a rule's body")
                }
                _ => diagnostic,
            }
        }
        ParseError::UnrecognizedEof { expected, .. } => {
            let (start, end) = chunk.last().map_or((0, 0), |(s, _, e)| (*s, *e));
            Diagnostic::error(
                "unexpected-end",
                format!("{what} ends too early"),
                Span::new(file, start, end),
                format!("expected {} after this", expected_list(&expected)),
            )
        }
        ParseError::User { error } => error.into_diagnostic(),
        // The lexer is external and every item is parsed to its end, so these
        // do not occur; report them plainly all the same.
        ParseError::InvalidToken { location }
        | ParseError::ExtraToken {
            token: (location, _, _),
        } => Diagnostic::error(
            "invalid-syntax",
            format!("invalid {what}"),
            Span::new(file, location, location),
            "",
        ),
    }
}

fn describe(tok: &Tok) -> String {
    match tok {
        Tok::RuleName(name) => format!("rule name `{name}`"),
        Tok::Ident(name) => format!("name `{name}`"),
        Tok::Macro(name) => format!("macro `{name}`"),
        Tok::Int(n) => format!("number `{n}`"),
        Tok::MinusOne => "`-1`".into(),
        Tok::Str(_) => "string".into(),
        Tok::Class(_) => "character class".into(),
        Tok::Regex { .. } => "regex".into(),
        Tok::JsonObject(_) => "JSON object".into(),
        Tok::Import => "`import`".into(),
        Tok::Dispatch => "`dispatch`".into(),
        Tok::Json => "`%json`".into(),
        Tok::Python => "`%python`".into(),
        Tok::DefinedAs => "`::=`".into(),
        Tok::Pipe => "`|`".into(),
        Tok::LParen => "`(`".into(),
        Tok::RParen => "`)`".into(),
        Tok::LookaheadOpen => "`(=`".into(),
        Tok::LBrace => "`{`".into(),
        Tok::RBrace => "`}`".into(),
        Tok::LBracket => "`[`".into(),
        Tok::RBracket => "`]`".into(),
        Tok::Comma => "`,`".into(),
        Tok::Question => "`?`".into(),
        Tok::Star => "`*`".into(),
        Tok::Plus => "`+`".into(),
        Tok::Eq => "`=`".into(),
        Tok::FatArrow => "`=>`".into(),
        Tok::Semi => "`;`".into(),
        Tok::Dot => "`.`".into(),
    }
}

/// Turns LALRPOP's expected-terminal list into words: the terminals that can
/// start an expression are summarised as "an expression".
fn expected_list(expected: &[String]) -> String {
    const EXPRESSION_STARTS: &[&str] = &[
        "string",
        "character class",
        ".",
        "regex",
        "identifier",
        "(",
        "macro name",
        "dispatch",
        "%json",
        "%python",
    ];
    let names: Vec<String> = expected
        .iter()
        .map(|e| e.trim_matches('"').replace("\\\"", "\""))
        .collect();
    let starts = names
        .iter()
        .filter(|n| EXPRESSION_STARTS.contains(&n.as_str()))
        .count();
    let mut words: Vec<String> = Vec::new();
    for name in &names {
        if starts >= 3 && EXPRESSION_STARTS.contains(&name.as_str()) {
            continue;
        }
        words.push(match name.as_str() {
            "identifier" => "a name".into(),
            "integer" => "a number".into(),
            "string" => "a string".into(),
            "character class" => "a character class".into(),
            "regex" => "a regex".into(),
            "macro name" => "a macro".into(),
            "JSON object" => "a JSON object".into(),
            "rule name" => "a rule".into(),
            other => format!("`{other}`"),
        });
    }
    if starts >= 3 {
        words.push("an expression".into());
    }
    match words.len() {
        0 => "nothing more".into(),
        1 => words.remove(0),
        n => format!("{} or {}", words[..n - 1].join(", "), words[n - 1]),
    }
}
