/* ---------------------------------------------------------------------------------------- */
/* Object graph check: the compiled walk of _graph_guard._check_root                          */
/* ---------------------------------------------------------------------------------------- */
/* Before a recursive native routine (structural equal / hash, the JSON writer, the structural
   engines) gets a graph, _graph_guard looks for a reference cycle or a nesting deeper than its
   bound. This is the same iterative depth-first search, in C: the edges of a node come in the
   same order as _graph_guard._edges gives them, so on a refusal Python rebuilds the labels of
   the path from (handle, type index, position) frames and words the error itself.

   A type's edges are described by a plan Python makes once (_graph_guard._plan_tuple): pointer
   field offsets, TVMFFIAny field offsets, and (getter address, offset) pairs for fields whose
   layout only the registry getter knows. Arrays / Lists are read from their TVMFFISeqCell,
   Maps / Dicts of the small layout from their inline pairs; a dense Map goes through Python. */

enum { TI_SHAPE = 69, TI_ARRAY = 71, TI_MAP = 72, TI_MODULE = 73, TI_OPAQUE_PY = 74,
       TI_LIST = 75, TI_DICT = 76, TI_BIG_INT = 78, TI_ERROR = 67 };

typedef int (*FieldGetter)(void*, FFIAny*);

typedef struct {
  int leaf;
  Py_ssize_t n_ptr, n_any, n_get;
  int64_t* offsets; /* n_ptr pointer offsets, then n_any Any offsets, then n_get getter offsets */
  FieldGetter* getters;
} GraphPlan;

static GraphPlan** graph_plans[2];  /* [structural][type index] */
static Py_ssize_t graph_plans_len[2];

static int graph_is_leaf_index(int32_t t) {
  return t < TI_OBJECT_BEGIN || t == TI_STR || t == TI_BYTES || t == TI_ERROR || t == TI_FUNCTION ||
         t == TI_SHAPE || t == TI_TENSOR || t == TI_MODULE || t == TI_OPAQUE_PY || t == TI_BIG_INT;
}

/* A plan from Python's (leaf, pointer offsets, any offsets, ((getter address, offset), ...)). */
static GraphPlan* graph_plan_from(PyObject* t) {
  PyObject *ptrs, *anys, *gets;
  int leaf;
  if (!PyArg_ParseTuple(t, "pO!O!O!", &leaf, &PyTuple_Type, &ptrs, &PyTuple_Type, &anys, &PyTuple_Type, &gets))
    return NULL;
  GraphPlan* p = PyMem_Calloc(1, sizeof(GraphPlan));
  if (p == NULL) return (GraphPlan*)PyErr_NoMemory();
  p->leaf = leaf;
  p->n_ptr = PyTuple_GET_SIZE(ptrs);
  p->n_any = PyTuple_GET_SIZE(anys);
  p->n_get = PyTuple_GET_SIZE(gets);
  Py_ssize_t n = p->n_ptr + p->n_any + p->n_get;
  p->offsets = PyMem_Calloc(n ? n : 1, sizeof(int64_t));
  p->getters = PyMem_Calloc(p->n_get ? p->n_get : 1, sizeof(FieldGetter));
  if (p->offsets == NULL || p->getters == NULL) return (GraphPlan*)PyErr_NoMemory();
  for (Py_ssize_t i = 0; i < p->n_ptr; ++i) p->offsets[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(ptrs, i));
  for (Py_ssize_t i = 0; i < p->n_any; ++i) p->offsets[p->n_ptr + i] = PyLong_AsLongLong(PyTuple_GET_ITEM(anys, i));
  for (Py_ssize_t i = 0; i < p->n_get; ++i) {
    PyObject* pair = PyTuple_GET_ITEM(gets, i);
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
      PyErr_SetString(PyExc_TypeError, "graph plan: a getter is an (address, offset) pair");
      return NULL;
    }
    p->getters[i] = (FieldGetter)PyLong_AsVoidPtr(PyTuple_GET_ITEM(pair, 0));
    p->offsets[p->n_ptr + p->n_any + i] = PyLong_AsLongLong(PyTuple_GET_ITEM(pair, 1));
  }
  if (PyErr_Occurred()) return NULL;
  return p;
}

