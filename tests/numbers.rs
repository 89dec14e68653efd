//! JSON Schema numbers against an exact reference: every spelling
//! serializers write — plain decimals, trailing zeros, `-0`, exponents
//! after a one-digit mantissa (`1e-06`, `1.5E+20`) — is accepted exactly
//! when its value is within the bounds (and an integer where one is
//! required: `1.0` is one from draft 6 on, and a multiple of 1 in every
//! draft), compared as exact decimals, never as floats.

mod common;

use std::cmp::Ordering;
use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{Value, json};
use xg_compiler::json_schema::Options;
use xg_compiler::{CompileCache, Limits, Request, pipeline};
use xg_runtime::{Grammar, Matcher};

fn len(n: usize) -> i64 {
    i64::try_from(n).expect("short")
}

/// An exact decimal: `0.D × 10^point` for significant digits `D` (no
/// leading or trailing zeros; none for zero).
#[derive(Clone, Debug)]
struct Exact {
    negative: bool,
    digits: Vec<u8>,
    point: i64,
}

impl Exact {
    /// The value of a JSON number's text.
    fn parse(text: &str) -> Exact {
        let (negative, text) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (mantissa, exponent) = match text.find(['e', 'E']) {
            Some(at) => (&text[..at], text[at + 1..].parse::<i64>().unwrap()),
            None => (text, 0),
        };
        let (integer, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let all: Vec<u8> = integer
            .bytes()
            .chain(fraction.bytes())
            .map(|b| b - b'0')
            .collect();
        let Some(first) = all.iter().position(|&d| d != 0) else {
            return Exact {
                negative: false,
                digits: Vec::new(),
                point: 0,
            };
        };
        let last = all.iter().rposition(|&d| d != 0).unwrap();
        Exact {
            negative,
            digits: all[first..=last].to_vec(),
            point: len(integer.len()) - len(first) + exponent,
        }
    }

    fn is_integer(&self) -> bool {
        len(self.digits.len()) <= self.point || self.digits.is_empty()
    }

    fn cmp_magnitude(&self, other: &Exact) -> Ordering {
        match (self.digits.is_empty(), other.digits.is_empty()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (false, false) => self
                .point
                .cmp(&other.point)
                .then_with(|| self.digits.cmp(&other.digits)),
        }
    }

    fn cmp(&self, other: &Exact) -> Ordering {
        let sign = |e: &Exact| {
            if e.digits.is_empty() {
                0
            } else if e.negative {
                -1
            } else {
                1
            }
        };
        match sign(self).cmp(&sign(other)) {
            Ordering::Equal if sign(self) < 0 => other.cmp_magnitude(self),
            Ordering::Equal => self.cmp_magnitude(other),
            unequal => unequal,
        }
    }
}

/// A value `d1.d2d3… × 10^exponent` (digits with a non-zero first one, or
/// zero) written in one of the spellings serializers use.
#[derive(Clone, Debug)]
struct Spelled {
    text: String,
    /// A mantissa of one digit before the point and an exponent.
    exponent_form: bool,
}

fn spell(
    negative: bool,
    digits: &[u8],
    exponent: i64,
    exponent_form: bool,
    extra_zeros: usize,
    upper_e: bool,
    exponent_sign: u8,
) -> Spelled {
    let text_of = |ds: &[u8]| ds.iter().map(|d| char::from(b'0' + d)).collect::<String>();
    let mut text = String::from(if negative { "-" } else { "" });
    if exponent_form {
        text += &text_of(&digits[..1]);
        if digits.len() > 1 || extra_zeros > 0 {
            text += ".";
            text += &text_of(&digits[1..]);
            text += &"0".repeat(extra_zeros);
        }
        text.push(if upper_e { 'E' } else { 'e' });
        match (exponent_sign, exponent < 0) {
            (_, true) => text.push('-'),
            (1, false) => text.push('+'),
            _ => {}
        }
        if exponent_sign == 2 {
            text.push('0');
        }
        text += &exponent.unsigned_abs().to_string();
    } else if exponent >= 0 {
        let width = usize::try_from(exponent).unwrap() + 1;
        let mut integer = digits[..digits.len().min(width)].to_vec();
        integer.resize(width, 0);
        text += &text_of(&integer);
        let fraction = &digits[digits.len().min(width)..];
        if !fraction.is_empty() || extra_zeros > 0 {
            text += ".";
            text += &text_of(fraction);
            text += &"0".repeat(extra_zeros);
        }
    } else {
        text += "0.";
        text += &"0".repeat(usize::try_from(-exponent - 1).unwrap());
        text += &text_of(digits);
        text += &"0".repeat(extra_zeros);
    }
    Spelled {
        text,
        exponent_form,
    }
}

/// A value and one of its spellings: one to four significant digits, an
/// exponent from -7 to 7, or zero.
fn spelled() -> impl Strategy<Value = Spelled> {
    (
        any::<bool>(),
        prop::collection::vec(0..10u8, 1..4),
        1..10u8,
        -7..8i64,
        any::<bool>(),
        0..3usize,
        any::<bool>(),
        0..3u8,
        0..12u8,
    )
        .prop_map(
            |(negative, rest, first, exponent, exponent_form, extra_zeros, upper_e, sign, zero)| {
                if zero == 0 {
                    let text = if negative { "-0" } else { "0" };
                    let zeros = if extra_zeros > 0 {
                        format!(".{}", "0".repeat(extra_zeros))
                    } else {
                        String::new()
                    };
                    return Spelled {
                        text: format!("{text}{zeros}"),
                        exponent_form: false,
                    };
                }
                let mut digits = vec![first];
                digits.extend(rest);
                while digits.len() > 1 && digits.last() == Some(&0) {
                    digits.pop();
                }
                spell(
                    negative,
                    &digits,
                    exponent,
                    exponent_form,
                    extra_zeros,
                    upper_e,
                    sign,
                )
            },
        )
}

/// The kinds of number schema checked.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Number,
    Integer,
    /// `"type": "number", "multipleOf": 1`.
    WholeNumber,
    /// `"type": "integer"` under draft 4, where `1.0` is not an integer.
    Draft4Integer,
}

