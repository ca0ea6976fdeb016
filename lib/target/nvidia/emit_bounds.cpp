// Bounds checks of global-memory accesses (GPUOptions::boundsCheck, the
// runtime's TRITIUM_DEBUG=1).
//
// 1. Provenance: the pointer operand of a load, store or atomic is walked
//    back to the kernel parameter it derives from, through the ops that
//    keep the base (addptr, splat, broadcast, expand_dims, reshape, trans,
//    convert_layout, pointer bitcasts) and through control flow (a loop's
//    carried pointer derives from P when its initial value and every value
//    yielded back do; an if's or select's result when every branch does).
//    Anything else (a pointer loaded from memory, made from an integer,
//    two parameters merged) is unknown: the access is not checked, and
//    counted in CompiledKernel::uncheckedAccesses.
// 2. Each checked access gets a site (kind, parameter, source location).
// 3. Per access instruction (a vector counts as one), in PTX:
//      off = addr - base(P);  ok = off < extent(P) && off + bytes <= extent(P)
//    (unsigned: an address below the base wraps to a huge offset). The
//    instruction runs under guard && ok, so a bad access is suppressed
//    (a load leaves `other` or zero). Where guard && !ok, the thread bumps
//    the record's count atomically; the one that saw 0 writes the site, the
//    program id, the byte count and the offset (BoundsRecordLayout).
// The extents and the record are hidden parameters after the user's; the
// launcher passes ~0 for an extent it does not know, which no offset fails.
#include "emitter.h"

#include <set>

namespace tritium::nvidia {

namespace {

constexpr int kUnknown = -1;
constexpr int kAnyParam = -2; // a cycle back to a value being resolved

int merge(int a, int b) {
  if (a == kAnyParam)
    return b;
  if (b == kAnyParam)
    return a;
  return a == b ? a : kUnknown;
}

class Provenance {
public:
  explicit Provenance(Function &f) : fn_(f) {}

  int of(Value *v) {
    int p = resolve(v);
    return p == kAnyParam ? kUnknown : p;
  }

private:
  Function &fn_;
  std::set<Value *> visiting_;

  int resolve(Value *v) {
    if (!v->type()->scalarType()->isPointer())
      return kUnknown;
    if (v->isBlockArg())
      return blockArgument(v);
    Operation *op = v->definingOp();
    if (!op)
      return kUnknown;
    // Data movement keeps each pointer's value, so its provenance too.
    if (op->hasTrait(MOVE))
      return resolve(op->operand(0));
    switch (op->code()) {
    case OpCode::AddPtr:
    case OpCode::Splat:
    case OpCode::Bitcast:
      return resolve(op->operand(0));
    case OpCode::Select:
      return merge(resolve(op->operand(1)), resolve(op->operand(2)));
    case OpCode::For:
      return resolve(op->region(0).front().argument(v->index() + 1));
    case OpCode::If: {
      int p = kAnyParam;
      for (unsigned r = 0; r < op->numRegions(); ++r) {
        if (op->region(r).empty())
          return kUnknown;
        Operation *y = op->region(r).front().terminator();
        if (!y || v->index() >= y->numOperands())
          return kUnknown;
        p = merge(p, resolve(y->operand(v->index())));
      }
      return p;
    }
    case OpCode::While: {
      Operation *cond = op->region(0).front().terminator();
      if (!cond || v->index() + 1 >= cond->numOperands())
        return kUnknown;
      return resolve(cond->operand(v->index() + 1));
    }
    default:
      return kUnknown;
    }
  }

