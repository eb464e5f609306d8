"""Shared fixtures: the built `lowp` program (LOWP_CLI) and ../shared (LOWP_SHARED_DIR), set by CTest.

Every test module imports lowp with pytest.importorskip, so without the built module each
test is reported as skipped with the reason (never silently passed).
"""
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("LOWP_CLI") or str(ROOT / "build" / "bin" / "lowp")
    if not os.access(path, os.X_OK):
        pytest.skip(f"the lowp program is not built at {path} (set LOWP_CLI)")
    return path


@pytest.fixture(scope="session")
def shared():
    path = pathlib.Path(os.environ.get("LOWP_SHARED_DIR") or ROOT.parent / "shared")
    if not (path / "models" / "stories260K.bin").exists():
        pytest.skip(f"../shared is not available at {path} (set LOWP_SHARED_DIR)")
    return path
