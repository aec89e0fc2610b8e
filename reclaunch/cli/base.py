"""The click group and what every verb shares: consoles, strict JSON, loading a spec."""

from __future__ import annotations

from typing import Callable

import click


class CloudChoice(click.Choice):
    """click.Choice over registered clouds, read from the registry (reclaunch/clouds.py) the
    first time click asks (`--help` of the verb, parsing its option), not when the CLI is
    imported: the registry reads every cloud's facts file, which `reclaunch --help` and the
    verbs without the option never need. Same help text, values and errors as
    click.Choice(names()); a cloud registered through RECLAUNCH_CLOUDS is a choice too."""

    def __init__(self, names: Callable[[], tuple[str, ...]]) -> None:
        self._names = names        # click.Choice.__init__ would read the names now
        self.case_sensitive = True

    @property
    def choices(self) -> tuple[str, ...]:  # type: ignore[override]
        return tuple(self._names())


def _kube_clouds() -> tuple[str, ...]:
    from reclaunch import clouds   # clouds with a stack, prices and a sweeper
    return clouds.kube_names()


def _swept_clouds() -> tuple[str, ...]:
    from reclaunch import clouds   # what `gc` sweeps: the clouds, and clusters you bring
    return clouds.kube_names() + clouds.own_names()


KUBE_CHOICE = CloudChoice(_kube_clouds)
SWEPT_CHOICE = CloudChoice(_swept_clouds)


def _console(stderr: bool = False, wide: bool = False):
    """A rich console; `wide`: tables at their natural width, whatever the terminal's (--wide)."""
    from reclaunch.ui.console import console
    return console(stderr, **({"width": 1000} if wide else {}))


def _emit_json(obj, echo: Callable[[str], None] = click.echo) -> None:
    """Strict JSON: a NaN or inf that got this far becomes null (Python would print `NaN`,
    which no JSON parser accepts). `echo`: exits.echo_quietly for a verb whose exit code is
    decided after printing (plan)."""
    import json   # not on the start-up path of the verbs that print no JSON

    echo(json.dumps(_finite(obj), indent=2, sort_keys=False, default=str, allow_nan=False))


def _finite(obj):
    import math

    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def _load(file: str):
    from reclaunch.catalog import load_catalog
    from reclaunch.spec import load_spec

    from reclaunch.providers import planning_catalog

    catalog = load_catalog()
    spec = load_spec(file, catalog)
    return spec, planning_catalog(spec, catalog)   # cloud: kubernetes: the cluster's nodes


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="reclaunch", prog_name="reclaunch")
def cli() -> None:
    """Plan, launch and tear down recommender-model training on GPU clusters.

    \b
    reclaunch plan examples/aws-deepfm-p4d.yaml      what it costs, whether it fits
    reclaunch up examples/local-deepfm.yaml          run it (cloud: local needs no account)
    reclaunch down NAME                              back to zero spend
    """
