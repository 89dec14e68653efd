//! Typed outputs (`xg::typed`): grammars from Rust types through schemars,
//! outputs read back with serde.
//!
//! The property: every output the grammar accepts deserializes into the
//! type. Checked by random walks on the Llama 3.1 vocabulary (each step a
//! token the mask allows, leaning towards tokens that close strings and
//! containers so that walks end), for every type of the zoo below in the
//! compact layout and for two of them with whitespace; and exact bounds
//! checked text by text.

#![allow(dead_code)] // the zoo's fields are read by serde, not by the tests

#[allow(unused)]
mod common;

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::num::NonZeroU32;
use std::sync::{Arc, OnceLock};

use common::{REAL_TOKENIZERS, Rng, real_tokenizer};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use xg::typed::{self, Layout, TypedError};
use xg::{Grammar, GrammarForType, Matcher, TokenId, TypedMatcher, Vocabulary};

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Weather {
    city_name: String,
    temperature_c: f32,
    humidity: u8,
    conditions: Vec<Condition>,
    wind: Option<Wind>,
    #[serde(default)]
    alerts: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    #[serde(flatten)]
    station: Station,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Station {
    station_id: u64,
    elevation_m: i16,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Wind {
    speed: f64,
    direction: Compass,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
enum Compass {
    N,
    E,
    S,
    W,
}

/// Externally tagged (serde's default): unit, struct, newtype and tuple
/// variants.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
enum Condition {
    Sunny,
    Rain { mm: f32 },
    Snow(u32),
    Gusts(f64, f64),
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Internal {
    Point { x: i8, y: i8 },
    Origin,
    Named(Station),
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(tag = "t", content = "c")]
enum Adjacent {
    Count(i16),
    Flag { on: bool },
    Nothing,
    Pair(u8, char),
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
enum Untagged {
    Number(i32),
    Object { label: String },
    List(Vec<bool>),
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Integers {
    a: u8,
    b: i8,
    c: u16,
    d: i16,
    e: u32,
    f: i32,
    g: u64,
    h: i64,
    i: usize,
    j: isize,
    k: NonZeroU32,
    l: u128,
    m: i128,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Shapes {
    pair: (f64, String),
    fixed: [u16; 3],
    map: BTreeMap<String, i64>,
    letter: char,
    flag: bool,
    unit: Unit,
    meters: Meters,
    point: Point,
    maybe: Option<u8>,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Unit;

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Meters(f64);

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Point(i32, i32);

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Tree {
    value: i32,
    children: Vec<Tree>,
    next: Option<Box<Tree>>,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Defaults {
    #[serde(default)]
    count: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tags: Vec<String>,
    #[serde(rename = "type")]
    kind: String,
}

/// The Llama 3.1 vocabulary, with its end-of-text token as stop token.
fn vocabulary() -> Arc<Vocabulary> {
    static VOCABULARY: OnceLock<Arc<Vocabulary>> = OnceLock::new();
    Arc::clone(VOCABULARY.get_or_init(|| {
        let (json, config) = real_tokenizer(&REAL_TOKENIZERS[0]);
        Arc::new(Vocabulary::from_tokenizer_json(&json, Some(&config)).unwrap())
    }))
}

fn allowed(mask: &[u32]) -> Vec<TokenId> {
    let mut ids = Vec::new();
    for (word, &bits) in mask.iter().enumerate() {
        let mut bits = bits;
        while bits != 0 {
            let bit = bits.trailing_zeros() as usize;
            ids.push(TokenId::new(word * 32 + bit).unwrap());
            bits &= bits - 1;
        }
    }
    ids
}

/// Random walks through `T`'s grammar in `layout`: how many ended with a
/// complete output; each of those must deserialize. Every token taken is one the
/// mask allowed, and must be accepted.
fn walks<T: JsonSchema + DeserializeOwned + Debug + 'static>(
    layout: Layout,
    count: u64,
    max_steps: usize,
) -> usize {
    let vocabulary = vocabulary();
    let closers: Vec<bool> = (0..vocabulary.len())
        .map(|id| {
            let bytes = vocabulary.bytes(TokenId::new(id).unwrap());
            bytes.len() <= 3 && bytes.iter().any(|b| b"\"]},".contains(b))
        })
        .collect();
    let mut mask = vec![0u32; vocabulary.mask_words()];
    let mut finished = 0;
    for seed in 0..count {
        let mut rng = Rng::new(seed * 7919 + 17);
        let mut matcher = TypedMatcher::<T>::new(Arc::clone(&vocabulary), layout).unwrap();
        for _ in 0..max_steps {
            matcher.fill_next_token_bitmask(&mut mask).unwrap();
            let ids = allowed(&mask);
            assert!(!ids.is_empty() || matcher.is_complete(), "a dead end");
            if matcher.is_complete() && rng.below(3) == 0 || ids.is_empty() {
                break;
            }
            let closing: Vec<TokenId> = ids
                .iter()
                .copied()
                .filter(|id| closers[id.as_usize()])
                .collect();
            let pool = if !closing.is_empty() && rng.below(2) == 0 {
                &closing
            } else {
                &ids
            };
            let token = pool[rng.below(pool.len())];
            matcher
                .accept_token(token)
                .unwrap_or_else(|e| panic!("token {token:?} was in the mask but refused: {e}"));
            if matcher.matcher().is_terminated() {
                break;
            }
        }
        if matcher.is_complete() {
            let output = String::from_utf8_lossy(matcher.output()).into_owned();
            if let Err(error) = matcher.finish() {
                panic!(
                    "{}: {output:?} does not deserialize: {error}",
                    std::any::type_name::<T>()
                );
            }
            finished += 1;
        }
    }
    finished
}

#[test]
fn every_output_the_grammar_accepts_deserializes_in_random_walks() {
    let runs = [
        ("Weather", walks::<Weather>(Layout::Compact, 24, 160)),
        ("Condition", walks::<Condition>(Layout::Compact, 24, 60)),
        ("Internal", walks::<Internal>(Layout::Compact, 24, 60)),
        ("Adjacent", walks::<Adjacent>(Layout::Compact, 24, 60)),
        ("Untagged", walks::<Untagged>(Layout::Compact, 24, 60)),
        ("Integers", walks::<Integers>(Layout::Compact, 24, 200)),
        ("Shapes", walks::<Shapes>(Layout::Compact, 24, 160)),
        ("Tree", walks::<Tree>(Layout::Compact, 24, 120)),
        ("Defaults", walks::<Defaults>(Layout::Compact, 24, 60)),
        ("Vec<Meters>", walks::<Vec<Meters>>(Layout::Compact, 24, 60)),
        // Whitespace between tokens: serde_json reads any.
        (
            "Weather, spaced",
            walks::<Weather>(Layout::Spaced(3), 24, 200),
        ),
        (
            "Shapes, spaced",
            walks::<Shapes>(Layout::Spaced(3), 24, 200),
        ),
    ];
    // Walks that run out of steps are not outputs; most must finish for
    // the property to say something.
    for (name, finished) in runs {
        assert!(
            finished >= 16,
            "only {finished} of 24 walks through {name} finished"
        );
    }
}

/// Whether `T`'s grammar accepts `text` whole.
fn accepts<T: JsonSchema + 'static>(text: &str) -> bool {
    let mut matcher = Matcher::new(Grammar::for_type::<T>().unwrap());
    matcher.accept_str(text).is_ok() && matcher.can_terminate()
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Bytes {
    v: u8,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Wide {
    s: i64,
    u: u64,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Floats {
    single: f32,
    double: f64,
}

#[test]
fn integers_take_exactly_their_rust_range_in_digits() {
    assert!(accepts::<Bytes>(r#"{"v":0}"#));
    assert!(accepts::<Bytes>(r#"{"v":255}"#));
    assert!(!accepts::<Bytes>(r#"{"v":256}"#));
    assert!(!accepts::<Bytes>(r#"{"v":-1}"#));
    // serde reads `1.0` and `1e2` as floats: not a u8.
    assert!(!accepts::<Bytes>(r#"{"v":1.0}"#));
    assert!(!accepts::<Bytes>(r#"{"v":1e2}"#));
    assert!(
        !accepts::<Bytes>(r#"{"v":-0}"#),
        "serde reads -0 as a float"
    );
    assert!(accepts::<Wide>(
        r#"{"s":-9223372036854775808,"u":18446744073709551615}"#
    ));
    assert!(!accepts::<Wide>(r#"{"s":9223372036854775808,"u":0}"#));
    assert!(!accepts::<Wide>(r#"{"s":0,"u":18446744073709551616}"#));
    assert!(!accepts::<Wide>(r#"{"s":-9223372036854775809,"u":0}"#));
}

#[test]
fn floats_are_finite() {
    assert!(accepts::<Floats>(r#"{"single":-1.5e38,"double":1e38}"#));
    assert!(accepts::<Floats>(
        r#"{"single":3.4028234e38,"double":-99999999999999999999999999999999999999}"#
    ));
    assert!(accepts::<Floats>(r#"{"single":3,"double":-5E-301}"#));
    assert!(accepts::<Floats>(r#"{"single":-0,"double":-0.0}"#));
    assert!(!accepts::<Floats>(r#"{"single":3.5e38,"double":0}"#));
    assert!(!accepts::<Floats>(r#"{"single":0,"double":1e309}"#));
    assert!(!accepts::<Floats>(r#"{"single":0,"double":-2e308}"#));
    assert!(!accepts::<Floats>(
        r#"{"single":0,"double":1.0000000000000001e38}"#
    ));
}

#[test]
fn what_serde_writes_the_grammar_accepts() {
    let tree = Tree {
        value: -3,
        children: vec![Tree {
            value: 1,
            children: vec![],
            next: None,
        }],
        next: Some(Box::new(Tree {
            value: 2,
            children: vec![],
            next: None,
        })),
    };
    let internal = [Internal::Point { x: -1, y: 2 }, Internal::Origin];
    let adjacent = [
        Adjacent::Count(-7),
        Adjacent::Flag { on: true },
        Adjacent::Nothing,
        Adjacent::Pair(9, 'é'),
    ];
    let conditions = [
        Condition::Sunny,
        Condition::Rain { mm: 0.5 },
        Condition::Snow(3),
        Condition::Gusts(1.0, 2.5),
    ];
    let untagged = [
        Untagged::Number(-4),
        Untagged::Object {
            label: "a \"b\"\n".into(),
        },
        Untagged::List(vec![true, false]),
    ];
    let shapes = Shapes {
        pair: (1e-7, "x".into()),
        fixed: [1, 2, 65535],
        map: BTreeMap::from([("k".into(), i64::MIN), (String::new(), 0)]),
        letter: '\n',
        flag: false,
        unit: Unit,
        meters: Meters(-0.0),
        point: Point(1, -2),
        maybe: None,
    };
    let defaults = Defaults {
        count: 0,
        tags: vec![],
        kind: "t".into(),
    };
    let mut texts = vec![written(&tree), written(&shapes), written(&defaults)];
    texts.extend(internal.iter().map(written));
    texts.extend(adjacent.iter().map(written));
    texts.extend(conditions.iter().map(written));
    texts.extend(untagged.iter().map(written));
    let refused: Vec<&String> = texts.iter().filter(|(_, ok)| !ok).map(|(t, _)| t).collect();
    assert!(
        refused.is_empty(),
        "serde's own output refused: {refused:?}"
    );
}

/// `value` as serde writes it, and whether its type's grammar accepts that.
fn written<T: Serialize + JsonSchema + 'static>(value: &T) -> (String, bool) {
    let text = serde_json::to_string(value).unwrap();
    let accepted = accepts::<T>(&text);
    (text, accepted)
}

#[test]
fn a_typed_matcher_reads_the_output_back_and_rolls_back() {
    let stop = TokenId::new(7).unwrap();
    let vocabulary = Arc::new(
        Vocabulary::from_byte_strings(&["{\"", "v", "\":", "2", "5", "6", "}", "</s>"], &[stop])
            .and_then(|v| v.with_stop_tokens(&[stop]))
            .unwrap(),
    );
    let id = |i: usize| TokenId::new(i).unwrap();
    let unfinished = TypedMatcher::<Bytes>::new(Arc::clone(&vocabulary), Layout::Compact).unwrap();
    assert!(matches!(
        unfinished.finish(),
        Err(TypedError::Incomplete { .. })
    ));

    let mut matcher = TypedMatcher::<Bytes>::new(vocabulary, Layout::Compact).unwrap();
    for i in [0, 1, 2, 3, 4] {
        matcher.accept_token(id(i)).unwrap();
    }
    assert!(matcher.accept_token(id(5)).is_err(), "256 is not a u8");
    assert_eq!(matcher.output(), b"{\"v\":25");
    matcher.rollback(1).unwrap();
    matcher.accept_token(id(5)).unwrap();
    assert_eq!(matcher.output(), b"{\"v\":26");
    matcher.accept_token(id(6)).unwrap();
    matcher.accept_token(stop).unwrap();
    assert_eq!(matcher.finish().unwrap().v, 26);
}

#[test]
fn a_type_is_compiled_once_per_layout() {
    let first = typed::for_type::<Weather>(Layout::Compact).unwrap();
    let again = Grammar::for_type::<Weather>().unwrap();
    assert!(Arc::ptr_eq(&first, &again));
    let spaced = typed::for_type::<Weather>(Layout::Spaced(4)).unwrap();
    assert!(!Arc::ptr_eq(&first, &spaced));
    let mut matcher = Matcher::new(spaced);
    assert!(matcher.accept_str("{ \"cityName\" :\n\"Oslo\"").is_ok());
}
