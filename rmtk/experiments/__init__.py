"""The paper's experiments, one module each, and the registry ``rmtk reproduce`` reads.

Every experiment module defines ``SETTINGS`` (its :class:`Setting` s, overridable with
``--set KEY=VALUE``), ``FIGURE`` (the file name of its figure, if it draws one) and
``run(opts) -> Report``: our numbers beside the paper's, notes that explain any difference,
and figures. One whose memory grows with its settings also defines ``memory(opts) ->
MemoryEstimate``: the estimate is said before the run starts, and a run estimated above
``opts.max_memory`` (``--max-memory``, default 2 GB) is refused unless the user raises it.
Modules are imported only when their experiment runs.
"""

from __future__ import annotations

import importlib
import math
import time
from pathlib import Path

import attrs

from .. import output
from ..errors import RmtkError, UsageError
from ._report import (
    COUNT,
    LEVEL,
    MAX_MEMORY,
    POSITIVE,
    PROBABILITY,
    Domain,
    MemoryEstimate,
    Options,
    Report,
    Setting,
)


@attrs.frozen
class Experiment:
    """A registry entry: the command name, the paper's section, what it shows, its module and
    the optional extra it needs (``None``: the core suffices)."""

    name: str
    paper: str
    what: str
    module: str
    extra: str | None = None

    def load(self):
        return importlib.import_module(f"{__name__}.{self.module}")

    @property
    def settings(self) -> dict:
        return self.load().SETTINGS


EXPERIMENTS: dict[str, Experiment] = {
    e.name: e
    for e in (
        Experiment("tables", "appendix B.1", "solutions vs. number of demonstrations (stack, stack-avoid)", "tables"),
        Experiment(
            "sensitivity",
            "appendix D",
            "u_max in {4, 3, 2}: returns of the learned product policies vs D-IRL, F-IRL",
            "sensitivity",
        ),
        Experiment(
            "transfer",
            "appendix E",
            "learned machines re-planned in rearranged rooms: held-out log-likelihood",
            "transfer",
        ),
        Experiment(
            "suboptimal",
            "appendix B",
            "arbitrary stochastic policy per node: the machine is still identified",
            "suboptimal",
        ),
        Experiment(
            "mice",
            "section 6.4",
            "real mice in the labyrinth: the machine, rewards, held-out log-likelihood (needs --data PATH)",
            "mice",
        ),
        Experiment(
            "reacher",
            "section 6.3",
            "Reacher-v5 arm, targets b -> y -> r: negatives, false positive rate, MaxSAT machines",
            "reacher",
            extra="reacher",
        ),
        Experiment(
            "active",
            "beyond the paper",
            "active learning: questions to the expert against the full prefix tree "
            "(four tabular tasks; stack-avoid from 1,000 demonstrations plus questions)",
            "active",
        ),
        Experiment(
            "raw-labels",
            "beyond the paper",
            "the labeling function learned with the machine from raw state "
            "histories: patrol, stack-avoid, Office World, marked grid worlds",
            "raw_labels",
        ),
        Experiment(
            "craft",
            "Toro Icarte et al.'s Craft World",
            "its ten tasks on the 41 x 41 map: exact at every depth, active, labels with nothing "
            "known, 10^4 demonstrations; bounded, flagged, beside the exact run",
            "craft",
        ),
        Experiment(
            "office",
            "Toro Icarte et al.'s Office World",
            "its four tasks learned from a scripted expert (exact "
            "and 10^4 episodes), then Q-learning with CRM: learned vs true vs no machine",
            "office",
            extra="gym",
        ),
        Experiment(
            "jirp",
            "Xu et al.'s JIRP loop (beyond the paper)",
            "learning while exploring: Q-learning on the current hypothesis, counterexample episodes, "
            "re-inference from rewards alone (Office coffee and patrol, the rooms patrol)",
            "jirp",
        ),
        Experiment(
            "deep-rl",
            "beyond the paper",
            "a DQN agent (Stable-Baselines3) on the Office World: its machine learned back from its "
            "episodes and actively, fresh agents trained with it: true vs learned vs no machine, with and without CRM",
            "deep_rl",
            extra="rl",
        ),
        Experiment(
            "online",
            "Xu et al.'s JIRP loop with a deep RL agent (beyond the paper)",
            "the reward machine learned while a DQN agent (Stable-Baselines3) trains on an environment that pays "
            "a non-Markovian reward (CliffWalking's patrol, Office, Craft): subgoal vs ε-greedy exploration, "
            "beside the true machine and none",
            "online",
            extra="rl",
        ),
    )
}


def experiment(name: str) -> Experiment:
    if name not in EXPERIMENTS:
        raise RmtkError(f"unknown experiment {name!r}; available: {', '.join(sorted(EXPERIMENTS))}")
    return EXPERIMENTS[name]


def check_overrides(names, overrides: dict) -> None:
    """Every key of ``overrides`` must be a setting of at least one of the experiments ``names``."""
    known: dict[str, list[str]] = {}
    for name in names:
        for key in experiment(name).settings:
            known.setdefault(key, []).append(name)
    unknown = sorted(set(overrides) - set(known))
    if unknown:
        listing = "; ".join(f"{k} ({', '.join(v)})" for k, v in sorted(known.items())) or "none"
        which = names[0] if len(names) == 1 else "these experiments"
        raise RmtkError(
            f"unknown setting{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} for {which}; "
            f"known settings: {listing}"
        )


def check_memory(name: str, module, opts: Options) -> MemoryEstimate | None:
    """Say the memory estimate of a run of ``module`` (if it gives one) and refuse it, before
    any work, when it is above ``opts.max_memory``: a larger run is the user's choice."""
    estimate = getattr(module, "memory", None)
    if estimate is None:
        return None
    need = estimate(opts)
    opts.say(f"{name}: {need}; the limit is {opts.max_memory:g} GB (--max-memory)")
    if need.gb > opts.max_memory:
        raise UsageError(
            f"{name}: {need}, above the limit of {opts.max_memory:g} GB. A run this large is your choice: "
            f"pass --max-memory {math.ceil(need.gb * 1.25)} (Options(max_memory=...)) to run it, or make it smaller"
        )
    return need


def run(name: str, opts: Options | None = None) -> Report:
    """Run experiment ``name`` with ``opts`` (overrides that are not its settings are ignored
    when several experiments share one set of options: see :func:`check_overrides`)."""
    opts = opts or Options()
    exp = experiment(name)
    module = exp.load()
    settings = module.SETTINGS
    own = {k: v for k, v in opts.overrides.items() if k in settings}
    opts = attrs.evolve(opts, overrides=own, settings=settings)
    for key in own:
        opts.get(key)  # a badly typed value fails here, before any work
    if getattr(module, "FIGURE", None) and opts.figure_dir is not None:
        output.check(Path(opts.figure_dir) / module.FIGURE, overwrite=opts.force)  # before the work, not after it
    check_memory(name, module, opts)
    t0 = time.perf_counter()
    report = module.run(opts)
    if not report.seconds:
        report.seconds = time.perf_counter() - t0
    return report


__all__ = [
    "COUNT",
    "EXPERIMENTS",
    "LEVEL",
    "MAX_MEMORY",
    "POSITIVE",
    "PROBABILITY",
    "Domain",
    "Experiment",
    "MemoryEstimate",
    "Options",
    "Report",
    "Setting",
    "check_memory",
    "check_overrides",
    "experiment",
    "run",
]
