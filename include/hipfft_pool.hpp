// hipfft_pool.hpp: a header-only C++17 adapter over hipfft_pool.h.
//
// - hfp::Error (a std::runtime_error) carries the hfp_status and the library's message;
//   it is thrown on the C++ side only. Nothing here lets an exception cross into the
//   library: the flush-hook trampoline catches everything.
// - hfp::Lease is move-only and releases in its destructor (release never calls the GPU
//   runtime, so a completion handler may destroy or release it).
// - hfp::Pool owns a pool (from a config or the environment); hfp::default_pool() is a
//   non-owning reference to the process's default pool.
//
// Not part of the ABI: compiled into the caller, so its layout may change between versions.
#ifndef HIPFFT_POOL_HPP
#define HIPFFT_POOL_HPP

#include "hipfft_pool.h"

#include <cstddef>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace hfp {

class Error : public std::runtime_error {
 public:
  Error(hfp_status status, const std::string& message)
      : std::runtime_error(std::string(hfp_status_name(static_cast<int>(status))) + ": " + message),
        status_(status) {}
  hfp_status status() const noexcept { return status_; }

 private:
  hfp_status status_;
};

namespace detail {
// Throws for a failed status, with this thread's last error message.
inline void check(hfp_status s) {
  if (s != HFP_OK) {
    throw Error(s, hfp_last_error_message());
  }
}
}  // namespace detail

// One execution's hold on a plan. Empty after a move, release() or release_after().
class Lease {
 public:
  Lease() noexcept = default;
  // Takes ownership of a lease from hfp_acquire.
  explicit Lease(hfp_lease* raw) noexcept : raw_(raw) {}
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  Lease(Lease&& o) noexcept
      : raw_(std::exchange(o.raw_, nullptr)),
        executed_(std::exchange(o.executed_, false)),
        stream_(o.stream_) {}
  Lease& operator=(Lease&& o) noexcept {
    if (this != &o) {
      reset();
      raw_ = std::exchange(o.raw_, nullptr);
      executed_ = std::exchange(o.executed_, false);
      stream_ = o.stream_;
    }
    return *this;
  }
  // Releases: at once if nothing was executed under the lease; otherwise once the work on
  // the stream of its last execution completes (that stream must still be live), never at
  // once. If the library cannot record that, the lease stays held for good rather than
  // being released under pending work.
  ~Lease() { reset(); }

  explicit operator bool() const noexcept { return raw_ != nullptr; }
  hfp_lease* get() const noexcept { return raw_; }
  // Gives up ownership without releasing.
  hfp_lease* detach() noexcept { return std::exchange(raw_, nullptr); }

  // The raw hipfftHandle bits; valid while the lease is held.
  void* plan() const noexcept { return hfp_lease_plan(raw_); }
  // Work-area bytes one execution needs (0: none).
  std::size_t work_size() const noexcept { return hfp_lease_work_size(raw_); }

  // Enqueues one transform on `stream` (direction HFP_FORWARD or HFP_INVERSE).
  void exec(void* stream, void* in, void* out, int direction, void* work_area) {
    detail::check(hfp_lease_exec(raw_, stream, in, out, direction, work_area));
    executed_ = true;
    stream_ = stream;
  }

  // Bytes the scratch of exec_preserving_input needs.
  std::size_t input_bytes() const noexcept { return hfp_lease_input_bytes(raw_); }

  // Like exec, but copies `in` to `scratch` first so `in` survives (C2R/Z2D overwrite it).
  void exec_preserving_input(void* stream, void* in, void* out, int direction, void* work_area,
                             void* scratch) {
    detail::check(hfp_lease_exec_preserving_input(raw_, stream, in, out, direction, work_area, scratch));
    executed_ = true;
    stream_ = stream;
  }

  // Releases now: the caller vouches nothing enqueued under the lease is still pending.
  // Throws only for a misuse the library detected.
  void release() {
    if (raw_ != nullptr) {
      executed_ = false;
      detail::check(hfp_lease_release(std::exchange(raw_, nullptr)));
    }
  }

  // Releases once the work enqueued so far on `stream` completes. On failure this
  // object keeps the lease (the library did not consume it) and the error is thrown.
  void release_after(void* stream) {
    detail::check(hfp_lease_release_after(raw_, stream));
    raw_ = nullptr;
    executed_ = false;
  }

  // Releases once the work enqueued on `stream` up to the end of its batch completes
  // (Pool::end_batch records the one event of the batch); `stream` lives until then. The
  // lease is consumed even when an error is thrown.
  void release_in_batch(void* stream) {
    hfp_lease* l = std::exchange(raw_, nullptr);
    executed_ = false;
    detail::check(hfp_lease_release_in_batch(l, stream));
  }

 private:
  void reset() noexcept {
    if (raw_ == nullptr) {
      return;
    }
    hfp_lease* l = std::exchange(raw_, nullptr);
    if (!std::exchange(executed_, false)) {
      hfp_lease_release(l);
    } else if (hfp_lease_release_after(l, stream_) != HFP_OK) {
      // Not consumed, and its work may be pending: it stays leased (the plan is kept).
    }
  }
  hfp_lease* raw_ = nullptr;
  bool executed_ = false;
  void* stream_ = nullptr;
};

