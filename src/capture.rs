//! Capture records: pcap and pcapng files parsed in place with pcap-parser.
//!
//! In: the input as [`Blocks`] (the read-ahead's blocks, lent in turn). Out: one [`Packet`]
//! per packet record, in file order, numbered from a running 1-based frame counter
//! (Wireshark's `frame.number`), with its link type and timestamp. Records are parsed by
//! pcap-parser's slice parsers where they lie in a block; only one that spans blocks is
//! gathered into a buffer of its own (up to the record limit). A file that is not a capture
//! is a fatal [`Error`]; a file that ends inside a record gives `capture_truncated`, and
//! corruption after valid data gives a diagnostic with the byte offset: what came before
//! is kept.

use std::io::{self, Read};

use pcap_parser::nom;
use pcap_parser::pcap::{
    parse_pcap_frame, parse_pcap_frame_be, parse_pcap_frame_modified, parse_pcap_header,
    LegacyPcapBlock,
};
use pcap_parser::pcapng::{
    parse_block_be, parse_block_le, parse_sectionheaderblock, Block, EnhancedPacketBlock,
    InterfaceDescriptionBlock, SimplePacketBlock,
};
use pcap_parser::{Linktype, PcapError};

use crate::diag::obs;
use crate::diag::{Cut, Damage, Diagnostics, Observation};
use crate::error::Error;
use crate::input::readahead::{Blocks, ReadBlocks};
use crate::packet_ref::{FileSpot, Origin, PacketRef};
use crate::timestamp::Timestamp;

/// Longest packet a record may hold whatever the file's snaplen says (Wireshark's
/// `WTAP_MAX_PACKET_SIZE_STANDARD`).
pub const MAX_SNAPLEN: usize = 262_144;
/// Largest record we accept; pcapng blocks over this are reported, not allocated.
pub const MAX_RECORD_BUFFER: usize = 64 << 20;
/// Interfaces described in one pcapng section that are kept; a real capture has a few
/// (tshark on every interface of a big host, some hundreds), a hostile one millions.
pub const MAX_INTERFACES: usize = 4096;

/// One packet record, borrowed from the read buffer.
#[derive(Debug)]
pub struct Packet<'a> {
    pub at: PacketRef,
    pub link_type: Linktype,
    /// Length of the packet on the wire; more than `data.len()` when snaplen cut it.
    pub orig_len: u32,
    pub data: &'a [u8],
    /// Where `data` lies in its file, when the file can be read again there.
    pub spot: Option<FileSpot>,
}

impl Packet<'_> {
    /// Where `part` (a slice of this packet's data) lies in the file, if the data has a
    /// spot.
    pub fn spot_of(&self, part: &[u8]) -> Option<FileSpot> {
        let spot = self.spot?;
        let start = (part.as_ptr() as usize).checked_sub(self.data.as_ptr() as usize)?;
        let within = start.checked_add(part.len())? <= self.data.len();
        within.then(|| spot.advanced(start as u64)).flatten()
    }
}

crate::names::closed_set! {
    /// A capture file's format.
    pub enum FileFormat {
        Pcap = "pcap",
        Pcapng = "pcapng",
    }
}

/// What one capture file held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureInfo {
    pub path: String,
    pub format: FileFormat,
    /// Link types in the order first seen.
    pub link_types: Vec<Linktype>,
    pub packets: u64,
    pub bytes: u64,
    pub first_timestamp: Option<Timestamp>,
    pub last_timestamp: Option<Timestamp>,
    /// Packets captured shorter than they were on the wire (the snaplen cut them).
    pub packets_cut: u64,
    /// The longest captured length among those: the snap length in effect.
    pub cut_len: u32,
    /// Packets that were copies of another file's, read once (see `copies`).
    pub duplicate_packets: u64,
}

impl CaptureInfo {
    /// A file of which nothing is read yet.
    pub fn unread(path: String) -> Self {
        Self {
            path,
            format: FileFormat::Pcap,
            link_types: Vec::new(),
            packets: 0,
            bytes: 0,
            first_timestamp: None,
            last_timestamp: None,
            packets_cut: 0,
            cut_len: 0,
            duplicate_packets: 0,
        }
    }
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
    read_capture_with(
        ReadBlocks::new(input),
        path,
        next_frame,
        diags,
        MAX_RECORD_BUFFER,
        on_packet,
    )
}

