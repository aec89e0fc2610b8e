"""WebSocket routes for the recorded server (tests/recorded_server.py: `add_ws`), and the
Kubernetes exec and port-forward subresources spoken over them, for tests on 127.0.0.1.

RFC 6455 framing, the server's side: frames out unmasked, frames in masked. The Kubernetes
channel protocol (v4.channel.k8s.io, what kubernetes.stream asks for besides v5): every binary
frame starts with its channel byte; exec: 0 stdin, 1 stdout, 2 stderr, 3 the status (a
metav1.Status as JSON: "Success", or "Failure" with the exit code as the first cause's
message); port-forward: per port, data channel 2i and error channel 2i+1, whose first frame
each carries the port number (2 bytes, little-endian).
"""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import struct
from typing import Callable
from urllib.parse import parse_qs

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
PROTOCOL = "v4.channel.k8s.io"
TEXT, BINARY, CLOSE, PING, PONG = 0x1, 0x2, 0x8, 0x9, 0xA
READ_TIMEOUT = 20.0       # every read is bounded: a test that hangs fails instead


class WsPeer:
    """The server's end of one upgraded connection."""

    def __init__(self, rfile, wfile, conn: socket.socket | None = None):
        self.rfile, self.wfile = rfile, wfile
        if conn is not None:
            conn.settimeout(READ_TIMEOUT)

    def send(self, payload: bytes, opcode: int = BINARY) -> None:
        n = len(payload)
        head = bytes([0x80 | opcode])
        if n < 126:
            head += bytes([n])
        elif n < 1 << 16:
            head += bytes([126]) + struct.pack("!H", n)
        else:
            head += bytes([127]) + struct.pack("!Q", n)
        self.wfile.write(head + payload)
        self.wfile.flush()

    def recv(self) -> tuple[int, bytes] | None:
        """(opcode, payload) of the next data frame; None when the client closed or went away."""
        while True:
            try:
                head = self.rfile.read(2)
                if len(head) < 2:
                    return None
                op, n = head[0] & 0x0F, head[1] & 0x7F
                if n == 126:
                    n = struct.unpack("!H", self.rfile.read(2))[0]
                elif n == 127:
                    n = struct.unpack("!Q", self.rfile.read(8))[0]
                mask = self.rfile.read(4) if head[1] & 0x80 else b"\0\0\0\0"
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(n)))
            except (OSError, struct.error):
                return None
            if op == CLOSE:
                return None
            if op == PING:
                self.send(data, PONG)
                continue
            return op, data

    def close(self) -> None:
        try:
            self.send(struct.pack("!H", 1000), CLOSE)
        except OSError:
            pass


def handshake(handler) -> WsPeer:
    """Answer the upgrade request `handler` (a BaseHTTPRequestHandler) holds: 101, the
    accept key, the channel protocol."""
    key = handler.headers.get("Sec-WebSocket-Key", "")
    accept = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
    handler.wfile.write(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                         f"Connection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n"
                         f"Sec-WebSocket-Protocol: {PROTOCOL}\r\n\r\n").encode())
    handler.wfile.flush()
    handler.close_connection = True
    return WsPeer(handler.rfile, handler.wfile, handler.connection)


# ---- Kubernetes subresources ---------------------------------------------------------------

def status(code: int) -> bytes:
    if code == 0:
        return json.dumps({"metadata": {}, "status": "Success"}).encode()
    return json.dumps({"metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
                       "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}).encode()


def exec_handler(run: Callable[[list[str], WsPeer], tuple[bytes, bytes, int]]):
    """An exec route: run(command, peer) -> (stdout, stderr, exit code), sent on channels 1, 2
    and 3; `peer` lets an interactive script read stdin frames first."""
    def handle(peer: WsPeer, query: str) -> None:
        command = parse_qs(query).get("command", [])
        out, err, code = run(command, peer)
        if out:
            peer.send(b"\x01" + out)
        if err:
            peer.send(b"\x02" + err)
        peer.send(b"\x03" + status(code))
        peer.close()
    return handle


def stdin_until(peer: WsPeer, end: bytes) -> bytes:
    """Stdin frames (channel 0) until `end` is in them; resize frames (channel 4) skipped."""
    got = b""
    while end not in got:
        frame = peer.recv()
        if frame is None:
            break
        if frame[1][:1] == b"\x00":
            got += frame[1][1:]
    return got


def portforward_handler(answer: Callable[[bytes], bytes]):
    """A port-forward route for one port: each request's bytes on the data channel get
    answer(bytes) back, then the stream ends (one connection per websocket, as kubectl's)."""
    def handle(peer: WsPeer, query: str) -> None:
        port = int(parse_qs(query)["ports"][0])
        prefix = struct.pack("<H", port)
        peer.send(b"\x00" + prefix)
        peer.send(b"\x01" + prefix)
        while True:
            frame = peer.recv()
            if frame is None:
                return
            if frame[1][:1] == b"\x00" and len(frame[1]) > 1:
                peer.send(b"\x00" + answer(frame[1][1:]))
                peer.close()
                return
    return handle
