//! Reading a structural tag: JSON → [`Format`], every field checked and
//! typed, each problem recorded with its JSON pointer. What the formats
//! mean (ends, free text, dispatch) is the lowering's business
//! ([`super::Lowering`]); this module only reads.

use serde_json::{Map, Value};
use xg_runtime::{TokenId, Vocabulary};

use super::TagError;
use crate::{json_schema, tools};

/// One format of a structural tag, read.
#[derive(Clone, Debug)]
pub(super) enum Format {
    /// A format with an error (recorded): it stands for nothing.
    Invalid,
    /// `any_text`: free text, up to the enclosing tag's end.
    AnyText {
        pointer: String,
        excludes: Vec<String>,
        max_tokens: Option<u32>,
    },
    /// `sequence`: the elements in order.
    Sequence(Vec<Format>),
    /// `or`: one of the elements.
    Or(Vec<Format>),
    /// `triggered_tags`: free text in which a trigger starts a tag.
    TriggeredTags {
        pointer: String,
        triggers: Vec<String>,
        excludes: Vec<String>,
        how: Triggered,
        /// Each tag with the trigger its begin starts with (`None`: an
        /// error, recorded; the tag is still read for what else is wrong).
        tags: Vec<(Option<usize>, Tag)>,
    },
    /// `tags_with_separator`: tags, one after another.
    TagsWithSeparator {
        separator: String,
        how: Triggered,
        tags: Vec<Tag>,
    },
    /// `dispatch`: free text in which a trigger starts its format.
    Dispatch {
        pointer: String,
        arms: Vec<(String, Format)>,
        repeat: bool,
        excludes: Vec<String>,
    },
    /// `exclude_token`: any one token but these.
    ExcludeToken(Vec<TokenId>),
    /// `any_tokens`: tokens, up to the enclosing tag's end token.
    AnyTokens {
        pointer: String,
        excluded: Vec<TokenId>,
        max_tokens: Option<u32>,
    },
    /// `token_triggered_tags`: tokens in which a trigger token starts a tag.
    TokenTriggeredTags {
        pointer: String,
        triggers: Vec<TokenId>,
        excluded: Vec<TokenId>,
        how: Triggered,
        tags: Vec<Tag>,
    },
    /// `token_dispatch`: tokens in which a trigger token starts its format.
    TokenDispatch {
        pointer: String,
        /// Each arm's trigger (`None`: an error, recorded; the arm is
        /// still read for what else is wrong) and format.
        arms: Vec<(Option<TokenId>, Format)>,
        repeat: bool,
        excluded: Vec<TokenId>,
    },
    /// A format that ends by itself: what follows is not its business.
    Closed(Closed),
}

/// A format that ends by itself.
#[derive(Clone, Debug)]
pub(super) enum Closed {
    /// `const_string`: this text.
    Const(String),
    /// `json_schema` (JSON style): a value of the schema.
    JsonSchema {
        pointer: String,
        schema: Value,
        options: json_schema::Options,
    },
    /// `json_schema` in an XML style, or `qwen_xml_parameter`: the
    /// schema's object as XML arguments.
    XmlArguments {
        pointer: String,
        style: tools::XmlStyle,
        schema: Value,
    },
    /// `grammar`: `.xg` text (XGrammar's EBNF forms included).
    Grammar { pointer: String, text: String },
    /// `regex`.
    Regex { pointer: String, pattern: String },
    /// `optional`, `plus`, `star`, `repeat`.
    Repeat {
        content: Box<Format>,
        min: u32,
        max: Option<u32>,
    },
    /// `tag`: begin, content, end.
    Tag(Tag),
    /// `token`: this token (`None`: an error, recorded).
    Token(Option<TokenId>),
}

/// How a list of tags repeats: whether a tag must come first, and whether
/// it stops after one.
#[derive(Clone, Copy, Debug)]
pub(super) struct Triggered {
    pub at_least_one: bool,
    pub stop_after_first: bool,
}

