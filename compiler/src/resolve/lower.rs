//! Lowering one rule body from [`ast::Expr`] to [`tree::Expr`]: names to ids,
//! classes to character sets, and every builtin form checked.

use xg_runtime::{RuleId, TokenId};

use super::Scope;
use crate::budget::Budget;
use crate::cache::CompileCache;
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::request::{json_error_message, json_error_offset};
use crate::source::{Sources, Span};
use crate::syntax::ast::{self, ClassItem, PerlClass, ValueKind};
use crate::syntax::{decode_literal, decode_regex};
use crate::tree::{self, CharSet, ExprKind};
use crate::{json_schema, regex};

/// The arguments of a macro call, positional and named.
struct CallArgs<'b> {
    positional: Vec<&'b ast::Value>,
    named: Vec<(&'b str, &'b ast::Value)>,
}

/// The named arguments `TagDispatch` takes.
const TAG_DISPATCH_ARGS: &[&str] = &["loop_after_dispatch", "excludes", "stop_eos", "stop_str"];

/// The rules generated for embedded JSON Schemas, numbered after the
/// declared rules.
pub(crate) struct Embedded {
    /// The id of the first generated rule (the number of declared rules).
    pub(crate) first: usize,
    /// The generated rules, in id order.
    pub(crate) rules: Vec<tree::Rule>,
}

/// What one compilation lends every rule it lowers: the compile cache
/// (embedded schemas' rules from earlier compilations) and the budget
/// (embedded schemas are generated within it).
#[derive(Clone, Copy)]
pub(crate) struct Compilation<'a> {
    pub(crate) cache: &'a CompileCache,
    pub(crate) budget: &'a Budget,
}

/// Lowers the expressions of one rule.
pub(crate) struct Lowerer<'a> {
    scope: &'a Scope,
    sources: &'a Sources,
    compilation: Compilation<'a>,
    diagnostics: &'a mut Diagnostics,
    module: usize,
    /// The qualified name of the rule being lowered.
    rule: &'a str,
    /// How many schemas this rule embeds so far (they name their rules).
    schemas: usize,
    embedded: &'a mut Embedded,
}

impl<'a> Lowerer<'a> {
    pub(crate) fn new(
        scope: &'a Scope,
        sources: &'a Sources,
        compilation: Compilation<'a>,
        diagnostics: &'a mut Diagnostics,
        module: usize,
        rule: &'a str,
        embedded: &'a mut Embedded,
    ) -> Self {
        Self {
            scope,
            sources,
            compilation,
            diagnostics,
            module,
            rule,
            schemas: 0,
            embedded,
        }
    }

    /// Lowers `expr`. After an error the result is still a valid tree (the bad
    /// part becomes `Empty`) so checking can go on.
    pub(crate) fn expr(&mut self, expr: &ast::Expr) -> tree::Expr {
        let span = expr.span;
        let kind = match &expr.kind {
            ast::ExprKind::Empty => ExprKind::Empty,
            ast::ExprKind::Literal(value) if value.is_empty() => ExprKind::Empty,
            ast::ExprKind::Literal(value) => ExprKind::Literal(value.clone()),
            ast::ExprKind::Class(class) => ExprKind::Class(char_set(class)),
            ast::ExprKind::AnyChar => {
                ExprKind::Class(CharSet::from_ranges([('\n', '\n')]).complement())
            }
            ast::ExprKind::Regex { pattern, flags } => self.regex_literal(pattern, flags, span),
            ast::ExprKind::Ref(name) => self.reference(name, span),
            ast::ExprKind::Sequence(items) => {
                ExprKind::Sequence(items.iter().map(|e| self.expr(e)).collect())
            }
            ast::ExprKind::Choice(items) => {
                ExprKind::Choice(items.iter().map(|e| self.expr(e)).collect())
            }
            ast::ExprKind::Repeat {
                expr: inner,
                min,
                max,
            } => {
                let inner = self.expr(inner);
                match (self.bound(*min, span), max.map(|max| self.bound(max, span))) {
                    (Some(min), None) => ExprKind::Repeat {
                        expr: Box::new(inner),
                        min,
                        max: None,
                    },
                    (Some(min), Some(Some(max))) => ExprKind::Repeat {
                        expr: Box::new(inner),
                        min,
                        max: Some(max),
                    },
                    _ => ExprKind::Empty,
                }
            }
            ast::ExprKind::Macro { name, args } => self.macro_call(name, args, span),
            ast::ExprKind::Dispatch { options, arms } => self.dispatch(options, arms),
            ast::ExprKind::JsonSchema(source, notation) => {
                self.json_schema(source, *notation, span)
            }
        };
        tree::Expr { kind, span }
    }

