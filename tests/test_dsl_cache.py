"""The parser is built once, then loaded from the user's cache; a bad cache never breaks parsing."""

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from rmtk import dsl
from rmtk.dsl import cache, parser
from rmtk.errors import DslSyntaxError

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


@pytest.fixture
def parses(tmp_path, monkeypatch):
    """Parsed files cached in ``tmp_path/rmtk``; yields the list of texts actually parsed."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    done = []
    real = dsl.loads
    monkeypatch.setattr(dsl, "loads", lambda text, file="<string>": done.append(text) or real(text, file=file))
    return done


def parsed_files(tmp_path):
    return sorted((tmp_path / "rmtk").glob("file-*.pickle"))


def test_a_loaded_file_is_parsed_once_then_read_back(parses, tmp_path):
    model = tmp_path / "patrol.rm"
    model.write_text(PATROL)
    first = dsl.load(model)
    assert len(parses) == 1 and len(parsed_files(tmp_path)) == 1
    again = dsl.load(model)
    assert again == first and len(parses) == 1  # the saved answer, not a second parse
    assert again == dsl.loads(PATROL, file=str(model))
    if hasattr(os, "getuid"):
        assert parsed_files(tmp_path)[0].stat().st_mode & 0o777 == 0o600


def test_an_edited_file_or_another_name_is_parsed_again(parses, tmp_path):
    model = tmp_path / "patrol.rm"
    model.write_text(PATROL)
    dsl.load(model)
    model.write_text(PATROL.replace("patrol", "watch"))
    assert "watch" in dsl.load(model).tasks and len(parses) == 2
    copy = tmp_path / "copy.rm"
    copy.write_text(PATROL.replace("patrol", "watch"))
    dsl.load(copy)
    assert len(parses) == 3  # errors name the file: its name is part of what is cached


def test_a_cached_answer_under_another_key_is_not_used(parses, tmp_path):
    """The file name only indexes: a file holding another text's answer (a CRC collision,
    or a foreign or stale file) is parsed again and replaced."""
    model = tmp_path / "patrol.rm"
    model.write_text(PATROL)
    dsl.load(model)
    (cached,) = parsed_files(tmp_path)
    other = parser.parse_text("machine m { alphabet A; u0 -> u1 on A }")
    cached.write_bytes(pickle.dumps((("x", "y", ()), other)))
    cached.chmod(0o600)
    assert dsl.load(model).tasks["patrol"].machine.n_nodes == 4 and len(parses) == 2
    assert dsl.load(model).tasks["patrol"].machine.n_nodes == 4 and len(parses) == 2


def test_a_file_that_does_not_parse_is_not_cached(parses, tmp_path):
    bad = tmp_path / "bad.rm"
    bad.write_text("machine m {\n")
    for _ in range(2):
        with pytest.raises(DslSyntaxError):
            dsl.load(bad)
    assert len(parses) == 2 and parsed_files(tmp_path) == []


def test_learning_a_cached_file_does_not_import_lark(tmp_path):
    code = (
        "import sys, contextlib, io; from rmtk.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['learn', 'models/patrol.rm', '-q'])\n"
        "print('lark' in sys.modules)"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}

    def run():
        return subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
        )

    assert [run().stdout.split(), run().stdout.split()] == [["True"], ["False"]]
