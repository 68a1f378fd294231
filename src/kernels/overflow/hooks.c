// _overflow_hooks (opforge_ops/_lib/_overflow_hooks.abi3.so): the per-call work of
// DebugUnderflowOverflow's steady-state hook, in C.
//
// Built against Python's stable ABI (Py_LIMITED_API, floor 3.8: the oldest Python the package
// supports, see the op's op.toml), so one binary serves every CPython 3 from 3.8 on. torch is not
// linked either: tensors are read through their Python attributes, so one binary serves every torch.
//
// hook(debug, module, input, output) does what the Python hook (debug.py: _label, _pack, the native
// statistics call, the frame) does for the common case and returns True; for anything else (a
// tensor subclass, a dtype the library does not read, an empty, sparse or non-dense tensor, several
// devices, a tied parameter, a nan/inf found, a full frame buffer...) it changes nothing and returns
// False, and the Python hook handles the call. The report text is therefore made by the same Python
// code in both cases.
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "Python.h"

// The library's descriptor (overflow.h: opforge_overflow_tensor), 32 bytes.
typedef struct {
  const void* data;
  uint64_t count;
  int32_t dtype;
  int32_t pad;
  double threshold;
} desc_t;

#define RECORD_SIZE 80  // sizeof(opforge_overflow_stats)
#define NCTX 64         // debug.py's _NCTX: the prebuilt item labels

typedef int (*stats_fn)(const desc_t*, int, void*);           // stats_cpu_multi
typedef int (*stats_stream_fn)(const desc_t*, int, void*, void*);  // stats_cuda_sync

// debug.py builds the context once per DebugUnderflowOverflow (_hooks_context): its fields, in order.
enum {
  C_META,         // dict module -> (header, fast, tied)
  C_TENSOR,       // torch.Tensor
  C_PARAMETER,    // torch.nn.Parameter
  C_CODES,        // dict torch.dtype -> library dtype code
  C_IN,           // list of "input[i]"
  C_OUT,          // list of "output[i]"
  C_IN_LIT,       // list of (None line, not-a-tensor line) per input position
  C_OUT_LIT,      // the same per output position
  C_INPUT_LIT,    // (None line, not-a-tensor line) of a whole input
  C_OUTPUT_LIT,   // the same for a whole output
  C_FRAME,        // the _Frame type
  C_CPU_FN,       // address of the CPU statistics function (int)
  C_CUDA_FN,      // address of the synchronous CUDA read (int, 0: none)
  C_STREAM_FN,    // device -> current raw stream (torch._C._cuda_getCurrentRawStream) or None
  C_CURRENT_DEV,  // () -> current CUDA device (torch.cuda.current_device) or None
  C_NUMEL,        // torch.Tensor.numel (and the next: unbound methods, called on exact Tensors only)
  C_DATA_PTR,
  C_IS_CONTIGUOUS,
  C_STRIDE,
  C_GET_DEVICE,
  C_COUNT
};

static PyObject *s_ctx, *s_frame, *s_frames, *s_pending, *s_batch_number, *s_buffers, *s_max_pending, *s_parameters,
    *s_dtype, *s_is_cpu, *s_is_cuda, *s_shape, *s_used, *s_capacity, *s_base, *s_handle, *s_append, *s_extended, *s_deferred, *s_minus_one,
    *s_empty_tuple, *s_empty_bytes;

// A call's descriptors and records: on the stack for the usual frame, else on the heap. Per call,
// not shared: attribute reads may run Python code (a finalizer), and so another thread's hook.
#define LOCAL_TENSORS 32
typedef struct {
  desc_t* desc;
  unsigned char* out;  // zeroed: what a statistics function that writes nothing leaves
  desc_t local_desc[LOCAL_TENSORS];
  unsigned char local_out[LOCAL_TENSORS * RECORD_SIZE];
} scratch_t;

static int scratch_init(scratch_t* s, Py_ssize_t k) {
  if (k <= LOCAL_TENSORS) {
    s->desc = s->local_desc;
    s->out = s->local_out;
    memset(s->out, 0, (size_t)k * RECORD_SIZE);
    return 0;
  }
  s->desc = (desc_t*)PyMem_Malloc((size_t)k * sizeof(desc_t));
  s->out = (unsigned char*)PyMem_Malloc((size_t)k * RECORD_SIZE);
  if (!s->desc || !s->out) {
    PyErr_NoMemory();
    return -1;
  }
  memset(s->out, 0, (size_t)k * RECORD_SIZE);
  return 0;
}

