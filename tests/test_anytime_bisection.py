"""The anytime-valid intervals of rmtk.negatives.anytime.Binomial, computed with the beta-binomial
mixture's p-free part once per bisection and both ends bisected together, are bit for bit the
intervals of the plain definition: one bisection per end, the log ratio evaluated whole at
every step (the reference below, as the module stated it before)."""

import numpy as np
import pytest
from scipy.special import betaln

from rmtk.negatives.anytime import _ROUNDS, _TINY, Binomial


def log_ratio(prior, s, n, p):
    p = np.clip(p, _TINY, 1.0 - 1e-16)
    return betaln(prior + s, prior + n - s) - betaln(prior, prior) - s * np.log(p) - (n - s) * np.log1p(-p)


def reference(prior, counts, level):
    counts = np.asarray(counts, float)
    A = counts.shape[-1]
    n = np.broadcast_to(counts.sum(axis=-1, keepdims=True), counts.shape).ravel()
    bar = np.broadcast_to(np.log(A / np.asarray(level, float))[..., None], counts.shape).ravel()
    s = counts.ravel()
    seen = n > 0
    p_hat = np.where(seen, s / np.where(seen, n, 1.0), 0.5)
    a, b = np.zeros_like(p_hat), p_hat.copy()
    c, d = p_hat.copy(), np.ones_like(p_hat)
    for _ in range(_ROUNDS):
        mid = (a + b) / 2
        inside = log_ratio(prior, s, n, mid) < bar
        b, a = np.where(inside, mid, b), np.where(inside, a, mid)
        mid = (c + d) / 2
        inside = log_ratio(prior, s, n, mid) < bar
        c, d = np.where(inside, mid, c), np.where(inside, d, mid)
    lower = np.where(seen & (s > 0), a, 0.0)
    upper = np.where(seen & (s < n), d, 1.0)
    return lower.reshape(counts.shape), upper.reshape(counts.shape)


@pytest.mark.parametrize("prior", [0.5, 1.0, 2.5])
def test_intervals_are_those_of_the_plain_bisection(prior):
    rng = np.random.default_rng(int(prior * 10))
    for trial in range(60):
        counts = rng.integers(0, rng.choice([2, 50, 5000, 10**6]), size=(rng.integers(1, 30), rng.integers(2, 6)))
        level = rng.choice([0.05, 1e-4, 1e-9]) if trial % 2 else rng.random(len(counts)) * 0.1 + 1e-6
        lower, upper = Binomial(prior).intervals(counts, level)
        want_lower, want_upper = reference(prior, counts, level)
        assert np.array_equal(lower, want_lower) and np.array_equal(upper, want_upper), trial
        assert np.all(lower <= counts / np.maximum(counts.sum(axis=1, keepdims=True), 1))
