//! String formats as grammars over the string body (ASCII text, so the
//! canonical and the literal forms coincide).
//!
//! The subset and its limits are in the book (`json-schema.md`): `date`
//! checks days per month and leap years; `time` checks that a leap second
//! falls at 23:59 UTC for whole-hour offsets ([`approximation`] says what is
//! not checked); `hostname` and `email` check the label syntax but not the
//! 253-character total; `uri` and `uri-reference` follow RFC 3986's syntax.

use super::grammar::G;

fn range(lo: char, hi: char) -> G {
    G::class([(lo, hi)])
}

fn digit() -> G {
    range('0', '9')
}

fn digits(n: u32) -> G {
    G::rep(digit(), n, Some(n))
}

fn hex() -> G {
    G::class([('0', '9'), ('a', 'f'), ('A', 'F')])
}

fn alpha() -> G {
    G::class([('a', 'z'), ('A', 'Z')])
}

fn chars(set: &str) -> G {
    G::class(set.chars().map(|c| (c, c)))
}

/// The formats this front end enforces.
pub(crate) const KNOWN: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
    "uri",
    "uri-reference",
];

/// The string body of format `name`, if it is one xg knows.
pub(crate) fn body(name: &str) -> Option<G> {
    Some(match name {
        "date-time" => G::seq([date(), chars("Tt"), time()]),
        "date" => date(),
        "time" => time(),
        "duration" => duration(),
        "email" => email(),
        "hostname" => hostname(),
        "ipv4" => ipv4(),
        "ipv6" => ipv6(),
        "uuid" => uuid(),
        "uri" => uri(),
        "uri-reference" => G::alt([uri(), relative_ref()]),
        _ => return None,
    })
}

/// What format `name` over-approximates, if anything: the detail of the
/// report's warning.
pub(crate) fn approximation(name: &str) -> Option<&'static str> {
    matches!(name, "time" | "date-time").then_some(
        "with a time-offset that is not a whole number of hours, a leap second (`:60`) is accepted at any time of day",
    )
}

/// Years divisible by 4, except centuries not divisible by 400.
fn leap_year() -> G {
    let multiple_of_4 = || {
        G::alt([
            G::seq([G::lit("0"), chars("48")]),
            G::seq([chars("2468"), chars("048")]),
            G::seq([chars("13579"), chars("26")]),
        ])
    };
    G::alt([
        G::seq([digit(), digit(), multiple_of_4()]),
        G::seq([G::alt([multiple_of_4(), G::lit("00")]), G::lit("00")]),
    ])
}

fn date() -> G {
    let day_31 = G::alt([
        G::seq([G::lit("0"), range('1', '9')]),
        G::seq([range('1', '2'), digit()]),
        G::lit("30"),
        G::lit("31"),
    ]);
    let day_30 = G::alt([
        G::seq([G::lit("0"), range('1', '9')]),
        G::seq([range('1', '2'), digit()]),
        G::lit("30"),
    ]);
    let day_28 = G::alt([
        G::seq([G::lit("0"), range('1', '9')]),
        G::seq([G::lit("1"), digit()]),
        G::seq([G::lit("2"), range('0', '8')]),
    ]);
    let month_day = G::alt([
        G::seq([
            G::alt(["01", "03", "05", "07", "08", "10", "12"].map(G::lit)),
            G::lit("-"),
            day_31,
        ]),
        G::seq([
            G::alt(["04", "06", "09", "11"].map(G::lit)),
            G::lit("-"),
            day_30,
        ]),
        G::seq([G::lit("02-"), day_28]),
    ]);
    G::alt([
        G::seq([digits(4), G::lit("-"), month_day]),
        G::seq([leap_year(), G::lit("-02-29")]),
    ])
}

