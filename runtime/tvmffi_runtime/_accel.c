/*
 * tvmffi_runtime._accel: the optional compiled fast path of the ctypes runtime.
 *
 * The runtime is complete in Python over ctypes; this module only takes over the paths a
 * ctypes call cannot make fast: packing arguments and calling TVMFFIFunctionCall, turning
 * results into Python values, Python callbacks called from native code, reading and writing
 * fields in object memory, and releasing object handles. Everything it cannot do quickly it
 * hands back to the Python functions given to init(), so the two paths convert identically.
 *
 * It links against nothing but Python: the TVM FFI entry points arrive as addresses from the
 * ctypes-loaded libtvm_ffi, and the few C ABI structures it touches are declared below
 * (c_api.h: TVMFFIAny, the TVMFFIObject header, TVMFFIByteArray).
 *
 * One translation unit in parts: this file holds the ABI declarations, the hooks and error
 * builders init() receives, and the module; _accel_parts/ holds the sections between, one
 * topic each, included in dependency order below (everything stays static to this unit).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------- */
/* The C ABI of TVM FFI (stable; mirrored in _lib.py, which checks the sizes)                 */
/* ---------------------------------------------------------------------------------------- */
typedef struct {
  int32_t type_index;
  uint32_t small_len;
  union {
    int64_t v_int64;
    double v_float64;
    void* v_ptr;
    char v_bytes[8];
  };
} FFIAny;

typedef struct {
  uint64_t combined_ref_count;
  int32_t type_index;
  uint32_t padding;
  void* deleter;
} FFIObjectHeader;

typedef struct {
  const char* data;
  size_t size;
} FFIByteArray;

enum {
  TI_NONE = 0, TI_INT = 1, TI_BOOL = 2, TI_FLOAT = 3, TI_RAW_STR = 8, TI_SMALL_STR = 11,
  TI_DL_TENSOR_PTR = 7, TI_SMALL_BYTES = 12, TI_OBJECT_BEGIN = 64, TI_STR = 65, TI_BYTES = 66, TI_FUNCTION = 68,
  TI_TENSOR = 70
};
#define STACK_ARGS 8 /* arguments packed (and callback arguments converted) on the C stack */

typedef int (*SafeCall)(void*, const FFIAny*, int32_t, FFIAny*);
static int (*ffi_call)(void*, FFIAny*, int32_t, FFIAny*);
static int (*ffi_incref)(void*);
static int (*ffi_decref)(void*);
static int (*ffi_function_create)(void*, SafeCall, void (*)(void*), void**);
static void (*ffi_error_move_from_raised)(void**);
static void (*ffi_error_set_raised_from_cstr)(const char*, const char*);

/* Python hooks given to init(): the general (slow) conversions of the Python runtime. */
static PyObject* class_cache;       /* dict: type index -> wrapper class */
static PyObject* object_return;     /* dict: type index -> converter(handle) for str, bytes... */
static PyObject* hook_class_for_index;
static PyObject* hook_pack_slow;    /* (address, value, temps) -> None */
static PyObject* hook_pack_error;   /* (name, value, position, exc) -> exception to raise */
static PyObject* hook_fetch_error;  /* () -> exception of the raised native error */
static PyObject* hook_view_slow;    /* (address) -> value of a borrowed Any */
static PyObject* hook_owned_slow;   /* (address) -> value of an owned Any (takes it over) */
static PyObject* hook_to_owned;     /* (value, address) -> None: write an owned Any */
static PyObject* hook_raise_into_native; /* (exc) -> None */
static PyObject* hook_release_temps;     /* (temps) -> None */
static PyObject* hook_walk_result;  /* (value, address) -> None: a walk handler's result */
static int initialised = 0;
static PyObject* unchanged; /* structural.UNCHANGED: written as the UNCHANGED POD value */

static Py_ssize_t live_callbacks = 0; /* Python callables native Functions can call */

/* The errors the Python runtime words: init() is given the builders (_errors.BACKEND_ERRORS,
   by these names) and an error path calls one to make the exception it raises, so both paths
   raise the same message from one definition. Error paths are cold: a Python call is fine. */
