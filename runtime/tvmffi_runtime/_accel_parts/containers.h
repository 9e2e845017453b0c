/* _accel_parts/containers.h: the read side of Array / List, Map / Dict and Shape in C.
 *
 * A part of _accel.c's one translation unit, included by it in order after the ABI
 * declarations and the hooks (it relies on what they and the parts before it define);
 * not a header to include anywhere else.
 *
 * Three bases of the container classes (containers.py derives Array and List from SeqBase, Map
 * and Dict from MapBase, Shape from ShapeBase; _pure/containers.py is their twin), each
 * ObjectBase's layout (ShapeBase extended by its dimensions), so a Python class may derive from
 * Object and from one of them. Their slots are the Python protocol, so `a[i]`, `len(m)`,
 * `k in m` and iteration go straight to C:
 *   - a sequence reads its TVMFFISeqCell (an array of Any) in object memory, a Shape its
 *     TVMFFIShapeCell once, into a tuple it keeps; a Map's length is its MapBaseObj size;
 *   - a Map's lookup, membership and iteration call the library's own functions (by the names
 *     _container_functions.MAP_FUNCTIONS gives, looked up once) with the GIL kept: they run no
 *     Python and take no lock, and hashing stays the library's. */

/* SeqCell (TVMFFISeqCell) and MapCell (MapBaseObj after the header) are graph.h's */
typedef struct {
  const int64_t* data;
  uint64_t size;
} ShapeCell; /* TVMFFIShapeCell */
#define SEQ_ITEMS(cell) ((FFIAny*)(cell)->data)

#define CELL_OF(h, T) ((T*)((char*)(h) + sizeof(FFIObjectHeader)))

/* The handle of ``self`` when it is a live object of type index ``a`` or ``b``; else NULL with
   the error set (a moved or released wrapper: the runtime's ReleasedObjectError). */
static void* container_handle(PyObject* self, int32_t a, int32_t b) {
  ObjectBase* o = (ObjectBase*)self;
  if (o->h == NULL) {
    RAISE_ERROR(E_RELEASED, self);
    return NULL;
  }
  if (o->t != a && o->t != b) {
    PyErr_Format(PyExc_TypeError, "%.200s wraps type index %d, which is not a container of its kind",
                 Py_TYPE(self)->tp_name, (int)o->t);
    return NULL;
  }
  return o->h;
}

/* ``key`` as an int (operator.index's TypeError for anything else); a new reference. It may run
   Python code (``__index__``), so a caller reads the container's size after it. */
static inline PyObject* container_index(PyObject* key) {
  return PyLong_CheckExact(key) ? Py_NewRef(key) : PyNumber_Index(key);
}

/* The position the int ``index`` names among ``n`` items (negative counts from the end), or -1
   with the runtime's IndexError set. */
static Py_ssize_t container_position(PyObject* self, PyObject* index, Py_ssize_t n) {
  Py_ssize_t i = PyLong_AsSsize_t(index);
  if (i == -1 && PyErr_Occurred()) {
    PyErr_Clear(); /* beyond Py_ssize_t: out of range */
  } else {
    Py_ssize_t j = i < 0 ? i + n : i;
    if (0 <= j && j < n) return j;
  }
  PyObject* owner = PyObject_GetAttrString((PyObject*)Py_TYPE(self), "__name__");
  PyObject* length = PyLong_FromSsize_t(n);
  if (owner != NULL && length != NULL) RAISE_ERROR(E_INDEX, owner, index, length);
  Py_XDECREF(owner);
  Py_XDECREF(length);
  return -1;
}

/* ---------------------------------------------------------------------------------------- */
/* SeqBase: Array and List                                                                    */
/* ---------------------------------------------------------------------------------------- */
static inline SeqCell* seq_cell(PyObject* self) {
  void* h = container_handle(self, TI_ARRAY, TI_LIST);
  return h == NULL ? NULL : CELL_OF(h, SeqCell);
}