    fn error(
        &mut self,
        code: &'static str,
        message: impl Into<String>,
        span: Span,
        label: impl Into<String>,
    ) {
        self.diagnostics
            .push(Diagnostic::error(code, message, span, label));
    }

    fn bound(&mut self, value: u64, span: Span) -> Option<u32> {
        let bound = u32::try_from(value).ok().filter(|&v| v < u32::MAX);
        if bound.is_none() {
            self.error(
                "repetition-too-large",
                format!("repetition bound {value} is too large"),
                span,
                format!("bounds must be below {}", u32::MAX),
            );
        }
        bound
    }

    fn reference(&mut self, name: &str, span: Span) -> ExprKind {
        if let Some(id) = self.scope.lookup(self.module, name) {
            return ExprKind::Ref(id);
        }
        let mut diagnostic = Diagnostic::error(
            "undefined-rule",
            format!("undefined rule `{name}`"),
            span,
            "no rule with this name",
        );
        // With a fix to suggest, the rest of the check goes on as if it
        // were made: the suggested rule is used (not reported unused), and
        // no error follows from the reference.
        let mut meant = None;
        if let Some(qualified) = self.scope.qualified_in_import(self.module, name) {
            diagnostic = diagnostic.with_help(format!("a rule of an import: write `{qualified}`"));
            meant = self.scope.lookup(self.module, &qualified);
        } else if let Some(similar) = self.scope.suggest(self.module, name) {
            diagnostic = diagnostic.with_help(format!("did you mean `{similar}`?"));
            meant = self.scope.lookup(self.module, &similar);
        }
        self.diagnostics.push(diagnostic);
        meant.map_or(ExprKind::Empty, ExprKind::Ref)
    }

    fn regex_literal(&mut self, pattern: &str, flags: &str, span: Span) -> ExprKind {
        let mut options = regex::Options::default();
        let flags_start = span.end - flags.len();
        let flags_ok = self.flags(&mut options, flags, |i| {
            Span::new(span.file, flags_start + i, flags_start + i + 1)
        });
        let source = self.sources.slice(span);
        let decoded = decode_regex(source);
        let locate = |start: usize, end: usize| {
            let at = |i: usize| decoded.offsets.get(i).copied().unwrap_or(0) + span.start;
            Span::new(span.file, at(start), at(end).max(at(start)))
        };
        match regex::terminal(pattern, options, &locate, self.diagnostics) {
            Some(regex) if flags_ok => ExprKind::Regex(regex),
            _ => ExprKind::Empty,
        }
    }

    /// Applies regex flag letters; `at(i)` is the span of the i-th letter.
    fn flags(
        &mut self,
        options: &mut regex::Options,
        flags: &str,
        at: impl Fn(usize) -> Span,
    ) -> bool {
        let mut ok = true;
        for (i, flag) in flags.char_indices() {
            match flag {
                'i' => options.case_insensitive = true,
                's' => options.dot_matches_new_line = true,
                // Unicode is always on; XGrammar accepts the flag.
                'u' => {}
                _ => {
                    self.diagnostics.push(
                        Diagnostic::error(
                            "bad-regex-flag",
                            format!("unknown regex flag `{flag}`"),
                            at(i),
                            "unknown flag",
                        )
                        .with_help("flags: `i` (ignore case), `s` (`.` matches a line feed), `u` (Unicode, always on)"),
                    );
                    ok = false;
                }
            }
        }
        ok
    }

    fn macro_call(&mut self, name: &ast::Name, args: &[ast::Arg], span: Span) -> ExprKind {
        match name.text.as_str() {
            "Regex" => self.regex_macro(args, span),
            "Token" => self.token_set(args, false, span),
            "ExcludeToken" => self.token_set(args, true, span),
            "TagDispatch" => self.tag_dispatch(args),
            _ => self.token_tag_dispatch(args),
        }
    }

