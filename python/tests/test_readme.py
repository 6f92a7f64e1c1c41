"""The Python example of the README's Python section runs (on smaller extents and budget)."""

import re

from conftest import SOURCE_DIR


def test_readme_python_example_runs(tmp_path, capsys):
    readme = (SOURCE_DIR / "README.md").read_text()
    section = readme[readme.index("## Python"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert len(code.splitlines()) <= 15, "the README's Python example is meant to stay short"
    for big, small in [("i=512, j=512, k=512", "i=64, j=48, k=32"),
                       ("trials=64", "trials=8, repeat=2, min_repeat_ms=2"),
                       ('db="mm_db"', f'db="{tmp_path / "mm_db"}"')]:
        assert big in code
        code = code.replace(big, small)
    assert "tyche.formula(" in code and "np.testing.assert_allclose(" in code
    exec(compile(code, "README.md", "exec"), {})  # the assert_allclose against numpy is the check
    out = capsys.readouterr().out
    assert re.search(r"C\[i,j\] \+= A\[i,k\] \* B\[k,j\]: best [0-9.]+ ms, [0-9.]+ GFLOP/s after 8 trials", out), out
    assert "ms median" in out, out
    assert (tmp_path / "mm_db" / "records.jsonl").is_file()