/* The values of ``count`` items from ``start`` by ``step``: first copied out with a reference
   of their own (converting one may run Python code that changes a List), then converted. */
static PyObject* seq_items(const SeqCell* cell, Py_ssize_t start, Py_ssize_t step, Py_ssize_t count) {
  PyObject* list = PyList_New(count);
  if (list == NULL || count == 0) return list;
  FFIAny* items = (FFIAny*)PyMem_Malloc(sizeof(FFIAny) * (size_t)count);
  if (items == NULL) {
    Py_DECREF(list);
    return PyErr_NoMemory();
  }
  for (Py_ssize_t k = 0; k < count; ++k) {
    items[k] = SEQ_ITEMS(cell)[start + k * step];
    if (items[k].type_index >= TI_OBJECT_BEGIN) ffi_incref(items[k].v_ptr);
  }
  Py_ssize_t k = 0;
  for (; k < count; ++k) {
    PyObject* v = owned_to_py(&items[k]); /* takes over the reference */
    if (v == NULL) break;
    PyList_SET_ITEM(list, k, v);
  }
  if (k < count) {
    for (Py_ssize_t rest = k + 1; rest < count; ++rest)
      if (items[rest].type_index >= TI_OBJECT_BEGIN) ffi_decref(items[rest].v_ptr);
    Py_CLEAR(list);
  }
  PyMem_Free(items);
  return list;
}

static Py_ssize_t seq_length(PyObject* self) {
  SeqCell* cell = seq_cell(self);
  return cell == NULL ? -1 : (Py_ssize_t)cell->size;
}

static PyObject* seq_subscript(PyObject* self, PyObject* key) {
  SeqCell* cell = seq_cell(self);
  if (cell == NULL) return NULL;
  if (PySlice_Check(key)) {
    Py_ssize_t start, stop, step;
    if (PySlice_Unpack(key, &start, &stop, &step) < 0) return NULL; /* may run __index__ */
    Py_ssize_t count = PySlice_AdjustIndices((Py_ssize_t)cell->size, &start, &stop, step);
    return seq_items(cell, start, step, count);
  }
  PyObject* index = container_index(key);
  if (index == NULL) return NULL;
  Py_ssize_t i = container_position(self, index, (Py_ssize_t)cell->size);
  Py_DECREF(index);
  if (i < 0) return NULL;
  FFIAny item = SEQ_ITEMS(cell)[i];
  return view_to_py(&item); /* an object gets its reference before any Python code runs */
}

static PyObject* seq_all_items(PyObject* self, PyObject* unused) {
  SeqCell* cell = seq_cell(self);
  return cell == NULL ? NULL : seq_items(cell, 0, 1, (Py_ssize_t)cell->size);
}

static PyObject* seq_iter(PyObject* self) {
  PyObject* items = seq_all_items(self, NULL);
  if (items == NULL) return NULL;
  PyObject* it = PyObject_GetIter(items);
  Py_DECREF(items);
  return it;
}

/* What `value == item` is, told without making the item a Python value: 1, 0, or -1 when only
   the comparison itself can tell. ``kind`` says what ``value`` is (see seq_contains). */
enum { PROBE_OTHER, PROBE_INT, PROBE_STR, PROBE_NONE, PROBE_OBJECT };
static int probe_equal(int kind, long long iv, const char* sv, Py_ssize_t sn, void* ov, const FFIAny* a) {
  const int32_t t = a->type_index;
  const int pod_or_text = t == TI_NONE || t == TI_INT || t == TI_BOOL || t == TI_FLOAT || t == TI_SMALL_STR ||
                          t == TI_SMALL_BYTES || t == TI_STR || t == TI_BYTES;
  switch (kind) {
    case PROBE_INT:
      if (t == TI_INT || t == TI_BOOL) return a->v_int64 == iv;
      return t == TI_FLOAT ? -1 : (pod_or_text ? 0 : -1);
    case PROBE_STR:
      if (t == TI_SMALL_STR) return (Py_ssize_t)a->small_len == sn && memcmp(a->v_bytes, sv, (size_t)sn) == 0;
      if (t == TI_STR) {
        const FFIByteArray* ba = CELL_OF(a->v_ptr, FFIByteArray);
        return (Py_ssize_t)ba->size == sn && memcmp(ba->data, sv, (size_t)sn) == 0;
      }
      return pod_or_text ? 0 : -1;
    case PROBE_NONE:
      if (t == TI_NONE) return 1;
      return pod_or_text ? 0 : -1;
    case PROBE_OBJECT:
      if (t >= TI_OBJECT_BEGIN && a->v_ptr == ov) return 1;
      return -1;
    default:
      return -1;
  }
}

