#!/usr/bin/env python3
"""Make pidshark's real-program noise fixtures (issue 12, "Noise must stay noise").

Real servers and real clients of the length-prefixed binary protocols that run next
to Kafka in real clusters talk over 127.0.0.1 while tcpdump captures `lo` (full
snaplen), one capture per protocol. None of it is Kafka: tests/it/noise_real.rs
checks that pidshark finds no exchange and no Kafka connection in any of them, and
gives every connection up out loud. It writes into fixtures/noise-real/:

  zookeeper-3.8.4.pcap            ZooKeeper 3.8.4 standalone on :2181, 12 zkCli
                                  (ZooKeeperMain) sessions: create/get/set/ls/stat/
                                  delete/deleteall, watches, persistent recursive
                                  watch, ephemeral and sequential nodes, an 8 KB
                                  node, errors, idle sessions that ping; two 4lw
                                  connections (ruok, srvr)
  zookeeper-3.9.3-port9092.pcap   the same sessions against ZooKeeper 3.9.3 on
                                  :9092 (a Kafka port), with the 3.9.3 client
  zookeeper-3.8.4-midstream.pcap  three busy 3.8.4 client sessions (set/get in a
                                  loop) that connected before tcpdump started
  zookeeper-3.8.4-short.pcap      nine 3.8.4 sessions of one request each (exists,
                                  get or create) by kazoo, the Java client API and
                                  zkCli one-shot commands; seven close their session,
                                  two (create, then exit) end with only the FIN
  postgresql.pcap                 PostgreSQL (Debian) on :5432, psql over TCP with
                                  short and very long user / database /
                                  application_name / options, SSLRequest + TLS
                                  (sslmode=prefer/require), SCRAM, a failed login,
                                  COPY, an 800-row result, a CancelRequest, pgbench
                                  in extended and prepared mode
  postgresql-midstream.pcap       pgbench (2 clients) that connected before tcpdump
                                  started
  tls-openssl-9093.pcap           openssl s_server on :9093 (a Kafka TLS port) and
                                  s_client: TLS 1.3, TLS 1.2, resumption, SNI + ALPN,
                                  24 KB each way
  http2-nghttp2-9092.pcap         nghttpd (h2c, no TLS) on :9092: nghttp with prior
                                  knowledge and with Upgrade, curl
                                  --http2-prior-knowledge, h2load
  random-length-prefixed-9092.pcap  Python sockets on :9092 exchanging int32-length-
                                  prefixed messages of random bytes (fixed seeds)

A capture over ~200 KB is gzipped (.pcap.gz). Usage (root; needs network on the
first run for Maven Central, PyPI and apt):

    python3 scripts/make-noise-fixtures.py [--out DIR] [--only NAME ...]

The ZooKeeper jars are cached under target/noise-jars/<version>/, and kazoo (from
PyPI, with pip) is installed in a venv under target/noise-venv/, so reruns need no
network. Missing Debian programs (postgresql, nghttp2-client, nghttp2-server,
openssl, tcpdump) are installed with apt-get. Every process the script starts runs
in its own process group and is killed (group-wide) when the script ends, also on
failure. Every run overwrites the fixtures; timestamps and ephemeral ports change.
Python 3.11, standard library only (kazoo runs in its venv).
"""

from __future__ import annotations

import argparse
import gzip
import os
import random
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
ROOT = HERE.parent
HOST = "127.0.0.1"
GZIP_OVER = 200 * 1024
ZK_VERSIONS = ("3.8.4", "3.9.3")
# zookeeper's own pom marks these "provided"; zkCli and the server need them at run time
ZK_EXTRA_DEPS = (
    ("commons-cli", "commons-cli", "1.5.0"),
    ("io.dropwizard.metrics", "metrics-core", "4.1.12.1"),
    ("org.xerial.snappy", "snappy-java", "1.1.10.5"),
)
JAVA_OPTS = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xms32m", "-Xmx256m"]


def log(msg: str) -> None:
    print(msg, flush=True)


# ---------------------------------------------------------------------------
# processes: each in its own group, all killed at the end


class Procs:
    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []
        self.lock = threading.Lock()

    def start(self, argv: list[str], **kw) -> subprocess.Popen:
        kw.setdefault("stdin", subprocess.DEVNULL)
        kw.setdefault("stdout", subprocess.DEVNULL)
        kw.setdefault("stderr", subprocess.DEVNULL)
        p = subprocess.Popen(argv, start_new_session=True, **kw)
        with self.lock:
            self.procs.append(p)
        return p

    def run(self, argv: list[str], timeout: float = 60, check: bool = True, **kw) -> subprocess.Popen:
        """Starts `argv`, waits for it (killing its group after `timeout`)."""
        p = self.start(argv, **kw)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stop(p)
            raise RuntimeError(f"timed out: {' '.join(argv)}")
        if check and p.returncode != 0:
            raise RuntimeError(f"exit {p.returncode}: {' '.join(argv)}")
        return p

    @staticmethod
    def stop(p: subprocess.Popen, sig: int = signal.SIGTERM, grace: float = 10) -> None:
        if p.poll() is None:
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                pass
            try:
                p.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        # the group may hold children (pg backends, JVM threads are one process)
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            pass

    def stop_all(self) -> None:
        with self.lock:
            procs = list(reversed(self.procs))
        for p in procs:
            self.stop(p, grace=3)


PROCS = Procs()


