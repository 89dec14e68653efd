//! Typed outputs: the grammar of a Rust type's JSON, and the model's output
//! read back as that type.
//!
//! The type describes itself through [`schemars::JsonSchema`] (which
//! follows serde's attributes: `rename`, `rename_all`, `tag`, `content`,
//! `untagged`, `flatten`, `default`, `skip`); xg compiles that JSON Schema,
//! tightened so that every output the grammar accepts deserializes:
//!
//! - integers carry the range of their Rust type (`u8` is `0..=255`, `i64`
//!   and `u128` too — schemars leaves the 32-bit and wider ones unbounded)
//!   and are written as digits only (`1.0` and `-0` are floats to serde);
//! - floats are finite: `f32` within `±f32::MAX`, `f64` within `±1e38`
//!   (the widest range the compiler bounds exactly; serde refuses a
//!   number past `f64::MAX`);
//! - objects take the fields the type lists and no others (serde would
//!   ignore them; a model should not spend tokens on them), unless the type
//!   says what else it takes (a map, a flattened map).
//!
//! The grammar is compiled once per type and layout in a process and
//! shared. A procedural macro sees the type's tokens, not the schema its
//! `JsonSchema` implementation builds at run time, so the grammar cannot be
//! built with the crate; [`for_type`] returns the compiler's diagnostics
//! instead, and a unit test that calls it for each output type of a
//! program turns them into test failures.

use std::any::TypeId;
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, PoisonError};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use xg_compiler::json_schema::{Options, PropertyOrder, Whitespace};
use xg_compiler::{CompileCache, Limits, Request, pipeline};

use crate::{Grammar, MaskError, Matcher, Rejection, RollbackError, TokenId, Vocabulary};

/// How the JSON of a typed output is laid out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Layout {
    /// As `serde_json::to_string` writes it: `,` and `:`, no whitespace.
    #[default]
    Compact,
    /// Any JSON whitespace around punctuation, at most this many
    /// characters in a row (a bound keeps a model from looping on it).
    Spaced(u32),
}

/// Why a typed grammar or output failed.
#[derive(Debug)]
pub enum TypedError {
    /// The type's schema did not compile: the compiler's diagnostics.
    Compile {
        /// The type's name.
        type_name: &'static str,
        /// The rendered diagnostics.
        diagnostics: String,
    },
    /// [`TypedMatcher::finish`] before the output was complete.
    Incomplete {
        /// The output so far.
        output: String,
    },
    /// The complete output did not deserialize. The grammar is built so
    /// that this cannot happen: it is a bug in xg, reported as such.
    Deserialize(serde_json::Error),
}

impl fmt::Display for TypedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypedError::Compile {
                type_name,
                diagnostics,
            } => write!(
                f,
                "the schema of `{type_name}` did not compile:\n{diagnostics}"
            ),
            TypedError::Incomplete { output } => {
                write!(f, "the output is not a complete value yet: {output:?}")
            }
            TypedError::Deserialize(error) => write!(
                f,
                "an output the grammar accepted did not deserialize (a bug in xg): {error}"
            ),
        }
    }
}

impl std::error::Error for TypedError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TypedError::Deserialize(error) => Some(error),
            _ => None,
        }
    }
}

/// The grammar of `T`'s JSON in `layout` (see the [module](self) docs),
/// compiled on first use and shared afterwards.
pub fn for_type<T: JsonSchema + 'static>(layout: Layout) -> Result<Arc<Grammar>, TypedError> {
    type Compiled = HashMap<(TypeId, Layout), Arc<Grammar>>;
    static COMPILED: Mutex<Option<Compiled>> = Mutex::new(None);
    let key = (TypeId::of::<T>(), layout);
    if let Some(grammar) = COMPILED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get_or_insert_with(HashMap::new)
        .get(&key)
    {
        return Ok(Arc::clone(grammar));
    }
    // Compiled outside the lock: another type need not wait for this one.
    // Two threads may both compile `T` the first time; one result is kept.
    let grammar = Arc::new(compile(
        &schema_for::<T>(),
        layout,
        std::any::type_name::<T>(),
    )?);
    Ok(Arc::clone(
        COMPILED
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert_with(HashMap::new)
            .entry(key)
            .or_insert(grammar),
    ))
}

