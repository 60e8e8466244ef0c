//! Link layer, IP and TCP: from a packet record to a borrowed TCP segment view.
//!
//! Link types: ETHERNET (802.1Q/QinQ tags included, by etherparse), LINUX_SLL,
//! LINUX_SLL2, RAW/IPV4/IPV6, NULL and LOOP. IP is sliced laxly so that a packet cut by
//! snaplen still yields the payload bytes that were captured, plus the count of those
//! that were not. Everything that is not TCP over IP is passed over quietly; IP fragments
//! are not reassembled.

use std::net::{IpAddr, SocketAddr};

use etherparse::{
    EtherType, Ethernet2Slice, IpNumber, LaxIpPayloadSlice, LaxIpSlice, LaxNetSlice,
    LaxSlicedPacket, TcpSlice,
};
use pcap_parser::Linktype;

use crate::capture::Packet;

/// A TCP segment, borrowed from the packet record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpSegmentView<'a> {
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub seq: u32,
    /// Acknowledgment number; meaningful when `ack` is set.
    pub ack_number: u32,
    pub syn: bool,
    pub ack: bool,
    pub fin: bool,
    pub rst: bool,
    /// Payload bytes present in the capture.
    pub payload: &'a [u8],
    /// Payload bytes that were on the wire but not captured (snaplen).
    pub missing_len: u32,
}

/// What a packet turned out to be.
#[derive(Debug)]
pub enum Decoded<'a> {
    Tcp(TcpSegmentView<'a>),
    /// ARP, UDP, ICMP, IP fragments...: not ours.
    Other,
    UnsupportedLinkType,
    /// A TCP/IP packet whose headers do not parse; the reason as one phrase.
    Malformed(String),
}

const SLL_HEADER_LEN: usize = 16;
const SLL2_HEADER_LEN: usize = 20;
const NULL_HEADER_LEN: usize = 4;

/// BSD address families used by NULL/LOOP for IPv4 and the platforms' IPv6 values.
fn ether_type_for_family(family: u32) -> Option<EtherType> {
    match family {
        2 => Some(EtherType::IPV4),
        10 | 24 | 28 | 30 => Some(EtherType::IPV6),
        _ => None,
    }
}

fn be_u16(bytes: &[u8], at: usize) -> Option<u16> {
    let pair: [u8; 2] = bytes.get(at..at.checked_add(2)?)?.try_into().ok()?;
    Some(u16::from_be_bytes(pair))
}

/// Slices the packet down to the network layer according to its link type.
fn slice_link<'a>(link_type: Linktype, data: &'a [u8]) -> Result<LaxSlicedPacket<'a>, Decoded<'a>> {
    let short = |what: &str| Decoded::Malformed(format!("{what} header is cut short"));
    match link_type.0 {
        1 => LaxSlicedPacket::from_ethernet(data).map_err(|_| short("Ethernet")),
        113 => {
            let proto = be_u16(data, 14).ok_or_else(|| short("Linux cooked (SLL)"))?;
            let rest = data.get(SLL_HEADER_LEN..).unwrap_or_default();
            Ok(LaxSlicedPacket::from_ether_type(EtherType(proto), rest))
        }
        276 => {
            let proto = be_u16(data, 0).ok_or_else(|| short("Linux cooked v2 (SLL2)"))?;
            let rest = data
                .get(SLL2_HEADER_LEN..)
                .ok_or_else(|| short("Linux cooked v2 (SLL2)"))?;
            Ok(LaxSlicedPacket::from_ether_type(EtherType(proto), rest))
        }
        0 | 108 => {
            let raw: [u8; 4] = data
                .get(..NULL_HEADER_LEN)
                .and_then(|b| b.try_into().ok())
                .ok_or_else(|| short("loopback"))?;
            // LOOP is big-endian; NULL is in the capturing host's order, so try both.
            let family = if link_type.0 == 108 {
                u32::from_be_bytes(raw)
            } else {
                let le = u32::from_le_bytes(raw);
                if le > 0xffff {
                    u32::from_be_bytes(raw)
                } else {
                    le
                }
            };
            let rest = data.get(NULL_HEADER_LEN..).unwrap_or_default();
            match ether_type_for_family(family) {
                Some(ether_type) => Ok(LaxSlicedPacket::from_ether_type(ether_type, rest)),
                None => Err(Decoded::Other),
            }
        }
        12 | 14 | 101 | 228 | 229 => LaxSlicedPacket::from_ip(data)
            .map_err(|e| Decoded::Malformed(format!("IP header: {e}"))),
        _ => Err(Decoded::UnsupportedLinkType),
    }
}