/// The grammar of `schema`, or its errors.
fn compile(schema: &Value, cache: &CompileCache) -> Result<Arc<Grammar>, String> {
    let mut request = Request::new(&Limits::unlimited(), cache);
    let file = request.add("schema.json", schema.to_string());
    let grammar = pipeline::json_schema(&mut request, schema, file, &Options::default());
    grammar
        .map(Arc::new)
        .ok_or_else(|| request.diagnostics.render(&request.sources, false))
}

fn accepts(grammar: &Arc<Grammar>, text: &str) -> bool {
    let mut matcher = Matcher::new(Arc::clone(grammar));
    matcher.accept_str(text).is_ok() && matcher.can_terminate()
}

/// Bounds as the schema holds them: an `f64` parsed from the spelling,
/// printed back the way serde_json prints it.
fn bound(spelled: &Spelled) -> Option<Value> {
    let value: f64 = spelled.text.parse().ok()?;
    serde_json::Number::from_f64(value).map(Value::Number)
}

proptest! {
    #![proptest_config(common::cases(300))]

    #[test]
    fn numbers_in_every_spelling_are_accepted_exactly_within_bounds(
        kind in prop::sample::select(&[Kind::Number, Kind::Integer, Kind::WholeNumber, Kind::Draft4Integer][..]),
        lower in prop::option::of((spelled(), any::<bool>())),
        upper in prop::option::of((spelled(), any::<bool>())),
        instances in prop::collection::vec(spelled(), 1..24),
    ) {
        let mut schema = match kind {
            Kind::Number => json!({"type": "number"}),
            Kind::Integer => json!({"type": "integer"}),
            Kind::WholeNumber => json!({"type": "number", "multipleOf": 1}),
            Kind::Draft4Integer => {
                json!({"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"})
            }
        };
        let mut bounds: Vec<(Exact, bool, bool)> = Vec::new();
        for (side, is_lower) in [(&lower, true), (&upper, false)] {
            let Some((spelled, exclusive)) = side else { continue };
            let Some(value) = bound(spelled) else { continue };
            let keyword = match (is_lower, exclusive) {
                (true, false) => "minimum",
                (true, true) => "exclusiveMinimum",
                (false, false) => "maximum",
                (false, true) => "exclusiveMaximum",
            };
            bounds.push((Exact::parse(&value.to_string()), is_lower, *exclusive));
            schema[keyword] = value;
        }
        let bounded = !bounds.is_empty();
        let grammar = match compile(&schema, &CompileCache::default()) {
            Ok(grammar) => grammar,
            Err(error) => {
                // Only bounds that leave nothing may be refused; for
                // numbers, bounds that cross or meet where one excludes.
                prop_assert!(error.contains("accepts no value"), "{}", error);
                if let (Kind::Number, [(lo, true, lo_x), (hi, false, hi_x)]) = (kind, &bounds[..]) {
                    let order = lo.cmp(hi);
                    prop_assert!(order == Ordering::Greater || (order == Ordering::Equal && (*lo_x || *hi_x)), "{}", error);
                }
                return Ok(());
            }
        };
        for instance in &instances {
            let value = Exact::parse(&instance.text);
            let within = bounds.iter().all(|(bound, is_lower, exclusive)| {
                match (value.cmp(bound), is_lower, exclusive) {
                    (Ordering::Equal, _, exclusive) => !exclusive,
                    (Ordering::Greater, true, _) | (Ordering::Less, false, _) => true,
                    _ => false,
                }
            });
            let expected = match kind {
                // Integers: plain digits, a fraction of zeros allowed.
                Kind::Integer | Kind::WholeNumber => {
                    within && value.is_integer() && !instance.exponent_form
                }
                Kind::Draft4Integer => {
                    within && !instance.exponent_form && !instance.text.contains('.')
                }
                // Unbounded numbers take every JSON spelling; bounded ones
                // the exponent after a one-digit mantissa, as generated.
                Kind::Number => within || (!bounded),
            };
            prop_assert_eq!(
                accepts(&grammar, &instance.text),
                expected,
                "{} against {}",
                instance.text,
                schema
            );
        }
    }
}

