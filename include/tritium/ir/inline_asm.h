// The operands of tt.elementwise_inline_asm's text: which value, which
// elements and which register each `$i` names. One rule for the builder
// (the user's errors), the verifier and the PTX emitter.
#pragma once

#include "tritium/ir/ir.h"

#include <string>
#include <vector>

namespace tritium {

/// One asm operand ($i, in order): the results' registers first (result 0's,
/// then result 1's, ...), then the arguments'.
struct InlineAsmOperand {
  bool output = false; // written by the text (a result's register)
  unsigned value = 0;  // result index (output) or operand index
  int firstElem = 0;   // of the call's `pack` elements, the first it holds
  int elems = 1;       // elements packed in it, the first in the low bits
  int bits = 32;       // its width: elems x element bits (1: a predicate)
  char letter = 'r';   // the constraint letter
};

/// Elements of type `elem` one register holds in an asm call of `pack`
/// elements: narrower than 32 bits, as many as fit in 32 bits (at most
/// pack); otherwise 1.
int inlineAsmElemsPerReg(const Type *elem, int pack);

/// Parses `constraints` (comma-separated LLVM letters, outputs `=r` first,
/// `~{...}` clobbers ignored) against the element types of the results and
/// arguments and fills `out`; returns "" or what is wrong, in the user's
/// words.
std::string inlineAsmOperands(const std::string &constraints,
                              const std::vector<const Type *> &results,
                              const std::vector<const Type *> &args, int pack,
                              std::vector<InlineAsmOperand> &out);

} // namespace tritium
