//! `xg inspect`: a compiled grammar's automata, as a table or as Graphviz;
//! or what a bundle holds.

use std::fmt::Write;
use std::path::Path;

use anyhow::{Context, Result};

use xg_compiler::fsm::{self, Body, Fsm, Label};
use xg_compiler::pipeline::Compiled;

/// One line per rule: kind, nodes, edges, determinism, hashes.
pub fn summary(name: &str, compiled: &Compiled) -> String {
    let grammar = &compiled.automata;
    let tables = &compiled.tables;
    let bytes = std::mem::size_of_val(tables.rules.as_slice())
        + std::mem::size_of_val(tables.nodes.as_slice())
        + std::mem::size_of_val(tables.edges.as_slice())
        + std::mem::size_of_val(tables.token_sets.as_slice())
        + std::mem::size_of_val(tables.token_pool.as_slice())
        + std::mem::size_of_val(tables.dispatches.as_slice())
        + std::mem::size_of_val(tables.patterns.as_slice())
        + tables.byte_pool.len()
        + tables.name_pool.len();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{name}: {} rules, {} nodes, {} edges; tables {bytes} bytes; entry `{}`\n",
        grammar.rules.len(),
        tables.nodes.len(),
        tables.edges.len(),
        grammar.rule(grammar.root).name
    );
    let width = grammar
        .rules
        .iter()
        .map(|r| r.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = writeln!(
        out,
        "{:width$}  {:<14} {:>6} {:>6}  {:<5} {:<16}  lookahead",
        "rule", "kind", "nodes", "edges", "det", "hash"
    );
    for (rule, hash) in grammar.rules.iter().zip(&compiled.hashes) {
        let (kind, nodes, edges, deterministic) = match &rule.body {
            Body::Automaton(fsm) => (
                "automaton",
                fsm.nodes.len(),
                fsm.edge_count(),
                fsm.is_deterministic(),
            ),
            Body::Dispatch(d) => ("dispatch", 0, d.arms.len(), true),
            Body::TokenDispatch(d) => ("token dispatch", 0, d.arms.len(), true),
        };
        let lookahead = match (&rule.lookahead, hash.lookahead) {
            (Some(fsm), Some(h)) => format!("{} nodes, {h:016x}", fsm.nodes.len()),
            _ => "-".into(),
        };
        let _ = writeln!(
            out,
            "{:width$}  {kind:<14} {nodes:>6} {edges:>6}  {:<5} {:016x}  {lookahead}",
            rule.name,
            if deterministic { "yes" } else { "no" },
            hash.rule,
        );
    }
    out
}

/// A rule's automaton (and lookahead) in Graphviz dot format.
pub fn dot(grammar: &fsm::Grammar, rule: &fsm::Rule) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "digraph {:?} {{\n    rankdir=LR;\n    node [shape=circle];",
        rule.name
    );
    match &rule.body {
        Body::Automaton(fsm) => write_automaton(&mut out, grammar, fsm, "n"),
        Body::Dispatch(dispatch) => {
            let _ = writeln!(out, "    d [shape=box, label=\"dispatch\"];");
            for (trigger, arm) in &dispatch.arms {
                let trigger = escape(&String::from_utf8_lossy(trigger));
                let _ = writeln!(
                    out,
                    "    d -> \"{}\" [label=\"{trigger}\"];",
                    escape(&grammar.rule(*arm).name)
                );
            }
        }
        Body::TokenDispatch(dispatch) => {
            let _ = writeln!(out, "    d [shape=box, label=\"token dispatch\"];");
            for (token, arm) in &dispatch.arms {
                let _ = writeln!(
                    out,
                    "    d -> \"{}\" [label=\"token {token}\"];",
                    escape(&grammar.rule(*arm).name)
                );
            }
        }
    }
    if let Some(lookahead) = &rule.lookahead {
        let _ = writeln!(
            out,
            "    subgraph cluster_lookahead {{\n        label=\"lookahead\";"
        );
        write_automaton(&mut out, grammar, lookahead, "l");
        let _ = writeln!(out, "    }}");
    }
    out.push_str("}\n");
    out
}

fn write_automaton(out: &mut String, grammar: &fsm::Grammar, fsm: &Fsm, prefix: &str) {
    let _ = writeln!(
        out,
        "    {prefix}start [shape=point];\n    {prefix}start -> {prefix}0;"
    );
    for (n, node) in fsm.nodes.iter().enumerate() {
        if node.is_final {
            let _ = writeln!(out, "    {prefix}{n} [shape=doublecircle, label=\"{n}\"];");
        } else {
            let _ = writeln!(out, "    {prefix}{n} [label=\"{n}\"];");
        }
        for edge in &node.edges {
            let label = match edge.label {
                Label::Rule(rule) => format!("<{}>", grammar.rule(rule).name),
                Label::Repeat { rule, min, max } => {
                    let max = max.map(|m| m.to_string()).unwrap_or_default();
                    format!("<{}>{{{min},{max}}}", grammar.rule(rule).name)
                }
                other => other.to_string(),
            };
            let _ = writeln!(
                out,
                "    {prefix}{n} -> {prefix}{} [label=\"{}\"];",
                edge.target,
                escape(&label)
            );
        }
    }
}

fn escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

/// A bundle's version, sections and what they hold, every checksum
/// checked; true if all match.
pub fn bundle(path: &Path) -> Result<bool> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read `{}`", path.display()))?;
    let info =
        xg_runtime::bundle::inspect(&bytes).with_context(|| format!("`{}`", path.display()))?;
    outln!(
        "{}: xg bundle, format version {}, {} bytes",
        path.display(),
        info.version,
        info.len
    );
    match info.vocabulary {
        Some(fingerprint) => outln!("vocabulary: {fingerprint:016x}"),
        None => outln!("vocabulary: any (tables only)"),
    }
    outln!(
        "grammar: {} rules, {} nodes, {} edges",
        info.rules,
        info.nodes,
        info.edges
    );
    outln!(
        "precomputed mask entries: {} ({} damaged)\n",
        info.entries,
        info.damaged_entries
    );
    outln!(
        "{:<12} {:>10} {:>12}  checksum",
        "section",
        "offset",
        "bytes"
    );
    let mut ok = info.damaged_entries == 0;
    for section in &info.sections {
        ok &= section.checksum_ok;
        outln!(
            "{:<12} {:>10} {:>12}  {}",
            section.name,
            section.offset,
            section.len,
            if section.checksum_ok { "ok" } else { "DAMAGED" }
        );
    }
    Ok(ok)
}
