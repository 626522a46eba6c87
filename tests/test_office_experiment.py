"""`rmtk reproduce office --quick`: the machines learned from the exact policy and from 10^4
episodes are the true ones, and Q-learning with them succeeds where no machine does."""

import pytest

from rmtk import RmtkError
from rmtk.experiments import Options, run


def rows(report, i):
    caption, header, data = report.tables[i]
    return [dict(zip(header, r)) for r in data]


@pytest.mark.slow  # about ten CPU seconds: CI runs it apart (setup.cfg)
def test_office_quick(tmp_path):
    report = run("office", Options(quick=True, figure_dir=tmp_path))
    learning = rows(report, 0)
    assert [(r["task"], r["from"]) for r in learning] == [
        ("coffee", "exact"),
        ("coffee", "10000 episodes"),
        ("mail", "exact"),
        ("mail", "10000 episodes"),
    ]
    for r in learning:
        assert (r["nodes"], r["machines"], r["consistent"], r["= truth"]) == (3, 1, "yes", "yes")
    for r in rows(report, 1):
        assert r["final learned"] == r["final true"] == "1.00" and r["final no machine"] == "0.00"
        assert r["steps learned"] is not None and r["steps learned"] <= 15_000 and r["steps no machine"] is None
    assert "u1 -g-> u2 (1)" in report.text()  # the learned machines pay for delivering
    assert (tmp_path / "office.png").read_bytes()[:4] == b"\x89PNG"


def test_office_settings_are_checked():
    with pytest.raises(RmtkError, match="unknown office task.*models/office.rm has coffee, mail, coffee_mail, patrol"):
        run("office", Options(quick=True, overrides={"tasks": "coffee,tea"}))
