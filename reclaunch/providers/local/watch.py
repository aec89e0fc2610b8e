"""`reclaunch up` on cloud: local, watching: live steps, loss and samples/s from rank 0's log,
node events from state.json, and the final throughput."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from reclaunch.providers.local import proc as lp

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.providers import JobStatus, Provider


def watch(provider: "Provider", name: str, *, console: Any = None,
          timeout: float | None = None, poll: float = 0.5) -> "JobStatus":
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    console = console or Console()
    root = lp.cluster_dir(name)
    tail = lp.Tail()
    seen_preempt: dict[str, str] = {}
    deadline = time.monotonic() + timeout if timeout else None
    columns = (TextColumn("[bold]{task.description}"), BarColumn(),
               TextColumn("step {task.fields[step]}"),
               TextColumn("loss {task.fields[loss]}"), TextColumn("{task.fields[sps]} samples/s"),
               TimeElapsedColumn())
    launch = lp.read_json(root / "launch.json") or {}
    console.print(f"local cluster [bold]{name}[/]: {launch.get('nodes')} node(s) x {launch.get('nproc')} "
                  f"process(es), rendezvous 127.0.0.1:{(lp.read_json(root / 'state.json') or {}).get('port')}, "
                  f"logs in {root / 'nodes'}")
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task(name, total=None, loss="-", sps="-", step="-")
        total = None
        while True:
            for path in sorted((root / "nodes").glob("node-*.log")):
                tail.add(path)
            for _, line in tail.read():
                rank, text = lp.split_rank(line)
                ev = lp.parse_line(text) if rank == 0 else None
                if not ev:
                    continue
                if ev["kind"] == "start":
                    total = ev["steps"]
                    progress.update(task, total=total)
                    if ev["start_step"]:
                        progress.console.print(f"  resumed at step {ev['start_step']}")
                elif ev["kind"] in ("step", "done"):
                    loss = f"{ev['loss']:.4f}" if ev["loss"] is not None else "-"
                    progress.update(task, completed=ev["step"], loss=loss, sps=f"{ev['samples_per_s']:.0f}",
                                    step=f"{ev['step']}/{total or '?'}")
                    if ev["kind"] == "step":
                        progress.console.print(f"  step {ev['step']:>6}  loss {loss}  "
                                               f"{ev['samples_per_s']:.0f} samples/s")
                elif ev["kind"] == "sigterm":
                    progress.console.print(f"  checkpointed at step {ev['step']} on SIGTERM")
            state = lp.read_json(root / "state.json") or {}
            for rec in state.get("preemptions", []):
                if seen_preempt.get(rec["id"]) != rec["status"]:
                    seen_preempt[rec["id"]] = rec["status"]
                    progress.console.print(f"  [yellow]node {rec['node']}: spot reclaim {rec['status']}[/]")
            if not root.exists():   # `reclaunch down` from another terminal
                return _removed(name, progress.console)
            st = provider.status(name)
            if st.state in lp.TERMINAL:
                break
            if deadline and time.monotonic() > deadline:
                progress.console.print(f"[yellow]still running; detaching (`reclaunch status {name}`)[/]")
                return st
            time.sleep(poll)
    done = (st.details.get("progress") or {}).get("done")
    result = st.details.get("result") or {}
    colour = "green" if st.state == "Succeeded" else "red"
    console.print(f"[{colour}]{name}: {st.state}[/] after {st.elapsed_seconds or 0:.0f} s")
    if done:
        console.print(f"final throughput: [bold]{done['samples_per_s']:.1f} samples/s[/] "
                      f"(world size {result.get('world_size', '?')}, {done['step']} steps, "
                      f"final loss {done['loss']})")
    if st.state == "Failed" and st.message:
        from reclaunch.ui.text import visible
        console.print(visible(st.message), markup=False)   # the job's last lines: text
    # teardown is the supervisor's; wait for it so the CLI returns with the ports freed
    end = time.monotonic() + 60
    while time.monotonic() < end:
        state = lp.read_json(root / "state.json") or {}
        if state.get("torn_down") or "kept up" in str(state.get("message", "")) \
                or not root.exists() or not lp.supervisor_alive(state):
            break
        time.sleep(0.2)
    if root.exists():   # the status after teardown (torn_down, the kept-up message), not before
        st = provider.status(name)
    console.print(f"teardown ({state.get('teardown')}): " + teardown_line(provider, name, root),
                  markup=False)
    return st


def _removed(name: str, console: Any) -> "JobStatus":
    from reclaunch.runtime.states import JobStatus
    console.print(f"{name}: stopped and removed by `reclaunch down {name}` (nothing kept)",
                  markup=False)
    return JobStatus(name=name, cloud="local", state="Stopped",
                     message=f"removed by `reclaunch down {name}` while `up` watched it")


def teardown_line(provider: "LocalProvider", name: str, root: Any) -> str:
    """What is true after the job, checked now: `down` from another terminal may have removed
    DIR, or the supervisor may have died (a full disk) instead of keeping the cluster up."""
    if not root.exists():
        return f"removed by `reclaunch down {name}` (nothing kept)"
    try:
        st = provider.status(name)
    except Exception:  # noqa: BLE001 - DIR went between the two checks
        return f"removed by `reclaunch down {name}` (nothing kept)"
    disk = (lp.read_json(root / "state.json") or {}).get("disk")
    if st.details.get("torn_down"):
        return "processes stopped, port freed; logs and checkpoints kept in " + str(root)
    if not st.details.get("supervisor_alive"):
        return (f"the local supervisor is gone{f' ({disk})' if isinstance(disk, str) else ''}; "
                f"logs and checkpoints written so far are in {root}; see {root / 'supervisor.log'}")
    return "cluster kept up"
