/* _accel_parts/calls.h: calling a native Function: the GIL policy, call, construct.
 *
 * A part of _accel.c's one translation unit, included by it in order after the ABI
 * declarations and the hooks (it relies on what they and the parts before it define);
 * not a header to include anywhere else. */

/* ---------------------------------------------------------------------------------------- */
/* Calling                                                                                    */
/* ---------------------------------------------------------------------------------------- */

/* Python functions and methods passed straight to native code: a new native Function that
   owns the callable (released after the call, so it lives on only if native code kept it). */
static inline int is_plain_callable(PyObject* v) {
  PyTypeObject* t = Py_TYPE(v);
  return t == &PyFunction_Type || t == &PyMethod_Type || t == &PyCFunction_Type;
}


static PyObject* hook_array_ctor; /* () -> the ffi.Array constructor Function */
static PyObject* array_ctor;      /* that Function, once asked for */
static PyObject* array_ctor_name; /* "ffi.Array", for argument errors */

static int call_raw_views(void* fh, PyObject* const* args, Py_ssize_t n, PyObject* name, FFIAny* result, int keep_gil,
                          uint64_t views);
#define call_raw(fh, args, n, name, result) call_raw_views((fh), (args), (n), (name), (result), 0, 0)
#define call_raw_gil(fh, args, n, name, result, keep_gil) call_raw_views((fh), (args), (n), (name), (result), (keep_gil), 0)

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

/* Pack what pack_fast does not: plain callables, lists/tuples and DLPack producers in C (their
   new handles go to ``owned``), everything else through the Python packers (owned things go to
   ``temps``). */
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
    } else {
      const int r = pack_dlpack(v, &made); /* a numpy array, a torch tensor... */
      if (r < 0) return -1;
      ti = TI_TENSOR;
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

/* The exception set now becomes the one _call.argument_error words for argument ``i``. */
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

/* Whether a call releases the GIL around TVMFFIFunctionCall. GIL_ALWAYS (the default) does on
   every call. GIL_AUTO (opt-in) keeps it when no other thread could want it as far as the
   runtime can see: this is the only Python thread, and native code holds no Python callable
   (ours: live_callbacks; another binding's, such as tvm_ffi's, once it is imported). That saves
   two GIL hand-offs per call, but a native worker thread that takes the GIL some other way (a
   numpy DLPack deleter, a signal check) while the call waits for it would wait forever; see
   _call.set_release_gil. Signal checks on the calling thread re-enter the GIL it holds. */
enum { GIL_AUTO = 0, GIL_ALWAYS = 1 };
static int gil_policy = GIL_ALWAYS; /* _call.set_release_gil chooses */
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

/* set_gil_auto(flag): GIL_AUTO when ``flag`` is true, else GIL_ALWAYS. The policy itself (its
   names, their check, the previous one) is _call.set_release_gil's. */
static PyObject* accel_set_gil_auto(PyObject* mod, PyObject* arg) {
  const int flag = PyObject_IsTrue(arg);
  if (flag < 0) return NULL;
  gil_policy = flag ? GIL_AUTO : GIL_ALWAYS;
  Py_RETURN_NONE;
}

/* Pack ``args`` and call; on success ``result`` holds the owned result (0), else -1 with an
   exception set. Everything made for the call is released before returning. The GIL is
   released as the policy says, or kept when ``keep_gil`` (the library's own container
   functions, which run no Python code and wait on nothing, and the functions a user marked so:
   keep_gil in _call). Bit i of ``views`` set: parameter
   i takes a borrowed DLTensor* (its schema says so), so a DLPack producer there is lent as one
   (pack_dltensor_view) instead of becoming a Tensor; the first STACK_ARGS parameters only. */
static int call_raw_views(void* fh, PyObject* const* args, Py_ssize_t n, PyObject* name, FFIAny* result, int keep_gil,
                          uint64_t views) {
  FFIAny stack[STACK_ARGS];
  FFIAny* buf = stack;
  PyObject* temps = NULL;
  void* owned[STACK_ARGS]; /* handles made here (callables, arrays), released after the call */
  int n_owned = 0;
  DLTensorC lent[STACK_ARGS];  /* DLTensors the producers filled, for the view parameters */
  PyObject* kept[STACK_ARGS];  /* capsules whose DLTensor is lent, released after the call */
  int n_kept = 0;
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
    if (i < STACK_ARGS && (views >> i) & 1) {
      PyObject* capsule = NULL;
      const int r = pack_dltensor_view(&buf[i], args[i], &lent[i], &capsule);
      if (capsule != NULL) kept[n_kept++] = capsule;
      if (r == 0) continue;
      if (r < 0) {
        reword_pack_error(name, args[i], i);
        goto done;
      }
    }
    if (pack_other(&buf[i], args[i], owned, &n_owned, &temps) < 0) {
      reword_pack_error(name, args[i], i);
      goto done;
    }
  }
  result->type_index = TI_NONE;
  result->small_len = 0;
  result->v_int64 = 0;
  int rc;
  if (!keep_gil && must_release_gil()) {
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
  for (int k = 0; k < n_kept; ++k) Py_DECREF(kept[k]); /* the capsule's destructor frees it */
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

static PyObject* call_packed_views(void* fh, PyObject* const* args, Py_ssize_t n, PyObject* name, int keep_gil,
                                   uint64_t views) {
  FFIAny result;
  if (call_raw_views(fh, args, n, name, &result, keep_gil, views) < 0) return NULL;
  return owned_to_py(&result);
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

/* The Function handle ``h`` names, ready to call (init() done, not null); NULL with an error
   naming ``what`` otherwise. */
static void* callable_handle(PyObject* h, const char* what) {
  if (!initialised) {
    PyErr_SetString(PyExc_RuntimeError, "tvmffi_runtime._accel: init() was not called");
    return NULL;
  }
  void* fh = handle_of(h);
  if (fh == NULL && !PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "%s: null function handle", what);
  return fh;
}

/* call(handle, args, name=None): what _call.ffi_call does, for any handle form. */
static PyObject* accel_call(PyObject* mod, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs < 2 || nargs > 3) {
    PyErr_SetString(PyExc_TypeError, "call(handle, args, name=None)");
    return NULL;
  }
  void* fh = callable_handle(args[0], "call");
  if (fh == NULL) return NULL;
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
  void* fh = callable_handle(args[1], "construct");
  if (fh == NULL) return NULL;
  FFIAny result;
  if (call_raw(fh, &PyTuple_GET_ITEM(args[2], 0), PyTuple_GET_SIZE(args[2]), args[3], &result) < 0) return NULL;
  /* a plain value, or an object read as a Python value (a String, Bytes, ...): not adoptable */
  PyObject* index = PyLong_FromLong(result.type_index);
  if (index == NULL) {
    if (result.type_index >= TI_OBJECT_BEGIN) ffi_decref(result.v_ptr);
    return NULL;
  }
  const int converted = PyDict_Contains(object_return, index);
  Py_DECREF(index);
  if (converted < 0) {
    if (result.type_index >= TI_OBJECT_BEGIN) ffi_decref(result.v_ptr);
    return NULL;
  }
  if (result.type_index < TI_OBJECT_BEGIN || converted) {
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
