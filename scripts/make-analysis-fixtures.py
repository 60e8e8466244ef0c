#!/usr/bin/env python3
"""Make pidshark's producer-ID analysis fixtures (issue #4) in fixtures/analysis/.

The script plays a misbehaving Kafka controller and a few brokers over real TCP
sockets on 127.0.0.1 while tcpdump captures the loopback interface, one scenario
per capture:

  healthy.pcap              3 brokers, contiguous blocks of 1000, no finding at all
  overlap.pcap              two brokers get overlapping blocks
  failover-regression.pcap  controller A fails over to controller B, which restarts
                            its counter lower: NOT_CONTROLLER streak, retries, a
                            regression, overlaps, a new BrokerEpoch
  error-streak.pcap         STALE_BROKER_EPOCH three times over two connections,
                            UNKNOWN_SERVER_ERROR then NONE, an unanswered request
  gaps-irregular.pcap       a gap, an odd block length, NONE with length 0 / -1000 /
                            start -1
  slow.pcap                 one response held back 400 ms

Each capture gets `<name>.truth.json`: the truth format of ../*.truth.json and
../variants/*.truth.json (exchanges, other_api_frames, connections, files,
kafka_port, exchange_frames, ...) plus `blocks`, `expected_findings` and
`expected_clean_kinds` (see fixtures/README.md, "Analysis fixtures"). The
findings are worked out by a small reference analyser in this script from what
the capture holds, and must equal the findings each scenario was written to
show. Every capture is checked against make-loopback-fixtures.py's decoder,
make-variant-fixtures.py's truth builder and independent reassembler, and
Wireshark (`tshark -d tcp.port==P,kafka`).

Usage (as root; tcpdump and tshark needed):

    python3 scripts/make-analysis-fixtures.py [--out DIR] [--only NAME ...]

Every run overwrites the files it makes (and only those); timestamps and
ephemeral ports change. Python 3.11, standard library only.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True  # no scripts/__pycache__ from the imports below


def _load(name: str, file: str):
    """A sibling script (its file name has dashes) as a module."""
    spec = importlib.util.spec_from_file_location(name, HERE / file)
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader
    sys.modules[name] = mod  # dataclasses look their module up here
    spec.loader.exec_module(mod)
    return mod


vf = _load("make_variant_fixtures", "make-variant-fixtures.py")
lf = vf.lf  # make-loopback-fixtures.py, as loaded by the variant script

MADE_BY = "scripts/make-analysis-fixtures.py"
HOST = "127.0.0.1"
GAP = 0.02             # seconds between one exchange and the next
UNANSWERED_WAIT = 0.2  # how long a broker waits for an answer that never comes
SLOW_DELAY = 0.4       # the slow response is held back this long
FAST_LIMIT_US = 1_000  # every other response must come within this (checked on the capture)
MAX_BYTES = 100_000
ATTEMPTS = 5           # a run whose fast responses are not fast (a busy machine) is redone

NONE, UNKNOWN_SERVER_ERROR, NOT_CONTROLLER, STALE_BROKER_EPOCH = 0, -1, 41, 77
ERROR_NAMES = {NONE: "NONE", UNKNOWN_SERVER_ERROR: "UNKNOWN_SERVER_ERROR", NOT_CONTROLLER: "NOT_CONTROLLER",
               STALE_BROKER_EPOCH: "STALE_BROKER_EPOCH"}
assert lf.NOT_CONTROLLER == NOT_CONTROLLER and lf.STALE_BROKER_EPOCH == STALE_BROKER_EPOCH

KINDS = ["pid_block_overlap", "pid_block_regression", "pid_block_gap", "pid_block_irregular",
         "pid_error_streak", "pid_retry", "pid_broker_epoch_change", "pid_slow_response"]
SEVERITY = {"pid_block_overlap": "error", "pid_block_gap": "info"}  # the ones issue #4 fixes

# the reference analyser's slow-response rule: slower than both 100 ms and 20 x the median
SLOW_MIN_US, SLOW_FACTOR = 100_000, 20


# ---------------------------------------------------------------------------
# driving both ends of every connection from one thread


def ok(start: int, length: int = 1000) -> dict:
    return {"throttle": 0, "error": NONE, "start": start, "len": length}


def err(code: int) -> dict:
    return {"throttle": 0, "error": code, "start": -1, "len": 0}


class Link:
    """One broker connection. Both ends live in this thread: the broker's socket `c` and
    the controller's accepted socket `s`, so the order of events is the order of the code."""

    def __init__(self, run: "Run", port: int, broker_id: int):
        self.run, self.port, self.broker_id = run, port, broker_id
        self.c = lf.connect(socket.AF_INET, HOST, port)
        s, _ = run.listeners[port].accept()
        self.s = lf.nodelay(s)
        self.client, self.server = lf.fmt_addr(self.c.getsockname()), lf.fmt_addr(self.c.getpeername())
        self.c2s, self.s2c = bytearray(), bytearray()
        self.closed = False
        run.links.append(self)
        time.sleep(GAP)

    def ask(self, corr: int, epoch: int, answer: dict | None, delay: float = 0.0) -> lf.Apid:
        """The broker sends AllocateProducerIds v0; the controller reads it and answers at once
        (or after `delay`), or never (answer None: the broker waits, then gives up)."""
        ex = lf.Apid(corr, f"broker-{self.broker_id}", self.broker_id, epoch, response=answer)
        ex.client_addr, ex.server_addr = self.client, self.server
        ex.link, ex.delay = self, delay
        req = ex.request_bytes()
        self.c.sendall(req)
        self.c2s += req
        got = lf.recv_frame(self.s)
        assert got == req, got.hex()
        self.run.sent.append(ex)
        if answer is None:
            time.sleep(UNANSWERED_WAIT)
            return ex
        if delay:
            time.sleep(delay)
        resp = ex.response_bytes()
        self.s.sendall(resp)
        self.s2c += resp
        assert lf.recv_frame(self.c) == resp
        time.sleep(GAP)
        return ex

    def close(self) -> None:
        """The broker closes first, then the controller (as in the other fixture scripts)."""
        self.c.close()
        lf.wait_eof(self.s)
        self.s.close()
        self.closed = True
        time.sleep(0.05)

    def ref(self) -> vf.RefConn:
        return vf.RefConn(self.client, self.server, bytes(self.c2s), bytes(self.s2c))


