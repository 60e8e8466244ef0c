//! Request headers' `client_id`, shared. A connection sends the same `client_id` with
//! every request, and a controller's few brokers send a handful between them: each
//! thread keeps the ids it read last and hands out the same string again for the same
//! bytes, where every decoded request allocated, checked and later freed its own (about
//! 350 instructions an exchange on the capture thread, `docs/performance.md`).
//!
//! What is kept is fixed and small: [`SETS`] × 2 ids of at most [`MAX_KEPT`] bytes a
//! thread (about 20 KiB), within what a worker is allowed beside its connections
//! (`shard::WORKER_OWN`); a longer id is read afresh each time.

use std::cell::RefCell;
use std::hash::BuildHasher;
use std::str::Utf8Error;
use std::sync::Arc;

/// A `client_id` as read: one string for every request that sent the same bytes.
pub type ClientId = Arc<str>;

/// Sets of ids kept a thread, each id in the set its bytes hash to, the one read last
/// first; a new id takes the place of the one its set read longest ago. Several ways, not
/// one: a controller's sixteen brokers' ids in 64 slots of one id shared slots, which
/// took turns to push each other out (a fifth of a control capture's reads missed).
const SETS: usize = 64;
/// Ids a set keeps.
const WAYS: usize = 4;
/// Longest id kept.
const MAX_KEPT: usize = 128;

thread_local! {
    static KEPT: RefCell<[[Option<ClientId>; WAYS]; SETS]> =
        const { RefCell::new([const { [const { None }; WAYS] }; SETS]) };
}

/// The id `bytes` spell, shared with the last read of the same bytes on this thread; an
/// error when they are not UTF-8.
pub fn shared(bytes: &[u8]) -> Result<ClientId, Utf8Error> {
    if bytes.len() > MAX_KEPT {
        return std::str::from_utf8(bytes).map(Arc::from);
    }
    let set = set_of(bytes);
    KEPT.with(|kept| {
        let mut kept = kept.borrow_mut();
        let Some(ways) = kept.get_mut(set) else {
            return std::str::from_utf8(bytes).map(Arc::from);
        };
        let found = ways
            .iter()
            .position(|id| id.as_ref().is_some_and(|id| id.as_bytes() == bytes));
        // the id read last goes first, pushing back those before it, or out the last
        let moved = found.map_or(WAYS - 1, |way| way);
        if let Some(before) = ways.get_mut(..=moved) {
            before.rotate_right(1);
        }
        let [first, ..] = ways;
        match first {
            Some(id) if found.is_some() => Ok(Arc::clone(id)),
            _ => {
                let id: ClientId = Arc::from(std::str::from_utf8(bytes)?);
                *first = Some(Arc::clone(&id));
                Ok(id)
            }
        }
    })
}

fn set_of(bytes: &[u8]) -> usize {
    let hash = foldhash::fast::FixedState::with_seed(0).hash_one(bytes);
    // the top bits: foldhash mixes them best
    (hash >> (u64::BITS - SETS.trailing_zeros())) as usize
}

/// Heap an id is charged for by each request that holds it: its bytes, as a `String` of
/// its own was. Shared, it is counted once per holder, and its two counts (16 bytes)
/// not at all.
pub fn heap_bytes(id: &ClientId) -> usize {
    id.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_bytes_give_the_same_string() {
        let first = shared(b"broker-1-to-controller").expect("UTF-8");
        let again = shared(b"broker-1-to-controller").expect("UTF-8");
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(&*again, "broker-1-to-controller");
    }

    #[test]
    fn other_bytes_give_their_own_string_whichever_slot_they_share() {
        let ids: Vec<String> = (0..8 * SETS).map(|n| format!("broker-{n}")).collect();
        // every id read twice, interleaved: slots are taken over, never confused
        for _ in 0..2 {
            for id in &ids {
                assert_eq!(&*shared(id.as_bytes()).expect("UTF-8"), id.as_str());
            }
        }
    }

    /// A controller's brokers each send their own id, interleaved: every one is kept,
    /// read again without a new string.
    #[test]
    fn the_ids_of_a_controllers_brokers_are_all_kept() {
        let ids: Vec<String> = (0..24)
            .map(|n| format!("broker-{n}-to-controller"))
            .collect();
        let first: Vec<ClientId> = ids
            .iter()
            .map(|id| shared(id.as_bytes()).expect("UTF-8"))
            .collect();
        for _ in 0..2 {
            for (id, kept) in ids.iter().zip(&first).rev() {
                let again = shared(id.as_bytes()).expect("UTF-8");
                assert!(Arc::ptr_eq(&again, kept), "{id} was read afresh");
            }
        }
    }

    #[test]
    fn a_long_id_is_read_whole_and_not_kept() {
        let long = "x".repeat(MAX_KEPT + 1);
        let first = shared(long.as_bytes()).expect("UTF-8");
        let again = shared(long.as_bytes()).expect("UTF-8");
        assert_eq!(&*first, long.as_str());
        assert!(!Arc::ptr_eq(&first, &again));
    }

    #[test]
    fn bytes_that_are_not_utf8_are_an_error_even_after_a_kept_id() {
        shared(b"ab").expect("UTF-8");
        assert!(shared(b"a\xff").is_err());
        assert!(shared(&[0xc3]).is_err());
    }
}
