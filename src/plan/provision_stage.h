#pragma once
/// plan::make's provisioning stage ([cuda] provision = "pypi"), apart from the toolkit choice.
#include <optional>

#include "plan/plan.h"

namespace opforge::plan {

/// With provision = "pypi": when `first` (the resolver's answer for the machine as it is) did not
/// choose a toolkit of torch's exact CUDA, makes sure one is in the cache (opts.fetch_toolkit) or
/// says what would be fetched, and fills plan.provision. Returns the folder to resolve again with
/// as CUDA_HOME (and torch, as read already), nullopt when `first` stands. unsatisfied when PyPI
/// cannot give that toolkit.
struct Provisioned {
  fs::path dir;
  cuda::TorchInfo torch;
};
Result<std::optional<Provisioned>> provision_toolkit(probe::Machine m, const Options& opts, Plan& plan,
                                                     const Result<cuda::Resolution>& first);

/// Marks the provisioned toolkit among `res`'s candidates (the resolver saw it through CUDA_HOME).
void label_provisioned(cuda::Resolution& res, const cuda::Provision& p);

}  // namespace opforge::plan
