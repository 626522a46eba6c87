"""Faults on the Dask engine (docs/design/11-faults.md, section 11.1), on LocalClusters of 2 worker
processes of this module's own. SLOW: about a minute in all on an idle 2-core machine (a fresh
cluster for each killed worker, two rmtk subprocesses with clusters of their own); every run
here is bounded by a timeout and asserts its outcome.

* A worker process killed (SIGKILL, by pid) at each phase of a run — before the job is sent,
  while it is being sent, after, mid-count, during the merges — through the engine's test hook
  ``DaskEngine(phase_hook=...)``: each run ends with the local engine's count table.
* ``--scheduler`` at something that is not a Dask scheduler (a web server, a server that
  talks first, a closed port, a worker, malformed addresses) fails fast with a message saying
  which; a scheduler with no workers stops after ``timeout``.
* A data error on a worker (counting, ``collect``) is raised once, not retried, and the
  command line shows rmtk's message alone; Ctrl-C gives one line and a clean shutdown.
"""

from __future__ import annotations

import functools
import http.server
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import attrs
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rmtk import EmpiricalPTP, RmtkError, dsl
from rmtk.cli.main import main
from rmtk.data import save
from rmtk.data.parquet_dataset import ParquetDataset
from rmtk.engines.dask import PHASES, DaskEngine, WorkError
from rmtk.errors import DataError
from rmtk.product.simulate import simulate
from rmtk.ptp.empirical import CountJob, canonical_counts, merge_partial

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "models" / "stack_avoid.rm"
BOUND = 60  # seconds any faulty run may take before the test calls it a hang


def _cluster():
    from rmtk.engines.dask import local_cluster

    cluster, client = local_cluster(2)
    yield client
    client.close()
    cluster.close(timeout=30)


#: A LocalCluster of 2 worker processes for this module (the session's is left alone) ...
client = pytest.fixture(scope="module")(_cluster)
#: ... and a fresh one for each killed worker: no test waits for the nanny to restart a worker.
fresh_client = pytest.fixture(_cluster)


@pytest.fixture(scope="module")
def task():
    return dsl.load(MODEL).tasks["stack_avoid"]


@pytest.fixture(scope="module")
def dataset(task, tmp_path_factory):
    path = tmp_path_factory.mktemp("faults") / "d.parquet"
    save(simulate(task, 12_000, 20, seed=5), path, task.mdp, partition_size=1_500)  # 8 partitions
    return path


@pytest.fixture(scope="module")
def expected(task, dataset):
    return EmpiricalPTP(dataset).counts(task.mdp)


# ---------------------------------------------------------------------- a worker killed at each phase
def _pids(client) -> dict[str, int]:
    return client.run(os.getpid)


class Killer:
    """The test hook: at phase ``at``, SIGKILL the worker holding (or running) the futures of
    that phase — for "send", the worker that has just computed the job, while the others fetch
    it — or any worker when none does yet."""

    def __init__(self, at: str):
        self.at, self.killed = at, None

    def __call__(self, phase, client, futures):
        if phase != self.at or self.killed is not None:
            return
        pids = _pids(client)
        keys = {f.key for f in futures}
        holders: list[str] = []
        deadline = time.monotonic() + 5
        while keys and not holders and time.monotonic() < deadline:
            holders = [w for k, ws in client.who_has(futures).items() if k in keys for w in ws]
            holders += [w for w, ks in client.processing().items() if keys & set(ks)]
            if not holders and phase == "send":
                time.sleep(0.002)
            elif not holders:
                break
        victim = holders[0] if holders else min(pids)
        self.killed = pids[victim]
        os.kill(self.killed, signal.SIGKILL)


def _gone(pid: int, wait: float = 10) -> bool:
    """Whether process ``pid`` has ended (and was reaped) within ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def _count(engine, task, path):
    ds = ParquetDataset.open(path, task.mdp)
    out = engine.map_reduce(
        CountJob(task.mdp, dataset=ds), ds.partitions, reduce=merge_partial, what="partitions counted"
    )
    return canonical_counts(out.table)


@pytest.mark.parametrize("phase", PHASES)
def test_a_worker_killed_at_any_phase_gives_the_local_count(fresh_client, task, dataset, expected, phase):
    client = fresh_client
    killer = Killer(phase)
    start = time.monotonic()
    table = _count(DaskEngine(client=client, phase_hook=killer, timeout=BOUND), task, dataset)
    took = time.monotonic() - start
    assert killer.killed is not None  # the phase was reached and a worker died there
    assert _gone(killer.killed)
    assert table == expected  # the local engine's table, trie ids included
    assert took < BOUND


# ---------------------------------------------------------------------- schedulers that are not
@pytest.mark.parametrize(
    "address, message",
    [
        ("not an address", "'not an address' is not of the form host:port"),
        ("http://127.0.0.1:8787/status", "is a web address"),
        ("udp://127.0.0.1:8786", "unknown scheme 'udp'"),
        ("127.0.0.1:0", "port 0 is not between 1 and 65535"),
        ("", "a Dask scheduler's address is tcp://host:port"),
    ],
)
def test_a_malformed_scheduler_address_is_refused_at_once(address, message):
    with pytest.raises(RmtkError, match=message):
        DaskEngine(scheduler=address)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def web_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"tcp://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def banner_server():
    """A server that talks first (as an SSH server does): Dask reads its banner as a frame
    length of exabytes."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    stop = threading.Event()

    def serve():
        sock.settimeout(0.2)
        conns = []
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            conn.sendall(b"SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n")
            conns.append(conn)
        for c in conns:
            c.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"tcp://127.0.0.1:{sock.getsockname()[1]}"
    stop.set()
    thread.join()
    sock.close()


