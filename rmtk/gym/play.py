"""Playing one shard of episodes of a Gymnasium environment and counting them: the work
behind :func:`~rmtk.gym.collect` and :func:`~rmtk.gym.collect_shard`, run here or on the workers
of an engine (:mod:`rmtk.engines.local`). The user's labeler, discretiser and policy are checked
here, with errors naming the episode and step."""

from __future__ import annotations

import inspect
from collections.abc import Callable

import attrs
import numpy as np

from ..data import Demonstrations
from ..errors import DataError, RmtkError
from ..mdp.space import Space
from ..ptp.empirical import count_chunk
from .discretize import Identity
from .labels import Alphabet, StateLabels, check_labeler
from .policies import Context
from .recording import Recording, of_table, sum_rows
from .step_rewards import batch_rewards, step_reward


# ---------------------------------------------------------------------- environments
def make_env(env):
    """``(environment, made here)`` from an environment, a Gymnasium id or a factory."""
    import gymnasium

    if isinstance(env, (gymnasium.Env, gymnasium.vector.VectorEnv)):
        return env, False
    if isinstance(env, str):
        try:
            return gymnasium.make(env), True
        except Exception as exc:
            raise RmtkError(
                f"cannot make the Gymnasium environment {env!r}: {type(exc).__name__}: {exc}"
                + (_REGISTERED if "rmtk/" in env else "")
            ) from exc
    if callable(env):
        try:
            made = env()
        except Exception as exc:
            raise RmtkError(
                f"the environment factory {getattr(env, '__name__', env)!r} raised {type(exc).__name__}: {exc}"
            ) from exc
        if not isinstance(made, (gymnasium.Env, gymnasium.vector.VectorEnv)):
            raise RmtkError(f"the environment factory returned {type(made).__name__}, not a Gymnasium environment")
        return made, True
    raise RmtkError(
        f"env must be a Gymnasium environment, a vector environment, an environment id or a function "
        f"making one, not {type(env).__name__}"
    )


_REGISTERED = (
    "; rmtk's environments are registered by importing rmtk.gym, or named with their module: "
    "'rmtk.gym:rmtk/OfficeWorld-v0'"
)


def _env_name(env) -> str:
    spec = getattr(env, "spec", None)
    return getattr(spec, "id", None) or type(getattr(env, "unwrapped", env)).__name__


