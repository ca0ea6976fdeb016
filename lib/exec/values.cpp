// Runtime values of the CPU executor: storage, dtype facts, error messages
// and element formatting.
#include "exec_internal.h"

#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <sstream>

namespace tritium::exec {

IntFmt intFmt(DType t) {
  IntFmt f;
  f.width = isInteger(t) ? bitWidth(t) : 64;
  f.sgn = isSigned(t);
  return f;
}

int byteSize(DType t) {
  int w = bitWidth(t);
  return w < 8 ? 1 : w / 8;
}

RValue RValue::alloc(const Type *t) {
  RValue r;
  r.type_ = t;
  r.n_ = numElems(t);
  if (r.n_ > 1)
    r.buf_ = std::make_shared_for_overwrite<Slot[]>(size_t(r.n_));
  return r;
}

std::string locStr(const Location &loc) {
  if (!loc.known())
    return "unknown location";
  std::string s = loc.file.empty() ? "<unknown>" : loc.file;
  s += ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
  return s;
}

void execError(const ProgramCtx &ctx, const OpPlan &op, const std::string &what,
               const std::string &detail) {
  std::ostringstream os;
  os << what << " in kernel '" << ctx.run->kernel << "' at "
     << locStr(op.op->loc());
  if (!detail.empty())
    os << ": " << detail;
  os << ", program id (" << ctx.pid[0] << ", " << ctx.pid[1] << ", "
     << ctx.pid[2] << ")";
  throw ExecutionError(os.str(), op.op->loc());
}

uint64_t PointerTable::intern(uint64_t prov, uint64_t off) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  auto [it, fresh] = index_.try_emplace({prov, off}, entries_.size());
  if (fresh) {
    if (entries_.size() >= kMaxEntries) {
      index_.erase(it);
      throw ExecutionError(
          "the kernel made more than " + std::to_string(kMaxEntries) +
              " distinct pointers at 2^47 bytes or more from their base, "
              "more than the CPU executor keeps",
          {});
    }
    entries_.push_back({prov, off});
  }
  return it->second;
}

uint64_t ptrAddress(const RunState &run, uint64_t s) {
  PtrParts p = ptrParts(run.pointers, s);
  if (p.prov < run.args.size() && run.args[p.prov].isPointer)
    return run.args[p.prov].base + p.off;
  return p.off;
}

std::string formatElement(const RunState &run, const Type *elemType, Slot s,
                          bool hex) {
  char buf[64];
  if (elemType->isPointer()) {
    std::snprintf(buf, sizeof buf, "0x%" PRIx64, ptrAddress(run, s.u));
    return buf;
  }
  DType t = elemType->dtype();
  if (isInteger(t)) {
    if (hex) {
      std::snprintf(buf, sizeof buf, "0x%" PRIx64, zext(s.i, bitWidth(t)));
    } else if (isSigned(t)) {
      std::snprintf(buf, sizeof buf, "%" PRId64, s.i);
    } else {
      std::snprintf(buf, sizeof buf, "%" PRIu64, s.u);
    }
    return buf;
  }
  if (hex) {
    std::snprintf(buf, sizeof buf, "0x%" PRIx64, encodeFloat(s.f, t));
    return buf;
  }
  // Shortest text that reads back as the same value of the dtype.
  std::to_chars_result r;
  if (t == DType::FP64)
    r = std::to_chars(buf, buf + sizeof buf, s.f);
  else
    r = std::to_chars(buf, buf + sizeof buf, float(s.f));
  return std::string(buf, r.ptr);
}

} // namespace tritium::exec
