"""From command-line flags to the objects of the Python API: the :class:`~rmtk.learner.pipeline.Learner`
of ``rmtk learn``, the :class:`~rmtk.active.loop.ActiveLearner` and expert of ``learn --active``,
the engine of ``--engine``, and the argparse types of the flags (numbers with their bounds)."""

from __future__ import annotations

import argparse

import attrs

from ..errors import RmtkError
from ..task import Task


def _number(kind, what: str, ok, bound: str):
    """An argparse type: ``kind(text)`` that must satisfy ``ok``, with a plain message."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not ok(value):
            raise argparse.ArgumentTypeError(f"expected {what} {bound}, got {text}")
        return value

    return parse


_positive_int = _number(int, "a whole number", lambda v: v >= 1, "of at least 1")


def tolerance(text: str):
    """``--tolerance``: ``auto`` or a finite number ≥ 0."""
    if text == "auto":
        return text
    return _number(float, "a number or 'auto'", lambda v: 0 <= v < float("inf"), "≥ 0 and finite")(text)


_seed = _number(int, "a seed (a whole number)", lambda v: v >= 0, "of at least 0")
INF = "inf"


def _depth(text: str):
    """A depth: a whole number of at least 1, or ``inf`` (every depth)."""
    return INF if text.strip().lower() in ("inf", "infinity") else _positive_int(text)


_positive_float = _number(float, "a number", lambda v: 0 < v < float("inf"), "above 0")


#: ``--resolution``'s help.
RESOLUTION_HELP = (
    "with --active --expert simulated: sample each question until the expert's actions after its two histories "
    "are told apart or no difference of R or more in total variation remains (default 0.3)"
)


def _resolution(text: str) -> float:
    """A target resolution: a total variation in (0, 1]."""
    value = _positive_float(text)
    if not value <= 1:
        raise argparse.ArgumentTypeError(f"expected a total variation in (0, 1], got {text}")
    return value


def _probability(text: str) -> float:
    value = _positive_float(text)
    if not value < 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text}")
    return value


#: An exploration probability in [0, 1].
_epsilon = _number(float, "a number", lambda v: 0 <= v <= 1, "in [0, 1]")


def learner_from_args(args, task: Task | None = None, mode: str | None = None):
    """The :class:`~rmtk.learner.pipeline.Learner` the command-line options describe (the same
    strategies a Python user composes). The flags were checked against the ``mode`` first
    (:func:`rmtk.cli.flags.learn_mode`; ``None``: read from ``args``). Learning from the
    rewards of demonstrations, the policy and the rewards are counted once, by one
    :class:`~rmtk.ptp.empirical.EmpiricalPTP` (:class:`~rmtk.traces.evidence.TraceRewards` of it)."""
    from ..learner.pipeline import ExactMiner, ExactPTP, Learner
    from ..negatives.miners import ConfidenceMiner
    from ..rewards.maxent import MaxEntIRL
    from .flags import REWARDS, mode_of

    mode = mode_of(args) if mode is None else mode
    progress = _progress(args)
    compress = not args.no_compress
    engine = _engine_from_args(args)
    if args.demos:
        from ..data import format_of, load

        data = args.demos  # a Parquet dataset is counted partition by partition, never loaded whole
        noisy_labels = getattr(args, "label_noise", None) is not None
        if format_of(args.demos) != "parquet":
            data = load(args.demos, task.mdp, labels="keep" if noisy_labels else "check")
            progress.note(f"loaded {args.demos}: {data.summary()}")
        from ..ptp.empirical import EmpiricalPTP  # counting's modules, imported with data to count

        ptp = EmpiricalPTP(data, depth=args.depth, compress=compress, engine=engine)
        miner = ConfidenceMiner(alpha=0.05 if args.alpha is None else args.alpha)
    else:
        depth = None if args.depth == INF else (args.depth or "task")
        ptp = ExactPTP(depth=depth, source=args.policy or "soft-optimal", compress=compress)
        miner = ExactMiner()
    evidence: dict = {}
    if mode in REWARDS:
        from ..traces.evidence import TraceRewards

        rewards = TraceRewards(ptp)
        if args.tolerance is not None:  # a number, or "auto": estimated
            from ..traces.tolerance import TolerantRewards

            rewards = TolerantRewards(ptp, delta=None if args.tolerance == "auto" else args.tolerance)
        evidence = dict(rewards=rewards, irl=None)  # the rewards are the observed ones
        if mode == "rewards":
            evidence["ptp"] = None
    return Learner(
        **{
            "ptp": ptp,
            "miner": miner,
            "encoder": _encoder_from_args(args),
            "irl": None if args.no_rewards else MaxEntIRL(),
            **evidence,
        },
        max_nodes=args.max_nodes,
        nodes=args.nodes,
        max_solutions=args.max_solutions,
        time_limit=args.time_limit,
        progress=progress,
    )


def _encoder_from_args(args):
    """The encoder of ``--maxsat``/``--weights``, ``--noisy``, ``--simplest``, ``--negatives``
    and the search options."""
    from ..sat.encoders import (
        MaxSatEncoder,
        NoisyRewardEncoder,
        SatEncoder,
        SimplestEncoder,
        SimplestNoisyRewardEncoder,
    )

    common = dict(non_stuttering=not args.stuttering, symmetry_breaking=not args.no_symmetry_breaking)
    if args.solver is not None:  # else the encoder's own default backend
        common.update(solver=args.solver)
    if args.maxsat:
        return MaxSatEncoder(weights=args.weights or "unit", **common)
    if args.noisy and args.noisy_exact:
        return (SimplestNoisyRewardEncoder if args.simplest else NoisyRewardEncoder)(**common)
    if args.noisy:  # the exact search within a budget of work, then the least noisy machine found
        from ..sat.anytime import AnytimeNoisyRewardEncoder, SimplestAnytimeNoisyRewardEncoder

        anytime = SimplestAnytimeNoisyRewardEncoder if args.simplest else AnytimeNoisyRewardEncoder
        return anytime(**common, **({} if args.noisy_moves is None else {"moves": args.noisy_moves}))
    negatives = args.negatives or "classes"
    return (SimplestEncoder if args.simplest else SatEncoder)(negatives=negatives, **common)


def label_learner_from_args(args, learner=None):
    """The :class:`~rmtk.labels.learner.LabelLearner` of ``--learn-labels [K]``: the command-line
    ``learner``'s PTP strategy (the exact expert at every depth unless ``--depth`` says
    otherwise), miner, limits and progress, or, learning from the active loop's questions
    (``learner`` None), the command line's limits; and a
    :class:`~rmtk.labels.search.SmallestPairs` with the command line's solver and constraints."""
    import attrs

    from ..labels.learner import LabelLearner
    from ..labels.search import SmallestPairs
    from ..ptp.exact import ExactPTP
    from ..sat.solver import DEFAULT_SOLVER

    search = SmallestPairs(
        symmetry_breaking=not args.no_symmetry_breaking,
        non_stuttering=not args.stuttering,
        solver=args.solver or DEFAULT_SOLVER,
    )
    if learner is None:  # the questions of the active loop are the data: the command line's limits
        strategies: dict = {}
        limits = dict(
            max_nodes=args.max_nodes,
            nodes=args.nodes,
            max_solutions=args.max_solutions,
            time_limit=args.time_limit,
            progress=_progress(args),
        )
    else:
        ptp = learner.ptp
        if isinstance(ptp, ExactPTP) and args.depth is None:
            ptp = attrs.evolve(ptp, depth=None)
        strategies = dict(ptp=ptp, miner=learner.miner)
        limits = dict(
            max_nodes=learner.max_nodes,
            nodes=learner.nodes,
            max_solutions=learner.max_solutions,
            time_limit=learner.time_limit,
            progress=learner.progress,
        )
    return LabelLearner(search=search, props=args.learn_labels or None, **strategies, **limits)


