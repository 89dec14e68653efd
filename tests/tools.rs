//! Tool-calling formats on their models' real tokenizers: realistic outputs
//! (text, reasoning, one and several calls, nested arguments, unicode,
//! escapes) are accepted token by token with every token allowed by the
//! mask, and wrong tool names, invalid arguments and text after the end are
//! refused at the token where they go wrong. The mask is checked against
//! the slow reference (every token tried on a fork) at a few steps of each
//! output.

mod common;

use std::fmt::Write as _;
use std::sync::Arc;

use common::{
    DEEPSEEK_V3, LLAMA_3_2, MISTRAL_NEMO, REAL_TOKENIZERS, RealTokenizer, chat_template,
    real_tokenizer,
};
use serde_json::{Value, json};
use xg_compiler::tools::{Format, Options, Reasoning, ToolChoice};
use xg_compiler::{CompileCache, Limits, Request, pipeline};
use xg_runtime::{Capture, Grammar, Matcher, TokenId, ToolCallEvent, ToolCallStream, Vocabulary};

/// The tools of every test: flat arguments, nested objects and arrays.
fn tools() -> Value {
    json!([
        {"type": "function", "function": {"name": "get_weather", "description": "Current weather",
            "parameters": {"type": "object", "properties": {
                "city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
                "required": ["city"]}}},
        {"type": "function", "function": {"name": "search", "description": "Search the news",
            "parameters": {"type": "object", "properties": {
                "query": {"type": "string", "maxLength": 200},
                "filters": {"type": "object", "properties": {
                    "lang": {"type": "string"},
                    "max_results": {"type": "integer", "minimum": 1, "maximum": 50}},
                    "additionalProperties": false}},
                "required": ["query"]}}},
        {"name": "calendar.create_event", "description": "Create an event", "parameters": {"type": "object", "properties": {
            "title": {"type": "string"},
            "attendees": {"type": "array", "items": {"type": "object", "properties": {
                "name": {"type": "string"}, "email": {"type": "string", "format": "email"}},
                "required": ["name"]}}},
            "required": ["title", "attendees"]}}
    ])
}

/// A model: its vocabulary (stop tokens from its config and generation
/// config) and its tokenizer.
struct Model {
    vocabulary: Arc<Vocabulary>,
    tokenizer: Tokenizer,
}

/// How a model's text becomes tokens.
enum Tokenizer {
    /// The model's own tokenizer.
    Real(Box<tokenizers::Tokenizer>),
    /// For families whose tokenizer no package carries: a token per byte,
    /// then the family's added tokens (ids from 256, in order), each taken
    /// wherever its text appears.
    Bytes(Vec<String>),
}

impl Model {
    /// A model of a token per byte and the family's `added` tokens (text,
    /// special); its stop token is `stop`, one of the special ones.
    fn bytes(added: &[(&str, bool)], stop: &str) -> Model {
        let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        tokens.extend(added.iter().map(|(text, _)| text.as_bytes().to_vec()));
        let special: Vec<TokenId> = (added.iter().enumerate())
            .filter(|(_, (_, special))| *special)
            .map(|(i, _)| TokenId::new(256 + i).unwrap())
            .collect();
        let vocabulary = Vocabulary::from_byte_strings(&tokens, &special).unwrap();
        let stop = vocabulary.token_by_text(stop).expect("stop token");
        Model {
            vocabulary: Arc::new(vocabulary.with_stop_tokens(&[stop]).unwrap()),
            tokenizer: Tokenizer::Bytes(added.iter().map(|(text, _)| text.to_string()).collect()),
        }
    }

    fn load(which: &RealTokenizer, more_stops: &[&str]) -> Model {
        let (json, config) = real_tokenizer(which);
        let vocabulary = Vocabulary::from_tokenizer_json(&json, Some(&config)).unwrap();
        let mut stops = vocabulary.stop_tokens().to_vec();
        stops.extend(
            more_stops
                .iter()
                .map(|text| vocabulary.token_by_text(text).expect("stop token")),
        );
        Model {
            vocabulary: Arc::new(vocabulary.with_stop_tokens(&stops).unwrap()),
            tokenizer: Tokenizer::Real(Box::new(tokenizers::Tokenizer::from_bytes(&json).unwrap())),
        }
    }

    fn grammar(&self, options: &Options) -> Arc<Grammar> {
        let tools = tools();
        let mut request = Request::new(&Limits::default(), &CompileCache::default());
        request.sources.set_vocabulary(Arc::clone(&self.vocabulary));
        let file = request.add("tools.json", tools.to_string());
        let grammar = pipeline::tools(&mut request, &tools, file, options);
        assert!(
            !request.diagnostics.has_errors(),
            "{}",
            request.diagnostics.render(&request.sources, false)
        );
        Arc::new(grammar.unwrap())
    }

    /// The standard library's format file `path`'s `root`, for this model.
    fn library_grammar(&self, path: &str) -> Arc<Grammar> {
        let mut request = Request::ahead_of_time();
        request.sources.set_vocabulary(Arc::clone(&self.vocabulary));
        let file = request.sources.add(
            "turn.xg",
            format!("import {path:?} as f;\nroot ::= f.root"),
            None,
        );
        let grammar = pipeline::grammar(&mut request, file, "root");
        assert!(
            !request.diagnostics.has_errors(),
            "{}",
            request.diagnostics.render(&request.sources, false)
        );
        Arc::new(grammar.unwrap())
    }

    fn tokens(&self, text: &str) -> Vec<TokenId> {
        let ids: Vec<TokenId> = match &self.tokenizer {
            Tokenizer::Real(tokenizer) => {
                let encoding = tokenizer.encode(text, false).unwrap();
                (encoding.get_ids().iter())
                    .map(|&id| TokenId::new(id as usize).unwrap())
                    .collect()
            }
            Tokenizer::Bytes(added) => {
                let mut ids = Vec::new();
                let mut rest = text.as_bytes();
                while let Some(&first) = rest.first() {
                    let found = added
                        .iter()
                        .position(|token| rest.starts_with(token.as_bytes()));
                    let (id, len) = match found {
                        Some(i) => (256 + i, added[i].len()),
                        None => (usize::from(first), 1),
                    };
                    ids.push(TokenId::new(id).unwrap());
                    rest = &rest[len..];
                }
                ids
            }
        };
        // The tokens spell the text (special tokens by their names).
        let spelled: Vec<u8> = ids.iter().flat_map(|&id| self.spelling(id)).collect();
        assert_eq!(String::from_utf8_lossy(&spelled), text, "tokenization");
        ids
    }

    /// The bytes a token stands for in the output: its text, or a special
    /// token's name.
    fn spelling(&self, id: TokenId) -> Vec<u8> {
        match (self.vocabulary.kind_of(id), &self.tokenizer) {
            (xg_runtime::TokenKind::Text, _) => self.vocabulary.bytes(id).to_vec(),
            (_, Tokenizer::Real(tokenizer)) => tokenizer
                .id_to_token(u32::try_from(id.as_usize()).unwrap())
                .unwrap()
                .into_bytes(),
            (_, Tokenizer::Bytes(added)) => added[id.as_usize() - 256].clone().into_bytes(),
        }
    }

    /// Runs `text` token by token, then the stop token, checking each
    /// against the mask (and the whole mask against the reference at
    /// `reference_checks` evenly spread steps) and the tool-call events,
    /// polled after each token, against the calls captured at the end
    /// ([`assert_events`]). `Ok` with the captures and the events if all
    /// were accepted; else the byte offset where the refused token starts.
    fn run(
        &self,
        grammar: &Arc<Grammar>,
        text: &str,
        reference_checks: usize,
    ) -> Result<Turn, usize> {
        let vocabulary = &self.vocabulary;
        let ids = self.tokens(text);
        let stop = vocabulary.stop_tokens()[0];
        let mut matcher = Matcher::with_vocabulary(Arc::clone(grammar), Arc::clone(vocabulary));
        let mut mask = vec![0u32; vocabulary.mask_words()];
        let every = (ids.len() / reference_checks.max(1)).max(1);
        let mut offset = 0;
        let mut stream = ToolCallStream::new();
        let mut events = Vec::new();
        for (i, &token) in ids.iter().chain([&stop]).enumerate() {
            matcher.fill_next_token_bitmask(&mut mask).unwrap();
            if reference_checks > 0 && i % every == 0 {
                assert_mask_is_exact(&matcher, &mask, vocabulary);
            }
            let allowed = mask[token.as_usize() / 32] >> (token.as_usize() % 32) & 1 == 1;
            let accepted = matcher.fork().accept_token(token).is_ok();
            assert_eq!(allowed, accepted, "mask and matcher disagree on token {i}");
            if !allowed {
                return Err(offset);
            }
            matcher.accept_token(token).unwrap();
            offset += self.spelling(token).len();
            events.push(stream.poll(&matcher));
        }
        // Nothing after the stop token.
        assert!(matcher.fork().accept_token(ids[0]).is_err());
        // Every run: the events stream the text, reasoning and calls the
        // captures hold.
        let captures = matcher.captures();
        let calls: Vec<(String, String)> = captures
            .iter()
            .filter_map(|c| Some((c.name.strip_prefix("tool:")?.to_owned(), c.text_lossy())))
            .collect();
        // The text (or reasoning) of the turn: its captures in order, of
        // overlapping ones (readings of the same bytes) the latest begun.
        let joined = |name: &str| -> String {
            let mut kept: Vec<&Capture> = Vec::new();
            for capture in captures.iter().filter(|c| c.name == name) {
                if kept.last().is_some_and(|last| capture.start < last.end) {
                    kept.pop();
                }
                kept.push(capture);
            }
            kept.into_iter().map(Capture::text_lossy).collect()
        };
        let streamed = assert_events(&events, text);
        assert_eq!(streamed.calls, calls, "{text:?}");
        assert_eq!(streamed.text, joined("text"), "{text:?}");
        assert_eq!(streamed.reasoning, joined("reasoning"), "{text:?}");
        Ok(Turn { captures, streamed })
    }

    /// `text` is refused at the token holding byte `at`.
    fn refuses_at(&self, grammar: &Arc<Grammar>, text: &str, at: &str) {
        let wrong = text.find(at).expect("marker in the text");
        let refused = self
            .run(grammar, text, 0)
            .expect_err(&format!("{text:?} must be refused"));
        let ids = self.tokens(text);
        // The refused token starts at `refused` and covers `wrong`.
        let mut start = 0;
        let mut covers = false;
        for &id in &ids {
            let len = self.spelling(id).len();
            if start == refused {
                covers = (start..start + len).contains(&wrong);
                break;
            }
            start += len;
        }
        assert!(
            covers,
            "{text:?} refused at byte {refused} ({:?}…), not at {at:?}",
            &text[..refused]
        );
    }
}

/// Every token of the vocabulary tried on a fork agrees with the mask.
fn assert_mask_is_exact(matcher: &Matcher, mask: &[u32], vocabulary: &Vocabulary) {
    for index in 0..vocabulary.len() {
        let id = TokenId::new(index).unwrap();
        let allowed = mask[index / 32] >> (index % 32) & 1 == 1;
        let reference = matcher.fork().accept_token(id).is_ok();
        assert_eq!(
            allowed,
            reference,
            "token {index} ({:?}) after {} bytes",
            String::from_utf8_lossy(vocabulary.bytes(id)),
            matcher.position()
        );
    }
}

#[test]
fn qwen3_reasoning_text_and_parallel_calls() {
    let model = Model::load(&REAL_TOKENIZERS[1], &[]);
    let grammar = model.grammar(&Options::new(Format::Qwen));
    let calls = "<think>\nThe user wants the weather in Zürich — and \"news\".\n</think>\n\n\
        I'll look both up.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\", \"unit\": \"celsius\"}}\n</tool_call>\n\
        <tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"news \\\"today\\\" 日本\", \"filters\": {\"lang\": \"ja\", \"max_results\": 5}}}\n</tool_call>";
    model.run(&grammar, calls, 3).unwrap();
    model
        .run(&grammar, "It is sunny in Paris today. ☀️", 1)
        .unwrap();
    let nested = "<tool_call>\n{\"name\": \"calendar.create_event\", \"arguments\": {\"title\": \"Sync\", \
        \"attendees\": [{\"name\": \"Ada\", \"email\": \"ada@example.com\"}, {\"name\": \"Grace\"}]}}\n</tool_call>";
    model.run(&grammar, nested, 0).unwrap();

    let call = |name: &str, arguments: &str| {
        format!("<tool_call>\n{{\"name\": \"{name}\", \"arguments\": {arguments}}}\n</tool_call>")
    };
    model.refuses_at(&grammar, &call("get_time", "{}"), "time");
    model.refuses_at(&grammar, &call("get_weather", "{\"city\": 42}"), "42");
    model.refuses_at(&grammar, &call("search", "{\"filters\": {}}"), "filters");
    model.refuses_at(
        &grammar,
        &call(
            "search",
            "{\"query\": \"a\", \"filters\": {\"max_results\": 51}}",
        ),
        "1}}}",
    );
    let after = format!("{}\nDone.", call("get_weather", "{\"city\": \"Oslo\"}"));
    model.refuses_at(&grammar, &after, "Done");
}

#[test]
fn qwen3_tool_choice_reasoning_and_jump_forward() {
    let model = Model::load(&REAL_TOKENIZERS[1], &[]);
    let call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>";
    let second =
        "\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"x\"}}\n</tool_call>";
    let with = |change: &dyn Fn(&mut Options)| {
        let mut options = Options::new(Format::Qwen);
        change(&mut options);
        model.grammar(&options)
    };

    let required = with(&|o| o.tool_choice = ToolChoice::Required);
    model.run(&required, call, 0).unwrap();
    model.refuses_at(&required, "Sure.", "Sure");

    let none = with(&|o| o.tool_choice = ToolChoice::None);
    model.run(&none, "No tools needed.", 0).unwrap();
    model.refuses_at(&none, call, "<tool_call>");

    let named = with(&|o| o.tool_choice = ToolChoice::Function("search".into()));
    model.refuses_at(&named, call, "get_weather");

    // OpenAI's `allowed_tools`: the listed subset only; `auto` or
    // `required`; a name that is not a tool is an error.
    let allowed = |names: &[&str], required: bool| {
        with(&|o| {
            o.tool_choice = ToolChoice::Allowed {
                names: names.iter().map(ToString::to_string).collect(),
                required,
            };
        })
    };
    let weather_only = allowed(&["get_weather"], false);
    model.run(&weather_only, call, 0).unwrap();
    model.run(&weather_only, "Just text.", 0).unwrap();
    model.refuses_at(&weather_only, second.trim_start(), "search");
    let both_required = allowed(&["search", "get_weather"], true);
    model
        .run(&both_required, &format!("{call}{second}"), 0)
        .unwrap();
    model.refuses_at(&both_required, "Sure.", "Sure");
    let unknown = xg_compiler::tools::to_xg(
        &xg_compiler::tools::parse(&tools()).unwrap(),
        &Options {
            tool_choice: ToolChoice::Allowed {
                names: vec!["get_time".into()],
                required: false,
            },
            ..Options::new(Format::Qwen)
        },
        None,
    )
    .unwrap_err();
    assert!(unknown.message.contains("`get_time`"), "{unknown}");

    let single = with(&|o| o.parallel_calls = false);
    model.run(&single, call, 0).unwrap();
    model.refuses_at(
        &single,
        &format!("{call}{second}"),
        "\n<tool_call>\n{\"name\": \"search",
    );

    let forced = with(&|o| o.reasoning = Reasoning::Forced);
    model
        .run(&forced, &format!("<think>\nshort\n</think>\n\n{call}"), 0)
        .unwrap();
    model.refuses_at(&forced, call, "<tool_call>");
    let forbidden = with(&|o| o.reasoning = Reasoning::Forbidden);
    model.refuses_at(&forbidden, "<think>hm</think>", "<think>");

    // Jump-forward: after the trigger, the bytes up to the tool name are
    // forced; with one tool and no reasoning, up to its arguments.
    let mut matcher = Matcher::new(with(&|_| {}));
    matcher.accept_str("<tool_call>").unwrap();
    assert_eq!(matcher.forced_bytes(), b"\n{\"name\": \"");
    assert_eq!(Matcher::new(Arc::clone(&named)).forced_bytes(), b"<t");
    let mut matcher = Matcher::new(with(&|o| {
        o.tool_choice = ToolChoice::Function("search".into());
        o.reasoning = Reasoning::Forbidden;
    }));
    assert_eq!(
        matcher.forced_bytes(),
        b"<tool_call>\n{\"name\": \"search\", \"arguments\": {"
    );
    matcher
        .accept_str("<tool_call>\n{\"name\": \"search\", \"arguments\": {")
        .unwrap();
}

#[test]
fn llama3_json_and_function_forms() {
    let model = Model::load(&REAL_TOKENIZERS[0], &[]);
    let grammar = model.grammar(&Options {
        reasoning: Reasoning::Forbidden,
        ..Options::new(Format::Llama3)
    });
    model
        .run(
            &grammar,
            "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Zürich\"}}",
            2,
        )
        .unwrap();
    model
        .run(
            &grammar,
            "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}; \
             {\"name\": \"search\", \"parameters\": {\"query\": \"Louvre \\u00e9t\\u00e9\"}}",
            0,
        )
        .unwrap();
    model
        .run(&grammar, "The capital of France is Paris.", 0)
        .unwrap();
    model.refuses_at(
        &grammar,
        "{\"name\": \"get_wether\", \"parameters\": {}}",
        "ether",
    );
    model.refuses_at(
        &grammar,
        "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"unit\": \"kelvin\"}}",
        "kelvin",
    );

    let function = model.grammar(&Options {
        reasoning: Reasoning::Forbidden,
        ..Options::new(Format::Llama3Function)
    });
    model
        .run(
            &function,
            "<function=search>{\"query\": \"weather in Zürich\"}</function>",
            2,
        )
        .unwrap();
    model
        .run(
            &function,
            "Let me check.<function=get_weather>{\"city\": \"Paris\"}</function>",
            0,
        )
        .unwrap();
    model.refuses_at(&function, "<function=browse>{}</function>", "browse");
}

#[test]
fn mistral_calls_after_the_tool_calls_token() {
    let model = Model::load(&MISTRAL_NEMO, &[]);
    let grammar = model.grammar(&Options {
        reasoning: Reasoning::Forbidden,
        ..Options::new(Format::Mistral)
    });
    model
        .run(
            &grammar,
            "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\"}, \"id\": \"a1B2c3D4e\"}, \
             {\"name\": \"search\", \"arguments\": {\"query\": \"fondue\"}}]",
            3,
        )
        .unwrap();
    model.run(&grammar, "Bonjour ! Il fait beau.", 0).unwrap();
    model.refuses_at(
        &grammar,
        "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"town\": \"Bern\"}}]",
        "town",
    );
    model.refuses_at(
        &grammar,
        "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Bern\"}}] ok",
        " ok",
    );
}

#[test]
fn deepseek_calls_between_their_tokens() {
    let model = Model::load(&DEEPSEEK_V3, &[]);
    let grammar = model.grammar(&Options::new(Format::DeepSeek));
    let call = |name: &str, arguments: &str| {
        format!(
            "<｜tool▁call▁begin｜>function<｜tool▁sep｜>{name}\n```json\n{arguments}\n```<｜tool▁call▁end｜>"
        )
    };
    let output = format!(
        "<think>\nTwo lookups.\n</think>\n\n<｜tool▁calls▁begin｜>{}\n{}<｜tool▁calls▁end｜>",
        call("get_weather", "{\"city\": \"Zürich\"}"),
        call(
            "search",
            "{\"query\": \"tab\\there\", \"filters\": {\"lang\": \"de\"}}"
        )
    );
    model.run(&grammar, &output, 3).unwrap();
    model.run(&grammar, "你好！今天天气很好。", 0).unwrap();
    let wrong = format!(
        "<｜tool▁calls▁begin｜>{}<｜tool▁calls▁end｜>",
        call("get_weather", "{\"city\": [\"Zürich\"]}")
    );
    model.refuses_at(&grammar, &wrong, "[\"Z");
    let after = format!(
        "<｜tool▁calls▁begin｜>{}<｜tool▁calls▁end｜>More text",
        call("get_weather", "{\"city\": \"Bern\"}")
    );
    model.refuses_at(&grammar, &after, "More");
}

#[test]
fn harmony_channels_and_calls_with_gpt_oss() {
    let model = Model::load(&REAL_TOKENIZERS[2], &["<|call|>"]);
    let grammar = model.grammar(&Options::new(Format::Harmony));
    let call = "<|channel|>analysis<|message|>User asks for the weather in Zürich. Call get_weather.<|end|>\
        <|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Zürich\",\"unit\":\"celsius\"}";
    let turn = model.run(&grammar, call, 3).unwrap();
    let calls = [("get_weather", json!({"city": "Zürich", "unit": "celsius"}))];
    assert_calls_captured(&turn, &calls, call);
    assert_eq!(
        turn.streamed.reasoning,
        "User asks for the weather in Zürich. Call get_weather."
    );
    let answer = "<|channel|>analysis<|message|>Simple greeting.<|end|>\
        <|start|>assistant<|channel|>commentary<|message|>Answering directly.<|end|>\
        <|start|>assistant<|channel|>final<|message|>Hello! ¿Qué tal? \"Quotes\" and \\ too.";
    let turn = model.run(&grammar, answer, 0).unwrap();
    assert!(turn.streamed.calls.is_empty());
    assert_eq!(turn.streamed.reasoning, "Simple greeting.");
    // The preamble and the final answer are text.
    assert_eq!(
        turn.streamed.text,
        "Answering directly.Hello! ¿Qué tal? \"Quotes\" and \\ too."
    );
    model
        .run(
            &grammar,
            "<|channel|>commentary to=functions.calendar.create_event<|message|>{\"title\":\"Sync\",\"attendees\":[{\"name\":\"Ada\"}]}",
            0,
        )
        .unwrap();
    model.refuses_at(
        &grammar,
        "<|channel|>commentary to=functions.get_time<|message|>{}",
        "time",
    );
    model.refuses_at(
        &grammar,
        "<|channel|>commentary to=functions.search<|message|>{\"query\":1}",
        "1}",
    );
    model.refuses_at(&grammar, "<|channel|>chat<|message|>hi", "chat");

    let forbidden = model.grammar(&Options {
        reasoning: Reasoning::Forbidden,
        ..Options::new(Format::Harmony)
    });
    model.refuses_at(&forbidden, answer, "analysis");
}

/// gpt-oss's own template (llama.cpp's copy) on its tokenizer: each call
/// with and without analysis before it (the template writes the recipient
/// in the message's header and `json` as the content type, where gpt-oss
/// writes both on the channel's), a final answer after analysis. Refused:
/// an unknown tool, a wrong type.
#[test]
fn harmony_turns_rendered_by_the_gpt_oss_chat_template() {
    let model = Model::load(&REAL_TOKENIZERS[2], &["<|call|>"]);
    let template = ChatTemplate::new(
        chat_template("openai-gpt-oss-120b"),
        String::new(),
        String::new(),
    );
    let grammar = model.grammar(&Options::new(Format::Harmony));
    let why = "Weather first, then news.";
    let user = json!({"role": "user", "content": "What's the weather in Zürich, and any news?"});
    let call = |thinking: Option<&str>, (name, arguments): &(&str, Value)| {
        let mut assistant = json!({"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": name, "arguments": arguments}}]});
        if let Some(thinking) = thinking {
            assistant["thinking"] = json!(thinking);
        }
        template.turn(&[user.clone(), assistant], "<|call|>")
    };
    let calls = template_calls();
    for one in &calls {
        for thinking in [None, Some(why)] {
            let text = call(thinking, one);
            assert!(text.contains(" to=functions."), "{text:?}");
            let turn = model
                .run(&grammar, &text, 0)
                .unwrap_or_else(|at| panic!("refused at byte {at} of {text:?}"));
            assert_calls_captured(&turn, std::slice::from_ref(one), &text);
            assert_eq!(turn.streamed.reasoning, thinking.unwrap_or_default());
        }
    }
    let answer = json!({"role": "assistant", "content": "Zürich: 21 °C, sunny.", "thinking": why});
    let text = template.turn(&[user.clone(), answer], "<|return|>");
    let turn = model.run(&grammar, &text, 0).unwrap();
    assert_eq!(turn.streamed.text, "Zürich: 21 °C, sunny.");
    assert_eq!(turn.streamed.reasoning, why);
    let library = model.library_grammar("std/harmony.xg");
    model.run(&library, &call(Some(why), &calls[1]), 0).unwrap();
    model.refuses_at(&grammar, &call(None, &("get_time", json!({}))), "time");
    let wrong = call(None, &("get_weather", json!({"city": 42})));
    model.refuses_at(&grammar, &wrong, "42");
}

