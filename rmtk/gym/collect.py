"""Record a policy in any Gymnasium environment straight into empirical prefix tree counts
(paper section 5): :func:`collect`.

Episodes are played in *shards* (:func:`rmtk.engines.shards.plan_shards`: consecutive episodes with a
seed each, ``SeedSequence(seed).spawn`` by shard number), and a shard is one picklable call
(:class:`CollectJob`, or :func:`collect_shard`) returning a :class:`~rmtk.gym.Recording`;
recordings merge. So a collection is a map over shards and a reduce, run by an engine
(:mod:`rmtk.engines`): in this process, or on Dask workers (``engine="dask"`` or a
``DaskEngine`` of a number of workers, a scheduler or a client). The recording is put in
canonical numbering: the same seed and shard size give an equal recording whatever the engine
and the number of workers. Only one shard's steps are held in memory per worker. A
recording made with a :class:`~rmtk.gym.NodePolicy` carries it as its ``source``: what
verdicts against a task compare with (:class:`~rmtk.gym.policies.RecordedPolicy`).

A vector environment plays ``num_envs`` episodes at a time (a *wave*: every copy is reset
together, and a copy's steps after its episode ended are ignored), so the labeler, the
discretiser and the policy see whole batches. Bad input — a labeler returning something that
is not a proposition, an observation outside the bins when clipping is off, an action outside
the action space — stops the collection with a :class:`~rmtk.errors.DataError` naming the
episode and the step.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from .. import _deprecated
from ..engines.local import Engine, LocalEngine, as_engine
from ..engines.shards import Shard, plan_shards
from ..errors import RmtkError
from ..progress import Progress, as_progress
from .play import Setup, make_env, play_shard
from .policies import NodePolicy, RecordedPolicy
from .recording import Recording

#: Episodes per shard when not given (rounded up to whole waves of a vector environment).
SHARD = 1000


# ---------------------------------------------------------------------- one shard
def collect_shard(
    env,
    policy,
    labeler,
    discretizer,
    episodes: int,
    seed,
    *,
    first: int = 0,
    propositions=None,
    n_states: int | None = None,
    max_steps: int = 1000,
    compress: bool = True,
    name: str | None = None,
    rewards=None,
) -> Recording:
    """Play ``episodes`` episodes seeded by ``seed`` (an int or a
    :class:`numpy.random.SeedSequence`) and count them. ``first`` numbers the episodes in
    messages. Arguments as for :func:`collect`; ``env`` may be an instance (it is reset, not
    closed), an id or a factory."""
    made, owned = make_env(env)
    try:
        setup = Setup.of(made, labeler, discretizer, propositions, n_states, name)
        job = CollectJob(made, policy, setup, int(max_steps), compress, _rewards(rewards))
        return recorded_with(job.play(int(episodes), seed, int(first)), policy)
    finally:
        if owned:
            made.close()


@attrs.frozen
class CollectJob:
    """One shard of a collection as a picklable call (what an engine runs on a worker): the
    environment (an instance, an id or a factory: each worker makes its own), the policy,
    the labeling and discretising set-up and the limits."""

    env: object
    policy: object
    setup: Setup
    max_steps: int
    compress: bool
    rewards: object = None
    moves: bool = True

    def __call__(self, shard: Shard) -> Recording:
        return self.play(shard.size, shard.spawned_seed(), shard.start)

    def play(self, episodes: int, seed, first: int) -> Recording:
        """Episodes ``first`` … ``first + episodes − 1``, seeded by ``seed``, counted."""
        made, owned = make_env(self.env)
        try:
            return play_shard(
                self.setup,
                made,
                self.policy,
                episodes,
                seed,
                first,
                self.max_steps,
                self.compress,
                self.rewards,
                self.moves,
            )
        finally:
            if owned:
                made.close()


# ---------------------------------------------------------------------- the collection
def collect(
    env,
    policy,
    labeler,
    discretizer,
    episodes: int,
    seed=0,
    *,
    propositions=None,
    n_states: int | None = None,
    max_steps: int = 1000,
    shard: int | None = None,
    engine: str | Engine = "local",
    compress: bool = True,
    name: str | None = None,
    rewards=None,
    progress: Progress | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    client=None,
    moves: bool = True,
) -> Recording:
    """Run ``policy`` for ``episodes`` episodes of ``env`` and count them into the empirical
    prefix tree policy; the result goes to :class:`~rmtk.ptp.empirical.EmpiricalPTP` as it is.

    Args:
        env: a Gymnasium environment or vector environment, an environment id, or a function
            making one (needed on workers: each makes its own).
        policy: ``policy(obs, ctx) -> action`` (a batch of actions for a vector environment);
            ``ctx`` is a :class:`~rmtk.gym.Context` (discretised state, label, step, ``rng``).
        labeler: ``labeler(obs, info) -> proposition name`` (see :mod:`rmtk.gym.labels`);
            ``None`` records state histories (each state its own proposition ``s<i>``), to learn
            the labels with :class:`~rmtk.labels.learner.LabelLearner`.
        discretizer: observation → state index: :class:`~rmtk.gym.Identity`,
            :class:`~rmtk.gym.Bins`, or a function (then give ``n_states``).
        episodes: how many episodes to record; ``seed``: the seed of everything random.
        propositions: the alphabet (default: ``labeler.propositions``).
        max_steps: the longest episode recorded (longer ones are cut and counted as such).
        shard: episodes per shard (default 1000, in whole waves of a vector environment).
        engine: where the shards run: ``"local"`` (this process, the default), ``"dask"`` (a
            local cluster, one worker per CPU) or an engine object, such as
            ``DaskEngine(workers=4)``, ``DaskEngine(scheduler="tcp://host:8786")`` or
            ``DaskEngine(client=c)`` (:mod:`rmtk.engines`); the recording does not depend on it.
        compress: key the words by non-stuttering compression (docs/design/02-conventions.md).
        rewards: record rewards with the counts (the recording's ``rewards``, read by
            :func:`rmtk.traces.rewards.reward_traces`): ``True`` for the environment's own,
            or a function ``rewards(obs, action, reward, next_obs, info) -> float`` (a batch
            for a vector environment) to record another (e.g. a task's reward machine's on
            the labels). A step's reward is evidence on (its label word, the label of
            ``next_obs``), the last step's too (the observation that ended the episode is
            labeled; in a vector environment only in the NEXT_STEP autoreset mode). None
            (the default): no rewards.
        progress: hears ``count(done, episodes, "episodes")`` as shards finish.
        moves: count the distinct ``(state, action, next state)`` moves (the recording's
            ``moves``, the data of :func:`rmtk.gym.tabular.estimate_mdp`); ``False`` leaves them
            out, for learning that needs no transition model (they can double the recording).
        workers, scheduler, client: deprecated (they go in rmtk 0.3.0): the previous version's
            Dask cluster, now ``engine=DaskEngine(workers=..., scheduler=..., client=...)``.
    """
    engine = _deprecated.collect_engine(engine, workers, scheduler, client)
    progress = as_progress(progress)
    if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)) or max_steps < 1:
        raise RmtkError(f"max_steps must be a whole number of at least 1, got {max_steps!r}")
    runner = as_engine(engine)
    made, owned = make_env(env)
    try:
        setup = Setup.of(made, labeler, discretizer, propositions, n_states, name)
        if shard is None:
            shard = setup.copies * math.ceil(max(SHARD, setup.copies) / setup.copies)
        plan = plan_shards(episodes, shard, seed)
        local = isinstance(runner, LocalEngine)
        if not local and made is env:
            raise RmtkError(
                "collect on workers needs a function that makes the environment (or its id): "
                "each worker makes its own copy"
            )
        if not local and owned:
            made.close()
            owned = False
        job = CollectJob(
            made if local else env, policy, setup, int(max_steps), compress, _rewards(rewards), bool(moves)
        )
        rec = runner.map_reduce(
            job,
            plan,
            reduce=Recording.merge,
            sizes=lambda s: s.size,
            total=episodes,
            what="episodes",
            progress=progress,
        )
        return recorded_with(rec.canonical(), policy)
    finally:
        if owned:
            made.close()


def recorded_with(rec: Recording, policy) -> Recording:
    """``rec`` with its ``source``: the policy it was recorded with, when that is a
    :class:`~rmtk.gym.NodePolicy` (verdicts then compare with it, :class:`RecordedPolicy`)."""
    if not isinstance(policy, NodePolicy):
        return rec
    return attrs.evolve(rec, source=RecordedPolicy(policy, policy.source_name()))


def _rewards(rewards):
    """``rewards=`` checked: None, True or a function (False is None)."""
    if rewards is None or rewards is False:
        return None
    if rewards is True or callable(rewards):
        return rewards
    raise RmtkError(f"rewards is True (the environment's), a function or None, not {rewards!r}")


__all__ = ["collect", "collect_shard", "CollectJob", "make_env", "SHARD"]
