"""Asking an expert that is run, sequentially (docs/design/12-active-learning.md and docs/design/14-sampled-experts.md).

A question to an expert that is run compares two histories at one state (a witness: the
hypotheses merge them or split them; a transition test; a conformance history and its
representative). Instead of a fixed number of draws, each comparison is sampled in batches with
the run's anytime-valid test (:class:`~rmtk.negatives.statistics.Sequential` with
:class:`~rmtk.negatives.anytime.Adaptive`) until it is *separated* (the expert acts differently: a
negative example), *resolved* (no difference as large as the target resolution, at level α),
*capped* (the question's most draws at both histories), or the budget ends:

* :func:`needs` decides, for many comparisons at once, their status and the next batch;
* :func:`sample` asks comparisons level by level through the :class:`~rmtk.active.asking.Asker`:
  at each level every open comparison gets its next batch (the histories with the most evidence
  first, so that what the budget allows goes where a difference is growing), the answers are
  folded into the knowledge, and the comparisons are planned again. With
  ``stop_on_separation`` it stops after the first level that separates one: what is known
  changed, and the round's hypotheses with it. A clear difference therefore stops after a few
  dozen draws, a faint one keeps its comparison going until the resolution is reached.

A lone history (no partner) is asked up to the test's first batch: enough to make what it
reads part of what is known, which later comparisons build on.
"""

from __future__ import annotations

import attrs
import numpy as np

from .. import ties
from ..negatives.statistics import Sequential


@attrs.frozen
class Query:
    """One question: the expert's action at ``state`` after ``word`` (``samples`` draws for an
    expert that is run), asked because the witness (``word``, ``partner``, ``state``) separates
    the machine pairs ``pairs`` (indices among the round's hypotheses, 0-based; ``(i, i)``: it
    uses a free transition of machine ``i``). From an expert that is run, the two histories of a
    witness are compared sequentially (docs/design/14-sampled-experts.md): ``samples`` is the next batch,
    and the loop asks more until the comparison is decided, or ``cap`` draws at the history
    (``None``: no cap; the run's target resolution decides). ``optional``: a further witness,
    sampled while the round's other comparisons are undecided and it shows the most evidence,
    left when they are decided."""

    word: tuple[int, ...]
    state: int
    samples: int
    partner: tuple[int, ...]
    pairs: tuple[tuple[int, int], ...]
    cost: float
    cap: int | None = None
    optional: bool = False


#: The statuses of a decided comparison (separated, resolved, capped); an undecided one is
#: open, and a lone history already asked is known.
DECIDED = ("separated", "resolved", "capped")


@attrs.frozen
class Compared:
    """A comparison of two histories at one state as it stands: the counts ``n1``, ``n2`` at
    ``word`` and ``partner``, the ``status`` (``"separated"``, ``"resolved"``: no difference
    ≥ ``upper`` at level α, ``"capped"``, ``"open"``: the budget or the round ended it), and
    the confidence interval ``[lower, upper]`` of the total variation between the expert's
    actions after the two (at every sample size, level α); ``cap``: the question's most draws
    a history; ``optional``: only ever asked as a further witness (none of the answer's merges
    needs it decided)."""

    word: tuple[int, ...]
    partner: tuple[int, ...]
    state: int
    status: str
    n1: int
    n2: int
    lower: float
    upper: float
    cap: int | None = None
    optional: bool = False

    def __str__(self) -> str:
        if self.status == "separated":
            return f"differ (total variation at least {self.lower:.2f}; {self.n1} and {self.n2} draws)"
        return f"no difference ≥ {self.upper:.2f} found ({self.n1} and {self.n2} draws; {self.status})"


@attrs.frozen
class Needs:
    """What :func:`needs` decided for each comparison: ``status``, the next draws at the two
    histories (``draw1``, ``draw2``), their counts and the interval of the total variation
    (``lower``, ``upper``; ``[0, 1]`` for a lone history) and the ``margin`` (signed evidence
    of a difference: positive when separated)."""

    status: np.ndarray
    draw1: np.ndarray
    draw2: np.ndarray
    n1: np.ndarray
    n2: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    margin: np.ndarray


