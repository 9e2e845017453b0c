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
  TI_SMALL_BYTES = 12, TI_OBJECT_BEGIN = 64, TI_STR = 65, TI_BYTES = 66
};

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
  E_COUNT
};
static const char* error_names[E_COUNT] = {
    "not_callable", "field_value", "field_overflow", "field_not_an_object", "field_released",
    "field_read_only", "field_delete", "field_kind", "field_in_place", "arity", "no_keywords",
    "init_result"};
static PyObject* error_makers[E_COUNT];
/* (kind, message) bytes of the native error raised when converting a callback's exception
   fails (_errors.CONVERSION_FAILED): kept, as Python may not be callable then */
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

/* ---------------------------------------------------------------------------------------- */
/* ObjectBase: the handle-owning base of every Object wrapper                                 */
/* ---------------------------------------------------------------------------------------- */
/* The resource of a native Function made from a Python callable: it owns the callable. */
typedef struct {
  PyObject* fn;
  int mode;
} Callback;

typedef struct {
  PyObject_HEAD
  void* h;      /* owned TVMFFIObject*, or NULL once moved / released */
  int32_t t;    /* its type index */
  Callback* cb; /* set on the wrapper that made a Function from a Python callable */
} ObjectBase;

static PyTypeObject ObjectBaseType;

static inline uint32_t strong_count_of(void* h) {
  return (uint32_t)(__atomic_load_n(&((FFIObjectHeader*)h)->combined_ref_count, __ATOMIC_RELAXED) & 0xFFFFFFFFu);
}

/* The callable of a Function made from Python is owned by the native Function. While this
   wrapper is the Function's only owner, the edge wrapper -> callable is reported to the GC, so
   a cycle through the callable (an object holding a Function of its own method) is collected.
   With other native owners the edge is not reported: the callable is then kept alive. */
static int object_base_traverse(PyObject* self, visitproc visit, void* arg) {
  ObjectBase* o = (ObjectBase*)self;
  if (o->cb != NULL && o->h != NULL && strong_count_of(o->h) == 1) Py_VISIT(o->cb->fn);
  return 0;
}

/* Breaking a cycle: the wrapper of such a Function lets go of it (and so of the callable). */
static int object_base_clear(PyObject* self) {
  ObjectBase* o = (ObjectBase*)self;
  if (o->cb != NULL) {
    void* h = o->h;
    o->h = NULL;
    o->cb = NULL;
    if (h != NULL) ffi_decref(h);
  }
  return 0;
}

static void object_base_dealloc(PyObject* self) {
  ObjectBase* o = (ObjectBase*)self;
  PyObject_GC_UnTrack(self);
  void* h = o->h;
  o->h = NULL;
  o->cb = NULL;
  if (h != NULL) ffi_decref(h);
  Py_TYPE(self)->tp_free(self);
}

static PyObject* get_handle(PyObject* self, void* closure) {
  return PyLong_FromVoidPtr(((ObjectBase*)self)->h);
}

static int set_handle(PyObject* self, PyObject* value, void* closure) {
  if (value == NULL) {
    PyErr_SetString(PyExc_AttributeError, "cannot delete _h");
    return -1;
  }
  if (PyBool_Check(value)) {
    PyErr_SetString(PyExc_TypeError, "_h must be an address (int), not bool");
    return -1;
  }
  void* h = PyLong_AsVoidPtr(value);
  if (h == NULL && PyErr_Occurred()) return -1;
  ObjectBase* o = (ObjectBase*)self;
  if (h != o->h) o->cb = NULL; /* no longer the wrapper that made that Function */
  o->h = h;
  return 0;
}

static PyObject* get_tindex(PyObject* self, void* closure) {
  return PyLong_FromLong(((ObjectBase*)self)->t);
}

static int set_tindex(PyObject* self, PyObject* value, void* closure) {
  if (value == NULL) {
    PyErr_SetString(PyExc_AttributeError, "cannot delete _t");
    return -1;
  }
  long t = PyLong_AsLong(value);
  if (t == -1 && PyErr_Occurred()) return -1;
  if (t < INT32_MIN || t > INT32_MAX) {
    PyErr_SetString(PyExc_OverflowError, "_t (a type index) must fit int32");
    return -1;
  }
  ((ObjectBase*)self)->t = (int32_t)t;
  return 0;
}

static PyGetSetDef object_base_getset[] = {
    {"_h", get_handle, set_handle, "address of the owned TVMFFIObject (0 when released)", NULL},
    {"_t", get_tindex, set_tindex, "type index of the object", NULL},
    {NULL}};

static PyTypeObject ObjectBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tvmffi_runtime._accel.ObjectBase",
    .tp_basicsize = sizeof(ObjectBase),
    .tp_dealloc = object_base_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = object_base_traverse,
    .tp_clear = object_base_clear,
    .tp_free = PyObject_GC_Del,
    .tp_doc = "Owns one reference to a TVM FFI object; released when the wrapper dies.",
    .tp_getset = object_base_getset,
    /* no tp_new: object.__new__ (inherited) makes wrappers, as the pure-Python runtime does */
};

static inline int is_object(PyObject* v) { return PyObject_TypeCheck(v, &ObjectBaseType); }

/* ---------------------------------------------------------------------------------------- */
/* Native values -> Python                                                                    */
/* ---------------------------------------------------------------------------------------- */
static PyObject* str_of_cell(void* h) {
  FFIByteArray* ba = (FFIByteArray*)((char*)h + sizeof(FFIObjectHeader));
  return PyUnicode_DecodeUTF8(ba->data, (Py_ssize_t)ba->size, "surrogateescape");
}

/* Wrap an owned object handle in its Python class (or value); takes over the reference. */
static PyObject* wrap_owned(void* h, int32_t ti) {
  if (ti == TI_STR || ti == TI_BYTES) {
    FFIByteArray* ba = (FFIByteArray*)((char*)h + sizeof(FFIObjectHeader));
    PyObject* r = ti == TI_STR ? PyUnicode_DecodeUTF8(ba->data, (Py_ssize_t)ba->size, "surrogateescape")
                               : PyBytes_FromStringAndSize(ba->data, (Py_ssize_t)ba->size);
    ffi_decref(h);
    return r;
  }
  PyObject* key = PyLong_FromLong(ti);
  if (key == NULL) goto fail;
  /* types that come back as plain values (BigInt, Error, ...) first, like _core._wrap */
  PyObject* conv = PyDict_GetItemWithError(object_return, key);
  if (conv != NULL) {
    Py_INCREF(conv); /* held across the call: the dict may change meanwhile */
    Py_DECREF(key);
    PyObject* addr = PyLong_FromVoidPtr(h);
    if (addr == NULL) {
      Py_DECREF(conv);
      goto fail;
    }
    PyObject* r = PyObject_CallOneArg(conv, addr); /* takes over the reference */
    Py_DECREF(addr);
    Py_DECREF(conv);
    return r;
  }
  PyObject* cls = PyErr_Occurred() ? NULL : PyDict_GetItemWithError(class_cache, key);
  if (cls != NULL) {
    Py_INCREF(cls); /* held across tp_alloc (which may run the GC) */
  } else {
    if (PyErr_Occurred()) {
      Py_DECREF(key);
      goto fail;
    }
    cls = PyObject_CallOneArg(hook_class_for_index, key);
    if (cls == NULL) {
      Py_DECREF(key);
      goto fail;
    }
  }
  Py_DECREF(key);
  if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject*)cls, &ObjectBaseType)) {
    PyErr_Format(PyExc_TypeError, "wrapper class for type index %d is not an Object class", (int)ti);
    Py_DECREF(cls);
    goto fail;
  }
  PyTypeObject* tp = (PyTypeObject*)cls;
  PyObject* o = tp->tp_alloc(tp, 0);
  Py_DECREF(cls);
  if (o == NULL) goto fail;
  ((ObjectBase*)o)->h = h;
  ((ObjectBase*)o)->t = ti;
  return o;
fail:
  ffi_decref(h);
  return NULL;
}

