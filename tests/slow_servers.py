"""Endpoints on 127.0.0.1 that never give a complete answer, for deadline tests (issue 41).

    HangingServer()            accepts connections and never sends a byte
    TricklingServer(head=...)  reads the request, then sends one byte every `every` seconds,
                               forever: inside the status line and headers (head=True), or
                               after complete headers announcing a body it never finishes

Both keep every socket they accepted until close(); every loop ends when closed.
"""

from __future__ import annotations

import socket
import threading


class _Server:
    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.held: list[socket.socket] = []
        self.stop = threading.Event()
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            self.held.append(conn)
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn: socket.socket) -> None:
        pass

    def close(self):
        self.stop.set()
        for c in self.held:
            try:
                c.close()
            except OSError:
                pass
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class HangingServer(_Server):
    """Accepts connections and never answers (a wedged load balancer)."""


class TricklingServer(_Server):
    """Answers one byte every `every` seconds, never finishing: each byte resets the client's
    per-read timeout, so only a total deadline ends the call."""

    def __init__(self, *, head: bool = True, every: float = 0.2):
        self.head, self.every = head, every
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        conn.settimeout(1.0)
        try:
            conn.recv(65536)   # the request (headers; a small body comes with them)
            if self.head:
                text = b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 10**7
            else:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Content-Length: 100000000\r\n\r\n")
                text = b'{"items": [' + b" " * 10**8
            for i in range(len(text)):
                if self.stop.wait(self.every):
                    return
                conn.sendall(text[i:i + 1])
        except OSError:
            return
