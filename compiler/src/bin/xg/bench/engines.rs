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

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use serde_json::Value;
use xg_compiler::json_schema::{Options, PropertyOrder, Whitespace};
use xg_compiler::{Diagnostics, Limits, Severity, Sources, pipeline};
use xg_runtime::{Grammar, Matcher, TokenId, Vocabulary};

/// A structured-generation engine under test.
pub(crate) trait Engine: Sync {
    /// Its name in results (`xg`, `llguidance`).
    fn name(&self) -> &'static str;
    /// Compiles `schema`, giving up after `timeout` where the engine can.
    fn compile(&self, schema: &Value, timeout: Duration) -> Result<Box<dyn Compiled>, String>;
}

/// A compiled grammar.
pub(crate) trait Compiled {
    /// A matcher at the start of the grammar.
    fn matcher(&self) -> Box<dyn TokenMatcher>;
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

/// xg with the model's vocabulary.
pub(crate) struct Xg {
    vocabulary: Arc<Vocabulary>,
}

impl Xg {
    pub(crate) fn new(vocabulary: Vocabulary) -> Self {
        Self {
            vocabulary: Arc::new(vocabulary),
        }
    }
}

impl Engine for Xg {
    fn name(&self) -> &'static str {
        "xg"
    }

    fn compile(&self, schema: &Value, timeout: Duration) -> Result<Box<dyn Compiled>, String> {
        // MaskBench instances list properties in their own order.
        let options = Options {
            whitespace: Whitespace::Compact,
            property_order: PropertyOrder::Any,
            ..Options::default()
        };
        let limits = Limits {
            time: Some(timeout),
            ..Limits::default()
        };
        let mut sources = Sources::new();
        let file = sources.add("schema.json", schema.to_string(), None);
        let mut diagnostics = Diagnostics::new();
        match pipeline::json_schema(schema, &options, &limits, &sources, file, &mut diagnostics) {
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
    use super::{Compiled, Engine, Result, TokenMatcher, Value};
    use anyhow::Context as _;
    use llguidance::api::TopLevelGrammar;
    use llguidance::earley::SlicedBiasComputer;
    use llguidance::toktrie::{InferenceCapabilities, SimpleVob};
    use llguidance::{Matcher, ParserFactory, TokenParser};
    use std::path::Path;
    use std::time::Duration;

    /// LLGuidance's parser factory for the model's tokenizer.
    pub(crate) struct Llguidance {
        factory: ParserFactory,
    }

    impl Llguidance {
        pub(crate) fn new(tokenizer: &Path) -> Result<Self> {
            let env = toktrie_hf_tokenizers::ByteTokenizer::from_file(tokenizer)
                .map_err(|e| anyhow::anyhow!("{e}"))
                .and_then(|t| t.into_tok_env(None).map_err(|e| anyhow::anyhow!("{e}")))
                .with_context(|| format!("LLGuidance cannot load `{}`", tokenizer.display()))?;
            let mut factory = ParserFactory::new(
                &env,
                InferenceCapabilities::default(),
                &SlicedBiasComputer::general_slices(),
            )
            .map_err(|e| anyhow::anyhow!("{e}"))?;
            factory.set_stderr_log_level(0);
            Ok(Self { factory })
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
                        "whitespace_flexible": false,
                        "item_separator": ",",
                        "key_separator": ":",
                        "lenient": true
                    }),
                );
            }
            let grammar = TopLevelGrammar::from_json_schema(schema);
            let parser = self
                .factory
                .create_parser(grammar)
                .map_err(|e| e.to_string())?;
            Ok(Box::new(LlgCompiled { parser }))
        }
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
