//! Earley steps memoized by configuration, for walks of the token trie from
//! one seeded parse (building mask-cache entries).
//!
//! What a row does with the rest of the input depends only on its items and,
//! for each item's origin, on the row there (whose items a completion
//! advances) — not on the path that led to it. A *configuration* is a row
//! whose origins are replaced by the configuration of the row they point to
//! (or by "this row"; rows before the walk are fixed and stay as they are).
//! Equal configurations behave alike, so the step from a configuration over
//! a byte is computed once, by the ordinary Earley code, and looked up ever
//! after. Inside a JSON string, where every plain character leads back to
//! the same configuration, a trie node then costs a table lookup instead of
//! an Earley row.
//!
//! Rows are only built into the matcher's history when a step must be
//! computed: the rows of the current path that were looked up are first
//! rebuilt from their configurations (any row of the path with the
//! configuration an origin names will do, since they behave alike).
//!
//! Walks from seeds of one rule start after the same row 0 (the sentinel
//! that marks the rule's end); the rows of the items a seed covers and the
//! seed's own row are named by their configurations like the rows of the
//! walk. So configurations mean the same in every walk from the rule, and
//! a grammar keeps the steps computed by one walk for the next
//! ([`StepStore`]): the next state of a property name, or a string in
//! another place, mostly looks its steps up.
//!
//! A configuration holds the count of a counted repetition only as far as
//! a token can tell it apart ([`crate::grammar::Repeat::representative`]): the matches it
//! still needs and has room for, each up to the matches a token can end
//! ([`count_cap`]: its length over the fewest bytes of a match, and two).
//! Counts of one class lead a walk to the same verdicts, and inside a
//! string far from its bounds every plain character leads back to the
//! same configuration as in an unbounded one.
//!
//! A memo also keeps what walks found below trie nodes reached in
//! configurations met before ([`Subtree`], see [`super::classify`]).
//!
//! Only for grammars without lookahead, whose rows are all there is to the
//! state.

use std::collections::hash_map::Entry;

use rustc_hash::FxHashMap;

use super::earley::{Start, Symbol};
use super::history::CAN_TERMINATE;
use super::item::{Item, Kind};
use super::parse::Parse;
use crate::byteset::ByteSet;
use crate::cache::Group;
use crate::grammar::{Grammar, count_cap};
use crate::tables::Edge;
use crate::trie::{MALFORMED, PLAIN_CLASSES, TEXT_CHARS, Utf8, byte_class, class_bytes};
use crate::zeros::written_zeros;

/// A step not computed yet.
const UNKNOWN: u32 = u32::MAX;
/// A step that no derivation survives.
const DEAD: u32 = u32::MAX - 1;
/// An origin that is the row itself, in a configuration.
pub(super) const SELF: u32 = u32::MAX;
/// The most configurations one walk keeps (a table of 512 bytes each);
/// past it, new rows are computed without memoizing.
const MAX_CONFIGS: usize = 1 << 14;

/// One entry of [`StepMemo::next`]: a configuration below [`MAX_CONFIGS`],
/// [`DEAD`] or [`UNKNOWN`], in 16 bits. Half the size of a `u32` table: a
/// step that builds a hundred entries at once (after `,"` in an object of
/// a hundred optional properties) spent two fifths of its time growing and
/// first touching these tables.
type NextStep = u16;
/// [`UNKNOWN`] and [`DEAD`] in a [`NextStep`].
const UNKNOWN_STEP: NextStep = NextStep::MAX;
const DEAD_STEP: NextStep = NextStep::MAX - 1;
const _: () = assert!(MAX_CONFIGS < DEAD_STEP as usize);

/// The fewest ASCII bytes a walk's root must scan for
/// [`StepMemo::counted_classes`] to look for classes to sort tokens by (in
/// runs of four bytes or more on average).
const MIN_CLASS_BYTES: usize = 16;

/// `step` as [`StepMemo::next`] stores it.
fn stored(step: u32) -> NextStep {
    match step {
        UNKNOWN => UNKNOWN_STEP,
        DEAD => DEAD_STEP,
        config => NextStep::try_from(config).expect("configurations below MAX_CONFIGS"),
    }
}

/// A step [`StepMemo::next`] stores.
fn loaded(step: NextStep) -> u32 {
    match step {
        UNKNOWN_STEP => UNKNOWN,
        DEAD_STEP => DEAD,
        config => u32::from(config),
    }
}
/// The configuration of a path row built past [`MAX_CONFIGS`].
const NONE: u32 = u32::MAX;
/// Rows before every walk that configurations name as they are: row 0, the
/// sentinel of the seed's rule.
const FIXED: usize = 1;
/// Letters, digits and non-ASCII characters: the byte classes
/// [`StepMemo::closed_below`] follows last.
const LETTERS: u64 =
    1 << byte_class(b'0') | 1 << byte_class(b'a') | 1 << byte_class(b'A') | 1 << TEXT_CHARS;
/// The most configurations [`StepMemo::closed_below`] follows.
const MAX_CLOSED: usize = 12;
/// The most Earley items [`StepMemo::closed_below`] spends on new steps in
/// one walk: a search's few states take a few dozen; a property name's
/// states (where any other name may follow too) would take as many as the
/// names have characters, and fail at [`MAX_CLOSED`].
const CLOSED_WORK: u64 = 256;
/// The most bytes of memoized steps a grammar keeps between walks.
const STORE_BYTES: usize = 32 << 20;
/// The most bytes of recorded subtrees one memo keeps.
const SUBTREE_BYTES: usize = 8 << 20;
/// The first slot of [`StepMemo::targets`] past the byte classes: one per
/// state of [`Utf8::INSIDE`], for finishing a character begun there.
const FINISH: usize = TEXT_CHARS as usize + 1;
/// The slots of [`StepMemo::targets`].
const TARGETS: usize = FINISH + Utf8::INSIDE.len();

/// Memoized steps a grammar keeps between walks, per seed rule (whose
/// sentinel is row 0 of a walk) and number of covered items (rows before
/// the seed's).
#[derive(Default)]
pub(super) struct StepStore {
    /// Per rule and covered parents: the memo, and how many rules the
    /// grammar had built when it was kept (see [`StepStore::take`]).
    memos: FxHashMap<(u32, usize), (usize, StepMemo)>,
    bytes: usize,
}

impl StepStore {
    /// The bytes of the memos kept.
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    /// The steps kept for walks from a seed of `rule` under `parents`
    /// covered items, by a walk in a grammar with `built` rules built: a
    /// memo kept by a walk in a later snapshot of a lazy grammar may name
    /// nodes this one does not have, and stays.
    pub(super) fn take(&mut self, rule: u32, parents: usize, built: usize) -> Option<StepMemo> {
        let Entry::Occupied(found) = self.memos.entry((rule, parents)) else {
            return None;
        };
        if found.get().0 > built {
            return None;
        }
        let (_, memo) = found.remove();
        self.bytes -= memo.bytes();
        Some(memo)
    }

    /// Keeps `memo` for the next walk from a seed of `rule` under
    /// `parents` covered items, made in a grammar with `built` rules
    /// built. A memo that has run out of configurations is dropped (a
    /// fresh one memoizes again); past [`STORE_BYTES`] the store starts
    /// over.
    pub(super) fn keep(&mut self, rule: u32, parents: usize, built: usize, memo: StepMemo) {
        if memo.shapes.len() >= MAX_CONFIGS {
            return;
        }
        let bytes = memo.bytes();
        if self.bytes + bytes > STORE_BYTES {
            self.memos.clear();
            self.bytes = 0;
        }
        self.bytes += bytes;
        if let Some((_, old)) = self.memos.insert((rule, parents), (built, memo)) {
            self.bytes -= old.bytes();
        }
    }
}

/// How a walk sorts tokens: what it records below a trie node holds only
/// for walks of the same kind.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub(super) struct WalkKind {
    /// Tokens that complete a dispatch's trigger are left to the full
    /// state.
    pub stop_at_arms: bool,
    /// Subtrees of the tokens of these byte classes are skipped (see
    /// [`StepMemo::plain_run`] and [`StepMemo::class_run`]): plain tokens
    /// for [`PLAIN_CLASSES`], none for 0.
    pub skips: u64,
}

