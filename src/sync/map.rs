//! The cache's concurrent map: dashmap (sharded, an Fx hasher) outside loom; under loom one
//! `Mutex<HashMap>` behind the same few calls. A hit holds the entry's guard (a shard read
//! lock, or here the map's lock) across its `try_lease`, so an eviction's `remove` cannot
//! split the two; that use is what loom checks, not dashmap's internal sharding.

#[cfg(not(loom))]
pub(crate) type ConcurrentMap<K, V> = dashmap::DashMap<K, V, rustc_hash::FxBuildHasher>;

#[cfg(not(loom))]
pub(crate) fn new_map<K: Eq + std::hash::Hash, V>() -> ConcurrentMap<K, V> {
    dashmap::DashMap::with_hasher(rustc_hash::FxBuildHasher)
}

#[cfg(loom)]
pub(crate) use self::model::ConcurrentMap;

#[cfg(loom)]
pub(crate) fn new_map<K: Eq + std::hash::Hash, V>() -> ConcurrentMap<K, V> {
    ConcurrentMap::default()
}

#[cfg(loom)]
mod model {
    use std::collections::HashMap;
    use std::hash::Hash;

    use crate::sync::{Mutex, MutexGuard, lock};

    /// A map under one lock, with dashmap's calls that the pool makes.
    pub(crate) struct ConcurrentMap<K, V>(Mutex<HashMap<K, V>>);

    impl<K, V> Default for ConcurrentMap<K, V> {
        fn default() -> Self {
            ConcurrentMap(Mutex::new(HashMap::new()))
        }
    }

    /// A looked-up entry; the map stays locked while it lives, as a dashmap shard does.
    pub(crate) struct Ref<'a, K, V> {
        guard: MutexGuard<'a, HashMap<K, V>>,
        key: K,
    }

    impl<K: Eq + Hash, V> Ref<'_, K, V> {
        pub(crate) fn value(&self) -> &V {
            &self.guard[&self.key]
        }
    }

    impl<K: Eq + Hash + Copy, V> ConcurrentMap<K, V> {
        pub(crate) fn get(&self, key: &K) -> Option<Ref<'_, K, V>> {
            let guard = lock(&self.0);
            guard.contains_key(key).then_some(Ref { guard, key: *key })
        }
        pub(crate) fn contains_key(&self, key: &K) -> bool {
            lock(&self.0).contains_key(key)
        }
        pub(crate) fn insert(&self, key: K, value: V) -> Option<V> {
            lock(&self.0).insert(key, value)
        }
        pub(crate) fn remove(&self, key: &K) -> Option<(K, V)> {
            lock(&self.0).remove_entry(key)
        }
    }
}
