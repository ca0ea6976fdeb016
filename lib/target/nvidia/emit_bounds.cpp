// Bounds checks of global-memory accesses (GPUOptions::boundsCheck, the
// runtime's TRITIUM_DEBUG=1).
//
// 1. Provenance (analysis/pointer_provenance.h): the pointer operand of a
//    load, store or atomic is walked back to the kernel parameters it may
//    derive from. When every path leads to one parameter P, the access is
//    checked against P; otherwise (a pointer loaded from memory, made from
//    an integer, two parameters merged) it is not, and is counted in
//    CompiledKernel::uncheckedAccesses.
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
#include "tritium/analysis/pointer_provenance.h"

namespace tritium::nvidia {

int Emitter::accessSite(const Operation &op, Value *ptr, const char *kind,
                        int elemBytes) {
  if (!opts.boundsCheck)
    return -1;
  int param = PointerProvenance(fn).of(ptr).single();
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
