//! Link layer, IP and TCP: from a packet record to a borrowed TCP segment view.
//!
//! Link types: ETHERNET (any number of 802.1Q/802.1ad/QinQ tags, walked here: etherparse
//! stops after three), LINUX_SLL, LINUX_SLL2, RAW/IPV4/IPV6, NULL and LOOP. IP is sliced
//! laxly so that a packet cut by snaplen still yields the payload bytes that were
//! captured, plus the count of those that were not; a TCP header whose options were cut
//! still places its segment (the fixed 20 bytes give ports, sequence number and flags; the
//! IP length gives the payload bytes missing). Everything that is not TCP over IP is
//! passed over quietly. A fragment of a TCP datagram is handed on as an
//! [`IpFragmentView`] for the next stage to reassemble: decoding keeps no state.

use std::net::{IpAddr, SocketAddr};

use etherparse::{
    EtherType, Ethernet2Slice, IpNumber, Ipv6ExtensionSlice, LaxIpSlice, LaxIpv4Slice,
    LaxIpv6Slice, LaxNetSlice, LaxSlicedPacket, TcpSlice,
};
use pcap_parser::Linktype;

use crate::capture::Packet;
use crate::packet_ref::{FileSpot, SPOT_FROM};

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
    /// The window field (scaled by the sender's window scale after its SYN).
    pub window: u16,
    /// The window scale option (RFC 7323), on a SYN that carries it.
    pub window_scale: Option<u8>,
    /// Payload bytes present in the capture.
    pub payload: &'a [u8],
    /// Payload bytes that were on the wire but not captured (snaplen).
    pub missing_len: u32,
    /// Where the payload lies in its capture file, when it can be read again there and
    /// is [`SPOT_FROM`] bytes or more (not for a datagram put back together from
    /// fragments).
    pub spot: Option<FileSpot>,
}

/// One fragment of an IP datagram carrying TCP, borrowed from the packet record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpFragmentView<'a> {
    pub src: IpAddr,
    pub dst: IpAddr,
    /// IPv4 Identification (16 bits) or IPv6 Fragment header Identification (32 bits).
    pub id: u32,
    /// Offset of `payload` in the datagram's payload, in bytes.
    pub offset: u32,
    /// More Fragments flag: this is not the last fragment.
    pub more: bool,
    /// Fragment bytes present in the capture.
    pub payload: &'a [u8],
    /// Fragment bytes the IP header claims but the capture cut (snaplen).
    pub missing_len: u32,
}

/// What a packet turned out to be.
#[derive(Debug)]
pub enum Decoded<'a> {
    Tcp(TcpSegmentView<'a>),
    /// A fragment of an IP datagram carrying TCP, to be reassembled.
    Fragment(IpFragmentView<'a>),
    /// An IPv6 fragment that cannot be reassembled (extension headers follow its Fragment
    /// header); the reason as one phrase.
    FragmentNotReassembled(String),
    /// ARP, UDP, ICMP...: not ours.
    Other,
    UnsupportedLinkType,
    /// A TCP/IP packet whose headers do not parse; the reason as one phrase.
    Malformed(String),
}

const SLL_HEADER_LEN: usize = 16;
const SLL2_HEADER_LEN: usize = 20;
const NULL_HEADER_LEN: usize = 4;
/// Ethernet II: destination and source MAC, EtherType.
const ETHERNET_HEADER_LEN: usize = 14;
/// One 802.1Q/802.1ad tag: TCI, then the next EtherType.
const VLAN_TAG_LEN: usize = 4;
/// TCP's fixed header (RFC 9293 section 3.1), options excluded.
const TCP_FIXED_HEADER_LEN: usize = 20;

/// EtherTypes of a VLAN tag: 802.1Q, 802.1ad, and the pre-standard QinQ 0x9100.
fn is_vlan_tag(ether_type: EtherType) -> bool {
    matches!(
        ether_type,
        EtherType::VLAN_TAGGED_FRAME
            | EtherType::PROVIDER_BRIDGING
            | EtherType::VLAN_DOUBLE_TAGGED_FRAME
    )
}

/// The EtherType after every VLAN tag of an Ethernet II frame, and the bytes after it;
/// `None` when the header or a tag is cut short. Each tag consumes four bytes, so the
/// walk ends with the data.
fn walk_vlan_tags(data: &[u8]) -> Option<(EtherType, &[u8])> {
    let mut ether_type = EtherType(be_u16(data, ETHERNET_HEADER_LEN - 2)?);
    let mut rest = data.get(ETHERNET_HEADER_LEN..)?;
    while is_vlan_tag(ether_type) {
        ether_type = EtherType(be_u16(rest, 2)?);
        rest = rest.get(VLAN_TAG_LEN..)?;
    }
    Some((ether_type, rest))
}
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

fn be_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let quad: [u8; 4] = bytes.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(u32::from_be_bytes(quad))
}