/// [`read_capture`] over input in blocks, accepting records up to `max_record` bytes.
pub fn read_capture_with(
    input: impl Blocks,
    path: &str,
    next_frame: &mut u64,
    diags: &mut Diagnostics,
    max_record: usize,
    mut on_packet: impl FnMut(&Packet<'_>, &mut Diagnostics),
) -> Result<CaptureInfo, Error> {
    let mut reader = CaptureReader::open(input, path, max_record)?;
    while reader.peek(*next_frame, diags).is_some() {
        let frame = *next_frame;
        *next_frame += 1;
        if let Some(packet) = reader.take(frame, None) {
            on_packet(&packet, diags);
        }
    }
    Ok(reader.into_info())
}

/// The timestamp of the first packet of a capture, reading no further than that packet;
/// `None` when the capture has none before its end or a fault. Nothing is reported: the
/// capture is read again in full later, which reports what there is to report.
pub fn first_timestamp<R: Read + Send>(input: R, path: &str) -> Option<Timestamp> {
    let mut reader = CaptureReader::open(ReadBlocks::new(input), path, MAX_RECORD_BUFFER).ok()?;
    reader.peek(1, &mut Diagnostics::default())
}

/// The bytes not yet parsed: the rest of the current block, or, for a record that spans
/// blocks, a copy of its bytes gathered from them (only such records are copied).
struct Feed<B> {
    blocks: B,
    /// Where the unparsed bytes of the current block start.
    pos: usize,
    /// While `carrying`: a record's bytes from several blocks, unparsed from `carry_pos`.
    carry: Vec<u8>,
    carry_pos: usize,
    carrying: bool,
    ended: bool,
    /// File offset of the first unparsed byte.
    offset: u64,
}

impl<B: Blocks> Feed<B> {
    fn new(blocks: B) -> Self {
        Self {
            blocks,
            pos: 0,
            carry: Vec::new(),
            carry_pos: 0,
            carrying: false,
            ended: false,
            offset: 0,
        }
    }

    fn data(&self) -> &[u8] {
        if self.carrying {
            self.carry.get(self.carry_pos..).unwrap_or_default()
        } else {
            self.blocks.current().get(self.pos..).unwrap_or_default()
        }
    }

    /// Reads blocks until `data()` holds `need` bytes; `false` when the input ends first.
    /// A record that runs into the next block is gathered: the rest of its block, then
    /// from the next only the bytes asked for, so that a block is not copied whole.
    fn fill(&mut self, need: usize) -> io::Result<bool> {
        while self.data().len() < need {
            let have = self.data().len();
            if !self.carrying && have > 0 {
                // The record runs into the next block: gather it.
                self.carry.clear();
                self.carry
                    .extend_from_slice(self.blocks.current().get(self.pos..).unwrap_or_default());
                self.carry_pos = 0;
                self.carrying = true;
                self.pos = self.blocks.current().len();
            } else if self.carrying && self.carry_pos > 0 {
                self.carry.drain(..self.carry_pos);
                self.carry_pos = 0;
            }
            if self.carrying {
                let rest = self.blocks.current().get(self.pos..).unwrap_or_default();
                if !rest.is_empty() {
                    let take = (need - self.data().len()).min(rest.len());
                    self.carry
                        .extend_from_slice(rest.get(..take).unwrap_or_default());
                    self.pos += take;
                    continue;
                }
            }
            if self.ended {
                return Ok(false);
            }
            if !self.blocks.advance()? {
                self.ended = true;
                continue;
            }
            self.pos = 0;
        }
        Ok(true)
    }

    /// Steps over `len` parsed bytes; back to the block once a gathered record is done.
    fn consume(&mut self, len: usize) {
        self.offset += len as u64;
        if !self.carrying {
            self.pos += len;
            return;
        }
        self.carry_pos += len;
        let left = self.carry.len().saturating_sub(self.carry_pos);
        if left <= self.pos {
            // what is left was gathered from the current block, before `pos`
            self.carrying = false;
            self.pos -= left;
            self.carry.clear();
            if self.carry.capacity() > CARRY_KEPT {
                self.carry.shrink_to(CARRY_KEPT);
            }
        }
    }
}

/// Room a gathered record's buffer keeps after it (a big one is given back).
const CARRY_KEPT: usize = 1 << 20;

/// The file's format, once its header is read.
#[derive(Debug, Clone, Copy)]
enum Format {
    Pcap {
        link_type: Linktype,
        nano: bool,
        snaplen: u32,
        big_endian: bool,
        modified: bool,
    },
    Pcapng {
        big_endian: bool,
    },
}

/// pcapng's section header block type, the same in both byte orders.
const SHB_TYPE: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];
/// Byte-order magic of a little-endian section, as its bytes lie in the file.
const BYTE_ORDER_LE: [u8; 4] = [0x4d, 0x3c, 0x2b, 0x1a];