/* `value in seq`: `item == value` for some item, as Python's `in` on a list. Ints, strs, None and
   the same object are told from the item's Any; other items are compared as Python values. */
static int seq_contains(PyObject* self, PyObject* value) {
  SeqCell* cell = seq_cell(self);
  if (cell == NULL) return -1;
  int kind = PROBE_OTHER;
  long long iv = 0;
  const char* sv = NULL;
  Py_ssize_t sn = 0;
  void* ov = NULL;
  if (PyLong_CheckExact(value)) {
    int overflow = 0;
    iv = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (iv == -1 && PyErr_Occurred()) return -1;
    if (!overflow) kind = PROBE_INT;
  } else if (PyUnicode_CheckExact(value)) {
    sv = PyUnicode_AsUTF8AndSize(value, &sn);
    if (sv != NULL) {
      kind = PROBE_STR;
    } else {
      PyErr_Clear(); /* lone surrogates: compared as Python values */
    }
  } else if (value == Py_None) {
    kind = PROBE_NONE;
  } else if (is_object(value) && ((ObjectBase*)value)->h != NULL) {
    kind = PROBE_OBJECT;
    ov = ((ObjectBase*)value)->h;
  }
  /* the cell is read again each round: a comparison may run Python code that changes a List */
  for (Py_ssize_t i = 0; i < (Py_ssize_t)cell->size; ++i) {
    FFIAny item = SEQ_ITEMS(cell)[i];
    int r = probe_equal(kind, iv, sv, sn, ov, &item);
    if (r >= 0) {
      if (r) return 1;
      continue;
    }
    PyObject* v = view_to_py(&item);
    if (v == NULL) return -1;
    r = PyObject_RichCompareBool(v, value, Py_EQ);
    Py_DECREF(v);
    if (r != 0) return r;
  }
  return 0;
}

static PySequenceMethods seq_as_sequence = {.sq_length = seq_length, .sq_contains = seq_contains};
static PyMappingMethods seq_as_mapping = {.mp_length = seq_length, .mp_subscript = seq_subscript};
static PyMethodDef seq_methods[] = {
    {"_items", seq_all_items, METH_NOARGS, "_items() -> list of the items as values"}, {NULL}};

static PyTypeObject SeqBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tvmffi_runtime._accel.SeqBase",
    .tp_basicsize = sizeof(ObjectBase),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, /* the GC flag and slots: ObjectBase's */
    .tp_doc = "The read side of Array and List: length, index, slice, membership, iteration.",
    .tp_as_sequence = &seq_as_sequence,
    .tp_as_mapping = &seq_as_mapping,
    .tp_iter = seq_iter,
    .tp_methods = seq_methods,
};

/* ---------------------------------------------------------------------------------------- */
/* MapBase: Map and Dict                                                                      */
/* ---------------------------------------------------------------------------------------- */
enum { MAP_GET, MAP_COUNT, MAP_ITER, MAP_N_FUNCTIONS };
typedef struct {
  void* fn[MAP_N_FUNCTIONS];          /* handles (kept alive by the runtime's lookup cache) */
  PyObject* name[MAP_N_FUNCTIONS];    /* their names, for argument errors */
} MapFunctions;
static MapFunctions map_functions[2]; /* [0] Map, [1] Dict */
static PyObject* map_function_names;  /* type index -> (get-or-missing, count, iterator) names */
static PyObject* hook_global_handle;  /* (name) -> handle of that global function */
static PyObject* hook_map_missing;    /* () -> the object *GetItemOrMissing returns for no key */
static PyObject* map_missing_object;  /* that object, kept */
static void* map_missing;             /* its handle */

