//! Exact-string lookup of catalog entries without copying their strings.

use std::collections::HashMap;
use std::collections::hash_map::{Entry, RandomState};
use std::hash::BuildHasher;

/// Maps a key string (an entry's id, or name) to the position of the entry
/// holding it, storing only a 64-bit hash and the position.
///
/// The hash is keyed per process (`RandomState`), so tool names cannot be
/// crafted to collide; two distinct keys that still share a hash are kept
/// in `overflow` and scanned linearly, so a collision costs time, never
/// correctness.
#[derive(Debug, Clone, Default)]
pub(crate) struct ExactIndex<S = RandomState> {
    hasher: S,
    first: HashMap<u64, usize>,
    overflow: Vec<usize>,
}

impl ExactIndex {
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Self::with_hasher(capacity, RandomState::new())
    }
}

impl<S: BuildHasher> ExactIndex<S> {
    fn with_hasher(capacity: usize, hasher: S) -> Self {
        Self {
            hasher,
            first: HashMap::with_capacity(capacity),
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

    /// Record `position` for `key`, unless `key` is already recorded: then
    /// return the position holding it.
    pub(crate) fn insert<'e>(
        &mut self,
        key: &str,
        position: usize,
        key_of: impl Fn(usize) -> Option<&'e str>,
    ) -> Result<(), usize> {
        match self.first.entry(self.hasher.hash_one(key)) {
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