/// What a walk found below a trie node, in trie ranks: the same below that
/// node in the same configuration, whatever the walk of the same kind.
pub(super) struct Subtree {
    /// Accepted ranks, as sorted disjoint ranges.
    pub accepted: Box<[(u32, u32)]>,
    /// The rest, as groups whose ends hold only the places the rule can
    /// end at or below the node (0: rejected unless it could end above).
    pub groups: Box<[Group]>,
}

impl Subtree {
    fn bytes(&self) -> usize {
        size_of_val(&*self.accepted) + size_of_val(&*self.groups) + 64
    }
}

/// What the tails of tokens ([`crate::tails::Tails`]) do from one
/// configuration that every plain character leads back to (see
/// [`StepMemo::plain_loops`]), for one kind of walk.
pub(super) struct TailVerdicts {
    /// One bit per tail rank: accepted.
    accepted: Box<[u64]>,
    /// Per tail rank: the index in `ends` of the places the rule can end
    /// in it, or 0 where it is accepted or rejected. Two bytes a tail: a
    /// table of every tail's places (21 KB for Llama 3.1, zeroed) cost
    /// more to make than the walk that sorted the tails.
    uncertain: Box<[u16]>,
    /// The distinct places the rule can end in uncertain tails, as a
    /// walk's groups hold them from the tail's first byte, after a 0.
    ends: Box<[u64]>,
}

impl TailVerdicts {
    /// The verdicts on `tails` tails from a walk of their trie that
    /// accepted the ranks of `accepted` and left `groups` uncertain.
    pub(super) fn new(tails: usize, accepted: &[(u32, u32)], groups: &[Group]) -> Self {
        let mut bits = written_zeros(tails.div_ceil(64));
        for &(start, end) in accepted {
            for rank in start..end {
                bits[rank as usize / 64] |= 1 << (rank % 64);
            }
        }
        let mut uncertain = vec![0u16; tails];
        let mut ends = vec![0u64];
        let mut indices: FxHashMap<u64, u16> = FxHashMap::default();
        for group in groups {
            let index = *indices.entry(group.ends).or_insert_with(|| {
                ends.push(group.ends);
                // Past the places a u16 tells apart (never met: tails
                // would need 65,535 ways to end), the last stands for
                // every place and the full state decides.
                u16::try_from(ends.len() - 1).unwrap_or(u16::MAX)
            });
            uncertain[group.start as usize..group.end as usize].fill(index);
        }
        ends.truncate(usize::from(u16::MAX));
        if ends.len() == usize::from(u16::MAX) {
            ends.push(u64::MAX);
        }
        Self {
            accepted: bits.into(),
            uncertain: uncertain.into(),
            ends: ends.into(),
        }
    }

    /// `None` if the tail of rank `tail` is accepted, else the places the
    /// rule can end in it (0: rejected).
    pub(super) fn of(&self, tail: u32) -> Option<u64> {
        let tail = tail as usize;
        (self.accepted[tail / 64] & 1 << (tail % 64) == 0)
            .then(|| self.ends[usize::from(self.uncertain[tail])])
    }

    fn bytes(&self) -> usize {
        size_of_val(&*self.accepted) + size_of_val(&*self.uncertain) + size_of_val(&*self.ends) + 64
    }
}

/// Per stop of the runs of a counted class
/// ([`crate::tails::RunTails::stops`]): what the tails after it do from
/// one configuration, `None` where the stop itself is refused.
pub(super) type StopVerdicts = Box<[Option<TailVerdicts>]>;

/// Memoized steps of a trie walk from the last row of a matcher.
pub(super) struct StepMemo {
    /// Rows of the history before the walk; the walk's depth `d` is row
    /// `base - 1 + d`.
    base: usize,
    /// The longest token of the trie walked: configurations hold the
    /// counts of repetitions by their
    /// [`crate::grammar::Repeat::representative`] under the [`count_cap`]
    /// for it.
    longest_token: usize,
    ids: FxHashMap<Box<[Item]>, u32>,
    /// Per configuration: its items, origins encoded (see [`StepMemo::encode`]).
    shapes: Vec<Box<[Item]>>,
    /// Per configuration: whether the output may end there.
    can_end: Vec<bool>,
    /// Per configuration and byte class (non-ASCII characters as
    /// [`TEXT_CHARS`], then the ways to finish a character from each state
    /// inside one, from [`FINISH`] on): the configuration that every byte
    /// of the class leads to, [`DEAD`] if they do not all lead to one, or
    /// [`UNKNOWN`] (see [`StepMemo::all_viable_below`]).
    targets: Vec<[u32; TARGETS]>,
    /// Per configuration: the byte classes known to lead back to it.
    loops: Vec<u64>,
    /// Per configuration: [`PLAIN_CLASSES`] if every plain token is known
    /// to be viable from it (see [`StepMemo::closed_below`]), else 0.
    closed: Vec<u64>,
    /// Per configuration: whether every plain character leads back to it
    /// (see [`StepMemo::plain_loops`]), once known.
    plain_loop: Vec<Option<bool>>,
    /// Per configuration: whether [`StepMemo::closed_below`] followed the
    /// set from it.
    closure_tried: Vec<bool>,
    /// The Earley items this walk may still spend on following sets.
    closure_work: u64,
    /// Per configuration: whether a walk reached it at the root of a
    /// subtree worth recording.
    reached: Vec<bool>,
    /// Per configuration: whether a dispatch's trigger has just completed
    /// (the row holds an item about to match its arm).
    at_arm: Vec<bool>,
    /// Per configuration: the configuration whose target it became first
    /// (see [`StepMemo::target`]), or [`NONE`].
    led_from: Vec<u32>,
    /// Per configuration: where one more match of its counted repetition
    /// leads, derived from the step that led to it ([`StepMemo::counted_on`]),
    /// [`DEAD`] where that cannot be derived, or [`UNKNOWN`].
    counted_on: Vec<u32>,
    /// Per configuration and byte: the configuration after it, [`DEAD`] or
    /// [`UNKNOWN`].
    next: Vec<[NextStep; 256]>,
    /// Per configuration: the first byte of each run of bytes its items
    /// scan alike (the same automaton edges take every byte of a run), so
    /// one step computed stands for its whole run.
    runs: Vec<ByteSet>,
    /// Per depth of the current path: its configuration.
    path: Vec<u32>,
    /// The configurations of the rows between row 0 and the seed's (the
    /// items the seed covers), row 1 first.
    lead: Vec<u32>,
    /// Depths of the current path whose rows are in the history.
    built: usize,
    /// The configurations earlier walks met: `0..met`.
    met: usize,
    /// Per configuration, trie node and kind of walk: what was found below
    /// the node.
    subtrees: FxHashMap<(u32, u32, WalkKind), Subtree>,
    /// Per configuration that plain text leads back to, and kind of walk:
    /// what the tails of tokens do from it.
    tails: FxHashMap<(u32, WalkKind), TailVerdicts>,
    /// Per configuration, kind of walk and ASCII byte classes: what the
    /// tails after each stop of the runs of those classes
    /// ([`crate::tails::RunTails`]) do from it, `None` where the stop
    /// itself is refused.
    run_tails: FxHashMap<(u32, WalkKind, u64), StopVerdicts>,
    /// Per configuration and set of byte classes: the chain of common
    /// targets from it, as far as it was followed.
    chains: FxHashMap<(u32, u64), Chain>,
    /// The outcomes of the chains looked up last, one per slot of a small
    /// table in front of `chains`: a walk asks about the same few chains
    /// at node after node, and the map is large.
    recent: Vec<RecentChain>,
    /// The items of all configurations, and the bytes of `subtrees` and
    /// `chains`.
    items: usize,
    subtree_bytes: usize,
    tail_bytes: usize,
    chain_bytes: usize,
}

/// A trie node settled by lookups (see [`StepMemo::settled`]).
pub(super) enum Settled {
    /// No token of the subtree is viable.
    Dead,
    /// Every token of the subtree is viable.
    Whole,
}

