"""Work split into shards, and the one order in which their results are reduced.

Large jobs — simulating 10⁷ episodes, counting a dataset of many files — are a *map* over
independent pieces and an associative *reduce* of their results. This module fixes the two
things every engine (:mod:`rmtk.engines.local`) must agree on so that the result does not depend on
where or how the pieces ran:

* :class:`Shard` and :func:`plan_shards`: episodes ``0..n-1`` cut into consecutive shards of
  a fixed size, each with the random stream it must read. The streams depend only on the
  seed (and, for :meth:`Shard.spawned_rng`, on the shard size), never on the number of
  workers: the same seed gives the same data on one process or on a cluster.
* :class:`TreeReducer`: the reduce order. Results are merged like the digits of a binary
  counter (two partial results of equal weight are merged as soon as both exist), which is
  the same tree as merging neighbours level by level. The tree depends only on the number of
  results, so a local loop and a distributed scheduler that both feed results in shard
  order build the same merges; the total merge work is O(n log n) merges of similar size
  instead of the O(n²) of a left fold.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

import attrs
import numpy as np

from .._arrays import whole_number
from ..errors import RmtkError

T = TypeVar("T")

__all__ = ["Shard", "plan_shards", "root_seed", "TreeReducer"]


def root_seed(seed) -> np.random.SeedSequence:
    """The :class:`numpy.random.SeedSequence` of a run: from an int, a ``SeedSequence`` or
    ``None`` (fresh entropy, drawn once here so that every shard shares it)."""
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if seed is None or (isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0):
        return np.random.SeedSequence(None if seed is None else int(seed))
    raise RmtkError(f"a seed is a non-negative integer, a numpy SeedSequence or None, not {seed!r}")


@attrs.frozen
class Shard:
    """Episodes ``start .. start + size − 1`` of a run, shard number ``index`` of ``count``.

    A shard is small and picklable: it is what a worker receives. It carries the run's
    root seed, from which it derives its own random stream in one of two ways:

    * :meth:`jumped_rng` — the root stream of ``numpy.random.default_rng(seed)`` advanced
      to this shard's first episode, for generators that read a fixed number of uniforms
      per episode (:func:`rmtk.product.simulate.simulate` reads ``2·horizon``). Episode ``i`` is
      then the same whatever the shard size and the number of workers: the shards of a run
      concatenate to exactly the unsharded data.
    * :meth:`spawned_rng` (or :meth:`spawned_seed`) — an independent child stream per shard
      (``SeedSequence.spawn``), for generators that draw a variable number of numbers per
      episode (physics engines, environments with random resets). The data then depend on
      the seed and the shard size, still not on the number of workers.
    """

    index: int
    count: int
    start: int
    size: int = attrs.field(validator=whole_number("a shard's size", error=RmtkError))
    seed: np.random.SeedSequence = attrs.field(eq=False)

    @property
    def stop(self) -> int:
        return self.start + self.size

    def jumped_rng(self, draws_per_episode: int) -> np.random.Generator:
        """The root generator advanced by ``start · draws_per_episode`` 64-bit draws (one per
        ``Generator.random()`` double)."""
        bits = np.random.PCG64(self.seed)
        bits.advance(self.start * int(draws_per_episode))
        return np.random.Generator(bits)

    def spawned_seed(self) -> np.random.SeedSequence:
        """This shard's own seed: child ``index`` of the root, i.e.
        ``SeedSequence(seed).spawn(count)[index]``, for code that seeds several generators
        (an environment and a policy) from one sequence."""
        return np.random.SeedSequence(
            self.seed.entropy, spawn_key=tuple(self.seed.spawn_key) + (self.index,), pool_size=self.seed.pool_size
        )

    def spawned_rng(self) -> np.random.Generator:
        """An independent generator of this shard: ``default_rng(self.spawned_seed())``."""
        return np.random.default_rng(self.spawned_seed())

    def __str__(self) -> str:
        return f"shard {self.index} of {self.count} (episodes {self.start}..{self.stop - 1})"


def plan_shards(n: int, shard_size: int, seed) -> list[Shard]:
    """Episodes ``0..n-1`` in consecutive shards of ``shard_size`` (the last may be smaller),
    all sharing the root seed of ``seed`` (:func:`root_seed`)."""
    whole_number("the number of episodes", error=RmtkError)(n)
    whole_number("the shard size", error=RmtkError)(shard_size)
    root = root_seed(seed)
    count = -(-int(n) // int(shard_size))
    return [Shard(k, count, k * shard_size, min(shard_size, n - k * shard_size), root) for k in range(count)]


class TreeReducer(Generic[T]):
    """Reduces results fed in order with ``merge(left, right)`` along a fixed binary tree.

    The stack holds partial results with their weights (how many inputs each covers); a new
    input is merged with the top while the top's weight is not larger, so ``n`` inputs
    are merged as the binary digits of ``n`` say. The shape is that of merging neighbours
    level by level, ``((0 1)(2 3))((4 5) 6)`` for seven inputs, whatever ``merge`` does: it may
    merge values at once (a local engine) or submit a task and return a future (a
    distributed one). At most ``log2(n) + 1`` partial results are held.
    """

    def __init__(self, merge: Callable[[T, T], T]):
        self.merge = merge
        self._stack: list[tuple[int, T]] = []
        self.n_inputs = 0

    def add(self, item: T) -> None:
        weight = 1
        while self._stack and self._stack[-1][0] <= weight:
            w, top = self._stack.pop()
            item, weight = self.merge(top, item), weight + w
        self._stack.append((weight, item))
        self.n_inputs += 1

    def result(self) -> T:
        """The reduction of every input (the rest of the stack merged right to left)."""
        if not self._stack:
            raise RmtkError("nothing to reduce: no input was added")
        item = self._stack[-1][1]
        for _, left in reversed(self._stack[:-1]):
            item = self.merge(left, item)
        return item
