"""The least-noisy machine by branch and bound over the transitions: an exact search tried for the
large noisy reward traces of docs/benchmarks/rewards.md (section 3, "Uniform walks that go on
after the end"), where weighted MaxSAT (``NoisyRewardEncoder``) does not prove its optimum.

A machine's noise is, per (node, letter) *cell*, the observations that differ from the cell's most
observed value. The search assigns the transitions one at a time (the one that decides the most
observed steps first; a new node only as the next number, which breaks the renaming symmetry;
non-stuttering kept) and, when the best machine found so far cannot be beaten, also the *output*
of a cell. Its bound at a partial machine:

- each word's *possible nodes*: the nodes its run may end in given the transitions decided
  (a word whose run is decided has one; after a letter that leads every node to one node, the
  word is back at that node, whatever it did before);
- observations certain to land in one cell are one group: the words whose run is decided, by
  their cell; the undecided words pending on one transition with the same letters after it,
  by (transition, those letters, letter) — they land in one node together;
- the bound is, per letter, the least over the outputs of the nodes (``values ** nodes``
  choices, fixed ones kept) of each group's noise when it lands in the best of its possible
  nodes. It is exact when every run is decided.

It is a lower bound because a group's observations are in one cell in every completion, and a
cell's noise is at least the sum of its parts' (the most observed value of a union is at most
the sum of the parts' most observed counts). A stopped search gives a proven lower bound: the
least bound among the subtrees not yet searched.

    rmtk simulate models/office.rm coffee -n 2000 -T 100 --seed 0 --policy uniform --rewards \\
        --reward-noise replace:0.05 -o /tmp/c.npz
    PYTHONPATH=.. python rewards_noisy_bound.py ../models/office.rm coffee /tmp/c.npz --budget 20000
    PYTHONPATH=.. python rewards_noisy_bound.py --check 12     # against NoisyRewardEncoder, small cases

A budget of search nodes stops it (deterministic), never the clock. Python and numpy, a prototype:
see the benchmarks page for what it proved and what it did not.
"""

from __future__ import annotations

import argparse
import itertools
import resource
import subprocess
import sys
import time

import numpy as np


def tails(trie, K: int) -> np.ndarray:
    """``T[p, k]``: an id of the last ``k`` letters of word ``p`` (equal ids, equal letters)."""
    L = int(trie.length.max(initial=0))
    T = np.zeros((trie.n_nodes, L + 1), np.int64)
    nxt = 1
    for k in range(1, L + 1):
        m = np.flatnonzero(trie.length >= k)
        u, inv = np.unique(T[trie.parent[m], k - 1] * K + trie.letter[m], return_inverse=True)
        T[m, k] = nxt + inv
        nxt += len(u)
    return T


def _union(outputs: list[int], mask: int) -> int:
    """The set (a bit mask) of the values ``outputs`` gives the nodes of ``mask``."""
    out = 0
    for r, v in enumerate(outputs):
        if mask >> r & 1:
            out |= 1 << v
    return out


class Stop(Exception):
    """The search-node budget is spent."""


