#!/usr/bin/env python3
"""A live subject: alternates one turn written through the server and one context call, and prints
the context calls' p50 and p90 (ms).

Usage: bench/live_subject.py SUBJECT CALLS GAP_SECONDS [BASE_URL]
(a mnemo server must be running; GAP_SECONDS is the pause between the write and the call).
"""
import http.client, json, time, sys
subj, n, gap = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
base = (sys.argv[4] if len(sys.argv) > 4 else "http://127.0.0.1:18130").split("//")[-1]
host, _, port = base.partition(":")
c = http.client.HTTPConnection(host, int(port or 80))
def post(path, body):
    c.request("POST", path, json.dumps(body), {"content-type": "application/json"})
    r = c.getresponse(); data = r.read(); assert r.status in (200, 201), (r.status, data[:200])
tasks = ["Summarise the budget review (request %d)", "What did we decide about the kafka consumer lag? (request %d)",
         "deploy pipeline staging rollback %d", "Troubleshoot: the user's ci job is timing out (request %d)"]
lat = []
for i in range(n):
    post("/v1/episodes", {"subject_id": subj, "source": "chat", "type": "message",
                          "payload": {"messages": [{"role": "user", "content": "Live turn %d about the request queue and the deploy." % i}]}})
    time.sleep(gap)
    t = time.perf_counter()
    post("/v1/context", {"subject_id": subj, "task": tasks[i % 4] % i, "max_tokens": 800})
    lat.append((time.perf_counter() - t) * 1000)
lat.sort()
print(json.dumps({"calls": n, "gap_s": gap, "p50": round(lat[len(lat)//2], 2), "p90": round(lat[int(len(lat)*0.9)], 2)}))
