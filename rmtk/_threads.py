"""One BLAS thread for the small dense solves of planning and reward recovery.

Their matrices have at most a few hundred rows: a second thread cannot speed them up, and on a
busy machine OpenBLAS's threads wait for a free core, which makes a 4 ms eigendecomposition
take 100 ms or more. threadpoolctl limits the threads of the BLAS already loaded, for the
duration of a ``with`` block only (the user's own setting is restored after)."""

from __future__ import annotations

import contextlib
import functools


@functools.lru_cache(maxsize=1)
def _controller():
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()  # inspects the loaded libraries once (about 0.3 ms)


def single_blas():
    """A context in which BLAS runs on one thread (about 10 µs to enter and leave)."""
    return _controller().limit(limits=1, user_api="blas")


def maybe_single_blas(small: bool):
    """:func:`single_blas` when ``small``, else nothing."""
    return single_blas() if small else contextlib.nullcontext()
