"""A webhook receiver on loopback for the test suite (tests/api/webhooks.rs).

Verifies every delivery with the `standardwebhooks` package, once per secret it
was told (so a test sees which secrets a delivery verifies with), and answers
with the statuses a test scripts. Prints `{"port": N}` on its first line.

Control routes (JSON):
  POST /_ctl/secrets  {"secrets": ["whsec_…", …]}
  POST /_ctl/script   {"statuses": [500, 200], "hold_secs": 0}
                      the next answers, in order (then 200); hold_secs delays
                      the next answer (a delivery in flight during a kill -9)
  GET  /_ctl/received the deliveries so far, oldest first
"""

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

lock = threading.Lock()
state = {"secrets": [], "statuses": [], "hold_secs": 0.0, "received": []}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _json(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _body(self):
        n = int(self.headers.get("content-length") or 0)
        return self.rfile.read(n)

    def do_GET(self):
        if self.path == "/_ctl/received":
            with lock:
                self._json(200, state["received"])
        else:
            self._json(404, {})

    def do_POST(self):
        raw = self._body()
        if self.path == "/_ctl/secrets":
            with lock:
                state["secrets"] = json.loads(raw)["secrets"]
            return self._json(200, {})
        if self.path == "/_ctl/script":
            cfg = json.loads(raw)
            with lock:
                state["statuses"] = list(cfg.get("statuses", []))
                state["hold_secs"] = float(cfg.get("hold_secs", 0))
            return self._json(200, {})
        headers = {k.lower(): v for k, v in self.headers.items()}
        with lock:
            secrets = list(state["secrets"])
            status = state["statuses"].pop(0) if state["statuses"] else 200
            hold, state["hold_secs"] = state["hold_secs"], 0.0
        verified = {}
        for s in secrets:
            try:
                Webhook(s).verify(raw, headers)
                verified[s] = True
            except WebhookVerificationError:
                verified[s] = False
        entry = {
            "path": self.path,
            "id": headers.get("webhook-id"),
            "timestamp": headers.get("webhook-timestamp"),
            "signature": headers.get("webhook-signature"),
            "content_type": headers.get("content-type"),
            "verified": verified,
            "answered": status,
            "body": json.loads(raw) if raw else None,
        }
        with lock:
            state["received"].append(entry)
        if hold:
            time.sleep(hold)
        self._json(status, {"ok": status < 300})


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(json.dumps({"port": server.server_address[1]}), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
