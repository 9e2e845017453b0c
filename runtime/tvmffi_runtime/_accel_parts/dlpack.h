/* _accel_parts/dlpack.h: DLPack in C: producers' tensors in, our Tensors out, DLTensor* views.
 *
 * A part of _accel.c's one translation unit, included by it in order after the ABI
 * declarations and the hooks (it relies on what they and the parts before it define);
 * not a header to include anywhere else. Its pure-ctypes twin is _pure/dlpack.py; the
 * decisions (both capsule forms, read-only refused, strides kept) are tensor.py's docstring.
 *
 * In: an argument of a class that offers __dlpack_c_exchange_api__ (torch) is converted by the
 * producer's own C function, without a capsule; any other __dlpack__ producer is asked for a
 * versioned capsule (max_version=(1, 3)), and for the legacy one when it takes no max_version.
 * Either way TVMFFITensorFromDLPack[Versioned] takes the managed tensor over (its deleter runs
 * when the Tensor dies), and a capsule is renamed "used_..." so its destructor leaves it alone.
 * Out: Tensor.__dlpack__ makes a capsule whose C destructor calls the deleter of a managed
 * tensor no consumer took (no Python runs in it). */

typedef struct {
  int32_t device_type;
  int32_t device_id;
} DLDev;

typedef struct {
  void* data;
  DLDev device;
  int32_t ndim;
  uint8_t code, bits;
  uint16_t lanes;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} DLTensorC;

typedef struct DLManaged {
  DLTensorC dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManaged*);
} DLManaged;

typedef struct DLManagedV {
  uint32_t major, minor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedV*);
  uint64_t flags;
  DLTensorC dl_tensor;
} DLManagedV;

/* dlpack.h's DLPackExchangeAPI (version header, then the producer's C functions) */
typedef struct {
  uint32_t major, minor;
  void* prev_api;
  void* managed_tensor_allocator;
  int (*managed_tensor_from_py_object_no_sync)(void* py_object, DLManagedV** out);
  void* managed_tensor_to_py_object_no_sync;
  int (*dltensor_from_py_object_no_sync)(void* py_object, DLTensorC* out); /* fills, allocates nothing */
  void* current_work_stream;
} DLExchangeAPI;

#define DLPACK_FLAG_READ_ONLY 1u
#define DLPACK_MAJOR 1
#define DLPACK_MINOR 3 /* the headers shipped with libtvm_ffi */

static int (*ffi_tensor_from_dlpack)(DLManaged*, int32_t, int32_t, void**);
static int (*ffi_tensor_from_dlpack_versioned)(DLManagedV*, int32_t, int32_t, void**);
static int (*ffi_tensor_to_dlpack)(void*, DLManaged**);
static int (*ffi_tensor_to_dlpack_versioned)(void*, DLManagedV**);

static const char NAME_V[] = "dltensor_versioned", USED_V[] = "used_dltensor_versioned";
static const char NAME_L[] = "dltensor", USED_L[] = "used_dltensor";

/* What a class offers, found once per class (types are kept alive as the dict's keys): an int
   (the exchange API's address), True (__dlpack__, asked with max_version first), Ellipsis
   (__dlpack__ asked in the legacy form first: see LEGACY_FIRST), None (__dlpack__ without
   max_version: a pre-1.0 producer, found on its first refusal) or False (neither). */
static PyObject* dlpack_kinds;
static PyObject* str_dlpack;          /* "__dlpack__" */
static PyObject* kw_max_version;      /* ("max_version",) */
static PyObject* max_version_arg;     /* (1, 3) */

/* The producer classes asked for the legacy capsule first: it costs numpy half what the
   versioned one does (no keyword parsing), and numpy refuses a read-only array in that form
   (BufferError), so a capsule it gives is writable; after a refusal the versioned form is asked,
   whose answer (a read-only flag, another error) is the one acted on. Exact classes only: a
   subclass may export differently. */
static const char* const LEGACY_FIRST[] = {"numpy.ndarray", NULL};

static int legacy_first(PyTypeObject* tp) {
  for (int i = 0; LEGACY_FIRST[i] != NULL; ++i)
    if (strcmp(tp->tp_name, LEGACY_FIRST[i]) == 0) return 1;
  return 0;
}

