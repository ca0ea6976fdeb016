// tt.elementwise_inline_asm's operand rule (tritium/ir/inline_asm.h).
#include "tritium/ir/inline_asm.h"

namespace tritium {

namespace {

int elemBits(const Type *t) {
  if (t->isPointer())
    return 64;
  return bitWidth(t->dtype());
}

std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t\n\r");
  if (b == std::string::npos)
    return "";
  size_t e = s.find_last_not_of(" \t\n\r");
  return s.substr(b, e - b + 1);
}

/// Whether letter c names a register of `bits` bits.
bool letterFits(char c, int bits) {
  switch (c) {
  case 'b':
    return bits == 1;
  case 'c':
  case 'h':
    return bits == 8 || bits == 16;
  case 'r':
  case 'f':
    return bits == 32;
  case 'l':
  case 'd':
    return bits == 64;
  default:
    return false;
  }
}

const char *letterText(int bits) {
  switch (bits) {
  case 1:
    return "'b'";
  case 8:
  case 16:
    return "'h' (or 'c')";
  case 32:
    return "'r' (or 'f')";
  default:
    return "'l' (or 'd')";
  }
}

} // namespace

int inlineAsmElemsPerReg(const Type *elem, int pack) {
  int bits = elemBits(elem);
  if (bits == 1 || bits >= 32)
    return 1;
  return std::max(1, std::min(32 / bits, pack));
}

std::string inlineAsmOperands(const std::string &constraints,
                              const std::vector<const Type *> &results,
                              const std::vector<const Type *> &args, int pack,
                              std::vector<InlineAsmOperand> &out) {
  out.clear();
  if (pack < 1)
    return "pack must be a positive integer, got " + std::to_string(pack);
  if (results.empty())
    return "needs at least one result dtype";
  // The operands the types call for.
  auto addValue = [&](const Type *t, bool output,
                      unsigned index) -> std::string {
    const Type *e = t->isTensor() ? t->element() : t;
    if (!e->isScalar() && !e->isPointer())
      return "cannot pass a value of type " + t->str() + " to inline asm";
    int per = inlineAsmElemsPerReg(e, pack);
    int bits = elemBits(e) == 1 ? 1 : per * elemBits(e);
    if (pack % per != 0 || (bits != 1 && bits != 8 && bits != 16 &&
                            bits != 32 && bits != 64))
      return "pack=" + std::to_string(pack) + " does not split into whole " +
             "registers of " + std::to_string(elemBits(e)) +
             "-bit elements (use 1, 2 or a multiple of " +
             std::to_string(32 / elemBits(e)) + ")";
    for (int first = 0; first < pack; first += per) {
      InlineAsmOperand o;
      o.output = output;
      o.value = index;
      o.firstElem = first;
      o.elems = per;
      o.bits = bits;
      out.push_back(o);
    }
    return "";
  };
  for (unsigned i = 0; i < results.size(); ++i)
    if (std::string why = addValue(results[i], true, i); !why.empty())
      return why;
  size_t numOutputs = out.size();
  for (unsigned i = 0; i < args.size(); ++i)
    if (std::string why = addValue(args[i], false, i); !why.empty())
      return why;

  // The constraints, matched against them in order.
  std::vector<std::string> items;
  std::string cur;
  for (char c : constraints + ",") {
    if (c != ',') {
      cur += c;
      continue;
    }
    std::string t = trim(cur);
    cur.clear();
    if (t.empty() || t[0] == '~')
      continue;
    items.push_back(t);
  }
  size_t outputsGiven = 0;
  while (outputsGiven < items.size() && items[outputsGiven][0] == '=')
    ++outputsGiven;
  for (size_t i = outputsGiven; i < items.size(); ++i)
    if (items[i][0] == '=')
      return "constraint '" + items[i] +
             "': outputs (=) must come before inputs";
  size_t numInputs = out.size() - numOutputs;
  std::string perCall = " (with pack=" + std::to_string(pack) + ")";
  if (outputsGiven != numOutputs)
    return "the constraints name " + std::to_string(outputsGiven) +
           " output register(s), the result dtypes need " +
           std::to_string(numOutputs) + perCall;
  if (items.size() - outputsGiven != numInputs)
    return "the constraints name " +
           std::to_string(items.size() - outputsGiven) +
           " input register(s), the arguments need " +
           std::to_string(numInputs) + perCall;
  for (size_t i = 0; i < items.size(); ++i) {
    std::string t = items[i];
    size_t at = 0;
    while (at < t.size() && (t[at] == '=' || t[at] == '&'))
      ++at;
    if (at + 1 != t.size())
      return "constraint '" + t + "' of $" + std::to_string(i) +
             ": tritium takes one register letter (b, c, h, r, f, l, d)";
    char letter = t[at];
    if (!letterFits(letter, out[i].bits))
      return "constraint '" + t + "' of $" + std::to_string(i) + " names " +
             (letterFits(letter, 1) || letterFits(letter, 16) ||
                      letterFits(letter, 32) || letterFits(letter, 64)
                  ? std::string("a register of another width")
                  : std::string("an unknown register kind")) +
             ": it holds " + std::to_string(out[i].elems) + " element(s) in " +
             std::to_string(out[i].bits) + " bit(s); use " +
             letterText(out[i].bits);
    out[i].letter = letter;
  }
  return "";
}

} // namespace tritium
