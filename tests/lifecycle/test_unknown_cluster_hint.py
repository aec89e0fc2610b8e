"""An unknown cluster name: one error whose hint says each way out once (status and down
retried the lookup and appended the same hint twice)."""

from __future__ import annotations

import pytest

from reclaunch.errors import ReclaunchError


@pytest.mark.parametrize("verb", ["status", "down", "logs"])
def test_unknown_cluster_hint_is_said_once(verb):
    from reclaunch.providers import verbs

    call = {"status": lambda: verbs.cli_status("nosuch"),
            "down": lambda: verbs.cli_down("nosuch", yes=True),
            "logs": lambda: verbs.provider_for("nosuch")}[verb]
    with pytest.raises(ReclaunchError) as err:
        call()
    hint = err.value.hint or ""
    assert hint.count("rebuilds its record") == 1, hint
    assert hint.count("reclaunch gc --cloud") == 1, hint