def _reach(address, timeout=2.0):
    start = time.monotonic()
    with pytest.raises(RmtkError) as err:
        DaskEngine(scheduler=address, connect_timeout=timeout).map_reduce(abs, [1, 2], reduce=max)
    return str(err.value), time.monotonic() - start


def test_a_web_server_is_not_taken_for_a_scheduler(web_server):
    message, took = _reach(web_server)
    assert message == (
        f"something listens at {web_server}, but it is not a Dask scheduler: it did not answer "
        "Dask's handshake within 2 s"
    )
    assert took < 2 * 2 + 3


def test_a_server_that_talks_first_is_not_taken_for_a_scheduler(banner_server):
    message, took = _reach(banner_server)
    assert message == (
        f"something listens at {banner_server}, but it is not a Dask scheduler: it answered, but not in Dask's protocol"
    )
    assert took < 5


def test_a_closed_port_and_a_worker_are_named(client):
    port = _free_port()
    message, took = _reach(f"127.0.0.1:{port}")
    assert message == (
        f"cannot reach the Dask scheduler at tcp://127.0.0.1:{port}: nothing listens on port {port} "
        "of 127.0.0.1 (connection refused)"
    )
    assert took < 5
    worker = min(client.scheduler_info()["workers"])
    message, _ = _reach(worker)
    assert message == f"something listens at {worker}, but it is not a Dask scheduler: it answers as Worker"


def test_a_scheduler_without_workers_stops_after_the_timeout(dataset, capsys):
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1", dashboard_address=":0"
    ) as cluster:
        engine = DaskEngine(scheduler=cluster.scheduler_address, timeout=1.5)
        start = time.monotonic()
        with pytest.raises(
            WorkError,
            match=r"no piece of work finished for 1.5 s \(the cluster has 0 workers\); "
            r"the run stopped and returned nothing",
        ):
            engine.map_reduce(abs, [1, 2, 3], reduce=max)
        assert 1.5 <= time.monotonic() - start < 6
        args = ["learn", str(MODEL), "--demos", str(dataset), "--nodes", "3", "-q", "--dask-timeout", "1"]
        assert main(args + ["--engine", "dask", "--scheduler", cluster.scheduler_address]) == 1
        assert capsys.readouterr().err == (
            "rmtk: error: no piece of work finished for 1 s (the cluster has 0 workers); "
            "the run stopped and returned nothing (the bound is "
            "DaskEngine(timeout=...), --dask-timeout)\n"
        )
    assert main(args) == 2
    assert "--dask-timeout needs --engine dask: it bounds a Dask run" in capsys.readouterr().err


# ---------------------------------------------------------------------- data errors: once, and quietly
@attrs.frozen
class Attempts:
    """Runs ``inner``, leaving a marker file per call on partition ``watch`` (calls may run on
    either worker)."""

    inner: object
    marker: str
    watch: int

    def __call__(self, item):
        if item.index == self.watch:
            Path(self.marker, uuid.uuid4().hex).touch()
        return self.inner(item)


def _corrupt(task, src, dst, part=3, row=100, state=200):
    """A copy of the dataset whose partition ``part`` has ``state`` (out of range) at ``row``."""
    dst.mkdir()
    for f in sorted(src.iterdir()):
        table = pq.read_table(f)
        if f.name == f"part-{part:05d}.parquet":
            states = table.column("state").to_numpy().copy()
            states[row] = state
            field = table.schema.field("state")
            table = table.set_column(table.schema.get_field_index("state"), field, pa.array(states, field.type))
        pq.write_table(table, dst / f.name)
    return dst / f"part-{part:05d}.parquet"


def test_a_data_error_on_a_worker_is_raised_once(client, task, dataset, tmp_path, caplog):
    bad = _corrupt(task, dataset, tmp_path / "bad.parquet")
    marker = tmp_path / "marker"
    marker.mkdir()
    ds = ParquetDataset.open(bad.parent, task.mdp)
    job = Attempts(CountJob(task.mdp, dataset=ds), str(marker), 3)
    with pytest.raises(DataError, match=f"{bad}: row 100: .*state index 200 is out of range"):
        DaskEngine(client=client, retries=2).map_reduce(job, ds.partitions, reduce=merge_partial)
    assert len(os.listdir(marker)) == 1  # not retried
    time.sleep(0.5)  # the scheduler (in this process) has handled the stopped run
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]  # no error inside Dask


@attrs.frozen
class NoLabel:
    """A labeler that answers something that is not a proposition, marking each call."""

    marker: str
    propositions: tuple = ("A", "B")

    def __call__(self, obs, info=None):
        Path(self.marker, uuid.uuid4().hex).touch()
        return "nonsense"


