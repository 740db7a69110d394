#!/usr/bin/env python3
"""A static package index for venvfix's tests and benchmark (Python 3 standard library only).

Serves --root on 127.0.0.1 over HTTP/1.1 with keep-alive, byte ranges (Range, If-Range),
ETag and Last-Modified, conditional requests (If-None-Match, else If-Modified-Since: 304 Not
Modified without a body), and PEP 691 content negotiation: a directory answers with its
index.json (application/vnd.pypi.simple.v1+json) when the client prefers JSON, else its
index.html. Optional: TLS (--tls-cert/--tls-key), HTTP basic auth (--auth user:password),
a request log (--log FILE, one JSON object per request, with the status answered), a
Cache-Control header on every directory page (--cache-control "max-age=600"), a limit on the
bytes of files sent per second by all connections together (--rate-mb 100: the benchmarks'
"index throttled to 100 MB/s").

The first line on stdout is the port it listens on (bind to port 0 to let the kernel choose).
"""

import argparse
import base64
import email.utils
import json
import os
import posixpath
import socket
import ssl
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

JSON_TYPE = "application/vnd.pypi.simple.v1+json"
HTML_TYPE = "text/html"


def prefers_json(accept):
    """True when the Accept header ranks the PEP 691 JSON type above HTML."""
    best_json, best_html = -1.0, -1.0
    for item in (accept or "").split(","):
        parts = [p.strip() for p in item.split(";")]
        media, quality = parts[0].lower(), 1.0
        for param in parts[1:]:
            if param.startswith("q="):
                try:
                    quality = float(param[2:])
                except ValueError:
                    quality = 0.0
        if media in (JSON_TYPE, "application/json"):
            best_json = max(best_json, quality)
        elif media in (HTML_TYPE, "application/vnd.pypi.simple.v1+html", "*/*"):
            best_html = max(best_html, quality)
    return best_json > 0 and best_json >= best_html


class RateLimit:
    """One schedule shared by every connection: a chunk of N bytes may leave N / rate seconds
    after the previous one, so the server as a whole sends at most `rate` bytes per second."""

    CHUNK = 256 * 1024

    def __init__(self, bytes_per_second):
        self.rate = float(bytes_per_second)
        self.lock = threading.Lock()
        self.next_slot = time.monotonic()

    def wait_for(self, size):
        with self.lock:
            now = time.monotonic()
            slot = max(now, self.next_slot)
            self.next_slot = slot + size / self.rate
        if slot > now:
            time.sleep(slot - now)


class IndexHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes: without TCP_NODELAY, Nagle's algorithm and
    # the client's delayed ACK add ~40 ms to every small response on a kept-alive connection.
    disable_nagle_algorithm = True
    server_version = "venvfix-test-index/1"
    root = "."
    auth = None  # "user:password"
    log_file = None
    log_lock = threading.Lock()
    page_cache_control = None  # sent with every directory page when set
    hold_dir = None  # --hold-dir (fault_server.py)
    rate_limit = None  # --rate-mb: a RateLimit shared by every connection

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass  # quiet: tests read --log instead

    def record(self):
        """Notes the request; the log line is written once its status is known."""
        self.pending_entry = None
        if not self.log_file:
            return
        self.pending_entry = {
            "method": self.command,
            "path": self.path,
            "range": self.headers.get("Range"),
            "if_range": self.headers.get("If-Range"),
            "if_none_match": self.headers.get("If-None-Match"),
            "if_modified_since": self.headers.get("If-Modified-Since"),
            "accept": self.headers.get("Accept"),
            "authorized": self.headers.get("Authorization") is not None,
            "status": None,
        }

    def write_record(self):
        entry = getattr(self, "pending_entry", None)
        self.pending_entry = None
        if entry is None:
            return
        with self.log_lock, open(self.log_file, "a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")

    def log_request(self, code="-", size="-"):
        entry = getattr(self, "pending_entry", None)
        if entry is not None:
            try:
                entry["status"] = int(code)
            except (TypeError, ValueError):
                pass
            self.write_record()

    def handle_one_request(self):
        super().handle_one_request()
        self.write_record()  # a request dropped without a response is logged too

    def finish(self):
        try:
            super().finish()
        except OSError:
            pass

    def send_plain(self, status, text, extra_headers=()):
        body = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        for name, value in extra_headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def check_auth(self):
        if not self.auth:
            return True
        expected = "Basic " + base64.b64encode(self.auth.encode()).decode()
        if self.headers.get("Authorization") == expected:
            return True
        self.send_plain(401, "authentication required\n",
                        [("WWW-Authenticate", 'Basic realm="venvfix-test"')])
        return False

    def local_path(self, url_path):
        """The file under root for a URL path, or None when it would leave root."""
        path = urllib.parse.unquote(url_path.split("?", 1)[0].split("#", 1)[0])
        normal = posixpath.normpath(path)
        if normal.startswith("..") or "\0" in normal:
            return None
        full = os.path.join(self.root, normal.lstrip("/"))
        if os.path.realpath(full) != os.path.realpath(self.root) and not os.path.realpath(
                full).startswith(os.path.realpath(self.root) + os.sep):
            return None
        return full

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        self.record()
        if not self.check_auth():
            return
        if self.handle_special():
            return
        self.serve_path(self.path)

    def handle_special(self):
        """Hook for subclasses: return True when the request was answered."""
        return False

    def serve_path(self, url_path):
        full = self.local_path(url_path)
        if full is None:
            self.send_plain(404, "not found\n")
            return
        if os.path.isdir(full):
            if not url_path.split("?", 1)[0].endswith("/"):
                self.send_plain(301, "moved\n", [("Location", url_path + "/")])
                return
            json_page = os.path.join(full, "index.json")
            html_page = os.path.join(full, "index.html")
            extra = [("Cache-Control", self.page_cache_control)] if self.page_cache_control else []
            if os.path.isfile(json_page) and (
                    prefers_json(self.headers.get("Accept")) or not os.path.isfile(html_page)):
                self.send_file(json_page, JSON_TYPE, extra)
            elif os.path.isfile(html_page):
                self.send_file(html_page, HTML_TYPE, extra)
            else:
                self.send_plain(404, "not found\n")
            return
        if not os.path.isfile(full):
            self.send_plain(404, "not found\n")
            return
        content_type = "application/octet-stream"
        if full.endswith(".html"):
            content_type = HTML_TYPE
        elif full.endswith(".json"):
            content_type = JSON_TYPE
        elif full.endswith(".metadata"):
            content_type = "text/plain"
        self.send_file(full, content_type)

    def body_filter(self, data):
        """Hook for subclasses: change the bytes served (files are small there)."""
        return data

    def not_modified(self, etag, mtime):
        """RFC 9110 §13.1: If-None-Match decides when present, else If-Modified-Since."""
        if_none_match = self.headers.get("If-None-Match")
        if if_none_match is not None:
            tags = [t.strip() for t in if_none_match.split(",")]
            return "*" in tags or etag in tags or ("W/" + etag) in tags
        since = self.headers.get("If-Modified-Since")
        if since is None:
            return False
        try:
            return int(mtime) <= email.utils.parsedate_to_datetime(since).timestamp()
        except (TypeError, ValueError):
            return False

    def send_file(self, full, content_type, extra_headers=()):
        stat = os.stat(full)
        size = stat.st_size
        etag = '"%x-%x"' % (stat.st_mtime_ns, size)
        last_modified = email.utils.formatdate(stat.st_mtime, usegmt=True)
        if self.not_modified(etag, stat.st_mtime):
            self.send_response(304)
            self.send_header("ETag", etag)
            self.send_header("Last-Modified", last_modified)
            for name, value in extra_headers:
                self.send_header(name, value)
            self.end_headers()
            return
        start, end = 0, size
        status = 200
        range_header = self.headers.get("Range")
        if_range = self.headers.get("If-Range")
        if range_header and (if_range is None or if_range == etag):
            spec = range_header.strip()
            if spec.startswith("bytes=") and "," not in spec:
                first, _, last = spec[6:].partition("-")
                try:
                    if first:
                        start = int(first)
                        end = min(size, int(last) + 1) if last else size
                    else:
                        start, end = max(0, size - int(last)), size
                    if start >= size or start >= end:
                        self.send_plain(416, "range not satisfiable\n",
                                        [("Content-Range", "bytes */%d" % size)])
                        return
                    status = 206
                except ValueError:
                    start, end = 0, size
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(end - start))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", etag)
        self.send_header("Last-Modified", last_modified)
        for name, value in extra_headers:
            self.send_header(name, value)
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end - 1, size))
        self.end_headers()
        if self.command == "HEAD":
            return
        self.send_body(full, start, end)

    def send_body(self, full, start, end):
        with open(full, "rb") as source:
            if self.body_filter.__func__ is not IndexHandler.body_filter:
                source.seek(start)
                self.wfile.write(self.body_filter(source.read(end - start)))
                return
            # sendfile: the kernel copies, so the benchmark measures the client.
            chunk = RateLimit.CHUNK if self.rate_limit else max(end - start, 1)
            for offset in range(start, end, chunk):
                count = min(chunk, end - offset)
                if self.rate_limit:
                    self.rate_limit.wait_for(count)
                self.connection.sendfile(source, offset, count)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def handle_error(self, request, client_address):
        # A client that gives up mid-transfer (a test of an abort, a hash mismatch) is normal.
        if isinstance(sys.exc_info()[1], (OSError, ssl.SSLError)):
            return
        super().handle_error(request, client_address)


def parse_arguments(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    parser.add_argument("--auth")
    parser.add_argument("--log")
    parser.add_argument("--cache-control")
    parser.add_argument("--hold-dir", help="fault_server.py's hold fault: where it signals")
    parser.add_argument("--rate-mb", type=float, help="send files at most this many MB/s in all")
    return parser.parse_args(argv)


def serve(handler_class, argv):
    args = parse_arguments(argv)
    handler_class.root = os.path.abspath(args.root)
    handler_class.auth = args.auth
    handler_class.log_file = args.log
    handler_class.page_cache_control = args.cache_control
    handler_class.hold_dir = args.hold_dir
    if args.rate_mb:
        handler_class.rate_limit = RateLimit(args.rate_mb * 1e6)
    server = Server(("127.0.0.1", args.port), handler_class)
    if args.tls_cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    serve(IndexHandler, sys.argv[1:])
