// The CPU executor's driver: binds kernel arguments, spreads the grid's
// programs over a pool of threads, and interprets each program's ops
// (structured control flow, calls, tt.print and tt.assert here; the other ops
// in arith.cpp, tensor_ops.cpp and memory.cpp).
//
// scf.for runs while iv < ub (signed or unsigned per the iv's type) and stops
// rather than wrap at the type's width; a non-positive step on a loop that
// would run is an ExecutionError (it would never end).
#include "exec_internal.h"
#include "tritium/ir/verifier.h"

#include <cstdio>
#include <exception>
#include <sstream>
#include <thread>

namespace tritium {
namespace exec {
namespace {

/// Thrown inside a program when another program failed first.
struct Cancelled {};

constexpr int kMaxCallDepth = 128;

enum class OpClass { Arith, Tensor, Memory, Shared, Control, Rejected, None };

/// Which evaluator runs an op (the interpreter dispatches on this). None: the
/// executor has no semantics for it; executorSupport() reports that, and the
/// op-coverage unit test fails for it.
OpClass classify(OpCode c) {
  unsigned traits = opInfo(c).traits;
  if (traits & (IBIN | FBIN | MATH1))
    return OpClass::Arith;
  if (traits & MOVE)
    return OpClass::Tensor;
  switch (c) {
  case OpCode::CmpI:
  case OpCode::CmpF:
  case OpCode::NegF:
  case OpCode::Select:
  case OpCode::Fma:
  case OpCode::ExtSI:
  case OpCode::ExtUI:
  case OpCode::TruncI:
  case OpCode::SIToFP:
  case OpCode::UIToFP:
  case OpCode::FPToSI:
  case OpCode::FPToUI:
  case OpCode::ExtF:
  case OpCode::TruncF:
  case OpCode::Bitcast:
    return OpClass::Arith;
  case OpCode::Constant:
  case OpCode::GetProgramId:
  case OpCode::GetNumPrograms:
  case OpCode::MakeRange:
  case OpCode::Splat:
  case OpCode::Reduce:
  case OpCode::Dot:
    return OpClass::Tensor;
  case OpCode::AddPtr:
  case OpCode::Load:
  case OpCode::DescriptorLoad:
  case OpCode::DescriptorStore:
  case OpCode::Store:
  case OpCode::AtomicRMW:
  case OpCode::AtomicCAS:
  case OpCode::IntToPtr:
  case OpCode::PtrToInt:
    return OpClass::Memory;
  case OpCode::LocalAlloc:
  case OpCode::LocalDealloc:
  case OpCode::LocalLoad:
  case OpCode::LocalStore:
  case OpCode::MemDescIndex:
  case OpCode::MemDescTrans:
  case OpCode::AsyncCopyGlobalToLocal:
  case OpCode::AsyncCommitGroup:
  case OpCode::AsyncWait:
  case OpCode::InitBarrier:
  case OpCode::InvalBarrier:
  case OpCode::AsyncTMACopyGlobalToLocal:
  case OpCode::AsyncTMACopyLocalToGlobal:
  case OpCode::FenceAsyncShared:
  case OpCode::BarrierExpect:
  case OpCode::ArriveBarrier:
  case OpCode::WaitBarrier:
  case OpCode::GPUBarrier:
  case OpCode::WarpGroupDot:
    return OpClass::Shared;
  case OpCode::Call:
  case OpCode::Return:
  case OpCode::For:
  case OpCode::If:
  case OpCode::While:
  case OpCode::Condition:
  case OpCode::Yield:
  case OpCode::ReduceCombine:
  case OpCode::Scan:
  case OpCode::CombineReturn:
  case OpCode::Print:
  case OpCode::Assert:
    return OpClass::Control;
  case OpCode::InlineAsm:
    return OpClass::Rejected; // PTX text: the planner refuses the kernel
  default:
    return OpClass::None;
  }
}

std::string pidStr(const std::array<int64_t, 3> &pid) {
  return "(" + std::to_string(pid[0]) + ", " + std::to_string(pid[1]) + ", " +
         std::to_string(pid[2]) + ")";
}

/// "(i, j)" for flat index `flat` of `shape`.
std::string indexStr(const std::vector<int64_t> &shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (int d = int(shape.size()) - 1; d >= 0; --d) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  std::string s = "(";
  for (size_t d = 0; d < idx.size(); ++d)
    s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + ")";
}

class Interpreter {
public:
  explicit Interpreter(ProgramCtx &ctx) : ctx_(ctx) {}