/// A chain of common targets (see [`StepMemo::all_viable_below`]).
#[derive(Default)]
struct Chain {
    /// The configurations along it, after the one it starts from.
    configs: Vec<u32>,
    end: ChainEnd,
}

/// Slots of [`StepMemo::recent`].
const RECENT_CHAINS: usize = 1024;

/// A chain's key and how far it is known (see [`StepMemo::recent`]).
#[derive(Clone, Copy)]
struct RecentChain {
    config: u32,
    len: u32,
    classes: u64,
    end: ChainEnd,
}

impl RecentChain {
    const EMPTY: Self = Self {
        config: NONE,
        len: 0,
        classes: 0,
        end: ChainEnd::Open,
    };

    /// The slot of the chain from `config` over `classes`.
    fn slot(config: u32, classes: u64) -> usize {
        let mixed =
            (u64::from(config) ^ classes.rotate_left(17)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        usize::try_from(mixed >> 54).expect("ten bits") % RECENT_CHAINS
    }
}

/// How a chain ends.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
enum ChainEnd {
    /// Followed only as far as it was needed.
    #[default]
    Open,
    /// It comes back to a configuration on it: it goes on for ever.
    Cycle,
    /// The classes lead to different configurations, or into a
    /// dispatch's arm, after its last configuration.
    Broken,
}

impl StepMemo {
    /// A walk from the last row of `matcher` (depth 0) over a trie whose
    /// tokens have at most `longest_token` bytes, with the steps of
    /// `kept`: an earlier walk's from the same rows before its seed, over
    /// the same trie (memos are per vocabulary).
    pub(super) fn new(matcher: &Parse, longest_token: usize, kept: Option<StepMemo>) -> Self {
        debug_assert!(!matcher.grammar.has_lookahead());
        let base = matcher.history.rows();
        let mut memo = match kept {
            Some(mut kept) if kept.base == base => {
                kept.path.clear();
                kept.lead.clear();
                kept.built = 0;
                kept.met = kept.shapes.len();
                kept.closure_work = CLOSED_WORK;
                kept
            }
            _ => Self {
                base,
                longest_token,
                ids: FxHashMap::default(),
                shapes: Vec::new(),
                can_end: Vec::new(),
                at_arm: Vec::new(),
                targets: Vec::new(),
                loops: Vec::new(),
                closed: Vec::new(),
                plain_loop: Vec::new(),
                closure_tried: Vec::new(),
                closure_work: CLOSED_WORK,
                reached: Vec::new(),
                led_from: Vec::new(),
                counted_on: Vec::new(),
                next: Vec::new(),
                runs: Vec::new(),
                path: Vec::new(),
                lead: Vec::new(),
                built: 0,
                met: 0,
                subtrees: FxHashMap::default(),
                items: 0,
                subtree_bytes: 0,
                tails: FxHashMap::default(),
                run_tails: FxHashMap::default(),
                tail_bytes: 0,
                chains: FxHashMap::default(),
                recent: vec![RecentChain::EMPTY; RECENT_CHAINS],
                chain_bytes: 0,
            },
        };
        for row in 1..base - 1 {
            let config = memo.intern_row(matcher, row);
            memo.lead.push(config);
        }
        let start = memo.intern(matcher);
        memo.path.push(start);
        memo
    }

    /// About the bytes the memo holds.
    fn bytes(&self) -> usize {
        self.shapes.len() * (size_of::<[u32; 256]>() + size_of::<[u32; TARGETS]>() + 88)
            + 2 * self.items * size_of::<Item>()
            + self.subtree_bytes
            + self.tail_bytes
            + self.chain_bytes
    }

    /// The configuration at `depth` of the current path (reached at the
    /// root of a subtree worth recording) if an earlier walk met it, and
    /// if it recurs: an earlier walk met it or this walk reached it at
    /// another such subtree before. What is below is replayed in the first
    /// case, recorded in the second (a configuration a walk reaches once
    /// is seldom reached again).
    pub(super) fn recurring(&mut self, depth: usize) -> (Option<u32>, Option<u32>) {
        let config = self.path[depth];
        if config == NONE {
            return (None, None);
        }
        let met = (config as usize) < self.met;
        let reached = std::mem::replace(&mut self.reached[config as usize], true);
        (met.then_some(config), (met || reached).then_some(config))
    }

    /// What was found below trie node `node` reached in `config`, by a
    /// walk of `kind` — or, for a walk that skips plain tokens, by one that
    /// did not: its record sorts the plain tokens too, as they are from
    /// `config`, and the skipping walk takes them from the same facts.
    pub(super) fn subtree(&self, config: u32, node: usize, kind: WalkKind) -> Option<&Subtree> {
        let node = u32::try_from(node).ok()?;
        self.subtrees.get(&(config, node, kind)).or_else(|| {
            let visiting = WalkKind { skips: 0, ..kind };
            (kind.skips != 0)
                .then(|| self.subtrees.get(&(config, node, visiting)))
                .flatten()
        })
    }

    /// Keeps what was found below trie node `node` reached in `config`,
    /// while the memo's recorded subtrees stay under [`SUBTREE_BYTES`].
    pub(super) fn keep_subtree(
        &mut self,
        config: u32,
        node: usize,
        kind: WalkKind,
        subtree: Subtree,
    ) {
        let bytes = subtree.bytes();
        let Ok(node) = u32::try_from(node) else {
            return;
        };
        if self.subtree_bytes + bytes <= SUBTREE_BYTES {
            self.subtree_bytes += bytes;
            self.subtrees.insert((config, node, kind), subtree);
        }
    }

    /// What the tails of tokens do from the configuration at `depth` of
    /// the current path, for walks of `kind`, if a walk sorted them.
    pub(super) fn tail_verdicts(&self, depth: usize, kind: WalkKind) -> Option<&TailVerdicts> {
        self.tails.get(&(self.path[depth], kind))
    }

    /// Keeps what the tails of tokens do from the configuration at `depth`
    /// of the current path, for walks of `kind`.
    pub(super) fn keep_tail_verdicts(
        &mut self,
        depth: usize,
        kind: WalkKind,
        verdicts: TailVerdicts,
    ) {
        self.tail_bytes += verdicts.bytes();
        self.tails.insert((self.path[depth], kind), verdicts);
    }

    /// What the tails after each stop of runs of the ASCII byte classes
    /// `classes` do from configuration `config`, for walks of `kind`, if
    /// sorted ([`StepMemo::keep_run_verdicts`]).
    pub(super) fn run_verdicts(
        &self,
        config: u32,
        kind: WalkKind,
        classes: u64,
    ) -> Option<&[Option<TailVerdicts>]> {
        self.run_tails
            .get(&(config, kind, classes))
            .map(|verdicts| &**verdicts)
    }

    /// Keeps what the tails after each stop of runs of `classes` do from
    /// configuration `config`, for walks of `kind` (`None` for a stop
    /// refused there).
    pub(super) fn keep_run_verdicts(
        &mut self,
        config: u32,
        kind: WalkKind,
        classes: u64,
        verdicts: StopVerdicts,
    ) {
        self.tail_bytes += size_of_val(&*verdicts)
            + verdicts
                .iter()
                .flatten()
                .map(TailVerdicts::bytes)
                .sum::<usize>();
        self.run_tails.insert((config, kind, classes), verdicts);
    }

