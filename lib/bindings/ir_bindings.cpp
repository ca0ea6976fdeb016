// tritium._C: Type, Value, Block, Operation, Function, Module, and the
// conversions of Python arguments shared by all bindings.
#include "bindings.h"

#include "tritium/ir/printer.h"

#include <climits>

namespace tritium::bindings {

// ---------------------------------------------------------------------------
// Argument conversions
// ---------------------------------------------------------------------------

DType parseDTypeArg(const std::string &name) {
  if (auto d = parseDType(name))
    return *d;
  if (auto d = parseTritonName(name))
    return *d;
  throw py::value_error("unknown dtype '" + name +
                        "' (expected an IR name such as f32, i64, bf16, "
                        "f8e4nv, or a Triton name such as fp32, int64)");
}

namespace {

std::string pyTypeName(py::handle h) {
  return py::str(py::type::handle_of(h).attr("__name__")).cast<std::string>();
}

/// A Python int as an Operand: int64, else uint64 (Triton's literal
/// typing), else a UserError.
Operand intOperand(py::handle h, const Location &loc) {
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred())
    throw py::error_already_set();
  if (!overflow)
    return Operand::ofInt((int64_t)v);
  if (overflow > 0) {
    unsigned long long u = PyLong_AsUnsignedLongLong(h.ptr());
    if (!(u == (unsigned long long)-1 && PyErr_Occurred()))
      return Operand::ofUInt64((uint64_t)u);
    PyErr_Clear();
  }
  throw UserError("integer literal " + py::str(h).cast<std::string>() +
                      " does not fit in 64 bits (the widest integer types are "
                      "int64 and uint64)",
                  loc);
}

} // namespace

Operand toOperand(py::handle h, const Location &loc) {
  if (py::isinstance<py::bool_>(h))
    return Operand::ofBool(h.cast<bool>());
  if (py::isinstance<Value>(h))
    return Operand(h.cast<Value *>());
  if (PyLong_Check(h.ptr()))
    return intOperand(h, loc);
  if (PyFloat_Check(h.ptr()))
    return Operand::ofFloat(PyFloat_AsDouble(h.ptr()));
  // numpy scalars and other number-likes.
  if (py::hasattr(h, "dtype") && py::hasattr(h, "item") &&
      py::hasattr(h, "shape") && py::len(h.attr("shape")) == 0) {
    py::object item = h.attr("item")();
    if (py::isinstance<py::bool_>(item) || PyLong_Check(item.ptr()) ||
        PyFloat_Check(item.ptr()))
      return toOperand(item, loc);
  }
  if (h.is_none())
    throw py::type_error(
        "expected a Value or a bool/int/float literal, got None");
  throw py::type_error("expected a Value or a bool/int/float literal, got " +
                       pyTypeName(h));
}

Value *toValueOrNull(Builder &b, py::handle h) {
  if (h.is_none())
    return nullptr;
  if (py::isinstance<Value>(h))
    return h.cast<Value *>();
  return b.materialize(toOperand(h, b.loc()));
}

Attribute toAttribute(py::handle h) {
  if (py::isinstance<py::bool_>(h))
    return h.cast<bool>();
  if (PyLong_Check(h.ptr()))
    return h.cast<int64_t>();
  if (PyFloat_Check(h.ptr()))
    return h.cast<double>();
  if (py::isinstance<py::str>(h))
    return h.cast<std::string>();
  if (py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h)) {
    std::vector<int64_t> out;
    for (py::handle e : h) {
      if (py::isinstance<py::bool_>(e) || !PyLong_Check(e.ptr()))
        throw py::type_error("a list attribute holds ints only, got " +
                             pyTypeName(e));
      out.push_back(e.cast<int64_t>());
    }
    return out;
  }
  throw py::type_error(
      "attribute values are bool, int, float, str or list[int], got " +
      pyTypeName(h));
}

// ---------------------------------------------------------------------------
// IR classes
// ---------------------------------------------------------------------------

namespace {

template <typename T> void identityOps(py::class_<T, Borrowed<T>> &c) {
  c.def("__eq__", [](const T &a, py::object b) {
     return py::isinstance<T>(b) && &a == b.cast<const T *>();
   }).def("__hash__", [](const T &a) { return std::hash<const void *>()(&a); });
}

std::vector<int64_t> checkedShape(const std::vector<int64_t> &shape) {
  int64_t elements = 1;
  for (int64_t d : shape) {
    if (d <= 0)
      throw py::value_error("tensor dimensions must be positive");
    if (d > kMaxTensorElements / elements)
      throw py::value_error("a tensor has at most 2^31 elements");
    elements *= d;
  }
  return shape;
}

} // namespace

