// Moving a tensor's elements between two layouts (and through the data
// movement ops: broadcast, expand_dims, reshape, trans, convert_layout).
//
// Every such op is described by a map from a result coordinate c to the
// row-major index of the operand element it takes: sum_d c[d] * weights[d].
// When each thread already holds the elements it needs, the op is a renaming
// of registers; otherwise the operand goes through shared memory (written in
// its layout, read back in the result's).
#pragma once

#include "tritium/gpu/layouts.h"

#include <optional>
#include <vector>

namespace tritium::gpu {

/// The weights of a data movement op (broadcast, expand_dims, reshape, trans,
/// layout conversion): result coordinate -> operand row-major index.
std::vector<int64_t> movementWeights(const Operation &op);

struct MovementPlan {
  /// In registers: result register i is operand register srcReg[i].
  bool inRegisters = false;
  std::vector<int> srcReg;
  /// Through shared memory: bytes of scratch it needs.
  int64_t scratchBytes = 0;
};

/// The scratch of a move through shared memory holds the operand in
/// row-major order with its 16-byte chunks XOR-swizzled by row, so that
/// neither side's accesses pile onto a few banks: an mma accumulator written
/// to rows of 512 bytes puts the eight rows of a quad group's column in the
/// same bank unswizzled (8-way conflicts), and a column-wise read the same.
/// Chunk bits [chunkBit, chunkBit+bits) of the flat element index are XORed
/// with its bits [rowBit, rowBit+bits), chosen so that the 8 chunks of a
/// 128-byte bank line come from 8 different rows. Bits below a chunk never
/// change, so vectors of up to 16 bytes stay contiguous and aligned; the
/// map is GF(2)-linear and a permutation of the scratch, so an address
/// stays the XOR of per-bit parts.
struct ScratchSwizzle {
  int chunkBit = 0, rowBit = 0, bits = 0; // bits == 0: row-major as is
  int64_t apply(int64_t flat) const {
    if (bits == 0)
      return flat;
    int64_t mask = (int64_t(1) << bits) - 1;
    return flat ^ (((flat >> rowBit) & mask) << chunkBit);
  }
};
/// The swizzle of the scratch holding `src` (elements of `elemBytes`).
ScratchSwizzle scratchSwizzle(const Type *src, int64_t elemBytes);

/// How `src` (a GPU tensor type) becomes `dst` under `weights`: in
/// registers when every thread holds, in its registers, the operand
/// elements its result registers take, the same register for every thread
/// (decided with the GF(2) algebra, so any linear layout, XOR bases
/// included). InternalError when the weights are not GF(2)-linear (see
/// linearFunction) and a layout is not disjoint.
MovementPlan planMovement(const Type *src, const Type *dst,
                          const std::vector<int64_t> &weights);

/// The name of linearFunction's out dim.
inline const std::string kFlat = "flat";

/// The function c -> sum_d c[d] * w[d] on the tensor of `ll`, composed with
/// `ll`: a map from ll's in dims to the one out dim "flat". It exists when
/// the function is linear over GF(2) on the tensor (each nonzero w[d] a
/// power of two and the bits of different dims disjoint: row-major strides,
/// their permutations, zeros for broadcast dims); nullopt otherwise. Then
/// the value at (register, lane, warp) is the XOR of the thread's part and
/// the register's part, their sum only where disjointBits says so.
std::optional<LinearLayout> linearFunction(const LinearLayout &ll,
                                           const std::vector<int64_t> &w);

/// Bytes an element of `t` (a scalar or pointer type) takes in shared or
/// global memory (i1: 1 byte).
int64_t storageBytes(const Type *elem);

/// The mask of lane (warp) id bits along which a layout holds copies: the
/// bits whose basis is zero. Threads with any of these bits set do not own
/// their elements (stores and atomics skip them).
unsigned duplicateLaneMask(const LinearLayout &ll);
unsigned duplicateWarpMask(const LinearLayout &ll);

} // namespace tritium::gpu
