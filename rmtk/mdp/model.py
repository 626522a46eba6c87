"""Labeled MDP models (paper section 2.1): an MDP without reward, with one atomic
proposition per state.

The transition kernel is stored as one sparse CSR matrix of shape ``(|S|·|A|, |S|)``
whose row ``s·|A| + a`` is ``P(· | s, a)``: a single sparse product ``T @ W`` then
evaluates ``Σ_s' P(s'|s,a) W[s', ...]`` for every ``(s, a)`` at once, which is what
planning and the prefix tree need. The core uses it as ``mdp.kernel``, a
:class:`~rmtk._arrays.Csr` of plain numpy arrays (so that loading and learning a small
model never imports scipy); ``mdp.transitions`` is the same matrix as a
``scipy.sparse.csr_array``, built on first use.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from .. import ties
from .._arrays import Csr, array_eq, as_csr, float_array, int_array, unique
from ..axes import order_hint
from ..errors import ModelError

#: Tolerance on probability rows and the initial distribution summing to 1.
PROB_TOL = 1e-9


def _names(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(str(v) for v in value)


def _check_unique(kind: str, names: Sequence[str]) -> None:
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise ModelError(f"duplicate {kind} name {n!r}")
        if not n:
            raise ModelError(f"empty {kind} name")
        seen.add(n)


@attrs.frozen(eq=True)
class GeneratorCall:
    """How a generated MDP was made: the generator's name and its (normalised) parameters.

    Kept beside the MDP so that the printer can write the short generator form back.
    """

    generator: str
    params: tuple[tuple[str, Any], ...]

    def kwargs(self) -> dict[str, Any]:
        return dict(self.params)


@attrs.frozen
class LabeledMDP:
    """A labeled MDP model ``(S, A, P, μ0, γ, L, AP)``.

    Attributes:
        states: state names, index ``i`` ↔ ``states[i]``.
        actions: action names.
        kernel: the transition matrix ``(|S|·|A|, |S|)``, row ``s·|A|+a`` is ``P(·|s,a)``,
            as a :class:`~rmtk._arrays.Csr`; the constructor argument is ``transitions``
            (a dense array, a ``Csr`` or a ``scipy.sparse`` matrix).
        transitions: the same matrix as a read-only ``scipy.sparse.csr_array`` (a property).
        labels: ``labels[s]`` is the index in ``propositions`` of ``L(s)``.
        propositions: the alphabet ``AP``.
        initial: the initial distribution ``μ0`` over states.
        gamma: the discount factor, in ``[0, 1)``.
        name: the block name used in `.rm` files.
        source: for generated MDPs, the generator call that rebuilds it (not part of ``==``).
    """

    states: tuple[str, ...] = attrs.field(converter=_names)
    actions: tuple[str, ...] = attrs.field(converter=_names)
    kernel: Csr = attrs.field(alias="transitions", converter=as_csr, hash=False, repr=False)
    labels: np.ndarray = attrs.field(converter=int_array, eq=array_eq, hash=False, repr=False)
    propositions: tuple[str, ...] = attrs.field(converter=_names)
    initial: np.ndarray = attrs.field(converter=float_array, eq=array_eq, hash=False, repr=False)
    gamma: float = attrs.field(default=0.99, converter=float)
    name: str = attrs.field(default="mdp", converter=str)
    source: GeneratorCall | None = attrs.field(default=None, eq=False, repr=False, hash=False)

    def __attrs_post_init__(self) -> None:
        S, A = len(self.states), len(self.actions)
        _check_unique("state", self.states)
        _check_unique("action", self.actions)
        _check_unique("proposition", self.propositions)
        if S == 0:
            raise ModelError(f"mdp {self.name!r}: no states")
        if A == 0:
            raise ModelError(f"mdp {self.name!r}: no actions")
        T = self.kernel
        if T.shape != (S * A, S):
            raise ModelError(
                f"mdp {self.name!r}: transitions have shape {T.shape}, expected ({S}·{A}, {S}) = ({S * A}, {S})"
            )
        data = T.data
        if data.size and (not np.all(np.isfinite(data)) or data.min() < 0):
            row = int(np.searchsorted(T.indptr, np.flatnonzero(~(data >= 0))[0], side="right") - 1)
            raise ModelError(f"mdp {self.name!r}: negative or non-finite probability at {self._row_name(row)}")
        sums = T.row_sums()
        bad = np.flatnonzero(np.abs(sums - 1.0) > PROB_TOL)
        if bad.size:
            r = int(bad[0])
            raise ModelError(
                f"mdp {self.name!r}: probabilities of {self._row_name(r)} sum to {sums[r]:.12g}, "
                f"expected 1 (±{PROB_TOL:g})" + (f"; {bad.size - 1} more rows are wrong" if bad.size > 1 else "")
            )
        if self.labels.shape != (S,):
            raise ModelError(
                f"mdp {self.name!r}: {self.labels.shape[0] if self.labels.ndim else 0} labels for {S} states"
            )
        if len(self.propositions) == 0:
            raise ModelError(f"mdp {self.name!r}: empty proposition alphabet")
        out = np.flatnonzero((self.labels < 0) | (self.labels >= len(self.propositions)))
        if out.size:
            raise ModelError(f"mdp {self.name!r}: state {self.states[out[0]]!r} has a label outside the alphabet")
        if self.initial.shape != (S,):
            raise ModelError(f"mdp {self.name!r}: initial distribution has {self.initial.size} entries for {S} states")
        if not np.all(np.isfinite(self.initial)) or self.initial.min() < 0:
            raise ModelError(f"mdp {self.name!r}: initial distribution has a negative or non-finite entry")
        if abs(self.initial.sum() - 1.0) > PROB_TOL:
            raise ModelError(f"mdp {self.name!r}: initial distribution sums to {self.initial.sum():.12g}, expected 1")
        if not 0.0 <= self.gamma < 1.0 or not np.isfinite(self.gamma):
            raise ModelError(f"mdp {self.name!r}: discount gamma={self.gamma} must lie in [0, 1)")

    def _row_name(self, row: int) -> str:
        s, a = divmod(row, len(self.actions))
        return f"state {self.states[s]!r}, action {self.actions[a]!r}"

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_dense(
        cls,
        P: np.ndarray,
        labels: Sequence[int] | Sequence[str],
        propositions: Sequence[str] | None = None,
        initial: Sequence[float] | None = None,
        *,
        states: Sequence[str] | None = None,
        actions: Sequence[str] | None = None,
        gamma: float = 0.99,
        name: str = "mdp",
    ) -> LabeledMDP:
        """Build from a dense ``P[a, s, s']`` tensor (action first, unlike the state-first
        convention of newer APIs: docs/design/02-conventions.md; a ``P[s, a, s']`` is named in the
        error when its shape tells).

        ``labels`` are proposition indices or names; ``initial`` defaults to uniform.
        """
        P = np.asarray(P, dtype=float)
        given: list[Any] = list(labels)
        if P.ndim != 3 or P.shape[1] != P.shape[2] or len(given) != P.shape[1]:
            if P.ndim == 3 and P.shape[0] == P.shape[2] == len(given):
                raise ModelError(
                    order_hint(
                        "P", P.shape, [("actions", P.shape[1]), ("states", len(given)), ("next states", len(given))]
                    )
                    + "; from_dense takes P[a, s, s']"
                )
            raise ModelError(f"P must be P[a, s, s'], shape (A, S, S) with S = {len(given)} labels, got {P.shape}")
        A, S, _ = P.shape
        if propositions is None:
            propositions = (
                sorted({str(x) for x in given})
                if given and isinstance(given[0], str)
                else [f"p{i}" for i in range(max(given) + 1)]
            )
        propositions = list(propositions)
        if given and isinstance(given[0], str):
            unknown = [x for x in given if x not in propositions]
            if unknown:
                raise ModelError(f"label {unknown[0]!r} is not in the alphabet {propositions}")
            given = [propositions.index(x) for x in given]
        flat = P.transpose(1, 0, 2).reshape(S * A, S)
        return cls(
            states=states if states is not None else [f"s{i}" for i in range(S)],
            actions=actions if actions is not None else [f"a{i}" for i in range(A)],
            transitions=flat,
            labels=given,
            propositions=propositions,
            initial=np.full(S, 1.0 / S) if initial is None else initial,
            gamma=gamma,
            name=name,
        )

    # ------------------------------------------------------------------ queries
    @property
    def transitions(self):
        """The transition matrix as a read-only ``scipy.sparse.csr_array`` (imports scipy;
        built on first use and cached). The core uses ``kernel``."""
        return self.kernel.to_scipy()

    @property
    def n_states(self) -> int:
        return len(self.states)

    @property
    def n_actions(self) -> int:
        return len(self.actions)

    @property
    def n_propositions(self) -> int:
        return len(self.propositions)

    @property
    def P(self) -> np.ndarray:
        """The dense ``P[a, s, s']`` tensor (a copy)."""
        S, A = self.n_states, self.n_actions
        return self.kernel.toarray().reshape(S, A, S).transpose(1, 0, 2).copy()

    @property
    def start_states(self) -> np.ndarray:
        """Indices of the support of the initial distribution."""
        return np.flatnonzero(self.initial > 0)

    def label(self, state: int | str) -> str:
        """``L(s)`` as a proposition name."""
        return self.propositions[self.labels[self.state_index(state)]]

    def state_index(self, state: int | str) -> int:
        return _index(self.states, state, "state", self.name)

    def action_index(self, action: int | str) -> int:
        return _index(self.actions, action, "action", self.name)

    def proposition_index(self, prop: int | str) -> int:
        return _index(self.propositions, prop, "proposition", self.name)

    def successors(self, state: int | str, action: int | str) -> list[tuple[int, float]]:
        """``[(s', P(s'|s,a)), ...]`` with positive probability, sorted by ``s'``."""
        row = self.state_index(state) * self.n_actions + self.action_index(action)
        T = self.kernel
        lo, hi = T.indptr[row], T.indptr[row + 1]
        return [(int(j), float(p)) for j, p in zip(T.indices[lo:hi], T.data[lo:hi])]

    def successor_matrix(self) -> Csr:
        """Boolean ``S×S`` CSR: ``[s, s']`` iff some action moves ``s`` to ``s'``."""
        S, A = self.n_states, self.n_actions
        T = self.kernel
        codes = unique(T.row_ids() // A * S + T.indices)
        return Csr._from_sorted(np.ones(len(codes), dtype=bool), codes // S, codes % S, (S, S))

    def indifferent(self) -> np.ndarray:
        """``(S,)`` bool: the states where every action leads to the same next-state
        distribution (probabilities within :data:`rmtk.ties.TOL`), e.g. an absorbing goal or
        hole. What follows such a state does not depend on the action taken there, so every
        action has the same value under every reward machine's node: a soft-optimal expert acts
        alike there whatever its memory (docs/design/14-sampled-experts.md, section 14.1)."""
        S, A = self.n_states, self.n_actions
        T = self.kernel
        nnz = np.diff(T.indptr).reshape(S, A)
        out = (nnz == nnz[:, :1]).all(axis=1)
        for a in range(1, A):
            states = np.flatnonzero(out)
            k = nnz[states, 0]
            if not k.sum():
                continue
            first = np.repeat(T.indptr[states * A], k)
            other = np.repeat(T.indptr[states * A + a], k)
            step = np.arange(k.sum()) - np.repeat(np.cumsum(k) - k, k)
            same = (T.indices[first + step] == T.indices[other + step]) & (
                np.abs(T.data[first + step] - T.data[other + step]) <= ties.TOL
            )
            bad = np.bincount(np.repeat(np.arange(len(states)), k), weights=~same, minlength=len(states)) > 0
            out[states[bad]] = False
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (JSON-compatible)."""
        trans: dict[str, dict[str, dict[str, float]]] = {}
        for s in range(self.n_states):
            for a in range(self.n_actions):
                succ = self.successors(s, a)
                trans.setdefault(self.states[s], {})[self.actions[a]] = {self.states[j]: p for j, p in succ}
        return {
            "name": self.name,
            "states": list(self.states),
            "actions": list(self.actions),
            "propositions": list(self.propositions),
            "labels": {self.states[s]: self.propositions[l] for s, l in enumerate(self.labels)},
            "initial": {self.states[s]: float(self.initial[s]) for s in self.start_states},
            "gamma": self.gamma,
            "transitions": trans,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LabeledMDP:
        """Inverse of :meth:`to_dict`."""
        states, actions = list(d["states"]), list(d["actions"])
        props = list(d["propositions"])
        si = {s: i for i, s in enumerate(states)}
        A = len(actions)
        rows, cols, vals = [], [], []
        for s, per_action in d["transitions"].items():
            for a, succ in per_action.items():
                for t, p in succ.items():
                    rows.append(si[s] * A + actions.index(a))
                    cols.append(si[t])
                    vals.append(p)
        init = np.zeros(len(states))
        for s, p in d["initial"].items():
            init[si[s]] = p
        return cls(
            states=states,
            actions=actions,
            transitions=Csr.from_coo(vals, rows, cols, (len(states) * A, len(states))),
            labels=[props.index(d["labels"][s]) for s in states],
            propositions=props,
            initial=init,
            gamma=d.get("gamma", 0.99),
            name=d.get("name", "mdp"),
        )

    def summary(self) -> str:
        kind = self.source.generator if self.source else "explicit"
        return (
            f"mdp {self.name} ({kind}): {self.n_states} states, {self.n_actions} actions, "
            f"{self.kernel.nnz} transitions, propositions {' '.join(self.propositions)}, "
            f"{len(self.start_states)} start states, gamma {self.gamma:g}"
        )

    def _repr_svg_(self) -> str | None:
        """A grid world's map or the labyrinth as SVG, what Jupyter shows; ``None`` (the text
        form is shown) for an MDP without a picture (:func:`rmtk.io.display.mdp_svg`)."""
        from ..io.display import mdp_svg

        return mdp_svg(self)


def _index(names: tuple[str, ...], key: int | str, kind: str, owner: str) -> int:
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        if 0 <= key < len(names):
            return int(key)
        raise ModelError(f"{kind} index {key} out of range 0..{len(names) - 1} in {owner!r}")
    try:
        return names.index(key)
    except ValueError:
        raise ModelError(f"unknown {kind} {key!r} in {owner!r}") from None