enum {
  E_NOT_CALLABLE,        /* (fn) */
  E_FIELD_VALUE,         /* (qualname, kind, value) */
  E_FIELD_OVERFLOW,      /* (qualname, int value) */
  E_FIELD_NOT_AN_OBJECT, /* (qualname, obj) */
  E_FIELD_RELEASED,      /* (qualname, obj) */
  E_FIELD_READ_ONLY,     /* (qualname) */
  E_FIELD_DELETE,        /* (qualname) */
  E_FIELD_KIND,          /* (qualname, kind) */
  E_FIELD_IN_PLACE,      /* (qualname, kind) */
  E_ARITY,               /* (function name, arity, given) */
  E_NO_KEYWORDS,         /* (function name) */
  E_INIT_RESULT,         /* (type key, value) */
  E_INDEX,               /* (class name, index, length) */
  E_RELEASED,            /* (obj) */
  E_COUNT
};
static const char* error_names[E_COUNT] = {
    "not_callable", "field_value", "field_overflow", "field_not_an_object", "field_released",
    "field_read_only", "field_delete", "field_kind", "field_in_place", "arity", "no_keywords",
    "init_result", "index", "released"};
static PyObject* error_makers[E_COUNT];
/* (kind, message) bytes of the native error raised when converting a callback's exception
   fails (_errors.CONVERSION_FAILED), then the pair used when that exception is a RecursionError
   (_errors.RECURSION_IN_CALLBACK): kept, as Python may not be callable then */
static PyObject* conversion_failed;

/* Raise error ``which`` made by its builder from ``args``, replacing any exception set; -1. */
static int raise_error(int which, PyObject* const* args, size_t n) {
  PyErr_Clear();
  PyObject* exc = PyObject_Vectorcall(error_makers[which], args, n, NULL);
  if (exc != NULL) {
    PyErr_SetObject((PyObject*)Py_TYPE(exc), exc);
    Py_DECREF(exc);
  }
  return -1;
}
#define RAISE_ERROR(which, ...) \
  raise_error((which), (PyObject* const[]){__VA_ARGS__}, sizeof((PyObject* const[]){__VA_ARGS__}) / sizeof(PyObject*))

/* The parts, in dependency order (each one a section of this translation unit). */
#include "_accel_parts/objects.h"
#include "_accel_parts/dlpack.h"
#include "_accel_parts/callbacks.h"
#include "_accel_parts/calls.h"
#include "_accel_parts/lazy_function.h"
#include "_accel_parts/fields.h"
#include "_accel_parts/graph.h"
#include "_accel_parts/containers.h"

/* ---------------------------------------------------------------------------------------- */
/* Module                                                                                     */
/* ---------------------------------------------------------------------------------------- */
static int take_address(PyObject* dict, const char* name, void** out) {
  PyObject* v = PyDict_GetItemString(dict, name);
  if (v == NULL) {
    PyErr_Format(PyExc_KeyError, "init: missing %s", name);
    return -1;
  }
  *out = PyLong_AsVoidPtr(v);
  if (*out == NULL && !PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "init: %s is a null address", name);
  return *out == NULL ? -1 : 0;
}

static int take_hook(PyObject* dict, const char* name, PyObject** out) {
  PyObject* v = PyDict_GetItemString(dict, name);
  if (v == NULL) {
    PyErr_Format(PyExc_KeyError, "init: missing %s", name);
    return -1;
  }
  Py_INCREF(v);
  Py_XSETREF(*out, v);
  return 0;
}

/* init(addresses: dict[str, int], helpers: dict[str, object]): the Python side C calls, handed
   over by the runtime's wiring point (_wiring.py: BACKEND_HELPERS); C keeps a reference to each. */
