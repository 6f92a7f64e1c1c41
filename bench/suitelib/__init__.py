"""The benchmark suite (``bench/suite``): Tyche against oneDNN, OpenBLAS and TVM MetaSchedule."""
