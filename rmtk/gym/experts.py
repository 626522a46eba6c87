"""Experts that act in a Gymnasium environment, asked by active learning
(:mod:`rmtk.active.loop`, docs/design/12-active-learning.md).

:class:`GymExpert` takes a single (not vector) environment whose observations are the state
indices of a labeled MDP describing it, and a :class:`~rmtk.gym.NodePolicy`: a policy whose
memory is a reward machine's node. A history (label word, state) is realised in one of two
ways, and the policy's node is driven along the word, never reset at its end:

* ``"restore"``: the environment is put in the state directly (toy-text environments:
  ``unwrapped.s``; any other through a ``restore(env, state)`` function), after a seeded reset;
* ``"replay"``: a path producing the word is planned on the MDP (fewest steps, from a start
  state the seeded reset gives), and its actions are played; every state reached is compared
  with the plan, and an environment that strays (a stochastic transition, a replay that does
  not reproduce its states) is a :class:`~rmtk.active.experts.QueryError` naming the step.

Each question draws fresh seeded randomness (the environment's resets, the policy's draws).

:class:`ReplayExpert` needs no restore and no model: it answers at the histories recorded
episodes reach. An :class:`Episode` keeps the reset seed, the actions, and the discretised
state and label after the reset and after every step; :func:`record` runs a
:class:`~rmtk.gym.NodePolicy` one seeded episode at a time, and :func:`replay` resets with the
seed, plays the actions of a prefix and compares every state and label with the record, bit
for bit (a difference is a :class:`~rmtk.active.experts.QueryError` naming the episode and
the step).

These are the experts of :mod:`rmtk.active.experts` at the Gymnasium layer.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from ..active.experts import (
    Draws,
    ExpertCapabilities,
    Observations,
    QueryError,
    check_count,
    check_history,
    compress,
    history_text,
)
from ..errors import RmtkError
from ..mdp.model import LabeledMDP
from ..validators import is_whole, positive_int, whole
from .policies import NodePolicy


class _UserCallFailed(Exception):
    """A call into the user's environment (or restore function) raised: ``what`` was called."""

    def __init__(self, what: str):
        super().__init__(what)
        self.what = what


def _user(what: str, fn: Callable, *args, **kwargs):
    """``fn(*args, **kwargs)``, a call into the user's code; what it raises is chained to a
    :class:`_UserCallFailed` naming the call (rmtk's own errors pass as they are)."""
    try:
        return fn(*args, **kwargs)
    except RmtkError:
        raise
    except Exception as exc:
        raise _UserCallFailed(what) from exc


@contextlib.contextmanager
def _asked(expert, mdp, word, state):
    """Name the question when the user's environment fails while answering it: one
    :class:`QueryError` naming the expert, the call and the history, the user's exception chained."""
    try:
        yield
    except _UserCallFailed as failed:
        cause = failed.__cause__
        at = "a run from a seeded reset" if word is None else f"the history {history_text(mdp, word, state)}"
        raise QueryError(
            f"{type(expert).__name__}: {failed.what} raised {type(cause).__name__}: {cause} while answering at {at}"
        ) from cause


def _toy_text(env, state: int) -> None:
    inner = env.unwrapped
    if not hasattr(inner, "s"):
        raise QueryError(
            f"cannot restore a state of {type(inner).__name__}: it has no 's' (toy-text) attribute; "
            "pass restore=... or mode='replay'"
        )
    inner.s = int(state)


def _node_policy(instance, attribute, value):
    if not isinstance(value, NodePolicy):
        raise RmtkError(
            f"policy must be a rmtk.gym.NodePolicy (a policy following a machine's node), not {type(value).__name__}"
        )


def _mode(instance, attribute, value):
    if value not in ("restore", "replay"):
        raise RmtkError(f"mode must be 'restore' or 'replay', not {value!r}")


