// Layouts as linear maps over GF(2).
//
// A distributed layout says which thread holds which tensor element. Every
// such layout (blocked, slice, ...) is represented here the same way: a map
// from the bits of the hardware index (register, lane, warp) to tensor
// coordinates. Each input bit has a basis vector (one coordinate per tensor
// dim); the coordinate of a hardware index is the XOR of the bases of its set
// bits. A zero basis means that bit does not move the element: those threads
// (or registers) hold copies.
//
// Conversions, vector widths, shuffles and "who owns an element" all come
// from this one representation instead of a case per pair of layouts.
#pragma once

#include "tritium/support/bits.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tritium::gpu {

/// One basis: a coordinate per tensor dim.
using Basis = std::vector<int64_t>;

struct LinearLayout {
  std::vector<int64_t> shape; // the tensor shape (powers of two)
  std::vector<Basis> reg;     // bit i of the register index -> coordinate
  std::vector<Basis> lane;    // bit i of the lane id (5 bits)
  std::vector<Basis> warp;    // bit i of the warp id

  int rank() const { return (int)shape.size(); }
  int numRegs() const { return 1 << reg.size(); }
  int numWarps() const { return 1 << warp.size(); }

  /// The coordinate register `r` holds in thread (lane 0, warp 0).
  Basis regCoord(int r) const;
  /// The coordinate of (register, lane, warp).
  Basis apply(int r, int laneId, int warpId) const;

  /// True when every nonzero basis is a distinct power of two along one dim
  /// and no two bases share a bit. Then XOR is addition, so the coordinate of
  /// an element is (register part) + (thread part) -- what the PTX emitter
  /// relies on to use immediate offsets.
  bool isDisjoint() const;

  /// Row-major flat index of a coordinate.
  int64_t flatIndex(const Basis &c) const;

  /// Triton's text form: `#ttg.linear<{register = [[0, 1]], lane = [...],
  /// warp = [...], block = []}>`.
  std::string str() const;

  bool operator==(const LinearLayout &o) const = default;
};

/// Row-major strides of `shape`.
std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape);

} // namespace tritium::gpu
