"""An agent as an expert that active learning asks (:class:`~rmtk.active.loop.ActiveLearner`):
:class:`AgentExpert`.

A history (a compressed label word and the state it ends in) is answered at the agent's
product observation there: the environment observation of the state (``observe``; by default
the state index, the observation of a ``Discrete`` environment) with the node the true machine
reaches on the word (the machine only drives the agent; the learner never sees it).

* An agent that gives its distribution (discrete actions, :class:`~rmtk.rl.agents.AgentCapabilities`
  ``exact``: a DQN's ε-greedy Q-values, a PPO's softmax) answers exactly: one forward pass per
  question, no draw, no environment step. On a labeled MDP it also offers the exact product
  oracle (its product policy at every (state, node), one batched forward pass of ``S · n``
  evaluations, which a run's ``evaluations`` count), so the default check of the active loop
  is exact.
* An agent with continuous actions is sampled: ``m`` actions drawn at the history in one
  forward pass, each binned by ``actions`` (a :class:`~rmtk.gym.Bins` over the action box, the
  actions of the labeled MDP being its bins), and the answer is counts, judged with their
  resolution as any sampled expert's.

Extensions (:meth:`AgentExpert.extend`) are runs of the agent in the labeled MDP, ``m`` at a
time (one forward pass per step for all of them), and show the actions drawn.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
from gymnasium import spaces

from ..active.experts import Draws, ExpertCapabilities, Observations, QueryError, check_history, compress
from ..errors import ModelError, RmtkError
from ..gym.discretize import Bins
from ..gym.mdp_env import _Sampler
from ..gym.policies import same_machine
from ..machine.model import RewardMachine
from ..mdp.model import LabeledMDP
from ..mdp.space import Space
from ..task import Task
from ..validators import whole
from .agents import AgentCapabilities, check_agent
from .encoding import ProductEncoding
from .policy import check_reads, state_index
from .sb3 import as_agent


def _mdp(instance, attribute, value) -> None:
    if isinstance(value, (LabeledMDP, Space)):
        return
    import gymnasium

    if isinstance(value, (gymnasium.Env, gymnasium.vector.VectorEnv)):
        name = getattr(getattr(value, "spec", None), "id", None) or type(value).__name__
        raise RmtkError(
            f"AgentExpert: mdp is a Gymnasium environment ({name}); it takes the environment's labeled MDP: "
            "rmtk.gym.tabular_mdp(env, labeler) for a tabular one (its env.unwrapped.P), or "
            "rmtk.gym.estimate_mdp(recording) from episodes recorded with rmtk.gym.collect; "
            "ActiveLearner().fit(rmtk.Task(mdp, machine), expert) then judges against the machine "
            "(docs/guide/12-deep-rl.md)"
        )
    raise RmtkError(f"AgentExpert: mdp must be a LabeledMDP or a Space, not {type(value).__name__}")


@attrs.define
class AgentExpert(ExpertCapabilities):
    """See the module docstring.

    Args:
        agent: an :class:`~rmtk.rl.agents.Agent` or a Stable-Baselines3 model, trained on the
            product of the environment with ``machine``.
        mdp: the environment as a labeled MDP (or a :class:`~rmtk.mdp.space.Space`: questions at
            histories only, no extensions).
        machine: the machine driving the agent's node; it reads every proposition of ``mdp``.
        observe: state indices → a batch of environment observations (default: the indices).
        actions: the bins of a continuous action space (``mdp``'s actions are its bins).
        seed: the seed of every draw (each question draws fresh numbers from it).
    """

    agent: Any
    mdp: LabeledMDP | Space = attrs.field(validator=_mdp)
    machine: RewardMachine = attrs.field(validator=attrs.validators.instance_of(RewardMachine))
    observe: Callable | None = None
    actions: Bins | None = None
    seed: int = attrs.field(default=0, validator=whole(0))
    compressed: bool = True
    recorded: object = None
    exact: bool = attrs.field(default=False, init=False)
    equivalence: bool = attrs.field(default=False, init=False)
    _caps: AgentCapabilities = attrs.field(init=False, repr=False)
    _encoding: ProductEncoding = attrs.field(init=False, repr=False)
    _letters: np.ndarray = attrs.field(init=False, repr=False)
    _draws: Draws = attrs.field(init=False, repr=False)
    _table: np.ndarray | None = attrs.field(default=None, init=False, repr=False)
    _beside: int = attrs.field(default=0, init=False, repr=False)

    def __attrs_post_init__(self):
        self.agent = as_agent(self.agent)
        self._caps = check_agent(self.agent)
        props, m = tuple(self.mdp.propositions), self.machine
        check_reads(m, props, "the environment's labels include")
        if self.compressed and not m.is_non_stuttering():
            raise QueryError(
                f"the agent's memory (machine {m.name!r}) stutters: a compressed history does not determine its "
                "node; ask with uncompressed words (compressed=False)"
            )
        self._letters = np.array([m.alphabet.index(p) for p in props], dtype=np.int64)
        inner = spaces.Discrete(self.mdp.n_states) if self.observe is None else None
        self._encoding = ProductEncoding.of(self.agent.observation_space, m.n_nodes, inner)
        space, A = self.agent.action_space, self.mdp.n_actions
        if isinstance(space, spaces.Discrete) and int(space.n) == A and self.actions is None:
            self.exact = bool(self._caps.exact)
        elif isinstance(space, spaces.Box) and isinstance(self.actions, Bins) and self.actions.n_states == A:
            self.exact = False
        else:
            binned = f" binned by {self.actions.n_states} bins" if isinstance(self.actions, Bins) else ""
            raise ModelError(
                f"the agent's action space is {space}{binned}, and the environment has {A} actions: an AgentExpert "
                f"reads Discrete({A}) actions (their distribution), or a Box with actions=Bins(...) of {A} bins"
            )
        self.equivalence = self.exact and isinstance(self.mdp, LabeledMDP)
        self._draws = Draws(self.seed)

    # -- the agent at histories -----------------------------------------------------------------
    def _node(self, word) -> int:
        u = self.machine.initial
        for k in word:
            u = int(self.machine.delta_u[u, self._letters[k]])
        return u

    def _obs(self, states, nodes):
        return self._encoding.encode((self.observe or state_index)(np.asarray(states)), nodes)

    def _index(self, actions) -> np.ndarray:
        """Action indices of the agent's actions (its bins for a continuous action space)."""
        if self.actions is not None:
            return np.asarray(self.actions.batch(np.asarray(actions, dtype=float))[0], dtype=np.int64)
        return np.asarray(actions, dtype=np.int64).reshape(-1) - int(self.agent.action_space.start)

    def _check(self, word, state) -> tuple[int, ...]:
        if isinstance(self.mdp, LabeledMDP):
            return check_history(self.mdp, word, state, self.compressed)
        word, K = tuple(int(k) for k in word), self.mdp.n_propositions
        if not word or not all(0 <= k < K for k in word) or not 0 <= int(state) < self.mdp.n_states:
            raise QueryError(f"history {word} at state {state}: not a word of 0..{K - 1} and a state of the space")
        return word

    def act_steps(self, word, state, m: int) -> int:
        """No environment step: the agent is evaluated at the history's observation."""
        return 0

    def act(self, word, state, m: int = 100) -> Observations:
        word = self._check(word, state)
        node = self._node(word)
        if self.exact:
            p = self._caps.probabilities(self._obs([int(state)], [node]))[0]
            return Observations((word,), np.array([int(state)]), p[None, :], True, 0, 1)
        rng = self._draws.next()
        drawn = self._index(self.agent.sample(self._obs(np.full(int(m), int(state)), np.full(int(m), node)), rng))
        counts = np.bincount(drawn, minlength=self.mdp.n_actions).astype(float)
        return Observations((word,), np.array([int(state)]), counts[None, :], False, steps=0)

    def extend(self, word, state, k: int, m: int, explore: float = 0.0) -> Observations:
        """``m`` runs of ``k`` steps of the agent in the labeled MDP (see the module docstring)."""
        if not isinstance(self.mdp, LabeledMDP):
            raise QueryError("an AgentExpert on a Space answers at histories only: give it a LabeledMDP to run it")
        rng = self._draws.next()
        mdp, A, m = self.mdp, self.mdp.n_actions, int(m)
        sampler, lab, delta = _Sampler(mdp), mdp.labels, self.machine.delta_u
        words: list[tuple[int, ...]]
        if word is None:
            s = sampler.reset(rng, m)
            words = [(int(lab[x]),) for x in s.tolist()]
            u = delta[self.machine.initial, self._letters[lab[s]]]
        else:
            word = self._check(word, state)
            s, words = np.full(m, int(state)), [word] * m
            u = np.full(m, self._node(word))
        found: dict = {}
        for t in range(int(k)):
            a = self._index(self.agent.sample(self._obs(s, u), rng))
            for w, x, y in zip(words, s.tolist(), a.tolist()):
                found.setdefault((w, x), np.zeros(A))[y] += 1
            if t + 1 == k:
                break
            move = np.where(rng.random(m) < explore, rng.integers(A, size=m), a) if explore else a
            s = sampler.step(s, move, rng)
            u = delta[u, self._letters[lab[s]]]
            words = [compress(w + (int(lab[x]),)) if self.compressed else w + (int(lab[x]),) for w, x in zip(words, s)]
        keys = list(found)
        return Observations(
            tuple(key[0] for key in keys),
            np.array([key[1] for key in keys], np.int64),
            np.array([found[key] for key in keys]).reshape(len(keys), A),
            False,
            steps=m * int(k),
            ends=tuple(zip(words, s.tolist())),
        )

    # -- the exact product ----------------------------------------------------------------------
    def table(self) -> np.ndarray:
        """``(S, n, A)``: the agent's distribution at every (state, node), one batched forward pass
        (exact agents on a labeled MDP)."""
        if not self.equivalence:
            raise RmtkError("only an exact agent on a labeled MDP has a product policy table")
        if self._table is None:
            S, n = self.mdp.n_states, self.machine.n_nodes
            states, nodes = np.repeat(np.arange(S), n), np.tile(np.arange(n), S)
            self._table = self._caps.probabilities(self._obs(states, nodes)).reshape(S, n, -1)
            self._beside += S * n
        return self._table

    def evaluations_beside(self) -> int:
        """The product table's ``S · n`` evaluations (one batched forward pass), once made."""
        return self._beside

    def product_oracle(self, limit: int = 1):
        """The agent's product policy as an exact equivalence oracle (see
        :meth:`~rmtk.active.experts.TaskExpert.product_oracle`); ``None`` when sampled."""
        if not self.equivalence:
            return None
        from ..machine.equivalence import policy_class_table
        from ..sat.lazy import ProductOracle

        assert isinstance(self.mdp, LabeledMDP)
        return ProductOracle(
            self.mdp,
            self.machine.delta_u[:, self._letters],
            policy_class_table(self.table()),
            compress=self.compressed,
            true_initial=self.machine.initial,
            limit=limit,
        )

    def expert_classes(self, task: Task) -> np.ndarray | None:
        """The policy classes of the agent's product policy on ``task`` when the task's machine
        is the one driving the agent (the verdicts' truth); else ``None``."""
        if not (self.equivalence and same_machine(self.machine, task.machine)):
            return None
        from ..machine.equivalence import policy_class_table

        return policy_class_table(self.table())


__all__ = ["AgentExpert"]
