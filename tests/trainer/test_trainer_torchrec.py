"""The TorchRec engine in this process (one rank, gloo): every model, metrics lines, drill faults."""
import json
import math

import pytest
from tests.needs import need_module

need_module("torchrec", "local")

import metrics  # noqa: E402

CONTRACT = {"v", "rank", "world_size", "step", "time", "interval_steps", "samples_per_s",
            "global_samples_per_s", "step_s", "data_wait_s", "fwd_bwd_s", "optimizer_s", "comm_s",
            "peak_mem_bytes", "mem_kind", "loss", "grad_norm", "nccl_transport", "gdr"}
TINY = ["--table-rows", "60,40,30", "--embedding-dim", "4", "--mlp", "16,8", "--bottom-mlp", "8",
        "--batch-size", "32", "--log-every", "3"]


def metric_lines(text):
    return [json.loads(line[len(metrics.PREFIX):]) for line in text.splitlines()
            if line.startswith(metrics.PREFIX)]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("model,optimizer", [("deepfm", "adam"), ("dcnv2", "rowwise_adagrad"),
                                             ("dlrm", "sgd"), ("din", "adagrad")])
def test_each_model_trains_a_few_steps(run_main, model, optimizer):
    code, out = run_main("--model", model, "--optimizer", optimizer, "--steps", "6", "--history-length", "5", *TINY)
    assert code == 0, out
    assert "info engine=torchrec sharding=fallback" in out
    lines = metric_lines(out)
    assert [m["step"] for m in lines] == [3, 6, 6] and lines[-1].get("final") is True
    for m in lines:
        assert CONTRACT <= m.keys(), CONTRACT - m.keys()
        assert m["rank"] == 0 and m["world_size"] == 1 and m["mem_kind"] == "rss" and m["peak_mem_bytes"] > 0
        assert m["nccl_transport"] is None and m["gdr"] is None          # gloo
        assert math.isfinite(m["loss"]) and m["grad_norm"] > 0 and m["samples_per_s"] > 0
        parts = m["data_wait_s"] + m["fwd_bwd_s"] + m["optimizer_s"] + m["comm_s"]
        assert 0 < parts <= m["step_s"] * 1.05 + 1e-4, m
    if model == "din":
        assert "t2:table_wise[0]" in out     # the behaviour sequence is the last table


@pytest.mark.timeout(120)
def test_din_learns_from_the_behaviour_sequence(run_main):
    code, out = run_main("--model", "din", "--optimizer", "adagrad", "--steps", "60", "--history-length", "8",
                         "--table-rows", "40,400", "--embedding-dim", "8", "--mlp", "32,16",
                         "--batch-size", "128", "--log-every", "20", "--lr", "0.1")
    assert code == 0, out
    losses = [m["loss"] for m in metric_lines(out) if not m.get("final")]
    assert losses[-1] < losses[0] - 0.03, losses


@pytest.mark.timeout(120)
def test_fault_knobs_show_in_the_metrics(run_main):
    code, out = run_main("--steps", "6", *TINY, env={"RECLAUNCH_FAULT": "slow_data:0.05,nan_loss:4"})
    assert code == 0, out
    first, second = metric_lines(out)[:2]
    assert first["data_wait_s"] >= 0.05 and first["data_wait_s"] > 0.5 * first["step_s"]
    assert math.isfinite(first["loss"]) and "loss_nan" not in first
    assert second["loss"] is None and second["loss_nan"] is True


@pytest.mark.timeout(30)
def test_metrics_line_writes_null_for_nan_and_rounds():
    text = metrics.line(rank=0, loss=float("nan"), grad_norm=float("inf"), step_s=0.1234567891)
    doc = json.loads(text[len(metrics.PREFIX):])
    assert doc == {"v": 1, "rank": 0, "loss": None, "loss_nan": True, "grad_norm": None, "step_s": 0.123457}
    assert "NaN" not in text


@pytest.mark.timeout(30)
def test_fault_parsing():
    f = metrics.Fault("straggler:1:0.2, slow_data:0.01", rank=1)
    assert f.straggle == 0.2 and f.slow_data == 0.01 and f.active
    assert metrics.Fault("straggler:1:0.2", rank=0).straggle == 0.0
    assert metrics.Fault("nan_loss:7", 0).loss_hook(6) is None and metrics.Fault("nan_loss:7", 0).loss_hook(7)
    assert not metrics.Fault("", 0).active
    with pytest.raises(SystemExit, match="RECLAUNCH_FAULT"):
        metrics.Fault("slow_data", 0)


# NCCL INFO lines as NCCL 2.2x prints them at communicator init (fixtures, one per fabric).
NCCL_IB = ["host:1:1 [0] NCCL INFO Using network IB",
           "host:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA",
           "host:1:1 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via P2P/IPC"]
NCCL_EFA = ["host:1:1 [0] NCCL INFO Using network AWS Libfabric",
            "host:1:1 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [receive] via NET/AWS Libfabric/0/GDRDMA"]
NCCL_SOCKET = ["host:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.5<0>",
               "host:1:1 [0] NCCL INFO Using network Socket",
               "host:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0"]
NCCL_LOCAL = ["host:1:1 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct"]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("lines,expected", [(NCCL_IB, ("NET/IB", True)), (NCCL_EFA, ("NET/OFI", True)),
                                            (NCCL_SOCKET, ("NET/Socket", False)), (NCCL_LOCAL, ("SHM", None)),
                                            (NCCL_IB[2:], ("P2P", None)), ([], (None, None))])
def test_nccl_transport_from_init_lines(lines, expected):
    assert metrics.parse_nccl(lines) == expected


@pytest.mark.timeout(30)
def test_nccl_probe_reads_the_debug_file_once(tmp_path):
    env = {}
    pattern = metrics.setup_nccl_log(env)
    assert env["NCCL_DEBUG"] == "INFO" and "%h" in env["NCCL_DEBUG_FILE"] and pattern == env["NCCL_DEBUG_FILE"]
    assert metrics.setup_nccl_log({"NCCL_DEBUG_FILE": "/x/%h"}) == "/x/%h"
    probe = metrics.NcclProbe(str(tmp_path / "nccl.%h.%p.log"))
    assert probe.get() == (None, None)                     # NCCL connects lazily: not yet
    (tmp_path / "nccl.node1.42.log").write_text("\n".join(NCCL_SOCKET) + "\n")
    assert probe.get() == ("NET/Socket", False)
    (tmp_path / "nccl.node1.42.log").write_text("\n".join(NCCL_IB) + "\n")
    assert probe.get() == ("NET/Socket", False)            # parsed once