    /// Whether the configuration at `depth` of the current path is known
    /// not to be one [`StepMemo::plain_loops`] holds for. Asked at every
    /// node a walk cannot settle otherwise, so inlined.
    #[inline(always)]
    #[allow(
        clippy::inline_always,
        reason = "per trie node of a walk; `#[inline]` left it a call (measured)"
    )]
    pub(super) fn plain_never_loops(&self, depth: usize) -> bool {
        let config = self.path[depth];
        config == NONE || self.plain_loop[config as usize] == Some(false)
    }

    /// Whether [`StepMemo::plain_loops`] is known for the configuration
    /// at `depth` of the current path.
    pub(super) fn plain_loop_known(&self, depth: usize) -> bool {
        let config = self.path[depth];
        config == NONE || self.plain_loop[config as usize].is_some()
    }

    /// Whether every plain character ([`PLAIN_CLASSES`]: printable ASCII
    /// but quote and backslash, and every non-ASCII character byte by
    /// byte) leads the configuration at `depth` of the current path back
    /// to itself, where the rule cannot end and no arm begins: the inside
    /// of a JSON string, or of any name but the known ones. What it does
    /// with a token then depends on the token's tail alone. Steps it needs
    /// are computed and memoized as [`StepMemo::step`] does.
    pub(super) fn plain_loops(&mut self, matcher: &mut Parse, depth: usize) -> bool {
        let config = self.path[depth];
        if config == NONE {
            return false;
        }
        let at = config as usize;
        if let Some(known) = self.plain_loop[at] {
            return known;
        }
        // Class by class, non-ASCII characters last (the dearest to
        // step): most configurations fail at the first.
        let mut loops = !self.can_end[at] && !self.at_arm[at];
        let mut rest = PLAIN_CLASSES;
        while loops && rest != 0 {
            let class = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            loops = self.loops[at] & 1 << class != 0
                || self.target(matcher, depth, class) == Some(config);
        }
        self.path.truncate(depth + 1);
        self.plain_loop[at] = Some(loops);
        loops
    }

    /// What a trie node at `depth` of the current path, over `byte`, with
    /// `classes` below it (at `utf8`), comes to when lookups alone settle
    /// it: its step known dead, or known to lead to a configuration whose
    /// loops take every class below — the whole subtree viable (a dispatch's
    /// arm about to match does not count when arms stop the walk). `None`
    /// when it takes the walk. Most of the nodes a walk visits are settled
    /// so: the siblings of a property name's path, each leading into "any
    /// other name".
    #[inline(always)]
    #[allow(
        clippy::inline_always,
        reason = "per trie node of a walk; `#[inline]` left it a call (measured)"
    )]
    pub(super) fn settled(
        &self,
        depth: usize,
        byte: u8,
        classes: u64,
        utf8: Utf8,
        stop_at_arms: bool,
    ) -> Option<Settled> {
        let from = self.path[depth - 1];
        let to = loaded(*self.next.get(from as usize)?.get(usize::from(byte))?);
        match to {
            DEAD => Some(Settled::Dead),
            UNKNOWN => None,
            to => {
                let to = to as usize;
                let whole = classes == 0
                    || (utf8 == Utf8::Boundary
                        && classes & 1 << MALFORMED == 0
                        && classes & !(self.loops[to] | self.closed[to]) == 0);
                (whole && !(stop_at_arms && self.at_arm[to])).then_some(Settled::Whole)
            }
        }
    }

    /// Steps from depth `depth - 1` of the current path over `byte` (the
    /// path below it is dropped); whether a derivation survives.
    /// Inlined up to the memo's answer: most steps of a walk are known.
    #[inline(always)]
    #[allow(
        clippy::inline_always,
        reason = "per trie node of a walk; `#[inline]` left it a call (measured)"
    )]
    pub(super) fn step(&mut self, matcher: &mut Parse, depth: usize, byte: u8) -> bool {
        self.path.truncate(depth);
        self.built = self.built.min(depth - 1);
        let from = self.path[depth - 1];
        let known = self
            .next
            .get(from as usize)
            .map_or(UNKNOWN, |next| loaded(next[usize::from(byte)]));
        match known {
            DEAD => false,
            UNKNOWN => self.compute_step(matcher, depth, byte),
            to => {
                self.path.push(to);
                true
            }
        }
    }

    /// [`StepMemo::step`] where the memo does not know the step yet: one
    /// Earley step, memoized for the run of bytes `byte` is in.
    fn compute_step(&mut self, matcher: &mut Parse, depth: usize, byte: u8) -> bool {
        let from = self.path[depth - 1];
        self.build(matcher, depth - 1);
        let viable = matcher.push(Start::Scan(Symbol::Byte(byte)), 0);
        let to = if viable {
            self.built = depth;
            self.intern(matcher)
        } else {
            DEAD
        };
        if let Some(next) = self.next.get_mut(from as usize)
            && to != NONE
        {
            let starts = self.runs[from as usize];
            let first = (0..=byte).rev().find(|&b| starts.contains(b)).unwrap_or(0);
            let end = (usize::from(byte) + 1..256)
                .find(|&b| starts.contains(u8::try_from(b).expect("a byte")))
                .unwrap_or(256);
            next[usize::from(first)..end].fill(stored(to));
        }
        if viable {
            self.path.push(to);
        }
        viable
    }

    /// Whether the output may end at `depth` of the current path.
    #[inline]
    pub(super) fn can_terminate(&self, depth: usize, matcher: &Parse) -> bool {
        match self.path[depth] {
            NONE => matcher.can_end(),
            config => self.can_end[config as usize],
        }
    }

    /// Whether a dispatch's trigger completes at `depth` of the current path.
    #[inline]
    pub(super) fn at_arm(&self, depth: usize, matcher: &Parse) -> bool {
        match self.path[depth] {
            NONE => enters_arm(matcher.history.last()),
            config => self.at_arm[config as usize],
        }
    }

    /// Whether every token below a trie node at `depth` of the current
    /// path is viable, given what is below the node: `classes` (its
    /// [`crate::trie::TokenTrie::classes_below`]), `height` (the most bytes
    /// a token goes on below it) and `utf8` (where the node stands in
    /// UTF-8). So it is when the bytes of every class — and, for
    /// [`TEXT_CHARS`], every non-ASCII character, each of its bytes viable
    /// — lead from the configuration there to one and the same
    /// configuration, and from that one on to one same configuration, and
    /// so on for `height` steps or until the chain comes back to a
    /// configuration on it. Inside a character, every way to finish it
    /// must lead to one configuration first, where the chain starts. The
    /// inside of a string leads back to itself; a string of bounded length
    /// steps its count down. Or, where only plain tokens are below, when
    /// the configurations plain characters lead to stay viable without
    /// one chain ([`StepMemo::closed_below`]: a search in a string). A
    /// walk then takes the whole subtree at once. Steps it needs are
    /// computed and memoized as [`StepMemo::step`] does; the path past
    /// `depth` is dropped.
    #[inline(always)]
    #[allow(
        clippy::inline_always,
        reason = "per trie node of a walk; `#[inline]` left it a call (measured)"
    )]
    pub(super) fn all_viable_below(
        &mut self,
        matcher: &mut Parse,
        depth: usize,
        classes: u64,
        height: usize,
        utf8: Utf8,
    ) -> bool {
        let config = self.path[depth];
        if config == NONE || classes & 1 << MALFORMED != 0 {
            return false;
        }
        if utf8 == Utf8::Boundary && classes & !self.loops[config as usize] == 0 {
            return true;
        }
        self.chain_below(matcher, depth, classes, height, utf8)
    }

    /// [`StepMemo::all_viable_below`] past the loops test: a chain of
    /// common targets, or a closed set.
    fn chain_below(
        &mut self,
        matcher: &mut Parse,
        depth: usize,
        classes: u64,
        height: usize,
        utf8: Utf8,
    ) -> bool {
        // The chain starts at `start` and goes on `height` more levels.
        let (start, height) = match utf8 {
            Utf8::Boundary => (depth, height),
            Utf8::Inside { remaining, .. } => {
                let Some(finished) = utf8
                    .inside_index()
                    .and_then(|index| self.target(matcher, depth, FINISH + index))
                else {
                    return false;
                };
                let remaining = usize::from(remaining);
                if self.at_arm[finished as usize] || !self.stands_on_path(finished, depth) {
                    return false;
                }
                if height <= remaining {
                    return true;
                }
                self.path.truncate(depth + 1);
                self.path.push(finished);
                self.built = self.built.min(depth);
                (depth + 1, height - remaining)
            }
        };
        let viable = self.chain_reaches(matcher, start, classes, height)
            || (classes & !PLAIN_CLASSES == 0 && self.closed_below(matcher, start));
        self.path.truncate(depth + 1);
        viable
    }

    /// Whether every plain token ([`PLAIN_CLASSES`]: printable ASCII but
    /// quote and backslash, and whole non-ASCII characters) is viable from
    /// the configuration at `depth` of the current path: the
    /// configurations plain characters lead to, and theirs on, are a closed
    /// set in which none dies and no arm begins. A search for a word in a
    /// string (`"pattern": "wifi"`) has no chain of common targets — `w`
    /// leads elsewhere than `a` — but every character keeps it alive, in
    /// one of a few states. Followed once per configuration, depth first
    /// with punctuation and white space before letters, digits and
    /// characters (where the set dies, it mostly dies there): at most
    /// [`MAX_CLOSED`] configurations, within [`CLOSED_WORK`] Earley items a
    /// walk, each stepped from just below `depth`, and only configurations
    /// whose origins are those of the first one (or the first one itself).
    /// A closed set's configurations take every plain subtree at once from
    /// then on ([`StepMemo::settled`] and the loops test).
    fn closed_below(&mut self, matcher: &mut Parse, depth: usize) -> bool {
        let root = self.path[depth];
        if root == NONE {
            return false;
        }
        if self.closure_tried[root as usize] || self.closure_work == 0 {
            return self.closed[root as usize] != 0;
        }
        self.closure_tried[root as usize] = true;
        // Most configurations refuse some plain byte outright: no item
        // scans it.
        let next = &self.next[root as usize];
        let refused = plain_first_bytes().any(|byte| next[usize::from(byte)] == DEAD_STEP);
        if refused {
            return false;
        }
        let work = matcher.work;
        let mut set = vec![root];
        // Per configuration being followed: the classes left to follow
        // from it, the ones that mostly end things first.
        let mut stack = vec![(root, PLAIN_CLASSES & !LETTERS, PLAIN_CLASSES & LETTERS)];
        let closed = loop {
            let Some((config, first, then)) = stack.last_mut() else {
                break true;
            };
            let rest = if *first != 0 { first } else { then };
            if *rest == 0 {
                stack.pop();
                continue;
            }
            let class = u8::try_from(rest.trailing_zeros()).expect("a class below 64");
            *rest &= *rest - 1;
            let config = *config;
            if set.len() > MAX_CLOSED || matcher.work - work > self.closure_work {
                break false;
            }
            self.path.truncate(depth + 1);
            self.path.push(config);
            self.built = self.built.min(depth);
            let found = set.len();
            let viable = match self.target(matcher, depth + 1, usize::from(class)) {
                Some(target) => self.add_to(&mut set, target, root),
                // A character's bytes are not stepped one by one here.
                None if class == TEXT_CHARS => false,
                None => class_bytes(class).all(|byte| {
                    self.step(matcher, depth + 2, byte)
                        && self.add_to(&mut set, self.path[depth + 2], root)
                }),
            };
            if !viable {
                break false;
            }
            // A configuration of a closed set found before needs no
            // following.
            stack.extend(
                set[found..]
                    .iter()
                    .filter(|&&new| self.closed[new as usize] == 0)
                    .map(|&new| (new, PLAIN_CLASSES & !LETTERS, PLAIN_CLASSES & LETTERS)),
            );
        };
        self.path.truncate(depth + 1);
        self.closure_work = self.closure_work.saturating_sub(matcher.work - work);
        // Each configuration of the set has its own set within this one:
        // closed if this one is, and not followed again if not (it would
        // mostly fail again, after the same work).
        for &config in &set {
            if closed {
                self.closed[config as usize] = PLAIN_CLASSES;
            }
            self.closure_tried[config as usize] = true;
        }
        closed
    }

    /// Adds `config`, found from `root`, to `set` unless it holds it;
    /// whether it may be followed: not past [`MAX_CONFIGS`], no arm about
    /// to begin, its origins those of `root`
    /// ([`StepMemo::origins_within`]).
    fn add_to(&self, set: &mut Vec<u32>, config: u32, root: u32) -> bool {
        if set.contains(&config) {
            return true;
        }
        if config == NONE || self.at_arm[config as usize] || !self.origins_within(config, root) {
            return false;
        }
        set.push(config);
        true
    }

    /// Whether every origin of configuration `config` is one of `root`'s,
    /// `root` itself, its own row or a row before the walk's path.
    fn origins_within(&self, config: u32, root: u32) -> bool {
        let root_code = self.base_code() + root;
        let root_origins = &self.shapes[root as usize];
        self.shapes[config as usize].iter().all(|item| {
            let origin = item.origin;
            origin == SELF
                || (origin as usize) < FIXED
                || origin == root_code
                || root_origins
                    .iter()
                    .any(|root_item| root_item.origin == origin)
                || (origin.checked_sub(self.base_code()))
                    .is_some_and(|wanted| self.lead.contains(&wanted))
        })
    }

    /// How many plain characters ([`PLAIN_CLASSES`]) the configuration at
    /// the root of the walk takes, when that number alone sorts every
    /// plain token: from it, every plain character leads to one same
    /// configuration, and from that one on to one same configuration, for
    /// the number returned, after which every plain character is refused
    /// (or for at least `longest`, the characters of the longest plain
    /// token); and on the way the rule can neither end nor begin an arm.
    /// A plain token is then accepted if it has at most that many
    /// characters and rejected if not — the inside of a JSON string of
    /// bounded length, wherever in its count — so a walk takes them all at
    /// once from [`crate::trie::TokenTrie::plain_within`] and only visits
    /// the subtrees that hold other tokens. `None` when it is not so.
    pub(super) fn plain_run(&mut self, matcher: &mut Parse, longest: usize) -> Option<usize> {
        self.class_run(matcher, PLAIN_CLASSES, longest)
    }

    /// The configurations the characters of `classes` lead the walk's
    /// root through, the root first, for up to `levels` characters: the
    /// `p`th is where any `p` of them lead. Fewer where they are refused
    /// past the last (the count of a bounded string runs out); round and
    /// round where the chain comes back into itself (past a string's
    /// `minLength`). `None` where they do not all lead to one
    /// configuration, or where on the way the rule can end or an arm
    /// begin (as [`StepMemo::class_run`] says). With them, how many of
    /// them are distinct.
    pub(super) fn chain(
        &mut self,
        matcher: &mut Parse,
        classes: u64,
        levels: usize,
    ) -> Option<(Vec<u32>, usize)> {
        let run = self.class_run(matcher, classes, levels)?;
        let root = self.path[0];
        let chain = self.chains.get(&(root, classes))?;
        let mut configs = Vec::with_capacity(run + 1);
        configs.push(root);
        configs.extend_from_slice(&chain.configs[..chain.configs.len().min(run)]);
        let distinct = configs.len();
        if configs.len() <= run {
            // A cycle: the last configuration leads back to one before it.
            let last = *configs.last().expect("the root is there");
            let class = classes.trailing_zeros() as usize;
            let back = self.targets[last as usize][class];
            let from = configs.iter().position(|&config| config == back)?;
            let cycle = configs.len() - from;
            while configs.len() <= run {
                configs.push(configs[from + (configs.len() - from) % cycle]);
            }
        }
        Some((configs, distinct))
    }

    /// Puts `configs` on the current path from depth 1 on (below the
    /// walk's root), keeping the rows of the depths that stay as they were.
    pub(super) fn stand_on(&mut self, configs: &[u32]) {
        let same = (self.path.iter().skip(1))
            .zip(configs)
            .take_while(|(on, wanted)| on == wanted)
            .count();
        self.path.truncate(1 + same);
        self.path.extend_from_slice(&configs[same..]);
        self.built = self.built.min(same);
    }

    /// [`StepMemo::tail_verdicts`] of configuration `config`.
    pub(super) fn tail_verdicts_of(&self, config: u32, kind: WalkKind) -> Option<&TailVerdicts> {
        self.tails.get(&(config, kind))
    }

    /// The ASCII byte classes whose every byte leads the walk's root to
    /// one same configuration — the classes of a counted repetition of a
    /// character class (`[A-Za-z0-9 .-]{1,32}`), the most classes that
    /// lead to one — or 0 where the root counts no repetition.
    pub(super) fn counted_classes(&mut self, matcher: &mut Parse) -> u64 {
        let start = self.path[0];
        if start == NONE {
            return 0;
        }
        // A row that scans few ASCII bytes (a literal, a number's digits),
        // or scans them each its own way (the first bytes of many property
        // names), has no class worth sorting tokens by.
        let (next, starts) = (&self.next[start as usize], self.runs[start as usize]);
        let scanned = (0..128u8).filter(|&byte| next[usize::from(byte)] != DEAD_STEP);
        let (bytes, runs) = scanned.fold((0, 0), |(bytes, runs), byte| {
            (bytes + 1, runs + usize::from(starts.contains(byte)))
        });
        if bytes < MIN_CLASS_BYTES || bytes < 4 * runs {
            return 0;
        }
        let mut by_target: Vec<(u32, u64)> = Vec::new();
        for class in 0..TEXT_CHARS {
            let Some(target) = self.target(matcher, 0, usize::from(class)) else {
                continue;
            };
            match by_target.iter_mut().find(|(known, _)| *known == target) {
                Some((_, classes)) => *classes |= 1 << class,
                None => by_target.push((target, 1 << class)),
            }
        }
        by_target
            .into_iter()
            .map(|(_, classes)| classes)
            .max_by_key(|classes| classes.count_ones())
            .unwrap_or(0)
    }

    /// How many characters of `classes` the root takes, as
    /// [`StepMemo::plain_run`] says: for the ASCII byte classes of
    /// [`StepMemo::counted_classes`], in bytes.
    pub(super) fn class_run(
        &mut self,
        matcher: &mut Parse,
        classes: u64,
        longest: usize,
    ) -> Option<usize> {
        let start = self.path[0];
        if start == NONE || self.can_end[start as usize] || self.at_arm[start as usize] {
            return None;
        }
        let reaches = self.chain_reaches(matcher, 0, classes, longest);
        let chain = self.chains.get(&(start, classes))?;
        let run = chain.configs.len().min(longest);
        let configs = &chain.configs[..run];
        if configs
            .iter()
            .any(|&config| self.can_end[config as usize] || self.at_arm[config as usize])
        {
            return None;
        }
        if reaches {
            return Some(longest);
        }
        // Broken: exhausted only if no byte of the classes goes on from
        // its end.
        let configs = configs.to_vec();
        self.path.truncate(1);
        self.path.extend_from_slice(&configs);
        self.built = 0;
        let exhausted = if classes == PLAIN_CLASSES {
            plain_first_bytes().all(|byte| !self.step(matcher, run + 1, byte))
        } else {
            (0..TEXT_CHARS)
                .filter(|class| classes & 1 << class != 0)
                .flat_map(class_bytes)
                .all(|byte| !self.step(matcher, run + 1, byte))
        };
        self.path.truncate(1);
        exhausted.then_some(run)
    }

    /// Whether the chain of common targets of `classes` (see
    /// [`StepMemo::all_viable_below`]) from the configuration at `start` of
    /// the current path goes on for `height` levels or comes back into
    /// itself. A chain depends only on the configuration it starts from and
    /// the classes, so it is kept per both and followed further only when
    /// a deeper subtree needs it.
    fn chain_reaches(
        &mut self,
        matcher: &mut Parse,
        start: usize,
        classes: u64,
        height: usize,
    ) -> bool {
        let key = (self.path[start], classes);
        if height > 0 && self.targets_known_apart(key.0, classes) {
            return false;
        }
        let slot = RecentChain::slot(key.0, key.1);
        let recent = self.recent[slot];
        if recent.config == key.0 && recent.classes == key.1 {
            match recent.end {
                ChainEnd::Cycle => return true,
                _ if recent.len as usize >= height => return true,
                ChainEnd::Broken => return false,
                ChainEnd::Open => {}
            }
        }
        if let Some(chain) = self.chains.get(&key) {
            self.recent[slot] = RecentChain {
                config: key.0,
                len: u32::try_from(chain.configs.len()).expect("chains fit in u32"),
                classes: key.1,
                end: chain.end,
            };
            match chain.end {
                ChainEnd::Cycle => return true,
                _ if chain.configs.len() >= height => return true,
                ChainEnd::Broken => return false,
                ChainEnd::Open => {}
            }
        }
        let mut chain = self.chains.remove(&key).unwrap_or_else(|| {
            self.chain_bytes += size_of::<((u32, u64), Chain)>();
            Chain::default()
        });
        // Stand at the end of the chain as far as it is known.
        self.path.truncate(start + 1);
        self.path.extend_from_slice(&chain.configs);
        self.built = self.built.min(start);
        let mut level = start + chain.configs.len();
        let viable = loop {
            if chain.configs.len() >= height {
                break true;
            }
            let Some(next) = self.common_target(matcher, level, classes) else {
                chain.end = ChainEnd::Broken;
                break false;
            };
            if self.path[start..=level].contains(&next) {
                chain.end = ChainEnd::Cycle;
                break true;
            }
            if self.at_arm[next as usize] || !self.stands_on_path(next, level) {
                chain.end = ChainEnd::Broken;
                break false;
            }
            // On along the chain: `next` stands at the next depth. Room
            // for the rest of the height at once (a chain grown one by one
            // is reallocated at every doubling).
            if chain.configs.len() == chain.configs.capacity() {
                chain.configs.reserve(height - chain.configs.len());
            }
            chain.configs.push(next);
            self.chain_bytes += size_of::<u32>();
            self.path.truncate(level + 1);
            self.path.push(next);
            self.built = self.built.min(level);
            level += 1;
        };
        self.recent[slot] = RecentChain {
            config: key.0,
            len: u32::try_from(chain.configs.len()).expect("chains fit in u32"),
            classes: key.1,
            end: chain.end,
        };
        self.chains.insert(key, chain);
        viable
    }

    /// Whether the memoized targets of `classes` from `config` already
    /// show that no chain starts there: one class is dead, or two lead to
    /// different configurations. Most nodes above a quote inside a string
    /// are so, each with classes of its own below it; this answers them
    /// without a chain to look up or keep.
    fn targets_known_apart(&self, config: u32, classes: u64) -> bool {
        let targets = &self.targets[config as usize];
        let mut common = None;
        let mut rest = classes;
        while rest != 0 {
            let class = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            match targets[class] {
                UNKNOWN => {}
                DEAD => return true,
                target if *common.get_or_insert(target) != target => return true,
                _ => {}
            }
        }
        false
    }

    /// Whether the rows the items of configuration `config` start at are
    /// all on the current path up to `depth` (or before the walk): a chain
    /// of targets leaves out the rows inside characters, so a configuration
    /// with an item begun inside one cannot stand on it.
    fn stands_on_path(&self, config: u32, depth: usize) -> bool {
        self.shapes[config as usize].iter().all(|item| {
            let origin = item.origin;
            origin == SELF
                || (origin as usize) < FIXED
                || (origin.checked_sub(self.base_code())).is_some_and(|wanted| {
                    self.path[..=depth].contains(&wanted) || self.lead.contains(&wanted)
                })
        })
    }

    /// The configuration that every byte of every class of `classes` leads
    /// to from the configuration at `depth` of the current path, if one.
    fn common_target(&mut self, matcher: &mut Parse, depth: usize, classes: u64) -> Option<u32> {
        let mut common = None;
        let mut rest = classes;
        while rest != 0 {
            let class = u8::try_from(rest.trailing_zeros()).expect("a class below 64");
            rest &= rest - 1;
            let target = self.target(matcher, depth, usize::from(class))?;
            if *common.get_or_insert(target) != target {
                return None;
            }
        }
        common
    }

    /// The configuration that every byte of byte class `slot` leads to
    /// from the configuration at `depth` of the current path, if one:
    /// every non-ASCII character for [`TEXT_CHARS`], every way to finish
    /// the character from state [`Utf8::INSIDE`]`[slot - FINISH]` past
    /// it. Memoized per configuration.
    fn target(&mut self, matcher: &mut Parse, depth: usize, slot: usize) -> Option<u32> {
        let config = self.path[depth];
        let mut known = self.targets[config as usize][slot];
        if known == UNKNOWN {
            // Where the class that led here makes one more match again,
            // that step follows from the last one.
            let from = self.led_from[config as usize];
            known = (from != NONE && self.targets[from as usize][slot] == config)
                .then(|| self.counted_on(&matcher.grammar, config))
                .flatten()
                .or_else(|| self.counted_inside(&matcher.grammar, config, slot))
                .unwrap_or_else(|| self.stepped_target(matcher, depth, slot));
            self.targets[config as usize][slot] = known;
            if known == config && slot < FINISH {
                self.loops[config as usize] |= 1 << slot;
            }
            if known != DEAD && known != config && self.led_from[known as usize] == NONE {
                self.led_from[known as usize] = config;
            }
        }
        (known != DEAD).then_some(known)
    }

    /// [`StepMemo::target`] by Earley steps, or [`DEAD`].
    fn stepped_target(&mut self, matcher: &mut Parse, depth: usize, slot: usize) -> u32 {
        let mut target = None;
        let all = match slot.checked_sub(TEXT_CHARS as usize) {
            None => class_bytes(u8::try_from(slot).expect("a byte class")).all(|byte| {
                self.step(matcher, depth + 1, byte) && same(&mut target, self.path[depth + 1])
            }),
            Some(chars) => {
                let utf8 = chars
                    .checked_sub(1)
                    .map_or(Utf8::Boundary, |inside| Utf8::INSIDE[inside]);
                self.chars_lead(matcher, depth, 1, utf8, &mut Vec::new(), &mut target)
            }
        };
        self.path.truncate(depth + 1);
        target.filter(|_| all).unwrap_or(DEAD)
    }

    /// Whether every way to go on the non-ASCII character begun `level - 1`
    /// bytes below `depth` (where UTF-8 stands at `utf8`) is viable byte
    /// by byte and ends in one configuration, `target` (the first one
    /// found). Configurations inside a character already checked (with the
    /// same UTF-8 state) are in `seen`: what follows them was checked then.
    fn chars_lead(
        &mut self,
        matcher: &mut Parse,
        depth: usize,
        level: usize,
        utf8: Utf8,
        seen: &mut Vec<(u32, Utf8)>,
        target: &mut Option<u32>,
    ) -> bool {
        // A byte in the run of the byte before it (the configuration's
        // items scan both alike) that leaves UTF-8 where that one did
        // leads where it did: one step per run.
        let starts = self.runs[self.path[depth + level - 1] as usize];
        let mut last = None;
        for byte in utf8.next_bytes() {
            let Some(next) = utf8.advance(byte) else {
                continue;
            };
            let alike = last.is_some_and(|(before, led): (u8, Utf8)| {
                before.checked_add(1) == Some(byte) && led == next && !starts.contains(byte)
            });
            last = Some((byte, next));
            if alike {
                continue;
            }
            if !self.step(matcher, depth + level, byte) {
                return false;
            }
            let config = self.path[depth + level];
            let led = match next {
                Utf8::Boundary => same(target, config),
                // Never one inside which the rule may end or an arm
                // begin: a walk that takes the character at once would
                // miss that place (see [`StepMemo::plain_run`]).
                Utf8::Inside { .. }
                    if config == NONE
                        || self.can_end[config as usize]
                        || self.at_arm[config as usize] =>
                {
                    false
                }
                Utf8::Inside { .. } if seen.contains(&(config, next)) => true,
                Utf8::Inside { .. } => {
                    seen.push((config, next));
                    self.chars_lead(matcher, depth, level + 1, next, seen, target)
                }
            };
            if !led {
                return false;
            }
        }
        true
    }

    /// Puts the rows of the current path up to `depth` into the history.
    fn build(&mut self, matcher: &mut Parse, depth: usize) {
        matcher.truncate(self.base + self.built);
        let mut items = Vec::new();
        for d in self.built + 1..=depth {
            let config = self.path[d];
            let row = self.row(d);
            items.clear();
            items.extend(self.shapes[config as usize].iter().map(|&shape| {
                let origin = match shape.origin {
                    SELF => row,
                    origin if (origin as usize) < FIXED => origin,
                    code => {
                        let wanted = code - self.base_code();
                        match self.path[..d].iter().rposition(|&c| c == wanted) {
                            Some(at) => self.row(at),
                            None => {
                                let at =
                                    self.lead.iter().rposition(|&c| c == wanted).expect(
                                        "a configuration's origins are on every path to it",
                                    );
                                u32::try_from(at + 1).expect("rows fit in u32")
                            }
                        }
                    }
                };
                Item { origin, ..shape }
            }));
            let flags = if self.can_end[config as usize] {
                CAN_TERMINATE
            } else {
                0
            };
            matcher.history.push(&matcher.grammar, &items, flags, 0);
        }
        self.built = self.built.max(depth);
    }

    /// The history row of `depth` on the path.
    fn row(&self, depth: usize) -> u32 {
        u32::try_from(self.base - 1 + depth).expect("rows fit in u32")
    }

    /// The code of configuration 0 as an origin: configurations follow the
    /// rows before the walk.
    fn base_code(&self) -> u32 {
        u32::try_from(self.base).expect("rows fit in u32")
    }

    /// The configuration of the matcher's last row (at the end of the
    /// current path), added if new; [`NONE`] past [`MAX_CONFIGS`] or if
    /// the row points to one without a configuration.
    fn intern(&mut self, matcher: &Parse) -> u32 {
        self.intern_row(matcher, matcher.history.rows() - 1)
    }

    /// The configuration of row `row` of the matcher's history (the last,
    /// or a row before the walk's seed row), as [`StepMemo::intern`].
    fn intern_row(&mut self, matcher: &Parse, row: usize) -> u32 {
        let items = matcher.history.row(row);
        let mut shape = Vec::with_capacity(items.len());
        for &item in items {
            if inert(&matcher.grammar, item) {
                continue;
            }
            let Some(origin) = self.encode(item.origin as usize, row) else {
                return NONE;
            };
            let aux = match item.kind {
                Kind::Repeat => {
                    let repeat = matcher.grammar.repeat(item.a);
                    let unit = matcher.grammar.match_bytes(repeat.rule);
                    repeat.representative(item.aux, count_cap(self.longest_token, unit))
                }
                _ => item.aux,
            };
            shape.push(Item {
                aux,
                origin,
                ..item
            });
        }
        if let Some(&id) = self.ids.get(shape.as_slice()) {
            return id;
        }
        let can_end = matcher.history.flags(row) & CAN_TERMINATE != 0;
        self.add(&matcher.grammar, shape.into(), can_end, enters_arm(items))
    }

    /// A new configuration of items `shape` ([`NONE`] past
    /// [`MAX_CONFIGS`]).
    fn add(&mut self, grammar: &Grammar, shape: Box<[Item]>, can_end: bool, at_arm: bool) -> u32 {
        if self.shapes.len() == MAX_CONFIGS {
            return NONE;
        }
        let id = u32::try_from(self.shapes.len()).expect("configurations fit in u32");
        let (next, runs) = first_steps(grammar, &shape);
        self.items += shape.len();
        self.ids.insert(shape.clone(), id);
        self.shapes.push(shape);
        self.can_end.push(can_end);
        self.at_arm.push(at_arm);
        self.targets.push([UNKNOWN; TARGETS]);
        self.loops.push(0);
        self.closed.push(0);
        self.plain_loop.push(None);
        self.reached.push(false);
        self.led_from.push(NONE);
        self.counted_on.push(UNKNOWN);
        self.closure_tried.push(false);
        self.next.push(next);
        self.runs.push(runs);
        id
    }

    /// Where one more match of a counted repetition leads from `config`,
    /// without an Earley step, when the step that first led to it (from
    /// `led_from[config]`) was one match of that repetition and nothing
    /// else: the two configurations are alike but for the repetition's
    /// count, every other item began at their own row (or is a finished
    /// parse), and the bounds tell the two counts apart neither before
    /// nor after one more match. The Earley step from `config` then
    /// makes the same decisions as the one before it, and its row is
    /// `config`'s with the count one further: inside a bounded string,
    /// every character's configurations follow from the last count's
    /// instead of an Earley step per class and per way through a
    /// non-ASCII character.
    fn counted_on(&mut self, grammar: &Grammar, config: u32) -> Option<u32> {
        let known = self.counted_on[config as usize];
        if known != UNKNOWN {
            return (known != DEAD).then_some(known);
        }
        let on = self.count_on(grammar, config).unwrap_or(DEAD);
        self.counted_on[config as usize] = on;
        (on != DEAD).then_some(on)
    }

    /// Where class `slot` leads from `config`, a configuration inside a
    /// match begun at one count of a repetition (a character of a bounded
    /// string begun at some count: every item began there or at its own
    /// row), when the same configuration begun at the count before led
    /// to this count: it leads one count further
    /// ([`StepMemo::counted_on`] of this count). The two steps make the
    /// same decisions, the rows they end into being alike but for the
    /// count.
    fn counted_inside(&mut self, grammar: &Grammar, config: u32, slot: usize) -> Option<u32> {
        let base = self.base_code();
        let mut begun = None;
        for item in &self.shapes[config as usize] {
            if item.origin == SELF {
                continue;
            }
            let code = item.origin.checked_sub(base)?;
            if *begun.get_or_insert(code) != code {
                return None;
            }
        }
        let count = begun?;
        let before = self.led_from[count as usize];
        if before == NONE {
            return None;
        }
        let on = self.counted_on(grammar, count)?;
        let twin: Box<[Item]> = self.shapes[config as usize]
            .iter()
            .map(|&item| match item.origin {
                origin if origin == base + count => Item {
                    origin: base + before,
                    ..item
                },
                _ => item,
            })
            .collect();
        let twin = *self.ids.get(&twin)?;
        (self.targets[twin as usize][slot] == count).then_some(on)
    }

    /// [`StepMemo::counted_on`], worked out.
    fn count_on(&mut self, grammar: &Grammar, config: u32) -> Option<u32> {
        let from = self.led_from[config as usize];
        if from == NONE {
            return None;
        }
        let (before, after) = (&self.shapes[from as usize], &self.shapes[config as usize]);
        if before.len() != after.len() {
            return None;
        }
        let mut counted = None;
        for (at, (old, new)) in before.iter().zip(after.iter()).enumerate() {
            if old != new {
                let one_count = counted.is_none()
                    && new.kind == Kind::Repeat
                    && Item {
                        aux: old.aux,
                        ..*new
                    } == *old
                    && new.origin != SELF;
                if !one_count {
                    return None;
                }
                counted = Some(at);
            }
        }
        let at = counted?;
        let item = after[at];
        let repeat = grammar.repeat(item.a);
        let owner = grammar.node_rule(grammar.edge_node(item.a));
        // Every other item began at the configuration's own row, or is the
        // repetition's rule past it (or a finished parse): no other match
        // of the repeated rule can end into a count of this repetition.
        let apart = |other: &Item| {
            other.origin == SELF
                || other.kind == Kind::Done
                || (other.kind == Kind::Node
                    && other.origin == item.origin
                    && grammar.node_rule(other.a) == owner
                    && owner != repeat.rule)
        };
        if !after
            .iter()
            .enumerate()
            .all(|(other, shape)| other == at || apart(shape))
        {
            return None;
        }
        // The origin names a row before both (not one of the two, which
        // would name another row from the next configuration on).
        let origin_apart = (item.origin as usize) < FIXED
            || item
                .origin
                .checked_sub(self.base_code())
                .is_some_and(|origin| origin != from && origin != config);
        if !origin_apart {
            return None;
        }
        let cap = count_cap(self.longest_token, grammar.match_bytes(repeat.rule));
        let next = |count: u32| match repeat.max {
            None => count.saturating_add(1).min(repeat.min),
            Some(_) => count.saturating_add(1),
        };
        let (old, new) = (before[at].aux, item.aux);
        let decides = |count: u32| {
            (
                count >= repeat.min,
                repeat.below_max(count),
                next(count) >= repeat.min,
                repeat.below_max(next(count)),
            )
        };
        if repeat.representative(next(old), cap) != new || decides(old) != decides(new) {
            return None;
        }
        let mut shape: Box<[Item]> = after.clone();
        shape[at].aux = repeat.representative(next(new), cap);
        if let Some(&id) = self.ids.get(&shape) {
            return Some(id);
        }
        let (can_end, at_arm) = (self.can_end[config as usize], self.at_arm[config as usize]);
        let id = self.add(grammar, shape, can_end, at_arm);
        (id != NONE).then_some(id)
    }

    /// An origin of an item of row `row`, as a configuration holds it: row
    /// 0 as it is, every other row by its configuration (walks that share
    /// the memo differ there).
    fn encode(&self, origin: usize, row: usize) -> Option<u32> {
        if origin == row && row >= FIXED {
            Some(SELF)
        } else if origin < FIXED {
            Some(u32::try_from(origin).expect("rows fit in u32"))
        } else {
            let config = if origin < self.base - 1 {
                self.lead[origin - FIXED]
            } else {
                self.path[origin + 1 - self.base]
            };
            match config {
                NONE => None,
                config => Some(self.base_code() + config),
            }
        }
    }
}

