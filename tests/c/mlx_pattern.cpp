// mlx_pattern.cpp: MLX's ROCm FFT call pattern through hipfft_pool.hpp, on the simulated
// runtime. It runs the drop-in fragment itself (hip-shim/mlx/fft_plan_pool.hip.inc) over a
// small working stand-in of MLX's encoder (stubs/mini_mlx.h): each step acquires a lease
// from the default pool, allocates its work area per execution, enqueues on the encoder's
// stream, and a completion handler on the encoder's worker thread releases the lease after
// the commit completed. The 26 probe shapes (data/probe-shapes.json) are cycled; every
// result is checked against a naive DFT in double (relative L2 error <= 1e-5), and the
// pool's metrics against MLX_ROCM_FFT_CACHE_SIZE.
//
// Usage: mlx_pattern [--rounds R] [--check-rows K] [--launch eager|deferred]
//        mlx_pattern --case throw-after-exec | drop-after-exec
// K = 0: check every row. `--launch deferred` runs every launched function at the next
// commit, after execute_fft returned (the fragment must hold its lease by value; run it with
// HIPFFT_POOL_DEBUG_CHECKS=1, so that a dangling lease is refused by the library instead of
// read). `--case throw-after-exec` makes launch_kernel throw after it ran the transform and
// checks, against the simulated runtime's result, that the lease was released only after
// the transform ran (run it with HIPFFT_POOL_SIM_EXEC_LATENCY_US set, so the transform is
// still pending when the exception leaves execute_fft).
// Prints "mlx_pattern: N passed, M failed"; exits non-zero on any failure.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "hipfft_pool.hpp"
#include "mini_mlx.h"

namespace mlx::core {
namespace {
#include "fft_plan_pool.hip.inc"
}  // namespace
}  // namespace mlx::core

using mlx::core::array;
using mlx::core::FFTTransformType;
namespace rocm = mlx::core::rocm;