/* An owned Any (a call result) as a Python value; takes over its reference. */
static PyObject* owned_to_py(FFIAny* a) {
  switch (a->type_index) {
    case TI_NONE: Py_RETURN_NONE;
    case TI_INT: return PyLong_FromLongLong(a->v_int64);
    case TI_BOOL: return PyBool_FromLong(a->v_int64 != 0);
    case TI_FLOAT: return PyFloat_FromDouble(a->v_float64);
    case TI_SMALL_STR: return PyUnicode_DecodeUTF8(a->v_bytes, a->small_len, "surrogateescape");
    case TI_SMALL_BYTES: return PyBytes_FromStringAndSize(a->v_bytes, a->small_len);
    default: break;
  }
  if (a->type_index >= TI_OBJECT_BEGIN) return wrap_owned(a->v_ptr, a->type_index);
  PyObject* addr = PyLong_FromVoidPtr(a);
  if (addr == NULL) return NULL;
  PyObject* r = PyObject_CallOneArg(hook_owned_slow, addr);
  Py_DECREF(addr);
  return r;
}

/* A borrowed Any (callback argument, field) as a Python value; objects get a new reference. */
static PyObject* view_to_py(const FFIAny* a) {
  switch (a->type_index) {
    case TI_NONE: Py_RETURN_NONE;
    case TI_INT: return PyLong_FromLongLong(a->v_int64);
    case TI_BOOL: return PyBool_FromLong(a->v_int64 != 0);
    case TI_FLOAT: return PyFloat_FromDouble(a->v_float64);
    case TI_SMALL_STR: return PyUnicode_DecodeUTF8(a->v_bytes, a->small_len, "surrogateescape");
    case TI_SMALL_BYTES: return PyBytes_FromStringAndSize(a->v_bytes, a->small_len);
    case TI_STR: return str_of_cell(a->v_ptr);
    default: break;
  }
  if (a->type_index >= TI_OBJECT_BEGIN) {
    ffi_incref(a->v_ptr);
    return wrap_owned(a->v_ptr, a->type_index);
  }
  PyObject* addr = PyLong_FromVoidPtr((void*)a);
  if (addr == NULL) return NULL;
  PyObject* r = PyObject_CallOneArg(hook_view_slow, addr);
  Py_DECREF(addr);
  return r;
}

/* ---------------------------------------------------------------------------------------- */
/* Python -> native values                                                                    */
/* ---------------------------------------------------------------------------------------- */
/* Pack the kinds every call sees as a view; 1 when the value needs the general packer. */
static int pack_fast(FFIAny* out, PyObject* v) {
  PyTypeObject* t = Py_TYPE(v);
  out->small_len = 0;
  if (t == &PyLong_Type) {
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow) return 1;
    out->type_index = TI_INT;
    out->v_int64 = x;
    return 0;
  }
  if (t == &PyFloat_Type) {
    out->type_index = TI_FLOAT;
    out->v_float64 = PyFloat_AS_DOUBLE(v);
    return 0;
  }
  if (v == Py_None) {
    out->type_index = TI_NONE;
    out->v_int64 = 0;
    return 0;
  }
  if (t == &PyBool_Type) {
    out->type_index = TI_BOOL;
    out->v_int64 = v == Py_True;
    return 0;
  }
  if (t == &PyUnicode_Type) {
    Py_ssize_t n;
    const char* s = PyUnicode_AsUTF8AndSize(v, &n);
    if (s == NULL) { /* lone surrogates: the general packer encodes with surrogateescape */
      PyErr_Clear();
      return 1;
    }
    if (n <= 7) {
      out->type_index = TI_SMALL_STR;
      out->small_len = (uint32_t)n;
      out->v_int64 = 0;
      memcpy(out->v_bytes, s, (size_t)n);
      return 0;
    }
    if (memchr(s, 0, (size_t)n) != NULL) return 1; /* embedded NUL: needs a String object */
    out->type_index = TI_RAW_STR;                   /* borrowed: the str outlives the call */
    out->v_ptr = (void*)s;
    return 0;
  }
  if (is_object(v)) {
    ObjectBase* o = (ObjectBase*)v;
    if (o->h == NULL) return 1; /* moved or released: the general packer words the error */
    out->type_index = o->t;
    out->v_ptr = o->h;
    return 0;
  }
  return 1;
}

/* ---------------------------------------------------------------------------------------- */
/* Calling                                                                                    */
/* ---------------------------------------------------------------------------------------- */
#define STACK_ARGS 8
#define TI_FUNCTION 68

static void* make_callback(PyObject* fn, int mode, Callback** resource);

/* Python functions and methods passed straight to native code: a new native Function that
   owns the callable (released after the call, so it lives on only if native code kept it). */
static inline int is_plain_callable(PyObject* v) {
  PyTypeObject* t = Py_TYPE(v);
  return t == &PyFunction_Type || t == &PyMethod_Type || t == &PyCFunction_Type;
}

/* After a failed native call: the Python exception to raise (set), returning NULL. */
static PyObject* raise_native_error(void) {
  if (PyErr_Occurred()) {
    /* a signal handler ran inside the call (PyErr_CheckSignals through the env hook) and left
       its exception set; the native side raised EnvErrorAlreadySet: drop that one */
    void* err = NULL;
    ffi_error_move_from_raised(&err);
    if (err != NULL) ffi_decref(err);
    return NULL;
  }
  PyObject* exc = PyObject_CallNoArgs(hook_fetch_error);
  if (exc == NULL) return NULL;
  PyErr_SetObject((PyObject*)Py_TYPE(exc), exc);
  Py_DECREF(exc);
  return NULL;
}

static PyObject* hook_array_ctor; /* () -> the ffi.Array constructor Function */
static PyObject* array_ctor;      /* that Function, once asked for */
static PyObject* array_ctor_name; /* "ffi.Array", for argument errors */

static int call_raw(void* fh, PyObject* const* args, Py_ssize_t n, PyObject* name, FFIAny* result);

/* A list or tuple as an owned Array handle, built by ffi.Array from its items (packed by the
   same rules as arguments): what the Python packer does, without leaving C. */
static void* array_from_sequence(PyObject* v) {
  if (array_ctor == NULL) {
    PyObject* f = PyObject_CallNoArgs(hook_array_ctor);
    if (f == NULL) return NULL;
    if (!is_object(f) || ((ObjectBase*)f)->h == NULL) {
      Py_DECREF(f);
      PyErr_SetString(PyExc_TypeError, "ffi.Array constructor is not a Function");
      return NULL;
    }
    if (array_ctor == NULL) {
      array_ctor = f; /* kept for the life of the process */
    } else {
      Py_DECREF(f); /* another thread got there first */
    }
  }
  if (array_ctor_name == NULL && (array_ctor_name = PyUnicode_InternFromString("ffi.Array")) == NULL) return NULL;
  PyObject* items = PySequence_Tuple(v); /* a snapshot: packing may run Python code */
  if (items == NULL) return NULL;
  FFIAny made;
  if (Py_EnterRecursiveCall(" while converting a sequence to ffi.Array")) {
    Py_DECREF(items);
    return NULL;
  }
  int rc = call_raw(((ObjectBase*)array_ctor)->h, &PyTuple_GET_ITEM(items, 0), PyTuple_GET_SIZE(items), array_ctor_name, &made);
  Py_LeaveRecursiveCall();
  Py_DECREF(items);
  if (rc < 0) return NULL;
  if (made.type_index < TI_OBJECT_BEGIN) {
    PyErr_SetString(PyExc_TypeError, "ffi.Array constructor did not return an object");
    return NULL;
  }
  return made.v_ptr;
}

/* Pack what pack_fast does not: plain callables and lists/tuples in C (their new handles go
   to ``owned``), everything else through the Python packers (owned things go to ``temps``). */
