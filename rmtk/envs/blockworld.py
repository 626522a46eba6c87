"""The block world (paper section 6.2, appendix B.1: stack, stack-avoid).

A configuration is a tuple of piles, each listing block names bottom → top; every block
appears exactly once. An action moves the top block of one pile onto another.

State order (documented, deterministic): first by the pile heights, in decreasing
lexicographic order ((3,0,0), (2,1,0), (2,0,1), (1,2,0), ...), then by the order of the
blocks read pile 0 bottom → top, then pile 1, ..., in :func:`itertools.permutations` order
of ``blocks``. With the defaults state 0 is ``GYR|_|_``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._common import Where, alphabet, as_float, as_int, as_name, as_sequence, build, group_labels, label_pairs, uniform

#: Largest number of configurations a block world may have.
MAX_STATES = 1_000_000

Configuration = tuple[tuple[str, ...], ...]


def blockworld(
    blocks: Sequence[str] = ("G", "Y", "R"),
    piles: int = 3,
    labels: Sequence[tuple[str, Sequence[Any]]] = (),
    other: str = "I",
    start: Sequence[Any] = (),
    gamma: float = 0.99,
    propositions: Sequence[str] | None = None,
    name: str = "blocks",
):
    """Blocks on piles, moved one at a time; deterministic.

    Args:
        blocks: the block names.
        piles: the number of piles.
        labels: ``(label, configurations)`` pairs: each listed configuration gets that
            label (a configuration may have one label only).
        other: the label of every configuration not listed.
        start: configurations; the initial distribution is uniform over them (required).
        gamma: the discount.
        propositions: the alphabet order; ``None``: the sorted labels used by some state.
        name: the MDP's name.

    A configuration is a sequence of ``piles`` piles, each a sequence of block names bottom
    → top (a pile given as a string is the single block of that name), or a state name
    such as ``"GY|R|_"``. States are named by their piles joined by ``|``, each pile its
    blocks concatenated (joined by ``.`` when some block name is longer than one
    character), ``_`` for an empty pile. Action ``a = piles·from + to`` is named
    ``f"{from}to{to}"``; ``from == to`` or an empty source pile leaves the state unchanged.
    """
    where = Where("blockworld", name)
    blocks = tuple(as_name(b, "a block name", where) for b in as_sequence(blocks, "blocks", where))
    if not blocks:
        raise where.fail("no blocks")
    for i, b in enumerate(blocks):
        if b in blocks[:i]:
            raise where.fail(f"block {b!r} is listed twice in blocks")
        if b == "_" or "|" in b or "." in b:
            raise where.fail(f"block name {b!r} may not be '_' nor contain '|' or '.' (they write state names)")
    piles = as_int(piles, "piles", where)
    if piles < 1:
        raise where.fail(f"piles={piles} must be at least 1")
    other = as_name(other, "other", where)
    gamma = as_float(gamma, "gamma", where)
    n, p = len(blocks), piles
    n_states = math.factorial(n) * math.comb(n + p - 1, p - 1)
    if n_states > MAX_STATES:
        raise where.fail(f"{n} blocks on {p} piles give {n_states} configurations; at most {MAX_STATES} are supported")
    sep = "" if all(len(b) == 1 for b in blocks) else "."
    world = _World(blocks, p, sep, where)

    # labels and start configurations
    pairs = [
        (lab, tuple(world.parse(c) for c in as_sequence(cs, f"the configurations of label {lab!r}", where)))
        for lab, cs in label_pairs(labels, where)
    ]
    labels_norm = group_labels(pairs)
    owner: dict[int, str] = {}
    for lab, configs in labels_norm:
        for c in configs:
            s = world.index(c)
            if s in owner:
                how = "twice for label" if owner[s] == lab else f"with two labels, {owner[s]!r} and"
                raise where.fail(f"configuration {world.names[s]} is listed {how} {lab!r}")
            owner[s] = lab
    start_norm = tuple(world.parse(c) for c in as_sequence(start, "start", where))
    if not start_norm:
        raise where.fail("start lists no configurations; give at least one start configuration")
    start_idx = [world.index(c) for c in start_norm]
    if len(set(start_idx)) < len(start_idx):
        dup = next(s for i, s in enumerate(start_idx) if s in start_idx[:i])
        raise where.fail(f"start configuration {world.names[dup]} is listed twice")

    used = [lab for lab, _ in labels_norm] + ([other] if len(owner) < world.S else [])
    props_norm, props = alphabet(propositions, used, where)
    pi = {q: i for i, q in enumerate(props)}
    state_labels = np.full(world.S, pi.get(other, -1), dtype=np.int64)
    for s, lab in owner.items():
        state_labels[s] = pi[lab]

    src, dst = world.moves()
    params: dict[str, Any] = dict(
        blocks=blocks, piles=p, labels=labels_norm, other=other, start=start_norm, gamma=gamma, propositions=props_norm
    )
    return build(
        "blockworld",
        params,
        states=world.names,
        actions=[f"{f}to{t}" for f in range(p) for t in range(p)],
        rows=src,
        cols=dst,
        probs=np.ones(src.size),
        labels=state_labels,
        propositions=props,
        initial=uniform(start_idx, world.S),
        gamma=gamma,
        name=name,
    )


class _World:
    """All configurations as arrays ``pile[s, b]``, ``height[s, b]`` (block ``b``'s pile and
    position from the bottom), with an integer key per configuration for fast look-up."""

    def __init__(self, blocks: tuple[str, ...], p: int, sep: str, where: Where):
        self.blocks, self.p, self.sep, self.where = blocks, p, sep, where
        n = len(blocks)
        heights = _compositions(n, p)  # (H, p)
        perms = np.array(list(itertools.permutations(range(n))), dtype=np.int64).reshape(-1, n)  # (n!, n)
        H, F = len(heights), len(perms)
        # for each height pattern: the pile and height of the k-th block read in order
        bounds = np.cumsum(heights, axis=1)
        pos = np.arange(n)
        pile_at = (pos[None, :, None] >= bounds[:, None, :]).sum(axis=2)  # (H, n)
        height_at = pos[None, :] - np.take_along_axis(np.pad(bounds, ((0, 0), (1, 0)))[:, :-1], pile_at, axis=1)
        self.S = H * F
        self.pile = np.empty((H, F, n), dtype=np.int64)
        self.height = np.empty((H, F, n), dtype=np.int64)
        hi = np.arange(H)[:, None, None]
        fi = np.arange(F)[None, :, None]
        self.pile[hi, fi, perms[None, :, :]] = pile_at[:, None, :]
        self.height[hi, fi, perms[None, :, :]] = height_at[:, None, :]
        self.pile = self.pile.reshape(self.S, n)
        self.height = self.height.reshape(self.S, n)
        self.size = np.repeat(heights, F, axis=0)  # (S, p)
        # key: mixed radix, digit of block b = pile·n + height < p·n
        self.base = p * n
        self.weights = self.base ** np.arange(n, dtype=np.int64)
        self.keys = (self.pile * n + self.height) @ self.weights
        self.order = np.argsort(self.keys)
        self.sorted_keys = self.keys[self.order]
        # names: blocks in reading order, cut at the pile bounds
        order_names = [[blocks[b] for b in perm] for perm in perms.tolist()]
        cuts = [[0, *row] for row in bounds.tolist()]
        self.names = [
            "|".join(sep.join(names[c[i] : c[i + 1]]) or "_" for i in range(p)) for c in cuts for names in order_names
        ]

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        return self.order[np.searchsorted(self.sorted_keys, keys)]

    def index(self, config: Configuration) -> int:
        bi = {b: i for i, b in enumerate(self.blocks)}
        key = sum(
            (pile * len(self.blocks) + h) * int(self.weights[bi[b]])
            for pile, stack in enumerate(config)
            for h, b in enumerate(stack)
        )
        return int(self.lookup(np.array([key]))[0])

    def parse(self, config: Any) -> Configuration:
        """A configuration, validated and normalised to a tuple of tuples of block names."""
        fail = self.where.fail
        if isinstance(config, str):
            parts = config.split("|")
            norm = tuple(() if q == "_" else tuple(q.split(".") if self.sep else q) for q in parts)
        else:
            try:
                norm = tuple((q,) if isinstance(q, str) else tuple(q) for q in config)
            except TypeError:
                raise fail(f"configuration {config!r} must be a sequence of piles (bottom to top)") from None
        shown = _show(norm)
        if len(norm) != self.p:
            raise fail(f"configuration {shown} has {len(norm)} piles, expected {self.p}")
        seen: list[str] = []
        for b in (b for q in norm for b in q):
            if b not in self.blocks:
                raise fail(f"configuration {shown} holds the unknown block {b!r} (blocks: {', '.join(self.blocks)})")
            if b in seen:
                raise fail(f"configuration {shown} holds block {b!r} twice")
            seen.append(b)
        missing = [b for b in self.blocks if b not in seen]
        if missing:
            raise fail(f"configuration {shown} misses block(s) {', '.join(map(repr, missing))}")
        return norm

    def moves(self) -> tuple[np.ndarray, np.ndarray]:
        """COO ``(row, successor)`` arrays of the deterministic moves, row ``s·p² + a``."""
        n, p, S = len(self.blocks), self.p, self.S
        states = np.arange(S)
        A = p * p
        dst = np.empty((S, A), dtype=np.int64)
        for f in range(p):
            size_f = self.size[:, f]
            is_top = (self.pile == f) & (self.height == size_f[:, None] - 1)
            top = is_top.argmax(axis=1)  # meaningless where the pile is empty (masked below)
            w = self.weights[top]
            old = (f * n + size_f - 1) * w
            for t in range(p):
                move = size_f > 0 if f != t else np.zeros(S, dtype=bool)
                new_key = self.keys - old + (t * n + self.size[:, t]) * w
                dst[:, f * p + t] = np.where(move, self.lookup(np.where(move, new_key, self.keys)), states)
        return np.arange(S * A), dst.ravel()


def _compositions(n: int, p: int) -> np.ndarray:
    """All rows of ``p`` non-negative ints summing to ``n``, in decreasing lexicographic order
    (stars and bars: the bar positions in lexicographic order give the heights in the same order)."""
    combos = list(itertools.combinations(range(n + p - 1), p - 1))
    bars = np.array(combos, dtype=np.int64).reshape(len(combos), p - 1)
    edges = np.hstack([np.full((len(bars), 1), -1), bars, np.full((len(bars), 1), n + p - 1)])
    return (np.diff(edges, axis=1) - 1)[::-1]


def _show(config) -> str:
    return " ".join("(" + " ".join(map(str, q)) + ")" for q in config)
