// assembleWithRegisterCap: ptxas, and a second assembly with a register cap
// (.maxnreg) where the first spills heavily or the kernel loads in a loop.
//
// Why: a kernel's PTX names its block size (.maxntid) and, unless it holds a
// dot, no register limit. ptxas then often sizes registers for full
// occupancy: 2048 threads per SM, i.e. 32 registers a thread at 4 warps,
// whatever the kernel holds. A tile of 256x256 elements at 4 warps is 512
// values a thread; at 32 registers ptxas moves most of them through local
// memory (kilobytes of spill stores a thread), which doubles or triples a
// memory-bound kernel's traffic. Which code shapes get that choice is not
// predictable from outside (a small change to the kernel flips it, under
// Triton's PTX as under ours). So the first result is kept unless it spills
// at least kSpillRetryBytes a thread; then the PTX gets `.maxnreg` (what one
// program may use: 64K registers over its threads, at most 255) and is
// assembled again, and the second result is kept if it spills less. Its
// PTX is the one kept, so that the driver's JIT path (no ptxas) and the
// cache hold the same program.
//
// For a kernel that loads inside a loop, the capped assembly runs beside the
// first and is also kept when it spills no more and leaves as many programs
// per SM (by registers) as the first. Then the cap changes only how ptxas
// schedules: with it, ptxas issues a loop's loads together where without it
// (`.maxntid` alone) it often spreads them between the arithmetic. Measured
// on the H200 (benchmarks/RESULTS.md, eleventh session): Liger's tvd, 16
// warps, 123 -> 120 registers, its 16 loads together, 1.07x -> 1.00x
// Triton's time. A cap on every kernel regardless of occupancy cost swiglu
// and jsd 11-19 %. Kernels without such a loop (most of what Inductor
// writes) keep one ptxas run: the second one is CPU time that a compile
// pool running many kernels pays in wall time.
//
// The occupancy step: where an SM holds one or two programs at ptxas's own
// register choice, and that choice lands a few registers above a count at
// which one more program would fit (by registers, and by shared memory),
// the PTX is assembled again with `.maxnreg` at that count, and the result
// kept when it spills nothing more. ptxas does not weigh that step itself:
// Liger's GEGLU backward (fp32, 16 warps, 11008 columns) gets 66
// registers, one program per SM, and its 18 loads issued in two rounds with
// the arithmetic between; at 64 two programs share an SM and each one's
// memory waits hide behind the other's arithmetic (on the H200: 230 -> 214
// us, Triton's 213). Only counts within kOccupancyStepCut of a step, at
// kOccupancyStepMaxPrograms programs or fewer, get the second run, so
// Inductor's kernels (128-256 threads, mostly under 64 registers: four
// programs or more) keep their one run.
#include "register_cap.h"

#include "tritium/transforms/pipeline_options.h"

#include <algorithm>
#include <future>
#include <regex>

