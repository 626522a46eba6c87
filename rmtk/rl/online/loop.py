"""The online loop's state (docs/guide/14-online.md): the hypothesis, the kept traces, the
history of swaps, and what happens when an episode ends (:meth:`OnlineLoop.finished`): the
trace is checked against the hypothesis; a counterexample is kept and the next hypothesis is
inferred from every kept trace (:mod:`rmtk.rl.online.inference`), numbered to keep the network's
node slots (:func:`~rmtk.rl.online.hypothesis.aligned`).

Nothing here imports torch: the loop is the same whichever agent trains on it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import attrs
import numpy as np

from ...errors import DataError, ModelError, RmtkError
from ...machine.model import RewardMachine
from ...words import plural
from .hypothesis import Hypothesis, aligned, ending, trivial, with_end
from .inference import ExactRewards, Inference, InferenceCapabilities
from .replay import AsRead, ReplayLetters
from .traces import KeepCounterexamples, Trace, TraceKeeping


class NodeBoundError(RmtkError):
    """The kept traces need more nodes than the node bound allows."""


class MarkovianRewardError(RmtkError):
    """The environment's reward is a function of the label alone: no reward machine was needed."""


@attrs.frozen
class Swap:
    """One hypothesis of the run's history: the ``machine``, the environment ``step`` and
    ``episode`` it appeared at (0 for the first), the ``counterexample`` that caused it (``None``
    for the first), the step of that episode where the previous hypothesis paid ``expected``
    and the environment ``paid`` (``position``), the inference's process ``cpu`` seconds and the
    ``traces`` it read; a swap of a statistical inference (noisy rewards) has no counterexample
    but the kept traces' ``disagreeing`` steps of ``observed``."""

    machine: RewardMachine
    step: int = 0
    episode: int = 0
    counterexample: Trace | None = attrs.field(default=None, eq=False, repr=False)
    position: int | None = None
    expected: float | None = None
    paid: float | None = None
    cpu: float = 0.0
    traces: int = 0
    disagreeing: int | None = None
    observed: int | None = None
    reread: bool = False

    def line(self, propositions: Sequence[str]) -> str:
        """One line: where the counterexample was and what the new hypothesis is."""
        if self.reread:
            return (
                f"step {self.step} (episode {self.episode}): the labels now decide a letter the kept traces were "
                f"read with otherwise; read anew -> {plural(self.machine.n_nodes, 'node')} from "
                f"{plural(self.traces, 'trace')}, {self.cpu:.2f} s CPU"
            )
        if self.disagreeing is not None:
            return (
                f"step {self.step} (episode {self.episode}): the kept traces disagree with the hypothesis on "
                f"{self.disagreeing} of {self.observed} steps, more than the noise explains -> "
                f"{plural(self.machine.n_nodes, 'node')} from {plural(self.traces, 'trace')}, {self.cpu:.2f} s CPU"
            )
        if self.counterexample is None:
            return f"step {self.step}: the first hypothesis, {plural(self.machine.n_nodes, 'node')}"
        assert self.position is not None, "a counterexample has its position"
        word = [propositions[k] for k in self.counterexample.letters[: self.position + 1]]
        tail = " ".join(word[-6:])
        more = "... " if len(word) > 6 else ""
        letter = propositions[int(self.counterexample.letters[self.position + 1])]
        if self.expected != self.paid:
            what = f"the hypothesis paid {self.expected:g}, the environment {self.paid:g}"
        elif self.position == len(self.counterexample.rewards) - 1 and self.counterexample.terminated:
            what = "the episode ended where the hypothesis went on: to its end node, no inference"
        else:
            what = "the episode went on where the hypothesis had ended it"
        return (
            f"step {self.step} (episode {self.episode}): after {more}{tail} then {letter}, {what} -> "
            f"{plural(self.machine.n_nodes, 'node')} from {plural(self.traces, 'trace')}, {self.cpu:.2f} s CPU"
        )


def _bound(instance, attribute, value) -> None:
    from ...validators import MAX_NODES

    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_NODES:
        raise ModelError(f"max_nodes must be a whole number from 1 to {MAX_NODES}, got {value!r}")


def _optional_count(instance, attribute, value) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ModelError(f"{attribute.name} must be a whole number ≥ 1 or None, got {value!r}")


