// axisInfoReport (see tritium/analysis/axis_info_printer.h).
#include "tritium/analysis/axis_info_printer.h"

#include "tritium/analysis/axis_info.h"

#include <sstream>

namespace tritium {
namespace {

std::string list(const std::vector<int64_t> &xs) {
  std::string s = "[";
  for (size_t i = 0; i < xs.size(); ++i)
    s += (i ? ", " : "") + std::to_string(xs[i]);
  return s + "]";
}

bool analysed(const Type *t) {
  const Type *s = t->isTensor() ? t->scalarType() : t;
  return s->isPointer() || isInteger(s->dtype());
}

} // namespace

std::string axisInfoReport(Function &f) {
  AxisInfoAnalysis analysis(f);
  std::ostringstream out;
  auto line = [&](Value *v, const std::string &fallback) {
    if (!analysed(v->type()))
      return;
    AxisInfo info = analysis.get(v);
    out << "@" << f.name() << " "
        << (v->nameHint.empty() ? fallback : "%" + v->nameHint)
        << ": contiguity = " << list(info.contiguity)
        << ", divisibility = " << list(info.divisibility)
        << ", constancy = " << list(info.constancy);
    if (info.constant)
      out << ", constant = " << *info.constant;
    out << "\n";
  };
  Block &entry = f.entry();
  for (unsigned i = 0; i < entry.numArguments(); ++i)
    line(entry.argument(i), "arg#" + std::to_string(i));
  // An op's results, then the arguments of its regions (a loop's induction
  // variable and carried values), then the ops inside (walk's order).
  f.walk([&](Operation *op) {
    std::string name = op->name();
    for (unsigned i = 0; i < op->numResults(); ++i)
      line(op->result(i), name + "#" + std::to_string(i));
    for (unsigned r = 0; r < op->numRegions(); ++r)
      for (auto &b : op->region(r).blocks())
        for (unsigned i = 0; i < b->numArguments(); ++i)
          line(b->argument(i), name + ".region" + std::to_string(r) + ".arg#" +
                                   std::to_string(i));
  });
  return out.str();
}

} // namespace tritium
