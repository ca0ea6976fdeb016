// ptxas with a second try at a higher register cap (register_cap.cpp).
#pragma once

#include "tritium/ir/ir.h"
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

/// Whether `f` loads from global memory (tt.load, or a cp.async copy) inside
/// an scf.for or scf.while.
bool loadsInALoop(Function &f);

/// runPtxas(ptx, arch), and where ptx has no .maxnreg, an assembly of ptx
/// with `.maxnreg registerCap(threads)` too: after the first where that
/// spills heavily, and at the same time where `loopLoads` (loadsInALoop).
/// Keeps the capped one (rewriting `ptx`) when the first spills heavily and
/// it spills less (counting ptxas.register-cap-raised), or, with
/// `loopLoads`, when it spills no more and leaves as many programs per SM
/// (ptxas.register-cap-same-occupancy).
runtime::PtxasResult assembleWithRegisterCap(std::string &ptx,
                                             const std::string &arch,
                                             int threads, bool loopLoads,
                                             PassStats &stats);

} // namespace tritium::nvidia
