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


# ---------------------------------------------------------------------------
# recording with tcpdump and dumpcap


class Recorder:
    """One tcpdump or dumpcap process writing `path`; start() returns once it captures."""

    def __init__(self, path: Path, argv: list[str], what: str):
        self.path, self.argv, self.what = path, argv, what
        self.proc: subprocess.Popen | None = None
        self.lines: list[str] = []
        self._ready = threading.Event()

    @classmethod
    def tcpdump(cls, path: Path, iface: str, *extra: str, port: int = PORT) -> "Recorder":
        tool = shutil.which("tcpdump") or sys.exit("tcpdump not found (apt-get install -y tcpdump)")
        # as make-loopback-fixtures.py: -Z root to write anywhere, --immediate-mode so that
        # nothing is left in the kernel's ring when SIGINT comes
        argv = [tool, "-i", iface, "-U", "--immediate-mode", "-n", "-Z", "root", *extra,
                "-w", str(path), f"tcp port {port}"]
        shown = ["tcpdump", "-i", iface, *extra, "-w", path.name, f"'tcp port {port}'"]
        return cls(path, argv, " ".join(shown))

    @classmethod
    def dumpcap(cls, path: Path, ifaces: list[str], port: int = PORT) -> "Recorder":
        tool = shutil.which("dumpcap") or sys.exit("dumpcap not found (apt-get install -y wireshark-common)")
        argv = [tool, "-q"]
        for i in ifaces:  # a capture filter applies to the -i before it
            argv += ["-i", i, "-f", f"tcp port {port}"]
        shown = ["dumpcap"] + [x for i in ifaces for x in ("-i", i, "-f", f"'tcp port {port}'")]
        return cls(path, argv + ["-w", str(path)], " ".join(shown + ["-w", path.name]))

    def _read(self) -> None:
        assert self.proc and self.proc.stderr
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))
            if "listening on" in line or "Capturing on" in line:
                self._ready.set()

    def start(self) -> "Recorder":
        if self.path.exists():
            self.path.unlink()
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._read, daemon=True).start()
        if not self._ready.wait(15):
            self.proc.kill()
            sys.exit(f"{self.what} did not start: {' '.join(self.lines)}")
        time.sleep(0.3)
        return self

    def stop(self) -> None:
        assert self.proc
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        time.sleep(0.1)
        drops = [int(n) for n in re.findall(r"(\d+) packets dropped by kernel", "\n".join(self.lines))]
        drops += [int(d) for _, d in re.findall(r"received/dropped on interface '[^']*': (\d+)/(\d+)",
                                                "\n".join(self.lines))]
        if any(drops):
            sys.exit(f"{self.what} dropped packets: {self.lines}")
        if not self.path.exists():
            sys.exit(f"{self.what} wrote nothing: {self.lines}")


def stop_all(recorders: list[Recorder]) -> None:
    time.sleep(0.5)  # the last FIN/ACKs
    for r in recorders:
        r.stop()


# ---------------------------------------------------------------------------
# the scenarios: what each side sent, byte for byte


@dataclass
class RefConn:
    """One TCP connection as it was sent: the client's and the server's byte streams."""
    client: str
    server: str
    c2s: bytes = b""
    s2c: bytes = b""


class Conv:
    """Sends on a connection and keeps a copy of every byte, per direction."""

    def __init__(self):
        self.c2s, self.s2c = bytearray(), bytearray()

    def csend(self, sock, data: bytes) -> None:
        self.c2s += data
        lf.send(sock, data)

    def ssend(self, sock, data: bytes) -> None:
        self.s2c += data
        lf.send(sock, data)


def run_conv(lsock, conv: Conv, server, client, family, host) -> RefConn:
    caddr, saddr = lf.one_connection(lsock, server, client, family, host, PORT)
    return RefConn(caddr, saddr, bytes(conv.c2s), bytes(conv.s2c))


def listeners():
    return lf.listener(socket.AF_INET, "127.0.0.1", PORT), lf.listener(socket.AF_INET6, "::1", PORT)


