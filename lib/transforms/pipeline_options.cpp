// GPUTarget's text form (see tritium/transforms/pipeline_options.h).
#include "tritium/transforms/pipeline_options.h"

#include "tritium/ir/ir.h"

#include <algorithm>

namespace tritium {

std::string GPUTarget::str() const {
  return "sm_" + std::to_string(sm) + (archA ? "a" : "");
}

GPUTarget GPUTarget::parse(const std::string &s) {
  std::string t = s;
  if (t.rfind("sm_", 0) == 0)
    t = t.substr(3);
  else if (t.rfind("cuda:", 0) == 0)
    t = t.substr(5);
  GPUTarget g;
  g.archA = !t.empty() && t.back() == 'a';
  if (g.archA)
    t.pop_back();
  bool digits = !t.empty() && t.size() <= 3 &&
                std::all_of(t.begin(), t.end(),
                            [](char c) { return c >= '0' && c <= '9'; });
  if (!digits)
    throw UserError("unknown GPU target '" + s +
                        "' (expected a form like sm_80, sm_90 or sm_90a)",
                    {});
  g.sm = std::stoi(t);
  if (g.archA && g.sm != 90)
    throw UserError("GPU target '" + s + "': only sm_90 has an 'a' variant",
                    {});
  g.ptxVersion = 80;
  return g;
}

int64_t GPUTarget::maxSharedBytes() const {
  if (sm >= 90)
    return 227 * 1024;
  if (sm == 80 || sm == 87)
    return 163 * 1024;
  return 99 * 1024;
}

} // namespace tritium
