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

use std::fmt::Write as _;

use serde_json::{Map, Value};
use xg_runtime::{RuleId, TokenId, Vocabulary};

use crate::budget::Budget;
use crate::cache::CompileCache;
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::source::{FileId, Sources, Span};
use crate::tree::{self, Expr, ExprKind};
use crate::{json_schema, regex, resolve, tools};

/// What must follow a format: the end of its enclosing tag, if it is the
/// tag's last part.
#[derive(Clone, Debug)]
enum End {
    /// Nothing.
    None,
    /// One of these strings (non-empty).
    Strings(Vec<String>),
    /// This token.
    Token(TokenId),
}

/// A structural tag the front end refuses, with the JSON pointer of the
/// offending part.
#[derive(Clone, Debug, PartialEq, Eq)]
struct TagError {
    pointer: String,
    message: String,
}

/// Compiles a structural tag (the whole text of `file` in `sources`) into a
/// checked grammar within `budget`. `vocabulary` resolves tokens given by
/// text; `cache` holds embedded schemas' rules from earlier requests. Errors
/// name the JSON pointer of the offending part; errors inside
/// an embedded grammar or regex point into its text.
pub fn check(
    tag: &Value,
    vocabulary: Option<&Vocabulary>,
    budget: &Budget,
    cache: &CompileCache,
    sources: &mut Sources,
    file: FileId,
    diagnostics: &mut Diagnostics,
) -> Option<tree::Grammar> {
    let span = Span::new(file, 0, 0);
    let mut builder = Builder {
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
        budget,
        cache,
        sources,
        diagnostics,
        span,
        errors: Vec::new(),
        failed: false,
    };
    let body = match crate::json_schema::too_deep(tag) {
        Some(pointer) => builder.error(&pointer, crate::json_schema::too_deep_message()),
        None => builder.top(tag),
    };
    builder.rules[0].body = body;
    let Builder {
        rules,
        errors,
        failed,
        diagnostics,
        ..
    } = builder;
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

struct Builder<'a> {
    /// Rule 0 is the root; embedded schemas and grammars append theirs.
    rules: Vec<tree::Rule>,
    vocabulary: Option<&'a Vocabulary>,
    budget: &'a Budget,
    /// Schemas' rules and embedded grammars' schemas from earlier requests.
    cache: &'a CompileCache,
    sources: &'a mut Sources,
    diagnostics: &'a mut Diagnostics,
    span: Span,
    errors: Vec<TagError>,
    /// An embedded grammar, regex or schema reported its own errors.
    failed: bool,
}