def _progress(args):
    from ..progress import Progress, StderrProgress

    return Progress() if args.quiet else StderrProgress()


def _engine_from_args(args):
    """The engine of ``--engine``, ``--scheduler``, ``--workers`` (:mod:`rmtk.engines.local`)."""
    from ..engines.local import as_engine

    if args.engine != "dask" and (args.scheduler or args.workers):
        raise RmtkError("--scheduler and --workers choose the Dask cluster; add --engine dask")
    if args.scheduler and args.workers:
        raise RmtkError("--scheduler connects to a running cluster and --workers starts a local one; give one of them")
    if args.engine != "dask" and args.dask_timeout is not None:
        raise RmtkError("--dask-timeout bounds a Dask run; add --engine dask")
    engine = as_engine(args.engine, scheduler=args.scheduler, workers=args.workers)
    if args.dask_timeout is not None:
        import attrs

        engine = attrs.evolve(engine, timeout=args.dask_timeout)
    return engine


def _add_engine_options(parser, what: str) -> None:
    from ..engines.local import ENGINES

    parser.add_argument(
        "--engine",
        choices=ENGINES,
        help=f"where the {what} runs: this process (default, local) or a Dask cluster "
        "(pip install '.[dask]' in rmtk's checkout)",
    )
    parser.add_argument(
        "--scheduler", metavar="ADDRESS", help="with --engine dask: a running scheduler (tcp://host:8786)"
    )
    parser.add_argument(
        "--workers",
        type=_positive_int,
        metavar="N",
        help="with --engine dask: start a local cluster of N worker processes (default: one per CPU)",
    )
    parser.add_argument(
        "--dask-timeout",
        type=_positive_float,
        metavar="S",
        help="with --engine dask: stop when no piece of work has finished for S seconds (default 600)",
    )


