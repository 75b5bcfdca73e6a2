/* One pass from decoded event structs to raw columns: the accelerated twin of extractors._columns_py.
 *
 * msgspec decodes a chunk of `traceEvents` into a list of `Event` structs; the model needs a dozen of
 * their fields as numpy columns, strings interned into ids. Done in Python that is a dozen passes of
 * `np.fromiter(map(attrgetter(...)))` over the list, each paying the interpreter and a walk over every
 * struct again; here it is one walk, reading each field straight from the struct's slot.
 *
 * The slot offsets come from the member descriptors of the struct types (`layout()`, called once at
 * import). Values are written into numpy arrays the caller allocates, through the buffer protocol, so
 * this file needs neither numpy headers nor msgspec's. Semantics match extractors._columns_py exactly; the
 * tests run both on every trace they decode.
 *
 * `gpu_fields` reads the kernel table's fields of the few GPU activities (copy bytes, launch shape) the
 * same way; grid and block arrive as raw JSON text (msgspec.Raw) and only their plain `[x, y, z]` spelling
 * is read here, any other is handed back to the reference readers of gpu_args.py. An op's `Input Dims`
 * (raw text too) is interned by its bytes in `extract`, and a `Call stack`'s innermost frame by its text.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "_kineto_time.h"

enum { F_PH, F_NAME, F_CAT, F_PID, F_TID, F_TS, F_DUR, F_ID, F_ARGS, N_EVENT_FIELDS };
enum { A_CORRELATION, A_EXTERNAL_ID, A_EXTERNAL_ID_2021, A_DEVICE, A_STREAM,
       A_DEVICE_TYPE, A_DEVICE_ID, A_BYTES, A_TOTAL_ALLOCATED, A_TOTAL_RESERVED, A_ADDR, A_EV_IDX, A_EV_IDX_LEGACY,
       A_INPUT_DIMS, A_CALL_STACK, A_INPUT_TYPE, A_INPUT_STRIDES, A_CONCRETE, A_GPU_FIRST,
       N_ARG_FIELDS = A_GPU_FIRST + 7 };
/* The GPU activity fields, in gpu_args.FIELDS order: copy bytes (memcpy/memset), then the kernel launch shape. */
enum { G_BYTES, G_GRID, G_BLOCK, G_REGISTERS, G_SHARED_MEM, G_BLOCKS_PER_SM, G_OCCUPANCY, N_GPU_FIELDS };
enum { O_PH, O_NAME, O_CAT, O_PID, O_TID, O_TS, O_DUR, O_CORRELATION, O_EXTERNAL_ID, O_DEVICE, O_STREAM, O_ID,
       O_DEVICE_TYPE, O_DEVICE_ID, O_BYTES, O_TOTAL_ALLOCATED, O_TOTAL_RESERVED, O_ADDR, O_EV_IDX, O_SHAPE, O_FRAME, N_OUT };
#define N_MEMORY_ARGS 6
#define ID_OTHER INT64_MIN         /* a flow id that is not a plain int: interned by the caller */
#define ID_LIMIT (1LL << 62)

static PyTypeObject *event_type = NULL, *args_type = NULL;
static Py_ssize_t event_offset[N_EVENT_FIELDS], arg_offset[N_ARG_FIELDS];

#define SLOT(obj, offset) (*(PyObject **)((char *)(obj) + (offset)))

/* The byte offset of an object slot (a member descriptor of an object-typed member), or -1 with an error set. */
static Py_ssize_t slot_offset(PyObject *type, PyObject *name) {
    PyObject *descr = PyObject_GetAttr(type, name);
    if (descr == NULL) return -1;
    Py_ssize_t offset = -1;
    if (Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
        PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type == T_OBJECT_EX || member->type == T_OBJECT) offset = member->offset;
    }
    Py_DECREF(descr);
    if (offset < 0) PyErr_Format(PyExc_TypeError, "field %R is not an object slot", name);
    return offset;
}

static int bind_fields(PyObject *type, PyObject *names, Py_ssize_t *offsets, Py_ssize_t count) {
    if (!PyType_Check(type) || !PyTuple_Check(names) || PyTuple_GET_SIZE(names) != count) {
        PyErr_Format(PyExc_TypeError, "expected a type and a tuple of %zd field names", count);
        return -1;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        offsets[i] = slot_offset(type, PyTuple_GET_ITEM(names, i));
        if (offsets[i] < 0) return -1;
    }
    return 0;
}

static PyObject *layout(PyObject *self, PyObject *args) {
    PyObject *etype, *enames, *atype, *anames;
    if (!PyArg_ParseTuple(args, "OO!OO!", &etype, &PyTuple_Type, &enames, &atype, &PyTuple_Type, &anames)) return NULL;
    Py_ssize_t eoff[N_EVENT_FIELDS], aoff[N_ARG_FIELDS];  /* committed only when both bind */
    if (bind_fields(etype, enames, eoff, N_EVENT_FIELDS) < 0 || bind_fields(atype, anames, aoff, N_ARG_FIELDS) < 0) return NULL;
    memcpy(event_offset, eoff, sizeof eoff);
    memcpy(arg_offset, aoff, sizeof aoff);
    Py_INCREF(etype);
    Py_INCREF(atype);
    Py_XSETREF(event_type, (PyTypeObject *)etype);
    Py_XSETREF(args_type, (PyTypeObject *)atype);
    Py_RETURN_NONE;
}

/* `table.setdefault(key, row)`: the row where `key` was first seen (-1 with an error set on failure). */
static long long intern(PyObject *table, PyObject *key, long long row) {
    PyObject *known = PyDict_GetItemWithError(table, key);
    if (known != NULL) return PyLong_AsLongLong(known);
    if (PyErr_Occurred()) return -1;
    PyObject *value = PyLong_FromLongLong(row);
    if (value == NULL) return -1;
    int failed = PyDict_SetItem(table, key, value);
    Py_DECREF(value);
    return failed ? -1 : row;
}

