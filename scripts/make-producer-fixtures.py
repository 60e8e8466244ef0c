#!/usr/bin/env python3
"""Make pidshark's producer-id fixtures (issue 28) from real loopback sockets.

The script plays KRaft controllers, brokers and producer clients over 127.0.0.1
while tcpdump captures `lo`, one capture per scenario, and writes into
fixtures/producers/:

  kafka-20031.pcap      KAFKA-20031: broker 1 is granted a block that starts at the
                        last id of its current one; two idempotent producers on
                        different connections then both hold producer id 1999, epoch 0
  txn-bump.pcap         transactional id "tx-1" re-initialised with a bumped epoch (not a
                        duplicate), an idempotent producer, InitProducerId v0 and v6, an
                        error answer
  metadata-only.pcap    broker 2's client address known only from a Metadata v12 response
  stale-controller.pcap controller 3001 grants a block after 3002's BeginQuorumEpoch for a
                        higher epoch; then NOT_CONTROLLER; then 3002 grants the same ids again

and, for where a granted id lies (issue 37: Kafka's RPCProducerIdManager keeps granting from
its current block after prefetching the next one; the truths list each grant's placement):

  prefetch-tail.pcap         two brokers grant the tails of their blocks after the next one
                             arrived (previous_block), before their first block of the capture
                             (before_capture), and twice an old block's last id answered after
                             the new block's first (two handler threads); no fault
  another-brokers-block.pcap broker 2 grants an id of broker 1's block (a fault); a transactional
                             id keeps its producer id on broker 2 (kept_by_transactional_id)
  older-block.pcap           a request that arrives after broker 1 answered 8000 (its newest
                             block) is granted 7999 (its older one): a fault
  unknown-placement.pcap     grants of a broker no message names, and of a broker after its
                             unanswered AllocateProducerIds (unknown); an id beyond every block of
                             a broker whose answers were all read (outside_blocks, a fault)
  <name>.truth.json          what was sent, and what a correct reader must conclude from it

Ports: controllers 127.0.0.1:19093 (and 19094 in stale-controller), brokers' client
listeners 127.0.0.1:19201 (broker 1), 19202 (broker 2) and 19203 (broker 3, in
unknown-placement). None is Wireshark's Kafka port: decode with `tshark -d
tcp.port==19093,kafka -d tcp.port==19094,kafka -d tcp.port==19201,kafka -d
tcp.port==19202,kafka -d tcp.port==19203,kafka` (each truth lists its `decode_as`).

Usage (as root; tcpdump needed; tshark optional, used to check the result):

    python3 scripts/make-producer-fixtures.py [--out DIR] [--only NAME ...]

NAME is a capture's name without `.pcap`; without --only every capture is made.

Every run overwrites these files; timestamps and ephemeral ports change.
Python 3.11, standard library only. The Kafka encoders, socket helpers and tcpdump
wrapper come from scripts/make-loopback-fixtures.py.
"""

from __future__ import annotations

import argparse
import base64
import importlib.util
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time
import uuid
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

MADE_BY = "scripts/make-producer-fixtures.py"
HOST = "127.0.0.1"
CONTROLLER_PORT, CONTROLLER_2_PORT = 19093, 19094
BROKER_PORTS = {1: 19201, 2: 19202, 3: 19203}
REPLICATION_PORT_1 = 19211  # broker 1's second listener: registered, never connected to
NONE, COORDINATOR_LOAD_IN_PROGRESS, NOT_CONTROLLER = 0, 14, 41
MAX_PCAP_BYTES = 100_000

API_NAMES = {3: "Metadata", 18: "ApiVersions", 22: "InitProducerId", 53: "BeginQuorumEpoch",
             62: "BrokerRegistration", 67: "AllocateProducerIds"}
# request header v1 / response header v0 below these versions, v2 / v1 from them on
FLEXIBLE_FROM = {3: 9, 22: 2, 53: 1, 62: 0, 67: 0}

CLUSTER_UUID = uuid.UUID("5f3c1a2e-8d4b-4e6f-9a70-1b2c3d4e5f60")
CLUSTER_ID = base64.urlsafe_b64encode(CLUSTER_UUID.bytes).decode().rstrip("=")  # as Kafka prints one
METADATA_TOPIC = "__cluster_metadata"


def fixed_uuid(name: str) -> uuid.UUID:
    return uuid.uuid5(CLUSTER_UUID, name)


# ---------------------------------------------------------------------------
# Kafka messages: each encoder returns (frame bytes, fields as the truth lists them)

i8, i16, i32, i64, u16 = lf.i8, lf.i16, lf.i32, lf.i64, lf.u16
cstr, carr, tagged, frame = lf.compact_string, lf.compact_array, lf.tagged, lf.frame
NO_TAGS = tagged([])


def boolean(v: bool) -> bytes:
    return i8(1 if v else 0)


def request_header(api_key: int, version: int, corr: int, client_id: str | None) -> bytes:
    if version >= FLEXIBLE_FROM[api_key]:
        return lf.req_header_v2(api_key, version, corr, client_id)
    return lf.req_header_v1(api_key, version, corr, client_id)


def response_header(api_key: int, version: int, corr: int) -> bytes:
    if version >= FLEXIBLE_FROM[api_key]:
        return lf.resp_header_v1(corr)
    return lf.resp_header_v0(corr)


def api_versions_request(corr: int, client_id: str) -> tuple[bytes, dict]:
    body = cstr("apache-kafka-java") + cstr("4.1.0") + NO_TAGS
    return frame(lf.req_header_v2(18, 3, corr, client_id) + body), {
        "client_software_name": "apache-kafka-java", "client_software_version": "4.1.0"}


BROKER_APIS = [(0, 0, 12), (3, 0, 13), (18, 0, 4), (22, 0, 6)]


def api_versions_response(corr: int) -> tuple[bytes, dict]:
    entries = [i16(k) + i16(lo) + i16(hi) + NO_TAGS for k, lo, hi in BROKER_APIS]
    # ApiVersions responses always use response header v0
    body = i16(0) + carr(entries) + i32(0) + NO_TAGS
    return frame(lf.resp_header_v0(corr) + body), {
        "error_code": 0, "api_keys": [{"api_key": k, "min_version": lo, "max_version": hi}
                                      for k, lo, hi in BROKER_APIS], "throttle_time_ms": 0}


def init_pid_request(version: int, corr: int, client_id: str, transactional_id: str | None,
                     timeout_ms: int, producer_id: int = -1, producer_epoch: int = -1) -> tuple[bytes, dict]:
    flexible = version >= 2
    body = (cstr if flexible else lf.string)(transactional_id) + i32(timeout_ms)
    fields: dict = {"transactional_id": transactional_id, "transaction_timeout_ms": timeout_ms}
    if version >= 3:
        body += i64(producer_id) + i16(producer_epoch)
        fields.update(producer_id=producer_id, producer_epoch=producer_epoch)
    if version >= 6:
        body += boolean(False) + boolean(False)
        fields.update(enable_2pc=False, keep_prepared_txn=False)
    if flexible:
        body += NO_TAGS
        fields["tagged_fields"] = []
    return frame(request_header(22, version, corr, client_id) + body), fields


def init_pid_response(version: int, corr: int, error: int, producer_id: int,
                      producer_epoch: int) -> tuple[bytes, dict]:
    body = i32(0) + i16(error) + i64(producer_id) + i16(producer_epoch)
    fields: dict = {"throttle_time_ms": 0, "error_code": error, "producer_id": producer_id,
                    "producer_epoch": producer_epoch}
    if version >= 6:
        body += i64(-1) + i16(-1)
        fields.update(ongoing_txn_producer_id=-1, ongoing_txn_producer_epoch=-1)
    if version >= 2:
        body += NO_TAGS
        fields["tagged_fields"] = []
    return frame(response_header(22, version, corr) + body), fields


def allocate_request(corr: int, client_id: str, broker_id: int, broker_epoch: int) -> tuple[bytes, dict]:
    a = lf.Apid(corr, client_id, broker_id, broker_epoch)
    return a.request_bytes(), {"broker_id": broker_id, "broker_epoch": broker_epoch, "tagged_fields": []}


def allocate_response(corr: int, error: int, start: int, length: int) -> tuple[bytes, dict]:
    a = lf.Apid(corr, None, 0, 0, response={"throttle": 0, "error": error, "start": start, "len": length})
    return a.response_bytes(), {"throttle_time_ms": 0, "error_code": error, "producer_id_start": start,
                                "producer_id_len": length, "tagged_fields": []}


def registration_request(corr: int, client_id: str, broker_id: int,
                         listeners: list[tuple[str, str, int]]) -> tuple[bytes, dict]:
    """BrokerRegistration v4; listeners as (name, host, port), all PLAINTEXT (security protocol 0)."""
    incarnation = fixed_uuid(f"incarnation-{broker_id}")
    log_dir = fixed_uuid(f"log-dir-{broker_id}")
    features = [("metadata.version", 7, 27), ("kraft.version", 0, 1), ("transaction.version", 0, 2)]
    body = (i32(broker_id) + cstr(CLUSTER_ID) + incarnation.bytes
            + carr([cstr(n) + cstr(h) + u16(p) + i16(0) + NO_TAGS for n, h, p in listeners])
            + carr([cstr(n) + i16(lo) + i16(hi) + NO_TAGS for n, lo, hi in features])
            + cstr(None)          # rack
            + boolean(False)      # is_migrating_zk_broker (v1+)
            + carr([log_dir.bytes])  # log_dirs (v2+)
            + i64(-1)             # previous_broker_epoch (v3+)
            + NO_TAGS)
    return frame(request_header(62, 4, corr, client_id) + body), {
        "broker_id": broker_id, "cluster_id": CLUSTER_ID, "incarnation_id": str(incarnation),
        "listeners": [{"name": n, "host": h, "port": p, "security_protocol": 0} for n, h, p in listeners],
        "features": [{"name": n, "min_supported_version": lo, "max_supported_version": hi}
                     for n, lo, hi in features],
        "rack": None, "is_migrating_zk_broker": False, "log_dirs": [str(log_dir)],
        "previous_broker_epoch": -1, "tagged_fields": []}


