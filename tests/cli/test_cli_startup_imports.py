"""What the CLI itself costs at start-up (issue 25): `reclaunch --help` reads no cloud registry,
`validate` and `plan` import no provider API (protocols, UpOptions, JobStatus) and no json
module they do not print with. A guard on the import set, not a timed test; numbers:
bench/bench_startup.py. The --cloud choices, read late, stay what click.Choice showed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
PROVIDER_API = ("reclaunch.providers.api", "reclaunch.providers.options", "reclaunch.runtime.states")


def loaded(*argv: str) -> set[str]:
    code = ("import sys\nfrom reclaunch.cli import main\ntry:\n    main(%r)\n"
            "except SystemExit:\n    pass\nmods = sorted(sys.modules)\nimport json\n"
            "sys.stderr.write('\\nMODULES ' + json.dumps(mods))" % (list(argv),))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    tail = out.stderr.rsplit("MODULES ", 1)
    assert len(tail) == 2, out.stderr
    return set(json.loads(tail[1]))


def test_help_reads_no_registry_and_no_json():
    mods = loaded("--help")
    assert "reclaunch.cli" in mods                   # the guard sees the path
    assert not {"reclaunch.clouds", "reclaunch.providers", "reclaunch.catalog", "json"} & mods
    assert not [m for m in mods if m.endswith(".facts")]


def test_validate_imports_no_provider_module_nor_json():
    mods = loaded("validate", "examples/aws-deepfm-p4d.yaml")
    assert "reclaunch.providers.aws.facts" in mods   # the facts files (their packages are empty)
    assert not {"reclaunch.providers.kubecloud", "json", *PROVIDER_API} & mods
    assert not [m for m in mods if m.endswith(".provider")]


def test_plan_imports_no_provider_api():
    mods = loaded("plan", "examples/aws-deepfm-p4d.yaml", "--json")
    assert "reclaunch.providers" in mods             # planning_catalog
    assert not set(PROVIDER_API) & mods


def test_the_provider_api_is_importable_from_the_package():
    import reclaunch.providers as p
    from reclaunch.providers import Adoptable, JobStatus, ListsClusters, Preemptible, Provider, UpOptions
    from reclaunch.providers.api import Provider as P2
    from reclaunch.providers.options import UpOptions as U2

    assert Provider is P2 and UpOptions is U2 and JobStatus.__name__ == "JobStatus"
    assert all(getattr(c, "_is_runtime_protocol", False) for c in (Adoptable, ListsClusters, Preemptible))
    try:
        p.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("unknown names must stay AttributeError")


def test_cloud_choices_read_late_match_click_choice(monkeypatch):
    from reclaunch import clouds
    from reclaunch.cli import cli
    from reclaunch.cli.base import KUBE_CHOICE, SWEPT_CHOICE

    assert KUBE_CHOICE.choices == clouds.kube_names() == ("aws", "azure", "gcp")
    assert SWEPT_CHOICE.choices == clouds.kube_names() + clouds.own_names()
    runner = CliRunner()
    helped = runner.invoke(cli, ["catalog", "--help"])
    assert "--cloud [aws|azure|gcp]" in helped.output
    bad = runner.invoke(cli, ["catalog", "--cloud", "nope"])
    plain = click.Choice(clouds.kube_names())
    assert bad.exit_code == 2
    assert plain.get_invalid_choice_message("nope", None) in bad.output
    assert "'nope' is not one of 'aws', 'azure', 'gcp'" in bad.output
    gc = runner.invoke(cli, ["gc", "--help"])
    assert "[aws|azure|gcp|kubernetes]" in gc.output
    ok = runner.invoke(cli, ["catalog", "--cloud", "gcp", "--json"])
    assert ok.exit_code == 0 and {r["cloud"] for r in json.loads(ok.output)} == {"gcp"}


def test_a_plugin_that_does_not_import_is_one_line_and_help_still_works():
    """RECLAUNCH_CLOUDS naming no module: the registry is read late now, so `--help` works and
    the verbs that read it say which setting is wrong (exit 2), not an internal error."""
    import os

    env = {**os.environ, "RECLAUNCH_CLOUDS": "no_such_cloud_pkg.facts", "PYTHONPATH": str(ROOT)}
    run = lambda *a: subprocess.run([sys.executable, "-m", "reclaunch", *a], capture_output=True,  # noqa: E731
                                    text=True, timeout=120, cwd=ROOT, env=env)
    assert run("--help").returncode == 0
    bad = run("validate", "examples/aws-deepfm-p4d.yaml")
    assert bad.returncode == 2, bad.stderr
    assert bad.stderr.strip().splitlines() == [
        "error: RECLAUNCH_CLOUDS: cannot import 'no_such_cloud_pkg.facts' (No module named "
        "'no_such_cloud_pkg') (put its package on PYTHONPATH, or unset the variable)"]


def test_pins_are_read_by_the_modules_that_own_them():
    """envpins names each pin so its module loads only when it is set; the names are theirs."""
    from reclaunch import host
    from reclaunch.cli.envpins import READERS
    from reclaunch.runtime import backend

    assert set(READERS) == {host.MEMORY_VAR, host.CPUS_VAR, host.TODAY_VAR, host.LOAD_VAR,
                            backend.SECRETS_ENV}
    for module, name, _ in READERS.values():
        assert callable(getattr(sys.modules[module], name))


def test_a_moved_home_alone_imports_no_pin_reader(tmp_path, monkeypatch):
    monkeypatch.setenv("RECLAUNCH_HOME", str(tmp_path))
    for var in ("RECLAUNCH_HOST_MEMORY", "RECLAUNCH_HOST_CPUS", "RECLAUNCH_TODAY",
                "RECLAUNCH_HOST_LOAD", "RECLAUNCH_SECRETS_PROVIDER"):
        monkeypatch.delenv(var, raising=False)
    mods = loaded("validate", "examples/aws-deepfm-p4d.yaml")
    assert "reclaunch.runtime.backend" not in mods
    monkeypatch.setenv("RECLAUNCH_HOST_MEMORY", "lots")
    out = subprocess.run([sys.executable, "-m", "reclaunch", "validate", "examples/aws-deepfm-p4d.yaml"],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 2 and "RECLAUNCH_HOST_MEMORY" in out.stderr, out.stderr
