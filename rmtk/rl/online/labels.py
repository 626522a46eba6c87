"""Inference in the online loop when the labels come through a detector that errs
(docs/guide/15-noisy-labels.md, docs/design/15-label-noise.md): :class:`BelievedLabels`.

The labeler :class:`~rmtk.label_noise.online.StateBeliefLabels` reads each step's letter as the
state's most likely one from every detection there so far, so an early visit may be read wrong,
and the trace it lands in is kept with that wrong letter. Kept as recorded, such a trace forces
a machine that explains the wrong letter. This strategy keeps the states of each trace
(``Trace.states``) and, at each inference:

1. reads every kept trace anew through the detections piled up since
   (:meth:`BelievedLabels.reread`; the loop also rereads each finished trace before judging it,
   and infers again, without a counterexample, when the detections come to decide a state's
   letter otherwise than a kept trace holds it: :meth:`BelievedLabels.stale`);
2. takes, among the states these traces visit, those the detections leave in doubt (a rival
   letter more than ``doubt`` times as likely, :class:`~rmtk.label_noise.evidence.LabelBeliefs`)
   and gives each a placeholder letter of its own;
3. finds the smallest machine that pays what every trace was paid under some choice of the
   doubtful states' letters, the choice of least cost at that size, a letter disbelieved costing
   its log-likelihood ratio (:class:`~rmtk.label_noise.search.SimplestChoosingEncoder`, weighted
   MaxSAT over the reward evidence, as offline in :mod:`rmtk.label_noise.learner`);
4. reads the traces with the letters chosen and infers on them with exact rewards
   (:class:`~rmtk.sat.encoders.SimplestEncoder`): the machine, and the traces the loop keeps.

A wrong reading is then paid for rather than forced: while a state is in doubt the machine may
disbelieve its letter when that spares a node, and once the detections decide it every kept
trace reads it right. Rewards are taken as exact.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import attrs
import numpy as np

from ...errors import ModelError
from ...label_noise.evidence import DOUBT
from ...label_noise.online import StateBeliefLabels
from .inference import InferenceCapabilities, Inferred, _fit, _learn
from .traces import Trace, reward_traces_of

#: Machines (with their choices of letters) listed when choosing the doubtful states' letters:
#: the choice taken is the first of them in the order of its letters (as offline,
#: rmtk/label_noise/learner.py).
CHOICE_SOLUTIONS = 10


def _labels(instance, attribute, value) -> None:
    if not isinstance(value, StateBeliefLabels):
        raise ModelError(
            f"BelievedLabels.labels must be the run's StateBeliefLabels (the labeler), not {type(value).__name__}"
        )


def _doubt(instance, attribute, value) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise ModelError(f"BelievedLabels.doubt must lie in (0, 1), got {value!r}")


@attrs.frozen
class BelievedLabels(InferenceCapabilities):
    """Exact rewards, the letters believed from a detector's detections (module docstring).

    Args:
        labels: the run's labeler, a :class:`~rmtk.label_noise.online.StateBeliefLabels` (the
            same object given to the learner: its detections are what the traces are read by).
        doubt: a state's letter is decided when no rival is more than ``doubt`` times as likely;
            otherwise it is chosen with the machine.
    """

    labels: StateBeliefLabels = attrs.field(validator=_labels)
    doubt: float = attrs.field(default=DOUBT, validator=_doubt)
    rereads: bool = attrs.field(default=True, init=False)

    @property
    def tolerance(self) -> float:
        return 0.0

    def _states(self, trace: Trace) -> np.ndarray:
        if trace.states is None:
            raise ModelError(
                f"trace of episode {trace.episode} has no states: BelievedLabels reads letters from the states of a "
                "Discrete observation space (the ones StateBeliefLabels counts)"
            )
        return trace.states

    def reread(self, trace: Trace, letters: np.ndarray | None = None) -> Trace:
        """``trace`` with each step's letter its state's believed one (``letters``, per state;
        default the labeler's most likely); a state never detected keeps its recorded letter."""
        states = self._states(trace)
        believed = self.labels.letters() if letters is None else letters
        if states.size and states.max() >= len(believed):
            raise ModelError(f"trace of episode {trace.episode}: a state outside the labeler's {len(believed)}")
        now = believed[states]
        now = np.where(now >= 0, now, trace.letters)
        return trace if np.array_equal(now, trace.letters) else attrs.evolve(trace, letters=now)

    def stale(self, traces: Sequence[Trace]) -> bool:
        """Whether a state the detections now decide (no rival within ``doubt``) carries another
        letter in some kept trace than the one decided (a reading, or a choice, since disproved)."""
        beliefs = self.labels.beliefs(self.doubt)
        decided = (beliefs.visits > 0) & ~beliefs.doubtful
        for t in traces:
            s = self._states(t)
            here = decided[s]
            if np.any(beliefs.letter[s][here] != t.letters[here]):
                return True
        return False

    def infer(
        self, traces: Sequence[Trace], propositions: Sequence[str], max_nodes: int, time_limit: float | None
    ) -> Inferred:
        from ...label_noise.encoding import Choices
        from ...label_noise.search import SimplestChoosingEncoder, chosen_letters
        from ...traces.evidence import TraceRewards

        t0 = time.process_time()
        beliefs = self.labels.beliefs(self.doubt)
        letters = self.labels.letters()
        visited = np.zeros(len(letters), bool)
        for t in traces:
            visited[self._states(t)] = True
        choices = Choices.of(beliefs, among=visited)
        message = ""
        if choices.n_states:
            K = len(propositions)
            marked = letters.copy()
            marked[choices.states] = K + np.arange(choices.n_states)
            names = [*propositions, *(f"?{int(s)}" for s in choices.states)]
            observed = reward_traces_of([self.reread(t, marked) for t in traces], names)
            encoder = SimplestChoosingEncoder(choices=choices)
            result = _fit(
                TraceRewards(observed), encoder, names, time_limit, max_nodes=int(max_nodes), solutions=CHOICE_SOLUTIONS
            )
            if result.stopped is not None or not result.solutions:
                stopped = None if result.stopped is None else str(result.stopped)
                return Inferred(
                    None, time.process_time() - t0, len(traces), observed.n_observations, result.search.message,
                    bool(result.search.complete), stopped,
                )  # fmt: skip
            options = sorted({tuple(chosen_letters(choices, s.dropped).tolist()) for s in result.solutions})
            letters[choices.states] = options[0]
            cost = result.search.cost
            message = (
                f"{choices.n_states} doubtful states' letters chosen"
                + (f", {cost / 1000:.3f} nats of detections disbelieved" if cost is not None else "")
                + (f" ({len(options)} choices equally likely: the first in letter order)" if len(options) > 1 else "")
            )
        read = tuple(self.reread(t, letters) for t in traces)
        out = _learn(TraceRewards, read, propositions, max_nodes, time_limit)
        return attrs.evolve(
            out, cpu=time.process_time() - t0, read=read, message="; ".join(m for m in (message, out.message) if m)
        )


__all__ = ["CHOICE_SOLUTIONS", "BelievedLabels"]
