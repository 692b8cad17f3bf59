//! Hashing for maps keyed by numbers an input chooses (DIE and string offsets): as fast
//! as FxHash, but keyed at random per map, so that a crafted file cannot pick keys that
//! all fall in one bucket and make each lookup walk all of them.
//!
//! FxHash is a fixed function: a file's author can search out offsets that land in one
//! bucket, for every run of every map (a test below finds 512 of them in a fraction of
//! a second). std's SipHash is keyed but costs several times as much, on maps probed
//! once per inlined call. Here the key is mixed with a random seed by MurmurHash3's
//! finalizer, which carries every bit of the key into the bucket bits. Not a
//! cryptographic hash: it keeps a file from choosing collisions without the seed, which
//! it never sees.

use std::hash::{BuildHasher, Hasher, RandomState};

/// A map keyed by offsets or indexes read from an input.
pub(crate) type KeyedMap<K, V> = std::collections::HashMap<K, V, Keyed>;

/// A [`KeyedMap`] with room for `n` entries.
pub(crate) fn with_capacity<K, V>(n: usize) -> KeyedMap<K, V> {
    KeyedMap::with_capacity_and_hasher(n, Keyed::default())
}

/// The seed of one map.
#[derive(Clone, Copy)]
pub(crate) struct Keyed(u64);

impl Default for Keyed {
    /// A fresh seed: std's per-thread random keys, advanced for every `RandomState`.
    fn default() -> Self {
        Keyed(RandomState::new().hash_one(()))
    }
}

impl BuildHasher for Keyed {
    type Hasher = KeyedHasher;

    fn build_hasher(&self) -> KeyedHasher {
        KeyedHasher(self.0)
    }
}

pub(crate) struct KeyedHasher(u64);

impl Hasher for KeyedHasher {
    fn write(&mut self, bytes: &[u8]) {
        // Not the keys these maps have (integers, hashed below); any byte key still works.
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = mix(self.0 ^ n);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// MurmurHash3's 64-bit finalizer: a bijection in which every input bit reaches every
/// output bit.
fn mix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Offsets that FxHash sends to one bucket of a 4096-bucket table (found by trying,
    /// as a crafted file's author would) spread over a keyed map's buckets.
    #[test]
    fn offsets_that_collide_under_fxhash_spread() {
        let fx = rustc_hash::FxBuildHasher;
        let bucket = |h: u64| h & 0xfff;
        let target = bucket(fx.hash_one(0u64));
        let colliding: Vec<u64> = (0..u64::from(u32::MAX))
            .filter(|&x| bucket(fx.hash_one(x)) == target)
            .take(512)
            .collect();
        assert_eq!(colliding.len(), 512);
        let keyed = Keyed::default();
        let spread: std::collections::HashSet<u64> = colliding
            .iter()
            .map(|&x| bucket(keyed.hash_one(x)))
            .collect();
        assert!(spread.len() > 400, "{} buckets of 512 keys", spread.len());
    }

    #[test]
    fn seeds_differ_and_a_map_agrees_with_itself() {
        let (a, b) = (Keyed::default(), Keyed::default());
        assert_ne!(a.hash_one(7u64), b.hash_one(7u64));
        assert_eq!(a.hash_one(7u64), a.hash_one(7u64));
        let mut map: KeyedMap<usize, u32> = with_capacity(4);
        map.insert(1 << 40, 1);
        map.insert(1, 2);
        assert_eq!(
            (map.get(&(1 << 40)), map.get(&1), map.get(&2)),
            (Some(&1), Some(&2), None)
        );
    }
}
