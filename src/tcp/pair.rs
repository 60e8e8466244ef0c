//! The key both directions of a connection share: its address pair, in a fixed order.

use std::net::SocketAddr;

/// Key of an address pair, the same for both directions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PairKey(SocketAddr, SocketAddr);

/// Hashed once per packet: an IPv4 pair as two words rather than field by field.
impl std::hash::Hash for PairKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        match self.v4() {
            Some([a, b, ports]) => {
                state.write_u64(u64::from(a) << 32 | u64::from(b));
                state.write_u32(ports);
            }
            None => {
                self.0.hash(state);
                self.1.hash(state);
            }
        }
    }
}

impl PairKey {
    pub(super) fn new(a: SocketAddr, b: SocketAddr) -> Self {
        if a <= b {
            Self(a, b)
        } else {
            Self(b, a)
        }
    }

    /// An IPv4 address pair in twelve bytes (addresses, then ports).
    pub(super) fn v4(&self) -> Option<[u32; 3]> {
        match (self.0, self.1) {
            (SocketAddr::V4(a), SocketAddr::V4(b)) => Some([
                u32::from(*a.ip()),
                u32::from(*b.ip()),
                u32::from(a.port()) << 16 | u32::from(b.port()),
            ]),
            _ => None,
        }
    }
}