static void scratch_free(scratch_t* s) {
  if (s->desc && s->desc != s->local_desc) PyMem_Free(s->desc);
  if (s->out && s->out != s->local_out) PyMem_Free(s->out);
}

// The 1-tuple holding the whole line of a None / non-tensor (debug.py's _lit).
static PyObject* lit(int is_none, const char* ctx) {
  char buf[160];
  snprintf(buf, sizeof buf, "%17s %s", is_none ? "None" : "not a tensor", ctx);
  PyObject* s = PyUnicode_FromString(buf);
  if (!s) return NULL;
  PyObject* t = PyTuple_Pack(1, s);
  Py_DECREF(s);
  return t;
}

static int is_tensor(PyObject* x, PyObject** ctx) {
  PyObject* tp = (PyObject*)Py_TYPE(x);
  if (tp == ctx[C_TENSOR] || tp == ctx[C_PARAMETER]) return 1;
  return PyObject_IsInstance(x, ctx[C_TENSOR]);
}

// Appends item and tensor (tensor may be NULL: a literal item). 0, or -1 with an exception set.
static int add(PyObject* items, PyObject* tensors, PyObject* item, PyObject* tensor) {
  if (!item || PyList_Append(items, item) < 0) return -1;
  if (tensor && PyList_Append(tensors, tensor) < 0) return -1;
  return 0;
}

// Labels a module call as debug.py's _label does. 1: done, 0: not the common case, -1: error.
static int label(PyObject** ctx, PyObject* module, PyObject* input, PyObject* output, PyObject* items,
                 PyObject* tensors) {
  // the module's own parameters, from _parameters (debug.py: meta "fast"); a parameter under two
  // names, or a class overriding named_parameters: the Python path
  PyObject* params = PyObject_GetAttr(module, s_parameters);
  if (!params) return -1;
  if (!PyDict_Check(params)) {
    Py_DECREF(params);
    return 0;
  }
  // a dict subclass (OrderedDict in older torch) in its own order, through items()
  const int exact = Py_TYPE(params) == &PyDict_Type;
  PyObject* pairs = exact ? NULL : PyMapping_Items(params);
  if (!exact && !pairs) {
    Py_DECREF(params);
    return -1;
  }
  Py_ssize_t pos = 0, count = pairs ? PyList_Size(pairs) : 0;
  PyObject *name, *p;
  int rc = 1;
  for (;;) {
    if (pairs) {
      if (pos >= count) break;
      PyObject* pair = PyList_GetItem(pairs, pos++);
      if (!PyTuple_Check(pair) || PyTuple_Size(pair) != 2) {
        rc = 0;
        break;
      }
      name = PyTuple_GetItem(pair, 0);
      p = PyTuple_GetItem(pair, 1);
    } else if (!PyDict_Next(params, &pos, &name, &p)) {
      break;
    }
    if (p == Py_None) continue;
    Py_ssize_t n = PyList_Size(tensors);
    for (Py_ssize_t j = 0; j < n && rc == 1; ++j)
      if (PyList_GetItem(tensors, j) == p) rc = 0;  // a parameter under two names
    if (rc == 1 && add(items, tensors, name, p) < 0) rc = -1;
    if (rc != 1) break;
  }
  Py_XDECREF(pairs);
  Py_DECREF(params);
  if (rc != 1) return rc;

  if (PyTuple_Check(input)) {
    Py_ssize_t n = PyTuple_Size(input);
    if (n > NCTX) return 0;
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* x = PyTuple_GetItem(input, i);
      int t = is_tensor(x, ctx);
      if (t < 0) return -1;
      PyObject* item =
          t ? PyList_GetItem(ctx[C_IN], i) : PyTuple_GetItem(PyList_GetItem(ctx[C_IN_LIT], i), x != Py_None);
      if (add(items, tensors, item, t ? x : NULL) < 0) return -1;
    }
  } else {
    int t = is_tensor(input, ctx);
    if (t < 0) return -1;
    if (t) {
      PyObject* s = PyUnicode_FromString("input");
      int rc = add(items, tensors, s, input);
      Py_XDECREF(s);
      if (rc < 0) return -1;
    } else if (add(items, tensors, PyTuple_GetItem(ctx[C_INPUT_LIT], input != Py_None), NULL) < 0) {
      return -1;
    }
  }

  int t = is_tensor(output, ctx);
  if (t < 0) return -1;
  if (t) {
    PyObject* s = PyUnicode_FromString("output");
    int rc = add(items, tensors, s, output);
    Py_XDECREF(s);
    return rc < 0 ? -1 : 1;
  }
  if (!PyTuple_Check(output))
    return add(items, tensors, PyTuple_GetItem(ctx[C_OUTPUT_LIT], output != Py_None), NULL) < 0 ? -1 : 1;
  Py_ssize_t n = PyTuple_Size(output);
  if (n > NCTX) return 0;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* x = PyTuple_GetItem(output, i);
    t = is_tensor(x, ctx);
    if (t < 0) return -1;
    if (t) {
      if (add(items, tensors, PyList_GetItem(ctx[C_OUT], i), x) < 0) return -1;
    } else if (PyTuple_Check(x)) {
      Py_ssize_t m = PyTuple_Size(x);
      for (Py_ssize_t j = 0; j < m; ++j) {
        PyObject* y = PyTuple_GetItem(x, j);
        char where[64];
        snprintf(where, sizeof where, "output[%d][%d]", (int)i, (int)j);
        int ty = is_tensor(y, ctx);
        if (ty < 0) return -1;
        PyObject* item = ty ? PyUnicode_FromString(where) : lit(y == Py_None, where);
        int rc = add(items, tensors, item, ty ? y : NULL);
        Py_XDECREF(item);
        if (rc < 0) return -1;
      }
    } else if (add(items, tensors, PyTuple_GetItem(PyList_GetItem(ctx[C_OUT_LIT], i), x != Py_None), NULL) < 0) {
      return -1;
    }
  }
  return 1;
}