/// Slices the packet down to the network layer according to its link type.
fn slice_link<'a>(link_type: Linktype, data: &'a [u8]) -> Result<LaxSlicedPacket<'a>, Decoded<'a>> {
    let short = |what: &str| Decoded::Malformed(format!("{what} header is cut short"));
    match link_type.0 {
        1 => {
            let vlan =
                be_u16(data, ETHERNET_HEADER_LEN - 2).is_some_and(|t| is_vlan_tag(EtherType(t)));
            if vlan {
                let (ether_type, rest) = walk_vlan_tags(data).ok_or_else(|| short("VLAN tag"))?;
                Ok(LaxSlicedPacket::from_ether_type(ether_type, rest))
            } else {
                LaxSlicedPacket::from_ethernet(data).map_err(|_| short("Ethernet"))
            }
        }
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
    let mut decoded = match decode_ethernet_ip(packet) {
        Some(decoded) => decoded,
        None => decode_sliced(packet),
    };
    if let Decoded::Tcp(segment) = &mut decoded {
        if segment.payload.len() >= SPOT_FROM {
            segment.spot = packet.spot_of(segment.payload);
        }
    }
    decoded
}

/// What a packet that is not TCP carries, in a word or two (`ARP`, `UDP`, `ICMP`,
/// `IPv4 protocol 89`, `EtherType 0x88cc`), to say what a frame held.
pub fn what_else(packet: &Packet<'_>) -> String {
    let Ok(sliced) = slice_link(packet.link_type, packet.data) else {
        return "no IP packet".into();
    };
    let protocol = |number: IpNumber, ip: &str| match number.keyword_str() {
        Some(name) => name.to_owned(),
        None => format!("{ip} protocol {}", number.0),
    };
    match &sliced.net {
        Some(LaxNetSlice::Ipv4(ip)) => protocol(ip.payload().ip_number, "IPv4"),
        Some(LaxNetSlice::Ipv6(ip)) => protocol(ip.payload().ip_number, "IPv6"),
        Some(LaxNetSlice::Arp(_)) => "ARP".into(),
        None => match &sliced.link {
            Some(etherparse::LinkSlice::Ethernet2(eth)) => {
                format!("EtherType {:#06x}", eth.ether_type().0)
            }
            _ => "no IP packet".into(),
        },
    }
}

/// Any link type, through etherparse's whole lax slicing.
fn decode_sliced<'a>(packet: &Packet<'a>) -> Decoded<'a> {
    let sliced = match slice_link(packet.link_type, packet.data) {
        Ok(sliced) => sliced,
        Err(other) => return other,
    };
    let ip = match &sliced.net {
        Some(LaxNetSlice::Ipv4(ip)) => IpPacket::v4(ip),
        Some(LaxNetSlice::Ipv6(ip)) => IpPacket::v6(ip),
        _ => {
            return match &sliced.stop_err {
                Some((err, _)) if is_ip_ether_type(&sliced) => {
                    Decoded::Malformed(format!("IP header: {err}"))
                }
                _ => Decoded::Other,
            }
        }
    };
    tcp_segment(packet, &ip)
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
    let ip = match &ip {
        LaxIpSlice::Ipv4(v4) => IpPacket::v4(v4),
        LaxIpSlice::Ipv6(v6) => IpPacket::v6(v6),
    };
    Some(tcp_segment(packet, &ip))
}