  void runFunction(const FunctionPlan &fp, const std::vector<RValue> &args,
                   std::vector<RValue> &results) {
    Frame frame(fp.numSlots);
    for (size_t i = 0; i < args.size(); ++i)
      frame[fp.body.args[i]] = args[i];
    results.clear();
    runBlock(fp.body, frame, results);
  }

private:
  ProgramCtx &ctx_;

  /// Runs the ops of `b` up to its terminator. Returns true when a tt.return
  /// ran (its values are in `ret`); otherwise the parent reads the
  /// terminator's operands from the frame.
  bool runBlock(const BlockPlan &b, Frame &f, std::vector<RValue> &ret) {
    for (const OpPlan &op : b.ops) {
      switch (op.code) {
      case OpCode::Yield:
      case OpCode::Condition:
      case OpCode::CombineReturn:
        return false;
      case OpCode::Return:
        ret.clear();
        for (int s : op.in)
          ret.push_back(f[s]);
        return true;
      default:
        break;
      }
      switch (classify(op.code)) {
      case OpClass::Arith:
        evalArith(op, f, ctx_);
        break;
      case OpClass::Tensor:
        evalTensorOp(op, f, ctx_);
        break;
      case OpClass::Memory:
        evalMemoryOp(op, f, ctx_);
        break;
      case OpClass::Shared:
        evalSharedMemoryOp(op, f, ctx_);
        break;
      case OpClass::Control:
        if (runControl(op, f, ret))
          return true;
        break;
      case OpClass::Rejected:
      case OpClass::None:
        throw InternalError(std::string("executor: no semantics for '") +
                            opInfo(op.code).name + "'");
      }
      for (int s : op.freeAfter)
        f[s] = RValue();
    }
    return false;
  }

  void checkCancelled() {
    if (ctx_.run->stop.load(std::memory_order_relaxed))
      throw Cancelled{};
  }

  bool runControl(const OpPlan &op, Frame &f, std::vector<RValue> &ret) {
    switch (op.code) {
    case OpCode::For:
      return runFor(op, f, ret);
    case OpCode::If: {
      const BlockPlan &b = op.regions[f[op.in[0]][0].i ? 0 : 1];
      if (!b.present)
        return false;
      if (runBlock(b, f, ret))
        return true;
      const OpPlan &y = b.ops.back();
      for (size_t j = 0; j < op.out.size(); ++j)
        f[op.out[j]] = f[y.in[j]];
      return false;
    }
    case OpCode::While:
      return runWhile(op, f, ret);
    case OpCode::ReduceCombine:
    case OpCode::Scan:
      runCombineOp(op, f);
      return false;
    case OpCode::Call: {
      if (ctx_.callDepth >= kMaxCallDepth)
        execError(ctx_, op, "call depth limit exceeded",
                  "more than " + std::to_string(kMaxCallDepth) +
                      " nested calls");
      std::vector<RValue> args, results;
      for (int s : op.in)
        args.push_back(f[s]);
      ++ctx_.callDepth;
      runFunction(*op.callee, args, results);
      --ctx_.callDepth;
      if (results.size() != op.out.size())
        execError(ctx_, op, "bad call",
                  "the callee returned " + std::to_string(results.size()) +
                      " values");
      for (size_t j = 0; j < op.out.size(); ++j)
        f[op.out[j]] = std::move(results[j]);
      return false;
    }
    case OpCode::Print:
      print(op, f);
      return false;
    case OpCode::Assert:
      assertTrue(op, f);
      return false;
    default:
      return false;
    }
  }