#[test]
fn bad_tool_lists_are_errors_at_their_place() {
    let text = r#"[
  {"type": "function", "function": {"name": "get weather", "parameters": {}}},
  {"type": "code_interpreter"},
  {"name": "ok", "parameters": false},
  {"name": "ok"}, {"name": "ok"}
]"#;
    let bad: Value = serde_json::from_str(text).unwrap();
    let mut request = Request::new(&Limits::default(), &CompileCache::default());
    let file = request.add("tools.json", text);
    let grammar = pipeline::tools(&mut request, &bad, file, &Options::new(Format::Qwen));
    assert!(grammar.is_none());
    let rendered = request.diagnostics.render(&request.sources, false);
    for expected in [
        "#/0/function/name: `get weather` is not a function name",
        "#/1/type: only function tools are called through a grammar, not `code_interpreter`",
        "#/2/parameters: `false` accepts no arguments",
        "#/4/name: a second tool named `ok`",
        "tools.json:2:45",
    ] {
        assert!(rendered.contains(expected), "{expected:?} in\n{rendered}");
    }

    let mut request = Request::new(&Limits::default(), &CompileCache::default());
    let file = request.add("tools.json", "[]");
    let grammar = pipeline::tools(
        &mut request,
        &json!([]),
        file,
        &Options {
            tool_choice: ToolChoice::Required,
            ..Options::new(Format::Qwen)
        },
    );
    assert!(grammar.is_none());

    // Formats that name special tokens need the model's vocabulary.
    let mut request = Request::new(&Limits::default(), &CompileCache::default());
    let file = request.add("tools.json", tools().to_string());
    let grammar = pipeline::tools(&mut request, &tools(), file, &Options::new(Format::Harmony));
    assert!(grammar.is_none());
    assert!(
        request
            .diagnostics
            .iter()
            .any(|d| d.code == "token-needs-vocabulary")
    );
}

