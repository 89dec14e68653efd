//! Compile budgets: grammars that arrive with a request (a JSON Schema, a
//! regex, a tool list) are compiled while a server waits, so a hostile or
//! huge one must end in a clear error, not a stall. [`Limits`] says how much
//! a compilation may take; a [`Budget`] is one compilation's running account,
//! checked by every stage whose work grows with the grammar.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How much one compilation may take.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Most rules a generated grammar may have (front ends that generate
    /// rules, such as JSON Schema, stop here).
    pub max_rules: usize,
    /// Longest the whole compilation may run.
    pub time: Option<Duration>,
    /// Set from another thread to stop the compilation.
    pub cancel: Option<Arc<AtomicBool>>,
    /// Most bytes the compilation's largest structures may take: the
    /// rules a front end generates, the automaton being built, and all
    /// the automata built. Counted as the structures grow, not by the
    /// allocator: the process's peak is a small multiple of it (see the
    /// book's security page).
    pub memory: Option<usize>,
}

/// [`Limits::memory`] by default: 256 MiB.
pub const DEFAULT_MEMORY_LIMIT: usize = 256 << 20;

impl Default for Limits {
    /// 100 000 rules, 2 seconds, 256 MiB ([`DEFAULT_MEMORY_LIMIT`]), no
    /// cancellation flag.
    fn default() -> Self {
        Self {
            max_rules: 100_000,
            time: Some(Duration::from_secs(2)),
            cancel: None,
            memory: Some(DEFAULT_MEMORY_LIMIT),
        }
    }
}

impl Limits {
    /// No limits: for grammars the user wrote and compiles ahead of time.
    pub fn unlimited() -> Self {
        Self {
            max_rules: usize::MAX,
            time: None,
            cancel: None,
            memory: None,
        }
    }
}

/// Why a compilation stopped early.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exceeded {
    /// More rules than [`Limits::max_rules`].
    Rules(usize),
    /// Longer than [`Limits::time`].
    Time(Duration),
    /// The cancellation flag was set.
    Cancelled,
    /// Larger than [`Limits::memory`] (the limit, in bytes).
    Memory(usize),
    /// A rule's automaton could not be made deterministic and is larger
    /// than a matcher can follow within bounded memory (see
    /// [`crate::fsm::MAX_NFA_NODES`]).
    Automaton {
        /// The automaton's nodes.
        nodes: usize,
    },
}

impl fmt::Display for Exceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exceeded::Rules(max) => {
                write!(f, "the grammar needs more than {max} rules (the limit)")
            }
            Exceeded::Time(time) => write!(f, "compiling took longer than {time:?} (the limit)"),
            Exceeded::Cancelled => f.write_str("compilation was cancelled"),
            Exceeded::Memory(bytes) => write!(
                f,
                "compiling needs more than {} MiB (the limit)",
                bytes.div_ceil(1 << 20)
            ),
            Exceeded::Automaton { nodes } => write!(
                f,
                "a rule's automaton cannot be made deterministic within limits and has {nodes} \
                 nodes, more than a matcher follows in bounded memory ({} at most)",
                crate::fsm::MAX_NFA_NODES
            ),
        }
    }
}

impl std::error::Error for Exceeded {}

/// One compilation's account against its [`Limits`], started when made.
#[derive(Clone, Debug)]
pub struct Budget {
    limits: Limits,
    started: Instant,
    spent: Spent,
}

/// Units of work between two checks of the clock and the cancel flag in
/// [`Budget::spend`]: a unit is a node, an edge or an item visited (some
/// nanoseconds to a microsecond), so a cancel is seen within milliseconds
/// while reading the clock costs well under 1 % of the work.
const UNITS_PER_CHECK: usize = 4096;

/// Units of work spent so far. Read and written without a locked
/// read-modify-write (a budget is used by one thread at a time; a lost
/// count only delays a check): counting stays as cheap as a plain add.
#[derive(Debug, Default)]
struct Spent(AtomicUsize);

impl Clone for Spent {
    fn clone(&self) -> Self {
        Self(AtomicUsize::new(self.0.load(Ordering::Relaxed)))
    }
}

impl Budget {
    /// A budget of `limits`, starting now.
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            started: Instant::now(),
            spent: Spent::default(),
        }
    }

    /// A budget without limits.
    pub fn unlimited() -> Self {
        Self::new(Limits::unlimited())
    }

    /// The limits this budget holds to.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// `Err` once time is up or the compilation was cancelled. Cheap enough
    /// to call per rule.
    pub fn check(&self) -> Result<(), Exceeded> {
        if let Some(time) = self.limits.time
            && self.started.elapsed() > time
        {
            return Err(Exceeded::Time(time));
        }
        if let Some(cancel) = &self.limits.cancel
            && cancel.load(Ordering::Relaxed)
        {
            return Err(Exceeded::Cancelled);
        }
        Ok(())
    }

    /// Counts `units` of work (nodes, edges, items visited) and runs
    /// [`Budget::check`] each time the count passes a multiple of 4,096:
    /// for loops whose turns are too small, or too uneven, to each read
    /// the clock.
    pub fn spend(&self, units: usize) -> Result<(), Exceeded> {
        let before = self.spent.0.load(Ordering::Relaxed);
        let after = before.wrapping_add(units);
        self.spent.0.store(after, Ordering::Relaxed);
        if after / UNITS_PER_CHECK == before / UNITS_PER_CHECK {
            Ok(())
        } else {
            self.check()
        }
    }

    /// [`Budget::check`], and `Err` if `rules` is past the rule limit.
    pub fn check_rules(&self, rules: usize) -> Result<(), Exceeded> {
        if rules > self.limits.max_rules {
            return Err(Exceeded::Rules(self.limits.max_rules));
        }
        self.check()
    }

    /// `Err` if a structure of `bytes` is past the memory limit.
    pub fn check_memory(&self, bytes: usize) -> Result<(), Exceeded> {
        match self.limits.memory {
            Some(limit) if bytes > limit => Err(Exceeded::Memory(limit)),
            _ => Ok(()),
        }
    }
}

/// The fewest parts (memo entries, automaton nodes) for which a structure
/// is freed on a thread of its own by [`free_aside`](xg_runtime::lru::free_aside): starting one costs
/// some 20 µs, freeing 4,096 parts about as much.
pub(crate) const FREE_ASIDE_AT: usize = 4096;
