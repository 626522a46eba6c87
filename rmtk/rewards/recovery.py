"""MaxEnt reward extraction (paper section 3.2, end; appendix D, Algorithm 3; docs/design/06-rewards.md).

Two steps turn a learned reward machine *model* into a reward machine:

1. :func:`learned_product_policy` (Algorithm 3): every (word, state) pair ``(σ, s)`` of the
   prefix tree policy is mapped to the product state ``(s, δ_u*(u_I, σ))`` of the learned
   machine, and the action distributions (or, for an empirical policy, the action counts) of
   all pairs landing on the same product state are added up and normalised. Product states
   that no pair reaches get the uniform distribution.

2. :func:`recover_rewards`: with entropy weight λ the soft-optimal product policy satisfies,
   on every reachable product state ``(s, u)`` and every action ``a``::

       λ log π(a|s,u) = Σ_s' P(s'|s,a) [δ_r(u, L(s')) + γ V(s', δ_u(u, L(s')))] − V(s,u),

   which is *linear* in the unknowns ``δ_r`` (one per machine transition) and ``V`` (one per
   product state). The equations of every action with ``π(a|s,u) > 0`` form a sparse
   least-squares problem, solved with its null space (:mod:`rmtk.rewards.system`): densely
   (spectral decomposition of ``AᵀA``, plus iterative refinement) up to
   :data:`DENSE_LIMIT` unknowns, and beyond by eliminating the values (a sparse LU and a small
   Schur complement on the rewards and the values without an equation of their own);
   ``scipy.sparse.linalg.lsqr``, without the null space, only where that LU is singular. The
   system is held as a numpy
   :class:`~rmtk._arrays.Csr`; scipy is imported only for the large systems (and for a Gram
   matrix too large to form with numpy, see :meth:`~rmtk._arrays.Csr.gram`).

Identifiability. Rewards are identified at best up to potential-based shaping on the
machine's nodes: for any ``φ: U → R``,

    δ_r'(u, ℓ) = δ_r(u, ℓ) + γ φ(δ_u(u, ℓ)) − φ(u),   V'(s, u) = V(s, u) − φ(u)

solves the same equations (the constant offset ``δ_r + c`` is the case ``φ ≡ −c/(1−γ)``).
These *shaping directions*, one per node that occurs in a reachable product state, are
always in the null space, so no single entry ``δ_r(u, ℓ)`` is ever identified in absolute
terms when γ < 1. The fit therefore reports one canonical representative and states
identification relative to it:

* the representative ``delta_r`` is the solution of minimum Euclidean norm in the reward
  coordinates (it is orthogonal to the reward part of every null-space vector, in
  particular to every shaping direction);
* when the null space is exactly the shaping directions (``null_dim == shaping_dim``), the
  rewards are *identified up to shaping*: the representative is the orthogonal projection
  of the true rewards onto the complement of the shaping directions, whatever the truth;
* otherwise the null space has *extra* directions; in the canonical gauge (rewards
  orthogonal to the shaping directions) they span ``E = W ∩ G⊥`` (``W``: reward parts of
  the null space, ``G``: shaping directions). Entry ``(u, ℓ)`` is marked *identified* when
  every vector of ``E`` vanishes on it. Then its canonical value is the same for every
  reward vector consistent with the policy: it equals the true reward after projecting out
  the shaping directions. Entries that occur in no equation are *unconstrained* (reported
  as 0).
"""

from __future__ import annotations

import attrs
import numpy as np

from .._arrays import Csr, array_eq, frozen_array, unique
from ..errors import ModelError
from ..machine.model import RewardMachine
from ..mdp.model import LabeledMDP
from ..product.model import gather_rows, letter_map, product
from ..product.planning import soft_bellman, task_policy
from ..ptp.tree import PrefixTreePolicy
from ..task import Task
from .l1 import l1_fit, sparse_l1
from .system import Solved, identified_entries, solve_dense, solve_eliminated

#: Systems with at most this many unknowns are solved densely (with the null space); larger ones
#: by eliminating the values (:func:`rmtk.rewards.system.solve_eliminated`), or with ``lsqr``
#: and without an identification analysis where that does not apply. Past a few hundred
#: unknowns the elimination is the faster by far (Craft t2 from demonstrations, about 2,300
#: unknowns: 0.3 s instead of 2.7 s per machine, docs/benchmarks/rewards-cost.md).
DENSE_LIMIT = 500