@attrs.frozen
class Setup:
    """What one environment needs from the user's objects, checked once."""

    vector: bool
    copies: int
    n_states: int
    n_actions: int
    action_start: int
    alphabet: Alphabet
    discretizer: Callable
    labeler: Callable
    name: str

    @classmethod
    def of(cls, env, labeler, discretizer, propositions, n_states, name) -> Setup:
        import gymnasium

        vector = isinstance(env, gymnasium.vector.VectorEnv)
        mode = env.metadata.get("autoreset_mode") if vector else None
        if getattr(mode, "value", mode) == "Disabled":
            raise RmtkError(
                "collect steps every copy of a vector environment until the wave's longest episode ends, "
                "which autoreset_mode=DISABLED forbids; make it with the NEXT_STEP (default) or SAME_STEP "
                "autoreset mode"
            )
        obs_space = env.single_observation_space if vector else env.observation_space
        act_space = env.single_action_space if vector else env.action_space
        if not isinstance(act_space, gymnasium.spaces.Discrete):
            raise RmtkError(
                f"collect counts discrete actions; the action space is {act_space} (wrap the environment "
                "so that its actions are Discrete)"
            )
        if (
            isinstance(labeler, StateLabels)
            and isinstance(obs_space, gymnasium.spaces.Discrete)
            and int(obs_space.start) + int(obs_space.n) > len(labeler.labels)
        ):
            raise RmtkError(
                f"the labeler labels {len(labeler.labels)} states (StateLabels), and the environment observes "
                f"{obs_space}: some observations have no label (a product with a reward machine observes its "
                "nodes too: record the bare environment)"
            )
        if n_states is None:
            size = getattr(discretizer, "size", None)
            if size is None:
                raise RmtkError("collect needs the number of states of a plain discretiser function: pass n_states=N")
            n_states = size(obs_space)
        if not 1 <= int(n_states) < 2**31:
            raise RmtkError(f"collect counts at most 2^31 - 1 states (32-bit state indices), not {n_states}")
        if labeler is None:  # state histories: each state its own proposition (to learn the labels)
            if propositions is not None:
                raise RmtkError(
                    "collect without a labeler records state histories: the propositions are the states, "
                    "pass no propositions"
                )
            propositions = [f"s{i}" for i in range(int(n_states))]
        elif callable(labeler):  # a labeler of batches only (``batch(obs, infos)``) is read in play
            check_labeler(labeler)
        props = propositions if propositions is not None else getattr(labeler, "propositions", None)
        if props is None:
            raise RmtkError("collect needs the propositions the labeler can return: pass propositions=[...]")
        return cls(
            vector,
            int(env.num_envs) if vector else 1,
            int(n_states),
            int(act_space.n),
            int(act_space.start),
            Alphabet(props),
            discretizer,
            labeler,
            name or _env_name(env),
        )

    def space(self) -> Space:
        return Space(self.n_states, self.n_actions, self.alphabet.propositions, self.name)

    def states(self, obs, alive, where) -> tuple[np.ndarray, int]:
        """State indices of the live copies (−1 elsewhere) and how many were clipped."""
        d = self.discretizer
        out = np.full(self.copies, -1, dtype=np.int64)
        live = np.flatnonzero(alive)
        batch = getattr(d, "batch", None)
        if batch is not None:
            rows = obs if self.vector else np.asarray(obs)[None]
            index, outside = batch(rows)
            index, outside = np.asarray(index)[live], np.asarray(outside)[live]
            if outside.any():
                i = int(live[np.argmax(outside)])
                row = np.asarray(rows[i])
                if np.isnan(np.asarray(row, dtype=float)).any():
                    raise DataError(f"{where(i)}: the observation holds NaN: {row!r}")
                if not getattr(d, "clip", True):
                    raise DataError(
                        f"{where(i)}: the observation is outside the bins ({d.describe_outside(row)}); "
                        "pass Bins(..., clip=True) to clip it into the edge bins and count it"
                    )
            clipped = int(outside.sum())
        else:
            index = np.array([_as_state(d(obs[i] if self.vector else obs), where(i)) for i in live], dtype=np.int64)
            clipped = 0
        bad = np.flatnonzero((index < 0) | (index >= self.n_states))
        if bad.size:
            raise DataError(
                f"{where(int(live[bad[0]]))}: the discretiser returned state {index[bad[0]]}, outside "
                f"0..{self.n_states - 1}"
            )
        out[live] = index
        return out, clipped

    def labels(self, obs, info, alive, where) -> np.ndarray:
        """Proposition indices of the live copies (−1 elsewhere)."""
        out = np.full(self.copies, -1, dtype=np.int64)
        live = np.flatnonzero(alive)
        batch = getattr(self.labeler, "batch", None)
        if self.vector and batch is not None:
            out[live] = self.alphabet.check(np.asarray(batch(obs, info))[live], lambda j: where(int(live[j])))
        elif self.vector:
            for i in live:
                out[i] = self.alphabet.index(self.labeler(obs[i], _one_info(info, i)), where(int(i)))
        else:
            out[0] = self.alphabet.index(self.labeler(obs, info), where(0))
        return out

    def actions(self, action, alive, where) -> np.ndarray:
        """Action indices of the live copies, checked against the action space."""
        a = np.asarray(action)
        shape = (self.copies,) if self.vector else ()
        if a.shape != shape:
            raise DataError(
                f"{where(0)}: the policy returned {action!r} (shape {a.shape}); it must return "
                + (f"one action per copy of the vector environment, shape {shape}" if self.vector else "one action")
            )
        a = a.reshape(self.copies)
        if a.dtype == bool or not np.issubdtype(a.dtype, np.integer):
            raise DataError(
                f"{where(0)}: the policy returned {action!r} ({a.dtype}); actions of "
                f"Discrete({self.n_actions}) are integers"
            )
        idx = a.astype(np.int64) - self.action_start
        bad = np.flatnonzero(alive & ((idx < 0) | (idx >= self.n_actions)))
        if bad.size:
            i = int(bad[0])
            raise DataError(
                f"{where(i)}: the policy returned action {a[i]}, which is not in the action space "
                f"Discrete({self.n_actions}" + (f", start={self.action_start})" if self.action_start else ")")
            )
        return idx

    # ------------------------------------------------------------------ a single environment, one value at a time
    def scalar_states(self, tallies: dict):
        """``(state_of(obs, episode, t), final_of(obs))`` for a single environment: the
        checked state index of a step's observation (clipped ones tallied), and the state of
        an episode's last observation, −1 when it cannot be discretised (never an error: it
        only serves the (s, a, s') counts)."""
        d, n = self.discretizer, self.n_states
        identity = isinstance(d, Identity)
        alive = np.ones(1, dtype=bool)

        def slow(obs, episode, t):
            def where(i):
                return f"episode {episode}, step {t}"

            index, clipped = self.states(obs, alive, where)
            tallies["clipped"] += clipped
            return int(index[0])

        def state_of(obs, episode, t):
            if identity and (type(obs) is int or isinstance(obs, np.integer)) and 0 <= obs < n:
                return int(obs)
            return slow(obs, episode, t)

        def final_of(obs):
            if identity and (type(obs) is int or isinstance(obs, np.integer)) and 0 <= obs < n:
                return int(obs)
            return int(self.final_states(obs, alive)[0])

        return state_of, final_of

    def scalar_actions(self):
        """``action_of(action, episode, t)``: the policy's action checked against the action
        space, as the Python integer handed to the environment."""
        lo, hi = self.action_start, self.action_start + self.n_actions
        alive = np.ones(1, dtype=bool)

        def action_of(action, episode, t):
            if type(action) is int and lo <= action < hi:
                return action
            idx = self.actions(action, alive, lambda i: f"episode {episode}, step {t}")
            return int(idx[0]) + lo

        return action_of

    # ------------------------------------------------------------------ the observation that ends an episode
    def metadata_final(self, env):
        """``final(obs, info) -> batch`` holding each copy's last observation of an episode
        that just ended, by the vector environment's autoreset mode (None: not available)."""
        mode = getattr(env.metadata.get("autoreset_mode"), "value", env.metadata.get("autoreset_mode"))
        if mode in (None, "NextStep"):
            return lambda obs, info: obs
        if mode == "SameStep":

            def final(obs, info):
                rows = list(obs)
                for i in np.flatnonzero(info.get("_final_obs", ())):
                    rows[i] = info["final_obs"][i]
                return np.stack([np.asarray(r) for r in rows])

            return final
        return None

    def final_states(self, obs, mask) -> np.ndarray:
        """States of the copies in ``mask`` (−1 elsewhere, and where the observation cannot
        be discretised: outside the bins with ``clip=False``, NaN, a discretiser's error)."""
        out = np.full(self.copies, -1, dtype=np.int64)
        d = self.discretizer
        try:
            batch = getattr(d, "batch", None)
            if batch is not None:
                index, outside = batch(obs if self.vector else np.asarray(obs)[None])
                index = np.where(np.asarray(outside) & (not getattr(d, "clip", True)), -1, np.asarray(index))
                rows = np.asarray(obs if self.vector else np.asarray(obs)[None])
                if rows.dtype.kind == "f":
                    index = np.where(np.isnan(rows.reshape(len(rows), -1)).any(axis=1), -1, index)
            else:
                index = np.array([int(d(obs[i] if self.vector else obs)) if m else -1 for i, m in enumerate(mask)])
        except Exception:  # noqa: BLE001 - a last observation that cannot be mapped is only not counted
            return out
        index = np.where((index < 0) | (index >= self.n_states), -1, index)
        out[mask] = index[mask]
        return out