/// How an IP packet is fragmented.
#[derive(Debug, Clone, Copy)]
enum Fragmentation {
    /// A whole datagram.
    None,
    /// A fragment: identification, byte offset, More Fragments.
    Fragment { id: u32, offset: u32, more: bool },
    /// An IPv6 fragment whose Fragment header is followed by other extension headers.
    Unusable,
}

/// What TCP needs of an IPv4 or IPv6 packet.
struct IpPacket<'a> {
    src: IpAddr,
    dst: IpAddr,
    protocol: IpNumber,
    /// IP payload bytes present in the capture.
    payload: &'a [u8],
    /// The payload was cut by the end of the captured bytes.
    incomplete: bool,
    /// Payload length the IP header claims (IPv4 total length minus header, IPv6 payload
    /// length minus extension headers); `None` when it says nothing usable.
    claimed_len: Option<u32>,
    fragmentation: Fragmentation,
}

impl<'a> IpPacket<'a> {
    fn v4(ip: &LaxIpv4Slice<'a>) -> Self {
        let header = ip.header();
        let payload = ip.payload();
        let auth_len = ip
            .extensions()
            .auth
            .map_or(0, |auth| auth.slice().len() as u32);
        let header_len = u32::from(header.ihl()) * 4 + auth_len;
        let fragmentation = if header.is_fragmenting_payload() {
            Fragmentation::Fragment {
                id: u32::from(header.identification()),
                offset: u32::from(header.fragments_offset().byte_offset()),
                more: header.more_fragments(),
            }
        } else {
            Fragmentation::None
        };
        Self {
            src: header.source_addr().into(),
            dst: header.destination_addr().into(),
            protocol: payload.ip_number,
            payload: payload.payload,
            incomplete: payload.incomplete,
            claimed_len: u32::from(header.total_len()).checked_sub(header_len),
            fragmentation,
        }
    }

    fn v6(ip: &LaxIpv6Slice<'a>) -> Self {
        let header = ip.header();
        let payload = ip.payload();
        let exts = ip.extensions();
        let fragmentation = if payload.fragmented {
            let mut last = None;
            for ext in exts.clone() {
                last = Some(ext);
            }
            match last {
                Some(Ipv6ExtensionSlice::Fragment(frag)) => Fragmentation::Fragment {
                    id: frag.identification(),
                    offset: u32::from(frag.fragment_offset().byte_offset()),
                    more: frag.more_fragments(),
                },
                _ => Fragmentation::Unusable,
            }
        } else {
            Fragmentation::None
        };
        let claimed_len = match header.payload_length() {
            0 => None, // a jumbogram, or a length the capture does not tell
            len => u32::from(len).checked_sub(exts.slice().len() as u32),
        };
        Self {
            src: header.source_addr().into(),
            dst: header.destination_addr().into(),
            protocol: payload.ip_number,
            payload: payload.payload,
            incomplete: payload.incomplete,
            claimed_len,
            fragmentation,
        }
    }

    /// Payload bytes claimed by the IP header but not captured.
    fn missing_len(&self, packet: &Packet<'_>) -> u32 {
        if !self.incomplete {
            return 0;
        }
        match self.claimed_len {
            Some(claimed) => claimed.saturating_sub(self.payload.len() as u32),
            None => packet.orig_len.saturating_sub(packet.data.len() as u32),
        }
    }
}

