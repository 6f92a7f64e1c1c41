/* Times an exported GMM kernel (gmm4.h, libgmm4.a) as `tyche run` times a kernel: one call to
 * warm up, then calls in batches grown until one batch lasts 100 ms, REPEAT batches; prints the
 * median seconds per call. Used by bench/bench_export.sh. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gmm4.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int compare(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  int repeat = argc > 1 ? atoi(argv[1]) : 10;
  if (repeat < 1 || repeat > 1000) return 2;
  float* x = aligned_alloc(TYCHE_ALIGNMENT, gmm4_X_BYTES);
  float* y = aligned_alloc(TYCHE_ALIGNMENT, gmm4_Y_BYTES);
  float* z = aligned_alloc(TYCHE_ALIGNMENT, gmm4_Z_BYTES);
  if (!x || !y || !z) return 3;
  for (long i = 0; i < gmm4_X_ELEMENTS; ++i) x[i] = (float)(i % 7) * 0.25f - 0.5f;
  for (long i = 0; i < gmm4_Y_ELEMENTS; ++i) y[i] = (float)(i % 5) * 0.5f - 1.0f;
  int status = gmm4(x, y, z);
  if (status != TYCHE_OK) {
    fprintf(stderr, "gmm4: %s\n", tyche_error_string(status));
    return 1;
  }
  int number = 1;
  double* times = malloc(sizeof(double) * (size_t)repeat);
  for (;;) { /* grow the batch to 100 ms; a long enough first batch counts */
    double start = now();
    for (int i = 0; i < number; ++i) gmm4(x, y, z);
    double elapsed = now() - start;
    if (elapsed >= 0.1) break;
    double scale = elapsed > 0 ? 0.1 / elapsed * 1.2 : 10;
    number = (int)(number * (scale > 2 ? scale : 2));
  }
  for (int r = 0; r < repeat; ++r) {
    double start = now();
    for (int i = 0; i < number; ++i) gmm4(x, y, z);
    times[r] = (now() - start) / number;
  }
  qsort(times, (size_t)repeat, sizeof(double), compare);
  printf("%.9f\n", times[repeat / 2]);
  free(times);
  free(x);
  free(y);
  free(z);
  return 0;
}
