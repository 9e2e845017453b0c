/* _accel_parts/callbacks.h: Python callables as native Functions (the callback modes).
 *
 * A part of _accel.c's one translation unit, included by it in order after the ABI
 * declarations and the hooks (it relies on what they and the parts before it define);
 * not a header to include anywhere else. */

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
    /* the conversion ran out of Python stack (RecursionError): say so; otherwise the generic
       pair (_errors.conversion_failed chooses the same way) */
    int k = PyErr_ExceptionMatches(PyExc_RecursionError) ? 2 : 0;
    PyErr_Clear();
    ffi_error_set_raised_from_cstr(PyBytes_AS_STRING(PyTuple_GET_ITEM(conversion_failed, k)),
                                   PyBytes_AS_STRING(PyTuple_GET_ITEM(conversion_failed, k + 1)));
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
    for (; made < nargs; ++made) { /* a borrowed DLTensor* becomes a Tensor view (dlpack.h) */
      pyargs[made] = args[made].type_index == TI_DL_TENSOR_PTR ? view_of_dltensor((const DLTensorC*)args[made].v_ptr)
                                                                : view_to_py(&args[made]);
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
