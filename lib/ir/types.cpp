#include "tritium/ir/types.h"

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

namespace tritium {

// Interning table. Types are created once and never freed, so pointers stay
// valid for the life of the process and can be compared directly.
struct TypeContext {
  std::mutex mu;
  std::map<DType, std::unique_ptr<Type>> scalars;
  std::map<std::pair<const Type *, int>, std::unique_ptr<Type>> pointers;
  std::map<std::tuple<const Type *, std::vector<int64_t>, const Layout *>,
           std::unique_ptr<Type>>
      tensors;
  std::map<std::tuple<const Type *, std::vector<int64_t>, const Layout *, bool>,
           std::unique_ptr<Type>>
      memdescs;
  std::unique_ptr<Type> token;

  static TypeContext &get() {
    static TypeContext *ctx = new TypeContext(); // never destroyed
    return *ctx;
  }

  const Type *scalar(DType t) {
    std::lock_guard<std::mutex> g(mu);
    auto &slot = scalars[t];
    if (!slot) {
      slot.reset(new Type());
      slot->kind_ = Type::Kind::Scalar;
      slot->dtype_ = t;
    }
    return slot.get();
  }

  const Type *pointer(const Type *pointee, int as) {
    std::lock_guard<std::mutex> g(mu);
    auto &slot = pointers[{pointee, as}];
    if (!slot) {
      slot.reset(new Type());
      slot->kind_ = Type::Kind::Pointer;
      slot->elem_ = pointee;
      slot->addrSpace_ = as;
    }
    return slot.get();
  }

  const Type *tensor(const Type *elem, std::vector<int64_t> shape,
                     const Layout *layout) {
    std::lock_guard<std::mutex> g(mu);
    auto &slot = tensors[{elem, shape, layout}];
    if (!slot) {
      slot.reset(new Type());
      slot->kind_ = Type::Kind::Tensor;
      slot->elem_ = elem;
      slot->shape_ = std::move(shape);
      slot->layout_ = layout;
    }
    return slot.get();
  }

  const Type *memdesc(const Type *elem, std::vector<int64_t> shape,
                      const Layout *layout, bool isMutable) {
    std::lock_guard<std::mutex> g(mu);
    auto &slot = memdescs[{elem, shape, layout, isMutable}];
    if (!slot) {
      slot.reset(new Type());
      slot->kind_ = Type::Kind::MemDesc;
      slot->elem_ = elem;
      slot->multiBuffered_ =
          layout && layout->rank() >= 0 && (int)shape.size() == layout->rank() + 1;
      slot->shape_ = std::move(shape);
      slot->layout_ = layout;
      slot->mutable_ = isMutable;
    }
    return slot.get();
  }

  const Type *asyncToken() {
    std::lock_guard<std::mutex> g(mu);
    if (!token) {
      token.reset(new Type());
      token->kind_ = Type::Kind::Token;
    }
    return token.get();
  }
};

const Type *Type::scalar(DType t) { return TypeContext::get().scalar(t); }

const Type *Type::pointer(const Type *pointee, int addressSpace) {
  return TypeContext::get().pointer(pointee, addressSpace);
}

const Type *Type::tensor(const Type *element, std::vector<int64_t> shape,
                         const Layout *layout) {
  return TypeContext::get().tensor(element, std::move(shape), layout);
}

const Type *Type::memdesc(const Type *element, std::vector<int64_t> shape,
                          const Layout *layout, bool isMutable) {
  return TypeContext::get().memdesc(element, std::move(shape), layout,
                                    isMutable);
}

const Type *Type::asyncToken() { return TypeContext::get().asyncToken(); }

std::vector<int64_t> Type::bufferShape() const {
  if (!multiBuffered_)
    return shape_;
  return std::vector<int64_t>(shape_.begin() + 1, shape_.end());
}

int64_t Type::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape_)
    n *= d;
  return n;
}

const Type *Type::withElement(const Type *elem) const {
  if (!isTensor())
    return elem;
  return tensor(elem, shape_, layout_);
}

bool Type::isFloatLike() const {
  const Type *s = scalarType();
  return s->isScalar() && isFloat(s->dtype());
}

bool Type::isIntLike() const {
  const Type *s = scalarType();
  return s->isScalar() && isInteger(s->dtype());
}

std::string Type::str() const {
  switch (kind_) {
  case Kind::Scalar:
    return dtypeName(dtype_);
  case Kind::Pointer:
    if (addrSpace_ != 1)
      return "!tt.ptr<" + elem_->str() + ", " + std::to_string(addrSpace_) +
             ">";
    return "!tt.ptr<" + elem_->str() + ">";
  case Kind::Tensor: {
    std::string s = "tensor<";
    for (int64_t d : shape_)
      s += std::to_string(d) + "x";
    s += elem_->str();
    if (layout_)
      s += ", " + layout_->str();
    return s + ">";
  }
  case Kind::MemDesc: {
    std::string s = "!ttg.memdesc<";
    for (int64_t d : shape_)
      s += std::to_string(d) + "x";
    s += elem_->str();
    if (layout_)
      s += ", " + layout_->str();
    return s + (mutable_ ? ", mutable>" : ">");
  }
  case Kind::Token:
    return "!ttg.async.token";
  }
  return "<bad type>";
}

} // namespace tritium
