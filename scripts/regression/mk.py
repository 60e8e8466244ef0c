"""Tiny pcap builder for the regression captures of fixtures/regression (Ethernet/IPv4/TCP).

Written during a code review to reproduce its findings; each t_*.py beside it writes one
or more captures into fixtures/regression and prints what pidshark reports on them."""
import struct, socket, subprocess, json, sys

import os

# Repository paths: captures go to fixtures/regression; the binary is the debug build.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "fixtures", "regression")
BIN = os.path.join(ROOT, "target", "debug", "pidshark")


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def tcp_pkt(src, dst, sport, dport, seq, flags="A", payload=b"", ack=1):
    f = 0
    for ch, bit in (("F", 1), ("S", 2), ("R", 4), ("P", 8), ("A", 16)):
        if ch in flags:
            f |= bit
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack, 5 << 4, f, 65535, 0, 0)
    s, d = socket.inet_aton(src), socket.inet_aton(dst)
    pseudo = s + d + struct.pack("!BBH", 0, 6, len(tcp) + len(payload))
    c = csum(pseudo + tcp + payload)
    tcp = tcp[:16] + struct.pack("!H", c) + tcp[18:]
    tot = 20 + len(tcp) + len(payload)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, tot, 1, 0x4000, 64, 6, 0, s, d)
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    eth = b"\x02" * 6 + b"\x01" * 6 + b"\x08\x00"
    return eth + ip + tcp + payload


class Pcap:
    def __init__(self, linktype=1):
        self.recs = []
        self.t = 1_700_000_000_000_000
        self.linktype = linktype

    def add(self, data, orig=None, caplen=None, ts=None):
        self.t += 100
        t = self.t if ts is None else ts
        cl = len(data) if caplen is None else caplen
        ol = len(data) if orig is None else orig
        self.recs.append(struct.pack("<IIII", t // 1_000_000, t % 1_000_000, cl, ol) + data)

    def bytes(self):
        hdr = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, self.linktype)
        return hdr + b"".join(self.recs)

    def write(self, path):
        with open(path, "wb") as fh:
            fh.write(self.bytes())


class Conn:
    def __init__(self, p, c=("10.0.0.1", 40000), s=("10.0.0.2", 9093), cseq=1000, sseq=5000):
        self.p, self.c, self.s = p, c, s
        self.cseq, self.sseq = cseq, sseq

    def pkt(self, from_client, seq, flags, payload=b"", ack=None):
        a, b = (self.c, self.s) if from_client else (self.s, self.c)
        if ack is None:
            ack = self.sseq if from_client else self.cseq
        return tcp_pkt(a[0], b[0], a[1], b[1], seq, flags, payload, ack=ack)

    def raw(self, from_client, seq, flags, payload=b"", ack=None, **kw):
        self.p.add(self.pkt(from_client, seq, flags, payload, ack=ack), **kw)

    def segs(self, from_client, data, mss=1460):
        """Segments (seq, payload) for data, advancing the sender's seq, without emitting."""
        out = []
        for i in range(0, len(data), mss):
            chunk = data[i:i + mss]
            if from_client:
                out.append((self.cseq, chunk)); self.cseq += len(chunk)
            else:
                out.append((self.sseq, chunk)); self.sseq += len(chunk)
        return out

    def handshake(self):
        self.raw(True, self.cseq, "S", ack=0)
        self.raw(False, self.sseq, "SA", ack=self.cseq + 1)
        self.raw(True, self.cseq + 1, "A")
        self.cseq += 1
        self.sseq += 1

    def send(self, from_client, data, mss=1460):
        for i in range(0, len(data), mss):
            chunk = data[i:i + mss]
            if from_client:
                self.raw(True, self.cseq, "PA", chunk)
                self.cseq += len(chunk)
            else:
                self.raw(False, self.sseq, "PA", chunk)
                self.sseq += len(chunk)

    def close(self):
        self.raw(True, self.cseq, "FA")
        self.raw(False, self.sseq, "FA")
        self.cseq += 1
        self.sseq += 1
        self.raw(True, self.cseq, "A")


def framed(m):
    return struct.pack("!i", len(m)) + m


def apid_req(corr, broker=1, epoch=42, client_id=b"b1", version=0):
    h = struct.pack("!hhi", 67, version, corr) + struct.pack("!h", len(client_id)) + client_id + b"\0"
    return framed(h + struct.pack("!iq", broker, epoch) + b"\0")


def apid_resp(corr, err=0, start=0, ln=1000):
    return framed(struct.pack("!i", corr) + b"\0" + struct.pack("!ihqi", 0, err, start, ln) + b"\0")


def other_req(key, version, corr, body=b"", flexible=False):
    h = struct.pack("!hhi", key, version, corr) + struct.pack("!h", 2) + b"cl"
    if flexible:
        h += b"\0"
    return framed(h + body)


def run(path, *args):
    r = subprocess.run([BIN, path, "--compact", *args], capture_output=True)
    if r.returncode != 0:
        print("EXIT", r.returncode, r.stderr.decode()[-2000:])
        return None
    return json.loads(r.stdout)


def brief(rep):
    s = rep["summary"]
    out = {k: s[k] for k in ("tcp_connections", "kafka_connections", "kafka_requests", "kafka_responses", "exchanges", "unmatched_responses", "diagnostics")}
    out["ex"] = [(e["connection"], e["correlation_id"], e["status"], e["request"]["frame"], e["request"]["first_frame"], e["response"] and (e["response"]["frame"], e["response"]["first_frame"])) for e in rep["exchanges"]]
    out["diags"] = [(d["kind"], d["connection"], d["frame"], d["message"]) for d in rep["diagnostics"]]
    return out


def tshark_streams(path):
    r = subprocess.run(["tshark", "-r", path, "-T", "fields", "-e", "frame.number", "-e", "tcp.stream"], capture_output=True, text=True)
    return r.stdout.split()
