import sys, struct; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from mk import *
p=Pcap(); c=Conn(p); c.handshake()
c.send(True, apid_req(1)); c.send(False, apid_resp(1, start=100))
# one stray data segment whose ACK number is far ahead (e.g. from an earlier incarnation of this
# 4-tuple, or a middlebox that rewrites sequence numbers on one path)
c.raw(False, c.sseq, "PA", b"\0\0\0\0", ack=(c.cseq + 200_000_000) & 0xffffffff); 
c.sseq += 4
for corr in range(2, 6):
    c.send(True, apid_req(corr)); c.send(False, apid_resp(corr, start=corr*100))
c.close(); p.write(OUT+'/ack_jump.pcap')
r = run(OUT+'/ack_jump.pcap'); print(json.dumps(brief(r)))
