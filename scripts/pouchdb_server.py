"""Start the pinned PouchDB Server (node_modules, scripts/setup.sh) for trying the project by hand.

    python3 scripts/pouchdb_server.py --port 5984          # in memory; prints its URL and pid
    python3 scripts/pouchdb_server.py --port 5984 --stop   # stops the one started there

Unlike starting ``pouchdb-server`` with ``&`` in a shell, this checks first that nothing listens on
the port (a "port in use" error of a background job scrolls by while the next command points the
store at whatever holds the port), keeps the server's ``config.json``, ``log.txt`` and pid in its
own folder (``--dir``, default ``.pouchdb-server/`` in the checkout, git-ignored) instead of the
working folder, waits until the server answers, and exits non-zero with the reason if it does not.
The tests start their own servers (tests/support/services.py).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SERVER = REPO / "node_modules" / ".bin" / "pouchdb-server"
PID_FILE = "pid"
LOG_FILE = "log.txt"
#: Says that this script made the folder: the server writes ``config.json`` and ``log.txt`` where it
#: runs, so a folder holding anything else's files is never used (nor its ``pid`` read by ``--stop``).
MARKER = ".made-by-pouchdb_server"


def not_ours(folder: Path) -> bool:
    """Whether ``folder`` holds files and was not made by this script."""
    return folder.is_dir() and any(folder.iterdir()) and not (folder / MARKER).is_file()


def port_taken(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # as a server binds it: connections closing (TIME_WAIT) do not hold the port, a listener does
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def who_answers(url: str) -> str:
    """What answers at ``url`` (a CouchDB-compatible server says so in its welcome)."""
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, headers={"Accept": "application/json"}), timeout=2
        ) as r:
            welcome = json.loads(r.read(4096))
        vendor = welcome.get("vendor", {}).get("name") or welcome.get("couchdb")
        return "a CouchDB-compatible server (%s %s)" % (vendor, welcome.get("version", ""))
    except Exception:  # not HTTP, not JSON: some other program
        return "another program"


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, headers={"Accept": "application/json"}), timeout=2
        ):
            return True
    except Exception:  # not up yet
        return False


def start(args: argparse.Namespace) -> int:
    url = "http://%s:%d/" % (args.host, args.port)
    if port_taken(args.host, args.port):
        print(
            "pouchdb_server: %s:%d is in use by %s: stop it, or give another --port (and use that port in "
            "VOTERSDAILY_STORE)" % (args.host, args.port, who_answers(url)),
            file=sys.stderr,
        )
        return 1
    if not SERVER.exists():
        print("pouchdb_server: %s is not installed: run bash scripts/setup.sh" % SERVER, file=sys.stderr)
        return 1
    folder = args.dir.resolve()
    if (folder.exists() and not folder.is_dir()) or not_ours(folder):
        print(
            "pouchdb_server: %s is not a folder this script made (it holds other files, or is a file): "
            "give a new or empty --dir; nothing there was changed" % folder,
            file=sys.stderr,
        )
        return 1
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MARKER).touch()
    command = [str(SERVER), "--port", str(args.port), "--host", args.host, "--no-stdout-logs"]
    command += ["--dir", str(folder / "data")] if args.persistent else ["--in-memory"]
    if args.persistent:
        (folder / "data").mkdir(exist_ok=True)
    with open(folder / "stderr.txt", "ab") as err:
        proc = subprocess.Popen(
            command, cwd=folder, stdin=subprocess.DEVNULL, stdout=err, stderr=err, start_new_session=True
        )
    deadline = time.monotonic() + args.wait
    while not answers(url):
        if proc.poll() is not None or time.monotonic() > deadline:
            if proc.poll() is None:
                proc.terminate()
            log = (folder / "stderr.txt").read_text(errors="replace").strip().splitlines()[-5:]
            print(
                "pouchdb_server: the server did not come up at %s: %s" % (url, " / ".join(log)),
                file=sys.stderr,
            )
            return 1
        time.sleep(0.2)
    (folder / PID_FILE).write_text("%d %d\n" % (proc.pid, args.port))
    where = "data in %s" % (folder / "data") if args.persistent else "in memory"
    print(
        "PouchDB Server at %s (pid %d, %s); its config, log and pid are in %s; stop it with "
        "python3 scripts/pouchdb_server.py --stop --dir %s" % (url, proc.pid, where, folder, folder)
    )
    return 0


def stop(args: argparse.Namespace) -> int:
    folder = args.dir.resolve()
    try:
        if not (folder / MARKER).is_file():
            raise FileNotFoundError(folder / MARKER)  # not the script's folder: its pid is not ours
        pid, _port = (int(x) for x in (folder / PID_FILE).read_text().split())
    except (OSError, ValueError):
        print("pouchdb_server: no server started from %s" % folder, file=sys.stderr)
        return 1
    command = command_of(pid)
    if command is None or "pouchdb-server" not in command or "--port %d" % _port not in command:
        # A pid file outlives its server (a reboot, a kill -9): the number may be another program's now.
        (folder / PID_FILE).unlink()
        print(
            "pouchdb_server: the server started from %s is not running (pid %d is %s): stopped nothing, "
            "removed its stale pid file"
            % (folder, pid, "no process" if command is None else repr(command[:80])),
            file=sys.stderr,
        )
        return 1
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)  # its own session: the server and nothing else
    (folder / PID_FILE).unlink()
    print("stopped PouchDB Server (pid %d)" % pid)
    return 0


def command_of(pid: int) -> str | None:
    """The command line of process ``pid`` (None when there is none)."""
    if Path("/proc").is_dir():
        try:
            line = Path("/proc/%d/cmdline" % pid).read_bytes()
        except OSError:
            return None
        return line.replace(b"\0", b" ").decode(errors="replace").strip()
    found = subprocess.run(["ps", "-o", "args=", "-p", str(pid)], capture_output=True, text=True, check=False)
    return found.stdout.strip() or None  # no /proc (macOS): ps says it


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=5984)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--dir", type=Path, default=REPO / ".pouchdb-server", help="the server's own folder")
    parser.add_argument("--persistent", action="store_true", help="keep the databases in --dir/data")
    parser.add_argument("--wait", type=float, default=30.0, help="seconds to wait for it to answer")
    parser.add_argument("--stop", action="store_true", help="stop the server started from --dir")
    args = parser.parse_args(argv)
    return stop(args) if args.stop else start(args)


if __name__ == "__main__":
    sys.exit(main())
