// --cse: common-subexpression elimination of pure ops.
//
// Outline:
//  1. Walk each function in program order with a stack of scopes, one per
//     block being visited; a scope maps an op's key (code, operands, result
//     types, attributes) to the first op with that key in the block.
//  2. An op whose key is in its block's scope or any enclosing one is
//     dominated by that op: record the replacement of its results.
//     Blocks of sibling regions (then/else, before/after) never see each
//     other's ops because their scopes are popped when the block ends.
//  3. Apply the replacements and erase the duplicates, users first.
// --cse-loops does the same for ops nested in a loop only (both the op and
// the one it is merged with): the GPU compile runs it after the layout
// passes, where a duplicate in a loop body costs every iteration, while
// merging straight-line code (an epilogue's offsets) only moved ptxas's
// schedule (the tutorial matmul 1 % slower at 128x128x64 on 4 warps, H100).
#include "tritium/transforms/passes.h"
#include "tritium/transforms/rewrite.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

namespace tritium {
namespace {

template <typename T> void appendRaw(std::string &s, const T &v) {
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));
  s.append(buf, sizeof(T));
}

void appendAttr(std::string &s, const Attribute &a) {
  s.push_back((char)a.index());
  if (auto *b = std::get_if<bool>(&a))
    s.push_back(*b ? 1 : 0);
  else if (auto *i = std::get_if<int64_t>(&a))
    appendRaw(s, *i);
  else if (auto *d = std::get_if<double>(&a))
    appendRaw(s, *d); // bit pattern: 0.0 and -0.0 differ, NaN equals NaN
  else if (auto *str = std::get_if<std::string>(&a)) {
    appendRaw(s, str->size());
    s += *str;
  } else if (auto *v = std::get_if<std::vector<int64_t>>(&a)) {
    appendRaw(s, v->size());
    for (int64_t x : *v)
      appendRaw(s, x);
  }
}

/// Identical keys <=> the ops compute the same values.
std::string keyOf(const Operation *op) {
  std::string key;
  appendRaw(key, op->code());
  std::vector<Value *> operands = op->operands();
  if (op->hasTrait(COMM) && operands.size() == 2 && operands[1] < operands[0])
    std::swap(operands[0], operands[1]);
  appendRaw(key, operands.size());
  for (Value *v : operands)
    appendRaw(key, v);
  appendRaw(key, op->numResults());
  for (unsigned i = 0; i < op->numResults(); ++i)
    appendRaw(key, op->result(i)->type());
  for (const auto &[name, value] : op->attrs()) {
    appendRaw(key, name.size());
    key += name;
    appendAttr(key, value);
  }
  return key;
}

class CSE {
public:
  /// loopsOnly: merge only ops nested in a loop with each other (cse-loops).
  explicit CSE(bool loopsOnly = false) : loopsOnly_(loopsOnly) {}

  void run(Function &f, PassStats &stats) {
    visitRegion(f.body());
    rep_.applyTo(f);
    stats.add("cse.removed", eraseOps(f, duplicates_));
  }

private:
  void visitRegion(Region &r) {
    for (auto &b : r.blocks())
      visitBlock(*b);
  }

  void visitBlock(Block &b) {
    scopes_.emplace_back();
    for (auto &owned : b.ops()) {
      Operation *op = owned.get();
      rep_.remapOperands(op);
      if (op->numRegions() != 0) {
        bool loop = op->code() == OpCode::For || op->code() == OpCode::While;
        loopDepth_ += loop;
        for (unsigned i = 0; i < op->numRegions(); ++i)
          visitRegion(op->region(i));
        loopDepth_ -= loop;
        continue;
      }
      if (!op->hasTrait(PURE) || op->numResults() == 0 || (loopsOnly_ && loopDepth_ == 0))
        continue;
      std::string key = keyOf(op);
      if (Operation *existing = lookup(key)) {
        for (unsigned i = 0; i < op->numResults(); ++i)
          rep_.replace(op->result(i), existing->result(i));
        duplicates_.insert(op);
      } else {
        scopes_.back().emplace(std::move(key), op);
      }
    }
    scopes_.pop_back();
  }

  Operation *lookup(const std::string &key) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(key);
      if (found != it->end())
        return found->second;
    }
    return nullptr;
  }

  bool loopsOnly_;
  int loopDepth_ = 0;
  std::vector<std::unordered_map<std::string, Operation *>> scopes_;
  ValueReplacer rep_;
  std::unordered_set<Operation *> duplicates_;
};

} // namespace

void cse(Module &m, const PipelineOptions &, PassStats &stats) {
  for (auto &f : m.functions())
    CSE().run(*f, stats);
}

void cseLoops(Module &m, const PipelineOptions &, PassStats &stats) {
  for (auto &f : m.functions())
    CSE(true).run(*f, stats);
}

} // namespace tritium
