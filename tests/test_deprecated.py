"""The previous version's import paths and names keep working until rmtk 0.3.0 (rmtk/_deprecated.py,
CHANGELOG's "Deprecated"): every old path imports, every old name gives its new object, each warns
once with a DeprecationWarning naming the new place, names with no new home say what replaces
them, and the adapters of old calls give the answer of the new API they translate to."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from rmtk import _deprecated, dsl
from rmtk._deprecated import GONE, MODULES, NAMES, REMOVED_IN

ROOT = Path(__file__).resolve().parents[1]


def _forget(*old: str) -> None:
    """As in a fresh process: nothing warned yet, the old modules not imported."""
    _deprecated._warned.clear()
    for name in old:
        sys.modules.pop(name, None)
        parent, _, child = name.rpartition(".")
        if parent in sys.modules and child in vars(sys.modules[parent]):
            delattr(sys.modules[parent], child)


def _needs_extra(path: str) -> None:
    """Old paths under an extra need it installed (it is in [test])."""
    target = MODULES.get(path, path)
    if target.startswith("rmtk.gym"):
        pytest.importorskip("gymnasium")
    if target.startswith(("rmtk.engines.dask", "rmtk.engines.cluster")):
        pytest.importorskip("distributed")


def _silently(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = fn()
    return value, [w for w in caught if issubclass(w.category, DeprecationWarning)]


@pytest.mark.parametrize("old", sorted(MODULES))
def test_every_old_module_path_imports_warns_once_and_gives_the_new_objects(old):
    _needs_extra(old)
    new = importlib.import_module(MODULES[old])
    _forget(old)
    with pytest.warns(DeprecationWarning, match=re.escape(MODULES[old])) as caught:
        __import__(old)  # an import statement's call
    module = sys.modules[old]
    (ours,) = [w for w in caught if str(w.message).startswith(old + " ")]
    assert _deprecated.removed_in(old) in str(ours.message) and ours.filename == __file__  # the user's line
    public = [n for n in getattr(new, "__all__", dir(new)) if not n.startswith("_")]
    assert public and all(getattr(module, n) is getattr(new, n) for n in public)
    # once per process: imported again (even afresh), it says nothing
    _forget(old)
    _deprecated._warned.add(old)
    again, said = _silently(lambda: importlib.import_module(old))
    assert said == [] and again.__name__ == old


def test_from_import_of_an_old_path_is_the_same_object():
    _forget("rmtk.expert", "rmtk.shortest")
    with pytest.warns(DeprecationWarning, match=r"rmtk\.active\.experts"):
        from rmtk.expert import SimulatedExpert, TaskExpert
    with pytest.warns(DeprecationWarning, match=r"rmtk\.ptp\.exact"):
        from rmtk.shortest import shortest_path_table
    from rmtk.active.experts import SimulatedExpert as new_simulated
    from rmtk.active.experts import TaskExpert as new_task
    from rmtk.ptp.exact import shortest_path_table as new_shortest

    assert (TaskExpert, SimulatedExpert, shortest_path_table) == (new_task, new_simulated, new_shortest)


@pytest.mark.parametrize("old", sorted(NAMES))
def test_every_moved_name_gives_its_new_home_and_warns_once(old):
    module_path, name = old.rsplit(".", 1)
    new_module, new_name, use = NAMES[old]
    _needs_extra(module_path)
    _forget(*(p for p in MODULES if p == module_path))
    module, _ = _silently(lambda: importlib.import_module(module_path))
    with pytest.warns(DeprecationWarning, match=re.escape(use)) as caught:
        value = getattr(module, name)
    assert len(caught) == 1 and _deprecated.removed_in(old) in str(caught[0].message)
    assert value is getattr(importlib.import_module(new_module), new_name)
    again, said = _silently(lambda: getattr(module, name))
    assert again is value and said == []


@pytest.mark.parametrize("old", sorted(GONE))
def test_a_name_with_no_new_home_says_what_replaces_it(old):
    module_path, name = old.rsplit(".", 1)
    module, _ = _silently(lambda: importlib.import_module(module_path))
    with pytest.raises(AttributeError, match=re.escape(GONE[old])):
        getattr(module, name)


def test_unknown_names_are_still_attribute_errors():
    module, _ = _silently(lambda: importlib.import_module("rmtk.label_learner"))
    with pytest.raises(AttributeError, match="no attribute 'nosuch'"):
        module.nosuch  # noqa: B018
    import rmtk.active

    with pytest.raises(AttributeError, match="'rmtk.active' has no attribute 'nosuch'"):
        rmtk.active.nosuch  # noqa: B018


def test_import_rmtk_imports_no_extra_and_old_paths_load_theirs_when_imported():
    pytest.importorskip("gymnasium")
    extras = "sorted(m for m in ('gymnasium', 'dask', 'distributed', 'torch') if m in sys.modules)"
    probe = "; ".join(
        [
            "import sys, warnings",
            "warnings.simplefilter('ignore')",
            "import rmtk, rmtk.active, rmtk.labels, rmtk.expert, rmtk.label_learner, rmtk.recorded_active",
            f"print({extras})",
            "import rmtk.gym.expert",
            f"print({extras})",
        ]
    )
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == ["[]", "['gymnasium']"]


# -- adapters: the old call gives the new API's answer -------------------------------------------
def _old(path: str):
    module, name = path.rsplit(".", 1)
    return _silently(lambda: getattr(importlib.import_module(module), name))[0]


def _pairs(result):
    return sorted((s.labels.tolist(), s.delta_u.tolist()) for s in result.solutions)


def test_recorded_active_learner_is_the_loop_asking_at_recorded_triples():
    from rmtk.active import ActiveLearner, AtRecordedTriples, Budget, SimulatedExpert
    from rmtk.empirical import count_chunk
    from rmtk.exact import NodePolicyTable, greedy_table
    from rmtk.planning import task_policy
    from rmtk.simulate import simulate

    task = dsl.load_model("stack").tasks["stack"]
    source = NodePolicyTable(greedy_table(task_policy(task), 0.1))
    table = count_chunk(task.mdp, simulate(task, 300, 30, seed=0, policy=source))
    lines: list[str] = []
    old = _old("rmtk.recorded_active.RecordedActiveLearner")(max_nodes=3, alpha=1e-3, progress=lines.append)
    got = old.fit(table, SimulatedExpert(task, source=source, seed=1))
    new = ActiveLearner(strategy=AtRecordedTriples(), max_nodes=3, alpha=1e-3, max_rounds=50).fit(
        task.mdp, SimulatedExpert(task, source=source, seed=1), data=table
    )
    assert got.stopped.startswith("one machine survives") and not got.flagged
    assert [s.delta_u.tolist() for s in got.solutions] == [s.delta_u.tolist() for s in new.solutions]
    assert (got.draws, got.queries, len(got.rounds)) == (new.draws, new.queries, len(new.rounds))
    assert len(lines) == len(got.rounds)  # the old progress callable hears one line per round
    assert isinstance(got, _old("rmtk.recorded_active.RecordedActiveResult"))
    spent = _old("rmtk.recorded_active.RecordedActiveLearner")(max_nodes=3, alpha=1e-3, budget=Budget(steps=30))
    stopped = spent.fit(table, SimulatedExpert(task, source=source, seed=1))
    # the old steps were the actions drawn: the draws budget now
    assert stopped.exhausted == "draws" and stopped.draws <= 30 and stopped.flagged
    with pytest.raises(Exception, match="count table"):
        old.fit("counts.npz", SimulatedExpert(task, source=source))
    with pytest.raises(Exception, match="samples"):
        _old("rmtk.recorded_active.RecordedActiveLearner")(samples=0)


def test_labeling_encoder_in_a_learner_is_the_label_learner():
    from rmtk import ExactPTP, Learner
    from rmtk.labels import LabelLearner

    task = dsl.load_model("stack").tasks["stack"]
    encoder = _old("rmtk.label_learner.LabelingEncoder")()
    got = Learner(encoder=encoder).fit(task)  # the previous version's call: the task's depth
    new = LabelLearner(ptp=ExactPTP()).fit(task)
    assert (
        (got.n_nodes, got.n_props, got.truth_survives)
        == (new.n_nodes, new.n_props, new.truth_survives)
        == (
            3,
            4,
            True,
        )
    )
    assert _pairs(got) == _pairs(new) and len(got.solutions) == 2  # as the previous version found
    assert _old("rmtk.label_learner.fit_labels") is _deprecated.fit_labels  # what Learner.fit ran above
    assert encoder.knowledge(task.mdp)[1] == ()
    with pytest.raises(Exception, match="max_props=1 is below props=2"):
        _old("rmtk.label_learner.LabelingEncoder")(props=2, max_props=1)


def test_labels_from_active_is_fit_questions():
    from rmtk.active import ActiveLearner, TaskExpert
    from rmtk.labels import LabelLearner
    from rmtk.labels.histories import state_task

    task = dsl.load_model("patrol_hallway").tasks["patrol_hallway"]
    st = state_task(task)
    active = ActiveLearner().fit(st, TaskExpert(st))
    got = _old("rmtk.label_learner.labels_from_active")(active, task)
    new = LabelLearner().fit_questions(active, task)
    assert _pairs(got) == _pairs(new) and (len(got.solutions), got.n_nodes, got.n_props, got.truth_survives) == (
        1,
        4,
        5,
        True,
    )  # as the previous version found
    assert _old("rmtk.label_report.separating")(got) == got.explain()


def test_collect_with_the_old_cluster_keywords_records_the_same(dask_client):
    pytest.importorskip("gymnasium")
    from rmtk.exact import shortest_path_table
    from rmtk.gym import Identity, MdpVectorEnv, NodePolicy, StateLabels, collect

    coffee = dsl.load_model("office").tasks["coffee"]
    mdp = coffee.mdp
    policy = NodePolicy.from_table(coffee.machine, shortest_path_table(coffee, 0.3))
    make = lambda: MdpVectorEnv(mdp, 50, max_steps=20)  # noqa: E731
    args = (make, policy, StateLabels.of(mdp), Identity(), 200)
    local = collect(*args, seed=5, shard=100)
    _deprecated._warned.clear()
    with pytest.warns(DeprecationWarning, match=re.escape("engine=rmtk.engines.dask.DaskEngine(client=...)")) as w:
        on_dask = collect(*args, seed=5, shard=100, client=dask_client)
    assert on_dask == local and w[0].filename == __file__
    _, said = _silently(lambda: collect(*args, seed=5, shard=100, client=dask_client))
    assert said == []  # once
    with pytest.warns(DeprecationWarning, match="workers="):
        assert collect(*args, seed=5, shard=100, workers=1) == local  # one worker: this process
    engine = _silently(lambda: _deprecated.collect_engine("local", 3, None, None))[0]
    assert type(engine).__name__ == "DaskEngine" and engine.workers == 3


def test_old_names_on_modules_that_remain():
    import rmtk.active
    import rmtk.cli
    from rmtk.active.loop import default_check
    from rmtk.cli.main import build_parser

    _forget()
    with pytest.warns(DeprecationWarning, match=r"rmtk\.cli\.main\.build_parser"):
        assert rmtk.cli.build_parser is build_parser
    with pytest.warns(DeprecationWarning, match=r"rmtk\.active\.loop\.default_check"):
        assert rmtk.active.default_check is default_check
    with pytest.warns(DeprecationWarning, match=r"rmtk\.sat\.solver\.SOLVERS"):
        encoders, _ = _silently(lambda: importlib.import_module("rmtk.encoders"))  # itself moved since
        assert "cadical153" in encoders.SOLVERS
    assert np.all([callable(rmtk.cli.main)])  # the entry point rmtk.cli:main is unchanged


@pytest.mark.parametrize("doc", ["CHANGELOG.md", "docs/guide/13-upgrading.md"])
def test_the_changelog_and_the_upgrading_page_list_every_old_path_and_name(doc):
    text = (ROOT / doc).read_text()
    missing = [f"`{old}`" for old in [*MODULES, *NAMES, *GONE] if f"`{old}`" not in text]
    assert missing == [] and REMOVED_IN in text and _deprecated.FOLDERS_REMOVED_IN in text


#: Modules of 0.2 that became folders in 0.3 → the module of the folder that holds their code.
FOLDER_MODULES = {
    "rmtk.machine": "rmtk.machine.model",
    "rmtk.mdp": "rmtk.mdp.model",
    "rmtk.product": "rmtk.product.model",
    "rmtk.ptp": "rmtk.ptp.tree",
    "rmtk.negatives": "rmtk.negatives.miners",
    "rmtk.learner": "rmtk.learner.pipeline",
}


@pytest.mark.parametrize("old", sorted(FOLDER_MODULES))
def test_a_module_that_became_a_folder_keeps_every_name_without_a_warning(old):
    home = importlib.import_module(FOLDER_MODULES[old])
    names = [n for n in vars(home) if not n.startswith("__")]
    package, said = _silently(lambda: importlib.import_module(old))
    values, said_too = _silently(lambda: [getattr(package, n) for n in names])
    assert said == said_too == [] and len(names) > 1
    assert all(v is getattr(home, n) for n, v in zip(names, values))
    if old == "rmtk.learner":  # a name the old module served on first use, as it still does
        from rmtk.ptp.empirical import EmpiricalPTP

        assert package.EmpiricalPTP is EmpiricalPTP
    with pytest.raises(AttributeError, match="has no attribute 'nosuch'"):
        package.nosuch  # noqa: B018
