"""Parsing RECLAUNCH_METRICS lines and aggregating them per rank (pure)."""

from __future__ import annotations

import sys
from pathlib import Path

from reclaunch.runtime.metrics import aggregate, log_rank, measure, parse_line, parse_lines

sys.path.insert(0, str(Path(__file__).parent))
import synth  # noqa: E402

CONTRACT = ('RECLAUNCH_METRICS {"v":1,"rank":0,"world_size":2,"step":120,"time":1764480000.12,'
            '"interval_steps":20,"samples_per_s":4567.8,"global_samples_per_s":9135.6,'
            '"step_s":0.056,"data_wait_s":0.004,"fwd_bwd_s":0.031,"optimizer_s":0.006,'
            '"comm_s":0.015,"peak_mem_bytes":123456789,"mem_kind":"rss","loss":0.61,'
            '"grad_norm":1.23,"nccl_transport":null,"gdr":null}')


def test_the_contract_example_parses():
    s = parse_line(CONTRACT)
    assert s.rank == 0 and s.step == 120 and s.world_size == 2
    assert s.step_s == 0.056 and s.comm_s == 0.015 and s.peak_mem_bytes == 123456789
    assert s.loss == 0.61 and not s.loss_nan and s.nccl_transport is None and s.gdr is None


def test_prefixes_and_garbage():
    assert parse_line("[rank3]: " + CONTRACT.replace('"rank":0', '"rank":3')).rank == 3
    assert parse_line("2026-11-30T05:00:00Z " + CONTRACT).rank == 0
    assert log_rank("[rank3]: x") == 3 and log_rank("x") is None
    assert parse_line("step=100 loss=0.5 samples_per_s=10") is None
    assert parse_line("RECLAUNCH_METRICS {not json") is None
    assert parse_line('RECLAUNCH_METRICS {"v":2,"rank":0,"step":1}') is None       # other version
    assert parse_line('RECLAUNCH_METRICS {"v":1,"rank":-1,"step":1}') is None
    assert parse_line('RECLAUNCH_METRICS {"v":1,"rank":true,"step":1}') is None
    assert parse_line('RECLAUNCH_METRICS [1,2]') is None


def test_nan_forms():
    s = parse_line(CONTRACT.replace('"loss":0.61', '"loss":null,"loss_nan":true'))
    assert s.loss is None and s.loss_nan
    s = parse_line(CONTRACT.replace('"loss":0.61', '"loss":NaN'))    # forbidden, but seen
    assert s.loss is None and s.loss_nan
    s = parse_line(CONTRACT.replace('"step_s":0.056', '"step_s":Infinity'))
    assert s.step_s is None


def test_parse_lines_splits_nccl_and_counts_malformed():
    lines = [CONTRACT, "RECLAUNCH_METRICS {", "host:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0",
             "unrelated"]
    samples, nccl, bad = parse_lines(lines)
    assert len(samples) == 1 and bad == 1 and len(nccl) == 1


def test_aggregate_per_rank_and_cluster():
    m = measure(synth.run(world=4, intervals=6))
    assert [r.rank for r in m.ranks] == [0, 1, 2, 3] and m.world_size == 4
    assert m.step == 120 and all(r.intervals == 6 for r in m.ranks)
    p = synth.planned("aws-deepfm-p4d.yaml")      # the fixture's healthy step is the plan's
    assert abs(m.samples_per_s - 4 * 4096 / p["step_s"]) / m.samples_per_s < 0.05
    assert m.peak_mem_bytes == p["mem"] + 3 * 1024     # the largest rank
    assert len(m.series) == 6 and not m.finished


def test_global_rate_falls_back_to_per_rank_sum():
    lines = [ln for ln in synth.run(world=2, intervals=4) if '"rank":0,' not in ln]
    m = measure(lines)
    assert [r.rank for r in m.ranks] == [1] and m.world_size == 2
    step_s = synth.planned("aws-deepfm-p4d.yaml")["step_s"]
    assert abs(m.samples_per_s - 2 * 4096 / step_s) / m.samples_per_s < 0.05


def test_final_line_marks_finished_and_is_not_an_interval():
    m = measure(synth.run(world=2, intervals=4, final=True))
    assert m.finished and len(m.series) == 4


def test_empty_is_none():
    assert aggregate([]) is None
    assert measure(["nothing here"]) is None
