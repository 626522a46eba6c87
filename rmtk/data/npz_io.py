"""Demonstrations as NPZ: the padded ``states``, ``actions`` and ``lengths`` arrays (and
optionally the labels and the rewards), validated on load."""

from __future__ import annotations

import attrs
import numpy as np

from ..errors import DataError
from ._files import _check_writable, _open_write, _read_error
from .demonstrations import Demonstrations, validate
from .rewards import first_infinite, some_known

_NPZ_ARRAYS = ("states", "actions", "lengths", "labels", "rewards", "detections")


def save_npz(demos: Demonstrations, path, *, overwrite: bool = False) -> None:
    """Write ``demos`` as a compressed NPZ with arrays ``states``, ``actions``, ``lengths``
    (and ``rewards``, float64 NaN-padded, when ``demos`` have rewards; ``labels`` when they carry
    recorded labels; ``detections``, ``(N, T, K)`` float32, when they carry a detector's
    probabilities)."""
    _check_writable(path, overwrite)
    arrays = {"states": demos.states, "actions": demos.actions, "lengths": demos.lengths}
    if demos.rewards is not None:
        arrays["rewards"] = demos.rewards
    if demos.labels is not None:
        arrays["labels"] = demos.labels
    if demos.detections is not None:
        arrays["detections"] = demos.detections
    with _open_write(path, overwrite) as f:
        np.savez_compressed(f, **arrays)


def open_npz(path) -> np.lib.npyio.NpzFile:
    """The NPZ archive at ``path``, open (a context manager); a file that is not one (empty,
    truncated, a single ``.npy`` array, unreadable) is a :class:`DataError` naming it."""
    src = str(path)
    try:
        z = np.load(path, allow_pickle=False)
    except OSError as e:
        raise _read_error(src, e) from None
    except Exception as e:  # not a zip / corrupt file: EOFError, zipfile.BadZipFile, ValueError, ...
        raise DataError(f"{src}: not a readable NPZ file ({e})") from None
    if not isinstance(z, np.lib.npyio.NpzFile):
        raise DataError(f"{src}: a single .npy array, not an NPZ archive of named arrays")
    return z


def load_npz(path, mdp=None, *, labels: str = "check") -> Demonstrations:
    """Read demonstrations from an NPZ file; validate them against ``mdp`` when given.

    Arrays: ``states`` and ``actions`` (2-D, integer, same shape, −1 after each
    trajectory's end), optionally ``lengths`` (1-D, one per trajectory; default: every
    trajectory has all ``T`` steps, as in the mice files), ``labels`` (like ``states``,
    proposition indices, checked against the MDP's labels) and ``rewards`` (like ``states``,
    numbers: what each step's action earned, NaN when unknown, see :mod:`rmtk.data.rewards`;
    NaN after a trajectory's end, as :class:`Demonstrations` wants; at least one known) and
    ``detections`` (``(N, T, K)`` probabilities of each proposition at each step, a detector's).
    Other arrays are refused. ``labels="keep"`` keeps the ``labels`` array as recorded by a
    detector that errs (checked only to be propositions) instead of checking it against the MDP's
    labels.
    """
    if labels not in ("check", "keep"):
        raise DataError(f"labels must be 'check' or 'keep', got {labels!r}")
    src = str(path)
    with open_npz(path) as z:
        extra = [k for k in z.files if k not in _NPZ_ARRAYS]
        if extra:
            raise DataError(
                f"{src}: unknown array {extra[0]!r}; the arrays are states, actions and optionally lengths, "
                "labels, rewards, detections"
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
    rewards = arrays.pop("rewards", None)
    detections = arrays.pop("detections", None)
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
    if rewards is not None:
        rewards = _rewards(rewards, states.shape, src)
    if detections is not None:
        if not np.issubdtype(detections.dtype, np.floating) or detections.ndim != 3 or detections.shape[:2] != (N, T):
            raise DataError(
                f"{src}: array 'detections' has shape {detections.shape} and dtype {detections.dtype}; expected "
                f"probabilities of shape ({N}, {T}, propositions)"
            )
    try:
        demos = Demonstrations(states, actions, lengths)
    except DataError as e:
        hint = "" if has_lengths else f" (the file has no 'lengths' array, so every trajectory has {T} steps)"
        raise DataError(f"{src}: {e}{hint}") from None
    if rewards is not None:
        try:  # a reward after a trajectory's end is refused, as Demonstrations itself refuses it
            demos = demos.with_rewards(rewards)
        except DataError as e:
            raise DataError(f"{src}: array 'rewards': {e}") from None
    if detections is not None:
        try:
            demos = attrs.evolve(demos, detections=np.where(demos.mask()[:, :, None], detections, np.nan))
        except DataError as e:
            raise DataError(f"{src}: array 'detections': {e}") from None
    recorded = arrays.get("labels")
    if mdp is not None:
        validate(demos, mdp, labels=recorded, source=src, agree=labels == "check")
    if labels == "keep" and recorded is not None:
        try:
            demos = attrs.evolve(demos, labels=np.where(demos.mask(), recorded, -1))
        except DataError as e:
            raise DataError(f"{src}: array 'labels': {e}") from None
    return demos


def _rewards(arr: np.ndarray, shape: tuple, src: str) -> np.ndarray:
    """The ``rewards`` array as float64, checked: numbers, the shape of the states, finite or NaN."""
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise DataError(f"{src}: array 'rewards' has dtype {arr.dtype}, expected numbers")
    if arr.shape != shape:
        raise DataError(f"{src}: array 'rewards' has shape {arr.shape}, but 'states' has {shape}")
    out = arr.astype(np.float64)
    k = first_infinite(out.ravel())
    if k is not None:
        i, t = divmod(k, shape[1])
        raise DataError(f"{src}: array 'rewards' at trajectory {i}, step {t}: {out[i, t]} is infinite")
    some_known(out, f"{src}: array 'rewards'")
    return out
