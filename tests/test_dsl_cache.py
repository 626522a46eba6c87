"""The parser is built once, then loaded from the user's cache; a bad cache never breaks parsing."""

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from rmtk import dsl
from rmtk.dsl import cache, parser

ROOT = Path(__file__).resolve().parents[1]
PATROL = (ROOT / "models" / "patrol.rm").read_text()


@pytest.fixture
def builds(tmp_path, monkeypatch):
    """Cache in ``tmp_path/rmtk``, a fresh per-process parser; yields the list of builds."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    done = []
    real = cache.build
    monkeypatch.setattr(cache, "build", lambda grammar, options: done.append(1) or real(grammar, options))
    parser._parser.cache_clear()
    yield done
    parser._parser.cache_clear()


def cache_path():
    return cache.cache_file(parser.grammar_text(), parser.OPTIONS)


def parse_fresh():
    """Parse patrol.rm as a new process would: without the in-process parser."""
    parser._parser.cache_clear()
    return dsl.loads(PATROL)


def test_second_parse_loads_the_saved_parser(builds, tmp_path):
    first = parse_fresh()
    assert len(builds) == 1 and cache_path().parent == tmp_path / "rmtk" and cache_path().is_file()
    assert dsl.loads(PATROL) == first and len(builds) == 1  # same process: the same parser
    assert parse_fresh() == first and len(builds) == 1  # "next process": loaded, not built
    if hasattr(os, "getuid"):
        assert cache_path().stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("content", [b"", b"garbage\n" * 100, pickle.dumps({"data": 1}), "truncated"])
def test_corrupt_cache_is_rebuilt_and_repaired(builds, content):
    parse_fresh()
    path = cache_path()
    content = path.read_bytes()[:1000] if content == "truncated" else content
    path.write_bytes(content)
    path.chmod(0o600)
    assert parse_fresh() == dsl.loads(PATROL) and len(builds) == 2
    parse_fresh()
    assert len(builds) == 2  # the rebuilt parser replaced the bad file


def test_unwritable_cache_directory_still_parses(builds, tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # mkdir fails even for root
    assert parse_fresh().tasks["patrol"].machine.n_nodes == 4
    assert parse_fresh().tasks["patrol"].machine.n_nodes == 4 and len(builds) == 2
    assert blocker.read_text() == ""


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_cache_writable_by_others_is_not_loaded(builds):
    parse_fresh()
    cache_path().chmod(0o666)
    parse_fresh()
    assert len(builds) == 2 and cache_path().stat().st_mode & 0o777 == 0o600


def test_cache_key_follows_grammar_options_and_relative_dirs(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    grammar, options = parser.grammar_text(), parser.OPTIONS
    key = cache.cache_file(grammar, options)
    assert key == cache.cache_file(grammar, dict(options))
    assert key != cache.cache_file(grammar + "\n// changed\n", options)
    assert key != cache.cache_file(grammar, {**options, "propagate_positions": False})
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")
    assert cache.cache_file(grammar, options) is None


def test_importing_rmtk_and_dsl_does_not_import_lark():
    code = (
        "import sys, rmtk, rmtk.cli.main; from rmtk import dsl; print('lark' in sys.modules); "
        "dsl.loads('machine m { alphabet A; u0 -> u1 on A }'); print('lark' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True"]


def test_writing_a_parser_file_prunes_old_ones(builds, tmp_path):
    folder = tmp_path / "rmtk"
    folder.mkdir(mode=0o700)
    old = []
    for i in range(cache.KEEP + 3):  # files of other grammars, Lark or Python versions, oldest first
        f = folder / f"parser-old{i:02d}.pickle"
        f.write_bytes(b"x")
        os.utime(f, (1000 + i, 1000 + i))
        old.append(f)
    other = folder / "notes.txt"
    other.write_text("kept")
    dsl.loads(PATROL)
    kept = sorted(p.name for p in folder.glob("parser-*.pickle"))
    assert len(kept) == cache.KEEP and cache_path().name in kept
    assert set(kept) - {cache_path().name} == {f.name for f in old[-(cache.KEEP - 1) :]}  # the newest old ones stay
    assert other.exists()