/* The functions of map type ``t`` (and the missing marker), looked up the first time. */
static MapFunctions* map_functions_of(int32_t t) {
  MapFunctions* f = &map_functions[t == TI_DICT];
  if (f->fn[MAP_ITER] != NULL && map_missing != NULL) return f;
  if (map_missing == NULL) {
    PyObject* m = PyObject_CallNoArgs(hook_map_missing);
    if (m == NULL) return NULL;
    if (!is_object(m) || ((ObjectBase*)m)->h == NULL) {
      Py_DECREF(m);
      PyErr_SetString(PyExc_TypeError, "init: map_missing() did not return an object");
      return NULL;
    }
    Py_XSETREF(map_missing_object, m);
    map_missing = ((ObjectBase*)m)->h;
  }
  PyObject* key = PyLong_FromLong(t);
  if (key == NULL) return NULL;
  PyObject* names = PyDict_GetItemWithError(map_function_names, key);
  Py_DECREF(key);
  if (names == NULL || !PyTuple_Check(names) || PyTuple_GET_SIZE(names) != MAP_N_FUNCTIONS) {
    if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "init: map_functions has no (get, count, iterator) names for type index %d", (int)t);
    return NULL;
  }
  for (int k = 0; k < MAP_N_FUNCTIONS; ++k) {
    PyObject* name = PyTuple_GET_ITEM(names, k);
    PyObject* handle = PyObject_CallOneArg(hook_global_handle, name);
    if (handle == NULL) return NULL;
    void* fh = handle_of(handle);
    Py_DECREF(handle);
    if (fh == NULL) {
      if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "%S: null function handle", name);
      return NULL;
    }
    Py_INCREF(name);
    Py_XSETREF(f->name[k], name);
    f->fn[k] = fh;
  }
  return f;
}

/* The handle of ``self`` (a live Map or Dict) and its functions; NULL with the error set. */
static MapFunctions* map_ready(PyObject* self) {
  if (container_handle(self, TI_MAP, TI_DICT) == NULL) return NULL;
  return map_functions_of(((ObjectBase*)self)->t);
}

/* Call map function ``which`` on (self[, key]) with the GIL kept; the owned result in ``out``. */
static int map_call(MapFunctions* f, int which, PyObject* self, PyObject* key, FFIAny* out) {
  PyObject* args[2] = {self, key};
  return call_raw_gil(f->fn[which], args, key == NULL ? 1 : 2, f->name[which], out, 1);
}

static Py_ssize_t map_length(PyObject* self) {
  void* h = container_handle(self, TI_MAP, TI_DICT);
  return h == NULL ? -1 : (Py_ssize_t)CELL_OF(h, MapCell)->size;
}

/* The value at ``key``; ``missing`` (a new reference) when there is none, or NULL with
   KeyError(key) set when ``missing`` is NULL. */
static PyObject* map_lookup(PyObject* self, PyObject* key, PyObject* missing) {
  MapFunctions* f = map_ready(self);
  FFIAny r;
  if (f == NULL || map_call(f, MAP_GET, self, key, &r) < 0) return NULL;
  if (r.type_index >= TI_OBJECT_BEGIN && r.v_ptr == map_missing) {
    ffi_decref(r.v_ptr);
    if (missing != NULL) return Py_NewRef(missing);
    PyObject* exc = PyObject_CallOneArg(PyExc_KeyError, key); /* KeyError(key), a tuple kept whole */
    if (exc != NULL) {
      PyErr_SetObject(PyExc_KeyError, exc);
      Py_DECREF(exc);
    }
    return NULL;
  }
  return owned_to_py(&r);
}

