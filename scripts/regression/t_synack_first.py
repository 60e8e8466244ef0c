import sys, struct; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from mk import *
p=Pcap(); c=Conn(p)
c.raw(False, c.sseq, "SA", ack=c.cseq+1)   # SYN-ACK captured before the SYN (-i any, two CPUs)
c.raw(True, c.cseq, "S", ack=0)
c.cseq += 1; c.sseq += 1
c.raw(True, c.cseq, "A")
c.send(True, apid_req(1)); c.send(False, apid_resp(1, start=100))
c.close(); p.write(OUT+'/synack_first.pcap')
r=run(OUT+'/synack_first.pcap'); print(json.dumps(brief(r)))
