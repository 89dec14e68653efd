//! Property tests of the front end.
//!
//! - Printing any well-formed tree and parsing the text gives the tree back
//!   (`xg fmt` never changes what a grammar means).
//! - No input — random bytes, or random fragments of `.xg` syntax — panics the
//!   compiler; diagnostics always carry spans inside their file, and grammars
//!   that compile have valid tables.

mod common;

use common::strip_spans;
use proptest::prelude::*;
use xg_compiler::syntax::ast::{
    Arg, Arm, CharClass, ClassItem, Expr, ExprKind, File, Import, Item, JsonSource, Name, Notation,
    PerlClass, Rule, Text, Value, ValueKind,
};
use xg_compiler::{Diagnostics, Request, Sources, Span, pipeline, syntax};

/// A span for generated trees (printing ignores spans).
fn span() -> Span {
    thread_local!(static SPAN: Span = {
        let mut sources = Sources::new();
        let file = sources.add("generated", "", None);
        Span::new(file, 0, 0)
    });
    SPAN.with(|s| *s)
}

fn name() -> impl Strategy<Value = String> {
    // Not the words the lexer treats as keywords before `(`, `{` or `"`.
    "[a-z][a-z0-9_]{0,5}(-[a-z0-9]{1,3})?(\\.[a-z][a-z0-9_]{0,4})?"
        .prop_filter("keyword", |n| !matches!(n.as_str(), "import" | "dispatch"))
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z<>|/ ]{0,8}",
        any::<String>().prop_map(|s| s.chars().take(6).collect()),
        "[\\x00-\\x1F\"\\\\0-9a-fA-F]{0,6}",
    ]
}

fn class_char() -> impl Strategy<Value = char> {
    prop_oneof![
        any::<char>(),
        "[\\x00-\\x1F\\]\\[\\^\\\\a-f0-9-]".prop_map(|s| s.chars().next().unwrap())
    ]
}

fn class() -> impl Strategy<Value = CharClass> {
    let item = prop_oneof![
        3 => (class_char(), class_char()).prop_map(|(a, b)| ClassItem::Range(a.min(b), a.max(b))),
        1 => prop_oneof![
            Just(PerlClass::Digit),
            Just(PerlClass::NotDigit),
            Just(PerlClass::Word),
            Just(PerlClass::NotWord),
            Just(PerlClass::Space),
            Just(PerlClass::NotSpace),
        ]
        .prop_map(ClassItem::Perl),
    ];
    (any::<bool>(), prop::collection::vec(item, 0..4))
        .prop_map(|(negated, items)| CharClass { negated, items })
}

/// A regex pattern as the lexer can produce it: no line breaks, and every
/// backslash starts an escape pair whose second character is not `/`; never
/// empty (`//` starts a comment).
fn pattern() -> impl Strategy<Value = String> {
    let piece = prop_oneof!["[a-z0-9.*+?()|\\[\\]{}/ ]", "\\\\[a-zA-Z0-9.*+\\\\]"];
    prop::collection::vec(piece, 1..6).prop_map(|pieces| pieces.concat())
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        text().prop_map(ValueKind::Str),
        any::<u32>().prop_map(|n| ValueKind::Int(u64::from(n))),
        name().prop_map(ValueKind::Ident),
    ]
    .prop_map(|kind| Value { kind, span: span() });
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop::collection::vec(inner, 0..3).prop_map(|items| Value {
            kind: ValueKind::Tuple(items),
            span: span(),
        })
    })
}

fn arg() -> impl Strategy<Value = Arg> {
    (prop::option::of(name()), value()).prop_map(|(name, value)| Arg {
        name: name.map(|text| Name { text, span: span() }),
        value,
    })
}

fn expr_of(kind: ExprKind) -> Expr {
    Expr { kind, span: span() }
}

fn leaf() -> impl Strategy<Value = Expr> {
    prop_oneof![
        Just(ExprKind::Empty),
        text().prop_map(ExprKind::Literal),
        class().prop_map(ExprKind::Class),
        Just(ExprKind::AnyChar),
        (pattern(), "[isu]{0,2}").prop_map(|(pattern, flags)| ExprKind::Regex { pattern, flags }),
        name().prop_map(ExprKind::Ref),
        (
            prop_oneof![
                Just("TagDispatch"),
                Just("Token"),
                Just("ExcludeToken"),
                Just("TokenTagDispatch"),
                Just("Regex")
            ],
            prop::collection::vec(arg(), 0..4)
        )
            .prop_map(|(name, args)| ExprKind::Macro {
                name: Name {
                    text: name.to_string(),
                    span: span(),
                },
                args,
            }),
        (
            prop_oneof![
                Just(JsonSource::Inline("{\"type\": \"string\"}".into())),
                Just(JsonSource::Inline("{\"a\": [1, {\"b\": \"}\"}]}".into())),
                text().prop_map(|value| JsonSource::File(Text {
                    value,
                    span: span()
                })),
            ],
            prop_oneof![Just(Notation::Json), Just(Notation::Python)],
        )
            .prop_map(|(source, notation)| ExprKind::JsonSchema(source, notation)),
    ]
    .prop_map(expr_of)
}

