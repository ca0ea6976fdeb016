// The CPU executor: runs tile IR on the host with block semantics.
//
// It is the reference semantics of the IR. Each program of the grid runs the
// kernel function once with its own program id; programs are spread over a
// pool of threads. Tensors are held whole (no layouts); every load and store
// is checked against the extent of the kernel argument its pointer came from.
#pragma once

#include "tritium/ir/ir.h"
#include "tritium/ir/op_support.h"

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace tritium {

/// A pointer argument: host memory [base, base + bytes) holding elements of
/// `elem` (the kernel's pointee type decides how memory is read).
struct ExecPointer {
  uint64_t base = 0;
  /// Bytes an access may reach from base on.
  uint64_t bytes = 0;
  /// Bytes an access may reach below base: a view into a larger allocation
  /// (a torch tensor with a storage offset), whose kernels may address its
  /// storage before the view's first element, as Inductor's do for
  /// as_strided views.
  uint64_t before = 0;
};

/// One kernel argument, in the order of the function's parameters.
using ExecArg = std::variant<ExecPointer, int64_t, double, bool>;

struct ExecOptions {
  /// Threads to spread programs over; 0 = hardware concurrency.
  int numThreads = 0;
  /// Host memory the kernel may also access through addresses it builds from
  /// integers (a table of pointers read from memory, as in a grouped GEMM).
  /// Every access is checked against the arguments and these; on a GPU any
  /// device address works, here memory must be known to be checked.
  std::vector<ExecPointer> extraMemory;
};

/// A failure while running a kernel (an out-of-bounds access, a failed
/// tl.device_assert): names the kernel, the source location, the program id
/// and, for memory errors, the argument and the element offset.
class ExecutionError : public std::runtime_error {
public:
  ExecutionError(const std::string &msg, Location loc)
      : std::runtime_error(msg), loc(std::move(loc)) {}
  Location loc;
};

/// Runs `kernel` (a function of `m`; calls must already be inlined or are
/// executed by the executor) over `grid` programs. The module is verified
/// first: IR the verifier rejects throws its IRError (located at the op).
void execute(const Module &m, const std::string &kernel,
             std::array<int64_t, 3> grid, const std::vector<ExecArg> &args,
             const ExecOptions &opts = {});

/// Whether the executor has semantics for `code` (read from its dispatch; the
/// op-coverage unit test asks it for every op of ops.def). It rejects none.
OpSupport executorSupport(OpCode code);

} // namespace tritium
