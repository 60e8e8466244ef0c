import sys, struct; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from mk import *
p=Pcap(); c=Conn(p)
r1, r2 = apid_req(5), apid_req(6)
c.raw(True, c.cseq, "PA", r1 + r2[:6]); c.cseq += len(r1) + 6      # frame 1
p.t += 3000
c.raw(True, c.cseq, "PA", r2[6:]); c.cseq += len(r2) - 6            # frame 2, 3 ms later
c.send(False, apid_resp(5, start=500)); c.send(False, apid_resp(6, start=600))
p.write(OUT+'/resync_frame.pcap')
r=run(OUT+'/resync_frame.pcap'); print(json.dumps(brief(r)))
for e in r['exchanges']: print(e['correlation_id'], e['request']['frame'], e['request']['timestamp'], e['latency_us'])
