//! The abstract syntax tree of one `.xg` file, exactly as written.
//!
//! Names are not resolved and macro calls are not checked here; that is the
//! job of [`crate::resolve`]. Every node carries the span it was parsed from.
//! The tree is *flat* where the language is associative: a sequence never
//! directly contains a sequence, nor a choice a choice (the parser splices
//! them), so one text has one tree and the printer's output parses back to it.

use crate::source::Span;

/// One parsed `.xg` file.
#[derive(Clone, Debug, PartialEq)]
pub struct File {
    /// Imports and rules in source order.
    pub items: Vec<Item>,
    /// Comments, in source order, for the printer.
    pub comments: Vec<Comment>,
    /// Start offsets of the empty lines, so the printer keeps paragraphs.
    pub blank_lines: Vec<usize>,
}

/// A comment (`# …` or `// …`) with its text after the marker.
#[derive(Clone, Debug, PartialEq)]
pub struct Comment {
    /// The comment including its marker, without the line break.
    pub text: String,
    /// Where it is.
    pub span: Span,
    /// Whether nothing but whitespace precedes it on its line.
    pub own_line: bool,
}

/// A top-level item.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// `import "path" as alias;`
    Import(Import),
    /// `name ::= body`
    Rule(Rule),
}

impl Item {
    /// The span of the whole item.
    pub fn span(&self) -> Span {
        match self {
            Item::Import(import) => import.span,
            Item::Rule(rule) => rule.span,
        }
    }
}

/// `import "path" as alias;`
#[derive(Clone, Debug, PartialEq)]
pub struct Import {
    /// The path as written (after escapes).
    pub path: Text,
    /// The name its rules are referred to by (`alias.rule`).
    pub alias: Name,
    /// The whole import.
    pub span: Span,
}

/// `name [attributes] ::= body (= lookahead)`
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    /// The rule's name.
    pub name: Name,
    /// Its attributes as written (`[capture]`); empty without brackets.
    pub attributes: Vec<Arg>,
    /// What the rule matches.
    pub body: Expr,
    /// Text that must follow the rule, if asserted.
    pub lookahead: Option<Expr>,
    /// The whole rule.
    pub span: Span,
}

/// An identifier with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct Name {
    /// The identifier.
    pub text: String,
    /// Where it was written.
    pub span: Span,
}

/// A string (from a literal) with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct Text {
    /// The string after escapes were decoded.
    pub value: String,
    /// The literal, quotes included.
    pub span: Span,
}

/// An expression with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// What kind of expression.
    pub kind: ExprKind,
    /// Where it was written.
    pub span: Span,
}

/// The forms an expression takes.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// `()`: matches the empty string.
    Empty,
    /// `"…"`: the string, escapes decoded (may be empty).
    Literal(String),
    /// `[…]`
    Class(CharClass),
    /// `.`: any character except a line feed.
    AnyChar,
    /// `/pattern/flags`: a regular expression terminal.
    Regex {
        /// The pattern, with `\/` turned into `/`.
        pattern: String,
        /// The flag letters after the closing `/`.
        flags: String,
    },
    /// `name` or `alias.name`.
    Ref(String),
    /// `a b c` (at least two items, none a sequence).
    Sequence(Vec<Expr>),
    /// `a | b | c` (at least two items, none a choice).
    Choice(Vec<Expr>),
    /// `x?`, `x*`, `x+`, `x{n}`, `x{m,}`, `x{m,n}`.
    Repeat {
        /// The repeated expression.
        expr: Box<Expr>,
        /// Least number of repetitions.
        min: u64,
        /// Most repetitions; `None` is unbounded.
        max: Option<u64>,
    },
    /// `Name(args…)`: one of XGrammar's macros (`TagDispatch`, `Token`,
    /// `ExcludeToken`, `TokenTagDispatch`, `Regex`).
    Macro {
        /// The macro's name.
        name: Name,
        /// Its arguments as written.
        args: Vec<Arg>,
    },
    /// `dispatch(options) { "trigger" => expr, … }`: tag dispatch.
    Dispatch {
        /// Options as written (`once`, `stop = …`, `exclude = …`).
        options: Vec<Arg>,
        /// Trigger → expression arms.
        arms: Vec<Arm>,
    },
    /// `%json {…}` or `%json "file.json"`: a JSON Schema; `%python …`: the
    /// Python literals of the values it allows.
    JsonSchema(JsonSource, Notation),
}

/// How the values an embedded JSON Schema allows are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notation {
    /// As JSON (`%json`).
    Json,
    /// As Python literals (`%python`): `True`, `False`, `None`.
    Python,
}

impl Notation {
    /// The directive that embeds a schema in this notation.
    pub fn directive(self) -> &'static str {
        match self {
            Notation::Json => "%json",
            Notation::Python => "%python",
        }
    }
}

/// Where an embedded JSON Schema is.
#[derive(Clone, Debug, PartialEq)]
pub enum JsonSource {
    /// Written inline; the raw JSON text.
    Inline(String),
    /// In a file, relative to the grammar's folder.
    File(Text),
}

/// A character class `[…]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CharClass {
    /// `[^…]`
    pub negated: bool,
    /// Ranges and class escapes, in source order.
    pub items: Vec<ClassItem>,
}

/// One item of a character class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClassItem {
    /// `a-z`, or a single character `a` as `a-a`.
    Range(char, char),
    /// `\d`, `\w`, `\s` and their negations.
    Perl(PerlClass),
}

/// A class escape inside `[…]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PerlClass {
    /// `\d`: `[0-9]`.
    Digit,
    /// `\D`
    NotDigit,
    /// `\w`: `[0-9A-Za-z_]`.
    Word,
    /// `\W`
    NotWord,
    /// `\s`: space, `\t`, `\n`, `\v`, `\f`, `\r`.
    Space,
    /// `\S`
    NotSpace,
}

/// One arm of a dispatch: when `trigger` appears, `body` follows.
#[derive(Clone, Debug, PartialEq)]
pub struct Arm {
    /// The trigger string.
    pub trigger: Text,
    /// What must follow the trigger.
    pub body: Expr,
}

/// An argument of a macro call or a dispatch option: `value` or `name = value`.
#[derive(Clone, Debug, PartialEq)]
pub struct Arg {
    /// The name of a named argument.
    pub name: Option<Name>,
    /// The value.
    pub value: Value,
}

/// An argument value.
#[derive(Clone, Debug, PartialEq)]
pub struct Value {
    /// What kind of value.
    pub kind: ValueKind,
    /// Where it was written.
    pub span: Span,
}

/// The forms an argument value takes.
#[derive(Clone, Debug, PartialEq)]
pub enum ValueKind {
    /// A string literal.
    Str(String),
    /// A non-negative integer.
    Int(u64),
    /// A bare identifier (`true`, `false`, a rule name, an option word).
    Ident(String),
    /// `(a, b, …)`
    Tuple(Vec<Value>),
}
