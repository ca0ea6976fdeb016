// Shared pieces of the pybind11 module tritium._C (see docs/bindings.md).
//
// Ownership: a Module is held by a std::shared_ptr; every IR object handed to
// Python (Value, Block, Operation, Function) is owned by the module and is
// returned as a non-owning reference that keeps its owner's Python object (a
// Builder, Module, Function, ...) alive, so the module outlives every handle.
// Types are interned for the life of the process and are never freed.
#pragma once

#include "tritium/ir/builder.h"
#include "tritium/ir/ir.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>

// These classes own their contents through vectors of unique_ptr, which
// std::is_copy_constructible cannot see through; tell pybind11 they are not
// copyable so it never instantiates a copy.
namespace pybind11::detail {
template <> struct is_copy_constructible<tritium::Module> : std::false_type {};
template <> struct is_copy_constructible<tritium::Function> : std::false_type {};
template <> struct is_copy_constructible<tritium::Operation> : std::false_type {};
template <> struct is_copy_constructible<tritium::Block> : std::false_type {};
template <> struct is_copy_constructible<tritium::Region> : std::false_type {};
template <> struct is_move_constructible<tritium::Module> : std::false_type {};
template <> struct is_move_constructible<tritium::Function> : std::false_type {};
template <> struct is_move_constructible<tritium::Operation> : std::false_type {};
template <> struct is_move_constructible<tritium::Block> : std::false_type {};
template <> struct is_move_constructible<tritium::Region> : std::false_type {};
} // namespace pybind11::detail

namespace tritium::bindings {

namespace py = pybind11;

/// Holder for objects Python never deletes (owned by a module or interned).
template <typename T> using Borrowed = std::unique_ptr<T, py::nodelete>;

/// Wraps an IR object owned elsewhere and ties its lifetime to `owner`
/// (reference_internal, usable for elements of lists and tuples too).
template <typename T> py::object wrapRef(T *obj, py::handle owner) {
  if (!obj)
    return py::none();
  py::object o = py::cast(obj, py::return_value_policy::reference);
  py::detail::keep_alive_impl(o, owner);
  return o;
}

template <typename T>
py::list wrapList(const std::vector<T *> &objs, py::handle owner) {
  py::list out;
  for (T *o : objs)
    out.append(wrapRef(o, owner));
  return out;
}

/// A dtype named as in the IR text ("f32", "i64") or as Triton names it
/// ("fp32", "int64"); raises ValueError otherwise.
DType parseDTypeArg(const std::string &name);

/// A Python operand of a semantic helper: Value, or a bool/int/float
/// literal (bool before int: Python's bool is an int). Ints in
/// [2^63, 2^64) become uint64 literals; ints beyond raise UserError at `loc`.
Operand toOperand(py::handle h, const Location &loc);

/// A Value argument that may also be given as a literal (materialised with
/// Triton's default types); None gives nullptr.
Value *toValueOrNull(Builder &b, py::handle h);

/// bool / int / float / str / list[int] -> Attribute (TypeError otherwise).
Attribute toAttribute(py::handle h);

void bindIR(py::module_ &m);
void bindBuilder(py::module_ &m);
void bindTools(py::module_ &m);
void bindRuntime(py::module_ &m); // lib/bindings/runtime.cpp (CUDA driver, ptxas, launcher)
void bindCompile(py::module_ &m); // lib/bindings/compile.cpp (compile_to_ptx, compile_batch)
void bindFastLaunch(py::module_ &m); // lib/bindings/fast_launch.cpp (after bindRuntime)
void bindInductorLaunch(py::module_ &m); // lib/bindings/inductor_launch.cpp (after bindRuntime)

} // namespace tritium::bindings