fn u32_at(data: &[u8], at: usize, big_endian: bool) -> Option<u32> {
    let bytes: [u8; 4] = data.get(at..at + 4)?.try_into().ok()?;
    Some(if big_endian {
        u32::from_be_bytes(bytes)
    } else {
        u32::from_le_bytes(bytes)
    })
}

impl Format {
    /// Bytes the record at the start of `data` takes, from its header: `Err(n)` when its
    /// header needs `n` bytes and `data` has fewer. (The parser then reads the record; a
    /// length that lies is its to report.)
    fn record_len(&self, data: &[u8]) -> Result<usize, usize> {
        match *self {
            Self::Pcap {
                big_endian,
                modified,
                ..
            } => {
                let header = if modified { 24 } else { 16 };
                let caplen = u32_at(data, 8, big_endian).ok_or(header)?;
                Ok(header + caplen as usize)
            }
            Self::Pcapng { big_endian } => {
                let is_shb = data.get(..4).ok_or(8usize)? == SHB_TYPE;
                let big_endian = if is_shb {
                    data.get(8..12).ok_or(12usize)? != BYTE_ORDER_LE
                } else {
                    big_endian
                };
                let len = u32_at(data, 4, big_endian).ok_or(8usize)?;
                Ok((len as usize).max(12))
            }
        }
    }
}

/// A packet record parsed and not yet stepped over: where its bytes lie in the feed.
#[derive(Debug, Clone, Copy)]
struct Pending {
    /// Bytes the whole record takes.
    record_len: usize,
    /// Its packet bytes, as offsets into the feed's unparsed bytes.
    data_start: usize,
    data_len: usize,
    link_type: Linktype,
    timestamp: Timestamp,
    orig_len: u32,
    /// Handed out by [`CaptureReader::take`]: stepped over at the next peek.
    taken: bool,
}

/// One capture file read a packet at a time: [`peek`](Self::peek) says when the next
/// packet was captured, [`take`](Self::take) hands it over, borrowed from the read
/// buffer. Several files are merged in time order by peeking at each (see `merge`).
pub struct CaptureReader<B> {
    feed: Feed<B>,
    records: Records,
    max_record: usize,
    pending: Option<Pending>,
    /// The file is read to its end, or to what stopped the reading (then reported).
    ended: bool,
    /// The file's index in `captures[]`, when it can be read again: packets then have
    /// spots.
    spots: Option<usize>,
}

/// What the records read so far say: the format and interfaces, and what the file held.
struct Records {
    format: Format,
    info: CaptureInfo,
    interfaces: Vec<Interface>,
    interfaces_capped: bool,
    last_ts: Timestamp,
    /// File offset of the record being read, for diagnostics.
    offset: u64,
}

impl<B: Blocks> CaptureReader<B> {
    /// Reads the file header: the format, or why this is not a capture.
    pub fn open(blocks: B, path: &str, max_record: usize) -> Result<Self, Error> {
        let mut feed = Feed::new(blocks);
        let format = read_header(&mut feed, path)?;
        Ok(Self {
            feed,
            records: Records {
                format,
                info: CaptureInfo::unread(path.to_owned()),
                interfaces: Vec::new(),
                interfaces_capped: false,
                last_ts: Timestamp::default(),
                offset: 0,
            },
            max_record,
            pending: None,
            ended: false,
            spots: None,
        })
    }