#[test]
fn the_reference_compares_exactly() {
    let less = |a: &str, b: &str| Exact::parse(a).cmp(&Exact::parse(b)) == Ordering::Less;
    assert!(less("1e-06", "0.0000011"));
    assert!(less("-2.5e2", "-249"));
    assert!(less("99.99", "1e2"));
    assert_eq!(
        Exact::parse("-0.0").cmp(&Exact::parse("0")),
        Ordering::Equal
    );
    assert_eq!(
        Exact::parse("6000.0").cmp(&Exact::parse("6e3")),
        Ordering::Equal
    );
    assert!(Exact::parse("6000.0").is_integer());
    assert!(!Exact::parse("6000.5").is_integer());
}

/// A bound of 10^38 or beyond (generated schemas bound doubles by
/// `±1.7976931348623157e308`) compiles, reported as approximated: numbers
/// are still numbers, the bound is not enforced.
#[test]
fn bounds_past_ten_to_the_38_are_approximated_not_refused() {
    let schema = json!({"type": "number", "minimum": f64::MIN, "maximum": 1e300});
    let grammar = compile(&schema, &CompileCache::default()).unwrap();
    for text in ["0", "-1.5e300", "1e301", "12.5"] {
        assert!(accepts(&grammar, text), "{text}");
    }
    assert!(!accepts(&grammar, "\"1\""));
    let budget = xg_compiler::Budget::new(Limits::unlimited());
    let report = xg_compiler::json_schema::generate(&schema, &Options::default(), &budget)
        .unwrap()
        .report;
    let approximated: Vec<&str> = report
        .notes
        .iter()
        .filter(|note| note.treatment == xg_compiler::json_schema::Treatment::Approximated)
        .map(|note| note.keyword.as_str())
        .collect();
    assert_eq!(approximated, ["minimum", "maximum"]);
}

