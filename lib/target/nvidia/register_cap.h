// ptxas with a second try at a higher register cap (register_cap.cpp).
#pragma once

#include "tritium/runtime/ptxas.h"
#include "tritium/transforms/pass.h"

#include <cstdint>
#include <string>

namespace tritium::nvidia {

/// What ptxas's -v log says of the kernel: registers a thread and bytes of
/// spill stores a thread (0 when the log does not say).
struct PtxasUse {
  int64_t registers = 0;
  int64_t spillBytes = 0;
};
PtxasUse ptxasUse(const std::string &log);

/// The registers one program of `threads` threads may use: 64K over the
/// threads, a multiple of 8, at most 255.
int registerCap(int threads);

/// runPtxas(ptx, arch); when that spills heavily and ptx has no .maxnreg,
/// assembles ptx with `.maxnreg registerCap(threads)` too and keeps that
/// (rewriting `ptx`, counting ptxas.register-cap-raised) if it spills less.
runtime::PtxasResult assembleWithRegisterCap(std::string &ptx,
                                             const std::string &arch,
                                             int threads, PassStats &stats);

} // namespace tritium::nvidia