#: Relative singular-value threshold (to the largest) below which a direction is null.
RANK_TOL = 1e-6


# ---------------------------------------------------------------------- Algorithm 3
def _ptp_nodes(machine: RewardMachine, ptp: PrefixTreePolicy, letter) -> np.ndarray:
    if ptp.trie.compressed and not machine.is_non_stuttering():
        raise ModelError(
            f"machine {machine.name!r} is stuttering but the prefix tree is compressed: "
            "a compressed word does not determine the node; build the tree with compress=False"
        )
    K = int(ptp.trie.letter.max(initial=-1)) + 1
    if letter is None:
        letter = np.arange(len(machine.alphabet), dtype=np.int64)
    letter = np.asarray(letter, dtype=np.int64)
    if len(letter) < K:
        raise ModelError(f"letter map has {len(letter)} entries but the prefix tree uses {K} propositions")
    if len(letter) and (letter.min() < 0 or letter.max() >= len(machine.alphabet)):
        raise ModelError(f"letter map has an index outside the machine alphabet 0..{len(machine.alphabet) - 1}")
    return ptp.trie.run(machine.delta_u, machine.initial, letter)[ptp.tree.pair_node]


def _accumulate(machine: RewardMachine, ptp: PrefixTreePolicy, n_states: int, letter) -> np.ndarray:
    """``(S, n, A)`` sums of the pairs' distributions (or counts) per product state."""
    nodes = _ptp_nodes(machine, ptp, letter)
    states = np.asarray(ptp.tree.pair_state, dtype=np.int64)
    if len(states) and states.max() >= n_states:
        raise ModelError(f"the prefix tree refers to state {int(states.max())} but n_states={n_states}")
    weights = np.asarray(ptp.policy if ptp.counts is None else ptp.counts, dtype=float)
    n, A = machine.n_nodes, weights.shape[1]
    cell = states * n + nodes
    flat = (cell[:, None] * A + np.arange(A)).ravel()
    acc = np.bincount(flat, weights=weights.ravel(), minlength=n_states * n * A)
    return acc.reshape(n_states, n, A)


def learned_product_policy(machine: RewardMachine, ptp: PrefixTreePolicy, *, n_states: int, letter=None) -> np.ndarray:
    """The product policy ``π̂(a|s,u)`` of ``machine`` induced by a prefix tree policy
    (paper Algorithm 3).

    Every pair ``(σ, s)`` of ``ptp`` adds its action distribution to ``π̂(·|s, δ_u*(u_I, σ))``;
    when ``ptp.counts`` is given its action *counts* are added instead (words then weigh by
    their evidence). Rows are normalised; rows that nothing reaches (or whose counts are all
    zero) are uniform.

    Args:
        machine: the (learned) machine; with a compressed prefix tree it must be non-stuttering.
        ptp: the prefix tree policy (its trie letters are the MDP's proposition indices).
        n_states: number of MDP states ``|S|``.
        letter: ``letter[k]`` machine letter of MDP proposition ``k``; default the identity
            (learned machines have the MDP's propositions as alphabet, in order). For a
            task's own machine pass ``task.letter_of_proposition``.

    Returns:
        ``(S, n, A)`` array, every row a distribution.
    """
    acc = _accumulate(machine, ptp, n_states, letter)
    tot = acc.sum(axis=2, keepdims=True)
    A = acc.shape[2]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(tot > 0, acc / np.where(tot > 0, tot, 1.0), 1.0 / A)


def coverage(machine: RewardMachine, ptp: PrefixTreePolicy, *, n_states: int, letter=None) -> np.ndarray:
    """``(S, n)`` bool: product states ``(s, u)`` that some pair of ``ptp`` lands on (with
    positive total counts for an empirical policy), i.e. the rows of
    :func:`learned_product_policy` that are observed rather than filled in uniformly."""
    return _accumulate(machine, ptp, n_states, letter).sum(axis=2) > 0