    /// Gives every packet its spot in the file, capture `capture` of the run, which the
    /// caller can read again.
    pub fn with_spots(mut self, capture: usize) -> Self {
        self.spots = Some(capture);
        self
    }

    /// When the next packet was captured; `None` once the file is read. What stops the
    /// reading early (a cut, corruption) is reported then, at `frame`: the number the
    /// next packet would have had.
    pub fn peek(&mut self, frame: u64, diags: &mut Diagnostics) -> Option<Timestamp> {
        if let Some(pending) = &self.pending {
            if !pending.taken {
                return Some(pending.timestamp);
            }
            self.feed.consume(pending.record_len);
            self.pending = None;
        }
        while !self.ended {
            self.records.offset = self.feed.offset;
            match self.next_record(frame, diags) {
                Ok(true) => {
                    if let Some(pending) = &self.pending {
                        return Some(pending.timestamp);
                    }
                }
                Ok(false) => self.ended = true,
                Err(stop) => {
                    self.ended = true;
                    self.stopped(stop, frame, diags);
                }
            }
        }
        None
    }

    /// The packet [`peek`](Self::peek) found, numbered `frame`; `None` without one.
    pub fn take(&mut self, frame: u64, origin: Option<Origin>) -> Option<Packet<'_>> {
        let pending = self.pending.as_mut().filter(|p| !p.taken)?;
        pending.taken = true;
        let end = pending.data_start.saturating_add(pending.data_len);
        let spot = self.spots.and_then(|capture| {
            FileSpot::new(
                capture,
                self.feed.offset.checked_add(pending.data_start as u64)?,
            )
        });
        Some(Packet {
            at: PacketRef {
                frame,
                timestamp: pending.timestamp,
                origin,
            },
            link_type: pending.link_type,
            orig_len: pending.orig_len,
            data: self
                .feed
                .data()
                .get(pending.data_start..end)
                .unwrap_or_default(),
            spot,
        })
    }

    /// What the file held, read so far.
    pub fn info(&self) -> &CaptureInfo {
        &self.records.info
    }

    /// What the file held.
    pub fn into_info(self) -> CaptureInfo {
        self.records.info
    }

    /// Reads the next record: `Ok(false)` at the clean end of the file. A packet record
    /// becomes `pending`; other records are stepped over.
    fn next_record(&mut self, frame: u64, diags: &mut Diagnostics) -> Result<bool, Stop> {
        loop {
            let need = match self.records.format.record_len(self.feed.data()) {
                Ok(len) if len > self.max_record => return Err(Stop::TooLarge),
                Ok(len) if self.feed.data().len() >= len => break,
                Ok(len) | Err(len) => len,
            };
            if !self.feed.fill(need).map_err(Stop::ReadFailed)? {
                return if self.feed.data().is_empty() {
                    Ok(false)
                } else {
                    Err(Stop::Truncated)
                };
            }
        }
        let data = self.feed.data();
        let base = data.as_ptr() as usize;
        let (len, packet) = match self.records.format {
            Format::Pcap {
                big_endian,
                modified,
                ..
            } => {
                let parse = match (modified, big_endian) {
                    (true, _) => parse_pcap_frame_modified,
                    (false, true) => parse_pcap_frame_be,
                    (false, false) => parse_pcap_frame,
                };
                let (rest, record) = parse(data).map_err(parse_stop)?;
                let found = self.records.legacy_packet(&record, base);
                (data.len() - rest.len(), found)
            }
            Format::Pcapng { big_endian } => {
                let parse = if big_endian {
                    parse_block_be
                } else {
                    parse_block_le
                };
                let (rest, block) = parse(data).map_err(parse_stop)?;
                let found = self.records.block(&block, base, frame, diags);
                (data.len() - rest.len(), found)
            }
        };
        match packet {
            Some(found) => self.accept(found, len, frame, diags),
            None => self.feed.consume(len),
        }
        Ok(true)
    }

    /// Counts a packet record and holds it as `pending`, or skips it as corrupt.
    fn accept(
        &mut self,
        mut found: Pending,
        record_len: usize,
        frame: u64,
        diags: &mut Diagnostics,
    ) {
        found.record_len = record_len;
        // A record longer than the file's snaplen (and than any packet Wireshark accepts)
        // is corruption, not a packet.
        let snaplen = match self.records.format {
            Format::Pcap { snaplen, .. } => snaplen,
            Format::Pcapng { .. } => 0,
        };
        if found.data_len > (snaplen as usize).max(MAX_SNAPLEN) {
            let damage = Damage::OverSnaplen {
                len: found.data_len as u64,
                snaplen,
                max_len: MAX_SNAPLEN as u64,
            };
            self.records.corrupt(damage, frame, diags);
            self.feed.consume(record_len);
            return;
        }
        let records = &mut self.records;
        let info = &mut records.info;
        info.packets += 1;
        info.bytes += found.data_len as u64;
        if (found.data_len as u64) < u64::from(found.orig_len) {
            info.packets_cut += 1;
            info.cut_len = info.cut_len.max(found.data_len as u32);
        }
        info.first_timestamp.get_or_insert(found.timestamp);
        info.last_timestamp = Some(found.timestamp);
        records.last_ts = found.timestamp;
        if !info.link_types.contains(&found.link_type) {
            info.link_types.push(found.link_type);
        }
        self.pending = Some(found);
    }

    /// Reports why the reading stopped before the end of the file.
    fn stopped(&self, stop: Stop, frame: u64, diags: &mut Diagnostics) {
        let records = &self.records;
        let packets = records.info.packets;
        let error;
        let cut = match stop {
            Stop::Truncated => Cut::InsideRecord,
            // Only a decompressor says this: its input ended before its stream did.
            Stop::ReadFailed(err) if err.kind() == io::ErrorKind::UnexpectedEof => {
                error = err.to_string();
                Cut::Stream { error: &error }
            }
            Stop::TooLarge => {
                let limit_mib = (self.max_record >> 20) as u64;
                return records.corrupt(Damage::RecordTooLarge { limit_mib }, frame, diags);
            }
            Stop::Corrupt(why) => {
                let damage = Damage::Unreadable { why: &why, packets };
                return records.corrupt(damage, frame, diags);
            }
            Stop::ReadFailed(err) => {
                let error = &err.to_string();
                let damage = Damage::ReadFailed { error, packets };
                return records.corrupt(damage, frame, diags);
            }
        };
        let what = Observation::CaptureTruncated(obs::CaptureTruncated {
            path: records.path(),
            record_offset: records.offset,
            packets,
            cut,
        });
        diags.add(None, Some(frame), what);
    }
}