/// Requests with overlapping tool sets share one compile cache: argument
/// schemas seen before are not generated again and their automata not
/// built again, and every request compiles to the tables it compiles to
/// alone.
#[test]
fn requests_with_overlapping_tools_share_the_compile_cache() {
    let all = tools();
    let all = all.as_array().unwrap();
    let requests: Vec<Value> = [&[0, 1][..], &[1, 2], &[0, 1, 2], &[2, 0]]
        .iter()
        .map(|picked| Value::Array(picked.iter().map(|&i| all[i].clone()).collect()))
        .collect();
    let compile = |request: &Value, cache: &CompileCache| {
        let mut compilation = Request::new(&Limits::default(), cache);
        let file = compilation.add("tools.json", request.to_string());
        let grammar = pipeline::tools(&mut compilation, request, file, &Options::new(Format::Qwen));
        let (grammar, _) = compilation
            .finish(grammar)
            .unwrap_or_else(|report| panic!("{report}"));
        // Every automaton built, as a conversation's turns would build them.
        grammar.completed().unwrap()
    };
    let shared = CompileCache::default();
    for request in &requests {
        let alone = compile(request, &CompileCache::default());
        assert!(compile(request, &shared).tables() == alone.tables());
    }
    let stats = shared.stats();
    // Three schemas, generated once each; six more uses found them.
    assert_eq!(
        (stats.schema_misses, stats.schema_hits),
        (3, 6),
        "{stats:?}"
    );
    assert!(stats.hits > stats.misses, "{stats:?}");
}

/// JSON as Python's `json.dumps(value, ensure_ascii=False)` writes it (what
/// Hugging Face's `tojson` filter gives chat templates): `", "` and `": "`
/// between items.
struct PythonJson;

/// `", "` before every item but the first.
fn python_separator<W: ?Sized + std::io::Write>(
    writer: &mut W,
    first: bool,
) -> std::io::Result<()> {
    if first {
        Ok(())
    } else {
        writer.write_all(b", ")
    }
}

impl serde_json::ser::Formatter for PythonJson {
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        python_separator(writer, first)
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        python_separator(writer, first)
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
    ) -> std::io::Result<()> {
        writer.write_all(b": ")
    }
}

fn python_json(value: &Value) -> String {
    let mut out = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, PythonJson);
    serde::Serialize::serialize(value, &mut serializer).unwrap();
    String::from_utf8(out).unwrap()
}

/// A model's own chat template (from its `tokenizer_config.json`), rendered
/// the way Hugging Face's transformers renders it: blocks trimmed, Python's
/// string methods, `tojson` as `json.dumps`, `raise_exception`.
struct ChatTemplate {
    environment: minijinja::Environment<'static>,
    bos: String,
    eos: String,
    /// The template's thinking switch (`thinking`, `enable_thinking`), if
    /// set; undefined otherwise.
    thinking: Option<bool>,
}

impl ChatTemplate {
    fn load(which: &RealTokenizer) -> ChatTemplate {
        let (_, config) = real_tokenizer(which);
        let config: Value = serde_json::from_slice(&config).unwrap();
        let token = |key: &str| match &config[key] {
            Value::String(text) => text.clone(),
            Value::Object(added) => added["content"].as_str().unwrap().to_string(),
            _ => String::new(),
        };
        let source = config["chat_template"]
            .as_str()
            .expect("the tokenizer config has a chat template")
            .to_string();
        ChatTemplate::new(source, token("bos_token"), token("eos_token"))
    }

    /// The template `source`, with its model's BOS and EOS tokens.
    fn new(source: String, bos: String, eos: String) -> ChatTemplate {
        let mut environment = minijinja::Environment::new();
        environment.set_trim_blocks(true);
        environment.set_lstrip_blocks(true);
        environment
            .set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        environment.add_filter(
            "tojson",
            |value: minijinja::Value, kwargs: minijinja::value::Kwargs| {
                let invalid = |e: &dyn std::fmt::Display| {
                    minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, e.to_string())
                };
                let json = serde_json::to_value(&value).map_err(|e| invalid(&e))?;
                let indent: Option<usize> = kwargs.get("indent")?;
                // Non-ASCII text is written as it is, as transformers'
                // `tojson` does by default.
                let ensure_ascii: Option<bool> = kwargs.get("ensure_ascii")?;
                assert_ne!(ensure_ascii, Some(true), "tojson(ensure_ascii=True)");
                kwargs.assert_all_used()?;
                let text = match indent {
                    // `json.dumps(indent=N)`: one item per line, `": "`.
                    Some(indent) => {
                        let spaces = " ".repeat(indent);
                        let mut out = Vec::new();
                        let formatter =
                            serde_json::ser::PrettyFormatter::with_indent(spaces.as_bytes());
                        let mut serializer =
                            serde_json::Serializer::with_formatter(&mut out, formatter);
                        serde::Serialize::serialize(&json, &mut serializer)
                            .map_err(|e| invalid(&e))?;
                        String::from_utf8(out).map_err(|e| invalid(&e))?
                    }
                    None => python_json(&json),
                };
                Ok::<_, minijinja::Error>(minijinja::Value::from_safe_string(text))
            },
        );
        environment.add_function("raise_exception", |message: String| {
            Err::<minijinja::Value, _>(minijinja::Error::new(
                minijinja::ErrorKind::InvalidOperation,
                message,
            ))
        });
        // A fixed day for templates that date their system prompt.
        environment.add_function("strftime_now", |_format: String| "2026-11-27".to_string());
        environment.add_template_owned("chat", source).unwrap();
        ChatTemplate {
            environment,
            bos,
            eos,
            thinking: None,
        }
    }

    fn render(&self, messages: &[Value], add_generation_prompt: bool) -> String {
        let template = self.environment.get_template("chat").unwrap();
        // Every tool in the Chat Completions form, as transformers hands
        // them to templates.
        let tools: Vec<Value> = (tools().as_array().unwrap().iter())
            .map(|tool| match tool.get("function") {
                Some(_) => tool.clone(),
                None => json!({"type": "function", "function": tool}),
            })
            .collect();
        template
            .render(minijinja::context! {
                messages => messages,
                tools => tools,
                add_generation_prompt => add_generation_prompt,
                bos_token => self.bos,
                eos_token => self.eos,
                thinking => self.thinking.map_or(minijinja::Value::UNDEFINED, minijinja::Value::from),
                enable_thinking => self.thinking.map_or(minijinja::Value::UNDEFINED, minijinja::Value::from),
            })
            .unwrap()
    }

    /// The assistant's last turn as the model writes it: what rendering the
    /// conversation adds to the prompt of its last message, up to the turn's
    /// end marker `end` (the stop token the model writes).
    fn turn(&self, messages: &[Value], end: &str) -> String {
        let prompt = self.render(&messages[..messages.len() - 1], true);
        let whole = self.render(messages, false);
        let turn = whole
            .strip_prefix(&prompt)
            .unwrap_or_else(|| panic!("{whole:?} does not start with the prompt {prompt:?}"));
        let end_at = turn
            .rfind(end)
            .unwrap_or_else(|| panic!("{turn:?} has no {end:?}"));
        turn[..end_at].to_string()
    }
}

/// A conversation whose last message is the assistant's `content` (none if
/// `None`) with calls of `calls` (`(name, arguments)`), each arguments
/// value as `arguments_as` makes it (the object, or a JSON string).
fn conversation(
    content: Option<&str>,
    calls: &[(&str, Value)],
    arguments_as: fn(&Value) -> Value,
) -> Vec<Value> {
    let tool_calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, arguments))| {
            // Mistral's template wants ids of 9 characters.
            json!({"type": "function", "id": format!("call{i:04}x"),
                "function": {"name": name, "arguments": arguments_as(arguments)}})
        })
        .collect();
    let mut assistant = json!({"role": "assistant", "content": content});
    if !tool_calls.is_empty() {
        assistant["tool_calls"] = Value::Array(tool_calls);
    }
    // No system message: Mistral's template moves it into the last user
    // message, which would change the prompt once the turn follows.
    vec![
        json!({"role": "user", "content": "What's the weather in Zürich, and any news?"}),
        assistant,
    ]
}

/// What a turn run token by token left: its captures, and what its
/// events, polled after each token, streamed.
#[derive(Debug)]
struct Turn {
    captures: Vec<Capture>,
    /// What the events streamed.
    streamed: Streamed,
}

/// A call's arguments as JSON: JSON as it is, Kimi K3's XTML arguments
/// by their types, the XML arguments of GLM (`<arg_key>`, `<arg_value>`),
/// Qwen3-Coder (`<parameter=…>`), MiniMax (`<parameter name=…>`) and
/// DeepSeek V3.2
/// (`<｜DSML｜parameter name=… string=…>`) as an object whose values are
/// JSON where they read as JSON, else the raw text.
fn arguments_as_json(name: &str, arguments: &str) -> Value {
    if arguments.starts_with('{') && !arguments.starts_with("{\"") && arguments != "{}" {
        // Gemma 4's notation: bare keys.
        return gemma_value(&mut arguments.chars().peekable());
    }
    if arguments.trim_start().starts_with('{') {
        return serde_json::from_str(arguments).unwrap_or_else(|error| {
            panic!("{name}: {error} in {arguments:?}");
        });
    }
    if arguments.starts_with("<|open|>") {
        // Kimi K3's XTML: a string raw, any other type JSON.
        let element = regex::Regex::new(
            r#"(?s)<\|open\|>argument key="([^"]*)" type="([^"]*)"<\|sep\|>(.*?)<\|close\|>argument<\|sep\|>"#,
        )
        .unwrap();
        let object = element
            .captures_iter(arguments)
            .map(|found| {
                let raw = &found[3];
                let value = match &found[2] {
                    "string" => json!(raw),
                    _ => serde_json::from_str(raw).unwrap_or_else(|error| {
                        panic!("{name}: {error} in {raw:?}");
                    }),
                };
                (found[1].to_string(), value)
            })
            .collect();
        return Value::Object(object);
    }
    let element = regex::Regex::new(
        r#"(?s)<arg_key>(.*?)</arg_key>\s*<arg_value>(.*?)</arg_value>|<(?:｜DSML｜)?parameter name="([^"]*)"(?: string="(?:true|false)")?>(.*?)</(?:｜DSML｜)?parameter>|<parameter=([^>]*)>\n(.*?)\n</parameter>"#,
    )
    .unwrap();
    let object = element
        .captures_iter(arguments)
        .map(|found| {
            let key = found
                .get(1)
                .or(found.get(3))
                .or(found.get(5))
                .unwrap()
                .as_str();
            let raw = found
                .get(2)
                .or(found.get(4))
                .or(found.get(6))
                .unwrap()
                .as_str();
            let value = serde_json::from_str(raw).unwrap_or_else(|_| json!(raw));
            (key.to_string(), value)
        })
        .collect();
    Value::Object(object)
}

