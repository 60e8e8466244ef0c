import sys, struct; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from mk import *
p=Pcap(); c=Conn(p); c.handshake()
# client: Fetch v4 (non-flexible, corr 4) and AllocateProducerIds (corr 5), pipelined
fetch = other_req(1, 4, 4, b"\0"*40)
c.send(True, fetch + apid_req(5, broker=2, epoch=7))
# server: Fetch response (corr 4) of ~6000 bytes whose record data happens to contain
# the bytes of an AllocateProducerIds response frame for corr 5 (e.g. a topic of mirrored traffic)
fake = apid_resp(5, err=0, start=666666, ln=1)
body = b"\x11"*3000 + fake + b"\x22"*3000
fresp = framed(struct.pack("!i", 4) + body)
segs = c.segs(False, fresp, mss=1460)
for i,(seq,d) in enumerate(segs):
    if i == 0: continue            # the first server segment (with the Fetch response head) is missing
    c.raw(False, seq, "PA", d)
c.send(False, apid_resp(5, err=0, start=1000, ln=1000))   # the real answer
c.raw(True, c.cseq, "A")
c.close(); p.write(OUT+'/fake_resp.pcap')
r=run(OUT+'/fake_resp.pcap')
print(json.dumps(brief(r)))
for e in r['exchanges']: print(json.dumps(e['response']))