def needs(knowledge, pairs, caps=None, *, asked=frozenset()) -> Needs:
    """Status and next draws of comparisons ``(word, partner, state)`` (``partner`` ``()``: a
    lone history) under the knowledge's counts and its sequential test; ``caps``: the most draws
    per history of each (``None``: none). The knowledge remembers (what is decided, the
    intervals seen: :func:`standing`) the comparisons it remembered already, those decided now,
    and those of ``asked`` (keys of comparisons the expert was asked draws for): a comparison
    planned but never drawn for holds no evidence, and is not a question the answer rests on."""
    k = len(pairs)
    test = knowledge.test
    rows1 = knowledge.rows([(w, s) for w, _, s in pairs]) if k else np.zeros((0, knowledge.mdp.n_actions))
    rows2 = knowledge.rows([(p, s) for _, p, s in pairs]) if k else rows1
    n1, n2 = rows1.sum(axis=1), rows2.sum(axis=1)
    cap = np.array([np.inf if c is None else float(c) for c in (caps if caps is not None else [None] * k)])
    two = np.array([bool(p) for _, p, _ in pairs], dtype=bool)
    status = np.full(k, "known", dtype=object)
    d1, d2 = np.zeros(k, np.int64), np.zeros(k, np.int64)
    lower, upper, margin = np.zeros(k), np.ones(k), np.full(k, -1.0)
    lone = ~two
    want = np.minimum(float(test.first), cap[lone])
    d1[lone] = np.maximum(0.0, want - n1[lone]).astype(np.int64)
    status[lone] = np.where(d1[lone] > 0, "open", "known")
    if two.any():
        plan = test.plan(rows1[two], rows2[two])
        c = plan.comparison
        st = plan.status.astype(object)
        a = np.minimum(plan.draw1, np.maximum(0.0, cap[two] - n1[two])).astype(np.int64)
        b = np.minimum(plan.draw2, np.maximum(0.0, cap[two] - n2[two])).astype(np.int64)
        lo, up = np.array(c.lower, dtype=float), np.array(c.resolution, dtype=float)
        # every interval the anytime-valid test gave holds at once: intersected with those of
        # earlier looks, and a comparison once decided stays so (docs/design/14-sampled-experts.md)
        memory = knowledge.intervals
        eps = test.epsilon
        for r, idx in enumerate(np.flatnonzero(two).tolist()):
            w, p, s = pairs[idx]
            key = _key(w, p, s)
            old = memory.get(key)
            if old is not None:
                lo[r], up[r] = max(lo[r], old[1]), min(up[r], old[2])
                if old[0] in ("separated", "resolved"):
                    st[r] = old[0]
            if st[r] == "open" and ties.at_most(up[r], eps):
                st[r] = "resolved"
            if old is not None or key in asked or st[r] in ("separated", "resolved"):
                status_now = st[r] if st[r] in ("separated", "resolved") else "open"
                memory[key] = (status_now, lo[r], up[r], cap[idx] if old is None else old[3])
        decided = np.isin(st, ("separated", "resolved"))
        a, b = np.where(decided, 0, a), np.where(decided, 0, b)
        a, b = _lagging_batch(test, rows1[two], rows2[two], a, b)
        st = np.where((st == "open") & (a + b == 0), "capped", st)
        status[two], d1[two], d2[two] = st, a, b
        lower[two], upper[two], margin[two] = lo, up, c.margin
    return Needs(status.astype(str), d1, d2, n1, n2, lower, upper, margin)


