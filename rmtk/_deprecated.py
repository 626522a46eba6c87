"""Every import path and name of the previous version that moved, in one table, kept working
for one minor version with a :class:`DeprecationWarning` that names the new place (CHANGELOG's
version policy). They go away in :data:`REMOVED_IN`.

* :data:`MODULES`: an old module path → its new module. ``import rmtk.expert`` is served by a
  finder on :data:`sys.meta_path` (installed by ``import rmtk``) with a stand-in module that
  reads its attributes from the new module, so ``from rmtk.expert import TaskExpert`` gives
  the very object of :mod:`rmtk.active.experts`. The new module is imported only then: an old
  path under an extra (``rmtk.gym.expert``, ``rmtk.dask_engine``) loads the extra on its own
  import, never with ``import rmtk``.
* :data:`NAMES`: an old name → its new home, for names that left their module (read through
  the stand-ins, and through the module ``__getattr__`` of the modules that still exist:
  :mod:`rmtk.active`, :mod:`rmtk.cli`). A name whose call changed shape
  is served by an adapter below that translates the old call into the new API.
* :data:`GONE`: old names with no new home, refused with what replaces them.

Each old path or name warns once per process. This module imports nothing of rmtk at import
time; the new homes are imported by name when an old one is used.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from typing import Any

import attrs

#: The version the names below go away in (two minor versions after 0.1.0: they keep working
#: through 0.2).
REMOVED_IN = "0.3.0"

#: Old module path → new module path.
MODULES: dict[str, str] = {
    "rmtk.expert": "rmtk.active.experts",
    "rmtk.survivors": "rmtk.active.survivors",
    "rmtk.queries": "rmtk.active.questions",
    "rmtk.recorded_active": "rmtk.active.recorded",
    "rmtk.histories": "rmtk.labels.histories",
    "rmtk.labeling": "rmtk.labels.encoding",
    "rmtk.label_free": "rmtk.labels.label_free",
    "rmtk.label_search": "rmtk.labels.search",
    "rmtk.label_learner": "rmtk.labels.learner",
    "rmtk.label_report": "rmtk.labels.report",
    "rmtk.dask_engine": "rmtk.engines.dask",
    "rmtk.dask_cluster": "rmtk.engines.cluster",
    "rmtk.shards": "rmtk.engines.shards",
    "rmtk.maxent": "rmtk.rewards.maxent",
    "rmtk.margin": "rmtk.rewards.margin",
    "rmtk.irl": "rmtk.rewards.recovery",
    "rmtk.l1": "rmtk.rewards.l1",
    "rmtk.baselines": "rmtk.rewards.baselines",
    "rmtk.encoding": "rmtk.sat.encoding",
    "rmtk.solve": "rmtk.sat.search",
    "rmtk.lazy": "rmtk.sat.lazy",
    "rmtk.draw": "rmtk.io.draw",
    "rmtk.display": "rmtk.io.display",
    "rmtk.cli_args": "rmtk.cli.args",
    "rmtk.shortest": "rmtk.ptp.exact",
    "rmtk.simplest": "rmtk.sat.encoders",
    "rmtk.gym.expert": "rmtk.gym.experts",
    "rmtk.gym.replay": "rmtk.gym.experts",
    "rmtk.gym.reacher_expert": "rmtk.gym.reacher",
    "rmtk.reward_traces": "rmtk.traces.rewards",
    "rmtk.reward_evidence": "rmtk.traces.evidence",
    "rmtk.reward_learning": "rmtk.traces.compare",
    "rmtk.explore": "rmtk.traces.explorers",
}

#: The version the module paths of :data:`FOLDERS` go away in: they moved one minor version
#: after the others (0.3: the top-level concept modules into their folders,
#: docs/design/00-map.md), so they keep working through 0.3.
FOLDERS_REMOVED_IN = "0.4.0"

#: Old module path → new module path, for the modules that moved into concept folders in 0.3
#: (part of :data:`MODULES`).
FOLDERS: dict[str, str] = {
    "rmtk.equivalence": "rmtk.machine.equivalence",
    "rmtk.space": "rmtk.mdp.space",
    "rmtk.planning": "rmtk.product.planning",
    "rmtk.simulate": "rmtk.product.simulate",
    "rmtk.exact": "rmtk.ptp.exact",
    "rmtk.empirical": "rmtk.ptp.empirical",
    "rmtk.anytime": "rmtk.negatives.anytime",
    "rmtk.statistics": "rmtk.negatives.statistics",
    "rmtk.encoders": "rmtk.sat.encoders",
    "rmtk.result": "rmtk.learner.result",
    "rmtk.report": "rmtk.learner.report",
    "rmtk.summary": "rmtk.learner.summary",
    "rmtk.explain": "rmtk.learner.explain",
    "rmtk.capabilities": "rmtk.learner.capabilities",
    "rmtk.evaluation": "rmtk.learner.evaluation",
}
MODULES.update(FOLDERS)


def removed_in(old: str) -> str:
    """The version an old module path or name goes away in."""
    return FOLDERS_REMOVED_IN if old in FOLDERS else REMOVED_IN


_ADAPTER = "rmtk._deprecated"

#: Old ``module.name`` → ``(new module, new name, what to write now)``; the new module
#: ``rmtk._deprecated`` is an adapter of this module.
NAMES: dict[str, tuple[str, str, str]] = {
    # names of modules that still exist
    "rmtk.active.default_check": ("rmtk.active.loop", "default_check", "rmtk.active.loop.default_check"),
    "rmtk.encoders.SOLVERS": ("rmtk.sat.solver", "SOLVERS", "rmtk.sat.solver.SOLVERS"),
    **{
        f"rmtk.cli.{n}": ("rmtk.cli.main", n, f"rmtk.cli.main.{n}")
        for n in ("build_parser", "cmd_check", "cmd_reproduce", "cmd_show", "cmd_simulate")
    },
    "rmtk.cli.cmd_learn": ("rmtk.cli.learn", "cmd_learn", "rmtk.cli.learn.cmd_learn"),
    # names that left the module of their old path
    "rmtk.survivors.POLICY_TOL": ("rmtk.negatives.miners", "POLICY_TOL", "rmtk.negatives.miners.POLICY_TOL"),
    **{
        f"rmtk.queries.{n}": ("rmtk.active.checks", n, f"rmtk.active.checks.{n}")
        for n in ("EquivalenceCheck", "ProductCheck", "ExpertWalks")
    },
    "rmtk.recorded_active.RecordedActiveLearner": (
        _ADAPTER,
        "RecordedActiveLearner",
        "rmtk.active.ActiveLearner(strategy=rmtk.active.AtRecordedTriples(samples=, tries=, pick=)).fit(space, "
        "expert, data=table)",
    ),
    "rmtk.recorded_active.RecordedActiveResult": ("rmtk.active.result", "ActiveResult", "rmtk.active.ActiveResult"),
    "rmtk.recorded_active.RecordedRound": ("rmtk.active.result", "Round", "rmtk.active.Round"),
    "rmtk.label_learner.LabelingEncoder": (
        _ADAPTER,
        "LabelingEncoder",
        "rmtk.labels.LabelLearner(ptp, search=rmtk.labels.SmallestPairs(...), known=, props=, ...).fit(target)",
    ),
    "rmtk.label_learner.labels_from_active": (
        _ADAPTER,
        "labels_from_active",
        "rmtk.labels.LabelLearner(...).fit_questions(active, target)",
    ),
    "rmtk.label_learner.fit_labels": (_ADAPTER, "fit_labels", "rmtk.labels.LabelLearner(...).fit(target)"),
    "rmtk.label_learner.LabelVerdict": ("rmtk.labels.verdicts", "LabelVerdict", "rmtk.labels.verdicts.LabelVerdict"),
    "rmtk.label_learner.truth_pair": ("rmtk.labels.verdicts", "truth_pair", "rmtk.labels.verdicts.truth_pair"),
    "rmtk.label_learner.SurvivorSummary": (
        "rmtk.labels.result",
        "SurvivorSummary",
        "rmtk.labels.result.SurvivorSummary",
    ),
    "rmtk.label_learner.state_names": ("rmtk.labels.knowledge", "state_names", "rmtk.labels.knowledge.state_names"),
    "rmtk.label_learner.SOLVERS": ("rmtk.sat.solver", "SOLVERS", "rmtk.sat.solver.SOLVERS"),
    "rmtk.label_report.separating": (_ADAPTER, "separating", "rmtk.labels.LabelLearnResult.explain(limit)"),
    **{
        f"rmtk.label_search.{n}": ("rmtk.labels.pairs", n, f"rmtk.labels.pairs.{n}")
        for n in ("canonical_pair", "first_occurrence", "mdp_reachable", "reached_states", "renamings")
    },
    "rmtk.label_search.free_states": ("rmtk.labels.freedom", "free_states", "rmtk.labels.freedom.free_states"),
    **{
        f"rmtk.label_free.{n}": ("rmtk.labels.encoding", n, f"rmtk.labels.encoding.{n}")
        for n in ("CORE_BUDGET", "equal_columns", "shrink_core")
    },
    **{f"rmtk.irl.{n}": ("rmtk.rewards.system", n, f"rmtk.rewards.system.{n}") for n in ("IDENT_TOL", "REFINE_STEPS")},
    **{
        f"rmtk.solve.{n}": ("rmtk.sat.solver", n, f"rmtk.sat.solver.{n}")
        for n in ("SOLVERS", "NOT_INTERRUPTIBLE", "FIRST_SLICE", "pysat_sigint_off")
    },
    "rmtk.solve.INTERRUPTIBLE_FALLBACK": ("rmtk.sat.solver", "INTERRUPTIBLE", "rmtk.sat.solver.INTERRUPTIBLE"),
}

_PER_K = "gone with the per-k formula: rmtk.labels.encoding.PairFormula holds every family of clauses"

_SLICES = (
    "a call's slices are sized by the solver's work, never by seconds: "
    "rmtk.sat.solver.FIRST_SLICE, MAX_SLICE and SLICE_PROPAGATIONS (docs/design/determinism.md)"
)

#: Old ``module.name`` with no new home → what replaces it.
GONE: dict[str, str] = {
    "rmtk.queries.QueryStrategy": (
        "the loop's question strategies follow rmtk.active.QuestionStrategy (start(setting) -> Inquiry)"
    ),
    "rmtk.solve.solver_for": "a time limit no longer swaps the SAT backend (rmtk.sat.solver.solve runs in slices)",
    "rmtk.label_search.label_search": (
        "use rmtk.labels.SmallestPairs(symmetry_breaking=, non_stuttering=, solver=, negatives=, small_k=)"
        ".search(problem, n_states, reach, knowledge, limits), or rmtk.labels.LabelLearner"
    ),
    "rmtk.label_search.SMALL_K": "use rmtk.labels.SmallestPairs(small_k=...) (default 0)",
    **{f"{m}.{n}": _SLICES for m in ("rmtk.solve", "rmtk.sat.solver") for n in ("SLICE_CONFLICTS", "SLICE_SECONDS")},
    **{
        f"rmtk.labeling.{n}": _PER_K
        for n in (
            "LabelPool",
            "LabelLazyFormula",
            "one_label_per_state",
            "state_runs",
            "all_propositions_used",
            "known_labels",
            "shared_labels",
            "decode_labels",
        )
    },
}

_warned: set[str] = set()


def warn_once(old: str, new: str, stacklevel: int = 4) -> None:
    """Warn, once per process, that ``old`` is deprecated and what to use instead;
    ``stacklevel`` as for :func:`warnings.warn`, counted from here (4: the user's line that
    called the function that called the function that called this one)."""
    if old in _warned:
        return
    _warned.add(old)
    warnings.warn(
        f"{old} is deprecated and will be removed in rmtk {removed_in(old)}: use {new}",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def moved(module: str, name: str) -> Any:
    """The module ``__getattr__`` of a module some of whose old names moved: the name from its
    new home, with a warning, or the usual AttributeError."""
    key = f"{module}.{name}"
    if key in NAMES:
        new_module, new_name, use = NAMES[key]
        warn_once(key, use)
        return getattr(importlib.import_module(new_module), new_name)
    if key in GONE:
        raise AttributeError(f"{key} was removed: {GONE[key]}")
    raise AttributeError(f"module {module!r} has no attribute {name!r}")


class _OldModule(types.ModuleType):
    """The stand-in of an old module path: its names come from the new module (the same
    objects), those that moved from :data:`NAMES`."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        key = f"{self.__name__}.{name}"
        if key in NAMES or key in GONE:
            return moved(self.__name__, name)
        return getattr(importlib.import_module(MODULES[self.__name__]), name)

    def __dir__(self) -> list[str]:
        new = importlib.import_module(MODULES[self.__name__])
        prefix = self.__name__ + "."
        return sorted(set(dir(new)) | {k[len(prefix) :] for k in NAMES if k.startswith(prefix)})