static int pack_other(FFIAny* out, PyObject* v, void** owned, int* n_owned, PyObject** temps) {
  if (*n_owned < STACK_ARGS) {
    void* made = NULL;
    int32_t ti = 0;
    if (is_plain_callable(v)) {
      made = make_callback(v, 0, NULL);
      ti = TI_FUNCTION;
      if (made == NULL) return -1;
    } else if (PyList_CheckExact(v) || PyTuple_CheckExact(v)) {
      made = array_from_sequence(v);
      if (made == NULL) return -1;
      ti = ((FFIObjectHeader*)made)->type_index;
    }
    if (made != NULL) {
      owned[(*n_owned)++] = made;
      out->type_index = ti;
      out->small_len = 0;
      out->v_ptr = made;
      return 0;
    }
  }
  if (*temps == NULL && (*temps = PyList_New(0)) == NULL) return -1;
  PyObject* addr = PyLong_FromVoidPtr(out);
  if (addr == NULL) return -1;
  PyObject* r = PyObject_CallFunctionObjArgs(hook_pack_slow, addr, v, *temps, NULL);
  Py_DECREF(addr);
  if (r == NULL) return -1;
  Py_DECREF(r);
  return 0;
}

/* The exception set now becomes the one _core._pack_error words for argument ``i``. */
static void reword_pack_error(PyObject* name, PyObject* value, Py_ssize_t i) {
  PyObject *type, *exc_value, *tb;
  PyErr_Fetch(&type, &exc_value, &tb);
  PyErr_NormalizeException(&type, &exc_value, &tb);
  if (tb != NULL && exc_value != NULL) PyException_SetTraceback(exc_value, tb);
  PyObject* pos = PyLong_FromSsize_t(i);
  PyObject* exc = pos == NULL || exc_value == NULL
                      ? NULL
                      : PyObject_CallFunctionObjArgs(hook_pack_error, name ? name : Py_None, value, pos, exc_value, NULL);
  Py_XDECREF(pos);
  Py_XDECREF(type);
  Py_XDECREF(exc_value);
  Py_XDECREF(tb);
  if (exc != NULL) {
    PyErr_SetObject((PyObject*)Py_TYPE(exc), exc);
    Py_DECREF(exc);
  }
}

/* Whether a call releases the GIL around TVMFFIFunctionCall. Releasing costs two GIL hand-offs
   per call; it is needed only when some other thread could want the GIL meanwhile. GIL_AUTO
   keeps it when none can: this is the only Python thread, and native code holds no Python
   callable (ours: live_callbacks; another binding's, such as tvm_ffi's, once it is imported),
   so no thread of native code can call back into Python while the call runs. Signal checks
   from native code (TVMFFIEnvCheckSignals) take the GIL through PyGILState_Ensure, which this
   thread already holds, so Ctrl-C works either way. GIL_ALWAYS releases on every call. */
enum { GIL_AUTO = 0, GIL_ALWAYS = 1 };
static int gil_policy = GIL_AUTO;
static int other_binding_seen = 0;      /* sticky: a binding we cannot count callables of loaded */
static Py_ssize_t modules_seen = -1;    /* len(sys.modules) when last looked for one */
static PyObject* other_binding_modules; /* tuple of module names (given to init) */

static int other_binding_loaded(void) {
  if (other_binding_seen) return 1;
  PyObject* modules = PyImport_GetModuleDict();
  if (modules == NULL || !PyDict_Check(modules)) return 1;
  Py_ssize_t size = PyDict_GET_SIZE(modules);
  if (size == modules_seen) return 0; /* nothing imported since the last look */
  modules_seen = size;
  Py_ssize_t n = other_binding_modules == NULL ? 0 : PyTuple_GET_SIZE(other_binding_modules);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* found = PyDict_GetItemWithError(modules, PyTuple_GET_ITEM(other_binding_modules, i));
    if (found != NULL) {
      other_binding_seen = 1;
      return 1;
    }
    if (PyErr_Occurred()) {
      PyErr_Clear();
      return 1;
    }
  }
  return 0;
}

static inline int must_release_gil(void) {
  if (gil_policy != GIL_AUTO || live_callbacks != 0) return 1;
  PyThreadState* ts = PyThreadState_Get();
  PyThreadState* head = PyInterpreterState_ThreadHead(PyThreadState_GetInterpreter(ts));
  if (head != ts || PyThreadState_Next(ts) != NULL) return 1; /* another Python thread */
  return other_binding_loaded();
}

/* set_release_gil(policy) -> previous policy: "auto" or "always". */
static PyObject* accel_set_release_gil(PyObject* mod, PyObject* arg) {
  const char* previous = gil_policy == GIL_AUTO ? "auto" : "always";
  if (PyUnicode_Check(arg) && PyUnicode_CompareWithASCIIString(arg, "auto") == 0) {
    gil_policy = GIL_AUTO;
  } else if (PyUnicode_Check(arg) && PyUnicode_CompareWithASCIIString(arg, "always") == 0) {
    gil_policy = GIL_ALWAYS;
  } else {
    PyErr_Format(PyExc_ValueError, "set_release_gil: expected 'auto' or 'always', got %R", arg);
    return NULL;
  }
  return PyUnicode_FromString(previous);
}

/* Pack ``args`` and call; on success ``result`` holds the owned result (0), else -1 with an
   exception set. Everything made for the call is released before returning. */
static int call_raw(void* fh, PyObject* const* args, Py_ssize_t n, PyObject* name, FFIAny* result) {
  FFIAny stack[STACK_ARGS];
  FFIAny* buf = stack;
  PyObject* temps = NULL;
  void* owned[STACK_ARGS]; /* handles made here (callables, arrays), released after the call */
  int n_owned = 0;
  int status = -1;
  if (n > INT32_MAX) {
    PyErr_SetString(PyExc_OverflowError, "too many arguments");
    return -1;
  }
  if (n > STACK_ARGS) {
    buf = (FFIAny*)PyMem_Malloc(sizeof(FFIAny) * (size_t)n);
    if (buf == NULL) {
      PyErr_NoMemory();
      return -1;
    }
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (pack_fast(&buf[i], args[i]) == 0) continue;
    if (pack_other(&buf[i], args[i], owned, &n_owned, &temps) < 0) {
      reword_pack_error(name, args[i], i);
      goto done;
    }
  }
  result->type_index = TI_NONE;
  result->small_len = 0;
  result->v_int64 = 0;
  int rc;
  if (must_release_gil()) {
    Py_BEGIN_ALLOW_THREADS
    rc = ffi_call(fh, buf, (int32_t)n, result);
    Py_END_ALLOW_THREADS
  } else {
    rc = ffi_call(fh, buf, (int32_t)n, result);
  }
  if (rc != 0) {
    raise_native_error();
  } else if (PyErr_Occurred()) { /* a signal handler ran, but the call finished */
    if (result->type_index >= TI_OBJECT_BEGIN) ffi_decref(result->v_ptr);
  } else {
    status = 0;
  }
done:
  for (int k = 0; k < n_owned; ++k) ffi_decref(owned[k]);
  if (temps != NULL) {
    if (PyList_GET_SIZE(temps) != 0) {
      PyObject *type, *value, *tb;
      PyErr_Fetch(&type, &value, &tb);
      PyObject* r = PyObject_CallOneArg(hook_release_temps, temps);
      if (r == NULL) PyErr_WriteUnraisable(hook_release_temps);
      Py_XDECREF(r);
      PyErr_Restore(type, value, tb);
    }
    Py_DECREF(temps);
  }
  if (buf != stack) PyMem_Free(buf);
  return status;
}

static PyObject* call_packed(void* fh, PyObject* const* args, Py_ssize_t n, PyObject* name) {
  FFIAny result;
  if (call_raw(fh, args, n, name, &result) < 0) return NULL;
  return owned_to_py(&result);
}

static void* handle_of(PyObject* h) {
  if (PyBool_Check(h)) {
    PyErr_SetString(PyExc_TypeError, "call: the function handle must be an address, not bool");
    return NULL;
  }
  if (PyLong_Check(h)) return PyLong_AsVoidPtr(h);
  if (is_object(h)) return ((ObjectBase*)h)->h;
  PyObject* value = PyObject_GetAttrString(h, "value"); /* a ctypes c_void_p */
  if (value == NULL) return NULL;
  void* p = value == Py_None ? NULL : PyLong_AsVoidPtr(value);
  Py_DECREF(value);
  return p;
}