  int blockArgument(Value *v) {
    Block *b = v->ownerBlock();
    Operation *parent = b->parentOp();
    if (!parent)
      return b == &fn_.entry() ? (int)v->index() : kUnknown;
    if (visiting_.count(v))
      return kAnyParam;
    visiting_.insert(v);
    int p = kUnknown;
    unsigned i = v->index();
    if (parent->code() == OpCode::For && i > 0) {
      Operation *y = b->terminator();
      if (y && i - 1 < y->numOperands() && 3 + i - 1 < parent->numOperands())
        p = merge(resolve(parent->operand(3 + i - 1)),
                  resolve(y->operand(i - 1)));
    } else if (parent->code() == OpCode::While) {
      Block &before = parent->region(0).front();
      Block &after = parent->region(1).front();
      if (b == &before) {
        Operation *y = after.terminator();
        if (y && i < y->numOperands() && i < parent->numOperands())
          p = merge(resolve(parent->operand(i)), resolve(y->operand(i)));
      } else {
        Operation *cond = before.terminator();
        if (cond && i + 1 < cond->numOperands())
          p = resolve(cond->operand(i + 1));
      }
    }
    visiting_.erase(v);
    return p;
  }
};

} // namespace

int Emitter::accessSite(const Operation &op, Value *ptr, const char *kind,
                        int elemBytes) {
  if (!opts.boundsCheck)
    return -1;
  int param = Provenance(fn).of(ptr);
  if (param < 0) {
    ++uncheckedAccesses;
    return -1;
  }
  AccessSite site;
  site.kind = kind;
  site.param = param;
  site.elemBytes = elemBytes;
  site.loc = op.loc();
  accessSites.push_back(site);
  return (int)accessSites.size() - 1;
}

std::string Emitter::extent(int param) {
  auto it = extents_.find(param);
  if (it != extents_.end())
    return it->second;
  std::string r = reg(RC::B64);
  pro("ld.param.u64 " + r + ", [" + fn.name() + "_extent_" +
      std::to_string(param) + "]");
  extents_[param] = r;
  return r;
}

std::string Emitter::boundsRecord() {
  if (record_.empty()) {
    record_ = reg(RC::B64);
    pro("ld.param.u64 " + record_ + ", [" + fn.name() + "_bounds_record]");
  }
  return record_;
}

std::string Emitter::checkAccess(int site, const std::string &addr, int bytes,
                                 const std::string &guard) {
  if (site < 0)
    return guard;
  const AccessSite &s = accessSites[site];
  std::string base = regs(fn.entry().argument(s.param))[0];
  std::string ext = extent(s.param);
  std::string off = reg(RC::B64), end = reg(RC::B64);
  ins("sub.s64 " + off + ", " + addr + ", " + base);
  ins("add.s64 " + end + ", " + off + ", " + std::to_string(bytes));
  std::string fits = reg(RC::Pred), ok = reg(RC::Pred);
  ins("setp.le.u64 " + fits + ", " + end + ", " + ext);
  ins("setp.lt.and.u64 " + ok + ", " + off + ", " + ext + ", " + fits);
  std::string bad = reg(RC::Pred), checked = ok;
  if (guard.empty()) {
    ins("not.pred " + bad + ", " + ok);
  } else {
    checked = reg(RC::Pred);
    ins("and.pred " + checked + ", " + guard + ", " + ok);
    std::string notOk = reg(RC::Pred);
    ins("not.pred " + notOk + ", " + ok);
    ins("and.pred " + bad + ", " + guard + ", " + notOk);
  }
  reportFailure(site, bad, bytes, off);
  return checked;
}

void Emitter::reportFailure(int site, const std::string &bad, int bytes,
                            const std::string &offset) {
  // Out of line of the fast path: only a failing thread enters, and only
  // the first in the grid writes.
  std::string done = newLabel("report_done");
  std::string rec = boundsRecord();
  using L = BoundsRecordLayout;
  auto field = [&](int at) {
    return "[" + rec + (at ? "+" + std::to_string(at) : "") + "]";
  };
  ins("@!" + bad + " bra " + done);
  std::string old = reg(RC::B32), first = reg(RC::Pred);
  ins("atom.global.add.u32 " + old + ", " + field(L::kCount) + ", 1");
  ins("setp.ne.u32 " + first + ", " + old + ", 0");
  ins("@" + first + " bra " + done);
  ins("st.global.u32 " + field(L::kSite) + ", " + std::to_string(site));
  const char *axes[] = {"x", "y", "z"};
  for (int a = 0; a < 3; ++a) {
    std::string pid = reg(RC::B32);
    ins("mov.u32 " + pid + ", %ctaid." + axes[a]);
    ins("st.global.u32 " + field(L::kPid + 4 * a) + ", " + pid);
  }
  ins("st.global.u32 " + field(L::kBytes) + ", " + std::to_string(bytes));
  ins("st.global.u64 " + field(L::kOffset) + ", " + offset);
  label(done);
}

void Emitter::boundsParams(std::vector<KernelParam> &hidden,
                           std::ostringstream &sig) {
  Block &entry = fn.entry();
  std::string sep = sig.str().empty() ? "" : ",\n";
  for (unsigned i = 0; i < entry.numArguments(); ++i) {
    Value *a = entry.argument(i);
    std::string what =
        a->nameHint.empty() ? "arg" + std::to_string(i) : a->nameHint;
    hidden.push_back({KernelParam::Kind::UInt64, "extent of " + what});
    sig << sep << "\t.param .u64 " << fn.name() << "_extent_" << i;
    sep = ",\n";
  }
  hidden.push_back({KernelParam::Kind::Pointer, "bounds record"});
  sig << sep << "\t.param .u64 " << fn.name() << "_bounds_record";
}

} // namespace tritium::nvidia
