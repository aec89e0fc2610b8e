from __future__ import annotations

import textwrap

import pytest

from tests.own_cluster.standin import KubeStandIn, kubeconfig

SPEC = """\
name: {name}
cloud: kubernetes
kubernetes:
  context: {context}
  namespace: {namespace}
{extra}
{top}
job:
  image: ghcr.io/acme/recsys-train:1.4
  command: [python, train.py]
  dataset: {{samples: 1e8}}
model:
  preset: deepfm
  tables:
    - {{name: user_id, rows: 1e6}}
"""


@pytest.fixture
def standin(tmp_path, monkeypatch):
    """start(cluster, operator=True) -> a running KubeStandIn that KUBECONFIG points at."""
    started = []

    def start(cluster: str, *, operator: bool = True, context: str = "ctx",
              job_outcome: str | None = None) -> KubeStandIn:
        srv = KubeStandIn(cluster, operator=operator, job_outcome=job_outcome).start()
        started.append(srv)
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig(tmp_path, srv.url, context)))
        return srv

    yield start
    for srv in started:
        srv.stop()


@pytest.fixture
def spec_file(tmp_path):
    def write(*, name="byo-deepfm", context="ctx", namespace="ml-training", extra="", top="") -> str:
        text = SPEC.format(name=name, context=context, namespace=namespace,
                           extra=textwrap.indent(textwrap.dedent(extra).strip(), "  ") if extra else "",
                           top=textwrap.dedent(top).strip())
        path = tmp_path / f"{name}.yaml"
        path.write_text(text)
        return str(path)
    return write


@pytest.fixture
def cli(capsys):
    """Run the CLI in-process (the stand-in is in this process): (exit code, stdout, stderr)."""
    from reclaunch.cli import main

    def run(*args: str) -> tuple[int, str, str]:
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        out = capsys.readouterr()
        return code, out.out, out.err
    return run