def block(start: int, **kw) -> dict:
    return {"throttle": 0, "error": lf.NONE, "start": start, "len": 1000, **kw}


LONG_TAG = b"snaplen-cuts-this-forty-byte-tag-#######"
assert len(LONG_TAG) == 40


def controller_scenario() -> tuple[list[RefConn], list]:
    """Four brokers, one after another, eleven AllocateProducerIds exchanges (see README)."""
    ls4, ls6 = listeners()
    refs, apids = [], []
    try:
        # A: broker 1: ApiVersions, APID 1, APID 2 in two writes, Heartbeat, APID 4
        cv = Conv()
        a = [lf.Apid(1, "broker-1", 1, 42, response=block(0)),
             lf.Apid(2, "broker-1", 1, 42, response=block(1000)),
             lf.Apid(4, "broker-1", 1, 42, response=block(2000))]
        av_req, av_resp = lf.api_versions_v3_request(0, "broker-1"), lf.api_versions_v3_response(0)
        hb_req, hb_resp = lf.heartbeat_v3_request(3, "broker-1"), lf.heartbeat_v3_response(3)

        def server_a(conn):
            lf.expect(conn, av_req); cv.ssend(conn, av_resp)
            for ex in a[:2]:
                lf.expect(conn, ex.request_bytes()); cv.ssend(conn, ex.response_bytes())
            lf.expect(conn, hb_req); cv.ssend(conn, hb_resp)
            lf.expect(conn, a[2].request_bytes()); cv.ssend(conn, a[2].response_bytes())
            lf.wait_eof(conn)

        def client_a(c):
            cv.csend(c, av_req); lf.expect(c, av_resp)
            cv.csend(c, a[0].request_bytes()); lf.expect(c, a[0].response_bytes())
            req = a[1].request_bytes()
            cv.csend(c, req[:6]); cv.csend(c, req[6:])  # size + api key, then the rest
            lf.expect(c, a[1].response_bytes())
            cv.csend(c, hb_req); lf.expect(c, hb_resp)
            cv.csend(c, a[2].request_bytes()); lf.expect(c, a[2].response_bytes())

        refs.append(run_conv(ls4, cv, server_a, client_a, socket.AF_INET, "127.0.0.1"))
        apids.append(a)

        # B: broker 2, null client id: 10 and 11 in one write, answered 11 then 10 in one write; 12
        cv_b = Conv()
        b = [lf.Apid(10, None, 2, 7, response=block(3000)),
             lf.Apid(11, None, 2, 7, response=block(4000)),
             lf.Apid(12, None, 2, 7, response={"throttle": 0, "error": lf.NOT_CONTROLLER, "start": -1, "len": 0})]

        def server_b(conn):
            lf.expect(conn, b[0].request_bytes()); lf.expect(conn, b[1].request_bytes())
            cv_b.ssend(conn, b[1].response_bytes() + b[0].response_bytes())
            lf.expect(conn, b[2].request_bytes()); cv_b.ssend(conn, b[2].response_bytes())
            lf.wait_eof(conn)

        def client_b(c):
            cv_b.csend(c, b[0].request_bytes() + b[1].request_bytes())
            lf.expect(c, b[1].response_bytes()); lf.expect(c, b[0].response_bytes())
            cv_b.csend(c, b[2].request_bytes()); lf.expect(c, b[2].response_bytes())

        refs.append(run_conv(ls4, cv_b, server_b, client_b, socket.AF_INET, "127.0.0.1"))
        apids.append(b)

        # C: broker 3: a long request (20), a long response (21), then a short exchange (22)
        cv_c = Conv()
        c_ex = [lf.Apid(20, "broker-3", 3, 13, header_tags=[(0, bytes.fromhex("aabbcc")), (5, b"\x01")],
                        body_tags=[(1, LONG_TAG)],
                        response=block(5000, throttle=25, header_tags=[(0, bytes.fromhex("0102"))],
                                       body_tags=[(3, bytes.fromhex("deadbeef")), (7, b"")])),
                lf.Apid(21, "broker-3", 3, 13, response=block(6000, body_tags=[(2, LONG_TAG)])),
                lf.Apid(22, "broker-3", 3, 13, response=block(7000))]

        def server_c(conn):
            for ex in c_ex:
                lf.expect(conn, ex.request_bytes()); cv_c.ssend(conn, ex.response_bytes())
            lf.wait_eof(conn)

        def client_c(c):
            for ex in c_ex:
                cv_c.csend(c, ex.request_bytes()); lf.expect(c, ex.response_bytes())

        refs.append(run_conv(ls4, cv_c, server_c, client_c, socket.AF_INET, "127.0.0.1"))
        apids.append(c_ex)

        # D: broker 4 over IPv6: STALE_BROKER_EPOCH, then a request never answered
        cv_d = Conv()
        d = [lf.Apid(30, "broker-4", 4, 3, response={"throttle": 0, "error": lf.STALE_BROKER_EPOCH,
                                                     "start": -1, "len": 0}),
             lf.Apid(31, "broker-4", 4, 3, response=None)]

        def server_d(conn):
            lf.expect(conn, d[0].request_bytes()); cv_d.ssend(conn, d[0].response_bytes())
            lf.expect(conn, d[1].request_bytes())
            lf.wait_eof(conn)

        def client_d(c):
            cv_d.csend(c, d[0].request_bytes()); lf.expect(c, d[0].response_bytes())
            cv_d.csend(c, d[1].request_bytes())
            time.sleep(0.2)

        refs.append(run_conv(ls6, cv_d, server_d, client_d, socket.AF_INET6, "::1"))
        apids.append(d)
    finally:
        ls4.close()
        ls6.close()
    for ref, exs in zip(refs, apids):
        for ex in exs:
            ex.client_addr, ex.server_addr = ref.client, ref.server
    return refs, [ex for exs in apids for ex in exs]


