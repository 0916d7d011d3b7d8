"""Real services for the tests, started on free loopback ports: PouchDB Server and a local web site;
or, with ``$VOTERSDAILY_TEST_COUCHDB``, a real CouchDB the user runs (:class:`ExternalCouchDB`)."""

from __future__ import annotations

import atexit
import base64
import contextlib
import gzip as gzip_module
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

REPO = Path(__file__).resolve().parents[2]


def shared_dir() -> Path:
    """The ``shared`` folder beside the checkout (or ``$VOTERSDAILY_SHARED``): third-party test material
    and conformance suites, read in place by tests and benchmarks (never by the product)."""
    env = os.environ.get("VOTERSDAILY_SHARED")
    if env:
        return Path(env)
    return REPO.parent / "shared"


#: Where crawls run by the tests archive their documents and spool what a store refused: one folder per
#: test process (each pytest-xdist worker has its own), never the checkout that every worker shares.
TEST_ARCHIVE_DIR = tempfile.mkdtemp(prefix="votersdaily-test-archive-")
TEST_SPOOL_DIR = tempfile.mkdtemp(prefix="votersdaily-test-spool-")
#: The data home of the commands and crawls the tests run (votersdaily/locations.py): what a test does
#: not place itself (ingest blobs, laundromat output) lands here, not in the checkout.
TEST_HOME = tempfile.mkdtemp(prefix="votersdaily-test-home-")
for _folder in (TEST_ARCHIVE_DIR, TEST_SPOOL_DIR, TEST_HOME):
    atexit.register(shutil.rmtree, _folder, ignore_errors=True)
POUCHDB_BIN = REPO / "node_modules" / ".bin" / "pouchdb-server"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 30.0, auth: tuple[str, str] | None = None) -> None:
    deadline = time.monotonic() + timeout
    last = None
    headers = {"Accept": "application/json"}
    if auth:
        headers["Authorization"] = "Basic " + base64.b64encode(("%s:%s" % auth).encode()).decode()
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=2):
                return
        except Exception as exc:  # not up yet
            last = exc
            time.sleep(0.1)
    raise RuntimeError("%s did not come up in %.0fs: %s" % (url, timeout, last))


class PouchDBServer:
    """``pouchdb-server`` (pinned in package.json) in memory on a free loopback port."""

    def __init__(self, workdir: Path, port: int | None = None, in_memory: bool = True):
        if not POUCHDB_BIN.exists():
            raise RuntimeError(
                "PouchDB Server is not installed: run `npm ci --ignore-scripts` (scripts/setup.sh)"
            )
        self.workdir = workdir
        self.port = port or free_port()
        self.in_memory = in_memory
        self.proc: subprocess.Popen | None = None

    #: No database prefix: each test process has a server of its own.
    prefix = ""
    host = "127.0.0.1"

    @property
    def url(self) -> str:
        return "http://127.0.0.1:%d/" % self.port

    def url_at(self, port: int) -> str:
        """The server's URI at another port (a proxy in front of it)."""
        return "http://127.0.0.1:%d/" % port

    def start(self) -> PouchDBServer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        args = [str(POUCHDB_BIN), "-p", str(self.port), "-o", "127.0.0.1", "-n"]
        if self.in_memory:
            args.append("-m")
        else:
            args += ["-d", str(self.workdir / "data")]
            (self.workdir / "data").mkdir(exist_ok=True)
        self.proc = subprocess.Popen(
            args, cwd=self.workdir, stdout=subprocess.DEVNULL, stderr=open(self.workdir / "stderr.log", "ab")
        )
        wait_http(self.url)
        return self

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def reset(self) -> None:
        """Drop every database (between tests sharing one server)."""
        with urllib.request.urlopen(
            urllib.request.Request(self.url + "_all_dbs", headers={"Accept": "application/json"})
        ) as r:
            names = json.load(r)
        for name in names:
            if name.startswith("_"):
                continue
            req = urllib.request.Request(
                self.url + name, method="DELETE", headers={"Accept": "application/json"}
            )
            urllib.request.urlopen(req).close()


#: The switch that points the store tests at a real CouchDB: its URI with a server admin's credentials,
#: e.g. ``http://admin:pw@127.0.0.1:5984/`` (CONTRIBUTING.md: Tests on a real CouchDB).
COUCHDB_ENV = "VOTERSDAILY_TEST_COUCHDB"