class Run:
    def __init__(self, ports: list[int]):
        self.listeners = {p: lf.listener(socket.AF_INET, HOST, p) for p in ports}
        self.links: list[Link] = []
        self.sent: list[lf.Apid] = []

    def open(self, port: int, broker_id: int) -> Link:
        return Link(self, port, broker_id)

    def finish(self) -> None:
        for link in self.links:
            if not link.closed:
                link.close()
        for s in self.listeners.values():
            s.close()


# ---------------------------------------------------------------------------
# the scenarios. Correlation ids are unique in a capture: broker b uses b*100+1, +2, ...
# (one counter per broker, kept across reconnections, as a Kafka client does).
# Each returns what it shows and the findings it was written to show, as (kind, corr ids).


def healthy(run: Run, port: int) -> tuple[str, list]:
    b = {i: run.open(port, i) for i in (1, 2, 3)}
    start = 0
    for rnd in (1, 2, 3):
        for i in (1, 2, 3):
            b[i].ask(i * 100 + rnd, i * 10, ok(start))
            start += 1000
    return ("a healthy controller: brokers 1, 2, 3 (epochs 10, 20, 30), one connection each, opened "
            "before the first request; they ask in turn (101, 201, 301, 102, ...) and get the contiguous "
            "blocks 0..999, 1000..1999, ..., 8000..8999, all NONE, all answered within a few ms"), []


