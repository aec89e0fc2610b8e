"""Issue 39: in TorchRec's train pipeline the whole step is one call (fetch of a batch ahead,
forward, backward, optimizer): its parts must still land in the right metric.

On CUDA the step clock reads event gaps on the stream. Here the same code runs on CPU with
marks that are host timestamps (the stream of a synchronous device is the host), so the
attribution the GPU would make is checked without a GPU."""
import json

import pytest
from tests.needs import need_module

need_module("torchrec", "local")

import metrics  # noqa: E402
import timing  # noqa: E402

TINY = ["--table-rows", "60,40,30", "--embedding-dim", "4", "--mlp", "16,8", "--batch-size", "32",
        "--optimizer", "adagrad", "--log-every", "3", "--steps", "9"]


class HostEvent:
    """torch.cuda.Event's interface, on the host clock."""

    def __init__(self):
        import time
        self.t = time.perf_counter()

    def elapsed_time(self, end) -> float:   # milliseconds, as CUDA events
        return (end.t - self.t) * 1e3

    def synchronize(self) -> None:
        pass


class EventClock(timing.StepClock):
    def __init__(self, device):
        super().__init__(device)
        self.cuda = True

    def mark(self):
        return HostEvent()


def _windows(out):
    return [json.loads(line[len(metrics.PREFIX):]) for line in out.splitlines()
            if line.startswith(metrics.PREFIX) and '"final":true' not in line]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("events", [False, True])
def test_pipeline_step_parts_land_where_they_belong(run_main, monkeypatch, events):
    """A starved loader (slow_data) is data wait, not forward/backward; the optimizer step is
    optimizer time, not communication or forward/backward; the parts add up to the step."""
    if events:
        monkeypatch.setattr(timing, "StepClock", EventClock)
    code, out = run_main(*TINY, "--pipeline", "sparse_dist", env={"RECLAUNCH_FAULT": "slow_data:0.05"})
    assert code == 0, out
    assert "pipeline=TrainPipelineSparseDist" in out
    for m in _windows(out)[1:]:       # after the warm-up window
        assert m["data_wait_s"] >= 0.045, m
        assert m["fwd_bwd_s"] < 0.045, m                      # the 50 ms are not compute
        assert m["optimizer_s"] > 0, m
        assert m["comm_s"] < 0.02, m                           # one process: nothing to wait for
        parts = m["data_wait_s"] + m["fwd_bwd_s"] + m["optimizer_s"] + m["comm_s"]
        assert parts == pytest.approx(m["step_s"], rel=0.1, abs=2e-3), m


@pytest.mark.timeout(60)
def test_marked_optimizer_is_the_optimizer_to_the_pipeline():
    import torch

    p = torch.nn.Parameter(torch.ones(3))
    opt = torch.optim.SGD([p], lr=0.5)
    clock = EventClock(torch.device("cpu"))
    marked = timing.MarkedOptimizer(opt, clock)
    p.grad = torch.ones(3)
    marked.step()
    before, after = marked.take()
    assert torch.equal(p.detach(), torch.full((3,), 0.5)) and after.t >= before.t
    assert marked.take() is None and marked.param_groups is opt.param_groups
    marked.zero_grad(set_to_none=True)
    assert p.grad is None


@pytest.mark.timeout(30)
def test_marks_go_on_the_compute_stream_inside_the_pipelines_copy_stream(monkeypatch):
    """TorchRec's pipeline fetches under `torch.cuda.stream(memcpy_stream)`: a fetch mark put on
    the current stream there would time the copy stream. Fake CUDA: which stream each event
    is recorded on."""
    import torch

    current = ["compute"]
    recorded = []

    class FakeEvent:
        def __init__(self, enable_timing=False):
            pass

        def record(self, stream=None):
            recorded.append(current[0] if stream is None else stream)

    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: current[0])
    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    clock = timing.StepClock(torch.device("cuda", 0))   # built by the loop, on the compute stream
    clock.mark()
    current[0] = "memcpy"                               # inside the pipeline's fetch
    clock.mark()
    assert recorded == ["compute", "compute"]