def registration_response(corr: int, broker_epoch: int) -> tuple[bytes, dict]:
    body = i32(0) + i16(0) + i64(broker_epoch) + NO_TAGS
    return frame(response_header(62, 4, corr) + body), {
        "throttle_time_ms": 0, "error_code": 0, "broker_epoch": broker_epoch, "tagged_fields": []}


def metadata_request(corr: int, client_id: str) -> tuple[bytes, dict]:
    """Metadata v12 for no topics (an empty array; null would mean all topics)."""
    body = carr([]) + boolean(True) + boolean(False) + NO_TAGS
    return frame(request_header(3, 12, corr, client_id) + body), {
        "topics": [], "allow_auto_topic_creation": True, "include_topic_authorized_operations": False,
        "tagged_fields": []}


def metadata_response(corr: int, brokers: list[tuple[int, str, int]], controller_id: int) -> tuple[bytes, dict]:
    body = (i32(0)
            + carr([i32(n) + cstr(h) + i32(p) + cstr(None) + NO_TAGS for n, h, p in brokers])
            + cstr(CLUSTER_ID) + i32(controller_id) + carr([]) + NO_TAGS)
    return frame(response_header(3, 12, corr) + body), {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": n, "host": h, "port": p, "rack": None} for n, h, p in brokers],
        "cluster_id": CLUSTER_ID, "controller_id": controller_id, "topics": [], "tagged_fields": []}


def begin_quorum_request(corr: int, client_id: str, voter_id: int, leader_id: int, leader_epoch: int,
                         endpoint: tuple[str, int]) -> tuple[bytes, dict]:
    """BeginQuorumEpoch v1, sent by the new leader to a voter."""
    voter_dir = fixed_uuid(f"directory-{voter_id}")
    part = i32(0) + voter_dir.bytes + i32(leader_id) + i32(leader_epoch) + NO_TAGS
    body = (cstr(CLUSTER_ID) + i32(voter_id)
            + carr([cstr(METADATA_TOPIC) + carr([part]) + NO_TAGS])
            + carr([cstr("CONTROLLER") + cstr(endpoint[0]) + u16(endpoint[1]) + NO_TAGS])
            + NO_TAGS)
    return frame(request_header(53, 1, corr, client_id) + body), {
        "cluster_id": CLUSTER_ID, "voter_id": voter_id,
        "topics": [{"topic_name": METADATA_TOPIC, "partitions": [{
            "partition_index": 0, "voter_directory_id": str(voter_dir), "leader_id": leader_id,
            "leader_epoch": leader_epoch}]}],
        "leader_endpoints": [{"name": "CONTROLLER", "host": endpoint[0], "port": endpoint[1]}],
        "tagged_fields": []}


def begin_quorum_response(corr: int, leader_id: int, leader_epoch: int,
                          endpoint: tuple[str, int]) -> tuple[bytes, dict]:
    """BeginQuorumEpoch v1 response: the voter's view, and the leader's endpoint in tag 0."""
    part = i32(0) + i16(0) + i32(leader_id) + i32(leader_epoch) + NO_TAGS
    node_endpoints = carr([i32(leader_id) + cstr(endpoint[0]) + u16(endpoint[1]) + NO_TAGS])
    body = (i16(0) + carr([cstr(METADATA_TOPIC) + carr([part]) + NO_TAGS])
            + tagged([(0, node_endpoints)]))
    return frame(response_header(53, 1, corr) + body), {
        "error_code": 0,
        "topics": [{"topic_name": METADATA_TOPIC, "partitions": [{
            "partition_index": 0, "error_code": 0, "leader_id": leader_id, "leader_epoch": leader_epoch}]}],
        "node_endpoints": [{"node_id": leader_id, "host": endpoint[0], "port": endpoint[1]}],
        "tagged_fields": [{"tag": 0, "data": node_endpoints.hex()}]}


def check_encoders() -> None:
    """The InitProducerId test vectors of i28-plan.md §1, re-derived."""
    vectors = [
        (init_pid_request(4, 1, "pidshark-load", None, 60000),
         "00000028001600040000000100 0d706964736861726b2d6c6f616400 00 0000ea60ffffffffffffffffffff00"),
        (init_pid_request(4, 2, "pidshark-load", "tx-1", 60000, 5000, 3),
         "0000002c00160004000000020 00d706964736861726b2d6c6f616400 05 74782d31 0000ea60 0000000000001388 0003 00"),
        (init_pid_response(4, 1, 0, 1000, 0), "000000160000000100 00000000 0000 00000000000003e8 0000 00"),
        (init_pid_response(4, 2, 47, -1, -1), "000000160000000200 00000000 002f ffffffffffffffff ffff 00"),
        (init_pid_request(0, 3, "pidshark-load", None, 60000),
         "0000001d00160000000000 03000d706964736861726b2d6c6f6164 ffff 0000ea60"),
        (init_pid_response(0, 3, 0, 7, 0), "00000014 00000003 00000000 0000 0000000000000007 0000"),
        (init_pid_request(6, 4, "pidshark-load", None, 60000),
         "0000002a00160006000000040 00d706964736861726b2d6c6f616400 00 0000ea60ffffffffffffffffffff 0000 00"),
        (init_pid_response(6, 4, 0, 1000, 0),
         "000000200000000400 00000000 0000 00000000000003e8 0000 ffffffffffffffff ffff 00"),
    ]
    for (got, _), want in vectors:
        assert got.hex() == want.replace(" ", ""), (got.hex(), want)


# ---------------------------------------------------------------------------
# connections: both ends driven from this thread; every message is logged


class Conn:
    def __init__(self, scenario: "Scenario", port: int, role: dict):
        self.scenario = scenario
        self.client = lf.connect(socket.AF_INET, HOST, port)
        self.server, _ = scenario.listeners[port].accept()
        lf.nodelay(self.server)
        self.client_addr = lf.fmt_addr(self.client.getsockname())
        self.server_addr = lf.fmt_addr(self.client.getpeername())
        self.role = role
        self.sent = {"c2s": bytearray(), "s2c": bytearray()}
        self.versions: dict[int, tuple[int, int]] = {}  # corr -> (api_key, version) of requests

    def _xfer(self, direction: str, data: bytes) -> int:
        src, dst = (self.client, self.server) if direction == "c2s" else (self.server, self.client)
        offset = len(self.sent[direction])
        src.sendall(data)
        if lf.recv_exact(dst, len(data)) != data:
            raise RuntimeError(f"bytes changed in transit on {self.client_addr} -> {self.server_addr}")
        self.sent[direction] += data
        time.sleep(lf.SEND_GAP)
        return offset

    def request(self, api_key: int, version: int, corr: int, client_id: str | None,
                encoded: tuple[bytes, dict]) -> dict:
        data, fields = encoded
        assert struct.unpack(">hhi", data[4:12]) == (api_key, version, corr)
        self.versions[corr] = (api_key, version)
        return self.scenario.log(self, "request", api_key, version, corr, data,
                                 dict(client_id=client_id, **fields), self._xfer("c2s", data))

    def respond(self, corr: int, encoded: tuple[bytes, dict]) -> dict:
        data, fields = encoded
        api_key, version = self.versions[corr]
        assert struct.unpack(">i", data[4:8])[0] == corr
        return self.scenario.log(self, "response", api_key, version, corr, data, fields,
                                 self._xfer("s2c", data))

    def close(self) -> None:
        self.client.close()
        lf.wait_eof(self.server)
        self.server.close()
        time.sleep(0.05)


class Scenario:
    """One capture: its listeners, connections in order of connecting, messages in order sent."""

    def __init__(self, name: str, ports: list[int]):
        self.name = name
        self.ports = ports
        self.listeners = {p: lf.listener(socket.AF_INET, HOST, p) for p in ports}
        self.conns: list[Conn] = []
        self.messages: list[dict] = []
        self.open: list[Conn] = []
        # (connection, correlation id) -> (placement, start of the block pidshark must name or
        # None): what the scenario means each grant to be; checked against place_grants()
        self.intent: dict[tuple[int, int], tuple[str, int | None]] = {}

    def connect(self, port: int, **role) -> Conn:
        c = Conn(self, port, role)
        self.conns.append(c)
        self.open.append(c)
        return c

    def close(self, c: Conn) -> None:
        c.close()
        self.open.remove(c)

    def log(self, c: Conn, direction: str, api_key: int, version: int, corr: int, data: bytes,
            fields: dict, offset: int) -> dict:
        m = {"index": len(self.messages), "connection": self.conns.index(c), "client": c.client_addr,
             "server": c.server_addr, "direction": direction, "api_key": api_key, "api": API_NAMES[api_key],
             "api_version": version, "correlation_id": corr, "offset": offset, "size": len(data),
             "fields": fields}
        self.messages.append(m)
        return m

    def shutdown(self) -> None:
        for c in list(self.open):
            self.close(c)
        for s in self.listeners.values():
            s.close()


# ---------------------------------------------------------------------------
# reading the capture back: frames, streams, timestamps