/* An int slot as int64; -1 (absent) when unset, not an int, or outside int64. */
static long long int_or_absent(PyObject *value) {
    if (value == NULL || !PyLong_Check(value)) return -1;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return -1;
    }
    return v;
}

/* A flow id: the int itself when |id| < 2^62, else ID_OTHER (strings, None, huge ints). */
static long long flow_id(PyObject *value) {
    if (value == NULL || !PyLong_Check(value)) return ID_OTHER;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow || v <= -ID_LIMIT || v >= ID_LIMIT) {
        PyErr_Clear();
        return ID_OTHER;
    }
    return v;
}

static double float_or_nan(PyObject *value) {
    return (value != NULL && PyFloat_Check(value)) ? PyFloat_AS_DOUBLE(value) : Py_NAN;
}

/* The id (first-seen row) of `len` bytes at `text` in `table` (-2 with an error set on failure). */
static long long bytes_id(PyObject *table, const char *text, Py_ssize_t len, long long row) {
    PyObject *key = PyBytes_FromStringAndSize(text, len);
    long long id = key == NULL ? -2 : intern(table, key, row);
    Py_XDECREF(key);
    return id < 0 ? -2 : id;
}

/* The last key interned into one table during one `extract` call: consecutive ops often carry the same shapes
 * or stack (aten::conv2d, aten::convolution, aten::_convolution), so the text is compared before it is hashed.
 * The text lies in the decoded chunk, alive for the whole call. */
typedef struct {
    const char *text;
    Py_ssize_t len;
    long long id;
} Memo;

/* The id (first-seen row) of a raw JSON value's text in `table`; -1 when absent (empty or `null`), -2 with
 * an error set on failure. Keys are the exact bytes: one writer spells equal values alike.
 * With `first_frame`, the value is a `Call stack` string (`"frame;frame;..."`, innermost first) and the key is
 * its first frame's JSON text (between the opening quote and the first `;` or the closing quote; a `;` is
 * never part of an escape); anything but a non-empty string is absent. */
static long long raw_id(PyObject *table, PyObject *raw, long long row, int first_frame, Memo *memo) {
    if (raw == NULL) return -1;
    Py_buffer view;
    if (PyObject_GetBuffer(raw, &view, PyBUF_SIMPLE) < 0) return -2;
    long long id = -1;
    const char *text = view.buf;
    Py_ssize_t len = view.len;
    if (first_frame) {
        if (len >= 2 && text[0] == '"') {
            const char *end = memchr(text + 1, ';', (size_t)(len - 2));
            len = end != NULL ? end - text - 1 : len - 2;
            text += 1;
        } else {
            len = 0;
        }
    } else if (len == 4 && memcmp(text, "null", 4) == 0) {
        len = 0;
    }
    if (len > 0) {
        if (memo->text != NULL && memo->len == len && memcmp(memo->text, text, (size_t)len) == 0) {
            id = memo->id;
        } else {
            id = bytes_id(table, text, len, row);
            if (id >= 0) *memo = (Memo){text, len, id};
        }
    }
    PyBuffer_Release(&view);
    return id;
}

/* The text an op's inputs key is composed in, and the last key composed (compared before it is hashed). */
typedef struct {
    char *text, *last;
    size_t cap, last_cap;
    Py_ssize_t len, last_len;
    long long last_id;
} Scratch;

/* One raw JSON value's text, or NULL with len 0 when absent (empty or `null`); -1 with an error set on failure. */
static int raw_text(PyObject *raw, Py_buffer *view, const char **text, Py_ssize_t *len) {
    *text = NULL, *len = 0;
    if (raw == NULL) return 0;
    if (PyObject_GetBuffer(raw, view, PyBUF_SIMPLE) < 0) return -1;
    if (view->len > 0 && !(view->len == 4 && memcmp(view->buf, "null", 4) == 0)) *text = view->buf, *len = view->len;
    return 0;
}

/* The id (first-seen row) in `table` of an op's recorded inputs: the JSON text `[dims, types, strides, concrete]`
 * of its Input Dims, Input type, Input Strides and Concrete Inputs as the file spells them (`null` when absent),
 * as `_scan.c inputs_id` composes it; -1 when none is there, -2 with an error set on failure. */
