// Layouts as linear maps over GF(2).
//
// Every layout of the GPU IR -- which thread and register holds a tensor
// element (blocked, slice, mma, dot operand), or where in shared memory an
// element lives (swizzled, NVMMA) -- is one LinearLayout: a map from named
// input dims (hardware indices: "register", "lane", "warp", "block", or
// "offset" for shared memory) to named output dims (usually the tensor's
// dims "dim0", "dim1", ...; after invertAndCompose, another layout's inputs).
//
// Each bit of an input index has a basis vector, one coordinate per output
// dim; the output of an index is the XOR of the bases of its set bits. Every
// size is a power of two. A zero basis means that bit does not move the
// element: those threads (or registers) hold copies.
//
// The algebra below (compose, invert, invertAndCompose, contiguity) is the
// one place that answers: can this conversion stay in registers, how wide
// can this access be, which shared address does this thread use. Addresses
// combine with XOR; only where two parts use disjoint bits (disjointBits)
// may an emitter use addition (immediate offsets) instead.
#pragma once

#include "tritium/support/bits.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tritium::gpu {

/// One basis: a coordinate per output dim.
using Basis = std::vector<int64_t>;

/// The hardware input dims, in the order layouts list them.
inline const std::string kRegister = "register";
inline const std::string kLane = "lane";
inline const std::string kWarp = "warp";
inline const std::string kBlock = "block";
inline const std::string kOffset = "offset";

/// "dim0", "dim1", ...: the output dims of a tensor layout.
std::string tensorDimName(int d);

class LinearLayout {
public:
  struct InDim {
    std::string name;
    std::vector<Basis> bases; // bit i of the index -> coordinate per out dim
    bool operator==(const InDim &) const = default;
  };
  struct OutDim {
    std::string name;
    int64_t size; // power of two
    bool operator==(const OutDim &) const = default;
  };

  LinearLayout() = default;
  /// InternalError for a malformed map: duplicate names, a size that is not
  /// a power of two, a basis of the wrong length or outside its out dim.
  LinearLayout(std::vector<InDim> ins, std::vector<OutDim> outs);

  /// A distributed layout of a tensor of `shape`: ins register, lane, warp,
  /// block (in that order), outs dim0..dimN-1.
  static LinearLayout distributed(const std::vector<int64_t> &shape,
                                  std::vector<Basis> reg,
                                  std::vector<Basis> lane,
                                  std::vector<Basis> warp,
                                  std::vector<Basis> block = {});
  /// A shared-memory layout of a tensor of `shape`: ins offset (element
  /// index in the buffer) and block, outs dim0..dimN-1.
  static LinearLayout shared(const std::vector<int64_t> &shape,
                             std::vector<Basis> offset,
                             std::vector<Basis> block = {});
  /// The identity from in dim `in` to out dim `out`, both of `size`.
  static LinearLayout identity1D(int64_t size, const std::string &in,
                                 const std::string &out);

  // ---- dims -----------------------------------------------------------------
  const std::vector<InDim> &ins() const { return ins_; }
  const std::vector<OutDim> &outs() const { return outs_; }
  bool hasIn(const std::string &name) const { return inIndex(name) >= 0; }
  int inIndex(const std::string &name) const;
  int outIndex(const std::string &name) const;
  /// Bits of in dim `name` (0 when absent).
  int inBits(const std::string &name) const;
  int64_t inSize(const std::string &name) const {
    return int64_t(1) << inBits(name);
  }
  /// The bases of in dim `name` (empty when absent).
  const std::vector<Basis> &bases(const std::string &name) const;
  std::vector<int64_t> outSizes() const;
  int totalInBits() const;
  int totalOutBits() const;

  // ---- the distributed view (ins register/lane/warp/block, outs = tensor)
  std::vector<int64_t> shape() const { return outSizes(); }
  int rank() const { return (int)outs_.size(); }
  const std::vector<Basis> &reg() const { return bases(kRegister); }
  const std::vector<Basis> &lane() const { return bases(kLane); }
  const std::vector<Basis> &warp() const { return bases(kWarp); }
  const std::vector<Basis> &block() const { return bases(kBlock); }
  const std::vector<Basis> &offset() const { return bases(kOffset); }
  int numRegs() const { return (int)inSize(kRegister); }
  int numWarps() const { return (int)inSize(kWarp); }
  /// The coordinate register `r` holds in thread (lane 0, warp 0).
  Basis regCoord(int r) const { return apply(r, 0, 0); }
  /// The coordinate of (register, lane, warp) in block 0.
  Basis apply(int r, int laneId, int warpId) const;

