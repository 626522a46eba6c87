"""Demonstrations: trajectories of MDP states and actions (paper section 5), and their
validation against an MDP.

A :class:`Demonstrations` holds ``N`` trajectories as two ``(N, T)`` integer arrays padded
with −1 after each trajectory's length: at step ``t`` the expert is in ``states[i, t]`` and
takes ``actions[i, t]``; the label word of step ``t`` is ``L(s_0) ... L(s_t)`` (docs/design/02-conventions.md,
"The prefix convention"). Labels are not stored: they are the MDP's; a file may carry them and
they are then checked against the MDP's labeling.

Optionally, ``rewards`` holds what each step's action earned, as in RL logs of
``(s, a, r, s')``: ``rewards[i, t]`` is paid by the reward machine on the label of the next
state ``s_{t+1}``, so it is evidence on (word ``L(s_0) … L(s_t)``, next letter
``L(s_{t+1})``); the last step's reward is used only where the next state is known, and NaN
means unknown (:mod:`rmtk.data.rewards` has the whole convention).

Labels recorded by a detector that errs (docs/design/15-label-noise.md) are kept when the data are
read for it: ``labels`` holds the recorded letter of every step (which may disagree with the
MDP's), ``detections`` a detector's probability of each proposition at every step.
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs
import numpy as np

from .._arrays import array_eq, frozen_array
from ..errors import DataError
from ..words import plural
from .rewards import first_infinite, nan_array_eq

PAD = -1
#: :func:`validate` checks steps against a dense table of the (s, a, s') triples when there
#: are at most this many (else a binary search in the MDP's sparse transitions).
DENSE_TRANSITIONS = 1 << 24


def _int_array(dtype):
    conv = frozen_array(dtype)

    def convert(v):
        a = conv(v)
        if a.ndim == 1:
            a = conv(a[None, :])
        return a

    return convert


def _labels(value):
    if value is None:
        return None
    arr = np.array(value, copy=True)
    if not np.issubdtype(arr.dtype, np.integer):
        raise DataError(f"recorded labels must be integer proposition indices, got dtype {arr.dtype}")
    arr = arr.astype(np.int32)
    if arr.ndim == 1:
        arr = arr[None, :]
    arr.setflags(write=False)
    return arr


def _detections(value):
    if value is None:
        return None
    try:
        arr = np.array(value, dtype=np.float32, copy=True)
    except (TypeError, ValueError):
        raise DataError("detections must be probabilities (an (N, T, K) float array, nan after each end)") from None
    if arr.ndim == 2:
        arr = arr[None, :, :]
    arr.setflags(write=False)
    return arr


def _rewards(value):
    if value is None:
        return None
    try:
        arr = np.array(value, dtype=np.float64, copy=True)
    except (TypeError, ValueError):
        raise DataError("rewards must be numbers (an (N, T) float array, nan for unknown)") from None
    if arr.ndim == 1:
        arr = arr[None, :]
    arr.setflags(write=False)
    return arr


@attrs.frozen
class Demonstrations:
    """``N`` trajectories of (state, action) indices, padded with −1.

    Attributes:
        states: ``(N, T)`` state indices.
        actions: ``(N, T)`` action indices.
        lengths: ``(N,)`` number of steps of each trajectory (≥ 1).
        rewards: ``(N, T)`` float64 rewards, NaN after each trajectory's end, or None when
            the data have no rewards. ``rewards[i, t]`` is what action ``actions[i, t]``
            earned: the machine pays it on the label of ``states[i, t + 1]`` (the next
            row's state), so it is evidence on (label word up to step ``t``, label of step
            ``t + 1``). The last step's reward (no next row) is kept but used only where
            the next state is known; NaN is "unknown" anywhere; ±∞ is refused.
        labels: ``(N, T)`` int32 recorded labels (−1 after each end), or None: the labels are
            the MDP's. Kept only for data read as recorded by a detector that errs; they may
            disagree with the MDP's.
        detections: ``(N, T, K)`` float32: a detector's probability of each proposition at each
            step (NaN after each end), or None.
    """

    states: np.ndarray = attrs.field(converter=_int_array(np.int32), eq=array_eq, repr=False)
    actions: np.ndarray = attrs.field(converter=_int_array(np.int32), eq=array_eq, repr=False)
    lengths: np.ndarray = attrs.field(converter=frozen_array(np.int64), eq=array_eq, repr=False)
    rewards: np.ndarray | None = attrs.field(
        default=None, converter=_rewards, eq=attrs.cmp_using(eq=nan_array_eq), repr=False, kw_only=True
    )
    labels: np.ndarray | None = attrs.field(default=None, converter=_labels, eq=array_eq, repr=False, kw_only=True)
    detections: np.ndarray | None = attrs.field(
        default=None, converter=_detections, eq=attrs.cmp_using(eq=nan_array_eq), repr=False, kw_only=True
    )

    def __attrs_post_init__(self) -> None:
        if self.states.shape != self.actions.shape:
            raise DataError(f"states {self.states.shape} and actions {self.actions.shape} differ in shape")
        N, T = self.states.shape
        if self.lengths.shape != (N,):
            raise DataError(f"{self.lengths.size} lengths for {N} trajectories")
        bad = np.flatnonzero((self.lengths < 1) | (self.lengths > T))
        if bad.size:
            i = int(bad[0])
            what = "is empty" if self.lengths[i] < 1 else f"has length {self.lengths[i]} > {T} columns"
            raise DataError(f"trajectory {i} {what}")
        inside = np.arange(T)[None, :] < self.lengths[:, None]
        full = bool(inside.all())
        for name, arr in (("state", self.states), ("action", self.actions)):
            neg = inside & (arr < 0)
            if neg.any():
                i, t = np.argwhere(neg)[0]
                raise DataError(f"trajectory {i}, step {t}: missing {name} (negative index {arr[i, t]})")
            pad = None if full else ~inside & (arr != PAD)
            if pad is not None and pad.any():
                i, t = np.argwhere(pad)[0]
                raise DataError(
                    f"trajectory {i}, step {t}: {name} after the trajectory's end (length {self.lengths[i]})"
                )
        if self.rewards is not None:
            self._check_rewards(inside, full)
        if self.labels is not None or self.detections is not None:
            self._check_recorded(inside)

    def _check_rewards(self, inside: np.ndarray, full: bool) -> None:
        r = self.rewards
        assert r is not None
        if r.shape != self.states.shape:
            raise DataError(f"rewards {r.shape} and states {self.states.shape} differ in shape")
        k = first_infinite(r.ravel())
        if k is not None:
            i, t = divmod(k, r.shape[1])
            raise DataError(f"trajectory {i}, step {t}: reward {r[i, t]} is infinite; a reward is finite or nan")
        if not full:
            after = ~inside & ~np.isnan(r)
            if after.any():
                i, t = np.argwhere(after)[0]
                raise DataError(
                    f"trajectory {i}, step {t}: reward after the trajectory's end (length {self.lengths[i]}; it "
                    "must be nan)"
                )

    def _check_recorded(self, inside: np.ndarray) -> None:
        shape = self.states.shape
        if self.labels is not None:
            if self.labels.shape != shape:
                raise DataError(f"recorded labels {self.labels.shape} and states {shape} differ in shape")
            bad = inside & (self.labels < 0)
            if bad.any():
                i, t = np.argwhere(bad)[0]
                raise DataError(
                    f"trajectory {i}, step {t}: missing recorded label (negative index {self.labels[i, t]})"
                )
        if self.detections is not None:
            d = self.detections
            if d.ndim != 3 or d.shape[:2] != shape:
                raise DataError(f"detections {d.shape} do not match the states {shape} (expected (N, T, K))")
            bad = inside & ~np.all((d >= 0) & (d <= 1), axis=2)
            if bad.any():
                i, t = np.argwhere(bad)[0]
                raise DataError(
                    f"trajectory {i}, step {t}: detections {d[i, t].tolist()} are not probabilities in [0, 1]"
                )

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_lists(cls, trajectories) -> Demonstrations:
        """From ``[[(s, a), (s, a), ...], ...]`` index pairs (ragged lengths allowed), or
        ``(s, a, r)`` triples with rewards (every step of every trajectory then has one)."""
        trajectories = [list(tr) for tr in trajectories]
        N = len(trajectories)
        T = max((len(tr) for tr in trajectories), default=0)
        widths = {len(step) for tr in trajectories for step in tr}
        if len(widths) > 1 or not widths <= {2, 3}:
            raise DataError(
                f"steps are (state, action) pairs or (state, action, reward) triples, not a mix of "
                f"{sorted(widths)} values"
            )
        width = widths.pop() if widths else 2
        states = np.full((N, max(T, 1)), PAD, dtype=np.int32)
        actions = np.full((N, max(T, 1)), PAD, dtype=np.int32)
        rewards = np.full((N, max(T, 1)), np.nan) if width == 3 else None
        for i, tr in enumerate(trajectories):
            if tr:
                arr = np.asarray(tr, dtype=np.float64 if width == 3 else np.int64).reshape(-1, width)
                states[i, : len(tr)], actions[i, : len(tr)] = arr[:, 0], arr[:, 1]
                if rewards is not None:
                    rewards[i, : len(tr)] = arr[:, 2]
        return cls(states, actions, [len(tr) for tr in trajectories], rewards=rewards)

    @classmethod
    def full(cls, states, actions, rewards=None) -> Demonstrations:
        """From ``(N, T)`` arrays without padding (every trajectory has T steps)."""
        states = np.asarray(states)
        lengths = np.full(states.shape[0] if states.ndim > 1 else 1, states.shape[-1])
        return cls(states, actions, lengths, rewards=rewards)

    def with_rewards(self, rewards) -> Demonstrations:
        """The same trajectories with ``rewards`` (``(N, T)``, NaN after each end; None drops them)."""
        return attrs.evolve(self, rewards=rewards)

    # ------------------------------------------------------------------ queries
    @property
    def n_trajectories(self) -> int:
        return self.states.shape[0]

    @property
    def horizon(self) -> int:
        return self.states.shape[1]

    @property
    def n_steps(self) -> int:
        return int(self.lengths.sum())

    def __len__(self) -> int:
        return self.n_trajectories

    def __getitem__(self, index) -> Demonstrations:
        """A subset of trajectories (slice, index array or boolean mask)."""
        if isinstance(index, (int, np.integer)):
            index = [int(index)]
        lengths = self.lengths[index]
        T = int(lengths.max()) if len(lengths) else 1
        rewards = None if self.rewards is None else self.rewards[index, :T]
        labels = None if self.labels is None else self.labels[index, :T]
        detections = None if self.detections is None else self.detections[index, :T]
        return Demonstrations(
            self.states[index, :T],
            self.actions[index, :T],
            lengths,
            rewards=rewards,
            labels=labels,
            detections=detections,
        )

    def chunks(self, size: int) -> Iterator[Demonstrations]:
        """Consecutive blocks of at most ``size`` trajectories."""
        for lo in range(0, self.n_trajectories, size):
            yield self[lo : lo + size]

    def split(self, n_test: int, *, seed: int) -> tuple[Demonstrations, Demonstrations]:
        """A seeded random (train, test) split with ``n_test`` test trajectories."""
        if not 0 <= n_test <= self.n_trajectories:
            raise DataError(f"cannot hold out {n_test} of {self.n_trajectories} trajectories")
        perm = np.random.default_rng(seed).permutation(self.n_trajectories)
        return self[np.sort(perm[n_test:])], self[np.sort(perm[:n_test])]

    def mask(self) -> np.ndarray:
        """``(N, T)`` boolean: step ``t`` is inside trajectory ``i``."""
        return np.arange(self.horizon)[None, :] < self.lengths[:, None]

    def summary(self) -> str:
        lo, hi = int(self.lengths.min()), int(self.lengths.max())
        span = f"{lo}" if lo == hi else f"{lo}-{hi}"
        rewards = "" if self.rewards is None else ", with rewards"
        recorded = (
            ", with a detector's probabilities"
            if self.detections is not None
            else ", with recorded labels"
            if self.labels is not None
            else ""
        )
        return (
            f"{plural(self.n_trajectories, 'trajectory', 'trajectories')} of {span} step{'s' if hi != 1 else ''} "
            f"({plural(self.n_steps, 'step')}{rewards}{recorded})"
        )


# ====================================================================== validation
def _show_id(tid) -> str:
    """A trajectory id as written in messages: bare when simple, quoted otherwise."""
    s = str(tid)
    return s if s and all(ch.isalnum() or ch in "_.-" for ch in s) else repr(s)


def _transition_keys(mdp) -> np.ndarray:
    """Sorted ``(s·A + a)·S + s'`` keys of every positive-probability transition."""
    T = mdp.kernel
    S = mdp.n_states
    rows = np.repeat(np.arange(T.shape[0], dtype=np.int64), np.diff(T.indptr))
    keys = rows * S + T.indices.astype(np.int64)
    # the MDP's CSR is canonical (sorted indices, no explicit zeros), so keys are sorted;
    # sort anyway if some caller built one by hand
    if keys.size > 1 and np.any(keys[1:] < keys[:-1]):
        keys = np.sort(keys)
    return keys