class _OldPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """The finder and loader of the old module paths of :data:`MODULES`."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MODULES:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        return _OldModule(spec.name)

    def exec_module(self, module) -> None:
        new = MODULES[module.__name__]
        importlib.import_module(new)  # an extra's error (no gymnasium, no dask) is raised here, as the new path's
        module.__doc__ = f"Deprecated alias of {new} (goes away in rmtk {removed_in(module.__name__)})."
        warn_once(module.__name__, new, stacklevel=3)  # the import machinery's frames are skipped


def install() -> None:
    """Serve the old module paths (idempotent)."""
    if not any(isinstance(f, _OldPaths) for f in sys.meta_path):
        sys.meta_path.append(_OldPaths())


# ---------------------------------------------------------------------------- adapters
def _new(path: str) -> Any:
    module, name = path.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


@attrs.frozen
class LabelingEncoder:
    """The previous version's way to learn the labels, ``Learner(ptp,
    encoder=LabelingEncoder(...)).fit(target)``, now :class:`~rmtk.labels.learner.LabelLearner`
    with the same settings (:meth:`label_learner`); :meth:`rmtk.learner.Learner.fit` hands it
    over."""

    props: int | None = None
    max_props: int | None = None
    known: Any = attrs.field(factory=dict)
    shared: Any = ()
    negatives: str = "lazy"
    symmetry_breaking: bool = True
    non_stuttering: bool = True
    solver: str = "cadical153"
    freedom: bool = True

    def __attrs_post_init__(self):
        self.label_learner()  # the new API validates the settings, as the old encoder did

    @property
    def lazy(self) -> bool:
        return self.negatives == "lazy"

    def label_learner(self, learner: Any = None) -> Any:
        """The :class:`~rmtk.labels.learner.LabelLearner` with these settings and, from
        ``learner`` (a :class:`~rmtk.learner.Learner`), its PTP, miner, sizes and limits."""
        search = _new("rmtk.labels.search.SmallestPairs")(
            symmetry_breaking=self.symmetry_breaking,
            non_stuttering=self.non_stuttering,
            solver=self.solver,
            negatives=self.negatives,
        )
        settings = dict(
            search=search,
            known=self.known,
            shared=self.shared,
            props=self.props,
            max_props=self.max_props,
            freedom=self.freedom,
        )
        if learner is not None:
            keep = ("ptp", "miner", "max_nodes", "nodes", "max_solutions", "time_limit", "progress")
            settings.update({k: getattr(learner, k) for k in keep})
        return _new("rmtk.labels.learner.LabelLearner")(**settings)

    def fit_labels(self, learner: Any, target: Any) -> Any:
        """What ``Learner(encoder=self).fit(target)`` runs: the LabelLearner's fit."""
        return self.label_learner(learner).fit(target)

    def knowledge(self, mdp: Any) -> tuple:
        """The known labels as state indices and the named propositions (now
        :func:`rmtk.labels.knowledge.knowledge`)."""
        return _new("rmtk.labels.knowledge.knowledge")(mdp, self.known, self.shared, self.props, self.max_props)

    def encode(self, problem: Any, n: int) -> Any:
        raise _new("rmtk.errors.RmtkError")("LabelingEncoder searches over (nodes, propositions): use LabelLearner")

    def search(self, problem: Any, limits: Any = None) -> Any:
        raise _new("rmtk.errors.RmtkError")("LabelingEncoder needs the MDP's states: use LabelLearner(...).fit(target)")


