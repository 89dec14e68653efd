//! [`StaticGrammar`]: a grammar built into the program as bundle bytes.

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use crate::bundle::BundleError;
use crate::grammar::Grammar;

/// A grammar built into the program: the bytes of a bundle, opened on
/// first use and then shared.
///
/// The `grammar!` macro of the `xg` crate expands to one;
/// `StaticGrammar::new(include_bytes!("tools.xgb"))` makes one from a
/// bundle written by `xg compile`. [`StaticGrammar::new`] is `const`, so
/// either can initialize a `static`:
///
/// ```
/// use xg_runtime::{BundleError, Matcher, StaticGrammar};
///
/// // static TOOLS: StaticGrammar = StaticGrammar::new(include_bytes!("tools.xgb"));
/// static NOT_A_BUNDLE: StaticGrammar = StaticGrammar::new(b"root ::= \"yes\"");
///
/// assert!(matches!(NOT_A_BUNDLE.try_grammar(), Err(BundleError::NotABundle)));
/// # fn demo(tools: &StaticGrammar) {
/// let mut matcher = Matcher::new(tools.grammar());
/// # }
/// ```
///
/// Opening reads the bundle in place (no copy of its mask entries), once
/// per `StaticGrammar`; later calls return the same [`Grammar`].
pub struct StaticGrammar {
    bundle: &'static [u8],
    opened: OnceLock<Arc<Grammar>>,
}

impl StaticGrammar {
    /// A grammar from the bytes of a bundle; nothing is read until first use.
    pub const fn new(bundle: &'static [u8]) -> Self {
        Self {
            bundle,
            opened: OnceLock::new(),
        }
    }

    /// The grammar, opened from the bundle on the first call.
    ///
    /// # Panics
    ///
    /// If the bytes are not a bundle this runtime reads. Bundles written by
    /// `grammar!` at build time always are (the macro and the runtime come
    /// from one release of the `xg` crate); for bytes of another origin,
    /// use [`StaticGrammar::try_grammar`].
    pub fn grammar(&self) -> Arc<Grammar> {
        self.try_grammar()
            .unwrap_or_else(|error| panic!("a built-in grammar does not open: {error}"))
    }

    /// The grammar, opened from the bundle on the first call, or why the
    /// bytes cannot be opened.
    pub fn try_grammar(&self) -> Result<Arc<Grammar>, BundleError> {
        if let Some(grammar) = self.opened.get() {
            return Ok(Arc::clone(grammar));
        }
        let grammar = Arc::new(Grammar::from_static_bundle(self.bundle, None)?);
        // Two threads may open it at once: the first one stored wins, so
        // every caller shares one grammar (and one set of cache combinations).
        Ok(Arc::clone(self.opened.get_or_init(|| grammar)))
    }

    /// The bundle's bytes (to write them to a file, or to inspect them
    /// with [`bundle::inspect`](crate::bundle::inspect)).
    pub fn bundle(&self) -> &'static [u8] {
        self.bundle
    }
}

impl Deref for StaticGrammar {
    type Target = Grammar;

    /// The grammar (see [`StaticGrammar::grammar`], whose panic this shares).
    fn deref(&self) -> &Grammar {
        if self.opened.get().is_none() {
            self.grammar();
        }
        self.opened.get().expect("opened above")
    }
}

impl fmt::Debug for StaticGrammar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StaticGrammar")
            .field("bundle_bytes", &self.bundle.len())
            .field("opened", &self.opened.get().is_some())
            .finish()
    }
}
