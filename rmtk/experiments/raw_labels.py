"""Learning the labels with the machine from raw state histories (the exact expert at every
depth): the shipped grid and block worlds, the Office World tasks, and small random grid worlds
with a task of three marked cells. A table of the sizes found, the pairs that survive and how
they compare with the truth; a figure of the learned labels on each map."""

from __future__ import annotations

import resource
import time

import numpy as np

from ..errors import RmtkError
from ._report import Domain, Options, Report, Setting

SETTINGS = {
    "tasks": Setting(
        "patrol,stack_avoid,coffee,mail",
        "shipped tasks (patrol, stack_avoid, coffee, mail, office_patrol, coffee_mail)",
        quick="patrol,stack_avoid",
    ),
    "grids": Setting(3, "random grid worlds with three marked cells a -> b -> c", quick=1, domain=Domain(low=0)),
    "grid_size": Setting(5, "their side", domain=Domain(low=2)),
    "max_nodes": Setting(5, "bound on the nodes", domain=Domain(low=1, high=64)),
}

SHIPPED = {
    "patrol": ("patrol", "patrol"),
    "stack_avoid": ("stack_avoid", "stack_avoid"),
    "coffee": ("office", "coffee"),
    "mail": ("office", "mail"),
    "office_patrol": ("office", "patrol"),
    "coffee_mail": ("office", "coffee_mail"),
}


def marked_grid(seed: int, side: int):
    """A ``side`` × ``side`` grid world with three marked cells a, b, c (the rest o) and the
    task "visit a, then b, then c" (reward on c), seeded."""
    from ..envs import gridworld
    from ..machine.model import RewardMachine
    from ..task import Task

    rng = np.random.default_rng(seed)
    rows = [["o"] * side for _ in range(side)]
    cells = rng.choice(side * side, size=3, replace=False)
    for letter, cell in zip("abc", cells):
        rows[cell // side][cell % side] = letter
    mdp = gridworld(rows, slip=0.1, gamma=0.9, name=f"marked_{seed}")
    m = RewardMachine.from_transitions(
        {("u0", "a"): "u1", ("u1", "b"): "u2", ("u2", "c"): ("u3", 1.0)}, "abco", name=f"abc_{seed}"
    )
    return Task(mdp, m, lam=1.0, max_nodes=4, name=f"marked_{seed}")


def run(opts: Options) -> Report:
    """Each task learned from state histories only (:class:`~rmtk.labels.learner.LabelLearner`),
    beside the label-given learner on the same task."""
    from .. import dsl
    from ..labels.learner import LabelLearner
    from ..labels.report import draw_labels
    from ..learner.pipeline import ExactPTP, Learner

    report = Report("reward machines and labels from raw state histories (exact expert, every depth)")
    tasks = []
    for name in [t.strip() for t in str(opts.get("tasks")).split(",") if t.strip()]:
        if name not in SHIPPED:
            raise RmtkError(f"raw-labels: tasks: unknown task {name!r}; the shipped ones are {', '.join(SHIPPED)}")
        model, task = SHIPPED[name]
        tasks.append((name, dsl.load_model(model).tasks[task]))
    for g in range(int(opts.get("grids"))):
        tasks.append((f"marked grid {g}", marked_grid(opts.seed + g, int(opts.get("grid_size")))))
    rows = []
    for name, task in tasks:
        opts.say(f"{name}: learning the labels")
        t0 = time.perf_counter()
        r = LabelLearner(max_nodes=int(opts.get("max_nodes"))).fit(task)
        sec = time.perf_counter() - t0
        t0 = time.perf_counter()
        Learner(ExactPTP(None), irl=None, max_nodes=int(opts.get("max_nodes"))).fit(task)
        ref = time.perf_counter() - t0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        equal = sum(v.equal for v in r.verdicts or ())
        rows.append(
            (
                name,
                r.n_props,
                r.n_nodes,
                len(r.solutions),
                sum(v.consistent for v in r.verdicts or ()),
                equal,
                f"{r.truth_size[0]}, {r.truth_size[1]}",
                "yes" if r.truth_survives else "no",
                sum(len(s.free or ()) for s in r.solutions),
                r.search.histories - 1,
                round(sec, 2),
                round(ref, 2),
                round(peak),
            )
        )
        if r.solutions and not r.truth_is_smaller_or_equal:
            report.notes.append(
                f"{name}: the truth ({r.truth_size[0]} nodes, {r.truth_size[1]} propositions) is not "
                f"the smallest answer ({r.n_nodes}, {r.n_props}); the pairs found are "
                "policy-equivalent to it at every depth"
            )
        if r.solutions:
            try:
                opts.figure(
                    report,
                    f"raw_labels_{name.replace(' ', '_')}.png",
                    lambda fig, r=r, name=name: draw_labels(
                        r, 0, ax=fig.add_subplot(), title=f"{name}: learned labels"
                    ),
                    size=(5, 4),
                )
            except Exception as exc:  # a world that is not a grid of cells has no map
                if "not a grid" not in str(exc):
                    raise
    report.tables.append(
        (
            "k, n: propositions and nodes found (fewest nodes, then propositions); pairs: (labeling, machine) pairs up "
            "to renaming; consistent / equal: policy-equivalent to the truth at every depth / equal up to both "
            "renamings; truth survives: the truth has the smallest size found and passes every check; "
            "free: states whose label alone could change; histories: state histories in play; s: learning "
            "the labels, given s: the label-given learner on the same task; MB: peak resident memory so far",
            [
                "task",
                "k",
                "n",
                "pairs",
                "consistent",
                "equal",
                "truth n, k",
                "truth survives",
                "free",
                "histories",
                "s",
                "given s",
                "MB",
            ],
            rows,
        )
    )
    return report
