/* The what-if replay's sequential core: the accelerated twin of whatif._replay_py.
 *
 * The replay walks the device activities segment by segment (a segment: what was launched between two
 * blocking syncs of the main thread), each stream continuing from its last end:
 *
 *     end[k] = max(ready[k] + offset, end[previous on the stream] + gap[k]) + dur[k]
 *
 * and after each segment settles the sync that closes it: the sync ends when the work it waited for ends
 * (plus its return latency), or after its own length if it did not wait, and every later host time moves by
 * what that changed (`offset`). In numpy that is one call per segment and per operation, and a trace has
 * thousands of syncs; here it is one pass. Device times are int64 ns, the sync arithmetic float64, rounded
 * to nearest-even where an offset meets the device, exactly as the reference does: the tests compare both on
 * every trace they replay.
 *
 * Arrays arrive through the buffer protocol (`_buffers.h`; the dtypes named below).
 */
#include "../../_buffers.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

enum { B_ORDER, B_SEG_BOUNDS, B_LANE, B_READY, B_GAP, B_DUR, B_JOINED, B_JOINED_BOUNDS, B_SYNC_START, B_SYNC_END,
       B_WAITED, B_OWN, B_TAIL, B_FACTOR, B_END, B_OFFSETS, B_CARRY, N_BUFS };

/* replay(order, seg_bounds, lane, ready, gap, dur, joined, joined_bounds, sync_start, sync_end, waited, own, tail,
 *        factor_or_None, end_out, offsets_out, carry) -> None
 * int64: order, seg_bounds, lane, ready, gap, dur, joined, joined_bounds, end_out, carry (each lane's last end,
 * set to the caller's "never" before the call); float64: sync_start, sync_end, own, tail, factor, offsets_out;
 * uint8 (bool): waited. */