static int dlpack_strings(void) {
  if (str_dlpack != NULL) return 0;
  dlpack_kinds = PyDict_New();
  str_dlpack = PyUnicode_InternFromString("__dlpack__");
  kw_max_version = Py_BuildValue("(s)", "max_version");
  max_version_arg = Py_BuildValue("(ii)", DLPACK_MAJOR, DLPACK_MINOR);
  if (dlpack_kinds == NULL || str_dlpack == NULL || kw_max_version == NULL || max_version_arg == NULL) {
    Py_CLEAR(str_dlpack);
    return -1;
  }
  return 0;
}

/* The address of the exchange API a class attribute holds (an int or a "dlpack_exchange_api"
   capsule), 0 with an exception set when it is neither or its major version is not ours. */
static PyObject* exchange_api_address(PyObject* attr) {
  void* p = NULL;
  if (PyLong_Check(attr)) {
    p = PyLong_AsVoidPtr(attr);
  } else if (PyCapsule_IsValid(attr, "dlpack_exchange_api")) {
    p = PyCapsule_GetPointer(attr, "dlpack_exchange_api");
  }
  if (p == NULL || ((DLExchangeAPI*)p)->major != DLPACK_MAJOR ||
      ((DLExchangeAPI*)p)->managed_tensor_from_py_object_no_sync == NULL)
    return Py_NewRef(Py_True); /* unusable: the capsule protocol instead */
  return PyLong_FromVoidPtr(p);
}

/* The kind of class ``tp`` (borrowed, see dlpack_kinds), NULL with an exception set. The order
   is _convert._resolve_packer's: a tvm_ffi object (__chandle__) and the Python scalar, string,
   bytes and exception classes pack as those even when they also export DLPack. */
static PyTypeObject* last_kind_of; /* the class dlpack_kind answered for last (a key: alive) */
static PyObject* last_kind;         /* its kind (the dict's value: changed only by set_kind) */

static int set_kind(PyTypeObject* tp, PyObject* kind) {
  last_kind_of = NULL;
  return PyDict_SetItem(dlpack_kinds, (PyObject*)tp, kind);
}

static PyObject* dlpack_kind(PyTypeObject* tp) {
  if (tp == last_kind_of) return last_kind; /* a loop converting one producer class */
  if (dlpack_strings() < 0) return NULL;
  PyObject* kind = PyDict_GetItemWithError(dlpack_kinds, (PyObject*)tp);
  if (kind != NULL) {
    last_kind_of = tp;
    last_kind = kind;
  }
  if (kind != NULL || PyErr_Occurred()) return kind;
  PyObject* made = NULL;
  const int plain = PyType_IsSubtype(tp, &PyLong_Type) || PyType_IsSubtype(tp, &PyFloat_Type) ||
                    PyType_IsSubtype(tp, &PyUnicode_Type) || PyType_IsSubtype(tp, &PyBytes_Type) ||
                    PyType_IsSubtype(tp, &PyByteArray_Type) || PyType_IsSubtype(tp, &PyMemoryView_Type) ||
                    PyType_IsSubtype(tp, (PyTypeObject*)PyExc_BaseException) || PyType_IsSubtype(tp, &ObjectBaseType);
  if (plain || PyObject_HasAttrString((PyObject*)tp, "__chandle__") || !PyObject_HasAttr((PyObject*)tp, str_dlpack)) {
    made = Py_NewRef(Py_False);
  } else {
    PyObject* attr = PyObject_GetAttrString((PyObject*)tp, "__dlpack_c_exchange_api__");
    if (attr == NULL) {
      PyErr_Clear();
      made = Py_NewRef(legacy_first(tp) ? Py_Ellipsis : Py_True);
    } else {
      made = exchange_api_address(attr);
      Py_DECREF(attr);
    }
  }
  if (made == NULL || set_kind(tp, made) < 0) {
    Py_XDECREF(made);
    return NULL;
  }
  Py_DECREF(made); /* the dict holds it */
  return made;
}

/* The class name messages give, as type(obj).__name__ (the pure path's words): tp_name after
   its last dot ("numpy.ndarray" -> "ndarray"). */
static const char* class_name(PyObject* obj) {
  const char* name = Py_TYPE(obj)->tp_name;
  const char* dot = strrchr(name, '.');
  return dot != NULL ? dot + 1 : name;
}