/// A value in Gemma 4's notation (strings between `<|"|>`, keys bare,
/// `None` for null) as JSON.
fn gemma_value(text: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Value {
    const QUOTE: &str = "<|\"|>";
    let rest: String = text.clone().collect();
    if let Some(after) = rest.strip_prefix(QUOTE) {
        let end = after.find(QUOTE).expect("a closed string");
        for _ in 0..QUOTE.chars().count() * 2 + after[..end].chars().count() {
            text.next();
        }
        return json!(after[..end]);
    }
    match text.peek() {
        Some('{') => {
            text.next();
            let mut object = serde_json::Map::new();
            while text.peek() != Some(&'}') {
                let key: String = std::iter::from_fn(|| text.next_if(|c| *c != ':')).collect();
                text.next();
                object.insert(key, gemma_value(text));
                text.next_if_eq(&',');
            }
            text.next();
            Value::Object(object)
        }
        Some('[') => {
            text.next();
            let mut items = Vec::new();
            while text.peek() != Some(&']') {
                items.push(gemma_value(text));
                text.next_if_eq(&',');
            }
            text.next();
            Value::Array(items)
        }
        _ => {
            let atom: String =
                std::iter::from_fn(|| text.next_if(|c| !matches!(c, ',' | '}' | ']'))).collect();
            match atom.as_str() {
                "None" => Value::Null,
                atom => serde_json::from_str(atom).unwrap_or_else(|e| panic!("{e}: {atom:?}")),
            }
        }
    }
}

/// A turn's calls, in order: its captures, each under `tool:` and the
/// tool's name with the arguments as its text (as JSON, equal to the
/// call's; see [`arguments_as_json`]); and its tool-call events, each call
/// started, given in deltas and finished in that order, the deltas making
/// up the arguments (see [`assert_events`]).
fn assert_calls_captured(turn: &Turn, calls: &[(&str, Value)], text: &str) {
    let streamed: Vec<(String, Value)> = turn
        .streamed
        .calls
        .iter()
        .map(|(name, arguments)| (format!("tool:{name}"), arguments_as_json(name, arguments)))
        .collect();
    let seen: Vec<(String, Value)> = turn
        .captures
        .iter()
        .filter(|capture| capture.name.starts_with("tool:"))
        .map(|capture| {
            let arguments = arguments_as_json(&capture.name, &capture.text_lossy());
            (capture.name.clone(), arguments)
        })
        .collect();
    let expected: Vec<(String, Value)> = calls
        .iter()
        .map(|(name, arguments)| (format!("tool:{name}"), arguments.clone()))
        .collect();
    assert_eq!(seen, expected, "the captures of {text:?}");
    assert_eq!(streamed, expected, "the events of {text:?}");
}

/// What the events of a turn streamed: each call's name and arguments,
/// the text and the reasoning.
#[derive(Debug, Default)]
struct Streamed {
    calls: Vec<(String, String)>,
    text: String,
    reasoning: String,
}

/// Checks the events of a turn, token by token: calls numbered in order,
/// each started before its deltas, its deltas before its end, the deltas
/// making up the finished arguments, every call finished by the stop
/// token, an argument of more than four tokens given in more than one
/// delta (streamed, not held to the end), and no text or reasoning while
/// a call is open. Returns what was streamed.
fn assert_events(events: &[Vec<ToolCallEvent>], text: &str) -> Streamed {
    // Per call: name, deltas, the token of each delta, finished arguments.
    let mut calls: Vec<(String, String, Vec<usize>, Option<String>)> = Vec::new();
    let mut streamed = Streamed::default();
    let open = |calls: &[(String, String, Vec<usize>, Option<String>)]| {
        calls.iter().any(|call| call.3.is_none())
    };
    for (token, step) in events.iter().enumerate() {
        for event in step {
            match event {
                ToolCallEvent::Text { text: delta } => {
                    assert!(!open(&calls), "{text:?}: text inside a call");
                    streamed.text.push_str(delta);
                }
                ToolCallEvent::Reasoning { text: delta } => {
                    assert!(!open(&calls), "{text:?}: reasoning inside a call");
                    streamed.reasoning.push_str(delta);
                }
                ToolCallEvent::ToolCallStarted { index, name } => {
                    assert_eq!(*index, calls.len(), "{text:?}: {event:?}");
                    calls.push((name.clone(), String::new(), Vec::new(), None));
                }
                ToolCallEvent::ArgumentsDelta { index, text: delta } => {
                    let call = &mut calls[*index];
                    assert!(call.3.is_none(), "{text:?}: a delta after the end");
                    call.1.push_str(delta);
                    call.2.push(token);
                }
                ToolCallEvent::ToolCallFinished {
                    index,
                    name,
                    arguments,
                } => {
                    let call = &mut calls[*index];
                    assert_eq!(&call.0, name);
                    assert_eq!(&call.1, arguments, "{text:?}: deltas and arguments differ");
                    assert!(call.3.replace(arguments.clone()).is_none());
                }
            }
        }
    }
    streamed.calls = calls
        .into_iter()
        .map(|(name, deltas, tokens, finished)| {
            let arguments = finished.unwrap_or_else(|| panic!("{text:?}: {name} never finished"));
            let first = tokens.first().copied().unwrap_or(0);
            let spans = tokens.last().copied().unwrap_or(0) - first;
            if spans > 4 {
                assert!(
                    tokens.len() > 1,
                    "{text:?}: {name}'s arguments in one delta"
                );
            }
            assert_eq!(deltas, arguments);
            (name, arguments)
        })
        .collect();
    streamed
}

/// The calls every template test renders: a plain one, one whose strings
/// hold quotes, a backslash, a newline and non-ASCII text, and one with
/// nested objects and arrays.
fn template_calls() -> Vec<(&'static str, Value)> {
    vec![
        ("get_weather", json!({"city": "Zürich", "unit": "celsius"})),
        (
            "search",
            json!({"query": "news \"today\" \\ 日本\nsecond line", "filters": {"lang": "ja", "max_results": 5}}),
        ),
        (
            "calendar.create_event",
            json!({"title": "Sync", "attendees": [{"name": "Ada", "email": "ada@example.com"}, {"name": "Grace"}]}),
        ),
    ]
}

/// Qwen3's own template: one call, three parallel calls after text, a
/// text answer; reasoning as the template writes it for the last turn
/// (an empty `<think>` block) and a written-out one. The grammar accepts
/// each rendered turn token by token, and refuses rendered turns calling
/// an unknown tool, missing a required argument, giving a wrong type, a
/// second call when parallel calls are off, and a call under tool choice
/// `none`.
#[test]
fn qwen3_turns_rendered_by_its_chat_template() {
    let model = Model::load(&REAL_TOKENIZERS[1], &[]);
    let template = ChatTemplate::load(&REAL_TOKENIZERS[1]);
    let grammar = model.grammar(&Options::new(Format::Qwen));
    let calls = template_calls();
    let object = |arguments: &Value| arguments.clone();
    let turn = |content: Option<&str>, calls: &[(&str, Value)]| {
        template.turn(&conversation(content, calls, object), "<|im_end|>")
    };
    for (content, calls) in [
        (Some(""), &calls[..1]),
        (Some("Let me look these up."), &calls[..]),
        (Some("It is 21 °C and sunny in Zürich."), &[][..]),
        (
            Some("<think>\nTwo lookups: \"weather\", then news.\n</think>\n\nOn it."),
            &calls[..2],
        ),
    ] {
        let text = turn(content, calls);
        let turn = model
            .run(&grammar, &text, 0)
            .unwrap_or_else(|at| panic!("refused at byte {at} of {text:?}"));
        assert_calls_captured(&turn, calls, &text);
        // The stream's text and reasoning are the message's.
        let content = content.unwrap_or_default();
        let (reasoning, answer) = content
            .strip_prefix("<think>")
            .and_then(|rest| rest.split_once("</think>"))
            .unwrap_or(("", content));
        assert_eq!(turn.streamed.text.trim(), answer.trim(), "{text:?}");
        assert_eq!(turn.streamed.reasoning.trim(), reasoning.trim(), "{text:?}");
    }

    let unknown = turn(Some(""), &[("get_time", json!({}))]);
    model.refuses_at(&grammar, &unknown, "time");
    let missing = turn(Some(""), &[("search", json!({"filters": {}}))]);
    model.refuses_at(&grammar, &missing, "filters");
    let wrong_type = turn(Some(""), &[("get_weather", json!({"city": 42}))]);
    model.refuses_at(&grammar, &wrong_type, "42");

    let single = model.grammar(&Options {
        parallel_calls: false,
        ..Options::new(Format::Qwen)
    });
    let two = turn(Some(""), &calls[..2]);
    model
        .run(&single, &turn(Some(""), &calls[1..2]), 0)
        .unwrap();
    // Refused at the line break before the second call.
    let second = two.rfind("\n<tool_call>").unwrap();
    model.refuses_at(&single, &two, &two[second..]);

    let none = model.grammar(&Options {
        tool_choice: ToolChoice::None,
        ..Options::new(Format::Qwen)
    });
    model
        .run(&none, &turn(Some("No tools needed."), &[]), 0)
        .unwrap();
    model.refuses_at(&none, &turn(Some(""), &calls[..1]), "<tool_call>");
}

/// DeepSeek V3's own template (arguments given as JSON strings, as the
/// OpenAI API carries them): two calls, and a text answer. Its template
/// closes the calls (`<｜tool▁calls▁end｜>`) only after a second call, and
/// after each call from the second on, so one and three calls are not
/// rendered as the model writes them; the grammar follows the model.
#[test]
fn deepseek_v3_turns_rendered_by_its_chat_template() {
    let model = Model::load(&DEEPSEEK_V3, &[]);
    let template = ChatTemplate::load(&DEEPSEEK_V3);
    let grammar = model.grammar(&Options::new(Format::DeepSeek));
    let calls = template_calls();
    let string = |arguments: &Value| Value::String(python_json(arguments));
    let end = "<｜end▁of▁sentence｜>";
    for pair in [&calls[..2], &calls[1..]] {
        let text = template.turn(&conversation(None, pair, string), end);
        let turn = model
            .run(&grammar, &text, 0)
            .unwrap_or_else(|at| panic!("refused at byte {at} of {text:?}"));
        assert_calls_captured(&turn, pair, &text);
    }
    let answer = template.turn(
        &conversation(Some("Zürich: 21 °C, sunny."), &[], string),
        end,
    );
    model.run(&grammar, &answer, 0).unwrap();
    let unknown = template.turn(
        &conversation(None, &[calls[0].clone(), ("get_time", json!({}))], string),
        end,
    );
    model.refuses_at(&grammar, &unknown, "time");
}

/// Mistral NeMo's own template (tokenizer v3): two calls with ids, and a
/// text answer; an unknown tool and a wrong type are refused.
#[test]
fn mistral_nemo_turns_rendered_by_its_chat_template() {
    let model = Model::load(&MISTRAL_NEMO, &[]);
    let template = ChatTemplate::load(&MISTRAL_NEMO);
    let grammar = model.grammar(&Options {
        reasoning: Reasoning::Forbidden,
        ..Options::new(Format::Mistral)
    });
    let calls = template_calls();
    let object = |arguments: &Value| arguments.clone();
    let end = "</s>";
    for some in [&calls[..1], &calls[..]] {
        let text = template.turn(&conversation(None, some, object), end);
        let turn = model
            .run(&grammar, &text, 0)
            .unwrap_or_else(|at| panic!("refused at byte {at} of {text:?}"));
        assert_calls_captured(&turn, some, &text);
    }
    let answer = template.turn(
        &conversation(Some("Zürich: 21 °C, sunny."), &[], object),
        end,
    );
    model.run(&grammar, &answer, 0).unwrap();
    let wrong_type = template.turn(
        &conversation(
            None,
            &[("get_weather", json!({"city": ["Zürich"]}))],
            object,
        ),
        end,
    );
    model.refuses_at(&grammar, &wrong_type, "[\"Z");
}

/// Llama 3.2's own template (the Llama 3.1 package's has no tool calls;
/// the JSON form is the same): a call of each tool, one at a time as the
/// template allows, and a text answer; an unknown tool and a wrong enum
/// value are refused.
#[test]
fn llama3_turns_rendered_by_the_llama_3_2_chat_template() {
    let model = Model::load(&LLAMA_3_2, &[]);
    let template = ChatTemplate::load(&LLAMA_3_2);
    let grammar = model.grammar(&Options {
        reasoning: Reasoning::Forbidden,
        ..Options::new(Format::Llama3)
    });
    let object = |arguments: &Value| arguments.clone();
    let end = "<|eot_id|>";
    for call in template_calls() {
        let calls = [call];
        let text = template.turn(&conversation(None, &calls, object), end);
        let turn = model
            .run(&grammar, &text, 0)
            .unwrap_or_else(|at| panic!("refused at byte {at} of {text:?}"));
        assert_calls_captured(&turn, &calls, &text);
    }
    let answer = template.turn(
        &conversation(Some("Zürich: 21 °C, sunny."), &[], object),
        end,
    );
    model.run(&grammar, &answer, 0).unwrap();
    let unknown = template.turn(&conversation(None, &[("get_time", json!({}))], object), end);
    model.refuses_at(&grammar, &unknown, "time");
    let wrong = template.turn(
        &conversation(
            None,
            &[("get_weather", json!({"city": "Oslo", "unit": "kelvin"}))],
            object,
        ),
        end,
    );
    model.refuses_at(&grammar, &wrong, "kelvin");
}

/// Qwen3-Coder's and Qwen3.5's own templates on the Qwen3 tokenizer (the
/// same vocabulary): one call, three calls after text, a text answer; with
/// Qwen3.5's thinking on (its default: the prompt opens `<think>`,
/// `Reasoning::Forced`) each after reasoning, streamed as reasoning, and
/// with thinking off without it (the standard library's file takes
/// Qwen3-Coder's). Refused: an unknown tool, a wrong type, a value outside
/// an enum.
#[test]
fn qwen3_coder_and_qwen3_5_turns_rendered_by_their_chat_templates() {
    let model = Model::load(&REAL_TOKENIZERS[1], &[]);
    let end = "<|im_end|>";
    let calls = template_calls();
    let coder = ChatTemplate::new(chat_template("Qwen3-Coder"), String::new(), end.into());
    let grammar = model.grammar(&Options::new(Format::Qwen3Coder));
    let turn = |content: Option<&str>, calls: &[(&str, Value)]| {
        coder.turn(&conversation(content, calls, Value::clone), end)
    };
    let turns = standard_turns(turn, &calls);
    accepts(&model, &grammar, &turns);
    let library = model.library_grammar("std/qwen3_coder.xg");
    for (text, _) in &turns {
        model.run(&library, text, 0).unwrap();
    }
    model.refuses_at(&grammar, &turn(None, &[("get_time", json!({}))]), "time");

    let mut qwen35 = ChatTemplate::new(chat_template("Qwen3.5-4B"), String::new(), end.into());
    let options = Options::new(Format::Qwen35);
    assert_eq!(options.reasoning, Reasoning::Forced);
    let grammar = model.grammar(&options);
    let why = "Weather first, then news.";
    let thinking = |content: Option<&str>, calls: &[(&str, Value)]| {
        qwen35.turn(&reasoned(why, content, calls), end)
    };
    for run in accepts(&model, &grammar, &standard_turns(thinking, &calls)) {
        assert_eq!(run.streamed.reasoning.trim(), why);
    }
    let at = WrongAt {
        wrong_type: None,
        missing: "filters",
        nested: "\"five",
    };
    refuses_wrong_calls(&model, &grammar, |calls| thinking(None, calls), &at);
    refuses_by_options(
        &model,
        &options,
        |calls| thinking(None, calls),
        "\n<tool_call>\n<function=search",
        "<tool_call>",
    );
    qwen35.thinking = Some(false);
    accepts_without_reasoning(&model, &qwen35, &options, end);
}

/// Qwen3-Coder's XML calls on the Qwen3 tokenizer (the coder models share
/// its vocabulary), written as its chat template writes them: a string
/// value raw (quotes, a backslash, line breaks and non-ASCII text as they
/// are), an enum value, an object and an array as JSON, text before the
/// first call and a second call, and the same without the line breaks
/// around values. Refused: an unknown function, a required parameter left
/// out, a value outside its enum, JSON of the wrong type, parameters out
/// of the schema's order.
#[test]
fn qwen3_coder_xml_parameters() {
    let model = Model::load(&REAL_TOKENIZERS[1], &[]);
    let grammar = model.grammar(&Options::new(Format::Qwen3Coder));
    let call = |name: &str, parameters: &[(&str, &str)]| {
        let mut call = format!("<tool_call>\n<function={name}>\n");
        for (key, value) in parameters {
            let _ = write!(call, "<parameter={key}>\n{value}\n</parameter>\n");
        }
        call + "</function>\n</tool_call>"
    };
    let weather = call("get_weather", &[("city", "Zürich"), ("unit", "celsius")]);
    let turn = model.run(&grammar, &weather, 2).unwrap();
    // The arguments are captured, and streamed, as the model writes them:
    // XML.
    let streamed = &turn.streamed.calls;
    let seen: Vec<(String, String)> = turn
        .captures
        .iter()
        .filter(|capture| capture.name.starts_with("tool:"))
        .map(|capture| (capture.name.clone(), capture.text_lossy()))
        .collect();
    let arguments =
        "<parameter=city>\nZürich\n</parameter>\n<parameter=unit>\ncelsius\n</parameter>\n";
    assert_eq!(
        seen,
        [("tool:get_weather".to_owned(), arguments.to_owned())]
    );
    assert_eq!(
        streamed[..],
        [("get_weather".to_owned(), arguments.to_owned())]
    );
    let search = call(
        "search",
        &[
            ("query", "news \"today\" \\ 日本\nsecond line"),
            ("filters", "{\"lang\": \"ja\", \"max_results\": 5}"),
        ],
    );
    let event = call(
        "calendar.create_event",
        &[
            ("title", "Sync <weekly>"),
            (
                "attendees",
                "[{\"name\": \"Ada\", \"email\": \"ada@example.com\"}]",
            ),
        ],
    );
    let turn = format!("Let me look these up.\n\n{search}\n{event}");
    model.run(&grammar, &turn, 1).unwrap();
    model
        .run(&grammar, "<think>\nA plain answer.\n</think>\n\nHello!", 0)
        .unwrap();

    model.refuses_at(&grammar, &call("get_time", &[]), "time");
    model.refuses_at(&grammar, &call("search", &[("filters", "{}")]), "filters");
    model.refuses_at(
        &grammar,
        &call("get_weather", &[("city", "Oslo"), ("unit", "kelvin")]),
        "kelvin",
    );
    model.refuses_at(
        &grammar,
        &call("search", &[("query", "x"), ("filters", "[1]")]),
        "[1]",
    );
    // Line breaks around values are optional (parsers strip them).
    let compact = weather.replace("\n</parameter>", "</parameter>");
    model.run(&grammar, &compact, 0).unwrap();
    // Parameters follow the schema's order.
    let swapped = call("get_weather", &[("unit", "celsius"), ("city", "Oslo")]);
    model.refuses_at(&grammar, &swapped, "unit");
}

/// Tools whose names differ only in `.` and `_` get argument rules of their
/// own in every format, their XML parameters' rules included (a collision
/// found by `xg bench tools --format qwen3-coder` on BFCL's tool lists).
#[test]
fn tools_named_alike_compile_in_every_format() {
    let tools = json!([
        {"name": "flight_book", "parameters": {"type": "object",
            "properties": {"from": {"type": "string"}, "to": {"type": "string"}, "seats": {"type": "integer"}},
            "required": ["from", "to"]}},
        {"name": "flight.book", "parameters": {"type": "object",
            "properties": {"id": {"type": "string"}}}},
        {"name": "flight_book_2", "parameters": {"type": "object",
            "properties": {"when": {"type": "string"}}}}
    ]);
    let parsed = xg_compiler::tools::parse(&tools).unwrap();
    for format in Format::ALL {
        if matches!(format, Format::Mistral | Format::Harmony) {
            continue; // special tokens: compiled with their models elsewhere
        }
        let text = xg_compiler::tools::to_xg(&parsed, &Options::new(format), None).unwrap();
        let mut request = Request::ahead_of_time();
        let file = request.add("tools.xg", text.clone());
        let grammar = pipeline::grammar(&mut request, file, "root");
        assert!(
            grammar.is_some() && !request.diagnostics.has_errors(),
            "{format}: {}\n{text}",
            request.diagnostics.render(&request.sources, false)
        );
    }
}

/// Renders the assistant's last message of `messages` with `template`, the
/// turn ending at `end` (`""`: where the rendering ends).
fn assistant_turn(template: &ChatTemplate, messages: &[Value], end: &str) -> String {
    if end.is_empty() {
        let prompt = template.render(&messages[..messages.len() - 1], true);
        let whole = template.render(messages, false);
        return whole
            .strip_prefix(&prompt)
            .unwrap_or_else(|| panic!("{whole:?} does not start with the prompt {prompt:?}"))
            .to_string();
    }
    template.turn(messages, end)
}

/// A conversation whose assistant message has `reasoning` as its
/// `reasoning_content` (how templates take the reasoning of a turn).
fn reasoned(reasoning: &str, content: Option<&str>, calls: &[(&str, Value)]) -> Vec<Value> {
    let mut messages = conversation(content, calls, Value::clone);
    messages[1]["reasoning_content"] = json!(reasoning);
    messages
}

/// The turns most template tests render with `turn` (from the content and
/// the calls): one call, three calls after text, a text answer; each with
/// its calls.
fn standard_turns<'a>(
    turn: impl Fn(Option<&str>, &[(&str, Value)]) -> String,
    calls: &'a [(&'a str, Value)],
) -> Vec<(String, &'a [(&'a str, Value)])> {
    vec![
        (turn(None, &calls[..1]), &calls[..1]),
        (turn(Some("Let me look these up."), calls), calls),
        (turn(Some("Zürich: 21 °C, sunny."), &[]), &[]),
    ]
}