static long long call_int(PyObject* fn, PyObject* t, int* err) {
  PyObject* r = PyObject_CallFunctionObjArgs(fn, t, NULL);
  if (!r) {
    *err = 1;
    return 0;
  }
  long long v = PyLong_AsLongLong(r);
  Py_DECREF(r);
  if (v == -1 && PyErr_Occurred()) *err = 1;
  return v;
}

// A tuple-like of Python ints (shape, stride()) into v[0..n); n, or -1 when not that.
static int int_tuple(PyObject* o, long long* v, int cap) {
  if (!PyTuple_Check(o)) return -1;
  Py_ssize_t n = PyTuple_Size(o);
  if (n > cap) return -1;
  for (Py_ssize_t i = 0; i < n; ++i) {
    v[i] = PyLong_AsLongLong(PyTuple_GetItem(o, i));
    if (v[i] == -1 && PyErr_Occurred()) return -1;
  }
  return (int)n;
}

// debug.py's _dense: the elements fill [data_ptr, data_ptr + numel) in some order.
static int dense(PyObject** ctx, PyObject* t) {
  long long shape[32], stride[32];
  PyObject* sh = PyObject_GetAttr(t, s_shape);
  if (!sh) return -1;
  int n = int_tuple(sh, shape, 32);
  Py_DECREF(sh);
  if (n < 0) return -1;
  PyObject* st = PyObject_CallFunctionObjArgs(ctx[C_STRIDE], t, NULL);
  if (!st) return -1;
  int m = int_tuple(st, stride, 32);
  Py_DECREF(st);
  if (m != n) return -1;
  // sorted by (stride, size), as the Python sorts zip(strides, shape)
  for (int i = 1; i < n; ++i)
    for (int j = i; j > 0 && (stride[j] < stride[j - 1] || (stride[j] == stride[j - 1] && shape[j] < shape[j - 1]));
         --j) {
      long long a = stride[j], b = shape[j];
      stride[j] = stride[j - 1], shape[j] = shape[j - 1];
      stride[j - 1] = a, shape[j - 1] = b;
    }
  long long expect = 1;
  for (int i = 0; i < n; ++i)
    if (shape[i] != 1) {
      if (stride[i] != expect) return 0;
      expect *= shape[i];
    }
  return 1;
}

