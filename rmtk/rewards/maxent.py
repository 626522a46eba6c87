"""The MaxEntIRL strategy of the :class:`~rmtk.learner.pipeline.Learner`: rewards for the learned
machines (paper section 3.2, end; Algorithm 3), computed with :mod:`rmtk.rewards.recovery`."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import attrs
import numpy as np

from ..errors import RmtkError
from ..learner.capabilities import Capabilities
from ..limits import NEVER, Deadline
from ..machine.model import RewardMachine
from ..mdp.model import LabeledMDP
from ..progress import Progress
from ..ptp.tree import PrefixTreePolicy

if TYPE_CHECKING:
    from ..sat.lazy import Oracle


class IRLCapabilities(Capabilities):
    """What a MaxEntIRL strategy can do beyond ``fit``, with the defaults of one that does not
    say (docs/design/05-strategies.md): rmtk's reward strategies inherit it; a user's may."""

    __slots__ = ()

    def fit_within(
        self, mdp, machines, ptp, *, gamma: float, lam: float, progress: Progress, deadline: Deadline
    ) -> tuple[tuple, str | None]:
        """``fit`` under the run's ``deadline``: the fits of the first machines done before it
        passed and, when it stopped the fitting early, what was left undone in words. Default:
        the whole ``fit``, which the deadline does not interrupt (``None``)."""
        return tuple(self.fit(mdp, machines, ptp, gamma=gamma, lam=lam, progress=progress)), None  # type: ignore[attr-defined]


def fits_until(fit_one, machines, deadline: Deadline, progress: Progress) -> tuple[list, str | None]:
    """``fit_one(machine)`` for each of ``machines`` in order until ``deadline`` passes (checked
    before each), with progress; the fits and, when the deadline stopped them, what was left."""
    fits: list = []
    for i, m in enumerate(machines):
        if deadline.expired():
            return fits, f"rewards recovered for {i} of the {len(machines)} machines they were asked for"
        progress.count(i, len(machines), "reward fits")
        fits.append(fit_one(m))
    if len(machines) > 1:
        progress.count(len(machines), len(machines), "reward fits")
    return fits, None


def round_significant(values: np.ndarray, digits: int) -> np.ndarray:
    """``values`` rounded to ``digits`` significant digits (``-0.001999999999`` → ``-0.002``)."""
    flat = [float(f"{v:.{digits}g}") for v in np.asarray(values, dtype=float).ravel()]
    return np.array(flat).reshape(np.shape(values))


@attrs.frozen
class MaxEntIRL(IRLCapabilities):
    """The MaxEntIRL strategy and its default implementation.

    Consumes the MDP, the learned machine models, the prefix tree policy they were learned
    from, γ and λ; produces one :class:`~rmtk.rewards.recovery.RewardFit` per machine it handles, whose
    ``machine`` carries the rewards. Each machine's product policy comes from the prefix tree
    policy (Algorithm 3); its rewards are the sparsest solution, up to potential shaping, of
    the linear soft Bellman characterisation (:func:`rmtk.rewards.recovery.reward_fit`), checked by
    re-planning.

    Args:
        clip: minimum action probability before fitting (sparse empirical policies; the
            paper clips the mice policy at 0.05); ``None``: no clipping.
        limit: fit at most this many machines (the first ones); the others keep reward 0.
        digits: significant digits the machines' rewards are rounded to (the fits keep full
            precision); more are not supported by a least-squares fit.
    """

    clip: float | None = None
    limit: int = 10
    digits: int = 6

    def __attrs_post_init__(self):
        if self.clip is not None and not 0 < self.clip < 1:
            raise RmtkError(f"clip must lie in (0, 1), got {self.clip}")
        if self.limit < 0:
            raise RmtkError(f"limit must be at least 0, got {self.limit}")
        if not 1 <= self.digits <= 17:
            raise RmtkError(f"digits must lie in 1..17, got {self.digits}")

    def fit(
        self,
        mdp: LabeledMDP,
        machines: tuple[RewardMachine, ...],
        ptp: PrefixTreePolicy | Oracle,
        *,
        gamma: float,
        lam: float,
        progress: Progress | None = None,
    ) -> tuple:
        """Reward fits of the first ``limit`` machines (their ``machine`` has the rewards).

        ``ptp`` is the prefix tree policy the machines were learned from, or an object whose
        ``product_policy(delta_u)`` gives a machine's product policy and the product states it
        observes (the oracle of tree-free learning, :class:`~rmtk.sat.lazy.ProductOracle`)."""
        return self.fit_within(
            mdp, machines, ptp, gamma=gamma, lam=lam, progress=progress or Progress(), deadline=NEVER
        )[0]

    def fit_within(
        self, mdp, machines, ptp, *, gamma: float, lam: float, progress: Progress, deadline: Deadline
    ) -> tuple[tuple, str | None]:
        """:meth:`fit`, one machine after another until ``deadline`` passes."""
        from .._threads import single_blas

        t0 = time.perf_counter()
        with single_blas():  # small dense solves: one thread is fastest, and immune to a busy machine
            fits, unfinished = fits_until(
                lambda m: self.fit_one(mdp, m, ptp, gamma=gamma, lam=lam), machines[: self.limit], deadline, progress
            )
        if fits:
            progress.stage("rewards", time.perf_counter() - t0, machines=len(fits))
        return tuple(fits), unfinished

    def fit_one(self, mdp: LabeledMDP, machine: RewardMachine, ptp, *, gamma: float, lam: float):
        """The reward fit of one machine (see :meth:`fit`)."""
        from .recovery import reward_fit, sparsest

        if not isinstance(ptp, PrefixTreePolicy):  # an oracle of tree-free learning (rmtk.sat.lazy.Oracle)
            from ..product.model import reachable_pairs

            policy, seen = ptp.product_policy(machine.delta_u)
            reach = np.zeros(seen.shape, dtype=bool)
            pairs = reachable_pairs(mdp, machine)
            reach[pairs[:, 0], pairs[:, 1]] = True
            fit = reward_fit(mdp, machine, policy, gamma=gamma, lam=lam, clip=self.clip, reachable=reach & seen)
        else:
            fit = reward_fit(mdp, machine, ptp, gamma=gamma, lam=lam, clip=self.clip)
        fit = sparsest(fit)
        rounded = fit.machine.with_rewards(round_significant(fit.machine.delta_r, self.digits))
        return attrs.evolve(fit, machine=rounded)