/// With thinking off (`template`'s set so, `options`' reasoning made
/// `Forbidden`), the standard turns `template` renders up to `end` are
/// accepted and stream no reasoning.
fn accepts_without_reasoning(model: &Model, template: &ChatTemplate, options: &Options, end: &str) {
    let off = model.grammar(&Options {
        reasoning: Reasoning::Forbidden,
        ..options.clone()
    });
    let calls = template_calls();
    let answer = |content: Option<&str>, calls: &[(&str, Value)]| {
        template.turn(&conversation(content, calls, Value::clone), end)
    };
    for run in accepts(model, &off, &standard_turns(answer, &calls)) {
        assert_eq!(run.streamed.reasoning, "");
    }
}

/// Runs each turn and checks its calls against the captures and events;
/// returns the runs.
fn accepts(
    model: &Model,
    grammar: &Arc<Grammar>,
    turns: &[(String, &[(&str, Value)])],
) -> Vec<Turn> {
    turns
        .iter()
        .map(|(text, calls)| {
            let turn = model
                .run(grammar, text, 0)
                .unwrap_or_else(|at| panic!("refused at byte {at} of {text:?}"));
            assert_calls_captured(&turn, calls, text);
            turn
        })
        .collect()
}

/// Where a family's rendered turns go wrong, for [`refuses_wrong_calls`]:
/// the text each refused turn is refused at.
struct WrongAt<'a> {
    /// `get_weather` with `city` 42 (`None` where a string is raw text:
    /// `42` is a city's name there).
    wrong_type: Option<&'a str>,
    /// `search` without its required `query`.
    missing: &'a str,
    /// `search` with `filters.max_results` a string.
    nested: &'a str,
}

