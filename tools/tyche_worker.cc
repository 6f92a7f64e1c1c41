// tyche-worker: the process in which the Runner measures candidates (see tune/measure/runner.h).
// It reads requests on stdin and answers on stdout; it is not meant to be run by hand.
#include "tune/measure/runner.h"

int main() {
  return tyche::tune::serve_worker(0, 1);
}
