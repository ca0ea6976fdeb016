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
/// (ptxas.register-cap-same-occupancy). Where the result kept so far has
/// no cap, one or two programs fit per SM at its register count, and that
/// count sits at most 8 above one at which one more program fits (by
/// registers, threads and `sharedBytes`), it is assembled again capped at
/// that count and the new one kept when it spills no more
/// (ptxas.register-cap-occupancy).
runtime::PtxasResult assembleWithRegisterCap(std::string &ptx,
                                             const std::string &arch,
                                             int threads, bool loopLoads,
                                             int64_t sharedBytes,
                                             PassStats &stats);

/// Programs of `threads` threads at `registers` registers a thread that one
/// SM's register file holds (64K, allocated 8 a thread at a time), at most
/// 32 and at most 2048 threads.
int programsPerSM(int threads, int64_t registers);

/// The occupancy step's cap for ptxas's choice of `registers` (0: none), a
/// program asking for `sharedBytes` on an SM of `sharedPerSM` bytes.
int64_t occupancyStepCap(int threads, int64_t registers, int64_t sharedBytes,
                         int64_t sharedPerSM);

/// The shared memory one SM of `arch` ("sm_80", "sm_90a") offers its
/// programs, their reserves included.
int64_t sharedPerSM(const std::string &arch);

} // namespace tritium::nvidia
