"""`render --out DIR` into a folder that already holds other manifests says so: `kubectl
apply -f DIR` would apply a previous render's rendezvous or job beside this one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _render(example: str, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reclaunch", "render", str(ROOT / "examples" / example),
                           "--out", str(out)], capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_leftover_manifests_are_named(tmp_path: Path) -> None:
    out = tmp_path / "m"
    first = _render("azure-din-nd96amsr.yaml", out)
    assert first.returncode == 0 and "warning" not in first.stderr, first.stderr
    again = _render("azure-din-nd96amsr.yaml", out)   # same files again: nothing stale
    assert again.returncode == 0 and "warning" not in again.stderr, again.stderr
    (out / "notes.txt").write_text("not a manifest\n")
    other = _render("gcp-dcnv2-a3mega.yaml", out)
    assert other.returncode == 0, other.stderr
    warn = [l for l in other.stderr.splitlines() if l.startswith("warning:")]
    assert len(warn) == 1, other.stderr
    assert "05-pytorchjob-din-spot.yaml" in warn[0] and "notes.txt" not in warn[0]
    assert "kubectl apply -f" in warn[0]
