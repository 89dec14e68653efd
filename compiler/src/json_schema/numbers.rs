//! Numbers: integers in exact digit-level ranges, and decimal numbers with
//! bounds.
//!
//! Numbers are accepted in the spellings serializers write, with exact
//! bounds (decimal digit comparison, no floating point):
//!
//! - an integer in plain digits, with a fraction of zeros or not (`-12`,
//!   `6000.0`: JSON Schema counts `6000.0` a multiple of 1, and from
//!   draft 6 on an integer); `-0` is zero;
//! - a number without bounds as JSON allows it;
//! - a bounded number as a plain decimal (`0.000001`, `-0.5`, `2.50`), or
//!   with an exponent after a mantissa of one non-zero digit and a
//!   fraction (`1e-06`, `1.5E+20`, `2.0e5`), the forms Python, JavaScript,
//!   Java, Go and Rust print. A mantissa such as `12e3` or `0.5e1` is not
//!   taken: its value depends on digits far from the bound.

use super::grammar::G;

fn digit(lo: u8, hi: u8) -> G {
    G::class([(char::from(b'0' + lo), char::from(b'0' + hi))])
}

fn digits(n: u32) -> G {
    G::rep(digit(0, 9), n, Some(n))
}

/// Digit strings of `lo.len()` digits between `lo` and `hi` inclusive
/// (equal lengths, `lo <= hi`), leading zeros allowed.
fn same_length(lo: &[u8], hi: &[u8]) -> G {
    debug_assert_eq!(lo.len(), hi.len());
    let Some((&l, lo_rest)) = lo.split_first() else {
        return G::Empty;
    };
    let (&h, hi_rest) = hi.split_first().expect("same length");
    if l == h {
        return G::seq([digit(l, l), same_length(lo_rest, hi_rest)]);
    }
    let rest = u32::try_from(lo_rest.len()).expect("short");
    let all_zero = lo_rest.iter().all(|&d| d == 0);
    let all_nine = hi_rest.iter().all(|&d| d == 9);
    let mut out = Vec::new();
    let low_first = if all_zero { l } else { l + 1 };
    let high_last = if all_nine { h } else { h - 1 };
    if !all_zero {
        out.push(G::seq([
            digit(l, l),
            same_length(lo_rest, &vec![9; lo_rest.len()]),
        ]));
    }
    if low_first <= high_last {
        out.push(G::seq([digit(low_first, high_last), digits(rest)]));
    }
    if !all_nine {
        out.push(G::seq([
            digit(h, h),
            same_length(&vec![0; hi_rest.len()], hi_rest),
        ]));
    }
    G::alt(out)
}

fn decimal_digits(n: u128) -> Vec<u8> {
    n.to_string().bytes().map(|b| b - b'0').collect()
}

/// Magnitudes (no sign, no leading zeros) in `lo ..= hi` (`None`: no upper
/// bound).
pub(crate) fn magnitudes(lo: u128, hi: Option<u128>) -> G {
    if hi.is_some_and(|hi| hi < lo) {
        return G::Nothing;
    }
    let lo_digits = decimal_digits(lo);
    let lo_len = lo_digits.len();
    let mut out = Vec::new();
    let top = |len: usize| vec![9u8; len];
    let bottom = |len: usize| {
        let mut d = vec![0u8; len];
        d[0] = 1;
        d
    };
    match hi {
        Some(hi) => {
            let hi_digits = decimal_digits(hi);
            let hi_len = hi_digits.len();
            if lo_len == hi_len {
                out.push(same_length(&lo_digits, &hi_digits));
            } else {
                out.push(same_length(&lo_digits, &top(lo_len)));
                if hi_len > lo_len + 1 {
                    let middle_min = u32::try_from(lo_len).expect("short");
                    let middle_max = u32::try_from(hi_len - 2).expect("short");
                    out.push(G::seq([
                        digit(1, 9),
                        G::rep(digit(0, 9), middle_min, Some(middle_max)),
                    ]));
                }
                out.push(same_length(&bottom(hi_len), &hi_digits));
            }
        }
        None => {
            out.push(same_length(&lo_digits, &top(lo_len)));
            let longer = u32::try_from(lo_len).expect("short");
            out.push(G::seq([digit(1, 9), G::rep(digit(0, 9), longer, None)]));
        }
    }
    G::alt(out)
}