  bool runFor(const OpPlan &op, Frame &f, std::vector<RValue> &ret) {
    const Type *ivType = op.op->operand(0)->type();
    IntFmt fmt = intFmt(ivType->dtype());
    int64_t lb = f[op.in[0]][0].i, ub = f[op.in[1]][0].i,
            step = f[op.in[2]][0].i;
    auto below = [&](int64_t iv) {
      return fmt.sgn ? iv < ub : uint64_t(iv) < uint64_t(ub);
    };
    std::vector<RValue> iters;
    for (size_t j = 3; j < op.in.size(); ++j)
      iters.push_back(f[op.in[j]]);
    if (below(lb) && step <= 0 && (fmt.sgn || step == 0))
      execError(ctx_, op, "endless loop",
                "scf.for from " + std::to_string(lb) + " to " +
                    std::to_string(ub) + " with step " + std::to_string(step));
    const BlockPlan &body = op.regions[0];
    const OpPlan &y = body.ops.back();
    for (int64_t iv = lb; below(iv);) {
      checkCancelled();
      f[body.args[0]] = RValue::scalar(ivType, Slot{.i = iv});
      for (size_t j = 0; j < iters.size(); ++j)
        f[body.args[j + 1]] = std::move(iters[j]);
      if (runBlock(body, f, ret))
        return true;
      for (size_t j = 0; j < iters.size(); ++j)
        iters[j] = f[y.in[j]];
      int64_t next;
      bool overflow =
          fmt.sgn ? __builtin_add_overflow(iv, step, &next)
                  : __builtin_add_overflow(uint64_t(iv), uint64_t(step),
                                           reinterpret_cast<uint64_t *>(&next));
      if (overflow || (fmt.width < 64 && fmt.norm(next) != next))
        break; // past the type's range: past ub too
      iv = next;
    }
    for (size_t j = 0; j < op.out.size(); ++j)
      f[op.out[j]] = std::move(iters[j]);
    return false;
  }

  /// tt.scan / tt.reduce_combine: along each line of the axis, the combine
  /// region runs once per element on scalars, in order (from the end for a
  /// reverse scan); a reduction keeps the last accumulator.
  void runCombineOp(const OpPlan &op, Frame &f) {
    size_t n = op.in.size();
    const BlockPlan &body = op.regions[0];
    const OpPlan &y = body.ops.back();
    const std::vector<int64_t> &shape = op.op->operand(0)->type()->shape();
    int axis = (int)op.op->intAttr("axis");
    bool scan = op.code == OpCode::Scan;
    bool reverse = scan && op.op->boolAttr("reverse");
    int64_t len = shape[axis], inner = 1, outer = 1;
    for (size_t d = 0; d < shape.size(); ++d)
      if ((int)d < axis)
        outer *= shape[d];
      else if ((int)d > axis)
        inner *= shape[d];
    std::vector<const Type *> elems;
    std::vector<RValue> ins, outs;
    for (size_t i = 0; i < n; ++i) {
      ins.push_back(f[op.in[i]]);
      elems.push_back(ins[i].type()->element());
      outs.push_back(RValue::alloc(op.op->result((unsigned)i)->type()));
    }
    std::vector<Slot> acc(n);
    std::vector<RValue> unused;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        for (int64_t k = 0; k < len; ++k) {
          int64_t along = reverse ? len - 1 - k : k;
          int64_t flat = (o * len + along) * inner + in;
          if (k == 0) {
            for (size_t i = 0; i < n; ++i)
              acc[i] = ins[i][flat];
          } else {
            for (size_t i = 0; i < n; ++i) {
              f[body.args[i]] = RValue::scalar(elems[i], acc[i]);
              f[body.args[n + i]] = RValue::scalar(elems[i], ins[i][flat]);
            }
            runBlock(body, f, unused);
            for (size_t i = 0; i < n; ++i)
              acc[i] = f[y.in[i]][0];
          }
          if (scan)
            for (size_t i = 0; i < n; ++i)
              outs[i].mutableData()[flat] = acc[i];
        }
        if (!scan)
          for (size_t i = 0; i < n; ++i)
            outs[i].mutableData()[o * inner + in] = acc[i];
      }
    for (size_t i = 0; i < n; ++i)
      f[op.out[i]] = std::move(outs[i]);
  }

  bool runWhile(const OpPlan &op, Frame &f, std::vector<RValue> &ret) {
    const BlockPlan &before = op.regions[0], &after = op.regions[1];
    const OpPlan &cond = before.ops.back(), &y = after.ops.back();
    std::vector<RValue> cur;
    for (int s : op.in)
      cur.push_back(f[s]);
    while (true) {
      checkCancelled();
      for (size_t j = 0; j < cur.size(); ++j)
        f[before.args[j]] = std::move(cur[j]);
      if (runBlock(before, f, ret))
        return true;
      bool go = f[cond.in[0]][0].i != 0;
      if (!go) {
        for (size_t j = 0; j < op.out.size(); ++j)
          f[op.out[j]] = f[cond.in[j + 1]];
        return false;
      }
      for (size_t j = 0; j < after.args.size(); ++j)
        f[after.args[j]] = f[cond.in[j + 1]];
      if (runBlock(after, f, ret))
        return true;
      cur.clear();
      for (int s : y.in)
        cur.push_back(f[s]);
    }
  }

