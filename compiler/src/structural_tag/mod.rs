//! The structural-tag front end: XGrammar's structural-tag JSON (the
//! `response_format` servers send for tool calling and reasoning formats)
//! → a grammar, so a server that already emits these requests can switch
//! engines without rewriting them.
//!
//! Accepted: `{"type": "structural_tag", "format": FORMAT}`, a bare
//! `FORMAT`, and the legacy `{"type": "structural_tag", "structures":
//! [{"begin", "schema", "end"}], "triggers": […]}`. Formats: `const_string`,
//! `json_schema`, `grammar` (`.xg` text, which includes XGrammar's EBNF
//! forms), `regex`, `any_text`, `sequence`, `or`, `optional`, `plus`,
//! `star`, `repeat`, `tag`, `triggered_tags`, `tags_with_separator`,
//! `dispatch`, and the token-level `token`, `exclude_token`, `any_tokens`,
//! `token_triggered_tags`, `token_dispatch`. Tokens are given by id, or by
//! text when a vocabulary is at hand.
//!
//! Free-text formats (`any_text`, `triggered_tags`, `dispatch`) end where
//! the enclosing tag ends: a format is compiled *followed by* the end of
//! its enclosing tag when it is the tag's last part, and a free-text format
//! there stops at the first occurrence of an end string, which it consumes
//! (tag dispatch's stop strings). Token-level free formats exclude an end
//! token and are followed by it.

mod format;

use std::fmt::Write as _;

use serde_json::Value;
use xg_runtime::{RuleId, TokenId, Vocabulary};

use self::format::{Begin, Closed, End, Format, Reader, Tag, Triggered};
use crate::diagnostic::Diagnostic;
use crate::request::Request;
use crate::source::{FileId, Span};
use crate::tree::{self, Expr, ExprKind};
use crate::{json_schema, regex, resolve, tools};

/// A structural tag the front end refuses, with the JSON pointer of the
/// offending part.
#[derive(Clone, Debug, PartialEq, Eq)]
struct TagError {
    pointer: String,
    message: String,
}

/// Compiles a structural tag (`tag`, parsed from the text of `file`) into
/// a checked grammar within the request's budget: read into a typed
/// format, then lowered. The request's vocabulary resolves tokens given by
/// text; its cache holds embedded schemas' rules from earlier requests.
/// Errors name the JSON pointer of the offending part; errors inside an
/// embedded grammar or regex point into its text.
pub fn check(request: &mut Request, tag: &Value, file: FileId) -> Option<tree::Grammar> {
    let vocabulary = request.sources.shared_vocabulary();
    let vocabulary = vocabulary.as_deref();
    let span = Span::new(file, 0, 0);
    let mut reader = Reader {
        vocabulary,
        errors: Vec::new(),
    };
    let format = match crate::json_schema::too_deep(tag) {
        Some(pointer) => {
            reader.errors.push(TagError {
                pointer,
                message: crate::json_schema::too_deep_message(),
            });
            Format::Invalid
        }
        None => reader.top(tag),
    };
    let mut lowering = Lowering {
        rules: vec![tree::Rule {
            name: "root".to_string(),
            span,
            body: empty(span),
            lookahead: None,
            keep: false,
            capture: None,
            limit: crate::tree::Limit::default(),
        }],
        vocabulary,
        request,
        span,
        errors: reader.errors,
        failed: false,
    };
    lowering.rules[0].body = lowering.lower(&format, &End::None);
    let Lowering {
        rules,
        errors,
        failed,
        request,
        ..
    } = lowering;
    let diagnostics = &mut request.diagnostics;
    let limits_hold = crate::resolve::check_limits(&rules, diagnostics);
    for error in &errors {
        diagnostics.push(Diagnostic::error(
            "structural-tag",
            format!("{}: {}", error.pointer, error.message),
            span,
            "in this structural tag",
        ));
    }
    (errors.is_empty() && !failed && limits_hold).then(|| tree::Grammar {
        rules,
        root: RuleId::new(0).expect("rule 0"),
    })
}