/// Integers in `lo ..= hi` (either side may be open): plain digits (`-0`
/// among them if `negative_zero`), and a fraction of zeros after them if
/// `zero_fraction`.
pub(crate) fn integers(
    lo: Option<i128>,
    hi: Option<i128>,
    zero_fraction: bool,
    negative_zero: bool,
) -> G {
    let digits = integer_digits(lo, hi, negative_zero);
    if !zero_fraction {
        return digits;
    }
    let zeros = G::seq([G::lit("."), G::rep(digit(0, 0), 1, None)]);
    G::seq([digits, G::opt(zeros)])
}

/// Integers in `lo ..= hi` (either side may be open), plain digits.
fn integer_digits(lo: Option<i128>, hi: Option<i128>, negative_zero: bool) -> G {
    if let (Some(lo), Some(hi)) = (lo, hi)
        && hi < lo
    {
        return G::Nothing;
    }
    let mut out = Vec::new();
    // Zero and up.
    if hi.is_none_or(|hi| hi >= 0) {
        let from = lo.map_or(0, |lo| lo.max(0)).unsigned_abs();
        out.push(magnitudes(from, hi.map(i128::unsigned_abs)));
    }
    // Below zero: `-` and a magnitude; `-0` is zero.
    if lo.is_none_or(|lo| lo < 0) {
        let smallest = hi.map_or(1, |hi| if hi < 0 { hi.unsigned_abs() } else { 1 });
        let largest = lo.map(i128::unsigned_abs);
        out.push(G::seq([G::lit("-"), magnitudes(smallest, largest)]));
    }
    if negative_zero && lo.is_none_or(|lo| lo <= 0) && hi.is_none_or(|hi| hi >= 0) {
        out.push(G::lit("-0"));
    }
    G::alt(out)
}

/// A decimal bound: `value`, and whether the bound itself is excluded.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Bound {
    /// The bound's digits: sign, integer part and fraction.
    pub(crate) value: Decimal,
    /// `exclusiveMinimum` / `exclusiveMaximum`.
    pub(crate) exclusive: bool,
}

/// A finite decimal number, exactly as written (no floating point).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Decimal {
    /// Below zero.
    pub(crate) negative: bool,
    /// The integer part.
    pub(crate) integer: u128,
    /// The fraction's digits, no trailing zeros.
    pub(crate) fraction: Vec<u8>,
}

impl Decimal {
    /// Parses a JSON number's text (`-1.25e2` …); `None` if it does not fit.
    pub(crate) fn parse(text: &str) -> Option<Decimal> {
        let (negative, text) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (mantissa, exponent) = match text.find(['e', 'E']) {
            Some(at) => (&text[..at], text[at + 1..].parse::<i32>().ok()?),
            None => (text, 0),
        };
        let (int_text, frac_text) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let mut all: Vec<u8> = int_text
            .bytes()
            .chain(frac_text.bytes())
            .map(|b| b - b'0')
            .collect();
        let mut point = i64::try_from(int_text.len()).ok()? + i64::from(exponent);
        while point < 0 {
            all.insert(0, 0);
            point += 1;
        }
        let point = usize::try_from(point).ok()?;
        while all.len() < point {
            all.push(0);
        }
        let mut integer: u128 = 0;
        for &d in &all[..point] {
            integer = integer.checked_mul(10)?.checked_add(u128::from(d))?;
        }
        let mut fraction = all[point..].to_vec();
        while fraction.last() == Some(&0) {
            fraction.pop();
        }
        let zero = integer == 0 && fraction.is_empty();
        Some(Decimal {
            negative: negative && !zero,
            integer,
            fraction,
        })
    }

    /// The value as an integer, if it is one.
    pub(crate) fn as_integer(&self) -> Option<i128> {
        if !self.fraction.is_empty() {
            return None;
        }
        let magnitude = i128::try_from(self.integer).ok()?;
        Some(if self.negative { -magnitude } else { magnitude })
    }

    /// The smallest integer ≥ self (`None` if it does not fit).
    pub(crate) fn ceil(&self) -> Option<i128> {
        let magnitude = i128::try_from(self.integer).ok()?;
        Some(match (self.negative, self.fraction.is_empty()) {
            (false, true) => magnitude,
            (false, false) => magnitude + 1,
            (true, _) => -magnitude,
        })
    }

    /// The largest integer ≤ self (`None` if it does not fit).
    pub(crate) fn floor(&self) -> Option<i128> {
        let magnitude = i128::try_from(self.integer).ok()?;
        Some(match (self.negative, self.fraction.is_empty()) {
            (false, _) => magnitude,
            (true, true) => -magnitude,
            (true, false) => -magnitude - 1,
        })
    }