/* The cached plan of type ``t`` (asking ``plan_for(t, structural)`` the first time). */
static GraphPlan* graph_plan(int32_t t, int structural, PyObject* plan_for) {
  if (t < graph_plans_len[structural] && graph_plans[structural][t] != NULL) return graph_plans[structural][t];
  if (t >= graph_plans_len[structural]) {
    Py_ssize_t len = (t + 1) * 2;
    GraphPlan** grown = PyMem_Realloc(graph_plans[structural], len * sizeof(GraphPlan*));
    if (grown == NULL) return (GraphPlan*)PyErr_NoMemory();
    memset(grown + graph_plans_len[structural], 0, (len - graph_plans_len[structural]) * sizeof(GraphPlan*));
    graph_plans[structural] = grown;
    graph_plans_len[structural] = len;
  }
  PyObject* made = PyObject_CallFunction(plan_for, "ii", (int)t, structural);
  if (made == NULL) return NULL;
  GraphPlan* p = graph_plan_from(made);
  Py_DECREF(made);
  if (p != NULL) graph_plans[structural][t] = p;
  return p;
}

/* A growable int64 stack (the children of the open path, and the frames). */
typedef struct {
  int64_t* v;
  Py_ssize_t n, cap;
} I64Stack;

static int i64_push(I64Stack* s, int64_t x) {
  if (s->n == s->cap) {
    Py_ssize_t cap = s->cap ? s->cap * 2 : 64;
    int64_t* grown = PyMem_Realloc(s->v, cap * sizeof(int64_t));
    if (grown == NULL) return PyErr_NoMemory(), -1;
    s->v = grown;
    s->cap = cap;
  }
  s->v[s->n++] = x;
  return 0;
}

/* Handle -> state (open at level L: L + 1; done: -1): open addressing, linear probing. */
typedef struct {
  uint64_t* keys;
  int32_t* vals;
  Py_ssize_t used, cap;
} HandleMap;

static Py_ssize_t hmap_slot(const HandleMap* m, uint64_t key) {
  uint64_t h = key * 0x9E3779B97F4A7C15ull;
  Py_ssize_t i = (Py_ssize_t)(h >> 20) & (m->cap - 1);
  while (m->keys[i] != 0 && m->keys[i] != key) i = (i + 1) & (m->cap - 1);
  return i;
}

static int hmap_grow(HandleMap* m) {
  HandleMap bigger = {NULL, NULL, 0, m->cap ? m->cap * 2 : 64};
  bigger.keys = PyMem_Calloc(bigger.cap, sizeof(uint64_t));
  bigger.vals = PyMem_Calloc(bigger.cap, sizeof(int32_t));
  if (bigger.keys == NULL || bigger.vals == NULL) {
    PyMem_Free(bigger.keys);
    PyMem_Free(bigger.vals);
    return PyErr_NoMemory(), -1;
  }
  for (Py_ssize_t i = 0; i < m->cap; ++i) {
    if (m->keys[i] == 0) continue;
    Py_ssize_t j = hmap_slot(&bigger, m->keys[i]);
    bigger.keys[j] = m->keys[i];
    bigger.vals[j] = m->vals[i];
  }
  bigger.used = m->used;
  PyMem_Free(m->keys);
  PyMem_Free(m->vals);
  *m = bigger;
  return 0;
}

static int32_t hmap_get(const HandleMap* m, uint64_t key) {
  return m->cap ? m->vals[hmap_slot(m, key)] : 0;
}

static int hmap_set(HandleMap* m, uint64_t key, int32_t val) {
  if ((m->used + 1) * 2 > m->cap && hmap_grow(m) < 0) return -1;
  Py_ssize_t i = hmap_slot(m, key);
  if (m->keys[i] == 0) {
    m->keys[i] = key;
    m->used++;
  }
  m->vals[i] = val;
  return 0;
}

