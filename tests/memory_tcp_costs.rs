//! What the TCP/IP stages hold per item, measured under a counting allocator against what
//! they charge: the charge must cover the heap really taken (requested bytes; the charge
//! adds malloc's headers and rounding on top) and not overstate it by much. The figures
//! printed are README "Hostile input"'s.
//!
//! Its own test binary, with one test, so no other test allocates while it measures.

use std::alloc::System;
use std::net::{IpAddr, SocketAddr};

use cap::Cap;
use pidshark::decode::{IpFragmentView, TcpSegmentView};
use pidshark::defrag::{Defragmenter, MAX_HELD_LEN};
use pidshark::diag::Diagnostics;
use pidshark::packet_ref::{FileSpot, PacketRef};
use pidshark::tcp::assembler::Delivery;
use pidshark::tcp::{ConnInfo, Dir, StreamHandler, Tracker};

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

/// Follows every connection and keeps nothing.
struct Follow;

impl StreamHandler for Follow {
    type Conn = ();

    fn delivery(
        &mut self,
        _: &mut (),
        _: &ConnInfo,
        _: Dir,
        _: Delivery<'_>,
        _: &mut Diagnostics,
    ) -> bool {
        true
    }

    fn close(&mut self, _: (), _: &ConnInfo, _: PacketRef, _: &mut Diagnostics) {}
}

fn segment<'a>(
    i: u32,
    from_client: bool,
    seq: u32,
    flags: &str,
    payload: &'a [u8],
) -> TcpSegmentView<'a> {
    // long payloads lie in a "file" (where is of no matter: nothing is compared)
    let spot = FileSpot::new(0, u64::from(seq)).filter(|_| payload.len() >= 512);
    let client = SocketAddr::from(([10, (i >> 16) as u8, (i >> 8) as u8, i as u8], 40000));
    let server = SocketAddr::from(([10, 0, 0, 2], 9093));
    let (src, dst) = if from_client {
        (client, server)
    } else {
        (server, client)
    };
    TcpSegmentView {
        src,
        dst,
        seq,
        ack_number: 0,
        syn: flags.contains('S'),
        ack: flags.contains('A'),
        fin: false,
        rst: false,
        window: 65535,
        window_scale: None,
        payload,
        missing_len: 0,
        spot,
    }
}

/// Open connections that delivered 100 bytes and hold one byte behind a hole; returns
/// (heap taken, charged) per connection.
fn connections(n: u32) -> (usize, usize) {
    const SHORT: [(bool, u32, &str, &[u8]); 4] = [
        (true, 100, "S", &[]),
        (false, 500, "SA", &[]),
        (true, 101, "A", &[7; 100]),
        (true, 202, "A", b"x"), // one byte lost before it
    ];
    measured(n, &SHORT)
}

/// Open connections that delivered a full ring (4 KiB, copied) and then two long
/// segments kept by their spot in the capture file, not copied; returns (heap taken,
/// charged) per connection.
fn spotted_connections(n: u32) -> (usize, usize) {
    const LONG: [(bool, u32, &str, &[u8]); 5] = [
        (true, 100, "S", &[]),
        (false, 500, "SA", &[]),
        (true, 101, "A", &[7; 4096]),
        (true, 4197, "A", &[8; 1448]),
        (true, 5645, "A", &[9; 1448]),
    ];
    measured(n, &LONG)
}

/// `n` connections, each sent `segments` (from the client?, seq, flags, payload).
fn measured(n: u32, segments: &[(bool, u32, &str, &[u8])]) -> (usize, usize) {
    let mut tracker: Tracker<()> = Tracker::with_limits(4 << 20, 1_000_000);
    tracker.set_max_memory(usize::MAX);
    let (mut diags, mut handler) = (Diagnostics::default(), Follow);
    let before = ALLOCATOR.allocated();
    let mut frame = 0;
    for i in 0..n {
        for &(from_client, seq, flags, payload) in segments {
            frame += 1;
            let at = PacketRef {
                frame,
                ..PacketRef::default()
            };
            let seg = segment(i, from_client, seq, flags, payload);
            tracker.segment(&seg, at, &mut handler, &mut diags);
        }
    }
    let taken = ALLOCATOR.allocated() - before;
    let charged = tracker.charged();
    drop(tracker);
    (taken / n as usize, charged / n as usize)
}

/// Lone one-byte last fragments, each of a datagram of its own, until the cap; returns
/// the heap taken.
fn fragments() -> usize {
    let mut defrag = Defragmenter::default();
    let mut diags = Diagnostics::default();
    let before = ALLOCATOR.allocated();
    let mut peak = 0;
    for i in 0..100_000u32 {
        let frag = IpFragmentView {
            src: IpAddr::from([10, 0, (i >> 16) as u8, 1]),
            dst: IpAddr::from([10, 0, 0, 2]),
            id: i & 0xffff,
            offset: 8,
            more: false,
            payload: b"x",
            missing_len: 0,
        };
        let at = PacketRef {
            frame: u64::from(i),
            ..PacketRef::default()
        };
        let _ = defrag.fragment(&frag, at, &mut diags);
        peak = peak.max(ALLOCATOR.allocated() - before);
    }
    peak
}

#[test]
fn what_is_charged_covers_what_is_held() {
    for (n, spotted) in [
        (1_000, false),
        (30_000, false),
        (100_000, false),
        (30_000, true),
    ] {
        let (taken, charged) = match spotted {
            false => connections(n),
            true => spotted_connections(n),
        };
        let what = ["", " with long segments kept by their spot"][usize::from(spotted)];
        println!("{n} connections{what}: {taken} bytes each taken, {charged} charged");
        assert!(charged >= taken, "{n}: {charged} charged < {taken} taken");
        assert!(
            charged <= taken * 3 / 2,
            "{n}: {charged} charged > 1.5 x {taken}"
        );
    }
    let held = fragments();
    println!("fragments: {held} bytes taken at most, under a cap of {MAX_HELD_LEN}");
    assert!(held <= MAX_HELD_LEN, "{held}");
}