// Packs the descriptors of tensors into sc->desc (threshold 0) as debug.py's _pack does, without
// its caches. The device (-1: CPU, else a CUDA index) into *where. 1: packed, 0: not the common
// case, -1: error.
static int pack(PyObject** ctx, PyObject* tensors, scratch_t* sc, int* where) {
  Py_ssize_t k = PyList_Size(tensors);
  int w = -2;
  for (Py_ssize_t i = 0; i < k; ++i) {
    PyObject* t = PyList_GetItem(tensors, i);
    PyObject* tp = (PyObject*)Py_TYPE(t);
    if (tp != ctx[C_TENSOR] && tp != ctx[C_PARAMETER]) return 0;  // a subclass may override what we call
    PyObject* dt = PyObject_GetAttr(t, s_dtype);
    if (!dt) return -1;
    PyObject* code = PyDict_GetItem(ctx[C_CODES], dt);
    Py_DECREF(dt);
    if (!code) return 0;
    // read now: the calls below run Python code, which may drop the borrowed entry
    long dtype = PyLong_AsLong(code);
    if (dtype == -1 && PyErr_Occurred()) return -1;
    int dev;
    PyObject* cpu = PyObject_GetAttr(t, s_is_cpu);
    if (!cpu) return -1;
    int is_cpu = cpu == Py_True;
    Py_DECREF(cpu);
    int err = 0;
    if (is_cpu) {
      dev = -1;
    } else {
      PyObject* cuda = PyObject_GetAttr(t, s_is_cuda);
      if (!cuda) return -1;
      int is_cuda = cuda == Py_True;
      Py_DECREF(cuda);
      if (!is_cuda) return 0;
      dev = (int)call_int(ctx[C_GET_DEVICE], t, &err);
      if (err) return -1;
    }
    if (w != dev) {
      if (w != -2) return 0;
      w = dev;
    }
    long long n = call_int(ctx[C_NUMEL], t, &err);
    if (err) return -1;
    if (n <= 0) return 0;
    PyObject* c = PyObject_CallFunctionObjArgs(ctx[C_IS_CONTIGUOUS], t, NULL);
    if (!c) return -1;
    int contiguous = c == Py_True;
    Py_DECREF(c);
    if (!contiguous) {
      int d = dense(ctx, t);
      if (d <= 0) return d;
    }
    PyObject* ptr = PyObject_CallFunctionObjArgs(ctx[C_DATA_PTR], t, NULL);
    if (!ptr) return -1;
    void* data = PyLong_AsVoidPtr(ptr);
    Py_DECREF(ptr);
    if (!data && PyErr_Occurred()) return -1;
    sc->desc[i].data = data;
    sc->desc[i].count = (uint64_t)n;
    sc->desc[i].dtype = (int32_t)dtype;
    sc->desc[i].pad = 0;
    sc->desc[i].threshold = 0.0;
  }
  *where = w;
  return 1;
}

// A C function's address from the context (an int, or None); NULL when none, or with an
// exception set when it is not an int.
static void* address(PyObject* o) {
  if (o == Py_None) return NULL;
  if (!PyLong_Check(o)) {
    PyErr_SetString(PyExc_TypeError, "_overflow_hooks: a statistics function's address is not an int");
    return NULL;
  }
  return PyLong_AsVoidPtr(o);
}

// The CPU statistics function; NULL (an exception set when the context is damaged) when there is
// none: then the Python hook does the call.
static stats_fn cpu_fn(PyObject** ctx) { return (stats_fn)address(ctx[C_CPU_FN]); }

// Whether records[0..k) hold a nan, +inf or -inf (counters 1..3 of each).
static int flagged(const unsigned char* records, int k) {
  for (int i = 0; i < k; ++i) {
    uint64_t c[4];
    memcpy(c, records + (size_t)i * RECORD_SIZE, sizeof c);
    if (c[1] | c[2] | c[3]) return 1;
  }
  return 0;
}

