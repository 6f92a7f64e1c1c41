"""A `tyche` package that does everything the fuzz test forbids (tests/fuzz/self_test.py): its
tyche.onnx calls print the environment, which holds the sentinel's secret, then die of SIGSEGV."""


class TycheError(Exception):
    pass