def _as_state(value, where: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise DataError(
            f"{where}: the discretiser returned {value!r} ({type(value).__name__}); it must return a "
            "state index (an integer)"
        )
    return int(value)


def _one_info(info: dict, i: int) -> dict:
    """Copy ``i``'s entries of a vector environment's info (``_key`` masks say which are set)."""
    return {k: v[i] for k, v in info.items() if not k.startswith("_") and info.get("_" + k, np.ones(i + 1, bool))[i]}


# ---------------------------------------------------------------------- errors of the user's objects
def raised(what: str, exc: Exception, where: str) -> DataError:
    """A :class:`~rmtk.errors.DataError` naming the episode and step at which ``what`` (the
    environment's ``step()``, the policy...) raised ``exc`` (chain it: ``raise ... from exc``)."""
    if isinstance(exc, RmtkError):  # rmtk's own message (e.g. InfoLabel's), located if it is not
        return DataError(str(exc) if str(exc).startswith("episode") else f"{where}: {exc}")
    return DataError(f"{where}: {what} raised {type(exc).__name__}: {exc}")


def policy_error(policy, exc: Exception, where: str) -> DataError:
    """What a policy's exception means: a wrong signature (it cannot be called as
    ``policy(obs, ctx)``) or an error inside it."""
    if isinstance(exc, TypeError):
        try:
            inspect.signature(policy).bind(None, None)
        except TypeError:
            return DataError(
                f"{where}: the policy cannot be called as policy(obs, ctx) ({exc}); a policy takes the "
                "observation and a Context (step t, state, label, propositions, rng)"
            )
        except ValueError:  # no signature to inspect (some builtins)
            pass
    return raised("the policy", exc, where)


def _where(episode: int, t: int) -> str:
    return f"episode {episode}, step {t}"


# ---------------------------------------------------------------------- one shard
def play_shard(
    setup: Setup,
    env,
    policy,
    episodes: int,
    seed,
    first: int,
    max_steps: int,
    compress: bool,
    rewards=None,
    moves: bool = True,
) -> Recording:
    """Play and count ``episodes`` episodes; the environment's resets and the policy's
    generator come from two children of ``seed`` (the same seed, the same data). ``rewards``:
    None (not recorded), True (the environment's) or a function (see :func:`~rmtk.gym.collect`);
    ``moves``: count the ``(s, a, s')`` moves too."""
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    env_seq, policy_seq = (np.random.SeedSequence(seq.entropy, spawn_key=tuple(seq.spawn_key) + (k,)) for k in (0, 1))
    rng = np.random.default_rng(policy_seq)
    waves = [min(setup.copies, episodes - w) for w in range(0, episodes, setup.copies)]
    resets = env_seq.generate_state(len(waves), dtype=np.uint32)
    tallies = {"clipped": 0, "terminated": 0, "truncated": 0, "cut": 0}
    if setup.vector:
        parts, done = [], 0
        for w, size in enumerate(waves):
            parts.append(
                _wave(setup, env, policy, size, int(resets[w]), first + done, max_steps, rng, tallies, rewards)
            )
            done += size
        T = max(p[0].shape[1] for p in parts)
        pad = lambda a, v=-1: np.pad(a, ((0, 0), (0, T - a.shape[1])), constant_values=v)  # noqa: E731
        states, actions, labels, lengths, finals = (
            np.concatenate([pad(p[k]) if k < 3 else p[k] for p in parts]) for k in range(5)
        )
        paid, final_labels = (
            (np.concatenate([pad(p[5], np.nan) for p in parts]), np.concatenate([p[6] for p in parts]))
            if rewards is not None
            else (None, None)
        )
    else:
        states, actions, labels, lengths, finals, paid, final_labels = _episodes(
            setup, env, policy, resets, first, max_steps, rng, tallies, rewards
        )
    demos = Demonstrations(states, actions, lengths, rewards=paid)
    table = count_chunk(setup.space(), demos, compress=compress, labels=labels, final_labels=final_labels)
    if moves:
        moves, move_counts = count_moves(states, actions, lengths, finals)
    else:
        moves, move_counts = np.zeros((0, 3), np.int64), np.zeros(0, np.int64)
    starts, start_counts = np.unique(states[lengths > 0, 0], return_counts=True)
    return of_table(
        table,
        setup.alphabet.propositions,
        name=setup.name,
        episodes=episodes,
        moves=moves,
        move_counts=move_counts,
        starts=starts,
        start_counts=start_counts,
        **tallies,
    )


def count_moves(states: np.ndarray, actions: np.ndarray, lengths: np.ndarray, finals: np.ndarray):
    """Distinct ``(s, a, s')`` rows of the episodes and their counts: each step's state and
    action with the next step's state, the last step's with ``finals`` (the state of the
    observation that ended the episode, −1 when it could not be discretised: not counted)."""
    nxt = np.full_like(states, -1)
    nxt[:, :-1] = states[:, 1:]
    ran = np.flatnonzero(lengths > 0)
    nxt[ran, lengths[ran] - 1] = finals[ran]
    keep = (states >= 0) & (nxt >= 0)
    rows = np.stack([states[keep], actions[keep], nxt[keep]], axis=1).astype(np.int64)
    return sum_rows(rows.reshape(-1, 3))


def _episodes(
    setup: Setup, env, policy, resets, first: int, max_steps: int, rng: np.random.Generator, tallies: dict, rewards
):
    """One episode after another on a single environment: plain Python values in the loop
    (the environment's own speed matters here), arrays at the end."""
    n = len(resets)
    flat_s: list[int] = []
    flat_a: list[int] = []
    flat_l: list[int] = []
    flat_r: list[float] = []
    lengths = np.zeros(n, dtype=np.int64)
    finals = np.full(n, -1, dtype=np.int64)
    final_labels = np.full(n, -1, dtype=np.int64)
    state_of, final_of = setup.scalar_states(tallies)
    action_of, alphabet = setup.scalar_actions(), setup.alphabet
    props, start = setup.alphabet.propositions, setup.action_start
    append_s, append_a, append_l = flat_s.append, flat_a.append, flat_l.append
    # the common cases inline (the functions above check everything else, and name the errors)
    identity, S = isinstance(setup.discretizer, Identity), setup.n_states
    labeler, index = setup.labeler, setup.alphabet.mapping
    stop = start + setup.n_actions
    for e in range(n):
        episode, t = first + e, 0
        try:
            obs, info = env.reset(seed=int(resets[e]))
        except Exception as exc:
            raise raised("the environment's reset()", exc, _where(episode, 0)) from exc
        while True:
            s = obs if identity and type(obs) is int and 0 <= obs < S else state_of(obs, episode, t)
            if labeler is None:  # state histories: the state is its own proposition
                k = s
            else:
                try:
                    label = labeler(obs, info)
                except Exception as exc:
                    raise raised("the labeler", exc, _where(episode, t)) from exc
                k = index.get(label) if type(label) is str else None
                if k is None:
                    k = alphabet.index(label, _where(episode, t))
            try:
                action = policy(obs, Context(t, s, k, props, rng))
            except Exception as exc:
                raise policy_error(policy, exc, _where(episode, t)) from exc
            a = action if type(action) is int and start <= action < stop else action_of(action, episode, t)
            before = obs
            try:
                obs, paid, term, trunc, info = env.step(a)
            except Exception as exc:
                raise raised(f"the environment's step({a})", exc, _where(episode, t)) from exc
            if rewards is not None:
                flat_r.append(
                    paid
                    if rewards is True and type(paid) is float
                    else step_reward(rewards, before, a, paid, obs, info, _where(episode, t))
                )
            append_s(s)
            append_a(a - start)
            append_l(k)
            t += 1
            if term or trunc:
                tallies["terminated" if term else "truncated"] += 1
                break
            if t >= max_steps:
                tallies["cut"] += 1
                break
        lengths[e] = t
        finals[e] = final_of(obs)
        if rewards is not None:  # the label after the last step: its reward is evidence too
            final_labels[e] = finals[e] if labeler is None else _final_label(setup, obs, info, episode, t)
    T = int(lengths.max(initial=0))
    filled = np.arange(T) < lengths[:, None]
    out = []
    for flat in (flat_s, flat_a, flat_l):
        arr = np.full((n, T), -1, dtype=np.int64)
        arr[filled] = flat
        out.append(arr)
    states, actions, labels = out
    paid_steps = None
    if rewards is not None:
        paid_steps = np.full((n, T), np.nan)
        paid_steps[filled] = flat_r
    return states.astype(np.int32), actions.astype(np.int32), labels, lengths, finals, paid_steps, final_labels


def _final_label(setup: Setup, obs, info, episode: int, t: int) -> int:
    """The label of the observation that ended an episode (after its step ``t − 1``)."""
    try:
        label = setup.labeler(obs, info)
    except Exception as exc:
        raise raised("the labeler", exc, f"episode {episode}, the observation after its last step") from exc
    return setup.alphabet.index(label, f"episode {episode}, the observation after its last step")


def _wave(
    setup: Setup,
    env,
    policy,
    size: int,
    reset_seed: int,
    first: int,
    max_steps: int,
    rng: np.random.Generator,
    tallies: dict,
    rewards=None,
):
    """``size`` episodes, one per copy of the environment, played together (the rewards'
    last steps are evidence only in the NEXT_STEP autoreset mode, where the observation that
    ended an episode is the step's)."""
    everyone = f"episodes {first}-{first + size - 1}"
    try:
        obs, info = env.reset(seed=reset_seed)
    except Exception as exc:
        raise raised("the environment's reset()", exc, f"{everyone}, step 0") from exc
    alive = np.arange(setup.copies) < size
    lengths = np.zeros(setup.copies, dtype=np.int64)
    finals = np.full(setup.copies, -1, dtype=np.int64)
    final_obs = setup.metadata_final(env)
    mode = getattr(env.metadata.get("autoreset_mode"), "value", env.metadata.get("autoreset_mode"))
    final_labels = np.full(setup.copies, -1, dtype=np.int64)
    paid_cols: list[np.ndarray] = []
    cols: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for t in range(max_steps):

        def where(i, t=t):
            return f"episode {first + i}, step {t}"

        s, clipped = setup.states(obs, alive, where)
        lab = s if setup.labeler is None else setup.labels(obs, info, alive, where)
        ctx = Context(t, s, lab, setup.alphabet.propositions, rng)
        try:
            action = policy(obs, ctx)
        except Exception as exc:
            raise policy_error(policy, exc, f"{everyone}, step {t}") from exc
        a = setup.actions(action, alive, where)
        tallies["clipped"] += clipped
        cols.append((np.where(alive, s, -1), np.where(alive, a, -1), np.where(alive, lab, -1)))
        before = obs
        try:
            obs, paid, term, trunc, info = env.step(a + setup.action_start)
        except Exception as exc:
            raise raised("the environment's step()", exc, f"{everyone}, step {t}") from exc
        term, trunc = np.atleast_1d(term).astype(bool), np.atleast_1d(trunc).astype(bool)
        ended = alive & (term | trunc)
        if rewards is not None:
            paid_cols.append(batch_rewards(rewards, before, a + setup.action_start, paid, obs, info, alive, where))
            last = ended | (alive & (t + 1 == max_steps))
            if mode in (None, "NextStep") and setup.labeler is not None and last.any():
                final_labels[last] = setup.labels(obs, info, last, where)[last]
        if ended.any() and final_obs is not None:
            finals[ended] = setup.final_states(final_obs(obs, info), ended)[ended]
        lengths[ended] = t + 1
        tallies["terminated"] += int((ended & term).sum())
        tallies["truncated"] += int((ended & trunc & ~term).sum())
        alive &= ~ended
        if not alive.any():
            break
    lengths[alive] = len(cols)
    tallies["cut"] += int(alive.sum())
    if alive.any() and final_obs is not None:
        finals[alive] = setup.final_states(obs, alive)[alive]
    states, actions, labels = (np.stack([c[k] for c in cols], axis=1)[:size] for k in range(3))
    if setup.labeler is None:
        final_labels = finals
    paid_steps = np.stack(paid_cols, axis=1)[:size] if rewards is not None else None
    return (
        states.astype(np.int32),
        actions.astype(np.int32),
        labels,
        lengths[:size],
        finals[:size],
        paid_steps,
        final_labels[:size],
    )
