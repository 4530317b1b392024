"""Fixtures: the zot binary, a mock model per test, and a fresh temporary
zot environment whose traced SDK frames are checked against the protocol
schema when the test ends."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest
from harness import REPO_DIR, Env
from mock_openai import MockOpenAI
from schema_check import check_frames


@pytest.fixture(scope="session")
def zot_bin() -> str:
    path = os.environ.get("ZOT_BIN") or str(REPO_DIR / "target" / "debug" / "zot")
    if not os.access(path, os.X_OK):
        pytest.exit(f"no zot binary at {path}: build it (cargo build -p zot) or set ZOT_BIN", returncode=2)
    return path


@pytest.fixture
def model() -> Iterator[MockOpenAI]:
    server = MockOpenAI()
    yield server
    server.close()


@pytest.fixture
def env(zot_bin: str, tmp_path: Path, model: MockOpenAI) -> Iterator[Env]:
    environment = Env(zot_bin, tmp_path, model.url)
    try:
        yield environment
    finally:
        environment.close()
    check_frames(environment.frames("send"), "the SDK (traced in this test)")
