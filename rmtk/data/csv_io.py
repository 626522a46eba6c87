"""Demonstrations as CSV: a header ``trajectory,step,state,action[,label][,reward]`` (and a
detector's ``p_<proposition>`` columns) and one row per step, values as names or indices
(rewards and probabilities as numbers); every bad record is named by file and line."""

from __future__ import annotations

import contextlib
import csv
import gc
import itertools

import attrs
import numpy as np

from ..errors import DataError
from ._files import _check_writable, _open_write, _read_error
from .demonstrations import PAD, Demonstrations, _show_id, validate
from .rewards import format_rewards, parse_rewards, some_known

#: The columns of a CSV file of demonstrations (``label`` and ``reward`` optional).
CSV_COLUMNS = ("trajectory", "step", "state", "action", "label", "reward")
_CSV_REQUIRED = CSV_COLUMNS[:4]
_EXPECTED = f"{','.join(_CSV_REQUIRED)}[,label][,reward][,p_<proposition>...]"
#: The prefix of a detector's probability columns (``p_coffee`` for proposition ``coffee``).
DETECTION_PREFIX = "p_"


def save_csv(demos: Demonstrations, path, mdp, *, overwrite: bool = False, names: bool = True) -> None:
    """Write ``demos`` as CSV: a header ``trajectory,step,state,action,label`` (and
    ``reward`` when ``demos`` have rewards) and one row per step. Values are names
    (``names=True``) or indices; labels are the MDP's; rewards are written exactly
    (shortest ``repr``), an unknown (NaN) one as an empty field.

    Trajectories are numbered ``0..N-1``. The demonstrations are validated against ``mdp``
    first, so that the file loads back. Raises :class:`DataError` if ``path`` exists and
    ``overwrite`` is false. Demonstrations with recorded labels write those (they may disagree
    with the MDP's); with detections, one ``p_<proposition>`` column each (shortest ``repr``).
    """
    _check_writable(path, overwrite)
    validate(demos, mdp, source=str(path))
    ii, tt = np.nonzero(demos.mask())
    s = demos.states[ii, tt]
    a = demos.actions[ii, tt]
    lab = np.asarray(mdp.labels)[s] if demos.labels is None else demos.labels[ii, tt]
    if names:
        s_col = np.asarray(mdp.states, dtype=object)[s].tolist()
        a_col = np.asarray(mdp.actions, dtype=object)[a].tolist()
        l_col = np.asarray(mdp.propositions, dtype=object)[lab].tolist()
    else:
        s_col, a_col, l_col = s.tolist(), a.tolist(), lab.tolist()
    cols = [ii.tolist(), tt.tolist(), s_col, a_col, l_col]
    header = list(CSV_COLUMNS[:5])
    if demos.rewards is not None:
        cols.append(format_rewards(demos.rewards[ii, tt]))
        header.append("reward")
    if demos.detections is not None:
        probs = demos.detections[ii, tt]
        for k, name in enumerate(mdp.propositions):
            cols.append([repr(float(v)) for v in probs[:, k].tolist()])
            header.append(DETECTION_PREFIX + name)
    with _open_write(path, overwrite, newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(zip(*cols))


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


#: What :func:`_parse_naturals` returns for a number that does not fit in 64 bits.
TOO_LARGE = -2


def _parse_naturals(values, idx: np.ndarray | None = None) -> np.ndarray:
    """Non-negative decimal integers among ``values[idx]`` (surrounding spaces allowed);
    −1 where a value is not one, ``TOO_LARGE`` where it is one beyond 2^63 − 1."""
    sub = values if idx is None else [values[j] for j in idx.tolist()]
    out = _naturals_fast(sub)
    top = np.iinfo(np.int64).max
    for k in np.flatnonzero(out < 0).tolist():
        v = sub[k].strip()
        if v.isascii() and v.isdigit():
            out[k] = int(v) if int(v) <= top else TOO_LARGE
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


def load_csv(path, mdp, *, labels: str = "check") -> Demonstrations:
    """Read demonstrations from a CSV file and validate them against ``mdp``.

    The first (non-blank) line is a header naming the columns ``trajectory``, ``step``,
    ``state``, ``action`` and optionally ``label`` and ``reward``, in any order
    (case-insensitive); other columns are refused. ``state``, ``action`` and ``label``
    values are names or indices (a known name wins over an index); a ``reward`` is a number,
    empty or ``nan`` when unknown (the convention of :mod:`rmtk.data.rewards`: what the
    row's action earned, paid on the next row's label). Trajectory ids are any strings; trajectories keep
    the order of their first row. Rows of one trajectory need not be contiguous nor
    sorted: they are grouped by id and ordered by ``step``, whose values must then be
    exactly ``0, 1, 2, ...`` (no gap, no duplicate). Blank lines are skipped; any other
    bad line raises :class:`DataError` naming the file and the line.

    ``labels``: ``"check"`` (a ``label`` column must agree with the MDP's labels, and is then
    dropped) or ``"keep"`` (labels recorded by a detector that errs: kept as
    ``Demonstrations.labels``, checked only to be propositions). Columns ``p_<proposition>``
    (one per proposition of the MDP, all or none) are a detector's probabilities, kept as
    ``Demonstrations.detections``.
    """
    if labels not in ("check", "keep"):
        raise DataError(f"labels must be 'check' or 'keep', got {labels!r}")
    with _no_gc():
        return _load_csv(path, mdp, labels == "keep")


def _detection_columns(header: list[str], raw: list[str], mdp, src: str, line: int) -> dict[str, int]:
    """The ``p_<proposition>`` columns of ``header``: proposition → column index (all or none)."""
    names = {h: k for k, h in enumerate(header) if h.startswith(DETECTION_PREFIX)}
    if not names:
        return {}
    props = {p.lower(): p for p in mdp.propositions}
    out = {}
    for h, k in names.items():
        p = props.get(h[len(DETECTION_PREFIX) :])
        if p is None:
            raise DataError(
                f"{src}:{line}: column {raw[k]!r} names no proposition of the MDP {mdp.name!r} "
                f"({', '.join(mdp.propositions)})"
            )
        out[p] = k
    missing = [p for p in mdp.propositions if p not in out]
    if missing:
        raise DataError(
            f"{src}:{line}: detections need a column per proposition: missing "
            + ", ".join(DETECTION_PREFIX + p for p in missing)
        )
    return out


def _parse_probabilities(values, src: str, lines: np.ndarray, column: str) -> np.ndarray:
    """A column of probabilities: numbers in [0, 1] (named by line when not)."""
    try:
        out = np.asarray(values, dtype=np.float64)
    except ValueError:
        out = np.full(len(values), np.nan)
        for j, v in enumerate(values):
            try:
                out[j] = float(v)
            except ValueError:
                raise DataError(f"{src}:{lines[j]}: {column} {v!r} is not a number") from None
    bad = np.flatnonzero(~((out >= 0) & (out <= 1)))
    if bad.size:
        j = int(bad[0])
        raise DataError(f"{src}:{lines[j]}: {column} {values[j]!r} is not a probability in [0, 1]")
    return out


def _load_csv(path, mdp, keep_labels: bool = False) -> Demonstrations:
    src = str(path)
    rows, lines = _read_rows(path, src)
    nonblank = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    keep = np.flatnonzero(nonblank > 0)
    if keep.size == 0:
        raise DataError(f"{src}: empty file; expected a header line {_EXPECTED} and one row per step")
    header_line = int(lines[keep[0]])
    header = [h.strip().lower() for h in rows[keep[0]]]
    expected_hdr = _EXPECTED
    for k, h in enumerate(header):
        if h not in CSV_COLUMNS and not h.startswith(DETECTION_PREFIX):
            hint = " (the first line must be a header: " + expected_hdr + ")" if header[0].strip().isdigit() else ""
            raise DataError(
                f"{src}:{header_line}: unknown column {rows[keep[0]][k]!r} in the header; the columns are "
                f"trajectory, step, state, action and optionally label, reward, p_<proposition>{hint}"
            )
        if h in header[:k]:
            raise DataError(f"{src}:{header_line}: column {h!r} appears twice in the header")
    detected = _detection_columns(header, rows[keep[0]], mdp, src, header_line)
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
        raise DataError(
            f"{src}:{lines[j]}: {lens[wrong[0]]} field{'s' if lens[wrong[0]] != 1 else ''}, expected {ncol} "
            f"({','.join(header)})"
        )
    lines = lines[data_idx]
    data = rows if data_idx.size == len(rows) - 1 and keep[0] == 0 else None
    if data is not None:
        cols = list(zip(*data[1:]))
    else:
        cols = list(zip(*(rows[j] for j in data_idx.tolist())))
    del rows
    col = {h: cols[k] for k, h in enumerate(header)}
    probs = {p: cols[k] for p, k in detected.items()}
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
        if not v.strip():
            what = "empty step field"
        elif step[j] == TOO_LARGE:
            what = f"step {v!r} is too large (column 'step' counts the steps of a trajectory: 0, 1, 2, ...)"
        else:
            what = f"step {v!r} is not a non-negative integer"
        raise DataError(f"{src}:{lines[j]}: {what}")

    states = _lookup(col["state"], mdp.states, "state", "a state name", src, lines)
    actions = _lookup(col["action"], mdp.actions, "action", "an action name", src, lines)
    labels = _lookup(col["label"], mdp.propositions, "label", "a proposition", src, lines) if "label" in col else None
    rewards = parse_rewards(col["reward"], src, lines) if "reward" in col else None
    if rewards is not None:
        some_known(rewards, f"{src}: column 'reward'")
    detections = None
    if probs:
        detections = np.stack(
            [_parse_probabilities(probs[p], src, lines, DETECTION_PREFIX + p) for p in mdp.propositions], axis=1
        )
    del cols, col, probs

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
    R2 = None
    if rewards is not None:
        R2 = np.full((N, T), np.nan)
        R2[g, k] = rewards[order]
    D2 = None
    if detections is not None:
        D2 = np.full((N, T, detections.shape[1]), np.nan, dtype=np.float32)
        D2[g, k] = detections[order]
    lab2 = None
    if labels is not None:
        lab2 = np.full((N, T), -1, dtype=np.int64)
        lab2[g, k] = labels[order]
    demos = Demonstrations(S2, A2, counts, rewards=R2, detections=D2)
    validate(demos, mdp, labels=lab2, source=src, trajectory_ids=id_names, lines=L2, agree=not keep_labels)
    if keep_labels and lab2 is not None:
        demos = attrs.evolve(demos, labels=lab2)
    return demos


# ---------------------------------------------------------------------- NPZ
