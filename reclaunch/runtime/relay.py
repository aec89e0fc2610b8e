"""`reclaunch port-forward`'s local end: a listener on 127.0.0.1 whose every connection is piped
to a fresh upstream socket (a Kubernetes port-forward stream, or a port on this machine), both
ways, until either side closes. Names no cloud; the upstream is the caller's."""

from __future__ import annotations

import select
import socket
import threading
from typing import Any, Callable

ACCEPT_POLL = 0.2        # how often the accept loop looks at `stop`
CHUNK = 64 * 1024


def serve(connect: Callable[[], tuple[Any, Any]], *, local_port: int = 0,
          ready: Callable[[int], None] | None = None, stop: threading.Event | None = None,
          connections: int | None = None, on_error: Callable[[str], None] | None = None) -> None:
    """Listen on 127.0.0.1:local_port (0: any free port, given to `ready`). connect() -> (a
    socket-like upstream, anything to keep alive while it is used). Ends when `stop` is set,
    or after `connections` connections have been served to the end."""
    try:
        server = socket.create_server(("127.0.0.1", local_port))
    except OSError as exc:
        from reclaunch.errors import UsageError

        raise UsageError(f"cannot listen on 127.0.0.1:{local_port}: {exc.strerror or exc}",
                         hint="pick another --local-port") from None
    server.settimeout(ACCEPT_POLL)
    workers: list[threading.Thread] = []
    served = 0
    with server:
        if ready:
            ready(server.getsockname()[1])
        while not (stop is not None and stop.is_set()):
            if connections is not None and served >= connections:
                break
            try:
                client, _ = server.accept()
            except socket.timeout:
                continue
            served += 1
            try:
                upstream, keep = connect()
            except Exception as exc:   # noqa: BLE001 - one refused stream, not the forwarder
                client.close()
                if on_error:
                    on_error(f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
                continue
            t = threading.Thread(target=pipe, args=(client, upstream, keep), daemon=True)
            t.start()
            workers.append(t)
    for t in workers:
        t.join(timeout=30)


def pipe(a: Any, b: Any, keep: Any = None) -> None:
    """Copy bytes both ways between two sockets until one side closes, then close both."""
    try:
        socks = [a, b]
        while True:
            readable, _, _ = select.select(socks, [], [], 30)
            if not readable:
                continue
            for s in readable:
                data = s.recv(CHUNK)
                if not data:
                    return
                (b if s is a else a).sendall(data)
    except OSError:
        return
    finally:
        for s in (a, b):
            try:
                s.close()
            except OSError:
                pass
        close = getattr(keep, "close", None)
        if close:
            close()
