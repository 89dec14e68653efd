//! The regex front end: a regular expression that arrives with a request
//! (`response_format: {"type": "regex"}`, a structural tag's `regex`) →
//! a one-rule grammar matching exactly the strings the pattern matches
//! in full.
//!
//! The dialect is regex-syntax's (Rust's `regex` crate): Unicode classes
//! (`\p{Greek}`, `\d` as Unicode digits, `[[:alpha:]]`), inline flags
//! (`(?i)`, `(?s)`), counted repetition of any size (compressed, not
//! unrolled). The pattern is anchored at both ends: `^` at its start and
//! `$` at its end are allowed and change nothing. Backreferences,
//! look-around and word boundaries match something other than a language
//! of strings, so they are errors pointing into the pattern. The same
//! checks and translation serve `.xg` regex terminals (`/…/`, `Regex(…)`).

use regex_syntax::ast::{self, Ast};
use regex_syntax::hir::translate::TranslatorBuilder;
use xg_runtime::RuleId;

use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::source::{FileId, Span};
use crate::tree;

/// How a pattern is read, as XGrammar's regex options are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Letters match in either case (the `i` flag).
    pub case_insensitive: bool,
    /// `.` also matches a line feed (the `s` flag).
    pub dot_matches_new_line: bool,
    /// The match must also be a JSON string body as written: no `"`, `\`
    /// or control character (XGrammar's `json_string=true`), for a pattern
    /// that constrains the text between a JSON string's quotes.
    pub json_string: bool,
}

/// The regex terminal for `pattern` read with `options`, checked.
/// `locate(start, end)` maps a byte range of the pattern to source.
pub(crate) fn terminal(
    pattern: &str,
    options: Options,
    locate: &dyn Fn(usize, usize) -> Span,
    diagnostics: &mut Diagnostics,
) -> Option<tree::Regex> {
    let regex = tree::Regex {
        pattern: pattern.to_string(),
        case_insensitive: options.case_insensitive,
        dot_matches_new_line: options.dot_matches_new_line,
        json_string: options.json_string,
    };
    match check_regex(&regex, locate) {
        Ok(()) => Some(regex),
        Err(diagnostic) => {
            diagnostics.push(diagnostic);
            None
        }
    }
}

/// Compiles `pattern`, the whole text of `file`, into a checked grammar
/// whose one rule `root` matches what the pattern matches in full. Errors
/// point into `file`.
pub fn check(
    pattern: &str,
    options: Options,
    file: FileId,
    diagnostics: &mut Diagnostics,
) -> Option<tree::Grammar> {
    let locate = |start: usize, end: usize| Span::new(file, start, end.max(start));
    let regex = terminal(pattern, options, &locate, diagnostics)?;
    let span = Span::new(file, 0, pattern.len());
    Some(tree::Grammar {
        rules: vec![tree::Rule {
            name: "root".to_string(),
            span,
            body: tree::Expr {
                kind: tree::ExprKind::Regex(regex),
                span,
            },
            lookahead: None,
            keep: false,
            capture: None,
            limit: crate::tree::Limit::default(),
        }],
        root: RuleId::new(0).expect("rule 0"),
    })
}

/// Checks that `regex` parses and uses no assertion a grammar terminal cannot
/// honour. `locate(start, end)` maps a byte range of the pattern to source.
fn check_regex(
    regex: &tree::Regex,
    locate: &dyn Fn(usize, usize) -> Span,
) -> Result<(), Diagnostic> {
    let span_of = |span: &ast::Span| locate(span.start.offset, span.end.offset);
    let parsed = ast::parse::ParserBuilder::new()
        .build()
        .parse(&regex.pattern)
        .map_err(|err| {
            let mut diagnostic = Diagnostic::error(
                "invalid-regex",
                format!("invalid regex: {}", err.kind()),
                span_of(err.span()),
                "here",
            );
            if let Some(aux) = err.auxiliary_span() {
                diagnostic = diagnostic.with_label(span_of(aux), "related");
            }
            diagnostic
        })?;
    TranslatorBuilder::new()
        .case_insensitive(regex.case_insensitive)
        .dot_matches_new_line(regex.dot_matches_new_line)
        .build()
        .translate(&regex.pattern, &parsed)
        .map_err(|err| {
            Diagnostic::error(
                "invalid-regex",
                format!("invalid regex: {}", err.kind()),
                span_of(err.span()),
                "here",
            )
        })?;
    let allowed = edge_anchors(&parsed);
    let mut bad = None;
    find_assertions(&parsed, &mut |assertion| {
        if bad.is_none() && !allowed.contains(&assertion.span.start.offset) {
            bad = Some(assertion.span);
        }
    });
    match bad {
        Some(span) => Err(Diagnostic::error(
            "invalid-regex",
            "this assertion cannot be used in a grammar terminal",
            span_of(&span),
            "look-around assertion",
        )
        .with_help("a terminal matches text on its own; only `^` at the start and `$` at the end are allowed (and change nothing)")),
        None => Ok(()),
    }
}

/// Offsets of the anchors that sit at the very start or end of the pattern
/// (of each top-level alternative): those are no-ops for a terminal.
fn edge_anchors(ast: &Ast) -> Vec<usize> {
    let alternatives: Vec<&Ast> = match ast {
        Ast::Alternation(alternation) => alternation.asts.iter().collect(),
        other => vec![other],
    };
    let mut offsets = Vec::new();
    for alternative in alternatives {
        let items: Vec<&Ast> = match alternative {
            Ast::Concat(concat) => concat.asts.iter().collect(),
            other => vec![other],
        };
        if let Some(Ast::Assertion(a)) = items.first()
            && matches!(
                a.kind,
                ast::AssertionKind::StartLine | ast::AssertionKind::StartText
            )
        {
            offsets.push(a.span.start.offset);
        }
        if let Some(Ast::Assertion(a)) = items.last()
            && matches!(
                a.kind,
                ast::AssertionKind::EndLine | ast::AssertionKind::EndText
            )
        {
            offsets.push(a.span.start.offset);
        }
    }
    offsets
}

fn find_assertions(ast: &Ast, found: &mut dyn FnMut(&ast::Assertion)) {
    match ast {
        Ast::Assertion(assertion) => found(assertion),
        Ast::Repetition(repetition) => find_assertions(&repetition.ast, found),
        Ast::Group(group) => find_assertions(&group.ast, found),
        Ast::Alternation(alternation) => alternation
            .asts
            .iter()
            .for_each(|a| find_assertions(a, found)),
        Ast::Concat(concat) => concat.asts.iter().for_each(|a| find_assertions(a, found)),
        Ast::Empty(_)
        | Ast::Flags(_)
        | Ast::Literal(_)
        | Ast::Dot(_)
        | Ast::ClassUnicode(_)
        | Ast::ClassPerl(_)
        | Ast::ClassBracketed(_) => {}
    }
}
