//! Checking regex terminals with regex-syntax, with errors pointing into the pattern.

use regex_syntax::ast::{self, Ast};
use regex_syntax::hir::translate::TranslatorBuilder;

use crate::diagnostic::Diagnostic;
use crate::source::Span;
use crate::tree::Regex;

/// Checks that `regex` parses and uses no assertion a grammar terminal cannot
/// honour. `locate(start, end)` maps a byte range of the pattern to source.
pub(crate) fn check_regex(
    regex: &Regex,
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
