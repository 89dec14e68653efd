//! The canonical printer behind `xg fmt`: [`ast::File`] → text.
//!
//! The output parses back to the same tree (a property test checks this).
//! Layout: one item per line, a rule on one line when it fits in
//! [`WIDTH`] columns and one alternative per line otherwise; dispatch arms one
//! per line; blank lines between items kept (at most one); comments kept in
//! order, with comments written inside a rule moved above it.

use std::fmt::Write;

use super::ast::{
    Arg, CharClass, ClassItem, Comment, Expr, ExprKind, File, Item, JsonSource, PerlClass, Value,
    ValueKind,
};

/// Lines longer than this are broken at a rule's top-level alternatives.
pub const WIDTH: usize = 100;

/// Arguments longer than this together go one per line.
const ARGS_WIDTH: usize = 72;

const INDENT: &str = "    ";

/// Prints a file in canonical form.
pub fn print(file: &File) -> String {
    let mut out = String::new();
    let mut comments = file.comments.iter().peekable();
    let mut last_end = None;
    for item in &file.items {
        let span = item.span();
        let mut inner = Vec::new();
        while let Some(comment) = comments.next_if(|c| c.span.start < span.end) {
            if comment.span.start > span.start {
                inner.push(comment);
            } else {
                print_comment(&mut out, file, &mut last_end, comment);
            }
        }
        blank_line(&mut out, file, last_end, span.start);
        for comment in inner {
            let _ = writeln!(out, "{}", comment.text);
        }
        print_item(&mut out, item);
        last_end = Some(span.end);
    }
    for comment in comments {
        print_comment(&mut out, file, &mut last_end, comment);
    }
    out
}

/// Writes a comment outside every item: on its own line, or after the
/// previous line if that is where it was written.
fn print_comment(out: &mut String, file: &File, last_end: &mut Option<usize>, comment: &Comment) {
    if comment.own_line || out.is_empty() {
        blank_line(out, file, *last_end, comment.span.start);
        let _ = writeln!(out, "{}", comment.text);
    } else {
        out.pop();
        let _ = writeln!(out, "  {}", comment.text);
    }
    *last_end = Some(comment.span.end);
}

/// Writes an empty line if the source had one between `last_end` and `next`.
fn blank_line(out: &mut String, file: &File, last_end: Option<usize>, next: usize) {
    // `blank_lines` is sorted: find the first at or after `end`.
    if let Some(end) = last_end
        && file
            .blank_lines
            .get(file.blank_lines.partition_point(|&b| b < end))
            .is_some_and(|&b| b < next)
        && !out.ends_with("\n\n")
    {
        out.push('\n');
    }
}

fn print_item(out: &mut String, item: &Item) {
    match item {
        Item::Import(import) => {
            let _ = writeln!(
                out,
                "import {} as {};",
                string(&import.path.value),
                import.alias.text
            );
        }
        Item::Rule(rule) => {
            let head = format!("{}{} ::= ", rule.name.text, attributes(&rule.attributes));
            let lookahead = rule
                .lookahead
                .as_ref()
                .map(|la| format!(" (= {})", Printer::inline(la, 0)))
                .unwrap_or_default();
            let one_line = format!("{head}{}{lookahead}", Printer::inline(&rule.body, 0));
            let fits = !one_line.contains('\n') && one_line.len() <= WIDTH;
            match &rule.body.kind {
                ExprKind::Choice(alternatives) if !fits => {
                    out.push_str(&head);
                    for (i, alternative) in alternatives.iter().enumerate() {
                        if i > 0 {
                            let _ = write!(out, "\n{INDENT}| ");
                        }
                        out.push_str(&Printer::inline(alternative, 1));
                    }
                    out.push_str(&lookahead);
                    out.push('\n');
                }
                _ => {
                    out.push_str(&one_line);
                    out.push('\n');
                }
            }
        }
    }
}

/// Precedence levels: a child printed where a higher level is needed gets
/// parentheses.
const CHOICE: u8 = 0;
const SEQUENCE: u8 = 1;
const REPEAT: u8 = 2;
const ATOM: u8 = 3;

