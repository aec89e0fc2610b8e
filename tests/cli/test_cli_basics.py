from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("pulumi", "pulumi_aws", "pulumi_gcp", "pulumi_azure_native", "pulumi_kubernetes", "boto3",
         "botocore", "kubernetes", "google.cloud", "google.cloud.compute_v1", "azure", "azure.mgmt.compute",
         "torch", "rich", "jsonschema")


def run(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reclaunch", *args], capture_output=True, text=True,
                          timeout=120, **kw)


def test_import_cli_is_light() -> None:
    code = ("import sys, reclaunch.cli; heavy = %r; "
            "print(' '.join(m for m in heavy if m in sys.modules))" % (HEAVY,))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"import reclaunch.cli loaded: {out.stdout}"


def test_validate_does_not_load_heavy_modules(example_paths) -> None:
    code = ("import sys\nfrom reclaunch.cli import main\ntry:\n    main(['validate', %r])\n"
            "except SystemExit:\n    pass\nprint('LOADED', ' '.join(m for m in %r if m in sys.modules))"
            % (str(example_paths[0]), HEAVY[:-2]))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "LOADED \n" in out.stdout or out.stdout.rstrip().endswith("LOADED"), out.stdout


def test_help_on_every_verb() -> None:
    from reclaunch.cli import cli

    for name, cmd in cli.commands.items():
        proc = run(name, "--help")
        assert proc.returncode == 0 and "Usage" in proc.stdout, name
        sub = getattr(cmd, "commands", {})
        for subname in sub:
            assert run(name, subname, "--help").returncode == 0


def test_validate_examples_exit_0(example_paths) -> None:
    proc = run("validate", *map(str, example_paths))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count(": ok (") == len(example_paths)


def test_catalog_json_lists_every_instance_with_dates() -> None:
    proc = run("catalog", "--json")
    rows = json.loads(proc.stdout)
    assert len(rows) >= 20
    assert all(r["price_as_of"] and r["source"] for r in rows)
    assert any(r["stale"] for r in rows) and not all(r["stale"] for r in rows)


@pytest.mark.parametrize("args", [["catalog", "--cloud", "gcp"], ["catalog", "--gpu", "A100"]])
def test_catalog_table(args) -> None:
    proc = run(*args, env={**__import__("os").environ, "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    assert "catalog" in proc.stdout


def test_bad_arguments_exit_2() -> None:
    assert run("catalog", "--cloud", "ibm").returncode == 2
    assert run("nonsense").returncode == 2
    proc = run("catalog", "--gpu", "B999")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_schema_emits_json() -> None:
    proc = run("schema")
    assert json.loads(proc.stdout)["title"] == "reclaunch cluster.yaml"


def test_up_dry_run_prints_the_launch_and_creates_nothing(tmp_path, monkeypatch):
    import yaml
    from click.testing import CliRunner

    from reclaunch.cli import cli
    monkeypatch.setenv("RECLAUNCH_HOME", str(tmp_path / "home"))
    res = CliRunner().invoke(cli, ["up", "examples/aws-deepfm-p4d.yaml", "--dry-run"])
    assert res.exit_code == 0, res.output
    docs = [d for d in yaml.safe_load_all(res.output) if d]
    kinds = [d["kind"] for d in docs]
    assert kinds[0] == "Namespace" and kinds[-1] == "PyTorchJob"
    job = docs[-1]
    assert "elasticPolicy" in job["spec"]          # the example is spot: elastic as planned
    assert not (tmp_path / "home" / "journal").exists()   # nothing recorded, nothing created


def test_sdk_deprecation_notices_do_not_bury_our_one_line(monkeypatch):
    """google.api_core warns per command once its support for the running Python ends (a
    date it picks: with the clock a year ahead, `gc --cloud gcp` printed 5 warnings before
    its one error line). Third-party notices are hidden; ours are not; RECLAUNCH_DEBUG shows all."""
    import warnings

    from reclaunch.cli.exits import quiet_sdk_warnings

    def seen(module: str, debug: bool = False) -> bool:
        if debug:
            monkeypatch.setenv("RECLAUNCH_DEBUG", "1")
        else:
            monkeypatch.delenv("RECLAUNCH_DEBUG", raising=False)
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            quiet_sdk_warnings()
            warnings.warn_explicit("old python", FutureWarning, "x.py", 1, module=module)
        return bool(got)

    assert not seen("google.api_core._python_version_support")
    assert seen("reclaunch.planner.core")
    assert seen("google.api_core._python_version_support", debug=True)