static PyObject *replay(PyObject *self, PyObject *args) {
    PyObject *objs[N_BUFS];
    Buf b[N_BUFS];
    memset(b, 0, sizeof b);
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5],
                          &objs[6], &objs[7], &objs[8], &objs[9], &objs[10], &objs[11], &objs[12], &objs[13], &objs[14],
                          &objs[15], &objs[16]))
        return NULL;
    Py_ssize_t n, syncs, lanes, n_joined;
    if (get_buffer(objs[B_ORDER], &b[B_ORDER], 8, 0, 0, "replay", "order") < 0) goto fail;
    n = b[B_ORDER].view.len / 8;
    if (get_buffer(objs[B_SYNC_START], &b[B_SYNC_START], 8, 0, 0, "replay", "sync_start") < 0) goto fail;
    syncs = b[B_SYNC_START].view.len / 8;
    if (get_buffer(objs[B_CARRY], &b[B_CARRY], 8, 1, 0, "replay", "carry") < 0) goto fail;
    lanes = b[B_CARRY].view.len / 8;
    if (get_buffer(objs[B_SEG_BOUNDS], &b[B_SEG_BOUNDS], 8, 0, syncs + 2, "replay", "seg_bounds") < 0 ||
        get_buffer(objs[B_LANE], &b[B_LANE], 8, 0, n, "replay", "lane") < 0 ||
        get_buffer(objs[B_READY], &b[B_READY], 8, 0, n, "replay", "ready") < 0 ||
        get_buffer(objs[B_GAP], &b[B_GAP], 8, 0, n, "replay", "gap") < 0 ||
        get_buffer(objs[B_DUR], &b[B_DUR], 8, 0, n, "replay", "dur") < 0 ||
        get_buffer(objs[B_JOINED], &b[B_JOINED], 8, 0, 0, "replay", "joined") < 0 ||
        get_buffer(objs[B_JOINED_BOUNDS], &b[B_JOINED_BOUNDS], 8, 0, syncs + 2, "replay", "joined_bounds") < 0 ||
        get_buffer(objs[B_SYNC_END], &b[B_SYNC_END], 8, 0, syncs, "replay", "sync_end") < 0 ||
        get_buffer(objs[B_WAITED], &b[B_WAITED], 1, 0, syncs, "replay", "waited") < 0 ||
        get_buffer(objs[B_OWN], &b[B_OWN], 8, 0, syncs, "replay", "own") < 0 ||
        get_buffer(objs[B_TAIL], &b[B_TAIL], 8, 0, syncs, "replay", "tail") < 0 ||
        (objs[B_FACTOR] != Py_None && get_buffer(objs[B_FACTOR], &b[B_FACTOR], 8, 0, syncs, "replay", "factor") < 0) ||
        get_buffer(objs[B_END], &b[B_END], 8, 1, n, "replay", "end") < 0 ||
        get_buffer(objs[B_OFFSETS], &b[B_OFFSETS], 8, 1, syncs + 1, "replay", "offsets") < 0)
        goto fail;

    const int64_t *order = b[B_ORDER].view.buf, *seg_bounds = b[B_SEG_BOUNDS].view.buf, *lane = b[B_LANE].view.buf;
    const int64_t *ready = b[B_READY].view.buf, *gap = b[B_GAP].view.buf, *dur = b[B_DUR].view.buf;
    const int64_t *joined = b[B_JOINED].view.buf, *joined_bounds = b[B_JOINED_BOUNDS].view.buf;
    const double *sync_start = b[B_SYNC_START].view.buf, *sync_end = b[B_SYNC_END].view.buf;
    const uint8_t *waited = b[B_WAITED].view.buf;
    const double *own = b[B_OWN].view.buf, *tail = b[B_TAIL].view.buf;
    const double *factor = objs[B_FACTOR] != Py_None ? b[B_FACTOR].view.buf : NULL;
    int64_t *end = b[B_END].view.buf, *carry = b[B_CARRY].view.buf;
    double *offsets = b[B_OFFSETS].view.buf;

    n_joined = b[B_JOINED].view.len / 8;
    /* every index is checked once, here, so the loop below cannot read or write out of bounds */
    for (Py_ssize_t j = 0; j < syncs + 2; j++) {
        if (seg_bounds[j] < 0 || seg_bounds[j] > n || (j && seg_bounds[j] < seg_bounds[j - 1]) ||
            joined_bounds[j] < 0 || joined_bounds[j] > n_joined || (j && joined_bounds[j] < joined_bounds[j - 1])) {
            PyErr_SetString(PyExc_ValueError, "replay: bounds out of range");
            goto fail;
        }
    }
    for (Py_ssize_t p = 0; p < n; p++) {
        if (order[p] < 0 || order[p] >= n || lane[p] < 0 || lane[p] >= lanes) {
            PyErr_SetString(PyExc_ValueError, "replay: index out of range");
            goto fail;
        }
    }
    for (Py_ssize_t p = 0; p < n_joined; p++) {
        if (joined[p] < 0 || joined[p] >= n) {
            PyErr_SetString(PyExc_ValueError, "replay: index out of range");
            goto fail;
        }
    }

    int overflow = 0;  /* a time past int64 ns (a trace spanning centuries): refused, never wrapped */
    Py_BEGIN_ALLOW_THREADS
    double offset = 0.0, completion = -INFINITY;
    for (Py_ssize_t j = 0; j <= syncs && !overflow; j++) {
        double rounded = nearbyint(offset);
        if (!(rounded > -9.2e18 && rounded < 9.2e18)) {
            overflow = 1;
            break;
        }
        int64_t shift = (int64_t)rounded;
        for (int64_t p = seg_bounds[j]; p < seg_bounds[j + 1]; p++) {
            int64_t r = order[p], l = lane[r], a, after, e;
            if (__builtin_add_overflow(ready[r], shift, &a) || __builtin_add_overflow(carry[l], gap[r], &after) ||
                __builtin_add_overflow(a > after ? a : after, dur[r], &e)) {
                overflow = 1;
                break;
            }
            end[r] = e;
            carry[l] = e;
        }
        if (overflow) break;
        offsets[j] = offset;
        if (j == syncs) break;
        for (int64_t q = joined_bounds[j]; q < joined_bounds[j + 1]; q++) {
            double e = (double)end[joined[q]];
            if (e > completion) completion = e;
        }
        double begin = sync_start[j] + offset, finish;
        if (waited[j]) {
            double t = completion + tail[j];
            finish = begin > t ? begin : t;
        } else {
            double t = begin + own[j];
            finish = t > completion ? t : completion;
        }
        if (factor) finish = begin + factor[j] * (finish - begin);
        offset = finish - sync_end[j];
    }
    Py_END_ALLOW_THREADS
    release_buffers(b, N_BUFS);
    if (overflow) {
        PyErr_SetString(PyExc_OverflowError, "replay: a replayed time passes int64 ns");
        return NULL;
    }
    Py_RETURN_NONE;
fail:
    release_buffers(b, N_BUFS);
    return NULL;
}

static PyMethodDef methods[] = {
    {"replay", replay, METH_VARARGS, "The what-if replay's sequential pass (see the file's comment)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_replay", NULL, -1, methods};

PyMODINIT_FUNC PyInit__replay(void) { return PyModule_Create(&module); }
