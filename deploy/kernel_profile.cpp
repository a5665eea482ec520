#include "deploy/kernel_profile.h"

#include <algorithm>
#include <map>

#include "deploy/artifact_manifest.h"

namespace tessel {

std::vector<KernelProfileRow> kernel_profile(const Module &module) {
  auto manifest = deploy::parse_manifest(module.manifest_json());
  std::map<std::string, const deploy::ArtifactTask *> task_of;
  if (manifest.ok())
    for (const deploy::ArtifactTask &t : manifest.value().tasks) task_of[t.kernel] = &t;
  std::vector<KernelProfileRow> rows;
  for (KernelTimes &k : module.kernel_times()) {
    KernelProfileRow row;
    row.step = k.step;
    row.symbol = k.symbol;
    row.serial = k.serial;
    if (!k.ms.empty()) {
      std::sort(k.ms.begin(), k.ms.end());
      row.median_ms = k.ms[k.ms.size() / 2];
    }
    if (auto it = task_of.find(k.symbol); it != task_of.end()) {
      row.ops = it->second->ops;
      row.flops = it->second->flops;
      if (it->second->record_median_seconds) row.record_ms = *it->second->record_median_seconds * 1e3;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace tessel
