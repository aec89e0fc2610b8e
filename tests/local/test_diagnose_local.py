"""`reclaunch diagnose` end to end on cloud: local: the reference trainer with faults planted by
its RECLAUNCH_FAULT knob (a slowed data loader, a delayed rank, a loss driven to NaN), all in one
short run, and diagnose must name each with its fix.

Skipped when the trainer in this checkout has no RECLAUNCH_FAULT knob (the trainer helper's
branch brings it): the test then runs as soon as that branch is merged.
"""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(300)
def test_planted_faults_are_named(home, provider, helpers, capsys):
    from rich.console import Console

    from reclaunch.cli import main

    fault = "slow_data:0.2,straggler:1:0.2,nan_loss:50"   # far past shared-CPU noise
    spec = helpers.make_spec("diag", args=["--model", "deepfm", "--steps", "80", "--log-every", "10"],
                             env={"RECLAUNCH_FAULT": fault}, teardown="on_completion")
    t0 = time.monotonic()
    st = provider.up(helpers.local_plan(spec), cwd=str(helpers.REPO),
                     console=Console(file=io.StringIO(), width=140), timeout=240)
    assert st.state in ("Succeeded", "Failed"), st.message
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        main(["diagnose", "diag", "--json"])
    out = capsys.readouterr().out
    assert e.value.code == 0, out
    d = json.loads(out)
    rules = {f["rule"]: f for f in d["findings"]}
    assert {"data_loader_bound", "straggler", "loss_nan"} <= set(rules), d["findings"]
    assert rules["straggler"]["rank"] == 1 and rules["straggler"]["node"] == 1
    assert "job.num_workers" in rules["data_loader_bound"]["fix"]
    assert rules["loss_nan"]["numbers"]["first_nan_step"] >= 50
    # one cause each: the ranks waiting for the straggler are not "communication bound"
    assert "comm_bound" not in rules and "transport_fallback" not in rules
    print(f"diagnose e2e wall {time.monotonic() - t0:.1f}s: {sorted(rules)}")
    provider.down("diag", yes=True)