def read_packets(pcap: Path) -> list[dict]:
    data = pcap.read_bytes()
    assert data[:4] == b"\xd4\xc3\xb2\xa1", "expected a little-endian microsecond pcap"
    out = []
    for num, off, _, pkt in lf.pcap_records(data):
        sec, usec = struct.unpack("<II", data[off:off + 8])
        assert struct.unpack(">H", pkt[12:14])[0] == 0x0800, "IPv4 only"
        ip = pkt[14:]
        ihl, total = (ip[0] & 0x0F) * 4, struct.unpack(">H", ip[2:4])[0]
        tcp = ip[ihl:total]
        sport, dport, seq = struct.unpack(">HHI", tcp[:8])
        src = lf.fmt_addr((socket.inet_ntop(socket.AF_INET, ip[12:16]), sport))
        dst = lf.fmt_addr((socket.inet_ntop(socket.AF_INET, ip[16:20]), dport))
        out.append({"frame": num, "ts_us": sec * 1_000_000 + usec, "src": src, "dst": dst, "seq": seq,
                    "flags": tcp[13], "len": len(tcp) - (tcp[12] >> 4) * 4})
    return out


def place_messages(sc: Scenario, pcap: Path) -> int:
    """Adds first_frame, frame and timestamp_us to each message; checks the capture holds
    exactly what was sent, each message in segments of its own. Returns the packet count."""
    packets = read_packets(pcap)
    isn: dict[tuple[str, str], int] = {}
    streams: list[frozenset] = []
    segs: dict[tuple[str, str], list[tuple[int, int, dict]]] = {}
    for p in packets:
        key = (p["src"], p["dst"])
        if p["flags"] & 0x02:
            isn[key] = p["seq"]
            if not p["flags"] & 0x10:
                streams.append(frozenset(key))
            continue
        if p["len"]:
            start = (p["seq"] - isn[key] - 1) & 0xFFFFFFFF
            segs.setdefault(key, []).append((start, start + p["len"], p))
    want = [frozenset((c.client_addr, c.server_addr)) for c in sc.conns]
    assert streams == want, f"{pcap.name}: connections differ from those opened"
    for c in sc.conns:
        for d, key in (("c2s", (c.client_addr, c.server_addr)), ("s2c", (c.server_addr, c.client_addr))):
            got, pos = bytearray(), 0
            for start, end, _ in segs.get(key, []):
                assert start == pos, f"{pcap.name}: retransmission or gap on {key}"
                pos = end
            assert pos == len(c.sent[d]), f"{pcap.name}: {pos} of {len(c.sent[d])} bytes on {key}"
    # the same check by make-loopback-fixtures.py's reassembler
    for c, s in zip(sc.conns, lf.tcp_streams(lf.pcap_records(pcap.read_bytes()))):
        assert (s["client"], s["server"]) == (c.client_addr, c.server_addr)
        assert s["data"][c.client_addr] == c.sent["c2s"] and s["data"][c.server_addr] == c.sent["s2c"]
    for m in sc.messages:
        key = (m["client"], m["server"]) if m["direction"] == "request" else (m["server"], m["client"])
        mine = [(s, e, p) for s, e, p in segs[key] if s < m["offset"] + m["size"] and e > m["offset"]]
        assert mine[0][0] == m["offset"] and mine[-1][1] == m["offset"] + m["size"], \
            f"{pcap.name}: message {m['index']} shares a segment with another"
        m["first_frame"], m["frame"], m["timestamp_us"] = mine[0][2]["frame"], mine[-1][2]["frame"], \
            mine[-1][2]["ts_us"]
    return len(packets)


# ---------------------------------------------------------------------------
# the truth


def exchanges(sc: Scenario, api_key: int) -> list[tuple[dict, dict | None]]:
    """(request, response or None) of one API, in the order the requests were sent."""
    out = []
    for rq in sc.messages:
        if rq["api_key"] != api_key or rq["direction"] != "request":
            continue
        rs = next((m for m in sc.messages if m["direction"] == "response" and m["connection"] == rq["connection"]
                   and m["correlation_id"] == rq["correlation_id"]), None)
        out.append((rq, rs))
    return out


def conn_role(sc: Scenario, m: dict) -> dict:
    return sc.conns[m["connection"]].role


def blocks_of(sc: Scenario) -> list[dict]:
    out = []
    for rq, rs in exchanges(sc, 67):
        f = rs["fields"] if rs else None
        if not f or f["error_code"] != NONE:
            continue
        out.append({"broker_id": rq["fields"]["broker_id"], "broker_epoch": rq["fields"]["broker_epoch"],
                    "start": f["producer_id_start"], "len": f["producer_id_len"],
                    "end": f["producer_id_start"] + f["producer_id_len"] - 1,
                    "controller_id": conn_role(sc, rq)["controller"], "connection": rq["connection"],
                    "client": rq["client"], "server": rq["server"], "correlation_id": rq["correlation_id"],
                    "request_frame": rq["frame"], "response_frame": rs["frame"],
                    "response_timestamp_us": rs["timestamp_us"]})
    return out


def allocate_truth(sc: Scenario) -> list[dict]:
    """AllocateProducerIds exchanges in the shape of fixtures/controller-loopback.truth.json."""
    out = []
    for rq, rs in exchanges(sc, 67):
        out.append({"client": rq["client"], "server": rq["server"], "correlation_id": rq["correlation_id"],
                    "request": {"api_version": 0, "client_id": rq["fields"]["client_id"],
                                "header_tagged_fields": [], "broker_id": rq["fields"]["broker_id"],
                                "broker_epoch": rq["fields"]["broker_epoch"], "tagged_fields": []},
                    "response": None if rs is None else dict(rs["fields"], header_tagged_fields=[])})
    return out


def producer_ids(sc: Scenario, blocks: list[dict], story: dict) -> list[dict]:
    """Every InitProducerId exchange. `block_start` is the block the script's broker handed the id
    out from (`story`: (connection, corr) -> start, else the one block holding it), or, for a
    grant with a planned placement (`Scenario.intent`), the block of the capture that placement
    names (None for none); `blocks_holding` every block of that broker granted before the
    response that holds it."""
    out = []
    for rq, rs in exchanges(sc, 22):
        role, q, r = conn_role(sc, rq), rq["fields"], rs["fields"]
        broker = role["broker"]
        granted = r["error_code"] == NONE and r["producer_id"] >= 0
        holding = [b["start"] for b in blocks if b["broker_id"] == broker and b["response_frame"] < rs["frame"]
                   and b["start"] <= r["producer_id"] <= b["end"]] if granted else []
        key = (rq["connection"], rq["correlation_id"])
        if key in sc.intent:
            start = sc.intent[key][1]
            assert not granted or start is None or any(
                b["start"] == start and b["start"] <= r["producer_id"] <= b["end"] for b in blocks), (rq, start)
        else:
            start = story.get(key, holding[0] if len(holding) == 1 else None)
            assert not granted or start in holding, (rq, holding)
        out.append({
            "connection": rq["connection"], "client": rq["client"], "server": rq["server"],
            "client_port": int(rq["client"].rsplit(":", 1)[1]), "broker_id": broker,
            "producer": role.get("producer"), "correlation_id": rq["correlation_id"],
            "api_version": rq["api_version"], "client_id": q["client_id"],
            "transactional_id": q["transactional_id"], "transaction_timeout_ms": q["transaction_timeout_ms"],
            "requested_producer_id": q.get("producer_id"), "requested_producer_epoch": q.get("producer_epoch"),
            "enable_2pc": q.get("enable_2pc"), "keep_prepared_txn": q.get("keep_prepared_txn"),
            "error_code": r["error_code"], "producer_id": r["producer_id"], "producer_epoch": r["producer_epoch"],
            "ongoing_txn_producer_id": r.get("ongoing_txn_producer_id"),
            "ongoing_txn_producer_epoch": r.get("ongoing_txn_producer_epoch"),
            "granted": granted, "block_start": start if granted else None, "blocks_holding": holding,
            "request_first_frame": rq["first_frame"], "request_frame": rq["frame"], "response_frame": rs["frame"],
            "request_timestamp_us": rq["timestamp_us"], "response_timestamp_us": rs["timestamp_us"],
            "latency_us": rs["timestamp_us"] - rq["timestamp_us"],
        })
    return out


PLACEMENTS = ["in_block", "previous_block", "before_capture", "kept_by_transactional_id",
              "another_brokers_block", "older_block", "outside_blocks", "unknown"]
PLACEMENT_FAULTS = ["another_brokers_block", "older_block", "outside_blocks"]


def known_brokers(sc: Scenario) -> dict[str, tuple[int, int]]:
    """address -> (broker id, frame) as the capture names them: BrokerRegistration listeners
    and the brokers of Metadata responses."""
    out: dict[str, tuple[int, int]] = {}
    for m in sc.messages:
        if m["api_key"] == 62 and m["direction"] == "request":
            for ln in m["fields"]["listeners"]:
                out.setdefault(f"{ln['host']}:{ln['port']}", (m["fields"]["broker_id"], m["frame"]))
        if m["api_key"] == 3 and m["direction"] == "response":
            for b in m["fields"]["brokers"]:
                out.setdefault(f"{b['host']}:{b['port']}", (b["node_id"], m["frame"]))
    return out


