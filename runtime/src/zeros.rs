//! Zeroed buffers whose pages are written when they are made.
//!
//! `vec![0; len]` asks the allocator for zeroed memory, which may hand out
//! pages no one has touched yet. A read of such a page maps the kernel's
//! shared zero page; the first write after it faults again and, while
//! other threads of the process run, makes every core flush that page
//! from its TLB — an interrupt per page. Masks fill vocabulary-sized sets
//! bit by bit (`set[i] |= bit` reads first), so two threads computing
//! masks interrupted each other at every new set: on every second
//! function-calling file of MaskBench-full (cold, two threads) the
//! per-token mean was a third higher than with one process per core.

/// `len` zeros (of a type whose default is zero), written now.
pub(crate) fn written_zeros<T: Copy + Default>(len: usize) -> Vec<T> {
    let mut zeros = Vec::with_capacity(len);
    zeros.resize(len, T::default());
    zeros
}
