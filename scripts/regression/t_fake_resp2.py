import sys, struct; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from mk import *
p=Pcap(); c=Conn(p); c.handshake()
fetch = other_req(1, 4, 4, b"\0"*40)
c.send(True, fetch + apid_req(5, broker=2, epoch=7))
# Fetch response (corr 4): ordinary-looking int32 fields and zero padding; somewhere an int32 48
# is followed by an int32 5 and zeros (e.g. a length then a partition index 5)
body = b"\x11"*3000 + struct.pack("!ii", 48, 5) + b"\0"*64 + b"\x22"*3000
fresp = framed(struct.pack("!i", 4) + body)
segs = c.segs(False, fresp, mss=1460)
for i,(seq,d) in enumerate(segs):
    if i == 0: continue            # the segment with the Fetch response head is not captured
    c.raw(False, seq, "PA", d)
c.send(False, apid_resp(5, err=0, start=1000, ln=1000))   # the real answer
c.raw(True, c.cseq, "A")
c.close(); p.write(OUT+'/fake_resp2.pcap')
r=run(OUT+'/fake_resp2.pcap'); print(json.dumps(brief(r)))
for e in r['exchanges']: print(e['status'], json.dumps(e['response']))
