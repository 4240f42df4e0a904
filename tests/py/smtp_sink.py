"""An SMTP server on loopback for the test suite (tests/api/mail.rs, tests/cli.rs).

Accepts every message (aiosmtpd), records it parsed, and answers the next
messages with the codes a test scripts. Prints `{"port": N, "ctl": M}` on its
first line: N is the SMTP port, M the HTTP control port.

    python3 smtp_sink.py [--port N]     # N: listen on that SMTP port (default: any free)

Control routes (JSON, on the control port):
  GET  /received  every message so far, oldest first: {mail_from, rcpt_tos,
                  from, to, subject, message_id, date, auto_submitted,
                  content_type, text, html}
  POST /script    {"codes": [451, 550]}: the next messages are answered with
                  these codes, in order (451: try again later; 550: refused),
                  then 250 again
"""

import argparse
import asyncio
import email
import email.policy
import json
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from aiosmtpd.smtp import SMTP

lock = threading.Lock()
state = {"codes": [], "received": []}

REPLIES = {
    421: "421 4.3.2 Service shutting down, try again later",
    450: "450 4.2.1 Mailbox busy, try again later",
    451: "451 4.3.0 Temporary failure, try again later",
    452: "452 4.3.1 Insufficient storage",
    550: "550 5.1.1 No such mailbox here",
    552: "552 5.3.4 Message too big",
    554: "554 5.7.1 Rejected by policy",
}


def parse(raw: bytes) -> dict:
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    text = msg.get_body(preferencelist=("plain",))
    html = msg.get_body(preferencelist=("html",))
    return {
        "from": str(msg["from"]),
        "to": str(msg["to"]),
        "subject": str(msg["subject"]),
        "message_id": str(msg["message-id"]),
        "date": str(msg["date"]),
        "auto_submitted": str(msg["auto-submitted"]),
        "list_unsubscribe": str(msg["list-unsubscribe"]) if msg["list-unsubscribe"] else None,
        "list_unsubscribe_post": str(msg["list-unsubscribe-post"]) if msg["list-unsubscribe-post"] else None,
        "content_type": msg.get_content_type(),
        "text": text.get_content() if text is not None else None,
        "html": html.get_content() if html is not None else None,
    }


class Sink:
    async def handle_DATA(self, server, session, envelope):
        with lock:
            code = state["codes"].pop(0) if state["codes"] else None
        if code is not None:
            return REPLIES.get(code, f"{code} scripted answer")
        record = {"mail_from": envelope.mail_from, "rcpt_tos": list(envelope.rcpt_tos)}
        try:
            record.update(parse(envelope.original_content or envelope.content))
        except Exception as e:  # a message the test should see as broken
            record["parse_error"] = repr(e)
        with lock:
            state["received"].append(record)
        return "250 2.0.0 OK queued"


class Control(BaseHTTPRequestHandler):
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

    def do_GET(self):
        if self.path == "/received":
            with lock:
                return self._json(200, state["received"])
        self._json(404, {})

    def do_POST(self):
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n)
        if self.path == "/script":
            with lock:
                state["codes"] = list(json.loads(raw)["codes"])
            return self._json(200, {})
        self._json(404, {})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(128)

    ctl = ThreadingHTTPServer(("127.0.0.1", 0), Control)
    threading.Thread(target=ctl.serve_forever, daemon=True).start()

    async def serve():
        handler = Sink()
        server = await asyncio.get_running_loop().create_server(
            lambda: SMTP(handler, hostname="sink.test", decode_data=False),
            sock=sock,
        )
        print(json.dumps({"port": sock.getsockname()[1], "ctl": ctl.server_address[1]}), flush=True)
        async with server:
            await server.serve_forever()

    asyncio.run(serve())


if __name__ == "__main__":
    sys.exit(main())