/// Well-formed trees: flat sequences and choices, as the parser builds them.
fn expr() -> impl Strategy<Value = Expr> {
    leaf().prop_recursive(4, 32, 4, |inner| {
        let not = |f: fn(&ExprKind) -> bool| move |e: &Expr| !f(&e.kind);
        prop_oneof![
            prop::collection::vec(
                inner
                    .clone()
                    .prop_filter("flat", not(|k| matches!(k, ExprKind::Sequence(_)))),
                2..4
            )
            .prop_map(|items| expr_of(ExprKind::Sequence(items))),
            prop::collection::vec(
                inner
                    .clone()
                    .prop_filter("flat", not(|k| matches!(k, ExprKind::Choice(_)))),
                2..4
            )
            .prop_map(|items| expr_of(ExprKind::Choice(items))),
            (inner.clone(), 0u64..5, prop::option::of(0u64..5)).prop_map(|(expr, min, extra)| {
                expr_of(ExprKind::Repeat {
                    expr: Box::new(expr),
                    min,
                    max: extra.map(|e| min + e),
                })
            }),
            (
                prop::collection::vec(arg(), 0..3),
                prop::collection::vec((text(), inner), 0..3)
            )
                .prop_map(|(options, arms)| expr_of(ExprKind::Dispatch {
                    options,
                    arms: arms
                        .into_iter()
                        .map(|(trigger, body)| Arm {
                            trigger: Text {
                                value: trigger,
                                span: span(),
                            },
                            body,
                        })
                        .collect(),
                })),
        ]
    })
}

fn item() -> impl Strategy<Value = Item> {
    prop_oneof![
        4 => (name(), prop::collection::vec(arg(), 0..3), expr(), prop::option::of(expr())).prop_map(|(name, attributes, body, lookahead)| Item::Rule(Rule {
            name: Name { text: name, span: span() },
            attributes,
            body,
            lookahead,
            span: span(),
        })),
        1 => (text(), name()).prop_map(|(path, alias)| Item::Import(Import {
            path: Text { value: path, span: span() },
            alias: Name { text: alias, span: span() },
            span: span(),
        })),
    ]
}

/// Runs the whole front end on `bytes` and checks every diagnostic's spans.
fn front_end_survives(bytes: &[u8]) {
    let mut request = Request::ahead_of_time();
    let file = request
        .sources
        .add_bytes("input.xg", bytes, None, &mut request.diagnostics);
    if let Some(compiled) = pipeline::compile(&mut request, file, "root") {
        assert!(compiled.tables.validate().is_ok());
    }
    for diagnostic in request.diagnostics.iter() {
        for label in std::iter::once(&diagnostic.primary).chain(&diagnostic.secondary) {
            let text = request.sources.text(label.span.file);
            assert!(
                label.span.start <= label.span.end && label.span.end <= text.len(),
                "{diagnostic:?}"
            );
            assert!(
                text.is_char_boundary(label.span.start) && text.is_char_boundary(label.span.end)
            );
        }
    }
    let _ = request.diagnostics.render(&request.sources, false);
}

/// Pieces of `.xg` syntax, valid and broken, to build inputs that get deep
/// into the parser and resolver.
const FRAGMENTS: &[&str] = &[
    "root",
    " ::= ",
    "a",
    "b.c",
    "\n",
    " ",
    "|",
    "(",
    ")",
    "(=",
    "{",
    "}",
    "{2,1}",
    "{3}",
    ",",
    "?",
    "*",
    "+",
    "\"x\"",
    "\"",
    "\"\\",
    "\\u12",
    "\\x",
    "[a-z]",
    "[",
    "]",
    "[^]",
    ".",
    "/a+/i",
    "/",
    "//c\n",
    "#c\n",
    "=>",
    "=",
    ";",
    "import \"std/json.xg\" as json;",
    "import \"x.xg\" as y",
    "json.value",
    "dispatch",
    "dispatch {",
    "\"t\" => a,",
    "once",
    "stop=(\"s\")",
    "exclude=",
    "%json {\"type\": \"string\"}",
    "%json {",
    "%json",
    "%x",
    "Token(1)",
    "Token(",
    "ExcludeToken(",
    "TagDispatch((\"t\", a))",
    "TokenTagDispatch((1, a)",
    "Regex(\"[\")",
    "Regex(\"a\", flags=\"z\")",
    "%json {\u{e9}",
    "-1",
    "99999999999999999999",
    "\u{e9}",
    "\u{1F600}",
    "\\d",
    "@",
    ":",
];

// 256 cases each by default; `PROPTEST_CASES=N` for a longer run.
proptest! {
    #[test]
    fn printing_then_parsing_gives_the_same_tree(items in prop::collection::vec(item(), 1..5)) {
        let file = File { items, comments: Vec::new(), blank_lines: Vec::new() };
        let printed = syntax::print(&file);
        let mut sources = Sources::new();
        let id = sources.add("printed.xg", printed.clone(), None);
        let mut diagnostics = Diagnostics::new();
        let parsed = syntax::parse(id, &printed, &mut diagnostics);
        prop_assert!(!diagnostics.has_errors(), "{printed}\n{}", diagnostics.render(&sources, false));
        prop_assert_eq!(
            strip_spans(&format!("{:?}", parsed.items)),
            strip_spans(&format!("{:?}", file.items)),
            "printed:\n{}", printed
        );
        prop_assert_eq!(syntax::print(&parsed), printed);
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        front_end_survives(&bytes);
    }

    #[test]
    fn random_syntax_fragments_never_panic(pieces in prop::collection::vec(prop::sample::select(FRAGMENTS), 0..40)) {
        front_end_survives(pieces.concat().as_bytes());
    }
}