/// `Options::plain_integers` (what serde reads as an integer): no fraction
/// of zeros and no `-0`, bounded or not; JSON Schema's integers take both.
#[test]
fn plain_integers_are_digits_only() {
    let plain = Options {
        plain_integers: true,
        ..Options::default()
    };
    for schema in [
        json!({"type": "integer"}),
        json!({"type": "integer", "minimum": -5, "maximum": 300}),
    ] {
        let mut request = Request::new(&Limits::unlimited(), &CompileCache::default());
        let file = request.add("schema.json", schema.to_string());
        let grammar = pipeline::json_schema(&mut request, &schema, file, &plain)
            .map(Arc::new)
            .unwrap();
        for (text, plain_accepts) in [
            ("0", true),
            ("-5", true),
            ("255", true),
            ("2.0", false),
            ("-0", false),
            ("1e2", false),
        ] {
            assert_eq!(
                accepts(&grammar, text),
                plain_accepts,
                "{schema} {text} (plain)"
            );
        }
        let default = compile(&schema, &CompileCache::default()).unwrap();
        for text in ["2.0", "-0"] {
            assert!(
                accepts(&default, text),
                "{schema} {text} (JSON Schema's integers)"
            );
        }
    }
}

/// The grammar of a schema given as text: bounds are read as the text
/// writes them, not as the nearest double, and schemas that differ only in
/// digits a double drops are cached apart.
fn compile_text(text: &str, cache: &CompileCache) -> Arc<Grammar> {
    let schema: Value = serde_json::from_str(text).unwrap();
    let mut request = Request::new(&Limits::default(), cache);
    let file = request.add("schema.json", text);
    let grammar = pipeline::json_schema(&mut request, &schema, file, &Options::default());
    Arc::new(
        grammar
            .unwrap_or_else(|| panic!("{}", request.diagnostics.render(&request.sources, false))),
    )
}

/// Bounds with more digits than a double holds (issue 40, item 6): the
/// schema's own digits decide, in every bound keyword.
#[test]
fn bounds_are_the_digits_the_schema_writes() {
    let cache = CompileCache::default();
    for (schema, accepted, refused) in [
        (
            r#"{"type": "integer", "maximum": 99999999999999999999}"#,
            &["99999999999999999999", "-5"][..],
            &["100000000000000000000"][..],
        ),
        (
            r#"{"type": "number", "exclusiveMaximum": 0.10000000000000001}"#,
            &["0.1", "0.10000000000000000999", "1e-1"][..],
            &["0.10000000000000001", "0.2"][..],
        ),
        (
            r#"{"type": "number", "minimum": 0.30000000000000001}"#,
            &["0.30000000000000001", "0.31"][..],
            &["0.3", "0.30000000000000000999"][..],
        ),
        (
            r#"{"type": "integer", "minimum": -99999999999999999999, "exclusiveMinimum": -99999999999999999998}"#,
            &["-99999999999999999997", "0"][..],
            &["-99999999999999999998", "-99999999999999999999"][..],
        ),
    ] {
        let grammar = compile_text(schema, &cache);
        for text in accepted {
            assert!(accepts(&grammar, text), "{schema} should accept {text}");
        }
        for text in refused {
            assert!(!accepts(&grammar, text), "{schema} should refuse {text}");
        }
    }
    // The printed form of the first schema (`1e20`) is another schema.
    let printed = compile_text(r#"{"type": "integer", "maximum": 1e20}"#, &cache);
    assert!(accepts(&printed, "100000000000000000000"));
}