/// The TCP segment, or fragment of one, in an IP packet.
fn tcp_segment<'a>(packet: &Packet<'a>, ip: &IpPacket<'a>) -> Decoded<'a> {
    if ip.protocol != IpNumber::TCP {
        return Decoded::Other;
    }
    match ip.fragmentation {
        Fragmentation::None => {}
        Fragmentation::Fragment { id, offset, more } => {
            return Decoded::Fragment(IpFragmentView {
                src: ip.src,
                dst: ip.dst,
                id,
                offset,
                more,
                payload: ip.payload,
                missing_len: ip.missing_len(packet),
            })
        }
        Fragmentation::Unusable => {
            return Decoded::FragmentNotReassembled(
                "IPv6 fragment with extension headers after its Fragment header".to_owned(),
            )
        }
    }
    // cut by the capture's snaplen, not an IP length that claims more than was sent
    let cut = ip.incomplete && packet.orig_len as usize > packet.data.len();
    tcp_in_ip_payload(ip.src, ip.dst, ip.payload, ip.missing_len(packet), cut)
}

/// The TCP segment in `payload`, the IP payload of `src` to `dst` with `missing_len` more
/// bytes cut from its end. A header whose options were cut (`cut` and the fixed 20 bytes
/// present) still gives the segment's place, with no payload: every payload byte the IP
/// length claims beyond the header is missing.
pub fn tcp_in_ip_payload(
    src: IpAddr,
    dst: IpAddr,
    payload: &[u8],
    missing_len: u32,
    cut: bool,
) -> Decoded<'_> {
    let tcp = match TcpSlice::from_slice(payload) {
        Ok(tcp) => tcp,
        Err(err) => {
            return match options_cut(src, dst, payload, missing_len, cut) {
                Some(seg) => Decoded::Tcp(seg),
                None => Decoded::Malformed(format!("TCP header: {err}")),
            }
        }
    };
    Decoded::Tcp(TcpSegmentView {
        src: SocketAddr::new(src, tcp.source_port()),
        dst: SocketAddr::new(dst, tcp.destination_port()),
        seq: tcp.sequence_number(),
        ack_number: tcp.acknowledgment_number(),
        syn: tcp.syn(),
        ack: tcp.ack(),
        fin: tcp.fin(),
        rst: tcp.rst(),
        window: tcp.window_size(),
        window_scale: window_scale(&tcp),
        payload: tcp.payload(),
        missing_len: if cut { missing_len } else { 0 },
        spot: None,
    })
}

/// A TCP header cut inside its options: the segment from the fixed header (RFC 9293
/// section 3.1), with zero payload bytes and `missing_len` reduced by the option bytes
/// that were not captured. `None` unless the cut explains the short header.
fn options_cut<'a>(
    src: IpAddr,
    dst: IpAddr,
    payload: &'a [u8],
    missing_len: u32,
    cut: bool,
) -> Option<TcpSegmentView<'a>> {
    let fixed = payload.get(..TCP_FIXED_HEADER_LEN)?;
    let data_offset = usize::from(fixed.get(12)? >> 4) * 4;
    if !cut || data_offset < TCP_FIXED_HEADER_LEN || data_offset <= payload.len() {
        return None;
    }
    // the header bytes not captured are part of the missing count, not stream bytes
    let header_missing = u32::try_from(data_offset - payload.len()).ok()?;
    let missing_len = missing_len.checked_sub(header_missing)?;
    let flags = *fixed.get(13)?;
    Some(TcpSegmentView {
        src: SocketAddr::new(src, be_u16(fixed, 0)?),
        dst: SocketAddr::new(dst, be_u16(fixed, 2)?),
        seq: be_u32(fixed, 4)?,
        ack_number: be_u32(fixed, 8)?,
        fin: flags & 0x01 != 0,
        syn: flags & 0x02 != 0,
        rst: flags & 0x04 != 0,
        ack: flags & 0x10 != 0,
        window: be_u16(fixed, 14)?,
        window_scale: None, // in the options that were cut
        payload: &[],
        missing_len,
        spot: None,
    })
}