static int refuse_read_only(PyObject* obj) {
  PyErr_Format(PyExc_BufferError,
               "cannot view a read-only %s as a Tensor (TVM FFI tensors have no read-only flag, so native "
               "code could write to it); pass a writable copy",
               class_name(obj));
  return -1;
}

static int refuse_version(PyObject* obj, const DLManagedV* m) {
  PyErr_Format(PyExc_BufferError, "%s.__dlpack__ returned DLPack %u.%u; only 1.x is supported", class_name(obj),
               m->major, m->minor);
  return -1;
}

/* Through the producer's exchange API: no capsule, no Python call. */
static int tensor_from_exchange_api(PyObject* obj, const DLExchangeAPI* api, void** out) {
  DLManagedV* m = NULL;
  if (api->managed_tensor_from_py_object_no_sync(obj, &m) != 0 || m == NULL) {
    if (!PyErr_Occurred())
      PyErr_Format(PyExc_BufferError, "%s: its DLPack exchange API could not export it", class_name(obj));
    return -1;
  }
  int rc = m->major != DLPACK_MAJOR ? refuse_version(obj, m) : (m->flags & DLPACK_FLAG_READ_ONLY) ? refuse_read_only(obj) : 0;
  if (rc == 0 && ffi_tensor_from_dlpack_versioned(m, 0, 0, out) != 0) rc = (raise_native_error(), -1);
  if (rc != 0 && m->deleter != NULL) m->deleter(m); /* not taken over: ours to release */
  return rc;
}

/* ``obj.__dlpack__`` asked for a versioned capsule, then (TypeError) for the legacy one, which
   is all a class found to refuse max_version is asked for from then on. */
static PyObject* call_dlpack(PyObject* obj, PyObject* kind) {
  PyObject* args[2] = {obj, max_version_arg};
  const size_t nargs = 1 | PY_VECTORCALL_ARGUMENTS_OFFSET;
  if (kind == Py_None) return PyObject_VectorcallMethod(str_dlpack, args, nargs, NULL);
  if (kind == Py_Ellipsis) {
    PyObject* legacy = PyObject_VectorcallMethod(str_dlpack, args, nargs, NULL);
    if (legacy != NULL || !PyErr_ExceptionMatches(PyExc_BufferError)) return legacy;
    PyErr_Clear(); /* refused (read-only...): the versioned form's answer is the one to act on */
  }
  PyObject* capsule = PyObject_VectorcallMethod(str_dlpack, args, nargs, kw_max_version);
  if (capsule == NULL && PyErr_ExceptionMatches(PyExc_TypeError)) {
    PyErr_Clear(); /* a pre-1.0 producer: no max_version keyword */
    capsule = PyObject_VectorcallMethod(str_dlpack, args, nargs, NULL);
    if (capsule != NULL && set_kind(Py_TYPE(obj), Py_None) < 0) Py_CLEAR(capsule);
  }
  return capsule;
}

/* Take over the managed tensor in ``capsule`` (from ``obj``): an owned Tensor handle in *out. */
static int tensor_from_capsule(PyObject* obj, PyObject* capsule, PyObject* dtype, void** out) {
  if (PyCapsule_IsValid(capsule, NAME_V)) {
    DLManagedV* m = (DLManagedV*)PyCapsule_GetPointer(capsule, NAME_V);
    if (m->major != DLPACK_MAJOR) return refuse_version(obj, m);
    if (m->flags & DLPACK_FLAG_READ_ONLY) return refuse_read_only(obj); /* the capsule frees it */
    if (dtype != NULL) { /* a relabelled dtype (tensor.py: numpy's bfloat16) */
      if (!PyArg_ParseTuple(dtype, "bbH", &m->dl_tensor.code, &m->dl_tensor.bits, &m->dl_tensor.lanes)) return -1;
    }
    if (ffi_tensor_from_dlpack_versioned(m, 0, 0, out) != 0) return (raise_native_error(), -1);
    return PyCapsule_SetName(capsule, USED_V);
  }
  if (PyCapsule_IsValid(capsule, NAME_L)) {
    DLManaged* m = (DLManaged*)PyCapsule_GetPointer(capsule, NAME_L);
    if (dtype != NULL) {
      if (!PyArg_ParseTuple(dtype, "bbH", &m->dl_tensor.code, &m->dl_tensor.bits, &m->dl_tensor.lanes)) return -1;
    }
    if (ffi_tensor_from_dlpack(m, 0, 0, out) != 0) return (raise_native_error(), -1);
    return PyCapsule_SetName(capsule, USED_L);
  }
  PyErr_Format(PyExc_TypeError, "%s.__dlpack__() returned no DLPack capsule", class_name(obj));
  return -1;
}

