"""Issue 15, hostile input: every bound is a one-line `file:line: field: message` (exit 2),
never an internal error and never a hang."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from reclaunch.errors import SpecError
from reclaunch.spec import load_spec, parse_spec

ROOT = Path(__file__).resolve().parents[2]
LOCAL = (ROOT / "examples" / "local-deepfm.yaml").read_text()
GCP = (ROOT / "examples" / "gcp-dcnv2-a3mega.yaml").read_text()


def problems(text: str, name: str = "c.yaml") -> list[str]:
    with pytest.raises(SpecError) as exc:
        parse_spec(text, name)
    assert exc.value.exit_code == 2
    return exc.value.problems


def test_a_5001_digit_integer_is_a_spec_error():
    lines = problems(LOCAL.replace("batch_size: 256", "batch_size: " + "9" * 5001))
    assert len(lines) == 1 and "job.batch_size: a number with 5001 digits is out of range" in lines[0]
    assert lines[0].startswith("c.yaml:")


@pytest.mark.parametrize("size, needle", [("999999EiB", "too large"),
                                          ("200PiB", "larger than any file system")])
def test_absurd_storage_sizes(size, needle):
    lines = problems(LOCAL.replace("kind: hostpath", f"kind: hostpath\n  size: {size}"))
    assert any("storage.size" in ln and needle in ln for ln in lines), lines


def test_200_local_nodes_are_refused():
    text = LOCAL.replace("nodes: 2\n", "nodes: 200\n", 1).replace("max_nodes: 2", "max_nodes: 200")
    lines = problems(text)
    assert any(":5: nodes:" in ln and "200 training processes" in ln for ln in lines), lines


@pytest.mark.parametrize("base", [LOCAL, GCP], ids=["local", "gcp"])
@pytest.mark.parametrize("name", ["-bad-", "9-gke", "'" + "1" * 40 + "'", "bad-"])
def test_names_follow_the_targets_naming_rules(base, name):
    import re
    text = re.sub(r"(?m)^name: .*$", f"name: {name}", base, count=1)
    lines = problems(text)
    assert any(": name: " in ln and ("DNS-1035" in ln or "must be" in ln) for ln in lines), lines


def test_alias_amplification_is_bounded():
    blob = "A" * 100_000
    text = LOCAL.replace("job:\n", f"x: &x \"{blob}\"\njob:\n", 1).replace(
        "args: [", "args: [" + "*x, " * 100, 1)
    assert len(text) < 200_000               # a small file ...
    lines = problems(text)                   # ... that would render 10 MB of arguments
    assert len(lines) == 1 and "aliases expand to more than" in lines[0], lines


@pytest.mark.timeout(20)
def test_a_fifo_as_the_spec_file_never_hangs(tmp_path):
    fifo = tmp_path / "cluster.yaml"
    os.mkfifo(fifo)
    done: list[BaseException] = []

    def load():
        try:
            load_spec(fifo)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            done.append(exc)

    t = threading.Thread(target=load, daemon=True)
    t.start()
    t.join(10)
    if t.is_alive():   # unblock the reader so the thread can end, then fail
        with open(fifo, "w"):
            pass
        pytest.fail("load_spec blocked on a FIFO")
    assert isinstance(done[0], SpecError) and "not a regular file" in str(done[0])
