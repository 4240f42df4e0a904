#!/usr/bin/env python3
"""The inbox narrowed to one run (`GET /v1/me/actions?run_id=`, `/app?run_id=`)
against the unfiltered inbox, on a run of N Actions (docs/benchmarks.md,
"Inbox by run"). Needs a running hds (`--rate-limit 0`), the JSON of
`hds init --json`, and optionally a one-time sign-in link for the dashboard:

  hds init --data-dir D --json > init.json
  HDS_DATA_DIR=D hds serve --listen 127.0.0.1:PORT --rate-limit 0 &
  python3 examples/inbox_by_run.py http://127.0.0.1:PORT init.json 10000 \
      "$(hds users link admin@localhost.localdomain --data-dir D)"

Uses the `requests` package (tests/py/requirements.txt).
"""
import concurrent.futures as cf
import json
import statistics
import sys
import time

import requests

base, init = sys.argv[1], json.load(open(sys.argv[2]))
n = int(sys.argv[3])
key, tok = init["source_key_live"], init["user_token"]
S = requests.Session()
H = {"authorization": f"Bearer {key}"}
U = {"authorization": f"Bearer {tok}"}
run = S.post(f"{base}/v1/runs", json={"name": "big run", "status": "running"}, headers=H).json()["data"]["id"]
def make(i):
    s = requests.Session()
    body = {"title": f"Merge duplicate {i}", "run_id": run, "priority": ["low","normal","high","urgent"][i % 4],
            "options": [{"id": "approve", "label": "Approve"}, {"id": "reject", "label": "Reject"}]}
    r = s.post(f"{base}/v1/actions", json=body, headers=H)
    assert r.status_code == 201, r.text
t = time.time()
with cf.ThreadPoolExecutor(16) as ex:
    list(ex.map(make, range(n)))
print(f"created {n} in {time.time()-t:.1f}s")
def timed(path, k=20):
    xs = []
    for _ in range(k):
        t = time.perf_counter(); r = S.get(f"{base}{path}", headers=U); xs.append((time.perf_counter()-t)*1000)
        assert r.status_code == 200, r.text
    xs.sort()
    return f"p50 {statistics.median(xs):.1f} ms, max {xs[-1]:.1f} ms"
print("inbox, no filter, limit 100:", timed("/v1/me/actions"))
print(f"run_id, open, limit 100:", timed(f"/v1/me/actions?run_id={run}"))
print(f"run_id, resolved (none), limit 100:", timed(f"/v1/me/actions?run_id={run}&status=resolved"))
print(f"run_id + search:", timed(f"/v1/me/actions?run_id={run}&search=merge"))
if len(sys.argv) > 4:
    B = requests.Session()
    r = B.post(sys.argv[4], headers={"origin": base}, allow_redirects=False)
    assert r.status_code == 303, r.status_code
    def page(path, k=10):
        xs = []
        for _ in range(k):
            t = time.perf_counter(); r = B.get(f"{base}{path}"); xs.append((time.perf_counter()-t)*1000)
            assert r.status_code == 200, r.status_code
        xs.sort()
        return f"p50 {statistics.median(xs):.1f} ms, max {xs[-1]:.1f} ms"
    print("dashboard /app (list + tab counts):", page("/app"))
    print("dashboard /app?run_id (list + tab counts):", page(f"/app?run_id={run}"))
