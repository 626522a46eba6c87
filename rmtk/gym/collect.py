"""Record a policy in any Gymnasium environment straight into empirical prefix tree counts
(paper section 5): :func:`collect`.

Episodes are played in *shards* (a number of episodes and a seed): :func:`collect_shard` is
a plain function call returning a :class:`~rmtk.gym.Recording`, and recordings merge, so a
collection is a map over shards and a reduce (serially here, or over worker processes; a
distributed engine can call :func:`collect_shard` itself). A shard's seed comes from
``SeedSequence(seed).spawn`` by its number (:func:`shard_plan`): the same seed gives the same
recording whatever the number of workers. Only one shard's steps are ever held in memory.

A vector environment plays ``num_envs`` episodes at a time (a *wave*: every copy is reset
together, and a copy's steps after its episode ended are ignored), so the labeler, the
discretiser and the policy see whole batches. Bad input — a labeler returning something that
is not a proposition, an observation outside the bins when clipping is off, an action outside
the action space — stops the collection with a :class:`~rmtk.errors.DataError` naming the
episode and the step.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import RmtkError
from ..progress import Progress, as_progress
from .play import Setup, make_env, play_shard
from .pool import run_shards
from .recording import Merger, Recording

#: Episodes per shard when not given (rounded up to whole waves of a vector environment).
SHARD = 1000


def shard_plan(episodes: int, shard: int, seed) -> list[tuple[int, int, np.random.SeedSequence]]:
    """``(first episode, episodes, seed sequence)`` of every shard: fixed by ``seed`` and
    ``shard`` alone."""
    if isinstance(episodes, bool) or not isinstance(episodes, (int, np.integer)) or episodes < 1:
        raise RmtkError(f"episodes must be a whole number of at least 1, got {episodes!r}")
    if isinstance(shard, bool) or not isinstance(shard, (int, np.integer)) or shard < 1:
        raise RmtkError(f"shard must be a whole number of at least 1, got {shard!r}")
    n = -(-int(episodes) // int(shard))
    seqs = np.random.SeedSequence(seed).spawn(n)
    return [(k * shard, min(shard, episodes - k * shard), seqs[k]) for k in range(n)]


# ---------------------------------------------------------------------- one shard
def collect_shard(env, policy, labeler, discretizer, episodes: int, seed, *, first: int = 0,
                  propositions=None, n_states: int | None = None, max_steps: int = 1000, compress: bool = True,
                  name: str | None = None) -> Recording:
    """Play ``episodes`` episodes seeded by ``seed`` (an int or a
    :class:`numpy.random.SeedSequence`) and count them. ``first`` numbers the episodes in
    messages. Arguments as for :func:`collect`; ``env`` may be an instance (it is reset, not
    closed), an id or a factory."""
    env, owned = make_env(env)
    try:
        setup = Setup.of(env, labeler, discretizer, propositions, n_states, name)
        return play_shard(setup, env, policy, int(episodes), seed, int(first), int(max_steps), compress)
    finally:
        if owned:
            env.close()


# ---------------------------------------------------------------------- the collection
def collect(env, policy, labeler, discretizer, episodes: int, seed=0, *, propositions=None,
            n_states: int | None = None, max_steps: int = 1000, shard: int | None = None, workers: int = 1,
            compress: bool = True, name: str | None = None, progress: Progress | None = None) -> Recording:
    """Run ``policy`` for ``episodes`` episodes of ``env`` and count them into the empirical
    prefix tree policy; the result goes to :class:`~rmtk.empirical.EmpiricalPTP` as it is.

    Args:
        env: a Gymnasium environment or vector environment, an environment id, or a function
            making one (needed with ``workers`` > 1: each worker makes its own).
        policy: ``policy(obs, ctx) -> action`` (a batch of actions for a vector environment);
            ``ctx`` is a :class:`~rmtk.gym.Context` (discretised state, label, step, ``rng``).
        labeler: ``labeler(obs, info) -> proposition name`` (see :mod:`rmtk.gym.labels`).
        discretizer: observation → state index: :class:`~rmtk.gym.Identity`,
            :class:`~rmtk.gym.Bins`, or a function (then give ``n_states``).
        episodes: how many episodes to record; ``seed``: the seed of everything random.
        propositions: the alphabet (default: ``labeler.propositions``).
        max_steps: the longest episode recorded (longer ones are cut and counted as such).
        shard: episodes per shard (default 1000, in whole waves of a vector environment).
        workers: processes playing shards in parallel (the recording does not depend on it).
        compress: key the words by non-stuttering compression (docs/design.md, section 2).
        progress: hears ``count(done, episodes, "episodes")`` after every shard.
    """
    progress = as_progress(progress)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise RmtkError(f"workers must be a whole number of at least 1, got {workers!r}")
    if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)) or max_steps < 1:
        raise RmtkError(f"max_steps must be a whole number of at least 1, got {max_steps!r}")
    made, owned = make_env(env)
    try:
        setup = Setup.of(made, labeler, discretizer, propositions, n_states, name)
        if shard is None:
            shard = setup.copies * math.ceil(max(SHARD, setup.copies) / setup.copies)
        plan = shard_plan(episodes, shard, seed)
        workers = min(workers, len(plan))
        if workers > 1 and made is env:
            raise RmtkError("collect with workers > 1 needs a function that makes the environment (or its id): "
                            "each worker makes its own copy")
        merged = Merger()
        if workers == 1:
            for first, size, seq in plan:
                merged.add(play_shard(setup, made, policy, size, seq, first, int(max_steps), compress))
                progress.count(first + size, episodes, "episodes")
        else:
            if owned:
                made.close()
                owned = False
            for rec in run_shards(env, policy, setup, plan, workers, int(max_steps), compress,
                                  lambda done: progress.count(done, episodes, "episodes")):
                merged.add(rec)
        return merged.result().canonical()
    finally:
        if owned:
            made.close()


__all__ = ["collect", "collect_shard", "shard_plan", "make_env", "SHARD"]
