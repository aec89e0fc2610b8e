"""Planner speed: every catalog offer for a 26-table model in-process (target < 100 ms), and
`reclaunch plan` wall time vs `python -c "import pydantic, yaml"` side by side (target < 2x).

    .venv/bin/python bench/bench_plan.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "gcp-dcnv2-a3mega.yaml"      # dcnv2 preset: 26 Criteo tables


def in_process(repeats: int = 20) -> tuple[float, int]:
    from reclaunch.catalog import load_catalog
    from reclaunch.planner import compare, make_plan
    from reclaunch.spec import load_spec

    cat = load_catalog()
    spec = load_spec(EXAMPLE, cat)
    assert len(spec.model.tables) == 26
    make_plan(spec, cat)                                    # warm the data caches
    times, rows = [], 0
    from reclaunch.planner.shard_search import _search

    for _ in range(repeats):
        _search.cache_clear()                               # a CLI call starts cold
        t = time.perf_counter()
        rows = len(compare(spec, cat))                      # every offer (+ fewest-node rows)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3, rows


def wall(cmd: list[str], repeats: int = 7) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def main() -> int:
    ms, rows = in_process()
    print(f"in-process: compare() over every catalog offer, 26-table model: {ms:.1f} ms "
          f"({rows} rows; target < 100 ms) {'OK' if ms < 100 else 'SLOW'}")
    py = sys.executable
    cli = [py, "-m", "reclaunch", "plan", str(EXAMPLE.relative_to(ROOT))]
    probe = subprocess.run(cli, cwd=ROOT, capture_output=True, text=True)
    if probe.returncode not in (0, 1) or "plan:" not in probe.stdout:
        cli = [py, "-c", "from reclaunch.spec import load_spec; from reclaunch.planner import "
               f"make_plan; from reclaunch.ui.plan import render_plan; print(render_plan(make_plan(load_spec('{EXAMPLE}'))))"]
        print("`python -m reclaunch plan` did not work; timing the planner via python -c instead")
    base_cmd = [py, "-c", "import pydantic, yaml"]
    # Interleave so both see the same machine state.
    base = cli_ms = 0.0
    b, c = [], []
    for _ in range(7):
        b.append(wall(base_cmd, 1))
        c.append(wall(cli, 1))
    base, cli_ms = statistics.median(b), statistics.median(c)
    ratio = cli_ms / base
    print(f"wall: {' '.join(cli[:4])} ...: {cli_ms:.0f} ms vs python -c 'import pydantic, yaml': "
          f"{base:.0f} ms -> {ratio:.2f}x (target < 2x) {'OK' if ratio < 2 else 'SLOW'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