static PyObject* map_subscript(PyObject* self, PyObject* key) { return map_lookup(self, key, NULL); }

/* get(key, default=None, /) */
static PyObject* map_get(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs < 1 || nargs > 2) {
    PyErr_Format(PyExc_TypeError, "get expected 1 or 2 arguments, got %zd", nargs);
    return NULL;
  }
  return map_lookup(self, args[0], nargs == 2 ? args[1] : Py_None);
}

/* `key in map`: the library's count; a key it cannot take (a TypeError) is not in the map. */
static int map_contains(PyObject* self, PyObject* key) {
  MapFunctions* f = map_ready(self);
  if (f == NULL) return -1;
  FFIAny r;
  if (map_call(f, MAP_COUNT, self, key, &r) < 0) {
    if (!PyErr_ExceptionMatches(PyExc_TypeError)) return -1;
    PyErr_Clear();
    return 0;
  }
  if (r.type_index == TI_INT || r.type_index == TI_BOOL) return r.v_int64 != 0;
  PyObject* v = owned_to_py(&r);
  if (v == NULL) return -1;
  int truth = PyObject_IsTrue(v);
  Py_DECREF(v);
  return truth;
}

/* One step of the library's map iterator Function: 0 key, 1 value, 2 advance (-> more?). */
static PyObject* map_iter_step(void* it, int64_t command) {
  FFIAny arg = {.type_index = TI_INT, .small_len = 0, .v_int64 = command};
  FFIAny r = {.type_index = TI_NONE, .small_len = 0, .v_int64 = 0};
  if (ffi_call(it, &arg, 1, &r) != 0) return raise_native_error();
  return owned_to_py(&r);
}

/* The keys (0), values (1) or (key, value) pairs (2) in the library's iteration order. */
enum { MAP_KEYS, MAP_VALUES, MAP_PAIRS };
static PyObject* map_collect(PyObject* self, int what) {
  MapFunctions* f = map_ready(self);
  if (f == NULL) return NULL;
  PyObject* out = PyList_New(0);
  if (out == NULL || CELL_OF(((ObjectBase*)self)->h, MapCell)->size == 0) return out;
  FFIAny it;
  if (map_call(f, MAP_ITER, self, NULL, &it) < 0) {
    Py_DECREF(out);
    return NULL;
  }
  if (it.type_index != TI_FUNCTION) {
    if (it.type_index >= TI_OBJECT_BEGIN) ffi_decref(it.v_ptr);
    Py_DECREF(out);
    PyErr_Format(PyExc_TypeError, "%S did not return a Function", f->name[MAP_ITER]);
    return NULL;
  }
  for (;;) {
    PyObject* k = what == MAP_VALUES ? NULL : map_iter_step(it.v_ptr, 0);
    PyObject* v = what == MAP_KEYS ? NULL : map_iter_step(it.v_ptr, 1);
    PyObject* item = NULL;
    if ((what != MAP_VALUES && k == NULL) || (what != MAP_KEYS && v == NULL)) goto fail_step;
    item = what == MAP_KEYS ? Py_NewRef(k) : what == MAP_VALUES ? Py_NewRef(v) : PyTuple_Pack(2, k, v);
    if (item == NULL || PyList_Append(out, item) < 0) goto fail_step;
    Py_CLEAR(item);
    Py_XDECREF(k);
    Py_XDECREF(v);
    PyObject* more = map_iter_step(it.v_ptr, 2);
    if (more == NULL) goto fail;
    const int go_on = PyObject_IsTrue(more);
    Py_DECREF(more);
    if (go_on < 0) goto fail;
    if (!go_on) break;
    continue;
  fail_step:
    Py_XDECREF(item);
    Py_XDECREF(k);
    Py_XDECREF(v);
    goto fail;
  }
  ffi_decref(it.v_ptr);
  return out;
fail:
  ffi_decref(it.v_ptr);
  Py_DECREF(out);
  return NULL;
}