def _lagging_batch(test, rows1, rows2, a, b, rounds: int = 10):
    """Batches ``a``, ``b`` of comparisons of count rows ``rows1``, ``rows2`` where only the
    side with fewer draws grows and stays below the other's count, shortened to the fewest draws
    after which the resolution reaches the target if the frequencies stay as they are (at least
    one): the test's own estimate of the last batch raises both sides to one count, which says
    nothing when one side has many more draws than the other."""
    a, b = np.asarray(a, np.int64).copy(), np.asarray(b, np.int64).copy()
    rows1, rows2 = np.asarray(rows1, float), np.asarray(rows2, float)
    n1, n2 = rows1.sum(axis=1), rows2.sum(axis=1)
    one = ((a > 0) & (b == 0) & (n1 > 0) & (n1 + a < n2)) | ((b > 0) & (a == 0) & (n2 > 0) & (n2 + b < n1))
    idx = np.flatnonzero(one)
    if not len(idx):
        return a, b
    first = a[idx] > 0  # the side that grows is the first
    grow = np.where(first, a[idx], b[idx]).astype(float)
    r_low = np.where(first[:, None], rows1[idx], rows2[idx])
    r_high = np.where(first[:, None], rows2[idx], rows1[idx])
    n_low = r_low.sum(axis=1)
    f_low = r_low / n_low[:, None]

    def resolved(m) -> np.ndarray:
        up = test.compare(f_low * (n_low + m)[:, None], r_high).resolution
        return ties.at_most(np.asarray(up, float), test.epsilon)

    lo, hi = np.zeros(len(idx)), grow.copy()
    ok = resolved(hi)
    for _ in range(rounds):
        mid = np.ceil((lo + hi) / 2)
        fine = resolved(mid)
        move = ok & (hi - lo > 1)
        hi, lo = np.where(move & fine, mid, hi), np.where(move & ~fine, mid, lo)
    m = np.where(ok, np.maximum(hi, 1), grow).astype(np.int64)
    a[idx], b[idx] = np.where(first, m, 0), np.where(first, 0, m)
    return a, b


def draws_to_decide(test, rows1, rows2, *, most: int = 64) -> np.ndarray:
    """The policy draws the sequential ``test`` (:class:`~rmtk.negatives.statistics.Sequential`) spends on
    comparisons of count rows ``rows1``, ``rows2`` (``(k, A)``) until it resolves them, if the
    two sides act alike (the costliest outcome: a difference is separated sooner): an estimate
    for choosing among comparisons, with the test's own batches (the less visited side raised
    first, the last batch ending where the target is reached), the pooled frequencies (uniform
    where nothing is known) and the difference two samples of one distribution show on average
    added to the resolution; ``inf`` past ``most`` batches."""
    rows1, rows2 = np.atleast_2d(np.asarray(rows1, float)), np.atleast_2d(np.asarray(rows2, float))
    n1, n2 = rows1.sum(axis=1), rows2.sum(axis=1)
    # the pooled frequencies, each action's count raised by a half (Jeffreys): a few draws do
    # not make a spread distribution look sharp
    pooled = rows1 + rows2 + 0.5
    freq = pooled / pooled.sum(axis=1, keepdims=True)
    spread = np.sqrt(freq * (1.0 - freq))

    def resolved(a, b) -> np.ndarray:
        # the resolution at these counts with no difference seen, plus the difference two
        # samples of one distribution show on average (½ Σ E|p̂₁ − p̂₂|, normal approximation)
        up = np.asarray(test.compare(freq * a[:, None], freq * b[:, None]).resolution, float)
        inv = 1.0 / np.maximum(a, 1.0) + 1.0 / np.maximum(b, 1.0)
        noise = 0.5 * np.sqrt(2.0 / np.pi) * spread.sum(axis=1) * np.sqrt(inv)
        return ties.at_most(up + noise, test.epsilon)

    a, b = n1.copy(), n2.copy()
    done = resolved(a, b)
    lo, hi = np.zeros(len(a)), np.zeros(len(a))  # the common count that resolves it lies in (lo, hi]
    for _ in range(most):
        live = ~done
        if not live.any():
            break
        low = np.minimum(a, b)
        level = np.ceil(np.maximum(np.maximum(low * test.growth, float(test.first)), low + 1))
        hit = live & resolved(np.maximum(a, level), np.maximum(b, level))
        lo, hi = np.where(hit, low, lo), np.where(hit, level, hi)
        done |= hit
        a, b = np.where(live, np.maximum(a, level), a), np.where(live, np.maximum(b, level), b)
    found = done & (hi > 0)
    for _ in range(12):  # the last batch ends at the first common count that resolves it
        mid = np.floor((lo + hi) / 2)
        move = found & (hi - lo > 1)
        if not move.any():
            break
        ok = resolved(np.maximum(n1, mid), np.maximum(n2, mid))
        hi, lo = np.where(move & ok, mid, hi), np.where(move & ~ok, mid, lo)
    spent = np.where(found, np.maximum(n1, hi) + np.maximum(n2, hi) - n1 - n2, 0.0)
    return np.where(done, spent, np.inf)


