// Pointers and memory in the CPU executor: tt.addptr, loads, stores,
// atomics, and the int <-> pointer casts.
//
// Every unmasked access is checked against the kernel argument its pointer
// derives from (bounds and alignment to the element size); masked-off lanes
// never touch memory. Memory holds the dtype's own representation (fp16 as
// IEEE half bits, i1 as one byte 0/1). Atomics hold one process-wide mutex of
// the run for the whole op, so they are atomic with respect to each other
// (not to plain stores of other programs, as on a GPU).
#include "exec_internal.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>

namespace tritium::exec {

uint64_t ptrFromAddress(const RunState &run, uint64_t addr) {
  // Prefer an argument that holds the address; an address one past the end
  // belongs to the argument it ends.
  for (int pass = 0; pass < 2; ++pass)
    for (size_t i = 0; i < run.args.size(); ++i) {
      const ArgInfo &a = run.args[i];
      if (!a.isPointer || addr < a.base - a.before)
        continue;
      if (addr < a.base) // below the view, in its storage
        return makePtr(run.pointers, i, -int64_t(a.base - addr));
      if (addr - a.base < a.bytes || (pass == 1 && addr - a.base == a.bytes))
        return makePtr(run.pointers, i, addr - a.base);
    }
  return makePtr(run.pointers, kNoProvenance, addr);
}

namespace {

std::string argDescription(const RunState &run, uint64_t prov) {
  const ArgInfo &a = run.args[prov];
  std::ostringstream os;
  os << "argument ";
  if (!a.name.empty())
    os << "'" << a.name << "'";
  else
    os << prov;
  DType pd = a.pointee->dtype();
  int sz = byteSize(pd);
  os << " (";
  if (a.bytes % sz == 0)
    os << a.bytes / sz << " elements of " << dtypeName(pd);
  else
    os << a.bytes << " bytes";
  if (a.before) // a view: its storage begins earlier
    os << ", and " << a.before / sz << " before its first in its storage";
  os << ")";
  return os.str();
}

/// Checks one access of `size` bytes through pointer slot `p` and returns the
/// host address. `what` is "load", "store" or "atomic".
struct Checker {
  const ProgramCtx &ctx;
  const OpPlan &op;
  const char *what;
  int size;

  uint8_t *operator()(uint64_t p) const {
    PtrParts pp = ptrParts(ctx.run->pointers, p);
    uint64_t prov = pp.prov;
    const std::vector<ArgInfo> &args = ctx.run->args;
    if (prov >= args.size() || !args[prov].isPointer)
      fail(p);
    const ArgInfo &a = args[prov];
    int64_t off = pp.signedOff();
    if (off < -int64_t(a.before) ||
        (off >= 0 && uint64_t(off) + uint64_t(size) > a.bytes) ||
        ((a.base + uint64_t(off)) & uint64_t(size - 1)) != 0) // size: 2^k
      fail(p);
    return reinterpret_cast<uint8_t *>(a.base + uint64_t(off));
  }