/* An owned Tensor handle viewing ``obj`` (kind: its dlpack_kind); -1 with an exception set. */
static int tensor_from_producer(PyObject* obj, PyObject* kind, PyObject* dtype, void** out) {
  if (PyLong_CheckExact(kind) && dtype == NULL) return tensor_from_exchange_api(obj, (DLExchangeAPI*)PyLong_AsVoidPtr(kind), out);
  PyObject* capsule = call_dlpack(obj, kind);
  if (capsule == NULL) return -1;
  int rc = tensor_from_capsule(obj, capsule, dtype, out);
  Py_DECREF(capsule);
  return rc;
}

/* An owned Tensor handle viewing ``obj`` (our own Tensor: another reference to it), ``dtype``
   NULL or a (code, bits, lanes) relabelling; -1 with an exception set. */
static int tensor_handle_of(PyObject* obj, PyObject* dtype, void** out) {
  PyObject* kind = dlpack_kind(Py_TYPE(obj)); /* first: the common case is a producer */
  if (kind == NULL) return -1;
  if (kind == Py_False) {
    if (is_object(obj) && ((ObjectBase*)obj)->t == TI_TENSOR && ((ObjectBase*)obj)->h != NULL && dtype == NULL) {
      *out = ((ObjectBase*)obj)->h;
      ffi_incref(*out);
      return 0;
    }
    if (!PyObject_HasAttr(obj, str_dlpack)) {
      PyErr_Format(PyExc_TypeError,
                   "cannot view a %s as a Tensor: it has no __dlpack__ (pass a numpy array or a Tensor, or use "
                   "Tensor.from_sequence)",
                   class_name(obj));
      return -1;
    }
  }
  return tensor_from_producer(obj, kind, dtype, out);
}

/* tensor_from_dlpack(obj, dtype=None) -> owned handle of a Tensor viewing obj; ``dtype`` a
   (code, bits, lanes) to relabel the producer's tensor with (the capsule path then). */
static PyObject* accel_tensor_from_dlpack(PyObject* mod, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs < 1 || nargs > 2) {
    PyErr_SetString(PyExc_TypeError, "tensor_from_dlpack(obj, dtype=None)");
    return NULL;
  }
  void* h = NULL;
  if (tensor_handle_of(args[0], nargs == 2 && args[1] != Py_None ? args[1] : NULL, &h) < 0) return NULL;
  PyObject* r = PyLong_FromVoidPtr(h);
  if (r == NULL) ffi_decref(h);
  return r;
}

/* What Tensor.from_dlpack does after a BufferError: fallback(obj, exc) returns a Tensor, or None
   to raise exc (tensor.py: numpy's bfloat16 arrays, exported as their bit pattern). */
static PyObject* dlpack_fallback;

static PyObject* accel_set_dlpack_fallback(PyObject* mod, PyObject* fn) {
  Py_XSETREF(dlpack_fallback, Py_NewRef(fn));
  Py_RETURN_NONE;
}

/* After a conversion of ``obj`` failed: the fallback's Tensor for a BufferError, else NULL with
   the error kept. */
static PyObject* fallback_tensor(PyObject* obj) {
  if (dlpack_fallback == NULL || !PyErr_ExceptionMatches(PyExc_BufferError)) return NULL;
  PyObject *type, *exc, *tb;
  PyErr_Fetch(&type, &exc, &tb);
  PyErr_NormalizeException(&type, &exc, &tb);
  PyObject* r = PyObject_CallFunctionObjArgs(dlpack_fallback, obj, exc, NULL);
  if (r == Py_None) {
    Py_DECREF(r);
    PyErr_Restore(type, exc, tb);
    return NULL;
  }
  Py_XDECREF(type);
  Py_XDECREF(exc);
  Py_XDECREF(tb);
  if (r != NULL && !(is_object(r) && ((ObjectBase*)r)->t == TI_TENSOR && ((ObjectBase*)r)->h != NULL)) {
    PyErr_SetString(PyExc_TypeError, "the DLPack fallback returned no Tensor");
    Py_CLEAR(r);
  }
  return r;
}

