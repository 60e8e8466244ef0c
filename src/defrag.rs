//! IP fragments: TCP datagrams split into IPv4 or IPv6 fragments, put back together.
//!
//! In: [`IpFragmentView`]s from `decode`, with the packet each came in. Out: a
//! [`Reassembled`] datagram payload when the fragment that completes one arrives; it then
//! goes through TCP as a segment of that packet (its frame number and time). Fragments
//! are keyed by (source, destination, identification); only TCP ones reach this module.
//!
//! Bounded, and out loud: at most [`MAX_HELD_LEN`] bytes are held over all datagrams
//! being reassembled (64 bytes counted per fragment; past it the oldest datagram is given
//! up), at most [`MAX_FRAGMENTS`] fragments per datagram, and a datagram not complete
//! [`TIMEOUT_SECS`] seconds of capture time after its first fragment is given up (Linux's
//! `ipfrag_time`). Overlapping fragments must agree on the bytes they share and on where
//! the datagram ends; otherwise the datagram is given up, since no copy can be trusted.
//! Every datagram given up, and every one still incomplete when the capture ends, is an
//! `ip_fragments_dropped` diagnostic with its reason. Bytes cut from a fragment by snaplen
//! are kept as a count: the datagram's payload is its captured prefix and the rest is
//! missing, as for a segment cut short.

use std::collections::{BTreeMap, VecDeque};
use std::net::IpAddr;

use crate::decode::IpFragmentView;
use crate::diag::{At, Diagnostics, FragmentsDropped, Observation};
use crate::heap::heap_cost;
use crate::packet_ref::PacketRef;

/// Bytes held over all datagrams being reassembled.
pub const MAX_HELD_LEN: usize = 4 << 20;
/// Fragments accepted per datagram (a 64 KiB datagram over a 1280-byte MTU needs 52).
pub const MAX_FRAGMENTS: usize = 64;
/// Capture seconds after its first fragment that a datagram may take to complete.
pub const TIMEOUT_SECS: i64 = 30;
/// What a held fragment costs beyond its bytes' allocation: its place in its datagram's
/// `Vec<Piece>`, twice over, as the vector doubles.
const FRAGMENT_OVERHEAD: usize = 2 * size_of::<Piece>();
/// What a datagram being reassembled costs before its fragments: its entry in the
/// `BTreeMap` (a leaf node holds 11 and may be left at 5, plus a fifth for the internal
/// nodes), three entries in `order` (its own and two stale ones, as compaction allows)
/// at a doubling ring's worst load, and the first allocation of its pieces (4).
const DATAGRAM_OVERHEAD: usize = heap_cost(11 * size_of::<(Key, Datagram)>() + 16) / 5 * 6 / 5
    + 6 * size_of::<(Key, u64)>()
    + heap_cost(4 * size_of::<Piece>());
/// The largest datagram payload an IP length field can describe.
const MAX_DATAGRAM_LEN: u32 = 65_535;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    src: IpAddr,
    dst: IpAddr,
    id: u32,
}

/// One fragment as held.
#[derive(Debug)]
struct Piece {
    offset: u32,
    data: Vec<u8>,
    missing_len: u32,
}

impl Piece {
    /// End of the bytes this fragment claims, captured or not.
    fn end(&self) -> u32 {
        self.offset + self.data.len() as u32 + self.missing_len
    }
}

/// A datagram being reassembled. Invariant: the captured bytes of any two pieces agree
/// where they overlap, and no piece ends past `end` once it is known.
#[derive(Debug)]
struct Datagram {
    serial: u64,
    first: PacketRef,
    last_frame: u64,
    pieces: Vec<Piece>,
    /// Payload length, known from the fragment without More Fragments.
    end: Option<u32>,
    held_len: usize,
}

/// A datagram put back together: its payload's captured prefix and how many bytes
/// after it the capture lacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reassembled {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub payload: Vec<u8>,
    pub missing_len: u32,
    pub fragments: usize,
}

/// Fragments waiting for the rest of their datagram.
#[derive(Debug, Default)]
pub struct Defragmenter {
    pending: BTreeMap<Key, Datagram>,
    /// Datagrams by first fragment, oldest first; entries whose serial no longer matches
    /// were completed or given up already.
    order: VecDeque<(Key, u64)>,
    held_len: usize,
    next_serial: u64,
}

