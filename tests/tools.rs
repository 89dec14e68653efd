//! Tool-calling formats on their models' real tokenizers: realistic outputs
//! (text, reasoning, one and several calls, nested arguments, unicode,
//! escapes) are accepted token by token with every token allowed by the
//! mask, and wrong tool names, invalid arguments and text after the end are
//! refused at the token where they go wrong. The mask is checked against
//! the slow reference (every token tried on a fork) at a few steps of each
//! output.

mod common;

use std::sync::Arc;

use common::{DEEPSEEK_V3, MISTRAL_NEMO, REAL_TOKENIZERS, RealTokenizer, real_tokenizer};
use serde_json::{Value, json};
use xg_compiler::tools::{Format, Options, Reasoning, ToolChoice};
use xg_compiler::{CompileCache, Diagnostics, Limits, Sources, pipeline};
use xg_runtime::{Grammar, Matcher, TokenId, Vocabulary};

/// The tools of every test: flat arguments, nested objects and arrays.
fn tools() -> Value {
    json!([
        {"type": "function", "function": {"name": "get_weather", "description": "Current weather",
            "parameters": {"type": "object", "properties": {
                "city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
                "required": ["city"]}}},
        {"type": "function", "function": {"name": "search",
            "parameters": {"type": "object", "properties": {
                "query": {"type": "string", "maxLength": 200},
                "filters": {"type": "object", "properties": {
                    "lang": {"type": "string"},
                    "max_results": {"type": "integer", "minimum": 1, "maximum": 50}},
                    "additionalProperties": false}},
                "required": ["query"]}}},
        {"name": "calendar.create_event", "parameters": {"type": "object", "properties": {
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
    tokenizer: tokenizers::Tokenizer,
}

impl Model {
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
            tokenizer: tokenizers::Tokenizer::from_bytes(&json).unwrap(),
        }
    }

    fn grammar(&self, options: &Options) -> Arc<Grammar> {
        let tools = tools();
        let mut sources = Sources::new();
        sources.set_vocabulary(Arc::clone(&self.vocabulary));
        let file = sources.add("tools.json", tools.to_string(), None);
        let mut diagnostics = Diagnostics::new();
        let grammar = pipeline::tools(
            &tools,
            options,
            &Limits::default(),
            &CompileCache::default(),
            &mut sources,
            file,
            &mut diagnostics,
        );
        assert!(
            !diagnostics.has_errors(),
            "{}",
            diagnostics.render(&sources, false)
        );
        Arc::new(grammar.unwrap())
    }

    fn tokens(&self, text: &str) -> Vec<TokenId> {
        let encoding = self.tokenizer.encode(text, false).unwrap();
        let ids: Vec<TokenId> = encoding
            .get_ids()
            .iter()
            .map(|&id| TokenId::new(id as usize).unwrap())
            .collect();
        // The tokens spell the text (special tokens by their names).
        let spelled: Vec<u8> = ids.iter().flat_map(|&id| self.spelling(id)).collect();
        assert_eq!(String::from_utf8_lossy(&spelled), text, "tokenization");
        ids
    }

    /// The bytes a token stands for in the output: its text, or a special
    /// token's name.
    fn spelling(&self, id: TokenId) -> Vec<u8> {
        match self.vocabulary.kind_of(id) {
            xg_runtime::TokenKind::Text => self.vocabulary.bytes(id).to_vec(),
            _ => self
                .tokenizer
                .id_to_token(u32::try_from(id.as_usize()).unwrap())
                .unwrap()
                .into_bytes(),
        }
    }

    /// Runs `text` token by token, then the stop token, checking each
    /// against the mask (and the whole mask against the reference at
    /// `reference_checks` evenly spread steps). `Ok` if all were accepted;
    /// else the byte offset where the refused token starts.
    fn run(
        &self,
        grammar: &Arc<Grammar>,
        text: &str,
        reference_checks: usize,
    ) -> Result<(), usize> {
        let vocabulary = &self.vocabulary;
        let ids = self.tokens(text);
        let stop = vocabulary.stop_tokens()[0];
        let mut matcher = Matcher::with_vocabulary(Arc::clone(grammar), Arc::clone(vocabulary));
        let mut mask = vec![0u32; vocabulary.mask_words()];
        let every = (ids.len() / reference_checks.max(1)).max(1);
        let mut offset = 0;
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
        }
        // Nothing after the stop token.
        assert!(matcher.fork().accept_token(ids[0]).is_err());
        Ok(())
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
    model.run(&grammar, call, 3).unwrap();
    let answer = "<|channel|>analysis<|message|>Simple greeting.<|end|>\
        <|start|>assistant<|channel|>commentary<|message|>Answering directly.<|end|>\
        <|start|>assistant<|channel|>final<|message|>Hello! ¿Qué tal? \"Quotes\" and \\ too.";
    model.run(&grammar, answer, 0).unwrap();
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

#[test]
fn bad_tool_lists_are_errors_at_their_place() {
    let text = r#"[
  {"type": "function", "function": {"name": "get weather", "parameters": {}}},
  {"type": "code_interpreter"},
  {"name": "ok", "parameters": false},
  {"name": "ok"}, {"name": "ok"}
]"#;
    let bad: Value = serde_json::from_str(text).unwrap();
    let mut sources = Sources::new();
    let file = sources.add("tools.json", text, None);
    let mut diagnostics = Diagnostics::new();
    let grammar = pipeline::tools(
        &bad,
        &Options::new(Format::Qwen),
        &Limits::default(),
        &CompileCache::default(),
        &mut sources,
        file,
        &mut diagnostics,
    );
    assert!(grammar.is_none());
    let rendered = diagnostics.render(&sources, false);
    for expected in [
        "#/0/function/name: `get weather` is not a function name",
        "#/1/type: only function tools are called through a grammar, not `code_interpreter`",
        "#/2/parameters: `false` accepts no arguments",
        "#/4/name: a second tool named `ok`",
        "tools.json:2:45",
    ] {
        assert!(rendered.contains(expected), "{expected:?} in\n{rendered}");
    }

    let mut sources = Sources::new();
    let file = sources.add("tools.json", "[]", None);
    let grammar = pipeline::tools(
        &json!([]),
        &Options {
            tool_choice: ToolChoice::Required,
            ..Options::new(Format::Qwen)
        },
        &Limits::default(),
        &CompileCache::default(),
        &mut sources,
        file,
        &mut diagnostics,
    );
    assert!(grammar.is_none());

    // Formats that name special tokens need the model's vocabulary.
    let mut sources = Sources::new();
    let file = sources.add("tools.json", tools().to_string(), None);
    let mut diagnostics = Diagnostics::new();
    let grammar = pipeline::tools(
        &tools(),
        &Options::new(Format::Harmony),
        &Limits::default(),
        &CompileCache::default(),
        &mut sources,
        file,
        &mut diagnostics,
    );
    assert!(grammar.is_none());
    assert!(
        diagnostics
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
        let mut sources = Sources::new();
        let file = sources.add("tools.json", request.to_string(), None);
        let mut diagnostics = Diagnostics::new();
        let grammar = pipeline::tools(
            request,
            &Options::new(Format::Qwen),
            &Limits::default(),
            cache,
            &mut sources,
            file,
            &mut diagnostics,
        );
        grammar.unwrap_or_else(|| panic!("{}", diagnostics.render(&sources, false)))
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
