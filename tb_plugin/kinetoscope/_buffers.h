/* Arrays handed to Kinetoscope's small C passes (analysis/whatif/_replay.c, views/_counters.c) through the buffer protocol:
 * C-contiguous, outputs preallocated by the caller, so those files need no numpy headers. One held view per argument,
 * all released at once on every exit. */
#ifndef KINETOSCOPE_BUFFERS_H
#define KINETOSCOPE_BUFFERS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

typedef struct {
    Py_buffer view;
    int held;
} Buf;

/* Holds obj's buffer in b (writable if asked); a ValueError "<pass>: <what> has the wrong item size or length" when
 * its items are not `itemsize` bytes or fewer than min_len of them. */
static int get_buffer(PyObject *obj, Buf *b, Py_ssize_t itemsize, int writable, Py_ssize_t min_len, const char *pass,
                      const char *what) {
    if (PyObject_GetBuffer(obj, &b->view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    b->held = 1;
    if (b->view.itemsize != itemsize || b->view.len / itemsize < min_len) {
        PyErr_Format(PyExc_ValueError, "%s: %s has the wrong item size or length", pass, what);
        return -1;
    }
    return 0;
}

static void release_buffers(Buf *bufs, int n) {
    for (int i = 0; i < n; i++)
        if (bufs[i].held) PyBuffer_Release(&bufs[i].view);
}

#endif
