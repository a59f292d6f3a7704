/* The 26-shape probe (data/probe-shapes.json, in its order) for the C programs that run on
 * the device machine: benches/c/capture_cycle.c and scripts/probes/mlx_encoder_pattern.c. */
#ifndef HFP_PROBE_SHAPES_H
#define HFP_PROBE_SHAPES_H

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

enum kind { R2C, C2R, C2C };
struct shape { enum kind kind; int n, batch; };
static const struct shape SHAPES[] = {
    {R2C, 2, 4}, {R2C, 8, 4}, {R2C, 400, 4}, {R2C, 512, 4}, {R2C, 1024, 4}, {R2C, 1200, 4}, {R2C, 2048, 4},
    {C2R, 2, 4}, {C2R, 8, 4}, {C2R, 400, 4}, {C2R, 512, 4}, {C2R, 1024, 4}, {C2R, 1200, 4}, {C2R, 2048, 4},
    {C2C, 8, 3}, {C2C, 512, 3}, {C2C, 1024, 3}, {C2C, 2048, 3},
    {R2C, 400, 3}, {R2C, 1200, 3}, {C2R, 400, 3}, {C2R, 1200, 3},
    {R2C, 400, 512}, {R2C, 512, 512}, {C2R, 400, 512}, {C2R, 512, 512},
};
#define NSHAPES ((int)(sizeof SHAPES / sizeof SHAPES[0]))

/* Floats of a transform's input and output (complex values are two floats). */
static size_t in_floats(const struct shape *s) {
  size_t per = s->kind == R2C ? (size_t)s->n : 2 * (size_t)(s->kind == C2R ? s->n / 2 + 1 : s->n);
  return per * s->batch;
}
static size_t out_floats(const struct shape *s) {
  size_t per = s->kind == C2R ? (size_t)s->n : 2 * (size_t)(s->kind == R2C ? s->n / 2 + 1 : s->n);
  return per * s->batch;
}

/* A random input in [-0.5, 0.5) from `seed`; a C2R input is a real signal's spectrum (DC and
 * Nyquist real). */
static void probe_fill_input(const struct shape *s, float *in, unsigned seed) {
  size_t ni = in_floats(s);
  srand(seed);
  for (size_t i = 0; i < ni; i++) in[i] = (float)rand() / RAND_MAX - 0.5f;
  if (s->kind == C2R) {
    int nc = s->n / 2 + 1;
    for (int b = 0; b < s->batch; b++) {
      in[2 * (size_t)b * nc + 1] = 0;
      if (s->n % 2 == 0) in[2 * ((size_t)b * nc + nc - 1) + 1] = 0;
    }
  }
}

/* The reference into `ref`: each batch's DFT in double precision (forward for R2C and C2C,
 * the unnormalized inverse of a Hermitian half spectrum for C2R). Returns the largest
 * magnitude written, for a tolerance relative to it. */
static double probe_reference(const struct shape *s, const float *in, float *ref) {
  int n = s->n, nc = n / 2 + 1;
  double *cs = malloc(sizeof(double) * n), *sn = malloc(sizeof(double) * n);
  for (int j = 0; j < n; j++) { cs[j] = cos(2 * M_PI * j / n); sn[j] = sin(2 * M_PI * j / n); }
  double peak = 0;
  for (int b = 0; b < s->batch; b++) {
    if (s->kind != C2R) {
      int m = s->kind == C2C ? n : nc;
      for (int k = 0; k < m; k++) {
        double re = 0, im = 0;
        for (int j = 0; j < n; j++) {
          double xr = s->kind == C2C ? in[2 * ((size_t)b * n + j)] : in[(size_t)b * n + j];
          double xi = s->kind == C2C ? in[2 * ((size_t)b * n + j) + 1] : 0;
          int p = (int)((long long)j * k % n); /* e^{-i 2 pi p / n} */
          re += xr * cs[p] + xi * sn[p];
          im += xi * cs[p] - xr * sn[p];
        }
        ref[2 * ((size_t)b * m + k)] = (float)re;
        ref[2 * ((size_t)b * m + k) + 1] = (float)im;
        peak = fmax(peak, fmax(fabs(re), fabs(im)));
      }
    } else {
      const float *X = in + 2 * (size_t)b * nc;
      for (int j = 0; j < n; j++) {
        double v = X[0];
        for (int k = 1; k < nc; k++) {
          int p = (int)((long long)j * k % n);
          double w = (n % 2 == 0 && k == n / 2) ? 1 : 2;
          v += w * (X[2 * k] * cs[p] - X[2 * k + 1] * sn[p]);
        }
        ref[(size_t)b * n + j] = (float)v;
        peak = fmax(peak, fabs(v));
      }
    }
  }
  free(cs);
  free(sn);
  return peak;
}

#endif
