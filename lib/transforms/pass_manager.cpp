// runPasses: runs passes by name, verifying after each (see pass.h).
#include "tritium/ir/verifier.h"
#include "tritium/transforms/pass.h"

#include <algorithm>

namespace tritium {
namespace {

std::string describe(const IRError &e) {
  std::string msg = e.what();
  if (e.loc.known())
    msg += " (at " + e.loc.str() + ")";
  return msg;
}

bool wantsDump(const PipelineOptions &opts, const std::string &pass) {
  return std::find(opts.printAfter.begin(), opts.printAfter.end(), pass) !=
             opts.printAfter.end() ||
         std::find(opts.printAfter.begin(), opts.printAfter.end(), "all") !=
             opts.printAfter.end();
}

} // namespace

const PassInfo *lookupPass(const PassTable &table, const std::string &name) {
  for (const PassInfo &p : table)
    if (p.name == name)
      return &p;
  return nullptr;
}

void runPasses(Module &m, const std::vector<std::string> &passes,
               PassStats &stats, const PipelineOptions &opts,
               const PassTable &table) {
  // Unknown names fail before any pass has changed the module.
  std::vector<const PassInfo *> infos;
  for (const std::string &name : passes) {
    const PassInfo *p = lookupPass(table, name);
    if (!p)
      throw InternalError("unknown pass '" + name + "'");
    infos.push_back(p);
  }
  for (const PassInfo *p : infos) {
    if (opts.skips(p->name))
      continue;
    try {
      p->run(m, opts, stats);
    } catch (const UserError &) {
      throw;
    } catch (const IRError &e) {
      throw InternalError("pass '" + p->name + "' failed: " + describe(e));
    } catch (const std::exception &e) {
      throw InternalError("pass '" + p->name + "' failed: " + e.what());
    }
    if (opts.verifyEach) {
      try {
        verify(m);
      } catch (const IRError &e) {
        throw InternalError("pass '" + p->name +
                            "' produced invalid IR: " + describe(e));
      }
    }
    if (opts.dump && wantsDump(opts, p->name))
      opts.dump(p->name, m);
  }
}

} // namespace tritium
