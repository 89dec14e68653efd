//! Grammar tables: every compiled grammar's tables validate, mirror the
//! automata, and tables with any index out of range are refused.

use proptest::prelude::*;
use xg_compiler::{Request, fsm, pipeline};
use xg_runtime::tables::{RuleRecord, Tables};

fn compile(text: &str) -> pipeline::Compiled {
    let mut request = Request::ahead_of_time();
    let file = request.add("test.xg", text);
    pipeline::compile(&mut request, file, "root")
        .unwrap_or_else(|| panic!("{}", request.diagnostics.render(&request.sources, false)))
}

fn grammars() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../grammars");
    let mut out: Vec<String> = [
        "std/json.xg",
        "examples/arithmetic.xg",
        "examples/xgrammar_compat.xg",
    ]
    .iter()
    .map(|p| std::fs::read_to_string(root.join(p)).unwrap())
    .collect();
    out.push(
        r#"root ::= "<" dispatch(stop=("<end>"), exclude=("<x>")) { "<n>" => [0-9]{1,30} "</n>" } ">" word "!"
           word ::= [a-z]+ (= "!")"#
            .into(),
    );
    out
}

#[test]
fn compiled_tables_validate_and_mirror_the_automata() {
    for text in grammars() {
        let compiled = compile(&text);
        let tables = &compiled.tables;
        tables.validate().unwrap();
        assert_eq!(tables.rules.len(), compiled.automata.rules.len());
        let nodes: usize = compiled
            .automata
            .rules
            .iter()
            .map(|rule| {
                let body = match &rule.body {
                    fsm::Body::Automaton(fsm) => fsm.nodes.len(),
                    _ => 0,
                };
                body + rule.lookahead.as_ref().map_or(0, |la| la.nodes.len())
            })
            .sum();
        assert_eq!(tables.nodes.len(), nodes);
        for (i, (record, rule)) in tables
            .rules
            .iter()
            .zip(&compiled.automata.rules)
            .enumerate()
        {
            assert_eq!(tables.rule_name(u32::try_from(i).unwrap()), rule.name);
            assert_eq!(record.hash, compiled.hashes[i].rule);
        }
        // Records are plain old data: the arrays are their bytes.
        let bytes: &[u8] = bytemuck::cast_slice(&tables.edges);
        assert_eq!(bytes.len(), tables.edges.len() * 20);
    }
}

/// Sets one `u32` of one record array to `value`.
fn corrupt(tables: &mut Tables, array: usize, index: usize, field: usize, value: u32) -> bool {
    fn poke<T: bytemuck::Pod>(records: &mut [T], index: usize, field: usize, value: u32) -> bool {
        let Some(record) = records.get_mut(index) else {
            return false;
        };
        let words: &mut [u32] = bytemuck::cast_slice_mut(std::slice::from_mut(record));
        let Some(word) = words.get_mut(field) else {
            return false;
        };
        *word = value;
        true
    }
    match array {
        0 => poke(&mut tables.rules, index, field, value),
        1 => poke(&mut tables.nodes, index, field, value),
        2 => poke(&mut tables.edges, index, field, value),
        3 => poke(&mut tables.token_sets, index, field, value),
        4 => poke(&mut tables.dispatches, index, field, value),
        _ => poke(&mut tables.patterns, index, field, value),
    }
}

#[test]
fn out_of_range_indices_are_refused() {
    let compiled = compile(&grammars()[3]);
    let valid = compiled.tables;
    let mut cases = 0;
    // Fields that hold indices or counts, with a value past any table.
    for (array, field) in [
        (0, 1),
        (0, 2),
        (0, 3),
        (0, 7),
        (1, 0),
        (1, 1),
        (2, 4),
        (4, 0),
        (4, 1),
        (5, 3),
    ] {
        let mut tables = valid.clone();
        if corrupt(&mut tables, array, 0, field, 1_000_000) {
            assert!(tables.validate().is_err(), "array {array} field {field}");
            cases += 1;
        }
    }
    assert!(cases >= 8);
    let mut tables = valid.clone();
    tables.root = u32::try_from(tables.rules.len()).unwrap();
    assert!(tables.validate().is_err());
    let mut tables = valid.clone();
    tables.rules[0].flags = 2;
    assert!(
        tables
            .validate()
            .unwrap_err()
            .to_string()
            .contains("unknown flags 0x2")
    );
    let mut tables = valid;
    tables.rules[0].kind = 7;
    assert!(
        tables
            .validate()
            .unwrap_err()
            .to_string()
            .contains("kind 7")
    );
    assert_eq!(RuleRecord::NONE, u32::MAX);
}

proptest! {
    /// Validation never panics, whatever a record holds; tables it lets
    /// through run in the matcher without panicking, however odd they are.
    #[test]
    fn validation_never_panics(
        array in 0..6usize,
        index in 0..8usize,
        field in 0..12usize,
        value in any::<u32>(),
        small in any::<bool>(),
        input in prop::collection::vec(any::<u8>(), 0..24),
    ) {
        let mut tables = compile(&grammars()[3]).tables;
        // Small values are often valid indices: odd tables that pass.
        let value = if small { value % 64 } else { value };
        corrupt(&mut tables, array, index, field, value);
        if let Ok(grammar) = xg_runtime::Grammar::new(tables) {
            let mut matcher = xg_runtime::Matcher::new(std::sync::Arc::new(grammar));
            for byte in input {
                let _ = matcher.forced_bytes();
                let _ = matcher.accept_bytes(&[byte]);
            }
            let _ = matcher.can_terminate();
        }
    }
}

#[test]
fn the_runtime_refuses_edges_between_automata() {
    let tables = compile(&grammars()[3]).tables;
    assert!(xg_runtime::Grammar::new(tables.clone()).is_ok());
    let mut leaving = tables.clone();
    let last = u32::try_from(leaving.nodes.len() - 1).unwrap();
    let edge = leaving
        .edges
        .iter_mut()
        .find(|e| e.target != last)
        .expect("an edge");
    edge.target = last;
    let error = xg_runtime::Grammar::new(leaving).unwrap_err().to_string();
    assert!(error.contains("leaves its automaton"), "{error}");
    let mut shared = tables;
    if shared.rules.len() > 1 && shared.rules[1].kind == RuleRecord::AUTOMATON {
        shared.rules[1].body = shared.rules[0].body;
        shared.rules[1].node_count = 1;
        let error = xg_runtime::Grammar::new(shared).unwrap_err().to_string();
        assert!(error.contains("two automata"), "{error}");
    }
}