@attrs.frozen
class Sampled:
    """What :func:`sample` did: the questions ``asked`` (one per batch at a history), the
    comparisons as they stand (``compared``), whether one was ``separated`` at the end, and the
    (word, state) pairs ``new`` to the knowledge."""

    asked: tuple[Query, ...]
    compared: tuple[Compared, ...]
    separated: bool
    new: int


def sample(
    asker, knowledge, queries, *, stop_on_separation: bool = True, levels: int | None = None, focus: float = 1.0
) -> Sampled:
    """Ask the comparisons of ``queries`` sequentially (module docstring): a query's comparison
    is (``word``, ``partner``, ``state``) with its ``cap``; the histories of one comparison are
    asked together or not at all. ``levels``: at most this many batches (``None``: until every
    comparison is decided, one is separated with ``stop_on_separation``, or the budget ends).
    ``focus``: the share of the undecided comparisons a batch goes to, those with the most
    evidence of a difference (at least one; 1: all). Optional comparisons
    (``Query.optional``) are sampled only while another one is undecided."""
    comps: dict[tuple, Query] = {}
    for q in queries:  # a witness's two queries are one comparison
        key = _key(q.word, q.partner, q.state)
        comps.setdefault(key, q)
        if not q.optional:
            knowledge.optional.discard(key)
        elif key not in knowledge.intervals:
            knowledge.optional.add(key)
    live = list(comps.values())
    asked: list[Query] = []
    new, level = 0, 0
    drawn: set = set()  # the comparisons given draws: remembered (needs)
    while live:
        pairs = [(tuple(q.word), tuple(q.partner), int(q.state)) for q in live]
        need = needs(knowledge, pairs, [q.cap for q in live], asked=drawn)
        if level and stop_on_separation and (need.status == "separated").any():
            break
        if levels is not None and level >= levels:
            break
        is_open = need.status == "open"
        if not is_open.any() or all(q.optional for q, o in zip(live, is_open) if o):
            break  # every comparison the round needs is decided: the optional ones are left
        # this level's batches, each history once with the most draws any comparison wants
        # there; the comparisons with the most evidence of a difference first (the margin in
        # units of the interval's width: a fresh one scores -1, one sampled long and still alike
        # stays near it, one showing a difference rises towards 0; docs/design/14-sampled-experts.md,
        # section 14.1), the two histories of one together or not at all
        evidence = need.margin / np.maximum(need.upper - need.lower, 1e-9)
        order = [i for i in ties.lexsort((np.arange(len(live)), -evidence)).tolist() if is_open[i]]
        order = order[: max(1, int(np.ceil(focus * len(order))))]
        done: set = set()
        answers, stopped = [], False
        for i in order:
            w, p, s = pairs[i]
            group = [
                (h, int(d)) for h, d in ((w, need.draw1[i]), (p, need.draw2[i])) if h and d > 0 and (h, s) not in done
            ]
            got, stopped = ask_together(asker, group, s)
            if got or not stopped:
                drawn.add(_key(w, p, s))
            for (h, d), obs in zip(group, got):
                done.add((h, s))
                answers.append(obs)
                q = live[i]
                asked.append(Query(h, s, d, p if h == w else w, q.pairs, float(d), q.cap, q.optional))
            if stopped:
                break
        new += knowledge.add(*answers)
        level += 1
        live = [q for q, st in zip(live, need.status) if st == "open"]
        if stopped:
            break
    final = list(comps.values())
    pairs = [(tuple(q.word), tuple(q.partner), int(q.state)) for q in final]
    need = needs(knowledge, pairs, [q.cap for q in final], asked=drawn)
    compared = tuple(
        Compared(
            w,
            p,
            s,
            str(need.status[i]),
            int(need.n1[i]),
            int(need.n2[i]),
            float(need.lower[i]),
            float(need.upper[i]),
            final[i].cap,
        )
        for i, (w, p, s) in enumerate(pairs)
        if p
    )
    return Sampled(tuple(asked), compared, bool((need.status == "separated").any()), new)


