import sys; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from mk import *
import json
# A: request split in two segments; capture shows 2nd segment, server's pure ACK, then 1st segment (tcpdump -i any reordering)
p=Pcap(); c=Conn(p); c.handshake()
req=apid_req(7, broker=3, epoch=99)
(s1,d1),(s2,d2)=c.segs(True, req, mss=20)
c.raw(True, s2, "PA", d2)
c.raw(False, c.sseq, "A", ack=c.cseq)     # server ACKs everything
c.raw(True, s1, "PA", d1)                 # data arrives a packet later
c.send(False, apid_resp(7, start=5000, ln=1000))
c.close(); p.write(OUT+'/ack_reorder_a.pcap')

# C: two pipelined requests, first segment seen after the server's ACK
p=Pcap(); c=Conn(p); c.handshake()
(s1,d1),=c.segs(True, apid_req(1))
(s2,d2),=c.segs(True, apid_req(2))
c.raw(True, s2, "PA", d2)
c.raw(False, c.sseq, "A", ack=c.cseq)
c.raw(True, s1, "PA", d1)
c.send(False, apid_resp(1, start=100)); c.send(False, apid_resp(2, start=200))
c.close(); p.write(OUT+'/ack_reorder_c.pcap')

# D: hole, then ACK declares it lost, then the retransmission of the lost bytes arrives
p=Pcap(); c=Conn(p); c.handshake()
(s1,d1),=c.segs(True, apid_req(1))
(s2,d2),=c.segs(True, apid_req(2))
c.raw(True, s2, "PA", d2)
c.raw(False, c.sseq, "A", ack=c.cseq)
c.raw(True, s1, "PA", d1)   # retransmission (e.g. the ACK was lost upstream)
c.send(False, apid_resp(1, start=100)); c.send(False, apid_resp(2, start=200))
c.close(); p.write(OUT+'/ack_retrans_d.pcap')
for f in ['ack_reorder_a','ack_reorder_c']:
    print(f, json.dumps(brief(run(f'{OUT}/{f}.pcap')), indent=0))