def overlap(run: Run, port: int) -> tuple[str, list]:
    b = {i: run.open(port, i) for i in (1, 2, 3)}
    b[1].ask(101, 10, ok(3000))
    b[2].ask(201, 20, ok(4000))
    b[1].ask(102, 10, ok(5000))
    b[2].ask(202, 20, ok(5500))   # shares 5500..5999 with 102
    b[3].ask(301, 30, ok(6500))
    b[1].ask(103, 10, ok(7500))
    return ("brokers 1, 2, 3 (epochs 10, 20, 30), one connection each: 101 -> 3000..3999, "
            "201 -> 4000..4999, 102 -> 5000..5999, then 202 (broker 2) -> 5500..6499, which shares "
            "the 500 ids 5500..5999 with broker 1's block and starts below its end; the controller "
            "then goes on: 301 -> 6500..7499, 103 -> 7500..8499 (no gap anywhere)"), [
        ("pid_block_overlap", [102, 202]),
        ("pid_block_regression", [102, 202]),
    ]


def failover(run: Run, port_a: int, port_b: int) -> tuple[str, list]:
    a = {i: run.open(port_a, i) for i in (1, 2, 3)}
    a[1].ask(101, 10, ok(0))
    a[2].ask(201, 20, ok(1000))
    a[3].ask(301, 30, ok(2000))
    # A loses the controllership
    a[1].ask(102, 10, err(NOT_CONTROLLER))
    a[1].ask(103, 10, err(NOT_CONTROLLER))
    a[2].ask(202, 20, err(NOT_CONTROLLER))
    for i in (1, 2, 3):
        a[i].close()
    # the brokers find controller B, which starts its counter from 1000 again
    b = {i: run.open(port_b, i) for i in (1, 2, 3)}
    b[1].ask(104, 10, ok(1000))
    b[2].ask(203, 20, ok(2000))
    b[3].ask(302, 31, ok(3000))   # broker 3 has re-registered: epoch 30 -> 31
    return ("controller A (first port) and B (second port); brokers 1, 2, 3 (epochs 10, 20, 30). "
            "On A: 101 -> 0..999, 201 -> 1000..1999, 301 -> 2000..2999; then A answers "
            "NOT_CONTROLLER to 102 and 103 (broker 1, twice in a row) and to 202 (broker 2); the "
            "brokers close their A connections and open new ones to B, which restarts from 1000: "
            "104 (broker 1) -> 1000..1999 (the ids of 201), 203 (broker 2) -> 2000..2999 (the ids "
            "of 301), and 302 (broker 3, now with BrokerEpoch 31) -> 3000..3999"), [
        ("pid_block_overlap", [201, 104]),
        ("pid_block_overlap", [301, 203]),
        ("pid_block_regression", [301, 104]),
        ("pid_block_regression", [301, 203]),
        ("pid_error_streak", [102, 103]),
        ("pid_retry", [102, 103]),
        ("pid_retry", [103, 104]),
        ("pid_retry", [202, 203]),
        ("pid_broker_epoch_change", [301, 302]),
    ]


def error_streak(run: Run, port: int) -> tuple[str, list]:
    b = {i: run.open(port, i) for i in (1, 2, 3)}
    b[1].ask(101, 10, ok(0))
    b[2].ask(201, 20, err(UNKNOWN_SERVER_ERROR))
    b[3].ask(301, 30, ok(1000))
    b[1].ask(102, 10, err(STALE_BROKER_EPOCH))
    b[2].ask(202, 20, ok(2000))
    b[1].ask(103, 10, err(STALE_BROKER_EPOCH))
    b[3].ask(302, 30, None)        # never answered: broker 3 gives up after 200 ms ...
    b[3].close()                   # ... and closes
    b[1].close()                   # broker 1 reconnects
    b1 = run.open(port, 1)
    b1.ask(104, 10, err(STALE_BROKER_EPOCH))
    b3 = run.open(port, 3)         # broker 3 reconnects and asks again
    b3.ask(303, 30, ok(3000))
    b[2].ask(203, 20, ok(4000))
    return ("brokers 1, 2, 3 (epochs 10, 20, 30): 101 -> 0..999; 201 (broker 2) -> "
            "UNKNOWN_SERVER_ERROR; 301 -> 1000..1999; 102 (broker 1) -> STALE_BROKER_EPOCH; "
            "202 (broker 2 again) -> 2000..2999; 103 -> STALE_BROKER_EPOCH; 302 (broker 3) is never "
            "answered, broker 3 closes after 200 ms; broker 1 closes and reconnects: 104 -> "
            "STALE_BROKER_EPOCH (its third in a row, on its second connection; it then gives up); "
            "broker 3 reconnects: 303 -> 3000..3999; 203 (broker 2, first connection) -> 4000..4999"), [
        ("pid_error_streak", [102, 103, 104]),
        ("pid_retry", [102, 103]),
        ("pid_retry", [103, 104]),
        ("pid_retry", [201, 202]),
        ("pid_retry", [302, 303]),
    ]