  void print(const OpPlan &op, Frame &f) {
    std::string prefix = op.text;
    if (!prefix.empty() && prefix.back() != ' ')
      prefix += ' ';
    std::string pid = "pid " + pidStr(ctx_.pid);
    std::string out;
    if (op.in.empty())
      out += pid + " " + op.text + "\n";
    for (size_t k = 0; k < op.in.size(); ++k) {
      const RValue &v = f[op.in[k]];
      const Type *et = v.type()->scalarType();
      std::string operand =
          op.in.size() > 1 ? "(operand " + std::to_string(k) + ") " : "";
      for (int64_t i = 0; i < v.size(); ++i) {
        out += pid;
        if (v.type()->isTensor())
          out += " idx " + indexStr(v.type()->shape(), i);
        out += " " + prefix + operand +
               formatElement(*ctx_.run, et, v[i], op.hex) + "\n";
      }
    }
    std::lock_guard<std::mutex> lock(ctx_.run->printMutex);
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
  }

  void assertTrue(const OpPlan &op, Frame &f) {
    const RValue &c = f[op.in[0]];
    bool isFloatCond = !isPtrElem(c.type()) && isFloat(elemDType(c.type()));
    for (int64_t i = 0; i < c.size(); ++i) {
      bool ok = isFloatCond ? c[i].f != 0 : c[i].i != 0;
      if (ok)
        continue;
      std::string detail = op.text.empty() ? "assertion" : op.text;
      if (c.type()->isTensor())
        detail += " (element " + indexStr(c.type()->shape(), i) + ")";
      execError(ctx_, op, "device assertion failed", detail);
    }
  }
};

[[noreturn]] void argError(const std::string &kernel, const Function &fn,
                           const std::string &msg) {
  throw ExecutionError("kernel '" + kernel + "': " + msg, fn.loc());
}

std::string argName(const Function &fn, unsigned i) {
  const std::string &hint = fn.arg(i)->nameHint;
  return "argument " + std::to_string(i) +
         (hint.empty() ? std::string() : " ('" + hint + "')");
}

const char *kindName(const ExecArg &a) {
  switch (a.index()) {
  case 0:
    return "a pointer";
  case 1:
    return "an integer";
  case 2:
    return "a float";
  default:
    return "a bool";
  }
}

/// Checks each argument against its parameter; fills `run.args` (pointer
/// extents) and `values` (the entry block's argument values).
void bindArgs(const Function &fn, const std::vector<ExecArg> &args,
              RunState &run, std::vector<RValue> &values) {
  const std::string &k = run.kernel;
  if (args.size() != fn.numArgs())
    argError(k, fn,
             "expects " + std::to_string(fn.numArgs()) + " arguments, got " +
                 std::to_string(args.size()));
  if (args.size() >= kWidePtr) // provenances are below the tags
    argError(k, fn, "too many arguments");
  for (unsigned i = 0; i < fn.numArgs(); ++i) {
    const Type *t = fn.arg(i)->type();
    const ExecArg &a = args[i];
    ArgInfo info;
    info.name = fn.arg(i)->nameHint;
    auto wrong = [&](const char *needs) {
      argError(k, fn,
               argName(fn, i) + " has type " + t->str() + " and needs " +
                   needs + ", got " + kindName(a));
    };
    if (t->isTensor())
      argError(k, fn,
               argName(fn, i) + " has tensor type " + t->str() +
                   "; kernels take pointers and scalars");
    Slot s;
    if (t->isPointer()) {
      const ExecPointer *p = std::get_if<ExecPointer>(&a);
      if (!p)
        wrong("a pointer");
      info.isPointer = true;
      info.base = p->base;
      info.bytes = p->bytes;
      info.before = p->before;
      info.pointee = t->pointee();
      s.u = makePtr(run.pointers, i, 0);
    } else if (t->dtype() == DType::I1) {
      const bool *b = std::get_if<bool>(&a);
      if (!b)
        wrong("a bool");
      s.i = *b;
    } else if (isInteger(t->dtype())) {
      const int64_t *v = std::get_if<int64_t>(&a);
      if (!v)
        wrong("an integer");
      s.i = intFmt(t->dtype()).norm(*v);
    } else {
      const double *v = std::get_if<double>(&a);
      if (!v)
        wrong("a float");
      s.f = roundF(*v, t->dtype());
    }
    run.args.push_back(std::move(info));
    values.push_back(RValue::scalar(t, s));
  }
}

} // namespace
} // namespace exec