def active_from_args(args, task: Task):
    """The :class:`~rmtk.active.loop.ActiveLearner` and the expert of ``learn --active``: the task's
    exact policy, or (``--expert simulated``) its soft-optimal policy run on the task's MDP, each
    question sampled until it is decided at ``--resolution`` (at most ``--samples`` draws a
    history), checked by the conformance suite on the MDP (or ``--walks``); ``--demos`` are the
    data recorded before; ``--time-limit`` bounds the whole run."""
    from ..active.asking import Budget
    from ..active.checks import ExpertWalks
    from ..active.experts import SimulatedExpert, TaskExpert
    from ..active.loop import RESOLUTION, ActiveLearner
    from ..active.questions import SplitMostPairs
    from ..sat.encoders import SatEncoder
    from ..sat.solver import DEFAULT_SOLVER

    expert_kind = args.expert or ("simulated" if args.demos else "exact")
    data = None
    if args.demos:
        from ..data import format_of, load

        keep = "keep" if getattr(args, "label_noise", None) is not None else "check"  # a detector's labels
        data = args.demos if format_of(args.demos) == "parquet" else load(args.demos, task.mdp, labels=keep)
    make = TaskExpert if expert_kind == "exact" else SimulatedExpert
    expert = make(task, source=args.policy or "soft-optimal", seed=args.seed or 0, recorded=data)
    budget = Budget(
        queries=args.budget_queries, steps=args.budget_steps, seconds=args.budget_seconds, draws=args.budget_draws
    )
    walked = args.walks or args.walk_length  # else the expert's default: exact, or the conformance suite
    walks = ExpertWalks(walks=args.walks or 5, length=args.walk_length or 40) if walked else None
    learner = ActiveLearner(
        strategy=SplitMostPairs(samples=args.samples),
        check=walks,
        resolution=RESOLUTION if args.resolution is None else args.resolution,
        encoder=SatEncoder(
            non_stuttering=not args.stuttering,
            solver=args.solver or DEFAULT_SOLVER,
            symmetry_breaking=not args.no_symmetry_breaking,
        ),
        budget=budget,
        max_nodes=args.max_nodes,
        max_solutions=1000 if args.max_solutions is None else args.max_solutions,
        alpha=0.05 if args.alpha is None else args.alpha,
        time_limit=args.time_limit,
        progress=_progress(args),
    )
    return learner, expert


#: Pairs of labels and machines a round of ``--learn-labels --active`` lists unless
#: ``--max-solutions`` says otherwise: over one letter per state, the survivors are many.
LABELS_ACTIVE_SOLUTIONS = 50

