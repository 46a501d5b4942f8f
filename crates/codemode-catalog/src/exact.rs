//! Exact-string lookup of catalog entries without copying their strings.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};

use foldhash::fast::RandomState;

/// Maps a key string (an entry's id, or name) to the position of the entry
/// holding it, storing only a 64-bit hash and the position.
///
/// The string hash is foldhash, seeded randomly per index (`RandomState`),
/// so colliding tool names cannot be prepared in advance (the names come
/// from the host's tools, never from guest code); it is several times
/// cheaper than SipHash on short ids, which matters for 10,000-tool builds.
/// The map itself does not hash that hash again ([`HashOfHash`]). Two
/// distinct keys that still share a hash are kept in `overflow` and scanned
/// linearly, so a collision costs time, never correctness.
#[derive(Debug, Clone, Default)]
pub(crate) struct ExactIndex<S = RandomState> {
    hasher: S,
    first: HashMap<u64, usize, BuildHasherDefault<HashOfHash>>,
    overflow: Vec<usize>,
}

impl ExactIndex {
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Self::with_hasher(capacity, RandomState::default())
    }
}

/// Hashes the `u64` keys of [`ExactIndex::first`], already well-mixed
/// string hashes, to themselves.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct HashOfHash(u64);

impl Hasher for HashOfHash {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used by `HashMap<u64, _>`; fold anything else.
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

impl<S: BuildHasher> ExactIndex<S> {
    fn with_hasher(capacity: usize, hasher: S) -> Self {
        Self {
            hasher,
            first: HashMap::with_capacity_and_hasher(capacity, BuildHasherDefault::default()),
            overflow: Vec::new(),
        }
    }

    /// The position recorded for `key`; `key_of` gives the key of a position.
    pub(crate) fn find<'e>(
        &self,
        key: &str,
        key_of: impl Fn(usize) -> Option<&'e str>,
    ) -> Option<usize> {
        let &first = self.first.get(&self.hasher.hash_one(key))?;
        if key_of(first) == Some(key) {
            return Some(first);
        }
        self.overflow
            .iter()
            .copied()
            .find(|&position| key_of(position) == Some(key))
    }

    /// The hash of `key` that [`ExactIndex::insert_hashed`] expects.
    pub(crate) fn hash(&self, key: &str) -> u64 {
        self.hasher.hash_one(key)
    }

    /// Record `position` for `key`, unless `key` is already recorded: then
    /// return the position holding it.
    #[cfg(test)]
    pub(crate) fn insert<'e>(
        &mut self,
        key: &str,
        position: usize,
        key_of: impl Fn(usize) -> Option<&'e str>,
    ) -> Result<(), usize> {
        self.insert_hashed(self.hash(key), key, position, key_of)
    }

    /// [`ExactIndex::insert`] with `hash`, which must be
    /// [`ExactIndex::hash`] of `key`, computed beforehand (while `key` is
    /// still in cache).
    pub(crate) fn insert_hashed<'e>(
        &mut self,
        hash: u64,
        key: &str,
        position: usize,
        key_of: impl Fn(usize) -> Option<&'e str>,
    ) -> Result<(), usize> {
        match self.first.entry(hash) {
            Entry::Vacant(slot) => {
                slot.insert(position);
                Ok(())
            }
            Entry::Occupied(slot) => {
                let first = *slot.get();
                if key_of(first) == Some(key) {
                    return Err(first);
                }
                if let Some(found) = self
                    .overflow
                    .iter()
                    .copied()
                    .find(|&other| key_of(other) == Some(key))
                {
                    return Err(found);
                }
                self.overflow.push(position);
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hashes every key to the same value: every key collides.
    #[derive(Default)]
    struct Colliding;

    impl BuildHasher for Colliding {
        type Hasher = ConstantHasher;
        fn build_hasher(&self) -> ConstantHasher {
            ConstantHasher
        }
    }

    struct ConstantHasher;

    impl std::hash::Hasher for ConstantHasher {
        fn finish(&self) -> u64 {
            42
        }
        fn write(&mut self, _bytes: &[u8]) {}
    }

    #[test]
    fn colliding_hashes_stay_correct() {
        let keys = ["a", "b", "a", "c", "b"];
        let key_of = |position: usize| keys.get(position).copied();
        let mut index = ExactIndex::with_hasher(0, Colliding);
        assert_eq!(index.insert("a", 0, key_of), Ok(()));
        assert_eq!(index.insert("b", 1, key_of), Ok(()));
        assert_eq!(index.insert("a", 2, key_of), Err(0));
        assert_eq!(index.insert("c", 3, key_of), Ok(()));
        assert_eq!(index.insert("b", 4, key_of), Err(1));
        assert_eq!(index.overflow, [1, 3]);
        assert_eq!(index.find("a", key_of), Some(0));
        assert_eq!(index.find("b", key_of), Some(1));
        assert_eq!(index.find("c", key_of), Some(3));
        assert_eq!(index.find("d", key_of), None);
    }

    #[test]
    fn insert_reports_the_first_holder() {
        let keys = ["x", "y", "x"];
        let key_of = |position: usize| keys.get(position).copied();
        let mut index = ExactIndex::with_capacity(3);
        assert_eq!(index.insert("x", 0, key_of), Ok(()));
        assert_eq!(index.insert("y", 1, key_of), Ok(()));
        assert_eq!(index.insert("x", 2, key_of), Err(0));
        assert_eq!(index.find("x", key_of), Some(0));
        assert_eq!(index.find("z", key_of), None);
    }
}
