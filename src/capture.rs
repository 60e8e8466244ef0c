//! Capture records: pcap and pcapng files read incrementally with pcap-parser.
//!
//! In: any `Read` (a file, standard input). Out: one [`Packet`] per packet record, in file
//! order, numbered from a running 1-based frame counter (Wireshark's `frame.number`), with
//! its link type and timestamp. The file is read through a fixed buffer that grows only
//! for a record larger than it (up to [`MAX_RECORD_BUFFER`]). A file that is not a capture
//! is a fatal [`Error`]; a file that ends inside a record gives `capture_truncated`, and
//! corruption after valid data gives a diagnostic with the byte offset: what came before
//! is kept.

use std::io::Read;
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};

use pcap_parser::pcapng::Block;
use pcap_parser::{Linktype, PcapBlockOwned, PcapError};

use crate::diag::{Diagnostics, Kind};
use crate::error::Error;

/// Initial read buffer: large enough for any packet of a 262144-byte snaplen.
const READ_BUFFER: usize = 1 << 20;
/// Longest packet a record may hold whatever the file's snaplen says (Wireshark's
/// `WTAP_MAX_PACKET_SIZE_STANDARD`).
pub const MAX_SNAPLEN: usize = 262_144;
/// Largest record we accept; pcapng blocks over this are reported, not allocated.
pub const MAX_RECORD_BUFFER: usize = 64 << 20;
/// Interfaces described in one pcapng section that are kept; a real capture has a few
/// (tshark on every interface of a big host, some hundreds), a hostile one millions.
pub const MAX_INTERFACES: usize = 4096;

/// A capture timestamp in UTC; `nano` tells whether the capture carries nanoseconds
/// (9 fractional digits in the report) or microseconds (6).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timestamp {
    pub secs: i64,
    pub nanos: u32,
    pub nano: bool,
}

impl Timestamp {
    /// Nanoseconds since the Unix epoch.
    pub fn as_nanos(&self) -> i128 {
        i128::from(self.secs) * 1_000_000_000 + i128::from(self.nanos)
    }
}

/// Where a packet sits: its frame number and time. Copied freely down the pipeline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PacketRef {
    pub frame: u64,
    pub timestamp: Timestamp,
}

/// One packet record, borrowed from the read buffer.
#[derive(Debug)]
pub struct Packet<'a> {
    pub at: PacketRef,
    pub link_type: Linktype,
    /// Length of the packet on the wire; more than `data.len()` when snaplen cut it.
    pub orig_len: u32,
    pub data: &'a [u8],
}

/// What one capture file held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureInfo {
    pub path: String,
    pub format: &'static str,
    /// Link types in the order first seen.
    pub link_types: Vec<Linktype>,
    pub packets: u64,
    pub bytes: u64,
    pub first_timestamp: Option<Timestamp>,
    pub last_timestamp: Option<Timestamp>,
}

/// pcapng interface: link type and how to turn its raw timestamps into time.
#[derive(Debug, Clone, Copy)]
struct Interface {
    link_type: Linktype,
    units_per_sec: u64,
    offset_secs: i64,
}

/// Units per second for a pcapng `if_tsresol` (high bit: power of two, else of ten).
fn units_per_sec(tsresol: u8) -> Option<u64> {
    let exp = u32::from(tsresol & 0x7f);
    if tsresol & 0x80 == 0 {
        10u64.checked_pow(exp)
    } else {
        1u64.checked_shl(exp)
    }
}

impl Interface {
    fn timestamp(&self, high: u32, low: u32) -> Timestamp {
        let raw = (u64::from(high) << 32) | u64::from(low);
        let units = self.units_per_sec.max(1);
        let secs = i64::try_from(raw / units)
            .unwrap_or(i64::MAX)
            .saturating_add(self.offset_secs);
        let frac = u128::from(raw % units) * 1_000_000_000 / u128::from(units);
        Timestamp {
            secs,
            nanos: u32::try_from(frac).unwrap_or(0),
            nano: units > 1_000_000,
        }
    }
}

