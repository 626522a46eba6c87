"""The 2-link reacher of the paper (section 6.3, appendix C.2): its geometry, labels, true
machine and scripted expert, in plain numpy. The simulation is a Gymnasium vector
environment, recorded with :func:`rmtk.gym.collect` (``rmtk/gym/reacher.py``: the environment,
the labeler, the discretiser and the expert as a policy; needs ``gymnasium[mujoco]``).

**Physics.** Gymnasium's ``Reacher-v5`` MuJoCo model (two links of 0.1 and 0.11 m, RK4,
timestep 0.01 s, ``frame_skip`` 2, so one step is 0.02 s), stepped in batches of thousands of
arms at once. The episode horizon is 160 steps.

**Actions.** Torques ``{−1, −0.5, 0, 0.5, 1}`` per joint: action ``5·i + j`` applies
``(TORQUES[i], TORQUES[j])`` to (shoulder, elbow).

**Initial state.** Shoulder angle uniform in [−π, π]; elbow angle uniform in its joint range
[−3, 3] rad (the model limits the elbow to ±3 rad, so ±π would start inside the limit
constraint); both joint velocities uniform in [−5, 5] rad/s.

**Targets and labels.** Three fixed discs of radius 0.02 m: b (0.1, −0.11), y (−0.1, 0.11),
r (0.1, 0.11), to be reached in the order b → y → r. The label of a step is the disc the
fingertip is in at that step — whichever disc, active or not (a label is a property of the
physical state, as in a labelled MDP; the discs do not overlap) — else ``i``. The fingertip
position is the exact forward kinematics of the continuous joint angles, so labels are *not*
a function of the discretised cell: the labeler reads them from each observation.

**Task progress.** The expert's active goal is the node of the true machine
``u0 -b-> u1 -y-> u2 -r-> u3`` (all other letters self-loop) after reading the labels so far,
the step's own label included (section 2's prefix convention): it switches as soon as the
previous target is reached. In ``u3`` (task done) the expert goes back to b and holds there
(``Expert.done``; ``"home"`` would instead send it to both joint angles 0, fingertip
(0.21, 0), in no disc). Holding at b makes u3 hover for the rest of the episode where u1
leaves b for y, which yields most of the negative examples; u3 has the same policy as u0
(goal b) and is told apart from it by what follows a b (u0 leaves for y, u3 stays).

**Discretisation** (appendix C.2; :func:`rmtk.gym.reacher.reacher_bins`): joint angles
wrapped to [−π, π) in 36 bins of 10°; joint velocities clipped to [−14, 14] rad/s (a fast
arm exceeds it: clipped into the edge bins, and counted) in 112 bins of 0.25 rad/s. State
index, mixed radix:
``((a1·36 + a2)·112 + v1)·112 + v2``, so ``36·36·112·112 = 16,257,024`` cells. (The paper
says ≈17.4M without giving the exact bin rule; e.g. 36²·116² = 17.44M or 37²·113² = 17.48M
would round to it. Only a tiny fraction of cells is ever visited, so this does not matter.)

**Expert.** A scripted controller that sees only the *centre* of the current cell and the
active goal, so that the expert is a function of (cell, machine node) — the paper samples its
PPO policy at the cell centre for the same reason. Two-link inverse kinematics gives the goal
joint angles (elbow-up branch, elbow +90° at every target: the three targets are all at
0.1487 m from the shoulder; ``Expert.elbow``), a velocity-command law
``ω* = clip(kp·e, ±w_max)`` (kp = 12 /s, w_max = 8 rad/s; shoulder error wrapped) is turned
into the torque level that brings each joint velocity closest to ω* in one step (about
2 rad/s per 0.5 of torque), the nearest of the 5 levels (half-way between two, within
:data:`rmtk.ties.TOL`, the lower one: :func:`rmtk.ties.argbest`). With probability ``epsilon`` (default
0.1) the action is instead uniform over the 25 actions (so the greedy action has probability
1 − ε + ε/25 = 0.904): two nodes' policies at a cell then differ by a total-variation
distance of 0.9 (or 0), detectable from ≈60 visits of each (word, cell) pair at α = 10⁻³.
The expert completes b → y → r in all of 100,000 seeded episodes (mean 53 steps).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs
import numpy as np

from .. import ties

#: The propositions, in label-index order.
PROPOSITIONS = ("i", "b", "y", "r")
#: Target centres (x, y) of b, y, r (labels 1, 2, 3), and their radius.
TARGETS = np.array([[0.1, -0.11], [-0.1, 0.11], [0.1, 0.11]])
RADIUS = 0.02
#: Link lengths of Reacher-v5 (shoulder to elbow, elbow to fingertip).
LINKS = (0.1, 0.11)
#: Joint angles of the home pose (the goal in u3 with ``Expert(done="home")``; fingertip (0.21, 0)).
HOME = np.array([0.0, 0.0])
#: Torque levels per joint; action 5·i + j is (TORQUES[i], TORQUES[j]).
TORQUES = np.array([-1.0, -0.5, 0.0, 0.5, 1.0])
#: The torque levels in units of 0.5 (``TORQUES / 0.5``).
LEVELS = np.arange(-2.0, 3.0)
N_ACTIONS = 25
HORIZON = 160
ELBOW_LIMIT = 3.0
INITIAL_VELOCITY = 5.0
EPSILON = 0.1


# ====================================================================== labels
def fingertip(angles) -> np.ndarray:
    """``(N, 2)`` fingertip positions of ``(N, 2)`` joint angles (forward kinematics)."""
    angles = np.asarray(angles, dtype=float)
    t1, t12 = angles[..., 0], angles[..., 0] + angles[..., 1]
    return np.stack(
        [LINKS[0] * np.cos(t1) + LINKS[1] * np.cos(t12), LINKS[0] * np.sin(t1) + LINKS[1] * np.sin(t12)], axis=-1
    )


def label(tip) -> np.ndarray:
    """Label index of fingertip positions: 1 + k inside target disc k (b, y, r), else 0 (i)."""
    tip = np.asarray(tip, dtype=float)
    d2 = ((tip[..., None, :] - TARGETS) ** 2).sum(axis=-1)
    inside = d2 <= RADIUS**2
    return np.where(inside.any(axis=-1), 1 + np.argmax(inside, axis=-1), 0).astype(np.int64)


def advance(node, labels) -> np.ndarray:
    """The true machine: ``u_k`` moves to ``u_{k+1}`` on the (k+1)-th target's label."""
    node = np.asarray(node)
    return np.where((node < 3) & (labels == node + 1), node + 1, node)