impl Records {
    fn path(&self) -> &str {
        &self.info.path
    }

    fn corrupt(&self, damage: Damage<'_>, frame: u64, diags: &mut Diagnostics) {
        let what = Observation::CaptureCorrupt(obs::CaptureCorrupt {
            path: self.path(),
            record_offset: self.offset,
            damage,
        });
        diags.add(None, Some(frame), what);
    }

    /// Where a packet's bytes, borrowed from the feed at `base`, lie in it.
    fn found(
        data: &[u8],
        base: usize,
        link_type: Linktype,
        timestamp: Timestamp,
        orig_len: u32,
    ) -> Pending {
        Pending {
            record_len: 0,
            data_start: (data.as_ptr() as usize).saturating_sub(base),
            data_len: data.len(),
            link_type,
            timestamp,
            orig_len,
            taken: false,
        }
    }

    fn legacy_packet(&self, record: &LegacyPcapBlock<'_>, base: usize) -> Option<Pending> {
        let Format::Pcap {
            link_type, nano, ..
        } = self.format
        else {
            return None;
        };
        let nanos = if nano {
            record.ts_usec
        } else {
            record.ts_usec.saturating_mul(1000)
        };
        let timestamp = Timestamp {
            secs: i64::from(record.ts_sec),
            nanos: nanos.min(999_999_999),
            nano,
        };
        let data_len = (record.caplen as usize).min(record.data.len());
        let data = record.data.get(..data_len).unwrap_or_default();
        Some(Self::found(
            data,
            base,
            link_type,
            timestamp,
            record.origlen,
        ))
    }

