// Compiles hip-shim/mlx/fft_plan_pool.hip.inc the way fft.hip includes it: after
// <hipfft_pool.hpp> at the top, inside `namespace mlx::core { namespace { ... } }`, with
// stand-ins for the MLX/HIP types it uses (stubs/mini_mlx.h). tests/c_abi.rs runs it with
// -fsyntax-only; mlx_pattern.cpp includes the fragment the same way and runs it.
#include <algorithm>

#include "hipfft_pool.hpp"
#include "mini_mlx.h"

namespace mlx::core {
namespace {
#include "fft_plan_pool.hip.inc"
}  // namespace

// Referenced so that -Wunused-function stays quiet about the anonymous namespace.
void (*fft_entry_point)(const array&, array&, FFTTransformType, bool, rocm::CommandEncoder&) = &execute_fft;
}  // namespace mlx::core