def midstream_scenario(rec: Recorder) -> tuple[list[RefConn], list]:
    """Broker 5: ApiVersions and APID 40, then the capture starts; APID 41, 42, Heartbeat 43, APID 44."""
    ls4, ls6 = listeners()
    cv = Conv()
    ex = {n: lf.Apid(n, "broker-5", 5, 9, response=block(10000 + 1000 * (n - 40))) for n in (40, 41, 42, 44)}
    av = (lf.api_versions_v3_request(0, "broker-5"), lf.api_versions_v3_response(0))
    hb = (lf.heartbeat_v3_request(43, "broker-5"), lf.heartbeat_v3_response(43))
    plan = [av, (ex[40].request_bytes(), ex[40].response_bytes()), None,
            (ex[41].request_bytes(), ex[41].response_bytes()), (ex[42].request_bytes(), ex[42].response_bytes()),
            hb, (ex[44].request_bytes(), ex[44].response_bytes())]
    capturing = threading.Event()

    def server(conn):
        for step in plan:
            if step:
                lf.expect(conn, step[0]); cv.ssend(conn, step[1])
        lf.wait_eof(conn)

    def client(c):
        for step in plan:
            if step is None:  # the connection is up and two exchanges are done: start capturing
                rec.start()
                capturing.set()
                continue
            cv.csend(c, step[0]); lf.expect(c, step[1])

    try:
        ref = run_conv(ls4, cv, server, client, socket.AF_INET, "127.0.0.1")
    finally:
        ls4.close()
        ls6.close()
    assert capturing.is_set()
    for e in ex.values():
        e.client_addr, e.server_addr = ref.client, ref.server
    return [ref], [ex[n] for n in (40, 41, 42, 44)]


