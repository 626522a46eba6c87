"""Acting on a belief over the machine's nodes with a DQN the way the tabular learner does
(QMDP): ``QmdpPolicy``, for ``RewardMachineEnv(observation="belief")`` (docs/guide/15-noisy-labels.md).

The belief replay buffer (:mod:`rmtk.rl.belief_crm`) trains the network on every live node's
experience with its node known: the ``belief`` input is always one-hot there. A network that
reads the belief as an input is then asked, when it acts, at beliefs it never trained on (a
detection of a rare letter sends the Bayes filter's belief most of the way to an end node).
``QmdpPolicy`` never reads a belief between nodes: its Q-values at ``{"obs": s, "belief": b}``
are ``Σ_u b(u) Q(s, e_u, ·)``, the network evaluated at each live node's one-hot and weighted by
the belief, a terminal node's value 0 (the machine has ended: nothing more is paid), as
:class:`~rmtk.gym.belief.BeliefQLearning` acts on a Q-table. At a one-hot belief of a live node
this is the network's own value, so training (whose observations are all such) is unchanged; a
batch of them takes one forward pass, a belief between nodes one per live node. In a few
lines::

    env = RewardMachineEnv(office_env(), machine, labeler, observation="belief", detector=detector)
    model = DQN(qmdp_policy(), env, policy_kwargs=qmdp_kwargs(env), **crm(env))
    model.learn(20_000)

``qmdp_kwargs(env)`` reads the machine's terminal nodes off the environment (a
``RewardMachineEnv``, possibly wrapped, or a Stable-Baselines3 vector environment of them); more
policy keywords (``net_arch``) go in the same dictionary.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ModelError, RmtkError
from .belief_crm import belief_space
from .encoding import product_attributes
from .sb3 import _require


def qmdp_kwargs(env) -> dict:
    """The policy keywords of :func:`qmdp_policy` for the belief product ``env``: ``ended``, which
    of the machine's nodes are terminal (their value is 0)."""
    if not belief_space(getattr(env, "observation_space", None)):
        raise ModelError("QmdpPolicy acts on a belief: it needs RewardMachineEnv(..., observation='belief')")
    (terminal,) = product_attributes(env, ("terminal",))
    return {"ended": tuple(bool(x) for x in np.asarray(terminal, dtype=bool))}


def _qmdp_policy() -> type:
    _require()  # a clear error without the rl extra
    import torch as th
    from stable_baselines3.dqn.policies import MultiInputPolicy, QNetwork

    class QmdpNetwork(QNetwork):
        """A Q-network whose value at a belief is the belief-weighted value of its live nodes
        (see :mod:`rmtk.rl.qmdp`)."""

        live: th.Tensor  # 1 at a live node, 0 at a terminal one
        nodes: th.Tensor  # the nodes' one-hot beliefs

        def __init__(self, *args, ended: tuple[bool, ...], **kwargs):
            super().__init__(*args, **kwargs)
            self.ended = tuple(ended)
            live = th.tensor([not x for x in self.ended], dtype=th.float32)
            self.register_buffer("live", live, persistent=False)
            self.register_buffer("nodes", th.eye(len(self.ended), dtype=th.float32), persistent=False)

        def forward(self, obs) -> th.Tensor:
            b = obs["belief"]
            n = len(self.ended)
            if b.shape[-1] != n:
                raise RmtkError(f"QmdpPolicy: the belief has {b.shape[-1]} nodes, and the machine {n}")
            q = super().forward(obs)
            top, node = b.max(dim=1)
            sure = (top == 1.0) & (b.sum(dim=1) == 1.0)  # one-hot: the node's value (0 at an end)
            q = th.where((sure & (self.live[node] == 0))[:, None], th.zeros_like(q), q)
            if bool(sure.all()):
                return q
            mixed = th.nonzero(~sure).flatten()
            rows = {k: v[mixed].repeat_interleave(n, dim=0) for k, v in obs.items()}
            rows["belief"] = self.nodes.repeat(len(mixed), 1).to(obs["belief"].dtype)
            per_node = super().forward(rows).reshape(len(mixed), n, -1)  # (B, n, A)
            weights = b[mixed].to(per_node.dtype) * self.live  # a terminal node's value is 0
            q[mixed] = th.einsum("bn,bna->ba", weights, per_node)
            return q

        def _get_constructor_parameters(self) -> dict[str, Any]:
            return dict(super()._get_constructor_parameters(), ended=self.ended)

    class QmdpPolicy(MultiInputPolicy):
        """Stable-Baselines3's DQN ``MultiInputPolicy`` acting on a belief by QMDP (see
        :mod:`rmtk.rl.qmdp`); ``ended``: the machine's terminal nodes (:func:`qmdp_kwargs`)."""

        def __init__(self, *args, ended: tuple[bool, ...], **kwargs):
            if not ended or all(ended):
                raise ModelError("QmdpPolicy: ended must flag each of the machine's nodes, one of them live")
            self.ended = tuple(bool(x) for x in ended)
            super().__init__(*args, **kwargs)

        def make_q_net(self) -> QmdpNetwork:
            net_args = self._update_features_extractor(self.net_args, features_extractor=None)
            return QmdpNetwork(**net_args, ended=self.ended).to(self.device)

        def _get_constructor_parameters(self) -> dict[str, Any]:
            return dict(super()._get_constructor_parameters(), ended=self.ended)

    return QmdpPolicy


_POLICY: list = []


def qmdp_policy() -> type:
    """The ``QmdpPolicy`` class (a subclass of Stable-Baselines3's DQN ``MultiInputPolicy``, made
    when first asked so that importing this module needs neither SB3 nor torch)."""
    if not _POLICY:
        _POLICY.append(_qmdp_policy())
    return _POLICY[0]


def __getattr__(name: str):
    if name == "QmdpPolicy":
        return qmdp_policy()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["qmdp_kwargs", "qmdp_policy"]
