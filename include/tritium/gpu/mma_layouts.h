// Tensor-core layouts: the accumulator of NVIDIA's mma instructions and the
// registers of their operands, as linear maps (see linear_layout.h).
//
// Text forms follow Triton's TritonGPU dialect:
//   #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2],
//                    instrShape = [16, 8]}>
//   #ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1],
//                    instrShape = [16, 128, 16]}>
//   #ttg.dot_op<{opIdx = 0, parent = #ttg.nvidia_mma<...>, kWidth = 2}>
//
// The fragments are the PTX ISA's: with groupID = lane >> 2 and
// threadID_in_group = lane % 4, the m16n8 accumulator register i holds
// (groupID + 8 * (i >> 1), 2 * threadID_in_group + (i & 1)); wgmma's m64nN
// accumulator is that 16x8 fragment repeated along N in more registers, the
// four warps of a warpgroup stacked along M.
//
// Batched (rank-3) dots: mma.sync's accumulator may carry a leading batch
// dim, warpsPerCTA = [wB, wM, wN] and instrShape = [1, 16, 8]:
//   #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0,
//                    warpsPerCTA = [2, 2, 1], instrShape = [1, 16, 8]}>
// Each instruction stays within one batch element; the warps tile the CTA
// N-fastest, then M, then the batch, and the register repeats wrap the same
// way. A dot_op layout of such a parent is rank 3 too (A [B, M, K], B
// [B, K, N]); its batch warps and repeats are the parent's.
//
// Shapes: a tensor must be a multiple of the instruction tile in each dim
// (InternalError otherwise: one instruction cannot compute less). A larger
// tensor wraps into more registers (N before M for the accumulator, K first
// for an operand); where the warps cover more than the tensor, the extra
// warps hold copies (zero warp bases), as in blocked layouts.
#pragma once

#include "tritium/gpu/layouts.h"

namespace tritium::gpu {

/// The accumulator of mma.sync m16n8kK (versionMajor 2, instrShape [16, 8])
/// or of wgmma m64nNkK (versionMajor 3, instrShape [16, N, K], N a power of
/// two in 8..256, warpsPerCTA[0] a multiple of 4: a warpgroup spans 64 rows).
/// Warps tile the CTA N-fastest for version 2, M-fastest for version 3 (the
/// warps of a warpgroup must be consecutive along M). Version 2 may be
/// batched (three warpsPerCTA, instrShape [1, 16, 8]; see above).
class NvidiaMmaLayout final : public GPULayout {
public:
  /// InternalError for a combination the hardware has no instruction for.
  static const NvidiaMmaLayout *get(int versionMajor, int versionMinor,
                                    std::vector<int64_t> warpsPerCTA,
                                    std::vector<int64_t> instrShape);
  Kind kind() const override { return Kind::NvidiaMma; }
  int rank() const override { return (int)warpsPerCTA.size(); }
  LinearLayout toLinear(const std::vector<int64_t> &shape) const override;
  std::string str() const override;
  int numWarps() const {
    int64_t n = 1;
    for (int64_t w : warpsPerCTA)
      n *= w;
    return (int)n;
  }
  bool isHopper() const { return versionMajor == 3; }
  /// The rows x cols one warp computes per instruction: 16 x 8 (version 2)
  /// or 16 x N (version 3: a quarter of the warpgroup's 64 x N).
  std::vector<int64_t> warpTile() const;

  int versionMajor, versionMinor;
  std::vector<int64_t> warpsPerCTA, instrShape;

private:
  NvidiaMmaLayout() = default;
};

/// Operand `opIdx` (0: A, M x K; 1: B, K x N) of an mma whose accumulator
/// has layout `parent`, in registers. kWidth is the number of consecutive K
/// elements a thread holds in one 32-bit register: 2 for 16-bit elements, 4
/// for 8-bit, 1 for tf32; the instruction's K is 8 * kWidth. Warps along
/// the other operand's dim hold copies. wgmma (parent version 3) reads A
/// from registers only: opIdx 1 with a version-3 parent is rejected.
class DotOperandLayout final : public GPULayout {
public:
  static const DotOperandLayout *get(int opIdx, const GPULayout *parent,
                                     int kWidth);
  Kind kind() const override { return Kind::DotOperand; }
  int rank() const override { return parent->rank(); }
  LinearLayout toLinear(const std::vector<int64_t> &shape) const override;
  std::string str() const override;

  int opIdx;
  const NvidiaMmaLayout *parent;
  int kWidth;

private:
  DotOperandLayout() = default;
};

/// Parses `#ttg.nvidia_mma<{...}>` or `#ttg.dot_op<{...}>` at text[pos]
/// (for parseLayout); null with pos unchanged when the text is not one.
const GPULayout *parseMmaLayout(const std::string &text, size_t &pos);

} // namespace tritium::gpu