OpSupport executorSupport(OpCode code) {
  switch (exec::classify(code)) {
  case exec::OpClass::None:
    return OpSupport::Missing;
  case exec::OpClass::Rejected:
    return OpSupport::Rejected;
  default:
    return OpSupport::Handled;
  }
}

void execute(const Module &m, const std::string &kernel,
             std::array<int64_t, 3> grid, const std::vector<ExecArg> &args,
             const ExecOptions &opts) {
  using namespace exec;
  const Function *fn = m.lookup(kernel);
  if (!fn)
    throw ExecutionError("no kernel named '" + kernel + "' in the module", {});
  for (int d = 0; d < 3; ++d)
    if (grid[d] < 0 || grid[d] > (int64_t(1) << 31))
      throw ExecutionError(
          "kernel '" + kernel + "': grid dimension " + std::to_string(d) +
              " is " + std::to_string(grid[d]) + " (must be in [0, 2^31])",
          fn->loc());
  // The planner and the evaluators rely on verified IR (arity, attributes,
  // types); every way into the executor passes here.
  verify(m);
  RunState run;
  ModulePlan mp;
  mp.pointers = &run.pointers;
  const FunctionPlan *plan = planFunction(mp, m, *fn);

  run.kernel = kernel;
  run.grid = grid;
  std::vector<RValue> argValues;
  bindArgs(*fn, args, run, argValues);
  // Declared memory joins the arguments as provenances that no parameter
  // holds: tt.int_to_ptr finds them by address, like an argument's memory.
  if (run.args.size() + opts.extraMemory.size() >= kWidePtr)
    throw ExecutionError("kernel '" + kernel + "': too many memory regions", fn->loc());
  for (size_t i = 0; i < opts.extraMemory.size(); ++i) {
    ArgInfo info;
    info.isPointer = true;
    info.base = opts.extraMemory[i].base;
    info.bytes = opts.extraMemory[i].bytes;
    info.before = opts.extraMemory[i].before;
    info.pointee = Type::scalar(DType::I8);
    info.name = "declared memory " + std::to_string(i);
    run.args.push_back(std::move(info));
  }

  int64_t total;
  if (__builtin_mul_overflow(grid[0], grid[1], &total) ||
      __builtin_mul_overflow(total, grid[2], &total))
    throw ExecutionError("kernel '" + kernel +
                             "': the grid has too many "
                             "programs",
                         fn->loc());
  if (total == 0)
    return;
  int64_t threads = opts.numThreads > 0
                        ? opts.numThreads
                        : int64_t(std::thread::hardware_concurrency());
  threads = std::max<int64_t>(1, std::min(threads, total));

  std::atomic<int64_t> next{0};
  std::mutex errMutex;
  std::exception_ptr firstError;
  auto worker = [&] {
    while (!run.stop.load(std::memory_order_relaxed)) {
      int64_t idx = next.fetch_add(1, std::memory_order_relaxed);
      if (idx >= total)
        return;
      ProgramCtx ctx;
      ctx.run = &run;
      ctx.pid = {idx % grid[0], (idx / grid[0]) % grid[1],
                 idx / (grid[0] * grid[1])};
      try {
        Interpreter interp(ctx);
        std::vector<RValue> results;
        interp.runFunction(*plan, argValues, results);
      } catch (const Cancelled &) {
        return;
      } catch (...) {
        std::lock_guard<std::mutex> lock(errMutex);
        if (!firstError)
          firstError = std::current_exception();
        run.stop.store(true);
        return;
      }
    }
  };
  std::vector<std::thread> pool;
  try {
    for (int64_t t = 1; t < threads; ++t)
      pool.emplace_back(worker);
  } catch (...) {
    // Could not start more threads: run with those we have.
  }
  worker();
  for (auto &t : pool)
    t.join();
  if (firstError)
    std::rethrow_exception(firstError);
}

} // namespace tritium
