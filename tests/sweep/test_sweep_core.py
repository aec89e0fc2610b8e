"""Cloud-neutral sweep logic: retries, verification, ownership, registry, report, imports."""

from __future__ import annotations

import subprocess
import sys

import pytest

from reclaunch.errors import ProviderError, UsageError
from reclaunch.providers import gc
from reclaunch.runtime.sweep import Orphan, SweepReport, TransientError, is_ours, sweep


def tags(cluster: str) -> dict[str, str]:
    return {"reclaunch-managed": "true", "reclaunch-cluster": cluster}


class FakeSweeper:
    """In-memory cloud. `failures[id]`: a list of exceptions raised by successive deletes
    (then success), or one exception raised by every delete."""

    cloud, region = "fake", "r1"

    def __init__(self, orphans, failures=None):
        self.present = {o.id: o for o in orphans}
        self.failures = failures or {}
        self.deletes: list[str] = []

    def list(self, cluster=None):
        return [o for o in self.present.values() if is_ours(o.tags, cluster)]

    def tags(self, o):
        return self.present[o.id].tags if o.id in self.present else None

    def delete(self, o):
        self.deletes.append(o.id)
        queue = self.failures.get(o.id)
        if isinstance(queue, Exception):
            raise queue
        if queue:
            raise queue.pop(0)
        self.present.pop(o.id, None)

    def exists(self, o):
        return o.id in self.present


def orphan(id, cluster="a", rank=0, kind="instance", hourly=1.0):
    return Orphan("fake", "r1", kind, id, id, cluster, hourly, rank, {}, tags(cluster))


def test_transient_failure_twice_then_success(no_sleep):
    s = FakeSweeper([orphan("i-1")], {"i-1": [TransientError("throttled"),
                                              TransientError("throttled")]})
    report = sweep(s, "a", delete=True, sleep=no_sleep, backoff=1.0)

    assert s.deletes == ["i-1"] * 3
    assert no_sleep.calls[:2] == [1.0, 2.0]  # exponential backoff
    assert [o.id for o in report.deleted] == ["i-1"]
    assert report.ok and not report.failed and not report.still_present


def test_delete_that_keeps_failing_is_failed_and_still_present(no_sleep):
    s = FakeSweeper([orphan("i-1"), orphan("sg-1", rank=9, kind="security-group")],
                    {"sg-1": TransientError("DependencyViolation: in use")})
    report = sweep(s, "a", delete=True, sleep=no_sleep, attempts=4)

    assert s.deletes.count("sg-1") == 4
    assert [f.orphan.id for f in report.failed] == ["sg-1"]
    assert "DependencyViolation" in report.failed[0].reason
    assert [o.id for o in report.still_present] == ["sg-1"]
    assert [o.id for o in report.deleted] == ["i-1"]
    assert not report.ok and report.exit_code == 1
    text = report.render()
    assert "FAILED" in text and "PRESENT" in text and "sg-1" in text


def test_permanent_error_is_not_retried(no_sleep):
    s = FakeSweeper([orphan("i-1")], {"i-1": ProviderError("AccessDenied")})
    report = sweep(s, "a", delete=True, sleep=no_sleep)
    assert s.deletes == ["i-1"] and report.failed and report.still_present


def test_delete_accepted_but_still_there_is_reported_present(no_sleep):
    s = FakeSweeper([orphan("i-1")])
    s.delete = lambda o: None  # the cloud accepted, nothing went away
    report = sweep(s, "a", delete=True, sleep=no_sleep, verify_attempts=3)
    assert [o.id for o in report.still_present] == ["i-1"] and not report.deleted
    assert len(no_sleep.calls) == 2


def test_order_and_ownership(no_sleep):
    s = FakeSweeper([orphan("sg", rank=9), orphan("fleet", rank=3), orphan("i", rank=4),
                     orphan("b-i", cluster="b"),
                     Orphan("fake", "r1", "instance", "untagged", "", "", 1.0, 0, {}, {}),
                     Orphan("fake", "r1", "instance", "half", "", "a", 1.0, 0, {},
                            {"reclaunch-cluster": "a"})])
    s.list = lambda cluster=None: list(s.present.values())  # a sweeper that forgets to filter
    sweep(s, "a", delete=True, sleep=no_sleep)
    assert s.deletes == ["fleet", "i", "sg"]
    assert {"b-i", "untagged", "half"} <= set(s.present)


def test_is_ours():
    assert is_ours(tags("a")) and is_ours(tags("a"), "a")
    assert not is_ours(tags("a"), "b")
    assert not is_ours({"reclaunch-cluster": "a"}) and not is_ours(None)
    assert not is_ours({"reclaunch-managed": "false", "reclaunch-cluster": "a"})
    assert not is_ours({"reclaunch-managed": "true"})


def test_dry_run_report_shows_cost():
    s = FakeSweeper([orphan("i-1", hourly=21.9576), orphan("vol-1", kind="volume", hourly=None)])
    report = sweep(s, "a")
    text = report.render()
    assert not s.deletes and report.dry_run
    assert "~$21.96/h" in text and "?" in text and "--yes" in text
    assert isinstance(report, SweepReport) and report.exit_code == 0


def test_unknown_cloud_is_usage_error():
    with pytest.raises(UsageError, match="unknown cloud"):
        gc("openstack", "r1")


def test_import_pulls_no_cloud_sdk():
    code = ("import sys, reclaunch.runtime.sweep, reclaunch.providers.aws.sweep, "
            "reclaunch.providers.azure.sweep, reclaunch.providers.gcp.sweep\n"
            "bad = [m for m in sys.modules if m.split('.')[0] in "
            "('boto3', 'botocore', 'azure', 'google')]\n"
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)
