"""Stop and resume an online run (docs/guide/14-online.md): the agent, the machine, its history,
the kept traces, the replay buffer and what the exploration walker learned, in one ZIP archive
written whole or not at all (:func:`rmtk.output.replacing`: a temporary file renamed over the
target once complete, so an interrupted save leaves the previous archive as it was).

The archive holds ``model.zip`` (Stable-Baselines3's own save, without its replay buffer),
``machine.rm`` (the current hypothesis as `.rm` text, readable by :func:`rmtk.dsl.loads`),
``state.json`` (the loop's counters and the history, each machine as
:meth:`~rmtk.machine.model.RewardMachine.to_dict`), ``traces.npz`` (the kept traces and the history's
counterexamples), ``buffer.npz`` and ``walker.npz``. A resumed run continues the counts, the
history and the buffer; its random streams start again from the seed and the step reached, so it
is not the very run an uninterrupted one would have been.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np

from ... import output
from ...errors import DataError
from ...machine.model import RewardMachine
from .hypothesis import Hypothesis
from .loop import Swap
from .traces import Trace, padded

FORMAT = 1


def _npz(arrays: dict) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


def _traces_arrays(traces) -> dict:
    letters, rewards, lengths = (
        padded(traces) if traces else (np.zeros((0, 1), np.int64), np.zeros((0, 1)), np.zeros(0, np.int64))
    )
    return {
        "letters": letters,
        "rewards": rewards,
        "lengths": lengths,
        "episode": np.array([t.episode for t in traces], np.int64),
        "step": np.array([t.step for t in traces], np.int64),
        "counterexample": np.array([t.counterexample for t in traces], bool),
        "explored": np.array([t.explored for t in traces], bool),
        "terminated": np.array([t.terminated for t in traces], bool),
    }


def _traces_of(arrays) -> list[Trace]:
    out = []
    for i, n in enumerate(arrays["lengths"].tolist()):
        out.append(
            Trace(
                arrays["letters"][i, :n],
                arrays["rewards"][i, : n - 1],
                int(arrays["episode"][i]),
                int(arrays["step"][i]),
                bool(arrays["counterexample"][i]),
                bool(arrays["explored"][i]),
                bool(arrays["terminated"][i]),
            )
        )
    return out


def write(learner, path: Path, *, overwrite: bool = False) -> Path:
    """Save ``learner`` (an :class:`~rmtk.rl.online.learner.OnlineLearner`) to ``path``."""
    from ...dsl import dumps

    loop, env, model = learner.env.loop, learner.env, learner.model
    model_bytes = io.BytesIO()
    model.save(model_bytes, exclude=["replay_buffer_class", "replay_buffer_kwargs"])
    kept = list(loop.kept)
    extra = [
        s.counterexample
        for s in loop.history
        if s.counterexample is not None and not any(s.counterexample is t for t in kept)
    ]
    traces = kept + extra

    def index(trace) -> int | None:
        return None if trace is None else next(i for i, t in enumerate(traces) if t is trace)

    state = {
        "format": FORMAT,
        "propositions": list(loop.propositions),
        "max_nodes": env.max_nodes,
        "seed": learner.seed,
        "algorithm": learner.algorithm.__name__,
        "steps": int(model.num_timesteps),
        "episodes": loop.episodes,
        "ordinary": loop.ordinary,
        "rewarded": loop.rewarded,
        "inference_cpu": loop.inference_cpu,
        "cpu": learner.cpu,
        "kept": len(kept),
        "recent": [bool(x) for x in loop.recent],
        "stopped": learner.stopped,
        "curve": learner.curve,
        "history": [
            {
                "machine": s.machine.to_dict(),
                "step": s.step,
                "episode": s.episode,
                "counterexample": index(s.counterexample),
                "position": s.position,
                "expected": s.expected,
                "paid": s.paid,
                "cpu": s.cpu,
                "traces": s.traces,
            }
            for s in loop.history
        ],
    }
    buffer = model.replay_buffer.arrays() if learner.off_policy and model.replay_buffer is not None else None
    with output.replacing(path, overwrite=overwrite) as f, zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("model.zip", model_bytes.getvalue())
        z.writestr("machine.rm", dumps(loop.machine))
        z.writestr("state.json", json.dumps(state, indent=1))
        z.writestr("traces.npz", _npz(_traces_arrays(traces)))
        if buffer is not None:
            z.writestr("buffer.npz", _npz(buffer))
        if env.walker is not None:
            z.writestr("walker.npz", _npz(env.walker.state()))
    return path


def read(learner, path: Path) -> None:
    """Restore the run saved at ``path`` into a fresh ``learner`` made with the same settings."""
    from ..sb3 import quiet_logger
    from .buffer import online_replay

    try:
        z = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as e:
        raise DataError(f"{path}: not an online run's archive ({e})") from None
    with z:
        names = set(z.namelist())
        need = {"model.zip", "state.json", "traces.npz"}
        if not need <= names:
            raise DataError(f"{path}: not an online run's archive (it lacks {', '.join(sorted(need - names))})")
        state = json.loads(z.read("state.json"))
        loop, env = learner.env.loop, learner.env
        if state.get("format") != FORMAT:
            raise DataError(f"{path}: archive format {state.get('format')!r}, this rmtk reads {FORMAT}")
        if tuple(state["propositions"]) != loop.propositions or state["max_nodes"] != env.max_nodes:
            raise DataError(
                f"{path}: saved with propositions {state['propositions']} and max_nodes {state['max_nodes']}; "
                f"resumed with {list(loop.propositions)} and {env.max_nodes}: give the saved run's settings"
            )
        with np.load(io.BytesIO(z.read("traces.npz"))) as arrays:
            traces = _traces_of(arrays)
        history = []
        for h in state["history"]:
            cx = h["counterexample"]
            history.append(
                Swap(
                    RewardMachine.from_dict(h["machine"]),
                    h["step"],
                    h["episode"],
                    None if cx is None else traces[cx],
                    h["position"],
                    h["expected"],
                    h["paid"],
                    h["cpu"],
                    h["traces"],
                )
            )
        loop.history = history
        loop.hypothesis = Hypothesis.of(history[-1].machine)
        loop.kept = tuple(traces[: state["kept"]])
        loop.episodes, loop.ordinary, loop.rewarded = state["episodes"], state["ordinary"], state["rewarded"]
        loop.inference_cpu, loop.steps = state["inference_cpu"], state["steps"]
        loop.recent.extend(state["recent"])
        loop.exercised = np.zeros(loop.machine.delta_u.shape, bool)
        for t in loop.kept:
            loop._mark(t)
        env.total_steps, env.episode = state["steps"], state["episodes"] - 1
        learner.cpu, learner.curve = state["cpu"], [tuple(x) for x in state["curve"]]
        if env.walker is not None and "walker.npz" in names:
            with np.load(io.BytesIO(z.read("walker.npz"))) as saved:
                env.walker.restore(dict(saved))
        buffer = online_replay(env) if learner.off_policy else {}  # set on the model before it makes its buffer
        model = learner.algorithm.load(io.BytesIO(z.read("model.zip")), env=env, device="cpu", **buffer)
        model.set_logger(quiet_logger())
        if learner.off_policy and "buffer.npz" in names:
            with np.load(io.BytesIO(z.read("buffer.npz"))) as saved:
                model.replay_buffer.restore(dict(saved))
        learner.model = model
        learner._wrote = Path(path)


__all__ = ["FORMAT", "read", "write"]
