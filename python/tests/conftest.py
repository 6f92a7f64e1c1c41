import os
import pathlib

import pytest

SOURCE_DIR = pathlib.Path(os.environ.get("TYCHE_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))


@pytest.fixture
def golden():
    """The text of a C++ golden file (tests/golden/schedule/<name>.txt)."""
    def read(name: str) -> str:
        return (SOURCE_DIR / "tests" / "golden" / "schedule" / f"{name}.txt").read_text()
    return read
