"""An installed wheel (not only the editable checkout) must carry every data file it needs."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile

import pytest

from tests.conftest import ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    # setuptools reuses ./build: a stale copy there once hid missing package data.
    shutil.rmtree(ROOT / "build", ignore_errors=True)
    proc = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return next(out.glob("reclaunch-*.whl"))


def test_wheel_carries_data_files(wheel) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("reclaunch/catalog/data/instances.csv", "reclaunch/catalog/data/gpus.csv",
                   "reclaunch/catalog/data/meta.yaml", "reclaunch/planner/data/planner.yaml",
                   "reclaunch/_k8s/addons.yaml", "reclaunch/runtime/diagnose_rules.yaml",
                   "stacks/aws/program.py", "stacks/gcp/Pulumi.yaml"):
        assert needed in names
    # Every data file in the source tree of the package ships.
    for path in (ROOT / "reclaunch").rglob("*"):
        if path.suffix in {".csv", ".yaml", ".json"}:
            assert str(path.relative_to(ROOT)) in names, path


def test_wheel_runs_from_itself(wheel, tmp_path) -> None:
    # Import from the wheel file alone (zipimport), outside the checkout.
    code = ("import reclaunch, sys; from reclaunch.catalog import bundled_catalog; "
            "from reclaunch.spec import json_schema; "
            "assert reclaunch.__file__.startswith(sys.argv[1]), reclaunch.__file__; "
            "print(len(bundled_catalog().offers), json_schema()['title'])")
    proc = subprocess.run([sys.executable, "-c", code, str(wheel)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, env={"PYTHONPATH": str(wheel), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert "reclaunch cluster.yaml" in proc.stdout


def test_an_installed_wheel_finds_its_reference_trainer(wheel, tmp_path) -> None:
    # `reclaunch calibrate` of an installed package (issue 41 item 12): unpacked as pip does.
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    assert (site / "reclaunch" / "_trainer" / "train.py").is_file()
    code = ("from reclaunch.runtime.calibrate import trainer_path; p = trainer_path(); "
            "assert p.is_file(), p; print(p)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(site / "reclaunch" / "_trainer" / "train.py")
