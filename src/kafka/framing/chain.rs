//! Chains of unanchored heads (see [`FrameHandler::anchors`]), each walked once per pass
//! of the search.
//!
//! A candidate that does not anchor is believed only if the heads that follow it, each
//! where the one before ends, are plausible up to one that anchors. Every position of the
//! window is a candidate, and the candidates of one real stream share their chains: the
//! heads of N unanswered responses make N chains of which each is the next one's tail.
//! Walked from scratch that is N × chain-length head reads (up to 64 links a byte); here
//! the end of the chain from each head met is remembered, so a head is read once a pass.
//! What a chain ends in depends only on the bytes and on the handler, which no judgement
//! changes; the limits (links and distance) depend on where the candidate starts, so they
//! are applied to the remembered end, not stored in it.

use std::collections::HashMap;

use super::search::{head_at, Window};
use super::{FrameHandler, SIZE_LEN};

/// How a chain of heads ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    /// A head that anchors.
    Anchor,
    /// A head that is not plausible.
    Implausible,
    /// A head not all in the window yet.
    Incomplete,
}

/// Where the chain from a head ends: the last head's position, the heads read to get
/// there (itself included), and what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ChainEnd {
    pub(super) at: usize,
    pub(super) links: usize,
    pub(super) outcome: Outcome,
}

/// The chain ends found in one pass over an unchanging window.
#[derive(Debug, Default)]
pub(super) struct Chains {
    ends: HashMap<usize, ChainEnd>,
    /// Heads of the walk under way, reused between walks.
    path: Vec<usize>,
}

impl Chains {
    /// Where the chain of heads from `from` ends.
    pub(super) fn end_from(
        &mut self,
        w: &Window,
        from: usize,
        prefix_len: usize,
        handler: &mut impl FrameHandler,
    ) -> ChainEnd {
        self.path.clear();
        let mut pos = from;
        let end = loop {
            if let Some(known) = self.ends.get(&pos) {
                break *known;
            }
            let terminal = |outcome| ChainEnd {
                at: pos,
                links: 1,
                outcome,
            };
            let Some((size, prefix)) = head_at(&w.bytes, pos, prefix_len) else {
                break terminal(Outcome::Incomplete);
            };
            let prefix = w.bytes.get(prefix).unwrap_or_default();
            let at = w.packet_at(pos);
            if size <= 0 || !handler.plausible(size, prefix, at) {
                break terminal(Outcome::Implausible);
            }
            if handler.anchors(size, prefix, at) {
                break terminal(Outcome::Anchor);
            }
            self.path.push(pos);
            // positive, so each link moves forward and the walk ends
            pos = pos.saturating_add(SIZE_LEN + size as usize);
        };
        self.ends.entry(pos).or_insert(end);
        let mut end = end;
        for &head in self.path.iter().rev() {
            end.links = end.links.saturating_add(1);
            self.ends.insert(head, end);
        }
        end
    }
}