/* call(handle, args, name=None): what _core.ffi_call does, for any handle form. */
static PyObject* accel_call(PyObject* mod, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs < 2 || nargs > 3) {
    PyErr_SetString(PyExc_TypeError, "call(handle, args, name=None)");
    return NULL;
  }
  if (!initialised) {
    PyErr_SetString(PyExc_RuntimeError, "tvmffi_runtime._accel: init() was not called");
    return NULL;
  }
  void* fh = handle_of(args[0]);
  if (fh == NULL) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "call: null function handle");
    return NULL;
  }
  /* a tuple snapshot: packing may run Python code that changes a list given here */
  PyObject* seq = PyTuple_CheckExact(args[1]) ? Py_NewRef(args[1]) : PySequence_Tuple(args[1]);
  if (seq == NULL) return NULL;
  PyObject* r = call_packed(fh, &PyTuple_GET_ITEM(seq, 0), PyTuple_GET_SIZE(seq), nargs == 3 ? args[2] : Py_None);
  Py_DECREF(seq);
  return r;
}

/* construct(self, handle, args, name, type_key): call the __ffi_init__ Function ``handle`` on the
   tuple ``args`` and make ``self`` own the object it returns, with no wrapper made in between
   (a reference ``self`` held before is released). */
static PyObject* accel_construct(PyObject* mod, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 5 || !is_object(args[0]) || !PyTuple_Check(args[2])) {
    PyErr_SetString(PyExc_TypeError, "construct(self: Object, handle, args: tuple, name, type_key)");
    return NULL;
  }
  void* fh = handle_of(args[1]);
  if (fh == NULL) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "construct: null function handle");
    return NULL;
  }
  FFIAny result;
  if (call_raw(fh, &PyTuple_GET_ITEM(args[2], 0), PyTuple_GET_SIZE(args[2]), args[3], &result) < 0) return NULL;
  if (result.type_index < TI_OBJECT_BEGIN) {
    PyObject* value = owned_to_py(&result);
    if (value == NULL) return NULL;
    RAISE_ERROR(E_INIT_RESULT, args[4], value);
    Py_DECREF(value);
    return NULL;
  }
  ObjectBase* self = (ObjectBase*)args[0];
  void* old = self->h;
  self->h = result.v_ptr;
  self->t = result.type_index;
  self->cb = NULL;
  if (old != NULL) ffi_decref(old);
  Py_RETURN_NONE;
}

/* view_items(address, count) -> list: the values of ``count`` consecutive borrowed Anys at
   ``address`` (an Array's or List's items). They are copied first, as the Python reader does,
   so a conversion that runs Python code cannot move them under the loop. */
static PyObject* accel_view_items(PyObject* mod, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "view_items(address, count)");
    return NULL;
  }
  void* p = PyLong_AsVoidPtr(args[0]);
  if (p == NULL && PyErr_Occurred()) return NULL;
  Py_ssize_t n = PyLong_AsSsize_t(args[1]);
  if (n < 0) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "view_items: negative count");
    return NULL;
  }
  if (n > 0 && p == NULL) {
    PyErr_SetString(PyExc_ValueError, "view_items: null address");
    return NULL;
  }
  if ((size_t)n > PY_SSIZE_T_MAX / sizeof(FFIAny)) return PyErr_NoMemory();
  FFIAny* items = n == 0 ? NULL : (FFIAny*)PyMem_Malloc(sizeof(FFIAny) * (size_t)n);
  if (n > 0 && items == NULL) return PyErr_NoMemory();
  if (n > 0) memcpy(items, p, sizeof(FFIAny) * (size_t)n);
  PyObject* list = PyList_New(n);
  if (list != NULL) {
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* v = view_to_py(&items[i]);
      if (v == NULL) {
        Py_CLEAR(list);
        break;
      }
      PyList_SET_ITEM(list, i, v);
    }
  }
  PyMem_Free(items);
  return list;
}

/* ---------------------------------------------------------------------------------------- */
/* LazyFunction: a global function / method resolved on first call, then called directly     */
/* ---------------------------------------------------------------------------------------- */
typedef struct {
  PyObject_HEAD
  void* fh;
  PyObject* name;
  PyObject* resolver; /* () -> Function */
  PyObject* function; /* the resolved Function (keeps fh alive) */
  PyObject* kwbind;   /* (*args, **kwargs) -> tuple of positional arguments, or NULL */
  PyObject* dict;     /* __wrapped__, __name__, __doc__...: what functools.update_wrapper sets */
  Py_ssize_t arity;   /* number of positional arguments, or -1 for any */
  vectorcallfunc vectorcall;
} LazyFunction;

static int lazy_resolve(LazyFunction* self) {
  if (self->resolver == NULL) {
    PyErr_Format(PyExc_RuntimeError, "%R can no longer be resolved (cleared)", self->name);
    return -1;
  }
  PyObject* f = PyObject_CallNoArgs(self->resolver);
  if (f == NULL) return -1;
  if (!is_object(f) || ((ObjectBase*)f)->h == NULL || ((ObjectBase*)f)->t != TI_FUNCTION) {
    PyErr_Format(PyExc_TypeError, "resolving %R did not give a Function", self->name);
    Py_DECREF(f);
    return -1;
  }
  if (self->function != NULL) { /* another thread resolved it meanwhile: keep the first */
    Py_DECREF(f);
    return 0;
  }
  self->fh = ((ObjectBase*)f)->h;
  self->function = f;
  return 0;
}

/* The name Python code knows the function by (its __qualname__), else the registry name. */
static PyObject* lazy_display_name(LazyFunction* self) {
  PyObject* q = self->dict == NULL ? NULL : PyDict_GetItemString(self->dict, "__qualname__");
  return Py_NewRef(q != NULL && PyUnicode_Check(q) ? q : self->name);
}

static PyObject* lazy_wrong_arity(LazyFunction* self, Py_ssize_t given) {
  PyObject* name = lazy_display_name(self);
  PyObject* arity = PyLong_FromSsize_t(self->arity);
  PyObject* n = PyLong_FromSsize_t(given);
  if (arity != NULL && n != NULL) RAISE_ERROR(E_ARITY, name, arity, n);
  Py_XDECREF(arity);
  Py_XDECREF(n);
  Py_DECREF(name);
  return NULL;
}

static PyObject* lazy_vectorcall(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames);

/* A call with keywords: kwbind (the wrapped def's signature) puts them in order. */
static PyObject* lazy_call_keywords(LazyFunction* self, PyObject* const* args, Py_ssize_t n, PyObject* kwnames) {
  if (self->kwbind == NULL) {
    PyObject* name = lazy_display_name(self);
    RAISE_ERROR(E_NO_KEYWORDS, name);
    Py_DECREF(name);
    return NULL;
  }
  PyObject* bound = PyObject_Vectorcall(self->kwbind, args, (size_t)n, kwnames);
  if (bound == NULL) return NULL;
  if (!PyTuple_Check(bound)) {
    PyErr_Format(PyExc_TypeError, "the keyword binder of %R returned %T, not a tuple", self->name, bound);
    Py_DECREF(bound);
    return NULL;
  }
  PyObject* r = lazy_vectorcall((PyObject*)self, &PyTuple_GET_ITEM(bound, 0), (size_t)PyTuple_GET_SIZE(bound), NULL);
  Py_DECREF(bound);
  return r;
}

static PyObject* lazy_vectorcall(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  LazyFunction* self = (LazyFunction*)callable;
  Py_ssize_t n = PyVectorcall_NARGS(nargsf);
  if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0) return lazy_call_keywords(self, args, n, kwnames);
  if (self->arity >= 0 && n != self->arity) return lazy_wrong_arity(self, n);
  if (self->fh == NULL && lazy_resolve(self) < 0) return NULL;
  PyObject* keep = Py_NewRef(self->function); /* alive for the call, whatever happens to self */
  PyObject* r = call_packed(((ObjectBase*)keep)->h, args, n, self->name);
  Py_DECREF(keep);
  return r;
}

