"""Which known histories play the parts of a transition test, and which tests cost least, for
an expert that is run (docs/design/14-sampled-experts.md, section 14.1, "Draws not spent twice"): a history already
asked serves every comparison that uses it, and a test that what is known decides already
costs no draw.
"""

from __future__ import annotations

import numpy as np

from .. import ties
from .sampling import draws_to_decide

__all__ = ["Counted"]


class Counted:
    """The histories known from an expert that is run, by (state, node of machine ``delta``):
    a transition test takes, among the histories that can play its two parts, those with the
    most draws already (docs/design/14-sampled-experts.md, section 14.1)."""

    def __init__(self, knowledge, delta):
        self.knowledge, self.delta = knowledge, np.asarray(delta)
        self.by: dict[tuple[int, int], list] = {}
        ptp = knowledge.ptp()
        if ptp is None:
            return
        node, state = np.asarray(ptp.tree.pair_node), np.asarray(ptp.tree.pair_state)
        seen = np.asarray(ptp.counts).sum(axis=1) > 0
        final = ptp.trie.run(self.delta, 0)[node]
        for t, s, g in zip(node[seen].tolist(), state[seen].tolist(), final[seen].tolist()):
            self.by.setdefault((int(s), int(g)), []).append(tuple(ptp.trie.word(int(t))))

    def pair(self, s: int, w: tuple, w0: tuple, through) -> tuple:
        """``(s, tested, partner)`` for a test found as (``s``, ``w``, ``w0``), ``w`` a word through
        the transition tested (``through(word)``: whether a word uses it), ``w0`` another word
        the machine sends to the same node: the known history at (``s``, that node) through the
        transition with the most draws (``w`` unless one has more), and as partner the one with
        the most draws that does not use it (``w0`` unless one has more; when none qualifies,
        among the others). Equal draws: the shorter word, then the smaller."""
        u = 0
        for k in w:
            u = int(self.delta[u, k])
        mine = self.by.get((int(s), u), [])

        def best(words) -> tuple | None:
            scored = [(-self.knowledge.visits(x, s), len(x), x) for x in dict.fromkeys(words)]
            return min(scored)[2] if scored else None

        tested = best([w] + [x for x in mine if through(x)])
        others = [x for x in [w0, *mine] if x != tested]
        partner = best([x for x in others if not through(x)]) or best(others) or w0
        return (s, tested, partner if partner != tested else w)

    def cheapest(self, offers: list, most: int) -> list:
        """For each list of ``offers`` (the possible tests ``(s, word, partner)`` of one transition,
        in the order reached after it), the ``most`` whose comparison the run's test decides with
        the fewest further draws if the two act alike (:func:`~rmtk.active.sampling.draws_to_decide`;
        0: decided already by what is known), the nearest among equals."""
        offers = [list(dict.fromkeys(t for t in tests if t[1] != t[2])) for tests in offers]
        ask = list(dict.fromkeys(t for tests in offers if len(tests) > most for t in tests))
        cost: dict = {}
        if ask:
            rows = self.knowledge.rows([(w, s) for s, w, _ in ask] + [(p, s) for s, _, p in ask])
            a, b = rows[: len(ask)], rows[len(ask) :]
            known = np.flatnonzero(a.sum(axis=1) + b.sum(axis=1) > 0)
            # nothing known at either history: the costliest, the same for every such test
            zero = np.zeros((1, a.shape[1]))
            cost = dict.fromkeys(ask, float(draws_to_decide(self.knowledge.test, zero, zero)[0]))
            if len(known):
                some = draws_to_decide(self.knowledge.test, a[known], b[known])
                cost.update({ask[i]: float(c) for i, c in zip(known.tolist(), some.tolist())})
        out: list = []
        for tests in offers:
            if len(tests) <= most:
                out += tests
                continue
            order = ties.lexsort((np.arange(len(tests)), np.array([cost[t] for t in tests])))
            out += [tests[i] for i in order[:most].tolist()]
        return out
