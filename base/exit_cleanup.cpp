#include "base/exit_cleanup.h"

#include <map>
#include <mutex>

namespace tessel {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<int, std::function<void()>> cleanups;
  int next = 0;
};

Registry &registry() {
  static Registry *r = new Registry;  // never destroyed: usable from exit paths
  return *r;
}

}  // namespace

int register_exit_cleanup(std::function<void()> cleanup) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.cleanups.emplace(r.next, std::move(cleanup));
  return r.next++;
}

void unregister_exit_cleanup(int handle) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.cleanups.erase(handle);
}

void run_exit_cleanups() {
  Registry &r = registry();
  std::map<int, std::function<void()>> taken;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    taken.swap(r.cleanups);
  }
  for (auto &[handle, cleanup] : taken) cleanup();
}

}  // namespace tessel
