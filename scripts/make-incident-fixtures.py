#!/usr/bin/env python3
"""Make pidshark's incident fixtures (issue 12) from real loopback sockets.

The script plays a Kafka controller on 127.0.0.1:19097 and three brokers, each on
one long-lived connection, while tcpdump captures `lo`. The traffic is what a
controller listener carries during an incident: ApiVersions first, then large
Produce requests (hundreds of KB, one of 3 MB), large Fetch responses (168 KB)
and AllocateProducerIds v0 exchanges (client ids such as
"broker-1-to-controller-channel-manager", some of about 300 bytes), some
pipelined. It writes into fixtures/incident/:

  incident-snaplen-96.pcap    one run captured by four tcpdumps at once:
  incident-snaplen-128.pcap     -s 96, -s 128, -s 256 (these three are kept) and
  incident-snaplen-256.pcap     -s 0 (a temporary reference, not kept)
  incident-midstream.pcap.gz  a second run: tcpdump starts while one connection is
                              inside a 3 MB Produce request and another inside a
                              1 MB Fetch response, then more exchanges follow
  <name>.truth.json           what was sent, and what a correct reader can know
                              from the capture (see fixtures/README.md)

Usage (root; tcpdump):

    python3 scripts/make-incident-fixtures.py [--out DIR]

Every run overwrites these files; timestamps and ephemeral ports change.
Python 3.11, standard library only.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True


def _load_loopback_module():
    """scripts/make-loopback-fixtures.py as a module (its name has dashes)."""
    spec = importlib.util.spec_from_file_location("make_loopback_fixtures", HERE / "make-loopback-fixtures.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader
    spec.loader.exec_module(mod)
    return mod


lf = _load_loopback_module()

MADE_BY = "scripts/make-incident-fixtures.py"
PORT = 19097
HOST = "127.0.0.1"
SNAPLENS = (96, 128, 256)
FETCH_RESPONSE_LEN = 168 * 1024
BIG_PRODUCE_LEN = 3 * 1024 * 1024
API_NAMES = dict(lf.API_NAMES)
API_NAMES[1] = "Fetch"
ETH, HEAD_REQ, HEAD_RESP = 14, 14, 8  # Ethernet header; request head (size..client-id length); response head

# ---------------------------------------------------------------------------
# messages


def client_id(broker: int, long: bool = False) -> str:
    base = f"broker-{broker}-to-controller-channel-manager"
    if not long:
        return base
    # ~300 bytes, as a client id built from a host list looks
    hosts = ",".join(f"kafka-{i}.kafka-headless.incident-prod.svc.cluster.local:9093" for i in range(5))
    return (base + "@" + hosts)[:300]


def filler(n: int, seed: int) -> bytes:
    """Compressible but not trivially so: a 5000-byte pseudo-random block repeated."""
    block = bytes((i * 1103515245 + seed * 12345 + (i >> 3) * 2654435761 >> 7) & 0xFF for i in range(5000))
    return (block * (n // len(block) + 1))[:n]


def fetch_v11_request(corr: int, cid: str) -> bytes:
    body = (lf.i32(-1) + lf.i32(500) + lf.i32(1) + lf.i32(52428800) + lf.i8(0) + lf.i32(0) + lf.i32(-1)
            + lf.i32(1) + lf.string(lf.PRODUCE_TOPIC) + lf.i32(1)
            + lf.i32(0) + lf.i32(-1) + lf.i64(0) + lf.i64(-1) + lf.i32(1048576)
            + lf.i32(0) + lf.string(""))
    return lf.frame(lf.req_header_v1(1, 11, corr, cid) + body)


def fetch_v11_response(corr: int, total_len: int) -> bytes:
    """A Fetch v11 response (response header v0) of exactly `total_len` bytes on the wire."""
    def build(records_len: int) -> bytes:
        records = filler(records_len, corr)
        part = (lf.i32(0) + lf.i16(0) + lf.i64(1000) + lf.i64(1000) + lf.i64(0) + lf.i32(-1) + lf.i32(-1)
                + lf.i32(len(records)) + records)
        topic = lf.string(lf.PRODUCE_TOPIC) + lf.i32(1) + part
        return lf.frame(lf.resp_header_v0(corr) + lf.i32(0) + lf.i16(0) + lf.i32(0) + lf.i32(1) + topic)
    overhead = len(build(0))
    out = build(total_len - overhead)
    assert len(out) == total_len
    return out


def produce_request(corr: int, cid: str, value_len: int) -> bytes:
    value = filler(value_len, corr + 7)
    records = lf.record_batch(value, 1_700_000_000_000)
    partition = lf.i32(0) + lf.uvarint(len(records) + 1) + records + lf.tagged([])
    topic = lf.compact_string(lf.PRODUCE_TOPIC) + lf.compact_array([partition]) + lf.tagged([])
    return lf.frame(lf.req_header_v2(0, 9, corr, cid) + lf.compact_string(None) + lf.i16(-1) + lf.i32(30000)
                    + lf.compact_array([topic]) + lf.tagged([]))


# ---------------------------------------------------------------------------
# connections: both ends driven from this thread; what each side sent is logged


class Conn:
    def __init__(self, lsock: socket.socket, broker: int):
        self.broker = broker
        self.client = lf.connect(socket.AF_INET, HOST, PORT)
        self.server, _ = lsock.accept()
        lf.nodelay(self.server)
        self.client_addr = lf.fmt_addr(self.client.getsockname())
        self.server_addr = lf.fmt_addr(self.client.getpeername())
        # per direction ("c2s", "s2c"): bytes sent, and the messages in them
        self.sent = {"c2s": bytearray(), "s2c": bytearray()}
        self.msgs: dict[str, list[dict]] = {"c2s": [], "s2c": []}
        self.apids: dict[int, lf.Apid] = {}
        self.api_of: dict[int, int] = {}

    def _log(self, direction: str, data: bytes) -> None:
        off = 0
        while off < len(data):
            size = struct.unpack(">i", data[off:off + 4])[0] + 4
            msg = data[off:off + size]
            if direction == "c2s":
                key = struct.unpack(">h", msg[4:6])[0]
                corr = struct.unpack(">i", msg[8:12])[0]
                self.api_of[corr] = key
            else:
                corr = struct.unpack(">i", msg[4:8])[0]
                key = self.api_of[corr]
            self.msgs[direction].append({"offset": len(self.sent[direction]) + off, "size": size,
                                         "api_key": key, "correlation_id": corr})
            off += size
        assert off == len(data)

    def xfer(self, direction: str, data: bytes, chunk: int | None = None, pause: threading.Event | None = None,
             reached: threading.Event | None = None) -> None:
        """Send `data` (whole Kafka frames) from one end and read it all at the other.

        With `chunk`, it is written in pieces of that size 2 ms apart; with `pause`, the
        writer stops halfway, sets `reached` and waits for `pause` before the rest."""
        src, dst = (self.client, self.server) if direction == "c2s" else (self.server, self.client)
        self._log(direction, data)
        self.sent[direction] += data
        got: list[bytes] = []
        err: list[BaseException] = []

        def reader():
            try:
                got.append(lf.recv_exact(dst, len(data)))
            except BaseException as e:  # reported below
                err.append(e)
        t = threading.Thread(target=reader, daemon=True)
        t.start()
        if chunk is None:
            src.sendall(data)
        else:
            half = len(data) // 2
            for i in range(0, len(data), chunk):
                if pause is not None and i >= half and not pause.is_set():
                    assert reached is not None
                    reached.set()
                    if not pause.wait(60):
                        raise RuntimeError("capture did not start")
                src.sendall(data[i:i + chunk])
                time.sleep(0.002)
        t.join(60)
        if err or not got or got[0] != data:
            raise RuntimeError(f"transfer {direction} on broker {self.broker} failed: {err}")
        time.sleep(lf.SEND_GAP)

    def apid(self, corr: int, epoch: int, long: bool = False, **kw) -> lf.Apid:
        a = lf.Apid(corr, client_id(self.broker, long), self.broker, epoch, **kw)
        a.client_addr, a.server_addr = self.client_addr, self.server_addr
        self.apids[corr] = a
        return a

    def close(self) -> None:
        self.client.close()
        lf.wait_eof(self.server)
        self.server.close()


def block(start: int, error: int = 0, **kw) -> dict:
    if error:
        return {"throttle": 0, "error": error, "start": -1, "len": 0, **kw}
    return {"throttle": 0, "error": 0, "start": start, "len": 1000, **kw}


def hello(c: Conn, corr: int = 0) -> None:
    c.xfer("c2s", lf.api_versions_v3_request(corr, client_id(c.broker)))
    c.xfer("s2c", lf.api_versions_v3_response(corr))


def exchange(c: Conn, a: lf.Apid) -> None:
    c.xfer("c2s", a.request_bytes())
    c.xfer("s2c", a.response_bytes())


# ---------------------------------------------------------------------------
# tcpdump, several at once


class Tcpdumps:
    """tcpdump -i lo processes, one per (path, snaplen); all listening before the body
    runs, all stopped with SIGINT when it ends, also on failure."""

    def __init__(self, specs: list[tuple[Path, int]]):
        self.specs = specs
        self.procs: list[subprocess.Popen] = []
        self.logs: list[list[str]] = []

    def __enter__(self) -> "Tcpdumps":
        tcpdump = shutil.which("tcpdump")
        if not tcpdump:
            sys.exit("tcpdump not found (apt-get install -y tcpdump)")
        events = []
        try:
            for path, snaplen in self.specs:
                if path.exists():
                    path.unlink()
                cmd = [tcpdump, "-i", "lo", "-U", "--immediate-mode", "-B", "65536", "-s", str(snaplen), "-n",
                       "-Z", "root", "-w", str(path), f"tcp port {PORT}"]
                proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                log: list[str] = []
                ev = threading.Event()
                threading.Thread(target=self._read, args=(proc, log, ev), daemon=True).start()
                self.procs.append(proc)
                self.logs.append(log)
                events.append(ev)
            for ev, log in zip(events, self.logs):
                if not ev.wait(15):
                    raise RuntimeError(f"tcpdump did not start: {log}")
        except BaseException:
            self.stop()
            raise
        time.sleep(0.3)
        return self

    @staticmethod
    def _read(proc, log, ev) -> None:
        for line in proc.stderr:
            log.append(line.rstrip("\n"))
            if "listening on" in line:
                ev.set()

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for proc in self.procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def __exit__(self, *exc) -> None:
        time.sleep(0.5)
        self.stop()
        time.sleep(0.1)
        for (path, _), log in zip(self.specs, self.logs):
            summary = [line for line in log if "packets" in line]
            print(f"  {path.name}: " + "; ".join(summary))
            for line in summary:
                if "dropped by kernel" in line and not line.startswith("0 "):
                    raise RuntimeError(f"tcpdump dropped packets: {line}")


# ---------------------------------------------------------------------------
# scenarios


def snaplen_run(lsock: socket.socket) -> list[Conn]:
    """Three brokers on long-lived connections; everything inside the capture."""
    c1, c2, c3 = Conn(lsock, 1), Conn(lsock, 2), Conn(lsock, 3)
    for c in (c1, c2, c3):
        hello(c)
    # broker 1: plain exchanges around a 400 KB Produce, a Fetch and the 3 MB Produce
    exchange(c1, c1.apid(1, 101, response=block(0)))
    c1.xfer("c2s", produce_request(2, client_id(1), 400_000))
    c1.xfer("s2c", lf.produce_v9_response(2))
    exchange(c1, c1.apid(3, 101, long=True, response=block(1000)))
    c1.xfer("c2s", fetch_v11_request(4, client_id(1)))
    c1.xfer("s2c", fetch_v11_response(4, FETCH_RESPONSE_LEN))
    a5, a6 = c1.apid(5, 101, response=block(2000)), c1.apid(6, 101, long=True, response=block(3000))
    c1.xfer("c2s", a5.request_bytes())  # pipelined, each in its own write
    c1.xfer("c2s", a6.request_bytes())
    c1.xfer("s2c", a5.response_bytes())
    c1.xfer("s2c", a6.response_bytes())
    c1.xfer("c2s", produce_request(7, client_id(1), BIG_PRODUCE_LEN))
    c1.xfer("s2c", lf.produce_v9_response(7))
    exchange(c1, c1.apid(8, 101, response=block(4000)))
    # broker 2: two requests in one write, answered in one write; a Produce with an
    # AllocateProducerIds request pipelined behind it
    a1, a2 = c2.apid(1, 202, response=block(5000)), c2.apid(2, 202, response=block(6000))
    c2.xfer("c2s", a1.request_bytes() + a2.request_bytes())
    c2.xfer("s2c", a1.response_bytes() + a2.response_bytes())
    c2.xfer("c2s", fetch_v11_request(3, client_id(2)))
    c2.xfer("s2c", fetch_v11_response(3, FETCH_RESPONSE_LEN))
    exchange(c2, c2.apid(4, 202, long=True, response=block(7000)))
    a6 = c2.apid(6, 202, response=block(8000))
    c2.xfer("c2s", produce_request(5, client_id(2), 300_000))
    c2.xfer("c2s", a6.request_bytes())
    c2.xfer("s2c", lf.produce_v9_response(5))
    c2.xfer("s2c", a6.response_bytes())
    # broker 3: tagged fields, an error, a Produce, one request never answered
    exchange(c3, c3.apid(1, 303, long=True, header_tags=[(0, b"\xaa\xbb\xcc")], body_tags=[(1, b"\xbe\xef")],
                         response=block(0, error=41, header_tags=[(0, b"\x01\x02")])))
    c3.xfer("c2s", produce_request(2, client_id(3), 500_000))
    c3.xfer("s2c", lf.produce_v9_response(2))
    exchange(c3, c3.apid(3, 303, response=block(9000, body_tags=[(3, b"\xde\xad\xbe\xef")])))
    c3.xfer("c2s", c3.apid(4, 303).request_bytes())  # never answered
    time.sleep(0.2)
    return [c1, c2, c3]


def midstream_run(lsock: socket.socket, ref: Path, mid: Path) -> list[Conn]:
    """A reference capture from the start; the kept one starts inside two big frames."""
    with Tcpdumps([(ref, 0)]):
        c1, c2, c3 = Conn(lsock, 1), Conn(lsock, 2), Conn(lsock, 3)
        for c in (c1, c2, c3):
            hello(c)
        exchange(c1, c1.apid(1, 111, response=block(0)))
        exchange(c2, c2.apid(1, 222, response=block(1000)))
        exchange(c3, c3.apid(1, 333, response=block(2000)))
        # broker 2 pipelines a Fetch and an AllocateProducerIds request; the Fetch's 1 MB
        # answer is on its way when the capture starts, the other answer comes after it
        a2 = c2.apid(3, 222, long=True, response=block(3000))
        c2.xfer("c2s", fetch_v11_request(2, client_id(2)))
        c2.xfer("c2s", a2.request_bytes())
        go, r1, r2 = threading.Event(), threading.Event(), threading.Event()
        errors: list[BaseException] = []

        def run(fn):
            try:
                fn()
            except BaseException as e:  # reported below
                errors.append(e)
                r1.set()
                r2.set()
        t1 = threading.Thread(target=run, args=(lambda: c1.xfer(
            "c2s", produce_request(2, client_id(1), BIG_PRODUCE_LEN), chunk=65536, pause=go, reached=r1),))
        t2 = threading.Thread(target=run, args=(lambda: c2.xfer(
            "s2c", fetch_v11_response(2, 1024 * 1024), chunk=32768, pause=go, reached=r2),))
        t1.start()
        t2.start()
        try:
            if not (r1.wait(60) and r2.wait(60)) or errors:
                raise RuntimeError(f"senders did not reach the middle: {errors}")
            with Tcpdumps([(mid, 0)]):
                go.set()
                t1.join(60)
                t2.join(60)
                if errors:
                    raise errors[0]
                c2.xfer("s2c", a2.response_bytes())
                c1.xfer("s2c", lf.produce_v9_response(2))
                a3, a4 = c1.apid(3, 111, response=block(4000)), c1.apid(4, 111, long=True, response=block(5000))
                c1.xfer("c2s", a3.request_bytes())
                c1.xfer("c2s", a4.request_bytes())
                c1.xfer("s2c", a3.response_bytes())
                c1.xfer("s2c", a4.response_bytes())
                exchange(c2, c2.apid(4, 222, response=block(6000)))
                exchange(c3, c3.apid(2, 333, long=True, response=block(7000)))
                c3.xfer("c2s", fetch_v11_request(3, client_id(3)))
                c3.xfer("s2c", fetch_v11_response(3, FETCH_RESPONSE_LEN))
                c1.xfer("c2s", produce_request(5, client_id(1), 200_000))
                c1.xfer("s2c", lf.produce_v9_response(5))
                exchange(c1, c1.apid(6, 111, response=block(8000)))
                exchange(c3, c3.apid(4, 333, response=block(0, error=41)))
                time.sleep(0.2)
        finally:
            go.set()
            t1.join(60)
            t2.join(60)
        for c in (c1, c2, c3):
            c.close()
    return [c1, c2, c3]


# ---------------------------------------------------------------------------
# reading a capture back: which stream bytes each packet carries and which it kept


def read_pcap(path: Path) -> list[dict]:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    assert data[:4] == b"\xd4\xc3\xb2\xa1" and struct.unpack("<I", data[20:24])[0] == 1, path
    out, off, frame = [], 24, 0
    while off + 16 <= len(data):
        sec, usec, incl, orig = struct.unpack("<IIII", data[off:off + 16])
        pkt = data[off + 16:off + 16 + incl]
        off += 16 + incl
        frame += 1
        assert struct.unpack(">H", pkt[12:14])[0] == 0x0800, "IPv4 only"
        ip = pkt[ETH:]
        ihl = (ip[0] & 0x0F) * 4
        total = struct.unpack(">H", ip[2:4])[0]
        tcp = ip[ihl:]
        thl = (tcp[12] >> 4) * 4  # the actual TCP header length, options included
        assert len(tcp) >= thl, f"{path.name} frame {frame}: TCP header cut"
        src = socket.inet_ntop(socket.AF_INET, ip[12:16])
        dst = socket.inet_ntop(socket.AF_INET, ip[16:20])
        sport, dport, seq = struct.unpack(">HHI", tcp[:8])
        wire_len = total - ihl - thl
        kept = tcp[thl:thl + wire_len]
        out.append({"frame": frame, "src": f"{src}:{sport}", "dst": f"{dst}:{dport}", "seq": seq,
                    "flags": tcp[13], "wire_len": wire_len, "payload": kept, "caplen": incl, "orig": orig,
                    "headers": ETH + ihl + thl, "ts_us": sec * 1_000_000 + usec})
    return out


def isns(packets: list[dict]) -> dict[tuple[str, str], int]:
    """(src, dst) -> sequence number of stream offset 0, from the SYNs."""
    out = {}
    for p in packets:
        if p["flags"] & 0x02:
            out[(p["src"], p["dst"])] = (p["seq"] + 1) & 0xFFFFFFFF
    return out


def stream_view(packets: list[dict], base: dict, conns: list[Conn]) -> dict:
    """Per (connection index, direction): segments with stream offsets, frames, kept bytes."""
    view: dict = {}
    for i, c in enumerate(conns):
        for d, (a, b) in (("c2s", (c.client_addr, c.server_addr)), ("s2c", (c.server_addr, c.client_addr))):
            segs = []
            for p in packets:
                if p["src"] == a and p["dst"] == b and p["wire_len"] > 0:
                    start = (p["seq"] - base[(a, b)]) & 0xFFFFFFFF
                    segs.append({"frame": p["frame"], "start": start, "end": start + p["wire_len"],
                                 "kept": p["payload"], "ts_us": p["ts_us"]})
            sent = c.sent[d]
            covered = 0
            for s in segs:  # loopback: no loss, no reordering, no retransmission
                assert s["start"] >= covered, f"retransmission or reordering on {a}->{b}"
                assert sent[s["start"]:s["start"] + len(s["kept"])] == s["kept"], f"bytes differ on {a}->{b}"
                covered = s["end"]
            view[(i, d)] = segs
    return view


def conn_index(packets: list[dict], conns: list[Conn]) -> list[int]:
    """Connections in the order of their first packet in this capture (tcp.stream)."""
    firsts = []
    for i, c in enumerate(conns):
        pair = {c.client_addr, c.server_addr}
        first = next((p["frame"] for p in packets if {p["src"], p["dst"]} == pair), None)
        if first is not None:
            firsts.append((first, i))
    return [i for _, i in sorted(firsts)]


# ---------------------------------------------------------------------------
# the truth: what a correct reader can know from a capture


def tags_fields(buf: bytes, off: int) -> tuple[list[dict], int]:
    tags, end = lf.read_tags(buf, off)
    return lf.tags_json(tags), end


def request_fields(msg: bytes) -> list[tuple[str, int, object]]:
    """(field, end offset, value) of an AllocateProducerIds v0 request, in wire order."""
    clen = struct.unpack(">h", msg[12:14])[0]
    off = 14 + max(clen, 0)
    out: list[tuple[str, int, object]] = [("client_id", off, None if clen < 0 else msg[14:off].decode())]
    tags, off = tags_fields(msg, off)
    out.append(("header_tagged_fields", off, tags))
    out.append(("broker_id", off + 4, struct.unpack(">i", msg[off:off + 4])[0]))
    out.append(("broker_epoch", off + 12, struct.unpack(">q", msg[off + 4:off + 12])[0]))
    tags, end = tags_fields(msg, off + 12)
    out.append(("tagged_fields", end, tags))
    assert end == len(msg)
    return out


def response_fields(msg: bytes) -> list[tuple[str, int, object]]:
    tags, off = tags_fields(msg, 8)
    thr, err, start, ln = struct.unpack(">ihqi", msg[off:off + 18])
    out: list[tuple[str, int, object]] = [("header_tagged_fields", off, tags), ("throttle_time_ms", off + 4, thr),
                                          ("error_code", off + 6, err), ("producer_id_start", off + 14, start),
                                          ("producer_id_len", off + 18, ln)]
    tags, end = tags_fields(msg, off + 18)
    out.append(("tagged_fields", end, tags))
    assert end == len(msg)
    return out


def locate(c: Conn, d: str, segs: list[dict], stream_start_seen: bool) -> list[dict]:
    """Each message of a direction with what the capture holds of it.

    `kept` ranges are the captured stream bytes. A reader that is framed (from the stream
    start, or since it found a head) steps from each frame to the next by the size, gaps
    inside a frame included; a frame whose head is not captured loses framing, which comes
    back at the next captured head that starts a segment (`found_by` "resync")."""
    kept = [(s["start"], s["start"] + len(s["kept"])) for s in segs]
    seg_starts = {s["start"] for s in segs}
    first_seen = segs[0]["start"] if segs else None

    def missing_in(a: int, b: int) -> int:
        have = sum(max(0, min(b, y) - max(a, x)) for x, y in kept)
        return (b - a) - have

    def first_missing(a: int, b: int) -> int:
        pos = a
        for x, y in kept:
            if x <= pos < y:
                pos = y
            if pos >= b:
                return b
        return min(pos, b)

    def frame_of(byte: int) -> int | None:
        return next((s["frame"] for s in segs if s["start"] <= byte < s["end"]), None)

    framed = stream_start_seen
    out = []
    for m in c.msgs[d]:
        o, n = m["offset"], m["size"]
        head = HEAD_REQ if d == "c2s" else HEAD_RESP
        rec = dict(m, found_by=None, bytes_not_captured=missing_in(o, o + n),
                   decoded_len=first_missing(o, o + n) - o, first_frame=frame_of(o), frame=frame_of(o + n - 1))
        if first_seen is None or o + n <= first_seen:
            rec["before_capture"] = True
        else:
            head_ok = missing_in(o, o + head) == 0
            if framed and head_ok:
                rec["found_by"] = "framing"
            elif framed:
                framed = False
            elif head_ok and o in seg_starts:
                rec["found_by"] = "resync"
                framed = True
        out.append(rec)
    return out


def known_fields(fields, decoded_len: int) -> dict:
    return {name: value for name, end, value in fields if end <= decoded_len}


def truth_for(name: str, files: list[str], packets: list[dict], base: dict, conns: list[Conn],
              stream_start_seen: bool, recorded_with: str, note: str) -> dict:
    view = stream_view(packets, base, conns)
    order = conn_index(packets, conns)
    exchanges, api_frames, unmatched, ts = [], {}, {"by_framing": 0, "by_resync": 0}, {}
    for p in packets:
        ts[p["frame"]] = p["ts_us"]
    for ci in order:
        c = conns[ci]
        reqs = {m["correlation_id"]: m for m in locate(c, "c2s", view[(ci, "c2s")], stream_start_seen)}
        resps = {m["correlation_id"]: m for m in locate(c, "s2c", view[(ci, "s2c")], stream_start_seen)}
        for corr, rq in reqs.items():
            if rq["found_by"] is None:
                continue
            ent = api_frames.setdefault(API_NAMES[rq["api_key"]],
                                        {"api_key": rq["api_key"], "requests": 0, "responses": 0})
            ent["requests"] += 1
            if corr in resps and resps[corr]["found_by"] is not None:
                ent["responses"] += 1
        for corr, rs in resps.items():
            if rs["found_by"] is not None and reqs[corr]["found_by"] is None:
                unmatched["by_" + rs["found_by"]] += 1
        for corr, rq in reqs.items():
            a = c.apids.get(corr)
            if a is None:
                continue
            sent = a.truth()
            wire_rq = bytes(c.sent["c2s"][rq["offset"]:rq["offset"] + rq["size"]])
            rs = resps.get(corr)
            ex = {"connection": order.index(ci), "client": c.client_addr, "server": c.server_addr,
                  "correlation_id": corr, "sent": sent, "knowable": rq["found_by"] is not None}
            ex["request"] = msg_truth(rq, request_fields(wire_rq), ts)
            if rs is None:
                ex["response"], ex["status"] = None, "unanswered"
            else:
                wire_rs = bytes(c.sent["s2c"][rs["offset"]:rs["offset"] + rs["size"]])
                ex["response"] = msg_truth(rs, response_fields(wire_rs), ts)
                ex["status"] = "complete" if rs["found_by"] is not None else "unanswered"
            ex["wholly_captured"] = (rq["found_by"] is not None and rq["bytes_not_captured"] == 0
                                     and rs is not None and rs["found_by"] is not None
                                     and rs["bytes_not_captured"] == 0)
            exchanges.append(ex)
    return {
        "fixture": name, "files": files, "made_by": MADE_BY, "kafka_port": PORT, "recorded_with": recorded_with,
        "note": note, "connections": len(order), "packets": len(packets),
        "exchanges": exchanges, "other_api_frames": dict(sorted(api_frames.items())),
        "unmatched_responses": unmatched,
    }


def msg_truth(m: dict, fields, ts: dict) -> dict:
    found = m["found_by"] is not None
    out = {"offset": m["offset"], "size": m["size"], "found_by": m["found_by"],
           "before_capture": m.get("before_capture", False)}
    if found:
        out.update(first_frame=m["first_frame"], frame=m["frame"], timestamp_us=ts[m["frame"]],
                   bytes_not_captured=m["bytes_not_captured"], decoded_len=m["decoded_len"],
                   fields=known_fields(fields, m["decoded_len"]),
                   absent=[f for f, end, _ in fields if end > m["decoded_len"]])
    return out


def write_json(path: Path, obj: dict) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE.parent / "fixtures" / "incident")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (tcpdump captures on lo)")
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="pidshark-incident-"))
    lsock = lf.listener(socket.AF_INET, HOST, PORT)
    try:
        print("snaplen run:")
        ref = tmp / "snaplen-reference.pcap"
        specs = [(out / f"incident-snaplen-{s}.pcap", s) for s in SNAPLENS] + [(ref, 0)]
        with Tcpdumps(specs):
            conns = snaplen_run(lsock)
            for c in conns:
                c.close()
        ref_packets = read_pcap(ref)
        view = stream_view(ref_packets, isns(ref_packets), conns)
        for (ci, d), segs in view.items():  # the reference holds every byte sent
            assert sum(len(s["kept"]) for s in segs) == len(conns[ci].sent[d]), "reference capture lost bytes"
        for s in SNAPLENS:
            path = out / f"incident-snaplen-{s}.pcap"
            packets = read_pcap(path)
            assert [(p["src"], p["seq"], p["wire_len"]) for p in packets] == \
                [(p["src"], p["seq"], p["wire_len"]) for p in ref_packets], f"{path.name}: packets differ"
            truth = truth_for(path.stem, [path.name], packets, isns(packets), conns, True,
                              f"tcpdump -i lo -U --immediate-mode -B 65536 -s {s} -n 'tcp port {PORT}'",
                              f"snaplen {s}: each packet keeps {s} bytes, i.e. {s} - 14 (Ethernet) - 20 (IPv4)"
                              " - the TCP header (32 with timestamps) payload bytes")
            write_json(out / f"{path.stem}.truth.json", truth)
            print(f"  {path.name}: {path.stat().st_size} bytes, {len(packets)} packets")

        print("midstream run:")
        ref = tmp / "midstream-reference.pcap"
        mid_raw = tmp / "incident-midstream.pcap"
        conns = midstream_run(lsock, ref, mid_raw)
        base = isns(read_pcap(ref))
        packets = read_pcap(mid_raw)
        assert not any(p["flags"] & 0x02 for p in packets), "midstream capture holds a SYN"
        gz = out / "incident-midstream.pcap.gz"
        raw = mid_raw.read_bytes()
        gz.write_bytes(gzip.compress(raw, 9, mtime=0))
        ratio = len(raw) / gz.stat().st_size
        assert ratio < 500 and gz.stat().st_size < 300_000, (ratio, gz.stat().st_size)
        truth = truth_for("incident-midstream", [gz.name], packets, base, conns, False,
                          f"tcpdump -i lo -U --immediate-mode -B 65536 -s 0 -n 'tcp port {PORT}', started"
                          " while broker 1 was halfway through a 3 MB Produce request and broker 2's"
                          " controller halfway through a 1 MB Fetch response",
                          "no SYN; ISNs come from a reference capture of the whole run (not kept)")
        write_json(out / "incident-midstream.truth.json", truth)
        print(f"  {gz.name}: {gz.stat().st_size} bytes ({len(raw)} inflated), {len(packets)} packets")
    finally:
        lsock.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
