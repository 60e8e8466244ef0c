//! What allocations take from the heap, as the memory budget charges them: a leaf for
//! every stage that charges what it holds (`defrag`, `tcp`).
//!
//! The figures are glibc malloc's on x86-64; tests/memory_tcp_costs.rs measures them
//! under a counting allocator against what the stages charge.

/// What an allocation of `len` bytes takes from glibc malloc on x86-64: its 8-byte header,
/// rounded up to 16, and 32 at least (nothing for no allocation).
pub const fn heap_cost(len: usize) -> usize {
    if len == 0 {
        0
    } else if len <= 24 {
        32
    } else {
        (len + 8).next_multiple_of(16)
    }
}

/// The hasher of every table the budget charges at its capacity (the open connections,
/// the closed records, each connection's waiting requests): the same seed in every run.
///
/// A table's capacity is not a function of what it holds: a removal leaves a tombstone
/// where its key hashed to (unless its group of slots has an empty one), tombstones use
/// up the room left, and when that is gone the table either doubles or rehashes in place,
/// depending on how many there are. With a seed drawn per run, two runs of one capture
/// were charged differently and a tight budget gave up different things
/// (`--max-memory 64K` counted 6,223 or 6,373 connections).
///
/// The price of a fixed seed: the keys come from the capture (addresses, ports,
/// correlation ids), and a capture crafted against this seed could make them collide and
/// slow the lookups of the table it fills. It cannot change what is reported, and each
/// table is bounded (`--max-connections`, `--max-pending`, the budget). No entries move
/// from one of these tables into another, which with one seed could go quadratic.
/// Tables neither charged at their capacity nor iterated keep a seed drawn per run.
pub type ChargedTableHasher = foldhash::fast::FixedState;

/// What a hashbrown table (`HashMap`) of `capacity` (as it reports) takes for slots of
/// `slot` bytes: a power of two of buckets, 8 for every 7 it can hold (so from 7/16 to
/// 7/8 full), each a slot and a control byte, 16 more control bytes, malloc's header.
pub fn table_cost(capacity: usize, slot: usize) -> usize {
    let buckets = match capacity {
        0 => return 0,
        1..=6 => capacity + 1,
        _ => capacity / 7 * 8,
    };
    heap_cost(buckets * (slot + 1) + 16)
}