@attrs.define
class GymExpert(ExpertCapabilities):
    """See the module docstring. ``mdp``: the environment as a labeled MDP (its states are
    the observations, its labels those of the states); ``policy``: the expert;
    ``max_resets``: seeded resets tried to start where a replayed path starts."""

    env: Any
    mdp: LabeledMDP = attrs.field(validator=attrs.validators.instance_of(LabeledMDP))
    policy: NodePolicy = attrs.field(validator=_node_policy)
    mode: str = attrs.field(default="restore", validator=_mode)
    restore: Callable | None = None
    seed: int = attrs.field(default=0, validator=whole(0))
    max_resets: int = attrs.field(default=50, validator=positive_int)
    compressed: bool = True
    recorded: object = None
    exact: bool = attrs.field(default=False, init=False)
    answers_queries: bool = attrs.field(default=True, init=False)
    _draws: Draws = attrs.field(init=False, repr=False)
    _letters: np.ndarray = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self):
        import gymnasium

        if isinstance(self.env, gymnasium.vector.VectorEnv) or not isinstance(self.env, gymnasium.Env):
            raise RmtkError("GymExpert asks one Gymnasium environment (not a vector one) at a time")
        for what, space, want, unit in (
            ("observation", self.env.observation_space, self.mdp.n_states, "states"),
            ("action", self.env.action_space, self.mdp.n_actions, "actions"),
        ):
            if not isinstance(space, gymnasium.spaces.Discrete) or int(space.n) != want or int(space.start) != 0:
                raise RmtkError(
                    f"the environment's {what} space is {space}, and the mdp {self.mdp.name!r} has {want} {unit}: "
                    f"a GymExpert needs Discrete({want}) {what}s, one per {unit[:-1]} of the mdp (the environment "
                    "and the mdp must describe the same world)"
                )
        self._letters = self.policy.letters(tuple(self.mdp.propositions))
        self._draws = Draws(self.seed)

    # -- what it declares -----------------------------------------------------------------------
    def expert_classes(self, task):
        """The policy classes of the policy on ``task`` (:meth:`~rmtk.gym.NodePolicy.expert_classes`:
        a table's, or an exact agent's, for the task's own machine); else ``None`` (its
        choices are a function: no verdicts)."""
        return self.policy.expert_classes(task)

    # -- what a question costs ----------------------------------------------------------------
    def act_steps(self, word, state, m: int) -> int:
        """Realising the history (its actions are drawn there, no step taken)."""
        if self.mode == "restore":
            return 1
        plan = [
            len(p)
            for p in (self._plan(tuple(word), int(state), int(s)) for s in self.mdp.start_states)
            if p is not None
        ]
        return self.max_resets + max(plan, default=0)

    def extend_steps(self, word, state, k: int, m: int) -> int:
        """Per run a reset (or the history realised) and ``k − 1`` moves."""
        first = 1 if word is None else self.act_steps(word, state, 1)
        return int(m) * (first + int(k) - 1)

    # -- realising a history --------------------------------------------------------------------
    def _node(self, word) -> int:
        return self.policy.node_after(word, tuple(self.mdp.propositions))

    def _plan(self, word, state: int, start: int) -> list[int] | None:
        """Actions of a fewest-steps path from ``start`` producing ``word`` and ending in ``state``."""
        lab, T, A = self.mdp.labels, self.mdp.kernel, self.mdp.n_actions
        if lab[start] != word[0]:
            return None
        first = (start, 1)
        back: dict[tuple[int, int], Any] = {first: None}
        queue = deque([first])
        while queue:
            s, i = queue.popleft()
            if i == len(word) and s == state:
                path, node = [], (s, i)
                while back[node] is not None:
                    node, a = back[node]
                    path.append(a)
                return path[::-1]
            for a in range(A):
                for s2 in T.indices[T.indptr[s * A + a] : T.indptr[s * A + a + 1]].tolist():
                    if self.compressed and lab[s2] == word[i - 1]:
                        nxt = (s2, i)
                    elif i < len(word) and lab[s2] == word[i]:
                        nxt = (s2, i + 1)
                    else:
                        continue
                    if nxt not in back:
                        back[nxt] = ((s, i), a)
                        queue.append(nxt)
        return None

    def _at(self, rng, word, state: int) -> int:
        """Put the environment at the end of the history (see the module docstring); the
        environment steps it took (resets counted, and the steps a replay played)."""
        if self.mode == "restore":
            _user("the environment's reset", self.env.reset, seed=int(rng.integers(2**31)))
            restore = self.restore or _toy_text
            _user("the restore function" if self.restore else "restoring the state", restore, self.env, state)
            return 1
        resets = 0
        for _ in range(self.max_resets):
            start, _ = _user("the environment's reset", self.env.reset, seed=int(rng.integers(2**31)))
            resets += 1
            plan = self._plan(word, state, int(start))
            if plan is not None:
                break
        else:
            raise QueryError(
                f"no reset of the environment in {self.max_resets} seeded tries started where a path "
                f"producing the history reaches state {self.mdp.states[state]!r}"
            )
        expect = int(start)
        for t, a in enumerate(plan):
            obs = self._step(a)[0]
            nxt = self._expected(expect, a)
            if int(obs) not in nxt:
                raise QueryError(
                    f"replaying the history: at step {t + 1} the environment reached state "
                    f"{self.mdp.states[int(obs)]!r} where the mdp allows "
                    f"{', '.join(repr(self.mdp.states[s]) for s in nxt)}"
                )
            if len(nxt) > 1:
                raise QueryError(
                    f"replaying the history: step {t + 1} is stochastic in the mdp; a replay cannot "
                    "reproduce the planned states (use mode='restore')"
                )
            expect = int(obs)
        if expect != state:
            raise QueryError(
                f"replaying the history ended in state {self.mdp.states[expect]!r}, not {self.mdp.states[state]!r}"
            )
        return resets + len(plan)

    def _expected(self, s: int, a: int) -> list[int]:
        T, A = self.mdp.kernel, self.mdp.n_actions
        return T.indices[T.indptr[s * A + a] : T.indptr[s * A + a + 1]].tolist()

    def _step(self, action: int):
        obs, _, terminated, truncated, _ = _user("the environment's step", self.env.step, int(action))
        if not (isinstance(obs, (int, np.integer)) or np.ndim(obs) == 0) or not 0 <= int(obs) < self.mdp.n_states:
            raise QueryError(
                f"the environment returned observation {obs!r}, not a state index of mdp {self.mdp.name!r}"
            )
        return obs, terminated or truncated

    def _choose(self, rng, state: int, node: int) -> int:
        return int(np.asarray(self.policy.choose(np.array([state]), np.array([node]), rng))[0])

    # -- the Expert protocol --------------------------------------------------------------------
    def act(self, word, state, m: int = 100) -> Observations:
        m = check_count(self, m, "m (the actions drawn)")
        word = check_history(self.mdp, word, state, self.compressed)
        rng = self._draws.next()
        node = self._node(word)
        with _asked(self, self.mdp, word, state):
            steps = self._at(rng, word, int(state))
        counts = np.bincount(
            [self._choose(rng, int(state), node) for _ in range(int(m))], minlength=self.mdp.n_actions
        ).astype(float)
        return Observations((word,), np.array([int(state)]), counts[None, :], False, steps=steps)

    def extend(self, word, state, k: int, m: int, explore: float = 0.0) -> Observations:
        k, m = check_count(self, k, "k (the steps of a run)"), check_count(self, m, "m (the runs)")
        if word is not None:
            word = check_history(self.mdp, word, state, self.compressed)
        rng = self._draws.next()
        lab, A = self.mdp.labels, self.mdp.n_actions
        found: dict = {}
        steps = 0
        with _asked(self, self.mdp, word, state):
            for _ in range(int(m)):
                w: tuple[int, ...]
                if word is None:
                    obs, _ = _user("the environment's reset", self.env.reset, seed=int(rng.integers(2**31)))
                    steps += 1
                    s = int(obs)
                    w = (int(lab[s]),)
                else:
                    steps += self._at(rng, word, int(state))
                    s, w = int(state), tuple(word)
                node = self._node(w)
                for t in range(int(k)):
                    a = self._choose(rng, s, node)
                    found.setdefault((w, s), np.zeros(A))[a] += 1
                    if t + 1 == k:
                        break
                    move = int(rng.integers(A)) if explore and rng.random() < explore else a
                    obs, done = self._step(move)
                    steps += 1
                    s = int(obs)
                    w = compress(w + (int(lab[s]),)) if self.compressed else w + (int(lab[s]),)
                    node = int(self.policy.machine.delta_u[node, self._letters[lab[s]]])
                    if done:
                        break
        keys = list(found)
        values = np.array([found[key] for key in keys]).reshape(len(keys), A)
        return Observations(
            tuple(key[0] for key in keys), np.array([key[1] for key in keys], np.int64), values, False, steps=steps
        )


