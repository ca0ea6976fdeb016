// tritium._C.Builder: include/tritium/ir/builder.h in snake_case. Operands
// of the semantic helpers may be Values or Python literals (weak-typed);
// every IR object returned keeps the Builder (and so the Module) alive.
#include "bindings.h"

#include <limits>

namespace tritium::bindings {

namespace {

Operand opnd(Builder &b, py::handle h) { return toOperand(h, b.loc()); }

Value *valueArg(Builder &b, py::handle h, const char *what) {
  Value *v = toValueOrNull(b, h);
  if (!v)
    throw py::type_error(std::string(what) + " must be a Value, got None");
  return v;
}

std::vector<Value *> valueList(Builder &b, const py::iterable &xs) {
  std::vector<Value *> out;
  for (py::handle h : xs)
    out.push_back(valueArg(b, h, "a list element"));
  return out;
}

Builder &self(py::handle h) { return h.cast<Builder &>(); }

/// An axis from Python (any int) for the builder's `int` axes: one beyond
/// int's range is the user's error at the builder's location, not pybind11's
/// "incompatible function arguments".
int axisArg(Builder &bd, int64_t axis, const std::string &op) {
  if (axis < std::numeric_limits<int>::min() || axis > std::numeric_limits<int>::max())
    throw UserError(op + ": axis " + std::to_string(axis) + " is out of range", bd.loc());
  return (int)axis;
}

} // namespace

void bindBuilder(py::module_ &m) {
  py::class_<Builder::InsertPoint>(m, "InsertPoint")
      .def_property_readonly(
          "block", [](const Builder::InsertPoint &ip) { return ip.block; },
          py::return_value_policy::reference_internal);

  py::class_<Builder> b(m, "Builder");
  b.def(py::init<Module &>(), py::arg("module"), py::keep_alive<1, 2>())
      .def_property_readonly(
          "module", [](Builder &bd) { return &bd.module(); },
          py::return_value_policy::reference_internal)

      // ---- location, functions, insertion point --------------------------
      .def(
          "set_loc",
          [](Builder &bd, const std::string &file, int line, int col) {
            bd.setLoc(Location{file, line, col});
          },
          py::arg("file"), py::arg("line"), py::arg("col"))
      .def_property_readonly("loc",
                             [](Builder &bd) {
                               return py::make_tuple(
                                   bd.loc().file, bd.loc().line, bd.loc().col);
                             })
      .def(
          "create_function",
          [](Builder &bd, const std::string &name,
             const std::vector<const Type *> &types,
             const std::vector<std::string> &names) {
            return bd.createFunction(name, types, names);
          },
          py::arg("name"), py::arg("arg_types"),
          py::arg("arg_names") = std::vector<std::string>{},
          py::return_value_policy::reference_internal)
      // The InsertPoint keeps the builder (and module) alive: it points
      // into a block.
      .def("save_ip", &Builder::saveInsertionPoint, py::keep_alive<0, 1>())
      .def("restore_ip", &Builder::restoreInsertionPoint, py::arg("ip"))
      .def("set_insertion_point_to_end", &Builder::setInsertionPointToEnd,
           py::arg("block"))
      .def("set_insertion_point_before", &Builder::setInsertionPoint,
           py::arg("op"))
      .def("new_block", &Builder::newDetachedBlock,
           py::return_value_policy::reference_internal)
      .def("discard_block", &Builder::discardBlock, py::arg("block"))
      .def("insertion_block", &Builder::insertionBlock,
           py::return_value_policy::reference_internal)

      // ---- constants -----------------------------------------------------
      .def(
          "const_int",
          [](py::object s, py::handle v, const std::string &dtype) {
            Builder &bd = self(s);
            Operand o = opnd(bd, v);
            if (o.kind != Operand::Kind::Int && o.kind != Operand::Kind::Bool)
              throw py::type_error("const_int expects an int");
            int64_t bits = o.kind == Operand::Kind::Bool ? (o.b ? 1 : 0) : o.i;
            return wrapRef(bd.constInt(bits, parseDTypeArg(dtype)), s);
          },
          py::arg("v"), py::arg("dtype") = "i32")
      .def(
          "const_float",
          [](py::object s, double v, const std::string &dtype) {
            return wrapRef(self(s).constFloat(v, parseDTypeArg(dtype)), s);
          },
          py::arg("v"), py::arg("dtype") = "f32")
      .def(
          "const_bool",
          [](py::object s, bool v) { return wrapRef(self(s).constBool(v), s); },
          py::arg("v"))
      .def(
          "materialize",
          [](py::object s, py::handle a) {
            Builder &bd = self(s);
            return wrapRef(bd.materialize(opnd(bd, a)), s);
          },
          py::arg("a"))
      .def(
          "create_op",
          [](py::object s, const std::string &name,
             const py::iterable &operands,
             const std::vector<const Type *> &resultTypes,
             const py::dict &attrs) {
            Builder &bd = self(s);
            OpCode code;
            if (!lookupOpCode(name, code))
              throw py::value_error("unknown op '" + name + "'");
            std::map<std::string, Attribute> as;
            for (auto [k, v] : attrs)
              as[k.cast<std::string>()] = toAttribute(v);
            return wrapRef(
                bd.create(code, valueList(bd, operands), resultTypes, as), s);
          },
          py::arg("name"), py::arg("operands"),
          py::arg("result_types") = std::vector<const Type *>{},
          py::arg("attrs") = py::dict())

      // ---- control flow --------------------------------------------------
      .def(
          "create_for",
          [](py::object s, py::handle lb, py::handle ub, py::handle step,
             const py::iterable &inits) {
            Builder &bd = self(s);
            return wrapRef(bd.createFor(opnd(bd, lb), opnd(bd, ub),
                                        opnd(bd, step), valueList(bd, inits)),
                           s);
          },
          py::arg("lb"), py::arg("ub"), py::arg("step"),
          py::arg("inits") = py::list())
      .def(
          "create_if",
          [](py::object s, py::handle cond, Block *thenBlock,
             Block *elseBlock) {
            Builder &bd = self(s);
            return wrapRef(
                bd.createIf(valueArg(bd, cond, "cond"), thenBlock, elseBlock),
                s);
          },
          py::arg("cond"), py::arg("then_block"),
          py::arg("else_block") = py::none())
      .def(
          "create_while",
          [](py::object s, const py::iterable &inits, Block *before,
             Block *after) {
            Builder &bd = self(s);
            return wrapRef(bd.createWhile(valueList(bd, inits), before, after),
                           s);
          },
          py::arg("inits"), py::arg("before_block"), py::arg("after_block"))
      .def(
          "yield_",
          [](Builder &bd, const py::iterable &values) {
            bd.yield(valueList(bd, values));
          },
          py::arg("values") = py::list())
      .def(
          "condition",
          [](Builder &bd, py::handle cond, const py::iterable &values) {
            bd.condition(valueArg(bd, cond, "cond"), valueList(bd, values));
          },
          py::arg("cond"), py::arg("values") = py::list())
      .def(
          "ret",
          [](Builder &bd, const py::iterable &values) {
            bd.ret(valueList(bd, values));
          },
          py::arg("values") = py::list())
      .def(
          "call",
          [](py::object s, Function *callee, const py::iterable &args) {
            Builder &bd = self(s);
            return wrapList(bd.call(callee, valueList(bd, args)), s);
          },
          py::arg("fn"), py::arg("args"))

      // ---- elementwise semantics -----------------------------------------
      .def(
          "binary",
          [](py::object s, const std::string &op, py::handle a, py::handle c) {
            Builder &bd = self(s);
            return wrapRef(bd.binary(op, opnd(bd, a), opnd(bd, c)), s);
          },
          py::arg("op"), py::arg("a"), py::arg("b"))
      .def(
          "unary",
          [](py::object s, const std::string &op, py::handle a) {
            Builder &bd = self(s);
            return wrapRef(bd.unary(op, opnd(bd, a)), s);
          },
          py::arg("op"), py::arg("a"))
      .def(
          "math",
          [](py::object s, const std::string &op, py::handle x) {
            Builder &bd = self(s);
            return wrapRef(bd.math(op, opnd(bd, x)), s);
          },
          py::arg("op"), py::arg("x"))
      .def(
          "fma",
          [](py::object s, py::handle a, py::handle c, py::handle d) {
            Builder &bd = self(s);
            return wrapRef(bd.fma(opnd(bd, a), opnd(bd, c), opnd(bd, d)), s);
          },
          py::arg("a"), py::arg("b"), py::arg("c"))
      .def(
          "maximum",
          [](py::object s, py::handle a, py::handle c, bool nan) {
            Builder &bd = self(s);
            return wrapRef(bd.maximum(opnd(bd, a), opnd(bd, c), nan), s);
          },
          py::arg("a"), py::arg("b"), py::arg("propagate_nan") = false)
      .def(
          "minimum",
          [](py::object s, py::handle a, py::handle c, bool nan) {
            Builder &bd = self(s);
            return wrapRef(bd.minimum(opnd(bd, a), opnd(bd, c), nan), s);
          },
          py::arg("a"), py::arg("b"), py::arg("propagate_nan") = false)
      .def(
          "where",
          [](py::object s, py::handle c, py::handle a, py::handle d) {
            Builder &bd = self(s);
            return wrapRef(bd.where(opnd(bd, c), opnd(bd, a), opnd(bd, d)), s);
          },
          py::arg("cond"), py::arg("a"), py::arg("b"))
      .def(
          "cast",
          [](py::object s, py::handle x, const std::string &dtype,
             bool bitcast, const std::string &rounding) {
            Builder &bd = self(s);
            return wrapRef(bd.cast(valueArg(bd, x, "x"), parseDTypeArg(dtype),
                                   bitcast, rounding),
                           s);
          },
          py::arg("x"), py::arg("dtype"), py::arg("bitcast") = false,
          py::arg("fp_downcast_rounding") = "")
      .def(
          "cast_to_pointer",
          [](py::object s, py::handle x, const Type *ptrType) {
            Builder &bd = self(s);
            if (!ptrType->isPointer())
              throw py::value_error(
                  "cast_to_pointer needs a pointer type, got " +
                  ptrType->str());
            return wrapRef(bd.castToPointer(valueArg(bd, x, "x"), ptrType), s);
          },
          py::arg("x"), py::arg("ptr_type"))

      // ---- program ids and tensors ---------------------------------------
      .def(
          "program_id",
          [](py::object s, int64_t axis) {
            Builder &bd = self(s);
            return wrapRef(bd.programId(axisArg(bd, axis, "program_id")), s);
          },
          py::arg("axis"))
      .def(
          "num_programs",
          [](py::object s, int64_t axis) {
            Builder &bd = self(s);
            return wrapRef(bd.numPrograms(axisArg(bd, axis, "num_programs")), s);
          },
          py::arg("axis"))
      .def(
          "arange",
          [](py::object s, int64_t start, int64_t end) {
            return wrapRef(self(s).arange(start, end), s);
          },
          py::arg("start"), py::arg("end"))
      .def(
          "full",
          [](py::object s, const std::vector<int64_t> &shape, py::handle v,
             const std::string &dtype) {
            Builder &bd = self(s);
            return wrapRef(bd.full(shape, opnd(bd, v), parseDTypeArg(dtype)),
                           s);
          },
          py::arg("shape"), py::arg("value"), py::arg("dtype"))
      .def(
          "splat",
          [](py::object s, py::handle x, const std::vector<int64_t> &shape) {
            Builder &bd = self(s);
            return wrapRef(bd.splat(valueArg(bd, x, "x"), shape), s);
          },
          py::arg("x"), py::arg("shape"))
      .def(
          "broadcast_to",
          [](py::object s, py::handle x, const std::vector<int64_t> &shape) {
            Builder &bd = self(s);
            return wrapRef(bd.broadcastTo(valueArg(bd, x, "x"), shape), s);
          },
          py::arg("x"), py::arg("shape"))
      .def(
          "broadcast_pair",
          [](py::object s, py::handle a, py::handle c) {
            Builder &bd = self(s);
            auto [x, y] =
                bd.broadcastPair(valueArg(bd, a, "a"), valueArg(bd, c, "b"));
            return py::make_tuple(wrapRef(x, s), wrapRef(y, s));
          },
          py::arg("a"), py::arg("b"))
      .def(
          "expand_dims",
          [](py::object s, py::handle x, int64_t axis) {
            Builder &bd = self(s);
            return wrapRef(
                bd.expandDims(valueArg(bd, x, "x"), axisArg(bd, axis, "expand_dims")), s);
          },
          py::arg("x"), py::arg("axis"))
      .def(
          "reshape",
          [](py::object s, py::handle x, const std::vector<int64_t> &shape) {
            Builder &bd = self(s);
            return wrapRef(bd.reshape(valueArg(bd, x, "x"), shape), s);
          },
          py::arg("x"), py::arg("shape"))
      .def(
          "trans",
          [](py::object s, py::handle x, const std::vector<int64_t> &order) {
            Builder &bd = self(s);
            return wrapRef(bd.trans(valueArg(bd, x, "x"), order), s);
          },
          py::arg("x"), py::arg("order") = std::vector<int64_t>{})

      // ---- memory --------------------------------------------------------
      .def(
          "descriptor_load",
          [](py::object s, py::handle base, py::list shape, py::list strides, py::list offsets,
             std::vector<int64_t> blockShape, const std::string &padding) {
            Builder &bd = self(s);
            auto values = [&](py::list l, const char *what) {
              std::vector<Value *> out;
              for (py::handle h : l)
                out.push_back(valueArg(bd, h, what));
              return out;
            };
            return wrapRef(bd.descriptorLoad(valueArg(bd, base, "base"), values(shape, "shape"),
                                             values(strides, "strides"),
                                             values(offsets, "offsets"), blockShape, padding),
                           s);
          },
          py::arg("base"), py::arg("shape"), py::arg("strides"), py::arg("offsets"),
          py::arg("block_shape"), py::arg("padding"))
      .def(
          "descriptor_store",
          [](py::object s, py::handle base, py::list shape, py::list strides, py::list offsets,
             py::handle value) {
            Builder &bd = self(s);
            auto values = [&](py::list l, const char *what) {
              std::vector<Value *> out;
              for (py::handle h : l)
                out.push_back(valueArg(bd, h, what));
              return out;
            };
            bd.descriptorStore(valueArg(bd, base, "base"), values(shape, "shape"),
                               values(strides, "strides"), values(offsets, "offsets"),
                               opnd(bd, value));
          },
          py::arg("base"), py::arg("shape"), py::arg("strides"), py::arg("offsets"),
          py::arg("value"))
      .def(
          "load",
          [](py::object s, py::handle ptr, py::handle mask, py::handle other,
             const std::string &cache, const std::string &eviction,
             bool isVolatile) {
            Builder &bd = self(s);
            std::optional<Operand> oth;
            if (!other.is_none())
              oth = opnd(bd, other);
            return wrapRef(bd.load(valueArg(bd, ptr, "ptr"),
                                   toValueOrNull(bd, mask), oth, cache,
                                   eviction, isVolatile),
                           s);
          },
          py::arg("ptr"), py::arg("mask") = py::none(),
          py::arg("other") = py::none(), py::arg("cache") = "",
          py::arg("eviction") = "", py::arg("volatile") = false)
      .def(
          "store",
          [](Builder &bd, py::handle ptr, py::handle value, py::handle mask,
             const std::string &cache, const std::string &eviction) {
            bd.store(valueArg(bd, ptr, "ptr"), opnd(bd, value),
                     toValueOrNull(bd, mask), cache, eviction);
          },
          py::arg("ptr"), py::arg("value"), py::arg("mask") = py::none(),
          py::arg("cache") = "", py::arg("eviction") = "")
      .def(
          "atomic_rmw",
          [](py::object s, const std::string &kind, py::handle ptr,
             py::handle val, py::handle mask, const std::string &sem,
             const std::string &scope) {
            Builder &bd = self(s);
            return wrapRef(bd.atomicRMW(kind, valueArg(bd, ptr, "ptr"),
                                        opnd(bd, val), toValueOrNull(bd, mask),
                                        sem, scope),
                           s);
          },
          py::arg("kind"), py::arg("ptr"), py::arg("val"),
          py::arg("mask") = py::none(), py::arg("sem") = "",
          py::arg("scope") = "")
      .def(
          "atomic_cas",
          [](py::object s, py::handle ptr, py::handle cmp, py::handle val,
             const std::string &sem, const std::string &scope) {
            Builder &bd = self(s);
            return wrapRef(bd.atomicCAS(valueArg(bd, ptr, "ptr"),
                                        opnd(bd, cmp), opnd(bd, val), sem,
                                        scope),
                           s);
          },
          py::arg("ptr"), py::arg("cmp"), py::arg("val"), py::arg("sem") = "",
          py::arg("scope") = "")

      // ---- reductions and dot --------------------------------------------
      .def(
          "reduce",
          [](py::object s, py::handle x, std::optional<int64_t> axis,
             const std::string &kind, bool keepDims) {
            Builder &bd = self(s);
            std::optional<int> a;
            if (axis)
              a = axisArg(bd, *axis, "tl." + kind);
            return wrapRef(
                bd.reduce(valueArg(bd, x, "x"), a, kind, keepDims), s);
          },
          py::arg("x"), py::arg("axis"), py::arg("kind"),
          py::arg("keep_dims") = false)
      .def(
          "new_combine_block",
          [](py::object s, const py::iterable &inputs, const std::string &fn) {
            Builder &bd = self(s);
            return wrapRef(bd.newCombineBlock(valueList(bd, inputs), fn), s);
          },
          py::arg("inputs"), py::arg("fn"))
      .def(
          "combine_return",
          [](Builder &bd, const py::iterable &values) {
            bd.combineReturn(valueList(bd, values));
          },
          py::arg("values"))
      .def(
          "inline_asm_elementwise",
          [](py::object s, const std::string &asmText,
             const std::string &constraints, const py::iterable &args,
             const std::vector<std::string> &dtypes, bool pure, int64_t pack) {
            Builder &bd = self(s);
            std::vector<DType> ds;
            for (const std::string &d : dtypes)
              ds.push_back(parseDTypeArg(d));
            return wrapList(bd.inlineAsmElementwise(asmText, constraints,
                                                    valueList(bd, args), ds,
                                                    pure, pack),
                            s);
          },
          py::arg("asm"), py::arg("constraints"), py::arg("args"),
          py::arg("dtypes"), py::arg("is_pure"), py::arg("pack"))
      .def(
          "scan",
          [](py::object s, const py::iterable &inputs, int64_t axis,
             bool reverse, Block *combine) {
            Builder &bd = self(s);
            int a = axisArg(bd, axis, "tl.associative_scan");
            return wrapList(bd.scan(valueList(bd, inputs), a, reverse, combine),
                            s);
          },
          py::arg("inputs"), py::arg("axis"), py::arg("reverse"),
          py::arg("combine"))
      .def(
          "reduce_combine",
          [](py::object s, const py::iterable &inputs,
             std::optional<int64_t> axis, bool keepDims, Block *combine) {
            Builder &bd = self(s);
            std::optional<int> a;
            if (axis)
              a = axisArg(bd, *axis, "tl.reduce");
            return wrapList(
                bd.reduceCombine(valueList(bd, inputs), a, keepDims, combine),
                s);
          },
          py::arg("inputs"), py::arg("axis"), py::arg("keep_dims"),
          py::arg("combine"))
      .def(
          "dot",
          [](py::object s, py::handle a, py::handle c, py::handle acc,
             const std::string &precision, const std::string &outDType,
             int64_t maxNumImpreciseAcc) {
            Builder &bd = self(s);
            return wrapRef(bd.dot(valueArg(bd, a, "a"), valueArg(bd, c, "b"),
                                  toValueOrNull(bd, acc), precision,
                                  parseDTypeArg(outDType), maxNumImpreciseAcc),
                           s);
          },
          py::arg("a"), py::arg("b"), py::arg("acc") = py::none(),
          py::arg("input_precision") = "tf32", py::arg("out_dtype") = "f32",
          py::arg("max_num_imprecise_acc") = 0);
}

} // namespace tritium::bindings