fn time() -> G {
    let hour = || {
        G::alt([
            G::seq([range('0', '1'), digit()]),
            G::seq([G::lit("2"), range('0', '3')]),
        ])
    };
    let minute = || G::seq([range('0', '5'), digit()]);
    let fraction = || G::opt(G::seq([G::lit("."), G::rep(digit(), 1, None)]));
    let offset = G::alt([
        chars("Zz"),
        G::seq([chars("+-"), hour(), G::lit(":"), minute()]),
    ]);
    let ordinary = G::seq([
        hour(),
        G::lit(":"),
        minute(),
        G::lit(":"),
        range('0', '5'),
        digit(),
        fraction(),
        offset,
    ]);
    // A leap second is 23:59:60 UTC: local time and offset together.
    let mut leap = vec![G::seq([
        G::lit("23:59:60"),
        fraction(),
        G::alt([chars("Zz"), G::lit("+00:00"), G::lit("-00:00")]),
    ])];
    for h in 1..24 {
        for (local, sign) in [(h - 1, '+'), (23 - h, '-')] {
            leap.push(G::seq([
                G::lit(format!("{local:02}:59:60")),
                fraction(),
                G::lit(format!("{sign}{h:02}:00")),
            ]));
        }
    }
    // Offsets with minutes: any time (see `approximation`).
    leap.push(G::seq([
        hour(),
        G::lit(":"),
        minute(),
        G::lit(":60"),
        fraction(),
        chars("+-"),
        hour(),
        G::lit(":"),
        G::alt([
            G::seq([G::lit("0"), range('1', '9')]),
            G::seq([range('1', '5'), digit()]),
        ]),
    ]));
    G::alt([ordinary, G::alt(leap)])
}

fn duration() -> G {
    let n = || G::rep(digit(), 1, None);
    let unit = |u: &str| G::seq([n(), G::lit(u)]);
    // P(nY)(nM)(nD)(T(nH)(nM)(nS)) with at least one part, or PnW.
    let time_part = G::seq([
        G::lit("T"),
        G::alt([
            G::seq([unit("H"), G::opt(unit("M")), G::opt(unit("S"))]),
            G::seq([unit("M"), G::opt(unit("S"))]),
            unit("S"),
        ]),
    ]);
    let date_part = G::alt([
        G::seq([unit("Y"), G::opt(unit("M")), G::opt(unit("D"))]),
        G::seq([unit("M"), G::opt(unit("D"))]),
        unit("D"),
    ]);
    G::seq([
        G::lit("P"),
        G::alt([
            G::seq([date_part, G::opt(time_part.clone())]),
            time_part,
            unit("W"),
        ]),
    ])
}

fn label() -> G {
    let alnum = || G::class([('a', 'z'), ('A', 'Z'), ('0', '9')]);
    G::seq([
        alnum(),
        G::opt(G::seq([
            G::rep(
                G::class([('a', 'z'), ('A', 'Z'), ('0', '9'), ('-', '-')]),
                0,
                Some(61),
            ),
            alnum(),
        ])),
    ])
}

fn hostname() -> G {
    G::seq([label(), G::rep(G::seq([G::lit("."), label()]), 0, None)])
}

fn email() -> G {
    let atext = || {
        G::class([
            ('a', 'z'),
            ('A', 'Z'),
            ('0', '9'),
            ('!', '!'),
            ('#', '\''),
            ('*', '+'),
            ('-', '-'),
            ('/', '/'),
            ('=', '='),
            ('?', '?'),
            ('^', '`'),
            ('{', '~'),
        ])
    };
    let dot_atom = G::seq([
        G::rep(atext(), 1, None),
        G::rep(G::seq([G::lit("."), G::rep(atext(), 1, None)]), 0, None),
    ]);
    // A quoted local part (RFC 5321): printable ASCII, `"` and `\` escaped
    // by a backslash — each written JSON-escaped in the string body.
    let quote = || G::lit("\\\"");
    let backslash = || G::lit("\\\\");
    let plain = || G::class([(' ', '!'), ('#', '['), (']', '~')]);
    let quoted = G::seq([
        quote(),
        G::rep(
            G::alt([
                plain(),
                G::seq([backslash(), G::alt([plain(), quote(), backslash()])]),
            ]),
            0,
            None,
        ),
        quote(),
    ]);
    let local = G::alt([dot_atom, quoted]);
    let domain = G::alt([
        hostname(),
        G::seq([G::lit("["), ipv4(), G::lit("]")]),
        G::seq([G::lit("[IPv6:"), ipv6(), G::lit("]")]),
    ]);
    G::seq([local, G::lit("@"), domain])
}

fn octet() -> G {
    G::alt([
        G::seq([G::lit("25"), range('0', '5')]),
        G::seq([G::lit("2"), range('0', '4'), digit()]),
        G::seq([G::lit("1"), digit(), digit()]),
        G::seq([range('1', '9'), digit()]),
        digit(),
    ])
}