/// The window scale option of a SYN, if it carries one.
fn window_scale(tcp: &TcpSlice<'_>) -> Option<u8> {
    if !tcp.syn() {
        return None;
    }
    tcp.options_iterator().find_map(|option| match option {
        Ok(etherparse::TcpOptionElement::WindowScale(shift)) => Some(shift),
        _ => None,
    })
}

fn is_ip_ether_type(sliced: &LaxSlicedPacket<'_>) -> bool {
    use etherparse::{LaxLinkExtSlice, LinkSlice};
    let ether_type = match (sliced.link_exts.last(), &sliced.link) {
        (Some(LaxLinkExtSlice::Vlan(vlan)), _) => Some(vlan.ether_type()),
        (_, Some(LinkSlice::Ethernet2(eth))) => Some(eth.ether_type()),
        (_, Some(LinkSlice::EtherPayload(payload))) => Some(payload.ether_type),
        _ => None,
    };
    matches!(ether_type, Some(EtherType::IPV4 | EtherType::IPV6))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet_ref::PacketRef;
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
            spot: None,
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
    #[test]
    fn walks_any_number_of_vlan_tags() {
        let builder = PacketBuilder::ethernet2([1; 6], [2; 6])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .tcp(40000, 9093, 7, 64000);
        let mut plain = Vec::new();
        builder.write(&mut plain, b"deep").unwrap();
        for tags in [1, 3, 4, 7] {
            let mut data = plain[..12].to_vec();
            for _ in 0..tags {
                data.extend([0x81, 0x00, 0x00, 0x2a]); // 802.1Q, VLAN 42
            }
            data.extend(&plain[12..]);
            let seg = expect_tcp(decode(&packet(1, &data, data.len() as u32)));
            assert_eq!(seg.payload, b"deep", "{tags} tags");
        }
        // a tag cut short is a malformed packet, not a silent drop
        let cut = [&plain[..12], &[0x81, 0x00, 0x00]].concat();
        assert!(matches!(
            decode(&packet(1, &cut, 100)),
            Decoded::Malformed(_)
        ));
    }

    #[test]
    fn tcp_options_cut_by_snaplen_give_the_segment_without_payload() {
        let builder = PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .tcp(40000, 9093, 1000, 64000)
            .ack(5)
            .options_raw(&[1; 12])
            .unwrap();
        let mut data = Vec::new();
        builder.write(&mut data, &[9u8; 50]).unwrap();
        // IPv4 header (20), fixed TCP header (20), 4 of the 12 option bytes
        let cut = &data[..44];
        let seg = expect_tcp(decode(&packet(101, cut, data.len() as u32)));
        assert_eq!((seg.seq, seg.ack, seg.ack_number), (1000, true, 5));
        assert_eq!(seg.dst.to_string(), "10.0.0.2:9093");
        assert!(seg.payload.is_empty());
        assert_eq!(seg.missing_len, 50);
        // not cut by the capture: a header that says it is longer than its packet
        assert!(matches!(
            decode(&packet(101, cut, cut.len() as u32)),
            Decoded::Malformed(_)
        ));
    }

    #[test]
    fn ipv4_fragment_of_tcp_is_handed_on() {
        let mut data = tcp_packet_ipv4(&[3u8; 40]);
        data[4..6].copy_from_slice(&0x1234u16.to_be_bytes()); // identification
        data[6..8].copy_from_slice(&(0x2000u16 | 2).to_be_bytes()); // MF, offset 16
        match decode(&packet(101, &data, data.len() as u32)) {
            Decoded::Fragment(frag) => {
                assert_eq!((frag.id, frag.offset, frag.more), (0x1234, 16, true));
                assert_eq!(frag.payload.len(), data.len() - 20);
                assert_eq!(frag.missing_len, 0);
            }
            other => panic!("expected a fragment, got {other:?}"),
        }
    }
}
