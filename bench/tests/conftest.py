import os
import sys

import pytest

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, BENCH)


@pytest.fixture(scope="session")
def build_dir():
    d = os.environ.get("TYCHE_BUILD_DIR")
    if not d:
        pytest.fail("TYCHE_BUILD_DIR is not set: run these tests through ctest, or set it to the build folder")
    return d


@pytest.fixture(scope="session")
def library(build_dir):
    from suitelib.baselines import Library
    return Library(os.path.join(build_dir, "bench", "libtyche_baselines.so"))
