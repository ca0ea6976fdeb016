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
};

/// The most elements a tensor type may have (the parser and the Python Type
/// constructors check it): element counts and byte sizes never overflow. The
/// frontend's own limit, Triton's, is far lower (2^20).
constexpr int64_t kMaxTensorElements = int64_t(1) << 31;

class Type {
public:
  enum class Kind : uint8_t { Scalar, Pointer, Tensor };

  static const Type *scalar(DType t);
  /// `!tt.ptr<pointee>`; pointee is a scalar type. addressSpace 1 = global.
  static const Type *pointer(const Type *pointee, int addressSpace = 1);
  /// `tensor<4x8xf32>`; element is a scalar or pointer type, every dim > 0.
  static const Type *tensor(const Type *element, std::vector<int64_t> shape,
                            const Layout *layout = nullptr);

  Kind kind() const { return kind_; }
  bool isScalar() const { return kind_ == Kind::Scalar; }
  bool isPointer() const { return kind_ == Kind::Pointer; }
  bool isTensor() const { return kind_ == Kind::Tensor; }

  /// Scalar kind only.
  DType dtype() const { return dtype_; }
  /// Pointer kind only.
  const Type *pointee() const { return elem_; }
  int addressSpace() const { return addrSpace_; }
  /// Tensor kind only.
  const Type *element() const { return elem_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  int rank() const { return (int)shape_.size(); }
  int64_t numElements() const;
  const Layout *layout() const { return layout_; }

  /// The element type of a tensor, the type itself otherwise.
  const Type *scalarType() const { return isTensor() ? elem_ : this; }
  /// Same shape (and layout) as this, with another element type; for a
  /// non-tensor type, returns `elem` itself.
  const Type *withElement(const Type *elem) const;
  /// True for a scalar (or tensor of) floating-point dtype.
  bool isFloatLike() const;
  bool isIntLike() const;
  bool isPointerLike() const { return scalarType()->isPointer(); }

  /// Text form: `i32`, `!tt.ptr<f16>`, `tensor<128x64xf32>`,
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
};

} // namespace tritium