static PyObject* map_iter(PyObject* self) {
  PyObject* keys = map_collect(self, MAP_KEYS);
  if (keys == NULL) return NULL;
  PyObject* it = PyObject_GetIter(keys);
  Py_DECREF(keys);
  return it;
}

static PyObject* map_pairs(PyObject* self, PyObject* unused) { return map_collect(self, MAP_PAIRS); }
static PyObject* map_values(PyObject* self, PyObject* unused) { return map_collect(self, MAP_VALUES); }

static PySequenceMethods map_as_sequence = {.sq_contains = map_contains};
static PyMappingMethods map_as_mapping = {.mp_length = map_length, .mp_subscript = map_subscript};
static PyMethodDef map_methods[] = {
    {"get", (PyCFunction)(void (*)(void))map_get, METH_FASTCALL, "get(key, default=None, /) -> the value at key, or default"},
    {"_pairs", map_pairs, METH_NOARGS, "_pairs() -> list of (key, value) in the map's order"},
    {"_values", map_values, METH_NOARGS, "_values() -> list of the values in the map's order"},
    {NULL}};

static PyTypeObject MapBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tvmffi_runtime._accel.MapBase",
    .tp_basicsize = sizeof(ObjectBase),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, /* the GC flag and slots: ObjectBase's */
    .tp_doc = "The read side of Map and Dict: length, lookup, membership, iteration.",
    .tp_as_sequence = &map_as_sequence,
    .tp_as_mapping = &map_as_mapping,
    .tp_iter = map_iter,
    .tp_methods = map_methods,
};

/* ---------------------------------------------------------------------------------------- */
/* ShapeBase: Shape                                                                           */
/* ---------------------------------------------------------------------------------------- */
/* A Shape never changes, so its wrapper keeps its dimensions as a tuple of ints, made on the
   first read: `shape[i]`, `len`, iteration and `tuple(shape)` then do a tuple's own work (as
   tvm_ffi's Shape, a tuple subclass, does) instead of making an int per read. The tuple belongs
   to the handle it was read from: a wrapper whose handle was moved, released or replaced reads
   again (or raises), as the other containers do. */
typedef struct {
  ObjectBase base;
  PyObject* dims;    /* tuple of the dimensions, or NULL before the first read */
  void* dims_of;     /* the handle ``dims`` was read from */
  Py_ssize_t ndim;   /* len(dims), read by len() without touching the tuple */
} ShapeBaseObject;

/* The dimensions of ``self`` as a tuple (borrowed), or NULL with the error set. */
static PyObject* shape_dims_read(PyObject* self) {
  void* h = container_handle(self, TI_SHAPE, TI_SHAPE);
  if (h == NULL) return NULL;
  const ShapeCell* cell = CELL_OF(h, ShapeCell);
  PyObject* dims = PyTuple_New((Py_ssize_t)cell->size);
  for (Py_ssize_t k = 0; dims != NULL && k < (Py_ssize_t)cell->size; ++k) {
    PyObject* d = PyLong_FromLongLong(cell->data[k]);
    if (d == NULL) {
      Py_CLEAR(dims);
      break;
    }
    PyTuple_SET_ITEM(dims, k, d);
  }
  if (dims == NULL) return NULL;
  ShapeBaseObject* o = (ShapeBaseObject*)self;
  Py_XSETREF(o->dims, dims);
  o->dims_of = h;
  o->ndim = PyTuple_GET_SIZE(dims);
  return dims;
}

static inline PyObject* shape_dims_of(PyObject* self) {
  ShapeBaseObject* o = (ShapeBaseObject*)self;
  if (o->dims != NULL && o->base.h == o->dims_of) return o->dims; /* read from this handle, a Shape */
  return shape_dims_read(self);
}

static Py_ssize_t shape_length(PyObject* self) {
  ShapeBaseObject* o = (ShapeBaseObject*)self;
  if (o->dims != NULL && o->base.h == o->dims_of) return o->ndim;
  PyObject* dims = shape_dims_read(self);
  return dims == NULL ? -1 : PyTuple_GET_SIZE(dims);
}

