//! Earley items.

/// What an item stands for; the meaning of [`Item::a`] and [`Item::aux`]
/// depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Kind {
    /// At automaton node `a`.
    Node,
    /// Inside the counted repetition of edge `a`, after `aux` matches.
    Repeat,
    /// In the free text of tag dispatch rule `a`, scanner state `aux`.
    Free,
    /// Tag dispatch rule `a` saw trigger pattern `aux`; its arm runs.
    Arm,
    /// In the free region of token dispatch rule `a`.
    TokenFree,
    /// Token dispatch rule `a` saw trigger pattern `aux`; its arm runs.
    TokenArm,
    /// Rule `a` has matched from `origin` to here.
    Ended,
    /// Row 0's entry: waits for rule `a` (the root) and predicts it.
    Root,
    /// A seeded parse's row 0: marks where the seed's rule `a` ends
    /// (predicts nothing).
    SeedEnd,
    /// A context parse's row 0 where a counted repetition calls rule
    /// `a`: past `a`, any text may follow ([`Kind::Any`]).
    Wild,
    /// Rule `a` of a [`Kind::Root`] or [`Kind::SeedEnd`] item has matched
    /// from the start to here.
    Done,
    /// Any text: what follows a rule where a context parse does not
    /// track the grammar (after a counted repetition).
    Any,
}

/// An Earley item: a position in a rule, where the rule's match began
/// (`origin`, a row index), and the lookahead context it lives in.
///
/// `ctx` is the context of the derivation so far: which lookahead thread it
/// belongs to and which lookahead assertions it depends on; `pred` is the
/// context of the item that predicted this rule, which is the context a
/// completed match must return to. Grammars without lookahead use context 0
/// throughout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct Item {
    pub kind: Kind,
    pub a: u32,
    pub aux: u32,
    pub origin: u32,
    pub pred: u32,
    pub ctx: u32,
}

impl Item {
    /// An item of `kind` in the same rule match and context as `self`.
    pub(super) fn with(self, kind: Kind, a: u32, aux: u32) -> Self {
        Self {
            kind,
            a,
            aux,
            ..self
        }
    }
}