def assert_port_free(port: int) -> None:
    """Fails when something already listens on `port` (it would answer instead of ours)."""
    with socket.socket() as s:
        s.settimeout(1)
        if s.connect_ex((HOST, port)) == 0:
            raise RuntimeError(f"{HOST}:{port} is already in use; stop what listens there")


def wait_port(port: int, timeout: float = 60, proc: subprocess.Popen | None = None) -> None:
    """Until `port` accepts (the probe is made before any capture starts)."""
    end = time.time() + timeout
    while time.time() < end:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{' '.join(map(str, proc.args))} exited ({proc.returncode})")
        try:
            with socket.create_connection((HOST, port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"nothing listens on {HOST}:{port}")


def wait_established(port: int, count: int, timeout: float = 30) -> None:
    """Until `count` client connections to `port` are established (ss)."""
    end = time.time() + timeout
    n = 0
    while time.time() < end:
        out = subprocess.run(["ss", "-Htn", "state", "established", f"( dport = :{port} )"],
                             capture_output=True, text=True).stdout
        n = len([l for l in out.splitlines() if l.strip()])
        if n >= count:
            return
        time.sleep(0.2)
    raise RuntimeError(f"only {n} of {count} connections to :{port} established")


# ---------------------------------------------------------------------------
# tcpdump


class Capture:
    """tcpdump -i lo -s 0 on `ports` into `path` for the duration of a with block."""

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
        if self.path.exists():
            self.path.unlink()
        expr = " or ".join(f"tcp port {p}" for p in self.ports)
        # -Z root: keep privileges so the file can be written anywhere; --immediate-mode:
        # hand every packet over at once, so none is lost at SIGINT
        # -B: a 64 MiB kernel buffer, so pgbench's bursts are not dropped
        cmd = ["tcpdump", "-i", "lo", "-U", "--immediate-mode", "-B", "65536", "-s", "0", "-n", "-Z", "root",
               "-w", str(self.path), expr]
        self.proc = PROCS.start(cmd, stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._read_stderr, daemon=True).start()
        if not self._listening.wait(15):
            raise RuntimeError(f"tcpdump did not start: {' '.join(self.stderr_lines)}")
        time.sleep(0.3)
        return self

    def __exit__(self, *exc) -> None:
        assert self.proc
        time.sleep(0.5)
        PROCS.stop(self.proc, sig=signal.SIGINT, grace=15)
        time.sleep(0.1)
        summary = [l for l in self.stderr_lines if "packets" in l]
        log(f"  {self.path.name}: " + "; ".join(summary))
        for l in summary:
            if "dropped by kernel" in l and not l.startswith("0 "):
                raise RuntimeError(f"tcpdump dropped packets: {l}")


def pcap_stats(path: Path) -> tuple[int, int, set[int]]:
    """(packets, SYNs without ACK, server ports of those SYNs) of a tcpdump pcap on lo."""
    data = path.read_bytes()
    at, packets, syns, ports = 24, 0, 0, set()
    while at + 16 <= len(data):
        caplen = struct.unpack_from("<I", data, at + 8)[0]
        pkt = data[at + 16:at + 16 + caplen]
        at += 16 + caplen
        packets += 1
        if len(pkt) < 14 + 20 or pkt[12:14] != b"\x08\x00":
            continue
        ihl = (pkt[14] & 0x0F) * 4
        if pkt[14 + 9] != 6:
            continue
        tcp = pkt[14 + ihl:]
        if len(tcp) >= 14 and tcp[13] & 0x12 == 0x02:
            syns += 1
            ports.add(struct.unpack_from(">H", tcp, 2)[0])
    return packets, syns, ports


def finish(path: Path, out: Path) -> Path:
    """Moves the capture into `out`, gzipped when large; returns the final path."""
    packets, syns, ports = pcap_stats(path)
    size = path.stat().st_size
    for old in (out / path.name, out / (path.name + ".gz")):
        if old.exists():
            old.unlink()
    if size > GZIP_OVER:
        final = out / (path.name + ".gz")
        with path.open("rb") as f, gzip.GzipFile(final, "wb", mtime=0) as g:
            shutil.copyfileobj(f, g)
        path.unlink()
    else:
        final = out / path.name
        shutil.move(path, final)
    log(f"  -> {final.relative_to(ROOT) if final.is_relative_to(ROOT) else final}: "
        f"{final.stat().st_size} bytes, {packets} packets, {syns} connections opened in "
        f"the capture (server ports {sorted(ports)})")
    return final


# ---------------------------------------------------------------------------
# programs


def ensure_debian(binary: str, packages: list[str]) -> None:
    if shutil.which(binary) or Path(binary).exists():
        return
    log(f"installing {' '.join(packages)} (apt-get)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "install", "-y", *packages], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    if not (shutil.which(binary) or Path(binary).exists()):
        subprocess.run(["apt-get", "update"], check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["apt-get", "install", "-y", *packages], check=True, env=env,
                       stdout=subprocess.DEVNULL)


def zookeeper_classpath(version: str) -> str:
    """The jars of ZooKeeper `version` from Maven Central, cached under target/noise-jars."""
    jars = ROOT / "target" / "noise-jars" / version
    if not (jars / f"zookeeper-{version}.jar").exists():
        log(f"fetching ZooKeeper {version} from Maven Central (mvn dependency:copy-dependencies)")
        jars.mkdir(parents=True, exist_ok=True)
        deps = [("org.apache.zookeeper", "zookeeper", version), *ZK_EXTRA_DEPS]
        pom = (
            '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
            "<groupId>pidshark</groupId><artifactId>noise-zk</artifactId><version>1</version>"
            "<packaging>pom</packaging><dependencies>"
            + "".join(f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId>"
                      f"<version>{v}</version></dependency>" for g, a, v in deps)
            + "</dependencies></project>"
        )
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "pom.xml").write_text(pom)
            subprocess.run(["mvn", "-q", "-B", "dependency:copy-dependencies",
                            f"-DoutputDirectory={jars}"], cwd=d, check=True)
    logback = jars.parent / "logback-warn.xml"
    logback.write_text('<configuration><appender name="E" class="ch.qos.logback.core.ConsoleAppender">'
                       "<encoder><pattern>%d %level %logger{20} %msg%n</pattern></encoder></appender>"
                       '<root level="WARN"><appender-ref ref="E"/></root></configuration>\n')
    return ":".join(str(j) for j in sorted(jars.glob("*.jar")))


def java(cp: str, main: str, *args: str) -> list[str]:
    logback = ROOT / "target" / "noise-jars" / "logback-warn.xml"
    return ["java", *JAVA_OPTS, f"-Dlogback.configurationFile={logback}", "-cp", cp, main, *args]


# ---------------------------------------------------------------------------
# ZooKeeper


class ZkServer:
    def __init__(self, version: str, port: int, work: Path):
        self.version, self.port = version, port
        self.cp = zookeeper_classpath(version)
        self.dir = Path(tempfile.mkdtemp(prefix=f"zk-{version}-{port}-", dir=work))
        (self.dir / "data").mkdir()
        cfg = self.dir / "zoo.cfg"
        cfg.write_text(
            "tickTime=500\n"
            f"dataDir={self.dir / 'data'}\n"
            f"clientPort={port}\n"
            f"clientPortAddress={HOST}\n"
            "admin.enableServer=false\n"
            "4lw.commands.whitelist=ruok,srvr\n"
            "maxSessionTimeout=60000\n"
        )
        self.log = (self.dir / "server.log").open("wb")
        assert_port_free(port)
        self.proc = PROCS.start(java(self.cp, "org.apache.zookeeper.server.quorum.QuorumPeerMain", str(cfg)),
                                stdout=self.log, stderr=subprocess.STDOUT)
        wait_port(port, proc=self.proc)

    def stop(self) -> None:
        PROCS.stop(self.proc)
        self.log.close()


class ZkCli:
    """An interactive zkCli (ZooKeeperMain) session fed commands on its stdin."""

    def __init__(self, server: ZkServer, steps: list, timeout_ms: int = 4000, name: str = "cli",
                 hold: bool = False):
        """`hold`: write no `quit` after the steps; the caller feeds stdin and quits."""
        self.server, self.steps, self.hold = server, steps, hold
        self.log = (server.dir / f"{name}.log").open("wb")
        self.proc = PROCS.start(
            java(server.cp, "org.apache.zookeeper.ZooKeeperMain", "-server", f"{HOST}:{server.port}",
                 "-timeout", str(timeout_ms)),
            stdin=subprocess.PIPE, stdout=self.log, stderr=subprocess.STDOUT)
        self.thread = threading.Thread(target=self._feed, daemon=True)
        self.error: BaseException | None = None
        self.thread.start()

    def _feed(self) -> None:
        try:
            assert self.proc.stdin
            for step in self.steps:
                if isinstance(step, (int, float)):
                    time.sleep(step)
                else:
                    self.proc.stdin.write(step.encode() + b"\n")
                    self.proc.stdin.flush()
            if not self.hold:
                self.proc.stdin.write(b"quit\n")
                self.proc.stdin.close()
        except BaseException as e:  # noqa: BLE001 - reported by join
            self.error = e

    def join(self, timeout: float = 60) -> None:
        self.thread.join(timeout)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            PROCS.stop(self.proc)
            raise RuntimeError(f"zkCli did not quit: {self.steps}")
        self.log.close()
        if self.error:
            raise self.error


def zk_oneshot(server: ZkServer, *command: str) -> None:
    """zkCli with the command on its command line (runs it, then exits)."""
    PROCS.run(java(server.cp, "org.apache.zookeeper.ZooKeeperMain", "-server",
                   f"{HOST}:{server.port}", *command), timeout=60, check=False)


def four_letter(port: int, word: bytes) -> None:
    """A four-letter-word command (what monitoring sends to the client port)."""
    with socket.create_connection((HOST, port)) as s:
        s.sendall(word)
        while s.recv(65536):
            pass


def zk_sessions(server: ZkServer) -> int:
    """Drives the sessions; returns how many TCP connections they opened."""
    broker = '{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":' \
             '["PLAINTEXT://127.0.0.1:9092"],"jmx_port":-1,"host":"127.0.0.1","port":9092,"version":5}'
    big = "x" * 8000
    # 1: the znodes a Kafka cluster keeps
    ZkCli(server, ["create /kafka", "create /kafka/brokers", "create /kafka/brokers/ids",
                   "create /kafka/brokers/topics", 'create /kafka/config {"version":1}',
                   "create /kafka/controller_epoch 1"], name="s1").join()
    # 2, 3, 4: watchers kept open long enough to ping (timeout 3000 ms: a ping every
    # second of idleness)
    watcher = ZkCli(server, ["get -w /kafka/config", "ls -w /kafka/brokers/ids", 4.0,
                             "get -s /kafka/config", "ls /kafka/brokers/ids"], timeout_ms=3000, name="s2")
    recursive = ZkCli(server, ["addWatch -m PERSISTENT_RECURSIVE /kafka", 4.5, "stat /kafka"],
                      timeout_ms=3000, name="s3")
    idle = ZkCli(server, [1.0, "ls /", 3.5, "ls /kafka"], timeout_ms=2000, name="s4")
    time.sleep(2.0)
    # 5: fires the watches, registers an ephemeral broker, pings, quits (ephemeral goes)
    ZkCli(server, ['set /kafka/config {"version":2}', f"create -e /kafka/brokers/ids/1 {broker}",
                   "get /kafka/brokers/ids/1", 2.5], timeout_ms=3000, name="s5").join()
    # 6: sequential nodes
    ZkCli(server, ["create -s /kafka/seq- a", "create -s /kafka/seq- b", "create -s /kafka/seq- c",
                   "ls -s /kafka", "getAllChildrenNumber /kafka"], name="s6").join()
    # 7: a node larger than a Kafka header window
    ZkCli(server, [f"create /kafka/big {big}", "get /kafka/big", "stat /kafka/big"], name="s7").join()
    # 8: set, sync, ACLs, delete
    ZkCli(server, ["create /kafka/tmp a", "set /kafka/tmp b", "sync /kafka", "getAcl /kafka",
                   "get /kafka/tmp", "delete /kafka/tmp"], name="s8").join()
    # 9: errors: NoNode, NodeExists, NotEmpty
    ZkCli(server, ["get /does/not/exist", "create /kafka/config again", "delete /kafka/brokers"],
          name="s9").join()
    # 10, 11: one-shot commands on the command line
    zk_oneshot(server, "ls", "-R", "/kafka")
    zk_oneshot(server, "get", "-s", "/kafka/controller_epoch")
    for s in (watcher, recursive, idle):
        s.join()
    # 12: cleanup
    ZkCli(server, ["deleteall /kafka", "ls /"], name="s12").join()
    # monitoring: two four-letter words
    four_letter(server.port, b"ruok")
    four_letter(server.port, b"srvr")
    return 14


def make_zookeeper(version: str, port: int, out: Path, work: Path, name: str) -> None:
    log(f"{name}: ZooKeeper {version} on {HOST}:{port}")
    server = ZkServer(version, port, work)
    try:
        with Capture(work / name, [port]):
            n = zk_sessions(server)
        log(f"  {n} connections made")
    finally:
        server.stop()
    finish(work / name, out)


def make_zookeeper_midstream(version: str, port: int, out: Path, work: Path, name: str) -> None:
    log(f"{name}: ZooKeeper {version} on {HOST}:{port}, clients busy before the capture starts")
    server = ZkServer(version, port, work)
    try:
        ZkCli(server, ["create /busy", "create /busy/a 0", "create /busy/b 0", "create /busy/c 0"],
              name="m0").join()
        stop = threading.Event()
        clis = [(node, ZkCli(server, [], timeout_ms=4000, name=f"m-{node}", hold=True)) for node in "abc"]

        def busy(node: str, cli: ZkCli) -> None:
            assert cli.proc.stdin
            i = 0
            while not stop.is_set():
                cli.proc.stdin.write(f"set /busy/{node} value-{i}-{'v' * (i % 50)}\n".encode())
                cli.proc.stdin.write(f"get -s /busy/{node}\n".encode())
                if i % 7 == 0:
                    cli.proc.stdin.write(b"ls /busy\n")
                cli.proc.stdin.flush()
                i += 1
                time.sleep(0.05)

        feeders = [threading.Thread(target=busy, args=c, daemon=True) for c in clis]
        for t in feeders:
            t.start()
        wait_established(port, 3)
        time.sleep(1.5)
        with Capture(work / name, [port]):
            time.sleep(3.0)
            stop.set()
            for t in feeders:
                t.join()
            for _, cli in clis:
                assert cli.proc.stdin
                cli.proc.stdin.write(b"quit\n")
                cli.proc.stdin.close()
            for _, cli in clis:
                cli.proc.wait(30)
                cli.log.close()
    finally:
        server.stop()
    finish(work / name, out)


KAZOO_VERSION = "2.11.0"
# one session of the real Java client API: connect, one request, close() (closeSession)
ZK_ONE_REQUEST_JAVA = """
import java.util.concurrent.CountDownLatch;
import org.apache.zookeeper.*;

public class ZkOneRequest {
    public static void main(String[] a) throws Exception {
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper(a[0], 30000, e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) connected.countDown();
        });
        connected.await();
        switch (a[1]) {
            case "exists": zk.exists(a[2], false); break;
            case "get": zk.getData(a[2], false, null); break;
            case "create": zk.create(a[2], new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT); break;
            default: throw new IllegalArgumentException(a[1]);
        }
        zk.close();
    }
}
"""
# one kazoo session: connect, one request, then stop() (closeSession) and close(), or
# with "exit" the process exits at once, as a crashed client does (a FIN, no closeSession)
KAZOO_ONE_REQUEST = """
import os
import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1], timeout=30)
zk.start(timeout=15)
op, path = sys.argv[2], sys.argv[3]
if op == "exists":
    zk.exists(path)
elif op == "get":
    zk.get(path)
elif op == "create":
    zk.create(path, b"")
else:
    raise SystemExit(op)
if sys.argv[4:] == ["exit"]:
    sys.stdout.flush()
    os._exit(0)
zk.stop()
zk.close()
"""


def kazoo_python() -> Path:
    """A venv under target/ with kazoo from PyPI (pip); returns its python."""
    venv = ROOT / "target" / "noise-venv"
    python = venv / "bin" / "python"
    ok = python.exists() and subprocess.run(
        [str(python), "-c", f"import importlib.metadata as m; assert m.version('kazoo') == '{KAZOO_VERSION}'"],
        capture_output=True).returncode == 0
    if not ok:
        log(f"installing kazoo {KAZOO_VERSION} from PyPI into {venv.relative_to(ROOT)}")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", f"kazoo=={KAZOO_VERSION}"], check=True)
    return python


def zk_short_sessions(server: ZkServer, work: Path) -> int:
    """Sessions of one request each, by real clients; returns how many connections."""
    target = f"{HOST}:{server.port}"
    python = kazoo_python()
    kazoo = work / "kazoo_one_request.py"
    kazoo.write_text(KAZOO_ONE_REQUEST)
    javasrc = work / "ZkOneRequest.java"
    javasrc.write_text(ZK_ONE_REQUEST_JAVA)
    sessions = [
        [str(python), str(kazoo), target, "exists", "/"],
        [str(python), str(kazoo), target, "get", "/zookeeper"],
        [str(python), str(kazoo), target, "create", "/short-kazoo"],
        java(server.cp, str(javasrc), target, "exists", "/"),
        java(server.cp, str(javasrc), target, "get", "/zookeeper"),
        java(server.cp, str(javasrc), target, "create", "/short-java"),
        [str(python), str(kazoo), target, "create", "/short-kazoo-exit", "exit"],
    ]
    for argv in sessions:
        PROCS.run(argv, timeout=60)
        time.sleep(0.2)
    # zkCli's one-shot commands: each exits without closing its session (a FIN, no
    # closeSession)
    zk_oneshot(server, "stat", "/")
    time.sleep(0.2)
    zk_oneshot(server, "create", "/short-cli")
    return len(sessions) + 2


def make_zookeeper_short(version: str, port: int, out: Path, work: Path, name: str) -> None:
    log(f"{name}: ZooKeeper {version} on {HOST}:{port}, sessions of one request each")
    server = ZkServer(version, port, work)
    try:
        with Capture(work / name, [port]):
            n = zk_short_sessions(server, work)
        log(f"  {n} connections made")
    finally:
        server.stop()
    finish(work / name, out)


# ---------------------------------------------------------------------------
# PostgreSQL


def pg_bin() -> Path:
    ensure_debian("/usr/lib/postgresql", ["postgresql"])
    bins = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"),
                  key=lambda p: int(p.parent.parent.name))
    if not bins:
        ensure_debian("/nonexistent", ["postgresql"])
        bins = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"))
    return bins[-1].parent


