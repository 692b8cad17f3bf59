//! Demangled names kept from one module of a batch to the next.
//!
//! The modules of one build share most of their code: ceph's four programs link the
//! same libraries, so with `--inlines` 45% of the 386,800 names a whole ceph-osd and
//! openjdk tree gave GNU's demangler repeated one demangled before, nearly all in
//! another module. A module's own cache ([`crate::dwarf`]'s linkage names, keyed by
//! string offset) dies with the module; this one lives as long as the batch
//! ([`scope`]), and is asked only on that cache's misses, once per distinct name per
//! module.
//!
//! One module cannot answer for another: names are keyed by a 128-bit XXH3 of the
//! name under a secret drawn at random for each batch, so a crafted module cannot
//! search out a name whose key is another module's (it never sees the secret), and two
//! real names colliding in 128 bits is beyond any batch. Memory is bounded by two
//! generations per shard: names go into the newer, which, past its share, becomes the
//! older one and the one older still is dropped; a name found in the older one moves to
//! the newer, so names that keep recurring stay.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, RandomState};
use std::sync::{Arc, Mutex};

use rustc_hash::FxHasher;

use super::Lang;

/// What both generations of all shards may hold, names counted in full. Names of the
/// modules in flight are shared with their records, so most of this is only held past
/// the module that made them; ceph-osd's 130,000 names count about 70 MB.
const BUDGET: usize = 96 << 20;
const ENTRY_OVERHEAD: usize = 48;
const SHARDS: usize = 16;

/// Keys are a keyed hash already: the map's own hash need only spread them.
type Map = HashMap<u128, Arc<str>, BuildHasherDefault<FxHasher>>;

#[derive(Default)]
struct Generations {
    newer: Map,
    older: Map,
    /// What `newer` holds, in name bytes plus the per-entry allowance.
    bytes: usize,
}

/// The names of one batch's modules, by language and keyed hash.
pub(crate) struct Across {
    secret: [u8; 192],
    shards: [Mutex<Generations>; SHARDS],
}

impl Across {
    fn new() -> Self {
        // std's random keys, one fresh `RandomState` per eight bytes of secret.
        let mut secret = [0u8; 192];
        for (i, chunk) in secret.chunks_mut(8).enumerate() {
            chunk.copy_from_slice(&RandomState::new().hash_one(i).to_le_bytes());
        }
        Across {
            secret,
            shards: Default::default(),
        }
    }

    fn key(&self, raw: &str, lang: Lang) -> u128 {
        let key = xxhash_rust::xxh3::xxh3_128_with_secret(raw.as_bytes(), &self.secret);
        // The language decides how a name is read (a Rust unit's names are tried as
        // Rust first): the same bytes from a C++ and a Rust unit are two entries.
        key ^ u128::from(lang == Lang::Rust)
    }

    fn shard(&self, key: u128) -> std::sync::MutexGuard<'_, Generations> {
        // A poisoned lock only means another worker panicked; the maps are still valid.
        self.shards[(key >> 64) as usize % SHARDS]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// What [`super::demangle`] gives for `raw`, from a module before if one asked.
    pub(crate) fn demangle(&self, raw: &str, lang: Lang) -> Arc<str> {
        if let Some(hit) = self.get(raw, lang) {
            return hit;
        }
        // Outside the lock: two workers may both demangle a name once, harmlessly.
        let value: Arc<str> = super::demangle(raw, lang).into();
        self.insert(raw, lang, value.clone());
        value
    }

    /// The name kept for `raw`, if any.
    pub(crate) fn get(&self, raw: &str, lang: Lang) -> Option<Arc<str>> {
        let key = self.key(raw, lang);
        let mut guard = self.shard(key);
        let g = &mut *guard;
        if let Some(hit) = g.newer.get(&key) {
            return Some(hit.clone());
        }
        let hit = g.older.remove(&key)?;
        Self::keep(g, key, hit.clone());
        Some(hit)
    }

    /// Keeps `value`, what [`super::demangle`] gave for `raw`.
    pub(crate) fn insert(&self, raw: &str, lang: Lang, value: Arc<str>) {
        let key = self.key(raw, lang);
        Self::keep(&mut self.shard(key), key, value);
    }

    fn keep(g: &mut Generations, key: u128, value: Arc<str>) {
        let (cost, share) = (value.len() + ENTRY_OVERHEAD, BUDGET / (2 * SHARDS));
        if cost > share {
            return; // A name of megabytes (crafted) would only push the others out.
        }
        if g.bytes + cost > share {
            g.older = std::mem::take(&mut g.newer);
            g.bytes = 0;
        }
        g.bytes += cost;
        g.newer.insert(key, value);
    }
}

