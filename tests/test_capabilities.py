"""Strategies say what they can do (capabilities with defaults, docs/design/05-strategies.md),
and the Learner reads them: a user's strategy declaring each capability takes the path it
declares; a purely structural one gets the defaults."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from rmtk import ExactPTP, Learner, NodePolicyTable, SatEncoder, dsl
from rmtk.errors import RmtkError
from rmtk.learner.capabilities import Capabilities
from rmtk.ptp.tree import PTPCapabilities
from rmtk.sat.encoders import EncoderCapabilities


@pytest.fixture(scope="module")
def patrol():
    return dsl.load_model("patrol").tasks["patrol"]


def _key(r):
    return sorted((s.delta_u.tobytes(), s.used.tobytes()) for s in r.solutions)


def test_rmtk_strategies_inherit_their_capabilities():
    assert isinstance(ExactPTP(), PTPCapabilities) and isinstance(SatEncoder(), EncoderCapabilities)
    assert ExactPTP(None).every_depth_for(None) and not ExactPTP(4).every_depth_for(None)
    assert SatEncoder(negatives="lazy").lazy and not SatEncoder().lazy
    defaults = PTPCapabilities.of(object())  # a structural strategy reads the defaults
    assert defaults.compress is True and defaults.every_depth_for(None) is False
    assert defaults.oracle(None) is None and defaults.expert_classes(None) is None
    enc = EncoderCapabilities.of(object())
    assert enc.non_stuttering is True and enc.lazy is False
    assert issubclass(PTPCapabilities, Capabilities) and ExactPTP().compress is True


@attrs.frozen
class ProductOnly(PTPCapabilities):
    """Declares every depth and an oracle for any target, a bare MDP included (an expert that
    answers without a tree); it cannot build a tree."""

    task: object
    calls: list = attrs.field(factory=list, eq=False)

    def build(self, target, progress):
        raise AssertionError("no tree is built when the strategy gives an oracle")

    def every_depth_for(self, target):
        return True

    def oracle(self, target):
        self.calls.append(type(target).__name__)
        return ExactPTP(None).oracle(self.task)

    def expert_classes(self, task):
        return ExactPTP(None).expert_classes(task)


def test_every_depth_and_oracle_declared_by_a_user_strategy(patrol):
    reference = Learner(ExactPTP(None), irl=None).fit(patrol)
    mine = ProductOnly(patrol)
    r = Learner(mine, irl=None).fit(patrol)
    assert _key(r) == _key(reference) and r.raw_count == 6 and r.ptp is None and r.verdicts[0].consistent
    assert r.search.lazy.counterexamples == reference.search.lazy.counterexamples and r.oracle.depth is None
    # the oracle answers on a bare MDP too: every-depth learning without a task, no verdicts
    bare = Learner(mine, irl=None).fit(patrol.mdp)
    assert _key(bare) == _key(reference) and bare.verdicts is None and mine.calls == ["Task", "LabeledMDP"]
    # rewards come from the oracle's product policy
    fit = Learner(mine).fit(patrol).reward_fits[0]
    assert fit.residual < 1e-9


@attrs.frozen
class TreeOnly:
    """Structural: only build (defaults: no every depth, no oracle, compressed words)."""

    inner: ExactPTP

    def build(self, target, progress):
        return self.inner.build(target, progress)

    def expert_classes(self, task):
        return self.inner.expert_classes(task)


def test_every_depth_needs_an_oracle(patrol):
    with pytest.raises(RmtkError, match="needs the expert as a task .* or a PTP strategy whose oracle"):
        Learner(ExactPTP(None), irl=None).fit(patrol.mdp)
    # a lazy encoder with a strategy that has no oracle: the tree is built and checked lazily
    full = Learner(TreeOnly(ExactPTP(6)), irl=None).fit(patrol)
    lazy = Learner(TreeOnly(ExactPTP(6)), encoder=SatEncoder(negatives="lazy"), irl=None).fit(patrol)
    assert lazy.search.lazy is not None and full.search.lazy is None and lazy.ptp is not None
    assert _key(lazy) == _key(full) and lazy.oracle.depth == 6 and lazy.verdicts[0].consistent


@attrs.frozen
class Recording:
    """A structural encoder around SatEncoder that records whether it was given an oracle."""

    inner: SatEncoder
    seen: list = attrs.field(factory=list, eq=False)

    def encode(self, problem, n):
        return self.inner.encode(problem, n)

    def search(self, problem, limits):
        self.seen.append(problem.oracle is not None)
        return self.inner.search(problem, limits)


@attrs.frozen
class LazyRecording(Recording, EncoderCapabilities):
    lazy: bool = True


def test_encoder_lazy_capability(patrol):
    plain = Recording(SatEncoder(negatives="lazy"))  # structural: lazy is not declared, so False
    r = Learner(ExactPTP(6), encoder=plain, irl=None).fit(patrol)
    assert plain.seen == [False] and r.search.lazy is None
    declared = LazyRecording(SatEncoder(negatives="lazy"))
    r2 = Learner(ExactPTP(6), encoder=declared, irl=None).fit(patrol)
    assert declared.seen == [True] and r2.search.lazy is not None and r2.ptp is None  # ExactPTP's oracle: no tree
    assert _key(r2) == _key(r)


@attrs.frozen
class Stuttering:
    """A structural encoder declaring non_stuttering=False."""

    inner: SatEncoder = SatEncoder(non_stuttering=False)
    non_stuttering: bool = False

    def encode(self, problem, n):
        return self.inner.encode(problem, n)

    def search(self, problem, limits):
        return self.inner.search(problem, limits)


@attrs.frozen
class Uncompressed(TreeOnly, PTPCapabilities):
    """TreeOnly declaring uncompressed words."""

    inner: ExactPTP = ExactPTP(4, compress=False)
    compress: bool = False


def test_compress_and_non_stuttering_capabilities(patrol):
    with pytest.raises(RmtkError, match="compressed prefixes assume a non-stuttering machine"):
        Learner(TreeOnly(ExactPTP(4, compress=False)), encoder=Stuttering())  # compress defaults to True
    r = Learner(Uncompressed(), encoder=Stuttering(), irl=None).fit(patrol)
    same = Learner(ExactPTP(4, compress=False), encoder=SatEncoder(non_stuttering=False), irl=None).fit(patrol)
    assert not r.tree.trie.compressed and _key(r) == _key(same) and r.raw_count == same.raw_count
    # a strategy that declares uncompressed words but builds compressed ones is caught at fit
    liar = attrs.evolve(Uncompressed(), inner=ExactPTP(4))
    with pytest.raises(RmtkError, match="built compressed words, which assume a non-stuttering machine"):
        Learner(liar, encoder=Stuttering(), irl=None).fit(patrol)


def _uniform(task):
    """An expert that ignores the machine: every node acts uniformly at random."""
    m, S, A = task.machine.n_nodes, task.mdp.n_states, task.mdp.n_actions
    return NodePolicyTable(np.full((m, S, A), 1 / A))


def test_verdicts_need_the_experts_policy_classes(patrol):
    uniform = _uniform(patrol)

    @attrs.frozen
    class Silent:  # structural, says nothing about its expert
        def build(self, target, progress):
            return ExactPTP(6, source=uniform).build(target, progress)

    with pytest.warns(UserWarning, match="no verdicts: the PTP strategy Silent does not say which expert"):
        r = Learner(Silent(), irl=None).fit(patrol)
    # the uniform expert gives no negative example: one node; its verdict is not guessed from
    # the task's soft-optimal policy (under which this machine is inconsistent)
    assert r.n_nodes == 1 and r.verdicts is None and r.truth is patrol.machine

    @attrs.frozen
    class Declared(PTPCapabilities):
        def build(self, target, progress):
            return ExactPTP(6, source=uniform).build(target, progress)

        def expert_classes(self, task):
            return uniform.class_table(task)

    r = Learner(Declared(), irl=None).fit(patrol)
    assert r.n_nodes == 1 and r.verdicts[0].consistent  # right: the uniform expert needs one node
    from rmtk.learner.pipeline import verdicts_of
    from rmtk.ptp.exact import SoftOptimal

    (guess,), _ = verdicts_of(patrol, SoftOptimal().class_table(patrol), r.machines, r.solutions, True)
    assert not guess.consistent  # what the soft-optimal guess would have said

    @attrs.frozen
    class Misshapen(PTPCapabilities):
        def build(self, target, progress):
            return ExactPTP(6).build(target, progress)

        def expert_classes(self, task):
            return np.zeros((3, 3), np.int64)

    with pytest.raises(RmtkError, match=r"Misshapen.expert_classes gave an array of shape \(3, 3\)"):
        Learner(Misshapen(), irl=None).fit(patrol)
