"""The trainer run for real under torchrun (gloo, 2 processes on 127.0.0.1)."""
import json
import re
import os
import signal
import subprocess
import threading
import time

import pytest

import dcp_ckpt
import metrics
from trainer_helpers import SMALL, SMALL_ROWS, clean_env, run_single, step_lines, torchrun_cmd


def _launch(cmd, **env):
    return subprocess.Popen(cmd, env=clean_env(**env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)


def _plan(kinds):
    """RECLAUNCH_SHARDING for SMALL's tables; kinds[i] is a rank (table_wise) or "dp"."""
    tables = [{"name": f"tab{i}", "rows": rows, "dim": 8, "feature": f"feat{i}", "pooling_factor": 1.0,
               "sequence": False, "sharding_type": "data_parallel" if k == "dp" else "table_wise",
               "compute_kernel": "dense" if k == "dp" else "fused", "ranks": [] if k == "dp" else [k]}
              for i, (rows, k) in enumerate(zip(SMALL_ROWS, kinds))]
    return json.dumps({"version": 1, "world_size": 2, "engine": "torchrec", "tables": tables})


def _placements(out):
    """rank -> (sharded tables, replicated tables) from the trainer's per-rank placement lines."""
    found = {}
    for m in re.finditer(r"info placement rank=(\d+) sharded=(\S+) replicated=(\S+)", out):
        found[int(m.group(1))] = tuple(set(x.split(",")) - {"-"} for x in m.group(2, 3))
    return found


def _metrics(out):
    return [json.loads(line.split(metrics.PREFIX, 1)[1]) for line in out.splitlines() if metrics.PREFIX in line]


class _Tail:
    """Collects a process's output on a thread; wait_for(pred) blocks until a line matches."""

    def __init__(self, proc):
        self.proc, self.lines, self._cv, self.eof = proc, [], threading.Condition(), False
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.proc.stdout:
            with self._cv:
                self.lines.append(line.rstrip("\n"))
                self._cv.notify_all()
        with self._cv:
            self.eof = True
            self._cv.notify_all()

    def wait_for(self, pred, timeout):
        deadline = time.monotonic() + timeout
        with self._cv:
            while True:
                for line in self.lines:
                    if pred(line):
                        return line
                left = deadline - time.monotonic()
                if left <= 0 or self.eof:
                    raise AssertionError("timed out / exited; output:\n" + self.text)
                self._cv.wait(min(left, 0.5))

    @property
    def text(self):
        return "\n".join(self.lines)


def _finish(proc, tail, timeout=180):  # two TorchRec processes start slowly on a loaded 2-core box
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    time.sleep(0.2)
    return tail.text


def _children(pid):
    kids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open(f"/proc/{entry}/stat").read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(entry))
    return kids


def _past_step(n):
    return lambda line: line.startswith("step=") and int(line.split()[0][5:]) >= n


@pytest.mark.timeout(400)
def test_torchrun_two_processes_table_wise_by_the_plan_then_reshard_to_one(tmp_path):
    """Each table lives on the rank RECLAUNCH_SHARDING names (read back from the sharded state
    on each rank), every rank reports metrics, and the DCP checkpoint resumes on ONE rank."""
    ckpt = tmp_path / "ckpt"
    kinds = [1, 0, 1, 1, 0, "dp"] + [i % 2 for i in range(len(SMALL_ROWS) - 6)]
    proc = _launch(torchrun_cmd(2, *SMALL, "--model", "deepfm", "--steps", "150", "--log-every", "10",
                                "--checkpoint-dir", str(ckpt)), RECLAUNCH_SHARDING=_plan(kinds))
    tail = _Tail(proc)
    out = _finish(proc, tail, timeout=300)
    assert proc.returncode == 0, out
    want = {r: ({f"tab{i}" for i, k in enumerate(kinds) if k == r}, {"tab5"}) for r in (0, 1)}
    assert _placements(out) == want, out
    lines = _metrics(out)
    for rank in (0, 1):
        mine = [m for m in lines if m["rank"] == rank]
        assert [m["step"] for m in mine if not m.get("final")] == list(range(10, 151, 10))
        assert mine[-1]["final"] is True and all(m["world_size"] == 2 for m in mine)
        assert all(m["comm_s"] > 0 and m["samples_per_s"] > 0 for m in mine)
    rank0 = [m for m in lines if m["rank"] == 0]
    assert all(abs(m["global_samples_per_s"] - 2 * m["samples_per_s"]) < 1e-3 for m in rank0)
    steps = step_lines(out)
    assert [int(s["step"]) for s in steps] == list(range(10, 151, 10))
    assert all(s["samples_per_s"] > 0 for s in steps)
    done = [line for line in out.splitlines() if line.startswith("done ")]
    assert len(done) == 1 and done[0].startswith("done steps=150 final_loss=")
    assert "world_size=2" in out
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["status"] == "completed" and result["steps"] == 150 and result["world_size"] == 2
    assert result["final_loss"] < result["first_loss"] - 0.05, result
    assert result["samples_per_s"] > 0 and result["resumed_from_step"] == 0 and result["restarts"] == 0
    assert [s for s, _ in dcp_ckpt.list_checkpoints(str(ckpt))] == [150]

    one = run_single(*SMALL, "--steps", "160", "--log-every", "10", "--checkpoint-dir", str(ckpt), timeout=200,
                     env={"RECLAUNCH_SHARDING": _plan(kinds)})
    assert one.returncode == 0, one.stdout + one.stderr
    assert "resharding world_size=2->1" in one.stdout and "resumed_from_step=150" in one.stdout
    assert "plan made for world_size=2, running on 1" in one.stdout
    assert step_lines(one.stdout)[0]["loss"] < result["first_loss"] - 0.05   # the trained tables came back


