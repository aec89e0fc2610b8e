"""storage.size is priced as what the service creates (its minimum and steps), and the stacks
create exactly that (issue 25: 1200 was priced as 1200 bytes while the stack made 1200 GiB)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from reclaunch.planner.storage_size import billed_gib, rounding_note
from stacks.azure.storage import amlfs_capacity_tib

GIB = 2**30


def fake_plan(size_gib: float):
    return SimpleNamespace(spec=SimpleNamespace(storage=SimpleNamespace(size=int(size_gib * GIB))))


@pytest.mark.parametrize("gib, want", [(100, 1200), (1200, 1200), (1.2 * 1024, 1200), (1300, 2400),
                                       (1536, 2400), (2400, 2400), (2.4 * 1024, 2400),
                                       (2500, 4800), (10000, 12000)])
def test_fsx_lustre_sells_1_2_tib_then_2_4_tib_steps(gib: float, want: int) -> None:
    # AWS's "1.2 TiB" is 1200 GiB: "1.2TiB" in a spec buys that, not the next step.
    # stacks/aws/program.py calls the same billed_gib for the file system it creates.
    assert billed_gib("fsx-lustre", int(gib * GIB)) == want


@pytest.mark.parametrize("gib, want", [(1, 1024), (1024, 1024), (1025, 1280), (5000, 5120),
                                       (9984, 9984), (11 * 1024, 12800), (102400, 102400)])
def test_filestore_is_priced_as_the_gcp_stack_creates_it(gib: float, want: int) -> None:
    # Past 9.75 TiB Filestore ZONAL sells 2.5 TiB steps: 11 TiB is created (and billed) as
    # 12.5 TiB, which the plan priced as 11 TiB while the steps lived in two tables (issue 40).
    from stacks.gcp.program import filestore_gib

    plan = fake_plan(gib)
    plan.spec.storage.kind = "filestore"
    assert billed_gib("filestore", int(gib * GIB)) == filestore_gib(plan) == want


@pytest.mark.parametrize("gib", [1, 8192, 9000, 100_000])
def test_azure_lustre_matches_the_azure_stack(gib: float) -> None:
    tib, _ = amlfs_capacity_tib(int(gib * GIB))
    assert billed_gib("azure-lustre", int(gib * GIB)) == tib * 1024


def test_azure_files_minimum_and_efs_by_use() -> None:
    assert billed_gib("azure-files", 10 * GIB) == 100    # premium shares start at 100 GiB
    assert billed_gib("efs", 50 * GIB) == 50        # elastic: billed for what is stored
    assert billed_gib("hostpath", 50 * GIB) == 0 and billed_gib("none", None) == 0


def test_the_plan_prices_the_rounded_size_and_says_so() -> None:
    from reclaunch.catalog import load_catalog
    from reclaunch.planner import make_plan
    from reclaunch.planner.cost import line_items
    from reclaunch.spec import parse_spec
    from tests.conftest import EXAMPLES

    text = (EXAMPLES / "aws-deepfm-p4d.yaml").read_text()
    bare = parse_spec(text.replace("size: 2.4TiB", "size: 1200"), "c.yaml")
    unit = parse_spec(text.replace("size: 2.4TiB", "size: 1TiB"), "c.yaml")
    _, st_bare = line_items(bare, 730.0)
    _, st_unit = line_items(unit, 730.0)
    # 1200 GiB at 0.145 USD/GiB-month for one month (planner.yaml), not 1200 bytes.
    assert st_bare == pytest.approx(1200 * 0.145, rel=1e-6) and st_unit == st_bare
    plan = make_plan(unit, load_catalog())
    assert any("becomes 1,200 GiB of fsx-lustre" in w for w in plan.warnings), plan.warnings
    assert rounding_note("fsx-lustre", 1200 * GIB) is None


def test_render_says_the_stack_creates_the_claim():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "reclaunch", "render", "examples/aws-deepfm-p4d.yaml"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "claimName: criteo-deepfm-data" in out.stdout
    assert "PersistentVolumeClaim criteo-deepfm-data (fsx-lustre), which `reclaunch up` creates" in out.stderr


def test_render_with_storage_writes_pv_and_pvc_for_an_existing_file_system(tmp_path):
    import subprocess
    import sys

    import yaml

    from tests.conftest import EXAMPLES

    spec = tmp_path / "c.yaml"
    spec.write_text((EXAMPLES / "aws-deepfm-p4d.yaml").read_text().replace(
        "  size: 2.4TiB", "  size: 2.4TiB\n  existing: fs-0123456789abcdef0/abcdef12"))
    out = subprocess.run([sys.executable, "-m", "reclaunch", "render", str(spec), "--with-storage"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    docs = [d for d in yaml.safe_load_all(out.stdout) if d]
    kinds = [d["kind"] for d in docs]
    assert kinds[:3] == ["Namespace", "PersistentVolume", "PersistentVolumeClaim"]
    pv, pvc = docs[1], docs[2]
    assert pv["spec"]["csi"]["volumeHandle"] == "fs-0123456789abcdef0"
    assert pv["spec"]["csi"]["volumeAttributes"]["dnsname"] == "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com"
    assert pvc["spec"]["volumeName"] == pv["metadata"]["name"] == "criteo-deepfm-data"
    assert "which `reclaunch up` creates" not in out.stderr
    # without storage.existing: exit 2, file:line and the form it takes
    bad = subprocess.run([sys.executable, "-m", "reclaunch", "render", str(EXAMPLES / "aws-deepfm-p4d.yaml"),
                          "--with-storage"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "aws-deepfm-p4d.yaml:13: render --with-storage needs storage.existing" in bad.stderr