static int graph_push_any(I64Stack* kids, const FFIAny* a) {
  if (a->type_index >= TI_OBJECT_BEGIN && !graph_is_leaf_index(a->type_index) && a->v_ptr != NULL)
    return i64_push(kids, (int64_t)(intptr_t)a->v_ptr);
  return 0;
}

typedef struct {
  void* data;
  int64_t size;
} SeqCell;

typedef struct {
  void* data;
  uint64_t size;
  uint64_t slots;
} MapCell;

/* Push the edges of object ``h`` (type ``t``) onto ``kids``, in _graph_guard._edges order. */
static int graph_edges(char* h, int32_t t, int structural, PyObject* plan_for, PyObject* map_edges, I64Stack* kids) {
  if (t == TI_ARRAY || t == TI_LIST) {
    const SeqCell* seq = (const SeqCell*)(h + sizeof(FFIObjectHeader));
    const FFIAny* cells = (const FFIAny*)seq->data;
    for (int64_t i = 0; i < seq->size; ++i)
      if (graph_push_any(kids, &cells[i]) < 0) return -1;
    return 0;
  }
  if (t == TI_MAP || t == TI_DICT) {
    const MapCell* map = (const MapCell*)(h + sizeof(FFIObjectHeader));
    if (map->size == 0) return 0;
    if (map->slots & (1ull << 63)) { /* the small layout: (key, value) pairs inline */
      const FFIAny* pairs = (const FFIAny*)map->data;
      for (uint64_t i = 0; i < 2 * map->size; ++i)
        if (graph_push_any(kids, &pairs[i]) < 0) return -1;
      return 0;
    }
    PyObject* got = PyObject_CallFunction(map_edges, "Ki", (unsigned long long)(uintptr_t)h, (int)t);
    if (got == NULL) return -1;
    PyObject* seq = PySequence_Fast(got, "map edges must be a list");
    Py_DECREF(got);
    if (seq == NULL) return -1;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); ++i) {
      int64_t e = (int64_t)PyLong_AsUnsignedLongLong(PySequence_Fast_GET_ITEM(seq, i));
      if ((e == -1 && PyErr_Occurred()) || i64_push(kids, e) < 0) {
        Py_DECREF(seq);
        return -1;
      }
    }
    Py_DECREF(seq);
    return 0;
  }
  GraphPlan* p = graph_plan(t, structural, plan_for);
  if (p == NULL) return -1;
  if (p->leaf) return 0;
  for (Py_ssize_t i = 0; i < p->n_ptr; ++i) {
    void* child = *(void**)(h + p->offsets[i]);
    if (child != NULL && i64_push(kids, (int64_t)(intptr_t)child) < 0) return -1;
  }
  for (Py_ssize_t i = 0; i < p->n_any; ++i)
    if (graph_push_any(kids, (const FFIAny*)(h + p->offsets[p->n_ptr + i])) < 0) return -1;
  for (Py_ssize_t i = 0; i < p->n_get; ++i) {
    FFIAny out = {0};
    if (p->getters[i](h + p->offsets[p->n_ptr + p->n_any + i], &out) != 0) continue;
    int rc = graph_push_any(kids, &out);
    if (out.type_index >= TI_OBJECT_BEGIN) ffi_decref(out.v_ptr); /* the field keeps it alive */
    if (rc < 0) return -1;
  }
  return 0;
}

/* Frames: (handle, type index, first child in kids, end of its children, next position). */
enum { F_H, F_T, F_BEGIN, F_END, F_NEXT, F_SIZE };

/* The open path as [(handle, type index, positions taken), ...] for Python's message. */
static PyObject* graph_frames(const I64Stack* frames) {
  Py_ssize_t depth = frames->n / F_SIZE;
  PyObject* out = PyList_New(depth);
  if (out == NULL) return NULL;
  for (Py_ssize_t i = 0; i < depth; ++i) {
    const int64_t* f = frames->v + i * F_SIZE;
    PyObject* item = Py_BuildValue("[KiL]", (unsigned long long)f[F_H], (int)f[F_T], (long long)(f[F_NEXT] - f[F_BEGIN]));
    if (item == NULL) {
      Py_DECREF(out);
      return NULL;
    }
    PyList_SET_ITEM(out, i, item);
  }
  return out;
}

