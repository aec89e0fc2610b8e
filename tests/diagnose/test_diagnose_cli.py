"""`reclaunch diagnose NAME [--json]` and `status` on a cloud: local cluster's logs (the files a
finished run leaves under $RECLAUNCH_HOME/local/NAME/nodes; no processes are started here)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).parent))
import synth  # noqa: E402


def _cli(capsys, *args) -> tuple[int, str, str]:
    from reclaunch.cli import main

    with pytest.raises(SystemExit) as e:
        main(list(args))
    out, err = capsys.readouterr()
    return e.value.code, out, err


@pytest.fixture
def local_run():
    """A finished local-deepfm run: journal record (as `up` writes it) and two node logs."""
    from reclaunch.planner import make_plan
    from reclaunch.providers.local.provider import _journal
    from reclaunch.providers.local import proc as lp
    from reclaunch.spec import load_spec

    plan = make_plan(load_spec(ROOT / "examples" / "local-deepfm.yaml"))
    _journal(plan, None)                 # no spec file: the record carries the spec itself
    root = lp.cluster_dir(plan.name)

    def write(lines: list[str]) -> None:
        (root / "nodes").mkdir(parents=True, exist_ok=True)
        lp.write_json(root / "launch.json", {"name": plan.name, "nodes": 2, "max_nodes": 2, "nproc": 1})
        lp.write_json(root / "state.json", {"state": "Succeeded", "nodes": [
            {"index": 0, "state": "exited"}, {"index": 1, "state": "exited"}],
            "started_at": 1764480000.0, "finished_at": 1764480030.0})
        for node in (0, 1):
            human = [f"[rank{node}]: step={50 * i} loss=0.6 samples_per_s=9000" for i in (1, 2)]
            mine = [ln for ln in lines if ln.startswith(f"[rank{node}]")]
            (root / "nodes" / f"node-{node}.log").write_text(
                "\n".join(["agent: starting", *human, *mine]) + "\n")
    return plan, write


def test_healthy_local_run(capsys, local_run):
    plan, write = local_run
    write(synth.local(final=True))
    code, out, err = _cli(capsys, "diagnose", plan.name)
    assert code == 0, err
    assert "measured vs planned" in out and "no findings" in out
    code, out, _ = _cli(capsys, "diagnose", plan.name, "--json")
    d = json.loads(out)
    assert code == 0 and d["findings"] == [] and d["world_size"] == 2 and d["finished"]
    rows = {r["what"]: r for r in d["rows"]}
    assert rows["samples/s (cluster)"]["planned"] == pytest.approx(plan.throughput_samples_per_second)
    assert rows["samples/s (cluster)"]["measured"] > 0


def test_planted_straggler_is_named(capsys, local_run):
    plan, write = local_run
    write(synth.local(straggler=(1, 0.20)))   # one host: past the 0.4 relative score
    code, out, _ = _cli(capsys, "diagnose", plan.name, "--json")
    d = json.loads(out)
    assert code == 0 and [f["rule"] for f in d["findings"]] == ["straggler"]
    assert d["findings"][0]["rank"] == 1 and d["findings"][0]["node"] == 1
    code, out, _ = _cli(capsys, "diagnose", plan.name)
    assert code == 0 and "straggler rank" in out and "change:" in out and "expected:" in out


def test_no_metrics_is_exit_1_and_bad_names_exit_2(capsys, local_run):
    plan, write = local_run
    write([])
    code, _, err = _cli(capsys, "diagnose", plan.name)
    assert code == 1 and "no RECLAUNCH_METRICS lines" in err and len(err.strip().splitlines()) == 1
    assert _cli(capsys, "diagnose", "No/Such")[0] == 2
    code, _, err = _cli(capsys, "diagnose", "nosuch")
    assert code == 2 and "no cluster named" in err


def test_status_shows_measured_beside_plan(capsys, local_run, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")      # one line per row: assert on whole cells
    plan, write = local_run
    write(synth.local(final=True))
    code, out, _ = _cli(capsys, "status", plan.name, "--json")
    m = json.loads(out)["details"]["measured"]
    assert code == 0 and m["samples_per_s"] > 0
    assert m["planned_samples_per_s"] == pytest.approx(plan.throughput_samples_per_second)
    assert m["projected_usd"] == 0.0            # cloud: local costs nothing
    code, out, _ = _cli(capsys, "status")
    assert code == 0 and "samples/s" in out and "(plan" in out


def test_cli_import_stays_light():
    import subprocess

    code = ("import sys, reclaunch.cli; heavy = [m for m in ('rich', 'torch', 'yaml', "
            "'reclaunch.runtime.diagnose', 'reclaunch.runtime.metrics') if m in sys.modules]; "
            "print(heavy); sys.exit(1 if heavy else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_status_and_diagnose_compare_with_the_figure_up_printed(capsys, local_run):
    # Issue 42: `plan` printed this host's calibrated figure (19.2k) while status and diagnose
    # re-planned without the calibration (77.8k) and compared the run with that.
    from reclaunch.planner import make_plan
    from reclaunch.providers.local.provider import _journal
    from reclaunch.runtime import calibrate as cal
    from reclaunch.runtime.measurements import plan_context
    from reclaunch.spec import load_spec

    plan, write = local_run
    cal.calibrate(runner=lambda doc, trainer: {
        "step_s": 0.2 + doc["job"]["batch_size"] * 1e-4, "first_step_s": 9.0,
        "samples_per_s": 2 * doc["job"]["batch_size"] / (0.2 + doc["job"]["batch_size"] * 1e-4)})
    spec = load_spec(ROOT / "examples" / "local-deepfm.yaml")
    printed = make_plan(spec, context=plan_context(spec))       # what `plan` and `up` print
    assert "calibrated on this host" in printed.throughput_basis["source"]
    assert abs(printed.throughput_samples_per_second / plan.throughput_samples_per_second - 1) > 0.2
    _journal(printed, None)                                      # as `up` records it
    write(synth.local(final=True))
    code, out, err = _cli(capsys, "diagnose", plan.name, "--json")
    assert code == 0, err
    rows = {r["what"]: r for r in json.loads(out)["rows"]}
    assert rows["samples/s (cluster)"]["planned"] == pytest.approx(printed.throughput_samples_per_second)
    code, out, err = _cli(capsys, "status", plan.name, "--json")
    assert code == 0, err
    brief = json.loads(out)["details"]["measured"]
    assert brief["planned_samples_per_s"] == pytest.approx(printed.throughput_samples_per_second)
