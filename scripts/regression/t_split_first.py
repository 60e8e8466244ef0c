"""Mid-stream captures whose server's first captured bytes are an answer (issue 25, point 2).

split_first_response.pcap: picked up after two AllocateProducerIds requests (7 and 8) were
sent; the answer to 7 comes in segments of 1, 4, 1, 4, 5, 8 and 5 bytes, and its
producer_id_start (0x0000000400000008) reads as a 4-byte frame answering 8 that ends
where the sixth segment does. Then the answer to 8, whole.

unsure_sides_first_response.pcap: both ports ephemeral (which side is the client is
learnt from the bytes), picked up before request 42; its answer comes before request
43, which shows the client's side."""
import sys, os; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mk import *

p = Pcap(); c = Conn(p)
c.send(True, apid_req(7)); c.send(True, apid_req(8))
r7 = apid_resp(7, start=0x0000000400000008)
i = 0
for n in (1, 4, 1, 4, 5, 8, 5):
    c.raw(False, c.sseq, "PA", r7[i:i + n]); c.sseq += n; i += n
assert i == len(r7)
c.send(False, apid_resp(8, start=9000))
c.close()
p.write(OUT + '/split_first_response.pcap')
r = run(OUT + '/split_first_response.pcap'); print(json.dumps(brief(r)))

p = Pcap(); c = Conn(p, s=("10.0.0.2", 50000))
for corr in (42, 43, 44):
    c.send(True, apid_req(corr)); c.send(False, apid_resp(corr, start=1000 * corr))
c.close()
p.write(OUT + '/unsure_sides_first_response.pcap')
r = run(OUT + '/unsure_sides_first_response.pcap'); print(json.dumps(brief(r)))
