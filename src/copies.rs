//! Copies of one packet captured in two files: read once.
//!
//! In: TCP segments in merged time order, each with the file it came from. Out: whether a
//! segment is a copy of one another file already gave, within the clock skew allowed.
//! Two hosts that both capture a connection (a broker's host and the controller's) see
//! each of its packets once each, their clocks a few milliseconds apart; the second
//! copy is not a retransmission and must not be read as one.
//!
//! A copy has the same addresses and ports, sequence and acknowledgement numbers, flags,
//! window and length on the wire, and the same first bytes of payload as far as both
//! files captured them (a snaplen may cut one copy shorter than the other). What differs
//! between two hosts' views (link headers, TTL, IP identification, checksums offloaded)
//! is not compared. Within one file an identical segment is a real retransmission.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, Hash, Hasher};

use crate::decode::TcpSegmentView;
use crate::diag::obs;
use crate::diag::{Diagnostics, Observation};
use crate::packet_ref::PacketRef;

/// Default `--clock-skew`: how far apart two files' timestamps of one packet may be.
pub const DEFAULT_CLOCK_SKEW_NS: u64 = 5_000_000;
/// Payload bytes compared: enough to tell segments apart, few enough that a copy cut by a
/// small snaplen (`-s 128` leaves some 60 bytes of payload) still compares whole.
const COMPARED_LEN: usize = 32;
/// Segments remembered at most: the skew at some 10 million packets a second. A capture
/// denser than that (or one whose timestamps all agree) has copies found only within it.
pub const MAX_REMEMBERED: usize = 1 << 16;

/// A segment as remembered: its fingerprint, and when it was seen.
#[derive(Debug, Clone, Copy)]
struct Seen {
    fingerprint: u64,
    at: i128,
}

/// The latest sighting of a fingerprint still remembered, and how many are.
#[derive(Debug, Clone, Copy)]
struct Latest {
    at: i128,
    capture: u32,
    frame: u64,
    remembered: u32,
}

/// Finds copies among the segments of several files; see the module documentation.
#[derive(Debug)]
pub struct Copies {
    skew_ns: i128,
    /// Segments seen within the skew, oldest first.
    recent: VecDeque<Seen>,
    latest: HashMap<u64, Latest>,
    hasher: foldhash::fast::FixedState,
    /// Copies found, by the index of the file they came from.
    found: Vec<u64>,
    /// Whether [`MAX_REMEMBERED`] was reached (said once).
    full: bool,
}

impl Copies {
    pub fn new(skew_ns: u64) -> Self {
        Self {
            skew_ns: i128::from(skew_ns),
            recent: VecDeque::new(),
            latest: HashMap::new(),
            hasher: foldhash::fast::FixedState::with_seed(0x5eed),
            found: Vec::new(),
            full: false,
        }
    }

    /// Whether `segment`, captured at `at`, is a copy of a segment another file gave within
    /// the skew: then it is counted, should not be read again, and the frame of the copy
    /// read is returned. Segments of a run with one file (no origin) are never copies.
    pub fn copy_of(
        &mut self,
        segment: &TcpSegmentView<'_>,
        at: PacketRef,
        diags: &mut Diagnostics,
    ) -> Option<u64> {
        let origin = at.origin?;
        let now = at.timestamp.as_nanos();
        self.forget_before(now.saturating_sub(self.skew_ns));
        let fingerprint = self.fingerprint(segment);
        if let Some(latest) = self.latest.get(&fingerprint) {
            if latest.capture != origin.capture() && (now - latest.at).abs() <= self.skew_ns {
                let frame = latest.frame;
                self.count(origin.capture());
                return Some(frame);
            }
        }
        if self.recent.len() >= MAX_REMEMBERED {
            self.note_full(at, diags);
            if let Some(oldest) = self.recent.front().map(|s| s.at) {
                self.forget_before(oldest.saturating_add(1));
            }
        }
        self.recent.push_back(Seen {
            fingerprint,
            at: now,
        });
        let latest = self.latest.entry(fingerprint).or_insert(Latest {
            at: now,
            capture: origin.capture(),
            frame: at.frame,
            remembered: 0,
        });
        latest.at = now;
        latest.capture = origin.capture();
        latest.frame = at.frame;
        latest.remembered += 1;
        None
    }

    /// Copies found, by the index of the file they came from.
    pub fn found(&self) -> &[u64] {
        &self.found
    }

    /// Heap held, at allocated sizes.
    pub fn held_bytes(&self) -> usize {
        self.recent.capacity() * size_of::<Seen>()
            + self.latest.capacity() * (size_of::<u64>() + size_of::<Latest>())
    }

    fn count(&mut self, capture: u32) {
        let idx = capture as usize;
        if self.found.len() <= idx {
            self.found.resize(idx + 1, 0);
        }
        if let Some(n) = self.found.get_mut(idx) {
            *n += 1;
        }
    }

    /// Forgets the segments seen before `oldest`.
    fn forget_before(&mut self, oldest: i128) {
        while let Some(seen) = self.recent.front().copied() {
            if seen.at >= oldest {
                break;
            }
            self.recent.pop_front();
            if let Some(latest) = self.latest.get_mut(&seen.fingerprint) {
                latest.remembered = latest.remembered.saturating_sub(1);
                if latest.remembered == 0 {
                    self.latest.remove(&seen.fingerprint);
                }
            }
        }
    }

    fn fingerprint(&self, s: &TcpSegmentView<'_>) -> u64 {
        let mut h = self.hasher.build_hasher();
        (s.src, s.dst, s.seq, s.syn, s.ack, s.fin, s.rst, s.window).hash(&mut h);
        if s.ack {
            s.ack_number.hash(&mut h);
        }
        (s.payload.len() as u64 + u64::from(s.missing_len)).hash(&mut h);
        s.payload
            .get(..COMPARED_LEN)
            .unwrap_or(s.payload)
            .hash(&mut h);
        h.finish()
    }

    fn note_full(&mut self, at: PacketRef, diags: &mut Diagnostics) {
        if std::mem::replace(&mut self.full, true) {
            return;
        }
        diags.add(
            None,
            at,
            Observation::DuplicateWindowFull(obs::DuplicateWindowFull {
                remembered: MAX_REMEMBERED as u64,
            }),
        );
    }
}