fn ipv4() -> G {
    G::seq([octet(), G::rep(G::seq([G::lit("."), octet()]), 3, Some(3))])
}

fn ipv6() -> G {
    let h16 = || G::rep(hex(), 1, Some(4));
    let h16c = || G::seq([h16(), G::lit(":")]);
    let ls32 = || G::alt([G::seq([h16(), G::lit(":"), h16()]), ipv4()]);
    // RFC 3986: n groups before `::` (up to n, each followed by `:`) and the
    // fixed count after it.
    let before = |max: u32| {
        if max == 0 {
            G::Empty
        } else {
            G::opt(G::seq([G::rep(h16c(), 0, Some(max - 1)), h16()]))
        }
    };
    G::alt([
        G::seq([G::rep(h16c(), 6, Some(6)), ls32()]),
        G::seq([G::lit("::"), G::rep(h16c(), 5, Some(5)), ls32()]),
        G::seq([before(1), G::lit("::"), G::rep(h16c(), 4, Some(4)), ls32()]),
        G::seq([before(2), G::lit("::"), G::rep(h16c(), 3, Some(3)), ls32()]),
        G::seq([before(3), G::lit("::"), G::rep(h16c(), 2, Some(2)), ls32()]),
        G::seq([before(4), G::lit("::"), h16c(), ls32()]),
        G::seq([before(5), G::lit("::"), ls32()]),
        G::seq([before(6), G::lit("::"), h16()]),
        G::seq([before(7), G::lit("::")]),
    ])
}

fn uuid() -> G {
    let hexes = |n: u32| G::rep(hex(), n, Some(n));
    G::seq([
        hexes(8),
        G::lit("-"),
        hexes(4),
        G::lit("-"),
        hexes(4),
        G::lit("-"),
        hexes(4),
        G::lit("-"),
        hexes(12),
    ])
}

/// RFC 3986 `pchar` minus what `extra` adds.
fn uri_char(extra: &str) -> G {
    let unreserved_sub = G::class(
        [('a', 'z'), ('A', 'Z'), ('0', '9')]
            .into_iter()
            .chain("-._~!$&'()*+,;=".chars().map(|c| (c, c)))
            .chain(extra.chars().map(|c| (c, c))),
    );
    G::alt([unreserved_sub, G::seq([G::lit("%"), hex(), hex()])])
}

fn authority() -> G {
    let userinfo = G::seq([G::rep(uri_char(":"), 0, None), G::lit("@")]);
    let ip_literal = G::seq([G::lit("["), ipv6(), G::lit("]")]);
    let host = G::alt([ip_literal, G::rep(uri_char(""), 0, None)]);
    G::seq([
        G::opt(userinfo),
        host,
        G::opt(G::seq([G::lit(":"), G::rep(digit(), 0, None)])),
    ])
}

fn segments() -> G {
    G::rep(
        G::seq([G::lit("/"), G::rep(uri_char(":@"), 0, None)]),
        0,
        None,
    )
}

fn query_fragment() -> G {
    G::seq([
        G::opt(G::seq([G::lit("?"), G::rep(uri_char(":@/?"), 0, None)])),
        G::opt(G::seq([G::lit("#"), G::rep(uri_char(":@/?"), 0, None)])),
    ])
}

/// `hier-part` / `relative-part`: `//authority path`, an absolute path, a
/// rootless path (first segment `first`), or nothing.
fn hierarchy(first: G) -> G {
    G::alt([
        G::seq([G::lit("//"), authority(), segments()]),
        G::seq([
            G::lit("/"),
            G::opt(G::seq([G::rep(uri_char(":@"), 1, None), segments()])),
        ]),
        G::seq([first, segments()]),
        G::Empty,
    ])
}

fn uri() -> G {
    let scheme = G::seq([
        alpha(),
        G::rep(
            G::class([('a', 'z'), ('A', 'Z'), ('0', '9'), ('+', '+'), ('-', '.')]),
            0,
            None,
        ),
    ]);
    G::seq([
        scheme,
        G::lit(":"),
        hierarchy(G::rep(uri_char(":@"), 1, None)),
        query_fragment(),
    ])
}

fn relative_ref() -> G {
    // The first segment of a relative path has no `:` (it would read as a scheme).
    G::seq([hierarchy(G::rep(uri_char("@"), 1, None)), query_fragment()])
}