  [[noreturn]] void fail(uint64_t p) const {
    const RunState &run = *ctx.run;
    PtrParts pp = ptrParts(run.pointers, p);
    uint64_t prov = pp.prov;
    int64_t off = pp.signedOff();
    std::ostringstream os;
    if (prov >= run.args.size() || !run.args[prov].isPointer) {
      os << "address 0x" << std::hex << uint64_t(off) << std::dec
         << " does not derive from a pointer argument (memory a kernel reaches through "
            "addresses it reads, such as a table of pointers, must be declared to the CPU "
            "executor: `with tritium.executor_memory(*tensors):` around the launch)";
      execError(ctx, op, std::string("invalid ") + what, os.str());
    }
    const ArgInfo &a = run.args[prov];
    bool inBounds = off >= -int64_t(a.before) &&
                    (off < 0 || uint64_t(off) + uint64_t(size) <= a.bytes);
    if (off % size == 0)
      os << "element offset " << off / size;
    else
      os << "byte offset " << off;
    os << " of " << argDescription(run, prov);
    if (inBounds) {
      os << " is not aligned to " << size << " bytes";
      execError(ctx, op, std::string("misaligned ") + what, os.str());
    }
    execError(ctx, op, std::string("out-of-bounds ") + what, os.str());
  }
};

Slot readElem(const uint8_t *p, DType t) {
  Slot s{};
  switch (t) {
  case DType::I1:
    s.i = *p != 0;
    break;
  case DType::I8:
    s.i = int8_t(*p);
    break;
  case DType::U8:
    s.i = *p;
    break;
  case DType::I16: {
    int16_t v;
    std::memcpy(&v, p, 2);
    s.i = v;
    break;
  }
  case DType::U16: {
    uint16_t v;
    std::memcpy(&v, p, 2);
    s.i = v;
    break;
  }
  case DType::I32: {
    int32_t v;
    std::memcpy(&v, p, 4);
    s.i = v;
    break;
  }
  case DType::U32: {
    uint32_t v;
    std::memcpy(&v, p, 4);
    s.i = v;
    break;
  }
  case DType::I64:
  case DType::U64:
    std::memcpy(&s.i, p, 8);
    break;
  case DType::FP32: {
    float v;
    std::memcpy(&v, p, 4);
    s.f = v;
    break;
  }
  case DType::FP64:
    std::memcpy(&s.f, p, 8);
    break;
  case DType::FP16:
  case DType::BF16: {
    uint16_t v;
    std::memcpy(&v, p, 2);
    s.f = decodeFloat(v, t);
    break;
  }
  case DType::FP8E4NV:
  case DType::FP8E5:
  case DType::FP8E4B15:
  case DType::FP8E4B8:
  case DType::FP8E5B16:
    s.f = decodeFloat(*p, t);
    break;
  }
  return s;
}

void writeElem(uint8_t *p, Slot s, DType t) {
  switch (t) {
  case DType::I1:
    *p = (s.i & 1) ? 1 : 0;
    break;
  case DType::I8:
  case DType::U8:
    *p = uint8_t(s.u);
    break;
  case DType::I16:
  case DType::U16: {
    uint16_t v = uint16_t(s.u);
    std::memcpy(p, &v, 2);
    break;
  }
  case DType::I32:
  case DType::U32: {
    uint32_t v = uint32_t(s.u);
    std::memcpy(p, &v, 4);
    break;
  }
  case DType::I64:
  case DType::U64:
    std::memcpy(p, &s.u, 8);
    break;
  case DType::FP32: {
    float v = float(s.f);
    std::memcpy(p, &v, 4);
    break;
  }
  case DType::FP64:
    std::memcpy(p, &s.f, 8);
    break;
  case DType::FP16:
  case DType::BF16: {
    uint16_t v = uint16_t(encodeFloat(s.f, t));
    std::memcpy(p, &v, 2);
    break;
  }
  case DType::FP8E4NV:
  case DType::FP8E5:
  case DType::FP8E4B15:
  case DType::FP8E4B8:
  case DType::FP8E5B16:
    *p = uint8_t(encodeFloat(s.f, t));
    break;
  }
}

uint64_t rawBits(const uint8_t *p, int size) {
  uint64_t v = 0;
  std::memcpy(&v, p, size); // little-endian host
  return v;
}

/// Pointee dtype of a pointer-typed value.
DType pointeeDType(const RValue &ptr) {
  return ptr.type()->scalarType()->pointee()->dtype();
}

/// Lane i of an optional operand that may be a scalar broadcast.
struct Lanes {
  const Slot *d = nullptr;
  int64_t stride = 0;
  Lanes() = default;
  explicit Lanes(const RValue &v)
      : d(v.data()), stride(v.size() == 1 ? 0 : 1) {}
  const Slot &operator[](int64_t i) const { return d[i * stride]; }
  explicit operator bool() const { return d != nullptr; }
};

} // namespace

RValue loadThrough(const OpPlan &op, const RValue &ptr, const RValue *maskV,
                   const RValue *otherV, const Type *type,
                   const ProgramCtx &ctx) {
  DType dt = pointeeDType(ptr);
  Checker check{ctx, op, "load", byteSize(dt)};
  RValue r = RValue::alloc(type);
  Lanes mask = maskV ? Lanes(*maskV) : Lanes();
  Lanes other = otherV ? Lanes(*otherV) : Lanes();
  const Slot *p = ptr.data();
  Slot *z = r.mutableData();
  int64_t n = r.size();
  if (!mask) {
    for (int64_t i = 0; i < n; ++i)
      z[i] = readElem(check(p[i].u), dt);
    return r;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (mask[i].i)
      z[i] = readElem(check(p[i].u), dt);
    else if (other)
      z[i] = other[i];
    else
      z[i].u = 0; // 0 and +0.0 share the bits
  }
  return r;
}

namespace {

RValue load(const OpPlan &op, Frame &f, const ProgramCtx &ctx) {
  return loadThrough(op, f[op.in[0]], op.in.size() > 1 ? &f[op.in[1]] : nullptr,
                     op.in.size() > 2 ? &f[op.in[2]] : nullptr,
                     op.op->result(0)->type(), ctx);
}

/// tt.descriptor_load: the block at the offsets, padding where any index
/// falls outside the tensor's shape (the expansion's masked load, element
/// for element: i32 indices, i64 products, addresses modulo 2^64).
} // namespace

/// Each element of the `block` whose base is operand `first` of `op` (shape,
/// strides and offsets follow it), row-major: visit(i, ptr) with its
/// address where every index is inside the shape, visit(i, nullopt) where not.
template <typename Visit>
void forEachDescriptorElement(const OpPlan &op, Frame &f, const ProgramCtx &ctx, unsigned first,
                              const std::vector<int64_t> &block, Visit visit) {
  const RValue &base = f[op.in[first]];
  uint64_t size = uint64_t(byteSize(pointeeDType(base)));
  size_t rank = block.size();
  std::vector<int64_t> shape(rank), stride(rank), off(rank);
  for (size_t d = 0; d < rank; ++d) {
    shape[d] = f[op.in[first + 1 + d]].data()[0].i;
    stride[d] = f[op.in[first + 1 + rank + d]].data()[0].i;
    off[d] = f[op.in[first + 1 + 2 * rank + d]].data()[0].i;
  }
  PointerTable &table = ctx.run->pointers;
  PtrParts pp = ptrParts(table, base.data()[0].u);
  int64_t n = 1;
  for (int64_t b : block)
    n *= b;
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    bool inside = true;
    uint64_t elems = 0;
    for (size_t d = 0; d < rank; ++d) {
      int32_t k = int32_t(uint32_t(off[d]) + uint32_t(idx[d])); // i32 add, wrapping
      inside = inside && k >= 0 && k < shape[d];
      elems += uint64_t(int64_t(k)) * uint64_t(stride[d]);
    }
    visit(i, inside ? std::optional<uint64_t>(makePtr(table, pp.prov, pp.off + elems * size))
                    : std::nullopt);
    for (size_t d = rank; d-- > 0;) // row-major: the last dim fastest
      if (++idx[d] < block[d])
        break;
      else
        idx[d] = 0;
  }
}