# ---------------------------------------------------------------------- the fit
@attrs.frozen
class RewardFit:
    """Rewards recovered for a machine from a product policy (see the module docstring).

    Attributes:
        delta_r: ``(n, K)`` canonical rewards (minimum norm; unconstrained entries 0).
        V: ``(S, n)`` soft values of the same solution; NaN where ``V`` is not an unknown.
        residual: max abs residual of the equations (0 when the policy is exactly soft-optimal
            for some rewards of the machine).
        residual_rms: root mean square residual.
        identified: ``(n, K)`` entries whose canonical value is determined by the policy
            (``None`` when the identification analysis was skipped: large systems).
        unconstrained: ``(n, K)`` entries that occur in no equation.
        null_dim: dimension of the null space of the system (``None`` when skipped).
        shaping_dim: number of shaping directions (nodes occurring in the equations).
        machine: ``machine`` with the recovered rewards.
        replan_error: max abs difference between the soft-optimal policy of ``machine`` and
            the input policy on the product states of the equations (``None`` if not checked).
        mask: ``(S, n)`` product states whose equations were used.
        n_equations: rows of the least-squares system.
        n_unknowns: columns of the least-squares system.
        method: ``"dense"`` (eigendecomposition of AᵀA, null space), ``"eliminated"`` (the
            values eliminated, null space from the rewards' Schur complement) or ``"lsqr"`` (no
            null space).
        gamma: the discount used.
        lam: the entropy weight used.
        note: remarks (skipped analysis, clipping).
    """

    delta_r: np.ndarray = attrs.field(converter=frozen_array(float), eq=array_eq, repr=False)
    V: np.ndarray = attrs.field(converter=frozen_array(float), eq=array_eq, repr=False)
    residual: float
    residual_rms: float
    identified: np.ndarray | None = attrs.field(eq=False, repr=False)
    unconstrained: np.ndarray = attrs.field(converter=frozen_array(bool), eq=array_eq, repr=False)
    null_dim: int | None
    shaping_dim: int
    machine: RewardMachine = attrs.field(repr=False)
    replan_error: float | None
    mask: np.ndarray = attrs.field(converter=frozen_array(bool), eq=array_eq, repr=False)
    n_equations: int
    n_unknowns: int
    method: str
    gamma: float
    lam: float
    note: str = ""

    @property
    def extra_null_dim(self) -> int | None:
        """Null directions beyond the shaping ones; 0 means identified up to shaping."""
        return None if self.null_dim is None else self.null_dim - self.shaping_dim

    @property
    def identified_up_to_shaping(self) -> bool | None:
        """Whether the policy determines the rewards up to potential shaping on the nodes."""
        return None if self.null_dim is None else self.null_dim == self.shaping_dim

    def summary(self) -> str:
        """One line for reports: the residual, the re-planning error, what is identified."""
        ident = (
            "identified up to potential shaping"
            if self.identified_up_to_shaping
            else "identification not analysed"
            if self.null_dim is None
            else f"{self.extra_null_dim} reward direction(s) not identified beyond shaping"
        )
        replan = "" if self.replan_error is None else f", re-planned policy within {self.replan_error:.2g}"
        return f"rewards (MaxEnt, sparsest up to shaping): residual {self.residual:.2g}{replan}; {ident}"


@attrs.frozen
class _System:
    A: Csr
    b: np.ndarray
    n_reward: int  # constrained reward columns come first
    reward_cols: np.ndarray  # flat (u*K + k) index of each reward column
    v_codes: np.ndarray  # s*n + u of each V column
    mask: np.ndarray  # (S, n) source product states


def _policy_array(policy) -> np.ndarray:
    pi = getattr(policy, "pi", policy)
    return np.asarray(pi, dtype=float)


def _clip(pi: np.ndarray, clip: float | None) -> np.ndarray:
    if clip is None:
        return pi
    if not 0 < clip < 1.0 / pi.shape[-1] + 1e-15:
        raise ModelError(f"clip must lie in (0, 1/|A|], got {clip}")
    pi = np.maximum(pi, clip)
    return pi / pi.sum(axis=-1, keepdims=True)


