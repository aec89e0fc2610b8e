"""Parsers for what NCCL prints: the nccl-tests table (bus bandwidth per size) and NCCL's INFO
init lines (which network transport, provider and interfaces it really used). Pure: text in,
values out. Used by the preflight verdict and by `reclaunch diagnose`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from reclaunch.errors import ReclaunchError


class NcclLogError(ReclaunchError):
    """The preflight log holds no usable nccl-tests result."""

    exit_code = 1


@dataclass(frozen=True)
class NcclTestRow:
    size: int
    count: int
    type: str
    redop: str
    root: int | None
    oop_time_us: float | None
    oop_algbw: float | None
    oop_busbw: float | None
    oop_wrong: int | None
    ip_time_us: float | None
    ip_algbw: float | None
    ip_busbw: float | None
    ip_wrong: int | None

    @property
    def busbw(self) -> float:
        return max(b for b in (self.oop_busbw, self.ip_busbw, 0.0) if b is not None)

    @property
    def wrong(self) -> int:
        return (self.oop_wrong or 0) + (self.ip_wrong or 0)


@dataclass(frozen=True)
class NcclTestResult:
    rows: tuple[NcclTestRow, ...]
    avg_busbw: float | None
    out_of_bounds: int | None
    ranks: int
    header: dict[str, str] = field(default_factory=dict)

    @property
    def largest(self) -> NcclTestRow:
        return max(self.rows, key=lambda r: r.size)

    @property
    def busbw(self) -> float:
        """Bus bandwidth at the largest size, GB/s."""
        return self.largest.busbw

    @property
    def wrong(self) -> int:
        return sum(r.wrong for r in self.rows)


# mpirun --tag-output and kubectl --prefix put a tag before each line.
_PREFIX = re.compile(r"^(?:\[\d+,\d+\]<std(?:out|err)>:|\[pod/[^\]]+\]\s)")
_NUM = re.compile(r"^-?\d+(?:\.\d+)?(?:e[+-]?\d+)?$", re.I)
_HEADER = re.compile(r"\b(nThread|nGpus|minBytes|maxBytes|step|warmup iters|agg iters|iters|"
                     r"validation|graph):?\s+(\S+)")
_WARN = re.compile(r"NCCL WARN (.*)$|(Test NCCL failure .*)$|(\w*Error: .*)$")


def _num(tok: str) -> float | None:
    if tok.upper() == "N/A":
        return None
    if not _NUM.match(tok):
        raise ValueError(tok)
    return float(tok)


def _row(line: str) -> NcclTestRow | None:
    t = line.split()
    if len(t) not in (12, 13) or not (t[0].isdigit() and t[1].isdigit()):
        return None
    try:
        root = int(t[4]) if len(t) == 13 else None
        v = [_num(x) for x in t[-8:]]
    except ValueError:
        return None
    w = [None if x is None else int(x) for x in (v[3], v[7])]
    return NcclTestRow(int(t[0]), int(t[1]), t[2], t[3], root, v[0], v[1], v[2], w[0],
                       v[4], v[5], v[6], w[1])


def _first_error(lines: list[str]) -> str | None:
    for line in lines:
        m = _WARN.search(line)
        if m:
            return next(g for g in m.groups() if g).strip()
    return None


def parse_nccl_tests(text: str) -> NcclTestResult:
    """Parse nccl-tests (or the preflight wrapper's) stdout; NCCL INFO lines may interleave."""
    lines = [_PREFIX.sub("", ln).rstrip() for ln in (text or "").splitlines()]
    if not any(ln.strip() for ln in lines):
        raise NcclLogError("the nccl-tests log is empty",
                           hint="did the preflight pod start? see `kubectl logs` of the Master")
    rows, avg, oob, ranks, header = [], None, None, 0, {}
    for ln in lines:
        s = ln.strip()
        if s.startswith("#"):
            body = s.lstrip("#").strip()
            if body.startswith("Avg bus bandwidth"):
                avg = float(body.split(":", 1)[1].split()[0])
            elif body.startswith("Out of bounds values"):
                oob = int(body.split(":", 1)[1].split()[0])
            elif body.startswith("Rank "):
                ranks += 1
            elif body.startswith("nThread"):
                header = dict(_HEADER.findall(body))
            continue
        row = _row(s)
        if row is not None:
            rows.append(row)
    if not rows:
        err = _first_error(lines)
        raise NcclLogError("no nccl-tests result rows in the log",
                           hint=f"first error: {err}" if err else
                           "expected a '#  size  count  type ...' table from all_reduce_perf")
    return NcclTestResult(tuple(rows), avg, oob, ranks, header)


@dataclass(frozen=True)
class NcclDebug:
    """What NCCL_DEBUG=INFO says about the network it used."""

    transports: tuple[str, ...]          # every NET/<name> seen, in order of first appearance
    primary: str | None                  # the one that carried inter-node traffic
    ofi_provider: str | None = None
    socket_ifaces: tuple[str, ...] = ()
    plugin_missing: bool = False
    no_socket_iface: bool = False
    version: str | None = None
    warnings: tuple[str, ...] = ()
    # GPUDirect RDMA on the primary transport: NCCL appends /GDRDMA to a channel's
    # `via NET/<net>/<dev>` line when the NIC reads/writes GPU memory directly (NCCL
    # src/transport/net.cc). None: no channel lines; True: every one has it.
    gdr: bool | None = None
    gdr_channels: tuple[int, int] = (0, 0)   # (channel lines with /GDRDMA, all of them)


_NETWORK_NAMES = {"aws libfabric": "NET/OFI", "libfabric": "NET/OFI", "aws": "NET/OFI",
                  "ofi": "NET/OFI", "ib": "NET/IB",
                  "socket": "NET/Socket", "fastrak": "NET/FasTrak", "gib": "NET/gIB"}
_RDMA_NETS = ("NET/OFI", "NET/IB", "NET/GPUDirectTCPX", "NET/FasTrak", "NET/gIB")


def _net_token(name: str) -> str:
    key = name.strip().lower()
    if key.startswith("gpudirecttcpx"):      # GPUDirectTCPX_v7
        return "NET/GPUDirectTCPX"
    return _NETWORK_NAMES.get(key, f"NET/{name.strip()}")


def parse_nccl_debug(text: str) -> NcclDebug:
    """The transports NCCL used: channel lines (`via NET/X/0`) are definitive, then
    `Using network X`, then the `NET/X : Using ...` init lines (RDMA ones first)."""
    seen: list[str] = []
    via: dict[str, int] = {}
    via_gdr: dict[str, int] = {}
    using: list[str] = []
    provider = version = None
    ifaces: list[str] = []
    warnings: list[str] = []
    plugin_missing = no_iface = False
    for line in (text or "").splitlines():
        if "NCCL" not in line and "NET/" not in line:
            continue
        for tok in re.findall(r"NET/(\w+)", line):
            if tok != "Plugin" and _net_token(tok) not in seen:
                seen.append(_net_token(tok))
        if m := re.search(r"via NET/([^/]+)/", line):   # "NET/AWS Libfabric/0/GDRDMA"
            tok = _net_token(m.group(1))
            via[tok] = via.get(tok, 0) + 1
            if re.search(r"via NET/[^/]+/\d+/GDRDMA", line):
                via_gdr[tok] = via_gdr.get(tok, 0) + 1
        if m := re.search(r"Using network (.+?)\s*$", line):
            using.append(_net_token(m.group(1)))
            if using[-1] not in seen:
                seen.append(using[-1])
        if m := re.search(r"Selected [Pp]rovider is (\S+)", line):
            provider = m.group(1).rstrip(",")
        if m := re.search(r"NET/Socket : Using (.*)$", line):
            ifaces += re.findall(r"\[\d+\]([\w.-]+):", m.group(1))
        if m := re.search(r"NCCL version (\S+)", line):
            version = version or m.group(1)
        if re.search(r"NET/Plugin\s*:.*(No plugin found|Could not find|cannot open|Failed to)",
                     line, re.I):
            plugin_missing = True
        if re.search(r"no (usable listening )?(socket )?interface found", line, re.I):
            no_iface = True
        if m := re.search(r"NCCL WARN (.*)$", line):
            warnings.append(m.group(1).strip())
    if via:
        primary: str | None = max(via, key=lambda k: via[k])
    elif using:
        primary = using[-1]
    else:
        inits = [t for t in seen if t in _RDMA_NETS] or seen
        primary = inits[0] if inits else None
    gdr_channels = (via_gdr.get(primary or "", 0), via.get(primary or "", 0))
    gdr = None if not gdr_channels[1] else gdr_channels[0] == gdr_channels[1]
    return NcclDebug(tuple(seen), primary, provider, tuple(dict.fromkeys(ifaces)),
                     plugin_missing, no_iface, version, tuple(warnings), gdr, gdr_channels)
