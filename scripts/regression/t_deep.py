import sys, struct; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from mk import *
L=int(sys.argv[1])
p=Pcap(); c=Conn(p); c.handshake()
c.send(True, other_req(18, 0, 1))           # ApiVersions v0 (corr 1): recognised as Kafka
c.send(False, framed(struct.pack("!i",1)+b"\0"*6))
c.cseq += 50                                 # 50 client bytes lost: framing lost
def req(corr): return struct.pack("!ihhih", 10, 18, 0, corr, 0)
blob = b""; corr = 2
while len(blob) + 32 <= L:
    blob += req(corr) + req(corr+1) + b"\xff"*4; corr += 2
c.raw(True, c.cseq, "PA", blob); c.cseq += len(blob)
p.write(f'{OUT}/deep_{L}.pcap')
print(len(blob), corr)
