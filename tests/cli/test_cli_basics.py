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
    res = CliRunner().invoke(cli, ["up", "examples/aws-deepfm-p4d.yaml", "--dry-run", "-o", "yaml"])
    assert res.exit_code == 0, res.output
    docs = [d for d in yaml.safe_load_all(res.output) if d]
    kinds = [d["kind"] for d in docs]
    assert kinds[0] == "Namespace" and kinds[-1] == "PyTorchJob"
    job = docs[-1]
    assert "elasticPolicy" in job["spec"]          # the example is spot: elastic as planned
    assert not (tmp_path / "home" / "journal").exists()   # nothing recorded, nothing created


def test_up_dry_run_starts_with_the_summary_then_the_objects(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from reclaunch.cli import cli
    monkeypatch.setenv("RECLAUNCH_HOME", str(tmp_path / "home"))
    res = CliRunner().invoke(cli, ["up", "examples/aws-deepfm-p4d.yaml", "--dry-run"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0] == "reclaunch up --dry-run: nothing created."
    assert lines[1].startswith("plan: criteo-deepfm: 4 x p4d.24xlarge (aws us-east-1)")
    cost = next(ln for ln in lines[2:6] if ln.startswith("cost: $"))
    assert cost.count("[P10-P90 $") == 2       # the plan's range beside both figures
    assert "[P10-P90 " in next(ln for ln in lines[2:6] if ln.startswith("duration: "))
    # What needs a person (quota codes), then the objects, no YAML
    person = lines.index("what needs a person first (reclaunch cannot do these):")
    assert "L-417A185B" in res.output[res.output.index(lines[person]):]
    objs = next(i for i, ln in enumerate(lines) if ln.startswith("Kubernetes objects"))
    assert person < objs and "  PyTorchJob reclaunch/criteo-deepfm (applied last)" in lines
    assert "apiVersion:" not in res.output and len(lines) < 40
    out = tmp_path / "yaml"
    res = CliRunner().invoke(cli, ["up", "examples/aws-deepfm-p4d.yaml", "--dry-run", "--out", str(out)])
    assert res.exit_code == 0 and len(list(out.glob("*.yaml"))) == 5
    assert not (tmp_path / "home" / "journal").exists()


def test_local_dry_run_shows_the_torchrun_commands(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from reclaunch.cli import cli
    monkeypatch.setenv("RECLAUNCH_HOME", str(tmp_path / "home"))
    res = CliRunner().invoke(cli, ["up", "examples/local-deepfm.yaml", "--dry-run"])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("reclaunch up --dry-run: nothing created.\nplan: local-deepfm: 2 simulated")
    assert "CPU process(es)" in res.output and "PyTorchJob" not in res.output
    nodes = [ln for ln in res.output.splitlines() if ln.startswith("  node ")]
    assert len(nodes) == 2 and all("torchrun --nnodes=" in n and "examples/trainer/train.py" in n for n in nodes)
    assert not (tmp_path / "home" / "local").exists()


def test_local_dry_run_command_is_the_supervisors(tmp_path):
    # providers/local/dryrun.agent_command mirrors Supervisor.agent_cmd flag for flag.
    from reclaunch.catalog import load_catalog
    from reclaunch.planner import make_plan
    from reclaunch.providers.local.dryrun import agent_command
    from reclaunch.providers.local.supervisor import Supervisor
    from reclaunch.spec import load_spec

    plan = make_plan(load_spec("examples/local-deepfm.yaml"), load_catalog())
    sup = Supervisor.__new__(Supervisor)
    sup.root, sup.name, sup.port = tmp_path, plan.name, 4242
    from reclaunch.providers.local.provider import entrypoint
    sup.launch = {"join_timeout": 300, "last_call_timeout": 10, "min_nodes": plan.min_nodes,
                  "max_nodes": plan.max_nodes, "nproc": plan.gpus_per_node,
                  "max_restarts": plan.spec.job.max_restarts,
                  "entry": entrypoint(plan.spec.job.command, plan.spec.job.args)}
    real = sup.agent_cmd(0)[3:]   # after `python -m torch.distributed.run`
    shown = agent_command(plan, 0)[1:]
    norm = lambda args: [a.replace("4242", "<port>").replace(str(tmp_path), "<run dir>") for a in args]  # noqa: E731
    assert norm(real) == norm(shown)


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