    fn block(
        &mut self,
        block: &Block<'_>,
        base: usize,
        frame: u64,
        diags: &mut Diagnostics,
    ) -> Option<Pending> {
        self.info.format = FileFormat::Pcapng;
        match block {
            Block::SectionHeader(shb) => {
                self.format = Format::Pcapng {
                    big_endian: shb.big_endian(),
                };
                self.interfaces.clear();
                self.interfaces_capped = false;
                None
            }
            Block::InterfaceDescription(idb) => {
                self.interface(idb, frame, diags);
                None
            }
            Block::EnhancedPacket(epb) => self.enhanced_packet(epb, base, frame, diags),
            Block::SimplePacket(spb) => self.simple_packet(spb, base),
            _ => None,
        }
    }

    fn interface(
        &mut self,
        idb: &InterfaceDescriptionBlock<'_>,
        frame: u64,
        diags: &mut Diagnostics,
    ) {
        if self.interfaces.len() < MAX_INTERFACES {
            self.interfaces.push(Interface {
                link_type: idb.linktype,
                units_per_sec: units_per_sec(idb.if_tsresol).unwrap_or(1_000_000),
                offset_secs: idb.if_tsoffset,
            });
        } else if !self.interfaces_capped {
            self.interfaces_capped = true;
            let damage = Damage::TooManyInterfaces {
                max: MAX_INTERFACES as u64,
            };
            self.corrupt(damage, frame, diags);
        }
    }

    fn enhanced_packet(
        &self,
        epb: &EnhancedPacketBlock<'_>,
        base: usize,
        frame: u64,
        diags: &mut Diagnostics,
    ) -> Option<Pending> {
        let Some(iface) = self.interfaces.get(epb.if_id as usize).copied() else {
            let damage = Damage::UnknownInterface {
                interface: epb.if_id,
                described: self.interfaces.len() as u64,
            };
            self.corrupt(damage, frame, diags);
            return None;
        };
        let data: &[u8] = epb.data;
        let data = data.get(..epb.caplen as usize).unwrap_or(data);
        let timestamp = iface.timestamp(epb.ts_high, epb.ts_low);
        Some(Self::found(
            data,
            base,
            iface.link_type,
            timestamp,
            epb.origlen,
        ))
    }

    fn simple_packet(&self, spb: &SimplePacketBlock<'_>, base: usize) -> Option<Pending> {
        let iface = self.interfaces.first().copied()?;
        // A simple packet block has no timestamp; keep the previous one.
        let data: &[u8] = spb.data;
        let data = data.get(..spb.origlen as usize).unwrap_or(data);
        Some(Self::found(
            data,
            base,
            iface.link_type,
            self.last_ts,
            spb.origlen,
        ))
    }
}

/// Why reading a capture's records stopped early, with what it says.
enum Stop {
    /// Only a record's first bytes are in the file.
    Truncated,
    TooLarge,
    Corrupt(String),
    ReadFailed(io::Error),
}

