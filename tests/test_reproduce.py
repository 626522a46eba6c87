"""The paper's experiments in their --quick form: real outcomes, figures written."""

import pytest

from rmtk.experiments import Options, run


def rows(report, i=0):
    caption, header, data = report.tables[i]
    return {str(r[0]): dict(zip(header, r)) for r in data}


@pytest.fixture(scope="module")
def figdir(tmp_path_factory):
    return tmp_path_factory.mktemp("figures")


@pytest.mark.slow  # several CPU seconds: CI runs it apart (setup.cfg)
def test_sensitivity_learned_machines_beat_irl(figdir):
    report = run("sensitivity", Options(quick=True, figure_dir=figdir))
    r = rows(report)
    learned = [r[f"u_max = {u}"]["avg return"] for u in (4, 3, 2)]
    assert learned[0] > learned[1] > learned[2]  # graceful degradation with fewer nodes
    assert min(learned) > max(r["D-IRL"]["avg return"], r["F-IRL"]["avg return"])
    assert abs(learned[0] - r["expert (true)"]["avg return"]) < 10  # u_max 4 acts like the expert
    used = [r[f"u_max = {u}"]["used"] for u in (4, 3, 2)]
    assert used[0] == r["u_max = 4"]["negatives"] and used[0] > used[1] > used[2]
    assert (figdir / "sensitivity.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow  # several CPU seconds: CI runs it apart (setup.cfg)
def test_transfer_learned_machines_beat_irl(figdir):
    report = run("transfer", Options(quick=True, figure_dir=figdir))
    r = rows(report)
    ll = {k: v["avg log-likelihood"] for k, v in r.items()}
    assert abs(ll["u_max = 4"] - ll["TRUE"]) < 0.5
    assert min(ll[f"u_max = {u}"] for u in (4, 3, 2)) > max(ll["D-IRL"], ll["F-IRL"], ll["uniform"])
    assert (figdir / "transfer.png").exists()


def test_suboptimal_policy_identifies_the_machine(figdir):
    report = run("suboptimal", Options(quick=True, figure_dir=figdir, overrides={"trajectories": 50_000}))
    for row in rows(report).values():
        assert row["truth found"] == "yes" and row["nodes"] == 2 and row["raw"] == 1 and row["FPR"] == "0.0%"
    assert (figdir / "suboptimal.png").exists()


def test_figures_are_not_overwritten(tmp_path):
    (tmp_path / "suboptimal.png").write_bytes(b"mine")
    with pytest.raises(Exception, match="already exists"):
        run("suboptimal", Options(quick=True, figure_dir=tmp_path))
    assert (tmp_path / "suboptimal.png").read_bytes() == b"mine"
