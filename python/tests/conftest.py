"""Shared fixtures: the repository's data files (TENSORMEM_SOURCE_DIR, set by ctest)."""

import os
import pathlib

import pytest


@pytest.fixture(scope="session")
def source_dir() -> pathlib.Path:
    default = pathlib.Path(__file__).resolve().parents[2]
    return pathlib.Path(os.environ.get("TENSORMEM_SOURCE_DIR", default))


@pytest.fixture(scope="session")
def trace_data(source_dir: pathlib.Path) -> pathlib.Path:
    return source_dir / "tests" / "data" / "trace"
