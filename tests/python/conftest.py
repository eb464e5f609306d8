"""Shared fixtures: the built `lowp` program (LOWP_CLI) and ../shared (LOWP_SHARED_DIR), set by CTest.

Every test module imports lowp with pytest.importorskip, so without the built module each
test is reported as skipped with the reason (never silently passed). When CMake built the
module, CTest sets LOWP_PYTHON_REQUIRED=1: then a module that cannot be imported (a broken
PYTHONPATH, an unresolved symbol, a missing runtime) ends the session as a failure instead.
"""
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def pytest_sessionstart(session):
    if os.environ.get("LOWP_PYTHON_REQUIRED") != "1":
        return
    try:
        import lowp  # noqa: F401
    except Exception as e:  # ImportError, or whatever the extension's initialisation raises
        pytest.exit(f"the lowp Python module was built but cannot be imported: {type(e).__name__}: {e} "
                    f"(PYTHONPATH={os.environ.get('PYTHONPATH', '')})", returncode=1)


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