def build_system(
    mdp: LabeledMDP, machine: RewardMachine, pi: np.ndarray, mask: np.ndarray, *, gamma: float, lam: float, letter
) -> _System:
    """The sparse equations ``A x = b`` of the soft Bellman characterisation.

    Rows: ``(s, u)`` in ``mask`` (row-major order) × actions with ``π > 0``. Columns: the
    constrained reward entries (sorted by ``u·K + k``), then ``V`` of every product state that
    is a source or a successor (sorted by ``s·n + u``).
    """
    A, n, K = mdp.n_actions, machine.n_nodes, len(machine.alphabet)
    lp = letter[mdp.labels]  # machine letter of each state's label
    nxt = machine.delta_u[:, lp]  # (n, S)
    src = np.flatnonzero(mask.ravel())  # codes s*n+u
    s_src, u_src = src // n, src % n
    pis = pi[s_src, u_src]  # (m, A)
    ii, aa = np.nonzero(pis > 0)
    E = len(ii)
    b = lam * np.log(pis[ii, aa])
    T = mdp.kernel
    which, pos = gather_rows(T, s_src[ii] * A + aa)
    s2, p = T.indices[pos], T.data[pos]
    u = u_src[ii][which]
    rflat = u * K + lp[s2]
    succ = s2 * n + nxt[u, s2]
    reward_cols = unique(rflat)
    v_codes = unique(np.concatenate([src, succ]))
    nr = len(reward_cols)
    rows = np.concatenate([which, which, np.arange(E)])
    cols = np.concatenate(
        [
            np.searchsorted(reward_cols, rflat),
            nr + np.searchsorted(v_codes, succ),
            nr + np.searchsorted(v_codes, src[ii]),
        ]
    )
    vals = np.concatenate([p, gamma * p, -np.ones(E)])
    Amat = Csr.from_coo(vals, rows, cols, (E, nr + len(v_codes)))
    return _System(Amat, b, nr, reward_cols, v_codes, mask)


def shaping_directions(machine: RewardMachine, system: _System, gamma: float) -> np.ndarray:
    """``(n_unknowns, g)``: one column per node occurring among the ``V`` unknowns, the
    shaping ``φ = e_u``: reward entry ``(u', ℓ)`` gets ``γ[δ_u(u',ℓ) = u] − [u' = u]`` and
    ``V(s, u')`` gets ``−[u' = u]``. Each lies in the null space of the system."""
    n, K = machine.n_nodes, len(machine.alphabet)
    v_nodes = system.v_codes % n
    nodes = unique(v_nodes)
    ru, rk = system.reward_cols // K, system.reward_cols % K
    rtarget = machine.delta_u[ru, rk]
    G = np.zeros((system.n_reward + len(system.v_codes), len(nodes)))
    for j, w in enumerate(nodes):  # one column per node (n is small)
        G[: system.n_reward, j] = gamma * (rtarget == w) - (ru == w).astype(float)
        G[system.n_reward :, j] = -(v_nodes == w).astype(float)
    return G