def gaps_irregular(run: Run, port: int) -> tuple[str, list]:
    b = {i: run.open(port, i) for i in (1, 2, 3)}
    b[1].ask(101, 10, ok(0))
    b[2].ask(201, 20, ok(1500))            # 1000..1499 skipped
    b[3].ask(301, 30, ok(2500, 10))        # 10 ids
    b[1].ask(102, 10, ok(2510))
    b[2].ask(202, 20, ok(3510, 0))         # NONE, length 0: no block
    b[3].ask(302, 30, ok(-1))              # NONE, start -1 (length 1000): no block
    b[1].ask(103, 10, ok(3510))
    b[2].ask(203, 20, ok(4510, -1000))     # NONE, negative length: no block
    b[3].ask(303, 30, ok(4510))
    return ("brokers 1, 2, 3 (epochs 10, 20, 30), one connection each, all answers NONE: 101 -> "
            "0..999; 201 -> 1500..2499 (500 ids skipped); 301 -> 2500..2509 (10 ids, the usual "
            "length is 1000); 102 -> 2510..3509; 202 -> start 3510 length 0; 302 -> start -1 length "
            "1000; 103 -> 3510..4509; 203 -> start 4510 length -1000; 303 -> 4510..5509. 202, 302 and "
            "203 are not blocks, and the brokers' next requests after them are not retries (no error)"), [
        ("pid_block_gap", [101, 201]),
        ("pid_block_irregular", [301]),
        ("pid_block_irregular", [202]),
        ("pid_block_irregular", [302]),
        ("pid_block_irregular", [203]),
    ]


def slow(run: Run, port: int) -> tuple[str, list]:
    b = {i: run.open(port, i) for i in (1, 2, 3)}
    start = 0
    for rnd in (1, 2, 3):
        for i in (1, 2, 3):
            corr = i * 100 + rnd
            b[i].ask(corr, i * 10, ok(start), delay=SLOW_DELAY if corr == 202 else 0.0)
            start += 1000
    return ("like healthy.pcap (brokers 1, 2, 3, contiguous blocks 0..8999 of 1000), but the controller "
            "holds the answer to 202 (broker 2) back for 400 ms; every other answer leaves within a few ms"), [
        ("pid_slow_response", [202]),
    ]


# name, ports, scenario
SCENARIOS = [
    ("healthy", [19190], healthy),
    ("overlap", [19191], overlap),
    ("failover-regression", [19192, 19193], failover),
    ("error-streak", [19194], error_streak),
    ("gaps-irregular", [19195], gaps_irregular),
    ("slow", [19196], slow),
]


# ---------------------------------------------------------------------------
# the reference analyser: blocks and findings from what a capture holds


def error_name(code: int) -> str:
    return ERROR_NAMES.get(code, f"UNKNOWN({code})")