/// Lowers a [`Format`] into rules: each format followed by what must end
/// it, free text into tag dispatches, embedded schemas and grammars into
/// rules of their own.
struct Lowering<'a> {
    /// Rule 0 is the root; embedded schemas and grammars append theirs.
    rules: Vec<tree::Rule>,
    vocabulary: Option<&'a Vocabulary>,
    /// Schemas' rules and embedded grammars' schemas from earlier requests
    /// are in its cache.
    request: &'a mut Request,
    span: Span,
    /// The reader's errors, then the lowering's.
    errors: Vec<TagError>,
    /// An embedded grammar, regex or schema reported its own errors.
    failed: bool,
}

impl Lowering<'_> {
    fn error(&mut self, pointer: &str, message: impl Into<String>) -> Expr {
        self.errors.push(TagError {
            pointer: pointer.to_string(),
            message: message.into(),
        });
        empty(self.span)
    }

    fn expr(&self, kind: ExprKind) -> Expr {
        Expr {
            kind,
            span: self.span,
        }
    }

    /// `format` followed by `end`.
    fn lower(&mut self, format: &Format, end: &End) -> Expr {
        match format {
            Format::Invalid => empty(self.span),
            Format::Closed(closed) => {
                let expr = self.closed(closed);
                self.then_end(expr, end)
            }
            Format::AnyText {
                pointer,
                excludes,
                max_tokens,
            } => {
                let text = self.free_text(pointer, Vec::new(), true, excludes.clone(), end);
                self.within_max_tokens(pointer, *max_tokens, text)
            }
            Format::Sequence(elements) => {
                let Some((last, before)) = elements.split_last() else {
                    return self.end_expr(end);
                };
                // Only the last element is followed by the end.
                let mut items: Vec<Expr> = (before.iter())
                    .map(|element| self.lower(element, &End::None))
                    .collect();
                items.push(self.lower(last, end));
                self.sequence_of(items)
            }
            Format::Or(elements) => {
                let alternatives = (elements.iter())
                    .map(|element| self.lower(element, end))
                    .collect();
                self.choice(alternatives)
            }
            Format::TriggeredTags {
                pointer,
                triggers,
                excludes,
                how,
                tags,
            } => self.triggered_tags(pointer, triggers, excludes, *how, tags, end),
            Format::TagsWithSeparator {
                separator,
                how,
                tags,
            } => self.tags_with_separator(separator, *how, tags, end),
            Format::Dispatch {
                pointer,
                arms,
                repeat,
                excludes,
            } => {
                let arms = (arms.iter())
                    .map(|(trigger, format)| (trigger.clone(), self.lower(format, &End::None)))
                    .collect();
                self.free_text(pointer, arms, *repeat, excludes.clone(), end)
            }
            Format::ExcludeToken(excluded) => {
                let mut excluded = excluded.clone();
                if let End::Token(token) = end {
                    excluded.push(*token);
                }
                let expr = self.tokens(excluded, true);
                self.then_end(expr, end)
            }
            Format::AnyTokens {
                pointer,
                excluded,
                max_tokens,
            } => {
                let tokens = self.free_tokens(pointer, Vec::new(), true, excluded.clone(), end);
                self.within_max_tokens(pointer, *max_tokens, tokens)
            }
            Format::TokenTriggeredTags {
                pointer,
                triggers,
                excluded,
                how,
                tags,
            } => self.token_triggered_tags(pointer, triggers, excluded, *how, tags, end),
            Format::TokenDispatch {
                pointer,
                arms,
                repeat,
                excluded,
            } => {
                // An arm without a trigger is still lowered, for the
                // errors of its format.
                let arms = (arms.iter())
                    .map(|(trigger, format)| (*trigger, self.lower(format, &End::None)))
                    .filter_map(|(trigger, body)| Some((trigger?, body)))
                    .collect();
                self.free_tokens(pointer, arms, *repeat, excluded.clone(), end)
            }
        }
    }

    /// A format that ends by itself.
    fn closed(&mut self, closed: &Closed) -> Expr {
        match closed {
            Closed::Const(text) => self.literal(text),
            Closed::JsonSchema {
                pointer,
                schema,
                options,
            } => self.json_schema(pointer, schema, options),
            Closed::XmlArguments {
                pointer,
                style,
                schema,
            } => self.xml_arguments(pointer, *style, schema),
            Closed::Grammar { pointer, text } => {
                self.embed(&format!("{pointer}/grammar"), text.clone())
            }
            Closed::Regex { pointer, pattern } => self.regex(pointer, pattern),
            Closed::Repeat { content, min, max } => {
                let inner = self.lower(content, &End::None);
                self.expr(ExprKind::Repeat {
                    expr: Box::new(inner),
                    min: *min,
                    max: *max,
                })
            }
            Closed::Tag(tag) => {
                let begin = self.begin(&tag.begin);
                let body = self.lower(&tag.content, &tag.end);
                self.sequence_of(vec![begin, body])
            }
            Closed::Token(token) => self.tokens(token.iter().copied().collect(), false),
        }
    }

    /// Free text in which each trigger starts one of its tags (a tag's
    /// begin starts with its trigger), followed by `end`.
    fn triggered_tags(
        &mut self,
        pointer: &str,
        triggers: &[String],
        excludes: &[String],
        how: Triggered,
        tags: &[(Option<usize>, Tag)],
        end: &End,
    ) -> Expr {
        let mut arms: Vec<(String, Vec<Expr>)> =
            triggers.iter().map(|t| (t.clone(), Vec::new())).collect();
        let mut full_tags = Vec::new();
        for (trigger, tag) in tags {
            // A tag whose begin is wrong is still lowered, for the errors
            // of its content.
            let body = self.lower(&tag.content, &tag.end);
            let (Some(trigger), Begin::Text(begin)) = (trigger, &tag.begin) else {
                continue;
            };
            let rest = self.literal(&begin[triggers[*trigger].len()..]);
            let after_trigger = self.sequence_of(vec![rest, body.clone()]);
            arms[*trigger].1.push(after_trigger);
            let begin = self.literal(begin);
            full_tags.push(self.sequence_of(vec![begin, body]));
        }
        let arms = self.grouped(arms);
        self.triggered(full_tags, how, end, |this| {
            this.free_text(pointer, arms, !how.stop_after_first, excludes.to_vec(), end)
        })
    }

    /// Tokens in which each trigger token starts its tags, followed by
    /// `end`.
    fn token_triggered_tags(
        &mut self,
        pointer: &str,
        triggers: &[TokenId],
        excluded: &[TokenId],
        how: Triggered,
        tags: &[Tag],
        end: &End,
    ) -> Expr {
        let mut arms: Vec<(TokenId, Vec<Expr>)> =
            triggers.iter().map(|&t| (t, Vec::new())).collect();
        let mut full_tags = Vec::new();
        for tag in tags {
            // A tag whose begin is wrong is still lowered, for the errors
            // of its content.
            let body = self.lower(&tag.content, &tag.end);
            let Begin::Token(Some(token)) = tag.begin else {
                continue;
            };
            if let Some(arm) = arms.iter_mut().find(|(t, _)| *t == token) {
                arm.1.push(body.clone());
            }
            let begin = self.tokens(vec![token], false);
            full_tags.push(self.sequence_of(vec![begin, body]));
        }
        let arms = self.grouped(arms);
        self.triggered(full_tags, how, end, |this| {
            this.free_tokens(pointer, arms, !how.stop_after_first, excluded.to_vec(), end)
        })
    }

    /// A tag's begin.
    fn begin(&self, begin: &Begin) -> Expr {
        match begin {
            Begin::Text(text) => self.literal(text),
            Begin::Token(token) => self.tokens(token.iter().copied().collect(), false),
            Begin::Invalid => empty(self.span),
        }
    }

    /// `text` (free text with its end), as a rule whose matches span at
    /// most `max_tokens` tokens, if the format at `pointer` has a bound.
    fn within_max_tokens(&mut self, pointer: &str, max_tokens: Option<u32>, text: Expr) -> Expr {
        let Some(most) = max_tokens else {
            return text;
        };
        let id = RuleId::new(self.rules.len()).expect("rule count fits");
        self.rules.push(tree::Rule {
            name: format!("{}#text", pointer.trim_start_matches('#')),
            span: self.span,
            body: text,
            lookahead: None,
            keep: false,
            capture: None,
            limit: tree::Limit {
                tokens: Some(most),
                bytes: None,
            },
        });
        self.expr(ExprKind::Ref(id))
    }

    /// `expr` then `end`.
    fn then_end(&mut self, expr: Expr, end: &End) -> Expr {
        let end = self.end_expr(end);
        self.sequence_of(vec![expr, end])
    }

    fn end_expr(&mut self, end: &End) -> Expr {
        match end {
            End::None => empty(self.span),
            End::Strings(strings) => {
                let alternatives = strings.iter().map(|s| self.literal(s)).collect();
                self.choice(alternatives)
            }
            End::Token(token) => self.tokens(vec![*token], false),
        }
    }

    /// Triggered tags from their parts: with `at_least_one` and
    /// `stop_after_first`, one tag and the end; else the dispatch, after a
    /// first tag (with no text before it) if `at_least_one`.
    fn triggered(
        &mut self,
        full_tags: Vec<Expr>,
        how: Triggered,
        end: &End,
        dispatch: impl FnOnce(&mut Self) -> Expr,
    ) -> Expr {
        let any_tag = self.choice(full_tags);
        if how.at_least_one && how.stop_after_first {
            return self.then_end(any_tag, end);
        }
        let dispatch = dispatch(self);
        if how.at_least_one {
            self.sequence_of(vec![any_tag, dispatch])
        } else {
            dispatch
        }
    }

    /// One arm per trigger that starts some tag: the choice of its tags.
    fn grouped<T>(&self, arms: Vec<(T, Vec<Expr>)>) -> Vec<(T, Expr)> {
        arms.into_iter()
            .filter(|(_, bodies)| !bodies.is_empty())
            .map(|(trigger, bodies)| (trigger, self.choice(bodies)))
            .collect()
    }

    fn tags_with_separator(
        &mut self,
        separator: &str,
        how: Triggered,
        tags: &[Tag],
        end: &End,
    ) -> Expr {
        // A separator that is also the end cannot tell "another tag" from
        // "done": one tag at most, as XGrammar reads it.
        let separator_ends =
            matches!(end, End::Strings(ends) if ends.iter().any(|e| e == separator));
        let stop_after_first = how.stop_after_first || separator_ends;
        let full_tags: Vec<Expr> = tags
            .iter()
            .map(|tag| {
                let body = self.lower(&tag.content, &tag.end);
                let begin = self.begin(&tag.begin);
                self.sequence_of(vec![begin, body])
            })
            .collect();
        let any_tag = self.choice(full_tags);
        let tags = if stop_after_first {
            any_tag
        } else {
            let separator = self.literal(separator);
            let next = self.sequence_of(vec![separator, any_tag.clone()]);
            let more = self.expr(ExprKind::Repeat {
                expr: Box::new(next),
                min: 0,
                max: None,
            });
            self.sequence_of(vec![any_tag, more])
        };
        let tags = if how.at_least_one {
            tags
        } else {
            self.expr(ExprKind::Repeat {
                expr: Box::new(tags),
                min: 0,
                max: Some(1),
            })
        };
        self.then_end(tags, end)
    }

    /// Free text with dispatch on `arms`, followed by `end`. Ended by end
    /// strings, the text stops at the first one and consumes it; after an
    /// arm, without `repeat`, the arm itself is followed by the end.
    fn free_text(
        &mut self,
        pointer: &str,
        arms: Vec<(String, Expr)>,
        repeat: bool,
        excludes: Vec<String>,
        end: &End,
    ) -> Expr {
        let (stop, arms) = match end {
            End::Strings(ends) => {
                let arms = if repeat {
                    arms
                } else {
                    arms.into_iter()
                        .map(|(trigger, body)| {
                            let end = self.end_expr(&End::Strings(ends.clone()));
                            (trigger, self.sequence_of(vec![body, end]))
                        })
                        .collect()
                };
                (ends.clone(), arms)
            }
            End::None | End::Token(_) => (Vec::new(), arms),
        };
        // An excluded string that contains a stop string could never be
        // written anyway: the stop string ends the text first.
        let exclude: Vec<String> = excludes
            .into_iter()
            .filter(|e| !e.is_empty() && !stop.iter().any(|s| e.contains(s.as_str())))
            .collect();
        if !self.check_triggers(pointer, &arms, &stop, &exclude) {
            return empty(self.span);
        }
        let stop_at_end = stop.is_empty();
        let dispatch = self.expr(ExprKind::Dispatch(tree::Dispatch {
            arms: arms
                .into_iter()
                .map(|(trigger, body)| tree::DispatchArm {
                    trigger,
                    span: self.span,
                    body,
                })
                .collect(),
            repeat,
            stop,
            stop_at_end,
            exclude,
        }));
        match end {
            End::Token(_) => self.then_end(dispatch, end),
            End::None | End::Strings(_) => dispatch,
        }
    }

    /// Triggers must be non-empty and distinct, and not contain an
    /// excluded string (they could never be written).
    fn check_triggers(
        &mut self,
        pointer: &str,
        arms: &[(String, Expr)],
        stop: &[String],
        exclude: &[String],
    ) -> bool {
        let mut ok = true;
        let patterns = arms.iter().map(|(t, _)| t).chain(stop).chain(exclude);
        if let Some(error) = xg_runtime::dispatch_patterns_error(patterns.map(String::as_bytes)) {
            self.error(pointer, error);
            return false;
        }
        for (i, (trigger, _)) in arms.iter().enumerate() {
            if trigger.is_empty() {
                self.error(pointer, "a trigger is empty");
                ok = false;
            } else if arms[..i].iter().any(|(t, _)| t == trigger) {
                self.error(pointer, format!("the trigger `{trigger}` is given twice"));
                ok = false;
            } else if let Some(e) = exclude.iter().find(|e| trigger.contains(e.as_str())) {
                self.error(
                    pointer,
                    format!("the trigger `{trigger}` contains the excluded `{e}`"),
                );
                ok = false;
            } else if stop.contains(trigger) {
                self.error(
                    pointer,
                    format!("the trigger `{trigger}` is also where the text ends"),
                );
                ok = false;
            }
        }
        ok
    }

    /// Free tokens with dispatch on `arms`, followed by `end`; an end token
    /// is excluded from the free tokens.
    fn free_tokens(
        &mut self,
        pointer: &str,
        arms: Vec<(TokenId, Expr)>,
        repeat: bool,
        mut exclude: Vec<TokenId>,
        end: &End,
    ) -> Expr {
        if let End::Token(token) = end {
            exclude.push(*token);
        }
        exclude.sort_unstable();
        exclude.dedup();
        for (i, (trigger, _)) in arms.iter().enumerate() {
            if arms[..i].iter().any(|(t, _)| t == trigger) {
                return self.error(
                    pointer,
                    format!("the trigger token {trigger} is given twice"),
                );
            }
            if exclude.contains(trigger) {
                return self.error(
                    pointer,
                    format!("the trigger token {trigger} is also excluded"),
                );
            }
        }
        let dispatch = self.expr(ExprKind::TokenDispatch(tree::TokenDispatch {
            arms: arms
                .into_iter()
                .map(|(trigger, body)| tree::TokenDispatchArm { trigger, body })
                .collect(),
            repeat,
            exclude,
        }));
        self.then_end(dispatch, end)
    }

    /// The schema `schema` of the `json_schema` format at `pointer`, its
    /// rules appended (shared with earlier requests through the cache).
    fn json_schema(
        &mut self,
        pointer: &str,
        schema: &Value,
        options: &json_schema::Options,
    ) -> Expr {
        let span = self.span;
        let at = json_schema::Placement::at(span);
        let generated = json_schema::embed(
            schema,
            options,
            &self.request.cache,
            &self.request.budget,
            &at,
            &mut self.request.diagnostics,
        );
        match generated {
            Ok(generated) => {
                let first = self.rules.len();
                let prefix = format!("{}%json.", pointer.trim_start_matches('#'));
                self.rules.extend(generated.to_tree(first, span, &prefix));
                self.expr(ExprKind::Ref(RuleId::new(first).expect("rule count fits")))
            }
            Err(errors) => {
                for error in errors {
                    let pointer = format!(
                        "{pointer}/json_schema{}",
                        error.pointer.trim_start_matches('#')
                    );
                    self.error(&pointer, error.message);
                }
                empty(self.span)
            }
        }
    }

    /// A JSON Schema's object as XML arguments in `style` (the `json_schema`
    /// format's `style`): the `.xg` rules [`tools::XmlStyle::arguments`]
    /// writes, embedded as a grammar.
    fn xml_arguments(&mut self, pointer: &str, style: tools::XmlStyle, schema: &Value) -> Expr {
        let mut text = String::from("root ::= args\n");
        for (name, body) in style.arguments("args", schema, self.vocabulary) {
            let _ = writeln!(text, "{name} ::= {body}");
        }
        text.push_str(&style.text_rule(self.vocabulary));
        self.embed(&format!("{pointer}/json_schema"), text)
    }

    /// The grammar `text` (named `name` in diagnostics), its rules added
    /// under that name; its `root` rule.
    fn embed(&mut self, name: &str, text: String) -> Expr {
        let file = self.request.add(name, text);
        let Some(grammar) = resolve::resolve(self.request, file, "root") else {
            self.failed = true;
            return empty(self.span);
        };
        let first = self.rules.len();
        let prefix = format!("{}:", name.trim_start_matches('#'));
        self.rules
            .extend(grammar.rules.into_iter().map(|rule| tree::Rule {
                name: format!("{prefix}{}", rule.name),
                body: shifted(rule.body, first),
                lookahead: rule.lookahead.map(|la| shifted(la, first)),
                ..rule
            }));
        let root = RuleId::new(first + grammar.root.as_usize()).expect("rule count fits");
        self.expr(ExprKind::Ref(root))
    }

    /// The `regex` format at `pointer`; errors point into the pattern.
    fn regex(&mut self, pointer: &str, pattern: &str) -> Expr {
        let file = self.request.add(format!("{pointer}/pattern"), pattern);
        let locate = |start: usize, end: usize| Span::new(file, start, end.max(start));
        match regex::terminal(
            pattern,
            regex::Options::default(),
            &locate,
            &mut self.request.diagnostics,
        ) {
            Some(terminal) => self.expr(ExprKind::Regex(terminal)),
            None => {
                self.failed = true;
                empty(self.span)
            }
        }
    }

    // Expressions.

    fn literal(&self, text: &str) -> Expr {
        if text.is_empty() {
            empty(self.span)
        } else {
            self.expr(ExprKind::Literal(text.to_string()))
        }
    }

    fn tokens(&self, mut ids: Vec<TokenId>, negated: bool) -> Expr {
        ids.sort_unstable();
        ids.dedup();
        self.expr(ExprKind::Tokens(tree::TokenSet { ids, negated }))
    }

    fn sequence_of(&self, items: Vec<Expr>) -> Expr {
        let mut items: Vec<Expr> = items
            .into_iter()
            .filter(|e| e.kind != ExprKind::Empty)
            .collect();
        match items.len() {
            0 => empty(self.span),
            1 => items.pop().expect("one item"),
            _ => self.expr(ExprKind::Sequence(items)),
        }
    }

    fn choice(&self, mut items: Vec<Expr>) -> Expr {
        match items.len() {
            // No alternative: nothing matches.
            0 => self.expr(ExprKind::Class(tree::CharSet::from_ranges([]))),
            1 => items.pop().expect("one item"),
            _ => self.expr(ExprKind::Choice(items)),
        }
    }
}

