#!/usr/bin/env python3
"""Serve a test-world index on 127.0.0.1.

    python3 tests/world/index_server.py --root INDEX_DIR [--port 0]

Prints the chosen port on the first stdout line, then serves until SIGTERM/SIGINT (exit 0).
GET /simple/ and /simple/<project>/ answer PEP 691 JSON when the Accept header prefers
application/vnd.pypi.simple.v1+json, else PEP 503 HTML; /files/... are the wheels and their
.metadata files. Only files under --root are served. Answers carry an ETag (of the bytes) and
If-None-Match is honoured with 304 Not Modified.
"""
from __future__ import annotations

import argparse
import hashlib
import http.server
import signal
import sys
import threading
import urllib.parse
from pathlib import Path

JSON_TYPE = "application/vnd.pypi.simple.v1+json"
HTML_TYPES = ("application/vnd.pypi.simple.v1+html", "text/html")


def prefers_json(accept: str | None) -> bool:
    """True when the Accept header gives JSON a higher quality than every HTML type."""
    if not accept:
        return False
    best_json, best_html = -1.0, -1.0
    for part in accept.split(","):
        fields = [f.strip() for f in part.split(";")]
        q = 1.0
        for f in fields[1:]:
            if f.startswith("q="):
                try:
                    q = float(f[2:])
                except ValueError:
                    q = 0.0
        if fields[0] in (JSON_TYPE, "application/vnd.pypi.simple.latest+json"):
            best_json = max(best_json, q)
        elif fields[0] in HTML_TYPES or fields[0] in ("application/vnd.pypi.simple.latest+html", "*/*"):
            best_html = max(best_html, q)
    return best_json > 0 and best_json >= best_html


def make_handler(root: Path):
    root = root.resolve()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # quiet: tests read stdout/stderr
            pass

        def _send(self, code: int, body: bytes, ctype: str) -> None:
            etag = '"%s"' % hashlib.sha256(body).hexdigest()[:32]
            if code == 200 and etag in [t.strip() for t in self.headers.get("If-None-Match", "").split(",")]:
                self.send_response(304)  # unchanged: no body (RFC 9110 §15.4.5)
                self.send_header("ETag", etag)
                self.end_headers()
                return
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            if code == 200:
                self.send_header("ETag", etag)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_HEAD(self):
            self.do_GET()

        def do_GET(self):
            path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
            target = (root / path.lstrip("/")).resolve()
            if target != root and root not in target.parents:
                return self._send(404, b"not found\n", "text/plain")
            if target.is_dir():
                if not path.endswith("/"):
                    self.send_response(301)
                    self.send_header("Location", path + "/")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if prefers_json(self.headers.get("Accept")) and (target / "index.json").is_file():
                    return self._send(200, (target / "index.json").read_bytes(), JSON_TYPE)
                if (target / "index.html").is_file():
                    return self._send(200, (target / "index.html").read_bytes(), "text/html; charset=utf-8")
                return self._send(404, b"not found\n", "text/plain")
            if target.is_file():
                ctype = "application/octet-stream"
                if target.suffix == ".metadata":
                    ctype = "text/plain; charset=utf-8"
                return self._send(200, target.read_bytes(), ctype)
            return self._send(404, b"not found\n", "text/plain")

    return Handler


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def start_in_thread(root: Path) -> tuple[Server, int]:
    srv = Server(("127.0.0.1", 0), make_handler(root))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, srv.server_address[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True, type=Path)
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    if not (args.root / "simple").is_dir():
        print(f"index_server: {args.root} has no simple/ directory", file=sys.stderr)
        return 2
    srv = Server(("127.0.0.1", args.port), make_handler(args.root))
    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    print(srv.server_address[1], flush=True)
    stop.wait()
    srv.shutdown()
    srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