def worker_db_prefix() -> str:
    """This test process's database-name prefix on a shared CouchDB: one per pytest-xdist worker and run,
    so two workers (or two runs) never meet in one database."""
    return "vdtest_%s_%d_" % (os.environ.get("PYTEST_XDIST_WORKER", "main"), os.getpid())


class ExternalCouchDB:
    """A CouchDB server the user runs, given by ``$VOTERSDAILY_TEST_COUCHDB``; shared by every test
    process, each under its own database prefix (the product's ``VOTERSDAILY_DB_PREFIX``), which the
    test session sets for the whole process and its subprocesses. :meth:`reset` and :meth:`stop` drop
    the databases under that prefix, and only those."""

    def __init__(self, uri: str, prefix: str):
        parts = urlsplit(uri)
        if not parts.username or parts.port is None:
            raise RuntimeError(
                "$%s must name a server admin and the port: http://admin:password@127.0.0.1:5984/"
                % COUCHDB_ENV
            )
        self.url = urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") + "/", "", ""))
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port
        self.prefix = prefix
        self.auth = (urllib.request.unquote(parts.username), urllib.request.unquote(parts.password or ""))
        self.base = urlunsplit(
            (parts.scheme, "%s:%d" % (parts.hostname, parts.port), parts.path.rstrip("/") + "/", "", "")
        )

    def url_at(self, port: int) -> str:
        """The server's URI with its credentials, at another port (a proxy in front of it)."""
        user, password = (urllib.request.quote(part, safe="") for part in self.auth)
        return "http://%s:%s@127.0.0.1:%d/" % (user, password, port)

    def url_as(self, user: str, password: str) -> str:
        """The server's URI with another user's credentials."""
        quoted = (urllib.request.quote(part, safe="") for part in (user, password))
        return self.base.replace("://", "://%s:%s@" % tuple(quoted), 1)

    def start(self) -> ExternalCouchDB:
        session = self.request("GET", "_session")
        if "_admin" not in (session.get("userCtx") or {}).get("roles", []):
            raise RuntimeError("$%s must hold a server admin's credentials: %r" % (COUCHDB_ENV, session))
        return self

    def request(self, method: str, path: str, body: dict | None = None):
        """The server's JSON answer to ``method path`` as its admin (raises HTTPError on a refusal)."""
        token = base64.b64encode(("%s:%s" % self.auth).encode()).decode()
        request = urllib.request.Request(
            self.base + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={
                "Accept": "application/json",
                "Content-Type": "application/json",
                "Authorization": "Basic " + token,
            },
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.load(answer)

    def reset(self) -> None:
        """Drop this test process's databases (its prefix), never another's."""
        for name in self.request("GET", "_all_dbs"):
            if name.startswith(self.prefix):
                self.request("DELETE", urllib.request.quote(name, safe=""))

    def stop(self) -> None:
        self.reset()


@dataclass
class Route:
    status: int = 200
    body: bytes | Callable[[http.server.BaseHTTPRequestHandler], bytes] = b""
    headers: dict[str, str] = field(default_factory=dict)
    gzip: bool = False


class _RoomyServer(http.server.ThreadingHTTPServer):
    #: socketserver's default backlog of 5 overflows under concurrent crawls; dropped SYNs are only
    #: retried after 1, 2, 4… seconds, which turns a 4 s test into minutes.
    request_queue_size = 1024

    def handle_error(self, request, client_address) -> None:
        """A client that gave up (a timeout under test) is not an error of the site: stay quiet."""
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class LocalSite:
    """A real threaded HTTP server on a free loopback port: static folders plus programmed routes.

    ``site.route("/a", status=302, headers={"Location": "/b"})``; ``site.mount("/files/", folder)``;
    ``site.hits`` counts requests per path; ``site.requests`` keeps (method, path, headers).
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0):
        self.host = host
        self.routes: dict[str, Route] = {}
        self.mounts: dict[str, Path] = {}
        self.hits: dict[str, int] = {}
        self.requests: list[tuple[str, str, dict]] = []
        self._lock = threading.Lock()
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                site._serve(self)

            def do_HEAD(self):
                site._serve(self, head=True)

            def do_POST(self):
                site._serve(self)

            def do_PUT(self):
                site._serve(self)

        self.server = _RoomyServer((host, port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return "http://%s:%d" % (self.host, self.port)

    def start(self) -> LocalSite:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def route(
        self,
        path: str,
        body: bytes | str | Callable = b"",
        status: int = 200,
        headers: dict[str, str] | None = None,
        content_type: str | None = None,
        gzip: bool = False,
    ) -> str:
        if isinstance(body, str):
            body = body.encode("utf-8")
        headers = dict(headers or {})
        if content_type:
            headers["Content-Type"] = content_type
        self.routes[path] = Route(status, body, headers, gzip)
        return self.url + path

    def mount(self, prefix: str, folder: Path) -> str:
        self.mounts[prefix] = Path(folder)
        return self.url + prefix

    def _serve(self, handler, head: bool = False) -> None:
        path = handler.path
        with self._lock:
            self.hits[path] = self.hits.get(path, 0) + 1
            self.requests.append((handler.command, path, dict(handler.headers)))
        if handler.command in ("POST", "PUT"):
            length = int(handler.headers.get("Content-Length") or 0)
            handler.request_body = handler.rfile.read(length) if length else b""
        route = self.routes.get(path) or self.routes.get(path.split("?", 1)[0])
        if route is None:
            route = self._static(path)
        status, headers = route.status, dict(route.headers)
        body = route.body(handler) if callable(route.body) else route.body
        if isinstance(body, tuple):  # a callable may answer (status, extra headers, body)
            status, extra, body = body
            headers.update(extra)
        if route.gzip:
            body = gzip_module.compress(body)
            headers["Content-Encoding"] = "gzip"
        headers.setdefault("Content-Type", "application/octet-stream")
        handler.send_response(status)
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if not head:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                handler.wfile.write(body)

    def _static(self, path: str) -> Route:
        clean = path.split("?", 1)[0]
        for prefix, folder in self.mounts.items():
            if clean.startswith(prefix):
                rel = urllib.request.url2pathname(clean[len(prefix) :])
                target = (folder / rel).resolve()
                if folder.resolve() in target.parents and target.is_file():
                    ctype = guess_type(target)
                    return Route(200, target.read_bytes(), {"Content-Type": ctype})
        if clean == "/robots.txt":
            return Route(200, b"User-agent: *\nAllow: /\n", {"Content-Type": "text/plain"})
        return Route(404, b"<html><body>Not Found</body></html>", {"Content-Type": "text/html"})


class ConnectionRecorder:
    """A loopback port that accepts any connection and keeps its first bytes (``seen``): what a
    browser sent there (a WebSocket's upgrade, a proxy's CONNECT), whatever the protocol."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.url = "http://127.0.0.1:%d" % self.port
        self.seen: list[bytes] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):  # closed by stop()
            while True:
                connection, _ = self.listener.accept()
                with connection:
                    connection.settimeout(2)
                    try:
                        self.seen.append(connection.recv(200))
                    except OSError:
                        self.seen.append(b"")

    def stop(self) -> None:
        self.listener.close()