def reference_analysis(exchanges: list[dict], frames: list[dict], timing: list[dict]) -> tuple[list, list]:
    """Blocks and findings, from the decoded exchanges and their frames and times.
    Time order is frame order (tcpdump on lo writes packets in time order)."""
    items = []
    for ex, fr, tm in zip(exchanges, frames, timing):
        assert ex["correlation_id"] == fr["correlation_id"] == tm["correlation_id"]
        items.append({"ex": ex, "corr": ex["correlation_id"], "broker": ex["request"]["broker_id"],
                      "epoch": ex["request"]["broker_epoch"], "req_frame": fr["request_frame"],
                      "resp_frame": fr["response_frame"], "latency_us": tm["latency_us"],
                      "connection": fr["connection"], "resp": ex["response"]})
    answered = sorted((i for i in items if i["resp"] is not None), key=lambda i: i["resp_frame"])
    by_request = sorted(items, key=lambda i: i["req_frame"])

    def is_block(i):
        r = i["resp"]
        return r["error_code"] == NONE and r["producer_id_len"] > 0 and r["producer_id_start"] >= 0

    blocks = []
    for i in answered:
        if is_block(i):
            r = i["resp"]
            start, n = r["producer_id_start"], r["producer_id_len"]
            blocks.append({"start": start, "end": start + n - 1, "len": n, "broker_id": i["broker"],
                           "broker_epoch": i["epoch"], "client": i["ex"]["client"], "server": i["ex"]["server"],
                           "correlation_id": i["corr"], "_frame": i["resp_frame"]})

    findings = []

    def add(kind, broker, corrs, frame, **detail):
        findings.append({"kind": kind, "severity": SEVERITY.get(kind), "broker_id": broker,
                         "correlation_ids": corrs, "detail": detail, "_frame": frame})

    # pid_block_overlap: every pair of blocks that share an id
    for j, b in enumerate(blocks):
        for a in blocks[:j]:
            lo, hi = max(a["start"], b["start"]), min(a["end"], b["end"])
            if lo <= hi:
                add("pid_block_overlap", b["broker_id"], [a["correlation_id"], b["correlation_id"]], b["_frame"],
                    blocks=[[a["start"], a["end"]], [b["start"], b["end"]]],
                    broker_ids=[a["broker_id"], b["broker_id"]], shared=[lo, hi], shared_ids=hi - lo + 1)
    # pid_block_regression: a block that starts below the highest end handed out before it
    high = None
    for b in blocks:
        if high is not None and b["start"] < high["end"]:
            add("pid_block_regression", b["broker_id"], [high["correlation_id"], b["correlation_id"]], b["_frame"],
                start=b["start"], previous_max_end=high["end"], below_by=high["end"] - b["start"])
        if high is None or b["end"] > high["end"]:
            high = b
    # pid_block_gap: ids skipped between consecutive blocks
    for a, b in zip(blocks, blocks[1:]):
        if b["start"] > a["end"] + 1:
            add("pid_block_gap", b["broker_id"], [a["correlation_id"], b["correlation_id"]], b["_frame"],
                count=b["start"] - a["end"] - 1, first_missing=a["end"] + 1, last_missing=b["start"] - 1)
    # pid_block_irregular
    lens = Counter(b["len"] for b in blocks).most_common()
    usual = lens[0][0] if lens else None
    assert len(lens) < 2 or lens[0][1] > lens[1][1], f"no single usual block length: {lens}"
    for i in answered:
        r = i["resp"]
        if r["error_code"] != NONE:
            continue
        start, n = r["producer_id_start"], r["producer_id_len"]
        reason = None
        if is_block(i):
            if n != usual:
                reason = "length"
        elif n == 0:
            reason = "zero_length"
        elif n < 0:
            reason = "negative_length"
        elif start < 0:
            reason = "negative_start"
        if reason:
            add("pid_block_irregular", i["broker"], [i["corr"]], i["resp_frame"],
                reason=reason, start=start, len=n, usual_len=usual)
    brokers = sorted({i["broker"] for i in items})
    # pid_error_streak: runs of >= 2 equal non-NONE errors in the responses to one broker
    for br in brokers:
        resps = [i for i in answered if i["broker"] == br]
        k = 0
        while k < len(resps):
            code = resps[k]["resp"]["error_code"]
            m = k
            while m + 1 < len(resps) and resps[m + 1]["resp"]["error_code"] == code:
                m += 1
            run = resps[k:m + 1]
            if code != NONE and len(run) >= 2:
                add("pid_error_streak", br, [i["corr"] for i in run], run[-1]["resp_frame"],
                    error_code=code, error_name=error_name(code), count=len(run),
                    connections=len({i["connection"] for i in run}))
            k = m + 1
    # pid_retry and pid_broker_epoch_change: each request against the broker's previous one
    for br in brokers:
        reqs = [i for i in by_request if i["broker"] == br]
        for p, q in zip(reqs, reqs[1:]):
            if p["resp"] is None or p["resp"]["error_code"] != NONE:
                code = None if p["resp"] is None else p["resp"]["error_code"]
                add("pid_retry", br, [p["corr"], q["corr"]], q["req_frame"],
                    after="unanswered" if code is None else "error", error_code=code,
                    error_name=None if code is None else error_name(code),
                    new_connection=p["connection"] != q["connection"])
            if q["epoch"] != p["epoch"]:
                add("pid_broker_epoch_change", br, [p["corr"], q["corr"]], q["req_frame"],
                    old_epoch=p["epoch"], new_epoch=q["epoch"])
    # pid_slow_response
    lat = [i["latency_us"] for i in answered]
    if lat:
        median = statistics.median(lat)
        for i in answered:
            if i["latency_us"] > max(SLOW_MIN_US, SLOW_FACTOR * median):
                add("pid_slow_response", i["broker"], [i["corr"]], i["resp_frame"],
                    latency_us=i["latency_us"], median_latency_us=median)

    findings.sort(key=lambda f: (KINDS.index(f["kind"]), f["_frame"]))
    for x in blocks + findings:
        del x["_frame"]
    return blocks, findings