@attrs.frozen
class LoopSettings:
    """What the loop is told: the node bound, the strategies, the seed of its draws, the inference's
    safety ``time_limit`` (seconds; it stops the run, flagged), ``markov_after`` (the episodes paid
    a reward after which a one-node hypothesis means the reward is Markovian; ``None``: never
    concluded), ``window`` (the agent-led episodes the success rate is taken over) and ``replay``
    (the letters the replay buffer replays its steps with, :mod:`rmtk.rl.online.replay`)."""

    max_nodes: int = attrs.field(default=8, validator=_bound)
    inference: Inference = attrs.field(factory=ExactRewards)
    keeping: TraceKeeping = attrs.field(factory=KeepCounterexamples)
    seed: int = 0
    time_limit: float | None = 300.0
    markov_after: int | None = attrs.field(default=20, validator=_optional_count)
    window: int = 100
    replay: ReplayLetters = attrs.field(factory=AsRead)


class OnlineLoop:
    """The state of one online run (module docstring). ``propositions`` is the labeler's alphabet."""

    def __init__(self, propositions: Sequence[str], settings: LoopSettings | None = None):
        self.propositions = tuple(propositions)
        self.settings = settings or LoopSettings()
        self.hypothesis = Hypothesis.of(trivial(self.propositions))
        self.kept: tuple[Trace, ...] = ()
        self.history: list[Swap] = [Swap(self.hypothesis.machine)]
        self.episodes = 0
        self.steps = 0
        self.ordinary = 0  # episodes that were no counterexample (reservoir sampling counts them)
        self.rewarded = 0  # episodes that earned a non-zero reward
        self.inference_cpu = 0.0
        self.rng = np.random.default_rng([int(self.settings.seed), 7])
        self.exercised = np.zeros((1, len(self.propositions)), bool)
        self.recent: deque = deque(maxlen=int(self.settings.window))
        self.stopped: str | None = None
        self.capabilities = InferenceCapabilities.of(self.settings.inference)
        self._wrong: dict[int, tuple[int, int]] = {}  # statistical: id(kept trace) -> (disagreeing, steps)
        self._checked = 0  # statistical: the kept steps at the last inference

    # ------------------------------------------------------------------ queries
    @property
    def machine(self) -> RewardMachine:
        return self.hypothesis.machine

    @property
    def swaps(self) -> int:
        return len(self.history) - 1

    def success(self) -> float | None:
        """The share of the last ``window`` agent-led episodes that earned a positive return."""
        return float(np.mean(self.recent)) if self.recent else None

    def unexercised(self) -> list[tuple[str, str]]:
        """The (node, letter) pairs of the hypothesis' reachable nodes that no recorded step read
        (since the hypothesis appeared, and in every kept trace); its terminal node has none."""
        m = self.machine
        reach = [u for u in m.reachable() if not self.hypothesis.terminal[u]]
        return [(m.nodes[u], m.alphabet[k]) for u in reach for k in range(len(m.alphabet)) if not self.exercised[u, k]]

    # ------------------------------------------------------------------ the loop
    def assume(self, machine: RewardMachine) -> Hypothesis:
        """Take ``machine`` (over the labeler's alphabet, at most ``max_nodes`` nodes) as the
        hypothesis from here on, e.g. a machine known beforehand; the history records it as a
        hypothesis with no counterexample."""
        if tuple(machine.alphabet) != self.propositions:
            machine = machine.with_alphabet_order(self.propositions)
        if machine.n_nodes > self.settings.max_nodes:
            raise ModelError(
                f"machine {machine.name!r} has {machine.n_nodes} nodes, above max_nodes={self.settings.max_nodes}"
            )
        self._swap(Hypothesis.of(machine))
        self.history.append(Swap(machine, self.steps, self.episodes))
        return self.hypothesis

    def _swap(self, new: Hypothesis) -> None:
        self.hypothesis = new
        self.exercised = np.zeros(new.machine.delta_u.shape, bool)
        self.exercised[new.terminal] = True  # nothing happens there: the episode has ended
        for t in self.kept:
            self._mark(t)

    def _mark(self, trace: Trace) -> None:
        if len(trace.rewards):
            self.exercised[self.hypothesis.runs(trace.letters), trace.letters[1:]] = True

    def finished(self, trace: Trace) -> Hypothesis | None:
        """An episode ended (``trace``; its ``episode`` and ``step`` set by the caller): keep it,
        and when it disagrees with the hypothesis infer the next one. Returns the new hypothesis,
        or ``None``. A node bound the traces exceed raises :class:`NodeBoundError`; an inference
        stopped by its time limit or a stop request sets ``stopped`` (the run ends there)."""
        s = self.settings
        self.episodes += 1
        self.steps = trace.step
        if trace.paid != 0:
            self.rewarded += 1
        if not trace.explored:
            self.recent.append(trace.paid > 0)
        if self.stopped is not None:
            return None
        if self.capabilities.statistical:
            return self._statistical(trace)
        if self.capabilities.rereads:
            trace = self.capabilities.reread(trace)
        at = trace.disagreement(self.hypothesis, s.inference.tolerance)
        trace = attrs.evolve(trace, counterexample=at is not None)
        if at is None:
            self.ordinary += 1
        self.kept = s.keeping.keep(self.kept, trace, self.ordinary, self.rng)
        self._mark(trace)
        if at is None:
            self._markovian()
            if self.capabilities.rereads and self.capabilities.stale(self.kept):
                return self._read_anew(trace)
            return self._ended(trace)
        if not any(t is trace for t in self.kept):
            raise RmtkError(f"the trace keeping strategy {type(s.keeping).__name__} dropped a counterexample")
        expected = float(trace.expected(self.hypothesis)[at])
        position = next(i for i, t in enumerate(self.kept) if t is trace)
        found = self._infer(
            trace, "every reward of the", "or the rewards depend on something the labeler does not report"
        )
        if found is None:
            return None
        new, cpu = found
        trace = self.kept[position]  # as the inference read it
        if trace.disagreement(new, s.inference.tolerance) is not None:
            raise RmtkError(f"the inferred machine does not pay what counterexample episode {trace.episode} was paid")
        paid = float(trace.rewards[at])
        return self._adopt(
            new, Swap(new.machine, trace.step, trace.episode, trace, at, expected, paid, cpu, len(self.kept))
        )

    def _infer(self, trace: Trace, pays: str, or_else: str) -> tuple[Hypothesis, float] | None:
        """The next hypothesis from the kept traces and the inference's CPU seconds (``None``: the
        inference was stopped, and the run with it); a node bound too small raises."""
        s = self.settings
        if self.capabilities.rereads:
            self.kept = tuple(self.capabilities.reread(t) for t in self.kept)
        inferred = s.inference.infer(self.kept, self.propositions, s.max_nodes, s.time_limit)
        self.inference_cpu += inferred.cpu
        if inferred.stopped is not None:
            self.stopped = f"inference at step {trace.step} {inferred.stopped}"
            return None
        if inferred.read is not None:
            if len(inferred.read) != len(self.kept):
                raise RmtkError(f"the inference read {len(inferred.read)} traces of the {len(self.kept)} kept")
            self.kept = tuple(inferred.read)
        if inferred.machine is None:
            raise NodeBoundError(
                f"no reward machine of at most max_nodes={s.max_nodes} nodes pays {pays} {len(self.kept)} traces "
                f"kept at step {trace.step} ({inferred.message}): raise max_nodes, {or_else}"
            )
        machine = aligned(inferred.machine, self.machine, [t.letters for t in self.kept])
        return Hypothesis.of(with_end(machine, self.kept, s.max_nodes)), inferred.cpu

    def _read_anew(self, trace: Trace) -> Hypothesis | None:
        """The labels now decide a letter otherwise than the kept traces hold it
        (:meth:`InferenceCapabilities.stale`): infer from the traces read anew, and take the
        machine when it differs (recorded as a swap without counterexample)."""
        found = self._infer(
            trace, "every reward of the", "or the rewards depend on something the labeler does not report"
        )
        if found is None:
            return None
        new, cpu = found
        wrong = [t.episode for t in self.kept if t.disagreement(new, self.settings.inference.tolerance) is not None]
        if wrong:
            raise RmtkError(f"the inferred machine does not pay what kept episode {wrong[0]} was paid")
        if new.machine == self.machine:
            return None
        return self._adopt(
            new, Swap(new.machine, trace.step, trace.episode, cpu=cpu, traces=len(self.kept), reread=True)
        )

    def _statistical(self, trace: Trace) -> Hypothesis | None:
        """An episode under a statistical inference (noisy rewards): kept as any other; the
        hypothesis is inferred again when the kept traces disagree with it on more steps than
        the noise explains (:meth:`InferenceCapabilities.due`), checked once the kept steps
        have grown by a quarter since the last inference (so that a hypothesis the data cannot
        improve is not inferred again at every episode)."""
        s = self.settings
        self.ordinary += 1
        self.kept = s.keeping.keep(self.kept, trace, self.ordinary, self.rng)
        self._mark(trace)
        wrong = {id(t): self._wrong.get(id(t)) or self._count(t) for t in self.kept}
        self._wrong = wrong
        disagreeing, steps = (sum(x) for x in zip(*wrong.values())) if wrong else (0, 0)
        if steps < 1.25 * self._checked or not self.capabilities.due(disagreeing, steps):
            return self._ended(trace)
        self._checked = steps
        found = self._infer(trace, "within the noise the rewards of the", "or the noise is above the level given")
        if found is None:
            return None
        new, cpu = found
        kept = len(self.kept)
        self._adopt(
            new,
            Swap(new.machine, trace.step, trace.episode, cpu=cpu, traces=kept, disagreeing=disagreeing, observed=steps),
        )
        self._wrong = {id(t): self._count(t) for t in self.kept}
        return new

    def _adopt(self, new: Hypothesis, swap: Swap) -> Hypothesis:
        self._swap(new)
        self.history.append(swap)
        return new

    def _count(self, trace: Trace) -> tuple[int, int]:
        return int(trace.wrong(self.hypothesis).sum()), len(trace.rewards)

    def _ended(self, trace: Trace) -> Hypothesis | None:
        """A terminated episode that agreed with the hypothesis: when its last transition ended
        every episode the kept traces (and this one) took it in, the hypothesis sends it to its
        end node (:func:`~rmtk.rl.online.hypothesis.with_end`), recorded as a swap without inference."""
        if not trace.terminated or not len(trace.rewards):
            return None
        h = self.hypothesis
        u, k = int(h.runs(trace.letters)[-1]), int(trace.letters[-1])
        if h.terminal[h.next[u, k]] or not ending(h.machine, (*self.kept, trace))[u, k]:
            return None
        machine = with_end(h.machine, (*self.kept, trace), self.settings.max_nodes)
        if machine == h.machine:
            return None
        self._swap(Hypothesis.of(machine))
        self._wrong = {id(t): self._count(t) for t in self.kept} if self.capabilities.statistical else {}
        position = len(trace.rewards) - 1
        paid = float(trace.rewards[position])
        self.history.append(Swap(machine, trace.step, trace.episode, trace, position, paid, paid, 0.0, len(self.kept)))
        return self.hypothesis

    def _markovian(self) -> None:
        """The stated test of a Markovian reward (docs/guide/14-online.md): ``markov_after``
        episodes paid a reward, and every hypothesis so far had one node."""
        after = self.settings.markov_after
        if after is None or self.rewarded < after or any(_nodes(h.machine) > 1 for h in self.history):
            return
        if not self.hypothesis.pays:
            return
        m = self.machine
        paid = ", ".join(f"{m.alphabet[k]}: {m.delta_r[0, k]:g}" for k in np.flatnonzero(m.delta_r[0]))
        raise MarkovianRewardError(
            f"the environment's reward is Markovian in the labels: after {self.rewarded} episodes paid a reward "
            f"({self.episodes} episodes, {self.steps} steps), a one-node machine that pays per label ({paid}) still "
            "pays every reward of every episode; no reward machine was needed (train on the environment itself, "
            "or pass markov_after=None to keep learning)"
        )


def _nodes(machine: RewardMachine) -> int:
    """The nodes of ``machine`` but its end node."""
    return int((~Hypothesis.of(machine).terminal).sum())


def check_letter(alphabet, label, episode: int, step: int) -> int:
    """The proposition index of ``label`` (:class:`~rmtk.gym.labels.Alphabet`), with an error
    naming the episode and step."""
    where = f"episode {episode}, " + (f"step {step}" if step else "reset")
    try:
        return alphabet.index(label, where)
    except DataError as e:
        raise DataError(f"OnlineEnv: {e}") from None


__all__ = ["LoopSettings", "MarkovianRewardError", "NodeBoundError", "OnlineLoop", "Swap", "check_letter"]