/// The refusals of most template tests, on turns `turn` renders from
/// calls: an unknown tool, a wrong type, a missing required argument, a
/// wrong type inside a nested object, a value outside an enum.
fn refuses_wrong_calls(
    model: &Model,
    grammar: &Arc<Grammar>,
    turn: impl Fn(&[(&str, Value)]) -> String,
    at: &WrongAt<'_>,
) {
    model.refuses_at(grammar, &turn(&[("get_time", json!({}))]), "time");
    if let Some(wrong_type) = at.wrong_type {
        let wrong = turn(&[("get_weather", json!({"city": 42}))]);
        model.refuses_at(grammar, &wrong, wrong_type);
    }
    let missing = turn(&[("search", json!({"filters": {}}))]);
    model.refuses_at(grammar, &missing, at.missing);
    let nested = turn(&[(
        "search",
        json!({"query": "x", "filters": {"max_results": "five"}}),
    )]);
    model.refuses_at(grammar, &nested, at.nested);
    let outside = turn(&[("get_weather", json!({"city": "Oslo", "unit": "kelvin"}))]);
    model.refuses_at(grammar, &outside, "kelvin");
}

/// The refusals of the tool options, on turns `turn` renders from calls
/// with `options` otherwise: a second call when parallel calls are off
/// (refused at `second`), a call under tool choice `none` (at `call`).
fn refuses_by_options(
    model: &Model,
    options: &Options,
    turn: impl Fn(&[(&str, Value)]) -> String,
    second: &str,
    call: &str,
) {
    let calls = template_calls();
    let single = model.grammar(&Options {
        parallel_calls: false,
        ..options.clone()
    });
    model.refuses_at(&single, &turn(&calls[..2]), second);
    let none = model.grammar(&Options {
        tool_choice: ToolChoice::None,
        ..options.clone()
    });
    model.refuses_at(&none, &turn(&calls[..1]), call);
}

/// DeepSeek V3.1's own template on the DeepSeek V3 tokenizer (the same
/// vocabulary): with thinking off (its default) one call, three calls
/// after text and a text answer; in thinking mode (the prompt opens the
/// reasoning: `Reasoning::Forced`) the same turns after reasoning and
/// `</think>`, streamed as reasoning. Refused: an unknown tool, a wrong
/// type.
#[test]
fn deepseek_v3_1_turns_rendered_by_its_chat_template() {
    let model = Model::load(&DEEPSEEK_V3, &[]);
    let end = "<｜end▁of▁sentence｜>";
    let template = ChatTemplate::new(
        chat_template("deepseek-ai-DeepSeek-V3.1"),
        "<｜begin▁of▁sentence｜>".into(),
        end.into(),
    );
    let grammar = model.grammar(&Options::new(Format::DeepSeekV31));
    let thinking = model.grammar(&Options {
        reasoning: Reasoning::Forced,
        ..Options::new(Format::DeepSeekV31)
    });
    let calls = template_calls();
    let turn = |content: Option<&str>, calls: &[(&str, Value)]| {
        template.turn(&conversation(content, calls, Value::clone), end)
    };
    let turns = standard_turns(turn, &calls);
    accepts(&model, &grammar, &turns);
    // The standard library's file takes them too.
    let library = model.library_grammar("std/deepseek_v3_1.xg");
    for (text, _) in &turns {
        model.run(&library, text, 0).unwrap();
    }
    let after_reasoning: Vec<(String, &[(&str, Value)])> = (turns.iter())
        .map(|(text, calls)| {
            (
                format!("Two lookups: weather, then news.</think>{text}"),
                *calls,
            )
        })
        .collect();
    for run in accepts(&model, &thinking, &after_reasoning) {
        assert_eq!(run.streamed.reasoning, "Two lookups: weather, then news.");
    }
    let at = WrongAt {
        wrong_type: Some("42"),
        missing: "filters",
        nested: "\"five",
    };
    refuses_wrong_calls(&model, &grammar, |calls| turn(None, calls), &at);
    refuses_by_options(
        &model,
        &Options::new(Format::DeepSeekV31),
        |calls| turn(None, calls),
        "<｜tool▁call▁begin｜>search",
        "<｜tool▁calls▁begin｜>",
    );
}

/// DeepSeek V3.2's and V4's DSML calls as their templates write them
/// (llama.cpp's copies; V3.2's in thinking mode: its history closes
/// reasoning the generation prompt of the other mode never opens), on the
/// DeepSeek V3 tokenizer (the same vocabulary): in thinking mode (the
/// prompt opens `<think>`: `Reasoning::Forced`) one call, three calls
/// after text and a text answer, each after reasoning, streamed as
/// reasoning; string values raw (`string="true"`), others JSON. V3.2's
/// block is `function_calls`, V4's `tool_calls`; V4 with thinking off too.
/// Refused: all six (a wrong type inside a nested object: strings are raw
/// text), and V3.2's block name where V4 requires a call.
#[test]
fn deepseek_dsml_turns_rendered_by_their_chat_templates() {
    let model = Model::load(&DEEPSEEK_V3, &[]);
    let end = "<｜end▁of▁sentence｜>";
    let calls = template_calls();
    let why = "Weather first, then news.";
    for (format, name, block, library) in [
        (
            Format::DeepSeekV32,
            "deepseek-ai-DeepSeek-V3.2",
            "function_calls",
            "std/deepseek_v3_2.xg",
        ),
        (
            Format::DeepSeekV4,
            "deepseek-ai-DeepSeek-V4",
            "tool_calls",
            "std/deepseek_v4.xg",
        ),
    ] {
        let mut template = ChatTemplate::new(
            chat_template(name),
            "<｜begin▁of▁sentence｜>".into(),
            end.into(),
        );
        template.thinking = Some(true);
        let options = Options {
            reasoning: Reasoning::Forced,
            ..Options::new(format)
        };
        let grammar = model.grammar(&options);
        let thinking = |content: Option<&str>, calls: &[(&str, Value)]| {
            template.turn(&reasoned(why, content, calls), end)
        };
        let turns = standard_turns(thinking, &calls);
        assert!(
            turns[0].0.contains(&format!("<｜DSML｜{block}>")),
            "{:?}",
            turns[0].0
        );
        for run in accepts(&model, &grammar, &turns) {
            assert_eq!(run.streamed.reasoning, why);
        }
        let library = model.library_grammar(library);
        for (text, _) in &turns {
            model.run(&library, &format!("<think>{text}"), 0).unwrap();
        }
        let at = WrongAt {
            wrong_type: None,
            missing: "filters",
            nested: "\"five",
        };
        refuses_wrong_calls(&model, &grammar, |calls| thinking(None, calls), &at);
        refuses_by_options(
            &model,
            &options,
            |calls| thinking(None, calls),
            "｜DSML｜invoke name=\"search",
            ">\n<｜DSML｜invoke",
        );
        if format != Format::DeepSeekV4 {
            continue;
        }
        // V3.2's block is only text to V4: a call being required, it is refused.
        let required = model.grammar(&Options {
            tool_choice: ToolChoice::Required,
            ..options.clone()
        });
        model.run(&required, &turns[0].0, 0).unwrap();
        let older = turns[0].0.replace("tool_calls>", "function_calls>");
        model.refuses_at(&required, &older, "function_calls");
        template.thinking = Some(false);
        let off = model.grammar(&Options::new(Format::DeepSeekV4));
        let answer = |content: Option<&str>, calls: &[(&str, Value)]| {
            template.turn(&conversation(content, calls, Value::clone), end)
        };
        accepts(&model, &off, &standard_turns(answer, &calls));
    }
}

/// Kimi K2's markers, special tokens of its tokenizer, and its stop token.
const KIMI_TOKENS: &[(&str, bool)] = &[
    ("<|im_end|>", true),
    ("<|tool_calls_section_begin|>", true),
    ("<|tool_calls_section_end|>", true),
    ("<|tool_call_begin|>", true),
    ("<|tool_call_argument_begin|>", true),
    ("<|tool_call_end|>", true),
];

/// Kimi K2's own template (Instruct), on a vocabulary of bytes and Kimi's
/// special tokens (no package carries its tokenizer): the markers are
/// written as tokens; one call, three calls after text, a text answer,
/// reasoning before calls (as K2 Thinking writes it: `<think>…</think>`,
/// then the content); the standard library's file takes them too.
/// Refused: an unknown tool, a missing required argument, a wrong type
/// (also inside a nested object), a value outside an enum, a second call
/// when parallel calls are off, a call under tool choice `none`.
#[test]
fn kimi_k2_turns_rendered_by_its_chat_templates() {
    let model = Model::bytes(KIMI_TOKENS, "<|im_end|>");
    let end = "<|im_end|>";
    let template = ChatTemplate::new(
        chat_template("moonshotai-Kimi-K2"),
        String::new(),
        end.into(),
    );
    let options = Options::new(Format::Kimi);
    let tools = xg_compiler::tools::parse(&tools()).unwrap();
    let text = xg_compiler::tools::to_xg(&tools, &options, Some(&model.vocabulary)).unwrap();
    assert!(text.contains("Token(\"<|tool_call_begin|>\")"), "{text}");
    let grammar = model.grammar(&options);
    let calls = template_calls();
    let turn = |content: Option<&str>, calls: &[(&str, Value)]| {
        template.turn(&conversation(content, calls, Value::clone), end)
    };
    let mut turns = standard_turns(turn, &calls);
    turns.push((
        turn(
            Some("<think>Weather first, then news.</think>"),
            &calls[..2],
        ),
        &calls[..2],
    ));
    accepts(&model, &grammar, &turns);
    // The standard library's file takes them too.
    let library = model.library_grammar("std/kimi.xg");
    for (text, _) in &turns {
        model.run(&library, text, 0).unwrap();
    }
    let at = WrongAt {
        wrong_type: Some("42"),
        missing: "filters",
        nested: "\"five",
    };
    refuses_wrong_calls(&model, &grammar, |calls| turn(None, calls), &at);
    refuses_by_options(
        &model,
        &options,
        |calls| turn(None, calls),
        "<|tool_call_begin|>functions.search",
        "<|tool_calls_section_begin|>",
    );
}

/// Kimi K3's XTML markers and its stop token, special tokens of its
/// tokenizer.
const KIMI_K3_TOKENS: &[(&str, bool)] = &[
    ("<|open|>", true),
    ("<|close|>", true),
    ("<|sep|>", true),
    ("<|end_of_msg|>", true),
];

/// Kimi K3's chat format (K3 ships no Jinja template: its format is a
/// Python program, `encoding_k3.py`, which llama.cpp's `Kimi-K3` template
/// ports) on a vocabulary of bytes and its markers (no package carries its
/// tokenizer), the markers written as tokens: with thinking on (the
/// default: the prompt opens `think`) one call, three calls after text and
/// a text answer, each after reasoning (streamed as reasoning), and a call
/// after empty reasoning; with thinking off the same turns without it.
/// Refused: an unknown tool, a missing required argument, a wrong type
/// (also inside a nested object), a value outside an enum, a second call
/// when parallel calls are off, a call under tool choice `none`.
#[test]
fn kimi_k3_turns_rendered_by_its_chat_template() {
    let model = Model::bytes(KIMI_K3_TOKENS, "<|end_of_msg|>");
    let end = "<|end_of_msg|>";
    let mut template = ChatTemplate::new(chat_template("Kimi-K3"), String::new(), end.into());
    let options = Options::new(Format::KimiK3);
    assert_eq!(options.reasoning, Reasoning::Forced);
    let tools = xg_compiler::tools::parse(&tools()).unwrap();
    let text = xg_compiler::tools::to_xg(&tools, &options, Some(&model.vocabulary)).unwrap();
    assert!(text.contains("Token(\"<|sep|>\")"), "{text}");
    let grammar = model.grammar(&options);
    let calls = template_calls();
    let why = "Weather first, then news.";
    let rendered = |template: &ChatTemplate,
                    reasoning: &str,
                    content: Option<&str>,
                    calls: &[(&str, Value)]| {
        template.turn(&reasoned(reasoning, content, calls), end)
    };
    let thinking =
        |content: Option<&str>, calls: &[(&str, Value)]| rendered(&template, why, content, calls);
    let mut turns = standard_turns(thinking, &calls);
    turns.push((rendered(&template, "", None, &calls[..1]), &calls[..1]));
    let runs = accepts(&model, &grammar, &turns);
    for run in &runs[..3] {
        assert_eq!(run.streamed.reasoning, why);
    }
    let library = model.library_grammar("std/kimi_k3.xg");
    for (text, _) in &turns {
        model.run(&library, text, 0).unwrap();
    }
    let at = WrongAt {
        wrong_type: Some("number"),
        missing: "filters",
        nested: "\"five",
    };
    refuses_wrong_calls(&model, &grammar, |calls| thinking(None, calls), &at);
    refuses_by_options(
        &model,
        &options,
        |calls| thinking(None, calls),
        "<|open|>call tool=\"search\"",
        "<|open|>tools",
    );
    // Thinking off: the prompt opened `response`.
    template.thinking = Some(false);
    accepts_without_reasoning(&model, &template, &options, end);
}