def recover_rewards(
    mdp: LabeledMDP,
    machine: RewardMachine,
    policy,
    *,
    gamma: float,
    lam: float = 1.0,
    letter=None,
    reachable: np.ndarray | None = None,
    clip: float | None = None,
    replan: bool = True,
    dense_limit: int = DENSE_LIMIT,
    rank_tol: float = RANK_TOL,
) -> RewardFit:
    """Rewards ``δ_r`` of ``machine`` that make ``policy`` soft-optimal (MaxEnt IRL on the
    product, paper section 3.2), by linear least squares on the soft Bellman equations.

    Args:
        mdp: the labeled MDP.
        machine: the machine whose rewards are recovered (its own rewards are ignored).
        policy: ``(S, n, A)`` product policy on the full grid (or a
            :class:`~rmtk.product.planning.SoftPolicy`).
        gamma: discount; lam: entropy weight λ.
        letter: ``letter[k]`` machine letter of MDP proposition ``k`` (default: by name).
        reachable: ``(S, n)`` bool mask of the product states whose equations are used;
            default: the product states reachable from the initial distribution.
        clip: minimum probability: ``π ← max(π, clip)`` then renormalised (sparse empirical
            policies: the paper's mice experiment clips at 0.05). Without it, actions with
            ``π = 0`` are left out of the equations.
        replan: re-plan with the recovered rewards and report ``replan_error`` (:func:`check`).
        dense_limit: largest number of unknowns solved densely with the null-space analysis.
        rank_tol: relative singular-value threshold of the null space.
    """
    letter = letter_map(mdp, machine, letter)
    S, A, n, K = mdp.n_states, mdp.n_actions, machine.n_nodes, len(machine.alphabet)
    pi_in = _policy_array(policy)
    if pi_in.shape != (S, n, A):
        raise ModelError(f"policy has shape {pi_in.shape}, expected (S, n, A) = ({S}, {n}, {A})")
    if np.any(pi_in < 0) or not np.all(np.isfinite(pi_in)):
        raise ModelError("policy has negative or non-finite probabilities")
    pi = _clip(pi_in, clip)
    if reachable is None:
        pairs = product(mdp, machine, letter).pairs
        mask = np.zeros((S, n), dtype=bool)
        mask[pairs[:, 0], pairs[:, 1]] = True
    else:
        mask = np.asarray(reachable, dtype=bool)
        if mask.shape != (S, n):
            raise ModelError(f"reachable mask has shape {mask.shape}, expected ({S}, {n})")
    if not mask.any():
        raise ModelError("no product state to fit: the mask is empty")
    system = build_system(mdp, machine, pi, mask, gamma=gamma, lam=lam, letter=letter)
    Amat, b, nr = system.A, system.b, system.n_reward
    E, U = Amat.shape
    G = shaping_directions(machine, system, gamma)
    notes = [f"policy clipped at {clip:g}"] if clip is not None else []

    solved = solve_dense(Amat, b, nr, rank_tol) if U <= dense_limit else solve_eliminated(Amat, b, nr, rank_tol)
    if solved is None:
        import scipy.sparse.linalg as spla

        out = spla.lsqr(Amat.to_scipy(), b, atol=1e-14, btol=1e-14, iter_lim=max(100 * U, 10_000))
        x = out[0]
        c = np.linalg.lstsq(G[:nr], x[:nr], rcond=None)[0]
        solved = Solved(
            x - G @ c,  # remove the shaping component of the rewards (stays a solution)
            None,
            None,
            "lsqr",
            f"{U} unknowns > dense limit {dense_limit}, and the values cannot be eliminated (their normal "
            f"matrix is singular): solved with lsqr (istop {out[1]}, {out[2]} iterations); "
            "null space not computed, identification not analysed (shaping directions projected out)",
        )
    x, method, null_dim = solved.x, solved.method, solved.null_dim
    identified_c = None if solved.W is None else identified_entries(solved.W, G[:nr])
    if solved.note:
        notes.append(solved.note)
    res = Amat @ x - b
    delta_r = np.zeros(n * K)
    delta_r[system.reward_cols] = x[:nr]
    delta_r = delta_r.reshape(n, K)
    unconstrained = np.ones(n * K, dtype=bool)
    unconstrained[system.reward_cols] = False
    identified = None
    if identified_c is not None:
        identified = np.zeros(n * K, dtype=bool)
        identified[system.reward_cols] = identified_c
        identified = identified.reshape(n, K)
    V = np.full(S * n, np.nan)
    V[system.v_codes] = x[nr:]
    fitted = machine.with_rewards(delta_r)
    replan_error = check(mdp, fitted, pi_in, gamma=gamma, lam=lam, letter=letter, mask=mask) if replan else None
    return RewardFit(
        delta_r=delta_r,
        V=V.reshape(S, n),
        residual=float(np.abs(res).max(initial=0.0)),
        residual_rms=float(np.sqrt(np.mean(res**2))) if len(res) else 0.0,
        identified=identified,
        unconstrained=unconstrained.reshape(n, K),
        null_dim=null_dim,
        shaping_dim=G.shape[1],
        machine=fitted,
        replan_error=replan_error,
        mask=mask,
        n_equations=E,
        n_unknowns=U,
        method=method,
        gamma=float(gamma),
        lam=float(lam),
        note="; ".join(notes),
    )


