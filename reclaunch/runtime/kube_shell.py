"""`reclaunch exec` and `reclaunch port-forward` on a Kubernetes target: the pod's `exec` and
`portforward` subresources through kubernetes.stream, what `kubectl exec` and `kubectl
port-forward` use (SkyPilot's `ssh` and dstack's `attach` give the same: a shell on a node of
the run, a port of it on this machine). The `kubernetes` client is imported here, lazily.

The pod is picked as `logs` picks it: the node rank (the master is 0), in the job's namespace.
"""

from __future__ import annotations

import os
import select
import sys
from typing import TYPE_CHECKING, Any, Callable

from reclaunch.errors import ProviderError, UsageError, require

if TYPE_CHECKING:  # pragma: no cover
    from reclaunch.runtime.lifecycle import Env

CONTAINER = "pytorch"            # the training container (manifests/job.py)
POLL = 0.1                       # seconds between the exec loop's looks at stdin and the stream
SHELL = ["/bin/sh", "-c", "command -v bash >/dev/null 2>&1 && exec bash -il || exec sh -i"]


def pod_of(name: str, env: "Env", rank: int) -> tuple[Any, str, str]:
    """(kube, namespace, pod) of node rank `rank` of a running job."""
    from reclaunch.runtime.journal import Journal

    journal = Journal(name)
    rec = journal.record()
    if not journal.done("provision"):
        raise ProviderError(f"{name} has no provisioned cluster to exec into",
                            hint=f"`reclaunch status {name}` says why")
    kube = env.kube_for(env.infra.outputs(name))
    pods = kube.pods(rec.namespace, rec.job_name)
    pick = [p for p in pods if p["rank"] == rank]
    if not pick:
        have = ", ".join(str(p["rank"]) for p in pods) or "none"
        raise UsageError(f"{name}: no pod with rank {rank} (ranks: {have})")
    if pick[0]["phase"] != "Running":
        raise ProviderError(f"{name}: pod {pick[0]['name']} is {pick[0]['phase']}, not Running",
                            hint=f"`reclaunch status {name}`; exec and port-forward need a running pod")
    return kube, rec.namespace, pick[0]["name"]


def _api(kube: Any):
    k8s = require("kubernetes", "k8s")
    return k8s.client.CoreV1Api(kube.api)


def run(kube: Any, namespace: str, pod: str, command: list[str], *, interactive: bool = False,
        stdin: Any = None, stdout: Any = None, stderr: Any = None) -> int:
    """Run `command` in the pod's training container; its output to ours, its exit code back.
    interactive: our stdin goes to it (a terminal in raw mode, as `kubectl exec -it`)."""
    from kubernetes.stream import stream

    stdin = stdin if stdin is not None else sys.stdin
    out = stdout if stdout is not None else sys.stdout.buffer
    err = stderr if stderr is not None else sys.stderr.buffer
    tty = interactive and _isatty(stdin)
    try:
        resp = stream(_api(kube).connect_get_namespaced_pod_exec, pod, namespace,
                      command=command, container=CONTAINER, stdin=interactive, stdout=True,
                      stderr=True, tty=tty, _preload_content=False, binary=True)
    except Exception as exc:   # noqa: BLE001 - ApiException(status=0) for a refused upgrade
        raise ProviderError(f"exec in {namespace}/{pod}: {getattr(exc, 'reason', exc)}".splitlines()[0][:300],
                            hint="is the pod running, and may this kubeconfig's user create "
                                 "pods/exec in the namespace?") from None
    with _raw(stdin if tty else None):
        try:
            _pump(resp, stdin if interactive else None, out, err)
        finally:
            resp.close()
    try:
        code = resp.returncode
    except (TypeError, KeyError, ValueError, IndexError):   # no status on channel 3
        code = None
    return 1 if code is None else int(code)


def _pump(resp: Any, stdin: Any, out: Any, err: Any) -> None:
    fd = _fileno(stdin)
    while resp.is_open():
        resp.update(timeout=POLL)
        for read, sink in ((resp.read_stdout, out), (resp.read_stderr, err)):
            data = read(timeout=0)
            if data:
                sink.write(data)
                sink.flush()
        if fd is not None:
            ready, _, _ = select.select([fd], [], [], 0)
            if ready:
                data = os.read(fd, 4096)
                if data:
                    resp.write_stdin(data)
                else:               # our stdin ended: say so where the protocol can (v5)
                    resp.close_channel(0)
                    fd = None


def _fileno(stream: Any) -> int | None:
    try:
        return stream.fileno() if stream is not None else None
    except (AttributeError, OSError, ValueError):
        return None


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class _raw:
    """The terminal in raw mode for a remote tty (keys go through as typed), restored after."""

    def __init__(self, stream: Any):
        self.fd, self.saved = _fileno(stream), None

    def __enter__(self) -> None:
        if self.fd is not None:
            import termios
            import tty

            self.saved = termios.tcgetattr(self.fd)
            tty.setraw(self.fd)

    def __exit__(self, *exc: Any) -> None:
        if self.saved is not None:
            import termios

            termios.tcsetattr(self.fd, termios.TCSADRAIN, self.saved)


def connector(kube: Any, namespace: str, pod: str, port: int) -> Callable[[], tuple[Any, Any]]:
    """connect() for runtime.relay.serve: a new port-forward stream to `port` of the pod."""
    import threading

    from kubernetes.stream import portforward

    lock = threading.Lock()   # kubernetes.stream swaps the ApiClient's call_api while it runs

    def connect() -> tuple[Any, Any]:
        with lock:
            pf = portforward(_api(kube).connect_get_namespaced_pod_portforward, pod, namespace,
                             ports=str(port))
        return pf.socket(port), pf
    return connect