# -- ReplayExpert: histories realised by replaying recorded episodes --------------------
@attrs.frozen
class Episode:
    """One recorded episode: ``seed`` of its reset, ``actions`` ``(T,)``, and the discretised
    ``states`` and proposition ``labels`` ``(T + 1,)`` after the reset and after each step."""

    seed: int
    actions: np.ndarray
    states: np.ndarray
    labels: np.ndarray

    def __attrs_post_init__(self):
        if not len(self.states) == len(self.labels) == len(self.actions) + 1:
            raise QueryError(
                f"an episode of {len(self.actions)} actions has {len(self.actions) + 1} states and labels, "
                f"not {len(self.states)} and {len(self.labels)}"
            )


def _vector(env) -> bool:
    import gymnasium

    if isinstance(env, gymnasium.vector.VectorEnv):
        if env.num_envs != 1:
            raise QueryError(f"a replay steps one environment: this vector environment has {env.num_envs} copies")
        return True
    return False


def _first(obs, vector: bool):
    return np.asarray(obs)[0] if vector else obs


def _step(env, action: int, vector: bool):
    obs, _, terminated, truncated, _ = env.step(np.array([action]) if vector else int(action))
    done = bool(np.asarray(terminated).any() or np.asarray(truncated).any())
    return _first(obs, vector), done