#: Policy draws ``--learn-labels --active --expert simulated`` may spend unless a budget flag
#: says otherwise: over one letter per state the conformance suite and the questions after it
#: keep finding histories to compare (on the patrol, 35 rounds, 28,389 queries and 486 MB at
#: 270 s, still going); this is about one pass of the suite on the patrol's state view and the
#: rounds of questions after it. The run then stops flagged, the bound named.
LABELS_SAMPLED_DRAWS = 500_000


@attrs.frozen
class LearnPlan:
    """What ``rmtk learn`` runs, built from its flags before any work: the ``mode``
    (:data:`rmtk.cli.flags.MODES`), the ``task`` (at ``--lambda``'s temperature), the
    ``learner`` (a :class:`~rmtk.learner.pipeline.Learner`, or an :class:`~rmtk.active.loop.ActiveLearner`
    with its ``expert``, asked on ``view``: the task, or its state view when learning the
    labels), the ``labels`` learner (:class:`~rmtk.labels.learner.LabelLearner`: the plan's
    learner itself, or what learns from the active loop's questions) and what to print and write."""

    mode: str
    task: Task
    learner: object
    expert: object = None
    view: Task | None = None
    labels: object = None
    explain: bool = False
    count_pairs: bool = False
    dot: str | None = None
    png: str | None = None
    force: bool = False
    default_draws: int | None = None
    label_noise: object = None


def plan_learn(args, task: Task, mode: str) -> LearnPlan:
    """The :class:`LearnPlan` of ``rmtk learn``'s flags (already checked against ``mode`` by
    :func:`rmtk.cli.flags.learn_mode`)."""
    from .flags import ASKING, LABELS

    if args.demos:
        import os

        if not os.path.exists(args.demos):
            raise RmtkError(f"{args.demos}: no such file or directory (--demos)")
    if args.lam is not None:
        task = attrs.evolve(task, lam=args.lam)
    outputs = dict(explain=args.explain, count_pairs=args.count_pairs, dot=args.dot, png=args.png, force=args.force)
    if mode in ASKING:
        view = task
        labels = label_learner_from_args(args) if mode in LABELS else None
        if labels is not None:
            from ..labels.histories import state_task

            view = state_task(task)
        asking, expert = active_from_args(args, view)
        if labels is not None and args.max_solutions is None:
            asking = attrs.evolve(asking, max_solutions=LABELS_ACTIVE_SOLUTIONS)
        budgets = (args.budget_queries, args.budget_steps, args.budget_seconds, args.budget_draws)
        if labels is not None and not expert.exact and all(b is None for b in budgets):
            outputs["default_draws"] = LABELS_SAMPLED_DRAWS
            asking = attrs.evolve(asking, budget=attrs.evolve(asking.budget, draws=LABELS_SAMPLED_DRAWS))
        if labels is not None and not expert.exact and args.max_solutions is None:
            labels = attrs.evolve(labels, max_solutions=LABELS_ACTIVE_SOLUTIONS)  # sampled answers leave many pairs
        if getattr(args, "label_noise", None) is not None:
            from ..label_noise.active import NoisyActive

            outputs["label_noise"] = NoisyActive(asking, noise=label_noise_of(args, task))
        return LearnPlan(mode, task, asking, expert, view, labels, **outputs)
    learner = learner_from_args(args, task, mode)
    labels = label_learner_from_args(args, learner) if mode in LABELS else None
    if getattr(args, "label_noise", None) is not None:
        outputs["label_noise"] = noisy_labels_from_args(args, learner, task)
    return LearnPlan(mode, task, labels or learner, None, None, labels, **outputs)


def noisy_labels_from_args(args, learner, task: Task):
    """The :class:`~rmtk.label_noise.learner.NoisyLabels` of ``--label-noise auto|RATES`` around
    the command line's ``learner``."""
    from ..label_noise.learner import NoisyLabels

    return NoisyLabels(learner, noise=label_noise_of(args, task))


def label_noise_of(args, task: Task):
    """The :class:`~rmtk.label_noise.model.LabelNoise` ``--label-noise RATES`` states (``None``
    for ``auto``: estimated)."""
    from ..label_noise.model import LabelNoise, plain_letter

    if args.label_noise == "auto":
        return None
    return LabelNoise.from_text(args.label_noise, task.mdp.propositions, plain=plain_letter(task.mdp))