# ---------------------------------------------------------------------------
# Wireshark


def tshark_args(ports: list[int]) -> list[str]:
    return ["-n", *[x for p in ports for x in ("-d", f"tcp.port=={p},kafka")],
            "-o", "tcp.reassemble_out_of_order:TRUE"]


def tshark_view(path: Path, ports: list[int]) -> dict:
    cmd = (["tshark", "-r", str(path), *tshark_args(ports), "-Y", "kafka", "-T", "fields",
            "-E", "separator=/t", "-E", "aggregator=;"] + [x for f in vf.TSHARK_FIELDS for x in ("-e", f)])
    res = subprocess.run(cmd, capture_output=True, text=True)
    stderr = [l for l in res.stderr.splitlines() if "Running as user" not in l and l.strip()]
    if res.returncode != 0 or stderr:
        sys.exit(f"tshark failed on {path}: {stderr}")
    return {"command": shlex.join(["tshark", "-r", path.name] + cmd[3:]), "fields": vf.TSHARK_FIELDS,
            "rows": [line.split("\t") for line in res.stdout.splitlines()]}


def tshark_problems(path: Path, ports: list[int]) -> tuple[list[str], int]:
    """Frames Wireshark flags as malformed or with expert errors, minus its known Kafka gaps."""
    res = subprocess.run(["tshark", "-r", str(path), *tshark_args(ports), "-Y",
                          "_ws.malformed or _ws.expert.severity >= error", "-T", "fields", "-e", "frame.number",
                          "-e", "_ws.expert.message", "-E", "occurrence=a", "-E", "aggregator=|"],
                         capture_output=True, text=True, check=True)
    bad, tolerated = [], 0
    for line in res.stdout.splitlines():
        num, _, msgs = line.partition("\t")
        if any(m in msgs for m in vf.TOLERATED):
            tolerated += 1
        else:
            bad.append(f"frame {num}: {msgs}")
    return bad, tolerated


def tshark_times(path: Path) -> list[int]:
    """frame.time_epoch of every frame, in microseconds."""
    res = subprocess.run(["tshark", "-r", str(path), "-n", "-T", "fields", "-e", "frame.time_epoch"],
                         capture_output=True, text=True, check=True)
    out = []
    for line in res.stdout.split():
        sec, _, frac = line.partition(".")
        out.append(int(sec) * 1_000_000 + int((frac + "000000")[:6]))
    return out