void bindIR(py::module_ &m) {
  // ---- Type ----------------------------------------------------------------
  py::class_<Type, Borrowed<Type>> type(m, "Type");
  type.def_static(
          "scalar",
          [](const std::string &name) {
            return Type::scalar(parseDTypeArg(name));
          },
          py::arg("name"), py::return_value_policy::reference)
      .def_static(
          "pointer",
          [](const Type *pointee, int addressSpace) {
            if (!pointee->isScalar())
              throw py::value_error(
                  "a pointer's pointee must be a scalar type, got " +
                  pointee->str());
            return Type::pointer(pointee, addressSpace);
          },
          py::arg("pointee"), py::arg("address_space") = 1,
          py::return_value_policy::reference)
      .def_static(
          "tensor",
          [](const Type *element, const std::vector<int64_t> &shape) {
            if (element->isTensor())
              throw py::value_error(
                  "a tensor's element must be a scalar or pointer "
                  "type, got " +
                  element->str());
            if (shape.empty())
              throw py::value_error("a tensor needs at least one dimension");
            return Type::tensor(element, checkedShape(shape));
          },
          py::arg("element"), py::arg("shape"),
          py::return_value_policy::reference)
      .def_property_readonly("is_scalar", &Type::isScalar)
      .def_property_readonly("is_pointer", &Type::isPointer)
      .def_property_readonly("is_tensor", &Type::isTensor)
      .def_property_readonly("dtype",
                             [](const Type &t) -> py::object {
                               if (!t.isScalar())
                                 return py::none();
                               return py::str(dtypeName(t.dtype()));
                             })
      .def_property_readonly(
          "pointee",
          [](const Type &t) { return t.isPointer() ? t.pointee() : nullptr; },
          py::return_value_policy::reference)
      .def_property_readonly(
          "element",
          [](const Type &t) { return t.isTensor() ? t.element() : nullptr; },
          py::return_value_policy::reference)
      .def_property_readonly("address_space",
                             [](const Type &t) -> py::object {
                               if (!t.isPointer())
                                 return py::none();
                               return py::int_(t.addressSpace());
                             })
      .def_property_readonly("shape", [](const Type &t) { return t.shape(); })
      .def_property_readonly("scalar_type", &Type::scalarType,
                             py::return_value_policy::reference)
      .def_property_readonly("is_float_like", &Type::isFloatLike)
      .def_property_readonly("is_int_like", &Type::isIntLike)
      .def_property_readonly("is_pointer_like", &Type::isPointerLike)
      .def("__str__", &Type::str)
      .def("__repr__", [](const Type &t) { return "Type(" + t.str() + ")"; });
  identityOps(type);

  // ---- Value ---------------------------------------------------------------
  py::class_<Value, Borrowed<Value>> value(m, "Value");
  value
      .def_property_readonly("type", &Value::type,
                             py::return_value_policy::reference)
      .def_readwrite("name_hint", &Value::nameHint)
      .def_property_readonly("defining_op",
                             [](py::object self) {
                               return wrapRef(
                                   self.cast<Value *>()->definingOp(), self);
                             })
      .def("__repr__", [](const Value &v) {
        std::string s = "<tritium._C.Value ";
        if (!v.nameHint.empty())
          s += v.nameHint + " ";
        return s + v.type()->str() + ">";
      });
  identityOps(value);

  // ---- Block ---------------------------------------------------------------
  py::class_<Block, Borrowed<Block>> block(m, "Block");
  block
      .def_property_readonly("args",
                             [](py::object self) {
                               Block *b = self.cast<Block *>();
                               std::vector<Value *> vs;
                               for (auto &a : b->arguments())
                                 vs.push_back(a.get());
                               return wrapList(vs, self);
                             })
      .def("arg", &Block::argument, py::arg("i"),
           py::return_value_policy::reference_internal)
      .def_property_readonly("num_args", &Block::numArguments)
      .def("add_argument", &Block::addArgument, py::arg("type"),
           py::return_value_policy::reference_internal)
      .def_property_readonly("num_ops",
                             [](const Block &b) { return b.ops().size(); })
      .def_property_readonly("ops", [](py::object self) {
        std::vector<Operation *> ops;
        for (auto &op : self.cast<Block *>()->ops())
          ops.push_back(op.get());
        return wrapList(ops, self);
      });
  identityOps(block);

  // ---- Operation -----------------------------------------------------------
  py::class_<Operation, Borrowed<Operation>> op(m, "Operation");
  op.def_property_readonly(
        "name", [](const Operation &o) { return std::string(o.name()); })
      .def_property_readonly("results",
                             [](py::object self) {
                               return wrapList(
                                   self.cast<Operation *>()->results(), self);
                             })
      .def("result", &Operation::result, py::arg("i") = 0,
           py::return_value_policy::reference_internal)
      .def_property_readonly("num_results", &Operation::numResults)
      .def_property_readonly("operands",
                             [](py::object self) {
                               return wrapList(
                                   self.cast<Operation *>()->operands(), self);
                             })
      .def_property_readonly("num_regions", &Operation::numRegions)
      // The Python source position the op came from: (file, line, col), or
      // None when unknown (ops parsed from text without loc(...)).
      .def_property_readonly("loc",
                             [](const Operation &o) -> py::object {
                               const Location &l = o.loc();
                               if (!l.known() || l.implicit)
                                 return py::none();
                               return py::make_tuple(l.file, l.line, l.col);
                             })
      .def(
          "body",
          [](Operation &o, unsigned i) {
            if (i >= o.numRegions())
              throw py::index_error(std::string(o.name()) + " has " +
                                    std::to_string(o.numRegions()) +
                                    " region(s), no region " +
                                    std::to_string(i));
            Region &r = o.region(i);
            if (r.empty())
              r.addBlock();
            return &r.front();
          },
          py::arg("i") = 0, py::return_value_policy::reference_internal)
      .def(
          "set_attr",
          [](Operation &o, const std::string &name, py::handle v) {
            o.setAttr(name, toAttribute(v));
          },
          py::arg("name"), py::arg("value"))
      .def("__str__", [](const Operation &o) { return print(o); });
  identityOps(op);

  // ---- Function ------------------------------------------------------------
  py::class_<Function, Borrowed<Function>> fn(m, "Function");
  fn.def_property_readonly("name", &Function::name)
      .def("arg", &Function::arg, py::arg("i"),
           py::return_value_policy::reference_internal)
      .def_property_readonly("num_args", &Function::numArgs)
      .def_property_readonly(
          "body", [](Function &f) { return &f.entry(); },
          py::return_value_policy::reference_internal)
      .def_property_readonly(
          "result_types",
          [](const Function &f) {
            py::list out;
            for (const Type *t : f.resultTypes())
              out.append(py::cast(t, py::return_value_policy::reference));
            return out;
          })
      .def(
          "set_arg_attr",
          [](Function &f, unsigned i, const std::string &name, py::handle v) {
            if (i >= f.numArgs())
              throw py::index_error("function '" + f.name() + "' has " +
                                    std::to_string(f.numArgs()) +
                                    " arguments, no argument " +
                                    std::to_string(i));
            if (f.argAttrs().size() < f.numArgs())
              f.argAttrs().resize(f.numArgs());
            f.argAttrs()[i][name] = toAttribute(v);
          },
          py::arg("i"), py::arg("name"), py::arg("value"))
      .def(
          "set_attr",
          [](Function &f, const std::string &name, py::handle v) {
            f.attrs()[name] = toAttribute(v);
          },
          py::arg("name"), py::arg("value"))
      .def("__str__", [](const Function &f) { return print(f); });
  identityOps(fn);

  // ---- Module --------------------------------------------------------------
  py::class_<Module, std::shared_ptr<Module>>(m, "Module")
      .def(py::init<>())
      .def_property_readonly("functions",
                             [](py::object self) {
                               std::vector<Function *> fs;
                               for (auto &f : self.cast<Module &>().functions())
                                 fs.push_back(f.get());
                               return wrapList(fs, self);
                             })
      .def("lookup", &Module::lookup, py::arg("name"),
           py::return_value_policy::reference_internal)
      .def("clone",
           [](const Module &mod) {
             return std::shared_ptr<Module>(mod.clone());
           })
      .def("__str__", [](const Module &mod) { return print(mod); });
}

} // namespace tritium::bindings