def check(
    mdp: LabeledMDP,
    machine: RewardMachine,
    policy,
    *,
    gamma: float,
    lam: float = 1.0,
    letter=None,
    mask: np.ndarray | None = None,
) -> float:
    """Re-plan: max abs difference between the soft-optimal policy of ``machine`` (with its
    rewards) and ``policy`` over the product states of ``mask`` (default: reachable ones)."""
    letter = letter_map(mdp, machine, letter)
    if mask is None:
        pairs = product(mdp, machine, letter).pairs
        mask = np.zeros((mdp.n_states, machine.n_nodes), dtype=bool)
        mask[pairs[:, 0], pairs[:, 1]] = True
    planned = soft_bellman(mdp, machine, gamma=gamma, lam=lam, letter=letter).pi
    return float(np.abs(planned[mask] - _policy_array(policy)[mask]).max(initial=0.0))


def reward_fit(
    target: Task | LabeledMDP,
    machine: RewardMachine | None = None,
    source=None,
    *,
    gamma: float | None = None,
    lam: float | None = None,
    letter=None,
    clip: float | None = None,
    observed_only: bool = True,
    **kw,
) -> RewardFit:
    """Convenience front end of :func:`recover_rewards`.

    Args:
        target: a :class:`Task` (discount, λ and, by default, machine and policy from it) or
            a :class:`LabeledMDP` (then ``machine``, ``source`` and ``gamma`` are required).
        machine: the machine to fit (default: the task's).
        source: a :class:`PrefixTreePolicy` (turned into a product policy by
            :func:`learned_product_policy`), a :class:`~rmtk.product.planning.SoftPolicy` or an
            ``(S, n, A)`` array; default (task only): the task's soft-optimal policy.
        observed_only: with a prefix tree policy, use only the equations of the reachable
            product states it covers (the uniform fill-in of the others is not evidence).
        kw: passed to :func:`recover_rewards`.
    """
    if isinstance(target, Task):
        task, mdp = target, target.mdp
        machine = task.require_machine("recovering its rewards without a machine given") if machine is None else machine
        gamma = task.discount if gamma is None else gamma
        lam = task.lam if lam is None else lam
    else:
        task, mdp = None, target
        if machine is None or source is None or gamma is None:
            raise ModelError("reward_fit on a bare MDP needs a machine, a policy source and gamma")
        lam = 1.0 if lam is None else lam
    letter = letter_map(mdp, machine, letter)
    reachable = kw.pop("reachable", None)
    if source is None:
        if machine is not task.machine:
            raise ModelError("without a policy source the machine must be the task's own")
        policy = task_policy(task, gamma=gamma, lam=lam).pi
    elif isinstance(source, PrefixTreePolicy):
        policy = learned_product_policy(machine, source, n_states=mdp.n_states, letter=letter)
        if observed_only and reachable is None:
            pairs = product(mdp, machine, letter).pairs
            reachable = np.zeros((mdp.n_states, machine.n_nodes), dtype=bool)
            reachable[pairs[:, 0], pairs[:, 1]] = True
            reachable &= coverage(machine, source, n_states=mdp.n_states, letter=letter)
    else:
        policy = _policy_array(source)
    return recover_rewards(
        mdp, machine, policy, gamma=gamma, lam=lam, letter=letter, reachable=reachable, clip=clip, **kw
    )


def describe(fit: RewardFit) -> str:
    """The recovered rewards per (node, letter), marked identified / not identified /
    unconstrained, with the fit diagnostics."""
    m = fit.machine
    lines = [
        f"rewards of machine {m.name} (gamma {fit.gamma:g}, lambda {fit.lam:g}): "
        f"{fit.n_equations} equations, {fit.n_unknowns} unknowns, {fit.method}",
        f"residual max {fit.residual:.3g}, rms {fit.residual_rms:.3g}"
        + ("" if fit.replan_error is None else f"; re-planned policy differs by at most {fit.replan_error:.3g}"),
    ]
    if fit.null_dim is None:
        lines.append("identification not analysed")
    else:
        verdict = (
            "identified up to potential shaping on the nodes"
            if fit.identified_up_to_shaping
            else f"{fit.extra_null_dim} null direction(s) beyond shaping"
        )
        lines.append(f"null space dimension {fit.null_dim} ({fit.shaping_dim} shaping): {verdict}")
    if "canonical representative" not in fit.note:
        lines.append("canonical representative: minimum-norm rewards (orthogonal to every shaping direction)")
    if fit.note:
        lines.append(f"note: {fit.note}")
    w_u = max(len(u) for u in m.nodes)
    w_l = max(len(a) for a in m.alphabet)
    for u in range(m.n_nodes):
        for k in range(len(m.alphabet)):
            if fit.unconstrained[u, k]:
                mark = "unconstrained"
            elif fit.identified is None:
                mark = "?"
            else:
                mark = "identified" if fit.identified[u, k] else "not identified"
            v = m.nodes[int(m.delta_u[u, k])]
            lines.append(
                f"  {m.nodes[u]:<{w_u}} --{m.alphabet[k]:<{w_l}}--> {v:<{w_u}}  {fit.delta_r[u, k]:+.6f}  {mark}"
            )
    return "\n".join(lines)


