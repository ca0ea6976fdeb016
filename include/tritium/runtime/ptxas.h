// PTX -> cubin through NVIDIA's ptxas, when it is installed. Without it the
// runtime hands PTX to the driver's JIT (cuModuleLoadDataEx) instead.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tritium::runtime {

/// The ptxas to use: $TRITIUM_PTXAS if set (empty or "0" disables ptxas),
/// else /usr/local/cuda/bin/ptxas, else `ptxas` on PATH. nullopt when none
/// is executable. Looked up once per process.
std::optional<std::string> findPtxas();

/// The line of `ptxas --version` that names the release ("Cuda compilation
/// tools, release 13.0, V13.0.88"), or "" without ptxas. Cached.
std::string ptxasVersion();

struct PtxasResult {
  std::string cubin; // the ELF image
  std::string log;   // ptxas's stdout+stderr (with -v: registers, spills)
};

/// Assembles `ptx` for `arch` ("sm_90a", "sm_80") with -O3 (and -v, so the
/// log reports registers and spills) plus `extraOptions`. Throws
/// InternalError with ptxas's log when it fails (our PTX is wrong) and
/// std::runtime_error when it cannot be run at all.
PtxasResult runPtxas(const std::string &ptx, const std::string &arch,
                     const std::vector<std::string> &extraOptions = {});

} // namespace tritium::runtime
