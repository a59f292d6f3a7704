// The plan cache hipfft-pool replaces, as MLX's ROCm port has it: an LRU of
// std::shared_ptr<FftPlan> in a std::list, indexed by a std::unordered_map whose key is a
// "dev:type:n:batch" string built on every call, all behind one std::mutex.
//
//   hit     = build the key, lock, find, splice the entry to the front, copy the
//             shared_ptr, unlock;
//   release = drop that copy (what the completion handler does when the GPU finishes);
//   miss    = create the plan (through a hook) under the lock, insert it at the front,
//             and pop plans off the back past the capacity. A popped plan is destroyed when
//             its last shared_ptr goes (here at once: nothing is in flight).
//
// The key is built with std::to_string and operator+, the cheapest way to build such a
// string (an ostringstream would be several times slower), so this is a lower bound on the
// design's cost. Exposed through a few extern "C" functions for the Rust benchmarks.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

extern "C" {
typedef int64_t (*hfp_create_fn)(void* ctx, int dev, int type, int64_t n, int64_t batch);
typedef void (*hfp_destroy_fn)(void* ctx, int64_t handle);
}

namespace {

int64_t next_fake_handle(void*, int, int, int64_t, int64_t) {
  static int64_t next = 0x1000;
  return next += 16;
}

void no_destroy(void*, int64_t) {}

struct Hooks {
  hfp_create_fn create = next_fake_handle;
  hfp_destroy_fn destroy = no_destroy;
  void* ctx = nullptr;
};

// What the cache holds: the handle, destroyed with the last reference.
struct FftPlan {
  int64_t handle;
  Hooks hooks;
  FftPlan(int64_t h, const Hooks& k) : handle(h), hooks(k) {}
  FftPlan(const FftPlan&) = delete;
  FftPlan& operator=(const FftPlan&) = delete;
  ~FftPlan() { hooks.destroy(hooks.ctx, handle); }
};

class PlanCache {
 public:
  explicit PlanCache(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  static std::string make_key(int dev, int type, int64_t n, int64_t batch) {
    return std::to_string(dev) + ":" + std::to_string(type) + ":" + std::to_string(n) + ":" +
           std::to_string(batch);
  }

  // The hit path: a copy of the cached plan, or null on a miss.
  std::shared_ptr<FftPlan> find(int dev, int type, int64_t n, int64_t batch) {
    std::string key = make_key(dev, type, n, batch);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) {
      return nullptr;
    }
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->second;
  }

  // Hit, or create under the lock and evict past the capacity.
  std::shared_ptr<FftPlan> get_or_create(int dev, int type, int64_t n, int64_t batch) {
    std::string key = make_key(dev, type, n, batch);
    std::shared_ptr<FftPlan> evicted_last;  // dropped after the unlock
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    if (it != map_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
    auto plan = std::make_shared<FftPlan>(hooks_.create(hooks_.ctx, dev, type, n, batch), hooks_);
    lru_.emplace_front(key, plan);
    map_.emplace(std::move(key), lru_.begin());
    while (lru_.size() > capacity_) {
      auto& back = lru_.back();
      map_.erase(back.first);
      lru_.pop_back();  // destroys the plan here unless a copy is still out
    }
    return plan;
  }

  void set_hooks(const Hooks& h) {
    std::lock_guard<std::mutex> lock(mu_);
    hooks_ = h;
  }

  size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return lru_.size();
  }

  void clear() {
    std::list<std::pair<std::string, std::shared_ptr<FftPlan>>> gone;
    {
      std::lock_guard<std::mutex> lock(mu_);
      map_.clear();
      gone.swap(lru_);
    }
  }

 private:
  std::mutex mu_;
  std::list<std::pair<std::string, std::shared_ptr<FftPlan>>> lru_;
  std::unordered_map<std::string, std::list<std::pair<std::string, std::shared_ptr<FftPlan>>>::iterator> map_;
  size_t capacity_;
  Hooks hooks_;
};

// Keeps the compiler from dropping work whose result is unused.
inline int64_t keep(const std::shared_ptr<FftPlan>& p) {
  int64_t h = p ? p->handle : -1;
  asm volatile("" : : "r"(h) : "memory");
  return h;
}

}  // namespace

extern "C" {

void* hfp_baseline_new(size_t capacity) { return new PlanCache(capacity); }

void hfp_baseline_free(void* cache) { delete static_cast<PlanCache*>(cache); }

void hfp_baseline_set_hooks(void* cache, hfp_create_fn create, hfp_destroy_fn destroy, void* ctx) {
  Hooks h;
  h.create = create ? create : next_fake_handle;
  h.destroy = destroy ? destroy : no_destroy;
  h.ctx = ctx;
  static_cast<PlanCache*>(cache)->set_hooks(h);
}

// Hit + release: the handle, or -1 on a miss (nothing is created).
int64_t hfp_baseline_hit(void* cache, int dev, int type, int64_t n, int64_t batch) {
  auto plan = static_cast<PlanCache*>(cache)->find(dev, type, n, batch);
  return keep(plan);  // the copy drops here: the release
}

// The same, with the copy moved into a completion handler (std::function, as MLX's
// encoder.add_completed_handler takes) that is then run and destroyed.
int64_t hfp_baseline_hit_handler(void* cache, int dev, int type, int64_t n, int64_t batch) {
  auto plan = static_cast<PlanCache*>(cache)->find(dev, type, n, batch);
  int64_t h = keep(plan);
  std::function<void()> handler = [plan = std::move(plan)]() { keep(plan); };
  asm volatile("" : : "r"(&handler) : "memory");
  handler();
  return h;
}

// Hit or create (evicting past the capacity), then release: the handle.
int64_t hfp_baseline_acquire(void* cache, int dev, int type, int64_t n, int64_t batch) {
  auto plan = static_cast<PlanCache*>(cache)->get_or_create(dev, type, n, batch);
  return keep(plan);
}

size_t hfp_baseline_len(void* cache) { return static_cast<PlanCache*>(cache)->size(); }

// Drops every cached plan (destroying those not otherwise held).
void hfp_baseline_clear(void* cache) { static_cast<PlanCache*>(cache)->clear(); }

}  // extern "C"
