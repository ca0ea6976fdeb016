// assembleWithRegisterCap: ptxas, and a second try with more registers when
// the first spills heavily.
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
#include "register_cap.h"

#include <regex>

namespace tritium::nvidia {
namespace {

/// Spilling less than this (bytes of spill stores a thread) stays in L1 and
/// costs less than the occupancy a higher register count would give up.
constexpr int64_t kSpillRetryBytes = 128;

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

runtime::PtxasResult assembleWithRegisterCap(std::string &ptx,
                                             const std::string &arch,
                                             int threads, PassStats &stats) {
  runtime::PtxasResult first = runtime::runPtxas(ptx, arch);
  PtxasUse use = ptxasUse(first.log);
  int cap = registerCap(threads);
  if (use.spillBytes < kSpillRetryBytes || use.registers >= cap ||
      ptx.find("\n.maxnreg ") != std::string::npos)
    return first;
  size_t at = ptx.find("\n.maxntid ");
  if (at == std::string::npos)
    return first;
  at = ptx.find('\n', at + 1);
  std::string capped = ptx.substr(0, at + 1) + ".maxnreg " +
                       std::to_string(cap) + "\n" + ptx.substr(at + 1);
  runtime::PtxasResult second = runtime::runPtxas(capped, arch);
  if (ptxasUse(second.log).spillBytes >= use.spillBytes)
    return first;
  stats.add("ptxas.register-cap-raised");
  ptx = std::move(capped);
  return second;
}

} // namespace tritium::nvidia
