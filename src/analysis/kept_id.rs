//! A name a producer's request gave (its transactional id, its `client_id`) as what the
//! analysis and the reports keep of it: whole up to [`MAX_KEPT_LEN`] bytes, as every real
//! one is; past that its first bytes, its length and a keyed hash of it, and shown as cut,
//! never as the whole id. A capture may hold a million requests, each with an id of a
//! mebibyte (InitProducerId and EndTxn read theirs up to `MAX_DECODED_LEN`), and their
//! holders are kept for the whole capture.

use std::hash::BuildHasher;
use std::sync::{Arc, OnceLock};

/// Bytes of a name kept.
pub const MAX_KEPT_LEN: usize = 256;

/// A name as kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptId {
    /// The name whole, or its first bytes, no more than [`MAX_KEPT_LEN`], cut at a
    /// character's boundary.
    kept: Arc<str>,
    /// The whole name's length in bytes.
    len: usize,
    /// A cut name's hash, keyed anew by each run so that no capture can choose two names
    /// that share it; 0 for a whole name.
    hash: u64,
}

impl KeptId {
    pub fn new(name: &str) -> Self {
        let (kept, hash) = Self::parts(name);
        Self {
            kept: Arc::from(kept),
            len: name.len(),
            hash,
        }
    }

    /// `name` as kept, sharing the text of one of `known` that is the same name as kept.
    pub fn like<'a>(name: &str, known: impl IntoIterator<Item = &'a Self>) -> Self {
        let (kept, hash) = Self::parts(name);
        let same = |k: &&Self| k.len == name.len() && k.hash == hash && &*k.kept == kept;
        match known.into_iter().find(same) {
            Some(k) => k.clone(),
            None => Self {
                kept: Arc::from(kept),
                len: name.len(),
                hash,
            },
        }
    }

    /// The part of `name` kept, and its hash when that is not all of it.
    fn parts(name: &str) -> (&str, u64) {
        if name.len() <= MAX_KEPT_LEN {
            return (name, 0);
        }
        let mut end = MAX_KEPT_LEN;
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        static KEY: OnceLock<std::collections::hash_map::RandomState> = OnceLock::new();
        let hash = KEY.get_or_init(Default::default).hash_one(name);
        (name.get(..end).unwrap_or_default(), hash)
    }

    /// The whole name's length in bytes, when what is kept is only its first bytes.
    pub fn cut_from(&self) -> Option<u64> {
        (self.kept.len() < self.len).then_some(self.len as u64)
    }

    /// The name, whole when it is, else its first bytes followed by `…`.
    pub fn text(&self) -> String {
        match self.cut_from() {
            Some(_) => format!("{}…", self.kept),
            None => self.kept.to_string(),
        }
    }

    /// Whether the two surely are other names: of other lengths, beginnings or hashes.
    /// Two cut names alike in all three are taken for the same (another one's hash would
    /// have to be guessed without its key).
    pub fn differs(&self, other: &Self) -> bool {
        self.len != other.len || self.hash != other.hash || self.kept != other.kept
    }

    /// The name in quotes, as the sentences show it: `"tx-1"`, or, cut, `"tx-…" cut from
    /// 1048576 bytes`.
    pub fn quoted(&self) -> String {
        crate::diag::obs::quoted(&self.text(), self.cut_from())
    }

    /// The name unquoted, as a table's cell shows it: `tx-1`, or `tx-… (cut from 1048576
    /// bytes)`.
    pub fn plain(&self) -> String {
        match self.cut_from() {
            Some(len) => format!("{} (cut from {len} bytes)", self.text()),
            None => self.text(),
        }
    }

    /// Heap the kept text takes, counted once for each holder.
    pub fn heap_bytes(&self) -> usize {
        self.kept.len()
    }

    /// What its text takes on the heap (with its `Arc`'s counts) when no other name
    /// shares it, else nothing: what a new one adds, and what dropping the last gives
    /// back.
    pub fn heap_alone(&self) -> usize {
        match Arc::strong_count(&self.kept) {
            1 => crate::heap::heap_cost(2 * size_of::<usize>() + self.kept.len()),
            _ => 0,
        }
    }

    /// Whether the two share their kept text.
    #[cfg(test)]
    pub fn shares(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.kept, &other.kept)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_name_is_kept_whole() {
        let id = KeptId::new("tx-1");
        assert_eq!((id.text(), id.cut_from()), ("tx-1".to_owned(), None));
        assert_eq!(id.quoted(), r#""tx-1""#);
        assert_eq!(id.plain(), "tx-1");
        let edge = "é".repeat(MAX_KEPT_LEN / 2);
        assert_eq!(KeptId::new(&edge).text(), edge);
    }

    #[test]
    fn a_long_name_is_kept_cut_and_shown_cut() {
        let long = format!("{}{}", "é".repeat(200), "x".repeat(1 << 20));
        let id = KeptId::new(&long);
        assert_eq!(id.cut_from(), Some(long.len() as u64));
        // cut at a character's boundary, never past the bound
        let kept = "é".repeat(MAX_KEPT_LEN / 2);
        assert_eq!(id.text(), format!("{kept}…"));
        assert!(id.heap_bytes() <= MAX_KEPT_LEN);
        assert_eq!(
            id.quoted(),
            format!("\"{kept}…\" cut from {} bytes", long.len())
        );
        assert_eq!(
            id.plain(),
            format!("{kept}… (cut from {} bytes)", long.len())
        );
    }

    /// Long names alike in their first bytes and length but not after are other names;
    /// the same name is the same, and shares its text.
    #[test]
    fn long_names_are_told_apart_by_what_follows_their_kept_bytes() {
        let base = "p".repeat(MAX_KEPT_LEN * 2);
        let (a, b) = (format!("{base}-0-5"), format!("{base}-1-5"));
        let (ka, kb) = (KeptId::new(&a), KeptId::new(&b));
        assert_eq!(ka.text(), kb.text());
        assert!(ka.differs(&kb));
        let again = KeptId::like(&a, [&kb, &ka]);
        assert!(!again.differs(&ka));
        assert!(again.shares(&ka));
        assert!(KeptId::new("tx-1").differs(&KeptId::new("tx-2")));
        assert!(!KeptId::new("tx-1").differs(&KeptId::new("tx-1")));
        assert!(KeptId::new(&base[..MAX_KEPT_LEN]).differs(&KeptId::new(&base)));
    }
}