static PyObject* lazy_new(PyTypeObject* type, PyObject* args, PyObject* kwds) {
  static char* kwlist[] = {"name", "resolver", "kwbind", "arity", NULL};
  PyObject *name, *resolver, *kwbind = Py_None;
  Py_ssize_t arity = -1;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "UO|On:LazyFunction", kwlist, &name, &resolver, &kwbind, &arity))
    return NULL;
  if (arity < -1) {
    PyErr_SetString(PyExc_ValueError, "LazyFunction: arity must be -1 (any) or a count");
    return NULL;
  }
  LazyFunction* self = (LazyFunction*)type->tp_alloc(type, 0);
  if (self == NULL) return NULL;
  self->name = Py_NewRef(name);
  self->resolver = Py_NewRef(resolver);
  self->kwbind = kwbind == Py_None ? NULL : Py_NewRef(kwbind);
  self->arity = arity;
  self->vectorcall = lazy_vectorcall;
  return (PyObject*)self;
}

static int lazy_traverse(LazyFunction* self, visitproc visit, void* arg) {
  Py_VISIT(self->resolver);
  Py_VISIT(self->function);
  Py_VISIT(self->kwbind);
  Py_VISIT(self->dict);
  return 0;
}

static int lazy_clear(LazyFunction* self) {
  Py_CLEAR(self->resolver);
  Py_CLEAR(self->function);
  Py_CLEAR(self->kwbind);
  Py_CLEAR(self->dict);
  self->fh = NULL;
  return 0;
}

static void lazy_dealloc(LazyFunction* self) {
  PyObject_GC_UnTrack(self);
  lazy_clear(self);
  Py_CLEAR(self->name);
  Py_TYPE(self)->tp_free((PyObject*)self);
}

/* Bound like a def: a method of the class it is an attribute of. */
static PyObject* lazy_descr_get(PyObject* self, PyObject* obj, PyObject* type) {
  if (obj == NULL || obj == Py_None) return Py_NewRef(self);
  return PyMethod_New(self, obj);
}

static PyObject* lazy_get_function(LazyFunction* self, void* closure) {
  if (self->fh == NULL && lazy_resolve(self) < 0) return NULL;
  Py_INCREF(self->function);
  return self->function;
}

static PyObject* lazy_repr(LazyFunction* self) {
  PyObject* name = lazy_display_name(self);
  PyObject* r = PyUnicode_Compare(name, self->name) == 0
                    ? PyUnicode_FromFormat("<function %U%s>", self->name, self->fh ? "" : " (unresolved)")
                    : PyUnicode_FromFormat("<function %U (%U)%s>", name, self->name, self->fh ? "" : " (unresolved)");
  Py_DECREF(name);
  return r;
}

/* Pickled by reference, as a def is: its module and qualified name. */
static PyObject* lazy_reduce(LazyFunction* self, PyObject* unused) {
  PyObject* q = self->dict == NULL ? NULL : PyDict_GetItemString(self->dict, "__qualname__");
  if (q == NULL) {
    PyErr_Format(PyExc_TypeError, "cannot pickle the function handle %R (not a named wrapper)", self->name);
    return NULL;
  }
  return Py_NewRef(q);
}

static PyMemberDef lazy_members[] = {
    {"name", T_OBJECT, offsetof(LazyFunction, name), READONLY, "registry name"},
    {"arity", T_PYSSIZET, offsetof(LazyFunction, arity), READONLY, "positional arguments taken (-1: any)"},
    {NULL}};

static PyGetSetDef lazy_getset[] = {
    {"function", (getter)lazy_get_function, NULL, "the resolved Function (resolves it)", NULL},
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL}};

static PyMethodDef lazy_methods[] = {
    {"__reduce__", (PyCFunction)lazy_reduce, METH_NOARGS, "pickled by module and qualified name"},
    {NULL}};

static PyTypeObject LazyFunctionType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tvmffi_runtime._accel.LazyFunction",
    .tp_basicsize = sizeof(LazyFunction),
    .tp_dealloc = (destructor)lazy_dealloc,
    .tp_vectorcall_offset = offsetof(LazyFunction, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_repr = (reprfunc)lazy_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "LazyFunction(name, resolver, kwbind=None, arity=-1): resolves the Function on first call, then\n"
              "calls it directly; a method when it is a class attribute, as a def is.",
    .tp_traverse = (traverseproc)lazy_traverse,
    .tp_clear = (inquiry)lazy_clear,
    .tp_methods = lazy_methods,
    .tp_members = lazy_members,
    .tp_getset = lazy_getset,
    .tp_descr_get = lazy_descr_get,
    .tp_dictoffset = offsetof(LazyFunction, dict),
    .tp_new = lazy_new,
};

/* ---------------------------------------------------------------------------------------- */
/* Python callables as native Functions                                                       */
/* ---------------------------------------------------------------------------------------- */
/* How a callback is called and its result written:
   PLAIN fn(*values), PACKED fn([values]), WALK fn(value) with a walk-handler result;
   RAW fn(value, type_index, raw1, ...) where raw_i is the int64 payload of argument i (engine
   handles, kinds, modes: the structural engine's extra arguments), RAW_WALK the same with a
   walk-handler result; HOOK a Visitor/Mutator hook called as hook(value) alone, its context
   kept in a frame list the hook's helpers read (see hook_call). */
enum { CB_PLAIN = 0, CB_PACKED = 1, CB_WALK = 2, CB_RAW = 3, CB_RAW_WALK = 4, CB_HOOK = 5 };

static int interpreter_gone(void) {
#if PY_VERSION_HEX >= 0x030D0000
  return !Py_IsInitialized() || Py_IsFinalizing();
#else
  return !Py_IsInitialized() || _Py_IsFinalizing();
#endif
}

static void set_raised_from_current(void) {
  /* the current Python exception becomes the raised native error */
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (tb != NULL && value != NULL) PyException_SetTraceback(value, tb);
  PyObject* r = value == NULL ? NULL : PyObject_CallOneArg(hook_raise_into_native, value);
  if (r == NULL) {
    PyErr_Clear();
    ffi_error_set_raised_from_cstr(PyBytes_AS_STRING(PyTuple_GET_ITEM(conversion_failed, 0)),
                                   PyBytes_AS_STRING(PyTuple_GET_ITEM(conversion_failed, 1)));
  }
  Py_XDECREF(r);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
}

/* Write a Python value as an owned Any (a callback's result). */
static int py_to_owned(PyObject* v, FFIAny* out) {
  if (v == unchanged && v != NULL) {
    out->type_index = 13; /* kTVMFFIUnchanged: a mapper's "keep the value" */
    out->small_len = 0;
    out->v_int64 = 0;
    return 0;
  }
  if (v == Py_None) {
    out->type_index = TI_NONE;
    out->small_len = 0;
    out->v_int64 = 0;
    return 0;
  }
  PyTypeObject* t = Py_TYPE(v);
  if (t == &PyLong_Type || t == &PyFloat_Type || t == &PyBool_Type) {
    if (pack_fast(out, v) == 0) return 0;
  } else if (is_object(v) && ((ObjectBase*)v)->h != NULL) {
    out->type_index = ((ObjectBase*)v)->t;
    out->small_len = 0;
    out->v_ptr = ((ObjectBase*)v)->h;
    ffi_incref(out->v_ptr);
    return 0;
  }
  PyObject* addr = PyLong_FromVoidPtr(out);
  if (addr == NULL) return -1;
  PyObject* r = PyObject_CallFunctionObjArgs(hook_to_owned, v, addr, NULL);
  Py_DECREF(addr);
  if (r == NULL) return -1;
  Py_DECREF(r);
  return 0;
}

/* CB_HOOK: ``payload`` is (hook, frame, check, objects_ok). While hook(value) runs, ``frame`` (a
   list of nargs + 1 items) holds the value, its type index and the raw payloads of the other
   arguments (the engine handle, the mutate mode), so the hook's helpers can build its context
   only when they are called; the previous items are put back afterwards (hooks nest). A result
   other than None (or, with objects_ok, UNCHANGED or a live object) goes through check(result),
   which returns what to write or raises. Returns 0, or -1 with a Python exception set. */