static PyObject* accel_init(PyObject* mod, PyObject* args) {
  static PyObject* errors; /* name -> builder of that error (see error_names) */
  PyObject *addrs, *hooks;
  if (!PyArg_ParseTuple(args, "O!O!:init", &PyDict_Type, &addrs, &PyDict_Type, &hooks)) return NULL;
  if (take_address(addrs, "TVMFFIFunctionCall", (void**)&ffi_call) < 0 ||
      take_address(addrs, "TVMFFIObjectIncRef", (void**)&ffi_incref) < 0 ||
      take_address(addrs, "TVMFFIObjectDecRef", (void**)&ffi_decref) < 0 ||
      take_address(addrs, "TVMFFIFunctionCreate", (void**)&ffi_function_create) < 0 ||
      take_address(addrs, "TVMFFIErrorMoveFromRaised", (void**)&ffi_error_move_from_raised) < 0 ||
      take_address(addrs, "TVMFFIErrorSetRaisedFromCStr", (void**)&ffi_error_set_raised_from_cstr) < 0 ||
      take_address(addrs, "TVMFFITensorFromDLPack", (void**)&ffi_tensor_from_dlpack) < 0 ||
      take_address(addrs, "TVMFFITensorFromDLPackVersioned", (void**)&ffi_tensor_from_dlpack_versioned) < 0 ||
      take_address(addrs, "TVMFFITensorToDLPack", (void**)&ffi_tensor_to_dlpack) < 0 ||
      take_address(addrs, "TVMFFITensorToDLPackVersioned", (void**)&ffi_tensor_to_dlpack_versioned) < 0)
    return NULL;
  if (take_hook(hooks, "class_cache", &class_cache) < 0 || take_hook(hooks, "object_return", &object_return) < 0 ||
      take_hook(hooks, "class_for_index", &hook_class_for_index) < 0 ||
      take_hook(hooks, "pack_slow", &hook_pack_slow) < 0 || take_hook(hooks, "pack_error", &hook_pack_error) < 0 ||
      take_hook(hooks, "fetch_error", &hook_fetch_error) < 0 || take_hook(hooks, "view_slow", &hook_view_slow) < 0 ||
      take_hook(hooks, "owned_slow", &hook_owned_slow) < 0 || take_hook(hooks, "to_owned", &hook_to_owned) < 0 ||
      take_hook(hooks, "raise_into_native", &hook_raise_into_native) < 0 ||
      take_hook(hooks, "release_temps", &hook_release_temps) < 0 ||
      take_hook(hooks, "walk_result", &hook_walk_result) < 0 ||
      take_hook(hooks, "array_ctor", &hook_array_ctor) < 0 ||
      take_hook(hooks, "conversion_failed", &conversion_failed) < 0 || take_hook(hooks, "errors", &errors) < 0 ||
      take_hook(hooks, "other_bindings", &other_binding_modules) < 0 ||
      take_hook(hooks, "global_handle", &hook_global_handle) < 0 ||
      take_hook(hooks, "map_missing", &hook_map_missing) < 0 ||
      take_hook(hooks, "map_functions", &map_function_names) < 0)
    return NULL;
  if (!PyTuple_Check(other_binding_modules)) {
    PyErr_SetString(PyExc_TypeError, "init: other_bindings must be a tuple of module names");
    return NULL;
  }
  if (!PyDict_Check(class_cache) || !PyDict_Check(object_return) || !PyDict_Check(errors) ||
      !PyDict_Check(map_function_names)) {
    PyErr_SetString(PyExc_TypeError, "init: class_cache, object_return, errors and map_functions must be dicts");
    return NULL;
  }
  int bytes_ok = PyTuple_Check(conversion_failed) && PyTuple_GET_SIZE(conversion_failed) == 4;
  for (Py_ssize_t i = 0; bytes_ok && i < 4; ++i) bytes_ok = PyBytes_Check(PyTuple_GET_ITEM(conversion_failed, i));
  if (!bytes_ok) {
    PyErr_SetString(PyExc_TypeError,
                    "init: conversion_failed must be a (kind, message, recursion kind, recursion message) tuple of bytes");
    return NULL;
  }
  for (int i = 0; i < E_COUNT; ++i) {
    if (take_hook(errors, error_names[i], &error_makers[i]) < 0) return NULL;
  }
  initialised = 1;
  Py_RETURN_NONE;
}

