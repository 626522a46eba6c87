"""The Dask cluster a run uses: a local one started for it, or a running scheduler checked
before it is trusted (``pip install '.[dask]'``; imported only by the Dask engine).

* :func:`scheduler_address` validates the form of an address (``tcp://host:port``, a bare
  ``host:port``, ``tls://host:port``) before anything connects.
* :func:`connect` reaches a scheduler within a bounded time: a TCP connection, then Dask's
  own handshake (the scheduler must answer that it is a scheduler), each within
  ``timeout`` seconds, and says which step failed: nothing listening, no answer, or
  something that answers but is not a Dask scheduler (a web server, a worker).
* :func:`local_cluster` starts worker processes that ignore SIGINT, so a Ctrl-C reaches
  rmtk alone, which then shuts the cluster down itself.
* :func:`quiet` keeps Dask's own log lines off the terminal while rmtk runs a cluster: every
  failure rmtk cares about comes back as one rmtk message.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import re
import signal
import socket
import sys
import threading

from ..errors import RmtkError

__all__ = ["connect", "keep_freed_memory", "local_cluster", "quiet", "scheduler_address"]

#: Schemes of a scheduler address that rmtk connects to (both over TCP).
SCHEMES = ("tcp", "tls")
_HOST_PORT = re.compile(r"^(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[A-Za-z0-9._-]+)):(?P<port>[0-9]{1,5})$")


def scheduler_address(text) -> str:
    """``text`` as a scheduler address ``scheme://host:port`` (a bare ``host:port`` is TCP);
    an :class:`~rmtk.errors.RmtkError` saying what is wrong with any other form."""
    example = "a Dask scheduler's address is tcp://host:port (8786 by default)"
    if not isinstance(text, str) or not text.strip():
        raise RmtkError(f"{example}, not {text!r}")
    address = text.strip()
    scheme, sep, rest = address.partition("://")
    if not sep:
        scheme, rest = "tcp", address
    scheme = scheme.lower()
    if scheme in ("http", "https"):
        raise RmtkError(f"{text!r} is a web address (a Dask dashboard is one); {example}")
    if scheme not in SCHEMES:
        raise RmtkError(f"{text!r}: unknown scheme {scheme!r} (rmtk connects over {' or '.join(SCHEMES)}); {example}")
    m = _HOST_PORT.match(rest)
    if m is None:
        raise RmtkError(f"{text!r} is not of the form host:port; {example}")
    port = int(m["port"])
    if not 1 <= port <= 65535:
        raise RmtkError(f"{text!r}: port {port} is not between 1 and 65535")
    host = f"[{m['v6']}]" if m["v6"] else m["host"]
    return f"{scheme}://{host}:{port}"


def _host_port(address: str) -> tuple[str, int]:
    rest = address.partition("://")[2]
    host, _, port = rest.rpartition(":")
    return host.strip("[]"), int(port)


async def _identity(address: str):
    from distributed.comm import connect as dask_connect
    from distributed.security import Security

    comm = await dask_connect(address, **Security().get_connection_args("client"))
    try:
        await comm.write({"op": "identity"})
        return await comm.read()
    finally:
        comm.abort()


def _handshake(address: str, timeout: float):
    """The scheduler's identity, read in a thread of its own (its own event loop, whatever
    the caller's), within ``timeout`` seconds."""

    def run():
        return asyncio.run(asyncio.wait_for(_identity(address), timeout))

    pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="rmtk-dask-probe")
    try:
        return pool.submit(run).result(timeout + 5)
    finally:
        pool.shutdown(wait=False)