fn empty(span: Span) -> Expr {
    Expr {
        kind: ExprKind::Empty,
        span,
    }
}

/// `expr` with every rule reference moved up by `offset`.
fn shifted(expr: Expr, offset: usize) -> Expr {
    let shift = |id: RuleId| RuleId::new(id.as_usize() + offset).expect("rule count fits");
    let kind = match expr.kind {
        ExprKind::Ref(id) => ExprKind::Ref(shift(id)),
        ExprKind::Sequence(items) => {
            ExprKind::Sequence(items.into_iter().map(|e| shifted(e, offset)).collect())
        }
        ExprKind::Choice(items) => {
            ExprKind::Choice(items.into_iter().map(|e| shifted(e, offset)).collect())
        }
        ExprKind::Repeat { expr, min, max } => ExprKind::Repeat {
            expr: Box::new(shifted(*expr, offset)),
            min,
            max,
        },
        ExprKind::Dispatch(dispatch) => ExprKind::Dispatch(tree::Dispatch {
            arms: dispatch
                .arms
                .into_iter()
                .map(|arm| tree::DispatchArm {
                    body: shifted(arm.body, offset),
                    ..arm
                })
                .collect(),
            ..dispatch
        }),
        ExprKind::TokenDispatch(dispatch) => ExprKind::TokenDispatch(tree::TokenDispatch {
            arms: dispatch
                .arms
                .into_iter()
                .map(|arm| tree::TokenDispatchArm {
                    body: shifted(arm.body, offset),
                    ..arm
                })
                .collect(),
            ..dispatch
        }),
        kind @ (ExprKind::Empty
        | ExprKind::Literal(_)
        | ExprKind::Class(_)
        | ExprKind::Regex(_)
        | ExprKind::Tokens(_)) => kind,
    };
    Expr { kind, ..expr }
}
