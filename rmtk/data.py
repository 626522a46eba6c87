"""Demonstrations: trajectories of MDP states and actions (paper section 5).

A :class:`Demonstrations` holds ``N`` trajectories as two ``(N, T)`` integer arrays padded
with −1 after each trajectory's length: at step ``t`` the expert is in ``states[i, t]`` and
takes ``actions[i, t]``; the label word of step ``t`` is ``L(s_0) ... L(s_t)`` (docs/design.md,
"Prefix convention"). Labels are not stored: they are the MDP's; a file may carry them and
they are then checked against the MDP's labeling.
"""
from __future__ import annotations

import contextlib
import csv
import gc
import itertools
import os
from typing import Iterator

import attrs
import numpy as np

from ._arrays import array_eq, frozen_array
from .errors import DataError

PAD = -1


def _int_array(dtype):
    conv = frozen_array(dtype)

    def convert(v):
        a = conv(v)
        if a.ndim == 1:
            a = conv(a[None, :])
        return a

    return convert


@attrs.frozen
class Demonstrations:
    """``N`` trajectories of (state, action) indices, padded with −1.

    Attributes:
        states: ``(N, T)`` state indices.
        actions: ``(N, T)`` action indices.
        lengths: ``(N,)`` number of steps of each trajectory (≥ 1).
    """

    states: np.ndarray = attrs.field(converter=_int_array(np.int32), eq=array_eq, repr=False)
    actions: np.ndarray = attrs.field(converter=_int_array(np.int32), eq=array_eq, repr=False)
    lengths: np.ndarray = attrs.field(converter=frozen_array(np.int64), eq=array_eq, repr=False)

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
        for name, arr in (("state", self.states), ("action", self.actions)):
            neg = np.argwhere(inside & (arr < 0))
            if neg.size:
                i, t = neg[0]
                raise DataError(f"trajectory {i}, step {t}: missing {name} (negative index {arr[i, t]})")
            pad = np.argwhere(~inside & (arr != PAD))
            if pad.size:
                i, t = pad[0]
                raise DataError(f"trajectory {i}, step {t}: {name} after the trajectory's end (length {self.lengths[i]})")

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_lists(cls, trajectories) -> "Demonstrations":
        """From ``[[(s, a), (s, a), ...], ...]`` index pairs (ragged lengths allowed)."""
        trajectories = [list(tr) for tr in trajectories]
        N = len(trajectories)
        T = max((len(tr) for tr in trajectories), default=0)
        states = np.full((N, max(T, 1)), PAD, dtype=np.int32)
        actions = np.full((N, max(T, 1)), PAD, dtype=np.int32)
        for i, tr in enumerate(trajectories):
            if tr:
                arr = np.asarray(tr, dtype=np.int64).reshape(-1, 2)
                states[i, : len(tr)], actions[i, : len(tr)] = arr[:, 0], arr[:, 1]
        return cls(states, actions, [len(tr) for tr in trajectories])

    @classmethod
    def full(cls, states, actions) -> "Demonstrations":
        """From ``(N, T)`` arrays without padding (every trajectory has T steps)."""
        states = np.asarray(states)
        return cls(states, actions, np.full(states.shape[0] if states.ndim > 1 else 1, states.shape[-1]))

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

    def __getitem__(self, index) -> "Demonstrations":
        """A subset of trajectories (slice, index array or boolean mask)."""
        if isinstance(index, (int, np.integer)):
            index = [int(index)]
        lengths = self.lengths[index]
        T = int(lengths.max()) if len(lengths) else 1
        return Demonstrations(self.states[index, :T], self.actions[index, :T], lengths)

    def chunks(self, size: int) -> Iterator["Demonstrations"]:
        """Consecutive blocks of at most ``size`` trajectories."""
        for lo in range(0, self.n_trajectories, size):
            yield self[lo : lo + size]

    def split(self, n_test: int, *, seed: int) -> tuple["Demonstrations", "Demonstrations"]:
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
        return f"{self.n_trajectories} trajectories of {span} steps ({self.n_steps} steps)"


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