/// The JSON Schema xg compiles for `T`: schemars' schema, tightened as the
/// [module](self) docs say.
pub fn schema_for<T: JsonSchema>() -> Value {
    let mut schema = schemars::SchemaGenerator::default()
        .into_root_schema_for::<T>()
        .to_value();
    tighten(&mut schema);
    schema
}

fn compile(schema: &Value, layout: Layout, type_name: &'static str) -> Result<Grammar, TypedError> {
    let options = Options {
        whitespace: match layout {
            Layout::Compact => Whitespace::Compact,
            Layout::Spaced(max) => Whitespace::Flexible { max: Some(max) },
        },
        strict: false,
        property_order: PropertyOrder::Given,
        additional_properties: false,
        plain_integers: true,
        ..Options::default()
    };
    let limits = Limits {
        time: None,
        ..Limits::default()
    };
    let mut request = Request::new(&limits, &CompileCache::default());
    let file = request.add(format!("{type_name}.schema.json"), schema.to_string());
    let grammar = pipeline::json_schema(&mut request, schema, file, &options);
    grammar.ok_or_else(|| TypedError::Compile {
        type_name,
        diagnostics: request.diagnostics.render(&request.sources, false),
    })
}

/// Adds to every subschema of `schema` the bounds serde needs: integer
/// ranges by `format`, finite floats.
fn tighten(schema: &mut Value) {
    let mut open = vec![schema];
    while let Some(value) = open.pop() {
        match value {
            Value::Object(object) => {
                bound_number(object);
                open.extend(object.values_mut());
            }
            Value::Array(items) => open.extend(items.iter_mut()),
            _ => {}
        }
    }
}

/// The range of the number a schemars `format` names, as JSON numbers.
fn format_range(format: &str) -> Option<(Value, Value)> {
    let signed = |min: i64, max: i64| (Value::from(min), Value::from(max));
    let unsigned = |max: u64| (Value::from(0), Value::from(max));
    Some(match format {
        "int8" => signed(i8::MIN.into(), i8::MAX.into()),
        "int16" => signed(i16::MIN.into(), i16::MAX.into()),
        "int32" => signed(i32::MIN.into(), i32::MAX.into()),
        "int64" => signed(i64::MIN, i64::MAX),
        "int" => signed(
            i64::try_from(isize::MIN).ok()?,
            i64::try_from(isize::MAX).ok()?,
        ),
        "uint8" => unsigned(u8::MAX.into()),
        "uint16" => unsigned(u16::MAX.into()),
        "uint32" => unsigned(u32::MAX.into()),
        "uint64" => unsigned(u64::MAX),
        "uint" => unsigned(u64::try_from(usize::MAX).ok()?),
        // Past 64 bits, a round bound just inside the type's range (the
        // compiler's exact bounds stay below 10^38).
        "int128" => (Value::from(-1.7e38), Value::from(1.7e38)),
        "uint128" => (Value::from(0), Value::from(3.4e38)),
        "float" => (
            Value::from(-f64::from(f32::MAX)),
            Value::from(f64::from(f32::MAX)),
        ),
        "double" => (Value::from(-1e38), Value::from(1e38)),
        _ => return None,
    })
}

/// Bounds a number schema by its format, keeping tighter bounds it has.
fn bound_number(object: &mut Map<String, Value>) {
    let Some((min, max)) = object
        .get("format")
        .and_then(Value::as_str)
        .and_then(format_range)
    else {
        return;
    };
    let tighter = |given: Option<&Value>, bound: &Value, lower: bool| match given
        .and_then(Value::as_f64)
        .zip(bound.as_f64())
    {
        Some((given, bound)) if (given >= bound) == lower => None,
        _ => Some(bound.clone()),
    };
    if let Some(min) = tighter(object.get("minimum"), &min, true) {
        object.insert("minimum".into(), min);
    }
    if let Some(max) = tighter(object.get("maximum"), &max, false) {
        object.insert("maximum".into(), max);
    }
}