/// GLM's added tokens (text tokens here: the XML markers are written as
/// text) and its stop tokens.
const GLM_TOKENS: &[(&str, bool)] = &[
    ("<|user|>", true),
    ("<|observation|>", true),
    ("<tool_call>", false),
    ("</tool_call>", false),
    ("<arg_key>", false),
    ("</arg_key>", false),
    ("<arg_value>", false),
    ("</arg_value>", false),
    ("<think>", false),
    ("</think>", false),
];

/// GLM-4.6's own template (GLM-4.5's format) and GLM-4.7's, on a
/// vocabulary of bytes and GLM's added tokens: one call, three calls after
/// text, a text answer, reasoning (4.6: the model opens it; 4.7: the
/// prompt does, `Reasoning::Forced` by default). String values are raw
/// text, others JSON. Refused: an unknown tool, a wrong type, a value
/// outside its enum.
#[test]
fn glm_turns_rendered_by_its_chat_templates() {
    let model = Model::bytes(GLM_TOKENS, "<|user|>");
    let calls = template_calls();
    for (format, name) in [(Format::Glm45, "GLM-4.6"), (Format::Glm47, "GLM-4.7-Flash")] {
        let template = ChatTemplate::new(chat_template(name), String::new(), String::new());
        let grammar = model.grammar(&Options::new(format));
        let turn = |reasoning: &str, content: Option<&str>, calls: &[(&str, Value)]| {
            assistant_turn(&template, &reasoned(reasoning, content, calls), "")
        };
        let why = "Weather first, then news.";
        let mut turns = vec![
            (turn(why, None, &calls[..1]), &calls[..1]),
            (turn(why, Some("Let me look these up."), &calls), &calls[..]),
            (turn(why, Some("Zürich: 21 °C, sunny."), &[]), &[][..]),
        ];
        if format == Format::Glm45 {
            // Without reasoning: an empty block.
            turns.push((turn("", Some("Sunny."), &calls[..1]), &calls[..1]));
        }
        // The first three turns have reasoning.
        for run in &accepts(&model, &grammar, &turns)[..3] {
            assert_eq!(run.streamed.reasoning.trim(), why, "{name}");
        }
        // The standard library's file takes them too (GLM-4.7's prompt
        // opened the block).
        let library = model.library_grammar("std/glm.xg");
        for (text, _) in &turns {
            let text = if format == Format::Glm47 {
                format!("<think>{text}")
            } else {
                text.clone()
            };
            model.run(&library, &text, 0).unwrap();
        }
        let at = WrongAt {
            wrong_type: None,
            missing: "filters",
            nested: "\"five",
        };
        refuses_wrong_calls(&model, &grammar, |calls| turn(why, None, calls), &at);
        refuses_by_options(
            &model,
            &Options::new(format),
            |calls| turn(why, None, calls),
            if format == Format::Glm45 {
                "\n<tool_call>search"
            } else {
                "<tool_call>search"
            },
            "tool_call>get_weather",
        );
    }
}

/// MiniMax M2's own template, on a vocabulary of bytes and its stop token
/// (the prompt opens the reasoning: `Reasoning::Forced` by default): one
/// call, three calls after text, a text answer, each after reasoning.
/// Refused: an unknown tool, a missing required argument, a wrong type
/// in a nested object, a value outside an enum, a second call with
/// parallel calls off, a call under tool choice `none`.
#[test]
fn minimax_m2_turns_rendered_by_its_chat_template() {
    let model = Model::bytes(&[("[e~[", true), ("<minimax:tool_call>", false)], "[e~[");
    let end = "[e~[";
    let template = ChatTemplate::new(chat_template("MiniMax-M2"), String::new(), end.into());
    let grammar = model.grammar(&Options::new(Format::MiniMax));
    let calls = template_calls();
    let why = "Weather first, then news.";
    let turn = |content: Option<&str>, calls: &[(&str, Value)]| {
        template.turn(&reasoned(why, content, calls), end)
    };
    let runs = accepts(&model, &grammar, &standard_turns(turn, &calls));
    for run in runs {
        assert_eq!(run.streamed.reasoning.trim(), why);
    }
    let at = WrongAt {
        wrong_type: None,
        missing: "filters",
        nested: "\"five",
    };
    refuses_wrong_calls(&model, &grammar, |calls| turn(None, calls), &at);
    refuses_by_options(
        &model,
        &Options::new(Format::MiniMax),
        |calls| turn(None, calls),
        "invoke name=\"search",
        "<minimax:tool_call>",
    );
}

/// Mistral Small 3.2's own template (tokenizer v11+: a call is
/// `[TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{…}`), on a vocabulary of bytes and
/// Mistral's control tokens: one call, three calls, a text answer (the
/// standard library's file takes them too). Refused: an unknown tool, a
/// wrong type.
#[test]
fn mistral_v11_turns_rendered_by_the_mistral_small_3_2_chat_template() {
    let model = Model::bytes(
        &[
            ("</s>", true),
            ("[TOOL_CALLS]", true),
            ("[CALL_ID]", true),
            ("[ARGS]", true),
        ],
        "</s>",
    );
    let end = "</s>";
    let template = ChatTemplate::new(
        chat_template("Mistral-Small-3.2-24B-Instruct-2506"),
        "<s>".into(),
        end.into(),
    );
    let grammar = model.grammar(&Options {
        reasoning: Reasoning::Forbidden,
        ..Options::new(Format::MistralV11)
    });
    let calls = template_calls();
    let turn = |content: Option<&str>, calls: &[(&str, Value)]| {
        template.turn(&conversation(content, calls, Value::clone), end)
    };
    let turns = [
        (turn(None, &calls[..1]), &calls[..1]),
        (turn(None, &calls), &calls[..]),
        (turn(Some("Zürich: 21 °C, sunny."), &[]), &[][..]),
    ];
    accepts(&model, &grammar, &turns);
    let library = model.library_grammar("std/mistral_v11.xg");
    for (text, _) in &turns {
        model.run(&library, text, 0).unwrap();
    }
    let at = WrongAt {
        wrong_type: Some("42"),
        missing: "filters",
        nested: "\"five",
    };
    refuses_wrong_calls(&model, &grammar, |calls| turn(None, calls), &at);
    refuses_by_options(
        &model,
        &Options {
            reasoning: Reasoning::Forbidden,
            ..Options::new(Format::MistralV11)
        },
        |calls| turn(None, calls),
        "[TOOL_CALLS]search",
        "[TOOL_CALLS]",
    );
}