def record(
    env, policy: NodePolicy, cell: Callable, label: Callable, propositions, n: int, horizon: int, seed: int = 0
) -> list[Episode]:
    """``n`` episodes of at most ``horizon`` steps, each reset with its own seed (drawn from
    ``seed``); ``cell(obs)``: the discretised state, ``label(obs)``: the proposition index."""
    for what, value, least in (("n (the episodes)", n, 1), ("horizon (the steps)", horizon, 1), ("seed", seed, 0)):
        if not is_whole(value) or value < least:
            raise RmtkError(f"record: {what} must be a whole number of at least {least}, got {value!r}")
    vector = _vector(env)
    letters = policy.letters(tuple(propositions))
    labeled = _label_index(label, len(letters), "record")
    root = np.random.SeedSequence(seed)
    out = []
    for child in root.spawn(int(n)):
        rng = np.random.default_rng(child)
        ep_seed = int(rng.integers(2**31))
        obs = _first(env.reset(seed=ep_seed)[0], vector)
        states, labels, actions = [cell(obs)], [labeled(obs)], []
        node = int(policy.machine.delta_u[policy.machine.initial, letters[labels[0]]])
        for _ in range(int(horizon)):
            a = int(np.asarray(policy.choose(np.array([states[-1]]), np.array([node]), rng))[0])
            obs, done = _step(env, a, vector)
            actions.append(a)
            states.append(cell(obs))
            labels.append(labeled(obs))
            node = int(policy.machine.delta_u[node, letters[labels[-1]]])
            if done:
                break
        out.append(Episode(ep_seed, np.array(actions, np.int64), np.array(states, np.int64), np.array(labels)))
    return out