RValue descriptorBlock(const OpPlan &op, Frame &f, const ProgramCtx &ctx, unsigned first,
                       const Type *type) {
  DType dt = pointeeDType(f[op.in[first]]);
  Checker check{ctx, op, "load", byteSize(dt)};
  Slot pad{};
  if (op.op->strAttr("padding") == "nan")
    pad.f = std::numeric_limits<double>::quiet_NaN();
  RValue r = RValue::alloc(type);
  Slot *z = r.mutableData();
  forEachDescriptorElement(op, f, ctx, first, type->shape(),
                           [&](int64_t i, std::optional<uint64_t> p) {
                             z[i] = p ? readElem(check(*p), dt) : pad;
                           });
  return r;
}

void descriptorWrite(const OpPlan &op, Frame &f, const ProgramCtx &ctx, unsigned first,
                     const RValue &value) {
  Lanes val(value);
  DType dt = pointeeDType(f[op.in[first]]);
  Checker check{ctx, op, "store", byteSize(dt)};
  forEachDescriptorElement(op, f, ctx, first, value.type()->shape(),
                           [&](int64_t i, std::optional<uint64_t> p) {
                             if (p)
                               writeElem(check(*p), val[i], dt);
                           });
}

namespace {

/// tt.descriptor_store: descriptorBlock's addressing, written where inside.
void descriptorStore(const OpPlan &op, Frame &f, const ProgramCtx &ctx) {
  descriptorWrite(op, f, ctx, 1, f[op.in[0]]);
}

void store(const OpPlan &op, Frame &f, const ProgramCtx &ctx) {
  const RValue &ptr = f[op.in[0]];
  DType dt = pointeeDType(ptr);
  Checker check{ctx, op, "store", byteSize(dt)};
  Lanes val(f[op.in[1]]);
  Lanes mask = op.in.size() > 2 ? Lanes(f[op.in[2]]) : Lanes();
  const Slot *p = ptr.data();
  int64_t n = ptr.size();
  for (int64_t i = 0; i < n; ++i)
    if (!mask || mask[i].i)
      writeElem(check(p[i].u), val[i], dt);
}

Slot atomicCombine(AtomicKind k, DType dt, Slot old, Slot v) {
  if (isFloat(dt)) {
    double a = old.f, b = v.f, r = b;
    switch (k) {
    case AtomicKind::Add:
      r = a + b;
      break;
    case AtomicKind::Max:
    case AtomicKind::UMax:
      r = std::isnan(b) ? a : std::isnan(a) ? b : (b > a ? b : a);
      break;
    case AtomicKind::Min:
    case AtomicKind::UMin:
      r = std::isnan(b) ? a : std::isnan(a) ? b : (b < a ? b : a);
      break;
    default:
      break;
    }
    return Slot{.f = roundF(r, dt)};
  }
  IntFmt fmt = intFmt(dt);
  uint64_t a = old.u, b = v.u;
  int64_t r = int64_t(b);
  int w = fmt.width;
  switch (k) {
  case AtomicKind::Add:
    r = int64_t(a + b);
    break;
  case AtomicKind::Max:
    r = fmt.sgn ? std::max(int64_t(a), int64_t(b)) : int64_t(std::max(a, b));
    break;
  case AtomicKind::Min:
    r = fmt.sgn ? std::min(int64_t(a), int64_t(b)) : int64_t(std::min(a, b));
    break;
  case AtomicKind::UMax:
    r = zext(int64_t(a), w) >= zext(int64_t(b), w) ? int64_t(a) : int64_t(b);
    break;
  case AtomicKind::UMin:
    r = zext(int64_t(a), w) <= zext(int64_t(b), w) ? int64_t(a) : int64_t(b);
    break;
  case AtomicKind::And:
    r = int64_t(a & b);
    break;
  case AtomicKind::Or:
    r = int64_t(a | b);
    break;
  case AtomicKind::Xor:
    r = int64_t(a ^ b);
    break;
  case AtomicKind::Xchg:
    break;
  }
  return Slot{.i = fmt.norm(r)};
}

RValue atomicRMW(const OpPlan &op, Frame &f, const ProgramCtx &ctx) {
  const RValue &ptr = f[op.in[0]];
  DType dt = pointeeDType(ptr);
  Checker check{ctx, op, "atomic", byteSize(dt)};
  Lanes val(f[op.in[1]]);
  Lanes mask = op.in.size() > 2 ? Lanes(f[op.in[2]]) : Lanes();
  RValue r = RValue::alloc(op.op->result(0)->type());
  const Slot *p = ptr.data();
  Slot *z = r.mutableData();
  int64_t n = r.size();
  AtomicKind k = AtomicKind(op.kind);
  std::lock_guard<std::mutex> lock(ctx.run->atomicMutex);
  for (int64_t i = 0; i < n; ++i) {
    if (mask && !mask[i].i) {
      z[i].u = 0;
      continue;
    }
    uint8_t *addr = check(p[i].u);
    Slot old = readElem(addr, dt);
    writeElem(addr, atomicCombine(k, dt, old, val[i]), dt);
    z[i] = old;
  }
  return r;
}

RValue atomicCAS(const OpPlan &op, Frame &f, const ProgramCtx &ctx) {
  const RValue &ptr = f[op.in[0]];
  DType dt = pointeeDType(ptr);
  int size = byteSize(dt);
  Checker check{ctx, op, "atomic", size};
  Lanes cmp(f[op.in[1]]), val(f[op.in[2]]);
  RValue r = RValue::alloc(op.op->result(0)->type());
  const Slot *p = ptr.data();
  Slot *z = r.mutableData();
  std::lock_guard<std::mutex> lock(ctx.run->atomicMutex);
  for (int64_t i = 0, n = r.size(); i < n; ++i) {
    uint8_t *addr = check(p[i].u);
    z[i] = readElem(addr, dt);
    // Compare memory representations, so NaN payloads and -0 count.
    uint8_t want[8];
    writeElem(want, cmp[i], dt);
    if (rawBits(addr, size) == rawBits(want, size))
      writeElem(addr, val[i], dt);
  }
  return r;
}

/// The GPU's address arithmetic: the offset (sign- or zero-extended by its
/// dtype) times the element size, added modulo 2^64.
RValue addPtr(const OpPlan &op, Frame &f, const ProgramCtx &ctx) {
  const RValue &ptr = f[op.in[0]], &off = f[op.in[1]];
  uint64_t size = uint64_t(byteSize(pointeeDType(ptr)));
  RValue r = RValue::alloc(op.op->result(0)->type());
  const Slot *p = ptr.data(), *o = off.data();
  Slot *z = r.mutableData();
  PointerTable &table = ctx.run->pointers;
  for (int64_t i = 0, n = r.size(); i < n; ++i) {
    PtrParts pp = ptrParts(table, p[i].u);
    z[i].u = makePtr(table, pp.prov, pp.off + o[i].u * size);
  }
  return r;
}

} // namespace