/// `value` as a Python literal, as `repr` writes it but with JSON's string
/// quoting (what the pythonic format takes): `True`, `False`, `None`.
fn python_literal(value: &Value) -> String {
    match value {
        Value::Null => "None".to_string(),
        Value::Bool(true) => "True".to_string(),
        Value::Bool(false) => "False".to_string(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(python_literal).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(members) => {
            let members: Vec<String> = (members.iter())
                .map(|(key, value)| format!("{}: {}", json!(key), python_literal(value)))
                .collect();
            format!("{{{}}}", members.join(", "))
        }
        other => other.to_string(),
    }
}

/// A call in the pythonic format: `NAME(KEY=VALUE, …)`, and its keyword
/// arguments alone (what the call's capture holds).
fn pythonic_call(name: &str, arguments: &Value) -> (String, String) {
    let keywords: Vec<String> = (arguments.as_object().into_iter().flatten())
        .map(|(key, value)| format!("{key}={}", python_literal(value)))
        .collect();
    let keywords = keywords.join(", ");
    (format!("{name}({keywords})"), keywords)
}

/// The pythonic format (Llama 4, Gemma 3) on the Llama 3.1 tokenizer: one
/// call, three calls (nested dicts and lists, `True` and `None` where the
/// schema allows them, strings with quotes, a backslash, a line break and
/// non-ASCII text), a text answer; each call's capture is its keyword
/// arguments. Refused: an unknown tool, a missing required argument, a
/// wrong type, JSON's `true` for Python's `True`, arguments out of the
/// schema's order.
#[test]
fn pythonic_calls_with_python_literals() {
    let model = Model::load(&REAL_TOKENIZERS[0], &[]);
    let grammar = model.grammar(&Options {
        reasoning: Reasoning::Forbidden,
        ..Options::new(Format::Pythonic)
    });
    let calls = template_calls();
    let list = |calls: &[(&str, Value)]| -> String {
        let written: Vec<String> = (calls.iter())
            .map(|(name, arguments)| pythonic_call(name, arguments).0)
            .collect();
        format!("[{}]", written.join(", "))
    };
    for some in [&calls[..1], &calls[..]] {
        let text = list(some);
        let turn = model
            .run(&grammar, &text, 2)
            .unwrap_or_else(|at| panic!("refused at byte {at} of {text:?}"));
        let captured: Vec<(String, String)> = (turn.captures.iter())
            .filter_map(|c| Some((c.name.strip_prefix("tool:")?.to_owned(), c.text_lossy())))
            .collect();
        let expected: Vec<(String, String)> = (some.iter())
            .map(|(name, arguments)| (name.to_string(), pythonic_call(name, arguments).1))
            .collect();
        assert_eq!(captured, expected, "{text:?}");
        assert_eq!(turn.streamed.calls, expected, "{text:?}");
    }
    let answer = model.run(&grammar, "Zürich: 21 °C, sunny.", 0).unwrap();
    assert_eq!(answer.streamed.text, "Zürich: 21 °C, sunny.");
    let library = model.library_grammar("std/pythonic.xg");
    model.run(&library, &list(&calls), 0).unwrap();
    model.run(&library, "Zürich: 21 °C, sunny.", 0).unwrap();

    let typed = json!({"type": "object", "properties": {
        "flag": {"type": "boolean"}, "note": {"type": ["string", "null"]}}, "required": ["flag"]});
    let tools = json!([{"name": "toggle", "parameters": typed}]);
    let toggle = {
        let mut request = Request::new(&Limits::default(), &CompileCache::default());
        request
            .sources
            .set_vocabulary(Arc::clone(&model.vocabulary));
        let file = request.add("tools.json", tools.to_string());
        let options = Options::new(Format::Pythonic);
        let grammar = pipeline::tools(&mut request, &tools, file, &options);
        Arc::new(grammar.expect("compiles"))
    };
    model
        .run(&toggle, "[toggle(flag=True, note=None)]", 0)
        .unwrap();
    model.refuses_at(&toggle, "[toggle(flag=true)]", "true");

    model.refuses_at(&grammar, "[get_time()]", "time");
    model.refuses_at(&grammar, "[search(filters={})]", "filters");
    model.refuses_at(&grammar, "[get_weather(city=42)]", "42");
    model.refuses_at(
        &grammar,
        "[get_weather(unit=\"celsius\", city=\"Oslo\")]",
        "unit",
    );
}

/// Gemma 4's markers (special tokens of its tokenizer), its stop token
/// after text first (`<|tool_response>`, after calls, is the other).
const GEMMA_4_TOKENS: &[(&str, bool)] = &[
    ("<turn|>", true),
    ("<|tool_response>", true),
    ("<|turn>", true),
    ("<|tool_call>", true),
    ("<tool_call|>", true),
    ("<|\"|>", true),
    ("<|channel>", true),
    ("<channel|>", true),
    ("<|think|>", true),
    ("<|tool>", true),
    ("<tool|>", true),
];

/// Gemma 4's own template (llama.cpp's copy), on a vocabulary of bytes and
/// its markers (no package carries its tokenizer): with thinking on, one
/// call, three calls then text (the template writes a message's text after
/// its calls), a text answer, each call turn after reasoning; with
/// thinking off (the prompt holds an empty thought channel) the same
/// without reasoning. Arguments in Gemma's notation: keys bare and sorted,
/// strings between `<|"|>` tokens. Refused: an unknown tool, a wrong type
/// (also inside a nested object), a value outside an enum, a missing
/// required argument, keys out of order.
#[test]
fn gemma_4_turns_rendered_by_its_chat_template() {
    let model = Model::bytes(GEMMA_4_TOKENS, "<turn|>");
    let mut template = ChatTemplate::new(
        chat_template("google-gemma-4-31B-it"),
        "<bos>".into(),
        String::new(),
    );
    template.thinking = Some(true);
    let options = Options::new(Format::Gemma4);
    let grammar = model.grammar(&options);
    let calls = template_calls();
    let why = "Weather first, then news.";
    // The turn up to its stop token: `<|tool_response>` after calls,
    // `<turn|>` after text.
    let rendered = |template: &ChatTemplate, messages: &[Value]| -> String {
        let prompt = template.render(&messages[..messages.len() - 1], true);
        // Thinking off, the prompt ends with an empty thought channel the
        // rendered history does not have.
        let prompt = prompt
            .strip_suffix("<|channel>thought\n<channel|>")
            .unwrap_or(&prompt);
        let whole = template.render(messages, false);
        let turn = whole
            .strip_prefix(prompt)
            .unwrap_or_else(|| panic!("{whole:?}"));
        let end = turn
            .find("<|tool_response>")
            .or_else(|| turn.rfind("<turn|>"))
            .unwrap();
        turn[..end].to_string()
    };
    let thinking = |content: Option<&str>, calls: &[(&str, Value)]| {
        rendered(&template, &reasoned(why, content, calls))
    };
    let turns = standard_turns(thinking, &calls);
    let runs = accepts(&model, &grammar, &turns);
    for run in &runs[..2] {
        assert_eq!(run.streamed.reasoning.trim(), why);
    }
    assert_eq!(runs[1].streamed.text, "Let me look these up.");
    let at = WrongAt {
        wrong_type: Some("42"),
        missing: "}<tool_call|>",
        nested: "<|\"|>five",
    };
    refuses_wrong_calls(&model, &grammar, |calls| thinking(None, calls), &at);
    let unsorted =
        "<|tool_call>call:get_weather{unit:<|\"|>celsius<|\"|>,city:<|\"|>Oslo<|\"|>}<tool_call|>";
    model.refuses_at(&grammar, unsorted, "unit");
    let library = model.library_grammar("std/gemma4.xg");
    for (text, _) in &turns {
        model.run(&library, text, 0).unwrap();
    }
    template.thinking = Some(false);
    let answer = |content: Option<&str>, calls: &[(&str, Value)]| {
        rendered(&template, &conversation(content, calls, Value::clone))
    };
    for run in accepts(&model, &grammar, &standard_turns(answer, &calls)) {
        assert_eq!(run.streamed.reasoning, "");
    }
}

/// Gemma 4's notation beyond the template test's schemas: a `$ref` into
/// the definitions (recursive), `anyOf`, a list of types with null, a
/// `const`, an array of objects, a property without a schema; what each
/// allows and refuses.
#[test]
fn gemma_4_arguments_by_their_schema() {
    let model = Model::bytes(GEMMA_4_TOKENS, "<turn|>");
    let parameters = json!({"type": "object", "properties": {
        "tree": {"$ref": "#/$defs/node"},
        "id": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "limit": {"type": ["integer", "null"]},
        "mode": {"const": "fast"},
        "any": {}},
        "required": ["tree"],
        "$defs": {"node": {"type": "object", "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
            "required": ["name"]}}});
    let tools = json!([{"name": "plant", "parameters": parameters}]);
    let mut request = Request::new(&Limits::default(), &CompileCache::default());
    request
        .sources
        .set_vocabulary(Arc::clone(&model.vocabulary));
    let file = request.add("tools.json", tools.to_string());
    let grammar = pipeline::tools(&mut request, &tools, file, &Options::new(Format::Gemma4));
    let grammar = Arc::new(grammar.expect("compiles"));
    let q = "<|\"|>";
    let call = |arguments: &str| format!("<|tool_call>call:plant{{{arguments}}}<tool_call|>");
    for arguments in [
        format!("tree:{{name:{q}a{q}}}"),
        format!(
            "any:[1,{q}x{q},{{k:None}}],id:7,limit:None,mode:{q}fast{q},tree:{{children:[{{name:{q}b{q}}}],name:{q}a{q}}}"
        ),
        format!("id:{q}x-1{q},limit:3,tree:{{name:{q}a{q}}}"),
    ] {
        let text = call(&arguments);
        model
            .run(&grammar, &text, 1)
            .unwrap_or_else(|at| panic!("refused at {at}: {text}"));
    }
    for (arguments, at) in [
        (format!("tree:{{children:[{{}}],name:{q}a{q}}}"), "}],"),
        (format!("id:true,tree:{{name:{q}a{q}}}"), "true"),
        (format!("mode:{q}slow{q},tree:{{name:{q}a{q}}}"), "slow"),
        (format!("limit:{q}3{q},tree:{{name:{q}a{q}}}"), "<|\"|>3"),
    ] {
        model.refuses_at(&grammar, &call(&arguments), at);
    }
}

/// Calls in a `tool_code` block (Gemma 3 as Google's cookbook prompts
/// it; no template writes them), on the Llama 3.1 tokenizer, outputs
/// written from the format: one call after text, three calls (one inside
/// `print(…)`) with nested dicts and lists, quotes, a backslash, a line
/// break and non-ASCII text, a text answer; each call's capture is its
/// keyword arguments. Refused: an unknown tool, a wrong type, a second
/// call with parallel calls off, a block under tool choice `none`.
#[test]
fn tool_code_blocks_with_python_calls() {
    let model = Model::load(&REAL_TOKENIZERS[0], &[]);
    let options = Options {
        reasoning: Reasoning::Forbidden,
        ..Options::new(Format::ToolCode)
    };
    let grammar = model.grammar(&options);
    let calls = template_calls();
    let block = |calls: &[(&str, Value)]| -> String {
        let lines: Vec<String> = (calls.iter().enumerate())
            .map(|(i, (name, arguments))| {
                let call = pythonic_call(name, arguments).0;
                if i == 1 {
                    format!("print({call})")
                } else {
                    call
                }
            })
            .collect();
        format!(
            "Let me look that up.\n```tool_code\n{}\n```",
            lines.join("\n")
        )
    };
    for some in [&calls[..1], &calls[..]] {
        let text = block(some);
        let turn = model
            .run(&grammar, &text, 2)
            .unwrap_or_else(|at| panic!("refused at byte {at} of {text:?}"));
        let expected: Vec<(String, String)> = (some.iter())
            .map(|(name, arguments)| (name.to_string(), pythonic_call(name, arguments).1))
            .collect();
        assert_eq!(turn.streamed.calls, expected, "{text:?}");
        assert_eq!(turn.streamed.text, "Let me look that up.\n");
    }
    let answer = model.run(&grammar, "Zürich: 21 °C, sunny.", 0).unwrap();
    assert_eq!(answer.streamed.text, "Zürich: 21 °C, sunny.");
    let library = model.library_grammar("std/tool_code.xg");
    model.run(&library, &block(&calls), 0).unwrap();
    model.run(&library, "Zürich: 21 °C, sunny.", 0).unwrap();
    model.refuses_at(&grammar, "```tool_code\nget_time()\n```", "time");
    model.refuses_at(&grammar, "```tool_code\nget_weather(city=42)\n```", "42");
    let single = model.grammar(&Options {
        parallel_calls: false,
        ..options.clone()
    });
    let two = block(&calls[..2]);
    model.refuses_at(&single, &two, "print(");
    let none = model.grammar(&Options {
        tool_choice: ToolChoice::None,
        ..options
    });
    model.refuses_at(&none, &block(&calls[..1]), "\nget_weather");
}

/// Command R7B's own tool-use template (Command A writes the same), on a
/// vocabulary of bytes and Cohere's special tokens, with thinking on (the
/// model opens its plan): one call and three calls after a plan, a text
/// answer (the standard library's file takes them too). Refused: an
/// unknown tool, a wrong type, a second call with parallel calls off. Then
/// Command A Reasoning's template (its prompt opens the reasoning): the
/// same turns after reasoning; an unknown tool refused.
#[test]
fn command_turns_rendered_by_their_chat_templates() {
    let model = Model::bytes(
        &[
            ("<|END_OF_TURN_TOKEN|>", true),
            ("<|START_THINKING|>", true),
            ("<|END_THINKING|>", true),
            ("<|START_ACTION|>", true),
            ("<|END_ACTION|>", true),
            ("<|START_RESPONSE|>", true),
            ("<|END_RESPONSE|>", true),
        ],
        "<|END_OF_TURN_TOKEN|>",
    );
    let end = "<|END_OF_TURN_TOKEN|>";
    let mut template = ChatTemplate::new(
        chat_template("CohereForAI-c4ai-command-r7b-12-2024-tool_use"),
        "<BOS_TOKEN>".into(),
        end.into(),
    );
    template.thinking = Some(true);
    let options = Options::new(Format::Command);
    let grammar = model.grammar(&options);
    let calls = template_calls();
    let why = "Weather first, then news.";
    let turn = |content: Option<&str>, calls: &[(&str, Value)]| {
        template.turn(&reasoned(why, content, calls), end)
    };
    let turns = turns_of(turn, &calls);
    let runs = accepts(&model, &grammar, &turns);
    for run in &runs[..2] {
        assert_eq!(run.streamed.reasoning, why);
    }
    let library = model.library_grammar("std/command.xg");
    for (text, _) in &turns {
        model.run(&library, text, 0).unwrap();
    }
    assert_eq!(runs[2].streamed.text, "Zürich: 21 °C, sunny.");
    model.refuses_at(&grammar, &turn(None, &[("get_time", json!({}))]), "time");
    model.refuses_at(
        &grammar,
        &turn(None, &[("get_weather", json!({"city": 42}))]),
        "42",
    );
    let single = model.grammar(&Options {
        parallel_calls: false,
        ..options
    });
    let two = turn(None, &calls[..2]);
    // Refused at the comma after the first call.
    let comma = two.find("}},").unwrap() + 2;
    model.refuses_at(&single, &two, &two[comma..]);

    // Command A Reasoning: the prompt opens the reasoning, the answer is
    // between <|START_TEXT|> and <|END_TEXT|>.
    let model = Model::bytes(
        &[
            ("<|END_OF_TURN_TOKEN|>", true),
            ("<|START_THINKING|>", true),
            ("<|END_THINKING|>", true),
            ("<|START_ACTION|>", true),
            ("<|END_ACTION|>", true),
            ("<|START_TEXT|>", true),
            ("<|END_TEXT|>", true),
        ],
        "<|END_OF_TURN_TOKEN|>",
    );
    let reasoning = ChatTemplate::new(
        chat_template("Cohere2MoE"),
        "<BOS_TOKEN>".into(),
        end.into(),
    );
    let grammar = model.grammar(&Options::new(Format::CommandReasoning));
    let turn = |content: Option<&str>, calls: &[(&str, Value)]| {
        reasoning.turn(&reasoned(why, content, calls), end)
    };
    let runs = accepts(&model, &grammar, &turns_of(turn, &calls));
    for run in &runs {
        assert_eq!(run.streamed.reasoning, why);
    }
    assert_eq!(runs[2].streamed.text, "Zürich: 21 °C, sunny.");
    model.refuses_at(&grammar, &turn(None, &[("get_time", json!({}))]), "time");
}

/// The turns the Command templates render with `turn`: one call, three
/// calls, a text answer.
fn turns_of<'a>(
    turn: impl Fn(Option<&str>, &[(&str, Value)]) -> String,
    calls: &'a [(&'a str, Value)],
) -> [(String, &'a [(&'a str, Value)]); 3] {
    [
        (turn(None, &calls[..1]), &calls[..1]),
        (turn(None, calls), calls),
        (turn(Some("Zürich: 21 °C, sunny."), &[]), &[]),
    ]
}
