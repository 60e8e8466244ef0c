#!/usr/bin/env python3
"""Make pidshark's capture-variant fixtures (issue #3) in fixtures/variants/.

Two kinds of file come out:

A. Real captures of a small controller scenario, recorded by real tools while the
   script plays a Kafka controller and brokers on loopback: several tcpdump and
   dumpcap processes record the same run (`-i lo`, `-i any`, nanosecond
   timestamps, a short snaplen, pcapng), plus two captures started after their
   connection was up (one of them in the middle of a 100 KB Produce request).
B. Rewritten copies of those captures (and of ../controller-loopback.pcap):
   packets dropped, swapped, duplicated, retransmitted with different bytes,
   VLAN/QinQ-tagged, big-endian, gzip, rotated into two files, one-sided,
   sequence numbers across 2^32, other link types.

Each capture gets `<name>.truth.json` (name = file name without .pcap, .pcapng or
.pcap.gz), in the format of ../*.truth.json plus fields described in
fixtures/README.md ("Variants"). The truth is worked out from what the script sent
(or from the clean capture a copy was made from) and which of those bytes the
capture really holds; it is then checked against an independent reassembler in
this script, against scripts/make-loopback-fixtures.py's decoder where that one
applies (in-order, lossless captures), and Wireshark's view is recorded.

Usage (as root; tcpdump, dumpcap, tshark, capinfos and mergecap needed):

    python3 scripts/make-variant-fixtures.py [--out DIR]

Every run overwrites the files it makes (and only those); timestamps and ephemeral
ports change. Python 3.11, standard library only.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True  # no scripts/__pycache__ from the import below


def _load_loopback_module():
    """scripts/make-loopback-fixtures.py as a module (its name has dashes)."""
    spec = importlib.util.spec_from_file_location("make_loopback_fixtures", HERE / "make-loopback-fixtures.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader
    spec.loader.exec_module(mod)
    return mod


lf = _load_loopback_module()

MADE_BY = "scripts/make-variant-fixtures.py"
PORT = 19095  # the controller port of every capture recorded here
SNAPLEN = 128
WRAP = 1 << 32

LINKTYPES = {0: "NULL", 1: "ETHERNET", 101: "RAW", 108: "LOOP", 113: "LINUX_SLL", 228: "IPV4",
             229: "IPV6", 276: "LINUX_SLL2"}

# ---------------------------------------------------------------------------
# capture files: read (pcap LE/BE us/ns, pcapng, gzip) and write


@dataclass
class Rec:
    """One packet record. `ts` is in nanoseconds since the epoch."""
    ts: int
    data: bytes
    orig_len: int
    linktype: int
    iface: int = 0
    tsres: int = 6  # decimal digits the file keeps: 6 (us) or 9 (ns)


@dataclass
class CapFile:
    format: str  # "pcap" or "pcapng"
    recs: list[Rec]
    byte_order: str = "little"
    gzip: bool = False
    ifaces: list[dict] = field(default_factory=list)


def read_capture(raw: bytes) -> CapFile:
    gz = raw[:2] == b"\x1f\x8b"
    if gz:
        raw = gzip.decompress(raw)
    if raw[:4] == b"\x0a\x0d\x0d\x0a":
        cap = _read_pcapng(raw)
    else:
        cap = _read_pcap(raw)
    cap.gzip = gz
    return cap


def _read_pcap(data: bytes) -> CapFile:
    magics = {b"\xd4\xc3\xb2\xa1": ("<", 6), b"\x4d\x3c\xb2\xa1": ("<", 9),
              b"\xa1\xb2\xc3\xd4": (">", 6), b"\xa1\xb2\x3c\x4d": (">", 9)}
    if data[:4] not in magics:
        raise ValueError("not a pcap file")
    e, res = magics[data[:4]]
    linktype = struct.unpack(e + "I", data[20:24])[0] & 0x0FFFFFFF
    recs, off = [], 24
    while off + 16 <= len(data):
        sec, frac, incl, orig = struct.unpack(e + "IIII", data[off:off + 16])
        if off + 16 + incl > len(data):
            break
        ts = sec * 10**9 + frac * (1000 if res == 6 else 1)
        recs.append(Rec(ts, data[off + 16:off + 16 + incl], orig, linktype, 0, res))
        off += 16 + incl
    return CapFile("pcap", recs, "little" if e == "<" else "big")


def _options(body: bytes, e: str) -> dict[int, bytes]:
    out, off = {}, 0
    while off + 4 <= len(body):
        code, ln = struct.unpack(e + "HH", body[off:off + 4])
        if code == 0:
            break
        out.setdefault(code, body[off + 4:off + 4 + ln])
        off += 4 + ln + (-ln % 4)
    return out


def _read_pcapng(data: bytes) -> CapFile:
    e, ifaces, recs, off, order = "<", [], [], 0, "little"
    while off + 12 <= len(data):
        if data[off:off + 4] == b"\x0a\x0d\x0d\x0a":
            e = "<" if data[off + 8:off + 12] == b"\x4d\x3c\x2b\x1a" else ">"
            order = "little" if e == "<" else "big"
            ifaces = []
        btype, blen = struct.unpack(e + "II", data[off:off + 8])
        if blen < 12 or off + blen > len(data):
            break
        body = data[off + 8:off + blen - 4]
        if btype == 1:  # IDB
            linktype, _, snaplen = struct.unpack(e + "HHI", body[:8])
            opts = _options(body[8:], e)
            res_b = opts.get(9, b"\x06")[0]
            assert not res_b & 0x80, "binary if_tsresol not handled"
            tsoff = struct.unpack(e + "q", opts[14])[0] if 14 in opts else 0
            ifaces.append({"linktype": linktype, "tsresol": res_b, "tsoffset": tsoff, "snaplen": snaplen,
                           "name": opts.get(2, b"").decode(errors="replace")})
        elif btype == 6:  # EPB
            iface, hi, lo, incl, orig = struct.unpack(e + "IIIII", body[:20])
            idb = ifaces[iface]
            units = (hi << 32) | lo
            res = idb["tsresol"]
            ts = units * 10**(9 - res) if res <= 9 else units // 10**(res - 9)
            recs.append(Rec(ts + idb["tsoffset"] * 10**9, body[20:20 + incl], orig, idb["linktype"], iface, res))
        elif btype == 3:  # SPB
            (orig,) = struct.unpack(e + "I", body[:4])
            idb = ifaces[0]
            incl = min(orig, idb["snaplen"] or orig)
            recs.append(Rec(recs[-1].ts if recs else 0, body[4:4 + incl], orig, idb["linktype"], 0, idb["tsresol"]))
        off += blen
    return CapFile("pcapng", recs, order, ifaces=ifaces)


def pcap_bytes(recs: list[Rec], linktype: int, endian: str = "<", nano: bool = False,
               snaplen: int = 262144) -> bytes:
    out = bytearray(struct.pack(endian + "IHHiIII", 0xA1B23C4D if nano else 0xA1B2C3D4, 2, 4, 0, 0,
                                snaplen, linktype))
    for r in recs:
        assert r.linktype == linktype, (r.linktype, linktype)
        sec, ns = divmod(r.ts, 10**9)
        if not nano:
            assert ns % 1000 == 0, "nanosecond timestamp in a microsecond file"
        out += struct.pack(endian + "IIII", sec, ns if nano else ns // 1000, len(r.data), r.orig_len)
        out += r.data
    return bytes(out)


def _block(btype: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    n = len(body) + 12
    return struct.pack("<II", btype, n) + body + struct.pack("<I", n)


def _opt(code: int, value: bytes) -> bytes:
    return struct.pack("<HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


def pcapng_bytes(ifaces: list[dict], recs: list[Rec]) -> bytes:
    """Little-endian pcapng: one SHB, one IDB per entry of `ifaces`
    (linktype, tsresol (decimal digits), name, snaplen), one EPB per record."""
    out = bytearray(_block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)
                           + _opt(4, MADE_BY.encode()) + _opt(0, b"")))
    for i in ifaces:
        out += _block(1, struct.pack("<HHI", i["linktype"], 0, i.get("snaplen", 262144))
                      + _opt(2, i["name"].encode()) + _opt(9, bytes([i["tsresol"]])) + _opt(0, b""))
    for r in recs:
        res = ifaces[r.iface]["tsresol"]
        assert ifaces[r.iface]["linktype"] == r.linktype
        units, rest = divmod(r.ts, 10**(9 - res))
        assert rest == 0, "timestamp finer than the interface's if_tsresol"
        out += _block(6, struct.pack("<IIIII", r.iface, units >> 32, units & 0xFFFFFFFF, len(r.data), r.orig_len)
                      + r.data)
    return bytes(out)


# ---------------------------------------------------------------------------
# link, IP and TCP layers


def l3_offset(linktype: int, data: bytes) -> tuple[int, int] | None:
    """(offset of the IP header, 4 or 6) for the link types pidshark reads."""
    if linktype == 1:  # Ethernet, with any number of 802.1Q / 802.1ad tags
        off = 12
        et = struct.unpack(">H", data[off:off + 2])[0]
        while et in (0x8100, 0x88A8, 0x9100):
            off += 4
            et = struct.unpack(">H", data[off:off + 2])[0]
        off += 2
    elif linktype == 113:  # Linux cooked v1: protocol at 14, 16-byte header
        et, off = struct.unpack(">H", data[14:16])[0], 16
    elif linktype == 276:  # Linux cooked v2: protocol at 0, 20-byte header
        et, off = struct.unpack(">H", data[0:2])[0], 20
    elif linktype in (101, 228, 229):
        return (0, data[0] >> 4) if data and data[0] >> 4 in (4, 6) else None
    elif linktype in (0, 108):
        af_le, af_be = struct.unpack("<I", data[:4])[0], struct.unpack(">I", data[:4])[0]
        af = af_be if linktype == 108 or af_be in (2, 10, 24, 28, 30) else af_le
        return (4, 4) if af == 2 else (4, 6) if af in (10, 24, 28, 30) else None
    else:
        return None
    return (off, 4) if et == 0x0800 else (off, 6) if et == 0x86DD else None


@dataclass
class Tcp:
    frame: int          # 1-based record number
    src: str            # "ip:port" / "[ip]:port"
    dst: str
    seq: int
    ack: int
    flags: int
    payload: bytes      # captured payload bytes (may be cut short by the snaplen)
    wire_len: int       # payload length on the wire, from the IP header
    ip_off: int
    tcp_off: int
    payload_off: int

    @property
    def syn(self) -> bool:
        return bool(self.flags & 0x02)

    @property
    def fin(self) -> bool:
        return bool(self.flags & 0x01)


def parse_tcp(rec: Rec, frame: int) -> Tcp | None:
    lo = l3_offset(rec.linktype, rec.data)
    if lo is None:
        return None
    ip_off, ver = lo
    d = rec.data
    if ver == 4:
        ihl = (d[ip_off] & 0x0F) * 4
        total = struct.unpack(">H", d[ip_off + 2:ip_off + 4])[0]
        if d[ip_off + 9] != 6:
            return None
        fam, sa, da = socket.AF_INET, d[ip_off + 12:ip_off + 16], d[ip_off + 16:ip_off + 20]
        tcp_off, ip_end = ip_off + ihl, ip_off + total
    else:
        plen = struct.unpack(">H", d[ip_off + 4:ip_off + 6])[0]
        if d[ip_off + 6] != 6:
            return None
        fam, sa, da = socket.AF_INET6, d[ip_off + 8:ip_off + 24], d[ip_off + 24:ip_off + 40]
        tcp_off, ip_end = ip_off + 40, ip_off + 40 + plen
    sport, dport, seq, ack = struct.unpack(">HHII", d[tcp_off:tcp_off + 12])
    doff = (d[tcp_off + 12] >> 4) * 4
    flags = d[tcp_off + 13]
    pay_off = tcp_off + doff
    src = lf.fmt_addr((socket.inet_ntop(fam, sa), sport))
    dst = lf.fmt_addr((socket.inet_ntop(fam, da), dport))
    return Tcp(frame, src, dst, seq, ack, flags, d[pay_off:min(ip_end, len(d))], ip_end - pay_off,
               ip_off, tcp_off, pay_off)


def _csum(b: bytes) -> int:
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def _tcp_checksums(data: bytes, ip_off: int, tcp_off: int, ver: int) -> tuple[int, int, int]:
    """(field, full checksum, partial checksum) of a packet's TCP header. Loopback captures
    carry the partial one (CHECKSUM_PARTIAL: the pseudo-header sum, not complemented)."""
    if ver == 4:
        total = struct.unpack(">H", data[ip_off + 2:ip_off + 4])[0]
        seg = data[tcp_off:ip_off + total]
        ph = data[ip_off + 12:ip_off + 20] + b"\0\x06" + struct.pack(">H", len(seg))
    else:
        plen = struct.unpack(">H", data[ip_off + 4:ip_off + 6])[0]
        seg = data[tcp_off:ip_off + 40 + plen]
        ph = data[ip_off + 8:ip_off + 40] + struct.pack(">IxxxB", len(seg), 6)
    fieldv = struct.unpack(">H", seg[16:18])[0]
    full = (~_csum(ph + seg[:16] + b"\0\0" + seg[18:])) & 0xFFFF
    return fieldv, full, _csum(ph)


def rewrite_tcp(rec: Rec, seq: int | None = None, ack: int | None = None,
                payload: bytes | None = None) -> Rec:
    """Copy of an (uncut) packet with seq, ack and/or payload replaced; IP lengths and the
    IPv4 header checksum follow, and the TCP checksum is redone in the convention the
    original used (full, or the loopback's partial one); any other value is left alone."""
    ip_off, ver = l3_offset(rec.linktype, rec.data)
    t = parse_tcp(rec, 0)
    assert t and len(t.payload) == t.wire_len, "rewrite of a cut packet"
    old_field, old_full, old_partial = _tcp_checksums(rec.data, ip_off, t.tcp_off, ver)
    d = bytearray(rec.data[:t.payload_off] + (t.payload if payload is None else payload))
    if seq is not None:
        d[t.tcp_off + 4:t.tcp_off + 8] = struct.pack(">I", seq % WRAP)
    if ack is not None:
        d[t.tcp_off + 8:t.tcp_off + 12] = struct.pack(">I", ack % WRAP)
    if ver == 4:
        d[ip_off + 2:ip_off + 4] = struct.pack(">H", len(d) - ip_off)
        ihl = (d[ip_off] & 0x0F) * 4
        d[ip_off + 10:ip_off + 12] = b"\0\0"
        d[ip_off + 10:ip_off + 12] = struct.pack(">H", (~_csum(bytes(d[ip_off:ip_off + ihl]))) & 0xFFFF)
    else:
        d[ip_off + 4:ip_off + 6] = struct.pack(">H", len(d) - ip_off - 40)
    _, full, partial = _tcp_checksums(bytes(d), ip_off, t.tcp_off, ver)
    if old_field == old_full:
        d[t.tcp_off + 16:t.tcp_off + 18] = struct.pack(">H", full)
    elif old_field == old_partial:
        d[t.tcp_off + 16:t.tcp_off + 18] = struct.pack(">H", partial)
    return replace(rec, data=bytes(d), orig_len=len(d))


def tcp_option_kinds(rec: Rec) -> set[int]:
    t = parse_tcp(rec, 0)
    opts, kinds, i = rec.data[t.tcp_off + 20:t.payload_off], set(), 0
    while i < len(opts):
        k = opts[i]
        if k == 0:
            break
        if k == 1:
            i += 1
            continue
        kinds.add(k)
        i += opts[i + 1]
    return kinds


def relink(rec: Rec, linktype: int, header: bytes) -> Rec:
    """Replace the link-layer header (everything before IP) with `header`."""
    ip_off, _ = l3_offset(rec.linktype, rec.data)
    return replace(rec, data=header + rec.data[ip_off:], orig_len=rec.orig_len - ip_off + len(header),
                   linktype=linktype)


def ip_version(rec: Rec) -> int:
    return l3_offset(rec.linktype, rec.data)[1]


def to_ethernet(rec: Rec) -> Rec:
    """Any link type as plain Ethernet (zero MACs), for make-loopback-fixtures.py's decoder."""
    et = b"\x08\x00" if ip_version(rec) == 4 else b"\x86\xdd"
    return replace(relink(rec, 1, b"\0" * 12 + et), iface=0)


def vlan_tag(tpid: int, vid: int) -> bytes:
    return struct.pack(">HH", tpid, vid & 0x0FFF)