/// Whether `item` has done all it can once its row is built: it scans
/// nothing and waits for nothing (a rule's end without edges, a finished
/// match). A configuration leaves such items out — the one a completed
/// character of a string leaves behind would otherwise name the row before
/// it, and no configuration inside a string would ever repeat.
///
/// [`Kind::Done`] stays: it is what lets the output end in its row, and its
/// origin is always row 0, so it never keeps a configuration from
/// repeating.
pub(super) fn inert(grammar: &Grammar, item: Item) -> bool {
    match item.kind {
        Kind::Node => grammar.edges(item.a).is_empty(),
        Kind::Ended => true,
        _ => false,
    }
}

/// The bytes a plain character ([`PLAIN_CLASSES`]) may begin with: plain
/// ASCII and the lead bytes of non-ASCII characters.
fn plain_first_bytes() -> impl Iterator<Item = u8> {
    (0x20..=0xF4u8).filter(|&byte| {
        if byte.is_ascii() {
            PLAIN_CLASSES & 1 << byte_class(byte) != 0
        } else {
            Utf8::Boundary.advance(byte).is_some()
        }
    })
}

/// Whether `config` is the one `target` holds, or the first: a step that
/// leads to a configuration (not past [`MAX_CONFIGS`]) the others led to.
fn same(target: &mut Option<u32>, config: u32) -> bool {
    config != NONE && *target.get_or_insert(config) == config
}

