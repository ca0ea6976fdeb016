// Which ops the PTX emitter lowers and which it refuses (see
// tritium/ir/op_support.h).
#pragma once

#include "tritium/ir/ir.h"
#include "tritium/ir/op_support.h"

namespace tritium::nvidia {

/// Read from the table the emitter dispatches on (Emitter::emitOp).
OpSupport ptxSupport(OpCode code);

} // namespace tritium::nvidia
