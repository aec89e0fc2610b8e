"""Issue 41 item 8: text a cluster or a cloud hands us (a node-pool label, a resource's tags)
is shown as text in `up` and `gc`: rich markup stays literal, no live link, no escape."""

from __future__ import annotations

from reclaunch.runtime.sweep import Orphan, SweepReport

LINK = "[link=https://evil.example/x]pool[/link]"


def test_a_node_pool_label_is_text_in_kubernetes_up(standin, spec_file, cli):
    srv = standin("onprem")
    nodes = srv._routes[0].responses[0]["body"]["items"]
    for n in nodes:
        if "nvidia.com/gpu.product" in n["metadata"]["labels"]:
            n["metadata"]["labels"]["agentpool"] = LINK
    code, out, err = cli("up", spec_file(), "--yes", "--detach")
    assert "nodes of group [link=https://evil.example/x]pool[/link]" in err, err
    assert "\x1b]8" not in out + err


def test_cloud_tags_are_text_in_the_gc_table(monkeypatch, cli):
    evil = Orphan(cloud="aws", region="us-east-1", kind="volume", id="vol-1",
                  name=LINK, cluster="x\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\",
                  hourly_usd=0.1, tags={"reclaunch-managed": "true"})
    report = SweepReport(cloud="aws", region="us-east-1", cluster=None, found=[evil])
    monkeypatch.setattr("reclaunch.providers.gc", lambda *a, **k: report)
    monkeypatch.setattr("reclaunch.cli.cluster._gc_region", lambda cloud, region: None)
    monkeypatch.setenv("FORCE_COLOR", "1")
    code, out, err = cli("gc", "--cloud", "aws", "--region", "us-east-1")
    assert LINK in out and "x\\x1b]8;;https://evil.example" in out, out
    assert "\x1b]8" not in out and "\x1b" not in out.replace("\x1b[", ""), repr(out)