/// Makes every read fill the buffer unless the input ends: pcap-parser reads the file
/// header with a single `read`, which a pipe may answer with a few bytes only. A read
/// error after the header is kept aside and seen as the end of the input, so that what
/// came before is still reported (pcap-parser would turn it into a bare `ReadError`).
struct FullReads<R> {
    inner: R,
    started: bool,
    error: Arc<Mutex<Option<std::io::Error>>>,
}

impl<R: Read> Read for FullReads<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut filled = 0;
        while let Some(rest) = buf.get_mut(filled..).filter(|rest| !rest.is_empty()) {
            match self.inner.read(rest) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if !self.started && filled == 0 => {
                    let kind = e.kind();
                    if let Ok(mut slot) = self.error.lock() {
                        slot.get_or_insert(e);
                    }
                    return Err(kind.into());
                }
                Err(e) => {
                    if let Ok(mut slot) = self.error.lock() {
                        slot.get_or_insert(e);
                    }
                    break;
                }
            }
        }
        self.started = true;
        Ok(filled)
    }
}

/// Reads one capture, calling `on_packet` for each packet record. Frames are numbered
/// from `next_frame` on; the caller keeps numbering across files. Records up to
/// [`MAX_RECORD_BUFFER`].
pub fn read_capture<R: Read + Send>(
    input: R,
    path: &str,
    next_frame: &mut u64,
    diags: &mut Diagnostics,
    on_packet: impl FnMut(&Packet<'_>, &mut Diagnostics),
) -> Result<CaptureInfo, Error> {
    read_capture_with(input, path, next_frame, diags, MAX_RECORD_BUFFER, on_packet)
}

/// [`read_capture`] accepting records (pcapng blocks) up to `max_record` bytes.
pub fn read_capture_with<R: Read + Send>(
    input: R,
    path: &str,
    next_frame: &mut u64,
    diags: &mut Diagnostics,
    max_record: usize,
    mut on_packet: impl FnMut(&Packet<'_>, &mut Diagnostics),
) -> Result<CaptureInfo, Error> {
    read_records(
        input,
        path,
        next_frame,
        diags,
        max_record,
        |packet, diags| {
            on_packet(packet, diags);
            ControlFlow::Continue(())
        },
    )
}

/// The timestamp of the first packet of a capture, reading no further than that packet;
/// `None` when the capture has none before its end or a fault. Nothing is reported: the
/// capture is read again in full later, which reports what there is to report.
pub fn first_timestamp<R: Read + Send>(input: R, path: &str) -> Option<Timestamp> {
    let mut first = None;
    let mut frame = 1;
    let mut diags = Diagnostics::default();
    read_records(
        input,
        path,
        &mut frame,
        &mut diags,
        MAX_RECORD_BUFFER,
        |packet, _| {
            first = Some(packet.at.timestamp);
            ControlFlow::Break(())
        },
    )
    .ok()?;
    first
}

/// Reads records until the input ends or `on_packet` breaks.
fn read_records<R: Read + Send>(
    input: R,
    path: &str,
    next_frame: &mut u64,
    diags: &mut Diagnostics,
    max_record: usize,
    mut on_packet: impl FnMut(&Packet<'_>, &mut Diagnostics) -> ControlFlow<()>,
) -> Result<CaptureInfo, Error> {
    let read_error = Arc::new(Mutex::new(None));
    let input = FullReads {
        inner: input,
        started: false,
        error: Arc::clone(&read_error),
    };
    let mut reader = pcap_parser::create_reader(READ_BUFFER, input).map_err(|e| {
        let reason = match e {
            PcapError::Eof => "the file is empty".to_owned(),
            PcapError::HeaderNotRecognized => "not a pcap or pcapng capture".to_owned(),
            PcapError::Incomplete(_) | PcapError::UnexpectedEof => {
                "the capture header is cut short".to_owned()
            }
            PcapError::ReadError => match read_error.lock().ok().and_then(|mut e| e.take()) {
                Some(err) => format!("could not read the file: {err}"),
                None => "could not read the file".to_owned(),
            },
            other => format!("the capture header is invalid ({other})"),
        };
        Error::NotACapture {
            path: path.to_owned(),
            reason,
        }
    })?;
    let mut info = CaptureInfo {
        path: path.to_owned(),
        format: "pcap",
        link_types: Vec::new(),
        packets: 0,
        bytes: 0,
        first_timestamp: None,
        last_timestamp: None,
    };
    let mut legacy: Option<(Linktype, bool)> = None;
    let mut interfaces: Vec<Interface> = Vec::new();
    let mut interfaces_capped = false;
    let mut last_ts = Timestamp::default();
    let mut buffer_len = READ_BUFFER;
    let mut snaplen: u32 = 0;
    loop {
        let offset = reader.consumed();
        match reader.next() {
            Ok((len, block)) => {
                let packet = match block {
                    PcapBlockOwned::LegacyHeader(header) => {
                        legacy = Some((header.network, header.is_nanosecond_precision()));
                        snaplen = header.snaplen;
                        None
                    }
                    PcapBlockOwned::Legacy(record) => legacy.map(|(link_type, nano)| {
                        let nanos = if nano {
                            record.ts_usec
                        } else {
                            record.ts_usec.saturating_mul(1000)
                        };
                        let data_len = (record.caplen as usize).min(record.data.len());
                        (
                            link_type,
                            Timestamp {
                                secs: i64::from(record.ts_sec),
                                nanos: nanos.min(999_999_999),
                                nano,
                            },
                            record.origlen,
                            record.data.get(..data_len).unwrap_or_default(),
                        )
                    }),
                    PcapBlockOwned::NG(block) => {
                        info.format = "pcapng";
                        match block {
                            Block::SectionHeader(_) => {
                                interfaces.clear();
                                interfaces_capped = false;
                                None
                            }
                            Block::InterfaceDescription(_)
                                if interfaces.len() >= MAX_INTERFACES =>
                            {
                                if !interfaces_capped {
                                    interfaces_capped = true;
                                    diags.push(
                                        Kind::CaptureCorrupt,
                                        None,
                                        Some(*next_frame),
                                        format!(
                                            "{path}: the section at byte {offset} describes more than {MAX_INTERFACES} interfaces; the rest are not kept, and their packets are skipped"
                                        ),
                                    );
                                }
                                None
                            }
                            Block::InterfaceDescription(idb) => {
                                interfaces.push(Interface {
                                    link_type: idb.linktype,
                                    units_per_sec: units_per_sec(idb.if_tsresol)
                                        .unwrap_or(1_000_000),
                                    offset_secs: idb.if_tsoffset,
                                });
                                None
                            }
                            Block::EnhancedPacket(epb) => {
                                match interfaces.get(epb.if_id as usize) {
                                    Some(iface) => Some((
                                        iface.link_type,
                                        iface.timestamp(epb.ts_high, epb.ts_low),
                                        epb.origlen,
                                        {
                                            let data: &[u8] = epb.data;
                                            data.get(..epb.caplen as usize).unwrap_or(data)
                                        },
                                    )),
                                    None => {
                                        diags.push(
                                            Kind::CaptureCorrupt,
                                            None,
                                            Some(*next_frame),
                                            format!(
                                                "{path}: packet block at byte {offset} names interface {} but only {} are described; the packet was skipped",
                                                epb.if_id,
                                                interfaces.len()
                                            ),
                                        );
                                        None
                                    }
                                }
                            }
                            Block::SimplePacket(spb) => interfaces.first().map(|iface| {
                                // A simple packet block has no timestamp; keep the previous one.
                                let data: &[u8] = spb.data;
                                let data = data.get(..spb.origlen as usize).unwrap_or(data);
                                (iface.link_type, last_ts, spb.origlen, data)
                            }),
                            _ => None,
                        }
                    }
                };
                // A record longer than the file's snaplen (and than any packet Wireshark
                // accepts) is corruption, not a packet.
                let packet = packet.filter(|(_, _, _, data)| {
                    let limit = (snaplen as usize).max(MAX_SNAPLEN);
                    if data.len() <= limit {
                        return true;
                    }
                    diags.push(
                        Kind::CaptureCorrupt,
                        None,
                        Some(*next_frame),
                        format!(
                            "{path}: the record at byte {offset} holds {} bytes, more than the capture's snaplen of {snaplen} and the {MAX_SNAPLEN} any packet may have; it was skipped",
                            data.len()
                        ),
                    );
                    false
                });
                if let Some((link_type, timestamp, orig_len, data)) = packet {
                    let at = PacketRef {
                        frame: *next_frame,
                        timestamp,
                    };
                    *next_frame += 1;
                    info.packets += 1;
                    info.bytes += data.len() as u64;
                    info.first_timestamp.get_or_insert(timestamp);
                    info.last_timestamp = Some(timestamp);
                    last_ts = timestamp;
                    if !info.link_types.contains(&link_type) {
                        info.link_types.push(link_type);
                    }
                    let flow = on_packet(
                        &Packet {
                            at,
                            link_type,
                            orig_len,
                            data,
                        },
                        diags,
                    );
                    if flow.is_break() {
                        break;
                    }
                }
                // no shift per record: refill() shifts what is left once per buffer
                reader.consume_noshift(len);
            }
            Err(PcapError::Eof) => break,
            Err(PcapError::Incomplete(_)) => {
                reader.refill().map_err(|_| Error::Read {
                    path: path.to_owned(),
                    source: std::io::Error::other("read failed"),
                })?;
            }
            Err(PcapError::UnexpectedEof) => {
                diags.push(
                    Kind::CaptureTruncated,
                    None,
                    // the frame number the broken record would have had
                    Some(*next_frame),
                    format!(
                        "{path} ends inside a record that starts at byte {offset}; the {} packets before it were read",
                        info.packets
                    ),
                );
                break;
            }
            Err(PcapError::BufferTooSmall) => {
                if buffer_len >= max_record {
                    diags.push(
                        Kind::CaptureCorrupt,
                        None,
                        Some(*next_frame),
                        format!(
                            "{path}: the record at byte {offset} is larger than {} MiB; reading stopped there",
                            max_record >> 20
                        ),
                    );
                    break;
                }
                buffer_len *= 2;
                reader.grow(buffer_len);
                reader.refill().map_err(|_| Error::Read {
                    path: path.to_owned(),
                    source: std::io::Error::other("read failed"),
                })?;
            }
            Err(other) => {
                diags.push(
                    Kind::CaptureCorrupt,
                    None,
                    // the frame number the broken record would have had
                    Some(*next_frame),
                    format!(
                        "{path} is corrupt at byte {offset} ({other}); the {} packets before it were read",
                        info.packets
                    ),
                );
                break;
            }
        }
    }
    let read_error = read_error.lock().ok().and_then(|mut slot| slot.take());
    if let Some(err) = read_error {
        diags.push(
            Kind::CaptureCorrupt,
            None,
            Some(*next_frame),
            format!(
                "{path}: reading failed after {} packets ({err}); what came before is reported",
                info.packets
            ),
        );
    }
    Ok(info)
}

/// LINKTYPE_ name without the prefix, as the report names link types.
pub fn link_type_name(link_type: Linktype) -> String {
    match link_type.0 {
        0 => "NULL".into(),
        1 => "ETHERNET".into(),
        101 => "RAW".into(),
        108 => "LOOP".into(),
        113 => "LINUX_SLL".into(),
        228 => "IPV4".into(),
        229 => "IPV6".into(),
        276 => "LINUX_SLL2".into(),
        other => format!("LINKTYPE_{other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcapng_resolutions() {
        assert_eq!(units_per_sec(6), Some(1_000_000));
        assert_eq!(units_per_sec(9), Some(1_000_000_000));
        assert_eq!(units_per_sec(0x80 | 10), Some(1024));
        assert_eq!(units_per_sec(20), None);
        let iface = Interface {
            link_type: Linktype(1),
            units_per_sec: 1_000_000_000,
            offset_secs: 0,
        };
        let raw: u64 = 1_700_000_000_123_456_789;
        let ts = iface.timestamp((raw >> 32) as u32, raw as u32);
        assert_eq!(
            (ts.secs, ts.nanos, ts.nano),
            (1_700_000_000, 123_456_789, true)
        );
    }
}
