"""Inference in the online loop (docs/guide/14-online.md): when a trace disagrees with the
hypothesis, the smallest machine that pays what every kept trace was paid, from the rewards
alone (rmtk's :class:`~rmtk.learner.pipeline.Learner` with reward evidence, docs/design/rewards-evidence.md).

The Inference strategy says when a trace disagrees and how the next hypothesis is inferred:

* :class:`ExactRewards` (the default): rewards are exact; a trace disagrees where the
  hypothesis pays another value; :class:`~rmtk.sat.encoders.SimplestEncoder` (the smallest size,
  then the fewest moving transitions, the first machine in canonical order);
* :class:`TolerantRewards`: rewards scatter within ``±delta`` of the machine's outputs (the
  continuous noise of the stochastic-reward-machine paper's Mining task); a trace disagrees where
  a reward is more than ``delta`` from the output;
  :class:`~rmtk.traces.tolerance.TolerantRewards` reduces it to exact evidence;
* :class:`ReplacedRewards`: each reward is, with probability at most ``epsilon``, another value
  than the machine's (:func:`rmtk.traces.noise.replaced_rewards`). No single episode shows the
  hypothesis wrong, so this strategy is *statistical* (:class:`InferenceCapabilities`): the loop
  infers again when the kept traces, together, disagree with the hypothesis on more steps than
  noise at ``epsilon`` explains (a binomial quantile at ``confidence``), and the machine inferred
  is the smallest whose fewest noisy steps (:class:`~rmtk.sat.encoders.SimplestNoisyRewardEncoder`,
  weighted MaxSAT at each size in turn) noise at ``epsilon`` explains.

What bounds one inference and never steers it: the kept traces (their number,
:class:`~rmtk.rl.online.traces.KeepCounterexamples`) and the node bound ``max_nodes``; the
search is exact within them, so the same traces give the same machine on any machine and under
any load. A ``time_limit`` (seconds) is a safety stop only: an inference it cuts returns no
machine, and the loop ends the run there, flagged (``Inferred.stopped``), rather than go on
with a machine the clock chose.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import attrs

from ...errors import ModelError
from ...learner.capabilities import Capabilities
from ...machine.model import RewardMachine
from ...words import plural
from .traces import Trace, reward_traces_of


@attrs.frozen
class Inferred:
    """One inference: the ``machine`` (``None`` when none was found or the search was stopped),
    its process ``cpu`` seconds, the ``traces`` and rewarded ``steps`` it read, the search's
    ``message``, ``complete`` (every smaller size ruled out) and ``stopped`` (why a time limit or
    a stop request cut it, else ``None``)."""

    machine: RewardMachine | None
    cpu: float
    traces: int
    steps: int
    message: str = ""
    complete: bool = True
    stopped: str | None = None


class InferenceCapabilities(Capabilities):
    """What an Inference strategy can do beyond its protocol, with the defaults of one that does
    not say."""

    __slots__ = ()

    #: Whether no single trace shows the hypothesis wrong (noisy rewards); then the loop asks
    #: :meth:`due` after each episode instead of treating a disagreeing trace as a
    #: counterexample. Default ``False``.
    statistical: bool = False

    def due(self, disagreeing: int, steps: int) -> bool:
        """Whether ``disagreeing`` of the kept traces' ``steps`` are more than noise explains
        (statistical strategies). Default: never."""
        return False


@runtime_checkable
class Inference(Protocol):
    """The Inference strategy (module docstring): when a trace disagrees with a hypothesis, and
    the machine the kept traces give."""

    @property
    def tolerance(self) -> float:
        """How far a paid reward may lie from the hypothesis' output without disagreeing."""

    def infer(
        self, traces: Sequence[Trace], propositions: Sequence[str], max_nodes: int, time_limit: float | None
    ) -> Inferred:
        """The smallest machine of at most ``max_nodes`` nodes that pays what ``traces`` were paid."""


def _fit(evidence, encoder, propositions, time_limit: float | None, **sizes):
    from ...learner.pipeline import Learner
    from ...mdp.space import Space

    return Learner(ptp=None, rewards=evidence, encoder=encoder, max_solutions=1, time_limit=time_limit, **sizes).fit(
        Space(1, 1, tuple(propositions), name="labels")
    )