fn enters_arm(row: &[Item]) -> bool {
    row.iter().any(|item| item.kind == Kind::Arm)
}

/// The steps from `row`, as known before any is computed, and the runs
/// of bytes its items scan alike (see [`StepMemo::runs`]): bytes that no
/// item of the row scans are [`DEAD`], the rest [`UNKNOWN`]. Only
/// automaton nodes and free text scan bytes, so without free text a row
/// takes the bytes of its nodes' edges and nothing else — a walk then
/// rejects most of a trie level by a lookup instead of an Earley step.
/// A dispatch's free text scans each byte its own way: its bytes are runs
/// of one.
fn first_steps(grammar: &Grammar, row: &[Item]) -> ([NextStep; 256], ByteSet) {
    // Every byte dead but those an edge scans, written range by range (a
    // new configuration of a bounded string pays this at every count).
    let mut next = [DEAD_STEP; 256];
    let mut starts = ByteSet::default();
    starts.insert(0);
    for item in row {
        match item.kind {
            Kind::Node => {
                for edge in grammar.edges(item.a) {
                    if let Edge::Bytes { lo, hi } = edge.label() {
                        next[usize::from(lo)..=usize::from(hi)].fill(UNKNOWN_STEP);
                        starts.insert(lo);
                        if let Some(after) = hi.checked_add(1) {
                            starts.insert(after);
                        }
                    }
                }
            }
            Kind::Free => return ([UNKNOWN_STEP; 256], ByteSet::full()),
            Kind::TokenFree | Kind::Any => next = [UNKNOWN_STEP; 256],
            _ => {}
        }
    }
    (next, starts)
}
