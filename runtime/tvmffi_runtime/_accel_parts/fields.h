/* _accel_parts/fields.h: Field, the descriptor reading and writing one field in object memory.
 *
 * A part of _accel.c's one translation unit, included by it in order after the ABI
 * declarations and the hooks (it relies on what they and the parts before it define);
 * not a header to include anywhere else. */

/* ---------------------------------------------------------------------------------------- */
/* Field: a descriptor reading (and writing) one field in object memory                       */
/* ---------------------------------------------------------------------------------------- */
/* F_I64 ... F_ANY, field_kinds[] (their names) and field_kind_in_place[]: written at build time
   from the one table of field layouts, tvmffi_runtime/_field_kinds.py */
#include "field_kinds.h"

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
  if (field_kinds[k] == NULL || (setter == Py_True && !field_kind_in_place[k])) {
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
