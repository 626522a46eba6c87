"""DQN (Stable-Baselines3) on the product of a grid world (:class:`World`: the Office World by
default, or the Craft World), with or without counterfactual experiences
(:func:`rmtk.rl.crm`), and the greedy policy's success measured during training: what
``rmtk reproduce deep-rl`` and ``benchmarks/deep_rl.py`` share. The Office World is
described below; the Craft World's episodes start in any free cell.

An arm trains one DQN for at most ``steps`` environment steps (one ``learn`` call, so that the
exploration schedule runs over steps, not over chunks). Episodes start in a cell drawn
uniformly among the :data:`STARTS` (every cell but the decorations, as the demonstrations of
models/office.rm start anywhere). Every ``every`` steps the greedy policy (its Q-network on
every observation at once, ties to the first action as in ``model.predict``) plays one
episode from each start cell: the world and the policy are deterministic, so these
:data:`HORIZON`-step episodes, rolled out together on the labeled MDP's tables, are the
policy's whole behaviour. Its *success rate* is the share of start cells whose episode earns
the *true* machine's reward. The agent's observation is the one-hot product state (DQN's
``MlpPolicy`` one-hot encodes a ``Discrete`` observation); without a machine it is the
one-hot cell alone and the reward the true machine's (the world pays it; the agent does not
see the node). torch and Stable-Baselines3 are imported by the functions, never by the module.
"""

from __future__ import annotations

from collections import deque

import attrs
import numpy as np

from ..errors import RmtkError

#: Steps of an episode (training and evaluation).
HORIZON = 100


@attrs.frozen
class DQNConfig:
    """The DQN settings every arm shares (same network, same schedule; only the replay buffer
    differs between with and without CRM). ``hidden``: the hidden layers (``()``: a linear
    Q-network, one weight per one-hot input and action); ``explore``: steps over which ε falls
    linearly from 1 to ``final_eps`` (in steps, whatever the budget); ``final_learning_rate``:
    the learning rate falls linearly to it over the budget (``None``: constant); ``n_steps``:
    n-step returns (with CRM along each node's counterfactual run, :func:`rmtk.rl.crm`)."""

    hidden: tuple[int, ...] = (64,)
    learning_rate: float = 1e-3
    final_learning_rate: float | None = None
    buffer_size: int = 50_000
    learning_starts: int = 500
    batch_size: int = 256
    gamma: float = 0.9
    train_freq: int = 4
    gradient_steps: int = 1
    target_update_interval: int = 25
    explore: int = 3_000
    final_eps: float = 0.1
    n_steps: int = 1

    def _schedule(self):
        """The learning rate falling linearly from ``learning_rate`` to ``final_learning_rate``
        over the run (Stable-Baselines3 passes the fraction of the run remaining)."""
        start, end = self.learning_rate, self.final_learning_rate
        return lambda remaining: end + (start - end) * remaining

    def kwargs(self, steps: int) -> dict:
        """DQN's keyword arguments for a run of ``steps`` steps."""
        return {
            "policy_kwargs": {"net_arch": list(self.hidden)},
            "learning_rate": self.learning_rate if self.final_learning_rate is None else self._schedule(),
            "buffer_size": self.buffer_size,
            "learning_starts": self.learning_starts,
            "batch_size": self.batch_size,
            "gamma": self.gamma,
            "train_freq": self.train_freq,
            "gradient_steps": self.gradient_steps,
            "target_update_interval": self.target_update_interval,
            "exploration_fraction": min(1.0, self.explore / steps),
            "exploration_final_eps": self.final_eps,
        }


def reward_like(learned, truth):
    """``learned`` paying what ``truth`` pays: each paying transition of the truth, reached by its
    shortest word (letters in alphabet order, ties to the first), pays the same in ``learned``
    after the same word. The active loop learns structure only (rewards 0); this is the
    reward a user puts on the learned machine (docs/guide/12-deep-rl.md)."""
    learned = learned.with_alphabet_order(truth.alphabet)
    word: dict[int, tuple[int, ...]] = {truth.initial: ()}
    queue = deque([truth.initial])
    while queue:
        u = queue.popleft()
        for k in range(len(truth.alphabet)):
            v = int(truth.delta_u[u, k])
            if v not in word:
                word[v] = (*word[u], k)
                queue.append(v)
    reward = np.zeros(learned.delta_r.shape)
    for u, k in zip(*np.nonzero(truth.delta_r)):
        node = learned.initial
        for letter in word[int(u)]:
            node = int(learned.delta_u[node, letter])
        reward[node, k] = truth.delta_r[u, k]
    return learned.with_rewards(reward)


