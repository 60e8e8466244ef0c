//! Which RSTs end a connection (RFC 5961 section 3): only one whose sequence number lies
//! within the receive window of its receiver, so that a spoofed or stale RST far from the
//! stream's position does not end a connection and lose every exchange after it.
//!
//! The capture sees the stream's next byte only as far as it captured it, and the
//! receiver may have taken less of it than was sent: the window is applied on both sides
//! of that position. Where a window is not known (no packet from the receiver yet, no
//! sequence position), every RST is believed: there is no window to hold it against.

use super::Dir;
use crate::decode::TcpSegmentView;

/// The largest shift RFC 7323 allows; taken when the handshake was not captured.
const MAX_WINDOW_SCALE: u8 = 14;

/// What the two directions said about their receive windows.
#[derive(Debug, Default, Clone, Copy)]
pub struct Windows {
    /// The SYN of each direction (`Dir::idx`) was seen, and its window scale option.
    syn: [Option<Option<u8>>; 2],
    /// The latest window field each direction advertised.
    advertised: [Option<u16>; 2],
}

impl Windows {
    /// Takes what a segment from `dir` says of its sender's receive window.
    pub fn observe(&mut self, dir: Dir, seg: &TcpSegmentView<'_>) {
        if seg.rst {
            return;
        }
        let idx = dir.idx();
        if seg.syn {
            if let Some(syn) = self.syn.get_mut(idx) {
                *syn = Some(seg.window_scale);
            }
        }
        if let Some(advertised) = self.advertised.get_mut(idx) {
            *advertised = Some(seg.window);
        }
    }

    /// Bytes the receiver of `dir`'s traffic accepts, if it advertised a window.
    fn receive_window(&self, dir: Dir) -> Option<u64> {
        let receiver = dir.reverse().idx();
        let advertised = *self.advertised.get(receiver)?;
        // Scaling is in effect only when both SYNs carried the option (RFC 7323 2.2).
        let shift = match self.syn {
            [Some(Some(a)), Some(Some(b))] => {
                if receiver == 0 {
                    a
                } else {
                    b
                }
            }
            [Some(_), Some(_)] => 0,
            _ => MAX_WINDOW_SCALE,
        };
        Some(u64::from(advertised?) << shift.min(MAX_WINDOW_SCALE))
    }

    /// Whether an RST from `dir` with sequence number `seq` lies in its receiver's window
    /// around `next`, the sequence number of the next byte of `dir`'s stream.
    pub fn rst_in_window(&self, dir: Dir, seq: u32, next: Option<u32>) -> bool {
        let (Some(next), Some(window)) = (next, self.receive_window(dir)) else {
            return true;
        };
        let ahead = i64::from(seq.wrapping_sub(next) as i32);
        let window = i64::try_from(window).unwrap_or(i64::MAX).max(1);
        (-window..=window).contains(&ahead)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(syn: bool, window: u16, window_scale: Option<u8>) -> TcpSegmentView<'static> {
        TcpSegmentView {
            src: "10.0.0.1:1".parse().unwrap(),
            dst: "10.0.0.2:2".parse().unwrap(),
            seq: 0,
            ack_number: 0,
            syn,
            ack: !syn,
            fin: false,
            rst: false,
            window,
            window_scale,
            payload: b"",
            missing_len: 0,
            spot: None,
        }
    }

    #[test]
    fn an_rst_is_believed_only_within_the_scaled_window() {
        let mut w = Windows::default();
        w.observe(Dir::FromInitiator, &seg(true, 64_240, Some(7)));
        w.observe(Dir::FromResponder, &seg(true, 65_160, Some(7)));
        w.observe(Dir::FromResponder, &seg(false, 512, None)); // 512 << 7 = 65,536
        let next = Some(1_000_000);
        let from_client = Dir::FromInitiator;
        assert!(w.rst_in_window(from_client, 1_000_000, next));
        assert!(w.rst_in_window(from_client, 1_000_000 + 65_536, next));
        assert!(!w.rst_in_window(from_client, 1_000_000 + 65_537, next));
        assert!(!w.rst_in_window(from_client, 7, next));
        assert!(
            w.rst_in_window(from_client, 7, None),
            "no position: believed"
        );
    }

    #[test]
    fn without_both_scale_options_the_window_is_not_scaled() {
        let mut w = Windows::default();
        w.observe(Dir::FromInitiator, &seg(true, 100, Some(7)));
        w.observe(Dir::FromResponder, &seg(true, 100, None));
        assert!(w.rst_in_window(Dir::FromInitiator, 150, Some(50)));
        assert!(!w.rst_in_window(Dir::FromInitiator, 151, Some(50)));
    }

    #[test]
    fn an_unknown_window_believes_every_rst() {
        let w = Windows::default();
        assert!(w.rst_in_window(Dir::FromResponder, 12_345, Some(1)));
    }
}
