"""Axis orders of rmtk's arrays, and shape errors that say which order an array was given in.

The convention for new APIs is *state first*: an array indexed by states, nodes, actions and
next states puts them in that order — ``(s, u, a)`` for a product policy, ``(s, a, s')`` for
transitions and their counts, matching the kernel's rows ``s·|A| + a`` (docs/design/02-conventions.md, lists every
API's order). Older APIs keep theirs (``LabeledMDP.from_dense`` takes
``P[a, s, s']``, node policy tables ``(u, s, a)``); when an array of the wrong order reaches
one, :func:`order_hint` names the order it reads as and the transpose that fixes it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np


def order_hint(what: str, shape: Sequence[int], axes: Sequence[tuple[str, int]]) -> str:
    """The message for ``what`` of ``shape`` where ``axes`` (name, size) were expected: when
    exactly one other order of the expected axes has this shape, it names that order and the
    transpose back (axes of equal size are taken in their expected relative order)."""
    names, want = [n for n, _ in axes], tuple(int(k) for _, k in axes)
    shape = tuple(int(k) for k in shape)
    msg = f"{what} has shape {shape}; expected ({', '.join(names)}) = {want}"
    if len(shape) != len(want):
        return msg
    # orders that give this shape, axes of equal size kept in their relative order (they cannot be told apart)
    fits = {
        perm
        for perm in itertools.permutations(range(len(want)))
        if tuple(want[i] for i in perm) == shape
        and perm != tuple(range(len(want)))
        and all(
            perm[i] < perm[j]
            for i in range(len(perm))
            for j in range(i + 1, len(perm))
            if want[perm[i]] == want[perm[j]]
        )
    }
    if len(fits) == 1:
        perm = fits.pop()
        back = tuple(int(i) for i in np.argsort(perm))
        msg += f"; it reads as ({', '.join(names[i] for i in perm)}): pass it .transpose{back}"
    return msg
