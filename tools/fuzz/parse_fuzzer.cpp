// parse_fuzzer: libFuzzer entry point for the textual IR.
//
// Each input is IR text. It must never crash the parser, the verifier or the
// printer: malformed text and invalid IR end in an IRError, nothing else. On
// input that parses and verifies, the printed form must round-trip:
// parse(print(m)) verifies and prints to the same text.
//
// Built with -DTRITIUM_FUZZ=ON (clang, -fsanitize=fuzzer,address,undefined);
// `make fuzz-parser FUZZ_SECONDS=N` builds it, seeds the corpus from
// test/**/*.tir and runs it.
#include "tritium/gpu/layouts.h"
#include "tritium/ir/printer.h"
#include "tritium/ir/verifier.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace tritium;

namespace {

[[noreturn]] void fail(const char *what, const std::string &detail,
                       const std::string &text) {
  std::fprintf(stderr, "parse_fuzzer: %s: %s\n--- printed IR ---\n%s\n", what,
               detail.c_str(), text.c_str());
  std::abort();
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  gpu::registerLayoutParser(); // GPU IR (tensors with layouts) parses too
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string input(reinterpret_cast<const char *>(data), size);
  std::unique_ptr<Module> m;
  try {
    m = parseModule(input, "<fuzz>");
  } catch (const IRError &) {
    return 0; // malformed text: the expected way to fail
  }
  // The verifier prints the offending op in its messages, so the printer has
  // to cope with IR that does not verify.
  std::string first = print(*m);
  try {
    verify(*m);
  } catch (const IRError &) {
    return 0;
  }

  std::unique_ptr<Module> again;
  try {
    again = parseModule(first, "<printed>");
  } catch (const IRError &e) {
    fail("printed IR does not parse", e.what(), first);
  }
  try {
    verify(*again);
  } catch (const IRError &e) {
    fail("printed IR does not verify", e.what(), first);
  }
  std::string second = print(*again);
  if (second != first)
    fail("print(parse(print(m))) != print(m)", second, first);
  return 0;
}