static int hook_call(PyObject* payload, const FFIAny* args, int32_t nargs, FFIAny* result) {
  if (!PyTuple_Check(payload) || PyTuple_GET_SIZE(payload) != 4 || nargs < 1 || nargs + 1 > STACK_ARGS) {
    PyErr_SetString(PyExc_TypeError, "a structural hook needs (hook, frame, check, objects_ok) and the value");
    return -1;
  }
  PyObject* hook = PyTuple_GET_ITEM(payload, 0);
  PyObject* frame = PyTuple_GET_ITEM(payload, 1);
  PyObject* check = PyTuple_GET_ITEM(payload, 2);
  const int objects_ok = PyTuple_GET_ITEM(payload, 3) == Py_True;
  const Py_ssize_t n = (Py_ssize_t)nargs + 1;
  if (!PyList_CheckExact(frame) || PyList_GET_SIZE(frame) != n) {
    PyErr_SetString(PyExc_TypeError, "a structural hook's frame must be a list of one item per argument, plus one");
    return -1;
  }
  PyObject* items[STACK_ARGS];
  Py_ssize_t made = 0;
  for (; made < n; ++made) {
    if (made == 0) {
      items[0] = view_to_py(&args[0]);
    } else if (made == 1) {
      items[1] = PyLong_FromLong(args[0].type_index);
    } else {
      items[made] = PyLong_FromLongLong(args[made - 1].v_int64);
    }
    if (items[made] == NULL) {
      for (Py_ssize_t i = 0; i < made; ++i) Py_DECREF(items[i]);
      return -1;
    }
  }
  PyObject* value = items[0];
  Py_INCREF(value); /* the call's own reference: the frame's may be replaced while it runs */
  PyObject* saved[STACK_ARGS];
  for (Py_ssize_t i = 0; i < n; ++i) {
    saved[i] = PyList_GET_ITEM(frame, i); /* keeps the list's reference until it is put back */
    PyList_SET_ITEM(frame, i, items[i]);
  }
  PyObject* r = PyObject_CallOneArg(hook, value);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* current = PyList_GET_ITEM(frame, i);
    PyList_SET_ITEM(frame, i, saved[i]);
    Py_DECREF(current);
  }
  Py_DECREF(value);
  if (r == NULL) return -1;
  if (!(r == Py_None || (objects_ok && (r == unchanged || (is_object(r) && ((ObjectBase*)r)->h != NULL))))) {
    PyObject* checked = PyObject_CallOneArg(check, r);
    Py_DECREF(r);
    if (checked == NULL) return -1;
    r = checked;
  }
  const int rc = py_to_owned(r, result);
  Py_DECREF(r);
  return rc;
}

static int callback_safe_call(void* self, const FFIAny* args, int32_t nargs, FFIAny* result) {
  if (interpreter_gone()) {
    ffi_error_set_raised_from_cstr("RuntimeError", "the Python interpreter has shut down");
    return -1;
  }
  PyGILState_STATE gil = PyGILState_Ensure();
  /* an exception pending on this thread (a Function called from a native deleter while an
     error unwinds) is set aside, so Python runs clean, and put back afterwards */
  PyObject *pending_type, *pending_value, *pending_tb;
  PyErr_Fetch(&pending_type, &pending_value, &pending_tb);
  Callback* cb = (Callback*)self;
  PyObject* fn = cb->fn; /* the callback may drop its own Function: nothing of cb after this */
  const int mode = cb->mode;
  Py_INCREF(fn);
  PyObject* stack[STACK_ARGS];
  PyObject** pyargs = stack;
  int32_t made = 0;
  int rc = -1;
  PyObject* value = NULL;
  if (nargs + 1 > STACK_ARGS) { /* + 1: RAW modes pass the value's type index too */
    pyargs = (PyObject**)PyMem_Malloc(sizeof(PyObject*) * ((size_t)nargs + 1));
    if (pyargs == NULL) {
      PyErr_NoMemory();
      goto error;
    }
  }
  if (mode == CB_HOOK) {
    if (hook_call(fn, args, nargs, result) < 0) goto error;
    rc = 0;
    goto done;
  }
  int32_t ncall = nargs;
  if (mode == CB_RAW || mode == CB_RAW_WALK) {
    if (nargs < 1) {
      PyErr_SetString(PyExc_TypeError, "a structural callback needs the value argument");
      goto error;
    }
    ncall = nargs + 1; /* value, its type index, then the raw payloads of the others */
    for (; made < ncall; ++made) {
      if (made == 0) {
        pyargs[0] = view_to_py(&args[0]);
      } else if (made == 1) {
        pyargs[1] = PyLong_FromLong(args[0].type_index);
      } else {
        pyargs[made] = PyLong_FromLongLong(args[made - 1].v_int64);
      }
      if (pyargs[made] == NULL) goto error;
    }
  } else {
    for (; made < nargs; ++made) {
      pyargs[made] = view_to_py(&args[made]);
      if (pyargs[made] == NULL) goto error;
    }
  }
  if (mode == CB_PACKED) {
    PyObject* list = PyList_New(nargs);
    if (list == NULL) goto error;
    for (int32_t i = 0; i < nargs; ++i) {
      PyList_SET_ITEM(list, i, pyargs[i]);
      pyargs[i] = NULL;
    }
    made = 0;
    value = PyObject_CallOneArg(fn, list);
    Py_DECREF(list);
  } else {
    value = PyObject_Vectorcall(fn, pyargs, (size_t)ncall, NULL);
  }
  if (value == NULL) goto error;
  if (mode == CB_WALK || mode == CB_RAW_WALK) {
    result->type_index = TI_NONE;
    result->small_len = 0;
    result->v_int64 = 0;
    if (value != Py_None) {
      PyObject* addr = PyLong_FromVoidPtr(result);
      PyObject* r = addr == NULL ? NULL : PyObject_CallFunctionObjArgs(hook_walk_result, value, addr, NULL);
      Py_XDECREF(addr);
      if (r == NULL) goto error;
      Py_DECREF(r);
    }
  } else if (py_to_owned(value, result) < 0) {
    goto error;
  }
  rc = 0;
  goto done;
error:
  set_raised_from_current();
done:
  Py_XDECREF(value);
  for (int32_t i = 0; i < made; ++i) Py_XDECREF(pyargs[i]);
  if (pyargs != stack) PyMem_Free(pyargs);
  Py_DECREF(fn);
  PyErr_Restore(pending_type, pending_value, pending_tb);
  PyGILState_Release(gil);
  return rc;
}

static void callback_delete(void* self) {
  Callback* cb = (Callback*)self;
  if (interpreter_gone()) return; /* nothing Python can be touched any more: leave it */
  PyGILState_STATE gil = PyGILState_Ensure();
  Py_DECREF(cb->fn);
  live_callbacks--;
  PyMem_RawFree(cb);
  PyGILState_Release(gil);
}

/* A new native Function calling ``fn`` (owned handle; its resource owns ``fn``), or NULL with
   an exception set. */
static void* make_callback(PyObject* fn, int mode, Callback** resource) {
  Callback* cb = (Callback*)PyMem_RawMalloc(sizeof(Callback));
  if (cb == NULL) {
    PyErr_NoMemory();
    return NULL;
  }
  cb->fn = fn;
  cb->mode = mode;
  Py_INCREF(fn);
  void* out = NULL;
  if (ffi_function_create(cb, callback_safe_call, callback_delete, &out) != 0) {
    Py_DECREF(fn);
    PyMem_RawFree(cb);
    raise_native_error();
    return NULL;
  }
  live_callbacks++;
  if (resource != NULL) *resource = cb;
  return out;
}

static int parse_callback_args(PyObject* const* args, Py_ssize_t nargs, Py_ssize_t at, const char* usage,
                               PyObject** fn, int* mode) {
  if (!initialised) {
    PyErr_SetString(PyExc_RuntimeError, "tvmffi_runtime._accel: init() was not called");
    return -1;
  }
  if (nargs != at + 2) {
    PyErr_SetString(PyExc_TypeError, usage);
    return -1;
  }
  *fn = args[at];
  long m = PyLong_AsLong(args[at + 1]);
  if (m == -1 && PyErr_Occurred()) return -1;
  if (m < CB_PLAIN || m > CB_HOOK) {
    PyErr_Format(PyExc_ValueError, "unknown callback mode %ld", m);
    return -1;
  }
  if (m != CB_HOOK && !PyCallable_Check(*fn)) return RAISE_ERROR(E_NOT_CALLABLE, *fn);
  *mode = (int)m;
  return 0;
}

