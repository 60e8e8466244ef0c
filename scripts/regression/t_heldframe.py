import sys, struct; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from mk import *
p=Pcap(); c=Conn(p); c.handshake()
(s1,d1),=c.segs(True, apid_req(1))     # lost by the capture (never seen)
c.send(True, apid_req(2))               # frame 4: held behind the hole
p.t += 5000                             # the server takes 5 ms
c.send(False, apid_resp(1, start=100))  # frame 5: its ACK covers request 2 -> hole declared
c.send(False, apid_resp(2, start=200))  # frame 6
c.close(); p.write(OUT+'/held_frame.pcap')
r=run(OUT+'/held_frame.pcap'); print(json.dumps(brief(r)))
for e in r['exchanges']: print(e['request']['frame'], e['request']['timestamp'], e['response']['frame'], e.get('latency_ms', e.get('latency')))
