"""What ``rmtk reproduce online`` and ``benchmarks/online.py`` share: the tasks (a Gymnasium
environment paying a non-Markovian reward, its labeler, the machine that pays, the labeled MDP
the greedy policy is measured on, the DQN settings of the task) and the four agents trained on
them, each measured the same way (docs/benchmarks/online.md):

* ``online``: :class:`rmtk.rl.online.OnlineLearner` with its default exploration (subgoals);
* ``online-eps``: the same with the algorithm's own ε-greedy exploration
  (:class:`~rmtk.rl.online.AgentExploration`);
* ``true``: DQN with counterfactual experiences of the true machine (:func:`rmtk.rl.crm`);
* ``none``: DQN on the environment as it pays, seeing the observation alone (no machine).

Every ``every`` steps the greedy policy (its Q-network at every product observation, ties to
the first action as in ``model.predict``) plays one episode from each start state of the task's
labeled MDP, its node driven by the machine the agent uses (the current hypothesis for the
online agents), and its *success rate* is the share that earns the true machine's reward
(:class:`rmtk.rl.GreedyRollouts`): exact, the world and the policy being deterministic. torch and
Stable-Baselines3 are imported by the functions, never by the module.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import attrs
import numpy as np

from ..errors import RmtkError
from ._dqn import DQNConfig

#: The tasks: CliffWalking's patrol, the Office World's coffee and patrol, the Craft World's t1 and t2;
#: with noisy rewards, coffee with each reward replaced with probability 0.05 and the Mining task
#: (its paid rewards ± 0.1, uniform).
TASKS = ("cliff", "coffee", "patrol", "craft-t1", "craft-t2", "coffee-noisy", "mining")
#: The agents.
ARMS = ("online", "online-eps", "true", "none")
#: The Stable-Baselines3 algorithms an agent can be (DQN: off-policy, CRM into its replay buffer for
#: ``true``, subgoal exploration for ``online``; PPO: on-policy, its own exploration, no CRM).
ALGORITHMS = ("DQN", "PPO")
ARM_NAMES = {
    "online": "online, subgoals",
    "online-eps": "online, ε-greedy",
    "true": "true machine, CRM",
    "none": "no machine",
}


@attrs.frozen
class Task:
    """A task (module docstring): ``base()`` makes the environment without the task's reward
    (its observations are the MDP's states), ``mdp`` the labeled MDP the success is measured on,
    ``truth`` the machine that pays, ``labels`` the labeler, ``horizon`` the steps of an episode."""

    name: str
    base: Callable = attrs.field(eq=False, repr=False)
    mdp: object = attrs.field(eq=False, repr=False)
    truth: object = attrs.field(eq=False, repr=False)
    labels: object = attrs.field(eq=False, repr=False)
    horizon: int
    settings: DQNConfig
    max_nodes: int = 6
    noise: tuple = ()  # ("replace", ε) or ("uniform", half-width): the paying environment's noise

    def paying(self, seed: int = 0):
        """The environment paying the task (the machine hidden), with its noise: what a user has."""
        from ..rl.online.tasks import MachinePays, ReplacedNoise, UniformNoise

        env = MachinePays(self.base(), self.truth, self.labels)
        if self.noise and self.noise[0] == "replace":
            return ReplacedNoise(env, self.truth.delta_r, self.noise[1], seed)
        if self.noise and self.noise[0] == "uniform":
            return UniformNoise(env, self.noise[1], seed)
        return env

    def inference(self):
        """The online agent's inference and trace keeping for the task's noise (``None``: the defaults)."""
        from ..rl.online import KeepCounterexamples, ReplacedRewards, TolerantRewards

        if self.noise and self.noise[0] == "replace":
            return {"inference": ReplacedRewards(self.noise[1]), "keeping": KeepCounterexamples(sampled=300)}
        if self.noise and self.noise[0] == "uniform":
            return {"inference": TolerantRewards(self.noise[1])}
        return {}


def task(name: str, *, horizon: int | None = None) -> Task:
    """The task ``name`` of :data:`TASKS`."""
    from .. import dsl
    from ..gym import MdpEnv, StateLabels

    if name == "cliff":
        import gymnasium

        from ..gym import tabular_mdp
        from ..rl.online.tasks import cliff_labels, cliff_machine

        h = horizon or 100
        labels = cliff_labels()
        mdp = tabular_mdp(gymnasium.make("CliffWalking-v1"), labels, name="cliff")
        return Task(
            "cliff",
            lambda: gymnasium.make("CliffWalking-v1", max_episode_steps=h),
            mdp,
            cliff_machine(),
            labels,
            h,
            DQNConfig(),
        )
    if name == "coffee-noisy":
        return attrs.evolve(task("coffee", horizon=horizon), name=name, noise=("replace", 0.05))
    if name == "mining":
        m = dsl.load_model("mining").tasks["mining"]
        h = horizon or 300
        return Task(
            name,
            lambda: MdpEnv(m.mdp, max_steps=h),
            m.mdp,
            m.machine,
            StateLabels.of(m.mdp),
            h,
            DQNConfig(gamma=0.95, explore=10_000, buffer_size=500_000),
            noise=("uniform", 0.1),
        )
    if name in ("coffee", "patrol"):
        from ._dqn import World

        world = World.office()
        t = dsl.load_model("office").tasks[name]
        h = horizon or world.horizon
        settings = (  # docs/benchmarks/deep-rl.md: coffee with the defaults, patrol with these
            DQNConfig()
            if name == "coffee"
            else DQNConfig(hidden=(), gamma=0.97, explore=10_000, final_learning_rate=1e-4, buffer_size=500_000)
        )
        return Task(
            name, lambda: MdpEnv(world.mdp, max_steps=h), world.mdp, t.machine, StateLabels.of(t.mdp), h, settings
        )
    if name in ("craft-t1", "craft-t2"):
        from ._dqn import World

        world = World.craft(horizon or 200)
        t = dsl.load_model("craft").tasks[name.split("-")[1]]
        return Task(
            name,
            lambda: MdpEnv(world.mdp, max_steps=world.horizon),
            world.mdp,
            t.machine,
            StateLabels.of(t.mdp),
            world.horizon,
            DQNConfig(gamma=0.95, explore=10_000, buffer_size=500_000),
        )
    raise RmtkError(f"unknown task {name!r}; the tasks are {', '.join(TASKS)}")


@attrs.frozen
class Run:
    """One agent's run: the steps of each evaluation and its success rate, the swaps' steps
    (online agents), the final machine's verdict, the process CPU seconds of the run and of its
    inferences, and the learner (online agents) or the model."""

    arm: str
    seed: int
    steps: tuple[int, ...]
    success: tuple[float, ...]
    swaps: tuple[int, ...] = ()
    verdict: str = ""
    cpu: float = 0.0
    inference_cpu: float = 0.0
    trained: int = 0
    learner: object = attrs.field(default=None, eq=False, repr=False)

    def reached(self, level: float = 0.9) -> int | None:
        """The steps at the first evaluation with a success rate ≥ ``level`` (``None``: none)."""
        return next((s for s, ok in zip(self.steps, self.success) if ok >= level), None)


def ppo_kwargs(settings: DQNConfig) -> dict:
    """PPO's keyword arguments on a task: the task's hidden layers (for the policy and the value
    network each) and γ, Stable-Baselines3's defaults for the rest (what ``OnlineLearner`` keeps)."""
    return {"policy_kwargs": {"net_arch": list(settings.hidden)}, "gamma": settings.gamma}


def scores(model, algorithm: str) -> np.ndarray:
    """The scores whose row-wise argmax is the model's greedy action at every observation of its
    ``Discrete`` observation space: DQN's Q-values, PPO's action log-probabilities (their argmax
    is ``predict(deterministic=True)``'s action, ties to the first)."""
    from ..rl import q_table

    if algorithm == "DQN":
        return q_table(model)
    import torch

    model.policy.set_training_mode(False)
    with torch.no_grad():
        dist = model.policy.get_distribution(torch.arange(int(model.observation_space.n)))
        return dist.distribution.logits.cpu().numpy().astype(float)


def _slots(q: np.ndarray, n_states: int, slots: int, nodes: int) -> np.ndarray:
    """The Q-values of the first ``nodes`` slots of a slot product (``state · slots + slot``)."""
    return q.reshape(n_states, slots, -1)[:, :nodes].reshape(n_states * nodes, -1)


def train(
    t: Task,
    arm: str,
    *,
    seed: int,
    steps: int,
    every: int,
    stop: float | None = None,
    settings: DQNConfig | None = None,
    log: Callable | None = None,
    exploration=None,
    algorithm: str = "DQN",
) -> Run:
    """Train agent ``arm`` (:data:`ARMS`) on task ``t`` for at most ``steps`` steps, evaluating
    every ``every`` (``log(steps, success)`` hears each); ``stop``: end at the first success rate
    at least this; ``exploration``: the online agent's strategy in place of its default;
    ``algorithm``: one of :data:`ALGORITHMS` (PPO: :func:`ppo_kwargs`, the online agent with
    its own exploration, ``true`` without CRM)."""
    from ..rl import GreedyRollouts
    from ..rl.sb3 import _require  # Stable-Baselines3 (and torch) through rmtk.rl: a clear error without them

    sb3 = _require()
    if algorithm not in ALGORITHMS:
        raise RmtkError(f"unknown algorithm {algorithm!r}; the algorithms are {', '.join(ALGORITHMS)}")
    dqn = algorithm == "DQN"
    Algorithm = getattr(sb3, algorithm)

    settings = settings or t.settings
    kwargs = settings.kwargs(steps) if dqn else ppo_kwargs(settings)
    at: list[int] = []
    ok: list[float] = []
    S = t.mdp.n_states

    def record(n: int, rate: float) -> bool:
        at.append(n)
        ok.append(rate)
        if log is not None:
            log(n, rate)
        return stop is None or rate < stop

    t0 = time.process_time()
    if arm in ("online", "online-eps"):
        from ..rl.online import AgentExploration, OnlineLearner
        from ..rl.online.learner import DQN_DEFAULTS

        exploration = AgentExploration() if arm == "online-eps" else exploration
        learner = OnlineLearner(
            t.paying(seed),
            t.labels,
            Algorithm,
            seed=seed,
            max_nodes=t.max_nodes,
            exploration=exploration,
            **t.inference(),
            **kwargs,
        )
        assert not dqn or set(kwargs) >= set(DQN_DEFAULTS), "the task's settings give every default"
        rollouts: dict[int, object] = {}

        def rate(model) -> float:
            h = learner.env.machine
            key = len(learner.hypotheses)
            if key not in rollouts:
                rollouts.clear()
                rollouts[key] = GreedyRollouts.of(t.mdp, h, t.truth, t.horizon)
            q = _slots(scores(model, algorithm), S, learner.env.max_nodes, h.n_nodes)
            return rollouts[key].rate(q)  # type: ignore[attr-defined]

        def evaluate(model) -> float:
            value = rate(model)
            record(model.num_timesteps, value)
            return value

        learner.learn(steps, evaluate=evaluate, evaluate_every=every, target=stop)
        from ..rl.online import against_truth

        verdict = str(
            against_truth(learner.machine, t.truth, learner.traces, learner.env.loop.settings.inference.tolerance)
        )
        return Run(
            arm,
            seed,
            tuple(at),
            tuple(ok),
            tuple(s.step for s in learner.hypotheses[1:]),
            verdict,
            time.process_time() - t0,
            learner.env.loop.inference_cpu,
            learner.steps,
            learner,
        )
    BaseCallback = sb3.common.callbacks.BaseCallback

    from ..gym import RewardMachineEnv
    from ..rl import crm
    from ..rl.online.tasks import MachinePays
    from ..rl.sb3 import one_thread, quiet_logger

    if arm == "true":
        env = RewardMachineEnv(t.base(), t.truth, t.labels, observation="flat")
        check = GreedyRollouts.of(t.mdp, t.truth, t.truth, t.horizon)
        extra = crm(env) if dqn else {}
    elif arm == "none":
        env = MachinePays(t.base(), t.truth, t.labels)
        check = GreedyRollouts.of(t.mdp, t.truth, t.truth, t.horizon, node=False)
        extra = {}
    else:
        raise RmtkError(f"unknown agent {arm!r}; the agents are {', '.join(ARMS)}")

    class Evaluate(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps % every:
                return True
            return record(self.num_timesteps, check.rate(scores(self.model, algorithm)))

    model = Algorithm("MlpPolicy", env, seed=seed, device="cpu", verbose=0, **kwargs, **extra)
    model.set_logger(quiet_logger())
    with one_thread():
        model.learn(steps, callback=Evaluate())
    return Run(
        arm, seed, tuple(at), tuple(ok), cpu=time.process_time() - t0, trained=int(model.num_timesteps), learner=model
    )


__all__ = ["ALGORITHMS", "ARMS", "ARM_NAMES", "TASKS", "Run", "Task", "ppo_kwargs", "scores", "task", "train"]
