"""`preview`'s schedule title counts pods, not rows: a row is a pod template with replicas
(gcp's 8-node job showed "4 pods" for 1 + 7 + 1 + 7 = 16)."""

from __future__ import annotations

from rich.console import Console

from reclaunch.ui.preview import render_schedule


def _title(rows) -> str:
    c = Console(width=160, record=True, file=open("/dev/null", "w"))
    c.print(render_schedule(rows))
    return c.export_text().splitlines()[0].strip()


def _row(pod, replicas, fits=True):
    return {"pod": pod, "role": "training", "replicas": replicas, "pool": "gpu" if fits else None,
            "fits": fits, "reasons": [] if fits else ["no pool has 8 nvidia.com/gpu"]}


def test_title_counts_replicas():
    assert _title([_row("j/master", 1), _row("j/worker", 7)]) == \
        "8 pods (2 kinds): every one has a node pool"


def test_unschedulable_count_is_pods_too():
    assert _title([_row("j/master", 1), _row("j/worker", 7, fits=False)]) == \
        "8 pods (2 kinds): 7 cannot be scheduled"
