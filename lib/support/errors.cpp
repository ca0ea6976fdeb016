#include "tritium/support/errors.h"

namespace tritium {

std::string Location::str() const {
  if (!known())
    return "unknown";
  return "\"" + file + "\":" + std::to_string(line) + ":" + std::to_string(col);
}

} // namespace tritium
