"""The `reclaunch` command's first lines: the console script ([project.scripts]) and
`python -m reclaunch` both start here, before click or any of our modules is imported."""

from __future__ import annotations

import gc
import sys

# Verbs that read files, compute and print, and end in well under a second with a bounded heap
# (`plan --compare --top 0` peaks at ~70 MiB with the collector on or off). Their start-up
# is mostly class creation (pydantic models, dataclasses, click commands): container objects by
# the thousand, which trigger collections that find no garbage: a sizeable share of `plan`'s
# CPU time. Every other verb (up, status --watch, logs -f, diagnose of a large log,
# calibrate, preview, gc) runs long or big and keeps the collector.
ONE_SHOT = frozenset({"validate", "plan", "schema", "render"})


def _verb(argv: list[str]) -> str | None:
    """The subcommand: the group takes no option with a value (-h, --help, --version only)."""
    return next((a for a in argv if not a.startswith("-")), None)


def main(argv: list[str] | None = None) -> None:
    paused = gc.isenabled() and _verb(sys.argv[1:] if argv is None else argv) in ONE_SHOT
    if paused:
        gc.disable()
    try:
        from reclaunch.cli import main as cli_main

        cli_main(argv)
    finally:   # in-process callers (tests, embedding) get their collector back
        if paused:
            if argv is None:
                # The process's own command line (console script, `python -m reclaunch`): it
                # exits next, and the interpreter's exit runs full collections over every
                # object the start-up made (models, classes, modules) to find garbage the OS
                # takes back anyway.
                # Frozen objects are out of their reach; atexit handlers, the flush of stdout
                # and stderr and refcount finalization run as before.
                gc.freeze()
            gc.enable()


if __name__ == "__main__":  # pragma: no cover
    main()