namespace tritium::nvidia {
namespace {

/// Spilling less than this (bytes of spill stores a thread) stays in L1 and
/// costs less than the occupancy a higher register count would give up.
constexpr int64_t kSpillRetryBytes = 128;

/// How far below ptxas's own count the occupancy step may cap (registers a
/// thread): one allocation unit. Deeper cuts trade the kernel's schedule for
/// occupancy without a measurement that says it pays.
constexpr int64_t kOccupancyStepCut = 8;

/// The occupancy step only where an SM holds at most this many programs:
/// there one more is half as many again or more, and a program's memory
/// waits have few others to hide behind. At 4 warps every count from 33 to
/// 80 registers a thread is within a unit of a step, so without this bound
/// most kernels above 32 registers (Inductor's reductions among them) would
/// pay a second ptxas run for a few percent of occupancy.
constexpr int kOccupancyStepMaxPrograms = 2;

/// Shared memory the runtime reserves for each program on an SM, besides
/// what the program asks for (1 KB on sm_80 and later).
constexpr int64_t kSharedReservedPerProgram = 1024;

int64_t logNumber(const std::string &log, const std::regex &re) {
  std::smatch m;
  int64_t best = 0;
  for (auto it = log.cbegin();
       std::regex_search(it, log.cend(), m, re); it = m.suffix().first)
    best = std::max<int64_t>(best, std::stoll(m[1].str()));
  return best;
}

} // namespace

PtxasUse ptxasUse(const std::string &log) {
  static const std::regex regs(R"(Used (\d+) registers)");
  static const std::regex spills(R"((\d+) bytes spill stores)");
  return {logNumber(log, regs), logNumber(log, spills)};
}

int registerCap(int threads) {
  return std::min(255, 65536 / std::max(threads, 1) / 8 * 8);
}

bool loadsInALoop(Function &f) {
  bool found = false;
  f.walk([&](Operation *op) {
    if (found || (op->code() != OpCode::Load &&
                  op->code() != OpCode::AsyncCopyGlobalToLocal))
      return;
    for (Operation *p = op->parentOp(); p; p = p->parentOp())
      if (p->code() == OpCode::For || p->code() == OpCode::While) {
        found = true;
        return;
      }
  });
  return found;
}

/// Programs of `threads` threads using `registers` registers a thread that
/// one SM's register file holds (64K, 8 a thread at a time), at most 32 and
/// at most 2048 threads.
int programsPerSM(int threads, int64_t registers) {
  int warps = std::max(1, (threads + 31) / 32);
  // Registers are allocated per warp, 256 at a time (8 a thread).
  int64_t perWarp = std::max<int64_t>(8, (registers + 7) / 8 * 8) * 32;
  int64_t byRegisters = 65536 / perWarp / warps;
  return (int)std::min<int64_t>({byRegisters, 2048 / (warps * 32), 32});
}

namespace {

/// Programs per SM by shared memory on an SM of `sharedPerSM` bytes (32,
/// the hardware's most, for a program that uses none).
int programsBySharedMemory(int64_t sharedBytes, int64_t sharedPerSM) {
  if (sharedBytes <= 0)
    return 32;
  return (int)std::min<int64_t>(
      32, sharedPerSM / (sharedBytes + kSharedReservedPerProgram));
}

} // namespace

int64_t sharedPerSM(const std::string &arch) {
  // One program's most (GPUTarget::maxSharedBytes) plus its reserve: 228 KB
  // on sm_90, 164 KB on sm_80/87, 100 KB on sm_86/89.
  return GPUTarget::parse(arch).maxSharedBytes() + kSharedReservedPerProgram;
}

/// The registers a thread at which one more program than at `registers`
/// fits per SM, where at most kOccupancyStepMaxPrograms fit at `registers`,
/// the count is at most kOccupancyStepCut below it, and shared memory and
/// the thread limit allow the extra program; else 0.
int64_t occupancyStepCap(int threads, int64_t registers, int64_t sharedBytes,
                         int64_t sharedPerSM) {
  if (registers <= 0)
    return 0;
  int warps = std::max(1, (threads + 31) / 32);
  int now = programsPerSM(threads, registers);
  if (now > kOccupancyStepMaxPrograms)
    return 0;
  int next = now + 1;
  if (next > 2048 / (warps * 32) || next > 32 ||
      next > programsBySharedMemory(sharedBytes, sharedPerSM))
    return 0;
  int64_t cap = 65536 / ((int64_t)next * warps * 32) / 8 * 8;
  if (cap < 8 || cap >= registers || registers - cap > kOccupancyStepCut)
    return 0;
  return cap;
}

namespace {

/// Which reason keeps the capped assembly `b` over the first, `a` (the
/// stats counter to add), or null to keep `a`: fewer spills where `a`
/// spills heavily; with `sameOccupancy`, also no more spills at as many
/// programs per SM.
const char *capKept(const PtxasUse &a, const PtxasUse &b, int threads,
                    bool sameOccupancy) {
  if (a.spillBytes >= kSpillRetryBytes && b.spillBytes < a.spillBytes)
    return "ptxas.register-cap-raised";
  if (sameOccupancy && b.spillBytes <= a.spillBytes &&
      programsPerSM(threads, b.registers) >= programsPerSM(threads, a.registers))
    return "ptxas.register-cap-same-occupancy";
  return nullptr;
}

/// `ptx` with `.maxnreg cap` after its .maxntid line ("" without one).
std::string withCap(const std::string &ptx, int cap) {
  size_t at = ptx.find("\n.maxntid ");
  if (at == std::string::npos)
    return "";
  at = ptx.find('\n', at + 1);
  return ptx.substr(0, at + 1) + ".maxnreg " + std::to_string(cap) + "\n" +
         ptx.substr(at + 1);
}

/// The first rules' result (`kept`, whose PTX `ptx` has no cap), or where its
/// register count sits just above an occupancy step, an assembly capped at
/// the step when that spills no more (counting ptxas.register-cap-occupancy).
runtime::PtxasResult withOccupancyStep(runtime::PtxasResult kept,
                                       std::string &ptx,
                                       const std::string &arch, int threads,
                                       int64_t sharedBytes, PassStats &stats) {
  PtxasUse use = ptxasUse(kept.log);
  int64_t cap = occupancyStepCap(threads, use.registers, sharedBytes,
                                 sharedPerSM(arch));
  std::string capped = cap ? withCap(ptx, (int)cap) : "";
  if (capped.empty())
    return kept;
  runtime::PtxasResult stepped;
  try {
    stepped = runtime::runPtxas(capped, arch);
  } catch (const std::exception &) {
    return kept;
  }
  PtxasUse su = ptxasUse(stepped.log);
  if (su.spillBytes > use.spillBytes || programsPerSM(threads, su.registers) <=
                                            programsPerSM(threads, use.registers))
    return kept;
  stats.add("ptxas.register-cap-occupancy");
  ptx = std::move(capped);
  return stepped;
}

} // namespace

runtime::PtxasResult assembleWithRegisterCap(std::string &ptx,
                                             const std::string &arch,
                                             int threads, bool loopLoads,
                                             int64_t sharedBytes,
                                             PassStats &stats) {
  int cap = registerCap(threads);
  std::string capped = withCap(ptx, cap);
  if (ptx.find("\n.maxnreg ") != std::string::npos || capped.empty())
    return runtime::runPtxas(ptx, arch);
  runtime::PtxasResult first, second;
  if (!loopLoads) {
    // The spill retry alone: after the first result, where it spills.
    first = runtime::runPtxas(ptx, arch);
    PtxasUse use = ptxasUse(first.log);
    if (use.spillBytes < kSpillRetryBytes || use.registers >= cap)
      return withOccupancyStep(std::move(first), ptx, arch, threads,
                               sharedBytes, stats);
    second = runtime::runPtxas(capped, arch);
  } else {
    // Both at once: the second costs no wall time where there is a core free.
    auto secondRun = std::async(std::launch::async, [&] {
      return runtime::runPtxas(capped, arch);
    });
    first = runtime::runPtxas(ptx, arch);
    // The capped assembly is an option, not the program: where it fails the
    // first one stands (an error of the PTX itself has already been raised
    // by the first run).
    try {
      second = secondRun.get();
    } catch (const std::exception &) {
      return withOccupancyStep(std::move(first), ptx, arch, threads,
                               sharedBytes, stats);
    }
  }
  const char *reason = capKept(ptxasUse(first.log), ptxasUse(second.log),
                               threads, loopLoads);
  if (!reason)
    return withOccupancyStep(std::move(first), ptx, arch, threads,
                             sharedBytes, stats);
  stats.add(reason);
  ptx = std::move(capped);
  return second;
}

} // namespace tritium::nvidia