/* An owned Tensor handle in its class: wrap_owned's work for the one type index whose class
   is always registered (tensor.py) and never a converted value, so only its class is looked up. */
static PyObject* wrap_tensor(void* h) {
  static PyObject* key;
  if (key == NULL && (key = PyLong_FromLong(TI_TENSOR)) == NULL) {
    ffi_decref(h);
    return NULL;
  }
  PyObject* cls = PyDict_GetItemWithError(class_cache, key);
  if (cls == NULL && PyErr_Occurred()) {
    ffi_decref(h);
    return NULL;
  }
  static PyObject* checked; /* the last class found to be an Object class (held: compared by address) */
  if (cls == NULL || cls != checked) {
    if (cls == NULL || !PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject*)cls, &ObjectBaseType))
      return wrap_owned(h, TI_TENSOR); /* not registered yet, or an error: its own words */
    Py_XSETREF(checked, Py_NewRef(cls));
  }
  PyObject* o = ((PyTypeObject*)cls)->tp_alloc((PyTypeObject*)cls, 0);
  if (o == NULL) {
    ffi_decref(h);
    return NULL;
  }
  ((ObjectBase*)o)->h = h;
  ((ObjectBase*)o)->t = TI_TENSOR;
  return o;
}

/* tensor_of_dlpack(obj) -> a Tensor viewing obj: Tensor.from_dlpack itself */
static PyObject* accel_tensor_of_dlpack(PyObject* mod, PyObject* obj) {
  void* h = NULL;
  if (tensor_handle_of(obj, NULL, &h) == 0) return wrap_tensor(h);
  return fallback_tensor(obj);
}

/* The argument packer's turn: 1 when ``v`` is no DLPack producer, 0 packed (the new handle in
   *made), -1 failed (a BufferError after the fallback was asked, as Tensor.from_dlpack). */
static int pack_dlpack(PyObject* v, void** made) {
  PyObject* kind = dlpack_kind(Py_TYPE(v));
  if (kind == NULL) return -1;
  if (kind == Py_False) return 1;
  if (tensor_from_producer(v, kind, NULL, made) == 0) return 0;
  PyObject* t = fallback_tensor(v);
  if (t == NULL) return -1;
  *made = ((ObjectBase*)t)->h;
  ffi_incref(*made);
  Py_DECREF(t);
  return 0;
}

/* A borrowed DLTensor* for a parameter whose schema says "DLTensor*" (a TensorView): no
   Tensor is made. The producer's exchange API fills ``slot`` (torch: no allocation at all), or
   the DLTensor inside its capsule is lent, the capsule kept in *keep until the call returns
   (its destructor then frees it). 1 when ``v`` is no producer, or one this way declines (a
   read-only or foreign-version capsule, a BufferError): pack_dlpack then gives the result or
   error a Tensor argument would; 0 packed; -1 failed. */
