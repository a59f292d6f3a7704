/* The 26-shape probe (data/probe-shapes.json, in its order) for the C programs that run on
 * the device machine: benches/c/capture_cycle.c and scripts/probes/mlx_encoder_pattern.c. */
#ifndef HFP_PROBE_SHAPES_H
#define HFP_PROBE_SHAPES_H

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

#endif