  // ---- evaluation -----------------------------------------------------------
  /// The output of the input `index` (one value per in dim, in order).
  Basis apply(const std::vector<int64_t> &index) const;
  /// The same with named inputs (absent in dims are 0).
  Basis apply(const std::vector<std::pair<std::string, int64_t>> &index) const;

  // ---- algebra --------------------------------------------------------------
  /// outer ∘ this. This layout's out dims must be in dims of `outer` (by
  /// name, sizes at most outer's); the result has this layout's in dims and
  /// outer's out dims.
  LinearLayout compose(const LinearLayout &outer) const;
  /// The inverse of a bijective layout: in and out dims swap roles.
  /// InternalError when the layout is not bijective.
  LinearLayout invert() const;
  /// The map X from this layout's in dims to `outer`'s in dims with
  /// outer(X(i)) == this(i) for every i: e.g. with this a register layout
  /// and outer a shared layout of the same tensor, X gives each
  /// (register, lane, warp) its shared offset. Both must have the same out
  /// dims. Where outer holds copies (zero or dependent bases), X uses the
  /// lowest independent bits. InternalError when some output of this layout
  /// is not an output of outer.
  LinearLayout invertAndCompose(const LinearLayout &outer) const;

  /// Rank of the map over GF(2).
  int rankGF2() const;
  bool isInjective() const { return rankGF2() == totalInBits(); }
  bool isSurjective() const { return rankGF2() == totalOutBits(); }
  /// Mask of the bits of in dim `name` whose bases are zero (the indices
  /// that differ only there hold the same element).
  uint64_t zeroBasesMask(const std::string &name) const;

  /// The number of consecutive elements along in dim `in`: the largest 2^k
  /// such that index i < 2^k of `in` maps to element i of the row-major
  /// flattening of the out dims (last out dim fastest). Reorder the outs
  /// first (transposeOuts) for another order.
  int64_t numConsecutive(const std::string &in) const;

  /// True when the images of in dims `a` and of in dims `b` use disjoint
  /// bits of every out coordinate. Then a(i) XOR b(j) == a(i) + b(j), so an
  /// emitter may add the parts (e.g. immediate register offsets).
  bool disjointBits(const std::vector<std::string> &a,
                    const std::vector<std::string> &b) const;
  /// True when every nonzero basis is a single power of two of one out dim
  /// and no two nonzero bases share a bit: XOR is addition everywhere.
  bool isDisjoint() const;

  /// The same map with out dims in `order` (names of this layout's outs).
  LinearLayout transposeOuts(const std::vector<std::string> &order) const;
  /// The same map with the out dims flattened row-major (last fastest) and
  /// re-split as `outs` (same total size).
  LinearLayout reshapeOuts(const std::vector<OutDim> &outs) const;
  /// The sub-map of in dims `names` (others dropped; out dims kept).
  LinearLayout sublayout(const std::vector<std::string> &names) const;

  /// Row-major flat index of a coordinate of the out dims.
  int64_t flatIndex(const Basis &c) const;

  /// Text. A distributed layout prints Triton's form
  /// `#ttg.linear<{register = [[0, 1]], lane = [...], warp = [...], block =
  /// []}>`; a shared one `#ttg.shared_linear<{offset = [...], block =
  /// []}>`; any other `#tritium.ll<{in: [[..]], ... -> out: 8, ...}>`.
  std::string str() const;

  bool operator==(const LinearLayout &o) const = default;

private:
  std::vector<InDim> ins_;
  std::vector<OutDim> outs_;

  // Out coordinates packed as one bit vector (out dim 0 in the low bits).
  uint64_t pack(const Basis &c) const;
  Basis unpack(uint64_t bits) const;
  std::vector<uint64_t> columns() const; // one per in bit, in-dim order
};

/// Row-major strides of `shape`.
std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape);

} // namespace tritium::gpu