LONG_USER = "analytics_readonly_service_account_for_the_kafka_offsets_report"  # 63 bytes
LONG_DB = "kafka_consumer_group_offsets_and_lag_history_for_all_clusters_x"  # 63 bytes
LONG_APP = "kafka-lag-exporter/0.8.2 (cluster=prod-eu-west-1-main; pod=lag-exporter-7f9c5d-" + "x" * 120
SCRAM_USER, SCRAM_PASSWORD = "scram_user", "s3cret-password"


class PgServer:
    def __init__(self, port: int, work: Path):
        self.port = port
        self.bin = pg_bin()
        self.dir = work / "pg"
        self.dir.mkdir()
        shutil.chown(self.dir, "postgres", "postgres")
        self.data = self.dir / "data"
        self.as_pg = dict(user="postgres", group="postgres", extra_groups=[])
        PROCS.run([str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust",
                   "--no-sync"], timeout=120, cwd=self.dir, **self.as_pg)
        # a self-signed certificate, so sslmode=prefer/require negotiate TLS
        PROCS.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                   "-subj", "/CN=localhost", "-keyout", str(self.data / "server.key"),
                   "-out", str(self.data / "server.crt")], timeout=60)
        for f in ("server.key", "server.crt"):
            shutil.chown(self.data / f, "postgres", "postgres")
        os.chmod(self.data / "server.key", 0o600)
        (self.data / "pg_hba.conf").write_text(
            "local all all trust\n"
            f"host all {SCRAM_USER} 127.0.0.1/32 scram-sha-256\n"
            "host all all 127.0.0.1/32 trust\n"
        )
        with (self.data / "postgresql.conf").open("a") as f:
            f.write(f"listen_addresses = '{HOST}'\nport = {port}\nunix_socket_directories = '{self.dir}'\n"
                    "ssl = on\nfsync = off\npassword_encryption = 'scram-sha-256'\n")
        self.log = (self.dir / "server.log").open("wb")
        assert_port_free(port)
        # postgres in the foreground (not pg_ctl, which would leave our process group)
        self.proc = PROCS.start([str(self.bin / "postgres"), "-D", str(self.data)], cwd=self.dir,
                                stdout=self.log, stderr=subprocess.STDOUT, **self.as_pg)
        end = time.time() + 60
        while PROCS.run([str(self.bin / "pg_isready"), "-h", str(self.dir), "-p", str(port)],
                        check=False, timeout=10).returncode != 0:
            if time.time() > end or self.proc.poll() is not None:
                raise RuntimeError("postgres did not start")
            time.sleep(0.3)

    def local_sql(self, sql: str, db: str = "postgres") -> None:
        """SQL over the Unix socket (not captured)."""
        PROCS.run([str(self.bin / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", str(self.dir),
                   "-p", str(self.port), "-U", "postgres", "-d", db, "-c", sql], timeout=60)

    def setup(self) -> None:
        self.local_sql(f"CREATE ROLE app LOGIN; CREATE ROLE {LONG_USER} LOGIN; "
                       f"CREATE ROLE {SCRAM_USER} LOGIN PASSWORD '{SCRAM_PASSWORD}'")
        self.local_sql("CREATE DATABASE app OWNER app")
        self.local_sql(f"CREATE DATABASE {LONG_DB} OWNER {LONG_USER}")
        self.local_sql("CREATE DATABASE bench")
        self.local_sql("CREATE TABLE offsets (grp text, topic text, part int, off bigint)", db="app")
        self.local_sql("GRANT ALL ON offsets TO PUBLIC", db="app")
        PROCS.run([str(self.bin / "pgbench"), "-i", "-s", "1", "-q", "-h", str(self.dir), "-p",
                   str(self.port), "-U", "postgres", "bench"], timeout=120)

    def stop(self) -> None:
        PROCS.stop(self.proc, sig=signal.SIGINT, grace=15)
        self.log.close()


def psql(pg: PgServer, conninfo: str, *args: str, password: str | None = None, check: bool = True,
         stdin=None) -> None:
    env = dict(os.environ, PGCONNECT_TIMEOUT="10")
    env.pop("PGPASSWORD", None)
    if password:
        env["PGPASSWORD"] = password
    PROCS.run([str(pg.bin / "psql"), "-X", f"host={HOST} port={pg.port} {conninfo}", *args],
              timeout=60, check=check, env=env, stdin=stdin or subprocess.DEVNULL)


def pg_sessions(pg: PgServer, work: Path) -> int:
    n = 0
    # short StartupMessage, one query
    psql(pg, "user=app dbname=app sslmode=disable", "-c", "SELECT 1")
    n += 1
    # the long StartupMessages: 63-byte user and database, long application_name
    psql(pg, f"user={LONG_USER} dbname={LONG_DB} application_name='{LONG_APP}' sslmode=disable",
         "-c", "SELECT current_user, current_database(), current_setting('application_name')",
         "-c", "SELECT version()")
    n += 1
    # very long: options with several -c settings as well (about 700 bytes)
    opts = " ".join(f"-c {k}={v}" for k, v in [
        ("search_path", "kafka_offsets,kafka_lag,public"), ("statement_timeout", "5000"),
        ("work_mem", "64MB"), ("lock_timeout", "1000"), ("idle_in_transaction_session_timeout", "60000"),
        ("timezone", "UTC"), ("datestyle", "ISO"), ("extra_float_digits", "3")])
    psql(pg, f"user={LONG_USER} dbname=app application_name='{LONG_APP}' options='{opts}' sslmode=disable",
         "-c", "SHOW search_path", "-c", "SHOW work_mem")
    n += 1
    # a user name longer than NAMEDATALEN that does not exist: FATAL
    psql(pg, f"user={'consumer_' * 30}x dbname=app sslmode=disable", "-c", "SELECT 1", check=False)
    n += 1
    # SSLRequest, then TLS
    psql(pg, "user=app dbname=app sslmode=prefer", "-c", "SELECT 2")
    n += 1
    psql(pg, f"user={LONG_USER} dbname={LONG_DB} application_name='{LONG_APP}' sslmode=require",
         "-c", "SELECT 3")
    n += 1
    # SCRAM-SHA-256 in the clear
    psql(pg, f"user={SCRAM_USER} dbname=app sslmode=disable", "-c", "SELECT 4", password=SCRAM_PASSWORD)
    n += 1
    # inserts, COPY from STDIN, an UPDATE
    script = work / "copy.sql"
    rows = "".join(f"lag-exporter\tpayments\t{p}\t{1000 * p + 17}\n" for p in range(40))
    script.write_text(
        "BEGIN;\n"
        "INSERT INTO offsets VALUES ('billing', 'invoices', 0, 42), ('billing', 'invoices', 1, 43);\n"
        "COPY offsets FROM STDIN;\n" + rows + "\\.\n"
        "UPDATE offsets SET off = off + 1 WHERE part < 10;\n"
        "COMMIT;\n"
        "SELECT grp, count(*), sum(off) FROM offsets GROUP BY grp;\n")
    psql(pg, "user=app dbname=app sslmode=disable", "-v", "ON_ERROR_STOP=1", "-f", str(script))
    n += 1
    # a result of 800 rows (many DataRow messages, several segments)
    psql(pg, "user=app dbname=app sslmode=disable", "-c",
         "SELECT g, md5(g::text), repeat('k', g % 40) FROM generate_series(1, 800) g")
    n += 1
    # Ctrl-C during a query: psql sends a CancelRequest on a second connection
    env = dict(os.environ)
    p = PROCS.start([str(pg.bin / "psql"), "-X", f"host={HOST} port={pg.port} user=app dbname=app sslmode=disable",
                     "-c", "SELECT pg_sleep(10)"], env=env)
    time.sleep(1.5)
    os.kill(p.pid, signal.SIGINT)
    p.wait(30)
    n += 2
    # pgbench: extended and prepared protocol (each run: its own connection, then one per client)
    for mode in ("extended", "prepared"):
        PROCS.run([str(pg.bin / "pgbench"), "-h", HOST, "-p", str(pg.port), "-U", "postgres", "-M", mode,
                   "-c", "2", "-t", "20", "-n", "bench"], timeout=120)
        n += 3
    return n


def make_postgres(out: Path, work: Path, port: int = 5432) -> None:
    name = "postgresql.pcap"
    log(f"{name}: PostgreSQL on {HOST}:{port}")
    pg = PgServer(port, work)
    try:
        pg.setup()
        with Capture(work / name, [port]):
            n = pg_sessions(pg, work)
        log(f"  {n} connections made")
        log(f"postgresql-midstream.pcap: pgbench connected before the capture starts")
        bench = PROCS.start([str(pg.bin / "pgbench"), "-h", HOST, "-p", str(port), "-U", "postgres",
                             "-M", "extended", "-c", "2", "-T", "30", "-R", "25", "-n", "bench"])
        wait_established(port, 2)
        time.sleep(1.5)
        with Capture(work / "postgresql-midstream.pcap", [port]):
            time.sleep(2.5)
            PROCS.stop(bench, sig=signal.SIGINT)
    finally:
        pg.stop()
    finish(work / name, out)
    finish(work / "postgresql-midstream.pcap", out)


# ---------------------------------------------------------------------------
# TLS


def make_tls(out: Path, work: Path, port: int = 9093) -> None:
    name = f"tls-openssl-{port}.pcap"
    log(f"{name}: openssl s_server on {HOST}:{port}")
    d = work / "tls"
    d.mkdir()
    key, crt = d / "broker.key", d / "broker.crt"
    PROCS.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
               "-subj", "/CN=broker-1.kafka.example", "-keyout", str(key), "-out", str(crt)], timeout=60)
    assert_port_free(port)
    # -rev: answers every line with the line reversed
    server = PROCS.start(["openssl", "s_server", "-accept", f"{HOST}:{port}", "-cert", str(crt),
                          "-key", str(key), "-rev"], stdout=(d / "server.log").open("wb"),
                         stderr=subprocess.STDOUT)
    sess12, sess13 = d / "sess12.pem", d / "sess13.pem"
    clients = [
        ("tls1.3", [], 3),
        ("tls1.2", ["-tls1_2"], 3),
        ("tls1.2 ECDHE-RSA-AES128-GCM-SHA256, session saved", ["-tls1_2", "-cipher",
                                                                "ECDHE-RSA-AES128-GCM-SHA256", "-sess_out", str(sess12)], 3),
        ("tls1.2 resumed", ["-tls1_2", "-sess_in", str(sess12)], 2),
        ("tls1.3 ticket saved", ["-sess_out", str(sess13)], 2),
        ("tls1.3 resumed", ["-sess_in", str(sess13)], 2),
        ("tls1.3 SNI + ALPN", ["-servername", "broker-1.kafka.example", "-alpn", "kafka"], 2),
        ("tls1.3 24 KB", [], 300),
    ]
    try:
        time.sleep(1.0)
        wait_port(port, proc=server)  # one connection before the capture (s_server logs an error for it)
        time.sleep(0.5)
        with Capture(work / name, [port]):
            for what, args, lines in clients:
                c = PROCS.start(["openssl", "s_client", "-connect", f"{HOST}:{port}", "-brief", *args],
                                stdin=subprocess.PIPE)
                assert c.stdin
                for i in range(lines):
                    c.stdin.write(f"{what}: line {i} {'abcdefghijklmnopqrstuvwxyz' * 2}\n".encode())
                    c.stdin.flush()
                    if lines < 10:
                        time.sleep(0.1)
                time.sleep(0.5)
                c.stdin.close()
                try:
                    c.wait(20)
                except subprocess.TimeoutExpired:
                    PROCS.stop(c)
                time.sleep(0.2)
        log(f"  {len(clients)} connections made")
    finally:
        PROCS.stop(server)
    finish(work / name, out)


