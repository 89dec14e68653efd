//! Lookahead assertions: `r ::= body (= X)` matches where `body` matches and
//! the text after it starts with a match of `X`.
//!
//! When `r` completes at row `k`, a *thread* parses `X` from row `k` in the
//! same rows as everything else, and the continuation of the parent goes on
//! at once, *guarded* by the thread. Items carry a context: the thread they
//! belong to (or the main parse) and the guards their derivation depends on.
//! At the end of each row, the threads' states are settled:
//!
//! - *complete*: `X` has matched (with its own guards complete) — the guard
//!   holds for good and is dropped from new contexts;
//! - *dead*: no item of the thread is left and it never matched — every item
//!   guarded by it is removed;
//! - otherwise *alive*: the input so far may still be followed by `X`.
//!
//! Both are least fixed points, as in the reference recognizer, so threads
//! guarding each other need no special order. A thread is keyed by (rule,
//! row): every completion of `r` at `k` shares one.

use rustc_hash::FxHashMap;

use super::item::{Item, Kind};

/// The owner of main-parse items.
const MAIN: u32 = u32::MAX;
/// "Not yet" for a thread's settlement rows.
const NEVER: u32 = u32::MAX;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Context {
    /// The thread the items belong to, or [`MAIN`].
    owner: u32,
    /// Threads the derivation depends on, sorted.
    guards: Box<[u32]>,
}

#[derive(Clone, Debug)]
struct Thread {
    /// The rule whose lookahead it checks.
    rule: u32,
    /// The row the thread started at.
    row: u32,
    /// Where `X` matched: (row, context of the match).
    successes: Vec<(u32, u32)>,
    complete_since: u32,
    dead_since: u32,
    /// Scratch for settling.
    complete_now: bool,
    alive_now: bool,
}

#[derive(Clone, Copy, Debug)]
enum Change {
    Success,
    Complete,
    Dead,
}

/// The lookahead state of one matcher.
#[derive(Clone, Debug)]
pub(super) struct Lookahead {
    contexts: Vec<Context>,
    context_ids: FxHashMap<Context, u32>,
    threads: Vec<Thread>,
    thread_ids: FxHashMap<(u32, u32), u32>,
    /// Unsettled threads.
    active: Vec<u32>,
    /// Changes to threads in row order, for rollback: (row, thread, change).
    log: Vec<(u32, u32, Change)>,
}

/// What settling a row found.
pub(super) struct Settled {
    /// Some main-parse item survived: the input so far is a viable prefix.
    pub viable: bool,
    /// The input so far is a complete sentence.
    pub can_terminate: bool,
}

impl Default for Lookahead {
    fn default() -> Self {
        let main = Context {
            owner: MAIN,
            guards: Box::default(),
        };
        let mut context_ids = FxHashMap::default();
        context_ids.insert(main.clone(), 0);
        Self {
            contexts: vec![main],
            context_ids,
            threads: Vec::new(),
            thread_ids: FxHashMap::default(),
            active: Vec::new(),
            log: Vec::new(),
        }
    }
}

impl Lookahead {
    fn intern(&mut self, context: Context) -> u32 {
        if let Some(&id) = self.context_ids.get(&context) {
            return id;
        }
        let id = u32::try_from(self.contexts.len()).expect("contexts fit in u32");
        self.contexts.push(context.clone());
        self.context_ids.insert(context, id);
        id
    }

    /// The thread checking `rule`'s lookahead from `row`, and its items'
    /// context if it was just created (the caller adds its start item).
    pub(super) fn thread(&mut self, rule: u32, row: u32) -> (u32, Option<u32>) {
        if let Some(&id) = self.thread_ids.get(&(rule, row)) {
            return (id, None);
        }
        let id = u32::try_from(self.threads.len()).expect("threads fit in u32");
        let context = self.intern(Context {
            owner: id,
            guards: Box::default(),
        });
        self.threads.push(Thread {
            rule,
            row,
            successes: Vec::new(),
            complete_since: NEVER,
            dead_since: NEVER,
            complete_now: false,
            alive_now: false,
        });
        self.thread_ids.insert((rule, row), id);
        self.active.push(id);
        (id, Some(context))
    }

    /// `context` with `thread` added to its guards (and guards that have
    /// completed dropped).
    pub(super) fn guarded(&mut self, context: u32, thread: u32) -> u32 {
        let Context { owner, guards } = &self.contexts[context as usize];
        let mut guards: Vec<u32> = guards
            .iter()
            .copied()
            .filter(|&g| self.threads[g as usize].complete_since == NEVER)
            .collect();
        if self.threads[thread as usize].complete_since == NEVER
            && let Err(at) = guards.binary_search(&thread)
        {
            guards.insert(at, thread);
        }
        let owner = *owner;
        self.intern(Context {
            owner,
            guards: guards.into(),
        })
    }

    /// A lookahead automaton reached a final node at `row` in `context`: its
    /// thread's `X` has matched, subject to the context's own guards.
    pub(super) fn success(&mut self, context: u32, row: u32) {
        let owner = self.contexts[context as usize].owner;
        if owner != MAIN {
            self.threads[owner as usize].successes.push((row, context));
            self.log.push((row, owner, Change::Success));
        }
    }