def place_grants(sc: Scenario, blocks: list[dict], grants: list[dict]) -> list[dict]:
    """Where each granted id lies, as Kafka's producer-id manager (RPCProducerIdManager, 3.9
    and 4.x) hands ids out, judged from the capture alone (issue 37). A broker grants from its
    current block; at 90% it asks for the next and keeps granting from the current one until it
    is used up, then switches, never back. Adds `known_broker_id`, `placement` and
    `placement_block` (the block of the capture the placement names, or None) to each grant,
    in the order the responses were sent (the order pidshark completes them), and returns the
    faults (`pid_outside_blocks` findings)."""
    known = known_brokers(sc)
    unanswered = [(rq["fields"]["broker_id"], rq["frame"]) for rq, rs in exchanges(sc, 67) if rs is None]
    first_grants: list[tuple[int, int, int]] = []  # (broker, block start, response frame): in_block, idempotent
    faults = []

    def ref(b: dict | None) -> dict | None:
        return None if b is None else {k: b[k] for k in ("start", "end", "broker_id", "response_frame")}

    for g in sorted(grants, key=lambda g: g["response_frame"]):
        mapped = known.get(g["server"])
        broker = mapped[0] if mapped and mapped[1] < g["request_frame"] else None
        g["known_broker_id"] = broker
        if not g["granted"]:
            g["placement"], g["placement_block"] = None, None
            continue
        pid, frame = g["producer_id"], g["response_frame"]
        before = [b for b in blocks if b["response_frame"] < frame]
        kept = g["transactional_id"] is not None and g["producer_epoch"] > 0
        idempotent = g["transactional_id"] is None

        def holding(bs: list[dict]) -> dict | None:
            return max((b for b in bs if b["start"] <= pid <= b["end"]), key=lambda b: b["response_frame"],
                       default=None)

        def left_for_newer(above: int) -> tuple | None:
            # the broker's first grant from a block newer than `above`, answered before this request
            return min((f for f in first_grants if f[0] == broker and f[1] > above
                        and f[2] < g["request_first_frame"]), key=lambda f: f[2], default=None)

        def among_own(held: dict, judged: bool) -> tuple[str, dict | None]:
            newest = max((b for b in before if b["broker_id"] == held["broker_id"]), key=lambda b: b["start"])
            if newest["start"] <= held["start"]:
                if idempotent:
                    first_grants.append((held["broker_id"], held["start"], frame))
                return "in_block", held
            if kept:
                return "kept_by_transactional_id", held
            if judged and idempotent and left_for_newer(held["start"]):
                return "older_block", held
            return "previous_block", held

        if broker is None:
            held = holding(before)
            placement = among_own(held, False) if held else ("unknown", None)
        else:
            own = [b for b in before if b["broker_id"] == broker]
            held, other = holding(own), holding(before)
            if held:
                placement = among_own(held, True)
            elif kept:
                placement = ("kept_by_transactional_id", other)
            elif other:
                placement = ("another_brokers_block", other)
            elif any(b == broker and f < frame for b, f in unanswered):
                placement = ("unknown", None)  # a block may have come in an answer not read
            elif not own:
                placement = ("before_capture", None)
            elif pid > min(b["start"] for b in own):
                placement = ("outside_blocks", None)
            elif left_for_newer(-1):
                placement = ("older_block", None)
            else:
                placement = ("previous_block", None)  # the block it held before the capture
        g["placement"], g["placement_block"] = placement[0], ref(placement[1])
        if placement[0] in PLACEMENT_FAULTS:
            faults.append({"kind": "pid_outside_blocks", "placement": placement[0],
                           **{k: g[k] for k in ("client", "connection", "correlation_id", "producer_id",
                                                "producer_epoch", "transactional_id", "broker_id",
                                                "request_frame", "response_frame")},
                           "block": g["placement_block"]})
    for g in grants:
        intent = sc.intent.get((g["connection"], g["correlation_id"]))
        if intent is None:
            continue
        got = (g["placement"], g["placement_block"]["start"] if g["placement_block"] else None)
        assert got == intent, f"{sc.name}: grant {g['producer_id']} (connection {g['connection']}, " \
                              f"corr {g['correlation_id']}) placed {got}, meant {intent}"
    return faults


def duplicates(grants: list[dict]) -> tuple[list[dict], list[dict]]:
    """Same (id, epoch) granted more than once: a duplicate when the holders differ in
    connection or transactional id. And the transactional ids that got their own id back
    with another epoch: not duplicates."""
    by_id: dict[tuple[int, int], list[dict]] = {}
    for g in grants:
        if g["granted"]:
            by_id.setdefault((g["producer_id"], g["producer_epoch"]), []).append(g)
    dup = []
    for (pid, epoch), gs in sorted(by_id.items()):
        if len({(g["connection"], g["transactional_id"]) for g in gs}) > 1:
            dup.append({"producer_id": pid, "producer_epoch": epoch, "holders": [
                {k: g[k] for k in ("client", "client_port", "server", "connection", "correlation_id",
                                   "transactional_id", "broker_id", "block_start", "response_frame")}
                for g in gs]})
    bumps = []
    by_txn: dict[tuple[str, int], list[dict]] = {}
    for g in grants:
        if g["granted"] and g["transactional_id"] is not None:
            by_txn.setdefault((g["transactional_id"], g["producer_id"]), []).append(g)
    for (txn, pid), gs in sorted(by_txn.items()):
        if len(gs) > 1:
            bumps.append({"transactional_id": txn, "producer_id": pid,
                          "epochs": [g["producer_epoch"] for g in gs],
                          "grants": [{k: g[k] for k in ("client", "connection", "correlation_id",
                                                        "requested_producer_id", "requested_producer_epoch",
                                                        "producer_epoch", "response_frame")} for g in gs],
                          "why": "the same transactional id got its own producer id back with a bumped epoch"})
    return dup, bumps


def block_findings(blocks: list[dict], grants: list[dict]) -> list[dict]:
    """pid_block_overlap and pid_block_regression as docs/report-format.md defines them
    (pairwise overlaps; a regression when a block starts at or below the end of the block
    reaching highest so far, asked for after that one was granted), with the producers
    holding an id in each overlap."""
    out = []
    for i, b in enumerate(blocks):
        for a in blocks[:i]:
            lo, hi = max(a["start"], b["start"]), min(a["end"], b["end"])
            if lo <= hi:
                affected = [{k: g[k] for k in ("client", "connection", "correlation_id", "producer_id",
                                               "producer_epoch", "transactional_id", "broker_id")}
                            for g in grants if g["granted"] and lo <= g["producer_id"] <= hi]
                out.append({"kind": "pid_block_overlap", "ids_start": lo, "ids_end": hi, "count": hi - lo + 1,
                            "frame": b["response_frame"], "broker_id": b["broker_id"],
                            "other_frame": a["response_frame"], "other_broker_id": a["broker_id"],
                            "affected_producers": affected})
        furthest = max(blocks[:i], key=lambda a: a["end"], default=None)
        if furthest and b["start"] <= furthest["end"] and b["request_frame"] > furthest["response_frame"]:
            out.append({"kind": "pid_block_regression", "frame": b["response_frame"], "broker_id": b["broker_id"],
                        "start": b["start"], "other_end": furthest["end"],
                        "other_broker_id": furthest["broker_id"], "other_frame": furthest["response_frame"]})
    return out


def retries(sc: Scenario) -> list[dict]:
    """pid_retry as docs/report-format.md defines it: a broker asks again after an error answer
    (asked after that answer came)."""
    out, last = [], {}
    for rq, rs in exchanges(sc, 67):
        broker = rq["fields"]["broker_id"]
        before = last.get(broker)
        if before and before[1] and before[1]["fields"]["error_code"] != NONE and rq["frame"] > before[1]["frame"]:
            out.append({"kind": "pid_retry", "frame": rq["frame"], "broker_id": broker,
                        "earlier_frame": before[0]["frame"], "error_code": before[1]["fields"]["error_code"]})
        last[broker] = (rq, rs)
    return out


def connections_truth(sc: Scenario) -> list[dict]:
    return [{"connection": i, "client": c.client_addr, "server": c.server_addr,
             "client_port": int(c.client_addr.rsplit(":", 1)[1]), **c.role} for i, c in enumerate(sc.conns)]


def api_frames(sc: Scenario) -> dict:
    counts: dict = {}
    for m in sc.messages:
        ent = counts.setdefault(m["api"], {"api_key": m["api_key"], "requests": 0, "responses": 0})
        ent[m["direction"] + "s"] += 1
    return dict(sorted(counts.items()))


def base_truth(sc: Scenario, pcap: Path, packets: int, note: str, story: dict | None = None) -> dict:
    blocks = blocks_of(sc)
    grants = producer_ids(sc, blocks, story or {})
    faults = place_grants(sc, blocks, grants)
    dup, bumps = duplicates(grants)
    return {
        "fixture": pcap.name, "made_by": MADE_BY, "note": note, "packets": packets,
        "ports": sc.ports, "decode_as": [f"tcp.port=={p},kafka" for p in sc.ports],
        "connections": len(sc.conns), "connection_list": connections_truth(sc),
        "messages": sc.messages, "other_api_frames": api_frames(sc),
        "exchanges": allocate_truth(sc), "blocks": blocks, "producer_ids": grants,
        "expected": {
            "brokers_by_address": [], "controllers": [], "controller_addresses": [],
            "pid_duplicate_grants": dup, "not_duplicates": bumps,
            "allocate_findings": block_findings(blocks, grants) + retries(sc),
            "pid_outside_blocks": faults,
            "placements": {p: sum(g["placement"] == p for g in grants) for p in PLACEMENTS},
            "concurrent_grants": [],
            "stale_controller_grants": [], "not_controller_answers": [], "allocate_answers": [],
            "voter_beliefs": [],
        },
    }


def registration_mappings(sc: Scenario) -> list[dict]:
    out = []
    for rq, rs in exchanges(sc, 62):
        for ln in rq["fields"]["listeners"]:
            out.append({"address": f"{ln['host']}:{ln['port']}", "broker_id": rq["fields"]["broker_id"],
                        "listener": ln["name"], "source": "broker_registration", "frame": rq["frame"],
                        "connection": rq["connection"],
                        "broker_epoch": rs["fields"]["broker_epoch"]})
    return out


# ---------------------------------------------------------------------------
# scenarios


def register(sc: Scenario, c: Conn, corr: int, broker: int, epoch: int, listeners) -> None:
    cid = c.role["client_id"]
    c.request(62, 4, corr, cid, registration_request(corr, cid, broker, listeners))
    c.respond(corr, registration_response(corr, epoch))