    /// Splits arguments into positional and named, reporting unknown and
    /// repeated names. `None` if any was wrong.
    fn split_args<'b>(
        &mut self,
        what: &str,
        args: &'b [ast::Arg],
        allowed: &[&str],
    ) -> Option<CallArgs<'b>> {
        let mut call = CallArgs {
            positional: Vec::new(),
            named: Vec::new(),
        };
        let mut ok = true;
        for arg in args {
            let Some(name) = &arg.name else {
                call.positional.push(&arg.value);
                continue;
            };
            if !allowed.contains(&name.text.as_str()) {
                let known = if allowed.is_empty() {
                    format!("`{what}` takes no named arguments")
                } else {
                    format!("`{what}` takes: {}", allowed.join(", "))
                };
                self.diagnostics.push(
                    Diagnostic::error(
                        "bad-macro-argument",
                        format!("unknown argument `{}` of `{what}`", name.text),
                        name.span,
                        "unknown argument",
                    )
                    .with_help(known),
                );
                ok = false;
            } else if call.named.iter().any(|(n, _)| *n == name.text) {
                self.error(
                    "bad-macro-argument",
                    format!("argument `{}` given twice", name.text),
                    name.span,
                    "repeated",
                );
                ok = false;
            } else {
                call.named.push((&name.text, &arg.value));
            }
        }
        ok.then_some(call)
    }

    fn expect_bool(&mut self, value: &ast::Value, what: &str) -> Option<bool> {
        match &value.kind {
            ValueKind::Ident(word) if word == "true" => Some(true),
            ValueKind::Ident(word) if word == "false" => Some(false),
            _ => {
                self.error(
                    "bad-macro-argument",
                    format!("`{what}` must be `true` or `false`"),
                    value.span,
                    "expected a boolean",
                );
                None
            }
        }
    }

    /// A string or a tuple of strings, each non-empty.
    fn expect_strings(&mut self, value: &ast::Value, what: &str) -> Option<Vec<(String, Span)>> {
        let items: Vec<&ast::Value> = match &value.kind {
            ValueKind::Tuple(items) => items.iter().collect(),
            _ => vec![value],
        };
        let mut strings = Vec::with_capacity(items.len());
        for item in items {
            match &item.kind {
                ValueKind::Str(s) if !s.is_empty() => strings.push((s.clone(), item.span)),
                ValueKind::Str(_) => {
                    self.error(
                        "bad-macro-argument",
                        format!("`{what}` strings must not be empty"),
                        item.span,
                        "empty string",
                    );
                    return None;
                }
                _ => {
                    self.error(
                        "bad-macro-argument",
                        format!("`{what}` takes strings: `\"a\"` or `(\"a\", \"b\")`"),
                        item.span,
                        "expected a string",
                    );
                    return None;
                }
            }
        }
        Some(strings)
    }

    /// A token given by id, or by its text (a special token's name such as
    /// `"<|call|>"`, or a text token's exact text) resolved in the
    /// vocabulary the grammar is compiled for.
    fn expect_token(&mut self, value: &ast::Value, what: &str) -> Option<TokenId> {
        let id = match &value.kind {
            ValueKind::Int(n) => usize::try_from(*n).ok().and_then(|n| TokenId::new(n).ok()),
            ValueKind::Str(text) => return self.token_by_text(text, value.span),
            _ => {
                self.error(
                    "bad-macro-argument",
                    format!("`{what}` takes tokens: ids (`128009`) or texts (`\"<|eot_id|>\"`)"),
                    value.span,
                    "expected a token id or text",
                );
                return None;
            }
        };
        if id.is_none() {
            self.error(
                "bad-macro-argument",
                "token id out of range",
                value.span,
                "too large",
            );
        }
        id
    }

    fn token_by_text(&mut self, text: &str, span: Span) -> Option<TokenId> {
        let Some(vocabulary) = self.sources.vocabulary() else {
            self.diagnostics.push(
                Diagnostic::error(
                    "token-needs-vocabulary",
                    format!("the token `{text}` is named by its text, and no vocabulary is given to find it in"),
                    span,
                    "a token of which model?",
                )
                .with_help("compile with the model's tokenizer (`--tokenizer tokenizer.json`, `tokenizer = …` in `grammar!`), or give the token's id"),
            );
            return None;
        };
        let found = vocabulary.token_by_text(text);
        match found {
            None => self.error(
                "unknown-token",
                format!("the vocabulary has no token `{text}`"),
                span,
                "not a token of this model",
            ),
            Some(id) if vocabulary.is_stop(id) => self.diagnostics.push(
                Diagnostic::error(
                    "stop-token",
                    format!("`{text}` is a stop token of this model: it ends the output, so the grammar never matches it"),
                    span,
                    "a stop token",
                )
                .with_help("end the grammar where the output ends; the stop token is allowed exactly there"),
            ),
            Some(_) => {}
        }
        found
    }

    fn regex_macro(&mut self, args: &[ast::Arg], span: Span) -> ExprKind {
        let Some(CallArgs { positional, named }) =
            self.split_args("Regex", args, &["flags", "json_string"])
        else {
            return ExprKind::Empty;
        };
        let [pattern] = positional[..] else {
            self.error(
                "bad-macro-argument",
                format!("`Regex` takes one pattern, found {}", positional.len()),
                span,
                "expected `Regex(\"pattern\")`",
            );
            return ExprKind::Empty;
        };
        let ValueKind::Str(text) = &pattern.kind else {
            self.error(
                "bad-macro-argument",
                "the pattern must be a string",
                pattern.span,
                "expected a string",
            );
            return ExprKind::Empty;
        };
        // XGrammar: without `flags`, `.` matches every character.
        let mut options = regex::Options {
            dot_matches_new_line: true,
            ..regex::Options::default()
        };
        let mut ok = true;
        for (name, value) in named {
            match name {
                "flags" => {
                    options.dot_matches_new_line = false;
                    if let ValueKind::Str(flags) = &value.kind {
                        let file = value.span.file;
                        let decoded = decode_literal(self.sources.slice(value.span));
                        let at = |i: usize| {
                            let start =
                                value.span.start + decoded.offsets.get(i).copied().unwrap_or(0);
                            Span::new(file, start, start + 1)
                        };
                        ok &= self.flags(&mut options, flags, at);
                    } else {
                        self.error(
                            "bad-macro-argument",
                            "`flags` must be a string",
                            value.span,
                            "expected a string",
                        );
                        ok = false;
                    }
                }
                _ => match self.expect_bool(value, "json_string") {
                    Some(json) => options.json_string = json,
                    None => ok = false,
                },
            }
        }
        let decoded = decode_literal(self.sources.slice(pattern.span));
        let base = pattern.span;
        let locate = |start: usize, end: usize| {
            let at = |i: usize| decoded.offsets.get(i).copied().unwrap_or(0) + base.start;
            Span::new(base.file, at(start), at(end).max(at(start)))
        };
        match regex::terminal(text, options, &locate, self.diagnostics) {
            Some(regex) if ok => ExprKind::Regex(regex),
            _ => ExprKind::Empty,
        }
    }

    fn token_set(&mut self, args: &[ast::Arg], negated: bool, span: Span) -> ExprKind {
        let what = if negated { "ExcludeToken" } else { "Token" };
        let Some(CallArgs { positional, .. }) = self.split_args(what, args, &[]) else {
            return ExprKind::Empty;
        };
        if positional.is_empty() {
            self.error(
                "bad-macro-argument",
                format!("`{what}` needs at least one token id"),
                span,
                format!("expected `{what}(id, …)`"),
            );
            return ExprKind::Empty;
        }
        let ids: Option<Vec<TokenId>> = positional
            .iter()
            .map(|v| self.expect_token(v, what))
            .collect();
        let Some(mut ids) = ids else {
            return ExprKind::Empty;
        };
        ids.sort_unstable();
        ids.dedup();
        ExprKind::Tokens(tree::TokenSet { ids, negated })
    }

    fn dispatch(&mut self, options: &[ast::Arg], arms: &[ast::Arm]) -> ExprKind {
        let mut parts = DispatchParts::default();
        let mut stop_at_end = None;
        let mut ok = true;
        let mut modes: Vec<Span> = Vec::new();
        for option in options {
            let value = &option.value;
            match (&option.name, &value.kind) {
                (None, ValueKind::Ident(word)) if word == "once" || word == "loop" => {
                    parts.repeat = word == "loop";
                    modes.push(value.span);
                }
                (Some(name), _) if name.text == "stop" => {
                    ok &= assign(&mut parts.stop, self.expect_strings(value, "stop"));
                }
                (Some(name), _) if name.text == "exclude" => {
                    ok &= assign(&mut parts.exclude, self.expect_strings(value, "exclude"));
                }
                (Some(name), _) if name.text == "stop_eos" => {
                    stop_at_end = self.expect_bool(value, "stop_eos");
                    ok &= stop_at_end.is_some();
                }
                _ => {
                    let span = option
                        .name
                        .as_ref()
                        .map_or(value.span, |n| n.span.to(value.span));
                    self.diagnostics.push(
                        Diagnostic::error("bad-dispatch-option", "unknown dispatch option", span, "not an option")
                            .with_help(
                                "options: `once`, `loop` (default), `stop=(\"…\")`, `exclude=(\"…\")`, `stop_eos=true|false`",
                            ),
                    );
                    ok = false;
                }
            }
        }
        if let [first, second, ..] = modes[..] {
            self.diagnostics.push(
                Diagnostic::error(
                    "bad-dispatch-option",
                    "`once` and `loop` given together",
                    second,
                    "second mode",
                )
                .with_label(first, "first mode"),
            );
            ok = false;
        }
        parts.arms = arms
            .iter()
            .map(|arm| tree::DispatchArm {
                trigger: arm.trigger.value.clone(),
                span: arm.trigger.span,
                body: self.expr(&arm.body),
            })
            .collect();
        parts.stop_at_end = stop_at_end.unwrap_or(parts.stop.is_empty());
        self.finish_dispatch(parts, ok)
    }

    /// XGrammar's `TagDispatch(("tag", rule), …, loop_after_dispatch=, excludes=, stop_eos=, stop_str=)`.
    fn tag_dispatch(&mut self, args: &[ast::Arg]) -> ExprKind {
        let Some(CallArgs { positional, named }) =
            self.split_args("TagDispatch", args, TAG_DISPATCH_ARGS)
        else {
            return ExprKind::Empty;
        };
        let mut ok = true;
        let mut parts = DispatchParts::default();
        for value in positional {
            if let ValueKind::Tuple(pair) = &value.kind
                && let [trigger, rule] = &pair[..]
                && let (ValueKind::Str(text), ValueKind::Ident(name)) = (&trigger.kind, &rule.kind)
            {
                let body = tree::Expr {
                    kind: self.reference(name, rule.span),
                    span: rule.span,
                };
                parts.arms.push(tree::DispatchArm {
                    trigger: text.clone(),
                    span: trigger.span,
                    body,
                });
                continue;
            }
            self.diagnostics.push(
                Diagnostic::error(
                    "bad-macro-argument",
                    "a `TagDispatch` arm is a pair `(\"trigger\", rule)`",
                    value.span,
                    "expected `(\"trigger\", rule)`",
                )
                .with_help("xg's own `dispatch { \"trigger\" => expression }` allows any expression after a trigger"),
            );
            ok = false;
        }
        for (name, value) in named {
            ok &= match name {
                "loop_after_dispatch" => assign(&mut parts.repeat, self.expect_bool(value, name)),
                "stop_eos" => assign(&mut parts.stop_at_end, self.expect_bool(value, name)),
                "excludes" => assign(&mut parts.exclude, self.string_tuple(value, name)),
                _ => assign(&mut parts.stop, self.string_tuple(value, name)),
            };
        }
        self.finish_dispatch(parts, ok)
    }

    /// Checks a dispatch's strings and builds it, or `Empty` if anything was wrong.
    fn finish_dispatch(&mut self, parts: DispatchParts, ok: bool) -> ExprKind {
        let ok = self.check_dispatch_strings(&parts.arms, &parts.stop, &parts.exclude) && ok;
        if !ok {
            return ExprKind::Empty;
        }
        ExprKind::Dispatch(tree::Dispatch {
            arms: parts.arms,
            repeat: parts.repeat,
            stop: parts.stop.into_iter().map(|(s, _)| s).collect(),
            stop_at_end: parts.stop_at_end,
            exclude: parts.exclude.into_iter().map(|(s, _)| s).collect(),
        })
    }

    /// A parenthesised tuple of strings (XGrammar's `excludes=("a", "b")`; `()` is empty).
    fn string_tuple(&mut self, value: &ast::Value, what: &str) -> Option<Vec<(String, Span)>> {
        match &value.kind {
            ValueKind::Tuple(items) if items.is_empty() => Some(Vec::new()),
            _ => self.expect_strings(value, what),
        }
    }

    /// XGrammar's `TokenTagDispatch((id, rule), …, loop_after_dispatch=, excludes=(ids))`.
    fn token_tag_dispatch(&mut self, args: &[ast::Arg]) -> ExprKind {
        let Some(CallArgs { positional, named }) = self.split_args(
            "TokenTagDispatch",
            args,
            &["loop_after_dispatch", "excludes"],
        ) else {
            return ExprKind::Empty;
        };
        let mut ok = true;
        let mut arms: Vec<(tree::TokenDispatchArm, Span)> = Vec::new();
        for value in positional {
            if let ValueKind::Tuple(pair) = &value.kind
                && let [id, rule] = &pair[..]
                && let ValueKind::Ident(rule_name) = &rule.kind
            {
                let Some(trigger) = self.expect_token(id, "TokenTagDispatch") else {
                    ok = false;
                    continue;
                };
                if let Some((_, first)) = arms.iter().find(|(arm, _)| arm.trigger == trigger) {
                    let first = *first;
                    self.diagnostics.push(
                        Diagnostic::error(
                            "duplicate-trigger",
                            format!("trigger token {trigger} appears twice"),
                            id.span,
                            "again here",
                        )
                        .with_label(first, "first here"),
                    );
                    ok = false;
                }
                let body = tree::Expr {
                    kind: self.reference(rule_name, rule.span),
                    span: rule.span,
                };
                arms.push((tree::TokenDispatchArm { trigger, body }, id.span));
                continue;
            }
            self.error(
                "bad-macro-argument",
                "a `TokenTagDispatch` arm is a pair `(token_id, rule)`",
                value.span,
                "expected `(token_id, rule)`",
            );
            ok = false;
        }
        let mut repeat = true;
        let mut exclude = Vec::new();
        for (name, value) in named {
            if name == "loop_after_dispatch" {
                ok &= assign(&mut repeat, self.expect_bool(value, name));
                continue;
            }
            let items: Vec<&ast::Value> = match &value.kind {
                ValueKind::Tuple(items) => items.iter().collect(),
                _ => vec![value],
            };
            for item in items {
                let Some(id) = self.expect_token(item, "excludes") else {
                    ok = false;
                    continue;
                };
                if let Some((_, trigger_span)) = arms.iter().find(|(arm, _)| arm.trigger == id) {
                    let trigger_span = *trigger_span;
                    self.diagnostics.push(
                        Diagnostic::error(
                            "dispatch-conflict",
                            format!("token {id} is both a trigger and excluded"),
                            item.span,
                            "excluded here",
                        )
                        .with_label(trigger_span, "trigger here"),
                    );
                    ok = false;
                }
                exclude.push(id);
            }
        }
        if !ok {
            return ExprKind::Empty;
        }
        exclude.sort_unstable();
        exclude.dedup();
        ExprKind::TokenDispatch(tree::TokenDispatch {
            arms: arms.into_iter().map(|(arm, _)| arm).collect(),
            repeat,
            exclude,
        })
    }

    /// Checks a dispatch's strings: triggers distinct and non-empty; no
    /// excluded string inside a trigger or stop string (it could then never be
    /// written); warns about triggers and stops that can never complete
    /// because a shorter one inside them completes first.
    fn check_dispatch_strings(
        &mut self,
        arms: &[tree::DispatchArm],
        stop: &[(String, Span)],
        exclude: &[(String, Span)],
    ) -> bool {
        let mut ok = true;
        let patterns: Vec<(&str, Span, &str)> = arms
            .iter()
            .map(|arm| (arm.trigger.as_str(), arm.span, "trigger"))
            .chain(stop.iter().map(|(t, s)| (t.as_str(), *s, "stop string")))
            .collect();
        let excluded = exclude.iter().map(|(text, span)| (text.as_str(), *span));
        let strings: Vec<(&str, Span)> = patterns
            .iter()
            .map(|&(t, s, _)| (t, s))
            .chain(excluded)
            .collect();
        if let Some(error) =
            xg_runtime::dispatch_patterns_error(strings.iter().map(|(t, _)| t.as_bytes()))
        {
            // Shown at the first string past the limit, or at the one that
            // takes them all past it.
            let mut total = 0;
            let (_, span) = strings
                .iter()
                .find(|(text, _)| {
                    total += text.len();
                    text.len() > xg_runtime::MAX_DISPATCH_PATTERN
                        || total > xg_runtime::MAX_DISPATCH_PATTERNS
                })
                .copied()
                .expect("some string is past a limit");
            self.error("dispatch-too-large", error, span, "here");
            return false;
        }
        for (i, &(text, span, kind)) in patterns.iter().enumerate() {
            if text.is_empty() {
                self.error(
                    "bad-dispatch-option",
                    format!("empty {kind}"),
                    span,
                    "a trigger must have text",
                );
                ok = false;
                continue;
            }
            if let Some(&(_, first, first_kind)) = patterns[..i].iter().find(|(t, _, _)| *t == text)
            {
                self.diagnostics.push(
                    Diagnostic::error(
                        "duplicate-trigger",
                        format!("`{}` is given twice", text.escape_debug()),
                        span,
                        format!("again as a {kind}"),
                    )
                    .with_label(first, format!("first as a {first_kind}")),
                );
                ok = false;
                continue;
            }
            if let Some(&(inner, inner_span, inner_kind)) = patterns
                .iter()
                .find(|(t, _, _)| !t.is_empty() && t.len() < text.len() && text.contains(t))
            {
                self.diagnostics.push(
                    Diagnostic::warning(
                        "unreachable-trigger",
                        format!("{kind} `{}` can never complete", text.escape_debug()),
                        span,
                        format!("it contains the {inner_kind} `{}`", inner.escape_debug()),
                    )
                    .with_label(inner_span, "which completes first"),
                );
            }
            for (excluded, excluded_span) in exclude {
                if text.contains(excluded.as_str()) {
                    self.diagnostics.push(
                        Diagnostic::error(
                            "dispatch-conflict",
                            format!(
                                "excluded string `{}` occurs in {kind} `{}`",
                                excluded.escape_debug(),
                                text.escape_debug()
                            ),
                            *excluded_span,
                            "excluded here",
                        )
                        .with_label(span, format!("so this {kind} could never be written")),
                    );
                    ok = false;
                }
            }
        }
        ok
    }

    /// Parses an embedded schema and compiles it into rules appended to
    /// [`Embedded`]; the expression becomes a reference to the first.
    fn json_schema(
        &mut self,
        source: &ast::JsonSource,
        notation: ast::Notation,
        span: Span,
    ) -> ExprKind {
        let Some(parsed) = self.parse_schema(source, span) else {
            return ExprKind::Empty;
        };
        let options = json_schema::Options {
            literals: match notation {
                ast::Notation::Json => json_schema::Literals::Json,
                ast::Notation::Python => json_schema::Literals::Python,
            },
            ..json_schema::Options::default()
        };
        // Inline, the schema's text is this file's: diagnostics point into it.
        let placement = json_schema::Placement {
            whole: span,
            text: match source {
                ast::JsonSource::Inline(raw) => Some((raw.as_str(), span.end - raw.len())),
                ast::JsonSource::File(_) => None,
            },
        };
        let outcome = json_schema::embed(
            &parsed,
            &options,
            self.compilation.cache,
            self.compilation.budget,
            &placement,
            self.diagnostics,
        );
        match outcome {
            Ok(generated) => {
                let id = self.embedded.first + self.embedded.rules.len();
                self.schemas += 1;
                let directive = notation.directive();
                let prefix = match self.schemas {
                    1 => format!("{}{directive}.", self.rule),
                    n => format!("{}{directive}{n}.", self.rule),
                };
                self.embedded
                    .rules
                    .extend(generated.to_tree(id, span, &prefix));
                ExprKind::Ref(RuleId::new(id).expect("rule count fits"))
            }
            Err(errors) => {
                json_schema::push_errors(&errors, &placement, self.diagnostics);
                ExprKind::Empty
            }
        }
    }

    /// An embedded schema's JSON (inline or from its file), checked to be an
    /// object or a boolean; `None` after an error.
    fn parse_schema(&mut self, source: &ast::JsonSource, span: Span) -> Option<serde_json::Value> {
        let parsed = match source {
            ast::JsonSource::Inline(raw) => {
                let start = span.end - raw.len();
                match serde_json::from_str::<serde_json::Value>(raw) {
                    Ok(value) => value,
                    Err(err) => {
                        let offset = json_error_offset(raw, &err);
                        let width = raw[offset..].chars().next().map_or(0, char::len_utf8);
                        self.error(
                            "invalid-json",
                            format!("invalid JSON Schema: {}", json_error_message(&err)),
                            Span::new(span.file, start + offset, start + offset + width),
                            "here",
                        );
                        return None;
                    }
                }
            }
            ast::JsonSource::File(path) => {
                let shown = self.sources.relative_name(path.span.file, &path.value);
                let read = self
                    .sources
                    .data_file(path.span.file, &path.value)
                    .and_then(|full| {
                        self.sources
                            .read_data_file(&full)
                            .map_err(|err| format!("cannot read `{shown}`: {err}"))
                    });
                let text = match read {
                    Ok(text) => text,
                    Err(reason) => {
                        self.error(
                            "json-schema-not-found",
                            format!("cannot read `{shown}`"),
                            path.span,
                            reason,
                        );
                        return None;
                    }
                };
                match serde_json::from_str::<serde_json::Value>(&text) {
                    Ok(value) => value,
                    Err(err) => {
                        self.error(
                            "invalid-json",
                            format!(
                                "invalid JSON Schema in {shown}:{}:{}: {}",
                                err.line(),
                                err.column(),
                                json_error_message(&err)
                            ),
                            path.span,
                            "in this file",
                        );
                        return None;
                    }
                }
            }
        };
        if !(parsed.is_object() || parsed.is_boolean()) {
            self.error(
                "invalid-json",
                "a JSON Schema must be an object or a boolean",
                span,
                "not a schema",
            );
            return None;
        }
        Some(parsed)
    }
}