struct Printer {
    out: String,
    indent: usize,
}

impl Printer {
    fn inline(expr: &Expr, level: u8) -> String {
        let mut printer = Printer {
            out: String::new(),
            indent: 0,
        };
        printer.expr(expr, level);
        printer.out
    }

    fn expr(&mut self, expr: &Expr, level: u8) {
        let own = match &expr.kind {
            ExprKind::Choice(_) => CHOICE,
            ExprKind::Sequence(_) => SEQUENCE,
            ExprKind::Repeat { .. } => REPEAT,
            _ => ATOM,
        };
        if own < level {
            self.out.push('(');
            self.expr(expr, CHOICE);
            self.out.push(')');
            return;
        }
        match &expr.kind {
            ExprKind::Empty => self.out.push_str("()"),
            ExprKind::Literal(value) => self.out.push_str(&string(value)),
            ExprKind::Class(class) => print_class(&mut self.out, class),
            ExprKind::AnyChar => self.out.push('.'),
            ExprKind::Regex { pattern, flags } => {
                self.out.push('/');
                print_regex_pattern(&mut self.out, pattern);
                self.out.push('/');
                self.out.push_str(flags);
            }
            ExprKind::Ref(name) => self.out.push_str(name),
            ExprKind::Sequence(items) => self.list(items, " ", SEQUENCE + 1),
            ExprKind::Choice(items) => self.list(items, " | ", SEQUENCE),
            ExprKind::Repeat { expr, min, max } => {
                self.expr(expr, ATOM);
                let _ = match (min, max) {
                    (0, Some(1)) => write!(self.out, "?"),
                    (0, None) => write!(self.out, "*"),
                    (1, None) => write!(self.out, "+"),
                    (min, Some(max)) if min == max => write!(self.out, "{{{min}}}"),
                    (min, None) => write!(self.out, "{{{min},}}"),
                    (min, Some(max)) => write!(self.out, "{{{min},{max}}}"),
                };
            }
            ExprKind::Macro { name, args } => {
                self.out.push_str(&name.text);
                self.args(args);
            }
            ExprKind::Dispatch { options, arms } => {
                self.out.push_str("dispatch");
                if !options.is_empty() {
                    self.args(options);
                }
                if arms.is_empty() {
                    self.out.push_str(" {}");
                    return;
                }
                self.out.push_str(" {\n");
                self.indent += 1;
                for arm in arms {
                    self.out.push_str(&INDENT.repeat(self.indent));
                    self.out.push_str(&string(&arm.trigger.value));
                    self.out.push_str(" => ");
                    self.expr(&arm.body, CHOICE);
                    self.out.push_str(",\n");
                }
                self.indent -= 1;
                self.out.push_str(&INDENT.repeat(self.indent));
                self.out.push('}');
            }
            ExprKind::JsonSchema(source, notation) => {
                self.out.push_str(notation.directive());
                self.out.push(' ');
                match source {
                    JsonSource::Inline(json) => self.out.push_str(json),
                    JsonSource::File(path) => self.out.push_str(&string(&path.value)),
                }
            }
        }
    }

    fn list(&mut self, items: &[Expr], separator: &str, level: u8) {
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                self.out.push_str(separator);
            }
            self.expr(item, level);
        }
    }

    /// Writes `(a, b=c, …)`, one argument per line if they would not fit on one.
    fn args(&mut self, args: &[Arg]) {
        let printed: Vec<String> = args.iter().map(print_arg).collect();
        let inline = printed.join(", ");
        if inline.len() <= ARGS_WIDTH {
            let _ = write!(self.out, "({inline})");
            return;
        }
        // No comma after the last argument: XGrammar's parser rejects one.
        let indent = INDENT.repeat(self.indent + 1);
        let _ = write!(
            self.out,
            "(\n{indent}{}\n",
            printed.join(&format!(",\n{indent}"))
        );
        self.out.push_str(&INDENT.repeat(self.indent));
        self.out.push(')');
    }
}

/// `a` or `b=c`.
fn print_arg(arg: &Arg) -> String {
    let mut text = arg
        .name
        .as_ref()
        .map(|n| format!("{}=", n.text))
        .unwrap_or_default();
    print_value(&mut text, &arg.value);
    text
}

