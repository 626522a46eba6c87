"""``rmtk learn --learn-labels --active``: the active loop asks the exact expert about state
histories and the labels and machine are learned from its questions alone (no prefix tree)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmtk.cli.main import main

MODELS = Path(__file__).resolve().parents[1] / "models"


def test_labels_learned_from_the_active_loops_questions(capsys):
    assert main(["learn", str(MODELS / "patrol.rm"), "--learn-labels", "--active", "-q"]) == 0
    out = capsys.readouterr().out
    assert "# active learning on state histories:" in out
    assert "1 (labeling, machine) pair with 4 nodes and 4 propositions" in out
    assert "1 of 1 policy-equivalent to the truth at every depth; 1 equal to the truth up to both renamings" in out


def test_labels_with_the_active_loop_take_no_demonstrations(tmp_path, capsys):
    demos = tmp_path / "d.npz"
    args = ["simulate", str(MODELS / "patrol.rm"), "-n", "5", "--horizon", "5", "--seed", "0", "-o", str(demos)]
    assert main(args) == 0
    code = main(["learn", str(MODELS / "patrol.rm"), "--learn-labels", "--active", "--demos", str(demos), "-q"])
    assert code != 0
    assert "--demos does not apply to learning the labels by asking the exact expert" in capsys.readouterr().err


@pytest.mark.parametrize("flag", [["--maxsat"]])
def test_labels_with_the_active_loop_refuse_what_does_not_apply(flag, capsys):
    code = main(["learn", str(MODELS / "patrol.rm"), "--learn-labels", "--active", *flag, "-q"])
    assert code != 0 and "--maxsat does not apply" in capsys.readouterr().err


def test_a_sampled_experts_labels_say_what_the_samples_resolved_never_blaming_the_truth():
    """--learn-labels --active --expert simulated (a small draws budget): the answer is a
    statement of what the questions resolved, as the label-given path says it, and a truth larger
    than the pairs found is not called "not the smallest" (only an exact expert proves that)."""
    import io

    import attrs

    from rmtk.cli.learn import prepare_learn
    from rmtk.cli.main import build_parser
    from rmtk.labels.report import label_report

    argv = ["learn", str(MODELS / "patrol.rm"), "--learn-labels", "--active", "--expert", "simulated", "-q"]
    plan = prepare_learn(build_parser().parse_args([*argv, "--budget-draws", "5000"]))
    active = plan.learner.fit(plan.view, plan.expert)
    result = plan.labels.fit_questions(active, plan.task)
    out = io.StringIO()
    label_report(plan.task, result, out=out)
    text = out.getvalue()
    assert result.truth_size == (4, 4) and (result.n_nodes, result.n_props) < (4, 4)
    assert "the truth is not the smallest answer" not in text
    assert (
        "# the truth (4 nodes, 4 propositions) is larger than the pairs found: what the samples resolved (above) "
        "does not show what would need its other nodes or propositions; more samples may"
    ) in text
    ev = result.evidence
    head = (
        f"# from the sampled expert's answers: {ev.negatives} negative example{'s' if ev.negatives != 1 else ''} at "
        f"level 0.05; {len(active.compared):,} comparisons of two histories asked; the questions stopped early "
        "(budget spent (draws)): more would resolve more"
    )
    assert head in text and f"# pair 1: {ev.merges}" in text
    # the comparisons behind pair 1's merges, counted here from its machine over states
    D = result.solutions[0].state_machine()

    def end(word):
        u = 0
        for s in word:
            u = int(D[u, s])
        return u

    behind = [c for c in active.compared if c.status != "separated" and end(c.word) == end(c.partner)]
    assert behind and ev.merges.comparisons == len([c for c in behind if not (c.optional and c.status == "open")])
    assert "resolution (total variation, alpha 0.05): no difference ≥" in str(ev.merges)
    exact = attrs.evolve(result, evidence=None)  # the same sizes from an exact expert would be a proof
    assert exact.truth_size_line().startswith("the truth is not the smallest answer")