namespace {

std::atomic<int> passed{0}, failed{0};

void check(bool ok, const std::string& what) {
  if (ok) {
    ++passed;
  } else {
    ++failed;
    std::fprintf(stderr, "FAIL: %s\n", what.c_str());
  }
}

struct Shape {
  const char* name;
  FFTTransformType kind;
  int n;
  int batch;
};

// data/probe-shapes.json: r2c = rfft, c2r = irfft (n is the real length), c2c = fft.
const Shape kShapes[26] = {
    {"rfft", FFTTransformType::R2C, 2, 4},          {"rfft", FFTTransformType::R2C, 8, 4},
    {"rfft", FFTTransformType::R2C, 400, 4},        {"rfft", FFTTransformType::R2C, 512, 4},
    {"rfft", FFTTransformType::R2C, 1024, 4},       {"rfft", FFTTransformType::R2C, 1200, 4},
    {"rfft", FFTTransformType::R2C, 2048, 4},       {"irfft", FFTTransformType::C2R, 2, 4},
    {"irfft", FFTTransformType::C2R, 8, 4},         {"irfft", FFTTransformType::C2R, 400, 4},
    {"irfft", FFTTransformType::C2R, 512, 4},       {"irfft", FFTTransformType::C2R, 1024, 4},
    {"irfft", FFTTransformType::C2R, 1200, 4},      {"irfft", FFTTransformType::C2R, 2048, 4},
    {"fft", FFTTransformType::C2C, 8, 3},           {"fft", FFTTransformType::C2C, 512, 3},
    {"fft", FFTTransformType::C2C, 1024, 3},        {"fft", FFTTransformType::C2C, 2048, 3},
    {"roundtrip-r2c", FFTTransformType::R2C, 400, 3}, {"roundtrip-r2c", FFTTransformType::R2C, 1200, 3},
    {"roundtrip-c2r", FFTTransformType::C2R, 400, 3}, {"roundtrip-c2r", FFTTransformType::C2R, 1200, 3},
    {"stft-r2c", FFTTransformType::R2C, 400, 512},  {"stft-r2c", FFTTransformType::R2C, 512, 512},
    {"stft-c2r", FFTTransformType::C2R, 400, 512},  {"stft-c2r", FFTTransformType::C2R, 512, 512},
};

// Elements (floats) per row on each side.
int in_floats(const Shape& s) {
  return s.kind == FFTTransformType::R2C ? s.n : 2 * (s.kind == FFTTransformType::C2R ? s.n / 2 + 1 : s.n);
}
int out_floats(const Shape& s) {
  return s.kind == FFTTransformType::C2R ? s.n : 2 * (s.kind == FFTTransformType::R2C ? s.n / 2 + 1 : s.n);
}

// A deterministic input for (shape, direction); C2R inputs are valid half spectra (the
// imaginary parts of the DC and Nyquist bins are zero, so every library agrees).
std::vector<float> make_input(const Shape& s, unsigned seed) {
  std::vector<float> x(static_cast<size_t>(in_floats(s)) * s.batch);
  for (auto& v : x) {
    seed = seed * 1103515245u + 12345u;
    v = static_cast<float>((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
  if (s.kind == FFTTransformType::C2R) {
    int bins = s.n / 2 + 1;
    for (int b = 0; b < s.batch; ++b) {
      float* row = x.data() + static_cast<size_t>(b) * 2 * bins;
      row[1] = 0;
      if (s.n % 2 == 0) row[2 * (bins - 1) + 1] = 0;
    }
  }
  return x;
}

// Naive DFT of the first `rows` rows, in double. sign = -1 forward, +1 inverse.
std::vector<double> reference(const Shape& s, const std::vector<float>& x, int sign, int rows) {
  const int n = s.n;
  std::vector<double> c(n), sn(n);
  for (int m = 0; m < n; ++m) {
    double a = sign * 2.0 * 3.14159265358979323846 * m / n;
    c[m] = std::cos(a);
    sn[m] = std::sin(a);
  }
  const int ifl = in_floats(s), ofl = out_floats(s);
  std::vector<double> out(static_cast<size_t>(ofl) * rows);
  for (int b = 0; b < rows; ++b) {
    const float* in = x.data() + static_cast<size_t>(b) * ifl;
    double* o = out.data() + static_cast<size_t>(b) * ofl;
    if (s.kind == FFTTransformType::C2R) {
      // x[j] = Re X0 + (-1)^j Re X_{n/2} (n even) + 2 sum_{0<k<n/2} Re(X_k e^{+i..}).
      int bins = n / 2 + 1;
      for (int j = 0; j < n; ++j) {
        double acc = in[0];
        int m = 0;  // (j * k) mod n, stepped by j
        for (int k = 1; k < bins; ++k) {
          m += j;
          if (m >= n) m -= n;
          double re = in[2 * k], im = in[2 * k + 1];
          double term = re * c[m] - im * sn[m];
          acc += (n % 2 == 0 && k == bins - 1) ? term : 2 * term;
        }
        o[j] = acc;
      }
    } else {
      bool real_in = s.kind == FFTTransformType::R2C;
      int outs = ofl / 2;
      for (int k = 0; k < outs; ++k) {
        double re = 0, im = 0;
        int m = 0;  // (j * k) mod n, stepped by k
        for (int j = 0; j < n; ++j, m = m + k >= n ? m + k - n : m + k) {
          double xr = real_in ? in[j] : in[2 * j], xi = real_in ? 0.0 : in[2 * j + 1];
          re += xr * c[m] - xi * sn[m];
          im += xr * sn[m] + xi * c[m];
        }
        o[2 * k] = re;
        o[2 * k + 1] = im;
      }
    }
  }
  return out;
}

double rel_l2(const float* got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    double d = got[i] - want[i];
    num += d * d;
    den += want[i] * want[i];
  }
  return std::sqrt(num / (den > 0 ? den : 1));
}

struct Case {
  std::vector<float> input;
  std::vector<double> want;  // the first `rows` rows
  int rows;
};

// The C++ side of the ABI: errors become hfp::Error, and a throwing std::function flush
// hook is caught by the adapter's trampoline (nothing crosses into the library).
void test_adapter() {
  hfp_config cfg = hfp::Pool::config();
  cfg.runtime = "sim";
  cfg.capacity = 1;
  cfg.acquire_timeout_ms = 30;
  cfg.ceiling_scope = HFP_CEILING_PRIVATE;
  hfp::Pool pool(cfg);
  hfp_plan_desc a{}, b{};
  a.transform = b.transform = HFP_C2C;
  a.rank = b.rank = 1;
  a.n[0] = 8;
  b.n[0] = 16;
  a.batch = b.batch = 1;

  hfp_plan_desc bad = a;
  bad.batch = 0;
  try {
    pool.acquire(bad);
    check(false, "an invalid descriptor is refused");
  } catch (const hfp::Error& e) {
    check(e.status() == HFP_INVALID_DESCRIPTOR && std::strstr(e.what(), "`batch` = 0") != nullptr,
          std::string("hfp::Error for batch 0: ") + e.what());
  }

  int calls = 0;
  pool.set_flush_hook([&calls] {
    ++calls;
    throw std::runtime_error("a hook that throws");
  });
  hfp::Lease held = pool.acquire(a);
  try {
    hfp::Lease l = pool.acquire(b);
    check(false, "the ceiling holds");
  } catch (const hfp::Error& e) {
    check(e.status() == HFP_CEILING_TIMEOUT, std::string("ceiling timeout: ") + e.what());
  }
  check(calls == 1, "the throwing hook ran once and its exception stayed on the C++ side");
  pool.set_flush_hook(std::function<void()>());
  held.release();
  check(!held, "release empties the lease");
  hfp::Lease again = pool.acquire(b);  // the released plan is evicted for this one
  check(static_cast<bool>(again) && again.plan() != nullptr, "acquire after release");
  hfp::Lease moved = std::move(again);
  check(!again && moved, "leases move");
  moved.release_after(nullptr);
  pool.synchronize(nullptr);
  hfp::Lease batched = pool.acquire(b);
  batched.release_in_batch(nullptr);  // the null stream takes the release_after path
  check(!batched, "release_in_batch empties the lease");
  pool.end_batch(nullptr);
  pool.synchronize(nullptr);
  check(pool.metrics_text().find("hipfft_pool_capacity") != std::string::npos, "metrics_text");
}

// launch_kernel throws after it ran the transform, as a launch that checks for errors after
// the call can. The fragment must leave the lease to the commit's completion handlers: the
// pool may see it released only once the transform has run. The ground truth is the
// simulated runtime's own work: it writes the output when it runs the transform, after
// HIPFFT_POOL_SIM_EXEC_LATENCY_US; the buffer starts as NaN (mini_mlx's malloc_async). The
// moment the pool reports no lease left, the output must already be the transform's.
void test_throw_after_exec() {
  hfp::Pool& pool = hfp::default_pool();
  const Shape& s = kShapes[15];  // fft c2c n=512 batch 3
  std::vector<float> input = make_input(s, 4242u);
  std::vector<double> want = reference(s, input, -1, s.batch);
  rocm::Device device(0);
  rocm::CommandEncoder encoder(device, nullptr);
  array in({s.batch, s.n}, mlx::core::complex64, nullptr, {});
  in.set_data(rocm::malloc_async(in.nbytes(), encoder));
  std::memcpy(in.raw(), input.data(), input.size() * sizeof(float));
  array out({s.batch, s.n}, mlx::core::complex64, nullptr, {});

  encoder.throw_after_next_launch();
  bool threw = false;
  try {
    mlx::core::execute_fft(in, out, s.kind, false, encoder);
  } catch (const std::runtime_error& e) {
    threw = std::strstr(e.what(), "injected failure") != nullptr;
  }
  check(threw, "launch_kernel's exception left execute_fft");
  check(out.raw() != nullptr, "execute_fft allocated the output before the launch");

  // MLX carries on: a later commit hands this commit's handlers to the completion worker.
  encoder.commit();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (pool.metrics().in_flight > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  // Read at once: what the simulated device had done when the pool let the lease go.
  double err = out.raw() != nullptr ? rel_l2(out.data<float>(), want) : -1;
  check(pool.metrics().in_flight == 0, "the lease was released (by the commit's completion handler)");
  check(err >= 0 && err <= 1e-5,
        "the lease was released only after the simulated transform had run (output error at release: " +
            std::to_string(err) + ")");
  encoder.synchronize();
  err = out.raw() != nullptr ? rel_l2(out.data<float>(), want) : -1;
  check(err >= 0 && err <= 1e-5, "the transform's result is right (relative L2 error " + std::to_string(err) + ")");
  hfp_metrics m = pool.metrics();
  check(m.in_flight == 0 && m.creations == 1, "one plan, no lease left");
}

// In C++: an hfp::Lease that goes out of scope right after an exec is
// released once that transform has run, not at once. Run with a ceiling and capacity of 1,
// a short acquire timeout and HIPFFT_POOL_SIM_EXEC_LATENCY_US set: while the transform is
// pending, a miss for another shape cannot evict the plan (it times out); the moment the
// pool reports no lease left, the output is already the transform's.
void test_drop_after_exec() {
  hfp::Pool& pool = hfp::default_pool();
  const Shape& s = kShapes[15];  // fft c2c n=512 batch 3
  const Shape& other = kShapes[0];
  std::vector<float> input = make_input(s, 77u);
  std::vector<double> want = reference(s, input, -1, s.batch);
  rocm::Device device(0);
  rocm::CommandEncoder encoder(device, nullptr);
  array in({s.batch, s.n}, mlx::core::complex64, nullptr, {});
  in.set_data(rocm::malloc_async(in.nbytes(), encoder));
  std::memcpy(in.raw(), input.data(), input.size() * sizeof(float));
  array out({s.batch, s.n}, mlx::core::complex64, nullptr, {});
  out.set_data(rocm::malloc_async(out.nbytes(), encoder));
  array workspace({1 << 20}, mlx::core::uint8, nullptr, {});
  workspace.set_data(rocm::malloc_async(1 << 20, encoder));
  {
    hfp::Lease lease = mlx::core::acquire_fft_plan(encoder, s.kind, s.n, s.batch);
    check(lease.work_size() <= (1u << 20), "the work area fits");
    lease.exec(encoder.stream(), in.raw(), out.raw(), HFP_FORWARD, workspace.raw());
  }  // dropped after the exec, without a release
  bool timed_out = false;
  try {
    hfp::Lease evicting = mlx::core::acquire_fft_plan(encoder, other.kind, other.n, other.batch);
  } catch (const hfp::Error& e) {
    timed_out = e.status() == HFP_CEILING_TIMEOUT;
  }
  check(timed_out, "a miss could not evict the plan while its transform was pending");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (pool.metrics().in_flight > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  double err = rel_l2(out.data<float>(), want);
  check(pool.metrics().in_flight == 0, "the dropped lease was released");
  check(err <= 1e-5, "released only after the transform ran (output error at release: " + std::to_string(err) + ")");
  bool got = false;
  try {
    hfp::Lease evicting = mlx::core::acquire_fft_plan(encoder, other.kind, other.n, other.batch);
    got = true;
  } catch (const std::exception& e) {
    check(false, std::string("the miss after the release failed: ") + e.what());
  }
  check(got, "once released, the plan could be evicted for another shape");
  encoder.synchronize();
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 3, check_rows = 0;
  bool deferred = false;
  std::string which = "pattern";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--check-rows") == 0) check_rows = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--launch") == 0) deferred = std::strcmp(argv[i + 1], "deferred") == 0;
    if (std::strcmp(argv[i], "--case") == 0) which = argv[i + 1];
  }
  setenv("HIPFFT_POOL_RUNTIME", "sim", 0);
  setenv("MLX_ROCM_FFT_CACHE_SIZE", "12", 0);
  const size_t cache_size = std::strtoul(std::getenv("MLX_ROCM_FFT_CACHE_SIZE"), nullptr, 10);

  if (which == "throw-after-exec" || which == "drop-after-exec") {
    try {
      if (which == "throw-after-exec") {
        test_throw_after_exec();
      } else {
        test_drop_after_exec();
      }
    } catch (const std::exception& e) {
      check(false, std::string("unexpected exception: ") + e.what());
    }
    std::printf("mlx_pattern: %d passed, %d failed\n", passed.load(), failed.load());
    return failed.load() ? 1 : 0;
  }
  if (which != "pattern") {
    std::fprintf(stderr, "mlx_pattern: unknown --case %s\n", which.c_str());
    return 2;
  }

  try {
    hfp::Pool& pool = hfp::default_pool();
    hfp_metrics m0 = pool.metrics();
    check(m0.capacity == cache_size, "MLX_ROCM_FFT_CACHE_SIZE sets the capacity");

    std::map<std::pair<int, int>, Case> cases;  // (shape, sign)
    rocm::Device device(0);
    {
      rocm::CommandEncoder encoder(device, nullptr);  // the null stream
      if (deferred) encoder.set_launch_mode(rocm::LaunchMode::deferred);
      int ops = 0;
      for (int r = 0; r < rounds; ++r) {
        for (int i = 0; i < 26; ++i) {
          const Shape& s = kShapes[i];
          // c2c alternates forward and inverse on the same plan.
          bool inverse = s.kind == FFTTransformType::C2R || (s.kind == FFTTransformType::C2C && r % 2 == 1);
          int sign = inverse ? 1 : -1;
          auto key = std::make_pair(i, sign);
          if (!cases.count(key)) {
            Case c;
            c.input = make_input(s, 1000u + 7u * i + (inverse ? 1u : 0u));
            c.rows = check_rows > 0 ? std::min(check_rows, s.batch) : s.batch;
            c.want = reference(s, c.input, sign, c.rows);
            cases.emplace(key, std::move(c));
          }
          const Case& c = cases.at(key);

          // The step's arrays: the input in "device" memory, the output left to execute_fft.
          int in_last = s.kind == FFTTransformType::C2R ? s.n / 2 + 1 : s.n;
          array in({s.batch, in_last}, s.kind == FFTTransformType::R2C ? mlx::core::float32 : mlx::core::complex64,
                   nullptr, {});
          in.set_data(rocm::malloc_async(in.nbytes(), encoder));
          std::memcpy(in.raw(), c.input.data(), c.input.size() * sizeof(float));
          int out_last = s.kind == FFTTransformType::R2C ? s.n / 2 + 1 : s.n;
          array out({s.batch, out_last}, s.kind == FFTTransformType::C2R ? mlx::core::float32 : mlx::core::complex64,
                    nullptr, {});

          mlx::core::execute_fft(in, out, s.kind, inverse, encoder);
          encoder.add_temporary(in);
          std::string what = std::string(s.name) + " n=" + std::to_string(s.n) + " batch=" + std::to_string(s.batch) +
                             (inverse ? " inverse" : " forward") + " round " + std::to_string(r);
          encoder.add_completed_handler([out, &c, what] {
            double err = rel_l2(out.data<float>(), c.want);
            check(err <= 1e-5, what + ": relative L2 error " + std::to_string(err));
          });
          // MLX commits in batches of operations; 16 consecutive probe shapes need more
          // live plans than the ceiling (12), so the flush hook has to commit mid-batch.
          if (++ops % 16 == 0) encoder.commit();
        }
      }
      encoder.synchronize();
      if (deferred) {
        check(encoder.deferred_launches() == static_cast<std::size_t>(ops),
              "every launch ran, after execute_fft returned");
        check(encoder.deferred_launch_failures() == 0,
              "every deferred launch found its lease (" + std::to_string(encoder.deferred_launch_failures()) +
                  " failed; first: " + encoder.first_deferred_failure() + ")");
      }
    }

    hfp_metrics m = pool.metrics();
    check(m.capacity == cache_size && m.ceiling == cache_size, "capacity and ceiling follow MLX_ROCM_FFT_CACHE_SIZE");
    check(m.in_flight == 0, "every lease was released by its completion handler");
    check(m.peak_live <= m.ceiling && m.process_peak_live <= m.ceiling, "live handles never exceeded the ceiling");
    check(m.ceiling_timeouts == 0, "no acquire timed out");
    check(m.flush_hook_calls > 0, "the flush hook committed the encoder at the ceiling");
    check(m.cached <= cache_size, "the cache stays within its capacity");
    if (rounds > 1) check(m.creations > 26 && m.evictions > 0, "26 shapes through a smaller cache evict and re-create");
    std::printf("metrics: creations %llu, hits %llu, evictions %llu, flush hook calls %llu, peak live %zu of %zu\n",
                static_cast<unsigned long long>(m.creations), static_cast<unsigned long long>(m.hits),
                static_cast<unsigned long long>(m.evictions), static_cast<unsigned long long>(m.flush_hook_calls),
                m.peak_live, m.ceiling);

    test_adapter();
  } catch (const std::exception& e) {
    check(false, std::string("unexpected exception: ") + e.what());
  }
  std::printf("mlx_pattern: %d passed, %d failed\n", passed.load(), failed.load());
  return failed.load() ? 1 : 0;
}