def _label_index(label: Callable, k: int | None, who: str) -> Callable:
    """``label`` checked at each call: a proposition index (``0..k-1`` when ``k`` is known), or
    an :class:`~rmtk.errors.RmtkError` naming ``who`` and what it returned."""

    def labeled(obs) -> int:
        value = label(obs)
        if is_whole(value) and (k is None or 0 <= value < k):
            return int(value)
        what = f"an index 0..{k - 1}" if k is not None else "an index"
        raise RmtkError(
            f"{who}: label(obs) must return the proposition's index ({what} into the propositions), got "
            f"{value!r}" + (" (a name: return its index in the propositions)" if isinstance(value, str) else "")
        )

    return labeled


def replay(env, episode: Episode, upto: int, cell: Callable, label: Callable, where: str = "the episode"):
    """The observation after replaying the first ``upto`` actions of ``episode``; every state
    and label reached is compared with the record (a :class:`QueryError` names the first
    difference)."""
    vector = _vector(env)
    labeled = _label_index(label, None, f"replaying {where}")
    obs = _first(env.reset(seed=episode.seed)[0], vector)
    for t in range(int(upto) + 1):
        if t:
            obs, _ = _step(env, int(episode.actions[t - 1]), vector)
        got = (cell(obs), labeled(obs))
        want = (int(episode.states[t]), int(episode.labels[t]))
        if got != want:
            raise QueryError(
                f"replaying {where} (reset seed {episode.seed}): "
                + (f"after step {t}" if t else "after the reset")
                + f" the environment reached state {got[0]} with label {got[1]} where the recording has state "
                f"{want[0]} with label {want[1]}: this environment does not reproduce its episodes from a seed "
                "and actions"
            )
    return obs


