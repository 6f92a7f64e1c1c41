// The suite's baselines behind a C interface (loaded with ctypes by bench/suitelib): a vendor
// library's implementation of one workload on caller-owned buffers, timed here in native code,
// and the two physical limits of the roofline (peak f32 FMA rate, memory bandwidth).
#pragma once

#include <cstdint>

extern "C" {

// 1 when `system` ("onednn", "openblas") implements the op family ("GMM", "C2D", ...), else 0.
int tyche_baseline_supports(const char* system, const char* family);

// Sets up `system`'s implementation of `family` with Tyche's parameter tuple (docs/workloads.md
// order) on `buffers`: the workload's inputs, then its output, laid out as Tyche's program lays
// them out. Returns nullptr and writes a one-line reason into `error` on failure.
void* tyche_baseline_create(const char* system, const char* family, const int64_t* params,
                            int num_params, float* const* buffers, int num_buffers, char* error,
                            int error_size);

// Runs `calls` calls back to back and returns the mean seconds per call (negative on failure,
// with the reason in `error`).
double tyche_baseline_window(void* baseline, int64_t calls, char* error, int error_size);

// Writes which implementation of its library the baseline runs (oneDNN's "jit:avx2", ...).
void tyche_baseline_describe(void* baseline, char* text, int text_size);

void tyche_baseline_destroy(void* baseline);

// Peak f32 FMA throughput of this CPU in GFLOP/s: `threads` threads each running independent FMA
// chains on registers only, at the widest vector width the CPU has, for about `seconds`.
double tyche_peak_gflops(int threads, double seconds);

// Memory bandwidth in GB/s: a STREAM triad (a = b + s*c; 12 bytes per element counted) over
// three arrays of `array_bytes` each, split over `threads` threads; the best of `repeats`.
double tyche_memory_bandwidth(int threads, int64_t array_bytes, int repeats);

// The widest vector the peak kernel used (bits) — 512 with AVX-512, 256 with AVX2, 128 otherwise.
int tyche_peak_vector_bits();
}
