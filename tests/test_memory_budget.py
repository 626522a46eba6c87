"""A run's memory is the user's choice (rmtk/experiments/__init__.py, check_memory): ``rmtk
reproduce`` says an experiment's memory estimate before it starts and refuses a run estimated
above ``--max-memory`` (default 2 GB) until the user raises it; every shipped experiment's
default run is estimated below the limit. The reacher records no moves it never reads
(``collect(moves=False)``): the same counts, no (s, a, s') rows."""

from __future__ import annotations

import numpy as np
import pytest

from rmtk.cli.main import main
from rmtk.errors import UsageError
from rmtk.experiments import EXPERIMENTS, MAX_MEMORY, Options, check_memory, run
from rmtk.progress import Progress


class Notes(Progress):
    def __init__(self):
        self.said = []

    def note(self, message):
        self.said.append(message)


def options(**overrides):
    module = EXPERIMENTS["reacher"].load()
    return module, Options(overrides=overrides, settings=module.SETTINGS, progress=Notes())


def test_every_default_run_is_estimated_below_the_limit():
    estimated = 0
    for name, exp in EXPERIMENTS.items():
        module = exp.load()
        if not hasattr(module, "memory"):
            continue
        for quick in (False, True):
            need = check_memory(name, module, Options(quick=quick, settings=module.SETTINGS, progress=Notes()))
            assert need is not None and 0 < need.gb < MAX_MEMORY
            estimated += 1
    assert estimated >= 2  # the reacher, default and quick


def test_the_issue_s_active_agent_run_is_within_the_limit_and_says_so():
    module, opts = options(expert="agent", active="true")
    need = check_memory("reacher", module, opts)
    assert need.gb < 2.0
    assert opts.progress.said == [f"reacher: {need}; the limit is 2 GB (--max-memory)"]
    assert "memory estimate: about" in opts.progress.said[0] and "100,000 trajectories" in opts.progress.said[0]


def test_a_larger_run_is_refused_before_any_work_until_the_user_raises_the_limit():
    module, opts = options(expert="agent", active="true", trajectories="1000000")
    with pytest.raises(UsageError, match=r"reacher: memory estimate: about \d+\.\d GB.*--max-memory \d+"):
        run("reacher", opts)  # refused before the MuJoCo check: nothing is recorded
    need = check_memory("reacher", module, Options(overrides=opts.overrides, settings=module.SETTINGS, max_memory=64))
    assert need.gb > 2.0  # an estimate that grows with the trajectories
    small_module, small_opts = options(trajectories="1000", expert="agent", active="true")
    assert check_memory("reacher", small_module, small_opts).gb < need.gb


def test_the_command_line_refuses_with_status_2(capsys):
    status = main(["reproduce", "reacher", "--set", "trajectories=1000000", "--set", "expert=agent", "--no-figures"])
    err = capsys.readouterr().err
    assert status == 2 and "memory estimate" in err and "--max-memory" in err
    with pytest.raises(SystemExit):
        main(["reproduce", "reacher", "--max-memory", "0"])
    assert "above 0" in capsys.readouterr().err


def test_options_refuse_a_nonsense_limit():
    with pytest.raises(Exception, match="max_memory"):
        Options(max_memory=-1)


def test_a_recording_without_moves_has_the_same_counts():
    pytest.importorskip("gymnasium")
    from rmtk import dsl
    from rmtk.gym import Identity, MdpVectorEnv, StateLabels, collect

    mdp = dsl.load_model("office").tasks["coffee"].mdp

    def uniform(obs, ctx):
        return ctx.rng.integers(0, 4, size=len(obs))

    make = lambda: MdpVectorEnv(mdp, 40, max_steps=15)  # noqa: E731
    full = collect(make, uniform, StateLabels.of(mdp), Identity(), 120, seed=2, shard=40)
    lean = collect(make, uniform, StateLabels.of(mdp), Identity(), 120, seed=2, shard=40, moves=False)
    assert len(full.moves) > 0 and full.moves.shape[1] == 3
    assert lean.moves.shape == (0, 3) and len(lean.move_counts) == 0
    assert lean.table == full.table and np.array_equal(lean.starts, full.starts)


def test_answers_merge_into_the_sorted_keys_as_a_sort_of_both_would():
    """rmtk.ptp.empirical.merge_counts (each batch of the expert's answers joining the knowledge)
    inserts the few new keys into the sorted ones (rmtk.ptp._keys): the keys and counts of sorting
    both; keys not sorted are left to the sort."""
    from rmtk.ptp._keys import merge_sorted
    from rmtk.ptp.empirical import _aggregate

    rng = np.random.default_rng(0)
    for _ in range(300):
        a = np.unique(rng.integers(0, 200, int(rng.integers(2, 50))))
        b = rng.integers(0, 220, int(rng.integers(0, 20)))
        ac, bc = rng.integers(1, 9, len(a)), rng.integers(1, 9, len(b))
        keys, counts = merge_sorted(a, ac, b, bc)
        ref_keys, ref_counts = _aggregate(np.concatenate([a, b]), np.concatenate([ac, bc]))
        assert np.array_equal(keys, ref_keys) and np.array_equal(counts, ref_counts)
        assert counts.dtype == ref_counts.dtype == np.int64
    assert merge_sorted(np.array([3, 1]), np.array([1, 1]), np.array([2]), np.array([1])) is None
