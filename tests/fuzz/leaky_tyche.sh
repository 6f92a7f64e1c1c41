#!/bin/sh
# A `tyche` that does everything the fuzz test forbids: it prints the sentinel's secret, then dies
# of SIGSEGV. tests/fuzz/self_test.py runs the fuzz test against it, which must fail.
echo "$TYCHE_FUZZ_SECRET"
kill -SEGV $$