def _learn(evidence, traces: Sequence[Trace], propositions, max_nodes: int, time_limit: float | None) -> Inferred:
    from ...sat.encoders import SimplestEncoder

    t0 = time.process_time()
    observed = reward_traces_of(traces, propositions)
    result = _fit(evidence(observed), SimplestEncoder(), propositions, time_limit, max_nodes=int(max_nodes))
    cpu = time.process_time() - t0
    stopped = None if result.stopped is None else str(result.stopped)
    machine = result.machines[0] if result.machines and stopped is None else None
    if machine is not None:
        machine = attrs.evolve(machine, name="hypothesis")
    return Inferred(
        machine, cpu, len(traces), observed.n_observations, result.search.message, bool(result.search.complete), stopped
    )


@attrs.frozen
class ExactRewards(InferenceCapabilities):
    """Exact rewards (module docstring)."""

    @property
    def tolerance(self) -> float:
        return 0.0

    def infer(
        self, traces: Sequence[Trace], propositions: Sequence[str], max_nodes: int, time_limit: float | None
    ) -> Inferred:
        from ...traces.evidence import TraceRewards

        return _learn(TraceRewards, traces, propositions, max_nodes, time_limit)


def _half_width(instance, attribute, value) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    if not ok:
        raise ModelError(f"TolerantRewards.delta must be a finite number > 0 (the noise half-width), got {value!r}")


@attrs.frozen
class TolerantRewards(InferenceCapabilities):
    """Rewards within ``±delta`` of the machine's outputs (module docstring)."""

    delta: float = attrs.field(validator=_half_width)

    @property
    def tolerance(self) -> float:
        return float(self.delta)

    def infer(
        self, traces: Sequence[Trace], propositions: Sequence[str], max_nodes: int, time_limit: float | None
    ) -> Inferred:
        from ...traces.tolerance import TolerantRewards as Within

        return _learn(lambda rt: Within(rt, self.delta), traces, propositions, max_nodes, time_limit)


def _level(instance, attribute, value) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1
    if not ok:
        raise ModelError(f"ReplacedRewards.{attribute.name} must lie strictly between 0 and 1, got {value!r}")


def noise_bound(steps: int, epsilon: float, confidence: float) -> int:
    """The most steps of ``steps`` that noise replacing each reward with probability ``epsilon``
    replaces, at ``confidence`` (the binomial quantile, scipy's ``bdtrik``, rounded up)."""
    from scipy.special import bdtrik  # type: ignore[import-untyped]

    if steps <= 0:
        return 0
    return min(int(steps), int(math.ceil(float(bdtrik(confidence, steps, epsilon)))))


@attrs.frozen
class ReplacedRewards(InferenceCapabilities):
    """Rewards replaced with probability at most ``epsilon`` (module docstring); ``confidence`` of
    the binomial bound that says how many noisy steps ``epsilon`` explains."""

    epsilon: float = attrs.field(validator=_level)
    confidence: float = attrs.field(default=0.999, validator=_level)
    statistical: bool = attrs.field(default=True, init=False)

    @property
    def tolerance(self) -> float:
        return 0.0

    def due(self, disagreeing: int, steps: int) -> bool:
        return disagreeing > noise_bound(steps, self.epsilon, self.confidence)

    def infer(
        self, traces: Sequence[Trace], propositions: Sequence[str], max_nodes: int, time_limit: float | None
    ) -> Inferred:
        from ...sat.encoders import SimplestNoisyRewardEncoder
        from ...traces.evidence import TraceRewards

        t0 = time.process_time()
        observed = reward_traces_of(traces, propositions)
        message = ""
        for n in range(1, int(max_nodes) + 1):
            result = _fit(TraceRewards(observed), SimplestNoisyRewardEncoder(), propositions, time_limit, nodes=n)
            if result.stopped is not None:
                return Inferred(
                    None, time.process_time() - t0, len(traces), observed.n_observations, "", False, str(result.stopped)
                )
            if not result.machines:
                continue
            decoded = result.decoded[0]
            bound = noise_bound(decoded.steps, self.epsilon, self.confidence)
            message = (
                f"{plural(n, 'node')}: {decoded.disagreements} of {decoded.steps} steps noisy, noise explains {bound}"
            )
            if decoded.disagreements <= bound:
                machine = attrs.evolve(result.machines[0], name="hypothesis")
                return Inferred(machine, time.process_time() - t0, len(traces), observed.n_observations, message)
        return Inferred(None, time.process_time() - t0, len(traces), observed.n_observations, message)


__all__ = [
    "ExactRewards",
    "Inference",
    "InferenceCapabilities",
    "Inferred",
    "ReplacedRewards",
    "TolerantRewards",
    "noise_bound",
]
