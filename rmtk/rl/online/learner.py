""":class:`OnlineLearner`: a Stable-Baselines3 agent trained on a Gymnasium environment whose
reward is non-Markovian, its reward machine learned while it trains (docs/guide/14-online.md)::

    learner = OnlineLearner(env, labeler, DQN, seed=0).learn(20_000)
    learner.machine          # the final RewardMachine (write it with rmtk.dsl.dump, draw it)
    learner.model            # the trained model; it acts on learner.env
    learner.hypotheses       # the history: step, counterexample, inference CPU of each
    learner.final            # its unexercised (node, letter) pairs, whether still changing

It composes :class:`~rmtk.rl.online.env.OnlineEnv` (the product with the hypothesis, where the
loop infers), the replay buffer of :func:`~rmtk.rl.online.buffer.online_replay` (off-policy
algorithms: CRM of the current hypothesis) and :func:`~rmtk.rl.online.callback.OnlineMachineCallback`
(progress, stops, checkpoints). Off-policy algorithms (DQN, SAC, TD3) get the counterfactual
buffer; on-policy ones (PPO, A2C) train on the product as it is, with their own exploration.

Defaults that need no tuning: DQN's are those measured on the Office World's coffee task
(docs/benchmarks/deep-rl.md: one hidden layer of 64 units, learning rate 10⁻³, buffer 50,000,
learning starts 500, batch 256, a gradient step every 4 steps, the target network copied every
25, ε from 1 to 0.1 over the first 3,000 steps, γ 0.9); other algorithms keep
Stable-Baselines3's. Anything given as ``algorithm_kwargs`` replaces them. The model logs to
no folder (Stable-Baselines3's own logger would leave ``SB3-<date>`` folders in the temporary
directory), runs on the CPU with one torch thread, and ``seed`` decides every draw.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gymnasium import spaces

from ...errors import ModelError, RmtkError
from ...limits import clear_stop, request_stop, stop_requested
from ...progress import Progress
from ..sb3 import _require, quiet_logger
from .exploration import Exploration, ExplorationCapabilities, SubgoalExploration
from .inference import Inference
from .loop import LoopSettings
from .replay import ReplayLetters
from .traces import TraceKeeping
from .verdict import FinalMachine, final_machine
from .views import NodeView

#: DQN's defaults (docs/benchmarks/deep-rl.md, the coffee task); ``explore`` is in steps.
DQN_DEFAULTS = {
    "policy_kwargs": {"net_arch": [64]},
    "learning_rate": 1e-3,
    "buffer_size": 50_000,
    "learning_starts": 500,
    "batch_size": 256,
    "gamma": 0.9,
    "train_freq": 4,
    "target_update_interval": 25,
    "exploration_final_eps": 0.1,
}
#: Steps over which DQN's ε falls from 1 to its final value (``exploration_fraction`` is set from it).
DQN_EXPLORE = 3_000

#: The action spaces Stable-Baselines3's algorithms take.
ACTIONS = {
    "DQN": (spaces.Discrete,),
    "QRDQN": (spaces.Discrete,),
    "SAC": (spaces.Box,),
    "TD3": (spaces.Box,),
    "DDPG": (spaces.Box,),
    "TQC": (spaces.Box,),
    "PPO": (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary),
    "A2C": (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary),
}


def check_algorithm(algorithm, action_space, exploration: Exploration) -> bool:
    """Whether ``algorithm`` (a Stable-Baselines3 class) learns off-policy; a clear error when it
    cannot take ``action_space`` or the exploration strategy."""
    sb3 = _require()
    if not (isinstance(algorithm, type) and issubclass(algorithm, sb3.common.base_class.BaseAlgorithm)):
        raise RmtkError(
            f"algorithm must be a Stable-Baselines3 algorithm class (DQN, SAC, PPO, ...), not {algorithm!r}"
        )
    family = next((c.__name__ for c in algorithm.__mro__ if c.__name__ in ACTIONS), None)
    if family is not None and not isinstance(action_space, ACTIONS[family]):
        takes = " or ".join(t.__name__ for t in ACTIONS[family])
        raise ModelError(
            f"{algorithm.__name__} cannot take the environment's action space {action_space}: it takes {takes} "
            "actions (DQN: Discrete; SAC, TD3: Box; PPO, A2C: either)"
        )
    off = issubclass(algorithm, sb3.common.off_policy_algorithm.OffPolicyAlgorithm)
    if ExplorationCapabilities.of(exploration).replaces_actions and not off:
        raise ModelError(
            f"{type(exploration).__name__} acts in place of the agent in the episodes it leads, which the "
            f"on-policy {algorithm.__name__} cannot learn from: use AgentExploration(), or an off-policy "
            "algorithm (DQN, SAC)"
        )
    return off


def default_exploration(action_space, observation_space, off_policy: bool) -> Exploration:
    """Subgoal exploration where it applies (an off-policy algorithm, Discrete actions and
    observations), else the algorithm's own."""
    from .exploration import AgentExploration

    if off_policy and isinstance(action_space, spaces.Discrete) and isinstance(observation_space, spaces.Discrete):
        return SubgoalExploration()
    return AgentExploration()


