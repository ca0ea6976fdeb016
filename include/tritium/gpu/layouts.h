// The layouts of the GPU IR: which thread and register holds each element of
// a tensor. Every GPU-level tensor type carries one (see Type::tensor's
// `layout`); the tile level has none.
//
// Layouts are interned like types, so equal layouts are the same pointer and
// tensor types with equal layouts compare with `==`. Text forms follow
// Triton's TritonGPU dialect:
//   #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32],
//                 warpsPerCTA = [4], order = [0]}>
//   #ttg.slice<{dim = 1, parent = #ttg.blocked<...>}>
//   #ttg.linear<{register = [[1]], lane = [[2], ...], warp = [...], block =
//   []}>
#pragma once

#include "tritium/gpu/linear_layout.h"
#include "tritium/ir/ir.h"

#include <memory>
#include <vector>

namespace tritium::gpu {

constexpr int kThreadsPerWarp = 32;

class GPULayout : public Layout {
public:
  enum class Kind { Blocked, Slice, Linear, NvidiaMma, DotOperand };
  virtual Kind kind() const = 0;
  /// The rank of the tensors this layout applies to.
  virtual int rank() const = 0;
  /// The linear map of this layout for a tensor of `shape` (powers of two).
  /// Throws InternalError for a shape of another rank.
  virtual LinearLayout toLinear(const std::vector<int64_t> &shape) const = 0;
};

/// Triton's blocked layout: each thread holds a sizePerThread block, threads
/// of a warp tile threadsPerWarp blocks, warps tile warpsPerCTA of those;
/// `order` lists dims fastest first. A tensor larger than the CTA tile wraps
/// (more registers per thread); a smaller one is held by several threads.
class BlockedLayout final : public GPULayout {
public:
  static const BlockedLayout *get(std::vector<int64_t> sizePerThread,
                                  std::vector<int64_t> threadsPerWarp,
                                  std::vector<int64_t> warpsPerCTA,
                                  std::vector<int64_t> order);
  /// Triton's default for a tensor: threads spread along `order` first
  /// (shape[order[0]] / sizePerThread lanes, ...), the rest of the lanes and
  /// warps along the slowest dim.
  static const BlockedLayout *forShape(const std::vector<int64_t> &shape,
                                       std::vector<int64_t> sizePerThread,
                                       std::vector<int64_t> order,
                                       int numWarps);
  /// sizePerThread 1 everywhere, row-major order.
  static const BlockedLayout *defaultFor(const std::vector<int64_t> &shape,
                                         int numWarps);

  Kind kind() const override { return Kind::Blocked; }
  int rank() const override { return (int)sizePerThread.size(); }
  LinearLayout toLinear(const std::vector<int64_t> &shape) const override;
  std::string str() const override;
  int numWarps() const;

  std::vector<int64_t> sizePerThread, threadsPerWarp, warpsPerCTA, order;

private:
  BlockedLayout() = default;
};

/// The layout of a tensor whose dim `dim` was removed from a tensor of layout
/// `parent` (a reduction's result; the operand of expand_dims).
class SliceLayout final : public GPULayout {
public:
  static const SliceLayout *get(int dim, const GPULayout *parent);
  Kind kind() const override { return Kind::Slice; }
  int rank() const override { return parent->rank() - 1; }
  LinearLayout toLinear(const std::vector<int64_t> &shape) const override;
  std::string str() const override;

  int dim;
  const GPULayout *parent;

private:
  SliceLayout() = default;
};

/// An explicit linear map, for one shape.
class LinearEncoding final : public GPULayout {
public:
  static const LinearEncoding *get(const LinearLayout &ll);
  Kind kind() const override { return Kind::Linear; }
  int rank() const override { return ll.rank(); }
  LinearLayout toLinear(const std::vector<int64_t> &shape) const override;
  std::string str() const override { return ll.str(); }

  LinearLayout ll;

private:
  LinearEncoding() = default;
};

/// Interns `l` (by its text): the one pointer for equal layouts. For the
/// `get` of layout kinds defined elsewhere (mma_layouts.h).
const GPULayout *internLayout(std::unique_ptr<GPULayout> l);

/// Parses the text form of a layout (what str() prints) at `text[pos]`,
/// advancing `pos` past it; `shape` is the tensor's (a #ttg.linear layout is
/// for one shape). Returns null, with `pos` unchanged, when the text is not a
/// well-formed layout. For the IR parser: `tensor<4x8xf32, #ttg.blocked<...>>`.
const GPULayout *parseLayout(const std::string &text, size_t &pos,
                             const std::vector<int64_t> &shape);

/// Makes the IR parser read GPU layouts (setLayoutParser), so that GPU IR
/// text round-trips. Called by the tools and the Python module at start-up.
void registerLayoutParser();

/// The GPU layout of a tensor type; null for scalars and tile-level tensors.
const GPULayout *layoutOf(const Type *t);
/// The linear map of a GPU tensor type (cached). InternalError when the type
/// has no GPU layout.
const LinearLayout &linearOf(const Type *t);
/// `t` (a tensor type) with layout `l`.
const Type *withLayout(const Type *t, const GPULayout *l);

/// The layout of `expand_dims(x, axis)`'s result when x has layout `l`, or
/// null when there is none to derive (x's layout is not a slice along axis).
const GPULayout *expandDimsLayout(const GPULayout *l, int axis);
/// The layout `trans` with `order` gives to a tensor of layout `l` (blocked
/// only; null otherwise). result dim i = operand dim order[i].
const GPULayout *permuteLayout(const GPULayout *l,
                               const std::vector<int64_t> &order);

} // namespace tritium::gpu