/// The batch in progress: its names, and how many [`Scope`]s hold them.
static CURRENT: Mutex<(usize, Option<Arc<Across>>)> = Mutex::new((0, None));

/// While held, dumps keep their demangled names for the modules after them; when the
/// last scope ends, the names go.
pub(crate) struct Scope(());

/// Starts keeping names across modules (a batch of several), until the [`Scope`] is
/// dropped. Batches that overlap share one cache: a name's demangling is the same
/// whichever module asked first.
pub(crate) fn scope() -> Scope {
    let mut current = CURRENT.lock().unwrap_or_else(|e| e.into_inner());
    current.0 += 1;
    if current.1.is_none() {
        current.1 = Some(Arc::new(Across::new()));
    }
    Scope(())
}

impl Drop for Scope {
    fn drop(&mut self) {
        let mut current = CURRENT.lock().unwrap_or_else(|e| e.into_inner());
        current.0 -= 1;
        if current.0 == 0 {
            current.1 = None;
        }
    }
}

/// The names of the batch in progress, if a [`Scope`] is held.
pub(crate) fn current() -> Option<Arc<Across>> {
    CURRENT.lock().unwrap_or_else(|e| e.into_inner()).1.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_outlive_a_module_while_the_scope_is_held() {
        let across = Across::new();
        let raw = "_ZN3foo3barEv";
        assert_eq!(across.get(raw, Lang::Other), None);
        let first = across.demangle(raw, Lang::Other);
        assert_eq!(&*first, &*super::super::demangle(raw, Lang::Other));
        // The same allocation comes back: it was kept, not demangled again.
        let again = across.get(raw, Lang::Other).expect("kept");
        assert!(Arc::ptr_eq(&first, &again));
        // Read as Rust, the same bytes are another entry.
        assert_eq!(across.get(raw, Lang::Rust), None);
    }

    #[test]
    fn memory_stays_within_two_generations_and_recurring_names_stay() {
        let across = Across::new();
        let share = BUDGET / (2 * SHARDS);
        let long = "x".repeat(4096);
        let recurring = "_ZN9recurring4nameEv";
        across.insert(recurring, Lang::Other, "recurring::name()".into());
        // Several budgets' worth of other names, with the recurring one asked between.
        for i in 0..(3 * BUDGET / 4096) {
            across.insert(&format!("_Z{i}"), Lang::Other, Arc::from(long.as_str()));
            if i % 500 == 0 {
                assert!(across.get(recurring, Lang::Other).is_some(), "lost at {i}");
            }
        }
        for shard in &across.shards {
            let g = shard.lock().unwrap();
            let held: usize = g
                .newer
                .values()
                .chain(g.older.values())
                .map(|v| v.len() + ENTRY_OVERHEAD)
                .sum();
            assert!(held <= 2 * share, "{held} > {}", 2 * share);
            assert!(g.bytes <= share);
        }
    }

    #[test]
    fn a_name_larger_than_a_share_is_not_kept() {
        let across = Across::new();
        let huge: Arc<str> = "y".repeat(BUDGET / (2 * SHARDS)).into();
        across.insert("_Z4hugev", Lang::Other, huge);
        assert_eq!(across.get("_Z4hugev", Lang::Other), None);
        across.insert("_Z5smallv", Lang::Other, "small()".into());
        assert!(across.get("_Z5smallv", Lang::Other).is_some());
    }

    #[test]
    fn the_last_scope_drops_the_names() {
        // Another test may hold a scope of its own, which keeps the names: the drop is
        // checked when none does.
        let outer = scope();
        let across = current().expect("a scope is held");
        across.insert("_Z1fv", Lang::Other, "f()".into());
        let inner = scope();
        assert!(Arc::ptr_eq(&across, &current().unwrap()));
        drop(inner);
        assert!(current().is_some_and(|c| c.get("_Z1fv", Lang::Other).is_some()));
        drop(outer);
        let current = CURRENT.lock().unwrap();
        if current.0 == 0 {
            assert!(current.1.is_none());
        }
    }

    #[test]
    fn secrets_differ_between_batches() {
        let (a, b) = (Across::new(), Across::new());
        assert_ne!(a.secret, b.secret);
        assert_ne!(a.key("_Z1fv", Lang::Other), b.key("_Z1fv", Lang::Other));
    }
}