def ask_together(asker, group, state: int) -> tuple[list, bool]:
    """Ask the histories of one comparison, ``group`` of (history, draws) at ``state``,
    together or not at all: the answers, and whether the budget or the deadline stopped it
    (the answers before the stop are kept)."""
    steps = sum(int(asker.caps.act_steps(h, state, d)) for h, d in group)
    if not asker.allows(len(group), steps, sum(d for _, d in group)):
        return [], True
    out = []
    for h, d in group:
        obs = asker.act(h, state, d)
        if obs is None:
            return out, True
        out.append(obs)
    return out, False


def standing(knowledge) -> tuple[Compared, ...]:
    """Every comparison the knowledge's test looked at, as it stands: the intersection of its
    intervals, whether it was decided, and the counts now."""
    keys = list(knowledge.intervals)
    if not keys:
        return ()
    rows1 = knowledge.rows([(k[1], k[0]) for k in keys])
    rows2 = knowledge.rows([(k[2], k[0]) for k in keys])
    out = []
    for (s, w, p), a, b in zip(keys, rows1.sum(axis=1).tolist(), rows2.sum(axis=1).tolist()):
        status, lower, upper, cap = knowledge.intervals[(s, w, p)]
        cap = None if cap is None or not np.isfinite(cap) else int(cap)
        optional = (s, w, p) in knowledge.optional
        out.append(Compared(w, p, s, status, int(a), int(b), float(lower), float(upper), cap, optional))
    return tuple(out)


def undecided_merges(knowledge, delta) -> list[Query]:
    """The comparisons the knowledge's test looked at, left undecided (a round ended them at a
    separation elsewhere), whose two histories the machine of transitions ``delta`` (letters as
    the knowledge's propositions) merges: what its answer rests on that is not yet resolved
    (further witnesses asked only as options are left out: their pairs are decided elsewhere)."""

    def final(word) -> int:
        u = 0
        for k in word:
            u = int(delta[u, k])
        return u

    return [
        Query(c.word, c.state, 0, c.partner, (), 0.0, c.cap)
        for c in standing(knowledge)
        if c.status == "open"
        and final(c.word) == final(c.partner)
        and _key(c.word, c.partner, c.state) not in knowledge.optional
    ]


def resolved_stop(out, stopped: str, knowledge) -> str:
    """``stopped`` with what resolved the first machine's merges of ``out`` (an
    :class:`~rmtk.active.result.ActiveResult`) and what the next resolution
    would cost at the weakest of them (docs/design/14-sampled-experts.md)."""
    summary = out.resolution(0)
    if summary is None:
        return stopped
    text = f"{stopped}; {summary}"
    merged = [c for c in out.merges(0) if c.upper < 1.0 and not (c.optional and c.status == "open")]
    if not merged or out.target is None or knowledge.test is None:
        return text
    weakest = merged[0]
    goal = out.target if weakest.upper > out.target else weakest.upper / 2
    test = Sequential(alpha=out.alpha, epsilon=max(goal, 1e-6), bound=knowledge.test.bound)
    a, b = knowledge.rows([(weakest.word, weakest.state), (weakest.partner, weakest.state)])
    m1, m2 = test.to_resolve(a[None], b[None])
    if np.isfinite(m1[0]) and np.isfinite(m2[0]):
        text += (
            f"; resolving {goal:.2f} at the weakest would take about {int(m1[0] + m2[0]):,} more draws there "
            "(if the frequencies stay as they are)"
        )
    return text


def _key(word, partner, state) -> tuple:
    return (int(state),) + tuple(sorted((tuple(word), tuple(partner))))


def as_queries(answers) -> list[Query]:
    """The histories an equivalence check asked, as queries (for the round's log)."""
    return [
        Query(tuple(w), int(s), 1, (), (), 0.0)
        for obs in answers
        if obs.exact or obs.evaluations
        for w, s in zip(obs.words, np.asarray(obs.states).tolist())
    ]