/// A tag: begin, content, end.
#[derive(Clone, Debug)]
pub(super) struct Tag {
    pub begin: Begin,
    pub content: Box<Format>,
    pub end: End,
}

/// How a tag begins.
#[derive(Clone, Debug)]
pub(super) enum Begin {
    Text(String),
    /// A token (`None`: an error, recorded).
    Token(Option<TokenId>),
    /// An error, recorded.
    Invalid,
}

/// What must follow a format: the end of its enclosing tag, if it is the
/// tag's last part.
#[derive(Clone, Debug)]
pub(super) enum End {
    /// Nothing.
    None,
    /// One of these strings (non-empty).
    Strings(Vec<String>),
    /// This token.
    Token(TokenId),
}

/// Reads a structural tag; problems go to `errors`.
pub(super) struct Reader<'a> {
    /// Resolves tokens given by text.
    pub vocabulary: Option<&'a Vocabulary>,
    pub errors: Vec<TagError>,
}

impl Reader<'_> {
    fn error(&mut self, pointer: &str, message: impl Into<String>) -> Format {
        self.errors.push(TagError {
            pointer: pointer.to_string(),
            message: message.into(),
        });
        Format::Invalid
    }

    /// The accepted shapes of a whole structural tag: `{"type":
    /// "structural_tag", "format": …}`, a bare format, and the legacy
    /// `{"structures": …, "triggers": …}` with or without the `type` (vLLM
    /// and SGLang send it without).
    pub(super) fn top(&mut self, tag: &Value) -> Format {
        let Some(object) = tag.as_object() else {
            return self.error("#", "a structural tag is a JSON object");
        };
        match (
            object.get("type").and_then(Value::as_str),
            object.get("format"),
        ) {
            (Some("structural_tag"), Some(format)) => self.format(format, "#/format"),
            (Some("structural_tag"), None) => self.legacy(object),
            (None, None) if object.contains_key("structures") => self.legacy(object),
            _ => self.format(tag, "#"),
        }
    }

    /// `{"structures": [{"begin", "schema", "end"}], "triggers": […]}`:
    /// triggered tags whose contents are JSON Schemas.
    fn legacy(&mut self, object: &Map<String, Value>) -> Format {
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
        self.format(&format, "#")
    }

    /// The format `format` at `pointer`.
    fn format(&mut self, format: &Value, pointer: &str) -> Format {
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
            "const_string" => Format::Closed(Closed::Const(self.string(&fields, "value"))),
            "json_schema" => self.json_schema(&fields),
            "grammar" => Format::Closed(Closed::Grammar {
                pointer: pointer.to_string(),
                text: self.string(&fields, "grammar"),
            }),
            "regex" => Format::Closed(Closed::Regex {
                pointer: pointer.to_string(),
                pattern: self.string(&fields, "pattern"),
            }),
            "any_text" => {
                let excludes = self.strings(&fields, "excludes", false);
                Format::AnyText {
                    pointer: pointer.to_string(),
                    excludes,
                    max_tokens: self.max_tokens(&fields),
                }
            }
            "sequence" => {
                let elements = self.array(&fields, "elements", false);
                Format::Sequence(self.formats(&elements, &format!("{pointer}/elements")))
            }
            "or" => {
                let elements = self.array(&fields, "elements", true);
                Format::Or(self.formats(&elements, &format!("{pointer}/elements")))
            }
            "optional" | "plus" | "star" | "repeat" => self.repeat(&fields),
            "tag" => match self.tag(object, pointer) {
                Some(tag) => Format::Closed(Closed::Tag(tag)),
                None => Format::Invalid,
            },
            "triggered_tags" => self.triggered_tags(&fields),
            "tags_with_separator" => {
                let separator = self.string(&fields, "separator");
                let how = self.triggered(&fields);
                Format::TagsWithSeparator {
                    separator,
                    how,
                    tags: self.separated_tags(&fields),
                }
            }
            "dispatch" => self.dispatch(&fields),
            "token" => Format::Closed(Closed::Token(self.token_field(&fields, "token"))),
            "exclude_token" => {
                Format::ExcludeToken(self.token_list(&fields, "exclude_tokens", false))
            }
            "any_tokens" => {
                let excluded = self.token_list(&fields, "exclude_tokens", false);
                Format::AnyTokens {
                    pointer: pointer.to_string(),
                    excluded,
                    max_tokens: self.max_tokens(&fields),
                }
            }
            "token_triggered_tags" => {
                let triggers = self.token_list(&fields, "trigger_tokens", true);
                let excluded = self.token_list(&fields, "exclude_tokens", false);
                let how = self.triggered(&fields);
                let tags = self.token_triggered(&fields, &triggers);
                Format::TokenTriggeredTags {
                    pointer: pointer.to_string(),
                    triggers,
                    excluded,
                    how,
                    tags,
                }
            }
            "token_dispatch" => self.token_dispatch(&fields),
            // XGrammar's older name for `json_schema` with `style: qwen_xml`.
            "qwen_xml_parameter" => match fields.object.get("json_schema") {
                Some(schema @ Value::Object(_)) => Format::Closed(Closed::XmlArguments {
                    pointer: pointer.to_string(),
                    style: tools::XmlStyle::Qwen,
                    schema: schema.clone(),
                }),
                _ => self.error(
                    pointer,
                    "`qwen_xml_parameter` needs `json_schema`: an object",
                ),
            },
            other => self.error(pointer, format!("unknown format type `{other}`")),
        }
    }

    /// The formats of the list `values`, the `i`th at `{pointer}/{i}`.
    fn formats(&mut self, values: &[Value], pointer: &str) -> Vec<Format> {
        (values.iter().enumerate())
            .map(|(i, value)| self.format(value, &format!("{pointer}/{i}")))
            .collect()
    }

    /// A free format's `max_tokens`: `None` if absent; a positive count.
    fn max_tokens(&mut self, fields: &Fields<'_>) -> Option<u32> {
        let most = match fields.object.get("max_tokens") {
            None | Some(Value::Null) => return None,
            Some(value) => value.as_u64().and_then(|n| u32::try_from(n).ok()),
        };
        if most.is_none_or(|most| most == 0) {
            let pointer = format!("{}/max_tokens", fields.pointer);
            self.error(&pointer, "`max_tokens` must be a positive whole number");
        }
        most.filter(|&most| most > 0)
    }

    fn repeat(&mut self, fields: &Fields<'_>) -> Format {
        let (min, max) = match fields.kind {
            "optional" => (0, Some(1)),
            "plus" => (1, None),
            "star" => (0, None),
            _ => {
                let min = self.integer(fields, "min");
                let max = self.integer(fields, "max");
                let Ok(min) = u32::try_from(min) else {
                    return self.error(fields.pointer, format!("`min` ({min}) must be a count"));
                };
                match (max, u32::try_from(max)) {
                    (-1, _) => (min, None),
                    (_, Ok(max)) if max >= min => (min, Some(max)),
                    _ => {
                        return self.error(
                            fields.pointer,
                            format!(
                                "`max` ({max}) must be -1 (no bound) or at least `min` ({min})"
                            ),
                        );
                    }
                }
            }
        };
        let Some(content) = fields.object.get("content") else {
            return self.error(fields.pointer, format!("`{}` needs `content`", fields.kind));
        };
        let content = self.format(content, &format!("{}/content", fields.pointer));
        Format::Closed(Closed::Repeat {
            content: Box::new(content),
            min,
            max,
        })
    }

    /// The `tag` format `object` at `pointer`; `None` (the error recorded)
    /// if it lacks its begin or its content.
    fn tag(&mut self, object: &Map<String, Value>, pointer: &str) -> Option<Tag> {
        let begin = match object.get("begin") {
            Some(Value::String(text)) => Begin::Text(text.clone()),
            Some(token @ Value::Object(_)) => {
                Begin::Token(self.token_format(token, &format!("{pointer}/begin")))
            }
            _ => {
                self.error(pointer, "a tag needs `begin`: a string or a token format");
                return None;
            }
        };
        let end = self.tag_end(object, pointer);
        let Some(content) = object.get("content") else {
            self.error(pointer, "a tag needs `content`");
            return None;
        };
        let content = self.format(content, &format!("{pointer}/content"));
        Some(Tag {
            begin,
            content: Box::new(content),
            end,
        })
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

    /// The `tags` of a list of tags, read but for their begins (each
    /// list takes its own kind): each tag's place in the list, begin,
    /// content and end. A tag that is not an object or has no content is
    /// left out (the error recorded).
    fn tag_lists(&mut self, fields: &Fields<'_>) -> Vec<(String, Value, Format, End)> {
        let tags = self.array(fields, "tags", true);
        (tags.iter().enumerate())
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
                let content = self.format(content, &format!("{pointer}/content"));
                let begin = object.get("begin").cloned().unwrap_or(Value::Null);
                Some((pointer, begin, content, end))
            })
            .collect()
    }

    fn triggered_tags(&mut self, fields: &Fields<'_>) -> Format {
        let triggers = self.strings(fields, "triggers", true);
        let excludes = self.strings(fields, "excludes", false);
        let how = self.triggered(fields);
        let mut tags = Vec::new();
        for (pointer, begin, content, end) in self.tag_lists(fields) {
            let content = Box::new(content);
            let Value::String(begin) = begin else {
                self.error(
                    &format!("{pointer}/begin"),
                    "a triggered tag's `begin` is a string (use `token_triggered_tags` for tokens)",
                );
                let begin = Begin::Invalid;
                tags.push((
                    None,
                    Tag {
                        begin,
                        content,
                        end,
                    },
                ));
                continue;
            };
            let matching: Vec<usize> = (0..triggers.len())
                .filter(|&t| begin.starts_with(triggers[t].as_str()))
                .collect();
            let trigger = match matching[..] {
                [trigger] => Some(trigger),
                _ => {
                    self.error(
                        &format!("{pointer}/begin"),
                        format!(
                            "`{begin}` must start with exactly one trigger; it starts with {}",
                            matching.len()
                        ),
                    );
                    None
                }
            };
            let begin = Begin::Text(begin);
            tags.push((
                trigger,
                Tag {
                    begin,
                    content,
                    end,
                },
            ));
        }
        Format::TriggeredTags {
            pointer: fields.pointer.to_string(),
            triggers,
            excludes,
            how,
            tags,
        }
    }

    /// The `at_least_one` and `stop_after_first` flags of a list of tags.
    fn triggered(&mut self, fields: &Fields<'_>) -> Triggered {
        Triggered {
            at_least_one: self.flag(fields, "at_least_one", false),
            stop_after_first: self.flag(fields, "stop_after_first", false),
        }
    }

    /// The tags of `tags_with_separator`: each begins with text or a token.
    fn separated_tags(&mut self, fields: &Fields<'_>) -> Vec<Tag> {
        (self.tag_lists(fields).into_iter())
            .map(|(pointer, begin, content, end)| {
                let begin = match begin {
                    Value::String(text) => Begin::Text(text),
                    token @ Value::Object(_) => {
                        Begin::Token(self.token_format(&token, &format!("{pointer}/begin")))
                    }
                    _ => {
                        self.error(&pointer, "a tag needs `begin`: a string or a token format");
                        Begin::Invalid
                    }
                };
                let content = Box::new(content);
                Tag {
                    begin,
                    content,
                    end,
                }
            })
            .collect()
    }

    /// The tags of `token_triggered_tags`: each begins with one of the
    /// `triggers` (a tag that does not has [`Begin::Invalid`]: an error,
    /// recorded; it is still read for what else is wrong).
    fn token_triggered(&mut self, fields: &Fields<'_>, triggers: &[TokenId]) -> Vec<Tag> {
        let mut tags = Vec::new();
        for (pointer, begin, content, end) in self.tag_lists(fields) {
            let pointer = format!("{pointer}/begin");
            let token = if begin.is_object() {
                self.token_format(&begin, &pointer)
            } else {
                self.error(
                    &pointer,
                    "a token-triggered tag's `begin` is a token format (use `triggered_tags` for text)",
                );
                None
            };
            let token = token.filter(|token| {
                let known = triggers.contains(token);
                if !known {
                    self.error(
                        &pointer,
                        format!("token {token} is not one of the trigger tokens"),
                    );
                }
                known
            });
            let begin = token.map_or(Begin::Invalid, |token| Begin::Token(Some(token)));
            let content = Box::new(content);
            tags.push(Tag {
                begin,
                content,
                end,
            });
        }
        tags
    }

    fn dispatch(&mut self, fields: &Fields<'_>) -> Format {
        let rules = self.array(fields, "rules", true);
        let repeat = self.flag(fields, "loop", true);
        let excludes = self.strings(fields, "excludes", false);
        let mut arms = Vec::new();
        for (i, rule) in rules.iter().enumerate() {
            let pointer = format!("{}/rules/{i}", fields.pointer);
            match rule.as_array().map(Vec::as_slice) {
                Some([Value::String(trigger), format]) => {
                    let body = self.format(format, &format!("{pointer}/1"));
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
        Format::Dispatch {
            pointer: fields.pointer.to_string(),
            arms,
            repeat,
            excludes,
        }
    }

    fn token_dispatch(&mut self, fields: &Fields<'_>) -> Format {
        let rules = self.array(fields, "rules", true);
        let repeat = self.flag(fields, "loop", true);
        let excluded = self.token_list(fields, "exclude_tokens", false);
        let mut arms = Vec::new();
        for (i, rule) in rules.iter().enumerate() {
            let pointer = format!("{}/rules/{i}", fields.pointer);
            match rule.as_array().map(Vec::as_slice) {
                Some([token, format]) => {
                    let token = self.token_value(token, &format!("{pointer}/0"));
                    let body = self.format(format, &format!("{pointer}/1"));
                    arms.push((token, body));
                }
                _ => {
                    self.error(&pointer, "a token dispatch rule is a pair [token, format]");
                }
            }
        }
        Format::TokenDispatch {
            pointer: fields.pointer.to_string(),
            arms,
            repeat,
            excluded,
        }
    }

    fn json_schema(&mut self, fields: &Fields<'_>) -> Format {
        let pointer = fields.pointer.to_string();
        let Some(schema) = fields.object.get("json_schema") else {
            return self.error(fields.pointer, "`json_schema` needs `json_schema`");
        };
        if !(schema.is_object() || schema.is_boolean()) {
            return self.error(
                &format!("{pointer}/json_schema"),
                "a JSON Schema is an object or a boolean",
            );
        }
        let style = fields
            .object
            .get("style")
            .and_then(Value::as_str)
            .unwrap_or("json");
        if style != "json" {
            let Some(style) = tools::XmlStyle::from_name(style) else {
                return self.error(
                    &format!("{pointer}/style"),
                    format!(
                        "unknown argument style `{style}`: `json`, `qwen_xml`, `glm_xml`, \
                         `minimax_xml`, `deepseek_xml` or `kimi_k3_xml`"
                    ),
                );
            };
            return Format::Closed(Closed::XmlArguments {
                pointer,
                style,
                schema: schema.clone(),
            });
        }
        Format::Closed(Closed::JsonSchema {
            options: self.schema_options(fields),
            pointer,
            schema: schema.clone(),
        })
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

    /// The flag `name`, `default` if absent.
    fn flag(&mut self, fields: &Fields<'_>, name: &str, default: bool) -> bool {
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
}

/// A format object, where it is, and its type.
struct Fields<'a> {
    object: &'a Map<String, Value>,
    pointer: &'a str,
    kind: &'a str,
}
