"""The few facts reclaunch reads from the machine it runs on, each behind one function.

Plans of `cloud: local` size memory by this host's RAM and data-loader workers by its cores,
and price staleness is judged against today's date. Reading them in one place lets a user pin
them (reproducible plans, a CI machine that plans as a laptop would) and lets the tests pin
them, so no golden file or assertion depends on the machine or the day it runs on:

    RECLAUNCH_HOST_MEMORY   total RAM, with a unit ("16GiB")
    RECLAUNCH_HOST_CPUS     usable CPU cores (an integer)
    RECLAUNCH_TODAY         the date prices are judged against (YYYY-MM-DD)
    RECLAUNCH_HOST_LOAD     load per core a finished local run's record says the host had

A malformed value is a UsageError naming the variable, never a silent fallback.
"""

from __future__ import annotations

import datetime as _dt
import os
import re

from reclaunch.errors import UsageError

MEMORY_VAR = "RECLAUNCH_HOST_MEMORY"
CPUS_VAR = "RECLAUNCH_HOST_CPUS"
TODAY_VAR = "RECLAUNCH_TODAY"
LOAD_VAR = "RECLAUNCH_HOST_LOAD"
FALLBACK_RAM_BYTES = 16 * 2**30     # a host whose RAM cannot be read plans as a 16 GiB laptop
# Sizes as the spec writes them (spec/units.py), kept tiny here: this leaf imports nothing of ours.
_SIZE = re.compile(r"(\d{1,7}(?:\.\d{1,6})?)\s*((?:[kmgt]i?)?b?)", re.I)
_UNITS = {"": 1, "b": 1, **{f"{u}{s}": 1000 ** (i + 1) for i, u in enumerate("kmgt") for s in ("", "b")},
          **{f"{u}i{s}": 1024 ** (i + 1) for i, u in enumerate("kmgt") for s in ("", "b")}}


def ram_bytes() -> int:
    pinned = os.environ.get(MEMORY_VAR)
    if pinned:
        m = _SIZE.fullmatch(pinned.strip())
        if not m or float(m[1]) <= 0:
            raise UsageError(f"{MEMORY_VAR}={pinned!r}: must be a positive size such as 16GiB")
        return int(float(m[1]) * _UNITS[m[2].lower()])
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return FALLBACK_RAM_BYTES


def cpu_count() -> int:
    pinned = os.environ.get(CPUS_VAR)
    if pinned:
        if not pinned.isdigit() or int(pinned) < 1 or len(pinned) > 6:
            raise UsageError(f"{CPUS_VAR}={pinned!r}: must be a whole number of cores, at least 1")
        return int(pinned)
    try:   # the cores this process may run on (a container's cpuset), not the machine's
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def today() -> _dt.date:
    pinned = os.environ.get(TODAY_VAR)
    if pinned:
        try:
            return _dt.date.fromisoformat(pinned)
        except ValueError:
            raise UsageError(f"{TODAY_VAR}={pinned!r}: must be a date, YYYY-MM-DD") from None
    return _dt.date.today()


def latest_plausible() -> _dt.datetime:
    """The latest time a record made on some machine can carry (a measured run, a host
    calibration): now, or the end of the pinned today if that is later, plus a day of clock
    skew between machines. Later is a forgery or a broken clock."""
    pinned = _dt.datetime.combine(today(), _dt.time.max, tzinfo=_dt.timezone.utc)
    return max(_dt.datetime.now(_dt.timezone.utc), pinned) + _dt.timedelta(days=1)


def load_per_core() -> float | None:
    """The 1-minute load average per usable core: how contended this host was when a run ended
    (a measured run's conditions). None where the OS does not say."""
    pinned = os.environ.get(LOAD_VAR)
    if pinned:
        try:
            v = float(pinned)
        except ValueError:
            v = -1.0
        if not 0 <= v <= 1e4:
            raise UsageError(f"{LOAD_VAR}={pinned!r}: must be a load per core such as 0.5")
        return v
    try:
        return round(os.getloadavg()[0] / cpu_count(), 3)
    except (AttributeError, OSError):  # pragma: no cover - non-POSIX
        return None