def allocate(c: Conn, corr: int, broker: int, epoch: int, error: int, start: int, length: int = 1000) -> None:
    cid = c.role["client_id"]
    c.request(67, 0, corr, cid, allocate_request(corr, cid, broker, epoch))
    c.respond(corr, allocate_response(corr, error, start, length))


def hello(c: Conn) -> None:
    cid = c.role["client_id"]
    c.request(18, 3, 0, cid, api_versions_request(0, cid))
    c.respond(0, api_versions_response(0))


def init_pid(c: Conn, version: int, corr: int, error: int, pid: int, epoch: int, txn: str | None = None,
             asked: tuple[int, int] = (-1, -1)) -> None:
    cid = c.role["client_id"]
    c.request(22, version, corr, cid, init_pid_request(version, corr, cid, txn, 60000, *asked))
    c.respond(corr, init_pid_response(version, corr, error, pid, epoch))


def next_corr(c: Conn) -> int:
    return max(c.versions, default=-1) + 1


def ask(c: Conn, txn: str | None = None, asked: tuple[int, int] = (-1, -1), version: int = 4) -> int:
    """An InitProducerId request alone (its answer comes with answer()); returns its correlation id."""
    cid, corr = c.role["client_id"], next_corr(c)
    c.request(22, version, corr, cid, init_pid_request(version, corr, cid, txn, 60000, *asked))
    return corr


def answer(c: Conn, corr: int, pid: int, placement: str, block: int | None = None, epoch: int = 0) -> dict:
    """The answer to request `corr` on `c`: producer id `pid`, which pidshark must place as
    `placement`, naming the block of the capture that starts at `block` (None: no block)."""
    sc = c.scenario
    key = (sc.conns.index(c), corr)
    assert key not in sc.intent
    sc.intent[key] = (placement, block)
    return c.respond(corr, init_pid_response(c.versions[corr][1], corr, NONE, pid, epoch))


def grant(c: Conn, pid: int, placement: str, block: int | None = None, epoch: int = 0, txn: str | None = None,
          asked: tuple[int, int] = (-1, -1)) -> int:
    corr = ask(c, txn, asked)
    answer(c, corr, pid, placement, block, epoch)
    return corr


def grants(c: Conn, pids, placement: str, block: int | None = None) -> None:
    for pid in pids:
        grant(c, pid, placement, block)


def ask_metadata(c: Conn, brokers: list[tuple[int, str, int]]) -> dict:
    cid, corr = c.role["client_id"], next_corr(c)
    c.request(3, 12, corr, cid, metadata_request(corr, cid))
    # ControllerId in a KRaft Metadata response is a random broker, not the controller
    return c.respond(corr, metadata_response(corr, brokers, controller_id=brokers[0][0]))


def broker_conn(sc: Scenario, broker: int, port: int = CONTROLLER_PORT, controller: int = 3000) -> Conn:
    return sc.connect(port, kind="broker_to_controller", broker=broker, controller=controller,
                      client_id=f"broker-{broker}-to-controller-channel-manager")


def client_conn(sc: Scenario, broker: int, producer: str, client_id: str) -> Conn:
    return sc.connect(BROKER_PORTS[broker], kind="client_to_broker", broker=broker, producer=producer,
                      client_id=client_id)


def kafka_20031(out: Path) -> dict:
    sc = Scenario("kafka-20031", [CONTROLLER_PORT, BROKER_PORTS[1], BROKER_PORTS[2]])
    pcap = out / "kafka-20031.pcap"
    try:
        with lf.Capture(pcap, sc.ports):
            b1, b2 = broker_conn(sc, 1), broker_conn(sc, 2)
            register(sc, b1, 0, 1, 12, [("PLAINTEXT", HOST, BROKER_PORTS[1]), ("REPLICATION", HOST, REPLICATION_PORT_1)])
            register(sc, b2, 0, 2, 14, [("PLAINTEXT", HOST, BROKER_PORTS[2])])
            allocate(b2, 1, 2, 14, NONE, 0)
            allocate(b1, 1, 1, 12, NONE, 1000)
            load = client_conn(sc, 1, "load", "producer-load")
            hello(load)
            for corr, pid in enumerate(range(1000, 1005), start=1):
                init_pid(load, 4, corr, NONE, pid, 0)
            c = client_conn(sc, 2, "C", "producer-C")
            hello(c)
            init_pid(c, 4, 1, NONE, 0, 0)
            a = client_conn(sc, 1, "A", "producer-A")
            hello(a)
            init_pid(a, 4, 1, NONE, 1999, 0)
            # the block that starts at the last id of the current one, accepted (KAFKA-20031)
            allocate(b1, 2, 1, 12, NONE, 1999)
            b = client_conn(sc, 1, "B", "producer-B")
            hello(b)
            init_pid(b, 4, 1, NONE, 1999, 0)
            init_pid(load, 4, 6, NONE, 2000, 0)
            time.sleep(0.05)
            sc.shutdown()
    finally:
        sc.shutdown()
    packets = place_messages(sc, pcap)
    a_conn, b_conn = 4, 5
    truth = base_truth(sc, pcap, packets, (
        "KAFKA-20031: broker 1 holds block 1000..1999 and accepts the next one, 1999..2998, which "
        "starts at its current block's last id. Producer A (from block 1000) and producer B (from "
        "block 1999) are both granted producer id 1999, epoch 0. After block 1999..2998 arrives, id "
        "1999 lies in two of broker 1's blocks: `blocks_holding` lists both for B, `block_start` says "
        "which one the broker took it from."),
        story={(a_conn, 1): 1000, (b_conn, 1): 1999})
    assert [c.role.get("producer") for c in sc.conns][a_conn:b_conn + 1] == ["A", "B"]
    truth["expected"]["brokers_by_address"] = registration_mappings(sc)
    dup = truth["expected"]["pid_duplicate_grants"]
    assert [(d["producer_id"], d["producer_epoch"], len(d["holders"])) for d in dup] == [(1999, 0, 2)], dup
    kinds = [f["kind"] for f in truth["expected"]["allocate_findings"]]
    assert kinds == ["pid_block_overlap", "pid_block_regression"], kinds
    return truth


def txn_bump(out: Path) -> dict:
    sc = Scenario("txn-bump", [CONTROLLER_PORT, BROKER_PORTS[1]])
    pcap = out / "txn-bump.pcap"
    try:
        with lf.Capture(pcap, sc.ports):
            b1 = broker_conn(sc, 1)
            register(sc, b1, 0, 1, 20, [("PLAINTEXT", HOST, BROKER_PORTS[1])])
            allocate(b1, 1, 1, 20, NONE, 1000)
            t1 = client_conn(sc, 1, "tx-1 (first)", "producer-tx-1")
            hello(t1)
            init_pid(t1, 4, 1, COORDINATOR_LOAD_IN_PROGRESS, -1, -1, txn="tx-1")
            init_pid(t1, 4, 2, NONE, 1500, 0, txn="tx-1")
            sc.close(t1)
            t2 = client_conn(sc, 1, "tx-1 (restarted)", "producer-tx-1")
            hello(t2)
            init_pid(t2, 4, 1, NONE, 1500, 1, txn="tx-1", asked=(1500, 0))
            idem = client_conn(sc, 1, "idempotent", "producer-idempotent")
            hello(idem)
            init_pid(idem, 4, 1, NONE, 1501, 0)
            old = client_conn(sc, 1, "legacy v0", "legacy-producer")
            init_pid(old, 0, 1, NONE, 1502, 0)
            v6 = client_conn(sc, 1, "tx-v6", "producer-tx-v6")
            hello(v6)
            init_pid(v6, 6, 1, NONE, 1503, 0, txn="tx-v6")
            time.sleep(0.05)
            sc.shutdown()
    finally:
        sc.shutdown()
    packets = place_messages(sc, pcap)
    truth = base_truth(sc, pcap, packets, (
        "Transactional id tx-1 is first answered COORDINATOR_LOAD_IN_PROGRESS (14), then granted 1500 "
        "epoch 0; its producer restarts on a new connection and asks with producer id 1500 epoch 0 "
        "(v4 request fields) and gets 1500 epoch 1: not a duplicate. One idempotent producer (1501), "
        "one InitProducerId v0 exchange (request header v1, response header v0, non-flexible; 1502) "
        "and one v6 exchange (Enable2Pc and KeepPreparedTxn false; ongoing txn producer id and epoch "
        "-1; 1503). Every id lies in broker 1's block 1000..1999, granted in the capture."))
    truth["expected"]["brokers_by_address"] = registration_mappings(sc)
    assert not truth["expected"]["pid_duplicate_grants"] and len(truth["expected"]["not_duplicates"]) == 1
    assert not truth["expected"]["allocate_findings"]
    return truth


def metadata_only(out: Path) -> dict:
    sc = Scenario("metadata-only", [CONTROLLER_PORT, BROKER_PORTS[1], BROKER_PORTS[2]])
    pcap = out / "metadata-only.pcap"
    brokers = [(1, HOST, BROKER_PORTS[1]), (2, HOST, BROKER_PORTS[2])]
    try:
        with lf.Capture(pcap, sc.ports):
            b2 = broker_conn(sc, 2)
            allocate(b2, 7, 2, 33, NONE, 2000)
            m = client_conn(sc, 2, "M", "producer-M")
            hello(m)
            cid = m.role["client_id"]
            m.request(3, 12, 1, cid, metadata_request(1, cid))
            # ControllerId in a KRaft Metadata response is a random broker, not the controller
            metadata = m.respond(1, metadata_response(1, brokers, controller_id=1))
            init_pid(m, 4, 2, NONE, 2000, 0)
            init_pid(m, 4, 3, NONE, 2001, 0)
            time.sleep(0.05)
            sc.shutdown()
    finally:
        sc.shutdown()
    packets = place_messages(sc, pcap)
    truth = base_truth(sc, pcap, packets, (
        "No BrokerRegistration: broker 2's controller connection carries only AllocateProducerIds "
        "(broker id 2, block 2000..2999). A client on 127.0.0.1:19202 asks Metadata v12 for no topics; "
        "the response lists node 1 at 127.0.0.1:19201 and node 2 at 127.0.0.1:19202 (ControllerId 1, a "
        "broker, as KRaft sends it). Its InitProducerId grants 2000 and 2001 belong to broker 2 only "
        "through the Metadata mapping, and lie in broker 2's block. The Metadata response shows two "
        "brokers on 127.0.0.1, so the host of broker 2's controller connection must not be read as "
        "'one broker on this host'. Nothing connects to 127.0.0.1:19201."))
    truth["expected"]["brokers_by_address"] = [
        {"address": f"{h}:{p}", "broker_id": n, "source": "metadata", "frame": metadata["frame"],
         "connection": metadata["connection"]} for n, h, p in brokers]
    assert all(g["block_start"] == 2000 for g in truth["producer_ids"])
    return truth


