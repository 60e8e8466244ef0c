import sys, struct; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from mk import *
K=int(sys.argv[1])
p=Pcap(); c=Conn(p); c.handshake()
c.send(True, other_req(18, 0, 0))                      # recognised as Kafka
# server: a bad size (framing lost), then K tiny "responses" each followed by 4 bad bytes
srv = b"\xff"*4 + b"".join(struct.pack("!ii", 4, k) + b"\xff"*4 for k in range(1, K+1))
c.raw(False, c.sseq, "PA", srv); c.sseq += len(srv)
# client: K requests in one segment -> the response window is rescanned once with K pending ids
cli = b"".join(struct.pack("!ihhih", 10, 18, 0, k, 0) for k in range(1, K+1))
c.raw(True, c.cseq, "PA", cli); c.cseq += len(cli)
p.write(f'{OUT}/deep2_{K}.pcap'); print(len(srv), len(cli))