/// A dispatch being assembled from its options (xg's or XGrammar's spelling).
struct DispatchParts {
    arms: Vec<tree::DispatchArm>,
    repeat: bool,
    stop: Vec<(String, Span)>,
    stop_at_end: bool,
    exclude: Vec<(String, Span)>,
}

impl Default for DispatchParts {
    /// XGrammar's defaults: loop, no stop strings, may end anywhere, nothing excluded.
    fn default() -> Self {
        Self {
            arms: Vec::new(),
            repeat: true,
            stop: Vec::new(),
            stop_at_end: true,
            exclude: Vec::new(),
        }
    }
}

/// Stores `value` in `slot` if there is one; whether there was.
fn assign<T>(slot: &mut T, value: Option<T>) -> bool {
    value.map(|v| *slot = v).is_some()
}

/// The characters a class matches.
fn char_set(class: &ast::CharClass) -> CharSet {
    let ranges = class.items.iter().flat_map(|item| match *item {
        ClassItem::Range(lo, hi) => vec![(lo, hi)],
        ClassItem::Perl(perl) => perl_ranges(perl),
    });
    let set = CharSet::from_ranges(ranges);
    if class.negated { set.complement() } else { set }
}

fn perl_ranges(perl: PerlClass) -> Vec<(char, char)> {
    let digit = [('0', '9')];
    let word = [('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')];
    let space = [('\t', '\r'), (' ', ' ')];
    match perl {
        PerlClass::Digit => digit.to_vec(),
        PerlClass::Word => word.to_vec(),
        PerlClass::Space => space.to_vec(),
        PerlClass::NotDigit => CharSet::from_ranges(digit).complement().ranges().to_vec(),
        PerlClass::NotWord => CharSet::from_ranges(word).complement().ranges().to_vec(),
        PerlClass::NotSpace => CharSet::from_ranges(space).complement().ranges().to_vec(),
    }
}
