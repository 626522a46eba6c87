"""rmtk learn --demos D --from rewards|policy|both (rmtk/cli/flags.py, docs/guide/11-learning-from-rewards.md):
data made by rmtk simulate --rewards, learned from end to end through the command line."""

import re
from pathlib import Path

import numpy as np
import pytest

from rmtk import dsl
from rmtk.cli.main import main
from rmtk.data import holds_rewards, save
from rmtk.machine.model import isomorphic
from rmtk.traces.explorers import explore

MODELS = Path(__file__).resolve().parents[1] / "models"
PATROL = str(MODELS / "patrol.rm")


@pytest.fixture(scope="module")
def truth():
    return dsl.load(PATROL).tasks["patrol"]


def simulate(path, n, horizon, *more):
    argv = ["simulate", PATROL, "-n", str(n), "-T", str(horizon), "--seed", "1", "-o", str(path), "-q", *more]
    assert main(argv) == 0
    return str(path)


@pytest.fixture(scope="module")
def walks(tmp_path_factory):
    """300 uniform random walks of 30 steps with the machine's rewards (CSV)."""
    return simulate(tmp_path_factory.mktemp("rw") / "walks.csv", 300, 30, "--rewards", "--policy", "uniform")


def learned(text: str):
    return list(dsl.loads(text).machines.values())


def test_from_rewards_gives_the_truth_with_its_observed_rewards(walks, truth, capsys):
    capsys.readouterr()
    assert main(["learn", PATROL, "--demos", walks, "--from", "rewards", "-q"]) == 0
    out = capsys.readouterr().out
    assert "# learned from task patrol: the rewards of the data alone (no policy)" in out
    assert "# reward traces: 8,700 rewarded steps" in out
    assert "# solutions: 1 machine up to renaming" in out
    assert "# observed rewards: u3 on D pays 1 (15 observed (node, letter) pay 0)" in out
    assert "noise 0.0000 (0 of 8700 observed steps disagree" in out
    (m,) = learned(out)
    assert isomorphic(m, truth.machine, rewards=True)  # the rewards printed are the world's, no IRL


def test_short_walks_leave_transitions_and_rewards_free(tmp_path, capsys):
    short = simulate(tmp_path / "short.npz", 200, 6, "--rewards", "--policy", "uniform")
    capsys.readouterr()
    assert main(["learn", PATROL, "--demos", short, "--from", "rewards", "-q", "--max-solutions", "3"]) == 0
    out = capsys.readouterr().out
    assert "listing stopped at 3 machines (max_solutions): more survive" in out
    assert out.count("# unconstrained by the data (written as self-loops): u2 on A") == 3
    assert out.count("# rewards no trace observes (free, written as 0): u2 on A") == 3
    assert all(m.n_nodes == 3 for m in learned(out))  # six steps never show the whole patrol


def test_the_default_is_what_the_data_hold(walks, tmp_path, capsys):
    """With a reward column: both, and the report says which evidence split which nodes;
    without: the policy (as before)."""
    capsys.readouterr()
    assert main(["learn", PATROL, "--demos", walks, "-q"]) == 0
    out = capsys.readouterr().out
    assert "# learned from task patrol: empirical prefix tree policy" in out and "# reward traces:" in out
    assert "# which evidence decided what (each evidence alone, same limits):" in out
    assert "#   both: 4 nodes, 1 machine; rewards alone: 4 nodes, 1 machine; policy alone: 1 node, 1 machine" in out
    assert "#   u0 and u3: split by the rewards (rewards alone split them; the policy alone merges them)" in out
    assert "MaxEnt" not in out  # the rewards are the observed ones
    plain = simulate(tmp_path / "plain.npz", 200, 10)
    assert not holds_rewards(plain) and holds_rewards(walks)
    assert main(["learn", PATROL, "--demos", plain, "-q", "--no-rewards"]) == 0
    out = capsys.readouterr().out
    assert "# reward traces" not in out and "which evidence" not in out
    # --from policy on data with rewards: the rewards are left aside, IRL may run as before
    assert main(["learn", PATROL, "--demos", walks, "--from", "policy", "-q", "--no-rewards"]) == 0
    assert "# reward traces" not in capsys.readouterr().out