def validate(
    demos: Demonstrations,
    mdp,
    *,
    labels=None,
    source: str = "<demonstrations>",
    trajectory_ids=None,
    lines=None,
) -> None:
    """Check ``demos`` against ``mdp``; raise :class:`DataError` on the first bad step.

    Checked, for every step inside a trajectory: the state and action indices are in range;
    the MDP can make each step, ``P(s_{t+1} | s_t, a_t) > 0`` (all steps at once with one
    ``np.searchsorted`` over the MDP's sparse transitions); and, when ``labels`` (an
    ``(N, T)`` array of proposition indices, −1 padded) is given, ``labels[i, t]`` equals
    the MDP's label of ``states[i, t]``.

    The error names the first bad record in (trajectory, step) order and says how many
    more steps are bad. A bad transition is reported at the step whose action fails.

    Args:
        source: the file name (or other origin) the messages start with.
        trajectory_ids: names of the trajectories in messages (default: their indices).
        lines: ``(N, T)`` line numbers of the records in ``source``, for messages.
    """
    S, A, P = mdp.n_states, mdp.n_actions, mdp.n_propositions
    N, T = demos.states.shape
    inside = demos.mask()
    states = demos.states.astype(np.int64)
    actions = demos.actions.astype(np.int64)

    bad_state = inside & (states >= S)
    bad_action = inside & (actions >= A)

    bad_label_range = np.zeros((N, T), dtype=bool)
    bad_label = np.zeros((N, T), dtype=bool)
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
        bad_label = ok & (labels != expected)

    # transitions s_t --a_t--> s_{t+1}, reported at step t
    bad_move = np.zeros((N, T), dtype=bool)
    if T > 1:
        step_ok = inside & ~bad_state & ~bad_action
        pair = step_ok[:, :-1] & inside[:, 1:] & ~bad_state[:, 1:]
        ii, tt = np.nonzero(pair)
        if ii.size:
            key = (states[ii, tt] * A + actions[ii, tt]) * S + states[ii, tt + 1]
            keys = _transition_keys(mdp)
            pos = np.searchsorted(keys, key)
            found = pos < keys.size
            found[found] = keys[pos[found]] == key[found]
            bad_move[ii[~found], tt[~found]] = True

    bad = bad_state | bad_action | bad_label_range | bad_label | bad_move
    if not bad.any():
        return
    where = np.argwhere(bad)  # row-major: (trajectory, step) order
    i, t = (int(x) for x in where[0])
    more = len(where) - 1
    tid = trajectory_ids[i] if trajectory_ids is not None else i
    loc = f"{source}:{int(lines[i, t])}" if lines is not None else source
    head = f"{loc}: trajectory {_show_id(tid)}, step {t}"
    s, a = int(states[i, t]), int(actions[i, t])
    if bad_state[i, t]:
        what = f"state index {s} is out of range (the MDP {mdp.name!r} has states 0..{S - 1})"
    elif bad_action[i, t]:
        what = f"action index {a} is out of range (the MDP {mdp.name!r} has actions 0..{A - 1})"
    elif bad_label_range[i, t]:
        lab = int(labels[i, t])
        what = (f"missing label (index {lab})" if lab < 0 else
                f"label index {lab} is out of range (the MDP {mdp.name!r} has propositions 0..{P - 1})")
    elif bad_label[i, t]:
        what = (f"label {mdp.propositions[labels[i, t]]!r} disagrees with the MDP, which labels "
                f"state {mdp.states[s]!r} with {mdp.propositions[mdp.labels[s]]!r}")
    else:
        s2 = int(states[i, t + 1])
        what = (f"the MDP cannot move from state {mdp.states[s]!r} to {mdp.states[s2]!r} "
                f"with action {mdp.actions[a]!r} (probability 0)")
    if more:
        what += f"; {more} more bad step{'s' if more > 1 else ''} after this one"
    raise DataError(f"{head}: {what}")


# ====================================================================== files
#: Supported file extensions → format name.
FORMATS = {".csv": "CSV", ".npz": "NPZ"}

CSV_COLUMNS = ("trajectory", "step", "state", "action", "label")
_CSV_REQUIRED = CSV_COLUMNS[:4]


def _check_writable(path, overwrite: bool) -> None:
    if not overwrite and os.path.exists(path):
        raise DataError(f"{path}: the file exists; pass --force (command line) or overwrite=True to replace it")


