"""The Python example of the README's Python section runs (on a smaller preset and budget)."""

import re

from conftest import SOURCE_DIR


def test_readme_python_example_runs(tmp_path, capsys):
    readme = (SOURCE_DIR / "README.md").read_text()
    section = readme[readme.index("## Python"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    for big, small in [('tyche.workload("GMM-3")', 'tyche.workload("GMM-1", scale_down=True)'),
                       ("trials=64", "trials=8, repeat=2, min_repeat_ms=2"), ('db="gmm_db"', f'db="{tmp_path}"')]:
        assert big in code
        code = code.replace(big, small)
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "is_reduction cannot inline reduction block 'Z'" in out
    assert "sch.sample_perfect_tile" in out and "after 8 trials" in out
