// --check-const-pointers: a store or atomic through a pointer made from a
// kernel argument annotated `tl.const` (arg attribute tt.const) is the
// user's mistake, reported at the store with Triton's wording.
//
// Runs after --inline, so a pointer handed to a @jit helper is the
// kernel's own value by then. Which arguments a pointer may be made from is
// analysis/pointer_provenance.h's answer (the base-keeping ops, both arms of
// tl.where, loop and if control flow); any tl.const one among them is an
// error. A pointer loaded from memory or made from an integer is not the
// annotation's business.
#include "tritium/analysis/pointer_provenance.h"
#include "tritium/transforms/passes.h"

namespace tritium {

namespace {

bool isConstArg(const Function &fn, unsigned i) {
  const auto &attrs = fn.argAttrs();
  if (i >= attrs.size())
    return false;
  auto it = attrs[i].find("tt.const");
  const bool *c = it == attrs[i].end() ? nullptr : std::get_if<bool>(&it->second);
  return c && *c;
}

} // namespace

void checkConstPointers(Module &m, const PipelineOptions &, PassStats &stats) {
  for (auto &fn : m.functions()) {
    PointerProvenance provenance(*fn);
    std::vector<Operation *> writes;
    fn->walk([&](Operation *op) {
      if (op->code() == OpCode::Store || op->code() == OpCode::AtomicRMW ||
          op->code() == OpCode::AtomicCAS)
        writes.push_back(op);
    });
    for (Operation *op : writes)
      for (unsigned arg : provenance.of(op->operand(0)).args)
        if (isConstArg(*fn, arg))
          throw UserError(
              std::string("Cannot store to a constant pointer: ") +
                  (op->code() == OpCode::Store ? "tl.store" : "an atomic") +
                  " writes through a pointer made from an argument annotated "
                  "tl.const",
              op->loc());
    stats.add("check-const-pointers.writes", (int64_t)writes.size());
  }
}

} // namespace tritium