@pytest.mark.timeout(400)
def test_sigterm_to_torchrun_checkpoints_and_rerun_resumes(tmp_path):
    ckpt = tmp_path / "ckpt"
    args = [*SMALL, "--log-every", "5", "--checkpoint-dir", str(ckpt),
            "--checkpoint-every-minutes", "0", "--checkpoint-every-steps", "0"]
    proc = _launch(torchrun_cmd(2, *args, "--steps", "100000"))
    tail = _Tail(proc)
    tail.wait_for(_past_step(30), timeout=200)
    os.kill(proc.pid, signal.SIGTERM)  # what the kubelet does to the pod's torchrun
    out = _finish(proc, tail)
    assert proc.returncode != 0
    line = tail.wait_for(lambda l: l.startswith("info sigterm step="), timeout=1)
    stopped = int(re.search(r"step=(\d+)", line).group(1))
    assert stopped >= 30
    assert [s for s, _ in dcp_ckpt.list_checkpoints(str(ckpt))] == [stopped], out
    assert json.loads((tmp_path / "result.json").read_text())["status"] == "interrupted"

    proc = _launch(torchrun_cmd(2, *args, "--steps", str(stopped + 20)))
    tail = _Tail(proc)
    out = _finish(proc, tail)
    assert proc.returncode == 0, out
    assert f"resumed_from_step={stopped}" in out
    steps = [int(s["step"]) for s in step_lines(out)]
    assert steps and steps[0] > stopped and steps[-1] == stopped + 20
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["resumed_from_step"] == stopped and result["steps"] == stopped + 20
    assert result["status"] == "completed"


@pytest.mark.timeout(300)
def test_sigterm_to_torchrun_with_loader_workers_saves_and_resumes(tmp_path):
    """Issue 37: the kubelet's SIGTERM goes to torchrun, which signals each trainer's process
    group, its DataLoader workers included. The workers must not die of it: the trainer
    finishes its step, checkpoints, exits 143, and the rerun resumes from that checkpoint."""
    ckpt = tmp_path / "ckpt"
    args = [*SMALL, "--log-every", "2", "--checkpoint-dir", str(ckpt), "--num-workers", "2",
            "--checkpoint-every-minutes", "0", "--optimizer", "sgd"]
    proc = _launch(torchrun_cmd(1, *args, "--steps", "100000"))
    tail = _Tail(proc)
    tail.wait_for(_past_step(6), timeout=200)
    assert len([p for w in _children(proc.pid) for p in _children(w)]) == 2   # the loader workers
    os.kill(proc.pid, signal.SIGTERM)          # torchrun only, as the kubelet does (PID 1)
    out = _finish(proc, tail)
    line = tail.wait_for(lambda l: l.startswith("info sigterm step="), timeout=1)
    stopped = int(re.search(r"step=(\d+)", line).group(1))
    assert [s for s, _ in dcp_ckpt.list_checkpoints(str(ckpt))] == [stopped], out[-3000:]
    assert "killed by signal" not in out, out[-3000:]

    proc = _launch(torchrun_cmd(1, *args, "--steps", str(stopped + 4)))
    tail = _Tail(proc)
    out = _finish(proc, tail)
    assert proc.returncode == 0, out[-3000:]
    assert f"resumed_from_step={stopped}" in out
    assert [int(s["step"]) for s in step_lines(out)][-1] == stopped + 4


@pytest.mark.timeout(400)
def test_sigterm_to_one_worker_elastic_restart_resumes_in_place(tmp_path):
    """A worker told to stop exits non-zero after all ranks checkpoint; torchrun restarts the
    group (TORCHELASTIC_RESTART_COUNT=1) and it carries on from that checkpoint. Every table
    data-parallel here: the plan may replicate all of them."""
    ckpt = tmp_path / "ckpt"
    proc = _launch(torchrun_cmd(2, *SMALL, "--log-every", "5", "--steps", "150", "--checkpoint-dir", str(ckpt),
                                "--checkpoint-every-minutes", "0", max_restarts=1),
                   RECLAUNCH_SHARDING=_plan(["dp"] * len(SMALL_ROWS)))
    tail = _Tail(proc)
    tail.wait_for(_past_step(30), timeout=200)
    workers = _children(proc.pid)
    assert len(workers) == 2, workers
    os.kill(max(workers), signal.SIGTERM)  # one rank only: the others must agree to stop too
    out = _finish(proc, tail, timeout=300)
    assert proc.returncode == 0, out
    line = next(l for l in out.splitlines() if l.startswith("info sigterm step="))
    stopped = int(re.search(r"step=(\d+)", line).group(1))
    assert f"resumed_from_step={stopped}" in out
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["restarts"] == 1 and result["resumed_from_step"] == stopped and result["steps"] == 150
    assert result["status"] == "completed"
    assert _placements(out)[0] == (set(), {f"tab{i}" for i in range(len(SMALL_ROWS))})