    fn complete(&self, thread: u32) -> bool {
        let thread = &self.threads[thread as usize];
        thread.complete_since != NEVER || thread.complete_now
    }

    fn alive(&self, thread: u32) -> bool {
        let thread = &self.threads[thread as usize];
        thread.complete_since != NEVER || (thread.dead_since == NEVER && thread.alive_now)
    }

    fn guards(&self, context: u32) -> &[u32] {
        &self.contexts[context as usize].guards
    }

    /// Settles the threads at the end of `row` (whose items are `items`),
    /// removes the items that can no longer lead anywhere, and says whether
    /// the row is viable and complete.
    pub(super) fn settle(&mut self, items: &mut Vec<Item>, row: u32) -> Settled {
        if self.threads.is_empty() {
            return Settled {
                viable: !items.is_empty(),
                can_terminate: items.iter().any(|i| i.kind == Kind::Done),
            };
        }
        for &t in &self.active {
            let thread = &mut self.threads[t as usize];
            thread.complete_now = false;
            thread.alive_now = false;
        }
        self.settle_complete();
        self.settle_alive(items);
        let mut k = 0;
        while k < self.active.len() {
            let t = self.active[k];
            let thread = &mut self.threads[t as usize];
            if thread.complete_now {
                thread.complete_since = row;
                self.log.push((row, t, Change::Complete));
                self.active.swap_remove(k);
            } else if !thread.alive_now {
                thread.dead_since = row;
                self.log.push((row, t, Change::Dead));
                self.active.swap_remove(k);
            } else {
                k += 1;
            }
        }
        items.retain(|item| {
            let context = &self.contexts[item.ctx as usize];
            let owner_ok = context.owner == MAIN || {
                let owner = &self.threads[context.owner as usize];
                owner.dead_since == NEVER && owner.complete_since == NEVER
            };
            owner_ok
                && context
                    .guards
                    .iter()
                    .all(|&g| self.threads[g as usize].dead_since == NEVER)
        });
        let main = |item: &Item| self.contexts[item.ctx as usize].owner == MAIN;
        Settled {
            viable: items.iter().any(main),
            can_terminate: items.iter().any(|item| {
                item.kind == Kind::Done
                    && self
                        .guards(item.ctx)
                        .iter()
                        .all(|&g| self.threads[g as usize].complete_since != NEVER)
            }),
        }
    }

    /// Marks the active threads that have completed: some match of X whose
    /// guards have all completed (least fixed point).
    fn settle_complete(&mut self) {
        loop {
            let mut changed = false;
            for k in 0..self.active.len() {
                let t = self.active[k];
                if self.threads[t as usize].complete_now {
                    continue;
                }
                let matched = self.threads[t as usize]
                    .successes
                    .iter()
                    .any(|&(_, c)| self.guards(c).iter().all(|&g| self.complete(g)));
                if matched {
                    self.threads[t as usize].complete_now = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// Marks the active threads that are alive: complete, or a match or an
    /// item in `items` whose guards are all alive (least fixed point).
    fn settle_alive(&mut self, items: &[Item]) {
        for &t in &self.active {
            let thread = &mut self.threads[t as usize];
            thread.alive_now = thread.complete_now;
        }
        loop {
            let mut changed = false;
            for k in 0..self.active.len() {
                let t = self.active[k];
                if self.threads[t as usize].alive_now {
                    continue;
                }
                let matched = self.threads[t as usize]
                    .successes
                    .iter()
                    .any(|&(_, c)| self.guards(c).iter().all(|&g| self.alive(g)));
                if matched {
                    self.threads[t as usize].alive_now = true;
                    changed = true;
                }
            }
            for item in items {
                let context = &self.contexts[item.ctx as usize];
                if context.owner == MAIN || self.threads[context.owner as usize].alive_now {
                    continue;
                }
                if context.guards.iter().all(|&g| self.alive(g)) {
                    self.threads[context.owner as usize].alive_now = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// Forgets everything that happened at rows `rows` and later.
    pub(super) fn truncate(&mut self, rows: usize) {
        let rows = u32::try_from(rows).unwrap_or(u32::MAX);
        while let Some(&(row, t, change)) = self.log.last() {
            if row < rows {
                break;
            }
            self.log.pop();
            let thread = &mut self.threads[t as usize];
            match change {
                Change::Success => {
                    thread.successes.pop();
                }
                Change::Complete => {
                    thread.complete_since = NEVER;
                    self.active.push(t);
                }
                Change::Dead => {
                    thread.dead_since = NEVER;
                    self.active.push(t);
                }
            }
        }
        let mut popped = false;
        while let Some(thread) = self.threads.pop_if(|t| t.row >= rows) {
            self.thread_ids.remove(&(thread.rule, thread.row));
            popped = true;
        }
        if popped {
            let count = self.threads.len();
            self.active.retain(|&t| (t as usize) < count);
        }
    }
}