/// Decodes a packet record down to TCP.
pub fn decode<'a>(packet: &Packet<'a>) -> Decoded<'a> {
    match decode_ethernet_ip(packet) {
        Some(decoded) => decoded,
        None => decode_sliced(packet),
    }
}

/// Any link type, through etherparse's whole lax slicing.
fn decode_sliced<'a>(packet: &Packet<'a>) -> Decoded<'a> {
    let sliced = match slice_link(packet.link_type, packet.data) {
        Ok(sliced) => sliced,
        Err(other) => return other,
    };
    let (src_ip, dst_ip, ip_payload): (IpAddr, IpAddr, _) = match &sliced.net {
        Some(LaxNetSlice::Ipv4(ip)) => (
            ip.header().source_addr().into(),
            ip.header().destination_addr().into(),
            ip.payload(),
        ),
        Some(LaxNetSlice::Ipv6(ip)) => (
            ip.header().source_addr().into(),
            ip.header().destination_addr().into(),
            ip.payload(),
        ),
        _ => {
            return match &sliced.stop_err {
                Some((err, _)) if is_ip_ether_type(&sliced) => {
                    Decoded::Malformed(format!("IP header: {err}"))
                }
                _ => Decoded::Other,
            }
        }
    };
    tcp_segment(packet, src_ip, dst_ip, ip_payload)
}

/// The common case, Ethernet II straight to IPv4 or IPv6, sliced with the same etherparse
/// calls as [`LaxSlicedPacket::from_ethernet`] makes but without building its whole
/// result (which also slices TCP, again). `None` (anything else, any error, any stop in
/// IP extension headers) leaves the packet to the general path, so results and messages
/// are the same either way.
fn decode_ethernet_ip<'a>(packet: &Packet<'a>) -> Option<Decoded<'a>> {
    if packet.link_type.0 != 1 {
        return None;
    }
    let ethernet = Ethernet2Slice::from_slice_without_fcs(packet.data).ok()?;
    if !matches!(ethernet.ether_type(), EtherType::IPV4 | EtherType::IPV6) {
        return None;
    }
    let (ip, stop) = LaxIpSlice::from_slice(ethernet.payload_slice()).ok()?;
    if stop.is_some() {
        return None;
    }
    let (src_ip, dst_ip): (IpAddr, IpAddr) = match &ip {
        LaxIpSlice::Ipv4(v4) => (
            v4.header().source_addr().into(),
            v4.header().destination_addr().into(),
        ),
        LaxIpSlice::Ipv6(v6) => (
            v6.header().source_addr().into(),
            v6.header().destination_addr().into(),
        ),
    };
    Some(tcp_segment(packet, src_ip, dst_ip, ip.payload()))
}

