// tt.print, tt.assert and tt.elementwise_inline_asm on the GPU.
//
// tt.print: one vprintf call per element, by the thread that owns it (the
//   first of its copies; a scalar by thread 0), with the line the CPU
//   executor prints: `pid (x, y, z) idx (i, j) <prefix> <value>`. The
//   format of each operand is a .global byte array; the arguments (the
//   program id, the coordinates, the value) go into a .local buffer whose
//   generic address is vprintf's second parameter. Integers print with
//   %d/%u/%lld/%llu, pointers as 0x%llx, floats (fp8, fp16 and bf16 widened)
//   as doubles with %g; hex=True prints the bits, zero-extended, as 0x%x.
// tt.assert: checked only in a debug build (GPUOptions::boundsCheck), as
//   Triton checks asserts only with debug on; elsewhere it prints nothing.
//   A false element (owner threads only) is reported in the bounds record
//   (Emitter::reportFailure) with an "assert" site and its row-major index;
//   the thread goes on, so the launch ends normally and the host raises.
// tt.elementwise_inline_asm: per group of `pack` registers of the thread,
//   the operands are packed into registers of the constraint letters'
//   classes (tritium/ir/inline_asm.h), the text is copied inside `{ }` with
//   $i replaced by register names, and the outputs are unpacked into the
//   results' registers. A last group the thread's registers do not fill is
//   padded with zeros and its extra outputs dropped.
#include "emitter.h"

#include "tritium/ir/inline_asm.h"

#include <cctype>