def stale_controller(out: Path) -> dict:
    sc = Scenario("stale-controller", [CONTROLLER_PORT, CONTROLLER_2_PORT])
    pcap = out / "stale-controller.pcap"
    ep1, ep2 = (HOST, CONTROLLER_PORT), (HOST, CONTROLLER_2_PORT)
    events: dict = {}
    try:
        with lf.Capture(pcap, sc.ports):
            # 3001 begins epoch 4: tells voter 3002
            q1 = sc.connect(CONTROLLER_2_PORT, kind="controller_to_controller", sender=3001, receiver=3002,
                            client_id="raft-client-3001")
            events["begin_4"] = q1.request(53, 1, 0, "raft-client-3001",
                                           begin_quorum_request(0, "raft-client-3001", 3002, 3001, 4, ep1))
            events["begin_4_response"] = q1.respond(0, begin_quorum_response(0, 3001, 4, ep1))
            b1 = broker_conn(sc, 1, CONTROLLER_PORT, 3001)
            allocate(b1, 1, 1, 40, NONE, 1000)
            # 3002 begins epoch 5: tells voter 3001
            q2 = sc.connect(CONTROLLER_PORT, kind="controller_to_controller", sender=3002, receiver=3001,
                            client_id="raft-client-3002")
            events["begin_5"] = q2.request(53, 1, 0, "raft-client-3002",
                                           begin_quorum_request(0, "raft-client-3002", 3001, 3002, 5, ep2))
            events["begin_5_response"] = q2.respond(0, begin_quorum_response(0, 3002, 5, ep2))
            # 3001 still answers as if it led: the stale grant (never committed)
            allocate(b1, 2, 1, 40, NONE, 2000)
            allocate(b1, 3, 1, 40, NOT_CONTROLLER, -1, 0)
            b1_new = broker_conn(sc, 1, CONTROLLER_2_PORT, 3002)
            # the new leader never saw 2000..2999 committed, so it grants those ids again
            allocate(b1_new, 4, 1, 40, NONE, 2000)
            time.sleep(0.05)
            sc.shutdown()
    finally:
        sc.shutdown()
    packets = place_messages(sc, pcap)
    truth = base_truth(sc, pcap, packets, (
        "Controllers 3001 (127.0.0.1:19093) and 3002 (127.0.0.1:19094). 3001 begins epoch 4 "
        "(BeginQuorumEpoch v1 to 3002, leader endpoint CONTROLLER 127.0.0.1:19093) and grants broker 1 "
        "block 1000..1999; 3002 begins epoch 5 (BeginQuorumEpoch v1 to 3001, endpoint 127.0.0.1:19094, "
        "which 3001 acknowledges); 3001 then still grants broker 1 block 2000..2999 (stale: never "
        "committed) and next answers NOT_CONTROLLER; broker 1 asks 3002 on a new connection and is "
        "granted 2000..2999 again, since the stale block was never committed."))
    b4, b5 = events["begin_4"], events["begin_5"]
    truth["expected"]["controllers"] = [
        {"leader": 3001, "epoch": 4, "from_frame": b4["frame"], "from_timestamp_us": b4["timestamp_us"],
         "to_frame": b5["frame"], "to_timestamp_us": b5["timestamp_us"], "how": "begin_quorum_epoch",
         "connection": b4["connection"]},
        {"leader": 3002, "epoch": 5, "from_frame": b5["frame"], "from_timestamp_us": b5["timestamp_us"],
         "to_frame": None, "to_timestamp_us": None, "how": "begin_quorum_epoch", "connection": b5["connection"]},
    ]
    truth["expected"]["voter_beliefs"] = [
        {"voter": 3002, "leader": 3001, "epoch": 4, "frame": events["begin_4_response"]["frame"],
         "how": "begin_quorum_epoch_response"},
        {"voter": 3001, "leader": 3002, "epoch": 5, "frame": events["begin_5_response"]["frame"],
         "how": "begin_quorum_epoch_response"},
    ]
    truth["expected"]["controller_addresses"] = [
        {"controller_id": 3001, "address": f"{HOST}:{CONTROLLER_PORT}", "source": "begin_quorum_epoch",
         "frame": b4["frame"]},
        {"controller_id": 3002, "address": f"{HOST}:{CONTROLLER_2_PORT}", "source": "begin_quorum_epoch",
         "frame": b5["frame"]},
    ]
    blocks = truth["blocks"]
    # stale: asked for after 3002 began epoch 5 (asked before and answered after would be a
    # block 3001 committed, its answer late)
    stale = [b for b in blocks if b["controller_id"] == 3001 and b["request_frame"] > b5["frame"]]
    assert [b["start"] for b in stale] == [2000]
    truth["expected"]["stale_controller_grants"] = [
        dict(b, leader_seen=3002, leader_seen_epoch=5, leader_seen_frame=b5["frame"]) for b in stale]
    truth["expected"]["not_controller_answers"] = [
        {"controller_id": 3001, "server": rs["server"], "connection": rs["connection"],
         "correlation_id": rs["correlation_id"], "frame": rs["frame"]}
        for rq, rs in exchanges(sc, 67) if rs["fields"]["error_code"] == NOT_CONTROLLER]
    truth["expected"]["allocate_answers"] = [
        {"controller_id": conn_role(sc, rq)["controller"], "correlation_id": rq["correlation_id"],
         "error_code": rs["fields"]["error_code"], "producer_id_start": rs["fields"]["producer_id_start"],
         "frame": rs["frame"], "leader_then": 3001 if rs["frame"] < b5["frame"] else 3002,
         "epoch_then": 4 if rs["frame"] < b5["frame"] else 5} for rq, rs in exchanges(sc, 67)]
    kinds = [f["kind"] for f in truth["expected"]["allocate_findings"]]
    assert kinds == ["pid_block_overlap", "pid_block_regression", "pid_retry"], kinds
    return truth


def concurrent_truth(sc: Scenario, truth: dict, pairs: list[tuple[Conn, int, Conn, int]]) -> list[dict]:
    """Two grants of one broker answered in the other order than asked: `old` (from the block
    it held) asked before `new` (the first from its newest block) was answered, answered after."""
    def find(c: Conn, corr: int) -> dict:
        i = sc.conns.index(c)
        return next(g for g in truth["producer_ids"] if g["connection"] == i and g["correlation_id"] == corr)
    out = []
    for oc, ocorr, nc, ncorr in pairs:
        old, new = find(oc, ocorr), find(nc, ncorr)
        assert old["request_frame"] < new["request_frame"] < new["response_frame"] < old["response_frame"]
        assert new["placement"] == "in_block" and old["placement"] == "previous_block"
        keys = ("client", "connection", "correlation_id", "producer_id", "request_frame", "response_frame",
                "placement", "placement_block")
        out.append({"broker_id": old["broker_id"], "old": {k: old[k] for k in keys},
                    "new": {k: new[k] for k in keys}})
    return out


def placements_of(truth: dict) -> list[tuple[int, str]]:
    return [(g["producer_id"], g["placement"]) for g in truth["producer_ids"] if g["granted"]]