    fn cmp_magnitude(&self, other: &Decimal) -> std::cmp::Ordering {
        self.integer
            .cmp(&other.integer)
            .then_with(|| self.fraction.cmp(&other.fraction))
    }

    /// Numeric order.
    pub(crate) fn cmp_value(&self, other: &Decimal) -> std::cmp::Ordering {
        match (self.negative, other.negative) {
            (false, false) => self.cmp_magnitude(other),
            (true, true) => other.cmp_magnitude(self),
            (false, true) => std::cmp::Ordering::Greater,
            (true, false) => std::cmp::Ordering::Less,
        }
    }
}

/// Integers allowed by decimal bounds: `(lowest, highest)`, `None` open.
/// `Err` if the bounds leave no integer.
pub(crate) fn integer_range(
    lower: Option<&Bound>,
    upper: Option<&Bound>,
) -> (Option<i128>, Option<i128>) {
    let lo = lower.and_then(|b| {
        let ceil = b.value.ceil()?;
        Some(if b.exclusive && b.value.as_integer() == Some(ceil) {
            ceil + 1
        } else {
            ceil
        })
    });
    let hi = upper.and_then(|b| {
        let floor = b.value.floor()?;
        Some(if b.exclusive && b.value.as_integer() == Some(floor) {
            floor - 1
        } else {
            floor
        })
    });
    (lo, hi)
}

/// One side of a bound on a fraction `0.F`: the bound's remaining digits
/// (no trailing zeros) and whether equality is excluded.
type Side<'a> = Option<(&'a [u8], bool)>;

/// Digit strings `F` (non-empty if `nonempty`) with `lo ≤ 0.F ≤ hi`, each
/// side strict or not, compared digit by digit. A lower side `([], true)`
/// means "above zero", an upper side `([], false)` "zero".
fn fraction_digits(lo: Side, hi: Side, nonempty: bool) -> G {
    let lo = lo.filter(|&(digits, strict)| !digits.is_empty() || strict);
    let at_least = u32::from(nonempty);
    let any = |min: u32| G::rep(digit(0, 9), min, None);
    match (lo, hi) {
        (_, Some(([], true))) | (Some(([], true)), Some(([], false))) => return G::Nothing,
        (None, None) => return any(at_least),
        (None, Some(([], false))) => return G::rep(digit(0, 0), at_least, None),
        (Some(([], true)), None) => {
            return G::seq([G::rep(digit(0, 0), 0, None), digit(1, 9), any(0)]);
        }
        _ => {}
    }
    let empty_ok = !nonempty && lo.is_none() && !matches!(hi, Some(([], true)));
    let mut out = vec![if empty_ok { G::Empty } else { G::Nothing }];
    // Group first digits that leave the same constraint on the rest.
    let mut groups: Vec<(u8, u8, Side, Side)> = Vec::new();
    for e in 0..=9u8 {
        let next_lo = match lo {
            None => Some(None),
            Some(([], _)) => Some(if e > 0 { None } else { lo }),
            Some((&[d, ref rest @ ..], strict)) => match e.cmp(&d) {
                std::cmp::Ordering::Greater => Some(None),
                std::cmp::Ordering::Equal => Some(Some((rest, strict))),
                std::cmp::Ordering::Less => None,
            },
        };
        let next_hi = match hi {
            None => Some(None),
            Some(([], _)) => (e == 0).then_some(hi),
            Some((&[d, ref rest @ ..], strict)) => match e.cmp(&d) {
                std::cmp::Ordering::Less => Some(None),
                std::cmp::Ordering::Equal => Some(Some((rest, strict))),
                std::cmp::Ordering::Greater => None,
            },
        };
        let (Some(next_lo), Some(next_hi)) = (next_lo, next_hi) else {
            continue;
        };
        match groups.last_mut() {
            Some(last) if last.1 + 1 == e && last.2 == next_lo && last.3 == next_hi => last.1 = e,
            _ => groups.push((e, e, next_lo, next_hi)),
        }
    }
    for (first, last, next_lo, next_hi) in groups {
        out.push(G::seq([
            digit(first, last),
            fraction_digits(next_lo, next_hi, false),
        ]));
    }
    G::alt(out)
}