// A pool: owning (from a config or the environment), or a borrowed reference.
class Pool {
 public:
  // A pool made from `config` (start from config()).
  explicit Pool(const hfp_config& config) : owned_(true) {
    detail::check(hfp_pool_new(&config, &raw_));
  }
  // A pool configured from the environment (hfp_pool_from_env).
  static Pool from_env() {
    hfp_pool* raw = nullptr;
    detail::check(hfp_pool_from_env(&raw));
    return Pool(raw, true);
  }
  // Wraps `raw`: owning (freed by the destructor) or borrowed.
  Pool(hfp_pool* raw, bool owned) noexcept : raw_(raw), owned_(owned) {}

  // The defaults, to modify before constructing a Pool.
  static hfp_config config() {
    hfp_config c;
    detail::check(hfp_config_default(&c));
    return c;
  }

  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  Pool(Pool&& o) noexcept
      : raw_(std::exchange(o.raw_, nullptr)), owned_(o.owned_), hooks_(std::move(o.hooks_)) {}
  Pool& operator=(Pool&&) = delete;
  // Frees an owned pool (bounded wait for outstanding leases). Hooks set through this object
  // live until then: the library may call a hook until its pool is freed.
  ~Pool() {
    if (owned_ && raw_ != nullptr) {
      hfp_pool_free(raw_);
    }
  }

  hfp_pool* get() const noexcept { return raw_; }

  // A lease on the plan for `desc`; throws hfp::Error (HFP_CEILING_TIMEOUT,
  // HFP_INVALID_DESCRIPTOR, ...).
  Lease acquire(const hfp_plan_desc& desc) const {
    hfp_lease* l = nullptr;
    detail::check(hfp_acquire(raw_, &desc, &l));
    return Lease(l);
  }

  hfp_metrics metrics() const {
    hfp_metrics m{};
    m.struct_size = sizeof m;
    detail::check(hfp_pool_metrics(raw_, &m));
    return m;
  }

  // The metrics as Prometheus text.
  std::string metrics_text() const {
    std::size_t needed = 0;
    detail::check(hfp_pool_metrics_text(raw_, nullptr, 0, &needed));
    for (;;) {
      std::vector<char> buf(needed + 256);  // room for counters that grow meanwhile
      hfp_status s = hfp_pool_metrics_text(raw_, buf.data(), buf.size(), &needed);
      if (s == HFP_OK) {
        return std::string(buf.data());
      }
      if (s != HFP_BUFFER_TOO_SMALL) {
        detail::check(s);
      }
    }
  }

  // "hip", "cuda" or "sim" (an "auto" pool falls back to "sim" without a GPU runtime).
  std::string runtime() const {
    const char* name = hfp_pool_runtime(raw_);
    if (name == nullptr) {
      throw Error(HFP_INVALID_ARGUMENT, hfp_last_error_message());
    }
    return name;
  }

  // The pool's configuration warnings, one per line; empty when there are none.
  std::string warnings() const {
    const char* w = hfp_pool_warnings(raw_);
    if (w == nullptr) {
      throw Error(HFP_INVALID_ARGUMENT, hfp_last_error_message());
    }
    return w;
  }

  void trim() const { detail::check(hfp_pool_trim(raw_)); }
  void set_capacity(std::size_t capacity) const { detail::check(hfp_pool_set_capacity(raw_, capacity)); }
  void synchronize(void* stream) const { detail::check(hfp_pool_synchronize(raw_, stream)); }
  // Ends the batch of `stream` (Lease::release_in_batch): one event covers all of it.
  void end_batch(void* stream) const { detail::check(hfp_pool_end_batch(raw_, stream)); }

  // The C hook: `hook(ctx)` must not throw (see hfp_pool_set_flush_hook).
  void set_flush_hook(void (*hook)(void*), void* ctx) const {
    detail::check(hfp_pool_set_flush_hook(raw_, hook, ctx));
  }

  // A C++ hook. The trampoline catches every exception: none reaches the library. The
  // function is kept by this object until it is destroyed (a replaced hook may still be
  // running on another thread, so it is not freed on replacement). Set it from one thread.
  void set_flush_hook(std::function<void()> hook) {
    if (!hook) {
      set_flush_hook(nullptr, nullptr);
      return;
    }
    auto f = std::make_unique<std::function<void()>>(std::move(hook));
    set_flush_hook(&Pool::trampoline, f.get());
    hooks_.push_back(std::move(f));
  }

 private:
  static void trampoline(void* ctx) noexcept {
    try {
      (*static_cast<std::function<void()>*>(ctx))();
    } catch (...) {
      // Swallowed: an exception must not unwind into the library.
    }
  }

  hfp_pool* raw_ = nullptr;
  bool owned_ = false;
  std::vector<std::unique_ptr<std::function<void()>>> hooks_;
};

// The process's default pool (hfp_default_pool), configured from the environment on first
// use; throws hfp::Error (HFP_RUNTIME_UNAVAILABLE) if it could not be made. The reference
// stays valid until the process exits (the object is never destroyed, so hooks set on it
// stay valid while the library may still call them).
inline Pool& default_pool() {
  static Pool* pool = [] {
    hfp_pool* raw = hfp_default_pool();
    if (raw == nullptr) {
      throw Error(HFP_RUNTIME_UNAVAILABLE, hfp_last_error_message());
    }
    return new Pool(raw, false);
  }();
  return *pool;
}

}  // namespace hfp

#endif  // HIPFFT_POOL_HPP