def test_a_bad_label_in_collect_on_workers_is_raised_once(client, task, tmp_path):
    from rmtk.gym import Identity, MdpEnv, collect

    make = functools.partial(MdpEnv, task.mdp)
    with pytest.raises(DataError, match="nonsense"):
        collect(
            make,
            lambda obs, ctx: 0,
            NoLabel(str(tmp_path)),
            Identity(),
            50,
            seed=0,
            shard=50,
            engine=DaskEngine(client=client),
            max_steps=5,
        )
    assert len(os.listdir(tmp_path)) == 1  # one shard, one call: not retried


def _rmtk(*args, **kw):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(
        [sys.executable, "-m", "rmtk", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def test_the_command_line_shows_a_worker_s_data_error_alone(task, dataset, tmp_path):
    bad = _corrupt(task, dataset, tmp_path / "bad.parquet")
    proc = _rmtk(
        "learn", str(MODEL), "--demos", str(bad.parent), "--nodes", "3", "--engine", "dask", "--workers", "2", "-q"
    )
    _, err = proc.communicate(timeout=BOUND)
    assert proc.returncode == 1
    message = (
        f"rmtk: error: {bad}: row 100: trajectory 4505, step 0: state index 200 is out of range (the MDP "
        "'blocks_avoid' has states 0..59)"
    )
    assert err.splitlines() == [message]


#: The command, with the engine's test hook holding the count at its middle until Ctrl-C has
#: asked for a stop: the signal always arrives mid-count, however fast the count.
HELD_MID_COUNT = (
    "import runpy, sys, time\n"
    "from rmtk.engines import dask as engine\n"
    "from rmtk.limits import stop_requested\n"
    "hook = engine._Run.hook\n"
    "def held(self, phase, futures):\n"
    "    hook(self, phase, futures)\n"
    "    if phase == 'mid-count':\n"
    "        print('rmtk-test: held mid-count', file=sys.stderr, flush=True)\n"
    "        t0 = time.monotonic()\n"
    "        while stop_requested() is None and time.monotonic() - t0 < 60:\n"
    "            time.sleep(0.02)\n"
    "engine._Run.hook = held\n"
    "sys.argv = ['rmtk'] + sys.argv[1:]\n"
    "runpy.run_module('rmtk', run_name='__main__')\n"
)


def test_ctrl_c_mid_count_is_one_line_and_a_clean_shutdown(task, tmp_path):
    """Ctrl-C in the middle of a Dask count: exit 130, the partial answer flagged or the one
    line, nothing else but progress on stderr, and no worker process left."""
    path = tmp_path / "big.parquet"
    save(simulate(task, 20_000, 20, seed=1), path, task.mdp, partition_size=2_500)  # 8 partitions
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    argv = ["learn", str(MODEL), "--demos", str(path), "--nodes", "3", "--engine", "dask", "--workers", "2"]
    proc = subprocess.Popen(
        [sys.executable, "-c", HELD_MID_COUNT, *argv, "--no-rewards"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a group of its own, as a terminal's foreground job
    )
    seen = ""
    while "rmtk-test: held mid-count" not in seen:
        line = proc.stderr.readline()
        assert line, seen
        seen += line
    assert "counting demonstrations done" not in seen  # the count is held in its middle
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C sends: to every process of the group
    out, rest = proc.communicate(timeout=BOUND)
    assert proc.returncode == 130, rest
    others = [ln for ln in rest.splitlines() if not ln.startswith("rmtk: ") or ln.startswith("rmtk: error")]
    assert others == [] and rest.splitlines()[-1] == "rmtk: interrupted" and "Traceback" not in rest
    assert out == "" or out.startswith("# stopped: interrupted (SIGINT, Ctrl-C)"), out
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # no worker left behind
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("worker processes outlived the interrupted run")


def _script(tmp_path, body: str) -> subprocess.CompletedProcess:
    path = tmp_path / "script.py"
    path.write_text(body)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=120)


def test_a_script_starting_workers_outside_a_main_guard_is_told_what_to_write(tmp_path):
    """Worker processes import the script again: unguarded, Dask fails with pages of
    tracebacks from every worker; rmtk refuses first, naming the script's line."""
    out = _script(
        tmp_path,
        "from rmtk.engines.cluster import local_cluster\n\ncluster, client = local_cluster(2)\n",
    )
    assert out.returncode == 1
    assert f"{tmp_path / 'script.py'}, line 3: starting 2 local worker processes" in out.stderr
    assert 'if __name__ == "__main__":' in out.stderr
    assert "Nanny failed" not in out.stderr and out.stderr.count("Traceback") == 1


def test_a_guarded_script_is_not_refused(tmp_path):
    out = _script(
        tmp_path,
        "from rmtk.engines.cluster import unguarded_main_line\n\n"
        "if __name__ == '__main__':\n    print(unguarded_main_line())\nprint(unguarded_main_line())\n",
    )
    lines = out.stdout.split()
    assert out.returncode == 0 and lines[0] == "None" and lines[-1] == "5)"