def fit_labels(learner: Any, encoder: LabelingEncoder, target: Any) -> Any:
    """``LabelLearner(...).fit(target)`` with the settings of ``learner`` and ``encoder``."""
    return encoder.fit_labels(learner, target)


def labels_from_active(active: Any, target: Any, encoder: LabelingEncoder | None = None, *, max_nodes=None) -> Any:
    """``LabelLearner(...).fit_questions(active, target)`` with ``encoder``'s settings."""
    learner = (encoder or LabelingEncoder()).label_learner()
    return attrs.evolve(learner, max_nodes=max_nodes).fit_questions(active, target)


def separating(result: Any, limit: int = 10) -> list[str]:
    """``result.explain(limit)``: what would separate the surviving pairs."""
    return result.explain(limit)


def _progress_of(say: Any) -> Any:
    """The old ``progress=print``-like callable as a :class:`~rmtk.progress.Progress` that hears
    one line per round (its notes)."""
    if say is None:
        return None
    progress = _new("rmtk.progress.Progress")

    class _Say(progress):
        def note(self, message: str) -> None:
            say(message)

    return _Say()


@attrs.frozen
class RecordedActiveLearner:
    """The previous version's active learner over a recording, now the one loop asking at
    recorded triples: ``RecordedActiveLearner(max_nodes, alpha, samples, tries, strategy,
    budget, max_solutions, max_rounds, time_limit, progress).fit(table, expert)`` runs
    ``ActiveLearner(strategy=AtRecordedTriples(samples=, tries=, pick=strategy), max_nodes=,
    alpha=, budget=, max_solutions=, max_rounds=, time_limit=).fit(space, expert, data=table)``
    with the old defaults (``alpha=1e-3``, ``max_rounds=50``) and returns its
    :class:`~rmtk.active.result.ActiveResult`; ``time_limit`` now bounds the whole run, and the
    old ``Budget(steps=)`` (the actions the expert drew) is the new ``Budget(draws=)``."""

    max_nodes: int = 4
    alpha: float = 1e-3
    samples: int = 100
    tries: int = 3
    strategy: Any = None
    budget: Any = None
    max_solutions: int = 1000
    max_rounds: int = 50
    time_limit: float | None = None
    progress: Any = None

    def __attrs_post_init__(self):
        self.active_learner()  # the new API validates the settings, as the old learner did

    def active_learner(self) -> Any:
        """The :class:`~rmtk.active.loop.ActiveLearner` this call now is."""
        pick = {} if self.strategy is None else {"pick": self.strategy}
        budget = {} if self.budget is None else {"budget": self.budget}
        if self.budget is not None and self.budget.steps is not None and self.budget.draws is None:
            # its steps were the actions the expert drew (one per draw), now counted as draws
            budget["budget"] = attrs.evolve(self.budget, steps=None, draws=self.budget.steps)
        strategy = _new("rmtk.active.recorded.AtRecordedTriples")(samples=self.samples, tries=self.tries, **pick)
        return _new("rmtk.active.loop.ActiveLearner")(
            strategy=strategy,
            max_nodes=self.max_nodes,
            alpha=self.alpha,
            max_solutions=self.max_solutions,
            max_rounds=self.max_rounds,
            time_limit=self.time_limit,
            progress=_progress_of(self.progress),
            **budget,
        )

    def fit(self, table: Any, expert: Any) -> Any:
        """Learn from the recorded count ``table`` and ``expert``'s answers."""
        if not isinstance(table, _new("rmtk.ptp.empirical.CountTable")):
            raise _new("rmtk.errors.RmtkError")(
                f"a recorded active learner starts from a count table, not {type(table).__name__}"
            )
        space = getattr(table, "space", None) or expert.mdp
        return self.active_learner().fit(space, expert, data=table)


def collect_engine(engine: Any, workers: Any, scheduler: Any, client: Any) -> Any:
    """The engine of the previous version's ``collect(..., workers=, scheduler=, client=)``:
    a local cluster of ``workers`` processes, a scheduler's address or a client meant Dask
    unless ``engine`` said otherwise; one worker meant this process."""
    given = {k: v for k, v in (("workers", workers), ("scheduler", scheduler), ("client", client)) if v is not None}
    if not given:
        return engine
    warn_once(
        "rmtk.gym.collect(..., " + ", ".join(f"{k}=" for k in given) + ")",
        "rmtk.gym.collect(..., engine=rmtk.engines.dask.DaskEngine(" + ", ".join(f"{k}=..." for k in given) + "))",
        stacklevel=4,
    )
    if given == {"workers": 1} and engine in (None, "local"):
        return "local"
    if engine in (None, "local"):
        engine = "dask"
    return _new("rmtk.engines.local.as_engine")(engine, **given)