// The synchronous statistics call into sc->out. 1: read, 0: not the common case (another current
// device, no CUDA read, a failed call), -1: error.
static int read_now(PyObject** ctx, scratch_t* sc, int where, int k) {
  if (where == -1) {
    stats_fn cpu = cpu_fn(ctx);
    if (!cpu) return PyErr_Occurred() ? -1 : 0;
    return cpu(sc->desc, k, sc->out) == 0;
  }
  void* fn = address(ctx[C_CUDA_FN]);
  if (!fn && PyErr_Occurred()) return -1;
  if (!fn || ctx[C_STREAM_FN] == Py_None || ctx[C_CURRENT_DEV] == Py_None) return 0;
  PyObject* cur = PyObject_CallFunctionObjArgs(ctx[C_CURRENT_DEV], NULL);
  if (!cur) return -1;
  long d = PyLong_AsLong(cur);
  Py_DECREF(cur);
  if (d == -1 && PyErr_Occurred()) return -1;
  if (d != where) return 0;
  PyObject* dev = PyLong_FromLong(where);
  if (!dev) return -1;
  PyObject* s = PyObject_CallFunctionObjArgs(ctx[C_STREAM_FN], dev, NULL);
  Py_DECREF(dev);
  if (!s) return -1;
  void* stream = PyLong_AsVoidPtr(s);
  Py_DECREF(s);
  if (!stream && PyErr_Occurred()) return -1;
  return ((stats_stream_fn)fn)(sc->desc, k, sc->out, stream) == 0;
}

// Default mode: the frame, appended to debug.frames when clean. 1 done, 0 Python's turn, -1 error.
static int collect(PyObject* debug, PyObject** ctx, scratch_t* sc, PyObject* header, PyObject* items,
                   PyObject* tensors) {
  int k = (int)PyList_Size(tensors);
  PyObject* records;
  if (k == 0) {
    records = s_empty_bytes;
    Py_INCREF(records);
  } else {
    int where = -2;
    int r = pack(ctx, tensors, sc, &where);
    if (r <= 0) return r;
    r = read_now(ctx, sc, where, k);
    if (r <= 0 || flagged(sc->out, k)) return r < 0 ? -1 : 0;  // a nan/inf: the Python hook reports it
    records = PyBytes_FromStringAndSize((const char*)sc->out, (Py_ssize_t)k * RECORD_SIZE);
    if (!records) return -1;
  }
  PyObject* extended = PyObject_GetAttr(debug, s_extended);  // read per call, as the Python hook does
  PyObject* parts = extended ? PyTuple_Pack(5, s_empty_tuple, header, items, records, extended) : NULL;
  Py_DECREF(records);
  Py_XDECREF(extended);
  if (!parts) return -1;
  PyObject* frame = PyObject_CallFunctionObjArgs(ctx[C_FRAME], parts, NULL);
  Py_DECREF(parts);
  if (!frame) return -1;
  PyObject* frames = PyObject_GetAttr(debug, s_frames);
  if (!frames) {
    Py_DECREF(frame);
    return -1;
  }
  PyObject* r = PyObject_CallMethodObjArgs(frames, s_append, frame, NULL);
  Py_DECREF(frames);
  Py_DECREF(frame);
  if (!r) return -1;
  Py_DECREF(r);
  return 1;
}

static long long get_ll(PyObject* o, PyObject* name, int* err) {
  PyObject* v = PyObject_GetAttr(o, name);
  if (!v) {
    *err = 1;
    return 0;
  }
  long long r = PyLong_AsLongLong(v);
  Py_DECREF(v);
  if (r == -1 && PyErr_Occurred()) *err = 1;
  return r;
}