/// Reads the file header: the format, or why this is not a capture.
fn read_header<B: Blocks>(feed: &mut Feed<B>, path: &str) -> Result<Format, Error> {
    let fail = |reason: String| Error::NotACapture {
        path: path.to_owned(),
        reason,
    };
    let read_fail = |e: io::Error| fail(format!("could not read the file: {e}"));
    if !feed.fill(4).map_err(read_fail)? {
        return Err(fail(if feed.data().is_empty() {
            "the file is empty".to_owned()
        } else {
            "not a pcap or pcapng capture".to_owned()
        }));
    }
    if feed.data().get(..4) == Some(&SHB_TYPE[..]) {
        let probe = Format::Pcapng { big_endian: false };
        let need = match probe.record_len(feed.data()) {
            Ok(len) => len.min(MAX_RECORD_BUFFER),
            Err(header) => header,
        };
        feed.fill(need).map_err(read_fail)?;
        return match parse_sectionheaderblock(feed.data()) {
            Ok((_, shb)) => Ok(Format::Pcapng {
                big_endian: shb.big_endian(),
            }),
            Err(nom::Err::Incomplete(_)) => Err(fail("the capture header is cut short".into())),
            Err(nom::Err::Error(e) | nom::Err::Failure(e)) => {
                Err(fail(format!("the capture header is invalid ({e})")))
            }
        };
    }
    feed.fill(24).map_err(read_fail)?;
    match parse_pcap_header(feed.data()) {
        Ok((_, header)) => {
            let format = Format::Pcap {
                link_type: header.network,
                nano: header.is_nanosecond_precision(),
                snaplen: header.snaplen,
                big_endian: header.is_bigendian(),
                modified: header.is_modified_format(),
            };
            feed.consume(header.size());
            Ok(format)
        }
        Err(nom::Err::Incomplete(_)) => Err(fail("the capture header is cut short".into())),
        Err(nom::Err::Error(PcapError::HeaderNotRecognized)) => {
            Err(fail("not a pcap or pcapng capture".into()))
        }
        Err(nom::Err::Error(e) | nom::Err::Failure(e)) => {
            Err(fail(format!("the capture header is invalid ({e})")))
        }
    }
}

/// A parse failure of a record whose bytes are all there.
fn parse_stop(e: nom::Err<PcapError<&[u8]>>) -> Stop {
    match e {
        nom::Err::Incomplete(_) => Stop::Truncated,
        nom::Err::Error(e) | nom::Err::Failure(e) => Stop::Corrupt(e.to_string()),
    }
}

/// The link types pidshark names: their LINKTYPE_ names without the prefix.
pub const LINK_TYPE_NAMES: [(i32, &str); 8] = [
    (0, "NULL"),
    (1, "ETHERNET"),
    (101, "RAW"),
    (108, "LOOP"),
    (113, "LINUX_SLL"),
    (228, "IPV4"),
    (229, "IPV6"),
    (276, "LINUX_SLL2"),
];

/// LINKTYPE_ name without the prefix, as the report names link types: one of
/// [`LINK_TYPE_NAMES`], or `LINKTYPE_<number>`.
pub fn link_type_name(link_type: Linktype) -> String {
    LINK_TYPE_NAMES
        .iter()
        .find(|(number, _)| *number == link_type.0)
        .map_or_else(
            || format!("LINKTYPE_{}", link_type.0),
            |(_, name)| (*name).to_owned(),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Input lent in blocks of `size` bytes.
    struct Fixed {
        data: Vec<u8>,
        size: usize,
        at: Option<usize>,
    }

    impl Blocks for Fixed {
        fn advance(&mut self) -> io::Result<bool> {
            let next = self.at.map_or(0, |at| at + self.size);
            self.at = Some(next.min(self.data.len()));
            Ok(next < self.data.len())
        }
        fn current(&self) -> &[u8] {
            let at = self.at.unwrap_or(self.data.len());
            let end = (at + self.size).min(self.data.len());
            self.data.get(at..end).unwrap_or_default()
        }
    }

    /// Records of 100 bytes over blocks of 1,000 and of 64: each comes out whole, in
    /// order, and one that spans blocks is gathered from the bytes it needs alone (the
    /// block after it is not copied whole).
    #[test]
    fn a_record_across_blocks_is_gathered_from_its_own_bytes() {
        let data: Vec<u8> = (0..5_000u32).map(|i| (i % 251) as u8).collect();
        for size in [1_000, 64, 7] {
            let mut feed = Feed::new(Fixed {
                data: data.clone(),
                size,
                at: None,
            });
            let mut read = Vec::new();
            while feed.fill(100).unwrap() {
                read.extend_from_slice(&feed.data()[..100]);
                assert!(feed.carry.len() <= 100, "{size}: {}", feed.carry.len());
                feed.consume(100);
            }
            assert_eq!(read, data, "{size}");
            assert_eq!(feed.offset, 5_000);
        }
    }

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