static int pack_dltensor_view(FFIAny* out, PyObject* v, DLTensorC* slot, PyObject** keep) {
  PyObject* kind = dlpack_kind(Py_TYPE(v));
  if (kind == NULL) return -1;
  if (kind == Py_False) return 1;
  DLTensorC* t = NULL;
  if (PyLong_CheckExact(kind)) {
    const DLExchangeAPI* api = (const DLExchangeAPI*)PyLong_AsVoidPtr(kind);
    if (api->dltensor_from_py_object_no_sync == NULL) return 1;
    if (api->dltensor_from_py_object_no_sync(v, slot) != 0) {
      PyErr_Clear(); /* asked again the managed way, whose error is reported */
      return 1;
    }
    t = slot;
  } else {
    PyObject* capsule = call_dlpack(v, kind);
    if (capsule == NULL) {
      if (!PyErr_ExceptionMatches(PyExc_BufferError)) return -1;
      PyErr_Clear();
      return 1;
    }
    if (PyCapsule_IsValid(capsule, NAME_V)) {
      DLManagedV* m = (DLManagedV*)PyCapsule_GetPointer(capsule, NAME_V);
      if (m->major == DLPACK_MAJOR && !(m->flags & DLPACK_FLAG_READ_ONLY)) t = &m->dl_tensor;
    } else if (PyCapsule_IsValid(capsule, NAME_L)) {
      t = &((DLManaged*)PyCapsule_GetPointer(capsule, NAME_L))->dl_tensor;
    }
    if (t == NULL) {
      Py_DECREF(capsule);
      return 1;
    }
    *keep = capsule;
  }
  out->type_index = TI_DL_TENSOR_PTR;
  out->small_len = 0;
  out->v_ptr = t;
  return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Out: Tensor.__dlpack__ and __dlpack_device__                                              */
/* ---------------------------------------------------------------------------------------- */
static inline DLTensorC* dltensor_of(PyObject* self) {
  return (DLTensorC*)((char*)((ObjectBase*)self)->h + sizeof(FFIObjectHeader));
}

static int live_tensor(PyObject* self) {
  if (((ObjectBase*)self)->h != NULL) return 0;
  PyErr_SetString(PyExc_ValueError, "this Tensor was moved or released");
  return -1;
}

static void capsule_release_v(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, NAME_V)) return; /* consumed ("used_...") */
  DLManagedV* m = (DLManagedV*)PyCapsule_GetPointer(capsule, NAME_V);
  if (m != NULL && m->deleter != NULL) m->deleter(m);
}

static void capsule_release_l(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, NAME_L)) return;
  DLManaged* m = (DLManaged*)PyCapsule_GetPointer(capsule, NAME_L);
  if (m != NULL && m->deleter != NULL) m->deleter(m);
}

/* (device type, device id): the tuple made last is kept and returned again for the same device */
static PyObject* device_tuple(PyObject* self) {
  static PyObject* last;
  static DLDev last_device;
  const DLDev d = dltensor_of(self)->device;
  if (last != NULL && d.device_type == last_device.device_type && d.device_id == last_device.device_id)
    return Py_NewRef(last);
  PyObject* made = Py_BuildValue("(ii)", d.device_type, d.device_id);
  if (made != NULL) {
    Py_XSETREF(last, Py_NewRef(made));
    last_device = d;
  }
  return made;
}

static PyObject* tensor_dlpack_device(PyObject* self, PyObject* unused) {
  if (live_tensor(self) < 0) return NULL;
  return device_tuple(self);
}

/* Whether a max_version asks for a versioned capsule (its major >= 1); -1 on error. */
static int wants_versioned(PyObject* max_version) {
  if (max_version == NULL || max_version == Py_None) return 0;
  PyObject* major = PySequence_GetItem(max_version, 0);
  if (major == NULL) return -1;
  long v = PyLong_AsLong(major);
  Py_DECREF(major);
  if (v == -1 && PyErr_Occurred()) return -1;
  return v >= 1;
}

/* Tensor.__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None) */
static PyObject* tensor_dlpack(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  PyObject *max_version = NULL, *dl_device = NULL, *copy = NULL;
  if (nargs != 0) {
    PyErr_SetString(PyExc_TypeError, "Tensor.__dlpack__ takes keyword arguments only");
    return NULL;
  }
  const Py_ssize_t nk = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
  for (Py_ssize_t i = 0; i < nk; ++i) {
    const char* k = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, i));
    if (k == NULL) return NULL;
    if (strcmp(k, "max_version") == 0) {
      max_version = args[i];
    } else if (strcmp(k, "dl_device") == 0) {
      dl_device = args[i];
    } else if (strcmp(k, "copy") == 0) {
      copy = args[i];
    } else if (strcmp(k, "stream") != 0) {
      PyErr_Format(PyExc_TypeError, "Tensor.__dlpack__ got an unexpected keyword argument '%s'", k);
      return NULL;
    }
  }
  if (live_tensor(self) < 0) return NULL;
  const int copy_wanted = copy == NULL ? 0 : PyObject_IsTrue(copy);
  if (copy_wanted < 0) return NULL;
  if (copy_wanted) {
    PyErr_SetString(PyExc_BufferError, "Tensor.__dlpack__: copy=True is not supported; the export is zero-copy");
    return NULL;
  }
  if (dl_device != NULL && dl_device != Py_None) {
    PyObject* own = device_tuple(self);
    PyObject* asked = own == NULL ? NULL : PySequence_Tuple(dl_device);
    int same = asked == NULL ? -1 : PyObject_RichCompareBool(own, asked, Py_EQ);
    Py_XDECREF(asked);
    if (same == 0) {
      PyErr_Format(PyExc_BufferError, "Tensor.__dlpack__: the tensor is on device %R; cannot export to device %R", own,
                   dl_device);
    }
    Py_XDECREF(own);
    if (same != 1) return NULL;
  }
  const int versioned = wants_versioned(max_version);
  if (versioned < 0) return NULL;
  void* h = ((ObjectBase*)self)->h;
  PyObject* capsule;
  if (versioned) {
    DLManagedV* m = NULL;
    if (ffi_tensor_to_dlpack_versioned(h, &m) != 0) return raise_native_error();
    capsule = PyCapsule_New(m, NAME_V, capsule_release_v);
    if (capsule == NULL) m->deleter(m);
  } else {
    DLManaged* m = NULL;
    if (ffi_tensor_to_dlpack(h, &m) != 0) return raise_native_error();
    capsule = PyCapsule_New(m, NAME_L, capsule_release_l);
    if (capsule == NULL) m->deleter(m);
  }
  return capsule;
}