// Deferred mode on the CPU: the statistics into the CPU frame buffer's next records and a pending
// entry (debug.py's _Pending). 1 done, 0 Python's turn, -1 error.
static int defer(PyObject* debug, PyObject** ctx, scratch_t* sc, PyObject* header, PyObject* items,
                 PyObject* tensors) {
  int k = (int)PyList_Size(tensors);
  PyObject* pending = PyObject_GetAttr(debug, s_pending);
  if (!pending) return -1;
  int ret = -1, err = 0;
  // fb is held (a strong reference): the attribute reads below run Python code
  PyObject *fb = Py_None, *entry = NULL, *batch = NULL, *first_o = NULL, *k_o = NULL, *records = Py_None;
  Py_INCREF(fb);
  long long first = 0;
  long long max_pending = get_ll(debug, s_max_pending, &err);
  if (err) goto done;
  if (!PyList_Check(pending) || PyList_Size(pending) + 1 >= max_pending) {
    ret = 0;  // the Python hook flushes after this frame
    goto done;
  }
  if (k == 0) {
    records = s_empty_bytes;
  } else {
    int where = -2;
    int r = pack(ctx, tensors, sc, &where);
    if (r <= 0 || where != -1) {
      ret = r < 0 ? -1 : 0;
      goto done;
    }
    PyObject* buffers = PyObject_GetAttr(debug, s_buffers);
    if (!buffers) goto done;
    PyObject* found = PyDict_Check(buffers) ? PyDict_GetItem(buffers, s_minus_one) : NULL;
    if (found) {
      Py_INCREF(found);
      Py_DECREF(fb);
      fb = found;
    }
    Py_DECREF(buffers);
    if (!found) {  // created by the Python hook on first use
      ret = 0;
      goto done;
    }
    PyObject* handle = PyObject_GetAttr(fb, s_handle);
    if (!handle) goto done;
    int host = handle == Py_None;
    Py_DECREF(handle);
    first = get_ll(fb, s_used, &err);
    long long cap = get_ll(fb, s_capacity, &err);
    PyObject* base_o = PyObject_GetAttr(fb, s_base);
    if (!base_o) goto done;
    unsigned char* base = (unsigned char*)PyLong_AsVoidPtr(base_o);
    Py_DECREF(base_o);
    if (err || PyErr_Occurred()) goto done;
    if (!host || first + k > cap) {  // full: the Python hook flushes
      ret = 0;
      goto done;
    }
    stats_fn cpu = cpu_fn(ctx);
    if (!cpu) {
      ret = PyErr_Occurred() ? -1 : 0;
      goto done;
    }
    if (cpu(sc->desc, k, base + first * RECORD_SIZE) != 0) {
      ret = 0;
      goto done;
    }
    PyObject* used = PyLong_FromLongLong(first + k);
    if (!used) goto done;
    int rc = PyObject_SetAttr(fb, s_used, used);
    Py_DECREF(used);
    if (rc < 0) goto done;
  }
  batch = PyObject_GetAttr(debug, s_batch_number);
  first_o = PyLong_FromLongLong(first);
  k_o = PyLong_FromLong(k);
  if (!batch || !first_o || !k_o) goto done;
  entry = PyList_New(9);
  if (!entry) goto done;
  PyObject* fields[9] = {s_empty_tuple, header, items, records, batch, Py_False, fb, first_o, k_o};
  for (int i = 0; i < 9; ++i) {
    Py_INCREF(fields[i]);
    PyList_SetItem(entry, i, fields[i]);
  }
  ret = PyList_Append(pending, entry) < 0 ? -1 : 1;
done:
  Py_XDECREF(entry);
  Py_XDECREF(batch);
  Py_XDECREF(first_o);
  Py_XDECREF(k_o);
  Py_DECREF(fb);
  Py_DECREF(pending);
  return ret;
}

