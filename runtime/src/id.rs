//! Index newtypes shared by the compiler and the runtime.
//!
//! Every table xg builds is a flat array indexed by one of these. They are
//! `u32` so tables stay small and can be used in place from a memory map; each
//! has the same shape: `LIMIT`, a fallible `new(usize)`, `as_usize()`.

use std::fmt;

/// An index does not fit its identifier type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdError {
    kind: &'static str,
    given: usize,
    limit: usize,
}

impl fmt::Display for IdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} index {} exceeds the limit of {}",
            self.kind, self.given, self.limit
        )
    }
}

impl std::error::Error for IdError {}

macro_rules! define_id {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        $(#[$doc])*
        #[repr(transparent)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(u32);

        impl $name {
            /// One past the largest index this identifier can hold.
            pub const LIMIT: usize = u32::MAX as usize;

            /// The identifier for `index`, or an error if it is `LIMIT` or more.
            pub fn new(index: usize) -> Result<Self, IdError> {
                match u32::try_from(index) {
                    Ok(value) if index < Self::LIMIT => Ok(Self(value)),
                    _ => Err(IdError { kind: $kind, given: index, limit: Self::LIMIT }),
                }
            }

            /// The identifier as stored in tables.
            pub const fn as_u32(self) -> u32 {
                self.0
            }

            /// The identifier as an index into a table.
            pub const fn as_usize(self) -> usize {
                self.0 as usize
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

define_id!(
    /// A rule of a grammar: an index into its rule table.
    RuleId,
    "rule"
);
define_id!(
    /// A token of a vocabulary, as the model's tokenizer numbers it.
    TokenId,
    "token"
);

impl RuleId {
    /// The rule `index` of validated tables: below their rule count,
    /// which is below [`RuleId::LIMIT`].
    pub(crate) const fn of_table(index: u32) -> Self {
        Self(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_checks_the_limit() {
        assert_eq!(RuleId::new(7).unwrap().as_usize(), 7);
        let err = TokenId::new(TokenId::LIMIT).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "token index {} exceeds the limit of {}",
                TokenId::LIMIT,
                TokenId::LIMIT
            )
        );
    }
}
