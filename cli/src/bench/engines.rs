//! The engines `xg bench` compares, behind one interface: compile a JSON
//! Schema, start a matcher, and per token fill the mask and commit.
//!
//! Each engine is used the way its documentation intends: xg through
//! `pipeline::json_schema` and a `Matcher` with the model's vocabulary (its
//! mask caches shared by every grammar of the run, as in a server);
//! LLGuidance through one `ParserFactory` (general slices, as its own
//! benchmark does), `TopLevelGrammar::from_json_schema` and its `Matcher`.
//! Both compile the same compact layout (`,` and `:`, no whitespace) and
//! both are lenient (unsupported keywords do not fail the compile).
//!
//! For tool calling (`xg bench tools`), xg compiles the request's tool list
//! with `pipeline::tools` and one compile cache for the run (as a server
//! keeps one); LLGuidance gets the same turn written in its Lark dialect —
//! the format's special tokens as tokens, free text as a lexeme, each
//! tool's arguments as `%json` — compiled by the same `ParserFactory`.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use serde_json::Value;
use xg_compiler::json_schema::{Options, PropertyOrder, Whitespace};
use xg_compiler::tools::{self, Format};
use xg_compiler::{CompileCache, Diagnostics, Limits, Request, Severity, pipeline};
use xg_runtime::{Grammar, Matcher, TokenId, Vocabulary};

/// What LLGuidance's slices (token subsets its masks are built from) are
/// tuned for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slices {
    /// JSON, as LLGuidance's own MaskBench harness (`json_stats`) uses.
    Json,
    /// Free text and JSON (tool-calling turns).
    General,
}

/// A structured-generation engine under test.
pub(crate) trait Engine: Sync {
    /// Its name in results (`xg`, `llguidance`).
    fn name(&self) -> &'static str;
    /// Compiles `schema`, giving up after `timeout` where the engine can.
    fn compile(&self, schema: &Value, timeout: Duration) -> Result<Box<dyn Compiled>, String>;
    /// Compiles the grammar of a turn in `format` offering `tools` (an
    /// OpenAI-style tool list; default options: reasoning allowed, any
    /// number of calls).
    fn compile_tools(&self, tools: &Value, format: Format) -> Result<Box<dyn Compiled>, String>;
    /// What the engine's caches reused so far, if it says.
    fn reuse(&self) -> Option<Reuse>;
    /// For a cold run: the engine with caches of its own for one schema,
    /// made before the clock starts (`None`: this engine as it is).
    fn for_schema(&self) -> Option<Box<dyn Engine>> {
        None
    }
}

/// Cumulative reuse counters of an engine's caches.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Reuse {
    /// Rule automata taken from the compile cache.
    pub automata_reused: u64,
    /// Rule automata built.
    pub automata_built: u64,
    /// Mask-cache lookups served by entries built before.
    pub masks_reused: u64,
    /// Mask-cache entries built.
    pub masks_built: u64,
}

/// A compiled grammar.
pub(crate) trait Compiled {
    /// A matcher at the start of the grammar.
    fn matcher(&self) -> Box<dyn TokenMatcher>;
    /// Why the grammar computes masks without the engine's mask cache, if
    /// the engine says.
    fn cache_fallback(&self) -> Option<String> {
        None
    }
}

/// One generation's state.
pub(crate) trait TokenMatcher {
    /// Computes the mask of the tokens allowed next.
    fn fill_mask(&mut self) -> Result<(), String>;
    /// Whether the last mask allows `token`.
    fn allows(&self, token: u32) -> bool;
    /// Commits `token`.
    fn commit(&mut self, token: u32) -> Result<(), String>;
    /// Whether the output may end here.
    fn accepting(&mut self) -> bool;
}

/// How xg compiles MaskBench schemas in a run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Setup {
    /// Fresh compile and mask caches per schema (what a server sees for a
    /// schema it has never met); else one of each for the run.
    pub cold: bool,
    /// The order object properties may come in.
    pub order: PropertyOrder,
    /// JSON whitespace allowed around punctuation (else none).
    pub flexible: bool,
}