/// A rule's attributes as ` [a, b=c]`, or nothing without any.
fn attributes(attributes: &[Arg]) -> String {
    if attributes.is_empty() {
        return String::new();
    }
    let printed: Vec<String> = attributes.iter().map(print_arg).collect();
    format!(" [{}]", printed.join(", "))
}

fn print_value(out: &mut String, value: &Value) {
    match &value.kind {
        ValueKind::Str(s) => out.push_str(&string(s)),
        ValueKind::Int(n) => {
            let _ = write!(out, "{n}");
        }
        ValueKind::Ident(name) => out.push_str(name),
        ValueKind::Tuple(items) => {
            out.push('(');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                print_value(out, item);
            }
            out.push(')');
        }
    }
}

/// A string literal for `value`, quotes included.
pub(crate) fn string(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    let mut chars = value.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => push_char_escaped(&mut out, c, chars.peek().copied()),
        }
    }
    out.push('"');
    out
}

/// Writes `c`, escaping control characters. `next` is the character printed
/// after it: `\x` takes as many hex digits as follow it, so before a hex
/// digit the fixed-width `\u` form is used instead.
fn push_char_escaped(out: &mut String, c: char, next: Option<char>) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if c.is_control() && next.is_some_and(|n| n.is_ascii_hexdigit()) => {
            let _ = write!(out, "\\u{:04X}", u32::from(c));
        }
        c if c.is_control() => {
            let _ = write!(out, "\\x{:02X}", u32::from(c));
        }
        c => out.push(c),
    }
}

/// A character class matching exactly the characters of `ranges` (sorted,
/// disjoint), written negated when that is shorter (a set reaching the last
/// character is usually "everything but a few").
pub(crate) fn class(ranges: &[(char, char)]) -> String {
    let complement = crate::tree::CharSet::from_ranges(ranges.iter().copied()).complement();
    let reaches_end = ranges.last().is_some_and(|&(_, hi)| hi == char::MAX);
    let (negated, ranges) = if reaches_end && !complement.is_empty() {
        (true, complement.ranges().to_vec())
    } else {
        (false, ranges.to_vec())
    };
    let mut out = String::new();
    let items = ranges
        .iter()
        .map(|&(lo, hi)| ClassItem::Range(lo, hi))
        .collect();
    print_class(&mut out, &CharClass { negated, items });
    out
}

fn print_class(out: &mut String, class: &CharClass) {
    out.push('[');
    if class.negated {
        out.push('^');
    }
    for (i, item) in class.items.iter().enumerate() {
        let next = match class.items.get(i + 1) {
            Some(ClassItem::Range(lo, _)) => Some(*lo),
            Some(ClassItem::Perl(_)) => Some('\\'),
            None => Some(']'),
        };
        match *item {
            ClassItem::Range(lo, hi) if hi == lo => push_class_char(out, lo, next),
            ClassItem::Range(lo, hi) => {
                push_class_char(out, lo, Some('-'));
                out.push('-');
                push_class_char(out, hi, next);
            }
            ClassItem::Perl(perl) => out.push_str(match perl {
                PerlClass::Digit => "\\d",
                PerlClass::NotDigit => "\\D",
                PerlClass::Word => "\\w",
                PerlClass::NotWord => "\\W",
                PerlClass::Space => "\\s",
                PerlClass::NotSpace => "\\S",
            }),
        }
    }
    out.push(']');
}

fn push_class_char(out: &mut String, c: char, next: Option<char>) {
    match c {
        '\\' | ']' | '[' | '^' | '-' => {
            out.push('\\');
            out.push(c);
        }
        c => push_char_escaped(out, c, next),
    }
}

/// Writes a regex pattern between slashes: a bare `/` becomes `\/`; escape
/// pairs are kept as they are.
fn print_regex_pattern(out: &mut String, pattern: &str) {
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                out.push('\\');
                if let Some(next) = chars.next() {
                    out.push(next);
                }
            }
            '/' => out.push_str("\\/"),
            c => out.push(c),
        }
    }
}
