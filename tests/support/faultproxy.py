"""A loopback TCP proxy in front of an HTTP server (PouchDB Server) that injects store faults.

Requests go through unchanged; for requests whose first line holds a chosen fragment (e.g.
``b"POST /vd_events/_bulk_docs"``) it can

* lose the answer: the server gets and applies the request, then the client's connection is closed
  before a byte of the answer reaches it (a network failure after the write);
* hold requests until ``parties`` of them have arrived, then let them all through (two crawls
  racing: each has read what the store held before either writes);
* stop at the first such request (or the first whose body holds a chosen word): nothing of it is
  forwarded, every connection is closed and the port stops listening (connections are refused from
  then on), as when the server is stopped just before it: a store that answered the command's check
  and then went away;
* delay requests by some seconds (a slow store: writes still in flight when a crawl is stopped);
* hold requests until released, then pass on only those whose client is still there: a write in
  flight when its process is killed (``kill -9`` at that moment) never reaches the server;
* close a kept-alive connection when a request comes on it again, forwarding nothing: a server
  that closed an idle keep-alive connection just as the client reused it (the client sees the
  connection aborted before any answer).

Every answer is recorded with its request (:attr:`FaultProxy.exchanges`): what a client asked, with
or without credentials, and the status it got (how often a wrong password was tried).

The client is expected not to pipeline (``requests`` never does), so a chunk that starts with a
request line starts a request.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time

from tests.support.services import free_port

CHUNK = 65536


class FaultProxy:
    def __init__(self, target_port: int, host: str = "127.0.0.1"):
        self.target = (host, target_port)
        self.port = free_port()
        self.lost = 0
        self.held = 0
        self._lose: dict[bytes, int] = {}
        self._barrier: tuple[bytes, threading.Barrier] | None = None
        self._delays: dict[bytes, float] = {}
        #: Requests delayed so far (a test waits for the first).
        self.delayed = 0
        self._holding: bytes | None = None
        self._released = threading.Event()
        #: Requests held so far by :meth:`hold` (a test waits for the first), and of those, the ones
        #: passed on when released (their client was still there) and the ones dropped.
        self.holding = 0
        self.passed_after_hold = 0
        self.dropped_after_hold = 0
        self._stop_at: bytes | None = None
        self._stop_anywhere = False
        self._close_reused: dict[bytes, int] = {}
        #: Requests met by a closed kept-alive connection so far.
        self.closed_reused = 0
        #: Set once the proxy stopped at the request named by :meth:`stop_at`.
        self.stopped = threading.Event()
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._listener: socket.socket | None = None
        #: ``(request line, whether it carried credentials, answer's status)`` of every answer.
        self.exchanges: list[tuple[bytes, bool, int]] = []

    @property
    def url(self) -> str:
        return "http://127.0.0.1:%d/" % self.port

    def lose_answer(self, fragment: bytes, times: int = 1) -> None:
        """Lose the answers of the next ``times`` requests whose request line holds ``fragment``."""
        with self._lock:
            self._lose[fragment] = times

    def hold_until(self, fragment: bytes, parties: int) -> None:
        """Hold the first ``parties`` requests whose request line holds ``fragment`` until all arrived."""
        self._barrier = (fragment, threading.Barrier(parties, timeout=120))

    def delay(self, fragment: bytes, seconds: float) -> None:
        """Pass every request whose request line holds ``fragment`` on after ``seconds``."""
        self._delays[fragment] = seconds

    def hold(self, fragment: bytes) -> None:
        """Hold every request whose request line holds ``fragment`` until :meth:`release`."""
        self._released.clear()
        self._holding = fragment

    def release(self) -> None:
        """Pass the held requests on, those whose client is still connected; hold no more."""
        self._holding = None
        self._released.set()

    def stop_at(self, fragment: bytes, *, anywhere: bool = False) -> None:
        """Stop (as a stopped server: refused connections) when a request line holds ``fragment``,
        or with ``anywhere``, when any chunk of a request does (a word of its body: a document's
        field; the chunk holding it is not forwarded)."""
        self._stop_anywhere = anywhere
        self._stop_at = fragment

    def close_reused(self, fragment: bytes, times: int = 1) -> None:
        """Close the connection, forwarding nothing, when one of the next ``times`` requests whose
        request line holds ``fragment`` comes on a connection that carried a request before."""
        with self._lock:
            self._close_reused[fragment] = times

    def start(self) -> FaultProxy:
        self._listener = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop listening and end every connection: shut down first, so that a thread blocked in a
        read of one wakes and its peer sees the connection end (a close alone leaves a client
        waiting for an answer until its read timeout, as no server that stopped would)."""
        with contextlib.suppress(OSError):
            self._listener.close()
        self._close(*self._sockets)

    # -- plumbing --------------------------------------------------------------------------------

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self.stopped.is_set():  # accepted while it stopped: refused after all
                self._close(client)
                continue
            upstream = socket.create_connection(self.target)
            self._sockets += [client, upstream]
            state: dict = {"lose": False, "asked": []}
            threading.Thread(target=self._requests, args=(client, upstream, state), daemon=True).start()
            threading.Thread(target=self._answers, args=(upstream, client, state), daemon=True).start()

    def _requests(self, client: socket.socket, upstream: socket.socket, state: dict) -> None:
        carried = 0
        while data := self._recv(client):
            line = data.split(b"\r\n", 1)[0]
            if self.stopped.is_set():
                break
            if line.split(b" ", 1)[0].isalpha() and b" HTTP/1." in line:
                carried += 1
                head = data.split(b"\r\n\r\n", 1)[0].lower()
                with self._lock:
                    state["asked"].append((line, b"\r\nauthorization:" in head))
                if carried > 1 and self._closes_reused(line):
                    break
            if self._stop_at is not None and self._stop_at in (data if self._stop_anywhere else line):
                self.stopped.set()
                self.stop()
                break
            if self._barrier is not None and self._barrier[0] in line:
                fragment, barrier = self._barrier
                with self._lock:
                    self.held += 1
                    if self.held >= barrier.parties:
                        self._barrier = None
                barrier.wait()
            if self._holding is not None and self._holding in line:
                with self._lock:
                    self.holding += 1
                self._released.wait(timeout=120)
                connected = self._connected(client)
                with self._lock:
                    if connected:
                        self.passed_after_hold += 1
                    else:
                        self.dropped_after_hold += 1
                if not connected:
                    break
            for fragment, seconds in self._delays.items():
                if fragment in line:
                    with self._lock:
                        self.delayed += 1
                    time.sleep(seconds)
            with self._lock:
                for fragment, times in self._lose.items():
                    if times and fragment in line:
                        self._lose[fragment] = times - 1
                        state["lose"] = True
            try:
                upstream.sendall(data)
            except OSError:
                break
        self._close(client, upstream)

    def _closes_reused(self, line: bytes) -> bool:
        with self._lock:
            for fragment, times in self._close_reused.items():
                if times and fragment in line:
                    self._close_reused[fragment] = times - 1
                    self.closed_reused += 1
                    return True
        return False

    def _answers(self, upstream: socket.socket, client: socket.socket, state: dict) -> None:
        while data := self._recv(upstream):
            if data.startswith(b"HTTP/1.") and data[9:12].isdigit():
                with self._lock:
                    if state["asked"]:
                        line, authorized = state["asked"].pop(0)
                        self.exchanges.append((line, authorized, int(data[9:12])))
            if state["lose"]:
                # The server has applied the request (it is answering): the client never hears it.
                with self._lock:
                    self.lost += 1
                break
            try:
                client.sendall(data)
            except OSError:
                break
        self._close(client, upstream)

    @staticmethod
    def _connected(client: socket.socket) -> bool:
        """Whether the client is still there: its end not closed (a killed process's is), even with
        the rest of its request unread (Linux's POLLRDHUP tells that; a peek would not)."""
        poller = select.poll()
        poller.register(client, select.POLLRDHUP)
        return not any(
            events & (select.POLLRDHUP | select.POLLHUP | select.POLLERR) for _, events in poller.poll(0)
        )

    @staticmethod
    def _recv(sock: socket.socket) -> bytes:
        try:
            return sock.recv(CHUNK)
        except OSError:
            return b""

    @staticmethod
    def _close(*socks: socket.socket) -> None:
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