impl Default for Setup {
    /// Warm caches, properties in the schema's order.
    fn default() -> Self {
        Self {
            cold: false,
            order: PropertyOrder::Given,
            flexible: false,
        }
    }
}

/// xg with the model's vocabulary, and one compile cache for the run's
/// schemas and tool lists, as a server keeps one (or, cold, fresh caches
/// per schema).
pub(crate) struct Xg {
    vocabulary: Arc<Vocabulary>,
    compile_cache: CompileCache,
    setup: Setup,
}

impl Xg {
    pub(crate) fn new(vocabulary: Vocabulary, setup: Setup) -> Self {
        // A server builds the token trie once, before its first request.
        vocabulary.build_trie();
        Self {
            vocabulary: Arc::new(vocabulary),
            compile_cache: CompileCache::default(),
            setup,
        }
    }

    fn compiled(
        &self,
        grammar: Option<Grammar>,
        diagnostics: &Diagnostics,
    ) -> Result<Box<dyn Compiled>, String> {
        match grammar {
            Some(grammar) => Ok(Box::new(XgCompiled {
                grammar: Arc::new(grammar),
                vocabulary: Arc::clone(&self.vocabulary),
            })),
            None => Err(diagnostics
                .iter()
                .filter(|d| d.severity == Severity::Error)
                .map(|d| d.message.clone())
                .collect::<Vec<_>>()
                .join("; ")),
        }
    }
}

impl Engine for Xg {
    fn name(&self) -> &'static str {
        "xg"
    }

    fn compile(&self, schema: &Value, timeout: Duration) -> Result<Box<dyn Compiled>, String> {
        let defaults = Options::default();
        let options = Options {
            whitespace: if self.setup.flexible {
                defaults.whitespace.clone()
            } else {
                Whitespace::Compact
            },
            property_order: self.setup.order,
            ..defaults
        };
        let limits = Limits {
            time: Some(timeout),
            ..Limits::default()
        };
        let mut request = Request::new(&limits, &self.compile_cache);
        let file = request.add("schema.json", schema.to_string());
        let grammar = pipeline::json_schema(&mut request, schema, file, &options);
        self.compiled(grammar, &request.diagnostics)
    }

    fn compile_tools(&self, list: &Value, format: Format) -> Result<Box<dyn Compiled>, String> {
        let mut request = Request::new(&Limits::default(), &self.compile_cache)
            .with_vocabulary(Arc::clone(&self.vocabulary));
        let file = request.add("tools.json", list.to_string());
        let grammar = pipeline::tools(&mut request, list, file, &tools::Options::new(format));
        self.compiled(grammar, &request.diagnostics)
    }

    fn for_schema(&self) -> Option<Box<dyn Engine>> {
        if !self.setup.cold {
            return None;
        }
        // The token trie is shared (a server builds it once per model);
        // the mask cache is a new one.
        let limit = self.vocabulary.mask_cache().limit();
        let vocabulary = Vocabulary::clone(&self.vocabulary).with_cache_limit(limit);
        Some(Box::new(Xg {
            vocabulary: Arc::new(vocabulary),
            compile_cache: CompileCache::default(),
            setup: Setup {
                cold: false,
                ..self.setup
            },
        }))
    }

    fn reuse(&self) -> Option<Reuse> {
        let automata = self.compile_cache.stats();
        let masks = self.vocabulary.mask_cache().stats();
        Some(Reuse {
            automata_reused: automata.hits,
            automata_built: automata.misses,
            masks_reused: masks.hits + masks.partial_hits,
            masks_built: masks.misses,
        })
    }
}

struct XgCompiled {
    grammar: Arc<Grammar>,
    vocabulary: Arc<Vocabulary>,
}

impl Compiled for XgCompiled {
    fn matcher(&self) -> Box<dyn TokenMatcher> {
        Box::new(XgMatcher {
            matcher: Matcher::with_vocabulary(
                Arc::clone(&self.grammar),
                Arc::clone(&self.vocabulary),
            ),
            mask: vec![0; self.vocabulary.mask_words()],
        })
    }