void evalMemoryOp(const OpPlan &op, Frame &f, const ProgramCtx &ctx) {
  switch (op.code) {
  case OpCode::AddPtr:
    f[op.out[0]] = addPtr(op, f, ctx);
    return;
  case OpCode::Load:
    f[op.out[0]] = load(op, f, ctx);
    return;
  case OpCode::DescriptorLoad:
    f[op.out[0]] = descriptorBlock(op, f, ctx, 0, op.op->result(0)->type());
    return;
  case OpCode::Store:
    store(op, f, ctx);
    return;
  case OpCode::DescriptorStore:
    descriptorStore(op, f, ctx);
    return;
  case OpCode::AtomicRMW:
    f[op.out[0]] = atomicRMW(op, f, ctx);
    return;
  case OpCode::AtomicCAS:
    f[op.out[0]] = atomicCAS(op, f, ctx);
    return;
  case OpCode::IntToPtr:
  case OpCode::PtrToInt: {
    const RValue &a = f[op.in[0]];
    RValue r = RValue::alloc(op.op->result(0)->type());
    const Slot *x = a.data();
    Slot *z = r.mutableData();
    if (op.code == OpCode::IntToPtr) {
      int w = intFmt(elemDType(a.type())).width;
      for (int64_t i = 0, n = r.size(); i < n; ++i)
        z[i].u = ptrFromAddress(*ctx.run, zext(x[i].i, w));
    } else {
      IntFmt o = intFmt(elemDType(r.type()));
      for (int64_t i = 0, n = r.size(); i < n; ++i)
        z[i].i = o.norm(int64_t(ptrAddress(*ctx.run, x[i].u)));
    }
    f[op.out[0]] = std::move(r);
    return;
  }
  default:
    return;
  }
}

} // namespace tritium::exec
