"""How long one network call may take: a connect timeout, a read timeout, and a total deadline.

The SDKs bound each socket operation only: botocore's `read_timeout`, urllib3's read timeout
(the kubernetes client's `_request_timeout=(connect, read)`), azure-core's and requests' alike
start again with every byte that arrives, so an endpoint that trickles one byte a second (or
sends headers forever) never times out. `within()` puts a total deadline on the whole call:
the call runs on a daemon thread and the caller stops waiting at the deadline.

Why a thread, not a signal or a socket patch: SIGALRM works only on the main thread and
interrupts whatever runs there; shutting the socket down needs the SDK's connection, which
neither botocore nor urllib3 hands out while a response is being read. A thread left waiting
holds one socket until the server stops or the read timeout fires; at most MAX_STRAYS such
threads may be waiting per endpoint (then calls to that endpoint fail at once), so a long-lived
watcher polling a trickling endpoint cannot pile them up, and one trickling API does not stop
calls to a healthy one. MAX_STRAYS_ALL bounds them across endpoints (threads and sockets are
finite). A daemon thread never keeps the process alive.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable, TypeVar
from urllib.parse import urlsplit

from reclaunch.errors import ProviderError

T = TypeVar("T")

# Every cloud SDK call gets these (botocore Config, azure-core transport, google-auth session,
# the kubernetes client): a hung endpoint costs at most attempts x (connect + read) seconds per
# call, and a trickling one at most the call deadline, never minutes.
SDK_CONNECT_S, SDK_READ_S, SDK_ATTEMPTS, SDK_CALL_S = 5.0, 20.0, 3, 60.0
MAX_STRAYS, MAX_STRAYS_ALL = 8, 64

_strays: dict[threading.Thread, str] = {}   # a call still waiting -> its endpoint
_lock = threading.Lock()


class UnreachableError(ProviderError):
    """The endpoint did not answer: refused, closed, past the read timeout after the SDK's own
    bounded retries, or past the call's total deadline. Callers stop calling it instead of
    waiting once per resource (the sweep) or per cluster (status)."""


def _pin(var: str, default: float, lo: float, hi: float) -> float:
    try:
        v = float(os.environ.get(var, default))
    except ValueError:
        return default
    return min(max(v, lo), hi) if v == v else default


def sdk_limits() -> tuple[float, float, int]:
    """(connect timeout s, read timeout s, attempts); RECLAUNCH_SDK_CONNECT_TIMEOUT,
    RECLAUNCH_SDK_READ_TIMEOUT and RECLAUNCH_SDK_ATTEMPTS override (slow links, tests)."""
    return (_pin("RECLAUNCH_SDK_CONNECT_TIMEOUT", SDK_CONNECT_S, 0.1, 120),
            _pin("RECLAUNCH_SDK_READ_TIMEOUT", SDK_READ_S, 0.1, 600),
            int(_pin("RECLAUNCH_SDK_ATTEMPTS", SDK_ATTEMPTS, 1, 10)))


def call_deadline() -> float:
    """Seconds one call may take in all (RECLAUNCH_SDK_CALL_TIMEOUT overrides)."""
    return _pin("RECLAUNCH_SDK_CALL_TIMEOUT", SDK_CALL_S, 0.1, 3600)


def endpoint(url: str) -> str:
    """host:port of a URL (the scheme's port when none is written): the key `within` counts
    waiting calls by."""
    u = urlsplit(url if "//" in url else f"//{url}")
    try:
        port = u.port
    except ValueError:   # not a port: the text as written is key enough
        return u.netloc.lower()
    return f"{(u.hostname or '').lower()}:{port or {'http': 80}.get(u.scheme, 443)}"


def within(fn: Callable[[], T], what: str, seconds: float | None = None, *,
           key: str | None = None) -> T:
    """fn() or UnreachableError once `seconds` (default call_deadline()) have passed; fn's own
    exception is raised here as it was. key: the endpoint (`endpoint(url)`, or the client's
    service and region); calls still waiting are counted per key (default: `what`)."""
    seconds = call_deadline() if seconds is None else seconds
    key = what if key is None else key
    with _lock:
        for t in [t for t in _strays if not t.is_alive()]:
            del _strays[t]
        here = sum(1 for k in _strays.values() if k == key)
        if here >= MAX_STRAYS or len(_strays) >= MAX_STRAYS_ALL:
            n, where = (here, f"to {key} ") if here >= MAX_STRAYS else (len(_strays), "")
            raise UnreachableError(f"{what}: {n} earlier calls {where}are still waiting for an "
                                   "answer; not sending another", hint="check the endpoint and the network")
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:   # noqa: BLE001 - handed to the caller as it was
            box["error"] = exc

    worker = threading.Thread(target=run, name="reclaunch-call", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        with _lock:
            _strays[worker] = key
        raise UnreachableError(f"{what}: no complete answer within {seconds:g} s",
                               hint="check the endpoint and the network; RECLAUNCH_SDK_CALL_TIMEOUT "
                                    "sets the limit")
    if "error" in box:
        raise box["error"]
    return box["value"]
