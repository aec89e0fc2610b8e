"""Issue 41 item 6: `render --out DIR` and `up --dry-run --out DIR` never write through a
symlink planted in DIR: the link is replaced by our file, its target (outside DIR) untouched."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SECRET = "s3cr3t-value-0123456789"


def _run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reclaunch", *args], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, env={**os.environ, **(env or {})})


def _spec(tmp_path: Path, example: str) -> Path:
    text = (ROOT / "examples" / example).read_text()
    spec = tmp_path / example
    # a literal secret-looking value: --out writes it (0600), so where it lands matters
    spec.write_text(text.replace("job:\n", f"job:\n  env: {{API_TOKEN: {SECRET}}}\n", 1))
    return spec


def _plant(out: Path, names: list[str], victim: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for n in names:
        (out / n).symlink_to(victim)


def test_render_out_replaces_planted_links_and_leaves_their_target(tmp_path):
    spec, victim = _spec(tmp_path, "aws-deepfm-p4d.yaml"), tmp_path / "victim.txt"
    victim.write_text("the user's own file\n")
    victim.chmod(0o644)
    clean = tmp_path / "clean"
    assert _run("render", str(spec), "--out", str(clean), "--preflight").returncode == 0
    names = sorted(p.name for p in clean.iterdir() if p.is_file())
    out = tmp_path / "out"
    _plant(out, names, victim)
    r = _run("render", str(spec), "--out", str(out), "--preflight")
    assert r.returncode == 0, r.stderr
    assert victim.read_text() == "the user's own file\n" and stat.S_IMODE(victim.stat().st_mode) == 0o644
    for n in names:
        p = out / n
        assert not p.is_symlink() and p.read_text() == (clean / n).read_text()
    assert any(SECRET in (out / n).read_text() for n in names)
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_a_planted_preflight_link_is_refused_not_followed(tmp_path):
    spec, elsewhere = _spec(tmp_path, "aws-deepfm-p4d.yaml"), tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "preflight").symlink_to(elsewhere)
    r = _run("render", str(spec), "--out", str(out), "--preflight")
    assert r.returncode == 2 and "preflight in it is not a directory" in r.stderr, r.stderr
    assert list(elsewhere.iterdir()) == []


def test_up_dry_run_out_replaces_a_planted_link(tmp_path):
    spec, victim = _spec(tmp_path, "local-deepfm.yaml"), tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    out = tmp_path / "out"
    _plant(out, ["local-launch.yaml"], victim)
    r = _run("up", str(spec), "--dry-run", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert victim.read_text() == "keep me\n"
    got = out / "local-launch.yaml"
    assert not got.is_symlink() and SECRET in got.read_text()
    assert stat.S_IMODE(got.stat().st_mode) == 0o600
