#!/usr/bin/env python3
"""The static index of index_server.py, plus faults injected on request by the URL path.

  /fault/<kind>/<times>/<path>   the first <times> requests for this URL get the fault, later
                                 ones are served normally from <path>
  /redirect/<port>/<path>        302 to http://127.0.0.1:<port>/<path>

Kinds:
  500      HTTP 500
  429      HTTP 429 with "Retry-After: 1"
  reset    the headers and half the body, then a TCP reset
  short    Content-Length of the whole file, half the body, then a clean close
  stall    the headers, then silence (the connection stays open; no body byte, because
           curl averages speed over a few seconds and a first burst would delay detection)
  shortnorange  like short, and later requests ignore Range (the client must start over)
  corrupt  the whole file with one byte changed (a wrong hash)
  garbage  HTTP 200 with a malformed body of the requested page's content type
  hold     held until released, then served normally: the server creates <hold-dir>/held
           (--hold-dir) when such a request arrives and answers it once the test creates
           <hold-dir>/release (at most 300 s later), so a test can act while a download waits
"""

import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from index_server import IndexHandler, serve  # noqa: E402


class FaultHandler(IndexHandler):
    counts = {}
    counts_lock = threading.Lock()

    def handle_special(self):
        parts = self.path.split("/", 4)
        if len(parts) >= 4 and parts[1] == "redirect":
            rest = "/".join(parts[3:])
            self.send_plain(302, "redirect\n",
                            [("Location", "http://127.0.0.1:%s/%s" % (parts[2], rest))])
            return True
        if len(parts) < 5 or parts[1] != "fault":
            return False
        kind, times, rest = parts[2], int(parts[3]), "/" + parts[4]
        with self.counts_lock:
            seen = self.counts.get(self.path, 0)
            self.counts[self.path] = seen + 1
        if seen >= times:
            if kind == "shortnorange":
                del self.headers["Range"]  # a server that cannot resume: 200 and everything
            self.serve_path(rest)
            return True
        full = self.local_path(rest)
        if kind == "hold":
            self.hold()
            self.serve_path(rest)
        elif kind == "500":
            self.send_plain(500, "injected failure\n")
        elif kind == "429":
            self.send_plain(429, "slow down\n", [("Retry-After", "1")])
        elif kind in ("reset", "short", "shortnorange", "stall", "corrupt"):
            self.send_fault_body(kind, full)
        elif kind == "garbage":
            body = b"<a href='x.whl" if rest.endswith("/") else b'{"meta": {"api-version": '
            self.send_response(200)
            self.send_header("Content-Type", "text/html" if b"<a" in body else
                             "application/vnd.pypi.simple.v1+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.send_plain(400, "unknown fault %s\n" % kind)
        return True

    def hold(self):
        if not self.hold_dir:
            return
        with open(os.path.join(self.hold_dir, "held"), "a", encoding="utf-8") as marker:
            marker.write(self.path + "\n")
        release = os.path.join(self.hold_dir, "release")
        deadline = time.monotonic() + 300
        while not os.path.exists(release) and time.monotonic() < deadline:
            time.sleep(0.05)

    def send_fault_body(self, kind, full):
        with open(full, "rb") as source:
            data = source.read()
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Accept-Ranges", "bytes")
        stat = os.stat(full)
        self.send_header("ETag", '"%x-%x"' % (stat.st_mtime_ns, stat.st_size))
        self.end_headers()
        if kind == "corrupt":
            changed = bytearray(data)
            changed[len(changed) // 2] ^= 0xFF
            self.wfile.write(bytes(changed))
            return
        if kind == "stall":
            self.wfile.flush()
            time.sleep(120)
            return
        self.wfile.write(data[:len(data) // 2])
        self.wfile.flush()
        self.close_connection = True
        if kind == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()


if __name__ == "__main__":
    serve(FaultHandler, sys.argv[1:])