/// `.F` or nothing, for a fraction `F` within the sides.
fn fraction(lo: Side, hi: Side) -> G {
    let lo = lo.filter(|&(digits, strict)| !digits.is_empty() || strict);
    let empty_ok = lo.is_none() && !matches!(hi, Some(([], true)));
    G::alt([
        if empty_ok { G::Empty } else { G::Nothing },
        G::seq([G::lit("."), fraction_digits(lo, hi, true)]),
    ])
}

/// Non-negative decimals with magnitude between `low` and `high` (each
/// `(bound, strict)`; `None`: open): `I(.F)?`, and the exponent forms of
/// the positive ones.
fn nonnegative(low: Option<(&Decimal, bool)>, high: Option<(&Decimal, bool)>) -> G {
    G::alt([plain(low, high), exponent_forms(low, high)])
}

/// Non-negative decimals `I(.F)?` with magnitude between `low` and `high`.
fn plain(low: Option<(&Decimal, bool)>, high: Option<(&Decimal, bool)>) -> G {
    let lo_int = low.map_or(0, |(d, _)| d.integer);
    let hi_int = high.map(|(d, _)| d.integer);
    if hi_int.is_some_and(|hi| hi < lo_int) {
        return G::Nothing;
    }
    let lo_side = low.map(|(d, strict)| (d.fraction.as_slice(), strict));
    let hi_side = high.map(|(d, strict)| (d.fraction.as_slice(), strict));
    if Some(lo_int) == hi_int {
        return G::seq([magnitudes(lo_int, Some(lo_int)), fraction(lo_side, hi_side)]);
    }
    let mut out = vec![G::seq([
        magnitudes(lo_int, Some(lo_int)),
        fraction(lo_side, None),
    ])];
    let middle_hi = hi_int.map(|hi| hi - 1);
    if middle_hi.is_none_or(|hi| hi > lo_int) {
        out.push(G::seq([
            magnitudes(lo_int + 1, middle_hi),
            fraction(None, None),
        ]));
    }
    if let Some(hi) = hi_int {
        out.push(G::seq([magnitudes(hi, Some(hi)), fraction(None, hi_side)]));
    }
    G::alt(out)
}

/// A positive decimal as `m × 10^e` with `1 ≤ m < 10`: `(e, m)`.
fn normalized(d: &Decimal) -> Option<(i128, Decimal)> {
    let integer = if d.integer == 0 {
        Vec::new()
    } else {
        decimal_digits(d.integer)
    };
    let all: Vec<u8> = integer.iter().chain(&d.fraction).copied().collect();
    let first = all.iter().position(|&digit| digit != 0)?;
    let exponent = i128::try_from(integer.len()).ok()? - 1 - i128::try_from(first).ok()?;
    let mut fraction = all[first + 1..].to_vec();
    while fraction.last() == Some(&0) {
        fraction.pop();
    }
    Some((
        exponent,
        Decimal {
            negative: false,
            integer: u128::from(all[first]),
            fraction,
        },
    ))
}

/// Positive numbers between `low` and `high` written `M[eE]X`: a mantissa
/// `M` of one non-zero digit and an optional fraction, an exponent `X`
/// with an optional sign and leading zeros. In the decades `10^x` strictly
/// between the bounds' any mantissa goes; in a bound's own decade the
/// mantissa is bounded by the bound's digits.
fn exponent_forms(low: Option<(&Decimal, bool)>, high: Option<(&Decimal, bool)>) -> G {
    // A zero bound is no bound on positive numbers.
    let low = low.and_then(|(d, strict)| Some((normalized(d)?, strict)));
    let high = match high {
        Some((d, strict)) => match normalized(d) {
            Some(n) => Some((n, strict)),
            None => return G::Nothing,
        },
        None => None,
    };
    let one = Decimal {
        negative: false,
        integer: 1,
        fraction: Vec::new(),
    };
    let ten = Decimal {
        integer: 10,
        ..one.clone()
    };
    let mark = || G::class([('e', 'e'), ('E', 'E')]);
    let form = |mantissa: G, exponent: G| G::seq([mantissa, mark(), exponent]);
    let mut out = Vec::new();
    let low_decade = low.as_ref().map(|((e, _), _)| *e);
    let high_decade = high.as_ref().map(|((e, _), _)| *e);
    if let (Some(e), Some(f)) = (low_decade, high_decade)
        && e > f
    {
        return G::Nothing;
    }
    match (&low, &high) {
        (Some(((e, lo), lo_strict)), Some(((f, hi), hi_strict))) if e == f => {
            out.push(form(
                plain(Some((lo, *lo_strict)), Some((hi, *hi_strict))),
                exponent_values(Some(*e), Some(*e)),
            ));
        }
        _ => {
            if let Some(((e, lo), strict)) = &low {
                out.push(form(
                    plain(Some((lo, *strict)), Some((&ten, true))),
                    exponent_values(Some(*e), Some(*e)),
                ));
            }
            if let Some(((f, hi), strict)) = &high {
                out.push(form(
                    plain(Some((&one, false)), Some((hi, *strict))),
                    exponent_values(Some(*f), Some(*f)),
                ));
            }
        }
    }
    let inside = exponent_values(low_decade.map(|e| e + 1), high_decade.map(|f| f - 1));
    out.push(form(plain(Some((&one, false)), Some((&ten, true))), inside));
    G::alt(out)
}

