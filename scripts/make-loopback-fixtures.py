#!/usr/bin/env python3
"""Make pidshark's loopback pcap fixtures from real sockets.

The script plays a Kafka controller (server threads) and brokers (clients)
over 127.0.0.1 / ::1 while tcpdump captures the loopback interface, then
writes the captures and their ground truth into fixtures/:

  seed-v0.pcap              one minimal AllocateProducerIds v0 exchange (port 9093)
  controller-loopback.pcap  four broker connections (A, B, C over IPv4, D over IPv6)
                            to a controller on port 19093, with other APIs mixed in
  noise.pcap                HTTP, TLS-looking and random TCP traffic, no Kafka
  truncated.pcap            controller-loopback.pcap cut inside a packet record
  not-a-capture.txt         a plain text file
  *.truth.json              what the script sent, for each capture

Usage (as root, tcpdump needed; tshark optional, used to check the result):

    python3 scripts/make-loopback-fixtures.py [--out DIR]

Every run overwrites the fixtures; timestamps and ephemeral ports change.
Python 3.11, standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

MADE_BY = "scripts/make-loopback-fixtures.py"
SEND_GAP = 0.02  # seconds between sends, so messages leave as their own segments
IO_TIMEOUT = 10.0

API_NAMES = {0: "Produce", 12: "Heartbeat", 18: "ApiVersions", 67: "AllocateProducerIds"}

# ---------------------------------------------------------------------------
# Kafka primitive encoders


def i8(v: int) -> bytes:
    return struct.pack(">b", v)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def u16(v: int) -> bytes:
    return struct.pack(">H", v)


def u32(v: int) -> bytes:
    return struct.pack(">I", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def uvarint(v: int) -> bytes:
    assert v >= 0
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def varint(v: int) -> bytes:
    """Zig-zag signed varint (as used inside record batches)."""
    return uvarint((v << 1) ^ (v >> 63))


def string(s: str | None) -> bytes:
    """Non-compact (nullable) string: int16 length, -1 = null."""
    if s is None:
        return i16(-1)
    b = s.encode()
    return i16(len(b)) + b


def compact_string(s: str | None) -> bytes:
    """Compact (nullable) string: uvarint length+1, 0 = null."""
    if s is None:
        return uvarint(0)
    b = s.encode()
    return uvarint(len(b) + 1) + b


def compact_array(items: list[bytes]) -> bytes:
    return uvarint(len(items) + 1) + b"".join(items)


def tagged(fields: list[tuple[int, bytes]]) -> bytes:
    tags = [t for t, _ in fields]
    assert tags == sorted(set(tags)), "tags must be strictly increasing"
    out = uvarint(len(fields))
    for tag, data in fields:
        out += uvarint(tag) + uvarint(len(data)) + data
    return out


def frame(payload: bytes) -> bytes:
    return i32(len(payload)) + payload


def tags_json(fields: list[tuple[int, bytes]]) -> list[dict]:
    return [{"tag": t, "data": d.hex()} for t, d in fields]


# ---------------------------------------------------------------------------
# CRC-32C (Castagnoli) for the Produce record batch


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C = _crc32c_table()


def crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    table = _CRC32C
    for b in data:
        c = table[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283

# ---------------------------------------------------------------------------
# Kafka messages


def req_header_v1(api_key: int, version: int, corr: int, client_id: str | None) -> bytes:
    return i16(api_key) + i16(version) + i32(corr) + string(client_id)


def req_header_v2(api_key: int, version: int, corr: int, client_id: str | None,
                  tags: list[tuple[int, bytes]] | None = None) -> bytes:
    return req_header_v1(api_key, version, corr, client_id) + tagged(tags or [])


def resp_header_v0(corr: int) -> bytes:
    return i32(corr)


def resp_header_v1(corr: int, tags: list[tuple[int, bytes]] | None = None) -> bytes:
    return i32(corr) + tagged(tags or [])


class Apid:
    """One AllocateProducerIds exchange: what the broker sends and what the controller answers."""

    def __init__(self, corr: int, client_id: str | None, broker_id: int, broker_epoch: int,
                 header_tags=None, body_tags=None, response: dict | None = None):
        self.corr = corr
        self.client_id = client_id
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self.header_tags = header_tags or []
        self.body_tags = body_tags or []
        # response: dict(throttle, error, start, len, header_tags, body_tags) or None (unanswered)
        self.response = response
        self.client_addr: str | None = None
        self.server_addr: str | None = None

    def request_bytes(self) -> bytes:
        return frame(req_header_v2(67, 0, self.corr, self.client_id, self.header_tags)
                     + i32(self.broker_id) + i64(self.broker_epoch) + tagged(self.body_tags))

    def response_bytes(self) -> bytes:
        r = self.response
        assert r is not None
        return frame(resp_header_v1(self.corr, r.get("header_tags", []))
                     + i32(r.get("throttle", 0)) + i16(r["error"]) + i64(r["start"])
                     + i32(r["len"]) + tagged(r.get("body_tags", [])))

    def truth(self) -> dict:
        r = self.response
        return {
            "client": self.client_addr,
            "server": self.server_addr,
            "correlation_id": self.corr,
            "request": {
                "api_version": 0,
                "client_id": self.client_id,
                "header_tagged_fields": tags_json(self.header_tags),
                "broker_id": self.broker_id,
                "broker_epoch": self.broker_epoch,
                "tagged_fields": tags_json(self.body_tags),
            },
            "response": None if r is None else {
                "header_tagged_fields": tags_json(r.get("header_tags", [])),
                "throttle_time_ms": r.get("throttle", 0),
                "error_code": r["error"],
                "producer_id_start": r["start"],
                "producer_id_len": r["len"],
                "tagged_fields": tags_json(r.get("body_tags", [])),
            },
        }


def api_versions_v3_request(corr: int, client_id: str) -> bytes:
    return frame(req_header_v2(18, 3, corr, client_id)
                 + compact_string("pidshark-fixtures") + compact_string("1.0.0") + tagged([]))


def api_versions_v3_response(corr: int) -> bytes:
    keys = [(0, 0, 11), (12, 0, 4), (18, 0, 4), (67, 0, 0)]
    entries = [i16(k) + i16(lo) + i16(hi) + tagged([]) for k, lo, hi in keys]
    # ApiVersions responses always use response header v0
    return frame(resp_header_v0(corr) + i16(0) + compact_array(entries) + i32(0) + tagged([]))


def heartbeat_v3_request(corr: int, client_id: str) -> bytes:
    return frame(req_header_v1(12, 3, corr, client_id)
                 + string("fixture-group") + i32(5) + string("broker-1-member") + string(None))


def heartbeat_v3_response(corr: int) -> bytes:
    return frame(resp_header_v0(corr) + i32(0) + i16(0))


PRODUCE_TOPIC = "fixture-events"


def record_batch(value: bytes, base_timestamp: int) -> bytes:
    """A valid uncompressed RecordBatch v2 (magic 2) holding one record."""
    rec_body = (i8(0)               # attributes
                + varint(0)         # timestamp delta
                + varint(0)         # offset delta
                + varint(-1)        # key: null
                + varint(len(value)) + value
                + varint(0))        # headers
    record = varint(len(rec_body)) + rec_body
    after_crc = (i16(0)                 # attributes: no compression, CreateTime
                 + i32(0)               # last offset delta
                 + i64(base_timestamp)  # base timestamp
                 + i64(base_timestamp)  # max timestamp
                 + i64(-1)              # producer id
                 + i16(-1)              # producer epoch
                 + i32(-1)              # base sequence
                 + i32(1)               # record count
                 + record)
    batch_after_len = i32(0) + i8(2) + u32(crc32c(after_crc)) + after_crc  # leader epoch, magic, crc
    return i64(0) + i32(len(batch_after_len)) + batch_after_len


def produce_v9_request(corr: int, client_id: str, value_len: int) -> bytes:
    value = (b"pidshark loopback fixture filler 0123456789 " * (value_len // 44 + 1))[:value_len]
    records = record_batch(value, 1_700_000_000_000)
    partition = i32(0) + uvarint(len(records) + 1) + records + tagged([])
    topic = compact_string(PRODUCE_TOPIC) + compact_array([partition]) + tagged([])
    return frame(req_header_v2(0, 9, corr, client_id)
                 + compact_string(None)   # transactional_id
                 + i16(-1)                # acks
                 + i32(30000)             # timeout_ms
                 + compact_array([topic]) + tagged([]))


def produce_v9_response(corr: int) -> bytes:
    part = (i32(0) + i16(0) + i64(0) + i64(-1) + i64(0)
            + compact_array([])      # record_errors
            + compact_string(None)   # error_message
            + tagged([]))
    topic = compact_string(PRODUCE_TOPIC) + compact_array([part]) + tagged([])
    return frame(resp_header_v1(corr) + compact_array([topic]) + i32(0) + tagged([]))


# ---------------------------------------------------------------------------
# socket helpers


def fmt_addr(sockaddr) -> str:
    host, port = sockaddr[0], sockaddr[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def nodelay(s: socket.socket) -> socket.socket:
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.settimeout(IO_TIMEOUT)
    return s


def send(s: socket.socket, data: bytes) -> None:
    s.sendall(data)
    time.sleep(SEND_GAP)


def recv_exact(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"EOF after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def recv_frame(s: socket.socket) -> bytes:
    head = recv_exact(s, 4)
    (size,) = struct.unpack(">i", head)
    return head + recv_exact(s, size)


def expect(s: socket.socket, wanted: bytes) -> None:
    got = recv_frame(s)
    if got != wanted:
        raise AssertionError(f"unexpected frame: got {got[:64].hex()}..., wanted {wanted[:64].hex()}...")


def wait_eof(s: socket.socket) -> None:
    data = s.recv(65536)
    if data:
        raise AssertionError(f"expected EOF, got {len(data)} bytes")


def listener(family: int, host: str, port: int) -> socket.socket:
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.bind((host, port))
    s.listen(8)
    s.settimeout(IO_TIMEOUT)
    return s


def connect(family: int, host: str, port: int) -> socket.socket:
    s = socket.socket(family, socket.SOCK_STREAM)
    nodelay(s)
    s.connect((host, port))
    return s


class ServerThread(threading.Thread):
    """Accepts one connection on `lsock` and runs `handler(conn)` on it, then closes it."""

    def __init__(self, lsock: socket.socket, handler):
        super().__init__(daemon=True)
        self.lsock = lsock
        self.handler = handler
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            conn, _ = self.lsock.accept()
            nodelay(conn)
            try:
                self.handler(conn)
            finally:
                conn.close()
        except BaseException as e:  # reported by finish()
            self.error = e

    def finish(self) -> None:
        self.join(IO_TIMEOUT * 2)
        if self.is_alive():
            raise RuntimeError("server thread did not finish")
        if self.error:
            raise RuntimeError(f"server thread failed: {self.error!r}") from self.error


def one_connection(lsock: socket.socket, server_handler, client_fn, family: int, host: str, port: int):
    """Run one connection to completion: server handler in a thread, client in this thread."""
    srv = ServerThread(lsock, server_handler)
    srv.start()
    c = connect(family, host, port)
    try:
        client_addr = fmt_addr(c.getsockname())
        server_addr = fmt_addr(c.getpeername())
        client_fn(c)
    finally:
        c.close()
    srv.finish()
    time.sleep(0.05)  # let the closing FIN/ACKs reach the capture before the next connection
    return client_addr, server_addr


# ---------------------------------------------------------------------------
# tcpdump


class Capture:
    def __init__(self, path: Path, ports: list[int]):
        self.path = path
        self.ports = ports
        self.proc: subprocess.Popen | None = None
        self.stderr_lines: list[str] = []
        self._listening = threading.Event()

    def _read_stderr(self) -> None:
        assert self.proc and self.proc.stderr
        for line in self.proc.stderr:
            self.stderr_lines.append(line.rstrip("\n"))
            if "listening on" in line:
                self._listening.set()

    def __enter__(self) -> "Capture":
        tcpdump = shutil.which("tcpdump")
        if not tcpdump:
            sys.exit("tcpdump not found (apt-get install -y tcpdump)")
        if self.path.exists():
            self.path.unlink()
        expr = " or ".join(f"tcp port {p}" for p in self.ports)
        # -Z root: do not drop privileges, so the output file can be written anywhere
        # --immediate-mode: hand every packet over at once (otherwise packets still in the
        # kernel's TPACKET_V3 block when SIGINT arrives are never written)
        cmd = [tcpdump, "-i", "lo", "-U", "--immediate-mode", "-s", "0", "-n", "-Z", "root",
               "-w", str(self.path), expr]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._read_stderr, daemon=True).start()
        if not self._listening.wait(15):
            self.proc.kill()
            sys.exit(f"tcpdump did not start: {' '.join(self.stderr_lines)}")
        time.sleep(0.2)
        return self

    def __exit__(self, *exc) -> None:
        assert self.proc
        time.sleep(0.5)
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        time.sleep(0.1)
        summary = [l for l in self.stderr_lines if "packets" in l]
        print(f"  {self.path.name}: " + "; ".join(summary))
        for l in summary:
            if "dropped by kernel" in l and not l.startswith("0 "):
                sys.exit(f"tcpdump dropped packets: {l}")


# ---------------------------------------------------------------------------
# scenarios


def make_seed(out: Path) -> dict:
    port = 9093
    req = bytes.fromhex("00000018" "0043" "0000" "00000000" "0000" "00" "00000000" "0000000000000000" "00")
    resp = bytes.fromhex("00000018" "00000000" "00" "00000000" "0000" "0000000000000000" "00000000" "00")
    ex = Apid(0, "", 0, 0, response={"throttle": 0, "error": 0, "start": 0, "len": 0})
    assert ex.request_bytes() == req and ex.response_bytes() == resp and len(req) == len(resp) == 28

    def server(conn):
        got = recv_frame(conn)
        assert got == req, got.hex()
        time.sleep(SEND_GAP)
        send(conn, resp)
        wait_eof(conn)

    def client(c):
        send(c, req)
        assert recv_frame(c) == resp

    pcap = out / "seed-v0.pcap"
    ls = listener(socket.AF_INET, "127.0.0.1", port)
    try:
        with Capture(pcap, [port]):
            ex.client_addr, ex.server_addr = one_connection(ls, server, client, socket.AF_INET, "127.0.0.1", port)
    finally:
        ls.close()
    return {
        "fixture": pcap.name,
        "made_by": MADE_BY,
        "exchanges": [ex.truth()],
        "other_api_frames": {"AllocateProducerIds": {"api_key": 67, "requests": 1, "responses": 1}},
        "connections": 1,
    }


CONTROLLER_PORT = 19093
NONE, NOT_CONTROLLER, STALE_BROKER_EPOCH, UNKNOWN_SERVER_ERROR = 0, 41, 77, -1
PRODUCE_VALUE_LEN = 205_000


def make_controller(out: Path) -> dict:
    port = CONTROLLER_PORT
    counts = {name: {"api_key": key, "requests": 0, "responses": 0} for key, name in API_NAMES.items()}
    exchanges: list[Apid] = []

    def count(api_key: int, what: str) -> None:
        counts[API_NAMES[api_key]][what] += 1

    def block(start: int) -> dict:
        return {"throttle": 0, "error": NONE, "start": start, "len": 1000}

    # --- connection A: broker 1 -------------------------------------------------
    a_ex = [Apid(corr, "broker-1", 1, 42, response=block(start))
            for corr, start in ((1, 0), (2, 1000), (3, 2000))]
    a_api_req, a_api_resp = api_versions_v3_request(0, "broker-1"), api_versions_v3_response(0)
    a_hb_req, a_hb_resp = heartbeat_v3_request(4, "broker-1"), heartbeat_v3_response(4)
    a_prod_req, a_prod_resp = produce_v9_request(5, "broker-1", PRODUCE_VALUE_LEN), produce_v9_response(5)
    assert len(a_prod_req) >= 204_800

    def server_a(conn):
        expect(conn, a_api_req); count(18, "requests")
        send(conn, a_api_resp); count(18, "responses")
        for ex in a_ex:
            expect(conn, ex.request_bytes()); count(67, "requests")
            send(conn, ex.response_bytes()); count(67, "responses")
        expect(conn, a_hb_req); count(12, "requests")
        send(conn, a_hb_resp); count(12, "responses")
        expect(conn, a_prod_req); count(0, "requests")
        send(conn, a_prod_resp); count(0, "responses")
        wait_eof(conn)

    def client_a(c):
        send(c, a_api_req)
        expect(c, a_api_resp)
        for i, ex in enumerate(a_ex):
            req = ex.request_bytes()
            if i == 1:
                # the second request leaves in two writes (size + api key, then the rest),
                # so it spans two TCP segments and needs reassembly
                send(c, req[:6])
                send(c, req[6:])
            else:
                send(c, req)
            expect(c, ex.response_bytes())
        send(c, a_hb_req)
        expect(c, a_hb_resp)
        send(c, a_prod_req)
        expect(c, a_prod_resp)

    # --- connection B: broker 2, null client id, pipelined, answered out of order -
    b_ex = {
        10: Apid(10, None, 2, 7, response={"throttle": 0, "error": NOT_CONTROLLER, "start": -1, "len": 0}),
        11: Apid(11, None, 2, 7, response=block(4000)),
        12: Apid(12, None, 2, 7, response=block(3000)),
    }

    def server_b(conn):
        for corr in (10, 11, 12):
            expect(conn, b_ex[corr].request_bytes()); count(67, "requests")
        # answers 12 alone, then 10 and 11 together in one write (one segment, two frames)
        send(conn, b_ex[12].response_bytes()); count(67, "responses")
        send(conn, b_ex[10].response_bytes() + b_ex[11].response_bytes()); count(67, "responses"); count(67, "responses")
        wait_eof(conn)

    def client_b(c):
        # requests 10 and 11 leave in one write (one segment, two frames), 12 right after
        send(c, b_ex[10].request_bytes() + b_ex[11].request_bytes())
        send(c, b_ex[12].request_bytes())
        for corr in (12, 10, 11):
            expect(c, b_ex[corr].response_bytes())

    # --- connection C: broker 3, unknown tagged fields, then an unanswered request -
    c_ex = [
        Apid(20, "broker-3", 3, 13,
             header_tags=[(0, bytes.fromhex("aabbcc")), (5, bytes.fromhex("01"))],
             body_tags=[(1, bytes.fromhex("beef"))],
             response={"throttle": 25, "error": NONE, "start": 5000, "len": 1000,
                       "header_tags": [(0, bytes.fromhex("0102"))],
                       "body_tags": [(3, bytes.fromhex("deadbeef")), (7, b"")]}),
        Apid(21, "broker-3", 3, 13, response=None),
    ]

    def server_c(conn):
        expect(conn, c_ex[0].request_bytes()); count(67, "requests")
        send(conn, c_ex[0].response_bytes()); count(67, "responses")
        expect(conn, c_ex[1].request_bytes()); count(67, "requests")
        wait_eof(conn)  # never answered

    def client_c(c):
        send(c, c_ex[0].request_bytes())
        expect(c, c_ex[0].response_bytes())
        send(c, c_ex[1].request_bytes())
        time.sleep(0.2)  # gives up waiting and closes

    # --- connection D: broker 4 over IPv6, stale broker epoch ----------------------
    d_ex = [Apid(30, "broker-4", 4, 3,
                 response={"throttle": 0, "error": STALE_BROKER_EPOCH, "start": -1, "len": 0})]

    def server_d(conn):
        expect(conn, d_ex[0].request_bytes()); count(67, "requests")
        send(conn, d_ex[0].response_bytes()); count(67, "responses")
        wait_eof(conn)

    def client_d(c):
        send(c, d_ex[0].request_bytes())
        expect(c, d_ex[0].response_bytes())

    pcap = out / "controller-loopback.pcap"
    ls4 = listener(socket.AF_INET, "127.0.0.1", port)
    ls6 = listener(socket.AF_INET6, "::1", port)
    try:
        with Capture(pcap, [port]):
            for lsock, srv, cli, fam, host, exs in (
                (ls4, server_a, client_a, socket.AF_INET, "127.0.0.1", a_ex),
                (ls4, server_b, client_b, socket.AF_INET, "127.0.0.1", [b_ex[10], b_ex[11], b_ex[12]]),
                (ls4, server_c, client_c, socket.AF_INET, "127.0.0.1", c_ex),
                (ls6, server_d, client_d, socket.AF_INET6, "::1", d_ex),
            ):
                caddr, saddr = one_connection(lsock, srv, cli, fam, host, port)
                for ex in exs:
                    ex.client_addr, ex.server_addr = caddr, saddr
                exchanges.extend(exs)
    finally:
        ls4.close()
        ls6.close()
    return {
        "fixture": pcap.name,
        "made_by": MADE_BY,
        "exchanges": [ex.truth() for ex in exchanges],
        "other_api_frames": counts,
        "connections": 4,
    }


def tls_client_hello(rng: random.Random) -> bytes:
    sni = b"fixture.example"
    sni_ext = u16(0) + u16(len(sni) + 5) + u16(len(sni) + 3) + i8(0) + u16(len(sni)) + sni
    groups = u16(10) + u16(4) + u16(2) + u16(0x001D)
    exts = sni_ext + groups
    suites = b"".join(u16(s) for s in (0x1301, 0x1302, 0xC02F, 0xC030))
    body = (u16(0x0303) + rng.randbytes(32) + i8(0) + u16(len(suites)) + suites
            + i8(1) + i8(0) + u16(len(exts)) + exts)
    hs = i8(1) + struct.pack(">I", len(body))[1:] + body
    return i8(22) + u16(0x0301) + u16(len(hs)) + hs


def tls_server_hello(rng: random.Random) -> bytes:
    body = u16(0x0303) + rng.randbytes(32) + i8(0) + u16(0xC02F) + i8(0) + u16(0)
    hs = i8(2) + struct.pack(">I", len(body))[1:] + body
    return i8(22) + u16(0x0303) + u16(len(hs)) + hs


def make_noise(out: Path) -> dict:
    rng = random.Random(20241029)
    http_req = (b"GET /index.html HTTP/1.1\r\nHost: 127.0.0.1:18080\r\n"
                b"User-Agent: pidshark-fixtures\r\nAccept: */*\r\n\r\n")
    body = b"<html><body>not kafka</body></html>\n"
    http_resp = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: "
                 + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
    hello_c, hello_s = tls_client_hello(rng), tls_server_hello(rng)
    rand_c, rand_s = rng.randbytes(4096), rng.randbytes(4096)

    def server_for(expect_bytes: bytes, answer: bytes):
        def server(conn):
            got = recv_exact(conn, len(expect_bytes))
            assert got == expect_bytes
            time.sleep(SEND_GAP)
            send(conn, answer)
            wait_eof(conn)
        return server

    def client_for(data: bytes, answer: bytes):
        def client(c):
            send(c, data)
            assert recv_exact(c, len(answer)) == answer
        return client

    pcap = out / "noise.pcap"
    plans = [(18080, http_req, http_resp), (18443, hello_c, hello_s), (19092, rand_c, rand_s)]
    socks = {p: listener(socket.AF_INET, "127.0.0.1", p) for p, _, _ in plans}
    try:
        with Capture(pcap, [p for p, _, _ in plans]):
            for p, c_data, s_data in plans:
                one_connection(socks[p], server_for(c_data, s_data), client_for(c_data, s_data),
                               socket.AF_INET, "127.0.0.1", p)
    finally:
        for s in socks.values():
            s.close()
    return {
        "fixture": pcap.name,
        "made_by": MADE_BY,
        "exchanges": [],
        "other_api_frames": {},
        "connections": 3,
        "note": "HTTP/1.1 GET on port 18080, TLS ClientHello/ServerHello records on 18443, "
                "4096 random bytes each way on 19092 (random.Random(20241029)); no Kafka",
    }


# ---------------------------------------------------------------------------
# a small pcap reader + TCP/Kafka decoder, used to check captures against the truth
# and to work out what survives in truncated.pcap


def pcap_records(data: bytes):
    """Yield (index, offset, incl_len, packet bytes) for every complete record."""
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        e = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        e = ">"
    else:
        raise ValueError("not a pcap file")
    linktype = struct.unpack(e + "I", data[20:24])[0]
    assert linktype == 1, f"expected LINKTYPE_ETHERNET, got {linktype}"
    off, idx = 24, 0
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack(e + "IIII", data[off:off + 16])
        if off + 16 + incl > len(data):
            return
        idx += 1
        yield idx, off, incl, data[off + 16:off + 16 + incl]
        off += 16 + incl


def tcp_streams(records) -> list[dict]:
    """Reassemble TCP payloads per connection (loopback: no loss, in order)."""
    conns: dict = {}
    order: list = []
    for _, _, _, pkt in records:
        etype = struct.unpack(">H", pkt[12:14])[0]
        ip = pkt[14:]
        if etype == 0x0800:
            ihl = (ip[0] & 0x0F) * 4
            total = struct.unpack(">H", ip[2:4])[0]
            if ip[9] != 6:
                continue
            src, dst = socket.inet_ntop(socket.AF_INET, ip[12:16]), socket.inet_ntop(socket.AF_INET, ip[16:20])
            tcp = ip[ihl:total]
        elif etype == 0x86DD:
            plen = struct.unpack(">H", ip[4:6])[0]
            if ip[6] != 6:
                continue
            src, dst = socket.inet_ntop(socket.AF_INET6, ip[8:24]), socket.inet_ntop(socket.AF_INET6, ip[24:40])
            tcp = ip[40:40 + plen]
        else:
            continue
        sport, dport, seq = struct.unpack(">HHI", tcp[:8])
        flags = tcp[13]
        payload = tcp[(tcp[12] >> 4) * 4:]
        a, b = fmt_addr((src, sport)), fmt_addr((dst, dport))
        key = frozenset((a, b))
        if flags & 0x02 and not flags & 0x10:  # SYN: new connection, a is the client
            conns[key] = {"client": a, "server": b, "data": {a: bytearray(), b: bytearray()}, "next": {}}
            order.append(conns[key])
        c = conns.get(key)
        if c is None:
            continue
        if flags & 0x02:
            c["next"][a] = (seq + 1) & 0xFFFFFFFF
            continue
        if payload:
            nxt = c["next"][a]
            skip = (nxt - seq) & 0xFFFFFFFF
            if skip >= 0x80000000:
                raise AssertionError(f"gap in stream {a}->{b}")
            if skip < len(payload):
                c["data"][a] += payload[skip:]
                c["next"][a] = (seq + len(payload)) & 0xFFFFFFFF
    return order


def read_tags(buf: bytes, off: int) -> tuple[list[tuple[int, bytes]], int]:
    def uv(o):
        v, shift = 0, 0
        while True:
            b = buf[o]
            o += 1
            v |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return v, o
    n, off = uv(off)
    out = []
    for _ in range(n):
        tag, off = uv(off)
        ln, off = uv(off)
        out.append((tag, buf[off:off + ln]))
        off += ln
    return out, off


def kafka_frames(stream: bytes) -> list[bytes]:
    frames, off = [], 0
    while off + 4 <= len(stream):
        size = struct.unpack(">i", stream[off:off + 4])[0]
        if size < 10 or off + 4 + size > len(stream):
            break
        frames.append(stream[off + 4:off + 4 + size])
        off += 4 + size
    return frames


def decode_capture(data: bytes) -> tuple[list[dict], dict, int]:
    """Decode AllocateProducerIds exchanges and per-API frame counts from a capture."""
    conns = tcp_streams(pcap_records(data))
    exchanges, counts = [], {}
    for c in conns:
        reqs = kafka_frames(bytes(c["data"][c["client"]]))
        resps = kafka_frames(bytes(c["data"][c["server"]]))
        by_corr = {}
        for r in resps:
            by_corr[struct.unpack(">i", r[:4])[0]] = r
        for r in reqs:
            key, ver, corr, clen = struct.unpack(">hhih", r[:10])
            name = API_NAMES.get(key, f"Unknown({key})")
            ent = counts.setdefault(name, {"api_key": key, "requests": 0, "responses": 0})
            ent["requests"] += 1
            if corr in by_corr:
                ent["responses"] += 1
            if key != 67:
                continue
            off = 10
            client_id = None
            if clen >= 0:
                client_id = r[off:off + clen].decode()
                off += clen
            htags, off = read_tags(r, off)
            broker_id, epoch = struct.unpack(">iq", r[off:off + 12])
            btags, _ = read_tags(r, off + 12)
            resp = None
            if corr in by_corr:
                p = by_corr[corr]
                rhtags, o = read_tags(p, 4)
                thr, err, start, ln = struct.unpack(">ihqi", p[o:o + 18])
                rbtags, _ = read_tags(p, o + 18)
                resp = {"header_tagged_fields": tags_json(rhtags), "throttle_time_ms": thr,
                        "error_code": err, "producer_id_start": start, "producer_id_len": ln,
                        "tagged_fields": tags_json(rbtags)}
            exchanges.append({
                "client": c["client"], "server": c["server"], "correlation_id": corr,
                "request": {"api_version": ver, "client_id": client_id,
                            "header_tagged_fields": tags_json(htags), "broker_id": broker_id,
                            "broker_epoch": epoch, "tagged_fields": tags_json(btags)},
                "response": resp,
            })
    return exchanges, counts, len(conns)


def check_against_truth(pcap: Path, truth: dict) -> None:
    exchanges, counts, nconns = decode_capture(pcap.read_bytes())
    assert nconns == truth["connections"], (nconns, truth["connections"])
    assert exchanges == truth["exchanges"], f"{pcap.name}: decoded exchanges differ from truth"
    want = {k: v for k, v in truth["other_api_frames"].items() if v["requests"] or v["responses"]}
    assert counts == want, (counts, want)


def make_truncated(out: Path, src_truth: dict) -> dict:
    src = out / "controller-loopback.pcap"
    data = src.read_bytes()
    records = list(pcap_records(data))
    target = int(len(data) * 0.6)
    idx, off, incl, _ = next(r for r in records if r[1] <= target < r[1] + 16 + r[2])
    keep_of_record = 16 + incl // 2
    cut = off + keep_of_record
    dst = out / "truncated.pcap"
    dst.write_bytes(data[:cut])
    kept = data[:cut]

    # what a reader can still see: exchanges whose request is complete before the cut
    exchanges, counts, nconns = decode_capture(kept)
    full = {(e["client"], e["correlation_id"]): e for e in src_truth["exchanges"]}
    for e in exchanges:
        orig = full[(e["client"], e["correlation_id"])]
        assert e["request"] == orig["request"]
        assert e["response"] in (None, orig["response"])
    # Kafka frames that had started but are not complete when the file ends
    partial = []
    for c in tcp_streams(pcap_records(kept)):
        for side, peer, kind in ((c["client"], c["server"], "request"), (c["server"], c["client"], "response")):
            stream = bytes(c["data"][side])
            done = sum(4 + len(f) for f in kafka_frames(stream))
            rest = stream[done:]
            if not rest:
                continue
            ent = {"from": side, "to": peer, "kind": kind, "bytes_present": len(rest)}
            if len(rest) >= 4:
                ent["frame_size_with_prefix"] = 4 + struct.unpack(">i", rest[:4])[0]
            if kind == "request" and len(rest) >= 12:
                key, ver, corr = struct.unpack(">hhi", rest[4:12])
                ent.update(api_key=key, api_version=ver, correlation_id=corr,
                           api=API_NAMES.get(key, f"Unknown({key})"))
            partial.append(ent)
    return {
        "fixture": dst.name,
        "made_by": MADE_BY,
        "source": src.name,
        "partial_frames": partial,
        "truncation": {
            "original_bytes": len(data),
            "kept_bytes": cut,
            "original_records": len(records),
            "complete_records": idx - 1,
            "cut_record": idx,
            "cut_record_offset": off,
            "cut_record_incl_len": incl,
            "cut_record_bytes_kept": keep_of_record,
            "cut_record_data_bytes_kept": keep_of_record - 16,
            "note": (f"the first {cut} bytes of {src.name}: records 1..{idx - 1} are complete; "
                     f"record {idx} (at offset {off}, 16-byte header + {incl} bytes) is cut after "
                     f"{keep_of_record - 16} of its {incl} data bytes; the file ends there"),
        },
        "exchanges": exchanges,
        "other_api_frames": counts,
        "connections": nconns,
        "note": "exchanges and other_api_frames list what is complete in the complete records "
                "before the cut (a response is null when it falls after the cut); "
                "connections counts TCP connections whose SYN is before the cut",
    }


# ---------------------------------------------------------------------------
# tshark check


def tshark_check(out: Path) -> None:
    """Let Wireshark look at the captures: list the Kafka frames, fail on malformed packets.

    Wireshark 4.0 (Debian 12) knows Kafka API keys only up to 47 and Produce only up to v8:
    it flags AllocateProducerIds (67) frames "Unknown 67 API key" + "Dissected message does
    not end at the pdu length offset", and misparses the flexible Produce v9 request as
    malformed. Those are dissector limits, not broken bytes, and are tolerated (and counted);
    anything else malformed fails the run.
    """
    tshark = shutil.which("tshark")
    if not tshark:
        print("tshark not found; skipping the Wireshark check")
        return
    checks = [
        ("seed-v0.pcap", ["-d", "tcp.port==9093,kafka"]),
        ("controller-loopback.pcap", ["-d", f"tcp.port=={CONTROLLER_PORT},kafka"]),
        ("noise.pcap", ["-d", "tcp.port==18080,http", "-d", "tcp.port==18443,tls"]),
    ]
    tolerated_markers = ("Unknown 67 API key", "Unsupported Produce version")
    for name, decode_as in checks:
        pcap = str(out / name)
        if name != "noise.pcap":
            res = subprocess.run([tshark, "-r", pcap, *decode_as, "-Y", "kafka"],
                                 capture_output=True, text=True, check=True)
            print(f"tshark -r {name} {' '.join(decode_as)} -Y kafka:")
            print(res.stdout.rstrip())
        res = subprocess.run([tshark, "-r", pcap, *decode_as, "-Y", "_ws.malformed or _ws.expert.severity >= error",
                              "-T", "fields", "-e", "frame.number", "-e", "_ws.expert.message",
                              "-E", "occurrence=a", "-E", "aggregator=|"],
                             capture_output=True, text=True, check=True)
        tolerated, bad = [], []
        for line in res.stdout.splitlines():
            num, _, msgs = line.partition("\t")
            (tolerated if any(m in msgs for m in tolerated_markers) else bad).append((num, msgs))
        if bad:
            sys.exit(f"tshark finds malformed packets in {name}: " + "; ".join(f"frame {n}: {m}" for n, m in bad))
        if tolerated:
            print(f"  {name}: {len(tolerated)} frames flagged only for Wireshark's missing support of "
                  f"AllocateProducerIds / Produce v9 (frames {', '.join(n for n, _ in tolerated)})")


# ---------------------------------------------------------------------------


def write_json(path: Path, obj: dict) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "fixtures",
                    help="output directory (default: fixtures/ next to scripts/)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (tcpdump captures on lo)")
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)

    print("capturing:")
    seed = make_seed(out)
    controller = make_controller(out)
    noise = make_noise(out)
    for pcap, truth in (("seed-v0", seed), ("controller-loopback", controller), ("noise", noise)):
        check_against_truth(out / f"{pcap}.pcap", truth)
        write_json(out / f"{pcap}.truth.json", truth)
    write_json(out / "truncated.truth.json", make_truncated(out, controller))
    (out / "not-a-capture.txt").write_text("this is not a packet capture\n")
    tshark_check(out)
    print("wrote:")
    for p in sorted(out.iterdir()):
        if p.name != "README.md":
            print(f"  {p.relative_to(out.parent)}  {p.stat().st_size} bytes")


if __name__ == "__main__":
    main()
