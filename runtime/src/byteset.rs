//! [`ByteSet`]: a set of bytes as 256 bits.

/// A set of bytes, as 256 bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ByteSet([u64; 4]);

impl ByteSet {
    /// Every byte.
    pub const fn full() -> Self {
        Self([u64::MAX; 4])
    }

    /// The set whose bits are `words`, lowest bytes first (bit `b % 64` of
    /// word `b / 64` for byte `b`).
    pub const fn from_words(words: [u64; 4]) -> Self {
        Self(words)
    }

    /// Adds `byte`.
    pub fn insert(&mut self, byte: u8) {
        self.0[usize::from(byte) / 64] |= 1 << (byte % 64);
    }

    /// Adds `lo..=hi`.
    pub(crate) fn insert_range(&mut self, lo: u8, hi: u8) {
        for byte in lo..=hi {
            self.insert(byte);
        }
    }

    /// Whether `byte` is in the set.
    pub fn contains(self, byte: u8) -> bool {
        self.0[usize::from(byte) / 64] & (1 << (byte % 64)) != 0
    }

    /// The bytes in increasing order.
    pub(crate) fn iter(self) -> impl Iterator<Item = u8> {
        (0..=255u8).filter(move |&b| self.contains(b))
    }
}
