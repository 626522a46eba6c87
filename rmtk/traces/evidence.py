"""Reward traces as evidence (docs/design/rewards-evidence.md): what the world paid along
label words, beside the negative examples of the expert's policy (rmtk/negatives/miners.py).

A *reward trace* is a label word ``L(s_0) … L(s_T)`` and the rewards the steps earned: the
reward of step ``t`` is what its action earned, paid by the machine on the label of the next
state (docs/design/02-conventions.md, "The prefix convention"): ``r_t = δ_r(u_t, L(s_{t+1}))`` with
``u_t = δ*(u_I, L(s_0) … L(s_t))``. So each step is one *observation*: "the word so far,
followed by the letter ``L(s_{t+1})``, pays ``r_t``", a constraint on where the word ends
(the run variables of the SAT encoding) and on that node's reward on that letter. The last
step's reward is used only where the next label is known; NaN marks a reward not recorded.

* the data: :class:`rmtk.traces.rewards.RewardTraces`, the observations on a trie grouped by
  (trie node, letter, reward value) with their counts, which the encoder's clause family
  :func:`rmtk.sat.encoding.reward_outputs` (exact) or
  :func:`rmtk.sat.encoding.soft_reward_outputs` (noisy) consumes;
* :class:`RewardEvidence`: the strategy protocol (``observe(target, trie)``), and
  :class:`TraceRewards`, rmtk's strategy reading traces from data; :func:`observed_part` and
  :func:`graft` put them on the part of the trie they need, or on a prefix tree policy's;
* :func:`decode_rewards`: a machine's rewards from its runs (the observed values, by
  majority under noise), which rewards are free (no trace observes them), and the
  disagreements (the noisy steps);
* :func:`noise_interval`: the noise level and its Clopper-Pearson interval.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

import attrs
import numpy as np

from .._arrays import array_eq, bool_array, float_array
from ..errors import ModelError
from ..ptp.tree import Trie, TrieBuilder

if TYPE_CHECKING:  # imported where used: a learner reads this module, rarely counts traces here
    from .rewards import RewardTraces


def observed_part(traces: RewardTraces) -> RewardTraces:
    """The traces on the part of their trie that some observation needs: the words observed
    and their prefixes. A word no step observes after (a trajectory's last) constrains
    nothing, so its last transition is left free rather than called exercised."""
    trie = traces.trie
    need = np.zeros(trie.n_nodes, bool)
    need[0] = True
    need[traces.node] = True
    for level in trie.levels()[:0:-1]:
        need[trie.parent[level[need[level]]]] = True
    keep = np.flatnonzero(need)
    new = np.full(trie.n_nodes, -1, np.int64)
    new[keep] = np.arange(len(keep))
    parent = np.where(keep > 0, new[trie.parent[keep]], -1)
    pruned = Trie(parent, trie.letter[keep], trie.length[keep], compressed=trie.compressed)
    return attrs.evolve(traces, trie=pruned, node=new[traces.node])


def graft(traces: RewardTraces, trie: Trie) -> RewardTraces:
    """The traces re-keyed onto ``trie`` extended by their words (``trie``'s ids kept), so that
    reward observations and a prefix tree policy's negative examples share one trie."""
    if trie.compressed != traces.trie.compressed:
        raise ModelError(
            f"reward traces with compressed={traces.trie.compressed} cannot join a prefix tree with "
            f"compressed={trie.compressed}: count both with the same compress"
        )
    own = traces.trie
    builder = TrieBuilder.from_trie(trie, len(traces.propositions))
    at = np.zeros(own.n_nodes, np.int64)
    for level in own.levels()[1:]:
        at[level] = builder.children(at[own.parent[level]], own.letter[level])
    return attrs.evolve(traces, trie=builder.trie(trie.compressed), node=at[traces.node])


@runtime_checkable
class RewardEvidence(Protocol):
    """The RewardEvidence strategy (docs/design/rewards-evidence.md): what the world paid, as
    reward traces on a trie. Consumes the target (its MDP's labels count the data) and the
    prefix tree policy's trie (``None`` when learning from rewards alone); produces
    :class:`~rmtk.traces.rewards.RewardTraces` whose trie extends that one (its ids kept)."""

    def observe(self, target, trie: Trie | None, *, compress: bool = True) -> RewardTraces:
        """The reward traces, on ``trie`` extended by their words."""

    def compressed(self) -> bool | None:
        """Whether the words are compressed whatever ``observe`` is asked (counted already),
        or ``None``: as asked."""


@attrs.frozen
class TraceRewards:
    """Reward traces from ``data``: anything :func:`rmtk.traces.rewards.reward_traces` counts
    (demonstrations with rewards, a file with a ``reward`` column, a Parquet dataset, a
    recording, an :class:`~rmtk.ptp.empirical.EmpiricalPTP`), or the
    :class:`~rmtk.traces.rewards.RewardTraces` themselves. Only the words some step observes
    are kept (:func:`observed_part`)."""

    data: object

    def compressed(self) -> bool | None:
        from ..ptp.empirical import EmpiricalPTP
        from .rewards import RewardTraces

        if isinstance(self.data, RewardTraces):
            return self.data.trie.compressed
        return self.data.compress if isinstance(self.data, EmpiricalPTP) else None

    def observe(self, target, trie: Trie | None, *, compress: bool = True) -> RewardTraces:
        from .rewards import RewardTraces, reward_traces

        traces = self.data
        if not isinstance(traces, RewardTraces):
            traces = reward_traces(traces, target, compress=compress)
        traces = observed_part(traces)
        return traces if trie is None else graft(traces, trie)


@attrs.frozen
class DecodedRewards:
    """A machine's rewards read from the observations along its runs.

    Attributes:
        delta_r: ``(n, K)`` the observed reward of each (node, letter); 0 where free.
        observed: ``(n, K)`` which rewards some observation fixes (the others are free).
        disagreements: observed steps whose reward differs from ``delta_r`` (0 for exact
            traces; under noise, the steps the machine calls noisy).
        steps: observed steps in all.
    """

    delta_r: np.ndarray = attrs.field(converter=float_array, eq=array_eq)
    observed: np.ndarray = attrs.field(converter=bool_array, eq=array_eq)
    disagreements: int
    steps: int

    @property
    def free(self) -> list[tuple[int, int]]:
        """The (node, letter) rewards no observation fixes."""
        return [(int(i), int(k)) for i, k in np.argwhere(~self.observed)]


def value_classes(traces: RewardTraces) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rewards, ascending, and the index of each row's value among them (the
    values are rounded, so equal means equal: rmtk/data/rewards.py)."""
    values, index = np.unique(traces.value, return_inverse=True)
    return values, index.astype(np.int64)


def decode_rewards(delta_u: np.ndarray, traces: RewardTraces, initial: int = 0) -> DecodedRewards:
    """The rewards of the machine ``delta_u`` (over the traces' propositions) given the
    traces: each (node, letter) pays the value observed most often there (equal counts: the
    smallest value), which the exact clauses make the only one and the MaxSAT optimum the
    majority."""
    n, K = delta_u.shape
    values, index = value_classes(traces)
    R = max(len(values), 1)
    at = traces.trie.run(delta_u, initial)[traces.node]
    table = np.zeros((n, K, R), np.int64)
    np.add.at(table, (at, traces.letter, index), traces.count)
    seen = table.sum(axis=2)
    best = np.argmax(table, axis=2)  # the first of equal counts: the smallest value
    delta_r = np.where(seen > 0, values[best] if len(values) else 0.0, 0.0)
    agree = int(np.take_along_axis(table, best[..., None], axis=2).sum())
    return DecodedRewards(delta_r, seen > 0, traces.n_observations - agree, traces.n_observations)


@attrs.frozen
class NoiseEstimate:
    """The noise level of reward traces: the share of observed steps whose reward differs
    from the learned machine's, with a two-sided Clopper-Pearson interval at ``confidence``.
    It counts the steps the optimum calls noisy, so a noisy reward that agrees with another
    value the machine could pay (a value replaced by itself, or a majority of noise on a rarely
    observed transition) goes unseen: the estimate leans low on sparse data."""

    disagreements: int
    steps: int
    low: float
    high: float
    confidence: float = 0.95

    @property
    def rate(self) -> float:
        return self.disagreements / self.steps if self.steps else 0.0

    def __str__(self) -> str:
        pct = round(100 * self.confidence)
        return (
            f"noise {share(self.rate)} ({self.disagreements} of {self.steps} observed steps disagree; "
            f"{pct}% interval {share(self.low)} to {share(self.high)})"
        )


def share(x: float) -> str:
    """A share as text with the digits that show it: four decimals from 0.001 up (and 0 itself),
    else two significant digits in scientific notation (an interval of 0 to 0.0000095 is not
    "0.0000 to 0.0000")."""
    return f"{x:.4f}" if x == 0 or abs(x) >= 1e-3 else f"{x:.1e}"


def warm_noise_interval() -> None:
    """Import what :func:`noise_interval` needs now (scipy.special: 0.25-0.36 CPU s), so that a
    run stopped later reports its noise without that wait (docs/benchmarks/21-stopped-runs.md)."""
    import importlib

    importlib.import_module("scipy.special")


def noise_interval(disagreements: int, steps: int, confidence: float = 0.95) -> NoiseEstimate:
    """The :class:`NoiseEstimate` of ``disagreements`` among ``steps`` (Clopper-Pearson: the
    beta quantiles, by ``scipy.special.betaincinv``, which ``scipy.stats.beta.ppf`` calls;
    importing scipy.stats alone takes seconds)."""
    from scipy.special import betaincinv  # type: ignore[import-untyped]

    if not 0 < confidence < 1:
        raise ModelError(f"confidence must lie in (0, 1), got {confidence}")
    a = 1 - confidence
    k, m = int(disagreements), int(steps)
    low = 0.0 if k == 0 else float(betaincinv(k, m - k + 1, a / 2))
    high = 1.0 if k >= m else float(betaincinv(k + 1, m - k, 1 - a / 2))
    return NoiseEstimate(k, m, low, high, confidence)
