"""The cloud registry's facts agree with the data files that name them (issue 23)."""

from __future__ import annotations

from reclaunch import clouds


def test_every_claimed_addon_exists():
    from stacks import common

    names = {a["name"] for a in common.load_addons()}
    claimed = {a for f in clouds.all_facts() for a in f.addons}
    claimed |= {a for fab in clouds.fabrics().values() for a in fab.addons}
    assert claimed and claimed <= names, claimed - names


def test_catalog_fabrics_are_their_clouds_fabrics():
    from reclaunch.catalog import bundled_catalog

    wrong = {(o.cloud, o.fabric) for o in bundled_catalog().offers
             if o.fabric not in {fab.name for fab in clouds.get(o.cloud).fabrics}}
    assert not wrong


def test_every_profile_serves_a_cloud_and_every_fabric_has_a_profile():
    from reclaunch.fabric import profiles

    assert all(p.clouds for p in profiles()), [p.name for p in profiles() if not p.clouds]
    assert set(clouds.fabrics()) == {p.fabric for p in profiles()}


def test_facts_load_without_their_provider_package():
    """Reading the registry imports each cloud's facts.py and the empty packages above it;
    no provider.py (SDKs, runtime) runs."""
    import subprocess
    import sys

    code = ("import sys; from reclaunch import clouds; clouds.names(); "
            "print(sorted(m for m in sys.modules if m.startswith('reclaunch')))")
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, cwd=root)
    loaded = eval(out.stdout)
    assert loaded == sorted(["reclaunch", "reclaunch.clouds", "reclaunch.errors",
                             "reclaunch.providers"] +
                            [f"reclaunch.providers.{c}{part}" for c in clouds.BUILTIN
                             for part in ("", ".facts")]), loaded


def test_cloud_packages_show_their_layers():
    """providers/<cloud>/: facts.py (data), provider.py (behaviour), an empty __init__.py."""
    for f in clouds.all_facts():
        assert (f.home / "__init__.py").read_text() == "", f.name
        assert (f.home / "facts.py").is_file() and (f.home / "provider.py").is_file(), f.name
        assert f.provider == f"reclaunch.providers.{f.name}.provider"