def out_of_range(kind: str, value: int, mdp) -> str:
    """What is wrong with a ``state``, ``action`` or ``label`` index outside the MDP's range."""
    n, plural = {
        "state": (mdp.n_states, "states"),
        "action": (mdp.n_actions, "actions"),
        "label": (mdp.n_propositions, "propositions"),
    }[kind]
    return f"{kind} index {value} is out of range (the MDP {mdp.name!r} has {plural} 0..{n - 1})"


def validate(
    demos: Demonstrations,
    mdp,
    *,
    labels=None,
    source: str = "<demonstrations>",
    trajectory_ids=None,
    lines=None,
    rows=None,
    agree: bool = True,
) -> None:
    """Check ``demos`` against ``mdp``; raise :class:`DataError` on the first bad step.

    Checked, for every step inside a trajectory: the state and action indices are in range;
    each trajectory starts where the MDP can start, ``μ0(s_0) > 0``; the MDP can make each
    step, ``P(s_{t+1} | s_t, a_t) > 0`` (all steps at once with one ``np.searchsorted`` over
    the MDP's sparse transitions); and, when ``labels`` (an
    ``(N, T)`` array of proposition indices, −1 padded) is given, ``labels[i, t]`` equals
    the MDP's label of ``states[i, t]`` (with ``agree=False``, labels recorded by a detector that
    errs: only in range). The demonstrations' own recorded labels are range-checked, and their
    detections must have one column per proposition.

    The error names the first bad record in (trajectory, step) order and says how many
    more steps are bad. A bad transition is reported at the step whose action fails.

    Args:
        source: the file name (or other origin) the messages start with.
        trajectory_ids: names of the trajectories in messages (default: their indices).
        lines: ``(N, T)`` line numbers of the records in ``source``, for messages
            (``source:line: ...``).
        rows: instead of ``lines``, row numbers (``source: row r: ...``); anything indexable
            by ``[i, t]``.
    """
    S, A, P = mdp.n_states, mdp.n_actions, mdp.n_propositions
    N, T = demos.states.shape
    inside = demos.mask()
    states, actions = demos.states, demos.actions  # int32, non-negative inside (Demonstrations checks)

    bad_state = inside & (states >= S)
    bad_action = inside & (actions >= A)

    bad_label_range = np.zeros((N, T), dtype=bool)
    bad_label = np.zeros((N, T), dtype=bool)
    if demos.detections is not None and demos.detections.shape[2] != P:
        raise DataError(
            f"{source}: detections have {demos.detections.shape[2]} columns; the MDP {mdp.name!r} has {P} propositions"
        )
    if labels is None and demos.labels is not None:
        labels, agree = demos.labels, False
    if labels is not None:
        labels = np.asarray(labels)
        if labels.shape != (N, T):
            raise DataError(f"{source}: labels have shape {labels.shape}, expected {(N, T)} like the states")
        if not np.issubdtype(labels.dtype, np.integer):
            raise DataError(f"{source}: labels have dtype {labels.dtype}, expected integer proposition indices")
        labels = labels.astype(np.int64)
        bad_label_range = inside & ((labels < 0) | (labels >= P))
        ok = inside & ~bad_state & ~bad_label_range
        expected = np.full((N, T), -1, dtype=np.int64)
        expected[ok] = mdp.labels[states[ok]]
        bad_label = ok & (labels != expected) if agree else bad_label

    # the first state: one the start distribution μ0 can draw
    bad_start = np.zeros((N, T), dtype=bool)
    if T:
        first = inside[:, 0] & ~bad_state[:, 0]
        bad_start[:, 0] = first & ~(np.asarray(mdp.initial)[np.where(first, states[:, 0], 0)] > 0)

    # transitions s_t --a_t--> s_{t+1}, reported at step t
    bad_move = np.zeros((N, T), dtype=bool)
    if T > 1:
        step_ok = inside & ~bad_state & ~bad_action
        pair = step_ok[:, :-1] & inside[:, 1:] & ~bad_state[:, 1:]
        keys = _transition_keys(mdp)
        if S * A * S <= DENSE_TRANSITIONS:  # a lookup table of every (s, a, s'): one gather, in int32
            allowed = np.zeros(S * A * S, dtype=bool)
            allowed[keys] = True
            key = states[:, :-1] * np.int32(A)
            key += actions[:, :-1]
            key *= np.int32(S)
            key += states[:, 1:]
            key[~pair] = 0
            bad_move[:, :-1] = pair & ~allowed[key]
        else:
            ii, tt = np.nonzero(pair)
            s0, a0, s1 = states[ii, tt].astype(np.int64), actions[ii, tt].astype(np.int64), states[ii, tt + 1]
            key = (s0 * A + a0) * S + s1
            pos = np.searchsorted(keys, key)
            found = pos < keys.size
            found[found] = keys[pos[found]] == key[found]
            bad_move[ii[~found], tt[~found]] = True

    bad = bad_state | bad_action | bad_label_range | bad_label | bad_start | bad_move
    if not bad.any():
        return
    where = np.argwhere(bad)  # row-major: (trajectory, step) order
    i, t = (int(x) for x in where[0])
    more = len(where) - 1
    tid = trajectory_ids[i] if trajectory_ids is not None else i
    loc = (
        f"{source}:{int(lines[i, t])}"
        if lines is not None
        else f"{source}: row {int(rows[i, t])}"
        if rows is not None
        else source
    )
    head = f"{loc}: trajectory {_show_id(tid)}, step {t}"
    s, a = int(states[i, t]), int(actions[i, t])
    if bad_state[i, t]:
        what = out_of_range("state", s, mdp)
    elif bad_action[i, t]:
        what = out_of_range("action", a, mdp)
    elif bad_label_range[i, t]:
        lab = int(labels[i, t])
        what = f"missing label (index {lab})" if lab < 0 else out_of_range("label", lab, mdp)
    elif bad_label[i, t]:
        what = (
            f"label {mdp.propositions[labels[i, t]]!r} disagrees with the MDP, which labels "
            f"state {mdp.states[s]!r} with {mdp.propositions[mdp.labels[s]]!r}"
        )
    elif bad_start[i, t]:
        starts = [mdp.states[k] for k in np.flatnonzero(np.asarray(mdp.initial) > 0)[:5]]
        n_starts = int(np.count_nonzero(np.asarray(mdp.initial) > 0))
        shown = ", ".join(map(repr, starts)) + (f" and {n_starts - 5} more" if n_starts > 5 else "")
        what = (
            f"the trajectory starts in state {mdp.states[s]!r}, where the MDP cannot start (start "
            f"probability 0; its start state{'s are' if n_starts > 1 else ' is'} {shown})"
        )
    else:
        s2 = int(states[i, t + 1])
        what = (
            f"the MDP cannot move from state {mdp.states[s]!r} to {mdp.states[s2]!r} "
            f"with action {mdp.actions[a]!r} (probability 0)"
        )
    if more:
        what += f"; {more} more bad step{'s' if more > 1 else ''} after this one"
    if bad_label[i, t]:
        what += " (labels recorded by a detector that errs are read with labels='keep': rmtk learn --label-noise)"
    raise DataError(f"{head}: {what}")