impl Defragmenter {
    /// Takes one fragment; returns the datagram it completes, if it does.
    pub fn fragment(
        &mut self,
        frag: &IpFragmentView<'_>,
        at: PacketRef,
        diags: &mut Diagnostics,
    ) -> Option<Reassembled> {
        self.expire(at, diags);
        let key = Key {
            src: frag.src,
            dst: frag.dst,
            id: frag.id,
        };
        let piece = Piece {
            offset: frag.offset,
            data: frag.payload.to_vec(),
            missing_len: frag.missing_len,
        };
        let end = u64::from(frag.offset) + frag.payload.len() as u64 + u64::from(frag.missing_len);
        if end > u64::from(MAX_DATAGRAM_LEN) {
            let reason = format!("a fragment ends at byte {end}, past the {MAX_DATAGRAM_LEN} an IP datagram can hold");
            self.give_up(key, at.into(), 1, &reason, diags);
            return None;
        }
        let fresh = !self.pending.contains_key(&key);
        let cost = heap_cost(piece.data.len())
            + FRAGMENT_OVERHEAD
            + if fresh { DATAGRAM_OVERHEAD } else { 0 };
        while self.held_len + cost > MAX_HELD_LEN {
            let Some((old, serial)) = self.order.pop_front() else {
                break;
            };
            if self.pending.get(&old).is_some_and(|d| d.serial == serial) {
                let reason = format!("fragments held reached {} MiB", MAX_HELD_LEN >> 20);
                self.give_up(old, at.into(), 0, &reason, diags);
            }
        }
        if !self.pending.contains_key(&key) {
            self.compact_order();
            let serial = self.next_serial;
            self.next_serial += 1;
            self.order.push_back((key, serial));
            self.pending.insert(
                key,
                Datagram {
                    serial,
                    first: at,
                    last_frame: at.frame,
                    pieces: Vec::new(),
                    end: None,
                    held_len: 0,
                },
            );
        }
        let datagram = self.pending.get_mut(&key)?;
        datagram.last_frame = at.frame;
        if let Some(reason) = conflict(datagram, &piece, frag.more) {
            self.give_up(key, at.into(), 1, &reason, diags);
            return None;
        }
        if !frag.more {
            datagram.end = Some(piece.end());
        }
        datagram.held_len += cost;
        self.held_len += cost;
        datagram.pieces.push(piece);
        if !is_complete(datagram) {
            return None;
        }
        let datagram = self.pending.remove(&key)?;
        self.held_len = self.held_len.saturating_sub(datagram.held_len);
        Some(assemble(key, datagram))
    }

    /// Drops the entries of datagrams completed or given up since, once they outnumber the
    /// pending ones: a datagram left pending (for up to [`TIMEOUT_SECS`]) ahead of many
    /// completed ones must not keep all their entries.
    fn compact_order(&mut self) {
        if self.order.len() > 2 * self.pending.len() + 1024 {
            let pending = &self.pending;
            self.order
                .retain(|(key, serial)| pending.get(key).is_some_and(|d| d.serial == *serial));
        }
    }

    /// Gives up every datagram still incomplete at the end of the capture.
    pub fn finish(&mut self, diags: &mut Diagnostics) {
        let keys: Vec<Key> = self.pending.keys().copied().collect();
        for key in keys {
            let frame = self.pending.get(&key).map_or(0, |d| d.last_frame);
            self.give_up(
                key,
                At::from(Some(frame)),
                0,
                "the capture ended before it was complete",
                diags,
            );
        }
        self.order.clear();
    }

    /// Datagrams whose first fragment is more than [`TIMEOUT_SECS`] older than `at`.
    fn expire(&mut self, at: PacketRef, diags: &mut Diagnostics) {
        let now = at.timestamp.as_nanos();
        while let Some((key, serial)) = self.order.front().copied() {
            let Some(datagram) = self.pending.get(&key).filter(|d| d.serial == serial) else {
                self.order.pop_front();
                continue;
            };
            if now - datagram.first.timestamp.as_nanos() <= i128::from(TIMEOUT_SECS) * 1_000_000_000
            {
                break;
            }
            self.order.pop_front();
            let reason = format!("it was not complete {TIMEOUT_SECS} s after its first fragment");
            self.give_up(key, at.into(), 0, &reason, diags);
        }
    }