def _starts() -> tuple[tuple[int, int], ...]:
    from ..envs.office import MAP

    return tuple((r, c) for r, row in enumerate(MAP) for c, mark in enumerate(row.split()) if mark != "n")


#: The start cells of training and evaluation: every cell of the Office World but the decorations.
STARTS = _starts()


@attrs.frozen
class World:
    """A deterministic grid world to train in: its labeled MDP (whose initial distribution draws
    the start of every training episode and whose start states the success is judged from) and
    the steps of an episode."""

    name: str
    mdp: object = attrs.field(eq=False, repr=False)
    horizon: int

    @classmethod
    def office(cls) -> World:
        """The Office World, episodes of :data:`HORIZON` steps from every :data:`STARTS` cell."""
        from ..envs.office import officeworld

        return cls("office", officeworld(start=STARTS), HORIZON)

    @classmethod
    def craft(cls, horizon: int = 200, *, everywhere: bool = True) -> World:
        """The Craft World of models/craft.rm (the literature's map_0), episodes of ``horizon``
        steps from every free cell (``everywhere=False``: from the map's ``A`` cell)."""
        from .. import dsl

        mdp = dsl.load_model("craft").tasks["t1"].mdp
        if everywhere:
            mdp = attrs.evolve(mdp, initial=np.full(mdp.n_states, 1.0 / mdp.n_states))
        return cls("craft", mdp, int(horizon))


def product(machine, labeler, *, node: bool = True, world: World | None = None):
    """The product of ``world`` (default: the Office World) with ``machine`` (flat observation);
    ``node=False``: the cell alone is observed (the machine only pays)."""
    from ..gym import MdpEnv, RewardMachineEnv
    from ..rl import hide_node

    world = world or World.office()
    env = RewardMachineEnv(MdpEnv(world.mdp, max_steps=world.horizon), machine, labeler, observation="flat")
    return env if node else hide_node(env)


def evaluation(machine, truth, *, node: bool = True, world: World | None = None):
    """The greedy episodes from every start state (:class:`rmtk.rl.GreedyRollouts`)."""
    from ..rl import GreedyRollouts

    world = world or World.office()
    return GreedyRollouts.of(world.mdp, machine, truth, world.horizon, node=node)


@attrs.frozen
class Curve:
    """One training run: the steps of each evaluation, its success rate, the seconds."""

    steps: tuple[int, ...]
    success: tuple[float, ...]
    seconds: float

    def reached(self, level: float = 0.9) -> int | None:
        """The steps at the first evaluation with a success rate ≥ ``level`` (``None``: none)."""
        return next((s for s, ok in zip(self.steps, self.success) if ok >= level), None)


def train_dqn(
    machine,
    truth,
    labeler,
    *,
    use_crm: bool,
    node: bool = True,
    seed: int,
    steps: int,
    every: int,
    config: DQNConfig,
    stop: float | None = None,
    log=None,
    world: World | None = None,
):
    """Train a DQN on the product of ``world`` (default: the Office World) with ``machine``
    (``use_crm``: counterfactual experiences of its nodes) for ``steps`` steps, evaluating every
    ``every`` (``log(steps, success)`` is called with each evaluation); ``stop``: end at the
    first success rate at least this. Returns the :class:`Curve` and the model."""
    import time

    try:
        import torch
        from stable_baselines3 import DQN
        from stable_baselines3.common.callbacks import BaseCallback
    except ImportError:
        raise RmtkError("deep RL needs Stable-Baselines3 and torch: pip install '.[rl]' in rmtk's checkout") from None
    from ..rl import crm, no_log_folder, q_table

    if use_crm and not node:
        raise RmtkError("CRM needs the node in the observation")
    torch.set_num_threads(1)
    env, check = product(machine, labeler, node=node, world=world), evaluation(machine, truth, node=node, world=world)
    at: list[int] = []
    ok: list[float] = []

    class Evaluate(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps % every:
                return True
            at.append(self.num_timesteps)
            ok.append(check.rate(q_table(self.model)))
            if log is not None:
                log(at[-1], ok[-1])
            return stop is None or ok[-1] < stop

    replay = crm(env, n_steps=config.n_steps, gamma=config.gamma) if use_crm else {"n_steps": config.n_steps}
    model = no_log_folder(DQN("MlpPolicy", env, seed=seed, device="cpu", **config.kwargs(steps), **replay))
    t0 = time.perf_counter()
    model.learn(steps, callback=Evaluate())
    return Curve(tuple(at), tuple(ok), time.perf_counter() - t0), model


__all__ = ["HORIZON", "STARTS", "Curve", "DQNConfig", "World", "evaluation", "product", "reward_like", "train_dqn"]