def sparsest(fit: RewardFit, *, tol: float = 1e-9) -> RewardFit:
    """The same fit with the representative of its shaping class a person expects: the
    potential φ on the nodes (``δ_r(u,ℓ) + γ φ(δ_u(u,ℓ)) − φ(u)`` over the constrained
    entries) chosen by, in this order,

    1. an absorbing node's self-loops pay 0 where the class allows it (its constrained loops
       all carry one value c: φ(u) = c / (1 − γ)); a machine that pays after its task is over
       reads wrong, even when paying a little on every loop is smaller in L1;
    2. the fewest non-zero rewards; 3. the smallest sum of their absolute values; 4. the
       first vertex in a fixed order (:func:`rmtk.rewards.l1.sparse_l1`, exact).

    Where the enumeration is too large (or the problem rank deficient) the smallest L1 alone
    is taken (:func:`rmtk.rewards.l1.l1_fit`) and the note says so. Shaping leaves the policy
    unchanged, so the residual and the re-planning error stay the same; V becomes V − φ(u).
    Values within ``tol`` of 0 are set to 0 and the rest rounded to 10 significant digits
    (below the fit's precision)."""
    m, gamma = fit.machine, fit.gamma
    n, K = m.delta_u.shape
    entries = np.argwhere(~fit.unconstrained)
    if not len(entries):
        return fit
    u, k = entries[:, 0], entries[:, 1]
    r0 = fit.delta_r[u, k]
    B = np.zeros((len(entries), n))
    B[np.arange(len(entries)), m.delta_u[u, k]] += gamma
    B[np.arange(len(entries)), u] -= 1.0
    # 1. absorbing nodes whose loops can all pay 0
    phi = np.zeros(n)
    fixed = np.zeros(n, dtype=bool)
    scale = tol * max(1.0, float(np.abs(r0).max(initial=0.0)))
    for w in np.flatnonzero(np.all(m.delta_u == np.arange(n)[:, None], axis=1)):
        loops = r0[u == w]
        if len(loops) and np.ptp(loops) <= scale:
            phi[w], fixed[w] = float(loops.mean()) / (1.0 - gamma), True
    r1 = r0 + B[:, fixed] @ phi[fixed]
    free = np.flatnonzero(~fixed)
    # 2.-4. fewest non-zero rewards, then the smallest L1
    rule = "absorbing loops 0, then fewest non-zero rewards, then smallest L1"
    part = sparse_l1(B[:, free], r1, tol=tol)
    if part is None:
        rule = "absorbing loops 0, then smallest L1 (too many vertices to find the fewest non-zero rewards)"
        part = l1_fit(B[:, free], r1, tol=tol)
        if part is None:  # pragma: no cover - the LP is always feasible and bounded
            return fit
    phi[free] = part
    delta_r = np.array(fit.delta_r, dtype=float)
    delta_r[u, k] = r0 + B @ phi
    delta_r[np.abs(delta_r) < tol] = 0.0
    delta_r = np.vectorize(lambda x: float(f"{x:.10g}"))(delta_r)  # drop solver noise (~1e-12)
    V = np.array(fit.V, dtype=float) - phi[None, :]
    note = "; ".join(x for x in (fit.note, f"canonical representative of the shaping class: {rule}") if x)
    return attrs.evolve(fit, delta_r=delta_r, V=V, machine=fit.machine.with_rewards(delta_r), note=note)
