// --inline: replaces every tt.call by the callee's body.
//
// Outline:
//  1. Depth-first over the call graph from each function: before inlining
//     the calls of f, finish every callee (so a callee's body is call-free
//     when it is copied, and each function is processed once).
//  2. Meeting a function that is still on the DFS stack means recursion: a
//     UserError at the call, which @jit cannot compile.
//  3. Inlining clones the callee's entry block before the call with the
//     parameters mapped to the call's operands; the values of the callee's
//     tt.return replace the call's results. Cloned ops keep the callee's
//     locations, so errors and dumps point into the callee's source.
// Callees that are no longer called are left to --dce.
#include "tritium/transforms/passes.h"
#include "tritium/transforms/rewrite.h"

#include <unordered_map>

namespace tritium {
namespace {

class Inliner {
public:
  Inliner(Module &m, PassStats &stats) : module_(m), stats_(stats) {}

  void process(Function *f) {
    State &s = state_[f];
    if (s == State::Done)
      return;
    s = State::Visiting;
    std::vector<Operation *> calls;
    walkOps(f->body(), [&](Operation *op) {
      if (op->code() == OpCode::Call)
        calls.push_back(op);
    });
    for (Operation *call : calls) {
      Function *callee = calleeOf(call);
      if (state_[callee] == State::Visiting)
        throw UserError("recursive @jit call: '" + callee->name() +
                            "' calls itself (directly or through other "
                            "functions)",
                        call->loc());
      process(callee);
      inlineCall(*f, call, *callee);
    }
    state_[f] = State::Done;
  }

private:
  enum class State { Unvisited, Visiting, Done };

  Function *calleeOf(Operation *call) {
    auto it = call->attrs().find("callee");
    const std::string *name =
        it == call->attrs().end() ? nullptr : std::get_if<std::string>(&it->second);
    if (!name)
      throw InternalError("inline: tt.call without a callee attribute");
    Function *callee = module_.lookup(*name);
    if (!callee)
      throw InternalError("inline: call to unknown function @" + *name);
    return callee;
  }

  void inlineCall(Function &caller, Operation *call, Function &callee) {
    Block &body = callee.entry();
    Operation *ret = body.terminator();
    if (!ret || ret->code() != OpCode::Return)
      throw InternalError("inline: @" + callee.name() +
                          " does not end with tt.return");
    if (call->numOperands() != body.numArguments() ||
        call->numResults() != ret->numOperands())
      throw InternalError("inline: call to @" + callee.name() +
                          " does not match its signature");
    std::map<Value *, Value *> map;
    for (unsigned i = 0; i < body.numArguments(); ++i)
      map[body.argument(i)] = call->operand(i);
    Block *block = call->parentBlock();
    auto pos = block->find(call);
    for (auto &op : body.ops()) {
      if (op.get() == ret)
        break;
      block->insert(pos, op->clone(map));
    }
    for (unsigned i = 0; i < call->numResults(); ++i) {
      Value *v = ret->operand(i);
      auto it = map.find(v);
      replaceAllUsesWith(caller, call->result(i), it == map.end() ? v : it->second);
    }
    call->erase();
    stats_.add("inline.calls");
  }

  Module &module_;
  PassStats &stats_;
  std::unordered_map<Function *, State> state_;
};

} // namespace

void inlineCalls(Module &m, const PipelineOptions &, PassStats &stats) {
  Inliner inliner(m, stats);
  for (auto &f : m.functions())
    inliner.process(f.get());
}

} // namespace tritium
