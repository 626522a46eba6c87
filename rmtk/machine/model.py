"""Reward machines (paper section 2.1): ``(U, u_I, AP, δ_u, δ_r)`` with a total,
deterministic transition function and a reward per transition.

``==`` is structural (same node names in the same order, same arrays). "The same machine up
to renaming of nodes" is :func:`isomorphic`, decided on the canonical form
(:meth:`RewardMachine.canonical`: breadth-first numbering from ``u_I``, letters in alphabet
order).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from .._arrays import array_eq, float_array, int_array
from ..errors import ModelError
from ..mdp.model import _check_unique, _index, _names


@attrs.frozen
class RewardMachine:
    """A reward machine over the alphabet ``AP``.

    Attributes:
        nodes: node names; index ``i`` ↔ ``nodes[i]``.
        alphabet: the propositions ``AP`` read by the machine.
        delta_u: ``delta_u[u, k]`` is the node reached from ``u`` on ``alphabet[k]``.
        delta_r: ``delta_r[u, k]`` is the reward of that transition.
        initial: index of the initial node ``u_I``.
        name: the block name used in `.rm` files.
    """

    nodes: tuple[str, ...] = attrs.field(converter=_names)
    alphabet: tuple[str, ...] = attrs.field(converter=_names)
    delta_u: np.ndarray = attrs.field(converter=int_array, eq=array_eq, hash=False, repr=False)
    delta_r: np.ndarray = attrs.field(converter=float_array, eq=array_eq, hash=False, repr=False)
    initial: int = attrs.field(default=0, converter=int)
    name: str = attrs.field(default="machine", converter=str)

    def __attrs_post_init__(self) -> None:
        n, k = len(self.nodes), len(self.alphabet)
        _check_unique("node", self.nodes)
        _check_unique("proposition", self.alphabet)
        if n == 0:
            raise ModelError(f"machine {self.name!r}: no nodes")
        if k == 0:
            raise ModelError(f"machine {self.name!r}: empty alphabet")
        for field, arr in (("delta_u", self.delta_u), ("delta_r", self.delta_r)):
            if arr.shape != (n, k):
                raise ModelError(f"machine {self.name!r}: {field} has shape {arr.shape}, expected ({n}, {k})")
        if self.delta_u.min() < 0 or self.delta_u.max() >= n:  # (n, k) with n, k ≥ 1: not empty
            u, a = np.argwhere((self.delta_u < 0) | (self.delta_u >= n))[0]
            raise ModelError(
                f"machine {self.name!r}: transition from {self.nodes[u]!r} on {self.alphabet[a]!r} "
                f"goes to an unknown node (index {self.delta_u[u, a]})"
            )
        if not np.isfinite(self.delta_r).all():
            raise ModelError(f"machine {self.name!r}: rewards must be finite numbers")
        if not 0 <= self.initial < n:
            raise ModelError(f"machine {self.name!r}: initial node index {self.initial} out of range")

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_transitions(
        cls,
        transitions: Mapping[tuple[str, str], str | tuple[str, float]],
        alphabet: Sequence[str],
        *,
        nodes: Sequence[str] | None = None,
        initial: str | None = None,
        name: str = "machine",
    ) -> RewardMachine:
        """Build from ``{(node, letter): target | (target, reward)}``.

        Transitions not given are self-loops with reward 0. ``nodes`` defaults to the nodes
        in order of first mention; ``initial`` to the first node.
        """
        if nodes is None:
            seen: dict[str, None] = {}
            if initial is not None:
                seen[initial] = None
            for (u, _), tgt in transitions.items():
                seen.setdefault(u, None)
                seen.setdefault(tgt[0] if isinstance(tgt, tuple) else tgt, None)
            nodes = list(seen)
        nodes, alphabet = list(nodes), list(alphabet)
        ni = {u: i for i, u in enumerate(nodes)}
        du = np.tile(np.arange(len(nodes))[:, None], (1, len(alphabet)))
        dr = np.zeros((len(nodes), len(alphabet)))
        for (u, a), tgt in transitions.items():
            v, r = tgt if isinstance(tgt, tuple) else (tgt, 0.0)
            for what, key, table in (("node", u, ni), ("node", v, ni)):
                if key not in table:
                    raise ModelError(f"machine {name!r}: unknown {what} {key!r}")
            if a not in alphabet:
                raise ModelError(f"machine {name!r}: letter {a!r} is not in the alphabet {alphabet}")
            du[ni[u], alphabet.index(a)] = ni[v]
            dr[ni[u], alphabet.index(a)] = r
        init = 0 if initial is None else ni.get(initial, -1)
        if init < 0:
            raise ModelError(f"machine {name!r}: unknown initial node {initial!r}")
        return cls(nodes=nodes, alphabet=alphabet, delta_u=du, delta_r=dr, initial=init, name=name)

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (JSON-compatible); every transition is listed."""
        return {
            "name": self.name,
            "nodes": list(self.nodes),
            "alphabet": list(self.alphabet),
            "initial": self.nodes[self.initial],
            "transitions": [{"from": u, "on": a, "to": v, "reward": r} for u, a, v, r in self.transitions()],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RewardMachine:
        """Inverse of :meth:`to_dict`."""
        trans = {(t["from"], t["on"]): (t["to"], float(t.get("reward", 0.0))) for t in d["transitions"]}
        return cls.from_transitions(
            trans, d["alphabet"], nodes=d["nodes"], initial=d["initial"], name=d.get("name", "machine")
        )

    # ------------------------------------------------------------------ queries
    @property
    def n_nodes(self) -> int:
        return len(self.nodes)

    def node_index(self, node: int | str) -> int:
        return _index(self.nodes, node, "node", self.name)

    def letter_index(self, letter: int | str) -> int:
        return _index(self.alphabet, letter, "proposition", self.name)

    def step(self, node: int | str, letter: int | str) -> int:
        """``δ_u(u, ℓ)`` as a node index."""
        return int(self.delta_u[self.node_index(node), self.letter_index(letter)])

    def reward(self, node: int | str, letter: int | str) -> float:
        """``δ_r(u, ℓ)``."""
        return float(self.delta_r[self.node_index(node), self.letter_index(letter)])

    def run(self, word: Iterable[int | str], start: int | str | None = None) -> list[int]:
        """Node indices ``[u_0, u_1, ..., u_k]`` visited reading ``word`` from ``u_I``."""
        u = self.initial if start is None else self.node_index(start)
        out = [u]
        for letter in word:
            u = int(self.delta_u[u, self.letter_index(letter)])
            out.append(u)
        return out

    def final(self, word: Iterable[int | str]) -> int:
        """``δ_u*(u_I, word)``."""
        return self.run(word)[-1]

    def transitions(self, *, include_defaults: bool = True) -> Iterator[tuple[str, str, str, float]]:
        """``(u, letter, v, reward)`` by name; without defaults, 0-reward self-loops are skipped."""
        for u in range(self.n_nodes):
            for k in range(len(self.alphabet)):
                v, r = int(self.delta_u[u, k]), float(self.delta_r[u, k])
                if include_defaults or v != u or r != 0.0:
                    yield self.nodes[u], self.alphabet[k], self.nodes[v], r

    def reachable(self) -> list[int]:
        """Node indices reachable from ``u_I``, in breadth-first order (letters in alphabet order)."""
        order, seen = [self.initial], {self.initial}
        queue = deque(order)
        while queue:
            u = queue.popleft()
            for v in self.delta_u[u]:
                v = int(v)
                if v not in seen:
                    seen.add(v)
                    order.append(v)
                    queue.append(v)
        return order

    def is_non_stuttering(self) -> bool:
        """``δ(u, ℓ) = u' ⇒ δ(u', ℓ) = u'`` for every ``u, ℓ`` (paper eq. 7)."""
        k = np.arange(len(self.alphabet))
        return bool(np.all(self.delta_u[self.delta_u, k] == self.delta_u))

    def with_rewards(self, delta_r: np.ndarray) -> RewardMachine:
        return attrs.evolve(self, delta_r=delta_r)

    def renamed(self, order: Sequence[int], names: Sequence[str] | None = None) -> RewardMachine:
        """The machine restricted to nodes ``order`` (old indices), renumbered in that order.

        Every transition of a kept node must stay among the kept nodes.
        """
        order = [int(i) for i in order]
        new = {old: i for i, old in enumerate(order)}
        try:
            du = np.array([[new[int(v)] for v in self.delta_u[old]] for old in order], dtype=np.int64)
        except KeyError as e:
            raise ModelError(f"machine {self.name!r}: node {self.nodes[e.args[0]]!r} is not kept") from None
        return RewardMachine(
            nodes=names if names is not None else [self.nodes[i] for i in order],
            alphabet=self.alphabet,
            delta_u=du.reshape(len(order), len(self.alphabet)),
            delta_r=self.delta_r[order],
            initial=new[self.initial],
            name=self.name,
        )

    def canonical(self, prefix: str = "u") -> RewardMachine:
        """Reachable part, nodes renumbered breadth-first from ``u_I`` and named ``u0, u1, ...``.

        Two machines with all nodes reachable are isomorphic iff their canonical forms are equal
        (after putting their alphabets in the same order).
        """
        order = self.reachable()
        return self.renamed(order, [f"{prefix}{i}" for i in range(len(order))])

    def with_alphabet_order(self, alphabet: Sequence[str]) -> RewardMachine:
        """The same machine with its letters listed in the order ``alphabet`` (same set)."""
        if sorted(alphabet) != sorted(self.alphabet):
            raise ModelError(f"machine {self.name!r}: alphabet {list(alphabet)} differs from {list(self.alphabet)}")
        perm = [self.alphabet.index(a) for a in alphabet]
        return attrs.evolve(self, alphabet=alphabet, delta_u=self.delta_u[:, perm], delta_r=self.delta_r[:, perm])

    def minimize(self) -> RewardMachine:
        """Smallest machine with the same reward output on every word (Moore partition refinement),
        restricted to reachable nodes, in canonical numbering."""
        m = self.canonical()
        n = m.n_nodes

        def relabel(keys: list) -> np.ndarray:
            ids: dict = {}
            return np.array([ids.setdefault(k, len(ids)) for k in keys], dtype=np.int64)

        block = relabel([tuple(m.delta_r[u]) for u in range(n)])
        while True:
            new = relabel([(int(block[u]), tuple(block[m.delta_u[u]].tolist())) for u in range(n)])
            if new.max() == block.max():
                break
            block = new
        reps: dict[int, int] = {}
        for u in range(n):
            reps.setdefault(int(block[u]), u)
        quotient = RewardMachine(
            nodes=[f"b{b}" for b in range(len(reps))],
            alphabet=m.alphabet,
            delta_u=block[m.delta_u[[reps[b] for b in range(len(reps))]]],
            delta_r=m.delta_r[[reps[b] for b in range(len(reps))]],
            initial=int(block[m.initial]),
            name=m.name,
        )
        return quotient.canonical()

    def summary(self) -> str:
        non_default = sum(1 for _ in self.transitions(include_defaults=False))
        return (
            f"machine {self.name}: {self.n_nodes} nodes, initial {self.nodes[self.initial]}, "
            f"alphabet {' '.join(self.alphabet)}, {non_default} non-default transitions"
            + ("" if self.is_non_stuttering() else ", stuttering")
        )

    def _repr_svg_(self) -> str:
        """The machine drawn as SVG: what Jupyter shows (:func:`rmtk.io.display.machine_svg`)."""
        from ..io.display import machine_svg

        return machine_svg(self)


def isomorphic(a: RewardMachine, b: RewardMachine, *, rewards: bool = True) -> bool:
    """Whether ``a`` and ``b`` are the same machine up to renaming of nodes.

    Alphabets must be equal as sets; with ``rewards=False`` only the transition structure
    (the reward machine *model*) is compared. Unreachable nodes count: a bijection of all
    nodes is required.
    """
    if set(a.alphabet) != set(b.alphabet) or a.n_nodes != b.n_nodes:
        return False
    b = b.with_alphabet_order(a.alphabet)
    if not rewards:
        a = a.with_rewards(np.zeros_like(a.delta_r))
        b = b.with_rewards(np.zeros_like(b.delta_r))
    if len(a.reachable()) == a.n_nodes and len(b.reachable()) == b.n_nodes:
        ca, cb = a.canonical(), b.canonical()
        return np.array_equal(ca.delta_u, cb.delta_u) and np.array_equal(ca.delta_r, cb.delta_r)
    import networkx as nx
    from networkx.algorithms.isomorphism import DiGraphMatcher

    def graph(m: RewardMachine) -> nx.DiGraph:
        g = nx.DiGraph()
        for u in range(m.n_nodes):
            g.add_node(u, initial=(u == m.initial))
        for u in range(m.n_nodes):
            for k, letter in enumerate(m.alphabet):
                v = int(m.delta_u[u, k])
                lab = g.edges[u, v]["lab"] if g.has_edge(u, v) else frozenset()
                g.add_edge(u, v, lab=lab | {(letter, float(m.delta_r[u, k]))})
        return g

    gm = DiGraphMatcher(
        graph(a),
        graph(b),
        node_match=lambda x, y: x["initial"] == y["initial"],
        edge_match=lambda x, y: x["lab"] == y["lab"],
    )
    return gm.is_isomorphic()