def connect(address: str, timeout: float = 10.0):
    """A ``distributed.Client`` of the scheduler at ``address`` (checked by
    :func:`scheduler_address`), each step bounded by ``timeout`` seconds."""
    from distributed import Client

    address = scheduler_address(address)
    host, port = _host_port(address)
    where = f"the Dask scheduler at {address}"
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except socket.gaierror as e:
        raise RmtkError(f"cannot reach {where}: unknown host {host!r} ({e.strerror})") from None
    except ConnectionRefusedError:
        raise RmtkError(
            f"cannot reach {where}: nothing listens on port {port} of {host} (connection refused)"
        ) from None
    except TimeoutError:
        raise RmtkError(
            f"cannot reach {where}: no answer within {timeout:g} s (a wrong or unreachable address?)"
        ) from None
    except OSError as e:
        raise RmtkError(f"cannot reach {where}: {e.strerror or e}") from None
    not_dask = f"something listens at {address}, but it is not a Dask scheduler"
    try:
        reply = _handshake(address, timeout)
    except (TimeoutError, concurrent.futures.TimeoutError):
        raise RmtkError(f"{not_dask}: it did not answer Dask's handshake within {timeout:g} s") from None
    except Exception:  # noqa: BLE001 - whatever a foreign server makes Dask's reader do
        raise RmtkError(f"{not_dask}: it answered, but not in Dask's protocol") from None
    kind = reply.get("type") if isinstance(reply, dict) else None
    if kind != "Scheduler":
        raise RmtkError(f"{not_dask}: it answers as {kind or 'something else'}")
    try:
        return Client(address, timeout=f"{timeout}s")
    except (OSError, TimeoutError) as e:
        raise RmtkError(f"cannot connect to {where}: {e}") from None


def keep_freed_memory() -> None:
    """Let glibc keep freed memory for reuse (arrays up to 64 MiB from the heap, trimmed only
    above 256 MiB free). Dask starts workers with ``MALLOC_TRIM_THRESHOLD_=65536``, which
    also pins the mmap threshold at 128 KiB: every array is then mapped, faulted in page by
    page and unmapped again — about 40 % of the time of counting a partition went to such page
    faults. Not glibc (macOS, musl): nothing to do."""
    import ctypes

    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 64 << 20)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 256 << 20)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        pass


def ignore_interrupts() -> None:
    """SIGINT ignored in this process (a worker: Ctrl-C is for rmtk, which closes the cluster)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def _workers_ignore_interrupts():
    """Processes started meanwhile inherit an ignored SIGINT (they are started before the
    plugin below reaches them)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def unguarded_main_line() -> tuple[str, int] | None:
    """``(script, line)`` when this call comes from a script's top-level code outside an
    ``if __name__ == "__main__":`` block, else ``None``. Worker processes are started by
    importing the script again (Python's spawn method); such a call would then run again in
    every worker, which fails deep inside Dask with a page of tracebacks."""
    import ast
    import inspect

    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or getattr(main, "__spec__", None) is not None or not path or not os.path.isfile(path):
        return None  # python -m, python -c, a notebook or an interactive session: nothing re-imported
    line = None
    for frame in inspect.stack(context=0):
        if frame.filename == path and frame.function == "<module>":
            line = frame.lineno
    if line is None:
        return None
    try:
        tree = ast.parse(open(path, encoding="utf-8").read())
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        test = ast.unparse(node.test) if isinstance(node, ast.If) else ""
        if "__name__" in test and "__main__" in test and node.lineno <= line <= (node.end_lineno or node.lineno):
            return None
    return path, line


def local_cluster(workers: int):
    """``(cluster, client)``: a local cluster of ``workers`` processes of one thread each, its
    workers set up by :func:`keep_freed_memory` and :func:`ignore_interrupts` (also when the
    nanny restarts one), their logs silenced. Called from a script's unguarded top-level code
    (:func:`unguarded_main_line`), it refuses with a message saying what to write."""
    from distributed import Client, LocalCluster

    where = unguarded_main_line()
    if where is not None:
        raise RmtkError(
            f"{where[0]}, line {where[1]}: starting {workers} local worker processes runs this script again in "
            'each of them; put the script\'s work under  if __name__ == "__main__":  (or pass workers=1)'
        )
    from distributed.diagnostics.plugin import WorkerPlugin

    class WorkerSetup(WorkerPlugin):
        name = "rmtk-worker-setup"

        def setup(self, worker):
            keep_freed_memory()
            ignore_interrupts()

    with _workers_ignore_interrupts():
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            silence_logs=logging.CRITICAL,
        )
    client = Client(cluster)
    client.register_plugin(WorkerSetup())
    return cluster, client


@contextlib.contextmanager
def quiet():
    """Dask's loggers in this process (``distributed`` and below, and ``asyncio``, which reports
    the exceptions of Dask's event loop) silenced, and restored after."""
    names = ["distributed", "asyncio"] + [n for n in logging.root.manager.loggerDict if n.startswith("distributed.")]
    loggers = [logging.getLogger(n) for n in names]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)
