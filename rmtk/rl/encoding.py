"""The product observation an agent trained on :class:`~rmtk.gym.RewardMachineEnv` reads:
an environment observation with the machine's node, encoded as the wrapper encodes it
(``observation="flat"``: ``Discrete(S·n)`` index ``obs·n + node``, or a ``Box`` with a
one-hot node appended; ``observation="dict"``: ``{"obs": …, "node": …}``), here for whole
batches. :meth:`ProductEncoding.of` reads the encoding off the agent's observation space and
says clearly when that space is not a product with the machine (naming the number of nodes it
is a product with, when it is one with the environment's space); :meth:`ProductEncoding.encode`
refuses environment observations outside the environment's space the encoding implies (an
agent trained with a smaller machine, or observations that are already the product's)."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
from gymnasium import spaces

from ..errors import ModelError, RmtkError
from ..gym.wrapper import product_space
from ..learner.summary import node_count


def _inner(space: spaces.Space, n_nodes: int) -> tuple[spaces.Space, str] | None:
    """The environment's observation space and the mode of a product space with ``n_nodes``
    nodes, or ``None`` when ``space`` is not one."""
    if isinstance(space, spaces.Dict) and set(space.spaces) == {"obs", "node"}:
        node = space.spaces["node"]
        if isinstance(node, spaces.Discrete) and int(node.n) == n_nodes and int(node.start) == 0:
            return space.spaces["obs"], "dict"
        return None
    if isinstance(space, spaces.Discrete) and int(space.start) == 0 and int(space.n) % n_nodes == 0:
        return spaces.Discrete(int(space.n) // n_nodes), "flat"
    if isinstance(space, spaces.Box) and len(space.shape) == 1 and space.shape[0] > n_nodes:
        low, high = space.low[-n_nodes:], space.high[-n_nodes:]
        if np.all(low == 0) and np.all(high == 1):
            return spaces.Box(space.low[:-n_nodes], space.high[:-n_nodes], dtype=space.dtype), "flat"
    return None


def _nodes(space: spaces.Space, inner: spaces.Space) -> int | None:
    """The number of nodes ``space`` is the product of ``inner`` with (either encoding), or
    ``None`` when it is no such product."""
    if isinstance(space, spaces.Dict) and set(space.spaces) == {"obs", "node"}:
        node = space.spaces["node"]
        return int(node.n) if isinstance(node, spaces.Discrete) and space.spaces["obs"] == inner else None
    if isinstance(space, spaces.Discrete) and isinstance(inner, spaces.Discrete) and int(space.start) == 0:
        k, rest = divmod(int(space.n), int(inner.n))
        return k if k >= 1 and rest == 0 else None
    if isinstance(space, spaces.Box) and isinstance(inner, spaces.Box) and len(space.shape) == 1:
        k = space.shape[0] - int(np.prod(inner.shape))
        if k >= 1 and space == product_space(inner, k, "flat"):
            return k
    return None


@attrs.frozen
class ProductEncoding:
    """How a batch of environment observations and nodes becomes a batch of product
    observations of ``space`` (the agent's observation space): ``inner`` is the environment's
    observation space, ``mode`` ``"flat"`` or ``"dict"``."""

    space: spaces.Space = attrs.field(eq=False)
    inner: spaces.Space = attrs.field(eq=False)
    n_nodes: int
    mode: str

    @classmethod
    def of(cls, space, n_nodes: int, inner: spaces.Space | None = None, what: str = "the agent") -> ProductEncoding:
        """The encoding of ``space`` as a product with ``n_nodes`` nodes (and, when given,
        with the environment's observation space ``inner``); a :class:`~rmtk.errors.ModelError`
        saying what the product would be otherwise."""
        found = _inner(space, int(n_nodes)) if isinstance(space, spaces.Space) else None
        if found is not None and (inner is None or found[0] == inner):
            return cls(space, found[0], int(n_nodes), found[1])
        if inner is not None:
            other = _nodes(space, inner)
            if space == inner:
                raise ModelError(
                    f"{what}'s observation space is {space}, the environment's own: it observes no node of a "
                    "machine, or the environment given is already a product with one (a RewardMachineEnv); give "
                    "the bare environment (the node is added here) and an agent trained on its product with the "
                    f"machine's {node_count(n_nodes)}"
                )
            if other is not None:
                raise ModelError(
                    f"{what}'s observation space is {space}: the product of the environment's {inner} with "
                    f"{node_count(other)}, and the machine has {n_nodes}; give the machine {what} was trained with "
                    f"({node_count(other)})"
                )
            want = [
                f"{product_space(inner, n_nodes, mode)} (observation={mode!r})"
                for mode in ("flat", "dict")
                if mode == "dict" or isinstance(inner, (spaces.Discrete, spaces.Box))
            ]
            nodes = node_count(n_nodes)
            expected = f"the product of the environment's {inner} with the machine's {nodes}: " + " or ".join(want)
        else:
            expected = f"a product with the machine's {node_count(n_nodes)}"
        raise ModelError(
            f"{what}'s observation space is {space}, not {expected}; train it on "
            "RewardMachineEnv(env, machine, labeler, observation=...) with the machine that drives its node"
        )

    def encode(self, obs, nodes) -> Any:
        """The product observations of a batch of environment observations ``obs`` (first
        axis: the batch) at ``nodes``; a :class:`~rmtk.errors.ModelError` when an observation
        is not one of the environment's (:meth:`check`)."""
        nodes = np.asarray(nodes, dtype=np.int64).reshape(-1)
        self.check(obs, len(nodes))
        if self.mode == "dict":
            return {"obs": np.asarray(obs).reshape((len(nodes), *(self.inner.shape or ()))), "node": nodes}
        if isinstance(self.inner, spaces.Discrete):
            return (np.asarray(obs, dtype=np.int64).reshape(-1) - int(self.inner.start)) * self.n_nodes + nodes
        flat = np.asarray(obs, dtype=self.inner.dtype).reshape(len(nodes), -1)
        onehot = np.zeros((len(nodes), self.n_nodes), dtype=self.inner.dtype)
        onehot[np.arange(len(nodes)), nodes] = 1
        return np.concatenate([flat, onehot], axis=1)

    def check(self, obs, batch: int) -> None:
        """A clear error unless the ``batch`` environment observations ``obs`` lie in
        ``inner``: a ``Discrete`` index within it, a ``Box`` row of its size."""
        inner, space, n = self.inner, self.space, self.n_nodes
        implied = (
            f"the environment's {inner}, of which the agent's {space} is the product with the machine's {node_count(n)}"
        )
        fix = (
            "give the machine the agent was trained with, and observations of the bare environment (not of its "
            "product with a machine: the node is added here)"
        )
        if isinstance(inner, spaces.Discrete):
            index = np.asarray(obs).reshape(-1)
            lo, hi = int(inner.start), int(inner.start) + int(inner.n)
            bad = (index < lo) | (index >= hi) if np.issubdtype(index.dtype, np.number) else np.ones(len(index), bool)
            if bad.any():
                raise ModelError(f"the environment's observation {index[bad][0]!r} is not in {implied}: {fix}")
        elif isinstance(inner, spaces.Box):
            size = int(np.prod(inner.shape))
            given = np.asarray(obs).size // max(int(batch), 1)
            if given != size:
                nodes = int(np.prod(space.shape or ())) - given if self.mode == "flat" else 0
                trained = f" (a product with {node_count(nodes)})" if nodes > 0 else ""
                numbers = f"{given} number{'s' if given != 1 else ''}"
                raise ModelError(
                    f"the environment's observations have {numbers} each, and {implied} are of {size}{trained}: {fix}"
                )

    def environment(self, obs) -> Any:
        """The environment observations of a batch of flat product observations (their node
        dropped; for a ``Discrete`` product the index of node 0)."""
        if self.mode == "dict":
            return np.asarray(obs["obs"])
        if isinstance(self.inner, spaces.Discrete):
            index = np.asarray(obs, dtype=np.int64).reshape(-1)
            return index // self.n_nodes + int(self.inner.start)
        return np.asarray(obs).reshape(len(obs), -1)[:, : -self.n_nodes]


def product_attributes(env, names: tuple[str, ...]) -> tuple:
    """The attributes ``names`` of the :class:`~rmtk.gym.RewardMachineEnv` that ``env`` is, wraps
    (e.g. a ``Monitor``) or holds (a Stable-Baselines3 vector environment: its first copy's)."""
    if hasattr(env, "get_attr") and hasattr(env, "num_envs"):  # an SB3 VecEnv

        def get(name):
            return env.get_attr(name, [0])[0]
    elif hasattr(env, "get_wrapper_attr"):
        get = env.get_wrapper_attr
    else:
        raise RmtkError(f"crm needs the product environment (a RewardMachineEnv), not {type(env).__name__}")
    try:
        return tuple(get(n) for n in names)
    except AttributeError:
        raise RmtkError(
            f"{type(env).__name__} is not a RewardMachineEnv (nor wraps one): CRM needs the machine of the "
            "product; wrap the environment in rmtk.gym.RewardMachineEnv(env, machine, labeler)"
        ) from None


__all__ = ["ProductEncoding", "product_attributes"]