static PyMethodDef accel_methods[] = {
    {"init", accel_init, METH_VARARGS, "init(addresses, helpers): connect to libtvm_ffi and to the Python runtime."},
    {"call", (PyCFunction)(void (*)(void))accel_call, METH_FASTCALL, "call(handle, args, name=None) -> result"},
    {"construct", (PyCFunction)(void (*)(void))accel_construct, METH_FASTCALL,
     "construct(self, handle, args, name, type_key): self owns what __ffi_init__ returns"},
    {"function_create", (PyCFunction)(void (*)(void))accel_function_create, METH_FASTCALL,
     "function_create(fn, mode) -> owned handle of a native Function calling fn"},
    {"callback_function", (PyCFunction)(void (*)(void))accel_callback_function, METH_FASTCALL,
     "callback_function(cls, fn, mode) -> Function wrapper (the GC sees fn through it)"},
    {"tensor_from_dlpack", (PyCFunction)(void (*)(void))accel_tensor_from_dlpack, METH_FASTCALL,
     "tensor_from_dlpack(obj, dtype=None) -> owned handle of a Tensor viewing obj (DLPack, no copy)"},
    {"tensor_of_dlpack", accel_tensor_of_dlpack, METH_O, "tensor_of_dlpack(obj) -> a Tensor viewing obj (Tensor.from_dlpack)"},
    {"set_dlpack_fallback", accel_set_dlpack_fallback, METH_O,
     "set_dlpack_fallback(fn): fn(obj, exc) -> Tensor or None, asked by tensor_of_dlpack after a BufferError"},
    {"view_dltensor", accel_view_dltensor, METH_O, "view_dltensor(address) -> Tensor over a borrowed DLTensor*"},
    {"live_tensor_views", accel_live_tensor_views, METH_NOARGS, "number of live Tensor views of borrowed DLTensors"},
    {"set_unchanged", accel_set_unchanged, METH_O, "set_unchanged(obj): what stands for kTVMFFIUnchanged"},
    {"live_callbacks", accel_live_callbacks, METH_NOARGS, "number of live native Functions made from callables"},
    {"set_gil_auto", accel_set_gil_auto, METH_O,
     "set_gil_auto(flag): keep the GIL over calls when no thread can want it"},
    {"graph_check", (PyCFunction)(void (*)(void))accel_graph_check, METH_FASTCALL,
     "graph_check(root, type_index, structural, cycles, limit, plan_for, map_edges) -> None or a refusal"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef accel_module = {
    PyModuleDef_HEAD_INIT, "_accel", "Compiled fast path of tvmffi_runtime (optional).", -1, accel_methods};

PyMODINIT_FUNC PyInit__accel(void) {
  /* object's own tp_new, so object.__new__(cls) makes wrappers as in the pure runtime */
  ObjectBaseType.tp_new = PyBaseObject_Type.tp_new;
  SeqBaseType.tp_base = MapBaseType.tp_base = ShapeBaseType.tp_base = &ObjectBaseType;
  if (PyType_Ready(&ObjectBaseType) < 0 || PyType_Ready(&LazyFunctionType) < 0 || PyType_Ready(&FieldType) < 0 ||
      PyType_Ready(&SeqBaseType) < 0 || PyType_Ready(&MapBaseType) < 0 || PyType_Ready(&ShapeBaseType) < 0 ||
      PyType_Ready(&ShapeIterType) < 0)
    return NULL;
  PyObject* m = PyModule_Create(&accel_module);
  if (m == NULL) return NULL;
  Py_INCREF(&ObjectBaseType);
  Py_INCREF(&LazyFunctionType);
  Py_INCREF(&FieldType);
  /* Tensor.__dlpack__ / __dlpack_device__: methods of ObjectBase, bound on the Tensor class */
  PyObject* dlpack = PyDescr_NewMethod(&ObjectBaseType, &tensor_dlpack_def);
  PyObject* dlpack_device = PyDescr_NewMethod(&ObjectBaseType, &tensor_dlpack_device_def);
  const int added = dlpack != NULL && dlpack_device != NULL && PyModule_AddObjectRef(m, "tensor_dlpack", dlpack) == 0 &&
                    PyModule_AddObjectRef(m, "tensor_dlpack_device", dlpack_device) == 0;
  Py_XDECREF(dlpack);
  Py_XDECREF(dlpack_device);
  if (!added) {
    Py_DECREF(m);
    return NULL;
  }
  if (PyModule_AddObject(m, "ObjectBase", (PyObject*)&ObjectBaseType) < 0 ||
      PyModule_AddObject(m, "LazyFunction", (PyObject*)&LazyFunctionType) < 0 ||
      PyModule_AddObject(m, "Field", (PyObject*)&FieldType) < 0 ||
      PyModule_AddObjectRef(m, "SeqBase", (PyObject*)&SeqBaseType) < 0 ||
      PyModule_AddObjectRef(m, "MapBase", (PyObject*)&MapBaseType) < 0 ||
      PyModule_AddObjectRef(m, "ShapeBase", (PyObject*)&ShapeBaseType) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