# ---------------------------------------------------------------------------
# HTTP/2


def make_http2(out: Path, work: Path, port: int = 9092) -> None:
    name = f"http2-nghttp2-{port}.pcap"
    log(f"{name}: nghttpd (h2c) on {HOST}:{port}")
    ensure_debian("nghttpd", ["nghttp2-server", "nghttp2-client"])
    ensure_debian("nghttp", ["nghttp2-client"])
    root = work / "www"
    root.mkdir()
    (root / "index.html").write_text("<html><head><link rel=stylesheet href=style.css>"
                                     "<script src=app.js></script></head><body>brokers</body></html>\n")
    (root / "style.css").write_text("body { color: #333 }\n" * 20)
    (root / "app.js").write_text("console.log('lag');\n" * 30)
    (root / "metrics").write_text("".join(f"kafka_consumergroup_lag{{partition=\"{p}\"}} {p * 3}\n"
                                          for p in range(400)))
    rnd = random.Random(9092)
    (root / "blob.bin").write_bytes(bytes(rnd.getrandbits(8) for _ in range(48 * 1024)))
    post = work / "post.json"
    post.write_text('{"topic":"payments","partitions":12}' * 40)
    assert_port_free(port)
    server = PROCS.start(["nghttpd", "--no-tls", "-a", HOST, "-d", str(root), str(port)])
    url = f"http://{HOST}:{port}"
    try:
        wait_port(port, proc=server)
        time.sleep(0.3)
        with Capture(work / name, [port]):
            n = 0
            for argv in (
                ["nghttp", "-n", f"{url}/index.html"],  # prior knowledge
                ["nghttp", "-n", "-u", f"{url}/index.html"],  # HTTP/1.1 Upgrade: h2c
                ["nghttp", "-n", "-a", f"{url}/index.html"],  # page and its assets
                ["nghttp", "-n", "-d", str(post), f"{url}/metrics"],  # POST
                ["nghttp", "-n", "-m", "5", f"{url}/metrics"],  # one URI 5 times, multiplexed
                ["curl", "-s", "-o", "/dev/null", "--http2-prior-knowledge", f"{url}/blob.bin"],
            ):
                # (curl --http2's Upgrade is not tried: nghttpd answers it with HTTP/2 frames)
                PROCS.run(argv, timeout=30)
                n += 1
                time.sleep(0.2)
            PROCS.run(["h2load", "-n", "60", "-c", "2", "-m", "4", f"{url}/metrics"], timeout=60)
            n += 2
        log(f"  {n} connections made")
    finally:
        PROCS.stop(server)
    finish(work / name, out)