/* function_create(fn, mode) -> owned handle of a native Function calling fn */
static PyObject* accel_function_create(PyObject* mod, PyObject* const* args, Py_ssize_t nargs) {
  PyObject* fn;
  int mode;
  if (parse_callback_args(args, nargs, 0, "function_create(fn, mode)", &fn, &mode) < 0) return NULL;
  void* out = make_callback(fn, mode, NULL);
  if (out == NULL) return NULL;
  PyObject* r = PyLong_FromVoidPtr(out);
  if (r == NULL) ffi_decref(out);
  return r;
}

/* callback_function(cls, fn, mode) -> a wrapper of class cls (a Function class) owning a new
   native Function calling fn; the GC sees the callable through it (object_base_traverse). */
static PyObject* accel_callback_function(PyObject* mod, PyObject* const* args, Py_ssize_t nargs) {
  PyObject* fn;
  int mode;
  if (parse_callback_args(args, nargs, 1, "callback_function(cls, fn, mode)", &fn, &mode) < 0) return NULL;
  PyObject* cls = args[0];
  if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject*)cls, &ObjectBaseType)) {
    PyErr_SetString(PyExc_TypeError, "callback_function: cls must be an Object class");
    return NULL;
  }
  PyTypeObject* tp = (PyTypeObject*)cls;
  PyObject* w = tp->tp_alloc(tp, 0);
  if (w == NULL) return NULL;
  Callback* cb = NULL;
  void* h = make_callback(fn, mode, &cb);
  if (h == NULL) {
    Py_DECREF(w);
    return NULL;
  }
  ObjectBase* o = (ObjectBase*)w;
  o->h = h;
  o->t = TI_FUNCTION;
  o->cb = cb;
  return w;
}

/* set_unchanged(obj): the Python object that stands for kTVMFFIUnchanged in results. */
static PyObject* accel_set_unchanged(PyObject* mod, PyObject* obj) {
  Py_XSETREF(unchanged, Py_NewRef(obj));
  Py_RETURN_NONE;
}

static PyObject* accel_live_callbacks(PyObject* mod, PyObject* unused) {
  return PyLong_FromSsize_t(live_callbacks);
}

/* ---------------------------------------------------------------------------------------- */
/* Field: a descriptor reading (and writing) one field in object memory                       */
/* ---------------------------------------------------------------------------------------- */
enum { F_I64, F_I32, F_F64, F_F32, F_BOOL, F_OBJECT, F_ANY };
static const char* field_kinds[] = {"i64", "i32", "f64", "f32", "bool", "object", "any", NULL};

typedef struct {
  PyObject_HEAD
  int kind;
  Py_ssize_t offset;
  PyObject* qualname; /* "type_key.field" for messages */
  PyObject* setter;   /* None: read-only; True: in place (POD); else callable (obj, value) */
  PyObject* doc;
} Field;

static char* field_base(Field* f, PyObject* obj) {
  if (!is_object(obj)) {
    RAISE_ERROR(E_FIELD_NOT_AN_OBJECT, f->qualname, obj);
    return NULL;
  }
  char* h = (char*)((ObjectBase*)obj)->h;
  if (h == NULL) {
    RAISE_ERROR(E_FIELD_RELEASED, f->qualname, obj);
    return NULL;
  }
  return h + f->offset;
}

static PyObject* field_get(Field* f, PyObject* obj, PyObject* type) {
  if (obj == NULL || obj == Py_None) {
    Py_INCREF(f);
    return (PyObject*)f;
  }
  char* p = field_base(f, obj);
  if (p == NULL) return NULL;
  switch (f->kind) {
    case F_I64: return PyLong_FromLongLong(*(int64_t*)p);
    case F_I32: return PyLong_FromLong(*(int32_t*)p);
    case F_F64: return PyFloat_FromDouble(*(double*)p);
    case F_F32: return PyFloat_FromDouble(*(float*)p);
    case F_BOOL: return PyBool_FromLong(*(uint8_t*)p != 0);
    case F_OBJECT: {
      FFIObjectHeader* h = *(FFIObjectHeader**)p;
      if (h == NULL) Py_RETURN_NONE;
      ffi_incref(h);
      return wrap_owned(h, h->type_index);
    }
    default: return view_to_py((const FFIAny*)p);
  }
}

/* The error naming the field for a value it cannot hold (replaces any exception set). */
static int field_type_error(Field* f, PyObject* value) {
  PyObject* kind = PyUnicode_FromString(field_kinds[f->kind]);
  if (kind == NULL) return -1;
  RAISE_ERROR(E_FIELD_VALUE, f->qualname, kind, value);
  Py_DECREF(kind);
  return -1;
}

static int field_set(Field* f, PyObject* obj, PyObject* value) {
  if (value == NULL) return RAISE_ERROR(E_FIELD_DELETE, f->qualname);
  if (f->setter == Py_None || f->setter == NULL) return RAISE_ERROR(E_FIELD_READ_ONLY, f->qualname);
  if (f->setter != Py_True) {
    PyObject* r = PyObject_CallFunctionObjArgs(f->setter, obj, value, NULL);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
  }
  char* p = field_base(f, obj);
  if (p == NULL) return -1;
  switch (f->kind) {
    case F_I64: {
      PyObject* i = PyNumber_Index(value);
      if (i == NULL) return field_type_error(f, value);
      int overflow = 0;
      long long x = PyLong_AsLongLongAndOverflow(i, &overflow);
      if (overflow) {
        RAISE_ERROR(E_FIELD_OVERFLOW, f->qualname, i);
        Py_DECREF(i);
        return -1;
      }
      Py_DECREF(i);
      if (x == -1 && PyErr_Occurred()) return -1;
      *(int64_t*)p = x;
      return 0;
    }
    case F_F64: {
      if (!PyFloat_Check(value) && (PyBool_Check(value) || !PyLong_Check(value)))
        return field_type_error(f, value);
      double x = PyFloat_AsDouble(value);
      if (x == -1.0 && PyErr_Occurred()) return -1;
      *(double*)p = x;
      return 0;
    }
    case F_BOOL: {
      /* what the native bool conversion (and so a bool argument) accepts: a bool or an int */
      int truth = value == Py_True;
      if (!PyBool_Check(value)) {
        PyObject* i = PyNumber_Index(value);
        if (i == NULL) return field_type_error(f, value);
        truth = PyObject_IsTrue(i);
        Py_DECREF(i);
      }
      *(uint8_t*)p = (uint8_t)truth;
      return 0;
    }
    default: { /* not reached: field_new refuses such a field */
      PyObject* kind = PyUnicode_FromString(field_kinds[f->kind]);
      if (kind != NULL) {
        RAISE_ERROR(E_FIELD_IN_PLACE, f->qualname, kind);
        Py_DECREF(kind);
      }
      return -1;
    }
  }
}

static PyObject* field_new(PyTypeObject* type, PyObject* args, PyObject* kwds) {
  static char* kwlist[] = {"qualname", "kind", "offset", "setter", "doc", NULL};
  PyObject *qualname, *setter = Py_None, *doc = Py_None;
  const char* kind;
  Py_ssize_t offset;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "Usn|OO:Field", kwlist, &qualname, &kind, &offset, &setter, &doc))
    return NULL;
  int k = 0;
  while (field_kinds[k] != NULL && strcmp(field_kinds[k], kind) != 0) ++k;
  int which = field_kinds[k] == NULL ? E_FIELD_KIND : E_FIELD_IN_PLACE;
  if (field_kinds[k] == NULL || (setter == Py_True && k != F_I64 && k != F_F64 && k != F_BOOL)) {
    PyObject* kind_str = PyUnicode_FromString(kind);
    if (kind_str != NULL) {
      RAISE_ERROR(which, qualname, kind_str);
      Py_DECREF(kind_str);
    }
    return NULL;
  }
  Field* f = (Field*)type->tp_alloc(type, 0);
  if (f == NULL) return NULL;
  f->kind = k;
  f->offset = offset;
  Py_INCREF(qualname);
  f->qualname = qualname;
  Py_INCREF(setter);
  f->setter = setter;
  Py_INCREF(doc);
  f->doc = doc;
  return (PyObject*)f;
}