def true_machine():
    """``u0 -b-> u1 -y-> u2 -r-> u3``, every other letter a self-loop (rewards 0)."""
    from ..machine.model import RewardMachine

    return RewardMachine.from_transitions(
        {("u0", "b"): "u1", ("u1", "y"): "u2", ("u2", "r"): "u3"},
        PROPOSITIONS,
        nodes=["u0", "u1", "u2", "u3"],
        name="reacher",
    )


# ====================================================================== expert
def inverse_kinematics(goal, elbow_sign) -> np.ndarray:
    """Joint angles putting the fingertip on ``goal`` (``(N, 2)``), elbow branch ``±1``."""
    goal = np.asarray(goal, dtype=float)
    l1, l2 = LINKS
    x, y = goal[..., 0], goal[..., 1]
    c2 = np.clip((x * x + y * y - l1 * l1 - l2 * l2) / (2 * l1 * l2), -1.0, 1.0)
    t2 = np.where(elbow_sign >= 0, 1.0, -1.0) * np.arccos(c2)
    t1 = np.arctan2(y, x) - np.arctan2(l2 * np.sin(t2), l1 + l2 * np.cos(t2))
    return np.stack([t1, t2], axis=-1)


@attrs.frozen
class Expert:
    """The scripted expert's control law at a point (a cell centre) and a node; the ε-greedy
    policy on cells is :func:`rmtk.gym.reacher.reacher_expert`.

    Attributes:
        kp: velocity command per radian of error (1/s).
        w_max: largest commanded joint speed (rad/s).
        gain: joint-velocity change per unit torque in one step (rad/s); about 4 in Reacher.
        epsilon: probability of a uniformly random action.
        elbow: inverse-kinematics branch: ``+1`` or ``−1`` (fixed), ``0`` the sign of the
            current elbow angle.
        done: the goal in u3 (task done): a target ``"b"``, ``"y"``, ``"r"`` (go there and
            hold; reaching it again changes nothing), or ``"home"``.
    """

    kp: float = 12.0
    w_max: float = 8.0
    gain: float = 4.0
    epsilon: float = EPSILON
    elbow: int = 1
    done: str = "b"

    def __attrs_post_init__(self):
        if self.done not in ("b", "y", "r", "home"):
            raise ValueError(f"done must be 'b', 'y', 'r' or 'home', not {self.done!r}")
        if self.elbow not in (-1, 0, 1):
            raise ValueError(f"elbow must be -1, 0 or 1, not {self.elbow!r}")

    def goal_angles(self, angles, node) -> np.ndarray:
        """Goal joint angles per node: IK to b, y, r in u0, u1, u2, and to ``done`` in u3."""
        node = np.asarray(node)
        after = {"b": 0, "y": 1, "r": 2}.get(self.done, -1)
        goals = TARGETS[np.where(node == 3, max(after, 0), np.minimum(node, 2))]
        q = inverse_kinematics(goals, np.sign(angles[..., 1]) if self.elbow == 0 else self.elbow)
        return np.where((node == 3)[..., None], HOME, q) if after < 0 else q

    def greedy_from(self, angles, velocities, node) -> np.ndarray:
        """Greedy action indices at the given (cell-centre) angles and velocities."""
        q = self.goal_angles(angles, node)
        err = q - angles
        err[..., 0] = np.mod(err[..., 0] + math.pi, 2 * math.pi) - math.pi  # the shoulder turns freely
        w_star = np.clip(self.kp * err, -self.w_max, self.w_max)
        want = 2 * (w_star - velocities) / self.gain  # in torque levels of 0.5
        level = ties.argbest(-np.abs(want[..., None] - LEVELS), axis=-1)  # 0..4: the nearest level
        return 5 * level[..., 0] + level[..., 1]


__all__: Sequence[str] = [
    "PROPOSITIONS",
    "TARGETS",
    "RADIUS",
    "HOME",
    "TORQUES",
    "HORIZON",
    "N_ACTIONS",
    "Expert",
    "fingertip",
    "label",
    "advance",
    "true_machine",
    "inverse_kinematics",
]
