import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"


@pytest.fixture(scope="session", autouse=True)
def sb3_log_folder(tmp_path_factory):
    """Where Stable-Baselines3 logs during the tests: a model whose logger is not set makes a
    folder at every ``learn`` (in the system's temporary directory by default). rmtk's own
    models set theirs (rmtk.rl.no_log_folder); the models of the README's blocks and of the
    tutorials the tests run, written as a reader writes them, log here instead, in pytest's
    temporary directory."""
    folder = tmp_path_factory.mktemp("sb3-logs")
    before = os.environ.get("SB3_LOGDIR")
    os.environ["SB3_LOGDIR"] = str(folder)
    yield folder
    if before is None:
        os.environ.pop("SB3_LOGDIR", None)
    else:
        os.environ["SB3_LOGDIR"] = before


@pytest.fixture(scope="session")
def models_dir() -> Path:
    return MODELS


@pytest.fixture(scope="session")
def dask_client():
    """One local Dask cluster of 2 worker processes for the whole test session (the cluster
    `--engine dask --workers 2` starts)."""
    from rmtk.engines.dask import local_cluster

    cluster, client = local_cluster(2)
    yield client
    client.close()
    cluster.close()