/// A [`Matcher`] for the JSON of `T` that keeps the output and reads it
/// back as a `T`.
///
/// The grammar is [`for_type::<T>`](for_type)'s; every output it accepts
/// deserializes, so [`TypedMatcher::finish`] fails only on an incomplete
/// output.
pub struct TypedMatcher<T> {
    matcher: Matcher,
    vocabulary: Arc<Vocabulary>,
    /// The output's bytes, and per step where its bytes start.
    output: Vec<u8>,
    step_starts: Vec<usize>,
    _type: PhantomData<fn() -> T>,
}

impl<T: JsonSchema + DeserializeOwned + 'static> TypedMatcher<T> {
    /// A matcher at the start of `T`'s JSON in `layout`, masking over
    /// `vocabulary`.
    pub fn new(vocabulary: Arc<Vocabulary>, layout: Layout) -> Result<Self, TypedError> {
        let grammar = for_type::<T>(layout)?;
        Ok(Self {
            matcher: Matcher::with_vocabulary(grammar, Arc::clone(&vocabulary)),
            vocabulary,
            output: Vec::new(),
            step_starts: Vec::new(),
            _type: PhantomData,
        })
    }

    /// Writes the mask of the tokens allowed next (see
    /// [`Matcher::fill_next_token_bitmask`]).
    pub fn fill_next_token_bitmask(&mut self, mask: &mut [u32]) -> Result<(), MaskError> {
        self.matcher.fill_next_token_bitmask(mask)
    }

    /// Accepts one token of the model, or rejects it and changes nothing.
    pub fn accept_token(&mut self, token: TokenId) -> Result<(), Rejection> {
        self.matcher.accept_token(token)?;
        self.step_starts.push(self.output.len());
        if !self.matcher.is_terminated() {
            self.output.extend_from_slice(self.vocabulary.bytes(token));
        }
        Ok(())
    }

    /// Undoes the last `steps` tokens.
    pub fn rollback(&mut self, steps: usize) -> Result<(), RollbackError> {
        self.matcher.rollback(steps)?;
        let kept = self.step_starts.len() - steps;
        if let Some(&start) = self.step_starts.get(kept) {
            self.output.truncate(start);
        }
        self.step_starts.truncate(kept);
        Ok(())
    }

    /// Whether the output is a complete value (the model may stop here) or
    /// has ended.
    pub fn is_complete(&self) -> bool {
        self.matcher.is_terminated() || self.matcher.can_terminate()
    }

    /// The output so far, as the model wrote it.
    pub fn output(&self) -> &[u8] {
        &self.output
    }

    /// The matcher underneath, for its statistics and what it expects.
    pub fn matcher(&self) -> &Matcher {
        &self.matcher
    }

    /// The output as a `T`, once it is complete.
    pub fn finish(self) -> Result<T, TypedError> {
        if !self.is_complete() {
            return Err(TypedError::Incomplete {
                output: String::from_utf8_lossy(&self.output).into_owned(),
            });
        }
        serde_json::from_slice(&self.output).map_err(TypedError::Deserialize)
    }
}

/// `Grammar::for_type::<T>()`: the grammar of a Rust type's JSON (see
/// [`for_type`]), compact.
pub trait GrammarForType {
    /// The grammar of `T`'s JSON, as `serde_json::to_string` lays it out.
    fn for_type<T: JsonSchema + 'static>() -> Result<Arc<Grammar>, TypedError>;
}

impl GrammarForType for Grammar {
    fn for_type<T: JsonSchema + 'static>() -> Result<Arc<Grammar>, TypedError> {
        for_type::<T>(Layout::Compact)
    }
}