namespace tritium::nvidia {

namespace {

constexpr const char *kPrintBuffer = "tritium_print_args";

int64_t dotWith(const gpu::Basis &c, const std::vector<int64_t> &w) {
  int64_t s = 0;
  for (size_t d = 0; d < c.size() && d < w.size(); ++d)
    s += c[d] * w[d];
  return s;
}

/// Whether register r of a tensor repeats a lower register (a zero
/// register basis among its bits): the thread holds that element twice.
bool duplicateRegister(const gpu::LinearLayout &ll, int r) {
  for (size_t b = 0; b < ll.reg().size(); ++b)
    if ((r >> b) & 1) {
      const gpu::Basis &basis = ll.reg()[b];
      if (std::all_of(basis.begin(), basis.end(),
                      [](int64_t x) { return x == 0; }))
        return true;
    }
  return false;
}

/// Value of linear function w at register r of this thread (a .b32).
std::string linearAt(Emitter &e, const Type *t, const std::vector<int64_t> &w,
                     int r) {
  const gpu::LinearLayout &ll = gpu::linearOf(t);
  auto [thr, imm] = e.threadLinearAt(t, w, dotWith(ll.regCoord(r), w));
  if (imm == 0)
    return thr;
  std::string v = e.reg(RC::B32);
  e.ins("add.s32 " + v + ", " + thr + ", " + std::to_string(imm));
  return v;
}

// ---- tt.print --------------------------------------------------------------

/// The printf conversion of one element.
std::string valueFormat(const Type *elem, bool hex) {
  if (elem->isPointer())
    return "0x%llx";
  DType t = elem->dtype();
  bool wide = bitWidth(t) == 64;
  if (hex)
    return wide ? "0x%llx" : "0x%x";
  if (isFloat(t))
    return "%g";
  if (wide)
    return isSigned(t) ? "%lld" : "%llu";
  return isSigned(t) ? "%d" : "%u";
}

/// One argument in vprintf's buffer: a register and its store type.
struct PrintArg {
  std::string reg;
  const char *type; // "u32", "u64", "f64"
};

/// Element register r (of type elem) as the argument valueFormat expects.
PrintArg printValue(Emitter &e, const Operation &op, const Type *elem,
                    const std::string &r, bool hex) {
  if (elem->isPointer())
    return {r, "u64"};
  DType t = elem->dtype();
  int bits = bitWidth(t);
  if (t == DType::I1) {
    std::string w = e.reg(RC::B32);
    e.ins("selp.u32 " + w + ", 1, 0, " + r);
    return {w, "u32"};
  }
  if (bits == 64) {
    if (t != DType::FP64)
      return {r, "u64"};
    if (!hex)
      return {r, "f64"};
    std::string w = e.reg(RC::B64);
    e.ins("mov.b64 " + w + ", " + r);
    return {w, "u64"};
  }
  if (isFloat(t) && !hex) {
    std::string f = t == DType::FP32 ? r : toF32(e, op, t, r);
    std::string d = e.reg(RC::F64);
    e.ins("cvt.f64.f32 " + d + ", " + f);
    return {d, "f64"};
  }
  std::string w = e.reg(RC::B32);
  if (bits == 32) {
    e.ins("mov.b32 " + w + ", " + r);
  } else {
    // 8- and 16-bit values sit in 16-bit registers (8-bit ints extended
    // per their signedness, fp8 in the low byte).
    bool sext = isInteger(t) && isSigned(t) && !hex;
    e.ins(std::string(sext ? "cvt.s32.s16 " : "cvt.u32.u16 ") + w + ", " + r);
    if (bits == 8 && !sext) {
      std::string m = e.reg(RC::B32);
      e.ins("and.b32 " + m + ", " + w + ", 255");
      w = m;
    }
  }
  return {w, "u32"};
}

/// `s` as printf's literal text.
std::string escapePercent(const std::string &s) {
  std::string out;
  for (char c : s) {
    out += c;
    if (c == '%')
      out += '%';
  }
  return out;
}

/// The .global holding format string i (named after the kernel, so that
/// several kernels' PTX may share a module).
std::string formatName(const Emitter &e, size_t i) {
  return e.fn.name() + "_fmt_" + std::to_string(i);
}

/// A new format string; returns the register holding its generic address.
std::string formatString(Emitter &e, const std::string &text) {
  std::string name = formatName(e, e.formatStrings.size());
  e.formatStrings.push_back(text);
  std::string g = e.reg(RC::B64), a = e.reg(RC::B64);
  e.ins("mov.u64 " + g + ", " + name);
  e.ins("cvta.global.u64 " + a + ", " + g);
  return a;
}

/// Stores the arguments in the buffer (each aligned to its size, as C's
/// varargs are) and calls vprintf.
void callVprintf(Emitter &e, const std::string &fmt,
                 const std::vector<PrintArg> &args) {
  int offset = 0;
  for (const PrintArg &a : args) {
    int bytes = std::string(a.type) == "u32" ? 4 : 8;
    offset = (offset + bytes - 1) / bytes * bytes;
    e.ins(std::string("st.local.") + a.type + " [" + kPrintBuffer +
          (offset ? "+" + std::to_string(offset) : std::string()) + "], " +
          a.reg);
    offset += bytes;
  }
  e.printBufferBytes = std::max(e.printBufferBytes, offset);
  if (e.printBufferAddress.empty()) {
    std::string buf = e.reg(RC::B64);
    e.printBufferAddress = e.reg(RC::B64);
    e.pro("mov.u64 " + buf + ", " + kPrintBuffer);
    e.pro("cvta.local.u64 " + e.printBufferAddress + ", " + buf);
  }
  const std::string &gen = e.printBufferAddress;
  e.verbatim("\t{\n");
  e.ins(".param .b64 vprintf_fmt");
  e.ins("st.param.b64 [vprintf_fmt], " + fmt);
  e.ins(".param .b64 vprintf_args");
  e.ins("st.param.b64 [vprintf_args], " + gen);
  e.ins(".param .b32 vprintf_ret");
  e.ins("call (vprintf_ret), vprintf, (vprintf_fmt, vprintf_args)");
  e.verbatim("\t}\n");
}

void emitPrint(Emitter &e, Operation &op) {
  std::string text = op.hasAttr("prefix") ? op.strAttr("prefix") : "";
  bool hex = op.hasAttr("hex") && op.boolAttr("hex");
  std::vector<PrintArg> pid;
  const char *axes[] = {"x", "y", "z"};
  for (const char *a : axes) {
    std::string r = e.reg(RC::B32);
    e.ins(std::string("mov.u32 ") + r + ", %ctaid." + a);
    pid.push_back({r, "u32"});
  }
  const std::string pidFmt = "pid (%u, %u, %u)";
  if (op.numOperands() == 0) {
    std::string skip = e.newLabel("print_skip");
    e.ins("@!" + e.ownerPred(Type::scalar(DType::I32)) + " bra " + skip);
    callVprintf(e, formatString(e, pidFmt + " " + escapePercent(text) + "\n"),
                pid);
    e.label(skip);
    return;
  }
  std::string prefix = text;
  if (!prefix.empty() && prefix.back() != ' ')
    prefix += ' ';
  for (unsigned k = 0; k < op.numOperands(); ++k) {
    Value *v = op.operand(k);
    const Type *t = v->type();
    const Type *elem = t->scalarType();
    std::string head = pidFmt;
    if (t->isTensor()) {
      head += " idx (";
      for (int d = 0; d < t->rank(); ++d)
        head += d ? ", %d" : "%d";
      head += ")";
    }
    head += " " + escapePercent(prefix);
    if (op.numOperands() > 1)
      head += "(operand " + std::to_string(k) + ") ";
    std::string fmt = formatString(e, head + valueFormat(elem, hex) + "\n");
    std::string owner = e.ownerPred(t);
    const Regs &rs = e.regs(v);
    for (int r = 0; r < (int)rs.size(); ++r) {
      if (t->isTensor() && duplicateRegister(gpu::linearOf(t), r))
        continue;
      std::string skip = owner.empty() ? "" : e.newLabel("print_skip");
      if (!owner.empty())
        e.ins("@!" + owner + " bra " + skip);
      std::vector<PrintArg> args = pid;
      if (t->isTensor())
        for (int d = 0; d < t->rank(); ++d) {
          std::vector<int64_t> unit(t->rank(), 0);
          unit[d] = 1;
          args.push_back({linearAt(e, t, unit, r), "u32"});
        }
      args.push_back(printValue(e, op, elem, rs[r], hex));
      callVprintf(e, fmt, args);
      if (!skip.empty())
        e.label(skip);
    }
  }
}

// ---- tt.assert -------------------------------------------------------------

void emitAssert(Emitter &e, Operation &op) {
  if (!e.opts.boundsCheck)
    return; // removed outside debug builds, as Triton does
  Value *c = op.operand(0);
  const Type *t = c->type();
  AccessSite site;
  site.kind = "assert";
  site.loc = op.loc();
  site.message = op.hasAttr("message") ? op.strAttr("message") : "";
  if (t->isTensor())
    site.shape = t->shape();
  e.accessSites.push_back(site);
  int index = (int)e.accessSites.size() - 1;
  std::string owner = e.ownerPred(t);
  std::vector<int64_t> strides;
  if (t->isTensor())
    strides = gpu::rowMajorStrides(t->shape());
  const Regs &rs = e.regs(c);
  for (int r = 0; r < (int)rs.size(); ++r) {
    if (t->isTensor() && duplicateRegister(gpu::linearOf(t), r))
      continue;
    std::string bad = e.reg(RC::Pred);
    e.ins("not.pred " + bad + ", " + rs[r]);
    if (!owner.empty()) {
      std::string b = e.reg(RC::Pred);
      e.ins("and.pred " + b + ", " + bad + ", " + owner);
      bad = b;
    }
    std::string at = e.reg(RC::B64);
    if (t->isTensor())
      e.ins("cvt.u64.u32 " + at + ", " + linearAt(e, t, strides, r));
    else
      e.ins("mov.u64 " + at + ", 0");
    e.reportFailure(index, bad, 0, at);
  }
}

// ---- tt.elementwise_inline_asm -------------------------------------------

RC letterClass(char c) {
  switch (c) {
  case 'b':
    return RC::Pred;
  case 'c':
  case 'h':
    return RC::B16;
  case 'f':
    return RC::F32;
  case 'l':
    return RC::B64;
  case 'd':
    return RC::F64;
  default:
    return RC::B32;
  }
}

/// `r` (class `from`) in a register of class `to` of the same width.
std::string moveTo(Emitter &e, const std::string &r, RC from, RC to) {
  if (from == to)
    return r;
  std::string d = e.reg(to);
  e.ins("mov." + bitType(to) + " " + d + ", " + r);
  return d;
}

/// `elems` 8-bit values (in 16-bit registers) in one 16-bit register.
std::string packBytes16(Emitter &e, const Regs &elems) {
  std::string lo = e.reg(RC::B16), hi = e.reg(RC::B16), w = e.reg(RC::B16);
  e.ins("and.b16 " + lo + ", " + elems[0] + ", 255");
  e.ins("shl.b16 " + hi + ", " + elems[1] + ", 8");
  e.ins("or.b16 " + w + ", " + lo + ", " + hi);
  return w;
}

/// The inputs of one asm operand: elements first..first+o.elems of the
/// call starting at register `base` (zeros past the thread's registers).
std::string packInput(Emitter &e, const InlineAsmOperand &o, const Type *elem,
                      const Regs &src, int base) {
  RC cls = regClass(elem);
  Regs elems;
  for (int j = 0; j < o.elems; ++j) {
    int i = base + o.firstElem + j;
    if (i < (int)src.size()) {
      elems.push_back(src[i]);
      continue;
    }
    std::string z = e.reg(cls);
    e.ins(std::string(movFor(cls)) + " " + z + ", " +
          (cls == RC::Pred ? "0" : cls == RC::F32 ? "0f00000000"
                                : cls == RC::F64 ? "0d0000000000000000"
                                                 : "0"));
    elems.push_back(z);
  }
  RC want = letterClass(o.letter);
  if (o.elems == 1)
    return moveTo(e, elems[0], cls, want);
  if (o.bits == 16)
    return packBytes16(e, elems);
  int64_t eb = o.bits / 8 / o.elems;
  return moveTo(e, packWord(e, elems, eb), RC::B32, want);
}

/// Result registers from one output register of the asm.
Regs unpackOutput(Emitter &e, const InlineAsmOperand &o, const Type *elem,
                  const std::string &r) {
  RC cls = regClass(elem);
  DType t = elem->isPointer() ? DType::U64 : elem->dtype();
  bool signedByte = isInteger(t) && isSigned(t);
  if (o.elems == 1) {
    std::string v = moveTo(e, r, letterClass(o.letter), cls);
    return {elem->isPointer() ? v : normalizeInt(e, t, v)};
  }
  if (o.bits == 16) {
    std::string lo = e.reg(RC::B16), hi = e.reg(RC::B16);
    e.ins("and.b16 " + lo + ", " + r + ", 255");
    e.ins("shr.u16 " + hi + ", " + r + ", 8");
    return {normalizeInt(e, t, lo), normalizeInt(e, t, hi)};
  }
  std::string w = moveTo(e, r, letterClass(o.letter), RC::B32);
  Regs out = unpackWord(e, w, o.bits / 8 / o.elems, signedByte);
  out.resize(o.elems);
  return out;
}

/// The asm text with $i replaced by names[i].
std::string substitute(Emitter &e, const Operation &op,
                       const std::string &asmText,
                       const std::vector<std::string> &names) {
  std::string out;
  for (size_t i = 0; i < asmText.size(); ++i) {
    char c = asmText[i];
    if (c != '$' || i + 1 >= asmText.size() ||
        !std::isdigit((unsigned char)asmText[i + 1])) {
      out += c;
      continue;
    }
    size_t j = i + 1;
    size_t n = 0;
    while (j < asmText.size() && std::isdigit((unsigned char)asmText[j]))
      n = n * 10 + (asmText[j++] - '0');
    if (n >= names.size())
      e.userError(op, "tl.inline_asm_elementwise: the asm names $" +
                          std::to_string(n) + ", but its constraints give " +
                          std::to_string(names.size()) + " operand(s)");
    out += names[n];
    i = j - 1;
  }
  return out;
}

void emitInlineAsm(Emitter &e, Operation &op) {
  std::vector<const Type *> resultElems, argElems;
  for (Value *r : op.results())
    resultElems.push_back(r->type()->scalarType());
  for (Value *a : op.operands())
    argElems.push_back(a->type()->scalarType());
  int pack = (int)op.intAttr("pack");
  std::vector<InlineAsmOperand> operands;
  std::string why = inlineAsmOperands(op.strAttr("constraints"), resultElems,
                                      argElems, pack, operands);
  if (!why.empty())
    e.internalError(op, "was not verified: " + why);
  int n = Emitter::numRegs(op.result(0)->type());
  for (Value *a : op.operands())
    if (Emitter::numRegs(a->type()) != n)
      e.internalError(op, "has operands in another layout than its results");
  std::vector<Regs> results(op.numResults());
  for (int base = 0; base < n; base += pack) {
    std::vector<std::string> names(operands.size());
    for (size_t i = 0; i < operands.size(); ++i) {
      const InlineAsmOperand &o = operands[i];
      if (o.output)
        names[i] = e.reg(letterClass(o.letter));
      else
        names[i] = packInput(e, o, argElems[o.value],
                             e.regs(op.operand(o.value)), base);
    }
    e.verbatim("\t{\n" + substitute(e, op, op.strAttr("asm"), names) +
               "\n\t}\n");
    for (size_t i = 0; i < operands.size(); ++i) {
      const InlineAsmOperand &o = operands[i];
      if (!o.output)
        continue;
      Regs vals = unpackOutput(e, o, resultElems[o.value], names[i]);
      for (int j = 0; j < o.elems && base + o.firstElem + j < n; ++j)
        results[o.value].push_back(vals[j]);
    }
  }
  for (unsigned i = 0; i < op.numResults(); ++i)
    e.bind(op.result(i), results[i]);
}

/// The bytes of `s` and a terminating zero as a PTX initializer.
std::string byteList(const std::string &s) {
  std::string out;
  for (unsigned char c : s)
    out += std::to_string(c) + ", ";
  return out + "0";
}

} // namespace

bool emitDebugOp(Emitter &e, Operation &op) {
  switch (op.code()) {
  case OpCode::Print:
    emitPrint(e, op);
    return true;
  case OpCode::Assert:
    emitAssert(e, op);
    return true;
  case OpCode::InlineAsm:
    emitInlineAsm(e, op);
    return true;
  default:
    return false;
  }
}

std::string debugModuleDecls(const Emitter &e) {
  if (e.formatStrings.empty())
    return "";
  std::string s = ".extern .func (.param .b32 func_retval0) vprintf\n(\n"
                  "\t.param .b64 vprintf_param_0,\n"
                  "\t.param .b64 vprintf_param_1\n)\n;\n";
  for (size_t i = 0; i < e.formatStrings.size(); ++i)
    s += ".global .align 1 .b8 " + formatName(e, i) + "[" +
         std::to_string(e.formatStrings[i].size() + 1) + "] = {" +
         byteList(e.formatStrings[i]) + "};\n";
  return s + "\n";
}

std::string debugFrameDecls(const Emitter &e) {
  if (e.printBufferBytes == 0)
    return "";
  return "\t.local .align 8 .b8 " + std::string(kPrintBuffer) + "[" +
         std::to_string(e.printBufferBytes) + "];\n";
}

} // namespace tritium::nvidia