def prefetch_tail(out: Path) -> dict:
    sc = Scenario("prefetch-tail", [CONTROLLER_PORT, BROKER_PORTS[1], BROKER_PORTS[2]])
    pcap = out / "prefetch-tail.pcap"
    brokers = [(1, HOST, BROKER_PORTS[1]), (2, HOST, BROKER_PORTS[2])]
    pairs = []
    try:
        with lf.Capture(pcap, sc.ports):
            # before the capture the controller granted broker 1 5000..5999 and broker 2 6000..6999
            b1, b2 = broker_conn(sc, 1), broker_conn(sc, 2)
            p1 = client_conn(sc, 1, "load-1", "producer-load-1")
            hello(p1)
            metadata = ask_metadata(p1, brokers)
            p2 = client_conn(sc, 2, "load-2", "producer-load-2")
            hello(p2)
            grants(p1, range(5896, 5901), "before_capture")
            # 5900 is 90% of 5000..5999: broker 1 asks for its next block
            allocate(b1, 1, 1, 12, NONE, 7000)
            grants(p2, range(6896, 6901), "before_capture")
            allocate(b2, 1, 2, 14, NONE, 8000)
            # both keep granting from the blocks they held before the capture
            grants(p1, [5901, 5902, 5903, 5997, 5998, 5999], "previous_block")
            grants(p1, range(7000, 7003), "in_block", 7000)
            grants(p2, [6901, 6902, 6903, 6997, 6998], "previous_block")
            # two request-handler threads of broker 2: X claims 6999, the last id of the old
            # block, Y then switches to 8000..8999 and claims 8000; Y's answer goes out first
            y2 = client_conn(sc, 2, "Y2", "producer-y2")
            hello(y2)
            x_corr = ask(p2)
            y_corr = ask(y2)
            answer(y2, y_corr, 8000, "in_block", 8000)
            answer(p2, x_corr, 6999, "previous_block")
            pairs.append((p2, x_corr, y2, y_corr))
            grant(p2, 8001, "in_block", 8000)
            grants(p1, range(7898, 7901), "in_block", 7000)
            allocate(b1, 2, 1, 12, NONE, 9000)
            grants(p1, [7901, 7902, 7997, 7998], "previous_block", 7000)
            # the same on broker 1: 7999 asked before 9000 was answered, answered after it
            y1 = client_conn(sc, 1, "Y1", "producer-y1")
            hello(y1)
            x_corr = ask(p1)
            y_corr = ask(y1)
            answer(y1, y_corr, 9000, "in_block", 9000)
            answer(p1, x_corr, 7999, "previous_block", 7000)
            pairs.append((p1, x_corr, y1, y_corr))
            grant(p1, 9001, "in_block", 9000)
            grants(p2, range(8898, 8901), "in_block", 8000)
            allocate(b2, 2, 2, 14, NONE, 10000)
            grants(p2, [8901, 8998, 8999], "previous_block", 8000)
            grants(p2, [10000, 10001], "in_block", 10000)
            time.sleep(0.05)
            sc.shutdown()
    finally:
        sc.shutdown()
    packets = place_messages(sc, pcap)
    truth = base_truth(sc, pcap, packets, (
        "Kafka's prefetch tail (issue 37). Before the capture broker 1 holds 5000..5999 and broker 2 "
        "6000..6999. Broker 1 grants 5896..5900 (before_capture), asks at the 90% mark and gets "
        "7000..7999, keeps granting 5901..5999 (previous_block, the block held before the capture: no "
        "block), then 7000.. (in_block); at 7900 it prefetches 9000..9999 and grants 7901..7999 "
        "(previous_block, block 7000..7999) before switching to 9000. Broker 2 likewise: 6896..6900, "
        "8000..8999, 6901..6999, 8000.., 8900, 10000..10999, 8901..8999, 10000... Twice (6999/8000 on "
        "broker 2, 7999/9000 on broker 1) the old block's last id is asked for before the new block's "
        "first grant is answered and answered after it (two request-handler threads): legal, "
        "previous_block. Ids the capture skips went to producers it does not show. Brokers are known "
        "by the Metadata response on load-1's connection. No pid_ finding."))
    truth["expected"]["brokers_by_address"] = [
        {"address": f"{h}:{p}", "broker_id": n, "source": "metadata", "frame": metadata["frame"],
         "connection": metadata["connection"]} for n, h, p in brokers]
    truth["expected"]["concurrent_grants"] = concurrent_truth(sc, truth, pairs)
    assert not truth["expected"]["pid_outside_blocks"] and not truth["expected"]["allocate_findings"]
    assert not truth["expected"]["pid_duplicate_grants"]
    return truth


def another_brokers_block(out: Path) -> dict:
    sc = Scenario("another-brokers-block", [CONTROLLER_PORT, BROKER_PORTS[1], BROKER_PORTS[2]])
    pcap = out / "another-brokers-block.pcap"
    try:
        with lf.Capture(pcap, sc.ports):
            b1, b2 = broker_conn(sc, 1), broker_conn(sc, 2)
            register(sc, b1, 0, 1, 40, [("PLAINTEXT", HOST, BROKER_PORTS[1])])
            register(sc, b2, 0, 2, 41, [("PLAINTEXT", HOST, BROKER_PORTS[2])])
            allocate(b1, 1, 1, 40, NONE, 7000)
            allocate(b2, 1, 2, 41, NONE, 8000)
            l1 = client_conn(sc, 1, "load-1", "producer-load-1")
            hello(l1)
            grants(l1, [7000, 7001], "in_block", 7000)
            t1 = client_conn(sc, 1, "tx-move (on broker 1)", "producer-tx-move")
            hello(t1)
            grant(t1, 7002, "in_block", 7000, txn="tx-move")
            l2 = client_conn(sc, 2, "load-2", "producer-load-2")
            hello(l2)
            grant(l2, 8000, "in_block", 8000)
            # the planted fault: an idempotent producer of broker 2 gets an id of broker 1's block
            grant(l2, 7500, "another_brokers_block", 7000)
            # tx-move's coordinator moved to broker 2: it keeps its producer id, epoch bumped
            t2 = client_conn(sc, 2, "tx-move (on broker 2)", "producer-tx-move")
            hello(t2)
            grant(t2, 7002, "kept_by_transactional_id", 7000, epoch=1, txn="tx-move", asked=(7002, 0))
            grant(l2, 8001, "in_block", 8000)
            time.sleep(0.05)
            sc.shutdown()
    finally:
        sc.shutdown()
    packets = place_messages(sc, pcap)
    truth = base_truth(sc, pcap, packets, (
        "Brokers 1 and 2 register (listeners 127.0.0.1:19201 and :19202) and are granted 7000..7999 "
        "and 8000..8999. Broker 1 grants 7000, 7001 (idempotent) and 7002 to transactional id tx-move "
        "(epoch 0); broker 2 grants 8000, then 7500 to an idempotent producer (epoch 0): an id of "
        "broker 1's block and of none of its own (the planted fault: another_brokers_block, one "
        "pid_outside_blocks finding). tx-move, its coordinator now on broker 2, asks with producer id "
        "7002 epoch 0 and gets 7002 epoch 1 from broker 2: kept_by_transactional_id, not a fault. "
        "Then 8001."))
    truth["expected"]["brokers_by_address"] = registration_mappings(sc)
    faults = truth["expected"]["pid_outside_blocks"]
    assert [(f["placement"], f["producer_id"]) for f in faults] == [("another_brokers_block", 7500)], faults
    assert not truth["expected"]["pid_duplicate_grants"] and not truth["expected"]["allocate_findings"]
    return truth


def older_block(out: Path) -> dict:
    sc = Scenario("older-block", [CONTROLLER_PORT, BROKER_PORTS[1]])
    pcap = out / "older-block.pcap"
    try:
        with lf.Capture(pcap, sc.ports):
            b1 = broker_conn(sc, 1)
            register(sc, b1, 0, 1, 30, [("PLAINTEXT", HOST, BROKER_PORTS[1])])
            allocate(b1, 1, 1, 30, NONE, 7000)
            a = client_conn(sc, 1, "load", "producer-load")
            hello(a)
            grants(a, [7000, 7001, 7002, 7898, 7899, 7900], "in_block", 7000)
            allocate(b1, 2, 1, 30, NONE, 8000)
            grants(a, [7901, 7997, 7998], "previous_block", 7000)
            b = client_conn(sc, 1, "B", "producer-B")
            hello(b)
            grant(b, 8000, "in_block", 8000)
            # the planted fault: asked after 8000 was answered, granted 7999 from the older block
            c = client_conn(sc, 1, "C", "producer-C")
            hello(c)
            grant(c, 7999, "older_block", 7000)
            grant(a, 8001, "in_block", 8000)
            time.sleep(0.05)
            sc.shutdown()
    finally:
        sc.shutdown()
    packets = place_messages(sc, pcap)
    truth = base_truth(sc, pcap, packets, (
        "Broker 1 registers, is granted 7000..7999, grants 7000..7900 (some shown), prefetches "
        "8000..8999 and grants 7901..7998 from the older block (previous_block). Producer B gets 8000, "
        "the first id of the newest block; producer C asks after B's answer is on the wire and is "
        "granted 7999 from the older block (the planted fault: older_block, one pid_outside_blocks "
        "finding; Kafka's manager never goes back). Then 8001."))
    truth["expected"]["brokers_by_address"] = registration_mappings(sc)
    faults = truth["expected"]["pid_outside_blocks"]
    assert [(f["placement"], f["producer_id"]) for f in faults] == [("older_block", 7999)], faults
    newer = next(g for g in truth["producer_ids"] if g["producer_id"] == 8000)
    faults[0]["newer_grant_response_frame"] = newer["response_frame"]
    assert faults[0]["request_frame"] > newer["response_frame"]
    assert not truth["expected"]["pid_duplicate_grants"] and not truth["expected"]["allocate_findings"]
    return truth


