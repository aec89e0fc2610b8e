"""Issue 42: job.workdir on cloud: local, for real: the packed directory (its .gitignore
applied) is what every rank's command runs in, and a changed file is there on the next `up`."""

from __future__ import annotations

import io
import textwrap

import pytest

TRAIN = textwrap.dedent("""\
    import os, pathlib
    files = sorted(str(p) for p in pathlib.Path('.').rglob('*') if p.is_file())
    print('files=' + ','.join(files) + ' version=' + open('version.txt').read().strip(), flush=True)
""")


def _quiet():
    from rich.console import Console
    return Console(file=io.StringIO())


@pytest.mark.timeout(300)
def test_the_workdir_is_where_every_rank_runs(home, provider, tmp_path):
    from reclaunch.planner import make_plan
    from reclaunch.providers.local import proc as lp
    from reclaunch.runtime.measurements import plan_context
    from reclaunch.spec import load_spec

    code = tmp_path / "code"
    (code / "sub").mkdir(parents=True)
    (code / "train.py").write_text(TRAIN)
    (code / "version.txt").write_text("1\n")
    (code / "sub" / "helper.py").write_text("x = 1\n")
    (code / "cache.bin").write_bytes(b"\0" * 1000)
    (code / ".gitignore").write_text("cache.bin\n")
    spec_path = tmp_path / "wd.yaml"
    spec_path.write_text(textwrap.dedent("""\
        name: wd
        cloud: local
        nodes: 2
        gpus_per_node: 1
        job: {command: [python, train.py], workdir: code, dataset: {samples: 1000}}
        model: {preset: deepfm, tables: [{name: u, rows: 1000}]}
        teardown: {when: on_completion}
    """))

    def run() -> list[str]:
        spec = load_spec(spec_path)
        st = provider.up(make_plan(spec, context=plan_context(spec)), console=_quiet())
        assert st.state == "Succeeded", st.message
        return sorted(line.split(": ", 1)[1] for line in provider.logs("wd") if "files=" in line)

    lines = run()
    assert lines == ["files=.gitignore,sub/helper.py,train.py,version.txt version=1"] * 2
    assert (home / "local" / "wd" / "workdir" / "train.py").read_text() == TRAIN
    (code / "version.txt").write_text("2\n")          # edit, up again: no image, no rebuild
    assert run() == ["files=.gitignore,sub/helper.py,train.py,version.txt version=2"] * 2
    provider.down("wd", yes=True)
    assert lp.run_pids("wd") == []
