/* _accel_parts/objects.h: ObjectBase (the wrappers' base class) and values in both directions.
 *
 * A part of _accel.c's one translation unit, included by it in order after the ABI
 * declarations and the hooks (it relies on what they and the parts before it define);
 * not a header to include anywhere else. */

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
  /* types that come back as plain values (BigInt, Error, ...) first, like _object._wrap */
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