class OnlineLearner:
    """Train ``algorithm`` on ``env`` while learning its reward machine (module docstring).

    Args:
        env: a Gymnasium environment that pays a non-Markovian reward.
        labeler: ``labeler(obs, info) -> proposition name``.
        algorithm: a Stable-Baselines3 class (default ``DQN``).
        seed: decides every draw (the model's, the environment's first reset, the loop's).
        propositions: the labeler's alphabet (default: the labeler's ``propositions``).
        max_nodes: the node slots of the observation and the bound of every inference.
        exploration: an :class:`~rmtk.rl.online.exploration.Exploration` strategy (default
            :class:`~rmtk.rl.online.exploration.SubgoalExploration` for an off-policy algorithm
            on Discrete actions and observations, else the algorithm's own).
        inference: an :class:`~rmtk.rl.online.inference.Inference` (default exact rewards).
        keeping: a :class:`~rmtk.rl.online.traces.TraceKeeping` (default every counterexample and
            100 sampled episodes).
        replay: a :class:`~rmtk.rl.online.replay.ReplayLetters` (default the letters as read;
            :class:`~rmtk.rl.online.replay.AsBelieved`: as the detections believe them now).
        time_limit: seconds one inference may take before the run is stopped, flagged (a safety
            stop: it never changes the machine a run returns).
        markov_after: episodes paid a reward after which a one-node hypothesis is the answer
            "Markovian, no machine needed" (an error); ``None``: never.
        observation: ``"flat"`` or ``"dict"`` product observations.
        view: what the agent sees of the node, a :class:`~rmtk.rl.online.views.NodeView`
            (default the node along the labels; :class:`~rmtk.rl.online.views.FilteredBelief`:
            the belief a detector's detections give).
        progress: receives the progress lines (e.g. :class:`~rmtk.progress.StderrProgress`).
        report_every: steps between progress lines.
        policy: the policy name or class (default ``"MlpPolicy"``).
        algorithm_kwargs: replace the defaults of the algorithm's keyword arguments.
    """

    def __init__(
        self,
        env,
        labeler: Callable,
        algorithm=None,
        *,
        seed: int = 0,
        propositions: Sequence[str] | None = None,
        max_nodes: int = 8,
        exploration: Exploration | None = None,
        inference: Inference | None = None,
        keeping: TraceKeeping | None = None,
        replay: ReplayLetters | None = None,
        time_limit: float | None = 300.0,
        markov_after: int | None = 20,
        observation: str = "flat",
        view: NodeView | None = None,
        progress: Progress | None = None,
        report_every: int = 10_000,
        policy="MlpPolicy",
        **algorithm_kwargs,
    ):
        from .env import OnlineEnv

        sb3 = _require()
        self.algorithm = algorithm if algorithm is not None else sb3.DQN
        given = exploration
        off = check_algorithm(self.algorithm, env.action_space, given) if given is not None else None
        if given is None:
            off = check_algorithm(self.algorithm, env.action_space, _agent())
            given = default_exploration(env.action_space, env.observation_space, off)
        settings = LoopSettings(max_nodes=max_nodes, seed=int(seed), time_limit=time_limit, markov_after=markov_after)
        if inference is not None:
            settings = _evolve(settings, inference=inference)
        if keeping is not None:
            settings = _evolve(settings, keeping=keeping)
        if replay is not None:
            settings = _evolve(settings, replay=replay)
        self.env = OnlineEnv(
            env,
            labeler,
            propositions=propositions,
            max_nodes=max_nodes,
            observation=observation,
            view=view,
            exploration=given,
            settings=settings,
            seed=int(seed),
        )
        self.off_policy = bool(off)
        self.seed, self.policy = int(seed), policy
        self.progress = progress or Progress()
        self.report_every = int(report_every)
        self.algorithm_kwargs = dict(algorithm_kwargs)
        if self.off_policy and "replay_buffer_class" in self.algorithm_kwargs:
            raise RmtkError(
                "the online loop brings its own replay buffer (CRM of the hypothesis): drop replay_buffer_class"
            )
        self.model: Any = None
        self.stopped: str | None = None
        self.cpu = 0.0  # process CPU seconds inside learn()
        self.curve: list[tuple[int, float]] = []
        self._wrote: Path | None = None  # the checkpoint this learner wrote (it may replace it)

    # ------------------------------------------------------------------ the model
    def _kwargs(self, total: int) -> dict:
        from .buffer import online_replay

        kwargs: dict = {}
        if self.algorithm.__name__ == "DQN" or any(c.__name__ == "DQN" for c in self.algorithm.__mro__):
            kwargs.update(DQN_DEFAULTS, exploration_fraction=min(1.0, DQN_EXPLORE / max(total, 1)))
        kwargs.update(self.algorithm_kwargs)
        if self.off_policy:
            kwargs.update(online_replay(self.env))
        return kwargs

    def _make(self, total: int):
        kwargs = self._kwargs(total)
        kwargs.setdefault("device", "cpu")
        model = self.algorithm(self.policy, self.env, seed=self.seed, verbose=0, **kwargs)
        model.set_logger(quiet_logger())
        return model

    # ------------------------------------------------------------------ training
    def learn(
        self,
        total_timesteps: int,
        *,
        evaluate: Callable | None = None,
        evaluate_every: int = 1_000,
        target: float | None = None,
        checkpoint: str | Path | None = None,
        checkpoint_every: int | None = None,
        overwrite: bool = False,
    ) -> OnlineLearner:
        """Train for ``total_timesteps`` more environment steps (the first call makes the model).
        ``evaluate(model) -> float`` is recorded every ``evaluate_every`` steps (``curve``),
        training ending at the first value at least ``target`` when given;
        ``checkpoint``: a file the run is saved to every ``checkpoint_every`` steps and when it
        ends (an existing file is replaced only with ``overwrite``, or when this run wrote it).
        SIGINT (Ctrl-C) or a stop requested by the caller ends training at the next step; the
        run is then saved and flagged (``stopped``)."""
        from ..sb3 import one_thread
        from .callback import OnlineMachineCallback

        total = int(total_timesteps)
        if total < 1:
            raise RmtkError(f"total_timesteps must be at least 1, got {total_timesteps!r}")
        if checkpoint is not None:
            from ... import output

            output.check(checkpoint, overwrite=overwrite or self._wrote == Path(checkpoint))
        first = self.model is None
        if self.model is None:
            self.model = self._make(total)
        model = self.model

        def save(model) -> None:
            if checkpoint is not None:
                self.save(checkpoint, overwrite=True)

        callback = OnlineMachineCallback(
            self.env,
            progress=self.progress,
            report_every=self.report_every,
            evaluate=evaluate,
            evaluate_every=evaluate_every,
            checkpoint=save if checkpoint is not None and checkpoint_every else None,
            checkpoint_every=checkpoint_every,
            target=target,
        )
        ours = _sigint_to_stop()
        t0 = time.process_time()
        try:
            with one_thread():
                model.learn(total, callback=callback, reset_num_timesteps=first)
        finally:
            self.cpu += time.process_time() - t0
            if ours is not None:
                signal.signal(signal.SIGINT, ours)
        self.curve += callback.curve
        self.stopped = callback.stopped
        if ours is not None and stop_requested() == "interrupted":
            clear_stop()  # ours: the next call starts unstopped
        if checkpoint is not None:
            self.save(checkpoint, overwrite=True)
        return self

    # ------------------------------------------------------------------ results
    @property
    def machine(self):
        """The final (current) hypothesis, a :class:`~rmtk.machine.model.RewardMachine`."""
        return self.env.machine

    @property
    def hypotheses(self):
        """The history (:class:`~rmtk.rl.online.loop.Swap`\\ s), the first hypothesis first."""
        return tuple(self.env.loop.history)

    @property
    def traces(self):
        """The kept traces (:class:`~rmtk.rl.online.traces.Trace`\\ s)."""
        return self.env.loop.kept

    @property
    def steps(self) -> int:
        return 0 if self.model is None else int(self.model.num_timesteps)

    @property
    def final(self) -> FinalMachine:
        """The final machine with its unexercised pairs and whether it was still changing."""
        return final_machine(self.env.loop, self.steps)

    @property
    def inference_share(self) -> float:
        """The inference's share of the process CPU spent training."""
        return self.env.loop.inference_cpu / self.cpu if self.cpu else 0.0

    # ------------------------------------------------------------------ stop and resume
    def save(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """The agent, the machine, the history, the kept traces and the replay buffer in one archive
        at ``path``, written whole or not at all (:mod:`rmtk.rl.online.checkpoint`)."""
        from .checkpoint import write

        if self.model is None:
            raise RmtkError("nothing to save: learn() has not made the model yet")
        out = write(self, Path(path), overwrite=overwrite)
        self._wrote = Path(path)
        return out

    @classmethod
    def resume(cls, path: str | Path, env, labeler: Callable, algorithm=None, **kwargs) -> OnlineLearner:
        """A learner that goes on from the archive ``path`` (written by :meth:`save`): give the
        environment, the labeler, the algorithm and the settings of the saved run again."""
        from .checkpoint import read

        learner = cls(env, labeler, algorithm, **kwargs)
        read(learner, Path(path))
        return learner


def _agent():
    from .exploration import AgentExploration

    return AgentExploration()


def _evolve(settings: LoopSettings, **changes) -> LoopSettings:
    import attrs

    return attrs.evolve(settings, **changes)


def _sigint_to_stop():
    """While training, Ctrl-C requests a stop (the run ends at the next step, saved and flagged);
    a second Ctrl-C interrupts at once. Installed only on the main thread over Python's default
    handler (a caller's own handler, such as the command line's, is left alone); returns the
    handler to restore, or ``None``."""
    if threading.current_thread() is not threading.main_thread():
        return None
    current = signal.getsignal(signal.SIGINT)
    if current is not signal.default_int_handler:
        return None

    def handler(signum, frame):
        if stop_requested():
            raise KeyboardInterrupt
        request_stop("interrupted")

    signal.signal(signal.SIGINT, handler)
    return current


__all__ = ["ACTIONS", "DQN_DEFAULTS", "DQN_EXPLORE", "OnlineLearner", "check_algorithm", "default_exploration"]
