/* _accel_parts/lazy_function.h: LazyFunction, what generated functions and methods are.
 *
 * A part of _accel.c's one translation unit, included by it in order after the ABI
 * declarations and the hooks (it relies on what they and the parts before it define);
 * not a header to include anywhere else. */

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
  uint64_t views;     /* bit i: parameter i takes a borrowed DLTensor* (call_raw_views) */
  int keep_gil;       /* 1: calls keep the GIL whatever the policy (release_gil = False) */
  vectorcallfunc vectorcall;
} LazyFunction;

static int lazy_resolve(LazyFunction* self) {
  if (self->resolver == NULL) {
    PyErr_Format(PyExc_RuntimeError, "%R can no longer be resolved (cleared)", self->name);
    return -1;
  }
  PyObject* got = PyObject_CallNoArgs(self->resolver);
  if (got == NULL) return -1;
  PyObject* f = got;
  unsigned long long views = 0;
  if (PyTuple_Check(got)) { /* (Function, views): the parameters that take a borrowed DLTensor* */
    if (PyTuple_GET_SIZE(got) != 2 || !PyLong_Check(PyTuple_GET_ITEM(got, 1))) {
      PyErr_Format(PyExc_TypeError, "resolving %R gave a tuple that is not (Function, views)", self->name);
      Py_DECREF(got);
      return -1;
    }
    views = PyLong_AsUnsignedLongLongMask(PyTuple_GET_ITEM(got, 1));
    f = Py_NewRef(PyTuple_GET_ITEM(got, 0));
    Py_DECREF(got);
  }
  if (!is_object(f) || ((ObjectBase*)f)->h == NULL || ((ObjectBase*)f)->t != TI_FUNCTION) {
    PyErr_Format(PyExc_TypeError, "resolving %R did not give a Function", self->name);
    Py_DECREF(f);
    return -1;
  }
  if (self->function != NULL) { /* another thread resolved it meanwhile: keep the first */
    Py_DECREF(f);
    return 0;
  }
  self->views = (uint64_t)views;
  self->fh = ((ObjectBase*)f)->h;
  self->function = f;
  return 0;
}

/* The name Python code knows the function by (its __qualname__), else the registry name. */
/* The __qualname__ the wrapped def gave (borrowed), or NULL for a bare handle. */
static PyObject* lazy_qualname(LazyFunction* self) {
  PyObject* q = self->dict == NULL ? NULL : PyDict_GetItemString(self->dict, "__qualname__");
  return q != NULL && PyUnicode_Check(q) ? q : NULL;
}

static PyObject* lazy_display_name(LazyFunction* self) {
  PyObject* q = lazy_qualname(self);
  return Py_NewRef(q != NULL ? q : self->name);
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
  PyObject* r = call_packed_views(((ObjectBase*)keep)->h, args, n, self->name, self->keep_gil, self->views);
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

static PyObject* lazy_get_release_gil(LazyFunction* self, void* closure) { return PyBool_FromLong(!self->keep_gil); }

static int lazy_set_release_gil(LazyFunction* self, PyObject* value, void* closure) {
  if (value == NULL || !PyBool_Check(value)) {
    PyErr_Format(PyExc_TypeError, "%R: release_gil must be True or False", self->name);
    return -1;
  }
  self->keep_gil = value == Py_False;
  return 0;
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
  PyObject* q = lazy_qualname(self);
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
    {"release_gil", (getter)lazy_get_release_gil, (setter)lazy_set_release_gil,
     "False: calls keep the GIL whatever the policy (_call.keep_gil sets it)", NULL},
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
              "calls it directly; a method when it is a class attribute, as a def is. resolver() gives the\n"
              "Function, or (Function, views): bit i of views set, parameter i takes a borrowed DLTensor*.",
    .tp_traverse = (traverseproc)lazy_traverse,
    .tp_clear = (inquiry)lazy_clear,
    .tp_methods = lazy_methods,
    .tp_members = lazy_members,
    .tp_getset = lazy_getset,
    .tp_descr_get = lazy_descr_get,
    .tp_dictoffset = offsetof(LazyFunction, dict),
    .tp_new = lazy_new,
};
