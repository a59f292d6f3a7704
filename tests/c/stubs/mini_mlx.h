// mini_mlx.h: a small, working stand-in for the MLX ROCm types that
// hip-shim/mlx/fft_plan_pool.hip.inc uses, so the fragment compiles (and runs, in
// mlx_pattern.cpp) without MLX or HIP. It mirrors MLX's shapes of these types, not their
// code: an `array` owning host memory (on the simulated runtime device memory is host
// memory), and a `rocm::CommandEncoder` that runs enqueued work on its stream, collects
// temporaries and completion handlers, and on commit() hands them to a worker thread that
// waits for the stream and then runs the handlers there, as MLX's Worker does.
//
// Two things MLX's encoder does not do today, to test the fragment against them:
// - LaunchMode::deferred: launch_kernel keeps the function and runs it at the next commit,
//   after the function that launched it returned (as a graph node runs when its graph is
//   launched). A launch that throws then is counted in deferred_launch_failures().
// - throw_after_next_launch(): the next launch_kernel throws after it ran the function, so
//   an exception leaves the caller with the transform already queued.
// Buffers from malloc_async are filled with 0xff bytes (NaN as floats), so an output the
// transform has not written yet is told from a computed one.
//
// Also here, as in fft.hip itself: FFTTransformType, input_embed and output_embed, which
// the fragment keeps using from the surrounding file.
#pragma once

#include "hipfft_pool.h"

#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

// As in hip_runtime.h.
typedef struct ihipStream_t* hipStream_t;

namespace mlx::core {

enum Dtype { uint8, float32, complex64 };

inline std::size_t size_of(Dtype d) {
  switch (d) {
    case uint8:
      return 1;
    case float32:
      return 4;
    case complex64:
      return 8;
  }
  return 1;
}

using Shape = std::vector<int32_t>;

namespace allocator {
struct Buffer {
  void* ptr;
};
}  // namespace allocator

class array {
 public:
  struct Flags {
    bool contiguous = true;
    bool row_contiguous = true;
    bool col_contiguous = false;
  };

  array(Shape shape, Dtype dtype, std::nullptr_t, std::vector<array>)
      : shape_(std::move(shape)), dtype_(dtype), data_(std::make_shared<Data>()) {}

  int shape(int dim) const { return shape_.at(dim < 0 ? shape_.size() + dim : dim); }
  const Shape& shape() const { return shape_; }
  std::size_t ndim() const { return shape_.size(); }
  std::size_t size() const {
    return std::accumulate(shape_.begin(), shape_.end(), std::size_t{1},
                           [](std::size_t a, int32_t b) { return a * static_cast<std::size_t>(b); });
  }
  std::size_t nbytes() const { return size() * size_of(dtype_); }
  Dtype dtype() const { return dtype_; }
  Flags flags() const { return Flags{}; }
  // Row-major strides, in elements.
  int64_t strides(int dim) const {
    int d = dim < 0 ? static_cast<int>(shape_.size()) + dim : dim;
    int64_t s = 1;
    for (std::size_t i = d + 1; i < shape_.size(); ++i) s *= shape_[i];
    return s;
  }
  void set_data(allocator::Buffer b) { data_->ptr = b.ptr; }
  void* raw() const { return data_->ptr; }
  template <typename T>
  T* data() const {
    return static_cast<T*>(data_->ptr);
  }

 private:
  struct Data {
    void* ptr = nullptr;
    ~Data() { std::free(ptr); }
  };
  Shape shape_;
  Dtype dtype_;
  std::shared_ptr<Data> data_;
};

template <typename T>
T* gpu_ptr(const array& a) {
  return static_cast<T*>(a.raw());
}

// Kept from fft.hip: the fragment uses these from the surrounding file.
enum class FFTTransformType : uint8_t {
  C2C = 0,
  R2C = 1,
  C2R = 2,
};

inline int64_t input_embed(FFTTransformType transform_type, int64_t n) {
  return transform_type == FFTTransformType::C2R ? (n / 2 + 1) : n;
}

inline int64_t output_embed(FFTTransformType transform_type, int64_t n) {
  return transform_type == FFTTransformType::R2C ? (n / 2 + 1) : n;
}

namespace rocm {

class Device {
 public:
  explicit Device(int device) : device_(device) {}
  int hip_device() const { return device_; }
  void make_current() {}