def test_from_rewards_on_data_without_rewards_is_a_usage_error(tmp_path, capsys):
    plain = simulate(tmp_path / "plain.csv", 20, 5)
    capsys.readouterr()
    for evidence in ("rewards", "both"):
        assert main(["learn", PATROL, "--demos", plain, "--from", evidence]) == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and err[0].startswith(f"rmtk: error: --from {evidence}: {plain} holds no rewards"), err
    assert main(["learn", PATROL, "--from", "rewards"]) == 2  # no --demos: the flag does not apply (a usage error)
    assert "--from does not apply to learning from the task's exact policy" in capsys.readouterr().err
    for evidence in ("rewards", "both", "policy"):  # a missing file is said missing, not rewardless
        assert main(["learn", PATROL, "--demos", str(tmp_path / "gone.csv"), "--from", evidence]) == 1
        assert capsys.readouterr().err == f"rmtk: error: {tmp_path / 'gone.csv'}: no such file or directory (--demos)\n"


def test_noisy_rewards_report_the_noise_level(truth, tmp_path, capsys):
    path = tmp_path / "noisy.npz"
    save(explore(truth, 100, 20, seed=2, epsilon=1.0, noise=0.05, episodic=False), path, truth.mdp)
    argv = ["learn", PATROL, "--demos", str(path), "--from", "rewards", "--noisy", "--simplest", "--nodes", "4", "-q"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "# MaxSAT: the optimum calls 102 observed step(s) noisy" in out
    assert "# noise 0.0537 (102 of 1900 observed steps disagree; 95% interval 0.0440 to 0.0648)" in out
    ms = learned(out)
    assert len(ms) == 2 and isomorphic(ms[0], truth.machine, rewards=True)


def test_simulate_writes_noisy_rewards(tmp_path, capsys, truth):
    """--reward-noise replace:E and uniform:W (rmtk/traces/noise.py), seeded by --seed + 1."""
    from rmtk.data import load

    clean = load(simulate(tmp_path / "clean.npz", 400, 30, "--rewards", "--policy", "uniform"), truth.mdp).rewards
    wrong = load(
        simulate(tmp_path / "r.npz", 400, 30, "--rewards", "--policy", "uniform", "--reward-noise", "replace:0.1"),
        truth.mdp,
    ).rewards
    seen = ~np.isnan(clean)
    assert np.array_equal(np.isnan(wrong), ~seen)  # the same trajectories, the same recorded steps
    share = np.mean(wrong[seen] != clean[seen])
    assert 0.08 < share < 0.12, share  # 11,600 steps: ε = 0.1 within four standard deviations
    assert set(np.unique(wrong[seen])) <= set(np.unique(truth.machine.delta_r))
    spread = load(
        simulate(tmp_path / "u.npz", 400, 30, "--rewards", "--policy", "uniform", "--reward-noise", "uniform:0.1"),
        truth.mdp,
    ).rewards
    paid = seen & (clean != 0)
    assert paid.any() and np.all(np.abs(spread[paid] - clean[paid]) <= 0.1)
    assert np.array_equal(spread[seen & ~paid], clean[seen & ~paid])  # the zeros stay exact
    assert "reward noise uniform:0.1 (seed 2)" in capsys.readouterr().err
    for extra, code, said in (
        ([], 2, "--reward-noise applies with --rewards"),
        (["--rewards", "--format", "parquet"], 2, "not to a Parquet dataset"),
    ):
        argv = ["simulate", PATROL, "-n", "5", "-T", "5", "--seed", "1", "-o", str(tmp_path / "x.npz"), "-q"]
        assert main([*argv, *extra, "--reward-noise", "replace:0.1"]) == code
        assert said in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(
            [
                "simulate",
                PATROL,
                "-n",
                "5",
                "-T",
                "5",
                "--seed",
                "1",
                "-o",
                str(tmp_path / "y.npz"),
                "--rewards",
                "--reward-noise",
                "uniform:-1",
            ]
        )
    assert "uniform:W needs a finite W >= 0" in capsys.readouterr().err


def test_both_says_no_evidence_splits_a_pair_another_machine_from_both_merges(tmp_path, capsys):
    """20 walks of 20 steps leave two machines from both: the second merges u0 and u1 of the first,
    so the comparison may not say both together split them. Checked on the machines printed: a
    pair said split is split by every machine listed, a pair said merged is merged by another."""
    path = simulate(tmp_path / "few.npz", 20, 20, "--rewards", "--seed", "3")
    capsys.readouterr()
    assert main(["learn", PATROL, "--demos", path, "--from", "both", "-q"]) == 0
    out = capsys.readouterr().out
    assert "#   both: 3 nodes, 2 machines; rewards alone: 3 nodes, 2 machines; policy alone: 1 node, 1 machine" in out
    assert (
        "#   u0 and u1: split by no evidence: both together merge them in 1 of the 2 machines listed (rewards alone "
        "merge them in 1 of 2 machines; the policy alone merges them)"
    ) in out
    assert "#   u0 and u2: split by the rewards (rewards alone split them; the policy alone merges them)" in out
    assert "split only by both together" not in out
    first, second = learned(out)
    from rmtk.data import load

    task = dsl.load(PATROL).tasks["patrol"]
    demos = load(path, task.mdp)
    at = [[], []]  # per machine: (node in the first, node in it) after every prefix of every walk
    for i, n in enumerate(demos.lengths):
        u, v = first.initial, second.initial
        for s in demos.states[i, :n]:
            k = first.alphabet.index(task.mdp.propositions[task.mdp.labels[s]])
            u, v = int(first.delta_u[u, k]), int(second.delta_u[v, k])
            at[0].append(u)
            at[1].append(v)
    pairs = set(zip(*at))
    merged = [v for v in range(second.n_nodes) if {0, 1} <= {a for a, b in pairs if b == v}]
    assert merged, "the second machine sends a word ending in u0 and one ending in u1 to one node"
    assert all(len({b for a, b in pairs if a == x} & {b for a, b in pairs if a == 2}) == 0 for x in (0, 1))


def test_contradictory_rewards_are_named_with_their_steps_even_with_q(tmp_path, capsys, truth):
    """One reward changed in exact walks: no machine pays both values. The message names the
    rewards (not a policy), the word and letter, a trajectory and step paying each value, and
    --noisy / --tolerance; it reaches stderr with -q. --noisy then learns, calling that step noisy."""
    path = simulate(tmp_path / "w.csv", 30, 10, "--rewards")
    lines = Path(path).read_text().splitlines()
    fields = lines[4].split(",")  # trajectory 0, step 3: after the word A, the letter B pays 0
    assert fields[:2] == ["0", "3"] and fields[-1] == "0.0"
    lines[4] = ",".join(fields[:-1] + ["0.5"])
    Path(path).write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert main(["learn", PATROL, "--demos", path, "--from", "rewards", "-q"]) == 1
    out, err = capsys.readouterr()
    said = (
        "no machine with at most 4 nodes pays the recorded rewards, which contradict each other: after the word 'A', "
        "the letter 'B' was paid 0 (12 steps, the first at trajectory 1, step 0) and 0.5 (1 step, at trajectory 0, "
        "step 3); no machine pays two values there"
    )
    assert err.startswith(f"rmtk: no machine found: {said}") and "--noisy" in err and "--tolerance" in err
    assert f"# no solution: {said}" in out and "prefix tree policy" not in out
    assert main(["learn", PATROL, "--demos", path, "--from", "both", "-q"]) == 1  # the policy does not undo it
    both = said.replace("4 nodes pays", "4 nodes is consistent with the prefix tree policy and pays")
    assert capsys.readouterr().err.startswith(f"rmtk: no machine found: {both}")
    from rmtk.data import load

    demos = load(path, truth.mdp)
    labels = truth.mdp.propositions
    word = [labels[truth.mdp.labels[s]] for s in demos.states[1, :1]]
    assert word == ["A"] and labels[truth.mdp.labels[demos.states[1, 1]]] == "B" and demos.rewards[1, 0] == 0
    assert main(["learn", PATROL, "--demos", path, "--from", "rewards", "--noisy", "--nodes", "4", "-q"]) == 0
    out = capsys.readouterr().out
    assert "# MaxSAT: the optimum calls 1 observed step(s) noisy" in out
    assert learned(out) and all(m.n_nodes == 4 for m in learned(out))


def _pays(machine, word, letter) -> float:
    """What ``machine`` pays on ``letter`` after ``word`` (label names), run step by step."""
    u = machine.initial
    for a in word:
        u = int(machine.delta_u[u, machine.alphabet.index(a)])
    return float(machine.delta_r[u, machine.alphabet.index(letter)])


def test_from_rewards_ends_with_the_verdict_against_the_true_machine(walks, truth, tmp_path, capsys):
    """As every other mode, --from rewards says per machine whether it is the task's: here it pays
    what the truth pays after every word and is isomorphic to it; from six-step walks each listed
    machine pays otherwise, with the shortest word that shows it (checked by running both)."""
    capsys.readouterr()
    assert main(["learn", PATROL, "--demos", walks, "--from", "rewards", "-q"]) == 0
    out = capsys.readouterr().out
    assert (
        "# verdict: pays what the true machine pays after every word, at every depth (48 synchronised product "
        "states checked); isomorphic to the true machine 'patrol'\nmachine learned {"
    ) in out
    short = simulate(tmp_path / "short.npz", 200, 6, "--rewards", "--policy", "uniform")
    assert main(["learn", PATROL, "--demos", short, "--from", "rewards", "-q", "--max-solutions", "3"]) == 0
    out = capsys.readouterr().out
    assert "# reward-equivalent to the truth at every depth: 0 of the 3 listed" in out
    said = [line for line in out.splitlines() if line.startswith("# verdict: ")]
    ms = learned(out)
    assert len(said) == len(ms) == 3
    shape = re.compile(
        r"# verdict: pays otherwise: after the word ([A-D ]+) \(at state r\dc\d\), the next label ([A-D]) pays "
        r"(\S+) here and (\S+) under the true machine$"
    )
    for line, m in zip(said, ms):
        word, letter, paid, true_paid = shape.fullmatch(line).groups()
        word = word.split()
        assert float(paid) == _pays(m, word, letter) != _pays(truth.machine, word, letter) == float(true_paid)


def test_a_task_without_a_machine_learns_from_rewards_and_says_what_needs_one(walks, truth, tmp_path, capsys):
    """Learning from rewards is when a user has no machine: a task that names none learns the
    same machine, without a verdict (no truth); what needs the machine says where the task is
    written and what needs it."""
    text = Path(PATROL).read_text()
    body = text[text.index("mdp rooms") : text.index("machine patrol")]
    path = tmp_path / "rooms.rm"
    path.write_text(body + "task patrol {\n  mdp rooms\n  max_nodes 4\n}\n")
    line = 1 + (body + "task patrol").count("\n")
    capsys.readouterr()
    assert main(["check", str(path)]) == 0
    assert "task patrol: mdp rooms, no machine, gamma 0.99, lambda 1, max_nodes 4" in capsys.readouterr().out
    assert main(["learn", str(path), "--demos", walks, "--from", "rewards", "-q"]) == 0
    out = capsys.readouterr().out
    (m,) = learned(out)
    assert isomorphic(m, truth.machine, rewards=True) and "verdict" not in out
    assert main(["learn", str(path), "--demos", walks, "-q"]) == 0  # both: no verdict either
    out = capsys.readouterr().out
    assert "which evidence decided what" in out and "verdict" not in out
    for argv, needs in (
        ([], "the expert's exact policy (computed from the machine)"),
        (["--active"], "asking the task's expert (its policy is computed from the machine)"),
        (["--learn-labels"], "the expert's exact policy (computed from the machine)"),
    ):
        assert main(["learn", str(path), "-q", *argv]) == 1
        err = capsys.readouterr().err
        assert err == (
            f"rmtk: error: {path}:{line}:6: task 'patrol' names no machine, and {needs} needs one: add a line "
            "'machine NAME' to it\n"
        )
    assert main(["simulate", str(path), "-n", "2", "-T", "2", "--seed", "0", "-o", str(tmp_path / "x.npz")]) == 1
    assert f"{path}:{line}:6: task 'patrol' names no machine, and simulating its expert" in capsys.readouterr().err
    assert not (tmp_path / "x.npz").exists()