impl Builder<'_> {
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

    /// The accepted shapes of a whole structural tag: `{"type":
    /// "structural_tag", "format": …}`, a bare format, and the legacy
    /// `{"structures": …, "triggers": …}` with or without the `type` (vLLM
    /// and SGLang send it without).
    fn top(&mut self, tag: &Value) -> Expr {
        let Some(object) = tag.as_object() else {
            return self.error("#", "a structural tag is a JSON object");
        };
        match (
            object.get("type").and_then(Value::as_str),
            object.get("format"),
        ) {
            (Some("structural_tag"), Some(format)) => self.format(format, "#/format", &End::None),
            (Some("structural_tag"), None) => self.legacy(object),
            (None, None) if object.contains_key("structures") => self.legacy(object),
            _ => self.format(tag, "#", &End::None),
        }
    }

    /// `{"structures": [{"begin", "schema", "end"}], "triggers": […]}`:
    /// triggered tags whose contents are JSON Schemas.
    fn legacy(&mut self, object: &Map<String, Value>) -> Expr {
        let Some(structures) = object.get("structures").and_then(Value::as_array) else {
            return self.error(
                "#",
                "a structural tag needs `format` (or, in the legacy form, `structures` and `triggers`)",
            );
        };
        let tags: Vec<Value> = structures
            .iter()
            .map(|s| {
                serde_json::json!({
                    "type": "tag",
                    "begin": s.get("begin").cloned().unwrap_or(Value::Null),
                    "content": {"type": "json_schema", "json_schema": s.get("schema").cloned().unwrap_or(Value::Null)},
                    "end": s.get("end").cloned().unwrap_or(Value::Null),
                })
            })
            .collect();
        let format = serde_json::json!({
            "type": "triggered_tags",
            "triggers": object.get("triggers").cloned().unwrap_or(Value::Null),
            "tags": tags,
            "at_least_one": object.get("at_least_one").cloned().unwrap_or(Value::Bool(false)),
        });
        self.format(&format, "#", &End::None)
    }

    /// `format` followed by `end`.
    fn format(&mut self, format: &Value, pointer: &str, end: &End) -> Expr {
        let Some(object) = format.as_object() else {
            return self.error(pointer, "a format is a JSON object with a `type`");
        };
        let Some(kind) = object.get("type").and_then(Value::as_str) else {
            return self.error(pointer, "a format needs a `type`");
        };
        let fields = Fields {
            object,
            pointer,
            kind,
        };
        match kind {
            "const_string" => {
                let value = self.string(&fields, "value");
                let literal = self.literal(&value);
                self.then_end(literal, end)
            }
            "json_schema" => {
                let expr = self.json_schema(&fields);
                self.then_end(expr, end)
            }
            "grammar" => {
                let expr = self.grammar(&fields);
                self.then_end(expr, end)
            }
            "regex" => {
                let expr = self.regex(&fields);
                self.then_end(expr, end)
            }
            "any_text" => {
                let excludes = self.strings(&fields, "excludes", false);
                let text = self.free_text(fields.pointer, Vec::new(), true, excludes, end);
                self.within_max_tokens(&fields, text)
            }
            "sequence" => self.sequence(&fields, end),
            "or" => {
                let elements = self.array(&fields, "elements", true);
                let alternatives = elements
                    .iter()
                    .enumerate()
                    .map(|(i, e)| self.format(e, &format!("{pointer}/elements/{i}"), end))
                    .collect();
                self.choice(alternatives)
            }
            "optional" | "plus" | "star" | "repeat" => self.repeat(&fields, end),
            "tag" => {
                let tag = self.tag(object, pointer);
                self.then_end(tag, end)
            }
            "triggered_tags" => self.triggered_tags(&fields, end),
            "tags_with_separator" => self.tags_with_separator(&fields, end),
            "dispatch" => self.dispatch(&fields, end),
            "token" => {
                let token = self.token_field(&fields, "token");
                let expr = self.tokens(token.into_iter().collect(), false);
                self.then_end(expr, end)
            }
            "exclude_token" => {
                let mut excluded = self.token_list(&fields, "exclude_tokens", false);
                if let End::Token(token) = end {
                    excluded.push(*token);
                }
                let expr = self.tokens(excluded, true);
                self.then_end(expr, end)
            }
            "any_tokens" => {
                let excluded = self.token_list(&fields, "exclude_tokens", false);
                let tokens = self.free_tokens(fields.pointer, Vec::new(), true, excluded, end);
                self.within_max_tokens(&fields, tokens)
            }
            "token_triggered_tags" => self.token_triggered_tags(&fields, end),
            "token_dispatch" => self.token_dispatch(&fields, end),
            // XGrammar's older name for `json_schema` with `style: qwen_xml`.
            "qwen_xml_parameter" => {
                let expr = match fields.object.get("json_schema") {
                    Some(schema @ Value::Object(_)) => {
                        let schema = schema.clone();
                        self.xml_arguments(&fields, tools::XmlStyle::Qwen, &schema)
                    }
                    _ => self.error(
                        pointer,
                        "`qwen_xml_parameter` needs `json_schema`: an object",
                    ),
                };
                self.then_end(expr, end)
            }
            other => self.error(pointer, format!("unknown format type `{other}`")),
        }
    }

    /// `text` (free text with its end), as a rule whose matches span at
    /// most the format's `max_tokens` tokens, if it has one.
    fn within_max_tokens(&mut self, fields: &Fields<'_>, text: Expr) -> Expr {
        let most = match fields.object.get("max_tokens") {
            None | Some(Value::Null) => return text,
            Some(value) => value.as_u64().and_then(|n| u32::try_from(n).ok()),
        };
        let Some(most) = most.filter(|&most| most > 0) else {
            let pointer = format!("{}/max_tokens", fields.pointer);
            return self.error(&pointer, "`max_tokens` must be a positive whole number");
        };
        let id = RuleId::new(self.rules.len()).expect("rule count fits");
        self.rules.push(tree::Rule {
            name: format!("{}#text", fields.pointer.trim_start_matches('#')),
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

    fn sequence(&mut self, fields: &Fields<'_>, end: &End) -> Expr {
        let elements = self.array(fields, "elements", false);
        let count = elements.len();
        if count == 0 {
            return self.end_expr(end);
        }
        let items = elements
            .iter()
            .enumerate()
            .map(|(i, element)| {
                let pointer = format!("{}/elements/{i}", fields.pointer);
                // Only the last element is followed by the end.
                let end = if i + 1 == count { end } else { &End::None };
                self.format(element, &pointer, end)
            })
            .collect();
        self.sequence_of(items)
    }

    fn repeat(&mut self, fields: &Fields<'_>, end: &End) -> Expr {
        let (min, max) = match fields.kind {
            "optional" => (0, Some(1)),
            "plus" => (1, None),
            "star" => (0, None),
            _ => {
                let min = self.integer(fields, "min");
                let max = self.integer(fields, "max");
                match (u32::try_from(min), max) {
                    (Ok(min), -1) => (min, None),
                    (Ok(min), max) => {
                        match u32::try_from(max) {
                            Ok(max) if max >= min => (min, Some(max)),
                            _ => {
                                return self.error(
                                fields.pointer,
                                format!("`max` ({max}) must be -1 (no bound) or at least `min` ({min})"),
                            );
                            }
                        }
                    }
                    (Err(_), _) => {
                        return self
                            .error(fields.pointer, format!("`min` ({min}) must be a count"));
                    }
                }
            }
        };
        let Some(content) = fields.object.get("content") else {
            return self.error(fields.pointer, format!("`{}` needs `content`", fields.kind));
        };
        let inner = self.format(content, &format!("{}/content", fields.pointer), &End::None);
        let repeated = self.expr(ExprKind::Repeat {
            expr: Box::new(inner),
            min,
            max,
        });
        self.then_end(repeated, end)
    }

    /// `begin content end`, the content followed by the tag's own end.
    fn tag(&mut self, object: &Map<String, Value>, pointer: &str) -> Expr {
        let begin = match object.get("begin") {
            Some(Value::String(text)) => self.literal(text),
            Some(token @ Value::Object(_)) => {
                let token = self.token_format(token, &format!("{pointer}/begin"));
                self.tokens(token.into_iter().collect(), false)
            }
            _ => return self.error(pointer, "a tag needs `begin`: a string or a token format"),
        };
        let end = self.tag_end(object, pointer);
        let Some(content) = object.get("content") else {
            return self.error(pointer, "a tag needs `content`");
        };
        let content = self.format(content, &format!("{pointer}/content"), &end);
        self.sequence_of(vec![begin, content])
    }

    fn tag_end(&mut self, object: &Map<String, Value>, pointer: &str) -> End {
        let strings = match object.get("end") {
            Some(Value::String(text)) => vec![text.clone()],
            Some(Value::Array(items)) => {
                let mut strings = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    match item.as_str() {
                        Some(text) => strings.push(text.to_string()),
                        None => {
                            self.error(&format!("{pointer}/end/{i}"), "an end is a string");
                        }
                    }
                }
                strings
            }
            Some(token @ Value::Object(_)) => {
                return match self.token_format(token, &format!("{pointer}/end")) {
                    Some(token) => End::Token(token),
                    None => End::None,
                };
            }
            _ => {
                self.error(
                    pointer,
                    "a tag needs `end`: a string, a list of strings or a token format",
                );
                return End::None;
            }
        };
        let strings: Vec<String> = strings.into_iter().filter(|s| !s.is_empty()).collect();
        if strings.is_empty() {
            End::None
        } else {
            End::Strings(strings)
        }
    }

    /// The tags of `fields` as `(begin, body)` where the body is the rest
    /// of the tag after its begin: content and the tag's own end.
    fn tag_parts(&mut self, fields: &Fields<'_>) -> Vec<(Value, Expr)> {
        let tags = self.array(fields, "tags", true);
        tags.iter()
            .enumerate()
            .filter_map(|(i, tag)| {
                let pointer = format!("{}/tags/{i}", fields.pointer);
                let Some(object) = tag.as_object() else {
                    self.error(&pointer, "a tag is a JSON object");
                    return None;
                };
                let end = self.tag_end(object, &pointer);
                let Some(content) = object.get("content") else {
                    self.error(&pointer, "a tag needs `content`");
                    return None;
                };
                let body = self.format(content, &format!("{pointer}/content"), &end);
                Some((object.get("begin").cloned().unwrap_or(Value::Null), body))
            })
            .collect()
    }

    fn triggered_tags(&mut self, fields: &Fields<'_>, end: &End) -> Expr {
        let triggers = self.strings(fields, "triggers", true);
        let excludes = self.strings(fields, "excludes", false);
        let at_least_one = self.flag(fields, "at_least_one");
        let stop_after_first = self.flag(fields, "stop_after_first");
        let tags = self.tag_parts(fields);
        let mut arms: Vec<(String, Vec<Expr>)> =
            triggers.iter().map(|t| (t.clone(), Vec::new())).collect();
        let mut full_tags = Vec::new();
        for (i, (begin, body)) in tags.into_iter().enumerate() {
            let Some(begin) = begin.as_str() else {
                self.error(
                    &format!("{}/tags/{i}/begin", fields.pointer),
                    "a triggered tag's `begin` is a string (use `token_triggered_tags` for tokens)",
                );
                continue;
            };
            let matching: Vec<usize> = (0..triggers.len())
                .filter(|&t| begin.starts_with(triggers[t].as_str()))
                .collect();
            let [trigger] = matching[..] else {
                self.error(
                    &format!("{}/tags/{i}/begin", fields.pointer),
                    format!(
                        "`{begin}` must start with exactly one trigger; it starts with {}",
                        matching.len()
                    ),
                );
                continue;
            };
            let rest = self.literal(&begin[triggers[trigger].len()..]);
            let after_trigger = self.sequence_of(vec![rest, body.clone()]);
            arms[trigger].1.push(after_trigger);
            let begin = self.literal(begin);
            full_tags.push(self.sequence_of(vec![begin, body]));
        }
        let arms = self.grouped(arms);
        self.triggered(full_tags, at_least_one, stop_after_first, end, |this| {
            this.free_text(fields.pointer, arms, !stop_after_first, excludes, end)
        })
    }

    /// Triggered tags from their parts: with `at_least_one` and
    /// `stop_after_first`, one tag and the end; else the dispatch, after a
    /// first tag (with no text before it) if `at_least_one`.
    fn triggered(
        &mut self,
        full_tags: Vec<Expr>,
        at_least_one: bool,
        stop_after_first: bool,
        end: &End,
        dispatch: impl FnOnce(&mut Self) -> Expr,
    ) -> Expr {
        let any_tag = self.choice(full_tags);
        if at_least_one && stop_after_first {
            return self.then_end(any_tag, end);
        }
        let dispatch = dispatch(self);
        if at_least_one {
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

    fn tags_with_separator(&mut self, fields: &Fields<'_>, end: &End) -> Expr {
        let separator = self.string(fields, "separator");
        let at_least_one = self.flag(fields, "at_least_one");
        // A separator that is also the end cannot tell "another tag" from
        // "done": one tag at most, as XGrammar reads it.
        let separator_ends = matches!(end, End::Strings(ends) if ends.contains(&separator));
        let stop_after_first = self.flag(fields, "stop_after_first") || separator_ends;
        let tags = self.tag_parts(fields);
        let full_tags: Vec<Expr> = tags
            .into_iter()
            .enumerate()
            .map(|(i, (begin, body))| {
                let begin = match &begin {
                    Value::String(text) => self.literal(text),
                    token @ Value::Object(_) => {
                        let pointer = format!("{}/tags/{i}/begin", fields.pointer);
                        let token = self.token_format(token, &pointer);
                        self.tokens(token.into_iter().collect(), false)
                    }
                    _ => self.error(
                        &format!("{}/tags/{i}", fields.pointer),
                        "a tag needs `begin`: a string or a token format",
                    ),
                };
                self.sequence_of(vec![begin, body])
            })
            .collect();
        let any_tag = self.choice(full_tags);
        let tags = if stop_after_first {
            any_tag
        } else {
            let separator = self.literal(&separator);
            let next = self.sequence_of(vec![separator, any_tag.clone()]);
            let more = self.expr(ExprKind::Repeat {
                expr: Box::new(next),
                min: 0,
                max: None,
            });
            self.sequence_of(vec![any_tag, more])
        };
        let tags = if at_least_one {
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

    fn dispatch(&mut self, fields: &Fields<'_>, end: &End) -> Expr {
        let rules = self.array(fields, "rules", true);
        let repeat = self.optional_flag(fields, "loop", true);
        let excludes = self.strings(fields, "excludes", false);
        let mut arms = Vec::new();
        for (i, rule) in rules.iter().enumerate() {
            let pointer = format!("{}/rules/{i}", fields.pointer);
            match rule.as_array().map(Vec::as_slice) {
                Some([Value::String(trigger), format]) => {
                    let body = self.format(format, &format!("{pointer}/1"), &End::None);
                    arms.push((trigger.clone(), body));
                }
                _ => {
                    self.error(
                        &pointer,
                        "a dispatch rule is a pair [trigger string, format]",
                    );
                }
            }
        }
        self.free_text(fields.pointer, arms, repeat, excludes, end)
    }

    fn token_triggered_tags(&mut self, fields: &Fields<'_>, end: &End) -> Expr {
        let triggers = self.token_list(fields, "trigger_tokens", true);
        let excluded = self.token_list(fields, "exclude_tokens", false);
        let at_least_one = self.flag(fields, "at_least_one");
        let stop_after_first = self.flag(fields, "stop_after_first");
        let tags = self.tag_parts(fields);
        let mut arms: Vec<(TokenId, Vec<Expr>)> =
            triggers.iter().map(|&t| (t, Vec::new())).collect();
        let mut full_tags = Vec::new();
        for (i, (begin, body)) in tags.into_iter().enumerate() {
            let pointer = format!("{}/tags/{i}/begin", fields.pointer);
            if !begin.is_object() {
                self.error(
                    &pointer,
                    "a token-triggered tag's `begin` is a token format (use `triggered_tags` for text)",
                );
                continue;
            }
            let Some(token) = self.token_format(&begin, &pointer) else {
                continue;
            };
            let Some(arm) = arms.iter_mut().find(|(t, _)| *t == token) else {
                self.error(
                    &pointer,
                    format!("token {token} is not one of the trigger tokens"),
                );
                continue;
            };
            arm.1.push(body.clone());
            let begin = self.tokens(vec![token], false);
            full_tags.push(self.sequence_of(vec![begin, body]));
        }
        let arms = self.grouped(arms);
        self.triggered(full_tags, at_least_one, stop_after_first, end, |this| {
            this.free_tokens(fields.pointer, arms, !stop_after_first, excluded, end)
        })
    }

    fn token_dispatch(&mut self, fields: &Fields<'_>, end: &End) -> Expr {
        let rules = self.array(fields, "rules", true);
        let repeat = self.optional_flag(fields, "loop", true);
        let excluded = self.token_list(fields, "exclude_tokens", false);
        let mut arms = Vec::new();
        for (i, rule) in rules.iter().enumerate() {
            let pointer = format!("{}/rules/{i}", fields.pointer);
            match rule.as_array().map(Vec::as_slice) {
                Some([token, format]) => {
                    let token = self.token_value(token, &format!("{pointer}/0"));
                    let body = self.format(format, &format!("{pointer}/1"), &End::None);
                    if let Some(token) = token {
                        arms.push((token, body));
                    }
                }
                _ => {
                    self.error(&pointer, "a token dispatch rule is a pair [token, format]");
                }
            }
        }
        self.free_tokens(fields.pointer, arms, repeat, excluded, end)
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

    fn json_schema(&mut self, fields: &Fields<'_>) -> Expr {
        let Some(schema) = fields.object.get("json_schema") else {
            return self.error(fields.pointer, "`json_schema` needs `json_schema`");
        };
        if !(schema.is_object() || schema.is_boolean()) {
            return self.error(
                &format!("{}/json_schema", fields.pointer),
                "a JSON Schema is an object or a boolean",
            );
        }
        let style = fields
            .object
            .get("style")
            .and_then(Value::as_str)
            .unwrap_or("json");
        if style != "json" {
            let Some(xml) = tools::XmlStyle::from_name(style) else {
                return self.error(
                    &format!("{}/style", fields.pointer),
                    format!(
                        "unknown argument style `{style}`: `json`, `qwen_xml`, `glm_xml`, \
                         `minimax_xml`, `deepseek_xml` or `kimi_k3_xml`"
                    ),
                );
            };
            return self.xml_arguments(fields, xml, schema);
        }
        let options = self.schema_options(fields);
        let budget = self.budget;
        let generated = self.cache.schema(schema.to_string(), &options, || {
            json_schema::generate(schema, &options, budget)
        });
        match generated {
            Ok(generated) => {
                let span = self.span;
                let at = json_schema::Placement::at(span);
                json_schema::push_warnings(&generated.report, &at, self.diagnostics);
                let first = self.rules.len();
                let prefix = format!("{}%json.", fields.pointer.trim_start_matches('#'));
                self.rules.extend(generated.to_tree(first, span, &prefix));
                self.expr(ExprKind::Ref(RuleId::new(first).expect("rule count fits")))
            }
            Err(errors) => {
                for error in errors {
                    let pointer = format!(
                        "{}/json_schema{}",
                        fields.pointer,
                        error.pointer.trim_start_matches('#')
                    );
                    self.error(&pointer, error.message);
                }
                empty(self.span)
            }
        }
    }

    /// XGrammar's JSON options in xg's terms: `any_whitespace` (default on)
    /// with `max_whitespace_cnt` (absent: [`json_schema::DEFAULT_MAX_WHITESPACE`];
    /// `null`: unbounded); otherwise `indent` (pretty-printed) or
    /// none; `separators` (default `", "` and `": "`, `","` and `": "` with
    /// an indent, trimmed with any whitespace), `any_order`, `strict_mode`
    /// (default on: no properties beyond those listed), `reject_unsupported`
    /// (strict).
    fn schema_options(&mut self, fields: &Fields<'_>) -> json_schema::Options {
        let get = |name: &str| fields.object.get(name);
        let any_whitespace = get("any_whitespace")
            .and_then(Value::as_bool)
            .unwrap_or(true);
        let indent = match get("indent") {
            None | Some(Value::Null) => None,
            Some(value) => match value.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(n) if n <= json_schema::MAX_INDENT => Some(n),
                _ => {
                    let message = format!(
                        "`indent` must be a whole number of spaces up to {}",
                        json_schema::MAX_INDENT
                    );
                    self.error(&format!("{}/indent", fields.pointer), message);
                    None
                }
            },
        };
        let (item, key) = match get("separators")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
        {
            Some([Value::String(item), Value::String(key)]) => (item.clone(), key.clone()),
            _ if any_whitespace => (",".to_string(), ":".to_string()),
            _ if indent.is_some() => (",".to_string(), ": ".to_string()),
            _ => (", ".to_string(), ": ".to_string()),
        };
        let whitespace = match indent {
            _ if any_whitespace => json_schema::Whitespace::Flexible {
                max: match get("max_whitespace_cnt") {
                    None => Some(json_schema::DEFAULT_MAX_WHITESPACE),
                    Some(max) => max.as_u64().and_then(|n| u32::try_from(n).ok()),
                },
            },
            Some(indent) => json_schema::Whitespace::Pretty { indent },
            None => json_schema::Whitespace::Compact,
        };
        json_schema::Options {
            whitespace,
            item_separator: item,
            key_separator: key,
            strict: get("reject_unsupported")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            property_order: if get("any_order").and_then(Value::as_bool).unwrap_or(false) {
                json_schema::PropertyOrder::Any
            } else {
                json_schema::PropertyOrder::Given
            },
            additional_properties: !get("strict_mode").and_then(Value::as_bool).unwrap_or(true),
            ..json_schema::Options::default()
        }
    }

    /// An `.xg` grammar (XGrammar's EBNF forms included), entry rule `root`,
    /// its rules appended; errors point into its text.
    fn grammar(&mut self, fields: &Fields<'_>) -> Expr {
        let text = self.string(fields, "grammar");
        self.embed(&format!("{}/grammar", fields.pointer), text)
    }

    /// A JSON Schema's object as XML arguments in `style` (the `json_schema`
    /// format's `style`): the `.xg` rules [`tools::XmlStyle::arguments`]
    /// writes, embedded as a grammar.
    fn xml_arguments(
        &mut self,
        fields: &Fields<'_>,
        style: tools::XmlStyle,
        schema: &Value,
    ) -> Expr {
        let mut text = String::from("root ::= args\n");
        for (name, body) in style.arguments("args", schema, self.vocabulary) {
            let _ = writeln!(text, "{name} ::= {body}");
        }
        text.push_str(&style.text_rule(self.vocabulary));
        self.embed(&format!("{}/json_schema", fields.pointer), text)
    }

    /// The grammar `text` (named `name` in diagnostics), its rules added
    /// under that name; its `root` rule.
    fn embed(&mut self, name: &str, text: String) -> Expr {
        let file = self.sources.add(name, text, None);
        let Some(grammar) = resolve::resolve(
            self.sources,
            file,
            "root",
            self.cache,
            self.budget,
            self.diagnostics,
        ) else {
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

    fn regex(&mut self, fields: &Fields<'_>) -> Expr {
        let pattern = self.string(fields, "pattern");
        let file = self
            .sources
            .add(format!("{}/pattern", fields.pointer), pattern.clone(), None);
        let locate = |start: usize, end: usize| Span::new(file, start, end.max(start));
        match regex::terminal(
            &pattern,
            regex::Options::default(),
            &locate,
            self.diagnostics,
        ) {
            Some(terminal) => self.expr(ExprKind::Regex(terminal)),
            None => {
                self.failed = true;
                empty(self.span)
            }
        }
    }

    // Fields and values.

    fn string(&mut self, fields: &Fields<'_>, name: &str) -> String {
        match fields.object.get(name) {
            Some(Value::String(text)) => text.clone(),
            _ => {
                self.error(
                    fields.pointer,
                    format!("`{}` needs `{name}`: a string", fields.kind),
                );
                String::new()
            }
        }
    }

    fn strings(&mut self, fields: &Fields<'_>, name: &str, required: bool) -> Vec<String> {
        let values = self.array(fields, name, required);
        values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| match v.as_str() {
                Some(text) => Some(text.to_string()),
                None => {
                    self.error(
                        &format!("{}/{name}/{i}", fields.pointer),
                        "expected a string",
                    );
                    None
                }
            })
            .collect()
    }

    fn array(&mut self, fields: &Fields<'_>, name: &str, required: bool) -> Vec<Value> {
        match fields.object.get(name) {
            Some(Value::Array(items)) => items.clone(),
            None if !required => Vec::new(),
            _ => {
                self.error(
                    fields.pointer,
                    format!("`{}` needs `{name}`: a list", fields.kind),
                );
                Vec::new()
            }
        }
    }

    fn integer(&mut self, fields: &Fields<'_>, name: &str) -> i64 {
        match fields.object.get(name).and_then(Value::as_i64) {
            Some(value) => value,
            None => {
                self.error(
                    fields.pointer,
                    format!("`{}` needs `{name}`: an integer", fields.kind),
                );
                0
            }
        }
    }

    fn flag(&mut self, fields: &Fields<'_>, name: &str) -> bool {
        self.optional_flag(fields, name, false)
    }

    fn optional_flag(&mut self, fields: &Fields<'_>, name: &str, default: bool) -> bool {
        match fields.object.get(name) {
            None => default,
            Some(Value::Bool(value)) => *value,
            Some(_) => {
                self.error(
                    &format!("{}/{name}", fields.pointer),
                    "expected true or false",
                );
                default
            }
        }
    }

    /// A `{"type": "token", "token": …}` format's token.
    fn token_format(&mut self, format: &Value, pointer: &str) -> Option<TokenId> {
        match format.get("token") {
            Some(token) if format.get("type").and_then(Value::as_str) == Some("token") => {
                self.token_value(token, &format!("{pointer}/token"))
            }
            _ => {
                self.error(
                    pointer,
                    "expected a token format: {\"type\": \"token\", \"token\": …}",
                );
                None
            }
        }
    }

    fn token_field(&mut self, fields: &Fields<'_>, name: &str) -> Option<TokenId> {
        match fields.object.get(name) {
            Some(token) => self.token_value(token, &format!("{}/{name}", fields.pointer)),
            None => {
                self.error(fields.pointer, format!("`{}` needs `{name}`", fields.kind));
                None
            }
        }
    }

    fn token_list(&mut self, fields: &Fields<'_>, name: &str, required: bool) -> Vec<TokenId> {
        let values = self.array(fields, name, required);
        values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| self.token_value(v, &format!("{}/{name}/{i}", fields.pointer)))
            .collect()
    }

    /// A token id, or a token's text looked up in the vocabulary.
    fn token_value(&mut self, value: &Value, pointer: &str) -> Option<TokenId> {
        match value {
            Value::Number(number) => {
                let id = number
                    .as_u64()
                    .and_then(|id| usize::try_from(id).ok())
                    .and_then(|id| TokenId::new(id).ok());
                if id.is_none() {
                    self.error(pointer, format!("`{number}` is not a token id"));
                }
                id
            }
            Value::String(text) => match self.vocabulary {
                Some(vocabulary) => {
                    let id = vocabulary.token_by_text(text);
                    if id.is_none() {
                        self.error(pointer, format!("no token of the vocabulary is `{text}`"));
                    }
                    id
                }
                None => {
                    self.error(
                        pointer,
                        format!("the token `{text}` is given by text: compile with the model's vocabulary, or give its id"),
                    );
                    None
                }
            },
            _ => {
                self.error(pointer, "a token is an id or its text");
                None
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

/// A format object, where it is, and its type.
struct Fields<'a> {
    object: &'a Map<String, Value>,
    pointer: &'a str,
    kind: &'a str,
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