def _open_write(path, overwrite: bool, **kw):
    """Open for writing; exclusive creation unless ``overwrite``."""
    mode = ("w" if overwrite else "x") + ("b" if "newline" not in kw else "")
    try:
        return open(path, mode, **kw)
    except FileExistsError:
        raise DataError(f"{path}: the file exists; pass --force (command line) or overwrite=True to replace it") from None
    except OSError as e:
        raise DataError(f"{path}: cannot write: {e.strerror or e}") from None


def _read_error(path, e: OSError) -> DataError:
    if isinstance(e, FileNotFoundError):
        return DataError(f"{path}: no such file")
    if isinstance(e, IsADirectoryError):
        return DataError(f"{path}: is a directory, not a file")
    return DataError(f"{path}: cannot read: {e.strerror or e}")


# ---------------------------------------------------------------------- CSV
def save_csv(demos: Demonstrations, path, mdp, *, overwrite: bool = False, names: bool = True) -> None:
    """Write ``demos`` as CSV: a header ``trajectory,step,state,action,label`` and one row
    per step. Values are names (``names=True``) or indices; labels are the MDP's.

    Trajectories are numbered ``0..N-1``. The demonstrations are validated against ``mdp``
    first, so that the file loads back. Raises :class:`DataError` if ``path`` exists and
    ``overwrite`` is false.
    """
    _check_writable(path, overwrite)
    validate(demos, mdp, source=str(path))
    ii, tt = np.nonzero(demos.mask())
    s = demos.states[ii, tt]
    a = demos.actions[ii, tt]
    lab = np.asarray(mdp.labels)[s]
    if names:
        s_col = np.asarray(mdp.states, dtype=object)[s].tolist()
        a_col = np.asarray(mdp.actions, dtype=object)[a].tolist()
        l_col = np.asarray(mdp.propositions, dtype=object)[lab].tolist()
    else:
        s_col, a_col, l_col = s.tolist(), a.tolist(), lab.tolist()
    with _open_write(path, overwrite, newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(CSV_COLUMNS)
        w.writerows(zip(ii.tolist(), tt.tolist(), s_col, a_col, l_col))


@contextlib.contextmanager
def _no_gc():
    """Pause the cyclic garbage collector: building millions of small lists (CSV rows)
    otherwise triggers it over and over, which is most of the cost of reading."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _read_rows(path, src: str) -> tuple[list[list[str]], np.ndarray]:
    """All CSV records and the (first) line number of each."""
    try:
        f = open(path, newline="", encoding="utf-8-sig")
    except OSError as e:
        raise _read_error(src, e) from None
    with f:
        reader = csv.reader(f, skipinitialspace=True)
        try:
            rows = list(reader)
            if reader.line_num == len(rows):  # one record per line (no quoted newlines)
                return rows, np.arange(1, len(rows) + 1, dtype=np.int64)
            f.seek(0)
            reader = csv.reader(f, skipinitialspace=True)
            rows, lines, prev = [], [], 0
            for row in reader:
                rows.append(row)
                lines.append(prev + 1)
                prev = reader.line_num
            return rows, np.asarray(lines, dtype=np.int64)
        except csv.Error as e:
            raise DataError(f"{src}:{reader.line_num}: malformed CSV: {e}") from None
        except UnicodeDecodeError:
            raise DataError(f"{src}: not a UTF-8 text file") from None


def _naturals_fast(values) -> np.ndarray:
    """Vectorised parse of plain decimal numbers (ASCII digits only, at most 18);
    −1 where a value is anything else (the caller retries those)."""
    n = len(values)
    arr = np.array(values, dtype=str) if n else np.zeros(0, dtype="<U1")
    width = arr.dtype.itemsize // 4
    if width > 18 or width == 0:
        return np.full(n, -1, dtype=np.int64)
    codes = arr.view(np.uint32).reshape(n, width)
    digit = (codes >= 48) & (codes <= 57)
    pad = codes == 0
    # digits first, then only NUL padding (numpy pads short strings at the end)
    ok = (digit | pad).all(axis=1) & digit[:, 0]
    if width > 1:
        ok &= ~(pad[:, :-1] & digit[:, 1:]).any(axis=1)
    out = np.zeros(n, dtype=np.int64)
    d = codes.astype(np.int64) - 48
    for j in range(width):
        out = np.where(digit[:, j], out * 10 + d[:, j], out)
    out[~ok] = -1
    return out


def _parse_naturals(values, idx: np.ndarray | None = None) -> np.ndarray:
    """Non-negative decimal integers among ``values[idx]`` (surrounding spaces allowed);
    −1 where a value is not one."""
    sub = values if idx is None else [values[j] for j in idx.tolist()]
    out = _naturals_fast(sub)
    for k in np.flatnonzero(out < 0).tolist():
        v = sub[k].strip()
        if v.isascii() and v.isdigit():
            out[k] = int(v)
    return out


def _lookup(values, names, kind: str, kinds: str, src: str, lines: np.ndarray) -> np.ndarray:
    """Indices of a column whose values are names (which win) or indices ``0..n-1``."""
    n = len(names)
    table = {name: i for i, name in enumerate(names)}
    get = table.get
    out = np.fromiter(map(get, values, itertools.repeat(-1)), dtype=np.int64, count=len(values))
    miss = np.flatnonzero(out < 0)
    if miss.size:
        fixed = _naturals_fast([values[j] for j in miss.tolist()])
        fixed[fixed >= n] = -1
        for k in np.flatnonzero(fixed < 0).tolist():
            v = values[miss[k]].strip()
            if v in table:
                fixed[k] = table[v]
            elif v.isascii() and v.isdigit() and int(v) < n:
                fixed[k] = int(v)
        out[miss] = fixed
    bad = np.flatnonzero(out < 0)
    if bad.size:
        j = int(bad[0])
        v = values[j]
        more = f"; {bad.size - 1} more bad {kind} value{'s' if bad.size > 2 else ''} below" if bad.size > 1 else ""
        if not v.strip():
            raise DataError(f"{src}:{lines[j]}: empty {kind} field{more}")
        raise DataError(f"{src}:{lines[j]}: unknown {kind} {v!r} (not {kinds} nor an index 0..{n - 1}){more}")
    return out


def load_csv(path, mdp) -> Demonstrations:
    """Read demonstrations from a CSV file and validate them against ``mdp``.

    The first (non-blank) line is a header naming the columns ``trajectory``, ``step``,
    ``state``, ``action`` and optionally ``label``, in any order (case-insensitive); other
    columns are refused. ``state``, ``action`` and ``label`` values are names or indices
    (a known name wins over an index). Trajectory ids are any strings; trajectories keep
    the order of their first row. Rows of one trajectory need not be contiguous nor
    sorted: they are grouped by id and ordered by ``step``, whose values must then be
    exactly ``0, 1, 2, ...`` (no gap, no duplicate). Blank lines are skipped; any other
    bad line raises :class:`DataError` naming the file and the line.
    """
    with _no_gc():
        return _load_csv(path, mdp)


def _load_csv(path, mdp) -> Demonstrations:
    src = str(path)
    rows, lines = _read_rows(path, src)
    nonblank = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    keep = np.flatnonzero(nonblank > 0)
    if keep.size == 0:
        raise DataError(f"{src}: empty file; expected a header line {','.join(_CSV_REQUIRED)}[,label] and one row per step")
    header_line = int(lines[keep[0]])
    header = [h.strip().lower() for h in rows[keep[0]]]
    expected_hdr = f"{','.join(_CSV_REQUIRED)}[,label]"
    for k, h in enumerate(header):
        if h not in CSV_COLUMNS:
            hint = (" (the first line must be a header: " + expected_hdr + ")"
                    if header[0].strip().isdigit() else "")
            raise DataError(
                f"{src}:{header_line}: unknown column {rows[keep[0]][k]!r} in the header; the columns are "
                f"trajectory, step, state, action and optionally label{hint}"
            )
        if h in header[:k]:
            raise DataError(f"{src}:{header_line}: column {h!r} appears twice in the header")
    missing = [c for c in _CSV_REQUIRED if c not in header]
    if missing:
        raise DataError(
            f"{src}:{header_line}: missing column{'s' if len(missing) > 1 else ''} "
            f"{', '.join(map(repr, missing))} in the header (found: {','.join(header)}; expected {expected_hdr})"
        )
    ncol = len(header)
    data_idx = keep[1:]
    if data_idx.size == 0:
        raise DataError(f"{src}: no steps after the header line")
    lens = nonblank[data_idx]
    wrong = np.flatnonzero(lens != ncol)
    if wrong.size:
        j = int(data_idx[wrong[0]])
        raise DataError(f"{src}:{lines[j]}: {lens[wrong[0]]} field{'s' if lens[wrong[0]] != 1 else ''}, expected {ncol} ({','.join(header)})")
    lines = lines[data_idx]
    data = rows if data_idx.size == len(rows) - 1 and keep[0] == 0 else None
    if data is not None:
        cols = list(zip(*data[1:]))
    else:
        cols = list(zip(*(rows[j] for j in data_idx.tolist())))
    del rows
    col = {h: cols[k] for k, h in enumerate(header)}
    n = len(lines)

    # trajectory ids, in order of first appearance
    ids: dict[str, int] = {}  # stripped id -> index
    raw_index: dict[str, int] = {}  # raw field -> index
    for raw in dict.fromkeys(col["trajectory"]):  # distinct raw values, in order of first appearance
        raw_index[raw] = ids.setdefault(raw.strip(), len(ids))
    traj = np.fromiter(map(raw_index.__getitem__, col["trajectory"]), dtype=np.int64, count=n)
    if "" in ids:
        j = int(np.flatnonzero(traj == ids[""])[0])
        raise DataError(f"{src}:{lines[j]}: empty trajectory field")
    id_names = list(ids)

    # steps
    step = _parse_naturals(col["step"])
    bad = np.flatnonzero(step < 0)
    if bad.size:
        j = int(bad[0])
        v = col["step"][j]
        raise DataError(
            f"{src}:{lines[j]}: " + ("empty step field" if not v.strip() else f"step {v!r} is not a non-negative integer")
        )

    states = _lookup(col["state"], mdp.states, "state", "a state name", src, lines)
    actions = _lookup(col["action"], mdp.actions, "action", "an action name", src, lines)
    labels = (_lookup(col["label"], mdp.propositions, "label", "a proposition", src, lines)
              if "label" in col else None)
    del cols, col

    # group by trajectory, order by step; steps must be 0, 1, 2, ...
    order = np.lexsort((step, traj))  # stable: equal steps keep file order
    g, k = traj[order], step[order]
    N = len(id_names)
    counts = np.bincount(traj, minlength=N)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    expect = np.arange(n) - starts[g]
    wrong = np.flatnonzero(k != expect)
    if wrong.size:
        p = int(wrong[0])
        j = int(order[p])
        tid = _show_id(id_names[g[p]])
        if p > 0 and g[p - 1] == g[p] and k[p - 1] == k[p]:
            other = int(lines[order[p - 1]])
            msg = f"trajectory {tid}: step {k[p]} appears twice (also on line {other})"
        elif expect[p] == 0:
            msg = f"trajectory {tid} starts at step {k[p]}; steps count from 0"
        else:
            msg = f"trajectory {tid}: step {k[p]} follows step {k[p - 1]}; step {expect[p]} is missing"
        raise DataError(f"{src}:{lines[j]}: {msg}")

    T = int(counts.max())
    S2 = np.full((N, T), PAD, dtype=np.int32)
    A2 = np.full((N, T), PAD, dtype=np.int32)
    L2 = np.zeros((N, T), dtype=np.int64)
    S2[g, k] = states[order]
    A2[g, k] = actions[order]
    L2[g, k] = lines[order]
    demos = Demonstrations(S2, A2, counts)
    lab2 = None
    if labels is not None:
        lab2 = np.full((N, T), -1, dtype=np.int64)
        lab2[g, k] = labels[order]
    validate(demos, mdp, labels=lab2, source=src, trajectory_ids=id_names, lines=L2)
    return demos


# ---------------------------------------------------------------------- NPZ
_NPZ_ARRAYS = ("states", "actions", "lengths", "labels")


def save_npz(demos: Demonstrations, path, *, overwrite: bool = False) -> None:
    """Write ``demos`` as a compressed NPZ with arrays ``states``, ``actions``, ``lengths``."""
    _check_writable(path, overwrite)
    with _open_write(path, overwrite) as f:
        np.savez_compressed(f, states=demos.states, actions=demos.actions, lengths=demos.lengths)


def load_npz(path, mdp=None) -> Demonstrations:
    """Read demonstrations from an NPZ file; validate them against ``mdp`` when given.

    Arrays: ``states`` and ``actions`` (2-D, integer, same shape, −1 after each
    trajectory's end), optionally ``lengths`` (1-D, one per trajectory; default: every
    trajectory has all ``T`` steps, as in the mice files) and ``labels`` (like ``states``,
    proposition indices, checked against the MDP's labels). Other arrays are refused.
    """
    src = str(path)
    try:
        z = np.load(path, allow_pickle=False)
    except OSError as e:
        raise _read_error(src, e) from None
    except Exception as e:  # not a zip / corrupt file
        raise DataError(f"{src}: not a readable NPZ file ({e})") from None
    if not isinstance(z, np.lib.npyio.NpzFile):
        raise DataError(f"{src}: a single .npy array, not an NPZ archive of named arrays")
    with z:
        extra = [k for k in z.files if k not in _NPZ_ARRAYS]
        if extra:
            raise DataError(
                f"{src}: unknown array {extra[0]!r}; the arrays are states, actions and optionally lengths, labels"
            )
        arrays = {}
        for name in _NPZ_ARRAYS:
            if name not in z.files:
                if name in ("states", "actions"):
                    raise DataError(f"{src}: missing array {name!r} (the file has: {', '.join(z.files) or 'none'})")
                continue
            try:
                arrays[name] = z[name]
            except Exception as e:
                raise DataError(f"{src}: array {name!r} cannot be read ({e})") from None
    for name, arr in arrays.items():
        if not np.issubdtype(arr.dtype, np.integer):
            raise DataError(f"{src}: array {name!r} has dtype {arr.dtype}, expected integers")
        want = 1 if name == "lengths" else 2
        if arr.ndim != want:
            raise DataError(f"{src}: array {name!r} is {arr.ndim}-D with shape {arr.shape}, expected {want}-D")
        if arr.size and int(arr.max()) > np.iinfo(np.int32).max:
            raise DataError(f"{src}: array {name!r} holds {int(arr.max())}, too large for an index")
    states, actions = arrays["states"], arrays["actions"]
    for name in ("actions", "labels"):
        if name in arrays and arrays[name].shape != states.shape:
            raise DataError(f"{src}: array {name!r} has shape {arrays[name].shape}, but 'states' has {states.shape}")
    N, T = states.shape
    if N == 0:
        raise DataError(f"{src}: no trajectories (array 'states' has shape {states.shape})")
    has_lengths = "lengths" in arrays
    lengths = arrays["lengths"] if has_lengths else np.full(N, T)
    if lengths.shape != (N,):
        raise DataError(f"{src}: array 'lengths' has {lengths.size} entries for {N} trajectories")
    try:
        demos = Demonstrations(states, actions, lengths)
    except DataError as e:
        hint = "" if has_lengths else f" (the file has no 'lengths' array, so every trajectory has {T} steps)"
        raise DataError(f"{src}: {e}{hint}") from None
    if mdp is not None:
        validate(demos, mdp, labels=arrays.get("labels"), source=src)
    return demos


# ---------------------------------------------------------------------- dispatch
def _format(path) -> str:
    ext = os.path.splitext(str(path))[1].lower()
    if ext not in FORMATS:
        supported = ", ".join(f"{e} ({n})" for e, n in FORMATS.items())
        raise DataError(f"{path}: unsupported demonstrations format {ext or '(no extension)'!r}; supported: {supported}")
    return ext


def load(path, mdp) -> Demonstrations:
    """Load demonstrations by extension (``.csv`` or ``.npz``) and validate them against ``mdp``."""
    ext = _format(path)
    if ext == ".csv":
        if mdp is None:
            raise DataError(f"{path}: reading a CSV file needs the MDP (its state, action and label names)")
        return load_csv(path, mdp)
    return load_npz(path, mdp)


def save(demos: Demonstrations, path, mdp=None, overwrite: bool = False) -> None:
    """Save demonstrations by extension (``.csv`` needs ``mdp``; ``.npz`` validates against it when given)."""
    ext = _format(path)
    if ext == ".csv":
        if mdp is None:
            raise DataError(f"{path}: writing a CSV file needs the MDP (its state, action and label names)")
        save_csv(demos, path, mdp, overwrite=overwrite)
    else:
        _check_writable(path, overwrite)
        if mdp is not None:
            validate(demos, mdp, source=str(path))
        save_npz(demos, path, overwrite=overwrite)