    fn cache_fallback(&self) -> Option<String> {
        self.grammar.cache_fallback().map(|why| why.to_string())
    }
}

struct XgMatcher {
    matcher: Matcher,
    mask: Vec<u32>,
}

impl TokenMatcher for XgMatcher {
    fn fill_mask(&mut self) -> Result<(), String> {
        self.matcher
            .fill_next_token_bitmask(&mut self.mask)
            .map_err(|e| e.to_string())
    }

    fn allows(&self, token: u32) -> bool {
        let token = token as usize;
        self.mask
            .get(token / 32)
            .is_some_and(|word| word >> (token % 32) & 1 == 1)
    }

    fn commit(&mut self, token: u32) -> Result<(), String> {
        let id = TokenId::new(token as usize).map_err(|e| e.to_string())?;
        self.matcher.accept_token(id).map_err(|e| e.to_string())
    }

    fn accepting(&mut self) -> bool {
        self.matcher.can_terminate()
    }
}

/// LLGuidance, when `xg` is built with the `llguidance` feature.
#[cfg(feature = "llguidance")]
pub(crate) mod llguidance_engine {
    use super::{Compiled, Engine, Format, Result, Reuse, Slices, TokenMatcher, Value, tools};
    use anyhow::Context as _;
    use llguidance::api::TopLevelGrammar;
    use llguidance::earley::SlicedBiasComputer;
    use llguidance::toktrie::{InferenceCapabilities, SimpleVob};
    use llguidance::{Matcher, ParserFactory, TokenParser};
    use std::fmt::Write as _;
    use std::path::Path;
    use std::time::Duration;

    /// LLGuidance's parser factory for the model's tokenizer.
    pub(crate) struct Llguidance {
        factory: ParserFactory,
        /// JSON whitespace allowed around punctuation (else none).
        flexible: bool,
    }

    /// LLGuidance's lexer fuel per millisecond of compiling (its docs:
    /// 50k/ms), to turn xg's compile time limit into LLGuidance's units.
    const LEXER_FUEL_PER_MS: u64 = 50_000;

    impl Llguidance {
        /// The factory with `slices`, and compile limits raised to what
        /// `compile_time` allows (its defaults give up after about 20 ms
        /// of lexer construction; xg gets the whole `compile_time`), for
        /// JSON Schemas with flexible whitespace or none.
        pub(crate) fn new(
            tokenizer: &Path,
            slices: Slices,
            compile_time: Duration,
            flexible: bool,
        ) -> Result<Self> {
            let env = crate::trace::read_tokenizer(tokenizer, None)
                .and_then(|files| {
                    toktrie_hf_tokenizers::ByteTokenizer::from_json_bytes(&files.json)
                        .map_err(|e| anyhow::anyhow!("{e}"))
                })
                .and_then(|t| t.into_tok_env(None).map_err(|e| anyhow::anyhow!("{e}")))
                .with_context(|| format!("LLGuidance cannot load `{}`", tokenizer.display()))?;
            let slices = match slices {
                Slices::Json => SlicedBiasComputer::json_slices(),
                Slices::General => SlicedBiasComputer::general_slices(),
            };
            let mut factory = ParserFactory::new(&env, InferenceCapabilities::default(), &slices)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            factory.set_stderr_log_level(0);
            let ms = u64::try_from(compile_time.as_millis()).unwrap_or(u64::MAX);
            let limits = factory.limits_mut();
            let scale = (ms / 20).max(1);
            limits.initial_lexer_fuel = limits
                .initial_lexer_fuel
                .max(ms.saturating_mul(LEXER_FUEL_PER_MS));
            limits.max_grammar_size = limits
                .max_grammar_size
                .saturating_mul(usize::try_from(scale).unwrap_or(usize::MAX));
            // Lexer states cost memory (1–2 kB each), not time: at most 8×.
            limits.max_lexer_states = limits
                .max_lexer_states
                .saturating_mul(usize::try_from(scale.min(8)).unwrap_or(8));
            Ok(Self { factory, flexible })
        }
    }

    impl Engine for Llguidance {
        fn name(&self) -> &'static str {
            "llguidance"
        }

