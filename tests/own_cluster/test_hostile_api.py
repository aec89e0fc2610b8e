"""Issue 41 items 2 and 10: a Kubernetes API that hangs, trickles, or lies.

Every call has a connect timeout and a total deadline (the read timeout restarts with every
byte); `status` of many clusters shows the others when one hangs; an answer that is not JSON,
too deep, too big, or full of impossible values is one error line (or that value ignored),
never a traceback, a hang or a MemoryError; a kubeconfig alias bomb is refused. Real sockets
on 127.0.0.1, every wait bounded.
"""

from __future__ import annotations

import json
import time

import pytest
import yaml

from reclaunch.errors import ProviderError
from reclaunch.runtime.kube import Kube
from tests.own_cluster.standin import FIXTURES
from tests.recorded_server import RecordedServer
from tests.slow_servers import HangingServer, TricklingServer


@pytest.fixture
def deadline(monkeypatch):
    """A 2 s call deadline under read timeouts far longer: only the deadline can end a call."""
    monkeypatch.setenv("RECLAUNCH_SDK_CONNECT_TIMEOUT", "5")
    monkeypatch.setenv("RECLAUNCH_SDK_READ_TIMEOUT", "30")
    monkeypatch.setenv("RECLAUNCH_SDK_CALL_TIMEOUT", "2")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("server", [HangingServer, lambda: TricklingServer(head=True),
                                    lambda: TricklingServer(head=False)],
                         ids=["hang", "trickle-headers", "trickle-body"])
def test_every_call_ends_at_the_deadline(deadline, server):
    with server() as srv:
        kube = Kube.from_host(srv.url, token="t")
        t0 = time.monotonic()
        with pytest.raises(ProviderError, match="no complete answer within 2 s"):
            kube.job("ns", "job")
        with pytest.raises(ProviderError, match="no complete answer within 2 s"):
            kube.nodes()
        assert time.monotonic() - t0 < 15


@pytest.mark.timeout(120)
def test_status_of_many_clusters_shows_the_others_when_one_hangs(standin, spec_file, cli, tmp_path,
                                                                 monkeypatch, deadline):
    # 8 s: ample for the stand-in's answers on a loaded machine; the trickle never completes.
    monkeypatch.setenv("RECLAUNCH_SDK_CALL_TIMEOUT", "8")
    from reclaunch.providers.kubernetes.infra import read_state, write_state
    from tests.own_cluster.test_launch import _up

    srv = standin("onprem")
    _up(spec_file(name="good-one"))
    _up(spec_file(name="slow-one"))
    with TricklingServer(head=False) as slow:
        cfg = yaml.safe_load(open(tmp_path / "kubeconfig"))
        cfg["clusters"].append({"name": "slow", "cluster": {"server": slow.url}})
        cfg["contexts"].append({"name": "slow", "context": {"cluster": "slow", "user": "ci"}})
        (tmp_path / "kubeconfig").write_text(yaml.safe_dump(cfg))
        write_state("slow-one", {**read_state("slow-one"), "context": "slow"})
        t0 = time.monotonic()
        code, out, err = cli("status", "--json")
        took = time.monotonic() - t0
    assert code == 0, err
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["good-one"]["state"] != "Unknown", rows["good-one"]
    assert rows["slow-one"]["state"] == "Unknown" and "no complete answer" in rows["slow-one"]["message"]
    assert took < 60, f"status took {took:.0f} s"
    assert srv.url   # the stand-in answered the good one throughout


def _serve(body, status: int = 200) -> RecordedServer:
    srv = RecordedServer().start()
    srv.add("GET", "/api/v1/nodes", status=status, body=body)
    srv.add("GET", "/api/v1/pods", body={"items": []})
    return srv


@pytest.mark.timeout(60)
@pytest.mark.parametrize("body, says", [
    (b"\xff\xfe{\x00\x80not utf-8", "not JSON"),
    (b"[" * 100_000 + b"]" * 100_000, "not JSON"),
    (b'{"items": [' + b'{"metadata": {"name": "n"}},' * 2_000_000 + b'{}]}', "over 32 MiB"),
    (b'{"items": {"metadata": 1}}', "not a list"),
], ids=["not-utf8", "100k-deep", "60MB", "not-a-list"])
def test_an_answer_that_is_no_kubernetes_list_is_one_error(body, says):
    from reclaunch.runtime.kube_nodes import read_nodes

    srv = _serve(body)
    try:
        with pytest.raises(ProviderError, match=says) as err:
            read_nodes(Kube.from_host(srv.url, token="t"))
        assert len(str(err.value)) < 300
    finally:
        srv.stop()


def test_impossible_values_and_copies_are_not_capacity():
    from reclaunch.runtime.kube_nodes import read_nodes

    nodes = json.loads((FIXTURES / "onprem.json").read_text())["nodes"]["items"]
    gpu = next(n for n in nodes if "nvidia.com/gpu" in (n["status"].get("allocatable") or {}))
    nan = json.loads(json.dumps(gpu))
    nan["metadata"]["name"] = "liar"
    nan["status"]["allocatable"]["nvidia.com/gpu"] = "NaN"
    huge = json.loads(json.dumps(gpu))
    huge["metadata"]["name"] = "boaster"
    huge["status"]["allocatable"]["memory"] = "1e999999999"
    junk = [None, 7, {"metadata": "x"}, {"metadata": {"name": 5}}]
    srv = _serve({"items": [gpu] * 5000 + [nan, huge] + junk})
    try:
        got = read_nodes(Kube.from_host(srv.url, token="t"))
    finally:
        srv.stop()
    names = [n.name for n in got]
    assert names.count(gpu["metadata"]["name"]) == 1 and len(names) == 3
    by = {n.name: n for n in got}
    assert not by["liar"].ready and "nvidia.com/gpu" not in by["liar"].allocatable
    assert not by["boaster"].ready and "memory" not in by["boaster"].allocatable


@pytest.mark.timeout(60)
def test_a_kubeconfig_alias_bomb_is_refused_at_once(tmp_path, monkeypatch):
    from reclaunch.providers.kubernetes.connect import connect

    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    lines += ["apiVersion: v1", "kind: Config", "current-context: ctx",
              "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]",
              "contexts: [{name: ctx, context: {cluster: c, user: u}}]",
              "users: [{name: u, user: {token: t, laughs: *a8}}]"]
    (tmp_path / "bomb").write_text("\n".join(lines) + "\n")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "bomb"))
    t0 = time.monotonic()
    with pytest.raises(ProviderError, match="alias"):
        connect(None)
    assert time.monotonic() - t0 < 10


def test_a_job_that_is_no_object_is_one_error_and_odd_conditions_are_skipped():
    from reclaunch.runtime.kube import job_state

    srv = RecordedServer().start()
    base = "/apis/kubeflow.org/v1/namespaces/ns/pytorchjobs"
    srv.add("GET", f"{base}/a", body=[1, 2])
    srv.add("GET", f"{base}/b", body={"metadata": {"name": "b"}, "status": {"conditions": [
        None, "x", {"type": "Running", "status": "True", "lastTransitionTime": 5}]}})
    try:
        kube = Kube.from_host(srv.url, token="t")
        with pytest.raises(ProviderError, match="not an object"):
            kube.job("ns", "a")
        assert job_state(kube.job("ns", "b")) == "Running"
        assert job_state({"metadata": "x", "status": []}) == "Unknown"
    finally:
        srv.stop()
