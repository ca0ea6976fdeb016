// Types of the tritium IR: scalar dtypes, pointers and tensors.
//
// Types are interned: `Type::tensor(f32, {128})` called twice returns the same
// pointer, so types compare with `==`. Interning is thread-safe; types live for
// the whole process and are never freed.
#pragma once

#include "tritium/support/dtype.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tritium {

/// A distributed or shared layout attached to tensors of the GPU IR. Opaque at
/// the tile level (where every tensor's layout is null).
class Layout {
public:
  virtual ~Layout() = default;
  virtual std::string str() const = 0;
  /// The rank of the tensors (or shared tiles) this layout applies to; -1
  /// when it does not say.
  virtual int rank() const { return -1; }
  /// Why a memdesc of `element` and buffer shape `shape` cannot use this
  /// layout (empty when it can). Shared layouts override it; the verifier
  /// asks it of every memdesc type.
  virtual std::string checkMemDesc(const class Type *element,
                                   const std::vector<int64_t> &shape) const {
    return "not a shared-memory layout";
  }
  /// The layout of the same memory with its dims permuted as tt.trans's
  /// `order` permutes a tensor's (dim i of the result is dim order[i] of
  /// this one): what ttg.memdesc_trans's result carries. Null when this
  /// layout has no such form. Shared layouts override it.
  virtual const Layout *permuted(const std::vector<int64_t> &order) const {
    (void)order;
    return nullptr;
  }
};

/// The most elements a tensor type may have (the parser and the Python Type
/// constructors check it): element counts and byte sizes never overflow. The
/// frontend's own limit, Triton's, is far lower (2^20).
constexpr int64_t kMaxTensorElements = int64_t(1) << 31;

class Type {
public:
  enum class Kind : uint8_t { Scalar, Pointer, Tensor, MemDesc, Token };

  static const Type *scalar(DType t);
  /// `!tt.ptr<pointee>`; pointee is a scalar type. addressSpace 1 = global.
  static const Type *pointer(const Type *pointee, int addressSpace = 1);
  /// `tensor<4x8xf32>`; element is a scalar or pointer type, every dim > 0.
  static const Type *tensor(const Type *element, std::vector<int64_t> shape,
                            const Layout *layout = nullptr);
  /// `!ttg.memdesc<3x128x64xf16, #ttg.swizzled_shared<...>, mutable>`: a
  /// buffer in shared memory (GPU IR). element is a scalar type; layout a
  /// shared layout. When `shape` has one dim more than the layout's rank, the
  /// leading dim counts buffers (multi-buffering; ttg.memdesc_index picks
  /// one).
  static const Type *memdesc(const Type *element, std::vector<int64_t> shape,
                             const Layout *layout, bool isMutable);
  /// `!ttg.async.token`: the result of an asynchronous copy or commit group.
  static const Type *asyncToken();

  Kind kind() const { return kind_; }
  bool isScalar() const { return kind_ == Kind::Scalar; }
  bool isPointer() const { return kind_ == Kind::Pointer; }
  bool isTensor() const { return kind_ == Kind::Tensor; }
  bool isMemDesc() const { return kind_ == Kind::MemDesc; }
  bool isToken() const { return kind_ == Kind::Token; }

  /// Scalar kind only.
  DType dtype() const { return dtype_; }
  /// Pointer kind only.
  const Type *pointee() const { return elem_; }
  int addressSpace() const { return addrSpace_; }
  /// Tensor and memdesc kinds only (shape includes a memdesc's buffer dim).
  const Type *element() const { return elem_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  int rank() const { return (int)shape_.size(); }
  int64_t numElements() const;
  const Layout *layout() const { return layout_; }
  /// MemDesc kind only.
  bool isMutable() const { return mutable_; }
  /// Whether the leading dim counts buffers; how many (1 when not).
  bool isMultiBuffered() const { return multiBuffered_; }
  int64_t numBuffers() const { return multiBuffered_ ? shape_[0] : 1; }
  /// The shape of one buffer (without the buffer dim).
  std::vector<int64_t> bufferShape() const;

  /// The element type of a tensor, the type itself otherwise.
  const Type *scalarType() const { return isTensor() ? elem_ : this; }
  /// Same shape (and layout) as this, with another element type; for a
  /// non-tensor type, returns `elem` itself.
  const Type *withElement(const Type *elem) const;
  /// True for a scalar (or tensor of) floating-point dtype.
  bool isFloatLike() const;
  bool isIntLike() const;
  bool isPointerLike() const { return scalarType()->isPointer(); }

  /// Text form: `i32`, `!tt.ptr<f16>`, `tensor<128x64xf32>`, `!ttg.memdesc<2x64x64xf16, #ttg.nvmma_shared<...>, mutable>`, `!ttg.async.token`,
  /// `tensor<128x!tt.ptr<f32>>`; a layout prints as `tensor<128xf32, #...>`.
  std::string str() const;

private:
  friend struct TypeContext;
  Type() = default;
  Kind kind_ = Kind::Scalar;
  DType dtype_ = DType::I32;
  int addrSpace_ = 1;
  const Type *elem_ = nullptr;
  std::vector<int64_t> shape_;
  const Layout *layout_ = nullptr;
  bool mutable_ = false;
  bool multiBuffered_ = false;
};

} // namespace tritium