// hook(debug, module, input, output) -> bool (see the file's comment).
static PyObject* hook(PyObject* self, PyObject* args) {
  (void)self;
  PyObject *debug, *module, *input, *output;
  if (!PyArg_UnpackTuple(args, "hook", 4, 4, &debug, &module, &input, &output)) return NULL;
  PyObject* ctx_t = PyObject_GetAttr(debug, s_ctx);
  if (!ctx_t) return NULL;
  if (!PyTuple_Check(ctx_t) || PyTuple_Size(ctx_t) != C_COUNT) {
    Py_DECREF(ctx_t);
    PyErr_SetString(PyExc_TypeError, "_overflow_hooks.hook: debug._hooks_ctx is not a context tuple");
    return NULL;
  }
  PyObject* ctx[C_COUNT];
  for (int i = 0; i < C_COUNT; ++i) ctx[i] = PyTuple_GetItem(ctx_t, i);
  int ret = 0;
  PyObject *items = NULL, *tensors = NULL, *meta = NULL;
  PyObject* deferred_o = PyObject_GetAttr(debug, s_deferred);
  if (!deferred_o) goto error;
  int deferred = PyObject_IsTrue(deferred_o);
  Py_DECREF(deferred_o);
  if (deferred < 0) goto error;
  // lines pending before this frame (a batch start): the Python hook's
  PyObject* before = PyObject_GetAttr(debug, s_frame);
  if (!before) goto error;
  int has_before = PyObject_IsTrue(before);  // may run a __bool__, which may raise
  Py_DECREF(before);
  if (has_before < 0) goto error;
  if (has_before) goto out;
  // held: label() runs Python code, which may change the dict (and header lives in meta)
  meta = PyDict_GetItem(ctx[C_META], module);
  if (!meta || !PyTuple_Check(meta) || PyTuple_Size(meta) != 3) {
    meta = NULL;
    goto out;
  }
  Py_INCREF(meta);
  PyObject* header = PyTuple_GetItem(meta, 0);
  if (PyTuple_GetItem(meta, 1) != Py_True || (!deferred && PyTuple_GetItem(meta, 2) == Py_True)) goto out;
  items = PyList_New(0);
  tensors = PyList_New(0);
  if (!items || !tensors) goto error;
  int r = label(ctx, module, input, output, items, tensors);
  if (r < 0) goto error;
  if (r > 0) {
    scratch_t sc;  // its local arrays are left unset: scratch_init zeroes the records used
    sc.desc = NULL;
    sc.out = NULL;
    r = scratch_init(&sc, PyList_Size(tensors));
    if (r == 0)
      r = deferred ? defer(debug, ctx, &sc, header, items, tensors) : collect(debug, ctx, &sc, header, items, tensors);
    scratch_free(&sc);
    if (r < 0) goto error;
    ret = r;
  }
out:
  Py_XDECREF(meta);
  Py_XDECREF(items);
  Py_XDECREF(tensors);
  Py_DECREF(ctx_t);
  return PyBool_FromLong(ret);
error:
  // An ordinary exception (a layout without strides, say): the Python hook handles the call, and
  // meets it again if it is real. KeyboardInterrupt, SystemExit and MemoryError are not the
  // hook's to swallow: they go on to the caller.
  if (PyErr_ExceptionMatches(PyExc_Exception) && !PyErr_ExceptionMatches(PyExc_MemoryError)) {
    PyErr_Clear();
    ret = 0;
    goto out;
  }
  Py_XDECREF(meta);
  Py_XDECREF(items);
  Py_XDECREF(tensors);
  Py_DECREF(ctx_t);
  return NULL;
}

static PyMethodDef methods[] = {
    {"hook", hook, METH_VARARGS,
     "hook(debug, module, input, output) -> bool: the steady-state hook's work for a common call (True), "
     "or nothing (False: the Python hook's turn)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_overflow_hooks", NULL, -1, methods, NULL, NULL, NULL, NULL};

#define INTERN(var, text) \
  if (!((var) = PyUnicode_InternFromString(text))) return NULL

PyMODINIT_FUNC PyInit__overflow_hooks(void) {
  INTERN(s_ctx, "_hooks_ctx");
  INTERN(s_frame, "frame");
  INTERN(s_frames, "frames");
  INTERN(s_pending, "_pending");
  INTERN(s_batch_number, "batch_number");
  INTERN(s_buffers, "_buffers");
  INTERN(s_max_pending, "_max_pending");
  INTERN(s_parameters, "_parameters");
  INTERN(s_dtype, "dtype");
  INTERN(s_is_cpu, "is_cpu");
  INTERN(s_is_cuda, "is_cuda");
  INTERN(s_shape, "shape");
  INTERN(s_used, "used");
  INTERN(s_capacity, "capacity");
  INTERN(s_base, "_base");
  INTERN(s_handle, "_handle");
  INTERN(s_append, "append");
  INTERN(s_extended, "extended");
  INTERN(s_deferred, "deferred");
  if (!(s_minus_one = PyLong_FromLong(-1)) || !(s_empty_tuple = PyTuple_New(0)) ||
      !(s_empty_bytes = PyBytes_FromStringAndSize(NULL, 0)))
    return NULL;
  PyObject* m = PyModule_Create(&module_def);
  if (!m) return NULL;
  // What debug.py must agree with (checked when it loads the module): the context's fields, the
  // prebuilt item labels and the size of one statistics record.
  if (PyModule_AddIntConstant(m, "CONTEXT_FIELDS", C_COUNT) < 0 || PyModule_AddIntConstant(m, "NCTX", NCTX) < 0 ||
      PyModule_AddIntConstant(m, "RECORD_SIZE", RECORD_SIZE) < 0 ||
      PyModule_AddIntConstant(m, "LIMITED_API", Py_LIMITED_API) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