static PyMethodDef tensor_dlpack_def = {"__dlpack__", (PyCFunction)(void (*)(void))tensor_dlpack,
                                        METH_FASTCALL | METH_KEYWORDS,
                                        "A DLPack capsule viewing this tensor (versioned when max_version >= 1.0)."};
static PyMethodDef tensor_dlpack_device_def = {"__dlpack_device__", tensor_dlpack_device, METH_NOARGS,
                                               "(device type, device id) of this tensor."};

/* ---------------------------------------------------------------------------------------- */
/* A borrowed DLTensor* (callback argument) as a Tensor (see _tensor_view's docstring)       */
/* ---------------------------------------------------------------------------------------- */
static Py_ssize_t live_tensor_views = 0; /* changed atomically: the deleter may run off the GIL */

static void view_deleter(DLManagedV* m) {
  __atomic_sub_fetch(&live_tensor_views, 1, __ATOMIC_RELAXED);
  PyMem_RawFree(m);
}

/* A Tensor over the DLTensor at ``src``: its fields, shape and strides copied into a managed
   struct of ours (the data stays the caller's). */
static PyObject* view_of_dltensor(const DLTensorC* src) {
  if (src == NULL || src->ndim < 0) {
    PyErr_SetString(PyExc_ValueError, "a null DLTensor* (or one with ndim < 0) cannot be viewed as a Tensor");
    return NULL;
  }
  const size_t n = (size_t)src->ndim;
  DLManagedV* m = (DLManagedV*)PyMem_RawMalloc(sizeof(DLManagedV) + 2 * n * sizeof(int64_t));
  if (m == NULL) return PyErr_NoMemory();
  memset(m, 0, sizeof(DLManagedV));
  m->major = 1;
  m->minor = 1;
  m->deleter = view_deleter;
  m->dl_tensor = *src;
  int64_t* shape = (int64_t*)(m + 1);
  if (n) memcpy(shape, src->shape, n * sizeof(int64_t));
  m->dl_tensor.shape = shape;
  if (src->strides != NULL) {
    if (n) memcpy(shape + n, src->strides, n * sizeof(int64_t));
    m->dl_tensor.strides = shape + n;
  }
  __atomic_add_fetch(&live_tensor_views, 1, __ATOMIC_RELAXED);
  void* h = NULL;
  if (ffi_tensor_from_dlpack_versioned(m, 0, 0, &h) != 0) {
    view_deleter(m);
    return raise_native_error();
  }
  return wrap_tensor(h);
}

static PyObject* accel_live_tensor_views(PyObject* mod, PyObject* unused) {
  return PyLong_FromSsize_t(__atomic_load_n(&live_tensor_views, __ATOMIC_RELAXED));
}

/* view_dltensor(address) -> Tensor viewing the borrowed DLTensor there */
static PyObject* accel_view_dltensor(PyObject* mod, PyObject* arg) {
  void* p = PyLong_AsVoidPtr(arg);
  if (p == NULL && PyErr_Occurred()) return NULL;
  return view_of_dltensor((const DLTensorC*)p);
}
