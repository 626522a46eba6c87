"""Meaning of `.rm` blocks: build LabeledMDP, RewardMachine and Task objects from the
positioned statements, with every meaning error located at the offending name or value."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NoReturn

import numpy as np

from .._arrays import Csr
from ..errors import Location, ModelError
from ..machine.model import RewardMachine
from ..mdp.model import PROB_TOL, LabeledMDP
from ..task import EVERY_DEPTH, Task, depth_beyond
from . import syntax as S
from .context import Context, _unknown, _wrong_statement
from .document import RmFile


def _model_error(ctx: Context, err: ModelError, where) -> NoReturn:
    ctx.fail(str(err), where)


# ---------------------------------------------------------------------- machine
MACHINE_SETTINGS = ("alphabet", "nodes", "initial")


def build_machine(block: S.Block, ctx: Context) -> RewardMachine:
    """``machine NAME { alphabet ...; nodes ...; initial u; u -> v on GUARD [reward r] }``."""
    where = f"machine '{block.name}'"
    alphabet: list[S.Ident] | None = None
    declared: list[S.Ident] | None = None
    initial: S.Ident | None = None
    transitions: list[S.MachineTransition] = []
    for st in block.statements:
        if isinstance(st, S.MachineTransition):
            transitions.append(st)
        elif isinstance(st, S.Setting) and st.key in MACHINE_SETTINGS:
            if st.key == "alphabet":
                alphabet = (alphabet or []) + ctx.idents(st, "proposition names")
            elif st.key == "nodes":
                declared = (declared or []) + ctx.idents(st, "node names")
            else:
                if initial is not None:
                    ctx.fail(f"{where} has two 'initial' settings (first at line {initial.pos.line})", st.key)
                initial = ctx.ident(ctx.one(st, "the initial node"), "initial", "a node name")
        elif isinstance(st, S.Setting):
            _unknown(ctx, st.key, where, MACHINE_SETTINGS)
        else:
            _wrong_statement(ctx, st, where)
    if not alphabet:
        ctx.fail(
            f"{where} has no 'alphabet' setting; list the propositions it reads, e.g. 'alphabet A B C'", block.name
        )
    ctx.unique(alphabet, "proposition")
    letters = [str(a) for a in alphabet]

    if declared is not None:
        ctx.unique(declared, "node")
        nodes = [str(n) for n in declared]
        known = set(nodes)
        for ref in ([initial] if initial is not None else []) + [x for t in transitions for x in (t.source, t.target)]:
            if ref not in known:
                ctx.fail(f"undefined node {str(ref)!r}; the 'nodes' setting declares {' '.join(nodes)}", ref)
    else:
        order: dict[str, None] = {}
        for ref in ([initial] if initial is not None else []) + [x for t in transitions for x in (t.source, t.target)]:
            order.setdefault(str(ref), None)
        nodes = list(order)
        if not nodes:
            ctx.fail(f"{where} has no nodes: declare them with 'nodes u0 ...' or write transitions", block.name)
    index = {n: i for i, n in enumerate(nodes)}
    du = np.tile(np.arange(len(nodes))[:, None], (1, len(letters)))
    dr = np.zeros((len(nodes), len(letters)))
    covered: dict[tuple[int, int], S.MachineTransition] = {}
    elses: dict[int, S.MachineTransition] = {}

    def assign(t: S.MachineTransition, ks: Iterable[int]) -> None:
        u, v = index[t.source], index[t.target]
        for k in ks:
            if (u, k) in covered:
                first = covered[(u, k)]
                ctx.fail(
                    f"two transitions from node {str(t.source)!r} on {letters[k]!r} "
                    f"(the first at line {first.pos.line}); a machine is deterministic",
                    t,
                )
            covered[(u, k)] = t
            du[u, k] = v
            dr[u, k] = 0.0 if t.reward is None else t.reward.value

    for t in transitions:
        if isinstance(t.guard, S.Else):
            u = index[t.source]
            if u in elses:
                ctx.fail(f"node {str(t.source)!r} has two 'else' transitions (first at line {elses[u].pos.line})", t)
            elses[u] = t
            continue
        for p in S.props_of(t.guard):
            if p not in letters:
                ctx.fail(f"unknown proposition {str(p)!r}; the alphabet of {where} is {' '.join(letters)}", p)
        ks = [k for k, a in enumerate(letters) if a in t.guard.letters(letters)]
        if not ks:
            ctx.fail("this guard matches no proposition of the alphabet", t)
        assign(t, ks)
    for u, t in elses.items():
        ks = [k for k in range(len(letters)) if (u, k) not in covered]
        if not ks:
            ctx.fail(f"'else' matches nothing: every proposition already has a transition from {str(t.source)!r}", t)
        assign(t, ks)
    try:
        return RewardMachine(
            nodes=nodes,
            alphabet=letters,
            delta_u=du,
            delta_r=dr,
            initial=index[initial] if initial is not None else 0,
            name=str(block.name),
        )
    except ModelError as err:
        _model_error(ctx, err, block.name)


# ---------------------------------------------------------------------- explicit MDP
MDP_SETTINGS = ("states", "actions", "propositions", "label", "start", "gamma")
#: Settings written at most once per block; list declarations (states, actions, label lines,
#: a machine's alphabet and nodes) may continue over several lines.
ONCE = ("start", "gamma", "propositions")


def build_mdp(block: S.Block, ctx: Context) -> LabeledMDP:
    """``mdp NAME { states ...; actions ...; label P s ...; start s [p] ...; s a -> t p, ... }``."""
    where = f"mdp '{block.name}'"
    states: list[S.Ident] = []
    actions: list[S.Ident] = []
    props: list[S.Ident] | None = None
    labels: list[S.Setting] = []
    start: S.Setting | None = None
    gamma = 0.99
    transitions: list[S.MdpTransition] = []
    once: dict[str, S.Setting] = {}
    for st in block.statements:
        if isinstance(st, S.MdpTransition):
            transitions.append(st)
        elif isinstance(st, S.Setting) and st.key in MDP_SETTINGS:
            key = str(st.key)
            if key in ONCE:
                if key in once:
                    ctx.fail(f"{where} sets '{key}' twice (first at line {once[key].pos.line})", st.key)
                once[key] = st
            if key == "states":
                states += ctx.idents(st, "state names")
            elif key == "actions":
                actions += ctx.idents(st, "action names")
            elif key == "propositions":
                props = (props or []) + ctx.idents(st, "proposition names")
            elif key == "label":
                if len(st.values) < 2:
                    ctx.fail("'label' expects a proposition and the states carrying it: 'label A s0 s1'", st.key)
                ctx.idents(st, "a proposition then state names")
                labels.append(st)
            elif key == "start":
                start = st
            else:
                gamma = ctx.number(ctx.one(st, "the discount"), "gamma")
        elif isinstance(st, S.Setting):
            _unknown(ctx, st.key, where, MDP_SETTINGS)
        else:
            _wrong_statement(ctx, st, where)
    if not states:
        ctx.fail(f"{where} declares no states; write 'states s0 s1 ...'", block.name)
    if not actions:
        ctx.fail(f"{where} declares no actions; write 'actions a b ...'", block.name)
    ctx.unique(states, "state")
    ctx.unique(actions, "action")
    si = {str(s): i for i, s in enumerate(states)}
    ai = {str(a): i for i, a in enumerate(actions)}
    n_s, n_a = len(states), len(actions)

    def state(ref: S.Ident) -> int:
        if ref not in si:
            ctx.fail(f"undefined state {str(ref)!r} in {where}", ref)
        return si[ref]

    # labels
    if props is not None:
        ctx.unique(props, "proposition")
    alphabet = [str(p) for p in props] if props is not None else []
    label_of: dict[int, S.Ident] = {}
    for st in labels:
        p = st.values[0]
        if p not in alphabet:
            if props is not None:
                ctx.fail(f"label {str(p)!r} is not in the propositions of {where}: {' '.join(alphabet)}", p)
            alphabet.append(str(p))
        for ref in st.values[1:]:
            s = state(ref)
            if s in label_of:
                ctx.fail(
                    f"state {str(ref)!r} already has label {str(label_of[s])!r} (line {label_of[s].pos.line}); "
                    "each state carries exactly one proposition",
                    ref,
                )
            label_of[s] = p
    unlabeled = [str(states[s]) for s in range(n_s) if s not in label_of]
    if unlabeled:
        more = f" and {len(unlabeled) - 3} more" if len(unlabeled) > 3 else ""
        ctx.fail(
            f"state {unlabeled[0]!r}{', ' + ', '.join(map(repr, unlabeled[1:3])) if len(unlabeled) > 1 else ''}"
            f"{more} of {where} has no label; write 'label P {unlabeled[0]}'",
            block.name,
        )

    # initial distribution
    initial = np.full(n_s, 1.0 / n_s)
    if start is not None:
        initial = _start_distribution(start, state, n_s, ctx)

    # transitions
    rows, cols, vals = [], [], []
    seen: dict[tuple[int, int], S.MdpTransition] = {}
    for t in transitions:
        s = state(t.state)
        if t.action not in ai:
            ctx.fail(
                f"undefined action {str(t.action)!r} in {where}; actions are {' '.join(map(str, actions))}", t.action
            )
        a = ai[t.action]
        if (s, a) in seen:
            ctx.fail(
                f"second transition for state {str(t.state)!r}, action {str(t.action)!r} "
                f"(the first at line {seen[(s, a)].pos.line})",
                t,
            )
        seen[(s, a)] = t
        targets: dict[int, S.Ident] = {}
        total = 0.0
        for ref, num in t.outcomes:
            j = state(ref)
            if j in targets:
                ctx.fail(f"successor {str(ref)!r} is listed twice in this transition", ref)
            targets[j] = ref
            if num is None:
                if len(t.outcomes) > 1:
                    ctx.fail(f"probability missing after {str(ref)!r}; only a single successor may omit it", ref)
                p = 1.0
            else:
                p = num.value
                if not (0.0 <= p <= 1.0):
                    ctx.fail(f"probability {num.text} is outside [0, 1]", num)
            total += p
            rows.append(s * n_a + a)
            cols.append(j)
            vals.append(p)
        if abs(total - 1.0) > PROB_TOL:
            ctx.fail(f"probabilities of this transition sum to {total:.12g}, expected 1 (±{PROB_TOL:g})", t)
    missing = [(s, a) for s in range(n_s) for a in range(n_a) if (s, a) not in seen]
    if missing:
        s, a = missing[0]
        more = f" ({len(missing) - 1} more pairs are missing)" if len(missing) > 1 else ""
        ctx.fail(
            f"{where} has no transition for state {str(states[s])!r}, action {str(actions[a])!r}{more}; "
            f"write e.g. '{states[s]} {actions[a]} -> {states[s]}'",
            block.name,
        )
    P = Csr.from_coo(vals, rows, cols, (n_s * n_a, n_s))
    try:
        return LabeledMDP(
            states=[str(s) for s in states],
            actions=[str(a) for a in actions],
            transitions=P,
            labels=[alphabet.index(label_of[s]) for s in range(n_s)],
            propositions=alphabet,
            initial=initial,
            gamma=gamma,
            name=str(block.name),
        )
    except ModelError as err:
        _model_error(ctx, err, block.name)


def _start_distribution(st: S.Setting, state, n_s: int, ctx: Context) -> np.ndarray:
    """``start s0 s1`` (uniform) or ``start s0 0.25 s1 0.75``."""
    vals = list(st.values)
    if not vals:
        ctx.fail("'start' expects start states, optionally each followed by its probability", st.key)
    refs, weights = [], []
    i = 0
    while i < len(vals):
        ref = ctx.ident(vals[i], "start", "a state name")
        w = None
        if i + 1 < len(vals) and isinstance(vals[i + 1], S.Num):
            w = vals[i + 1]
            i += 1
        refs.append(ref)
        weights.append(w)
        i += 1
    if any(w is None for w in weights) and any(w is not None for w in weights):
        ctx.fail("give a probability to every start state, or to none (uniform)", st.key)
    init = np.zeros(n_s)
    for k, ref in enumerate(refs):
        s = state(ref)
        if init[s] != 0:
            ctx.fail(f"start state {str(ref)!r} is listed twice", ref)
        init[s] = 1.0 / len(refs) if weights[k] is None else weights[k].value
        if weights[k] is not None and not 0 < weights[k].value <= 1:
            ctx.fail(f"start probability {weights[k].text} is outside (0, 1]", weights[k])
    if abs(init.sum() - 1.0) > PROB_TOL:
        ctx.fail(f"start probabilities sum to {init.sum():.12g}, expected 1", st.key)
    return init


# ---------------------------------------------------------------------- generated MDP
def build_generated(block: S.Block, ctx: Context) -> LabeledMDP:
    """``mdp NAME = GENERATOR { settings }``: see :mod:`rmtk.dsl.generators`."""
    from .generators import SYNTAX

    gen = block.generator
    if gen not in SYNTAX:
        ctx.fail(f"unknown generator {str(gen)!r}; available: {', '.join(sorted(SYNTAX))}", gen)
    return SYNTAX[str(gen)].build(block, ctx)


# ---------------------------------------------------------------------- task
TASK_SETTINGS = ("mdp", "machine", "gamma", "lambda", "depth", "max_nodes")


def build_task(block: S.Block, ctx: Context, mdps: dict, machines: dict) -> Task:
    """``task NAME { mdp M; machine R; gamma g; lambda l; depth d; max_nodes n }``; ``machine``
    may be left out when it is not known (learning from rewards or demonstrations needs none):
    the task then remembers where it was written, for the error of what needs one."""
    where = f"task '{block.name}'"
    kw: dict = {}
    refs: dict[str, S.Setting] = {}
    for st in block.statements:
        if not isinstance(st, S.Setting):
            _wrong_statement(ctx, st, where)
        key = str(st.key)
        if key not in TASK_SETTINGS:
            _unknown(ctx, st.key, where, TASK_SETTINGS)
        if key in refs:
            ctx.fail(f"{where} sets '{key}' twice (first at line {refs[key].pos.line})", st.key)
        refs[key] = st
        v = ctx.one(st, key)
        if key in ("mdp", "machine"):
            table = mdps if key == "mdp" else machines
            name = ctx.ident(v, key, f"the name of an {key} block")
            if name not in table:
                known = " ".join(table) or "none"
                ctx.fail(f"undefined {key} {str(name)!r}; this file defines: {known}", name)
            kw[key] = table[name]
        elif key == "depth" and isinstance(v, S.Ident) and str(v) == EVERY_DEPTH:
            kw[key] = EVERY_DEPTH
        elif key in ("depth", "max_nodes"):
            kw[key] = ctx.integer(v, key, "a whole number" + (" or inf (every depth)" if key == "depth" else ""))
            beyond = depth_beyond(kw[key]) if key == "depth" else None
            if beyond is not None:  # refused here, before any tree is built, at the value's line
                ctx.fail(f"{where}: {beyond}", v)
        else:
            kw["lam" if key == "lambda" else key] = ctx.number(v, key)
    if "mdp" not in kw:
        ctx.fail(f"{where} names no mdp; write 'mdp NAME'", block.name)
    pos = block.name.pos
    try:
        return Task(name=str(block.name), **kw, origin=Location(ctx.file, pos.line, pos.column))
    except ModelError as err:
        _model_error(ctx, err, block.name)


# ---------------------------------------------------------------------- file
def build_file(blocks: list[S.Block], file: str, text: str) -> RmFile:
    """Build every block; tasks may refer to MDPs and machines defined anywhere in the file."""
    ctx = Context(file, text)
    seen: dict[tuple[str, str], S.Block] = {}
    for b in blocks:
        ns = "mdp" if b.kind == "generated" else b.kind
        if (ns, b.name) in seen:
            ctx.fail(
                f"a second {ns} is named {str(b.name)!r} (the first at line {seen[(ns, b.name)].pos.line})", b.name
            )
        seen[(ns, b.name)] = b
    mdps = {}
    machines = {}
    for b in blocks:
        if b.kind == "mdp":
            mdps[str(b.name)] = build_mdp(b, ctx)
        elif b.kind == "generated":
            mdps[str(b.name)] = build_generated(b, ctx)
        elif b.kind == "machine":
            machines[str(b.name)] = build_machine(b, ctx)
    tasks = {str(b.name): build_task(b, ctx, mdps, machines) for b in blocks if b.kind == "task"}
    return RmFile(mdps, machines, tasks)