/// The TCP segment in an IP payload, if it is one.
fn tcp_segment<'a>(
    packet: &Packet<'a>,
    src_ip: IpAddr,
    dst_ip: IpAddr,
    ip_payload: &LaxIpPayloadSlice<'a>,
) -> Decoded<'a> {
    if ip_payload.ip_number != IpNumber::TCP || ip_payload.fragmented {
        return Decoded::Other;
    }
    let tcp = match TcpSlice::from_slice(ip_payload.payload) {
        Ok(tcp) => tcp,
        Err(err) => return Decoded::Malformed(format!("TCP header: {err}")),
    };
    let missing_len = if ip_payload.incomplete {
        packet.orig_len.saturating_sub(packet.data.len() as u32)
    } else {
        0
    };
    Decoded::Tcp(TcpSegmentView {
        src: SocketAddr::new(src_ip, tcp.source_port()),
        dst: SocketAddr::new(dst_ip, tcp.destination_port()),
        seq: tcp.sequence_number(),
        ack_number: tcp.acknowledgment_number(),
        syn: tcp.syn(),
        ack: tcp.ack(),
        fin: tcp.fin(),
        rst: tcp.rst(),
        payload: tcp.payload(),
        missing_len,
    })
}

fn is_ip_ether_type(sliced: &LaxSlicedPacket<'_>) -> bool {
    use etherparse::{LaxLinkExtSlice, LinkSlice};
    let ether_type = match (sliced.link_exts.last(), &sliced.link) {
        (Some(LaxLinkExtSlice::Vlan(vlan)), _) => Some(vlan.ether_type()),
        (_, Some(LinkSlice::Ethernet2(eth))) => Some(eth.ether_type()),
        _ => None,
    };
    matches!(ether_type, Some(EtherType::IPV4 | EtherType::IPV6))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::PacketRef;
    use etherparse::PacketBuilder;

    proptest::proptest! {
        /// The Ethernet fast path decides every frame exactly as the general path does:
        /// valid TCP over IPv4 and IPv6, then the same frames with bytes changed or cut.
        #[test]
        fn fast_path_agrees_with_the_general_one(
            v6 in proptest::bool::ANY,
            payload in proptest::collection::vec(proptest::num::u8::ANY, 0..64),
            edits in proptest::collection::vec((0usize..120, proptest::num::u8::ANY), 0..4),
            cut in 0usize..140,
            orig_extra in 0u32..100,
        ) {
            let builder = if v6 {
                PacketBuilder::ethernet2([1; 6], [2; 6]).ipv6([1; 16], [2; 16], 64)
            } else {
                PacketBuilder::ethernet2([1; 6], [2; 6]).ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            };
            let mut frame = Vec::new();
            builder.tcp(40000, 9093, 7, 64000).ack(9).write(&mut frame, &payload).unwrap();
            for (at, byte) in edits {
                if let Some(b) = frame.get_mut(at) {
                    *b = byte;
                }
            }
            let wire = frame.len() as u32 + orig_extra;
            frame.truncate(frame.len().saturating_sub(cut % (frame.len() + 1)));
            let packet = packet(1, &frame, wire);
            proptest::prop_assert_eq!(
                format!("{:?}", decode(&packet)),
                format!("{:?}", decode_sliced(&packet))
            );
        }
    }

    fn tcp_packet_ipv4(payload: &[u8]) -> Vec<u8> {
        let builder = PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .tcp(40000, 9093, 1000, 64000)
            .psh()
            .ack(5);
        let mut out = Vec::new();
        builder.write(&mut out, payload).unwrap();
        out
    }

    fn packet(link_type: i32, data: &[u8], orig_len: u32) -> Packet<'_> {
        Packet {
            at: PacketRef::default(),
            link_type: Linktype(link_type),
            orig_len,
            data,
        }
    }

    fn expect_tcp<'a>(decoded: Decoded<'a>) -> TcpSegmentView<'a> {
        match decoded {
            Decoded::Tcp(seg) => seg,
            other => panic!("expected TCP, got {other:?}"),
        }
    }

    #[test]
    fn decodes_raw_ipv4_tcp() {
        let data = tcp_packet_ipv4(b"hello");
        let seg = expect_tcp(decode(&packet(101, &data, data.len() as u32)));
        assert_eq!(seg.src.to_string(), "10.0.0.1:40000");
        assert_eq!(seg.dst.to_string(), "10.0.0.2:9093");
        assert_eq!(seg.seq, 1000);
        assert_eq!(seg.payload, b"hello");
        assert_eq!(seg.missing_len, 0);
    }

    #[test]
    fn decodes_linux_sll_sll2_null_and_loop() {
        let ip = tcp_packet_ipv4(b"x");
        let mut sll = vec![0u8; 14];
        sll.extend([0x08, 0x00]);
        sll.extend(&ip);
        let mut sll2 = vec![0x08, 0x00];
        sll2.extend([0u8; 18]);
        sll2.extend(&ip);
        let mut null = 2u32.to_le_bytes().to_vec();
        null.extend(&ip);
        let mut null_be = 2u32.to_be_bytes().to_vec();
        null_be.extend(&ip);
        let mut lo = 2u32.to_be_bytes().to_vec();
        lo.extend(&ip);
        for (lt, data) in [(113, sll), (276, sll2), (0, null), (0, null_be), (108, lo)] {
            let seg = expect_tcp(decode(&packet(lt, &data, data.len() as u32)));
            assert_eq!(seg.payload, b"x", "link type {lt}");
        }
    }

    #[test]
    fn decodes_vlan_tagged_ethernet() {
        let builder = PacketBuilder::ethernet2([1; 6], [2; 6])
            .single_vlan(42.try_into().unwrap())
            .ipv6([1; 16], [2; 16], 64)
            .tcp(40000, 9093, 7, 64000);
        let mut data = Vec::new();
        builder.write(&mut data, b"kafka").unwrap();
        let seg = expect_tcp(decode(&packet(1, &data, data.len() as u32)));
        assert_eq!(seg.payload, b"kafka");
        assert!(seg.src.is_ipv6());
    }

    #[test]
    fn decodes_qinq_double_tagged_ethernet() {
        let builder = PacketBuilder::ethernet2([1; 6], [2; 6])
            .double_vlan(100.try_into().unwrap(), 200.try_into().unwrap())
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .tcp(40000, 9093, 7, 64000);
        let mut data = Vec::new();
        builder.write(&mut data, b"qinq").unwrap();
        let seg = expect_tcp(decode(&packet(1, &data, data.len() as u32)));
        assert_eq!(seg.payload, b"qinq");
        assert_eq!(seg.dst.to_string(), "10.0.0.2:9093");
    }

    #[test]
    fn decodes_ipv4_and_ipv6_link_types() {
        let v4 = tcp_packet_ipv4(b"four");
        assert_eq!(
            expect_tcp(decode(&packet(228, &v4, v4.len() as u32))).payload,
            b"four"
        );
        let builder = PacketBuilder::ipv6([1; 16], [2; 16], 64).tcp(1, 2, 3, 4);
        let mut v6 = Vec::new();
        builder.write(&mut v6, b"six").unwrap();
        assert_eq!(
            expect_tcp(decode(&packet(229, &v6, v6.len() as u32))).payload,
            b"six"
        );
    }

    #[test]
    fn snaplen_cut_payload_counts_missing_bytes() {
        let data = tcp_packet_ipv4(&[7u8; 100]);
        let cut = &data[..data.len() - 60];
        let seg = expect_tcp(decode(&packet(101, cut, data.len() as u32)));
        assert_eq!(seg.payload.len(), 40);
        assert_eq!(seg.missing_len, 60);
    }

    #[test]
    fn unsupported_link_type_and_garbage() {
        assert!(matches!(
            decode(&packet(147, &[1, 2, 3], 3)),
            Decoded::UnsupportedLinkType
        ));
        assert!(matches!(
            decode(&packet(1, &[1, 2, 3], 3)),
            Decoded::Malformed(_)
        ));
        let data = tcp_packet_ipv4(b"abc");
        let cut = &data[..30]; // inside the TCP header
        assert!(matches!(
            decode(&packet(101, cut, data.len() as u32)),
            Decoded::Malformed(_)
        ));
    }
}