static int field_traverse(Field* f, visitproc visit, void* arg) {
  Py_VISIT(f->setter);
  Py_VISIT(f->doc);
  return 0;
}

static int field_clear(Field* f) {
  Py_CLEAR(f->setter);
  Py_CLEAR(f->doc);
  return 0;
}

static void field_dealloc(Field* f) {
  PyObject_GC_UnTrack(f);
  Py_CLEAR(f->setter);
  Py_CLEAR(f->qualname);
  Py_CLEAR(f->doc);
  Py_TYPE(f)->tp_free((PyObject*)f);
}

static PyObject* field_repr(Field* f) {
  return PyUnicode_FromFormat("<field %U (%s, offset %zd%s)>", f->qualname, field_kinds[f->kind], f->offset,
                              f->setter == Py_None ? ", read-only" : "");
}

/* __doc__: given as text, or as a function of the qualname called on first use (the registry
   is read only when someone asks for the documentation). */
static PyObject* field_get_doc(Field* f, void* closure) {
  if (f->doc != NULL && f->doc != Py_None && !PyUnicode_Check(f->doc) && PyCallable_Check(f->doc)) {
    PyObject* text = PyObject_CallOneArg(f->doc, f->qualname);
    if (text == NULL) return NULL;
    Py_SETREF(f->doc, text);
  }
  return Py_NewRef(f->doc != NULL ? f->doc : Py_None);
}

static PyObject* field_get_kind(Field* f, void* closure) {
  return PyUnicode_FromString(field_kinds[f->kind]);
}

static PyGetSetDef field_getset[] = {
    {"__doc__", (getter)field_get_doc, NULL, NULL, NULL},
    {"kind", (getter)field_get_kind, NULL, "layout in object memory (i64, f64, object, any, ...)", NULL},
    {NULL}};

static PyMemberDef field_members[] = {
    {"qualname", T_OBJECT, offsetof(Field, qualname), READONLY, "registry name of the field"},
    {"offset", T_PYSSIZET, offsetof(Field, offset), READONLY, "byte offset in the object"},
    {NULL}};

static PyTypeObject FieldType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tvmffi_runtime._accel.Field",
    .tp_basicsize = sizeof(Field),
    .tp_dealloc = (destructor)field_dealloc,
    .tp_repr = (reprfunc)field_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Field(qualname, kind, offset, setter=None, doc=None): a field read from object memory.",
    .tp_traverse = (traverseproc)field_traverse,
    .tp_clear = (inquiry)field_clear,
    .tp_members = field_members,
    .tp_getset = field_getset,
    .tp_descr_get = (descrgetfunc)field_get,
    .tp_descr_set = (descrsetfunc)field_set,
    .tp_new = field_new,
};

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

/* init(addresses: dict[str, int], hooks: dict[str, object]) */
static PyObject* accel_init(PyObject* mod, PyObject* args) {
  static PyObject* errors; /* name -> builder of that error (see error_names) */
  PyObject *addrs, *hooks;
  if (!PyArg_ParseTuple(args, "O!O!:init", &PyDict_Type, &addrs, &PyDict_Type, &hooks)) return NULL;
  if (take_address(addrs, "TVMFFIFunctionCall", (void**)&ffi_call) < 0 ||
      take_address(addrs, "TVMFFIObjectIncRef", (void**)&ffi_incref) < 0 ||
      take_address(addrs, "TVMFFIObjectDecRef", (void**)&ffi_decref) < 0 ||
      take_address(addrs, "TVMFFIFunctionCreate", (void**)&ffi_function_create) < 0 ||
      take_address(addrs, "TVMFFIErrorMoveFromRaised", (void**)&ffi_error_move_from_raised) < 0 ||
      take_address(addrs, "TVMFFIErrorSetRaisedFromCStr", (void**)&ffi_error_set_raised_from_cstr) < 0)
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
      take_hook(hooks, "other_bindings", &other_binding_modules) < 0)
    return NULL;
  if (!PyTuple_Check(other_binding_modules)) {
    PyErr_SetString(PyExc_TypeError, "init: other_bindings must be a tuple of module names");
    return NULL;
  }
  if (!PyDict_Check(class_cache) || !PyDict_Check(object_return) || !PyDict_Check(errors)) {
    PyErr_SetString(PyExc_TypeError, "init: class_cache, object_return and errors must be dicts");
    return NULL;
  }
  if (!PyTuple_Check(conversion_failed) || PyTuple_GET_SIZE(conversion_failed) != 2 ||
      !PyBytes_Check(PyTuple_GET_ITEM(conversion_failed, 0)) || !PyBytes_Check(PyTuple_GET_ITEM(conversion_failed, 1))) {
    PyErr_SetString(PyExc_TypeError, "init: conversion_failed must be a (kind, message) tuple of bytes");
    return NULL;
  }
  for (int i = 0; i < E_COUNT; ++i) {
    if (take_hook(errors, error_names[i], &error_makers[i]) < 0) return NULL;
  }
  initialised = 1;
  Py_RETURN_NONE;
}

static PyMethodDef accel_methods[] = {
    {"init", accel_init, METH_VARARGS, "init(addresses, hooks): connect to libtvm_ffi and the Python runtime."},
    {"call", (PyCFunction)(void (*)(void))accel_call, METH_FASTCALL, "call(handle, args, name=None) -> result"},
    {"construct", (PyCFunction)(void (*)(void))accel_construct, METH_FASTCALL,
     "construct(self, handle, args, name, type_key): self owns what __ffi_init__ returns"},
    {"view_items", (PyCFunction)(void (*)(void))accel_view_items, METH_FASTCALL,
     "view_items(address, count) -> list of the values of count borrowed Anys"},
    {"function_create", (PyCFunction)(void (*)(void))accel_function_create, METH_FASTCALL,
     "function_create(fn, mode) -> owned handle of a native Function calling fn"},
    {"callback_function", (PyCFunction)(void (*)(void))accel_callback_function, METH_FASTCALL,
     "callback_function(cls, fn, mode) -> Function wrapper (the GC sees fn through it)"},
    {"set_unchanged", accel_set_unchanged, METH_O, "set_unchanged(obj): what stands for kTVMFFIUnchanged"},
    {"live_callbacks", accel_live_callbacks, METH_NOARGS, "number of live native Functions made from callables"},
    {"set_release_gil", accel_set_release_gil, METH_O,
     "set_release_gil('auto' | 'always') -> previous: when calls release the GIL"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef accel_module = {
    PyModuleDef_HEAD_INIT, "_accel", "Compiled fast path of tvmffi_runtime (optional).", -1, accel_methods};

PyMODINIT_FUNC PyInit__accel(void) {
  /* object's own tp_new, so object.__new__(cls) makes wrappers as in the pure runtime */
  ObjectBaseType.tp_new = PyBaseObject_Type.tp_new;
  if (PyType_Ready(&ObjectBaseType) < 0 || PyType_Ready(&LazyFunctionType) < 0 || PyType_Ready(&FieldType) < 0)
    return NULL;
  PyObject* m = PyModule_Create(&accel_module);
  if (m == NULL) return NULL;
  Py_INCREF(&ObjectBaseType);
  Py_INCREF(&LazyFunctionType);
  Py_INCREF(&FieldType);
  if (PyModule_AddObject(m, "ObjectBase", (PyObject*)&ObjectBaseType) < 0 ||
      PyModule_AddObject(m, "LazyFunction", (PyObject*)&LazyFunctionType) < 0 ||
      PyModule_AddObject(m, "Field", (PyObject*)&FieldType) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
