//! A map for keys that come nearly in order, as blocks do by their first id (a controller
//! grants them in order; answers on different sockets may reach the capture a little out
//! of it), and that go oldest first. While each key lands within [`MAX_SHIFT`] places of
//! the end and each removal within as many of either end, the entries are a sorted
//! deque: an append looks back from the end for its place and pushes, where a B-tree
//! descends to its last leaf comparing its way through every node (about 750
//! instructions an insert on the control capture's blocks). The first key that would move more turns the map into a
//! B-tree for good, so no order of keys costs more than a B-tree does.

use std::collections::{btree_map, vec_deque, BTreeMap, VecDeque};

/// Entries an insert or a removal may shift in the deque before the map becomes a tree.
const MAX_SHIFT: usize = 64;

#[derive(Debug)]
pub struct NearlySorted<K, V> {
    /// Every entry, in key order, while `tree` is `None`.
    deque: VecDeque<(K, V)>,
    /// Every entry, once one came or went too far from the deque's ends.
    tree: Option<BTreeMap<K, V>>,
}

impl<K, V> Default for NearlySorted<K, V> {
    fn default() -> Self {
        Self {
            deque: VecDeque::new(),
            tree: None,
        }
    }
}

impl<K: Ord + Copy, V> NearlySorted<K, V> {
    pub fn len(&self) -> usize {
        self.tree.as_ref().map_or(self.deque.len(), BTreeMap::len)
    }

    /// Inserts `value` under `key`; returns the value it replaced.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        if let Some(tree) = &mut self.tree {
            return tree.insert(key, value);
        }
        // From the back, where keys land: the deque's ends stay in the cache, where a
        // binary search over tens of thousands of entries would miss it at every step.
        let behind = self
            .deque
            .iter()
            .rev()
            .take(MAX_SHIFT + 1)
            .position(|(k, _)| *k <= key);
        let at = match behind {
            None if self.deque.len() > MAX_SHIFT => return self.tree().insert(key, value),
            None => 0,
            Some(behind) => self.deque.len() - behind,
        };
        if let Some((k, old)) = at.checked_sub(1).and_then(|i| self.deque.get_mut(i)) {
            if *k == key {
                return Some(std::mem::replace(old, value));
            }
        }
        self.deque.insert(at, (key, value));
        None
    }

    /// Takes out the value under `key`.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        if let Some(tree) = &mut self.tree {
            return tree.remove(key);
        }
        // From the front, where the oldest are; then anywhere.
        let near_front = self
            .deque
            .iter()
            .take(MAX_SHIFT + 1)
            .position(|(k, _)| k == key);
        let at = match near_front {
            Some(at) => at,
            None => self.deque.binary_search_by(|(k, _)| k.cmp(key)).ok()?,
        };
        if at.min(self.deque.len() - 1 - at) <= MAX_SHIFT {
            self.deque.remove(at).map(|(_, value)| value)
        } else {
            self.tree().remove(key)
        }
    }

    /// The entries from `from` to `to`, both included, in key order.
    pub fn range(&self, from: K, to: K) -> Range<'_, K, V> {
        if from > to {
            return Range::Deque(self.deque.range(0..0));
        }
        if let Some(tree) = &self.tree {
            return Range::Tree(tree.range(from..=to));
        }
        let start = self.deque.partition_point(|(k, _)| *k < from);
        let end = self.deque.partition_point(|(k, _)| *k <= to);
        Range::Deque(self.deque.range(start..end.max(start)))
    }

    /// The entries as a B-tree, from now on.
    fn tree(&mut self) -> &mut BTreeMap<K, V> {
        let deque = &mut self.deque;
        self.tree
            .get_or_insert_with(|| std::mem::take(deque).into_iter().collect())
    }

    #[cfg(test)]
    fn is_tree(&self) -> bool {
        self.tree.is_some()
    }
}

/// The entries of [`NearlySorted::range`].
pub enum Range<'a, K, V> {
    Deque(vec_deque::Iter<'a, (K, V)>),
    Tree(btree_map::Range<'a, K, V>),
}

impl<'a, K, V> Iterator for Range<'a, K, V> {
    type Item = (&'a K, &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Self::Deque(entries) => entries.next().map(|(k, v)| (k, v)),
            Self::Tree(entries) => entries.next(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        /// A key this far behind the largest so far (0: past it).
        Insert(u32),
        RemoveOldest,
        Remove(u32),
        Range(u32, u32),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0u32..4).prop_map(Op::Insert),
            1 => (0u32..300).prop_map(Op::Insert),
            3 => Just(Op::RemoveOldest),
            1 => (0u32..2000).prop_map(Op::Remove),
            1 => (0u32..2000, 0u32..300).prop_map(|(from, len)| Op::Range(from, len)),
        ]
    }

    proptest! {
        /// Whatever the order of keys, the map answers as a B-tree does.
        #[test]
        fn answers_as_a_btree_does(ops in prop::collection::vec(op(), 1..600)) {
            let mut map = NearlySorted::default();
            let mut model = BTreeMap::new();
            let mut arrivals = VecDeque::new();
            let mut top = 1000u32;
            for (n, op) in ops.into_iter().enumerate() {
                match op {
                    Op::Insert(behind) => {
                        top += 1;
                        let key = top - behind;
                        prop_assert_eq!(map.insert(key, n), model.insert(key, n));
                        arrivals.push_back(key);
                    }
                    Op::RemoveOldest => {
                        if let Some(key) = arrivals.pop_front() {
                            prop_assert_eq!(map.remove(&key), model.remove(&key));
                        }
                    }
                    Op::Remove(key) => prop_assert_eq!(map.remove(&key), model.remove(&key)),
                    Op::Range(from, len) => {
                        let got: Vec<_> = map.range(from, from + len).collect();
                        let want: Vec<_> = model.range(from..=from + len).collect();
                        prop_assert_eq!(got, want);
                    }
                }
                prop_assert_eq!(map.len(), model.len());
            }
        }
    }

    #[test]
    fn keys_in_order_stay_in_the_deque_and_one_far_behind_makes_a_tree() {
        let mut map = NearlySorted::default();
        for key in (0..20_000u32).step_by(2) {
            map.insert(key, ());
            if key >= 200 {
                map.remove(&(key - 200));
            }
        }
        // 19,800 to 19,998: one a little late, one removed a little out of order
        assert_eq!(map.insert(19_981, ()), None);
        assert_eq!(map.remove(&19_802), Some(()));
        assert!(!map.is_tree());
        assert_eq!(map.len(), 100);
        // before every entry: more than MAX_SHIFT would move
        map.insert(18_001, ());
        assert!(map.is_tree());
        assert_eq!(map.len(), 101);
        let found: Vec<u32> = map.range(18_000, 19_805).map(|(k, _)| *k).collect();
        assert_eq!(found, vec![18_001, 19_800, 19_804]);
        assert_eq!(map.range(10, 5).count(), 0);
    }
}
