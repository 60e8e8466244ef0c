import sys, struct; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from mk import *
import json
def build(path, cport, first_resps):
    p=Pcap(); c=Conn(p, c=("10.0.0.1", cport), s=("10.0.0.2", 9093))
    # capture starts mid-stream: the server is answering requests sent before the capture
    for corr in first_resps:
        c.send(False, apid_resp(corr, start=corr*1000))
    c.send(True, apid_req(first_resps[-1]+1 if first_resps else 1, broker=1, epoch=5))
    c.send(False, apid_resp(first_resps[-1]+1 if first_resps else 1, start=99000))
    c.send(True, apid_req(first_resps[-1]+2 if first_resps else 2, broker=1, epoch=5))
    c.send(False, apid_resp(first_resps[-1]+2 if first_resps else 2, start=98000))
    p.write(path)
for name,cport,fr in [("mid_swap_low",20000,[3]),("mid_swap_low2",20000,[3,4]),("mid_swap_high",40000,[3]),("mid_swap_both_high",40000,[3])]:
    if name=="mid_swap_both_high":
        p=Pcap(); c=Conn(p, c=("10.0.0.1", 40000), s=("10.0.0.2", 39093))
        c.send(False, apid_resp(3, start=3000)); c.send(True, apid_req(4)); c.send(False, apid_resp(4, start=99000)); p.write(f"{OUT}/{name}.pcap")
    else:
        build(f"{OUT}/{name}.pcap", cport, fr)
    r=run(f"{OUT}/{name}.pcap")
    print(name, json.dumps(brief(r)))
    for e in r["exchanges"]: print("   client", e.get("client"), "server", e.get("server"), e["request"].get("broker_id"), e["response"] and e["response"].get("producer_id_start"))