# ---------------------------------------------------------------------------
# one fixture


class Retry(Exception):
    pass


def record(name: str, ports: list[int], scenario, out: Path) -> tuple[Path, Run, str, list, vf.Recorder]:
    pcap = out / f"{name}.pcap"
    tool = shutil.which("tcpdump") or sys.exit("tcpdump not found (apt-get install -y tcpdump)")
    expr = " or ".join(f"tcp port {p}" for p in ports)
    # as make-variant-fixtures.py: -Z root to write anywhere, --immediate-mode so nothing is left
    # in the kernel's ring at SIGINT, -B 65536 for enough ring slots in immediate mode
    argv = [tool, "-i", "lo", "-U", "--immediate-mode", "-B", "65536", "-s", "0", "-n", "-Z", "root",
            "-w", str(pcap), expr]
    rec = vf.Recorder(pcap, argv, f"tcpdump -i lo -U --immediate-mode -B 65536 -s 0 -w {pcap.name} '{expr}'")
    run = Run(ports)  # listen before the capture starts: no packets yet
    rec.start()
    try:
        what, intended = scenario(run, *ports)
        run.finish()
    finally:
        for s in run.listeners.values():
            s.close()
        vf.stop_all([rec])
    return pcap, run, what, intended, rec


def make(name: str, ports: list[int], scenario, out: Path) -> dict:
    pcap, run, what, intended, rec = record(name, ports, scenario, out)
    raw = pcap.read_bytes()
    assert len(raw) < MAX_BYTES, f"{pcap.name} is {len(raw)} bytes"
    recs = vf.read_capture(raw).recs
    refs = [link.ref() for link in run.links]
    corrs = [ex.corr for ex in run.sent]
    assert len(corrs) == len(set(corrs)), "correlation ids must be unique in a capture"

    # the capture holds exactly the bytes sent, connection by connection (read by make-loopback's reader)
    clean = vf.refs_from_clean_capture(recs)
    assert [(r.client, r.server, r.c2s, r.s2c) for r in clean] == \
        [(r.client, r.server, r.c2s, r.s2c) for r in refs], f"{pcap.name} does not hold exactly what was sent"

    # the truth, by make-variant-fixtures.py's builder
    a = vf.analyse(recs, refs)
    assert a["expected_diagnostics"] == [] and not a["partial_frames"] and a["unmatched_responses"] == 0, a
    link_index = {id(link): k for k, link in enumerate(run.links)}
    sent_order = sorted(run.sent, key=lambda ex: link_index[id(ex.link)])  # stable: send order per link
    assert a["exchanges"] == [ex.truth() for ex in sent_order], f"{name}: exchanges differ from what was sent"
    assert a["connections"] == len(run.links)

    # timing, from the capture's own timestamps (cross-checked with tshark's)
    ts = [r.ts // 1000 for r in recs]  # microseconds
    assert ts == tshark_times(pcap), f"{name}: tshark reads other timestamps"
    assert ts == sorted(ts), f"{name}: records not in time order"
    timing = []
    for fr in a["exchange_frames"]:
        t = {"connection": fr["connection"], "correlation_id": fr["correlation_id"],
             "request_ts_us": ts[fr["request_frame"] - 1],
             "response_ts_us": None if fr["response_frame"] is None else ts[fr["response_frame"] - 1]}
        t["latency_us"] = None if t["response_ts_us"] is None else t["response_ts_us"] - t["request_ts_us"]
        timing.append(t)
    delayed = {ex.corr for ex in run.sent if ex.delay}
    for t in timing:
        if t["latency_us"] is None:
            continue
        if t["correlation_id"] in delayed:
            assert t["latency_us"] >= SLOW_DELAY * 1e6, t
        elif t["latency_us"] >= FAST_LIMIT_US:
            raise Retry(f"{name}: response {t['correlation_id']} took {t['latency_us']} us")

    truth = {
        "fixture": pcap.name, "files": [pcap.name], "made_by": MADE_BY,
        "kafka_port": ports[0], "kafka_ports": ports, "recorded_with": rec.what,
        "capture": [vf.capture_info(pcap.name, raw)],
        "exchanges": a["exchanges"], "exchange_frames": a["exchange_frames"], "exchange_timing": timing,
        "other_api_frames": a["other_api_frames"], "unmatched_responses": a["unmatched_responses"],
        "connections": a["connections"], "capture_diagnostics": a["expected_diagnostics"],
    }

    # make-loopback-fixtures.py's decoder
    lf.check_against_truth(pcap, truth)
    # make-variant-fixtures.py's independent reassembler
    ind = vf.independent_decode(recs)
    for k in ("exchanges", "other_api_frames", "unmatched_responses", "connections"):
        assert ind[k] == truth[k], f"{name}: independent decoder differs on {k}"
    assert ind["kinds"] == [], ind["kinds"]

    # blocks and findings
    blocks, findings = reference_analysis(truth["exchanges"], truth["exchange_frames"], timing)
    got = sorted((f["kind"], f["correlation_ids"]) for f in findings)
    want = sorted((k, c) for k, c in intended)
    if got != want:
        sys.exit(f"{name}: the reference analysis finds\n  {got}\nbut the scenario was written to show\n  {want}")
    truth["blocks"] = blocks
    truth["expected_findings"] = findings
    present = {f["kind"] for f in findings}
    truth["expected_clean_kinds"] = [k for k in KINDS if k not in present]
    truth["analysis_rules"] = {
        "time_order": "frame order (the capture is in time order); blocks by response frame",
        "usual_len": Counter(b["len"] for b in blocks).most_common(1)[0][0] if blocks else None,
        "slow_rule_used_here": f"latency > max({SLOW_MIN_US // 1000} ms, {SLOW_FACTOR} x median latency)",
        "fast_responses_below_us": FAST_LIMIT_US,
        "slow_delay_ms": int(SLOW_DELAY * 1000) if delayed else None,
    }

    # Wireshark
    view = tshark_view(pcap, ports)
    view["differences"] = vf.wireshark_differences(view, truth)
    if any(view["differences"].values()):
        sys.exit(f"{name}: Wireshark disagrees: {view['differences']}")
    bad, tolerated = tshark_problems(pcap, ports)
    if bad:
        sys.exit(f"{name}: tshark finds malformed packets: {bad}")
    view["flagged_frames"] = {"unsupported_kafka": tolerated, "other": 0}
    truth["wireshark"] = view
    truth["note"] = what

    lf.write_json(out / f"{name}.truth.json", truth)
    lat = sorted(t["latency_us"] for t in timing if t["latency_us"] is not None)
    print(f"  {name}: {len(raw)} bytes, {len(recs)} packets, {truth['connections']} connections, "
          f"{len(truth['exchanges'])} exchanges, {len(blocks)} blocks, latency {lat[0]}..{lat[-1]} us, "
          f"tshark kafka rows {len(view['rows'])} ({tolerated} flagged Unknown 67); findings: "
          + (", ".join(f"{k}{c}" for k, c in got) or "none"))
    return truth


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE.parent / "fixtures" / "analysis")
    ap.add_argument("--only", nargs="*", choices=[n for n, _, _ in SCENARIOS], help="make only these")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (tcpdump captures on lo)")
    for tool in ("tcpdump", "tshark"):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found (apt-get install -y tcpdump tshark)")
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    print("capturing:")
    for name, ports, scenario in SCENARIOS:
        if args.only and name not in args.only:
            continue
        for attempt in range(1, ATTEMPTS + 1):
            try:
                make(name, ports, scenario, out)
                break
            except Retry as e:
                print(f"  {e}; again ({attempt}/{ATTEMPTS})")
                time.sleep(1)
        else:
            sys.exit(f"{name}: no run with fast responses in {ATTEMPTS} attempts")


if __name__ == "__main__":
    main()
