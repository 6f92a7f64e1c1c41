"""The examples under examples/python run (with small sizes and budgets) and check themselves
against numpy."""

import os
import subprocess
import sys

import pytest

from conftest import SOURCE_DIR

EXAMPLES = SOURCE_DIR / "examples" / "python"


@pytest.mark.parametrize("script, args", [
    ("paper_example.py", ["--size", "64", "--trials", "8", "--quick"]),
    ("gmm_hand_schedule.py", ["--workload", "GMM-1", "--scale-down"]),
    ("custom_rule.py", ["--trials", "8", "--rows", "32", "--cols", "64", "--quick"]),
])
def test_example_runs(script, args):
    r = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ))
    assert r.returncode == 0, r.stderr + r.stdout
    assert "correct against numpy" in r.stdout or "ratio" in r.stdout


@pytest.mark.parametrize("script", ["strategies/bayesian.py", "strategies/reinforce.py", "cost_models/forest.py"])
def test_python_strategy_and_model_examples_tune(script):
    r = subprocess.run([sys.executable, str(SOURCE_DIR / "examples" / script), "--workload", "GMM-1", "--scale-down",
                        "--trials", "16", "--batch", "8", "--quick"], capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert r.returncode == 0, r.stderr + r.stdout
    assert "after 16 trials (0 failed)" in r.stdout, r.stdout