        fn compile(&self, schema: &Value, _timeout: Duration) -> Result<Box<dyn Compiled>, String> {
            let mut schema = schema.clone();
            if let Some(object) = schema.as_object_mut() {
                object.insert(
                    "x-guidance".to_string(),
                    serde_json::json!({
                        "whitespace_flexible": self.flexible,
                        "item_separator": ",",
                        "key_separator": ":",
                        "lenient": true
                    }),
                );
            }
            let grammar = TopLevelGrammar::from_json_schema(schema);
            self.parser(grammar)
        }

        fn compile_tools(&self, list: &Value, format: Format) -> Result<Box<dyn Compiled>, String> {
            self.parser(TopLevelGrammar::from_lark(lark(list, format)?))
        }

        fn reuse(&self) -> Option<Reuse> {
            None
        }
    }

    impl Llguidance {
        fn parser(&self, grammar: TopLevelGrammar) -> Result<Box<dyn Compiled>, String> {
            let parser = self
                .factory
                .create_parser(grammar)
                .map_err(|e| e.to_string())?;
            Ok(Box::new(LlgCompiled { parser }))
        }
    }

    /// The turn `xg tools` compiles for `format` (default options), in
    /// LLGuidance's Lark: an optional `<think>` block, free text, then
    /// calls, each a tool's name and `%json` arguments. Only the Qwen
    /// format is written; its tags are special tokens in LLGuidance's
    /// view of the vocabulary (added tokens of the form `<…>`).
    fn lark(list: &Value, format: Format) -> Result<String, String> {
        if format != Format::Qwen {
            return Err(format!(
                "the LLGuidance side is written for the qwen format, not {format}"
            ));
        }
        let listed = tools::parse(list).map_err(|errors| {
            errors
                .iter()
                .map(|e| format!("{}: {}", e.pointer, e.message))
                .collect::<Vec<_>>()
                .join("; ")
        })?;
        let quote = |text: &str| Value::String(text.to_string()).to_string();
        let mut lark = String::from(
            "%llguidance {}\n\
             start: think? TEXT? calls?\n\
             think: <think> THOUGHT? </think> WS?\n\
             calls: call (\"\\n\" call)*\n\
             call: <tool_call> \"\\n\" body \"\\n\" </tool_call>\n\
             THOUGHT: /(.|\\n)+/\n\
             TEXT: /(.|\\n)+/\n\
             WS: /[ \\t\\n\\r]+/\n",
        );
        let bodies: Vec<String> = (0..listed.len()).map(|i| format!("call_{i}")).collect();
        let _ = writeln!(lark, "body: {}", bodies.join(" | "));
        for (i, tool) in listed.iter().enumerate() {
            let head = format!("{{\"name\": \"{}\", \"arguments\": ", tool.name);
            let _ = writeln!(lark, "call_{i}: {} args_{i} \"}}\"", quote(&head));
            let _ = writeln!(lark, "args_{i}: %json {}", tool.parameters);
        }
        Ok(lark)
    }

    struct LlgCompiled {
        parser: TokenParser,
    }

    impl Compiled for LlgCompiled {
        fn matcher(&self) -> Box<dyn TokenMatcher> {
            Box::new(LlgMatcher {
                matcher: Matcher::new(Ok(self.parser.deep_clone())),
                mask: None,
            })
        }
    }

    struct LlgMatcher {
        matcher: Matcher,
        mask: Option<SimpleVob>,
    }

    impl TokenMatcher for LlgMatcher {
        fn fill_mask(&mut self) -> Result<(), String> {
            self.mask = Some(self.matcher.compute_mask().map_err(|e| e.to_string())?);
            Ok(())
        }

        fn allows(&self, token: u32) -> bool {
            self.mask
                .as_ref()
                .is_some_and(|mask| mask.is_allowed(token))
        }

        fn commit(&mut self, token: u32) -> Result<(), String> {
            self.matcher.consume_token(token).map_err(|e| e.to_string())
        }

        fn accepting(&mut self) -> bool {
            self.matcher.is_accepting().unwrap_or(false)
        }
    }
}