    /// Drops a datagram (and `extra` fragments not held) with a diagnostic at `at`.
    fn give_up(&mut self, key: Key, at: At, extra: usize, reason: &str, diags: &mut Diagnostics) {
        let (fragments, bytes, first_frame) = match self.pending.remove(&key) {
            Some(datagram) => {
                self.held_len = self.held_len.saturating_sub(datagram.held_len);
                let bytes: usize = datagram.pieces.iter().map(|p| p.data.len()).sum();
                (datagram.pieces.len(), bytes, datagram.first.frame)
            }
            None => (0, 0, at.frame().unwrap_or(0)),
        };
        diags.add(
            None,
            at,
            Observation::IpFragmentsDropped(FragmentsDropped::Datagram {
                fragments: (fragments + extra) as u64,
                bytes: bytes as u64,
                first_frame,
                datagram_id: key.id,
                from: key.src,
                to: key.dst,
                reason,
            }),
        );
    }
}

/// Why `piece` cannot join `datagram`, if it cannot.
fn conflict(datagram: &Datagram, piece: &Piece, more: bool) -> Option<String> {
    if datagram.pieces.len() >= MAX_FRAGMENTS {
        return Some(format!("it has more than {MAX_FRAGMENTS} fragments"));
    }
    let end = piece.end();
    match datagram.end {
        Some(known) if !more && end != known => {
            return Some(format!("two last fragments end at bytes {known} and {end}"));
        }
        Some(known) if end > known => {
            return Some(format!(
                "a fragment ends at byte {end}, past the datagram's end at {known}"
            ));
        }
        None if !more => {
            if let Some(past) = datagram
                .pieces
                .iter()
                .map(Piece::end)
                .filter(|e| *e > end)
                .max()
            {
                return Some(format!(
                    "a fragment ends at byte {past}, past the datagram's end at {end}"
                ));
            }
        }
        _ => {}
    }
    for held in &datagram.pieces {
        let from = held.offset.max(piece.offset);
        let to = (held.offset + held.data.len() as u32).min(piece.offset + piece.data.len() as u32);
        if from >= to {
            continue;
        }
        let a = held
            .data
            .get((from - held.offset) as usize..(to - held.offset) as usize);
        let b = piece
            .data
            .get((from - piece.offset) as usize..(to - piece.offset) as usize);
        if a != b {
            return Some(format!(
                "overlapping fragments carry different bytes at offsets {from} to {to}"
            ));
        }
    }
    None
}

/// Whether the pieces claim every byte from 0 to the known end.
fn is_complete(datagram: &Datagram) -> bool {
    let Some(end) = datagram.end else {
        return false;
    };
    let mut ranges: Vec<(u32, u32)> = datagram
        .pieces
        .iter()
        .map(|p| (p.offset, p.end()))
        .collect();
    ranges.sort_unstable();
    let mut covered = 0;
    for (from, to) in ranges {
        if from > covered {
            return false;
        }
        covered = covered.max(to);
    }
    covered >= end
}