/* graph_check(root, root_type_index, structural, cycles, limit, plan_for, map_edges)
   -> None, or ("cycle", frames, level where it closes) / ("deep", frames, child type index) */
static PyObject* accel_graph_check(PyObject* mod, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 7) {
    PyErr_SetString(PyExc_TypeError, "graph_check takes 7 arguments");
    return NULL;
  }
  uint64_t root = PyLong_AsUnsignedLongLong(args[0]);
  int32_t root_t = (int32_t)PyLong_AsLong(args[1]);
  int structural = PyObject_IsTrue(args[2]);
  int cycles = PyObject_IsTrue(args[3]);
  Py_ssize_t limit = PyLong_AsSsize_t(args[4]);
  PyObject *plan_for = args[5], *map_edges = args[6];
  if (PyErr_Occurred()) return NULL;
  I64Stack kids = {0}, frames = {0};
  HandleMap seen = {0};
  PyObject* result = NULL;
  if (graph_edges((char*)(uintptr_t)root, root_t, structural, plan_for, map_edges, &kids) < 0) goto done;
  if (kids.n == 0) {
    result = Py_None;
    Py_INCREF(result);
    goto done;
  }
  int64_t first[F_SIZE] = {(int64_t)root, root_t, 0, kids.n, 0};
  for (int k = 0; k < F_SIZE; ++k)
    if (i64_push(&frames, first[k]) < 0) goto done;
  if (hmap_set(&seen, root, 1) < 0) goto done;
  while (frames.n) {
    int64_t* f = frames.v + frames.n - F_SIZE;
    int pushed = 0;
    while (f[F_NEXT] < f[F_END]) {
      uint64_t child = (uint64_t)kids.v[f[F_NEXT]++];
      int32_t state = hmap_get(&seen, child);
      if (state < 0) continue; /* done */
      if (state > 0) {         /* open: on the path */
        if (!cycles) continue;
        PyObject* path = graph_frames(&frames);
        if (path != NULL) result = Py_BuildValue("(sNi)", "cycle", path, (int)(state - 1));
        goto done;
      }
      int32_t t = ((FFIObjectHeader*)(uintptr_t)child)->type_index;
      Py_ssize_t begin = kids.n;
      if (graph_edges((char*)(uintptr_t)child, t, structural, plan_for, map_edges, &kids) < 0) goto done;
      f = frames.v + frames.n - F_SIZE; /* (kids may have moved; frames did not) */
      if (kids.n == begin) continue; /* a leaf: nothing to remember (it closes no cycle) */
      Py_ssize_t depth = frames.n / F_SIZE;
      if (depth >= limit) {
        PyObject* path = graph_frames(&frames);
        if (path != NULL) result = Py_BuildValue("(sNi)", "deep", path, (int)t);
        goto done;
      }
      if (hmap_set(&seen, child, (int32_t)depth + 1) < 0) goto done;
      int64_t next[F_SIZE] = {(int64_t)child, t, begin, kids.n, begin};
      for (int k = 0; k < F_SIZE; ++k)
        if (i64_push(&frames, next[k]) < 0) goto done;
      pushed = 1;
      break;
    }
    if (pushed) continue;
    f = frames.v + frames.n - F_SIZE;
    if (hmap_set(&seen, (uint64_t)f[F_H], -1) < 0) goto done;
    kids.n = f[F_BEGIN];
    frames.n -= F_SIZE;
  }
  result = Py_None;
  Py_INCREF(result);
done:
  PyMem_Free(kids.v);
  PyMem_Free(frames.v);
  PyMem_Free(seen.keys);
  PyMem_Free(seen.vals);
  return result;
}
