/* The counter lanes' per-bucket statistics: the compiled twin of counter_lanes.bucket_stats_np.
 *
 * A `lanes` answer reduces every counter (a step function: a value from each change on) to a mean and a max per
 * bucket of the window. The numpy pass costs about 40 array operations whatever the size (0.6 ms a request, most
 * of a small trace's `lanes` answer); here it is one loop per counter and edge: two binary searches in the
 * counter's own changes per edge, the bucket's mean from the prefix integral, its max from the range-maximum
 * table over blocks of MAX_BLOCK changes (whole blocks) and the changes read directly at both ends. Every double
 * is computed as the numpy pass computes it (same operands, same order, no fused multiply-add: setup.py builds it
 * with -ffp-contract=off; a max is exact), so the two agree bit for bit: the tests compare them.
 *
 * Arrays arrive through the buffer protocol (`_buffers.h`; the dtypes named below).
 */
#include "../_buffers.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

#define MAX_BLOCK 16 /* counter_lanes.MAX_BLOCK */

/* First index in [lo, hi) whose key is > x (right) or >= x (left), else hi. */
static int64_t search(const int64_t *key, int64_t lo, int64_t hi, int64_t x, int right) {
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (right ? key[mid] <= x : key[mid] < x) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static double range_max(const double *value, const double *sparse, const int64_t *sparse_ptr, int64_t levels,
                        int64_t lo, int64_t hi) {
    double out = -INFINITY;
    int64_t first_block = (lo + MAX_BLOCK - 1) / MAX_BLOCK, end_block = hi / MAX_BLOCK;
    int64_t head_end = hi, tail_start = hi;
    if (first_block < end_block) {
        int64_t span = end_block - first_block, k = 63 - __builtin_clzll((unsigned long long)span);
        if (k < levels) {
            const double *level = sparse + sparse_ptr[k];
            double a = level[first_block], b = level[end_block - ((int64_t)1 << k)];
            out = a > b ? a : b;
            head_end = first_block * MAX_BLOCK;
            tail_start = end_block * MAX_BLOCK;
        }
    }
    for (int64_t i = lo; i < head_end; i++)
        if (value[i] > out) out = value[i];
    for (int64_t i = tail_start; i < hi; i++)
        if (value[i] > out) out = value[i];
    return out;
}

enum { B_KEY, B_VALUE, B_INTEGRAL, B_PTR, B_SPARSE, B_SPARSE_PTR, B_EDGES, B_MEAN, B_PEAK, N_BUFS };

/* bucket_stats(key, value, integral_ns, ptr, sparse, sparse_ptr, edges_ns, stride, mean_out, peak_out) -> None
 * int64: key (ascending; counter k's changes at [ptr[k], ptr[k+1]), keyed k * stride + t), ptr (counters + 1),
 * sparse_ptr (levels + 1), edges_ns (buckets + 1, ascending, from the index's base); float64: value, integral_ns,
 * sparse, mean_out and peak_out (counters x buckets, row-major). */
static PyObject *bucket_stats(PyObject *self, PyObject *args) {
    PyObject *objs[N_BUFS];
    long long stride;
    Buf b[N_BUFS];
    memset(b, 0, sizeof b);
    if (!PyArg_ParseTuple(args, "OOOOOOOLOO", &objs[B_KEY], &objs[B_VALUE], &objs[B_INTEGRAL], &objs[B_PTR],
                          &objs[B_SPARSE], &objs[B_SPARSE_PTR], &objs[B_EDGES], &stride, &objs[B_MEAN], &objs[B_PEAK]))
        return NULL;
    static const char *names[N_BUFS] = {"key", "value", "integral_ns", "ptr", "sparse", "sparse_ptr", "edges_ns",
                                        "mean_out", "peak_out"};
    for (int i = 0; i < N_BUFS; i++)
        if (get_buffer(objs[i], &b[i], 8, i == B_MEAN || i == B_PEAK, 0, "counter stats", names[i]) < 0) goto fail;
    const int64_t *key = b[B_KEY].view.buf, *ptr = b[B_PTR].view.buf, *sparse_ptr = b[B_SPARSE_PTR].view.buf,
                  *edges = b[B_EDGES].view.buf;
    const double *value = b[B_VALUE].view.buf, *integral = b[B_INTEGRAL].view.buf, *sparse = b[B_SPARSE].view.buf;
    double *mean = b[B_MEAN].view.buf, *peak = b[B_PEAK].view.buf;
    Py_ssize_t n_keys = b[B_KEY].view.len / 8, counters = b[B_PTR].view.len / 8 - 1, n_edges = b[B_EDGES].view.len / 8;
    Py_ssize_t levels = b[B_SPARSE_PTR].view.len / 8 - 1, buckets = n_edges - 1;
    if (counters < 0 || buckets < 1 || stride < 1 || b[B_VALUE].view.len / 8 != n_keys ||
        b[B_INTEGRAL].view.len / 8 != n_keys || b[B_MEAN].view.len / 8 != counters * buckets ||
        b[B_PEAK].view.len / 8 != counters * buckets || levels < 1) {
        PyErr_SetString(PyExc_ValueError, "counter stats: inconsistent lengths");
        goto fail;
    }
    /* the table's level k holds a max for each run of 2^k blocks: every read of range_max stays inside it */
    int64_t n_blocks = (n_keys + MAX_BLOCK - 1) / MAX_BLOCK;
    for (Py_ssize_t k = 0; k < levels; k++) {
        int64_t size = sparse_ptr[k + 1] - sparse_ptr[k];
        if (sparse_ptr[k] < 0 || size < 0 || sparse_ptr[k + 1] > b[B_SPARSE].view.len / 8 ||
            (k < 62 && ((int64_t)1 << k) <= n_blocks && size < n_blocks - ((int64_t)1 << k) + 1)) {
            PyErr_SetString(PyExc_ValueError, "counter stats: the range-maximum table does not fit the values");
            goto fail;
        }
    }
    for (Py_ssize_t k = 0; k <= counters; k++) {
        if (ptr[k] < 0 || ptr[k] > n_keys || (k > 0 && ptr[k] < ptr[k - 1])) {
            PyErr_SetString(PyExc_ValueError, "counter stats: ptr out of range");
            goto fail;
        }
    }
    for (Py_ssize_t e = 1; e < n_edges; e++) {
        if (edges[e] < edges[e - 1]) {
            PyErr_SetString(PyExc_ValueError, "counter stats: edges not ascending");
            goto fail;
        }
    }

    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < counters; k++) {
        int64_t first = ptr[k], last = ptr[k + 1], offset = (int64_t)k * stride;
        double prev_area = 0.0, prev_level = 0.0;
        int64_t prev_lo = first;
        for (Py_ssize_t e = 0; e < n_edges; e++) {
            int64_t clipped = edges[e] < -1 ? -1 : (edges[e] > stride - 1 ? stride - 1 : edges[e]);
            /* q - key wraps as numpy's int64 arithmetic does (never for the windows a view asks) */
            int64_t searched = offset + clipped, q = (int64_t)((uint64_t)offset + (uint64_t)edges[e]);
            int64_t j = search(key, first, last, searched, 1) - 1; /* the last change at or before the edge */
            int valid = j >= first;
            double level = valid ? value[j] : 0.0;
            double area = valid ? integral[j] + value[j] * (double)(int64_t)((uint64_t)q - (uint64_t)key[j]) : 0.0;
            if (e > 0) {
                int64_t width = edges[e] - edges[e - 1];
                Py_ssize_t at = k * buckets + (e - 1);
                mean[at] = (area - prev_area) / (double)(width > 1 ? width : 1);
                int64_t hi = search(key, first, last, searched, 0); /* the first change at or after the bucket's end */
                double top = range_max(value, sparse, sparse_ptr, levels, prev_lo, hi > prev_lo ? hi : prev_lo);
                peak[at] = prev_level > top ? prev_level : top;
            }
            prev_area = area;
            prev_level = level;
            prev_lo = j + 1;
        }
    }
    Py_END_ALLOW_THREADS
    release_buffers(b, N_BUFS);
    Py_RETURN_NONE;
fail:
    release_buffers(b, N_BUFS);
    return NULL;
}

static PyMethodDef methods[] = {
    {"bucket_stats", bucket_stats, METH_VARARGS, "Each counter's mean and max per bucket (see the file's comment)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_counters", NULL, -1, methods};

PyMODINIT_FUNC PyInit__counters(void) { return PyModule_Create(&module); }