@attrs.define
class ReplayExpert(ExpertCapabilities):
    """An expert asked at the histories of recorded ``episodes`` (see the module docstring).
    ``cell`` and ``label`` read an observation (discretised state, proposition index);
    ``mdp``: the environment as a labeled MDP when there is one (the active loop needs it)."""

    env: Any
    policy: NodePolicy = attrs.field(validator=_node_policy)
    episodes: list
    cell: Callable
    label: Callable
    propositions: tuple = attrs.field(converter=tuple)
    mdp: Any = None
    seed: int = attrs.field(default=0, validator=whole(0))
    recorded: object = None
    exact: bool = attrs.field(default=False, init=False)
    answers_queries: bool = attrs.field(default=True, init=False)
    compressed: bool = attrs.field(default=True, init=False)
    _where: dict = attrs.field(init=False, factory=dict, repr=False)
    _draws: Draws = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self):
        if not self.propositions or not all(isinstance(p, str) for p in self.propositions):
            raise RmtkError(
                "propositions must name the labels, one string per label index, got "
                f"{self.propositions!r} (ReplayExpert)"
            )
        if self.mdp is not None and tuple(self.mdp.propositions) != self.propositions:
            raise RmtkError(
                f"the replay expert's propositions ({', '.join(map(repr, self.propositions))}) are not its mdp's "
                f"({', '.join(map(repr, self.mdp.propositions))})"
            )
        self.policy.letters(self.propositions)  # the policy's machine reads every proposition
        self._draws = Draws(self.seed)
        K = len(self.propositions)
        for e, ep in enumerate(self.episodes):
            if not isinstance(ep, Episode):
                raise RmtkError(f"episode {e} is a {type(ep).__name__}, not a rmtk.gym.experts.Episode (see record)")
            labels = np.asarray(ep.labels)
            if len(labels) and (labels.min() < 0 or labels.max() >= K):
                raise RmtkError(
                    f"episode {e} has label index {int(labels.max() if labels.max() >= K else labels.min())}, and "
                    f"there are {K} propositions ({', '.join(map(repr, self.propositions))}): give one name per "
                    "label index the labeler returns"
                )
        for e, ep in enumerate(self.episodes):
            word: tuple[int, ...] = ()
            for t, (s, k) in enumerate(zip(ep.states.tolist(), ep.labels.tolist())):
                word = compress(word + (int(k),))
                self._where.setdefault((word, int(s)), (e, t))

    def act_steps(self, word, state, m: int) -> int:
        """The reset and the replayed prefix (the actions are drawn at its end, no step taken)."""
        where = self._where.get((tuple(int(k) for k in word), int(state)))
        return 1 + (where[1] if where is not None else 0)

    def extend_steps(self, word, state, k: int, m: int) -> int:
        """Per run a reset (and the replayed prefix) and ``k − 1`` moves."""
        if word is None:
            return int(k) * int(m)
        return int(m) * (int(k) - 1 + self.act_steps(word, state, 0))

    @property
    def histories(self) -> list:
        """The (word, state) histories the episodes reach, in the order first reached."""
        return list(self._where)

    def _node(self, word) -> int:
        m, letters = self.policy.machine, self.policy.letters(tuple(self.propositions))
        u = m.initial
        for k in word:
            u = int(m.delta_u[u, letters[k]])
        return u

    def _at(self, word, state: int):
        key = (tuple(int(k) for k in word), int(state))
        if key not in self._where:
            names = " ".join(self.propositions[k] for k in key[0])
            raise QueryError(
                f"no recorded episode reaches state {state} after the labels {names!r}: a replay expert "
                f"realises only the histories of its {len(self.episodes)} episodes"
            )
        e, t = self._where[key]
        return replay(self.env, self.episodes[e], t, self.cell, self.label, f"episode {e}"), t

    def act(self, word, state, m: int = 100) -> Observations:
        m = check_count(self, m, "m (the actions drawn)")
        _, t = self._at(word, state)
        rng = self._draws.next()
        node = self._node(word)
        drawn = np.asarray(self.policy.choose(np.full(int(m), int(state)), np.full(int(m), node), rng))
        counts = np.bincount(drawn, minlength=self._actions()).astype(float)
        return Observations((tuple(word),), np.array([int(state)]), counts[None, :], False, steps=1 + t)

    def extend(self, word, state, k: int, m: int, explore: float = 0.0) -> Observations:
        """``m`` continuations of ``k`` steps from the history (``None``: from a fresh seeded
        reset), the history replayed and checked each time; per visited (word, state) the
        actions drawn."""
        k, m = check_count(self, k, "k (the steps of a run)"), check_count(self, m, "m (the runs)")
        rng = self._draws.next()
        vector = _vector(self.env)
        m_, letters = self.policy.machine, self.policy.letters(tuple(self.propositions))
        found: dict = {}
        steps = 0
        for _ in range(int(m)):
            if word is None:
                obs = _first(self.env.reset(seed=int(rng.integers(2**31)))[0], vector)
                s, w = self.cell(obs), (self.label(obs),)
                steps += 1
            else:
                obs, t = self._at(word, state)
                s, w = int(state), tuple(word)
                steps += 1 + t
            node = self._node(w)
            for i in range(int(k)):
                a = int(np.asarray(self.policy.choose(np.array([s]), np.array([node]), rng))[0])
                found.setdefault((w, s), {}).setdefault(a, 0)
                found[(w, s)][a] += 1
                if i + 1 == k:
                    break
                move = int(rng.integers(self._actions())) if explore and rng.random() < explore else a
                obs, done = _step(self.env, move, vector)
                steps += 1
                s, lab = self.cell(obs), self.label(obs)
                w = compress(w + (lab,))
                node = int(m_.delta_u[node, letters[lab]])
                if done:
                    break
        A = max([a for c in found.values() for a in c] + [0]) + 1
        A = max(A, self._actions())
        keys = list(found)
        values = np.zeros((len(keys), A))
        for r, key in enumerate(keys):
            for a, c in found[key].items():
                values[r, a] = c
        return Observations(tuple(x[0] for x in keys), np.array([x[1] for x in keys], np.int64), values, False, steps)

    def _actions(self) -> int:
        space = getattr(self.env, "single_action_space", None) or self.env.action_space
        return int(space.n)
