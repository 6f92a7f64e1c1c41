import os
import pathlib

import pytest

SOURCE_DIR = pathlib.Path(os.environ.get("TYCHE_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))


@pytest.fixture
def golden():
    """The text of a C++ golden file (tests/golden/schedule/<name>.txt); a missing one fails the test."""
    def read(name: str) -> str:
        path = SOURCE_DIR / "tests" / "golden" / "schedule" / f"{name}.txt"
        assert path.is_file(), f"no golden file {path} (is TYCHE_SOURCE_DIR the source tree?)"
        return path.read_text()
    return read
