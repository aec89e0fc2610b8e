"""Bounded polling for the local-provider tests (real processes: never wait forever)."""

from __future__ import annotations

import time


def wait_for(pred, timeout: float, what: str, poll: float = 0.2):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = pred()
        if got:
            return got
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
