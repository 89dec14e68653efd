//! The Earley rows of a matcher, stored so that forking is cheap and
//! rollback costs no more than what it removes.
//!
//! Rows are grouped into segments of [`SEGMENT_ROWS`]. Full segments are
//! frozen behind an `Arc` and shared by forks; only the last, open segment is
//! copied. Rolling back into a frozen segment copies that one segment.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::item::{Item, Kind};
use crate::grammar::Grammar;
use crate::tables::Edge;

/// Rows per segment.
const SEGMENT_ROWS: usize = 64;

/// Per-row flag: the input so far is a complete sentence.
pub(super) const CAN_TERMINATE: u8 = 1;

/// Rows with more items than this index them by the rule they wait for, so
/// completing a rule does not look at every item of a large row (a context
/// matcher's first row holds every item of the grammar that waits for a
/// rule).
pub(super) const INDEX_ABOVE: usize = 32;

/// Calls `f` with each rule `item` waits for: whose match advances it.
pub(super) fn awaited_rules(grammar: &Grammar, item: &Item, mut f: impl FnMut(u32)) {
    match item.kind {
        Kind::Node if grammar.waits(item.a) => {
            for edge in grammar.edges(item.a) {
                if let Edge::Rule { rule } = edge.label() {
                    f(rule);
                }
            }
        }
        Kind::Repeat => f(grammar.repeat(item.a).rule),
        Kind::Arm | Kind::TokenArm => f(grammar.pattern(item.aux).arm),
        Kind::Root | Kind::SeedEnd | Kind::Wild => f(item.a),
        _ => {}
    }
}

/// The items of a large row that wait for each rule: their places in the
/// row.
#[derive(Debug, Default)]
pub(super) struct Waiting(FxHashMap<u32, Vec<u32>>);

impl Waiting {
    fn of(grammar: &Grammar, items: &[Item]) -> Self {
        let mut waiting = Self::default();
        waiting.extend(grammar, items, 0);
        waiting
    }

    /// Adds `items`, the row's items from place `first` on.
    pub(super) fn extend(&mut self, grammar: &Grammar, items: &[Item], first: usize) {
        for (place, item) in (first..).zip(items) {
            let place = u32::try_from(place).expect("row items fit in u32");
            awaited_rules(grammar, item, |rule| {
                let list = self.0.entry(rule).or_default();
                if list.last() != Some(&place) {
                    list.push(place);
                }
            });
        }
    }

    /// Forgets every item.
    pub(super) fn clear(&mut self) {
        self.0.clear();
    }

    /// The places of the items that wait for `rule`.
    pub(super) fn get(&self, rule: u32) -> &[u32] {
        self.0.get(&rule).map_or(&[], Vec::as_slice)
    }
}

#[derive(Clone, Debug, Default)]
struct Segment {
    items: Vec<Item>,
    /// Per row: the offset of its first item.
    starts: Vec<u32>,
    /// Per row: flags.
    flags: Vec<u8>,
    /// Per row: the step that built it (see [`History::step`]).
    steps: Vec<u32>,
    /// Per row: its index by awaited rule, if it is large.
    waiting: Vec<Option<Arc<Waiting>>>,
}

impl Segment {
    fn rows(&self) -> usize {
        self.starts.len()
    }

    fn row(&self, row: usize) -> &[Item] {
        let start = self.starts[row] as usize;
        let end = self
            .starts
            .get(row + 1)
            .map_or(self.items.len(), |&end| end as usize);
        &self.items[start..end]
    }

    fn truncate(&mut self, rows: usize) {
        if rows < self.rows() {
            self.items.truncate(self.starts[rows] as usize);
            self.starts.truncate(rows);
            self.flags.truncate(rows);
            self.steps.truncate(rows);
            self.waiting.truncate(rows);
        }
    }
}

/// The rows of a matcher, row 0 first.
#[derive(Clone, Debug, Default)]
pub(super) struct History {
    frozen: Vec<Arc<Segment>>,
    open: Segment,
}

impl History {
    /// The number of rows.
    pub(super) fn rows(&self) -> usize {
        self.frozen.len() * SEGMENT_ROWS + self.open.rows()
    }

    fn segment(&self, row: usize) -> (&Segment, usize) {
        let index = row / SEGMENT_ROWS;
        let segment = self.frozen.get(index).map_or(&self.open, |s| &**s);
        (segment, row % SEGMENT_ROWS)
    }

    /// The items of `row`.
    pub(super) fn row(&self, row: usize) -> &[Item] {
        let (segment, row) = self.segment(row);
        segment.row(row)
    }

    /// The flags of `row`.
    pub(super) fn flags(&self, row: usize) -> u8 {
        let (segment, row) = self.segment(row);
        segment.flags[row]
    }

    /// The index of `row` by awaited rule, if the row is large.
    pub(super) fn waiting(&self, row: usize) -> Option<&Waiting> {
        let (segment, row) = self.segment(row);
        segment.waiting[row].as_deref()
    }

    /// The items of the last row.
    pub(super) fn last(&self) -> &[Item] {
        self.row(self.rows() - 1)
    }

    /// The step that built `row`: the index of the token whose symbol it
    /// follows (0 for the rows a matcher starts with). What a limit in
    /// tokens counts.
    pub(super) fn step(&self, row: usize) -> u32 {
        let (segment, row) = self.segment(row);
        segment.steps[row]
    }

    /// Appends a row of `grammar`, built by step `step`.
    pub(super) fn push(&mut self, grammar: &Grammar, items: &[Item], flags: u8, step: u32) {
        if self.open.rows() == SEGMENT_ROWS {
            let full = std::mem::take(&mut self.open);
            self.frozen.push(Arc::new(full));
        }
        let start = u32::try_from(self.open.items.len()).expect("segment items fit in u32");
        self.open.starts.push(start);
        self.open.flags.push(flags);
        self.open.steps.push(step);
        self.open.items.extend_from_slice(items);
        let waiting = (items.len() > INDEX_ABOVE).then(|| Arc::new(Waiting::of(grammar, items)));
        self.open.waiting.push(waiting);
    }

    /// Keeps the first `rows` rows.
    pub(super) fn truncate(&mut self, rows: usize) {
        let frozen_rows = self.frozen.len() * SEGMENT_ROWS;
        if rows >= frozen_rows {
            self.open.truncate(rows - frozen_rows);
            return;
        }
        let index = rows / SEGMENT_ROWS;
        let mut open = Segment::clone(&self.frozen[index]);
        open.truncate(rows - index * SEGMENT_ROWS);
        self.frozen.truncate(index);
        self.open = open;
    }

    /// The total number of items, for tests and statistics.
    pub(super) fn items(&self) -> usize {
        self.frozen.iter().map(|s| s.items.len()).sum::<usize>() + self.open.items.len()
    }
}
