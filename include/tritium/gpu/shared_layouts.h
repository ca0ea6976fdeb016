// Shared-memory layouts: where in a shared buffer each element of a tile
// lives. A `!ttg.memdesc` type carries one (see Type::memdesc).
//
// Each is a linear map (LinearLayout::shared) from "offset" -- the element
// index within one buffer -- to the tile's coordinates, so that emitters find
// the address of a register with regLayout.invertAndCompose(sharedLayout)
// and combine its parts with XOR. Text forms follow Triton's:
//   #ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>
//   #ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false,
//                      elementBitWidth = 16}>
// Shared layouts are interned: equal layouts are the same pointer.
#pragma once

#include "tritium/gpu/linear_layout.h"
#include "tritium/ir/ir.h"

#include <optional>
#include <vector>

namespace tritium::gpu {

class SharedLayout : public Layout {
public:
  enum class Kind { Swizzled, NVMMA };
  virtual Kind kind() const = 0;
  /// The map offset -> tile coordinates of one buffer of `shape` (the tile,
  /// without the leading buffer dim of a multi-buffered memdesc; powers of
  /// two). InternalError for a shape this layout cannot hold.
  virtual LinearLayout toLinear(const std::vector<int64_t> &shape) const = 0;
};

/// Triton's swizzled shared layout. Dims are stored in `order` (fastest
/// first). Within the plane of the two fastest dims (rows along order[1],
/// columns along order[0]) the columns come in groups of `vec` elements; row
/// r stores group g at group g XOR phase(r), phase(r) = (r / perPhase) %
/// maxPhase, so that threads reading one column from consecutive rows hit
/// different banks. vec = perPhase = maxPhase = 1 is the plain row-major
/// (in `order`) layout.
class SwizzledSharedLayout final : public SharedLayout {
public:
  /// vec, perPhase, maxPhase must be powers of two and `order` a
  /// permutation (InternalError otherwise).
  static const SwizzledSharedLayout *get(int64_t vec, int64_t perPhase,
                                         int64_t maxPhase,
                                         std::vector<int64_t> order);
  Kind kind() const override { return Kind::Swizzled; }
  int rank() const override { return (int)order.size(); }
  LinearLayout toLinear(const std::vector<int64_t> &shape) const override;
  std::string str() const override;
  std::string checkMemDesc(const Type *element,
                           const std::vector<int64_t> &shape) const override;
  /// The same swizzle with `order` naming the permuted dims (null when
  /// `order` is not a permutation of this layout's rank).
  const Layout *permuted(const std::vector<int64_t> &order) const override;

  int64_t vec, perPhase, maxPhase;
  std::vector<int64_t> order;

private:
  SwizzledSharedLayout() = default;
};

/// The layouts the tensor cores (wgmma) and the TMA unit read and write: a
/// 2-D tile whose contiguous dim (dim 1, or dim 0 when `transposed`) is cut
/// into column blocks of swizzlingByteWidth bytes (16 bytes when the width
/// is 0); a block stores all its rows one after the other, and the blocks
/// follow each other. Within each group of 8 rows of 128 bytes (the swizzle
/// atom: 1024, 512 or 256 bytes for widths 128, 64, 32), the 16-byte chunk c
/// of a row is stored at chunk c XOR (address bits 7.. of the row), the
/// 32/64/128B swizzle modes of PTX's tensor maps and wgmma descriptors.
class NVMMASharedLayout final : public SharedLayout {
public:
  /// swizzlingByteWidth in {0, 32, 64, 128}; elementBitWidth in {8, 16,
  /// 32, 64} (InternalError otherwise).
  static const NVMMASharedLayout *get(int64_t swizzlingByteWidth,
                                      bool transposed, int64_t elementBitWidth);
  Kind kind() const override { return Kind::NVMMA; }
  int rank() const override { return 2; }
  LinearLayout toLinear(const std::vector<int64_t> &shape) const override;
  std::string str() const override;
  std::string checkMemDesc(const Type *element,
                           const std::vector<int64_t> &shape) const override;
  /// order [1, 0] swaps which dim is contiguous (`transposed`); [0, 1] is
  /// this layout; null for anything else.
  const Layout *permuted(const std::vector<int64_t> &order) const override;

  int64_t swizzlingByteWidth;
  bool transposed;
  int64_t elementBitWidth;

private:
  NVMMASharedLayout() = default;
};

/// Parses a shared layout's text at `text[pos]`, advancing `pos` past it.
/// Null, with `pos` unchanged, when the text is not a well-formed shared
/// layout. parseLayout's registered hook calls it for memdesc types.
const SharedLayout *parseSharedLayout(const std::string &text, size_t &pos);

/// The shared layout of a memdesc type; null for any other type.
const SharedLayout *sharedLayoutOf(const Type *t);
/// The linear map of one buffer of a memdesc type (cached). InternalError
/// when the type has no shared layout.
const LinearLayout &sharedLinearOf(const Type *t);

/// The swizzle (128, 64 or 32 bytes; 0: none) of the TMA copies that write
/// one buffer of memdesc type `t` as its layout places the elements: boxes
/// of all the rows and swz bytes of columns (16 without a swizzle), one
/// after the other along the columns, each in the tensor map's swizzle
/// pattern (the 16-byte chunk c of row r at c XOR (r mod 8 ...), by address
/// bits 7..). Null when no swizzle does (a 2-D buffer, rows contiguous).
std::optional<int64_t> tmaSwizzleBytes(const Type *t);

} // namespace tritium::gpu