/// The payload of a complete datagram: every captured byte, up to the first byte that
/// no fragment captured; the rest is counted as missing.
fn assemble(key: Key, datagram: Datagram) -> Reassembled {
    let end = datagram.end.unwrap_or(0) as usize;
    let mut payload = vec![0u8; end];
    let mut have = vec![false; end];
    for piece in &datagram.pieces {
        let from = piece.offset as usize;
        let to = from + piece.data.len();
        if let (Some(out), Some(marks)) = (payload.get_mut(from..to), have.get_mut(from..to)) {
            out.copy_from_slice(&piece.data);
            marks.fill(true);
        }
    }
    let prefix = have.iter().position(|h| !h).unwrap_or(end);
    payload.truncate(prefix);
    Reassembled {
        src: key.src,
        dst: key.dst,
        payload,
        missing_len: u32::try_from(end - prefix).unwrap_or(u32::MAX),
        fragments: datagram.pieces.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timestamp::Timestamp;

    fn at(frame: u64, secs: i64) -> PacketRef {
        PacketRef {
            frame,
            timestamp: Timestamp {
                secs,
                nanos: 0,
                nano: false,
            },
            origin: None,
        }
    }

    fn frag(id: u32, offset: u32, more: bool, payload: &[u8]) -> IpFragmentView<'_> {
        IpFragmentView {
            src: "10.0.0.1".parse().unwrap(),
            dst: "10.0.0.2".parse().unwrap(),
            id,
            offset,
            more,
            payload,
            missing_len: 0,
        }
    }

    fn kinds(diags: Diagnostics) -> Vec<String> {
        diags.into_sorted().into_iter().map(|d| d.message).collect()
    }

    #[test]
    fn out_of_order_fragments_complete_the_datagram() {
        let data: Vec<u8> = (0..40).collect();
        let mut defrag = Defragmenter::default();
        let mut diags = Diagnostics::default();
        assert_eq!(
            defrag.fragment(&frag(7, 32, false, &data[32..]), at(1, 0), &mut diags),
            None
        );
        assert_eq!(
            defrag.fragment(&frag(7, 0, true, &data[..16]), at(2, 0), &mut diags),
            None
        );
        let done = defrag
            .fragment(&frag(7, 16, true, &data[16..32]), at(3, 0), &mut diags)
            .unwrap();
        assert_eq!(done.payload, data);
        assert_eq!((done.missing_len, done.fragments), (0, 3));
        assert_eq!(defrag.held_len, 0);
        assert!(diags.is_empty());
    }

    #[test]
    fn identical_overlap_is_accepted_and_a_different_one_drops_the_datagram() {
        let data = [5u8; 24];
        let mut defrag = Defragmenter::default();
        let mut diags = Diagnostics::default();
        defrag.fragment(&frag(1, 0, true, &data[..16]), at(1, 0), &mut diags);
        defrag.fragment(&frag(1, 8, true, &data[8..16]), at(2, 0), &mut diags);
        assert!(defrag
            .fragment(&frag(1, 16, false, &data[16..]), at(3, 0), &mut diags)
            .is_some());
        defrag.fragment(&frag(2, 0, true, &data[..16]), at(4, 0), &mut diags);
        defrag.fragment(&frag(2, 8, true, &[6u8; 8]), at(5, 0), &mut diags);
        assert!(defrag
            .fragment(&frag(2, 16, false, &data[16..]), at(6, 0), &mut diags)
            .is_none());
        let messages = kinds(diags);
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(
            messages[0].contains("different bytes at offsets 8 to 16"),
            "{messages:?}"
        );
    }

    #[test]
    fn timeout_cap_and_end_of_capture_are_reported() {
        let mut defrag = Defragmenter::default();
        let mut diags = Diagnostics::default();
        defrag.fragment(&frag(1, 0, true, &[0; 8]), at(1, 0), &mut diags);
        defrag.fragment(&frag(2, 0, true, &[0; 8]), at(2, 31), &mut diags);
        for n in 0..=MAX_FRAGMENTS as u32 {
            defrag.fragment(&frag(3, 8 + n * 8, true, &[0; 8]), at(3, 31), &mut diags);
        }
        defrag.finish(&mut diags);
        let messages = kinds(diags);
        assert_eq!(messages.len(), 3, "{messages:?}");
        assert!(
            messages[0].contains("not complete 30 s after"),
            "{messages:?}"
        );
        // in frame order: datagram 2's last fragment came before datagram 3's
        assert!(messages[1].contains("capture ended"), "{messages:?}");
        assert!(messages[2].starts_with("65 IPv4 fragments"), "{messages:?}");
        assert!(messages[2].contains("more than 64"), "{messages:?}");
        assert_eq!(defrag.held_len, 0);
    }

    #[test]
    fn held_bytes_are_capped_by_giving_up_the_oldest() {
        let mut defrag = Defragmenter::default();
        let mut diags = Diagnostics::default();
        let big = vec![0u8; 60_000];
        for id in 0..80 {
            defrag.fragment(&frag(id, 0, true, &big), at(u64::from(id), 0), &mut diags);
            assert!(defrag.held_len <= MAX_HELD_LEN);
        }
        assert!(!diags.is_empty());
        assert!(kinds(diags)[0].contains("reached 4 MiB"));
    }

    #[test]
    fn a_cut_fragment_leaves_a_counted_tail() {
        let mut defrag = Defragmenter::default();
        let mut diags = Diagnostics::default();
        let mut cut = frag(4, 0, true, &[1; 10]);
        cut.missing_len = 6;
        defrag.fragment(&cut, at(1, 0), &mut diags);
        let done = defrag
            .fragment(&frag(4, 16, false, &[2; 8]), at(2, 0), &mut diags)
            .unwrap();
        assert_eq!(done.payload, vec![1; 10]);
        assert_eq!(done.missing_len, 14);
    }
}
