"""Transition models for Gymnasium users (paper section 2.1: a labeled MDP): the exact model
of a tabular environment (:func:`tabular_mdp`, from the toy-text convention
``env.unwrapped.P[s][a] = [(probability, next state, reward, terminated), ...]``) and a
maximum-likelihood model of any environment with a discretiser, from the ``(s, a, s')``
steps a :class:`~rmtk.gym.Recording` counted (:func:`estimate_mdp`). Either gives what needs
a model: exact prefix tree policies, rewards (MaxEnt IRL, Algorithm 3) and product policies.

**Episode ends.** A labeled MDP has no terminal states. A toy-text transition that ends the
episode (``terminated``) leads into a state the agent then stays in: with
``terminal="absorbing"`` (the default) every state entered by such a transition loops on
itself under every action (FrozenLake's holes and goal are already written so), and a state
also entered by a transition that does not end the episode, from a state that is not itself
made absorbing, is an error (the model would be ambiguous); ``terminal="keep"`` takes ``P``
as it is. The rewards of ``P`` are not part of a labeled MDP and are dropped.

**What was never seen.** :func:`estimate_mdp` gives each (state, action) pair never tried in
the recording a self-loop (probability 1 of staying), names those pairs and the states never
visited at all in :class:`Estimate` (and a warning), and leaves the decision to the user:
record more episodes, or accept the self-loops.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import attrs
import numpy as np

from .._arrays import Csr
from ..errors import ModelError
from ..mdp.model import LabeledMDP
from .labels import Alphabet, check_labeler, names, quoted
from .recording import Recording


# ---------------------------------------------------------------------- labels of state indices
def _state_labels(
    labeler, n_states: int, propositions, states: Sequence[int] | None = None
) -> tuple[dict[int, int], tuple[str, ...]]:
    """``(labels, propositions)``: ``{state: proposition index}`` of the states (``labeler(s, {})``,
    the state index as the observation; or a sequence of names or indices, one per state).
    Without an alphabet (``propositions`` or ``labeler.propositions``), the names the labeler
    gives the states are collected, sorted: every state is visited anyway."""
    which = range(n_states) if states is None else states
    given = None
    if callable(labeler):
        check_labeler(labeler)
    else:
        given = list(labeler)
        if len(given) != n_states:
            raise ModelError(f"labels: {len(given)} entries for {n_states} states (one per state)")
    props = propositions if propositions is not None else getattr(labeler, "propositions", None)
    if props is None:
        props = _collected(labeler, given, which)
    alphabet = Alphabet(names(props))
    if given is None:
        out = {s: alphabet.index(labeler(s, {}), f"state {s}") for s in which}
    else:
        out = {
            s: (alphabet.index(given[s], f"state {s}") if isinstance(given[s], str) else int(given[s])) for s in which
        }
        bad = [s for s, k in out.items() if not 0 <= k < len(alphabet.propositions)]
        if bad:
            raise ModelError(
                f"labels: state {bad[0]} has label index {out[bad[0]]}, not in 0..{len(alphabet.propositions) - 1}"
            )
    return out, alphabet.propositions


def _collected(labeler, given, states) -> tuple[str, ...]:
    """The proposition names the labeler (or the list of labels) gives ``states``, sorted."""
    found = set()
    for s in states:
        label = labeler(s, {}) if given is None else given[s]
        if not isinstance(label, str):
            raise ModelError(
                f"state {s}: the labeler returned {label!r} ({type(label).__name__}); without propositions=[...] "
                "the labels must be proposition names (strings), collected from every state"
            )
        found.add(label)
    if not found:
        raise ModelError("the labels need their alphabet: no state was labelled; pass propositions=[...]")
    return tuple(sorted(found))


# ---------------------------------------------------------------------- the toy-text convention
def tabular_mdp(
    env,
    labeler,
    *,
    propositions=None,
    initial=None,
    gamma: float = 0.99,
    terminal: str = "absorbing",
    name: str | None = None,
) -> LabeledMDP:
    """The labeled MDP of a tabular Gymnasium environment (``Discrete`` observations and
    actions) whose ``env.unwrapped.P[s][a]`` lists ``(probability, next, reward, terminated)``
    (FrozenLake, CliffWalking, Taxi).

    Args:
        env: the environment (as ``gymnasium.make`` returns it; its wrappers are looked through).
        labeler: ``labeler(state, info) -> proposition name`` (called with ``info={}``; e.g. a
            :class:`~rmtk.gym.StateLabels`), or one proposition name or index per state.
        propositions: the alphabet (default ``labeler.propositions``, else the names the labeler
            gives the states, sorted: every state is labelled anyway; one string of
            whitespace-separated names is accepted: ``"a b c"``, while ``"abc"`` is one name).
        initial: the start distribution; default the environment's ``initial_state_distrib``
            (or ``isd``).
        terminal: ``"absorbing"`` or ``"keep"`` (module docstring).
        gamma, name: the MDP's discount and name (default: the environment's id).
    """
    base = getattr(env, "unwrapped", env)
    P = getattr(base, "P", None)
    where = f"tabular_mdp({_env_name(env)})"
    if not isinstance(P, dict):
        raise ModelError(
            f"{where}: the environment has no tabular model env.unwrapped.P (a dict P[s][a] = "
            "[(probability, next state, reward, terminated), ...]); estimate one from episodes with "
            "collect and estimate_mdp"
        )
    if terminal not in ("absorbing", "keep"):
        raise ModelError(f"{where}: terminal must be 'absorbing' or 'keep', not {terminal!r}")
    S = _discrete_size(base.observation_space, f"{where}: the observation space")
    A = _discrete_size(base.action_space, f"{where}: the action space")
    rows, cols, probs, ends = [], [], [], []
    for s in range(S):
        per_action = P.get(s)
        if per_action is None or len(per_action) != A:
            raise ModelError(
                f"{where}: P[{s}] must hold the {A} actions, got {'nothing' if per_action is None else len(per_action)}"
            )
        for a in range(A):
            for entry in per_action[a]:
                try:
                    p, nxt, _, done = entry
                except (TypeError, ValueError):
                    raise ModelError(
                        f"{where}: P[{s}][{a}] holds {entry!r}, not (probability, next state, reward, terminated)"
                    ) from None
                if not 0 <= int(nxt) < S:
                    raise ModelError(f"{where}: P[{s}][{a}] leads to state {nxt}, outside 0..{S - 1}")
                rows.append(s * A + a)
                cols.append(int(nxt))
                probs.append(float(p))
                ends.append(bool(done))
    rows_a, cols_a, probs_a, ends_a = (np.asarray(x) for x in (rows, cols, probs, ends))
    if terminal == "absorbing":
        positive = probs_a > 0
        absorbing = np.zeros(S, dtype=bool)
        absorbing[cols_a[positive & ends_a]] = True
        into = positive & ~ends_a & absorbing[cols_a] & ~absorbing[rows_a // A]
        if into.any():
            k = int(np.flatnonzero(into)[0])
            raise ModelError(
                f"{where}: state {cols_a[k]} ends the episode when entered by some transitions but not "
                f"from state {rows_a[k] // A} (action {rows_a[k] % A}); pass terminal='keep' to take P "
                "as it is"
            )
        keep = ~absorbing[rows_a // A]
        loops = np.repeat(np.flatnonzero(absorbing), A) * A + np.tile(np.arange(A), int(absorbing.sum()))
        rows_a = np.concatenate([rows_a[keep], loops])
        cols_a = np.concatenate([cols_a[keep], loops // A])
        probs_a = np.concatenate([probs_a[keep], np.ones(len(loops))])
    labels, props = _state_labels(labeler, S, propositions)
    if initial is None:
        initial = getattr(base, "initial_state_distrib", getattr(base, "isd", None))
        if initial is None:
            raise ModelError(f"{where}: the environment has no initial_state_distrib (or isd): pass initial=[...]")
    try:
        return LabeledMDP(
            states=[f"s{i}" for i in range(S)],
            actions=[f"a{i}" for i in range(A)],
            transitions=Csr.from_coo(probs_a, rows_a, cols_a, (S * A, S)),
            labels=[labels[s] for s in range(S)],
            propositions=props,
            initial=np.asarray(initial, float),
            gamma=gamma,
            name=name or _env_name(env),
        )
    except ModelError as exc:
        raise ModelError(f"{where}: {exc}") from None


def _discrete_size(space, what: str) -> int:
    n = getattr(space, "n", None)
    if n is None or int(getattr(space, "start", 0)) != 0:
        raise ModelError(f"{what} is {space}, not Discrete(n) starting at 0")
    return int(n)


def _env_name(env) -> str:
    spec = getattr(env, "spec", None)
    return getattr(spec, "id", None) or type(getattr(env, "unwrapped", env)).__name__


# ---------------------------------------------------------------------- a model from episodes
@attrs.frozen
class Estimate:
    """A maximum-likelihood model and what its data did not cover.

    Attributes:
        mdp: the labeled MDP: ``P(s'|s, a) = n(s, a, s') / n(s, a)``, a self-loop where
            ``n(s, a) = 0``; the start distribution of the recorded episodes.
        untried: ``(k, 2)`` array of the (state, action) pairs never tried (given self-loops).
        unvisited: the states never seen at all (no step from them, none into them).
        visits: ``visits[s, a] = n(s, a)``, the evidence behind each row.
    """

    mdp: LabeledMDP
    untried: np.ndarray = attrs.field(eq=False)
    unvisited: tuple[int, ...]
    visits: np.ndarray = attrs.field(eq=False, repr=False)

    def summary(self) -> str:
        S, A = self.visits.shape
        pairs = ", ".join(f"(s{s}, a{a})" for s, a in self.untried[:8].tolist())
        more = f" and {len(self.untried) - 8} more" if len(self.untried) > 8 else ""
        return (
            f"model {self.mdp.name}: {int(self.visits.sum())} steps; {len(self.untried)} of {S * A} "
            f"(state, action) pairs never tried (self-loops){': ' + pairs + more if pairs else ''}; "
            f"{len(self.unvisited)} states never visited"
            + (f": {' '.join(f's{s}' for s in self.unvisited[:12])}" if self.unvisited else "")
        )


def estimate_mdp(
    recording: Recording,
    labels: Callable | Sequence | None = None,
    *,
    propositions=None,
    gamma: float = 0.99,
    name: str | None = None,
    warn: bool = True,
) -> Estimate:
    """The maximum-likelihood labeled MDP of the ``(s, a, s')`` steps ``recording`` counted.

    ``labels``: how the states are labelled — ``labeler(state, {})`` (the state index as the
    observation, e.g. a :class:`~rmtk.gym.StateLabels`), or one name or index per state.
    Default: read from the recording (the last letter of a step's word is its state's label,
    by the prefix convention), which needs every state seen at some step and one label per
    state. ``warn``: warn when some pairs were never tried (:class:`Estimate` lists them).
    """
    if not isinstance(recording, Recording):
        raise ModelError(f"estimate_mdp needs a Recording (what collect returns), not {type(recording).__name__}")
    S, A = recording.n_states, recording.n_actions
    where = f"estimate_mdp({recording.name})"
    if not recording.move_counts.size:
        raise ModelError(f"{where}: the recording holds no (state, action, next state) steps")
    moves, counts = recording.moves, recording.move_counts
    visits = np.zeros((S, A), dtype=np.int64)
    np.add.at(visits, (moves[:, 0], moves[:, 1]), counts)
    rows = moves[:, 0] * A + moves[:, 1]
    probs = counts / visits[moves[:, 0], moves[:, 1]]
    untried = np.argwhere(visits == 0)
    loops = untried[:, 0] * A + untried[:, 1]
    kernel = Csr.from_coo(
        np.concatenate([probs, np.ones(len(loops))]),
        np.concatenate([rows, loops]),
        np.concatenate([moves[:, 2], untried[:, 0]]),
        (S * A, S),
    )
    seen = np.zeros(S, dtype=bool)
    seen[moves[:, 0]] = seen[moves[:, 2]] = True
    seen[recording.starts] = True
    if labels is None:
        label_of = _recorded_labels(recording, where)
        props = recording.propositions
    else:
        label_of, props = _state_labels(
            labels,
            S,
            propositions if propositions is not None else getattr(labels, "propositions", recording.propositions),
        )
        if props != recording.propositions:
            raise ModelError(
                f"{where}: the labels' propositions {quoted(props)} are not the recording's "
                f"{quoted(recording.propositions)}"
            )
    initial = np.zeros(S)
    initial[recording.starts] = recording.start_counts / recording.start_counts.sum()
    estimate = Estimate(
        LabeledMDP(
            states=[f"s{i}" for i in range(S)],
            actions=[f"a{i}" for i in range(A)],
            transitions=kernel,
            labels=[label_of[s] for s in range(S)],
            propositions=props,
            initial=initial,
            gamma=gamma,
            name=name or recording.name,
        ),
        untried,
        tuple(np.flatnonzero(~seen).tolist()),
        visits,
    )
    if warn and len(untried):
        warnings.warn(estimate.summary(), stacklevel=2)
    return estimate


def _recorded_labels(recording: Recording, where: str) -> dict[int, int]:
    """Each state's label read from the recording's words (the last letter of the word a
    state was counted under); an error names the states never counted or labelled twice."""
    S, A = recording.n_states, recording.n_actions
    node = recording.keys // (S * A)
    state = recording.keys // A % S
    letter = recording.trie.letter[node]
    pairs = np.unique(np.stack([state, letter], axis=1), axis=0)
    twice = pairs[np.flatnonzero(np.diff(pairs[:, 0]) == 0)]
    if len(twice):
        s = int(twice[0, 0])
        found = [recording.propositions[k] for k in pairs[pairs[:, 0] == s, 1]]
        raise ModelError(
            f"{where}: state {s} was recorded with the labels {quoted(found)}: the labels are not "
            "a function of the discretised state; pass labels="
        )
    out = dict(zip(pairs[:, 0].tolist(), pairs[:, 1].tolist()))
    missing = [s for s in range(S) if s not in out]
    if missing:
        raise ModelError(
            f"{where}: the recording has no step in state{'s' if len(missing) > 1 else ''} "
            f"{' '.join(map(str, missing[:12]))}{' ...' if len(missing) > 12 else ''}, so "
            "their labels are unknown; pass labels= (e.g. the labeler)"
        )
    return out


__all__ = ["Estimate", "estimate_mdp", "tabular_mdp"]
