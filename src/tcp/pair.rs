//! The key both directions of a connection share: its address pair, in a fixed order.

use std::net::{IpAddr, SocketAddr, SocketAddrV4};

/// Key of an address pair, the same for both directions: 38 bytes, where two
/// `SocketAddr`s take 64. Every open connection has one in the table and one or two on
/// its clock, all charged to the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PairKey {
    /// The two addresses' bytes, in `SocketAddr`'s order; an IPv4 one in its first four.
    ips: [[u8; 16]; 2],
    ports: [u16; 2],
    /// Which of the two are IPv6: bit 0 the first, bit 1 the second.
    v6: u8,
}

/// Hashed once per packet: an IPv4 pair as one 128-bit word rather than field by field.
impl std::hash::Hash for PairKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        match self.v4() {
            // One u128, which foldhash folds in at once; a u64 and a u32 went through
            // its buffer, shifted in piece by piece.
            Some([a, b, ports]) => {
                state.write_u128(u128::from(a) << 64 | u128::from(b) << 32 | u128::from(ports));
            }
            None => {
                let [a, b] = &self.ips;
                state.write(a);
                state.write(b);
                state.write_u32(self.ports_word());
                state.write_u8(self.v6);
            }
        }
    }
}

impl PairKey {
    pub(super) fn new(a: SocketAddr, b: SocketAddr) -> Self {
        if let (SocketAddr::V4(a), SocketAddr::V4(b)) = (a, b) {
            return Self::of_v4(a, b);
        }
        let (a, b) = if a <= b { (a, b) } else { (b, a) };
        let (ip_a, v6_a) = ip_bytes(a.ip());
        let (ip_b, v6_b) = ip_bytes(b.ip());
        Self {
            ips: [ip_a, ip_b],
            ports: [a.port(), b.port()],
            v6: u8::from(v6_a) | u8::from(v6_b) << 1,
        }
    }

    /// An IPv4 pair, built once a packet: ordered as whole words, not as `SocketAddr`s
    /// (the same order: address, then port).
    fn of_v4(a: SocketAddrV4, b: SocketAddrV4) -> Self {
        let word = |s: SocketAddrV4| (u32::from(*s.ip()), s.port());
        let (a, b) = (word(a), word(b));
        let ((ip_a, port_a), (ip_b, port_b)) = if a <= b { (a, b) } else { (b, a) };
        let padded = |ip: u32| {
            let [a, b, c, d] = ip.to_be_bytes();
            [a, b, c, d, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        };
        Self {
            ips: [padded(ip_a), padded(ip_b)],
            ports: [port_a, port_b],
            v6: 0,
        }
    }

    /// An IPv4 address pair in twelve bytes (addresses, then ports).
    pub(super) fn v4(&self) -> Option<[u32; 3]> {
        if self.v6 != 0 {
            return None;
        }
        let [[a0, a1, a2, a3, ..], [b0, b1, b2, b3, ..]] = self.ips;
        Some([
            u32::from_be_bytes([a0, a1, a2, a3]),
            u32::from_be_bytes([b0, b1, b2, b3]),
            self.ports_word(),
        ])
    }

    fn ports_word(&self) -> u32 {
        let [a, b] = self.ports;
        u32::from(a) << 16 | u32::from(b)
    }
}

/// An address's bytes, an IPv4 one's in the first four, and whether it is IPv6.
fn ip_bytes(ip: IpAddr) -> ([u8; 16], bool) {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, d] = v4.octets();
            ([a, b, c, d, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], false)
        }
        IpAddr::V6(v6) => (v6.octets(), true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both directions share a key; any other pair, an IPv4 address beside the IPv6 one
    /// it maps to, or the same addresses with other ports, has another.
    #[test]
    fn keys_tell_pairs_apart_and_not_directions() {
        let v4: SocketAddr = "10.0.0.1:9093".parse().unwrap();
        let mapped: SocketAddr = "[::ffff:10.0.0.1]:9093".parse().unwrap();
        let client: SocketAddr = "10.0.0.2:40000".parse().unwrap();
        let client6: SocketAddr = "[fe80::2]:40000".parse().unwrap();
        let other_port: SocketAddr = "10.0.0.2:40001".parse().unwrap();
        assert_eq!(PairKey::new(v4, client), PairKey::new(client, v4));
        assert_eq!(PairKey::new(mapped, client6), PairKey::new(client6, mapped));
        let keys = [
            PairKey::new(v4, client),
            PairKey::new(mapped, client),
            PairKey::new(mapped, client6),
            PairKey::new(v4, other_port),
        ];
        for (i, a) in keys.iter().enumerate() {
            for b in keys.get(i + 1..).unwrap_or_default() {
                assert_ne!(a, b);
            }
        }
        assert_eq!(
            PairKey::new(v4, client).v4(),
            Some([0x0a00_0001, 0x0a00_0002, 9093 << 16 | 40000])
        );
        assert_eq!(PairKey::new(mapped, client6).v4(), None);
        assert_eq!(size_of::<PairKey>(), 38);
    }

    /// The IPv4 shortcut orders a pair as `SocketAddr` does, whichever end is lower
    /// and however the addresses and ports compare.
    #[test]
    fn an_ipv4_pair_is_keyed_as_its_socket_addresses_order_it() {
        let ends = [
            "10.0.0.1:9093",
            "10.0.0.1:80",
            "10.0.0.2:80",
            "9.255.255.255:65535",
        ]
        .map(|s| s.parse::<SocketAddr>().unwrap());
        for a in ends {
            for b in ends {
                let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
                let (ip_lo, _) = ip_bytes(lo.ip());
                let (ip_hi, _) = ip_bytes(hi.ip());
                let general = PairKey {
                    ips: [ip_lo, ip_hi],
                    ports: [lo.port(), hi.port()],
                    v6: 0,
                };
                assert_eq!(PairKey::new(a, b), general, "{a} {b}");
            }
        }
    }
}
