from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"


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
