"""Which flags of ``rmtk learn`` apply to which way of learning: one table, :data:`LEARN_FLAGS`,
read by :func:`learn_mode` before any work (docs/design/08-progress-and-limits.md).

``rmtk learn`` learns in one of the :data:`MODES`, decided by ``--active``, ``--learn-labels``,
``--demos``, ``--from`` and ``--expert``; without ``--from``, demonstrations with rewards are
learned from both their policy and their rewards (:func:`evidence_of`). A flag typed that its
mode does not use is an error that names the flag, the mode and what the flag is for, never
silently dropped; a flag that needs another
(``--weights`` needs ``--maxsat``) says which. ``tests/test_cli_flags.py`` checks the table both
ways, for every flag and every mode: a flag it refuses is refused, and a flag it accepts changes
what is run.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from ..errors import UsageError

#: The ways ``rmtk learn`` learns, and how messages name them.
MODES = {
    "exact": "learning from the task's exact policy",
    "demos": "learning from demonstrations (--demos)",
    "rewards": "learning from the rewards of demonstrations (--from rewards)",
    "both": "learning from the policy and the rewards of demonstrations (--from both)",
    "labels": "learning the labels from the task's exact policy (--learn-labels)",
    "labels-demos": "learning the labels from demonstrations (--learn-labels --demos)",
    "active": "active learning from the exact expert (--active)",
    "active-simulated": "active learning from a simulated expert (--active --expert simulated)",
    "labels-active": "learning the labels by asking the exact expert (--learn-labels --active)",
    "labels-active-simulated": (
        "learning the labels by asking a simulated expert (--learn-labels --active --expert simulated)"
    ),
}

ALL = frozenset(MODES)
#: Modes that build a prefix tree from the task's policy or from demonstrations.
TREE = frozenset({"exact", "demos", "labels", "labels-demos", "rewards", "both"})
#: Modes that ask an expert.
ASKING = frozenset({"active", "active-simulated", "labels-active", "labels-active-simulated"})
#: Modes whose expert is run, drawing actions at random.
SIMULATED = frozenset({"active-simulated", "labels-active-simulated"})
#: Modes whose expert is the task's policy, computed at the task's temperature.
POLICY = frozenset({"exact", "labels"}) | ASKING
#: Modes that count demonstrations.
DEMOS = frozenset({"demos", "labels-demos", "rewards", "both"})
#: Modes that learn from the rewards recorded in demonstrations (docs/design/rewards-evidence.md).
REWARDS = frozenset({"rewards", "both"})
#: Modes that mine negative examples from demonstrations.
MINED = frozenset({"demos", "labels-demos", "both"})
#: Modes that search a prefix tree's machines with a choice of encoder.
SEARCHED = frozenset({"exact", "demos", "rewards", "both"})
#: Modes that learn the labels.
LABELS = frozenset({"labels", "labels-demos", "labels-active", "labels-active-simulated"})


def _given(args, dest: str) -> bool:
    """Whether the flag stored in ``dest`` was typed (its default is ``None`` or false)."""
    value = getattr(args, dest)
    return value is not None and value is not False


def _needs_walks(args, mode: str) -> str | None:
    """With the exact expert, randomness and environment steps come only from walks."""
    if mode in ASKING and mode not in SIMULATED and not (_given(args, "walks") or _given(args, "walk_length")):
        return (
            "needs --walks, --walk-length or --expert simulated: the exact expert answers with its policy, drawing "
            "nothing and taking no environment step; only the walks of a sampled equivalence check do"
        )
    return None


def _needs(*dests: str, why: str) -> Callable[[object, str], str | None]:
    """A rule: one of the flags ``dests`` must be given too (``why`` says which and why)."""

    def rule(args, mode: str) -> str | None:
        return None if any(_given(args, d) for d in dests) else why

    return rule


def _needs_dask(what: str) -> Callable[[object, str], str | None]:
    """A rule: ``--engine dask`` must be given too (``what`` the flag does with Dask)."""

    def rule(args, mode: str) -> str | None:
        return None if args.engine == "dask" else f"needs --engine dask: {what}"

    return rule


def _not_maxsat(args, mode: str) -> str | None:
    if args.maxsat:
        return "does not apply with --maxsat: MaxSAT keeps every optimal machine, not the simplest"
    return None


def _negatives(args, mode: str) -> str | None:
    if args.maxsat:
        return "does not apply with --maxsat: MaxSAT encodes the negative examples pair by pair"
    if mode == "demos" and args.negatives == "classes":
        return "classes does not apply to demonstrations: they give negative word pairs, not policy classes"
    return None


def _depth(args, mode: str) -> str | None:
    if mode in DEMOS and args.depth == "inf":
        return "inf applies to the exact policy; demonstrations are counted whole by default"
    return None


def _label_noise(args, mode: str) -> str | None:
    if mode in ASKING and not args.demos:
        return (
            "needs --demos with --active: the noise is learned from the labels the demonstrations recorded (the "
            "expert's answers are actions, which carry no labels)"
        )
    return None


@attrs.frozen
class Flag:
    """A flag of ``rmtk learn``: its spelling, the argparse ``dest``, the ``modes`` it applies
    to, its ``purpose`` (said when it is refused), and a ``rule`` for what it needs besides the
    mode (``rule(args, mode)``: what follows the flag's name in the error, or ``None``)."""

    option: str
    dest: str
    modes: frozenset
    purpose: str
    rule: Callable[[object, str], str | None] | None = None


#: Every flag of ``rmtk learn`` and the modes it applies to (the mode's own flags, ``--active``,
#: ``--learn-labels`` and ``--demos``, included: they apply to the modes they make).
LEARN_FLAGS = (
    Flag("--active", "active", ASKING, "it asks an expert"),
    Flag("--learn-labels", "learn_labels", LABELS, "it learns the labels"),
    Flag(
        "--demos",
        "demos",
        DEMOS | {"active-simulated"},
        "it gives counts of a run expert's actions, which learning from demonstrations and active learning "
        "from a simulated expert start from (--active --expert simulated)",
    ),
    Flag(
        "--from",
        "evidence",
        frozenset({"demos", "rewards", "both"}),
        "it chooses what of the demonstrations (--demos) is learned from: the policy, the rewards or both",
    ),
    Flag("--depth", "depth", TREE, "it sets the depth of the prefix tree built", _depth),
    Flag("--max-nodes", "max_nodes", ALL, "it bounds the nodes"),
    Flag("--nodes", "nodes", TREE, "it fixes the nodes of a search over a prefix tree"),
    Flag("--policy", "policy", POLICY, "it chooses the policy computed from the task (the demonstrations are given)"),
    Flag("--no-compress", "no_compress", TREE, "it keys a prefix tree by uncompressed words"),
    Flag(
        "--stuttering",
        "stuttering",
        TREE,
        "it drops the non-stuttering constraint, which words compressed as the expert is asked assume",
        _needs(
            "no_compress", why="needs --no-compress: a tree keyed by compressed words assumes a non-stuttering machine"
        ),
    ),
    Flag("--no-symmetry-breaking", "no_symmetry_breaking", ALL, "it turns off the symmetry breaking of the search"),
    Flag(
        "--negatives",
        "negatives",
        frozenset({"exact", "demos"}),
        "it chooses how a search over label words encodes negative examples (learning the labels and active "
        "learning find theirs lazily)",
        _negatives,
    ),
    Flag("--solver", "solver", ALL, "it chooses the SAT solver"),
    Flag("--engine", "engine", DEMOS, "it chooses where demonstrations are counted"),
    Flag(
        "--scheduler",
        "scheduler",
        DEMOS,
        "it chooses the Dask cluster counting demonstrations",
        _needs_dask("it connects to a running Dask scheduler"),
    ),
    Flag(
        "--workers",
        "workers",
        DEMOS,
        "it sizes the Dask cluster counting demonstrations",
        _needs_dask("it starts a local Dask cluster of that many workers"),
    ),
    Flag(
        "--dask-timeout",
        "dask_timeout",
        DEMOS,
        "it bounds a Dask count of demonstrations",
        _needs_dask("it bounds a Dask run"),
    ),
    Flag(
        "--alpha",
        "alpha",
        MINED | SIMULATED,
        "it is the confidence level of negative examples mined from counts (an exact policy gives exact ones)",
    ),
    Flag(
        "--maxsat",
        "maxsat",
        frozenset({"exact", "demos"}),
        "it searches a prefix tree's machines by MaxSAT over the negative examples (noisy rewards: --noisy)",
    ),
    Flag(
        "--noisy",
        "noisy",
        REWARDS,
        "it treats recorded rewards as noisy: weighted MaxSAT over the reward observations",
    ),
    Flag(
        "--noisy-moves",
        "noisy_moves",
        REWARDS,
        "it bounds the local search for the least noisy machine",
        _needs("noisy", why="needs --noisy: it bounds the search for the least noisy machine"),
    ),
    Flag(
        "--noisy-exact",
        "noisy_exact",
        REWARDS,
        "it asks the exact search for the least noisy machine alone",
        lambda args, mode: (
            "needs --noisy: it asks for the least noisy machine's exact search"
            if not args.noisy
            else "cannot go with --noisy-moves: the exact search alone runs no local search"
            if args.noisy_moves is not None
            else None
        ),
    ),
    Flag(
        "--label-noise",
        "label_noise",
        frozenset({"demos", "rewards", "both", "active", "active-simulated"}),
        "it reads the labels the demonstrations recorded as a detector's that errs (docs/guide/15-noisy-labels.md)",
        _label_noise,
    ),
    Flag(
        "--tolerance",
        "tolerance",
        REWARDS,
        "it compares recorded rewards within a tolerance of the machine's outputs (continuous noise)",
        lambda args, mode: (
            "cannot go with --noisy: rewards are compared within a tolerance or weighed as replaced by others, not both"
            if args.noisy
            else None
        ),
    ),
    Flag(
        "--simplest",
        "simplest",
        SEARCHED,
        "it keeps, among the smallest machines, those in which the fewest letters move a node",
        _not_maxsat,
    ),
    Flag(
        "--weights",
        "weights",
        frozenset({"exact", "demos"}),
        "it weighs the negative examples of MaxSAT",
        _needs("maxsat", why="needs --maxsat: it weighs the negative examples of MaxSAT"),
    ),
    Flag("--expert", "expert", ASKING, "it chooses the expert asked"),
    Flag("--budget-queries", "budget_queries", ASKING, "it bounds the questions asked of an expert"),
    Flag("--budget-steps", "budget_steps", ASKING, "it bounds the environment steps an expert takes", _needs_walks),
    Flag("--budget-seconds", "budget_seconds", ASKING, "it bounds the time spent asking an expert"),
    Flag("--budget-draws", "budget_draws", ASKING, "it bounds the actions an expert draws", _needs_walks),
    Flag("--samples", "samples", SIMULATED, "it caps the actions a simulated expert draws at a history"),
    Flag(
        "--resolution",
        "resolution",
        SIMULATED,
        "it sets the difference a simulated expert's questions are sampled until they resolve",
    ),
    Flag("--walks", "walks", ASKING, "it sets the expert walks of the equivalence check"),
    Flag("--walk-length", "walk_length", ASKING, "it sets the steps of each expert walk"),
    Flag("--seed", "seed", ASKING, "it seeds the randomness of an expert asked", _needs_walks),
    Flag(
        "--lambda",
        "lam",
        POLICY,
        "it sets the temperature of the policy computed from the task (the demonstrations are given)",
    ),
    Flag("--max-solutions", "max_solutions", ALL, "it bounds the machines listed"),
    Flag("--time-limit", "time_limit", ALL, "it bounds the run"),
    Flag("--explain", "explain", ALL, "it says what separates the machines"),
    Flag(
        "--count-pairs",
        "count_pairs",
        frozenset({"exact", "active"}),
        "it counts the word pairs of an exact policy's classes (other modes print no such count)",
    ),
    Flag(
        "--no-rewards",
        "no_rewards",
        frozenset({"exact", "demos"}),
        "it skips the rewards recovered for machines learned from a prefix tree (the other modes recover none; "
        "learned from rewards, a machine pays the observed ones)",
    ),
    Flag("--dot", "dot", ALL, "it writes the learned machines as DOT"),
    Flag("--png", "png", ALL, "it draws the learned machines"),
    Flag(
        "--force",
        "force",
        ALL,
        "it lets --dot and --png replace existing files",
        _needs("dot", "png", why="needs --dot or --png: it lets them replace existing files"),
    ),
    Flag("--quiet", "quiet", ALL, "it silences the progress lines"),
)

#: The flags by argparse ``dest``.
BY_DEST = {f.dest: f for f in LEARN_FLAGS}


def evidence_of(args) -> str:
    """What ``--demos`` are learned from: ``--from``, else ``both`` when the data hold rewards
    (a ``reward`` column: :func:`rmtk.data.holds_rewards`), else ``policy``. ``--from rewards``
    or ``both`` on data without rewards is a :class:`~rmtk.errors.UsageError`."""
    import os

    from ..data import holds_rewards

    if not os.path.exists(args.demos):  # the flags are checked first; plan_learn then says it is missing
        return args.evidence or "policy"
    held = holds_rewards(args.demos)
    if args.evidence is None:
        return "both" if held else "policy"
    if args.evidence != "policy" and not held:
        raise UsageError(
            f"--from {args.evidence}: {args.demos} holds no rewards (no reward column); learn from its policy "
            "(--from policy, the default for such data) or record the rewards (rmtk simulate --rewards, "
            "rmtk.gym.collect(..., rewards=True))"
        )
    return args.evidence


def mode_of(args) -> str:
    """The mode the mode flags (``--active``, ``--learn-labels``, ``--demos``, ``--from``,
    ``--expert``) make; with ``--demos`` alone, what the data hold (:func:`evidence_of`)."""
    labels = args.learn_labels is not None
    if args.active:
        simulated = (args.expert or ("simulated" if args.demos and not labels else "exact")) == "simulated"
        return ("labels-active" if labels else "active") + ("-simulated" if simulated else "")
    if labels:
        return "labels-demos" if args.demos else "labels"
    if not args.demos:
        return "exact"
    evidence = evidence_of(args)
    return "demos" if evidence == "policy" else evidence


def learn_mode(args) -> str:
    """The mode of ``args`` after checking every flag typed against :data:`LEARN_FLAGS`: an
    :class:`~rmtk.errors.UsageError` names the first flag that does not apply, and why."""
    mode = mode_of(args)
    for flag in LEARN_FLAGS:
        if not _given(args, flag.dest):
            continue
        if mode not in flag.modes:
            raise UsageError(f"{flag.option} does not apply to {MODES[mode]}: {flag.purpose}")
        why = flag.rule(args, mode) if flag.rule is not None else None
        if why:
            raise UsageError(f"{flag.option} {why}")
    return mode