def guess_type(path: Path) -> str:
    import mimetypes

    ctype, _ = mimetypes.guess_type(path.name)
    if ctype and (ctype.startswith("text/") or ctype.endswith(("xml", "json", "javascript"))):
        return ctype + "; charset=utf-8"
    return ctype or "application/octet-stream"


def run_cli(
    args: list[str], store_uri: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    """Run a command (``scrapy …`` or ``python -m votersdaily …``) the way a user does, in a subprocess."""
    full_env = dict(os.environ)
    full_env.update(cli_environment(store_uri, env))
    return subprocess.run(
        args, cwd=cwd or REPO, env=full_env, capture_output=True, text=True, timeout=timeout, check=False
    )


def cli_environment(store_uri: str, env: dict | None = None) -> dict[str, str]:
    """What a command run by the tests gets on top of the test process's environment."""
    full_env = {"VOTERSDAILY_STORE": store_uri}
    full_env["PYTHONPATH"] = str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")
    full_env["SCRAPY_SETTINGS_MODULE"] = os.environ.get("SCRAPY_SETTINGS_MODULE", "votersdaily.settings")
    # Crawls archive what they parse and spool what they cannot write: into the test process's folders.
    full_env["VOTERSDAILY_ARCHIVE_DIR"] = os.environ.get("VOTERSDAILY_ARCHIVE_DIR", TEST_ARCHIVE_DIR)
    full_env["VOTERSDAILY_SPOOL_DIR"] = os.environ.get("VOTERSDAILY_SPOOL_DIR", TEST_SPOOL_DIR)
    full_env["VOTERSDAILY_HOME"] = os.environ.get("VOTERSDAILY_HOME", TEST_HOME)
    full_env.update(env or {})
    return full_env


def which(name: str) -> str | None:
    return shutil.which(name)