# ---------------------------------------------------------------------------
# random length-prefixed binary


def make_random(out: Path, work: Path, port: int = 9092) -> None:
    name = f"random-length-prefixed-{port}.pcap"
    log(f"{name}: Python sockets on {HOST}:{port}, int32-length-prefixed random messages")
    seeds = [1, 2, 3, 0xC0FFEE]

    def messages(seed: int) -> list[tuple[bool, bytes]]:
        rnd = random.Random(seed)
        msgs = []
        for i in range(20):
            body = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(10, 300)))
            msgs.append((i % 2 == 0, struct.pack(">i", len(body)) + body))
        return msgs

    def recv_exact(s: socket.socket, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = s.recv(n - len(buf))
            if not chunk:
                raise RuntimeError("peer closed early")
            buf += chunk
        return buf

    assert_port_free(port)
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind((HOST, port))
    lsock.listen()
    errors: list[BaseException] = []

    def serve() -> None:
        try:
            for seed in seeds:
                conn, _ = lsock.accept()
                with conn:
                    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    for from_client, msg in messages(seed):
                        if from_client:
                            recv_exact(conn, len(msg))
                        else:
                            conn.sendall(msg)
                            time.sleep(0.01)
                    conn.recv(1)  # until the client closes
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    try:
        with Capture(work / name, [port]):
            t = threading.Thread(target=serve, daemon=True)
            t.start()
            for seed in seeds:
                with socket.create_connection((HOST, port)) as s:
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    for from_client, msg in messages(seed):
                        if from_client:
                            s.sendall(msg)
                            time.sleep(0.01)
                        else:
                            recv_exact(s, len(msg))
                time.sleep(0.1)
            t.join(10)
        if errors:
            raise errors[0]
        log(f"  {len(seeds)} connections made")
    finally:
        lsock.close()
    finish(work / name, out)


# ---------------------------------------------------------------------------


MAKERS = {
    "zookeeper-3.8.4": lambda o, w: make_zookeeper("3.8.4", 2181, o, w, "zookeeper-3.8.4.pcap"),
    "zookeeper-3.9.3-port9092": lambda o, w: make_zookeeper("3.9.3", 9092, o, w, "zookeeper-3.9.3-port9092.pcap"),
    "zookeeper-3.8.4-midstream": lambda o, w: make_zookeeper_midstream("3.8.4", 2181, o, w,
                                                                       "zookeeper-3.8.4-midstream.pcap"),
    "zookeeper-3.8.4-short": lambda o, w: make_zookeeper_short("3.8.4", 2181, o, w, "zookeeper-3.8.4-short.pcap"),
    "postgresql": make_postgres,
    "tls": make_tls,
    "http2": make_http2,
    "random": make_random,
}


def versions() -> None:
    for argv in (["java", "-version"], ["openssl", "version"], ["nghttpd", "--version"],
                 ["curl", "--version"], ["tcpdump", "--version"]):
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=10)
            log(f"  {' '.join(argv)}: {(r.stdout or r.stderr).splitlines()[0]}")
        except (OSError, IndexError, subprocess.TimeoutExpired):
            pass
    bins = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"))
    if bins:
        r = subprocess.run([str(bins[-1]), "--version"], capture_output=True, text=True)
        log(f"  postgres --version: {r.stdout.strip()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "fixtures" / "noise-real")
    ap.add_argument("--only", nargs="*", choices=sorted(MAKERS), help="make only these")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (program logs)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (tcpdump on lo, apt-get, a postgres user)")
    ensure_debian("tcpdump", ["tcpdump"])
    ensure_debian("openssl", ["openssl"])
    ensure_debian("ss", ["iproute2"])
    if not shutil.which("java") or not shutil.which("mvn"):
        ensure_debian("java", ["openjdk-17-jre-headless"])
        ensure_debian("mvn", ["maven"])
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="pidshark-noise-"))
    os.chmod(work, 0o755)
    try:
        for name in args.only or list(MAKERS):
            MAKERS[name](args.out, work)
        log("programs:")
        versions()
    finally:
        PROCS.stop_all()
        if args.keep:
            log(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
