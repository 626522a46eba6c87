"""A task binds a labeled MDP, the reward machine of the expert (when it is known) and the
MaxEnt settings (paper section 2.2: the expert maximises discounted reward plus λ·entropy)."""

from __future__ import annotations

import attrs
import numpy as np

from .errors import Location, ModelError
from .machine.model import RewardMachine
from .mdp.model import LabeledMDP
from .ptp.tree import MAX_TREE_LEVELS


def _opt_float(v):
    return None if v is None else float(v)


def _opt_int(v):
    return None if v is None else int(v)


#: ``Task.depth`` of a task learned at every depth (``depth inf`` in a ``.rm`` file).
EVERY_DEPTH = "inf"


def depth_beyond(depth) -> str | None:
    """Why a whole-number ``depth`` is refused before any work (``None``: it is not): no
    prefix tree is built past :data:`~rmtk.ptp.tree.MAX_TREE_LEVELS` levels, so a deeper one could
    only be refused after building that far."""
    if isinstance(depth, (int, np.integer)) and depth > MAX_TREE_LEVELS:
        return (
            f"depth {depth} is beyond the {MAX_TREE_LEVELS:,} levels a prefix tree is ever built to; "
            "write 'depth inf' to learn at every depth (no tree is built, and no depth beyond |S|·u_max² "
            "is ever needed: Theorem 1), or a smaller depth"
        )
    return None


def _task_depth(v):
    if v is None or v == EVERY_DEPTH:
        return v
    if isinstance(v, float) and np.isinf(v) and v > 0:
        return EVERY_DEPTH
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise ModelError(f"a task's depth is a whole number of at least 1 or {EVERY_DEPTH!r} (every depth), not {v!r}")
    return int(v)


@attrs.frozen
class Task:
    """An MDP, the expert's reward machine, and the MaxEnt settings.

    Attributes:
        mdp: the labeled MDP.
        machine: the (true) reward machine; its alphabet must contain every MDP proposition.
            ``None`` when it is not known: learning from rewards or demonstrations needs none
            (no verdict against a truth is then given), and what needs one (the expert's exact
            policy, simulating it, asking it) says so (:meth:`require_machine`).
        gamma: discount; ``None`` means the MDP's own ``gamma``.
        lam: entropy weight λ > 0 of the MaxEnt objective.
        depth: suggested prefix-tree depth for learning (``None``: the learner's default;
            ``EVERY_DEPTH``, ``"inf"``: learn at every depth, counterexample-guided).
        max_nodes: suggested bound ``u_max`` on the number of machine nodes.
        name: the block name used in `.rm` files.
        origin: where the task was written (file, line and column of its name in a `.rm`
            file), for errors; not part of its value.
    """

    mdp: LabeledMDP
    machine: RewardMachine | None = None
    gamma: float | None = attrs.field(default=None, converter=_opt_float)
    lam: float = attrs.field(default=1.0, converter=float)
    depth: int | str | None = attrs.field(default=None, converter=_task_depth)
    max_nodes: int | None = attrs.field(default=None, converter=_opt_int)
    name: str = attrs.field(default="task", converter=str)
    origin: Location | None = attrs.field(default=None, eq=False, repr=False, kw_only=True)

    def __attrs_post_init__(self) -> None:
        missing = [] if self.machine is None else [p for p in self.mdp.propositions if p not in self.machine.alphabet]
        if missing:
            assert self.machine is not None, "only a machine misses propositions"
            raise ModelError(
                f"task {self.name!r}: machine {self.machine.name!r} has no transitions on "
                f"{', '.join(map(repr, missing))}, which mdp {self.mdp.name!r} produces"
            )
        if self.gamma is not None and not 0.0 <= self.gamma < 1.0:
            raise ModelError(f"task {self.name!r}: gamma={self.gamma} must lie in [0, 1)")
        if not (self.lam > 0 and np.isfinite(self.lam)):
            raise ModelError(f"task {self.name!r}: lambda={self.lam} must be a positive number")
        if isinstance(self.depth, int) and self.depth < 1:
            raise ModelError(f"task {self.name!r}: depth must be at least 1")
        beyond = depth_beyond(self.depth)
        if beyond is not None:
            raise ModelError(f"task {self.name!r}: {beyond}")
        if self.max_nodes is not None and self.max_nodes < 1:
            raise ModelError(f"task {self.name!r}: max_nodes must be at least 1")

    def require_machine(self, needed_by: str) -> RewardMachine:
        """The task's machine, for ``needed_by`` (what needs it, in words: "learning from the
        task's exact policy"); a task without one is a :class:`ModelError` naming where it was
        written and what needs the machine."""
        if self.machine is not None:
            return self.machine
        where = f"{self.origin}: " if self.origin is not None else ""
        how = "add a line 'machine NAME' to it" if self.origin is not None else "give Task a machine"
        raise ModelError(f"{where}task {self.name!r} names no machine, and {needed_by} needs one: {how}")

    @property
    def discount(self) -> float:
        """The discount in force, the task's ``gamma`` or else the MDP's."""
        return self.mdp.gamma if self.gamma is None else self.gamma

    @property
    def letter_of_proposition(self) -> np.ndarray:
        """``[k]``: index in ``machine.alphabet`` of the MDP's proposition ``k``."""
        machine = self.require_machine("the letters of its machine")
        return np.array([machine.alphabet.index(p) for p in self.mdp.propositions], dtype=np.int64)

    def summary(self) -> str:
        extra = "".join(
            f", {k} {v}" for k, v in (("depth", self.depth), ("max_nodes", self.max_nodes)) if v is not None
        )
        machine = "no machine" if self.machine is None else f"machine {self.machine.name}"
        return f"task {self.name}: mdp {self.mdp.name}, {machine}, gamma {self.discount:g}, lambda {self.lam:g}{extra}"
