// scf.for, scf.if and scf.while as PTX branches.
//
// Loop-carried values, block arguments and results get registers of their
// own; yields copy into them (all reads first, since a yield may permute
// the carried values). Conditions and bounds are scalars, the same in every
// thread of the CTA, so branches never diverge and barriers inside loops
// and branches are safe.
#include "emitter.h"

namespace tritium::nvidia {

namespace {

Regs freshRegs(Emitter &e, const Type *t) {
  Regs r;
  RC c = regClass(t->scalarType());
  for (int i = 0; i < Emitter::numRegs(t); ++i)
    r.push_back(e.reg(c));
  return r;
}

std::vector<Regs> operandRegs(Emitter &e, Operation *term, unsigned from) {
  std::vector<Regs> out;
  for (unsigned i = from; i < term->numOperands(); ++i)
    out.push_back(e.regs(term->operand(i)));
  return out;
}

std::vector<const Type *> typesOf(const std::vector<Value *> &vs) {
  std::vector<const Type *> t;
  for (Value *v : vs)
    t.push_back(v->type());
  return t;
}

void emitFor(Emitter &e, Operation &op) {
  Block &body = op.region(0).front();
  const Type *ivTy = op.operand(0)->type();
  DType it = ivTy->dtype();
  bool sgn = !isUnsigned(it);
  std::string ty = intType(it, sgn);
  std::string lb = e.regs(op.operand(0))[0], ub = e.regs(op.operand(1))[0],
              step = e.regs(op.operand(2))[0];
  RC ivc = regClass(ivTy);
  std::string iv = e.reg(ivc);
  e.ins(std::string(movFor(ivc)) + " " + iv + ", " + lb);
  std::vector<Regs> carried, inits;
  std::vector<Value *> args;
  for (unsigned i = 0; i < op.numResults(); ++i) {
    Value *a = body.argument(i + 1);
    args.push_back(a);
    carried.push_back(freshRegs(e, a->type()));
    inits.push_back(e.regs(op.operand(3 + i)));
  }
  // Only the registers something reads (demand.cpp): a loop-carried tensor
  // of pointers read once per vector carries one register per vector.
  auto live = [&](const std::vector<Regs> &regs) {
    std::vector<Regs> out(regs.size());
    for (size_t i = 0; i < regs.size(); ++i)
      for (size_t r = 0; r < regs[i].size(); ++r)
        if (e.demanded(args[i], (int)r))
          out[i].push_back(regs[i][r]);
    return out;
  };
  e.parallelCopy(live(carried), live(inits), typesOf(args));
  e.bind(body.argument(0), {iv});
  for (size_t i = 0; i < args.size(); ++i)
    e.bind(args[i], carried[i]);

  // Byte offsets scaled before the loop serve its body only: a use after
  // it may be on a path that never ran this preheader.
  auto scaledBefore = e.invariantScaled;
  hoistScaledOffsets(e, op);
  std::string top = e.newLabel("for_body"), end = e.newLabel("for_end");
  std::string p = e.reg(RC::Pred);
  e.ins("setp.ge." + ty + " " + p + ", " + iv + ", " + ub);
  e.ins("@" + p + " bra " + end);
  e.label(top);
  e.emitBlock(body);
  Operation *y = body.terminator();
  e.parallelCopy(live(carried), live(operandRegs(e, y, 0)), typesOf(args));
  e.ins("add." + ty + " " + iv + ", " + iv + ", " + step);
  std::string q = e.reg(RC::Pred);
  e.ins("setp.lt." + ty + " " + q + ", " + iv + ", " + ub);
  e.ins("@" + q + " bra " + top);
  e.label(end);
  e.invariantScaled = std::move(scaledBefore);
  for (unsigned i = 0; i < op.numResults(); ++i)
    e.bind(op.result(i), carried[i]);
}

void emitIf(Emitter &e, Operation &op) {
  std::string c = e.regs(op.operand(0))[0];
  std::vector<Regs> results;
  for (Value *r : op.results())
    results.push_back(freshRegs(e, r->type()));
  bool hasElse = op.numRegions() > 1 && !op.region(1).empty();
  std::string elseL = e.newLabel("if_else"), end = e.newLabel("if_end");
  e.ins("@!" + c + " bra " + (hasElse ? elseL : end));
  Block &thenB = op.region(0).front();
  e.emitBlock(thenB);
  if (op.numResults())
    e.parallelCopy(results, operandRegs(e, thenB.terminator(), 0),
                   typesOf(op.results()));
  if (hasElse) {
    e.ins("bra.uni " + end);
    e.label(elseL);
    Block &elseB = op.region(1).front();
    e.emitBlock(elseB);
    if (op.numResults())
      e.parallelCopy(results, operandRegs(e, elseB.terminator(), 0),
                     typesOf(op.results()));
  }
  e.label(end);
  for (unsigned i = 0; i < op.numResults(); ++i)
    e.bind(op.result(i), results[i]);
}

void emitWhile(Emitter &e, Operation &op) {
  Block &before = op.region(0).front(), &after = op.region(1).front();
  std::vector<Regs> bArgs, aArgs, inits;
  std::vector<Value *> bVals, aVals;
  for (unsigned i = 0; i < before.numArguments(); ++i) {
    Value *a = before.argument(i);
    bVals.push_back(a);
    bArgs.push_back(freshRegs(e, a->type()));
    inits.push_back(e.regs(op.operand(i)));
  }
  for (unsigned i = 0; i < after.numArguments(); ++i) {
    Value *a = after.argument(i);
    aVals.push_back(a);
    aArgs.push_back(freshRegs(e, a->type()));
  }
  e.parallelCopy(bArgs, inits, typesOf(bVals));
  for (size_t i = 0; i < bVals.size(); ++i)
    e.bind(bVals[i], bArgs[i]);
  for (size_t i = 0; i < aVals.size(); ++i)
    e.bind(aVals[i], aArgs[i]);
  std::string top = e.newLabel("while_before"), end = e.newLabel("while_end");
  e.label(top);
  e.emitBlock(before);
  Operation *cond = before.terminator();
  e.parallelCopy(aArgs, operandRegs(e, cond, 1), typesOf(aVals));
  e.ins("@!" + e.regs(cond->operand(0))[0] + " bra " + end);
  e.emitBlock(after);
  e.parallelCopy(bArgs, operandRegs(e, after.terminator(), 0), typesOf(bVals));
  e.ins("bra.uni " + top);
  e.label(end);
  for (unsigned i = 0; i < op.numResults(); ++i)
    e.bind(op.result(i), aArgs[i]);
}

} // namespace

bool emitControlFlow(Emitter &e, Operation &op) {
  switch (op.code()) {
  case OpCode::For:
    emitFor(e, op);
    return true;
  case OpCode::If:
    emitIf(e, op);
    return true;
  case OpCode::While:
    emitWhile(e, op);
    return true;
  default:
    return false;
  }
}

} // namespace tritium::nvidia