static long long inputs_id(PyObject *table, PyObject *a, long long row, Scratch *sc) {
    static const int fields[4] = {A_INPUT_DIMS, A_INPUT_TYPE, A_INPUT_STRIDES, A_CONCRETE};
    Py_buffer views[4];
    const char *text[4];
    Py_ssize_t len[4], need = 5;
    int held = 0, any = 0;
    long long id = -2;
    for (; held < 4; held++) {
        views[held].obj = NULL;
        if (raw_text(SLOT(a, arg_offset[fields[held]]), &views[held], &text[held], &len[held]) < 0) goto done;
        any |= text[held] != NULL;
        need += text[held] != NULL ? len[held] : 4;
    }
    if (!any) {
        id = -1;
        goto done;
    }
    if ((size_t)need > sc->cap) {
        char *grown = PyMem_RawRealloc(sc->text, (size_t)need);
        if (grown == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        sc->text = grown, sc->cap = (size_t)need;
    }
    char *at = sc->text;
    *at++ = '[';
    for (int k = 0; k < 4; k++) {
        memcpy(at, text[k] != NULL ? text[k] : "null", (size_t)(text[k] != NULL ? len[k] : 4));
        at += text[k] != NULL ? len[k] : 4;
        *at++ = k < 3 ? ',' : ']';
    }
    sc->len = at - sc->text;
    if (sc->last != NULL && sc->last_len == sc->len && memcmp(sc->last, sc->text, (size_t)sc->len) == 0) {
        id = sc->last_id;
        goto done;
    }
    id = bytes_id(table, sc->text, sc->len, row);
    if (id >= 0 && (size_t)sc->len <= sc->last_cap) {
        memcpy(sc->last, sc->text, (size_t)sc->len), sc->last_len = sc->len, sc->last_id = id;
    } else if (id >= 0) {  /* the kept copy grows to the longest key seen */
        char *grown = PyMem_RawRealloc(sc->last, (size_t)sc->len);
        if (grown != NULL) {
            sc->last = grown, sc->last_cap = (size_t)sc->len;
            memcpy(sc->last, sc->text, (size_t)sc->len), sc->last_len = sc->len, sc->last_id = id;
        }
    }
done:
    for (int k = 0; k < held; k++)
        if (views[k].obj != NULL) PyBuffer_Release(&views[k]);
    return id;
}

#define GPU_LIMIT 4611686018427387904.0  /* 2^62: none of the GPU fields is that large */
#define ASK_PYTHON (-2.0)                /* a value the fast path does not read: the caller's reference does */

/* A count, size or share: an int (not a bool) or a float in [0, 2^62), else NaN. */
static double gpu_number(PyObject *value) {
    double v;
    if (value == NULL) return Py_NAN;
    if (PyFloat_CheckExact(value)) {
        v = PyFloat_AS_DOUBLE(value);
    } else if (PyLong_CheckExact(value)) {
        int overflow = 0;
        long long n = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (overflow || (n == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return Py_NAN;
        }
        if (n <= -(1LL << 62) || n >= (1LL << 62)) return Py_NAN;
        v = (double)n;
    } else {
        return Py_NAN;
    }
    return (v >= 0 && v < GPU_LIMIT) ? v : Py_NAN;
}

/* x*y*z of a raw `[x, y, z]` of plain digit runs (what every Kineto writer emits); NaN when absent or when a
 * plain run breaks the rules (0 is not a size); ASK_PYTHON for any other spelling (fractions, exponents,
 * signs, more digits, other values), which the reference reader decides. */
static double gpu_product(PyObject *raw) {
    if (raw == NULL) return Py_NAN;
    Py_buffer view;
    if (PyObject_GetBuffer(raw, &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        return ASK_PYTHON;
    }
    const char *p = view.buf, *end = p + view.len;
    double product = ASK_PYTHON;
    if (view.len == 0 || (view.len == 4 && memcmp(p, "null", 4) == 0)) {
        product = Py_NAN;
        goto out;
    }
#define SKIP_SPACE() while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++
    SKIP_SPACE();
    if (p == end || *p++ != '[') goto out;
    double dims[3];
    for (int k = 0; k < 3; k++) {
        SKIP_SPACE();
        int digits = 0;
        long long v = 0;
        while (p < end && *p >= '0' && *p <= '9' && digits < 18) v = v * 10 + (*p++ - '0'), digits++;
        if (digits == 0 || digits > 18 || (p < end && (*p == '.' || *p == 'e' || *p == 'E' || (*p >= '0' && *p <= '9'))))
            goto out;
        dims[k] = (double)v;
        SKIP_SPACE();
        if (p == end || *p++ != (k < 2 ? ',' : ']')) goto out;
    }
    SKIP_SPACE();
    if (p != end) goto out;
#undef SKIP_SPACE
    product = 1.0;
    for (int k = 0; k < 3; k++) {
        if (!(dims[k] >= 1 && dims[k] < GPU_LIMIT)) {
            product = Py_NAN;
            goto out;
        }
        product *= dims[k];
    }
    if (!(product < GPU_LIMIT)) product = Py_NAN;
out:
    PyBuffer_Release(&view);
    return product;
}

/* gpu_fields(events, rows, on_kernels, out): the GPU activity fields of events[rows[k]] into out[k * 7 + f]. */
static PyObject *gpu_fields(PyObject *self, PyObject *args) {
    PyObject *events;
    Py_buffer rows, out;
    int on_kernels;
    if (!PyArg_ParseTuple(args, "O!y*pw*", &PyList_Type, &events, &rows, &on_kernels, &out)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = rows.len / (Py_ssize_t)sizeof(long long), size = PyList_GET_SIZE(events);
    if (event_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "layout() was not called");
        goto done;
    }
    if (rows.len % (Py_ssize_t)sizeof(long long) != 0 || out.len != n * N_GPU_FIELDS * (Py_ssize_t)sizeof(double)) {
        PyErr_SetString(PyExc_ValueError, "expected int64 rows and a float64 output of 7 values per row");
        goto done;
    }
    const long long *row = rows.buf;
    double *values = out.buf;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (row[k] < 0 || row[k] >= size) {
            PyErr_Format(PyExc_IndexError, "row %lld is outside the chunk", row[k]);
            goto done;
        }
        PyObject *event = PyList_GET_ITEM(events, row[k]);
        PyObject *a = Py_TYPE(event) == event_type ? SLOT(event, event_offset[F_ARGS]) : NULL;
        if (a == NULL || Py_TYPE(a) != args_type) {
            PyErr_Format(PyExc_TypeError, "event %lld is not the bound struct type", row[k]);
            goto done;
        }
        double *v = values + k * N_GPU_FIELDS;
        for (int f = 0; f < N_GPU_FIELDS; f++) v[f] = Py_NAN;
        if (!on_kernels) {
            v[G_BYTES] = gpu_number(SLOT(a, arg_offset[A_GPU_FIRST + G_BYTES]));
            continue;
        }
        v[G_GRID] = gpu_product(SLOT(a, arg_offset[A_GPU_FIRST + G_GRID]));
        v[G_BLOCK] = gpu_product(SLOT(a, arg_offset[A_GPU_FIRST + G_BLOCK]));
        for (int f = G_REGISTERS; f < N_GPU_FIELDS; f++) v[f] = gpu_number(SLOT(a, arg_offset[A_GPU_FIRST + f]));
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    PyBuffer_Release(&rows);
    PyBuffer_Release(&out);
    return result;
}

static PyObject *extract(PyObject *self, PyObject *args) {
    PyObject *events, *tables[4], *shapes, *frames, *out;
    Py_buffer lut;
    long long offset;
    if (!PyArg_ParseTuple(args, "O!y*O!O!O!O!O!O!LO!", &PyList_Type, &events, &lut, &PyDict_Type, &tables[0], &PyDict_Type,
                          &tables[1], &PyDict_Type, &tables[2], &PyDict_Type, &tables[3], &PyDict_Type, &shapes,
                          &PyDict_Type, &frames, &offset, &PyTuple_Type, &out))
        return NULL;
    Py_buffer views[N_OUT];
    int held = 0;
    PyObject *result = NULL;
    Scratch scratch = {NULL, NULL, 0, 0, 0, 0, -1};
    Py_ssize_t n = PyList_GET_SIZE(events);
    if (event_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "layout() was not called");
        goto done;
    }
    if (lut.len != 256 || PyTuple_GET_SIZE(out) != N_OUT) {
        PyErr_Format(PyExc_ValueError, "expected a 256-byte phase table and %d output arrays", N_OUT);
        goto done;
    }
    for (; held < N_OUT; held++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(out, held), &views[held], PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) goto done;
        Py_ssize_t want = (held == O_PH ? 1 : 8);  /* int8 phases; int64 or float64 for the rest */
        if (views[held].len != n * want) {
            held++;
            PyErr_Format(PyExc_ValueError, "output %d holds %zd bytes, not %zd", held - 1, views[held - 1].len, n * want);
            goto done;
        }
    }
    const unsigned char *phase_of = (const unsigned char *)lut.buf;
    signed char *ph = (signed char *)views[O_PH].buf;
    long long *name = views[O_NAME].buf, *cat = views[O_CAT].buf, *pid = views[O_PID].buf, *tid = views[O_TID].buf;
    double *ts = views[O_TS].buf, *dur = views[O_DUR].buf;
    long long *corr = views[O_CORRELATION].buf, *ext = views[O_EXTERNAL_ID].buf;
    long long *device = views[O_DEVICE].buf, *stream = views[O_STREAM].buf, *id = views[O_ID].buf;
    long long *ev_idx = views[O_EV_IDX].buf, *shape = views[O_SHAPE].buf, *frame = views[O_FRAME].buf;
    double *memory[N_MEMORY_ARGS];
    for (int k = 0; k < N_MEMORY_ARGS; k++) memory[k] = views[O_DEVICE_TYPE + k].buf;
    Memo frame_memo = {NULL, 0, -1};
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *event = PyList_GET_ITEM(events, i);
        if (Py_TYPE(event) != event_type) {
            PyErr_Format(PyExc_TypeError, "event %zd is a %.100s, not the bound struct type", i, Py_TYPE(event)->tp_name);
            goto done;
        }
        PyObject *phase = SLOT(event, event_offset[F_PH]);
        ph[i] = (signed char)phase_of[0];  /* entry 0: anything that is not one ASCII character */
        if (phase != NULL && PyUnicode_Check(phase) && PyUnicode_GET_LENGTH(phase) == 1) {
            Py_UCS4 c = PyUnicode_READ_CHAR(phase, 0);
            if (c > 0 && c < 256) ph[i] = (signed char)phase_of[c];
        }
        long long row = offset + i;
        PyObject *keys[4] = {SLOT(event, event_offset[F_NAME]), SLOT(event, event_offset[F_CAT]),
                             SLOT(event, event_offset[F_PID]), SLOT(event, event_offset[F_TID])};
        long long *ids[4] = {name, cat, pid, tid};
        for (int k = 0; k < 4; k++) {
            if (keys[k] == NULL) {
                PyErr_Format(PyExc_TypeError, "event %zd has an unset field", i);
                goto done;
            }
            ids[k][i] = intern(tables[k], keys[k], row);
            if (ids[k][i] < 0 && PyErr_Occurred()) goto done;
        }
        ts[i] = float_or_nan(SLOT(event, event_offset[F_TS]));
        dur[i] = float_or_nan(SLOT(event, event_offset[F_DUR]));
        id[i] = flow_id(SLOT(event, event_offset[F_ID]));
        PyObject *a = SLOT(event, event_offset[F_ARGS]);
        if (a == NULL || Py_TYPE(a) != args_type) {
            PyErr_Format(PyExc_TypeError, "event %zd: args is not the bound struct type", i);
            goto done;
        }
        corr[i] = int_or_absent(SLOT(a, arg_offset[A_CORRELATION]));
        ext[i] = int_or_absent(SLOT(a, arg_offset[A_EXTERNAL_ID]));
        if (ext[i] < 0) ext[i] = int_or_absent(SLOT(a, arg_offset[A_EXTERNAL_ID_2021]));
        device[i] = int_or_absent(SLOT(a, arg_offset[A_DEVICE]));
        stream[i] = int_or_absent(SLOT(a, arg_offset[A_STREAM]));
        for (int k = 0; k < N_MEMORY_ARGS; k++) memory[k][i] = float_or_nan(SLOT(a, arg_offset[A_DEVICE_TYPE + k]));
        ev_idx[i] = int_or_absent(SLOT(a, arg_offset[A_EV_IDX]));
        if (ev_idx[i] < 0) ev_idx[i] = int_or_absent(SLOT(a, arg_offset[A_EV_IDX_LEGACY]));
        shape[i] = inputs_id(shapes, a, row, &scratch);
        frame[i] = raw_id(frames, SLOT(a, arg_offset[A_CALL_STACK]), row, 1, &frame_memo);
        if (shape[i] == -2 || frame[i] == -2) goto done;
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    for (int k = 0; k < held; k++) PyBuffer_Release(&views[k]);
    PyBuffer_Release(&lut);
    PyMem_RawFree(scratch.text);
    PyMem_RawFree(scratch.last);
    return result;
}

/* nesting_depth(ts, dur, lane_ptr, out): per lane, how many earlier rows are still open when each row starts.
 *
 * The twin of intervals._nesting_depth_py: rows within a lane come sorted by start; row i's depth is the number of
 * rows j < i of its lane with ts[j] + dur[j] > ts[i], capped at INT16_MAX. A min-heap holds the ends of the open
 * rows: those ending at or before ts[i] are closed for every later row too (starts only grow), so they are popped
 * for good. O(n log depth), without the sort and the two binary searches per row of the array version. Returns
 * False, writing nothing meaningful, when a lane's starts decrease or a duration is negative: the caller then
 * uses the array version. ts, dur and lane_ptr are int64, out int16. The GIL is released while it runs.
 */
static PyObject *nesting_depth(PyObject *self, PyObject *args) {
    Py_buffer ts, dur, ptr, out;
    if (!PyArg_ParseTuple(args, "y*y*y*w*", &ts, &dur, &ptr, &out)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = ts.len / (Py_ssize_t)sizeof(long long), lanes = ptr.len / (Py_ssize_t)sizeof(long long) - 1;
    if (ts.len % (Py_ssize_t)sizeof(long long) != 0 || dur.len != ts.len || ptr.len % (Py_ssize_t)sizeof(long long) != 0
        || out.len != n * (Py_ssize_t)sizeof(short)) {
        PyErr_SetString(PyExc_ValueError, "expected int64 ts, dur and lane_ptr, and an int16 output of one value per row");
        goto done;
    }
    const long long *start = ts.buf, *length = dur.buf, *bound = ptr.buf;
    short *depth = out.buf;
    for (Py_ssize_t k = 0; k < lanes; k++) {
        if (bound[k] < 0 || bound[k + 1] < bound[k] || bound[k + 1] > n) {
            PyErr_SetString(PyExc_ValueError, "lane_ptr must rise from 0 to at most the number of rows");
            goto done;
        }
    }
    /* The heap holds the rows still open: as many as the depth, not the lane. It starts small and doubles. */
    Py_ssize_t room = 256;
    long long *heap = PyMem_RawMalloc((size_t)room * sizeof(long long));
    if (heap == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int ordered = 1, oom = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < lanes && ordered && !oom; k++) {
        Py_ssize_t size = 0;
        for (Py_ssize_t i = bound[k]; i < bound[k + 1]; i++) {
            long long now = start[i];
            if (length[i] < 0 || (i > bound[k] && now < start[i - 1]) || (now > 0 && length[i] > LLONG_MAX - now)) {
                ordered = 0;
                break;
            }
            while (size > 0 && heap[0] <= now) {  /* pop the earliest end: sift the last entry down from the root */
                long long last = heap[--size];
                Py_ssize_t at = 0;
                for (;;) {
                    Py_ssize_t child = 2 * at + 1;
                    if (child >= size) break;
                    if (child + 1 < size && heap[child + 1] < heap[child]) child++;
                    if (heap[child] >= last) break;
                    heap[at] = heap[child];
                    at = child;
                }
                heap[at] = last;
            }
            depth[i] = (short)(size < 32767 ? size : 32767);
            if (size == room) {
                long long *grown = PyMem_RawRealloc(heap, (size_t)room * 2 * sizeof(long long));
                if (grown == NULL) {
                    oom = 1;
                    break;
                }
                heap = grown;
                room *= 2;
            }
            long long end = now + length[i];  /* push: sift up */
            Py_ssize_t at = size++;
            while (at > 0 && heap[(at - 1) / 2] > end) {
                heap[at] = heap[(at - 1) / 2];
                at = (at - 1) / 2;
            }
            heap[at] = end;
        }
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(heap);
    result = oom ? PyErr_NoMemory() : PyBool_FromLong(ordered);
done:
    PyBuffer_Release(&ts);
    PyBuffer_Release(&dur);
    PyBuffer_Release(&ptr);
    PyBuffer_Release(&out);
    return result;
}

/* us_to_ns(values, base, ok, clamp_negative): µs floats -> int64 ns in place (the same 8 bytes per value), and
 * whether each was usable. The twin of finish._to_ns_py, value for value:
 *   usable: |us * 1000 + base| < 2^62 (NaN and ±inf are not); an unusable value becomes 0 µs;
 *   ns = floor(us) * 1000 + rint((us - floor(us)) * 1000) + base, in int64 arithmetic that wraps as numpy's does;
 *   with clamp_negative, a usable value below 0 becomes 0 ns (durations: Kineto clamps them too).
 * `values` is float64 and is overwritten; `ok` is one byte per value. Returns how many usable values were negative
 * (counted only with clamp_negative). No temporaries: at 10^7 events each fresh one is 80 MB of pages to fault in.
 * The GIL is released while it runs. */
static PyObject *us_to_ns(PyObject *self, PyObject *args) {
    Py_buffer values, ok;
    long long base;
    int clamp;
    if (!PyArg_ParseTuple(args, "w*Lw*p", &values, &base, &ok, &clamp)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = values.len / (Py_ssize_t)sizeof(double);
    if (values.len % (Py_ssize_t)sizeof(double) != 0 || ok.len != n) {
        PyErr_SetString(PyExc_ValueError, "expected a float64 array and a one-byte flag per value");
        goto done;
    }
    double *v = values.buf;
    unsigned char *usable = ok.buf;
    long long negatives = 0;
    const double limit = 4611686018427387904.0, based = (double)base;  /* 2^62 */
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        double us = v[i];
        volatile double scaled = us * 1000.0;  /* two roundings, as numpy's multiply then add: never fused */
        double shifted = scaled + based;
        int good = fabs(shifted) < limit;
        usable[i] = (unsigned char)good;
        double clean = good ? us : 0.0;
        uint64_t ns;
        if (clamp && good && clean < 0) {
            negatives++;
            ns = 0;
        } else {
            double whole = floor(clean);
            double frac = rint((clean - whole) * 1000.0);
            ns = (uint64_t)(long long)whole * 1000u + (uint64_t)(long long)frac + (uint64_t)base;
        }
        memcpy(&v[i], &ns, sizeof ns);
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromLongLong(negatives);
done:
    PyBuffer_Release(&values);
    PyBuffer_Release(&ok);
    return result;
}

/* parents(depth, out): per row, the last earlier row one level up (its parent), or -1. The twin of
 * analysis.nesting._parents_by_depth_py (one pass per level of array operations): one pass with the last row seen
 * at each level. A row of depth 0, or of a depth no earlier row one level up has, gets -1. depth is int16 (0 to
 * INT16_MAX; a negative depth has no parent and is no parent), out int64. The GIL is released while it runs. */
static PyObject *parents(PyObject *self, PyObject *args) {
    Py_buffer depth, out;
    if (!PyArg_ParseTuple(args, "y*w*", &depth, &out)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = depth.len / (Py_ssize_t)sizeof(short);
    if (depth.len % (Py_ssize_t)sizeof(short) != 0 || out.len != n * (Py_ssize_t)sizeof(long long)) {
        PyErr_SetString(PyExc_ValueError, "expected an int16 depth and an int64 output of one value per row");
        goto done;
    }
    long long *last = PyMem_RawMalloc((size_t)32768 * sizeof(long long));
    if (last == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    const short *d = depth.buf;
    long long *parent = out.buf;
    Py_BEGIN_ALLOW_THREADS
    for (int k = 0; k < 32768; k++) last[k] = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        short level = d[i];
        parent[i] = level > 0 ? last[level - 1] : -1;
        if (level >= 0) last[level] = (long long)i;
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(last);
    Py_INCREF(Py_None);
    result = Py_None;
done:
    PyBuffer_Release(&depth);
    PyBuffer_Release(&out);
    return result;
}

/* dense_ids(first_rows, first, out, wide): out[i] = the index of first[i] (int64 values if `wide`, else int32) in the
 * strictly ascending int64 `first_rows`, as numpy's searchsorted (side left) answers it, written as int32. The values are the rows where an interned string was
 * first seen, so nearly all are exactly one of `first_rows`: a table by row answers those in one load each (a binary
 * search of 10^7 values in a table of thousands costs 0.5 s), the table allocated zeroed, so only the pages holding a
 * key are touched; any other value is searched. False (nothing written) when `first_rows` is not strictly ascending or
 * the table cannot be allocated. */
static Py_ssize_t lower_bound(const long long *keys, Py_ssize_t k, long long v) {
    Py_ssize_t lo = 0, hi = k;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (keys[mid] < v) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static PyObject *dense_ids(PyObject *self, PyObject *args) {
    Py_buffer rows, first, out;
    int wide;
    if (!PyArg_ParseTuple(args, "y*y*w*p", &rows, &first, &out, &wide)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t width = wide ? (Py_ssize_t)sizeof(long long) : (Py_ssize_t)sizeof(int);
    Py_ssize_t k = rows.len / (Py_ssize_t)sizeof(long long), n = first.len / width;
    if (rows.len % (Py_ssize_t)sizeof(long long) != 0 || first.len % width != 0 ||
        out.len != n * (Py_ssize_t)sizeof(int) || k >= INT_MAX) {
        PyErr_SetString(PyExc_ValueError, "expected int64 first rows, int64 or int32 values and an int32 output of one per value");
        goto done;
    }
    const long long *keys = rows.buf, *v64 = first.buf;
    const int *v32 = first.buf;
    int *ids = out.buf;
    int ok = 1;
    for (Py_ssize_t j = 0; j < k && ok; j++)
        ok = keys[j] >= 0 && (j == 0 || keys[j] > keys[j - 1]);
    long long span = k ? keys[k - 1] + 1 : 0;
    int *table = ok && span ? calloc((size_t)span, sizeof(int)) : NULL;  /* row -> index + 1; 0: not a key */
    if (span && table == NULL) ok = 0;
    if (ok) {
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t j = 0; j < k; j++) table[keys[j]] = (int)j + 1;
        for (Py_ssize_t i = 0; i < n; i++) {
            long long x = wide ? v64[i] : (long long)v32[i];
            int hit = x >= 0 && x < span ? table[x] : 0;
            ids[i] = hit ? hit - 1 : (int)lower_bound(keys, k, x);
        }
        Py_END_ALLOW_THREADS
    }
    free(table);
    result = PyBool_FromLong(ok);
done:
    PyBuffer_Release(&rows);
    PyBuffer_Release(&first);
    PyBuffer_Release(&out);
    return result;
}

/* subtree_ends(parent, out): in a forest in preorder (every parent before its children), each node's subtree end,
 * one past its last descendant's position, in one backward pass; False (out partly written) when a parent is not
 * before its child. */
static PyObject *subtree_ends(PyObject *self, PyObject *args) {
    Py_buffer parent, out;
    if (!PyArg_ParseTuple(args, "y*w*", &parent, &out)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = parent.len / (Py_ssize_t)sizeof(long long);
    if (parent.len % (Py_ssize_t)sizeof(long long) != 0 || out.len != parent.len) {
        PyErr_SetString(PyExc_ValueError, "expected int64 parents and an int64 output of one value per node");
        goto done;
    }
    const long long *up = parent.buf;
    long long *end = out.buf;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) end[i] = (long long)i + 1;
    for (Py_ssize_t i = n - 1; i >= 0; i--) {
        long long p = up[i];
        if (p < 0) continue;
        if (p >= (long long)i) {
            ok = 0;
            break;
        }
        if (end[i] > end[p]) end[p] = end[i];
    }
    Py_END_ALLOW_THREADS
    result = PyBool_FromLong(ok);
done:
    PyBuffer_Release(&parent);
    PyBuffer_Release(&out);
    return result;
}

/* innermost(lane, t, start, end, parent, ptr, out): per query i, the innermost node of a forest in preorder running
 * at t[i] on the forest's lane lane[i] (start <= t < end; -1: none, or lane[i] < 0): the last node of that lane
 * starting at or before t, climbed out of the nodes that ended by t. `ptr[k]..ptr[k+1]` are lane k's nodes, by start;
 * a node's parent is on its lane. The array passes climb one level per pass over every query still climbing. False
 * (nothing written) when the bounds are out of order or a parent does not come before its node. */
static PyObject *innermost(PyObject *self, PyObject *args) {
    Py_buffer lane, t, start, end, parent, ptr, out;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*w*", &lane, &t, &start, &end, &parent, &ptr, &out)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t q = t.len / (Py_ssize_t)sizeof(long long), n = start.len / (Py_ssize_t)sizeof(long long);
    Py_ssize_t lanes = ptr.len / (Py_ssize_t)sizeof(long long) - 1;
    if (lane.len != t.len || out.len != t.len || end.len != start.len || parent.len != start.len || lanes < 0 ||
        t.len % (Py_ssize_t)sizeof(long long) != 0 || start.len % (Py_ssize_t)sizeof(long long) != 0 ||
        ptr.len % (Py_ssize_t)sizeof(long long) != 0) {
        PyErr_SetString(PyExc_ValueError, "expected int64 queries (lane, t, out), nodes (start, end, parent) and lane bounds");
        goto done;
    }
    const long long *k = lane.buf, *at = t.buf, *s = start.buf, *e = end.buf, *up = parent.buf, *bound = ptr.buf;
    long long *owner = out.buf;
    int ok = 1;
    for (Py_ssize_t j = 0; j <= lanes && ok; j++)
        ok = bound[j] >= 0 && bound[j] <= n && (j == 0 || bound[j] >= bound[j - 1]);
    for (Py_ssize_t i = 0; i < n && ok; i++)
        ok = up[i] >= -1 && up[i] < i;
    if (!ok) {  /* lane bounds out of order or a parent not before its node: the array passes answer */
        result = Py_False;
        Py_INCREF(result);
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < q; i++) {
        long long j = k[i], x = at[i], c = -1;
        if (j >= 0 && j < lanes) {
            Py_ssize_t lo = (Py_ssize_t)bound[j], hi = (Py_ssize_t)bound[j + 1], a = lo, b = hi;
            while (a < b) {  /* the first node starting after x */
                Py_ssize_t mid = a + (b - a) / 2;
                if (s[mid] <= x) a = mid + 1;
                else b = mid;
            }
            c = a - 1 >= lo ? (long long)(a - 1) : -1;
            while (c >= 0 && e[c] <= x) c = up[c];
            if (c >= (long long)hi) c = -1;
        }
        owner[i] = c;
    }
    Py_END_ALLOW_THREADS
    result = Py_True;
    Py_INCREF(result);
done:
    PyBuffer_Release(&lane);
    PyBuffer_Release(&t);
    PyBuffer_Release(&start);
    PyBuffer_Release(&end);
    PyBuffer_Release(&parent);
    PyBuffer_Release(&ptr);
    PyBuffer_Release(&out);
    return result;
}

/* coded_unions(ts, end, code, ptr, offsets, starts, ends, counts): the union of the intervals [ts, end) of each code
 * (int8 per row; < 0: none), as intervals.union makes it from that code's rows in row order, with no copies: lane k's
 * rows `ptr[k]..ptr[k+1]` start in order, so one merge of the lanes by (start, lane) visits every code's rows in the
 * order of a stable sort by start, and each code's union grows as its rows come (a new interval where a row starts
 * past the reach so far, else the reach extended). Code c's intervals are written from offsets[c] (room for one per
 * row of the code) and counted in counts[c]. False (counts partly written) when a lane's starts are out of order, a
 * code is past the offsets or the bounds are malformed: the array passes answer then. */
static PyObject *coded_unions(PyObject *self, PyObject *args) {
    Py_buffer ts, end, code, ptr, offsets, starts, ends, counts;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*w*w*w*", &ts, &end, &code, &ptr, &offsets, &starts, &ends, &counts)) return NULL;
    PyObject *result = NULL;
    const Py_ssize_t w = (Py_ssize_t)sizeof(long long);
    Py_ssize_t n = ts.len / w, lanes = ptr.len / w - 1, codes = offsets.len / w, room = starts.len / w;
    long long *heap = NULL;
    if (ts.len % w != 0 || end.len != ts.len || code.len != n || ptr.len % w != 0 || lanes < 0 ||
        offsets.len % w != 0 || counts.len != offsets.len || starts.len % w != 0 || ends.len != starts.len) {
        PyErr_SetString(PyExc_ValueError, "expected int64 ts and end, int8 codes, int64 lane bounds, offsets, outputs and counts");
        goto done;
    }
    const long long *s = ts.buf, *e = end.buf, *bound = ptr.buf, *off = offsets.buf;
    const signed char *c = code.buf;
    long long *out_s = starts.buf, *out_e = ends.buf, *count = counts.buf;
    int ok = bound[0] >= 0 && (lanes == 0 || bound[lanes] <= n);
    for (Py_ssize_t j = 1; j <= lanes && ok; j++) ok = bound[j] >= bound[j - 1];
    for (Py_ssize_t k = 0; k < codes && ok; k++) ok = off[k] >= 0 && off[k] <= room;
    if (!ok) {
        result = Py_False;
        Py_INCREF(result);
        goto done;
    }
    heap = malloc((size_t)(lanes + 1) * sizeof(long long));
    long long *cursor = malloc((size_t)(lanes + 1) * sizeof(long long));
    long long *reach = malloc((size_t)(codes + 1) * sizeof(long long));
    if (heap == NULL || cursor == NULL || reach == NULL) {
        free(cursor);
        free(reach);
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t size = 0;
    for (Py_ssize_t k = 0; k < codes; k++) count[k] = 0;
    for (Py_ssize_t j = 0; j < lanes; j++) {  /* each lane's first coded row; the heap holds lanes by (start, lane) */
        long long r = bound[j];
        while (r < bound[j + 1] && c[r] < 0) r++;
        cursor[j] = r;
        if (r >= bound[j + 1]) continue;
        Py_ssize_t i = size++;
        while (i > 0) {
            long long up = heap[(i - 1) / 2];
            if (s[cursor[up]] < s[r] || (s[cursor[up]] == s[r] && up < j)) break;
            heap[i] = up;
            i = (i - 1) / 2;
        }
        heap[i] = j;
    }
    while (size > 0 && ok) {
        long long j = heap[0], r = cursor[j];
        int k = c[r];
        if (k >= codes) {
            ok = 0;
            break;
        }
        long long *n_k = &count[k];
        if (*n_k > 0 && s[r] <= reach[k]) {
            if (e[r] > reach[k]) reach[k] = e[r];
        } else {
            if (*n_k > 0) out_e[off[k] + *n_k - 1] = reach[k];
            if (off[k] + *n_k >= (k + 1 < codes ? off[k + 1] : room)) {  /* more intervals than the code's room */
                ok = 0;
                break;
            }
            out_s[off[k] + *n_k] = s[r];
            if (*n_k == 0 || e[r] > reach[k]) reach[k] = e[r];  /* the running reach never falls (an end before its start) */
            ++*n_k;
        }
        long long next = r + 1;  /* the lane's next coded row, in start order */
        while (next < bound[j + 1] && c[next] < 0) next++;
        if (next < bound[j + 1] && s[next] < s[r]) {
            ok = 0;
            break;
        }
        cursor[j] = next;
        long long key = j;
        if (next >= bound[j + 1]) key = heap[--size];  /* the lane is done: the last lane sifts down from the top */
        Py_ssize_t i = 0;
        for (;;) {
            Py_ssize_t a = 2 * i + 1, b = a + 1, m = i;
            long long best = key;
            if (a < size) {
                long long h = heap[a];
                if (s[cursor[h]] < s[cursor[best]] || (s[cursor[h]] == s[cursor[best]] && h < best)) { best = h; m = a; }
            }
            if (b < size) {
                long long h = heap[b];
                if (s[cursor[h]] < s[cursor[best]] || (s[cursor[h]] == s[cursor[best]] && h < best)) { best = h; m = b; }
            }
            if (m == i) break;
            heap[i] = best;
            i = m;
        }
        if (size > 0) heap[i] = key;
    }
    for (Py_ssize_t k = 0; k < codes && ok; k++)
        if (count[k] > 0) out_e[off[k] + count[k] - 1] = reach[k];
    Py_END_ALLOW_THREADS
    free(cursor);
    free(reach);
    result = PyBool_FromLong(ok);
done:
    free(heap);
    PyBuffer_Release(&ts);
    PyBuffer_Release(&end);
    PyBuffer_Release(&code);
    PyBuffer_Release(&ptr);
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&ends);
    PyBuffer_Release(&counts);
    return result;
}

/* kineto_ns(values, raw_type, reference): [reference(v) for v in values], computed here for what the exact
 * decoder yields by the million: the raw JSON text of a time (`raw_type`, msgspec.Raw) in Kineto's plain spelling
 * (`kineto_text_ns`), and an absent one (empty text: None). Any other value or spelling is handed to `reference`. */
static PyObject *kineto_ns(PyObject *self, PyObject *args) {
    PyObject *values, *raw_type, *reference;
    if (!PyArg_ParseTuple(args, "O!OO", &PyList_Type, &values, &raw_type, &reference)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(values);
    PyObject *out = PyList_New(n);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *value = PyList_GET_ITEM(values, i), *result = NULL;
        long long ns = 0;
        int done = 0;  /* 1: None, 2: ns */
        if ((PyObject *)Py_TYPE(value) == raw_type) {
            Py_buffer view;
            if (PyObject_GetBuffer(value, &view, PyBUF_SIMPLE) < 0) goto fail;
            if (view.len == 0) done = 1;
            else if (kineto_text_ns(view.buf, view.len, &ns)) done = 2;
            PyBuffer_Release(&view);
        }
        if (done == 1) {
            Py_INCREF(Py_None);
            result = Py_None;
        } else if (done == 2) {
            result = PyLong_FromLongLong(ns);
        } else {
            Py_INCREF(value);  /* `reference` is Python code: the list must not be the only owner meanwhile */
            result = PyObject_CallOneArg(reference, value);
            Py_DECREF(value);
        }
        if (result == NULL) goto fail;
        PyList_SET_ITEM(out, i, result);
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

static PyMethodDef methods[] = {
    {"kineto_ns", kineto_ns, METH_VARARGS,
     "kineto_ns(values, raw_type, reference): [reference(v) for v in values]; raw time texts in Kineto's spelling read here."},
    {"layout", layout, METH_VARARGS,
     "layout(event_type, event_fields, args_type, args_fields): bind the slot offsets of the two struct types."},
    {"extract", extract, METH_VARARGS,
     "extract(events, phase_table, names, cats, pids, tids, shapes, frames, offset, out): fill 21 columns in one pass."},
    {"gpu_fields", gpu_fields, METH_VARARGS,
     "gpu_fields(events, rows, on_kernels, out): the copy bytes or kernel launch shape of events[rows], 7 per row."},
    {"innermost", innermost, METH_VARARGS,
     "innermost(lane, t, start, end, parent, ptr, out): per query, the innermost forest node on its lane running at t, or -1; False if malformed."},
    {"nesting_depth", nesting_depth, METH_VARARGS,
     "nesting_depth(ts, dur, lane_ptr, out): per row, how many earlier rows of its lane are still open; False if unsorted."},
    {"coded_unions", coded_unions, METH_VARARGS,
     "coded_unions(ts, end, code, ptr, offsets, starts, ends, counts): per code, the union of its rows' intervals; False if malformed."},
    {"dense_ids", dense_ids, METH_VARARGS,
     "dense_ids(first_rows, first, out, wide): int32 searchsorted(first_rows, first) (int64 or int32) for strictly ascending first rows; False if not."},
    {"parents", parents, METH_VARARGS,
     "parents(depth, out): per row, the last earlier row one level up (int16 depths, int64 rows), or -1."},
    {"subtree_ends", subtree_ends, METH_VARARGS,
     "subtree_ends(parent, out): per node of a preorder forest, one past its last descendant; False if a parent follows its child."},
    {"us_to_ns", us_to_ns, METH_VARARGS,
     "us_to_ns(values, base, ok, clamp_negative): float64 µs -> int64 ns in place, usable flags in ok; negatives clamped."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_columns", "Event structs -> raw columns, one pass.", -1, methods};

PyMODINIT_FUNC PyInit__columns(void) { return PyModule_Create(&module); }