def produce_v9_request_with(corr: int, client_id: str, value: bytes) -> bytes:
    """make-loopback-fixtures.py's Produce v9 request, with a given record value."""
    records = lf.record_batch(value, 1_700_000_000_000)
    partition = lf.i32(0) + lf.uvarint(len(records) + 1) + records + lf.tagged([])
    topic = lf.compact_string(lf.PRODUCE_TOPIC) + lf.compact_array([partition]) + lf.tagged([])
    return lf.frame(lf.req_header_v2(0, 9, corr, client_id) + lf.compact_string(None) + lf.i16(-1)
                    + lf.i32(30000) + lf.compact_array([topic]) + lf.tagged([]))


INSIDE_CHUNK = 10_000
INSIDE_BEFORE = 4  # chunks sent before the capture starts


def lax_plausible_header(buf: bytes, i: int) -> bool:
    """A very lax "could a Kafka request or response start here" (to keep the Produce filler
    free of look-alikes): size 4..16 MiB, and either a request key 0..99 with version 0..30
    or anything as a response."""
    size, key, ver = struct.unpack(">ihh", buf[i:i + 8])
    return 4 <= size <= 1 << 24 and (0 <= key < 100 and 0 <= ver <= 30)


def inside_request_scenario(rec: Recorder) -> tuple[list[RefConn], list]:
    """Broker 6: ApiVersions, then a ~100 KB Produce request written in 10 KB chunks; the
    capture starts after 4 of them; then the Produce response, APID 2, 3, Heartbeat 4, APID 5."""
    ls4, ls6 = listeners()
    cv = Conv()
    seed = 20241103
    while True:  # random record value with no plausible frame header anywhere in it
        value = random.Random(seed).randbytes(100_000)
        if not any(lax_plausible_header(value, i) for i in range(len(value) - 8)):
            break
        seed += 1
    produce = produce_v9_request_with(1, "broker-6", value)
    produce_resp = lf.produce_v9_response(1)
    ex = {n: lf.Apid(n, "broker-6", 6, 11, response=block(20000 + 1000 * n)) for n in (2, 3, 5)}
    av = (lf.api_versions_v3_request(0, "broker-6"), lf.api_versions_v3_response(0))
    hb = (lf.heartbeat_v3_request(4, "broker-6"), lf.heartbeat_v3_response(4))
    after = [(ex[2].request_bytes(), ex[2].response_bytes()), (ex[3].request_bytes(), ex[3].response_bytes()),
             hb, (ex[5].request_bytes(), ex[5].response_bytes())]
    capturing = threading.Event()

    def server(conn):
        lf.expect(conn, av[0]); cv.ssend(conn, av[1])
        lf.expect(conn, produce); cv.ssend(conn, produce_resp)
        for q, r in after:
            lf.expect(conn, q); cv.ssend(conn, r)
        lf.wait_eof(conn)

    def client(c):
        cv.csend(c, av[0]); lf.expect(c, av[1])
        chunks = [produce[i:i + INSIDE_CHUNK] for i in range(0, len(produce), INSIDE_CHUNK)]
        for i, chunk in enumerate(chunks):
            if i == INSIDE_BEFORE:
                rec.start()  # the server is still waiting for the rest of the Produce request
                capturing.set()
            cv.csend(c, chunk)
        lf.expect(c, produce_resp)
        for q, r in after:
            cv.csend(c, q); lf.expect(c, r)

    try:
        ref = run_conv(ls4, cv, server, client, socket.AF_INET, "127.0.0.1")
    finally:
        ls4.close()
        ls6.close()
    assert capturing.is_set()
    for e in ex.values():
        e.client_addr, e.server_addr = ref.client, ref.server
    return [ref], [ex[n] for n in (2, 3, 5)]


def refs_from_clean_capture(recs: list[Rec]) -> list[RefConn]:
    """The byte streams of a complete, in-order capture, through make-loopback-fixtures.py's reader."""
    eth = pcap_bytes([to_ethernet(r) for r in recs], 1, nano=True)
    return [RefConn(c["client"], c["server"], bytes(c["data"][c["client"]]), bytes(c["data"][c["server"]]))
            for c in lf.tcp_streams(lf.pcap_records(eth))]
