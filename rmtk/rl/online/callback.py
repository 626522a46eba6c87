"""The online loop as a Stable-Baselines3 callback (docs/guide/14-online.md), for a user who
builds the model and calls ``learn`` themselves::

    env = OnlineEnv(gym_env, labeler, max_nodes=6)               # the product with the hypothesis
    model = DQN("MlpPolicy", env, **online_replay(env))           # CRM of the current hypothesis
    callback = OnlineMachineCallback(env, progress=StderrProgress())
    model.learn(20_000, callback=callback)
    callback.machine, callback.hypotheses                          # the machine, its history

The inference itself runs in the environment when an episode ends (:class:`~rmtk.rl.online.env.OnlineEnv`);
the callback ends training when the loop stopped (an inference cut by its time limit, a stop
requested by SIGINT or SIGTERM: :func:`rmtk.limits.request_stop`), writes a progress line every
``report_every`` steps (steps, episodes, success, the machine's size, swaps, inference CPU),
records ``evaluate(model)`` every ``evaluate_every`` steps (and ends training at the first value at
least ``target``, when given), and calls ``checkpoint(model)`` every ``checkpoint_every`` steps.
Stable-Baselines3 is imported when the callback is made.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ...errors import RmtkError
from ...limits import stop_requested
from ...progress import Progress
from ...words import plural
from ..sb3 import _require


def progress_line(env, steps: int) -> str:
    """The progress line of ``env``'s loop at ``steps`` environment steps."""
    loop = env.loop
    ok = loop.success()
    success = "-" if ok is None else f"{ok:.2f}"
    return (
        f"online: {steps:,} steps, {loop.episodes:,} episodes, success {success} (last {len(loop.recent)} "
        f"agent-led episodes), machine {plural(loop.machine.n_nodes, 'node')}, {plural(loop.swaps, 'swap')}, "
        f"inference {loop.inference_cpu:.1f} s CPU"
    )


def _callback_base() -> Any:
    return _require().common.callbacks.BaseCallback


def OnlineMachineCallback(
    env,
    *,
    progress: Progress | None = None,
    report_every: int = 10_000,
    evaluate: Callable | None = None,
    evaluate_every: int = 1_000,
    checkpoint: Callable | None = None,
    checkpoint_every: int | None = None,
    target: float | None = None,
):
    """The callback of the module docstring, for ``env`` (an :class:`~rmtk.rl.online.env.OnlineEnv`)."""
    from .env import OnlineEnv

    if not isinstance(env, OnlineEnv):
        raise RmtkError(f"OnlineMachineCallback follows an OnlineEnv's loop, not {type(env).__name__}")
    for name, value in (("report_every", report_every), ("evaluate_every", evaluate_every)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise RmtkError(f"{name} must be a whole number ≥ 1, got {value!r}")
    return _callback_class()(
        env, progress or Progress(), report_every, evaluate, evaluate_every, checkpoint, checkpoint_every, target
    )


_CLASS: list = []


def _callback_class():
    if _CLASS:
        return _CLASS[0]

    base: Any = _callback_base()

    class _OnlineMachineCallback(base):
        """See :func:`OnlineMachineCallback`."""

        def __init__(self, env, progress, report_every, evaluate, evaluate_every, checkpoint, checkpoint_every, target):
            super().__init__()
            self.target = target
            self.online, self.progress = env, progress
            self.report_every, self.evaluate, self.evaluate_every = report_every, evaluate, evaluate_every
            self.checkpoint, self.checkpoint_every = checkpoint, checkpoint_every
            #: ``(steps, value)`` of each evaluation
            self.curve: list[tuple[int, float]] = []
            #: why training ended early (``None``: it did not)
            self.stopped: str | None = None
            self.started = time.process_time()

        @property
        def machine(self):
            return self.online.machine

        @property
        def hypotheses(self):
            return tuple(self.online.loop.history)

        def _on_step(self) -> bool:
            n = self.num_timesteps
            reached = False
            if self.evaluate is not None and n % self.evaluate_every == 0:
                self.curve.append((n, float(self.evaluate(self.model))))
                reached = self.target is not None and self.curve[-1][1] >= self.target
            if n % self.report_every == 0:
                self.progress.note(progress_line(self.online, n))
            if self.checkpoint is not None and self.checkpoint_every and n % self.checkpoint_every == 0:
                self.checkpoint(self.model)
            if reached:
                return False
            if self.online.loop.stopped is not None:
                self.stopped = self.online.loop.stopped
                return False
            stop = stop_requested()
            if stop is not None:
                self.stopped = f"{stop} at step {n}"
                return False
            return True

    _CLASS.append(_OnlineMachineCallback)
    return _OnlineMachineCallback


__all__ = ["OnlineMachineCallback", "progress_line"]