static PyObject* shape_subscript(PyObject* self, PyObject* key) {
  PyObject* dims = shape_dims_of(self);
  if (dims == NULL) return NULL;
  Py_ssize_t n = PyTuple_GET_SIZE(dims);
  if (PyLong_CheckExact(key)) { /* the common `shape[i]`: no new reference to the index */
    Py_ssize_t i = PyLong_AsSsize_t(key);
    if (i == -1 && PyErr_Occurred()) {
      PyErr_Clear(); /* an int beyond Py_ssize_t: out of range, reported below */
    } else {
      Py_ssize_t j = i < 0 ? i + n : i;
      if (0 <= j && j < n) return Py_NewRef(PyTuple_GET_ITEM(dims, j));
    }
  }
  if (PySlice_Check(key)) return PyTuple_Type.tp_as_mapping->mp_subscript(dims, key);
  PyObject* index = container_index(key);
  if (index == NULL) return NULL;
  Py_ssize_t i = container_position(self, index, n);
  Py_DECREF(index);
  return i < 0 ? NULL : Py_NewRef(PyTuple_GET_ITEM(dims, i));
}

static PyObject* shape_dims(PyObject* self, PyObject* unused) { return Py_XNewRef(shape_dims_of(self)); }

/* iter(shape): over the dimensions tuple. Not a GC object, unlike the tuple's own iterator
   (what it holds is a tuple of ints, which cannot be part of a cycle), so `tuple(shape)` and
   `for d in shape` allocate no more than they do over a tuple. */
typedef struct {
  PyObject_HEAD
  PyObject* dims; /* the tuple; NULL once exhausted */
  Py_ssize_t next;
} ShapeIter;

static void shape_iter_dealloc(PyObject* self) {
  Py_XDECREF(((ShapeIter*)self)->dims);
  PyObject_Free(self);
}

static PyObject* shape_iter_next(PyObject* self) {
  ShapeIter* it = (ShapeIter*)self;
  if (it->dims == NULL) return NULL;
  if (it->next < PyTuple_GET_SIZE(it->dims)) return Py_NewRef(PyTuple_GET_ITEM(it->dims, it->next++));
  Py_CLEAR(it->dims);
  return NULL;
}

static PyTypeObject ShapeIterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tvmffi_runtime._accel.ShapeIterator",
    .tp_basicsize = sizeof(ShapeIter),
    .tp_dealloc = shape_iter_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = shape_iter_next,
};

static PyObject* shape_iter(PyObject* self) {
  PyObject* dims = shape_dims_of(self);
  if (dims == NULL) return NULL;
  ShapeIter* it = PyObject_New(ShapeIter, &ShapeIterType);
  if (it == NULL) return NULL;
  it->dims = Py_NewRef(dims);
  it->next = 0;
  return (PyObject*)it;
}

static void shape_base_dealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  Py_CLEAR(((ShapeBaseObject*)self)->dims);
  object_base_dealloc(self);
}

static PySequenceMethods shape_as_sequence = {.sq_length = shape_length};
static PyMappingMethods shape_as_mapping = {.mp_length = shape_length, .mp_subscript = shape_subscript};
static PyMethodDef shape_methods[] = {
    {"_dims", shape_dims, METH_NOARGS, "_dims() -> the dimensions as a tuple of ints"}, {NULL}};

static PyTypeObject ShapeBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tvmffi_runtime._accel.ShapeBase",
    .tp_basicsize = sizeof(ShapeBaseObject),
    .tp_dealloc = shape_base_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, /* the GC flag and slots: ObjectBase's */
    .tp_doc = "The read side of Shape: length, index, slice, iteration.",
    .tp_as_sequence = &shape_as_sequence,
    .tp_as_mapping = &shape_as_mapping,
    .tp_iter = shape_iter,
    .tp_methods = shape_methods,
};