def unknown_placement(out: Path) -> dict:
    sc = Scenario("unknown-placement", [CONTROLLER_PORT, BROKER_PORTS[1], BROKER_PORTS[2], BROKER_PORTS[3]])
    pcap = out / "unknown-placement.pcap"
    try:
        with lf.Capture(pcap, sc.ports):
            b1, b2 = broker_conn(sc, 1), broker_conn(sc, 2)
            register(sc, b1, 0, 1, 50, [("PLAINTEXT", HOST, BROKER_PORTS[1])])
            register(sc, b2, 0, 2, 51, [("PLAINTEXT", HOST, BROKER_PORTS[2])])
            allocate(b1, 1, 1, 50, NONE, 7000)
            allocate(b2, 1, 2, 51, NONE, 8000)
            l1 = client_conn(sc, 1, "load-1", "producer-load-1")
            hello(l1)
            grants(l1, [7000, 7001], "in_block", 7000)
            l2 = client_conn(sc, 2, "load-2", "producer-load-2")
            hello(l2)
            grants(l2, [8000, 8001], "in_block", 8000)
            # broker 3 (registered before the capture, block 6000..6999): nothing in the capture
            # says who listens on 127.0.0.1:19203
            u = client_conn(sc, 3, "on broker 3", "producer-u")
            hello(u)
            grants(u, [6500, 6501], "unknown")
            grants(l2, [8899, 8900], "in_block", 8000)
            # broker 2 prefetches; its request is never answered on this connection
            cid = b2.role["client_id"]
            b2.request(67, 0, 2, cid, allocate_request(2, cid, 2, 51))
            time.sleep(0.2)
            sc.close(b2)
            grants(l2, [8998, 8999], "in_block", 8000)
            # what broker 2 was granted next the capture does not hold
            grants(l2, [9000, 9001], "unknown")
            grant(l1, 7002, "in_block", 7000)
            # the planted fault: every answer broker 1 asked for was read, none holds 12000
            grant(l1, 12000, "outside_blocks")
            time.sleep(0.05)
            sc.shutdown()
    finally:
        sc.shutdown()
    packets = place_messages(sc, pcap)
    truth = base_truth(sc, pcap, packets, (
        "Brokers 1 and 2 register (listeners 127.0.0.1:19201 and :19202) and are granted 7000..7999 "
        "and 8000..8999; grants 7000, 7001, 8000, 8001 lie in them. A client of 127.0.0.1:19203 "
        "(broker 3, registered before the capture: no message names that address) is granted 6500 "
        "and 6501: unknown (no broker known, no block holds them). Broker 2 grants 8899, 8900 and "
        "asks for its next block (correlation id 2), which is never answered: it closes the "
        "connection after 200 ms. It grants 8998, 8999 (its block) and then 9000, 9001, above all its "
        "blocks: unknown, a block could have come in an answer the capture does not hold. Broker 1, "
        "every answer read, grants 7002 and then 12000, in none of the blocks (the planted fault: "
        "outside_blocks, one pid_outside_blocks finding)."))
    truth["expected"]["brokers_by_address"] = registration_mappings(sc)
    faults = truth["expected"]["pid_outside_blocks"]
    assert [(f["placement"], f["producer_id"]) for f in faults] == [("outside_blocks", 12000)], faults
    assert [g["producer_id"] for g in truth["producer_ids"] if g["placement"] == "unknown"] == [6500, 6501, 9000, 9001]
    assert not truth["expected"]["pid_duplicate_grants"] and not truth["expected"]["allocate_findings"]
    return truth


# ---------------------------------------------------------------------------
# tshark check

# Versions from which tshark 4.0 (Debian 12) reads a layout other than the one sent: it knows
# InitProducerId v0-3 (v4 and v5 have v3's layout, v6 adds two booleans: it trips over them) and
# Metadata v0-9 (v10 adds topic ids). Those messages may be malformed to it; their responses it
# cannot pair. Anything else it flags fails the check.
TSHARK_MISREADS_FROM = {22: 6, 3: 10}
TSHARK_FIELDS = ["frame.number", "tcp.stream", "kafka.request_key", "kafka.response_key", "kafka.request.version",
                 "kafka.response.version", "kafka.correlation_id", "kafka.request_frame", "kafka.transactional_id", "kafka.transaction_timeout", "kafka.error",
                 "kafka.producer_id", "kafka.producer_epoch", "kafka.node_id", "kafka.host", "kafka.port",
                 "kafka.unsupported_api_version", "kafka.unknown_api_key", "_ws.malformed", "_ws.expert.message"]


def tshark_rows(tshark: str, pcap: Path, ports: list[int]) -> list[dict]:
    cmd = [tshark, "-r", str(pcap)]
    for p in ports:
        cmd += ["-d", f"tcp.port=={p},kafka"]
    cmd += ["-Y", "kafka", "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|"]
    for f in TSHARK_FIELDS:
        cmd += ["-e", f]
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    rows = []
    for line in res.stdout.splitlines():
        vals = line.split("\t")
        rows.append(dict(zip(TSHARK_FIELDS, vals)))
    return rows


def tshark_check(pcap: Path, truth: dict) -> dict:
    """tshark must agree on frame, stream, API key, version and correlation id of every message,
    on InitProducerId's fields where it decodes them, and on Metadata's brokers. Returns a summary."""
    tshark = shutil.which("tshark")
    if not tshark:
        print("  tshark not found; skipping the Wireshark check")
        return {"checked": False}
    rows = {int(r["frame.number"]): r for r in tshark_rows(tshark, pcap, truth["ports"])}
    request_frame = {}
    for m in truth["messages"]:
        if m["direction"] == "response":
            request_frame[m["index"]] = next((
                q["frame"] for q in truth["messages"] if q["direction"] == "request"
                and q["connection"] == m["connection"] and q["correlation_id"] == m["correlation_id"]), None)
    problems, tolerated, compared, unknown_keys, fields_checked = [], [], 0, set(), 0
    for m in truth["messages"]:
        r = rows.get(m["frame"])
        where = f"{m['api']} {m['direction']} corr {m['correlation_id']} (frame {m['frame']})"
        if r is None:
            problems.append(f"{where}: tshark shows no Kafka PDU in that frame")
            continue
        side = m["direction"]
        got = (r["tcp.stream"], r[f"kafka.{side}_key"], r[f"kafka.{side}.version"], r["kafka.correlation_id"])
        want = (str(m["connection"]), str(m["api_key"]), str(m["api_version"]), str(m["correlation_id"]))
        misread = m["api_version"] >= TSHARK_MISREADS_FROM.get(m["api_key"], 1 << 15)
        if misread and side == "response" and got[1] == "":
            # the request was misread, so tshark cannot pair the response: stream and corr only
            tolerated.append(f"{where}: not paired (its request is {m['api']} v{m['api_version']})")
            got, want = (got[0], got[3]), (want[0], want[3])
            request_frame[m["index"]] = ""
        if got != want:
            problems.append(f"{where}: tshark (stream, key, version, corr) {got}, sent {want}")
        if side == "response" and r["kafka.request_frame"] != str(request_frame[m["index"]]):
            problems.append(f"{where}: tshark pairs it with frame {r['kafka.request_frame']!r}, "
                            f"the request is in frame {request_frame[m['index']]}")
        compared += 1
        if r["kafka.unknown_api_key"]:
            unknown_keys.add(m["api_key"])
            continue
        if r["_ws.malformed"]:
            if misread and r["kafka.unsupported_api_version"]:
                tolerated.append(f"{where}: {r['_ws.expert.message']}")
            else:
                problems.append(f"{where}: tshark flags it malformed: {r['_ws.expert.message']}")
        # tshark 4.0 flags InitProducerId v4+ "unsupported" (it knows v0-3) but still decodes the
        # fields v0-3 have, at the same offsets: those are compared too
        f = m["fields"]
        expect: dict[str, str] = {}
        if m["api_key"] == 22:
            if m["direction"] == "request":
                expect["kafka.transactional_id"] = "[ Null ]" if f["transactional_id"] is None \
                    else f["transactional_id"]
                expect["kafka.transaction_timeout"] = str(f["transaction_timeout_ms"])
                if "producer_id" in f:
                    expect["kafka.producer_id"] = str(f["producer_id"])
                    expect["kafka.producer_epoch"] = str(f["producer_epoch"])
            else:
                expect["kafka.error"] = str(f["error_code"])
                expect["kafka.producer_id"] = str(f["producer_id"])
                expect["kafka.producer_epoch"] = str(f["producer_epoch"])
        if m["api_key"] == 3 and m["direction"] == "response" and not misread:
            expect["kafka.node_id"] = "|".join(str(b["node_id"]) for b in f["brokers"])
            expect["kafka.host"] = "|".join(b["host"] for b in f["brokers"])
            expect["kafka.port"] = "|".join(str(b["port"]) for b in f["brokers"])
        for k, v in expect.items():
            fields_checked += 1
            if r[k] != v:
                problems.append(f"{where}: tshark {k}={r[k]!r}, sent {v!r}")
    extra = sorted(set(rows) - {m["frame"] for m in truth["messages"]})
    if extra:
        problems.append(f"tshark shows Kafka PDUs in frames the script sent none in: {extra}")
    if problems:
        sys.exit(f"tshark disagrees with {pcap.name}:\n  " + "\n  ".join(problems))
    version = subprocess.run([tshark, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    summary = {"checked": True, "tshark": version, "fields": TSHARK_FIELDS,
               "messages": compared, "field_values": fields_checked,
               "unknown_api_keys": sorted(unknown_keys),
               "unsupported_versions": sorted({f"{m['api']} v{m['api_version']}" for m in truth["messages"]
                                               if m["direction"] == "request"
                                               and rows[m["frame"]]["kafka.unsupported_api_version"]}),
               "malformed_tolerated": tolerated}
    print(f"  tshark agrees on {compared} messages (frame, stream, key, version, corr) and {fields_checked} "
          f"field values; keys it does not know: {summary['unknown_api_keys']}; request versions it flags "
          f"unsupported: {summary['unsupported_versions']}")
    return summary


# ---------------------------------------------------------------------------


def write_json(path: Path, obj: dict) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


SCENARIOS = {"kafka-20031": kafka_20031, "txn-bump": txn_bump, "metadata-only": metadata_only,
             "stale-controller": stale_controller, "prefetch-tail": prefetch_tail,
             "another-brokers-block": another_brokers_block, "older-block": older_block,
             "unknown-placement": unknown_placement}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE.parent / "fixtures" / "producers",
                    help="output directory (default: fixtures/producers/)")
    ap.add_argument("--only", nargs="+", metavar="NAME", choices=list(SCENARIOS),
                    help="make only these captures (default: all of them)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (tcpdump captures on lo)")
    check_encoders()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    print("capturing:")
    for name in args.only or list(SCENARIOS):
        make = SCENARIOS[name]
        truth = make(out)
        pcap = out / truth["fixture"]
        size = pcap.stat().st_size
        assert size < MAX_PCAP_BYTES, f"{pcap.name} is {size} bytes"
        truth["wireshark"] = tshark_check(pcap, truth)
        write_json(out / f"{pcap.stem}.truth.json", truth)
        print(f"  wrote {pcap.relative_to(out.parent.parent)} ({size} bytes, {truth['packets']} packets)")


if __name__ == "__main__":
    main()
