import sys, struct; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from mk import *
p=Pcap(); c=Conn(p); c.handshake()
req = apid_req(1, broker=7, epoch=42)       # 30 bytes; BrokerEpoch is bytes 21..29
bad = bytearray(req); bad[21:29] = struct.pack("!q", 4242)
base = c.cseq
c.raw(True, base+20, "PA", req[20:30], ack=c.sseq)         # first copy of bytes 20..30 (held)
c.raw(True, base+10, "PA", bytes(bad[10:30]), ack=c.sseq)   # later copy 10..30, different bytes 21..29 (held)
c.raw(True, base, "PA", req[0:10], ack=c.sseq)              # fills the hole
c.cseq = base + 30
c.send(False, apid_resp(1, start=100))
c.close(); p.write(OUT+'/held_conflict.pcap')
r=run(OUT+'/held_conflict.pcap'); print(json.dumps(brief(r)))
for e in r['exchanges']: print('epoch', e['request']['broker_epoch'])