class BranchAndBound:
    """The search on ``traces`` (:class:`rmtk.traces.rewards.RewardTraces`) at ``n`` nodes."""

    def __init__(self, traces, n: int, budget: int | None = None):
        trie = traces.trie
        self.n, self.K, self.budget = n, len(traces.propositions), budget
        K = self.K
        values = np.unique(traces.value)
        self.V = V = len(values)
        keys, inv = np.unique(traces.node * K + traces.letter, return_inverse=True)
        self.cnt = np.zeros((len(keys), V), np.int64)
        np.add.at(self.cnt, (inv, np.searchsorted(values, traces.value)), traces.count)
        self.pn, self.pl = keys // K, keys % K
        self.par = np.where(trie.parent < 0, 0, trie.parent)
        self.let, self.ln = trie.letter, trie.length
        self.levels = [np.flatnonzero(self.ln == k) for k in range(1, int(self.ln.max(initial=0)) + 1)]
        self.T = tails(trie, K)
        self.TM = int(self.T.max()) + 1
        w = np.zeros(trie.n_nodes, np.int64)
        np.add.at(w, traces.node, traces.count)
        for lev in reversed(self.levels):  # observations in each subtree
            np.add.at(w, self.par[lev], w[lev])
        self.wsub = w
        M = 1 << n
        self.inS = np.array([[(s >> v) & 1 for v in range(V)] for s in range(1 << V)], bool)
        self.combos = np.array(list(itertools.product(range(V), repeat=n)), np.int64)
        self.Sc = np.array([[_union(c, m) for m in range(M)] for c in self.combos.tolist()])
        self.single = np.array([bin(m).count("1") == 1 for m in range(M)])
        self.bit = np.array([m.bit_length() - 1 for m in range(M)])
        self.delta = -np.ones((n, K), np.int64)
        self.out = -np.ones((n, K), np.int64)
        self.reached = 1
        self.nodes = 0
        self.best = np.iinfo(np.int64).max
        self.machine: np.ndarray | None = None  # the best found (-1: a transition no word uses)
        self.open: list[list[int]] = []  # bounds of the subtrees not yet searched, per depth
        self.path: list[int] = []  # bounds of the nodes being searched, root first

    def _successors(self) -> np.ndarray:
        """``(2^n, K)``: the possible nodes after a letter, from a set of possible nodes."""
        n, K = self.n, self.K
        one = np.zeros((n, K), np.int64)
        for a in range(K):  # an undecided transition may reach any node, one not numbered yet too
            for r in range(n):
                d = int(self.delta[r, a])
                one[r, a] = 1 << d if d >= 0 else sum(1 << t for t in range(n) if t == r or self.delta[t, a] in (-1, t))
        tm = np.zeros((1 << n, K), np.int64)
        for m in range(1 << n):
            for r in range(n):
                if m >> r & 1:
                    tm[m] |= one[r]
        return tm

    def evaluate(self) -> tuple[int, np.ndarray, np.ndarray]:
        """(the bound; per (node, letter) the observed steps whose run waits for that transition;
        per letter the outputs of the nodes that give the bound)."""
        tm, single, n, K = self._successors(), self.single, self.n, self.K
        N = len(self.par)
        mask, tid, rl = np.zeros(N, np.int64), np.zeros(N, np.int64), np.zeros(N, np.int64)
        mask[0] = 1
        for lev in self.levels:
            pm = mask[self.par[lev]]
            mask[lev] = tm[pm, self.let[lev]]
            root = single[pm] & ~single[mask[lev]]  # the first undecided word of its run
            tid[lev] = np.where(root, self.bit[pm] * K + self.let[lev], tid[self.par[lev]])
            rl[lev] = np.where(root, self.ln[lev], rl[self.par[lev]])
        pm = mask[self.pn]
        sg = single[pm]
        tail = self.T[self.pn, np.where(sg, 0, self.ln[self.pn] - rl[self.pn] + 1)]
        group = np.where(sg, self.bit[pm], n + tid[self.pn] * self.TM + tail)
        u, inv = np.unique((group * (1 << n) + pm) * K + self.pl, return_inverse=True)
        gc = np.zeros((len(u), self.V), np.int64)
        np.add.at(gc, inv, self.cnt)
        cost = gc.sum(1)[:, None] - np.where(self.inS[None], gc[:, None, :], -1).max(2)
        G = np.zeros((K, 1 << n, 1 << self.V), np.int64)
        np.add.at(G, (u % K, (u // K) % (1 << n)), cost)
        per = G[:, np.arange(1 << n)[None, :], self.Sc].sum(2)  # (K, combos)
        for r in range(n):
            fixed = self.out[r][:, None]
            per = np.where((fixed >= 0) & (self.combos[None, :, r] != fixed), np.iinfo(np.int64).max // 4, per)
        c = np.arange(1, N)
        front = c[single[mask[self.par[c]]] & ~single[mask[c]]]
        W = np.zeros((n, K), np.int64)
        np.add.at(W, (self.bit[mask[self.par[front]]], self.let[front]), self.wsub[front])
        return int(per.min(1).sum()), W, self.combos[per.argmin(1)]

    def _assign(self, q: int, a: int, r: int) -> list[tuple[int, int]] | None:
        if r != q and self.delta[r, a] not in (-1, r):
            return None  # non-stuttering: r must stay on a
        changed = [(q, a)]
        self.delta[q, a] = r
        if r != q and self.delta[r, a] == -1:
            self.delta[r, a] = r
            changed.append((r, a))
        self.reached = self._count_reached()
        return changed

    def _children(self, W: np.ndarray, majority: np.ndarray) -> list:
        """The options of this node's decision, each with its evaluation, best bound first: the
        output of a cell whose best output is not the first value (of a numbered node only: the
        nodes not numbered yet stay interchangeable), else the transition that decides the most
        observed steps."""
        cells = [
            (r, s) for s in range(self.K) for r in range(self.reached) if self.out[r, s] < 0 and majority[s, r] != 0
        ]
        kids = []
        if cells:
            r, s = cells[0]
            for v in range(self.V):
                self.out[r, s] = v
                kids.append((self.evaluate(), ("out", r, s, v)))
            self.out[r, s] = -1
        else:
            q, a = (int(i) for i in np.unravel_index(int(np.argmax(W)), W.shape))
            for r in range(min(self.reached + 1, self.n)):
                changed = self._assign(q, a, r)
                if changed is not None:
                    kids.append((self.evaluate(), ("move", q, a, r)))
                    self._unassign(changed)
        kids.sort(key=lambda t: (t[0][0], t[1]))
        return kids

    def _unassign(self, changed: list[tuple[int, int]]) -> None:
        for i, k in changed:
            self.delta[i, k] = -1
        self.reached = self._count_reached()

    def _count_reached(self) -> int:
        used = {0} | {int(d) for d in self.delta.ravel() if d >= 0}
        return max(used) + 1

    def search(self, incumbent: int | None = None) -> bool:
        """Search; ``True`` when complete (``best`` is the least noise: of ``machine`` when one
        was found below ``incumbent``, else ``incumbent`` is optimal), ``False`` when the budget
        stopped it (``lower_bound()`` then holds)."""
        if incumbent is not None:
            self.best = incumbent
        try:
            self._node(*self.evaluate())
        except (Stop, KeyboardInterrupt):  # the budget, or SIGINT: what was found, flagged
            return False
        return True

    def lower_bound(self) -> int:
        """A proven lower bound on the least noise: the best found, or less where a subtree
        not searched may hold less."""
        return min([self.best] + [b for level in self.open for b in level] + self.path[-1:])

    def _node(self, bound: int, W: np.ndarray, outputs: np.ndarray) -> None:
        self.path.append(bound)  # left in place when a stop unwinds: its subtree is not searched
        self._visit(bound, W, outputs)
        self.path.pop()

    def _visit(self, bound: int, W: np.ndarray, outputs: np.ndarray) -> None:
        self.nodes += 1
        if self.budget is not None and self.nodes > self.budget:
            raise Stop
        if self.nodes % 1000 == 0:
            print(f"  {self.nodes} search nodes, best {self.best}, lower bound {self.lower_bound()}", flush=True)
        if bound >= self.best:  # the optimum's value is wanted, not every machine at it
            return
        if W.max() == 0:  # every run decided: the bound is the machine's noise
            self.best, self.machine = bound, self.delta.copy()
            return
        kids = self._children(W, outputs)
        self.open.append([])
        for i, (ev, (kind, x, y, z)) in enumerate(kids):
            self.open[-1] = [e[0] for e, _ in kids[i + 1 :]]
            if ev[0] >= self.best:
                continue
            if kind == "out":
                self.out[x, y] = z
                self._node(*ev)
                self.out[x, y] = -1
            else:
                changed = self._assign(x, y, z)
                assert changed is not None, "an option that was feasible"
                self._node(*ev)
                self._unassign(changed)
        self.open.pop()


def traces_of(rm: str, task_name: str, demos_path: str):
    """The reward traces ``rmtk learn FILE TASK --demos F --from rewards --noisy`` searches, and
    its size (the task's ``max_nodes``)."""
    from rmtk import dsl
    from rmtk.traces.evidence import TraceRewards

    task = dsl.load(rm).tasks[task_name]
    return TraceRewards(demos_path).observe(task.mdp, None, compress=True), task.max_nodes


def check_case(case: int) -> list[tuple[int, int]]:
    """Small noisy case ``case`` (an Office task, 30 + 10·case random walks of 30 steps): per size
    2 and 3, (NoisyRewardEncoder's optimum by weighted MaxSAT, this search's)."""
    from rmtk import dsl
    from rmtk.limits import SearchLimits
    from rmtk.sat.encoders import NoisyRewardEncoder
    from rmtk.sat.encoding import Problem
    from rmtk.traces.evidence import TraceRewards
    from rmtk.traces.explorers import explore

    task = dsl.load_model("office").tasks[("coffee", "mail", "coffee_mail", "patrol")[case % 4]]
    demos = explore(task, 30 + 10 * case, 30, seed=case, epsilon=1.0, noise=(0.05, 0.1, 0.2)[case % 3])
    traces = TraceRewards(demos).observe(task.mdp, None, compress=True)
    out = []
    for n in (2, 3):
        problem = Problem(traces.trie, task.mdp.n_propositions, rewards=traces)
        res = NoisyRewardEncoder().search(problem, SearchLimits(max_nodes=n, nodes=n))
        bb = BranchAndBound(traces, n)
        assert bb.search(), "no budget: the search completes"
        print(f"case {case} ({task.name}) n={n}: MaxSAT {res.cost}, branch and bound {bb.best}", flush=True)
        out.append((int(res.cost), bb.best))
    return out


def numpy_import_cpu() -> float:
    """CPU seconds of ``python -c 'import numpy'`` in a child: the same-run reference."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", "import numpy"], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rm", nargs="?")
    ap.add_argument("task", nargs="?")
    ap.add_argument("demos", nargs="?")
    ap.add_argument("--nodes", type=int, default=None, help="machine size (default: the task's max_nodes)")
    ap.add_argument("--budget", type=int, default=None, help="search nodes before stopping")
    ap.add_argument("--incumbent", type=int, default=None, help="a noise to beat (e.g. the truth's): the proof alone")
    ap.add_argument("--check", type=int, default=0, help="compare with NoisyRewardEncoder on this many small cases")
    args = ap.parse_args()
    if args.check:
        bad = [case for case in range(args.check) if any(m != b for m, b in check_case(case))]
        print("every optimum equal" if not bad else f"different optima in cases {bad}")
        return
    c0 = time.process_time()
    traces, size = traces_of(args.rm, args.task, args.demos)
    bb = BranchAndBound(traces, args.nodes or size, budget=args.budget)
    done = bb.search(args.incumbent)
    cpu = time.process_time() - c0
    steps = int(traces.count.sum())
    print(f"{steps} observed steps, {traces.trie.n_nodes} words, {args.nodes or size} nodes")
    if done:
        found = "a machine found" if bb.machine is not None else "the incumbent given"
        print(f"optimum {bb.best} noisy steps ({found}), proven")
    else:
        found = bb.best if bb.machine is not None else f"none below {bb.best}"
        print(f"stopped (budget or SIGINT): best found {found}, proven lower bound {bb.lower_bound()}")
    print(f"{bb.nodes} search nodes, {cpu:.1f} CPU s (numpy import in a child: {numpy_import_cpu():.2f} CPU s)")


if __name__ == "__main__":
    main()