 private:
  int device_;
};

enum class LaunchMode { eager, deferred };

class CommandEncoder {
 public:
  CommandEncoder(Device& device, hipStream_t stream) : device_(device), stream_(stream) {
    worker_ = std::thread([this] { run(); });
  }
  CommandEncoder(const CommandEncoder&) = delete;
  CommandEncoder& operator=(const CommandEncoder&) = delete;
  ~CommandEncoder() {
    synchronize();
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }

  Device& device() { return device_; }
  hipStream_t stream() const { return stream_; }

  void set_input_array(const array&) {}
  void set_output_array(const array&) {}
  void add_temporary(const array& a) { temporaries_.push_back(a); }

  // Eager: runs `func` on the encoder's stream now (MLX's path). Deferred: keeps a copy and
  // runs it at the next commit.
  template <typename F>
  void launch_kernel(F&& func) {
    device_.make_current();
    if (mode_ == LaunchMode::deferred) {
      deferred_.emplace_back(std::forward<F>(func));
      return;
    }
    func(stream_);
    if (throw_after_launch_) {
      throw_after_launch_ = false;
      throw std::runtime_error("mini_mlx: injected failure in launch_kernel after the launch");
    }
  }

  void set_launch_mode(LaunchMode mode) { mode_ = mode; }
  void throw_after_next_launch() { throw_after_launch_ = true; }
  std::size_t deferred_launches() const { return deferred_runs_; }
  std::size_t deferred_launch_failures() const { return deferred_failures_; }
  const std::string& first_deferred_failure() const { return first_failure_; }

  void add_completed_handler(std::function<void()> task) { handlers_.push_back(std::move(task)); }

  // Hands what was enqueued since the last commit to the worker, which waits for the
  // stream and then drops the temporaries and runs the completion handlers on its thread.
  void commit() {
    run_deferred();
    Batch b{std::move(handlers_), std::move(temporaries_)};
    handlers_.clear();
    temporaries_.clear();
    {
      std::lock_guard<std::mutex> g(mu_);
      queue_.push_back(std::move(b));
      ++commits_;
    }
    cv_.notify_all();
  }

  // Commits, then waits until the worker has run every handler.
  void synchronize() {
    commit();
    std::unique_lock<std::mutex> g(mu_);
    idle_.wait(g, [this] { return queue_.empty() && !busy_; });
  }

  std::size_t commits() const {
    std::lock_guard<std::mutex> g(mu_);
    return commits_;
  }

 private:
  struct Batch {
    std::vector<std::function<void()>> handlers;
    std::vector<array> temporaries;
  };

  // The deferred launches, in order, on the committing thread, before their batch is handed
  // to the worker (whose handlers then run after them).
  void run_deferred() {
    std::vector<std::function<void(hipStream_t)>> todo;
    todo.swap(deferred_);
    for (auto& f : todo) {
      ++deferred_runs_;
      try {
        f(stream_);
      } catch (const std::exception& e) {
        if (deferred_failures_++ == 0) first_failure_ = e.what();
      } catch (...) {
        if (deferred_failures_++ == 0) first_failure_ = "a non-standard exception";
      }
    }
  }

  void run() {
    std::unique_lock<std::mutex> g(mu_);
    for (;;) {
      cv_.wait(g, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      Batch b = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      g.unlock();
      // MLX waits on an event recorded at commit; synchronizing the stream is the same here.
      if (hfp_pool_synchronize(hfp_default_pool(), stream_) != HFP_OK) {
        std::abort();
      }
      b.temporaries.clear();
      for (auto& h : b.handlers) h();
      b.handlers.clear();
      g.lock();
      busy_ = false;
      idle_.notify_all();
    }
  }

  Device& device_;
  hipStream_t stream_;
  std::vector<std::function<void()>> handlers_;
  std::vector<array> temporaries_;
  mutable std::mutex mu_;
  std::condition_variable cv_, idle_;
  std::deque<Batch> queue_;
  bool busy_ = false;
  bool stop_ = false;
  std::size_t commits_ = 0;
  LaunchMode mode_ = LaunchMode::eager;
  bool throw_after_launch_ = false;
  std::vector<std::function<void(hipStream_t)>> deferred_;
  std::size_t deferred_runs_ = 0;
  std::size_t deferred_failures_ = 0;
  std::string first_failure_;
  std::thread worker_;
};

// Device memory from the encoder's pool; host memory on the simulated runtime, filled with
// 0xff bytes (NaN as floats) so that an output not written yet shows.
inline allocator::Buffer malloc_async(std::size_t bytes, CommandEncoder&) {
  void* p = std::malloc(bytes ? bytes : 1);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0xff, bytes ? bytes : 1);
  return allocator::Buffer{p};
}

}  // namespace rocm
}  // namespace mlx::core