/// An exponent's text (optional sign, leading zeros allowed) whose value
/// is in `lo ..= hi` (either side open).
fn exponent_values(lo: Option<i128>, hi: Option<i128>) -> G {
    if let (Some(lo), Some(hi)) = (lo, hi)
        && hi < lo
    {
        return G::Nothing;
    }
    let zeros = || G::rep(digit(0, 0), 0, None);
    let mut out = Vec::new();
    if hi.is_none_or(|hi| hi >= 0) {
        let from = lo.map_or(0, |lo| lo.max(0)).unsigned_abs();
        out.push(G::seq([
            G::opt(G::lit("+")),
            zeros(),
            magnitudes(from, hi.map(i128::unsigned_abs)),
        ]));
    }
    if lo.is_none_or(|lo| lo < 0) {
        let smallest = hi.map_or(1, |hi| if hi < 0 { hi.unsigned_abs() } else { 1 });
        out.push(G::seq([
            G::lit("-"),
            zeros(),
            magnitudes(smallest, lo.map(i128::unsigned_abs)),
        ]));
    }
    if lo.is_none_or(|lo| lo <= 0) && hi.is_none_or(|hi| hi >= 0) {
        out.push(G::seq([G::lit("-"), G::rep(digit(0, 0), 1, None)]));
    }
    G::alt(out)
}

/// Numbers between `lower` and `upper` (either open).
pub(crate) fn bounded_numbers(lower: Option<&Bound>, upper: Option<&Bound>) -> G {
    let zero = Decimal {
        negative: false,
        integer: 0,
        fraction: Vec::new(),
    };
    let mut out = Vec::new();
    // x ≥ 0 part: magnitude between max(lower, 0) and upper.
    let upper_allows_nonneg =
        upper.is_none_or(|u| !u.value.negative && (!u.exclusive || u.value != zero));
    if upper_allows_nonneg {
        let low = match lower {
            Some(l) if !l.value.negative => Some((&l.value, l.exclusive)),
            _ => None,
        };
        let high = upper.map(|u| (&u.value, u.exclusive));
        out.push(nonnegative(low, high));
    }
    // x < 0 part: "-" and a positive magnitude between |upper| (if upper < 0)
    // and |lower|. `-0…` is zero: it belongs here only if zero is allowed.
    let lower_allows_negative = lower.is_none_or(|l| l.value.negative);
    if lower_allows_negative {
        let low = match upper {
            Some(u) if u.value.negative => Some((&u.value, u.exclusive)),
            _ => Some((&zero, true)),
        };
        let high = lower.map(|l| (&l.value, l.exclusive));
        out.push(G::seq([G::lit("-"), nonnegative(low, high)]));
    }
    let zero_allowed = lower.is_none_or(|l| l.value.negative || (l.value == zero && !l.exclusive))
        && upper.is_none_or(|u| !u.value.negative && (u.value != zero || !u.exclusive));
    if zero_allowed {
        out.push(G::seq([
            G::lit("-0"),
            G::opt(G::seq([G::lit("."), G::rep(digit(0, 0), 1, None)])),
        ]));
    }
    G::alt(out)
}

/// Any JSON number.
pub(crate) fn any_number() -> G {
    G::seq([
        G::opt(G::lit("-")),
        G::alt([
            G::lit("0"),
            G::seq([digit(1, 9), G::rep(digit(0, 9), 0, None)]),
        ]),
        G::opt(G::seq([G::lit("."), G::rep(digit(0, 9), 1, None)])),
        G::opt(G::seq([
            G::class([('e', 'e'), ('E', 'E')]),
            G::opt(G::class([('+', '+'), ('-', '-')])),
            G::rep(digit(0, 9), 1, None),
        ])),
    ])
}
