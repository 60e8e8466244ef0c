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

To rebuild truth files after a change to the models below, without recording (no root;
tshark and mergecap needed):

    python3 scripts/make-variant-fixtures.py --retruth NAME [NAME...]   # e.g. snaplen

It reads the committed capture(s) of each NAME (the truth's `files`), takes what was sent
from the clean capture of the same run (base.pcap; ../controller-loopback.pcap for
`dropped`), runs the same checks (analysis, independent decoder, make-loopback-fixtures.py's
decoder, Wireshark) and writes only `<NAME>.truth.json`: the capture files are handed over
unchanged and must come out byte-identical. `recorded_with`/`source`/`rewrite` and the note
are kept from the old truth (snaplen's note is rebuilt). `midstream` and
`midstream-inside-request` cannot be retruthed: what was sent before their capture started
is in no file.
"""

from __future__ import annotations

import argparse
import atexit
import gzip
import importlib.util
import json
import os
import random
import re
import shlex
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
KNOWN_KEYS = {0, 12, 18, 67}  # the API keys the scenarios send
assert KNOWN_KEYS == set(lf.API_NAMES)

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
        # nothing is left in the kernel's ring when SIGINT comes. -B: in immediate mode libpcap
        # uses a TPACKET_V2 ring of snaplen-sized slots, only 8 of them in the default 2 MiB,
        # and on `any` each loopback packet takes two (the outgoing copy is dropped in user
        # space): the handshake and first exchange overflowed it.
        argv = [tool, "-i", iface, "-U", "--immediate-mode", "-B", "65536", "-n", "-Z", "root", *extra,
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
        self.path.chmod(0o644)  # dumpcap creates its file 0600


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
    """A very lax "could a Kafka request start here" (to keep the Produce filler free of
    look-alikes): size 4..16 MiB, API key 0..99, version 0..30."""
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


# ---------------------------------------------------------------------------
# ground truth: which of the sent bytes a capture holds, and what that leaves


@dataclass(eq=False)
class Msg:
    """A Kafka frame as sent: `off` is the offset of its size prefix in the sender's stream."""
    conn: int
    is_req: bool
    off: int
    body: bytes
    api: int | None
    corr: int
    peer: "Msg | None" = None

    @property
    def size(self) -> int:
        return 4 + len(self.body)

    @property
    def end(self) -> int:
        return self.off + self.size

    @property
    def head(self) -> int:
        """Bytes a reader needs to classify the frame and step over it by its size: size,
        key, version, correlation id and client-id length (requests: 14) or size and
        correlation id (responses: 8)."""
        return min(self.size, 14 if self.is_req else 8)

    def api_name(self) -> str:
        return lf.API_NAMES.get(self.api, f"Unknown({self.api})")


def split_frames(stream: bytes) -> list[tuple[int, bytes]]:
    out, off = [], 0
    for body in lf.kafka_frames(stream):
        out.append((off, body))
        off += 4 + len(body)
    assert off == len(stream), "a sent stream is not a whole number of Kafka frames"
    return out


def stream_messages(ref: RefConn, ci: int) -> tuple[list[Msg], list[Msg]]:
    reqs = []
    for off, body in split_frames(ref.c2s):
        key, _, corr = struct.unpack(">hhi", body[:8])
        reqs.append(Msg(ci, True, off, body, key, corr))
    resps = []
    for off, body in split_frames(ref.s2c):
        (corr,) = struct.unpack(">i", body[:4])
        m = Msg(ci, False, off, body, None, corr)
        req = next((r for r in reqs if r.corr == corr and r.peer is None), None)
        if req:
            m.peer, req.peer, m.api = req, m, req.api
        resps.append(m)
    return reqs, resps


def decode_apid(req: bytes, resp: bytes | None, client: str, server: str) -> dict:
    """One exchange in the truth format (the decoding of make-loopback-fixtures.py's
    decode_capture, for one request body and its response body)."""
    key, ver, corr, clen = struct.unpack(">hhih", req[:10])
    assert key == 67
    off, client_id = 10, None
    if clen >= 0:
        client_id = req[off:off + clen].decode()
        off += clen
    htags, off = lf.read_tags(req, off)
    broker_id, epoch = struct.unpack(">iq", req[off:off + 12])
    btags, end = lf.read_tags(req, off + 12)
    assert end == len(req), "trailing bytes in a request"
    response = None
    if resp is not None:
        rhtags, o = lf.read_tags(resp, 4)
        thr, err, start, ln = struct.unpack(">ihqi", resp[o:o + 18])
        rbtags, end = lf.read_tags(resp, o + 18)
        assert end == len(resp), "trailing bytes in a response"
        response = {"header_tagged_fields": lf.tags_json(rhtags), "throttle_time_ms": thr, "error_code": err,
                    "producer_id_start": start, "producer_id_len": ln, "tagged_fields": lf.tags_json(rbtags)}
    return {"client": client, "server": server, "correlation_id": corr,
            "request": {"api_version": ver, "client_id": client_id, "header_tagged_fields": lf.tags_json(htags),
                        "broker_id": broker_id, "broker_epoch": epoch, "tagged_fields": lf.tags_json(btags)},
            "response": response}


def apid_fields(body: bytes, is_req: bool) -> list[tuple[str, int, object]]:
    """The fields of a whole AllocateProducerIds message body as sent (v0, flexible), each
    as (truth name, offset in the body where its bytes end, value in the truth format)."""
    if is_req:
        ver, clen = struct.unpack(">h", body[2:4])[0], struct.unpack(">h", body[8:10])[0]
        off, client_id = 10, None
        if clen >= 0:
            client_id = body[off:off + clen].decode()
            off += clen
        out = [("api_version", 4, ver), ("client_id", off, client_id)]
        htags, off = lf.read_tags(body, off)
        out.append(("header_tagged_fields", off, lf.tags_json(htags)))
        out.append(("broker_id", off + 4, struct.unpack(">i", body[off:off + 4])[0]))
        out.append(("broker_epoch", off + 12, struct.unpack(">q", body[off + 4:off + 12])[0]))
        btags, end = lf.read_tags(body, off + 12)
        out.append(("tagged_fields", end, lf.tags_json(btags)))
    else:
        rhtags, o = lf.read_tags(body, 4)
        thr, err, start, ln = struct.unpack(">ihqi", body[o:o + 18])
        out = [("header_tagged_fields", o, lf.tags_json(rhtags)), ("throttle_time_ms", o + 4, thr),
               ("error_code", o + 6, err), ("producer_id_start", o + 14, start), ("producer_id_len", o + 18, ln)]
        rbtags, end = lf.read_tags(body, o + 18)
        out.append(("tagged_fields", end, lf.tags_json(rbtags)))
    assert end == len(body), "trailing bytes in a message"
    return out


def sent_message_truth(m: "Msg", cov: "Cover") -> dict:
    """The truth object of a counted AllocateProducerIds request or response: every field
    when the capture holds all its bytes; else only the fields whose bytes all lie before
    its first missing byte, and `bytes_not_captured` (its bytes not in the capture)."""
    fields = apid_fields(m.body, m.is_req)
    if cov.all(m.off, m.end):
        return {name: v for name, _, v in fields}
    before = cov.first_missing(m.off, m.end) - (m.off + 4)  # message bytes before the first hole
    out = {name: v for name, end, v in fields if end <= before}
    out["bytes_not_captured"] = m.size - cov.count(m.off, m.end)
    return out


class Cover:
    """Which bytes of one sent stream a capture holds: `first[i]` is the frame that first
    carried byte i (0: never), `seen[i]` the value it carried there."""

    def __init__(self, n: int):
        self.first = [0] * n
        self.seen = bytearray(n)
        self._pre: list[int] | None = None

    def done(self) -> None:
        pre = [0]
        for f in self.first:
            pre.append(pre[-1] + (f > 0))
        self._pre = pre

    def count(self, a: int, b: int) -> int:
        a, b = max(a, 0), min(b, len(self.first))
        return self._pre[b] - self._pre[a] if b > a else 0

    def all(self, a: int, b: int) -> bool:
        return self.count(a, b) == b - a

    def first_missing(self, a: int, b: int) -> int | None:
        return next((i for i in range(a, b) if not self.first[i]), None)

    def next_present(self, p: int) -> int:
        while p < len(self.first) and not self.first[p]:
            p += 1
        return p

    def holes(self, a: int, b: int) -> list[tuple[int, int]]:
        out, i = [], a
        while i < b:
            if i < len(self.first) and self.first[i]:
                i += 1
                continue
            j = i
            while j < b and (j >= len(self.first) or not self.first[j]):
                j += 1
            out.append((i, j))
            i = j
        return out


def signed32(v: int) -> int:
    v %= WRAP
    return v - WRAP if v >= WRAP // 2 else v


def decoys(stream: bytes, cov: "Cover", a: int, b: int, is_req: bool) -> list[dict]:
    """Offsets in [a, b) (the bytes a resyncing reader skips) whose captured bytes pass a
    check on length, API key, version and client-id length alone: a request scanner must
    also check the correlation id (or more) not to stop there."""
    out = []
    if not is_req:
        return out
    for p in range(a, b):
        if not cov.all(p, p + 14):
            continue
        size, key, ver, corr, clen = struct.unpack(">ihhih", stream[p:p + 14])
        if 10 <= size <= 1 << 24 and key in KNOWN_KEYS and 0 <= ver <= 20 and -1 <= clen <= size - 10:
            out.append({"offset": p, "size": size, "api_key": key, "api_version": ver, "correlation_id": corr,
                        "client_id_length": clen})
    return out


def _direction(segs: list[Tcp], stream: bytes, msgs: list[Msg], ci: int, side: str,
               counted: set[int], details: list[dict]) -> tuple[Cover, int]:
    """Coverage of one direction's sent stream by the captured segments; adds the
    diagnostics it implies to `details` and the frames a reader can count to `counted`.
    Returns the coverage and the offset where the capture's view of the stream starts."""
    cov = Cover(len(stream))
    syn = next((s for s in segs if s.syn), None)
    base = None
    if syn:
        base = syn.seq + 1
    else:  # no handshake: place the first segment whose bytes occur once in the stream
        for s in segs:
            if len(s.payload) >= 16 and stream.count(s.payload) == 1:
                base = s.seq - stream.index(s.payload)
                break
    fin_end = None
    for s in segs:
        if base is None:
            break
        off = signed32(s.seq - base)
        if s.fin:
            fin_end = max(fin_end or 0, off + s.wire_len)
        if not s.payload:
            continue
        assert 0 <= off and off + len(s.payload) <= len(stream), f"segment outside the stream ({s.frame})"
        differ = 0
        for k, byte in enumerate(s.payload):
            pos = off + k
            if cov.first[pos]:
                differ += cov.seen[pos] != byte
            else:
                assert byte == stream[pos], f"frame {s.frame}: byte {pos} is not what was sent"
                cov.first[pos], cov.seen[pos] = s.frame, byte
        if differ:
            details.append({"kind": "tcp_overlap_conflict", "connection": ci, "direction": side,
                            "frame": s.frame, "offset": off, "bytes_differing": differ})
    cov.done()
    present = [i for i, f in enumerate(cov.first) if f]
    if not present and fin_end is None:
        return cov, len(stream)
    start = 0 if syn else (present[0] if present else fin_end)
    end = max(fin_end or 0, (present[-1] + 1) if present else 0)  # what a reader knows was sent
    for a, b in cov.holes(start, end):
        details.append({"kind": "tcp_gap", "connection": ci, "direction": side, "offset": a, "bytes": b - a,
                        "next_frame": cov.first[b] if b < len(stream) else None})
    # Framing, as a reader that reads each frame's head (size and header prefix) and then
    # steps over the frame by its size: a gap inside a frame whose head is present costs
    # nothing, the frame is still counted (an AllocateProducerIds message is then known
    # only up to its first missing byte); a gap that runs on past the frame's end (or one
    # that takes the next frame's head) loses the framing after it. After a loss the
    # reader scans for the next frame whose head is present.
    lost, resume = all(m.off != start for m in msgs) and start < len(stream), start
    for m in msgs:
        if m.off < start:
            continue
        if lost:
            if m.off < resume or not cov.all(m.off, m.off + m.head):
                continue
            skipped = cov.count(resume, m.off)
            details.append({"kind": "kafka_resync", "connection": ci, "direction": side,
                            "frame": cov.first[m.off], "offset": m.off, "bytes_skipped": skipped,
                            "resumed_at": {"api": m.api_name() if m.api is not None else None,
                                           "correlation_id": m.corr},
                            "decoys": decoys(stream, cov, resume, m.off, m.is_req)}
                           | ({"optional": True} if skipped == 0 else {}))
            lost = False
        if cov.all(m.off, m.end):
            counted.add(id(m))
            continue
        if m.end <= end and cov.all(m.off, m.off + m.head):
            # stepped over by its size; its end is known (later bytes or the FIN)
            counted.add(id(m))
            if m.api == 67 and (m.is_req or id(m.peer) in counted):
                # decoded, up to its first missing byte
                details.append({"kind": "kafka_message_truncated", "connection": ci, "direction": side,
                                "frame": max(cov.first[m.off:m.end]), "correlation_id": m.corr,
                                "size": m.size, "bytes_decoded": cov.first_missing(m.off, m.end) - m.off - 4,
                                "bytes_not_captured": m.size - cov.count(m.off, m.end)})
            if m.end < len(stream) and not cov.first[m.end]:
                # the hole runs on past the frame's end: the next head is lost
                lost, resume = True, cov.next_present(m.end)
            continue
        lost = True
        resume = cov.next_present(cov.first_missing(m.off, m.end))
    return cov, start


def analyse(recs: list[Rec], refs: list[RefConn]) -> dict:
    """Truth for a capture (`recs`, frames numbered from 1 on) of connections sent as `refs`."""
    conns: dict[frozenset, dict] = {}
    order: list[dict] = []
    truncated = []
    for i, r in enumerate(recs):
        t = parse_tcp(r, i + 1)
        if t is None:
            continue
        if len(r.data) < r.orig_len:
            truncated.append({"kind": "packet_truncated", "frame": t.frame, "captured": len(r.data),
                              "on_wire": r.orig_len})
        key = frozenset((t.src, t.dst))
        c = conns.get(key)
        if c is None:
            ref_i = next(j for j, ref in enumerate(refs) if {ref.client, ref.server} == key)
            c = {"index": len(order), "ref": ref_i, "first": t, "segs": {True: [], False: []}}
            conns[key] = c
            order.append(c)
        c["segs"][t.src == refs[c["ref"]].client].append(t)

    details = list(truncated)
    exchanges, frames, partial = [], [], []
    counts: dict[str, dict] = {}
    unmatched = 0
    for c in order:
        ref = refs[c["ref"]]
        ci = c["index"]
        reqs, resps = stream_messages(ref, ci)
        if not c["first"].syn:
            details.append({"kind": "midstream_start", "connection": ci, "frame": c["first"].frame})
        counted: set[int] = set()
        state = {}
        for is_c2s, stream, msgs in ((True, ref.c2s, reqs), (False, ref.s2c, resps)):
            state[is_c2s] = _direction(c["segs"][is_c2s], stream, msgs, ci, "client" if is_c2s else "server",
                                       counted, details)
        (ccov, cstart), (scov, sstart) = state[True], state[False]
        for m in reqs + resps:
            cov, start = (ccov, cstart) if m.is_req else (scov, sstart)
            if (not cov.all(m.off, m.end)) and (id(m) in counted or m.end > start):
                partial.append({"connection": ci, "direction": "client" if m.is_req else "server",
                                "kind": "request" if m.is_req else "response",
                                "api": m.api_name() if m.api is not None else None, "correlation_id": m.corr,
                                "size": m.size, "bytes_present": cov.count(m.off, m.end),
                                "header_present": cov.all(m.off, m.off + m.head),
                                "counted": id(m) in counted})
        for m in reqs:
            if id(m) not in counted:
                continue
            ent = counts.setdefault(m.api_name(), {"api_key": m.api, "requests": 0, "responses": 0})
            ent["requests"] += 1
            resp = m.peer if m.peer is not None and id(m.peer) in counted else None
            if resp is not None:
                ent["responses"] += 1
            if m.api != 67:
                continue
            ex = {"client": ref.client, "server": ref.server, "correlation_id": m.corr,
                  "request": sent_message_truth(m, ccov),
                  "response": sent_message_truth(resp, scov) if resp is not None else None}
            if ccov.all(m.off, m.end) and (resp is None or scov.all(resp.off, resp.end)):
                assert ex == decode_apid(m.body, resp.body if resp else None, ref.client, ref.server)
            exchanges.append(ex)
            # `frame`: the last packet that carried bytes of the message
            frames.append({"connection": ci, "correlation_id": m.corr,
                           "request_first_frame": ccov.first[m.off], "request_frame": max(ccov.first[m.off:m.end]),
                           "response_first_frame": scov.first[resp.off] if resp is not None else None,
                           "response_frame": max(scov.first[resp.off:resp.end]) if resp is not None else None})
        unmatched += sum(1 for m in resps if id(m) in counted and (m.peer is None or id(m.peer) not in counted))

    def sort_key(d):
        return (d.get("connection", -1), d.get("frame") or d.get("next_frame") or 0)

    details.sort(key=sort_key)
    return {
        "exchanges": exchanges,
        "exchange_frames": frames,
        "other_api_frames": {k: counts[k] for k in sorted(counts)},
        "unmatched_responses": unmatched,
        "connections": len(order),
        "partial_frames": partial,
        # a resync that skips nothing (the gap ended on a frame boundary) may go unreported
        "expected_diagnostics": sorted({d["kind"] for d in details if not d.get("optional")}),
        "diagnostic_details": details,
    }


# ---------------------------------------------------------------------------
# an independent reader: reassembles and frames a capture without knowing what was sent,
# to check the truth worked out above


class _Stream:
    def __init__(self):
        self.base: int | None = None
        self.data, self.have = bytearray(), bytearray()
        self.fin: int | None = None
        self.conflict = False
        self.first_data_frame: int | None = None

    def put(self, off: int, payload: bytes) -> None:
        if off < 0:
            payload, off = payload[-off:], 0
        need = off + len(payload)
        if need > len(self.data):
            self.data += bytes(need - len(self.data))
            self.have += bytes(need - len(self.have))
        for k, b in enumerate(payload):
            if self.have[off + k]:
                self.conflict |= self.data[off + k] != b
            else:
                self.data[off + k], self.have[off + k] = b, 1


def _frames(st: _Stream, is_req: bool, keep_whole, scan_ok) -> tuple[list[dict], int]:
    """Frames of one direction ({"off", "complete", "body", "missing"}: for a frame stepped
    over across a gap, `body` is what came before its first missing byte and `missing` the
    count of its bytes not captured) and how many times framing was found again."""
    data, have, n = st.data, st.have, len(st.data)
    pre = [0]
    for h in have:
        pre.append(pre[-1] + h)

    def allp(a: int, b: int) -> bool:
        return b <= n and pre[b] - pre[a] == b - a

    last_corr = None

    def plausible(p: int, scanning: bool) -> bool:
        if not allp(p, p + (14 if is_req else 8)):
            return False
        size = struct.unpack(">i", data[p:p + 4])[0]
        if is_req:
            key, ver, corr, clen = struct.unpack(">hhih", data[p + 4:p + 14])
            if not (10 <= size <= 1 << 24 and key in KNOWN_KEYS and 0 <= ver <= 20 and -1 <= clen <= size - 10):
                return False
            if scanning:  # the correlation id follows the connection's, the client id is text
                if last_corr is not None and not last_corr < corr <= last_corr + 1000:
                    return False
                if clen > 0 and not (allp(p + 14, p + 14 + clen)
                                     and all(0x20 <= c < 0x7F for c in data[p + 14:p + 14 + clen])):
                    return False
        elif not 4 <= size <= 1 << 24:
            return False
        if scanning:
            if not scan_ok(data, p):
                return False
            if keep_whole(data, p) and not allp(p, p + 4 + size):
                return False
            # it must end before the FIN, and the frame after it must look like one too,
            # unless the known bytes end first
            nxt = p + 4 + size
            if st.fin is not None and nxt > st.fin:
                return False
            if nxt < n and allp(nxt, nxt + (14 if is_req else 8)) and not plausible(nxt, False):
                return False
        return True

    out, resyncs, p, lost, lost_from = [], 0, 0, False, 0
    while p < n:
        if lost:
            q = next((q for q in range(p, n) if plausible(q, True)), None)
            if q is None:
                break
            resyncs += pre[q] - pre[lost_from] > 0  # only resyncs that skip captured bytes
            p, lost = q, False
        if not plausible(p, False):
            lost, lost_from, p = True, p, p + 1
            continue
        size = struct.unpack(">i", data[p:p + 4])[0]
        end = p + 4 + size
        if is_req:
            last_corr = struct.unpack(">i", data[p + 8:p + 12])[0]
        if allp(p, end):
            out.append({"off": p, "complete": True, "body": bytes(data[p + 4:end]), "missing": 0})
            p = end
            continue
        if end > n and st.fin is None:
            break  # unfinished when the capture ends
        known = max(n, st.fin or 0)  # a FIN tells how far the stream went
        if end <= known:
            # its head is in: stepped over by its size, gaps and all. A gap that runs on
            # past its end takes the next head, and framing is lost there (below).
            miss = next(i for i in range(p, end) if i >= n or not have[i])
            out.append({"off": p, "complete": False, "body": bytes(data[p + 4:miss]),
                        "missing": (end - p) - (pre[min(end, n)] - pre[p])})
            p = end
            continue
        lost = True
        miss = next((i for i in range(p, min(end, n)) if not have[i]), min(end, n))
        p = lost_from = next((i for i in range(miss, n) if have[i]), n)
    return out, resyncs


class _Short(Exception):
    pass


def captured_fields(buf: bytes, is_req: bool) -> tuple[dict, int]:
    """The AllocateProducerIds fields (v0) read in order from `buf`, a message body or the
    start of one, until one does not fit: (fields, offset after the last one read)."""
    out, o = {}, 0

    def take(n: int) -> bytes:
        nonlocal o
        if o + n > len(buf):
            raise _Short
        o += n
        return buf[o - n:o]

    def uv() -> int:
        v, shift = 0, 0
        while True:
            b = take(1)[0]
            v |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return v

    def tags() -> list[dict]:
        return [{"tag": t, "data": take(uv()).hex()} for t in (uv() for _ in range(uv()))]

    try:
        if is_req:
            _, ver, _, clen = struct.unpack(">hhih", take(10))
            out["api_version"] = ver
            out["client_id"] = take(clen).decode() if clen >= 0 else None
            out["header_tagged_fields"] = tags()
            out["broker_id"] = struct.unpack(">i", take(4))[0]
            out["broker_epoch"] = struct.unpack(">q", take(8))[0]
        else:
            take(4)  # correlation id
            out["header_tagged_fields"] = tags()
            out["throttle_time_ms"], out["error_code"] = struct.unpack(">ih", take(6))
            out["producer_id_start"], out["producer_id_len"] = struct.unpack(">qi", take(12))
        out["tagged_fields"] = tags()
    except _Short:
        pass
    return out, o


def _frame_truth(f: dict, is_req: bool) -> dict:
    """A framed message in the truth format: whole, or as far as it was captured."""
    fields, end = captured_fields(f["body"], is_req)
    if f["complete"]:
        assert end == len(f["body"]) and len(fields) == 6, "not a whole AllocateProducerIds message"
        return fields
    return fields | {"bytes_not_captured": f["missing"]}


def independent_decode(recs: list[Rec]) -> dict:
    conns: dict[frozenset, dict] = {}
    order: list[dict] = []
    kinds = set()
    for i, r in enumerate(recs):
        t = parse_tcp(r, i + 1)
        if t is None:
            continue
        if len(r.data) < r.orig_len:
            kinds.add("packet_truncated")
        key = frozenset((t.src, t.dst))
        c = conns.get(key)
        if c is not None and t.syn and not t.flags & 0x10 and c["isn"].get(t.src, t.seq) != t.seq:
            c = None  # a new SYN: a new connection on the same ports
        if c is None:
            c = {"index": len(order), "dirs": {}, "isn": {}, "client": None}
            conns[key] = c
            order.append(c)
            if not t.syn:
                kinds.add("midstream_start")
        if t.syn:
            c["isn"].setdefault(t.src, t.seq)
            c["client"] = c["client"] or (t.src if not t.flags & 0x10 else t.dst)
        st = c["dirs"].setdefault(t.src, _Stream())
        if st.base is None and (t.syn or t.payload):
            st.base = t.seq + 1 if t.syn else t.seq
        if st.base is None:
            continue
        off = signed32(t.seq - st.base)
        if t.fin:
            st.fin = max(st.fin or 0, off + t.wire_len)
        if t.payload:
            st.put(off, t.payload)

    exchanges, counts, unmatched = [], {}, 0
    for c in order:
        ends = list(c["dirs"])
        if c["client"] is None:
            # No handshake: the client is the side whose frames read as requests whose
            # correlation ids come back at the start of the other side's frames. (Framing
            # alone does not tell: a response stream with small correlation ids reads as a
            # chain of valid-looking Produce requests, key 0 and version = the id's low half.)
            def score(cl):
                sv = next((e for e in ends if e != cl), None)
                reqs = _frames(c["dirs"][cl], True, lambda d, p: False, lambda d, p: True)[0]
                resps = _frames(c["dirs"][sv], False, lambda d, p: False, lambda d, p: True)[0] if sv else []
                rc = {struct.unpack(">i", f["body"][4:8])[0] for f in reqs}
                sc = {struct.unpack(">i", f["body"][:4])[0] for f in resps}
                return len(rc & sc), len(reqs)
            c["client"] = max(ends, key=score)
        cst, sst = c["dirs"].get(c["client"], _Stream()), next(
            (c["dirs"][e] for e in ends if e != c["client"]), _Stream())
        server = next(iter(set(next(k for k, v in conns.items() if v is c)) - {c["client"]}))
        for st in (cst, sst):
            end = max(st.fin or 0, len(st.data))
            if any(not h for h in st.have) or end > len(st.data):
                kinds.add("tcp_gap")
            if st.conflict:
                kinds.add("tcp_overlap_conflict")

        def req_apid(d, p):
            try:
                body = bytes(d[p + 4:p + 4 + struct.unpack(">i", d[p:p + 4])[0]])
                return struct.unpack(">h", d[p + 4:p + 6])[0] != 67 or bool(decode_apid(body, None, "", ""))
            except Exception:
                return False

        reqs, rs = _frames(cst, True, lambda d, p: struct.unpack(">h", d[p + 4:p + 6])[0] == 67, req_apid)
        by_corr = {}
        for q in reqs:
            key, _, corr = struct.unpack(">hhi", q["body"][:8])
            q["key"], q["corr"] = key, corr
            by_corr.setdefault(corr, q)
        apid_corrs = {q["corr"] for q in reqs if q["key"] == 67}

        def resp_ok(d, p):
            corr = struct.unpack(">i", d[p + 4:p + 8])[0]
            if corr not in by_corr:
                return False
            if corr in apid_corrs:
                try:
                    size = struct.unpack(">i", d[p:p + 4])[0]
                    decode_apid(by_corr[corr]["body"], bytes(d[p + 4:p + 4 + size]), "", "")
                except Exception:
                    return False
            return True

        resps, rs2 = _frames(sst, False, lambda d, p: struct.unpack(">i", d[p + 4:p + 8])[0] in apid_corrs, resp_ok)
        if rs or rs2:
            kinds.add("kafka_resync")
        if any(not q["complete"] for q in reqs if struct.unpack(">h", q["body"][:2])[0] == 67) or any(
                not r["complete"] for r in resps if struct.unpack(">i", r["body"][:4])[0] in apid_corrs):
            kinds.add("kafka_message_truncated")
        resp_by_corr = {}
        for r in resps:
            corr = struct.unpack(">i", r["body"][:4])[0]
            if corr in by_corr and corr not in resp_by_corr:
                resp_by_corr[corr] = r
            else:
                unmatched += 1
        for q in reqs:
            name = lf.API_NAMES.get(q["key"], f"Unknown({q['key']})")
            ent = counts.setdefault(name, {"api_key": q["key"], "requests": 0, "responses": 0})
            ent["requests"] += 1
            r = resp_by_corr.get(q["corr"])
            ent["responses"] += r is not None
            if q["key"] == 67:
                if q["complete"] and (r is None or r["complete"]):
                    exchanges.append(decode_apid(q["body"], r["body"] if r else None, c["client"], server))
                else:
                    exchanges.append({"client": c["client"], "server": server, "correlation_id": q["corr"],
                                      "request": _frame_truth(q, True),
                                      "response": _frame_truth(r, False) if r is not None else None})
    return {"exchanges": exchanges, "other_api_frames": {k: counts[k] for k in sorted(counts)},
            "unmatched_responses": unmatched, "connections": len(order), "kinds": sorted(kinds)}


# ---------------------------------------------------------------------------
# Wireshark's view

TSHARK_FIELDS = ["frame.number", "tcp.stream", "kafka.request_key", "kafka.correlation_id", "kafka.request_frame"]
TOLERATED = ("Unknown 67 API key", "Unsupported Produce version")  # see make-loopback-fixtures.py


def tshark_args(port: int) -> list[str]:
    return ["-n", "-d", f"tcp.port=={port},kafka", "-o", "tcp.reassemble_out_of_order:TRUE"]


def tshark_view(path: Path, port: int, shown: str) -> dict:
    cmd = (["tshark", "-r", str(path), *tshark_args(port), "-Y", "kafka", "-T", "fields",
            "-E", "separator=/t", "-E", "aggregator=;"] + [x for f in TSHARK_FIELDS for x in ("-e", f)])
    res = subprocess.run(cmd, capture_output=True, text=True)
    stderr = [l for l in res.stderr.splitlines() if "Running as user" not in l and l.strip()]
    if res.returncode not in (0, 2) or res.returncode == 2 and not any("cut short" in l for l in stderr):
        sys.exit(f"tshark failed on {path}: {stderr}")
    view = {"command": shlex.join(["tshark", "-r", shown] + cmd[3:]),
            "fields": TSHARK_FIELDS,
            "rows": [line.split("\t") for line in res.stdout.splitlines()]}
    if stderr:
        view["stderr"] = stderr
    return view


def tshark_problems(path: Path, port: int) -> tuple[list[str], int]:
    """Frames Wireshark flags as malformed or with expert errors, minus its known Kafka gaps."""
    res = subprocess.run(["tshark", "-r", str(path), *tshark_args(port), "-Y",
                          "_ws.malformed or _ws.expert.severity >= error", "-T", "fields", "-e", "frame.number",
                          "-e", "_ws.expert.message", "-E", "occurrence=a", "-E", "aggregator=|"],
                         capture_output=True, text=True)
    bad, tolerated = [], 0
    for line in res.stdout.splitlines():
        num, _, msgs = line.partition("\t")
        if any(m in msgs for m in TOLERATED):
            tolerated += 1
        else:
            bad.append(f"frame {num}: {msgs}")
    return bad, tolerated


def wireshark_differences(view: dict, truth: dict) -> dict:
    """AllocateProducerIds requests and their responses, as (frame, tcp.stream, correlation
    id), that only one of Wireshark and the truth has."""
    reqs, resps = set(), []
    for row in view["rows"]:
        frame, stream, keys, corrs, req_frames = (row + [""] * 5)[:5]
        corr_l = [int(c) for c in corrs.split(";") if c]
        if keys:
            reqs |= {(int(frame), int(stream), c) for k, c in zip(keys.split(";"), corr_l) if k == "67"}
        else:
            resps += [(int(frame), int(stream), c, int(r)) for r, c in zip(req_frames.split(";"), corr_l) if r]
    ws_resps = {(f, s, c) for f, s, c, r in resps if (r, s, c) in reqs}
    t_reqs = {(e["request_frame"], e["connection"], e["correlation_id"]) for e in truth["exchange_frames"]}
    t_resps = {(e["response_frame"], e["connection"], e["correlation_id"]) for e in truth["exchange_frames"]
               if e["response_frame"] is not None}
    as_list = lambda s: [list(x) for x in sorted(s)]  # noqa: E731
    return {"requests_only_in_truth": as_list(t_reqs - reqs), "requests_only_in_wireshark": as_list(reqs - t_reqs),
            "responses_only_in_truth": as_list(t_resps - ws_resps),
            "responses_only_in_wireshark": as_list(ws_resps - t_resps)}


# ---------------------------------------------------------------------------
# the fixtures


EXPECTED = {  # contract diagnostic kinds each fixture must give, checked against the analysis
    "base": [], "nano": [], "any-sll2": [], "any-sll": [], "dumpcap": [], "dumpcap-lo-any": [], "multi-if": [],
    # both cuts end on a frame's end: stepped over, no resync
    "snaplen": ["kafka_message_truncated", "packet_truncated", "tcp_gap"],
    "midstream": ["midstream_start"], "midstream-inside-request": ["kafka_resync", "midstream_start"],
    "dropped": ["kafka_resync", "tcp_gap"], "swapped": [], "duplicated": [],
    "conflict": ["tcp_overlap_conflict"], "vlan": [], "qinq": [], "bigendian": [], "bigendian-nano": [],
    "capture": [], "rotated": [], "rotated-1": [], "rotated-2": ["kafka_resync", "midstream_start"],
    "one-sided": [], "one-sided-responses": [], "seqwrap": [],
    "raw": [], "null": [], "loop": [], "ipv4-ipv6": [],
}
# in-order, lossless captures that make-loopback-fixtures.py's decoder can read (after the
# link layer is turned into Ethernet)
LF_DECODES = {"base", "nano", "any-sll2", "any-sll", "dumpcap", "multi-if", "duplicated", "conflict", "vlan",
              "qinq", "bigendian", "bigendian-nano", "capture", "rotated", "one-sided", "seqwrap", "raw", "null",
              "loop", "ipv4-ipv6"}


def capture_info(name: str, raw: bytes) -> dict:
    cap = read_capture(raw)
    seen = []
    for r in cap.recs:
        lt = LINKTYPES.get(r.linktype, str(r.linktype))
        if lt not in seen:
            seen.append(lt)
    info = {"file": name, "format": cap.format, "gzip": cap.gzip, "byte_order": cap.byte_order,
            "link_types": seen, "timestamp_digits": sorted({r.tsres for r in cap.recs}),
            "packets": len(cap.recs), "bytes": sum(len(r.data) for r in cap.recs)}
    if cap.format == "pcapng":
        info["interfaces"] = [{"link_type": LINKTYPES.get(i["linktype"], str(i["linktype"])),
                               "tsresol": i["tsresol"], "name": i["name"]} for i in cap.ifaces]
    return info


class Maker:
    def __init__(self, out: Path, tmp: Path):
        self.out, self.tmp = out, tmp
        self.made: list[tuple[str, dict]] = []
        self.lf_skipped: dict[str, str] = {}

    def emit(self, name: str, files: list[tuple[str, bytes]], refs: list[RefConn], port: int, how: dict,
             note: str, check=None) -> dict:
        """Write the capture file(s) and `<name>.truth.json`; check them."""
        for fname, raw in files:
            (self.out / fname).write_bytes(raw)
            assert len(raw) < 300_000, f"{fname} is {len(raw)} bytes"
        recs = [r for fname, _ in files for r in read_capture((self.out / fname).read_bytes()).recs]
        truth = {"fixture": files[0][0] if len(files) == 1 else name, "files": [f for f, _ in files],
                 "made_by": MADE_BY, "kafka_port": port, **how,
                 "capture": [capture_info(f, raw) for f, raw in files]}
        truth.update(analyse(recs, refs))
        truth["note"] = note
        if truth["expected_diagnostics"] != EXPECTED[name]:
            sys.exit(f"{name}: diagnostics {truth['expected_diagnostics']}, expected {EXPECTED[name]}: "
                     f"{truth['diagnostic_details']}")
        if check:
            check(truth)
        # an independent reassembly of the file must find the same
        ind = independent_decode(recs)
        for k in ("exchanges", "other_api_frames", "unmatched_responses", "connections"):
            if ind[k] != truth[k]:
                sys.exit(f"{name}: independent decoder differs on {k}:\n{ind[k]}\n{truth[k]}")
        if ind["kinds"] != truth["expected_diagnostics"]:
            sys.exit(f"{name}: independent decoder sees {ind['kinds']}")
        # make-loopback-fixtures.py's decoder, where it applies
        if name in LF_DECODES:
            eth = pcap_bytes([to_ethernet(r) for r in recs], 1, nano=True)
            ex, counts, nconns = lf.decode_capture(eth)
            want = {k: v for k, v in truth["other_api_frames"].items() if v["requests"] or v["responses"]}
            assert (ex, counts, nconns) == (truth["exchanges"], want, truth["connections"]), f"{name}: lf decoder"
        else:
            self.lf_skipped[name] = "lossy, reordered, mid-stream or duplicated across interfaces"
        # Wireshark
        if len(files) == 1:
            path, shown = self.out / files[0][0], files[0][0]
        else:
            path, shown = self.tmp / f"{name}.pcap", f"<mergecap -a -w - {' '.join(f for f, _ in files)}>"
            subprocess.run(["mergecap", "-a", "-w", str(path)] + [str(self.out / f) for f, _ in files], check=True)
        truth["wireshark"] = tshark_view(path, port, shown)
        truth["wireshark"]["differences"] = wireshark_differences(truth["wireshark"], truth)
        bad, tolerated = tshark_problems(path, port)
        lossless = not truth["expected_diagnostics"]
        if bad and lossless:
            sys.exit(f"{name}: tshark finds malformed packets: {bad}")
        truth["wireshark"]["flagged_frames"] = {"unsupported_kafka": tolerated, "other": len(bad)}
        streams = {row[1] for row in truth["wireshark"]["rows"]}
        diffs = truth["wireshark"]["differences"]
        if lossless and any(diffs.values()):
            sys.exit(f"{name}: Wireshark disagrees on a lossless capture: {diffs}")
        lf.write_json(self.out / f"{name}.truth.json", truth)
        self.made.append((name, truth))
        print(f"  {name}: {', '.join(f for f, _ in files)}: {len(truth['exchanges'])} exchanges, "
              f"{truth['connections']} connections, diagnostics {truth['expected_diagnostics']}, "
              f"tshark kafka rows {len(truth['wireshark']['rows'])} in {len(streams)} streams"
              + (f", wireshark differs: { {k: len(v) for k, v in diffs.items() if v} }" if any(diffs.values()) else ""))
        return truth


def snaplen_note() -> str:
    return (f"Same run as base.pcap ({SCENARIO}), captured with a {SNAPLEN}-byte snaplen: Ethernet + IPv4 "
            f"+ TCP with timestamps is 66 bytes, so at most 62 payload bytes of an IPv4 segment (42 over "
            f"IPv6) are kept. Everything fits except request 20 (86 bytes: its last 24 are not captured) "
            f"and the response to 21 (70 bytes: its last 8 are not captured). Both cuts fall inside the "
            f"40-byte tagged field of their message and end where the message ends, and both heads are "
            f"captured, so a reader steps over them by the frames' sizes: 20 is reported without its "
            f"body tagged_fields (bytes_not_captured 24) and paired with its whole response, 21 is "
            f"complete with a response lacking its tagged_fields (bytes_not_captured 8), 22 needs no "
            f"resync (kafka_message_truncated for the two messages). The packets longer than {SNAPLEN} "
            f"bytes are exactly those two (packet_truncated, see diagnostic_details).")


def snaplen_check(t: dict) -> None:
    ex = {e["correlation_id"]: e for e in t["exchanges"]}
    assert list(ex) == [1, 2, 4, 10, 11, 12, 20, 21, 22, 30, 31], list(ex)
    cut = {(c, side) for c, e in ex.items() for side in ("request", "response")
           if e[side] is not None and "bytes_not_captured" in e[side]}
    assert cut == {(20, "request"), (21, "response")}, cut
    r20, p21 = ex[20]["request"], ex[21]["response"]
    assert r20["bytes_not_captured"] == 24 and "tagged_fields" not in r20 and r20["broker_epoch"] == 13, r20
    assert "bytes_not_captured" not in ex[20]["response"] and ex[20]["response"]["producer_id_start"] == 5000
    assert p21["bytes_not_captured"] == 8 and "tagged_fields" not in p21 and p21["producer_id_start"] == 6000, p21
    assert ex[22]["response"] is not None and ex[31]["response"] is None
    assert t["unmatched_responses"] == 0
    assert not any(d["kind"] == "kafka_resync" for d in t["diagnostic_details"])


def dropped_check_for(cl_truth: dict, client0: str):
    """dropped.pcap: every exchange of controller-loopback.pcap but 2 on connection 0."""
    def check(t: dict) -> None:
        want = [e for e in cl_truth["exchanges"] if not (e["correlation_id"] == 2 and e["client"] == client0)]
        assert t["exchanges"] == want and t["unmatched_responses"] == 1
        assert t["other_api_frames"]["Produce"] == {"api_key": 0, "requests": 1, "responses": 1}
    return check


def locate(recs: list[Rec], refs: list[RefConn]) -> list[dict]:
    """For each record: its connection (capture order), direction and stream offset (clean captures)."""
    conns, out, bases = {}, [], {}
    for i, r in enumerate(recs):
        t = parse_tcp(r, i + 1)
        key = frozenset((t.src, t.dst))
        ci = conns.setdefault(key, len(conns))
        ref_i = next(j for j, ref in enumerate(refs) if {ref.client, ref.server} == key)
        if t.syn:
            bases.setdefault((ci, t.src), t.seq + 1)
        base = bases[(ci, t.src)]
        out.append({"i": i, "t": t, "conn": ci, "ref": ref_i, "c2s": t.src == refs[ref_i].client,
                    "off": signed32(t.seq - base), "base": base})
    return out


def seg_at(loc: list[dict], conn: int, c2s: bool, off: int) -> dict:
    return next(p for p in loc if p["conn"] == conn and p["c2s"] == c2s and p["t"].payload and p["off"] == off)


def msg(refs: list[RefConn], conn_ref: int, is_req: bool, corr: int) -> Msg:
    reqs, resps = stream_messages(refs[conn_ref], conn_ref)
    return next(m for m in (reqs if is_req else resps) if m.corr == corr)


def record_main(out: Path, tmp: Path) -> tuple[list[RefConn], list, dict[str, Recorder]]:
    """One run of the controller scenario, recorded by eight capture processes at once."""
    recs = {
        "base": Recorder.tcpdump(out / "base.pcap", "lo", "-s", "0"),
        "nano": Recorder.tcpdump(out / "nano.pcap", "lo", "-s", "0", "--time-stamp-precision=nano"),
        "snaplen": Recorder.tcpdump(out / "snaplen.pcap", "lo", "-s", str(SNAPLEN)),
        "any-sll2": Recorder.tcpdump(out / "any-sll2.pcap", "any", "-s", "0"),
        "any-sll": Recorder.tcpdump(out / "any-sll.pcap", "any", "-s", "0", "-y", "LINUX_SLL"),
        "any-nano": Recorder.tcpdump(tmp / "any-nano.pcap", "any", "-s", "0", "--time-stamp-precision=nano"),
        "dumpcap": Recorder.dumpcap(out / "dumpcap.pcapng", ["lo"]),
        "dumpcap-lo-any": Recorder.dumpcap(out / "dumpcap-lo-any.pcapng", ["lo", "any"]),
    }
    started = []
    try:
        for r in recs.values():
            started.append(r.start())
        refs, apids = controller_scenario()
    finally:
        stop_all(started)
    return refs, apids, recs


SCENARIO = ("the controller scenario (README, Variants): connections A (IPv4, broker-1: ApiVersions, "
            "APID 1, APID 2 written as 6 + 30 bytes, Heartbeat 3, APID 4), B (IPv4, null client id: "
            "10 and 11 pipelined in one segment and answered 11+10 in one segment, then 12 -> "
            "NOT_CONTROLLER), C (IPv4, broker-3: 20 with a 40-byte body tag, 21 with a 40-byte tag in "
            "its response, 22 plain), D (IPv6, broker-4: 30 -> STALE_BROKER_EPOCH, 31 unanswered)")


# the variants whose check is "every exchange sent is there, whole" (all_sent in main)
ALL_SENT = {"base", "nano", "any-sll2", "any-sll", "dumpcap", "dumpcap-lo-any", "multi-if", "swapped", "duplicated",
            "conflict", "vlan", "qinq", "bigendian", "bigendian-nano", "capture", "rotated", "seqwrap", "raw", "null",
            "loop", "ipv4-ipv6"}
# their bytes sent before the capture started are in no capture kept here: only a new recording
NO_RETRUTH = {"midstream": "its connection's first bytes (ApiVersions, exchange 40) were never captured",
              "midstream-inside-request": "the first 40,000 bytes of its Produce request were never captured"}


def retruth(out: Path, names: list[str]) -> None:
    """Rebuilds `<name>.truth.json` from the committed capture(s), without recording: what
    was sent comes from the clean capture of the same run (base.pcap, or
    ../controller-loopback.pcap for dropped) through refs_from_clean_capture; the capture
    bytes are handed to Maker.emit unchanged (and checked to be so afterwards).
    `recorded_with` / `source` / `rewrite` and the note are kept from the old truth, except
    for snaplen, whose note is snaplen_note()."""
    for tool in ("tshark", "mergecap"):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found (apt-get install -y tshark wireshark-common)")
    unknown = [n for n in names if n not in EXPECTED]
    if unknown:
        sys.exit(f"no such variant: {unknown} (one of {', '.join(EXPECTED)})")
    for n in names:
        if n in NO_RETRUTH:
            sys.exit(f"{n}: cannot be retruthed: {NO_RETRUTH[n]}; rerun the recording (as root, no --retruth)")
    tmp = Path(tempfile.mkdtemp(prefix="pidshark-retruth-"))
    atexit.register(shutil.rmtree, tmp, True)
    mk = Maker(out, tmp)
    base_recs = read_capture((out / "base.pcap").read_bytes()).recs
    refs = refs_from_clean_capture(base_recs)
    eth = pcap_bytes([to_ethernet(r) for r in base_recs], 1, nano=True)
    sent = lf.decode_capture(eth)[0]  # base.pcap holds exactly what was sent (checked when recorded)
    assert len(sent) == 11

    def all_sent(t):
        assert t["exchanges"] == sent, "not every exchange sent"

    for name in names:
        old = json.loads((out / f"{name}.truth.json").read_text())
        files = [(f, (out / f).read_bytes()) for f in old["files"]]
        how = {k: old[k] for k in ("recorded_with", "source", "rewrite") if k in old}
        run_refs, port, note, check = refs, PORT, old["note"], all_sent if name in ALL_SENT else None
        if name == "snaplen":
            note, check = snaplen_note(), snaplen_check
        elif name == "dropped":
            cl = read_capture((out.parent / "controller-loopback.pcap").read_bytes()).recs
            run_refs, port = refs_from_clean_capture(cl), lf.CONTROLLER_PORT
            cl_truth = json.loads((out.parent / "controller-loopback.truth.json").read_text())
            check = dropped_check_for(cl_truth, run_refs[0].client)
        assert port == old["kafka_port"], (name, port, old["kafka_port"])
        mk.emit(name, files, run_refs, port, how, note, check)
        for f, raw in files:
            assert (out / f).read_bytes() == raw, f"{f} was rewritten differently"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE.parent / "fixtures" / "variants")
    ap.add_argument("--retruth", nargs="+", metavar="NAME",
                    help="rebuild NAME.truth.json from the committed capture(s), recording nothing")
    args = ap.parse_args()
    if args.retruth:
        retruth(args.out, args.retruth)
        return
    if os.geteuid() != 0:
        sys.exit("needs root (tcpdump and dumpcap capture on lo and any)")
    for tool in ("tcpdump", "dumpcap", "tshark", "mergecap", "capinfos"):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found (apt-get install -y tcpdump tshark wireshark-common)")
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="pidshark-variants-"))
    atexit.register(shutil.rmtree, tmp, True)  # also when a check fails
    mk = Maker(out, tmp)
    read = lambda p: read_capture(p.read_bytes()).recs  # noqa: E731

    # ---- A: real captures --------------------------------------------------------------
    print("capturing the controller scenario (8 captures of one run):")
    refs, apids, rec = record_main(out, tmp)
    sent = [ex.truth() for ex in apids]
    base = read(out / "base.pcap")
    clean = refs_from_clean_capture(base)
    assert [(r.client, r.server, r.c2s, r.s2c) for r in clean] == [(r.client, r.server, r.c2s, r.s2c) for r in refs], \
        "base.pcap does not hold exactly what was sent"

    def all_sent(t):
        assert t["exchanges"] == sent, "not every exchange sent"

    for name, fname, what in (
            ("base", "base.pcap", "the reference of the rewritten copies: classic pcap, little-endian, "
                                  "microseconds, ETHERNET (-i lo)"),
            ("nano", "nano.pcap", "nanosecond pcap (magic a1b23c4d), ETHERNET"),
            ("any-sll2", "any-sll2.pcap", "tcpdump -i any: LINUX_SLL2 (tcpdump 4.99's default for any)"),
            ("any-sll", "any-sll.pcap", "tcpdump -i any -y LINUX_SLL: Linux cooked v1"),
            ("dumpcap", "dumpcap.pcapng", "dumpcap's pcapng: SHB, one IDB (ETHERNET, if_tsresol 9), EPBs, ISB"),
            ("dumpcap-lo-any", "dumpcap-lo-any.pcapng",
             "dumpcap on lo and any at once: two IDBs (ETHERNET and LINUX_SLL, both nanoseconds) and every "
             "packet twice, once per interface; dumpcap writes them in batches, so the any copies come in "
             "runs after the lo ones (timestamps not in order), and Wireshark takes the second copies as "
             "retransmissions of one connection")):
        mk.emit(name, [(fname, (out / fname).read_bytes())], refs, PORT,
                {"recorded_with": rec[name].what},
                f"{what}. Same run as base.pcap: {SCENARIO}. Every exchange is complete except 31 "
                f"(unanswered).", all_sent)

    mk.emit("snaplen", [("snaplen.pcap", (out / "snaplen.pcap").read_bytes())], refs, PORT,
            {"recorded_with": rec["snaplen"].what}, snaplen_note(), snaplen_check)

    # the hand-built two-interface pcapng: connections 0 and 2 from lo (ETHERNET, us), 1 and 3 from any
    # (LINUX_SLL2, ns), merged by time
    anyn = read(tmp / "any-nano.pcap")
    lo_loc, any_loc = locate(base, refs), locate(anyn, refs)
    multi = ([replace(base[p["i"]], iface=0) for p in lo_loc if p["conn"] % 2 == 0]
             + [replace(anyn[p["i"]], iface=1) for p in any_loc if p["conn"] % 2 == 1])
    multi.sort(key=lambda r: r.ts)
    assert len(multi) == len(base)
    mk.emit("multi-if", [("multi-if.pcapng", pcapng_bytes(
        [{"linktype": 1, "tsresol": 6, "name": "lo"}, {"linktype": 276, "tsresol": 9, "name": "any"}], multi))],
        refs, PORT, {"source": ["base.pcap", f"a simultaneous `{rec['any-nano'].what}` of the same run (not kept)"]},
        f"Built by hand (dumpcap on two interfaces writes every packet twice, see dumpcap-lo-any): "
        f"IDB 0 = ETHERNET, if_tsresol 6 (microseconds), IDB 1 = LINUX_SLL2, if_tsresol 9 "
        f"(nanoseconds); connections 0 and 2 (A, C) come from the lo capture on interface 0, "
        f"connections 1 and 3 (B, D) from the any capture on interface 1, merged by time. Same run "
        f"as base.pcap: {SCENARIO}.", all_sent)

    print("capturing mid-stream:")
    mrec = Recorder.tcpdump(out / "midstream.pcap", "lo", "-s", "0")
    try:
        mrefs, mapids = midstream_scenario(mrec)
    finally:
        stop_all([mrec])

    def mid_check(t):
        assert t["exchanges"] == [e.truth() for e in mapids if e.corr != 40], "midstream"

    mk.emit("midstream", [("midstream.pcap", (out / "midstream.pcap").read_bytes())], mrefs, PORT,
            {"recorded_with": mrec.what + ", started by the client after the connection was up"},
            "One connection (broker-5): handshake, ApiVersions (0) and APID 40 happen before tcpdump "
            "starts (the client starts it between two exchanges, so the capture begins on a frame "
            "boundary in both directions), then APID 41, 42, Heartbeat 43, APID 44. No SYN in the file: "
            "the reader must take the side that sends request headers as the client. Exchange 40 and the "
            "ApiVersions exchange are not in the capture at all.", mid_check)

    irec = Recorder.tcpdump(out / "midstream-inside-request.pcap", "lo", "-s", "0")
    try:
        irefs, iapids = inside_request_scenario(irec)
    finally:
        stop_all([irec])

    def inside_check(t):
        assert t["exchanges"] == [e.truth() for e in iapids], "midstream-inside-request"
        assert t["unmatched_responses"] == 1  # the Produce response

    mk.emit("midstream-inside-request", [("midstream-inside-request.pcap",
                                          (out / "midstream-inside-request.pcap").read_bytes())],
            irefs, PORT, {"recorded_with": irec.what + ", started by the client in the middle of a request"},
            f"One connection (broker-6): handshake, ApiVersions (0), then a Produce v9 request (1) of "
            f"{msg(irefs, 0, True, 1).size} "
            f"bytes (one record of 100,000 seeded random bytes, chosen so that no offset in it looks "
            f"like a Kafka request header) written in {INSIDE_CHUNK}-byte chunks; tcpdump starts after "
            f"{INSIDE_BEFORE} chunks, so the capture begins {INSIDE_BEFORE * INSIDE_CHUNK} bytes into "
            f"the request. Then the Produce response (unmatched: its request header is not "
            f"captured), APID 2, 3, Heartbeat 4, APID 5. The reader must scan the client's stream for "
            f"the next plausible request header (kafka_resync, skipping the rest of the Produce "
            f"request); the server's stream starts on a frame boundary.", inside_check)

    # ---- B: rewritten copies -----------------------------------------------------------
    print("rewriting:")
    loc = locate(base, refs)
    m2 = msg(refs, 0, True, 2)
    p1, p2 = seg_at(loc, 0, True, m2.off), seg_at(loc, 0, True, m2.off + 6)
    assert len(p1["t"].payload) == 6 and len(p2["t"].payload) == 30

    # dropped: from ../controller-loopback.pcap (it has the Produce request)
    cl_path = out.parent / "controller-loopback.pcap"
    cl = read(cl_path)
    cl_refs = refs_from_clean_capture(cl)
    cl_truth = json.loads((out.parent / "controller-loopback.truth.json").read_text())
    cl_an = analyse(cl, cl_refs)
    assert cl_an["exchanges"] == cl_truth["exchanges"] and cl_an["other_api_frames"] == cl_truth["other_api_frames"]
    cl_loc = locate(cl, cl_refs)
    cm2 = msg(cl_refs, 0, True, 2)
    drop1 = seg_at(cl_loc, 0, True, cm2.off)
    assert len(drop1["t"].payload) == 6
    prod = msg(cl_refs, 0, True, 5)
    prod_segs = [p for p in cl_loc if p["conn"] == 0 and p["c2s"] and p["t"].payload
                 and prod.off <= p["off"] < prod.end]
    assert len(prod_segs) >= 3 and prod_segs[0]["off"] == prod.off
    drop2 = prod_segs[len(prod_segs) // 2]
    dropped = [r for i, r in enumerate(cl) if i not in (drop1["i"], drop2["i"])]
    cl_port = lf.CONTROLLER_PORT

    dropped_check = dropped_check_for(cl_truth, cl_refs[0].client)

    mk.emit("dropped", [("dropped.pcap", pcap_bytes(dropped, 1))], cl_refs, cl_port,
            {"source": "../controller-loopback.pcap",
             "rewrite": f"records {drop1['i'] + 1} and {drop2['i'] + 1} of the source removed"},
            f"controller-loopback.pcap (see ../README.md) with two client data packets removed: "
            f"record {drop1['i'] + 1}, the first 6 bytes (size and API key) of AllocateProducerIds "
            f"request 2 on connection 0 (it was written in two parts), so the stream continues with "
            f"the other 30 bytes of that request: tcp_gap of 6 bytes, then kafka_resync skipping those "
            f"30 bytes to request 3; exchange 2 is lost and its response is unmatched. And record "
            f"{drop2['i'] + 1}, a {len(drop2['t'].payload)}-byte segment in the middle of the Produce "
            f"request (correlation id 5): tcp_gap only, since the Produce frame's length is known and "
            f"the hole lies inside it; the Produce request (its header is present) and its response "
            f"are still counted. Source record numbers are 1-based; after the first removal the "
            f"file's frame numbers shift by one.", dropped_check)

    # swapped: the two parts of request 2 change places (the timestamps stay in file order)
    swapped = list(base)
    a, b = p1["i"], p2["i"]
    swapped[a], swapped[b] = replace(base[b], ts=base[a].ts), replace(base[a], ts=base[b].ts)
    mk.emit("swapped", [("swapped.pcap", pcap_bytes(swapped, 1))], refs, PORT,
            {"source": "base.pcap", "rewrite": f"records {a + 1} and {b + 1} exchanged (timestamps kept in place)"},
            f"base.pcap with records {a + 1} and {b + 1} swapped: the last 30 bytes of APID request 2 "
            f"(connection 0) arrive before its first 6 bytes. Timestamps stay in file order (the "
            f"reordering happened before the capture point). Every exchange is complete.", all_sent)

    # duplicated: exact copies, plus a retransmission straddling the two parts of request 2
    av_seg = seg_at(loc, 0, True, 0)
    b_pair = seg_at(loc, 1, True, 0)
    b_resp = seg_at(loc, 1, False, 0)
    overlap = rewrite_tcp(base[p2["i"]], seq=p1["t"].seq + 2, payload=refs[0].c2s[m2.off + 2:m2.off + 6 + 20])
    inserts = {av_seg["i"]: [base[av_seg["i"]]],            # right after the original
               p2["i"]: [overlap],                           # bytes 2..26 of request 2: 4 of part 1, 20 of part 2
               b_resp["i"]: [base[b_resp["i"]], base[b_pair["i"]]]}  # response copy, then a late request copy
    duplicated = []
    for i, r in enumerate(base):
        duplicated.append(r)
        duplicated += [replace(x, ts=r.ts) for x in inserts.get(i, [])]
    mk.emit("duplicated", [("duplicated.pcap", pcap_bytes(duplicated, 1))], refs, PORT,
            {"source": "base.pcap", "rewrite": "4 records inserted"},
            f"base.pcap with four packets added: an exact copy of the ApiVersions request segment "
            f"right after it (connection 0); a retransmission of bytes 2..25 of APID request 2 "
            f"(24 bytes: the last 4 of its 6-byte first segment and the first 20 of its 30-byte second "
            f"segment) right after the second segment; on connection 1, an exact copy of the segment "
            f"holding responses 11+10 right after it, followed by a late exact copy of the segment "
            f"holding requests 10+11. Copies carry the timestamp of the record they follow. Same "
            f"bytes everywhere, so every exchange is complete and no diagnostic is due.", all_sent)

    # conflict: request 4 retransmitted with one byte changed
    m4 = msg(refs, 0, True, 4)
    r4 = seg_at(loc, 0, True, m4.off)
    bad = bytearray(r4["t"].payload)
    epoch_last = 4 + 2 + 2 + 4 + 2 + len("broker-1") + 1 + 4 + 7
    assert bad[epoch_last] == 42
    bad[epoch_last] = 43
    conflict = list(base)
    conflict.insert(r4["i"] + 1, replace(rewrite_tcp(base[r4["i"]], payload=bytes(bad)), ts=base[r4["i"]].ts))
    mk.emit("conflict", [("conflict.pcap", pcap_bytes(conflict, 1))], refs, PORT,
            {"source": "base.pcap", "rewrite": f"record {r4['i'] + 1} repeated with one byte changed"},
            f"base.pcap with a retransmission of APID request 4 (connection 0, record {r4['i'] + 1}) "
            f"inserted right after it, same sequence numbers and length but the last byte of "
            f"BrokerEpoch changed from 42 to 43 (stream offset {m4.off + epoch_last}). First copy "
            f"wins: request 4 has broker_epoch 42; tcp_overlap_conflict. TCP checksum redone in the "
            f"loopback's convention (see README).", all_sent)

    # VLAN and QinQ
    vlan = [replace(r, data=r.data[:12] + vlan_tag(0x8100, 100) + r.data[12:], orig_len=r.orig_len + 4) for r in base]
    mk.emit("vlan", [("vlan.pcap", pcap_bytes(vlan, 1))], refs, PORT,
            {"source": "base.pcap", "rewrite": "802.1Q tag (TPID 0x8100, VLAN 100) after the MAC addresses"},
            f"base.pcap with every Ethernet frame tagged 802.1Q VLAN 100 (priority 0). {SCENARIO}.", all_sent)
    qinq = [replace(r, data=r.data[:12] + vlan_tag(0x88A8, 200) + vlan_tag(0x8100, 100) + r.data[12:],
                    orig_len=r.orig_len + 8) for r in base]
    mk.emit("qinq", [("qinq.pcap", pcap_bytes(qinq, 1))], refs, PORT,
            {"source": "base.pcap", "rewrite": "802.1ad outer tag (0x88a8, VLAN 200), 802.1Q inner tag (0x8100, VLAN 100)"},
            "base.pcap with every Ethernet frame double-tagged: outer 802.1ad S-tag (TPID 0x88a8, VLAN "
            "200), inner 802.1Q C-tag (0x8100, VLAN 100).", all_sent)

    # byte order
    mk.emit("bigendian", [("bigendian.pcap", pcap_bytes(base, 1, ">"))], refs, PORT,
            {"source": "base.pcap", "rewrite": "file and record headers written big-endian"},
            "base.pcap written as a big-endian microsecond pcap (magic bytes a1 b2 c3 d4); packet bytes "
            "unchanged.", all_sent)
    nano = read(out / "nano.pcap")
    mk.emit("bigendian-nano", [("bigendian-nano.pcap", pcap_bytes(nano, 1, ">", nano=True))], refs, PORT,
            {"source": "nano.pcap", "rewrite": "file and record headers written big-endian"},
            "nano.pcap written as a big-endian nanosecond pcap (magic bytes a1 b2 3c 4d).", all_sent)

    # gzip and rotation
    mk.emit("capture", [("capture.pcap.gz", gzip.compress((out / "base.pcap").read_bytes(), 9, mtime=0))],
            refs, PORT, {"source": "base.pcap", "rewrite": "gzip -9 (no name, mtime 0)"},
            "base.pcap, gzip-compressed byte for byte (read it by its magic 1f 8b, not by its name).", all_sent)
    cut = p2["i"]
    r1, r2 = base[:cut], base[cut:]
    mk.emit("rotated", [("rotated-1.pcap", pcap_bytes(r1, 1)), ("rotated-2.pcap", pcap_bytes(r2, 1))],
            refs, PORT, {"source": "base.pcap", "rewrite": f"records 1..{cut} and {cut + 1}..{len(base)}"},
            f"base.pcap split into two files before record {cut + 1}, the second part of APID request 2 "
            f"(connection 0): the file boundary falls inside a Kafka frame. Read together in this order "
            f"(frames numbered on, as `mergecap -a`) they are one capture with one connection 0 and "
            f"every exchange.", all_sent)
    mk.emit("rotated-1", [("rotated-1.pcap", pcap_bytes(r1, 1))], refs, PORT,
            {"source": "base.pcap", "rewrite": f"records 1..{cut}"},
            "rotated-1.pcap alone: connection 0 up to the first 6 bytes of APID request 2, which is "
            "unfinished at the end of the file (not an exchange); exchange 1 complete.")
    mk.emit("rotated-2", [("rotated-2.pcap", pcap_bytes(r2, 1))], refs, PORT,
            {"source": "base.pcap", "rewrite": f"records {cut + 1}..{len(base)}"},
            "rotated-2.pcap alone: connection 0 picked up mid-stream, inside APID request 2 (its last "
            "30 bytes come first): midstream_start, then kafka_resync skipping those 30 bytes; response "
            "2 is unmatched; connections 1..3 are whole.")

    # one-sided
    mk.emit("one-sided", [("one-sided.pcap", pcap_bytes([base[p["i"]] for p in loc if p["c2s"]], 1))],
            refs, PORT, {"source": "base.pcap", "rewrite": "only client-to-server packets kept"},
            "base.pcap with only the client-to-server packets (SYN, requests, ACKs, FIN): every "
            "request is there and no response, so every exchange is unanswered (response null).")
    resp_only = [base[p["i"]] for p in loc if not p["c2s"]]
    resp_apis = [m.api_name() for i, r in enumerate(refs) for m in stream_messages(r, i)[1]]
    mk.emit("one-sided-responses", [("one-sided-responses.pcap", pcap_bytes(resp_only, 1))], refs, PORT,
            {"source": "base.pcap", "rewrite": "only server-to-client packets kept"},
            f"base.pcap with only the server-to-client packets (SYN-ACK, responses, ACKs, FIN): "
            f"{len(resp_apis)} Kafka responses ({resp_apis.count('AllocateProducerIds')} "
            f"AllocateProducerIds, {resp_apis.count('ApiVersions')} ApiVersions, "
            f"{resp_apis.count('Heartbeat')} Heartbeat; two of them, 11 and 10, in one segment) and no "
            f"request, so no exchange, and no API can be told: unmatched_responses counts them all. "
            f"The SYN-ACKs say which side is the server. (Read without that, these response streams "
            f"frame as valid-looking Produce requests: a response starts with its correlation id, "
            f"and a small id reads as API key 0, version = the id.) A reader that recognises Kafka "
            f"only by its requests sees no Kafka here; other_api_frames is empty either way.")

    # sequence numbers across 2^32 on connection 0, both directions
    r2m = msg(refs, 0, False, 2)
    cbase, sbase = p1["base"], seg_at(loc, 0, False, r2m.off)["base"]
    kc = (WRAP - (m2.off + 6 + 10)) - cbase
    ks = (WRAP - (r2m.off + 10)) - sbase
    seqwrap = []
    for p in loc:
        r = base[p["i"]]
        if p["conn"] != 0:
            seqwrap.append(r)
            continue
        assert 5 not in tcp_option_kinds(r), "SACK blocks would need rewriting too"
        t = p["t"]
        acked = t.flags & 0x10
        if p["c2s"]:
            seqwrap.append(rewrite_tcp(r, seq=t.seq + kc, ack=t.ack + ks if acked else None))
        else:
            seqwrap.append(rewrite_tcp(r, seq=t.seq + ks, ack=t.ack + kc if acked else None))
    mk.emit("seqwrap", [("seqwrap.pcap", pcap_bytes(seqwrap, 1))], refs, PORT,
            {"source": "base.pcap", "rewrite": "connection 0's sequence and acknowledgement numbers shifted"},
            f"base.pcap with connection 0's initial sequence numbers changed (a constant added modulo "
            f"2^32 to each side's seq and to the other side's ack) so that the client's sequence "
            f"numbers wrap from 2^32-1 to 0 at stream byte {m2.off + 16} (10 bytes into the second "
            f"segment of APID request 2) and the server's at stream byte {r2m.off + 10} (10 bytes into "
            f"response 2). Client ISN {(cbase + kc - 1) % WRAP}, server ISN {(sbase + ks - 1) % WRAP}. "
            f"No SACK blocks to fix; TCP checksums unchanged (loopback partial checksums do not cover "
            f"seq/ack).", all_sent)

    # other link types of the report contract
    for name, lt, hdr, endian, what in (
            ("raw", 101, lambda v: b"", "<", "LINKTYPE_RAW (101): the IP packet, no link header"),
            ("null", 0, lambda v: struct.pack("<I", 2 if v == 4 else 30), "<",
             "LINKTYPE_NULL (0): a 4-byte address family in the capturing host's byte order, here "
             "little-endian as on macOS: AF_INET 2, AF_INET6 30"),
            ("loop", 108, lambda v: struct.pack(">I", 2 if v == 4 else 24), ">",
             "LINKTYPE_LOOP (108, OpenBSD loopback): the address family in network byte order: "
             "AF_INET 2, AF_INET6 24; the file itself is big-endian too")):
        recs_lt = [relink(r, lt, hdr(ip_version(r))) for r in base]
        mk.emit(name, [(f"{name}.pcap", pcap_bytes(recs_lt, lt, endian))], refs, PORT,
                {"source": "base.pcap", "rewrite": f"Ethernet header replaced ({what.split(':')[0]})"},
                f"base.pcap as {what}.", all_sent)
    fam = [replace(relink(r, 228 if ip_version(r) == 4 else 229, b""), iface=0 if ip_version(r) == 4 else 1)
           for r in base]
    mk.emit("ipv4-ipv6", [("ipv4-ipv6.pcapng", pcapng_bytes(
        [{"linktype": 228, "tsresol": 6, "name": "ipv4"}, {"linktype": 229, "tsresol": 6, "name": "ipv6"}], fam))],
        refs, PORT, {"source": "base.pcap", "rewrite": "Ethernet header removed; IPv4 packets on IDB 0, IPv6 on IDB 1"},
        "base.pcap as a pcapng with two interfaces: IDB 0 LINKTYPE_IPV4 (228) carries the IPv4 "
        "connections 0..2, IDB 1 LINKTYPE_IPV6 (229) the IPv6 connection 3.", all_sent)

    # ---- summary -----------------------------------------------------------------------
    print("capinfos:")
    for f in dict.fromkeys(f for _, t in mk.made for f in t["files"]):
        res = subprocess.run(["capinfos", "-t", "-E", "-c", str(out / f)], capture_output=True, text=True)
        fields = {k.strip(): v.strip() for k, v in (l.split(":", 1) for l in res.stdout.splitlines() if ":" in l)}
        print(f"  {f}: {fields.get('File type', '?')}; {fields.get('File encapsulation', '?')}; "
              f"{fields.get('Number of packets', '?')} packets; {(out / f).stat().st_size} bytes")
    print("make-loopback-fixtures.py's decoder agreed on:", ", ".join(n for n, _ in mk.made if n in LF_DECODES))


if __name__ == "__main__":
    main()
