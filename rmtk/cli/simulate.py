"""``rmtk simulate``: demonstrations drawn from a task's product policy, written as a file or a
Parquet dataset, with the machine's rewards, reward noise or label noise when asked."""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import RmtkError, UsageError
from .args import _engine_from_args
from .learn import load_task, writable


def cmd_simulate(args) -> int:
    """Sample demonstrations from a task's soft-optimal product policy (or the uniform one, or
    an ε-mixture), with the machine's rewards when asked."""
    from ..data import format_of, save
    from ..product.simulate import simulate, simulate_dataset, simulate_sharded
    from ..progress import Progress, StderrProgress

    task = load_task(args.file, args.task)
    from ..product.simulate import SIMULATING

    task.require_machine(SIMULATING)  # before any file is opened
    fmt = format_of(args.output, args.format)
    engine = _engine_from_args(args)
    if args.partition_size is not None and fmt != "parquet":
        raise UsageError("--partition-size applies to Parquet output (--format parquet)")
    from .sizes import check_simulate_sizes

    check_simulate_sizes(args, fmt == "parquet")
    if args.reward_noise is not None and not args.rewards:
        raise UsageError("--reward-noise applies with --rewards: there are no rewards to make noisy")
    if args.reward_noise is not None and fmt == "parquet":
        raise UsageError("--reward-noise applies to .npz and .csv output, not to a Parquet dataset")
    label_noise = None
    if args.label_noise is not None:
        from ..label_noise.model import LabelNoise, plain_letter

        label_noise = LabelNoise.from_text(args.label_noise, task.mdp.propositions, plain=plain_letter(task.mdp))
    if args.lam is not None and args.policy == "uniform":
        raise RmtkError("--lambda sets the soft-optimal policy's temperature; it does not apply with --policy uniform")
    drawn = {
        "policy": "uniform" if args.policy == "uniform" else None,
        "epsilon": args.epsilon or 0.0,
        "rewards": args.rewards,
    }
    if args.lam is not None:
        import attrs

        task = attrs.evolve(task, lam=args.lam)
    progress = Progress() if args.quiet else StderrProgress()
    if fmt == "parquet":  # streamed: one partition per shard, written where it was simulated
        w = simulate_dataset(
            task,
            args.n,
            args.horizon,
            args.output,
            seed=args.seed,
            partition_size=args.partition_size,
            overwrite=args.force,
            engine=engine,
            progress=progress,
            label_noise=label_noise,
            noise_seed=args.seed + 2,
            **drawn,
        )
        noisy = "" if label_noise is None else f", {label_noise} (seed {args.seed + 2} and each partition's index)"
        print(
            f"wrote {args.output}: {w.trajectories} trajectories ({w.steps} steps) in {w.files} Parquet "
            f"file{'s' if w.files != 1 else ''}, {w.bytes / 2**20:.1f} MiB, seed {args.seed}{noisy}",
            file=sys.stderr,
        )
        return 0
    out = writable(Path(args.output), args.force)
    if args.engine in (None, "local"):
        demos = simulate(task, args.n, args.horizon, seed=args.seed, progress=progress, **drawn)
    else:
        demos = simulate_sharded(task, args.n, args.horizon, seed=args.seed, engine=engine, progress=progress, **drawn)
    if args.reward_noise is not None:
        demos = _noisy(demos, task, *args.reward_noise, seed=args.seed + 1)
    if label_noise is not None:
        from ..label_noise.evidence import recorded_by

        demos = recorded_by(label_noise, demos, task.mdp, seed=args.seed + 2)
    save(demos, out, task.mdp, overwrite=args.force, format=fmt)
    noise = (
        ""
        if args.reward_noise is None
        else ", reward noise {}:{:g} (seed {})".format(*args.reward_noise, args.seed + 1)
    )
    if label_noise is not None:
        noise += f", {label_noise} (seed {args.seed + 2})"
    print(f"wrote {out}: {demos.summary()}, seed {args.seed}{noise}", file=sys.stderr)
    return 0


def _noisy(demos, task, kind: str, level: float, *, seed: int):
    """``demos`` with the noise of ``--reward-noise`` (rmtk/traces/noise.py)."""
    import numpy as np

    from ..traces.noise import replaced_rewards, uniform_noise

    if kind == "uniform":
        return uniform_noise(demos, level, seed=seed)
    return replaced_rewards(demos, np.unique(task.require_machine("its rewards").delta_r), level, seed=seed)
