/* JSON text of a middle piece of `traceEvents` -> the raw columns of `_columns.c extract`, with no Python object
 * per event (issue 29).
 *
 * Today's path decodes a piece into msgspec structs, reads a dozen fields of each into columns (`_columns.c`) and
 * frees the structs: most of a load's time. This pass reads the bytes once and writes the same columns, interning
 * strings into tables local to the piece (keys in first-seen order, each with the row of its first occurrence), so
 * the caller merges them into the file's tables exactly as `ColumnBuilder.absorb` does for a worker's piece.
 *
 * It reads only the common shapes Kineto and the 2021 profiler write, exactly as the typed decode would, and
 * gives up on the whole piece (returns None) at anything else: an escape in a string it keeps or in a key, a
 * surrogate escape, invalid UTF-8, a control character in a string, a type the schema rejects, a duplicate known
 * key, an integer of more than 18 digits, a float it cannot convert exactly in one operation where the C library
 * cannot round it either (`exact_double`), a number of more than 64 characters or a 3-digit exponent, nesting deeper than MAX_DEPTH, a truncated or malformed piece. The
 * caller then decodes the piece the usual way, so every such case keeps today's behaviour.
 *
 * In a file with exact 16-digit times (`exact_times.needs_exact_times`) the caller passes the rebase its first piece set, and
 * ts and dur are read from their text as `decode._exact_events` reads them (`read_exact_time`); other spellings give up.
 *
 * The few events a consumer reads as structs (metadata events, flow events whose id is not an integer, events
 * carrying a collective arg, the validator's args on the events validator_args reads, a GPU arg this pass does not
 * convert exactly) are reported by their byte range, for the caller to decode with msgspec. The GPU activity fields
 * of gpu_args.py (copy bytes, launch shape) are read here, as `_columns.c gpu_fields` reads them from structs.
 * The parse runs without the GIL and touches no Python object; only the results are built with it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__) || defined(__APPLE__)
#include <locale.h>
#if defined(__APPLE__)
#include <xlocale.h>
#endif
#define HAVE_STRTOD_L 1
#endif
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "_kineto_time.h"

#define MAX_DEPTH 64          /* nested arrays/objects inside an event: far beyond any writer's args */
#define MAX_NUMBER_CHARS 64   /* a longer number is left to msgspec */
#define MAX_INT_DIGITS 18     /* |v| < 10^18 < 2^62: exact in int64 and a plain flow id */
#define MAX_PROBES 512        /* slots one lookup may visit: at half load, runs this long only come from collisions */
#define ID_OTHER INT64_MIN
#define ROWS_GUESS_BYTES 128  /* bytes per event the columns are first sized for: Kineto's shortest are about that */
#define BACKWARD_PREFIX "autograd::engine::evaluate_function:"  /* validator_args.BACKWARD_PREFIX */
#define BACKWARD_LEN 36

enum { T_NAME, T_CAT, T_PID, T_TID, T_SHAPE, T_FRAME, N_TABLES };
enum { O_PH, O_NAME, O_CAT, O_PID, O_TID, O_TS, O_DUR, O_CORRELATION, O_EXTERNAL_ID, O_DEVICE, O_STREAM, O_ID,
       O_DEVICE_TYPE, O_DEVICE_ID, O_BYTES, O_TOTAL_ALLOCATED, O_TOTAL_RESERVED, O_ADDR, O_EV_IDX, O_SHAPE, O_FRAME,
       N_OUT };
enum { K_STR, K_INT, K_BYTES };
/* The GPU activity fields, in gpu_args.FIELDS order: copy bytes, then the kernel launch shape (grid and block raw). */
enum { G_BYTES, G_GRID, G_BLOCK, G_REGISTERS, G_SHARED_MEM, G_BLOCKS_PER_SM, G_OCCUPANCY, N_GPU };
#define GPU_LIMIT 4611686018427387904.0  /* 2^62: none of the GPU fields is that large */
#define ASK_PYTHON (-2.0)                /* a value read from the event's struct instead (gpu_args.ASK_PYTHON) */  /* what a table key becomes: str, int or bytes */

typedef struct {
    uint64_t hash;
    const char *text;  /* into the piece (str, bytes) */
    int64_t value;     /* K_INT: the int; else the text's length */
    int kind;
    int64_t id;        /* dense id, first-seen order */
} Entry;

typedef struct {
    Entry *slots;      /* open addressing; id < 0: empty */
    size_t cap, count;
    Entry *order;      /* entries by id */
    int64_t *first;    /* first row by id */
    size_t order_cap;
    int oom;           /* an allocation failed (else a failed intern met too long a probe run) */
    int owned;         /* the texts are copies this table owns (keys composed in a scratch buffer) */
} Table;

typedef struct {
    const unsigned char *p, *end, *base;
    int64_t n, cap;
    void *col[N_OUT];
    Table tables[N_TABLES];
    int64_t *special;  /* (start, end, row) triples */
    int64_t n_special, special_cap;
    int64_t *gpu;      /* (row, N_GPU float64 fields) of the events with any GPU activity field */
    int64_t n_gpu, gpu_cap;
    char *scratch;     /* an op's inputs key being composed (`inputs_id`) */
    size_t scratch_cap;
    int64_t limit;     /* the most events the caller takes */
    int exact;         /* a file with exact 16-digit times: ts and dur read as decode._exact_events reads them */
    long long rebase;  /* with `exact`: the ns its times are rebased by */
    int oom;
} Scan;

static const double POW10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Eight bytes at a time: interned texts (names, shapes, stack frames) are tens of bytes; an op's inputs key (its
 * dims, types, strides and concrete inputs, hundreds of bytes) 32 at a time in four independent lanes first, so the
 * multiplications overlap instead of waiting on each other. */
static uint64_t hash_bytes(const char *text, size_t len, int kind) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)len << 8) ^ (uint64_t)kind, word;
    if (len >= 64) {
        uint64_t lane[4] = {h, h ^ 0x243F6A8885A308D3ULL, h ^ 0x13198A2E03707344ULL, h ^ 0xA4093822299F31D0ULL};
        for (; len >= 32; text += 32, len -= 32) {
            for (int k = 0; k < 4; k++) {
                memcpy(&word, text + 8 * k, 8);
                lane[k] = (lane[k] ^ word) * 0xff51afd7ed558ccdULL;
                lane[k] ^= lane[k] >> 32;
            }
        }
        for (int k = 0; k < 4; k++) h = (h ^ lane[k]) * 0xc4ceb9fe1a85ec53ULL, h ^= h >> 29;
    }
    for (; len >= 8; text += 8, len -= 8) {
        memcpy(&word, text, 8);
        h = (h ^ word) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    word = 0;
    memcpy(&word, text, len);
    h = (h ^ word) * 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 29);
}

static uint64_t hash_int(int64_t v) {
    uint64_t h = (uint64_t)v * 0x9E3779B97F4A7C15ULL;
    return h ^ (h >> 31) ^ 0x5bd1e995ULL;
}

static int table_grow(Table *t) {
    size_t cap = t->cap ? t->cap * 2 : 64;
    Entry *slots = malloc(cap * sizeof(Entry));
    if (slots == NULL) return -1;
    for (size_t i = 0; i < cap; i++) slots[i].id = -1;
    for (size_t i = 0; i < t->cap; i++) {
        if (t->slots[i].id < 0) continue;
        size_t j = t->slots[i].hash & (cap - 1);
        while (slots[j].id >= 0) j = (j + 1) & (cap - 1);
        slots[j] = t->slots[i];
    }
    free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return 0;
}

/* The dense id of a key (text/len, or an int), adding it with first row `row` when new; -1 when out of memory
 * (t->oom set) or when its probe run passes MAX_PROBES: keys made to collide (a hostile file) cost the piece the
 * scan, never quadratic time; the typed decode interns them in Python's dicts. */
static int64_t intern(Table *t, int kind, const char *text, int64_t value, int64_t row) {
    if (2 * (t->count + 1) > t->cap && table_grow(t) < 0) return t->oom = 1, -1;
    uint64_t h = kind == K_INT ? hash_int(value) : hash_bytes(text, (size_t)value, kind);
    size_t j = h & (t->cap - 1);
    for (int probes = 0;; j = (j + 1) & (t->cap - 1)) {
        Entry *e = &t->slots[j];
        if (e->id < 0) break;
        if (++probes > MAX_PROBES) return -1;
        if (e->hash == h && e->kind == kind && e->value == value &&
            (kind == K_INT || memcmp(e->text, text, (size_t)value) == 0))
            return e->id;
    }
    if (t->count == t->order_cap) {
        size_t cap = t->order_cap ? t->order_cap * 2 : 64;
        Entry *order = realloc(t->order, cap * sizeof(Entry));
        if (order == NULL) return t->oom = 1, -1;
        t->order = order;
        int64_t *first = realloc(t->first, cap * sizeof(int64_t));
        if (first == NULL) return t->oom = 1, -1;
        t->first = first;
        t->order_cap = cap;
    }
    if (t->owned && kind != K_INT) {
        char *copy = malloc(value > 0 ? (size_t)value : 1);
        if (copy == NULL) return t->oom = 1, -1;
        memcpy(copy, text, (size_t)value);
        text = copy;
    }
    Entry e = {h, text, value, kind, (int64_t)t->count};
    t->slots[j] = e;
    t->order[t->count] = e;
    t->first[t->count] = row;
    t->count++;
    return e.id;
}

#define COLUMN_BYTES(k) ((k) == O_PH ? 1 : 8)

static int reserve_columns(Scan *s, int64_t cap) {
    for (int k = 0; k < N_OUT; k++) {
        void *col = realloc(s->col[k], (size_t)cap * COLUMN_BYTES(k));
        if (col == NULL) return -1;
        s->col[k] = col;
    }
    s->cap = cap;
    return 0;
}

static int grow_columns(Scan *s) {
    return reserve_columns(s, s->cap ? s->cap + s->cap / 2 : 4096);  /* 1.5x: copied out once more at the end */
}

#define WS(c) ((c) == ' ' || (c) == '\t' || (c) == '\n' || (c) == '\r')
static inline void skip_ws(Scan *s) {
    while (s->p < s->end && WS(*s->p)) s->p++;
}

static inline int hexval(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Past a UTF-8 sequence starting at p (a byte >= 0x80) as Python's strict decoder accepts it; NULL if invalid. */
static const unsigned char *utf8_next(const unsigned char *p, const unsigned char *end) {
    unsigned char c = *p;
    int n;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) n = 1;
    else if (c == 0xE0) n = 2, lo = 0xA0;
    else if (c == 0xED) n = 2, hi = 0x9F;  /* no encoded surrogates */
    else if (c >= 0xE1 && c <= 0xEF) n = 2;
    else if (c == 0xF0) n = 3, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) n = 3;
    else if (c == 0xF4) n = 3, hi = 0x8F;
    else return NULL;
    if (end - p <= n) return NULL;
    if (p[1] < lo || p[1] > hi) return NULL;
    for (int k = 2; k <= n; k++)
        if (p[k] < 0x80 || p[k] > 0xBF) return NULL;
    return p + n + 1;
}

/* A string at s->p (its opening quote): its content in [*start, *start + *len); 0, or -1 to give up.
 * `escapes`: whether escapes are allowed (a value nobody keeps); a kept string or a key must have none. */
static int read_string(Scan *s, const char **start, int64_t *len, int escapes) {
    const unsigned char *p = s->p + 1, *end = s->end;
    const unsigned char *first = p;
    while (1) {
#ifdef __SSE2__
        const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
        while (end - p >= 16) {  /* 16 bytes at a time: a quote, a backslash, a control byte or a byte >= 0x80 */
            __m128i v = _mm_loadu_si128((const __m128i *)p);
            __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                                        _mm_cmplt_epi8(v, space));  /* signed: bytes >= 0x80 are below 0x20 too */
            int mask = _mm_movemask_epi8(stop);
            if (mask) {
                p += __builtin_ctz((unsigned)mask);
                break;
            }
            p += 16;
        }
#endif
        while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\') p++;
        if (p >= end) return -1;
        unsigned char c = *p;
        if (c == '"') break;
        if (c < 0x20) return -1;
        if (c == '\\') {
            if (!escapes || end - p < 2) return -1;
            unsigned char e = p[1];
            if (e == 'u') {
                if (end - p < 6) return -1;
                int v = 0;
                for (int k = 2; k < 6; k++) {
                    int h = hexval(p[k]);
                    if (h < 0) return -1;
                    v = v * 16 + h;
                }
                if (v >= 0xD800 && v <= 0xDFFF) return -1;
                p += 6;
            } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
                p += 2;
            } else {
                return -1;
            }
            continue;
        }
        p = utf8_next(p, end);
        if (p == NULL) return -1;
    }
    *start = (const char *)first;
    *len = p - first;
    s->p = p + 1;
    return 0;
}

typedef struct {
    int is_int;
    int64_t i;
    double d;
} Number;

#ifdef HAVE_STRTOD_L
static locale_t c_numeric;  /* "C" numbers whatever the process's locale; set at import */
#endif

/* The double nearest the decimal text [p, p + len) (JSON's grammar, checked by the caller), rounded as msgspec
 * rounds it (both round correctly: the nearest double, ties to even); 0, or -1 where the C library cannot say. For
 * the floats the one-operation conversion cannot take: more than 2^53 in the mantissa (17-digit reprs of
 * Python writers) or a power of ten past 22. */
static int exact_double(const unsigned char *p, size_t len, double *out) {
#ifdef HAVE_STRTOD_L
    char text[MAX_NUMBER_CHARS + 1];
    if (c_numeric == (locale_t)0 || len > MAX_NUMBER_CHARS) return -1;
    memcpy(text, p, len);
    text[len] = '\0';
    char *stop = NULL;
    double v = strtod_l(text, &stop, c_numeric);
    if (stop != text + len) return -1;
    *out = v;
    return 0;
#else
    (void)p, (void)len, (void)out;
    return -1;
#endif
}

/* A number at s->p by JSON's grammar: 0, or -1 to give up (malformed, too long, or not exact in one step).
 * With `out` NULL, a value nobody keeps: any count of digits, within MAX_NUMBER_CHARS. */
static int read_number(Scan *s, Number *out) {
    const unsigned char *p = s->p, *end = s->end, *begin = p;
    int negative = 0;
    if (p < end && *p == '-') negative = 1, p++;
    if (p >= end || *p < '0' || *p > '9') return -1;
    uint64_t mantissa = 0;
    int digits = 0, frac = 0, long_mantissa = 0;  /* past 19 digits: the mantissa is not kept (see `exact_double`) */
    if (*p == '0') {
        p++;
        if (p < end && *p >= '0' && *p <= '9') return -1;  /* no leading zeros */
    } else {
        while (p < end && *p >= '0' && *p <= '9') {
            if (digits >= 19) long_mantissa = 1;
            else mantissa = mantissa * 10 + (uint64_t)(*p - '0');
            p++, digits++;
        }
    }
    int is_int = 1;
    if (p < end && *p == '.') {
        is_int = 0;
        p++;
        if (p >= end || *p < '0' || *p > '9') return -1;
        while (p < end && *p >= '0' && *p <= '9') {
            if (mantissa == 0 && !long_mantissa && *p == '0') {
                frac++, p++;  /* leading zeros of the fraction do not count against the digits */
                continue;
            }
            if (digits >= 19) long_mantissa = 1;
            else mantissa = mantissa * 10 + (uint64_t)(*p - '0'), frac++;
            p++, digits++;
        }
    }
    int exponent = 0;
    if (p < end && (*p == 'e' || *p == 'E')) {
        is_int = 0;
        p++;
        int exp_negative = 0;
        if (p < end && (*p == '+' || *p == '-')) exp_negative = *p++ == '-';
        if (p >= end || *p < '0' || *p > '9') return -1;
        int exp_digits = 0;
        while (p < end && *p >= '0' && *p <= '9') {
            if (++exp_digits > 2) return -1;
            exponent = exponent * 10 + (*p++ - '0');
        }
        if (exp_negative) exponent = -exponent;
    }
    if (p - begin > MAX_NUMBER_CHARS) return -1;
    if (out == NULL) {
        s->p = p;
        return 0;
    }
    out->is_int = is_int;
    if (is_int) {
        if (digits > MAX_INT_DIGITS) return -1;
        out->i = negative ? -(int64_t)mantissa : (int64_t)mantissa;
        out->d = (double)out->i;  /* int -> float as the typed decode converts it (a -0 is the int 0) */
    } else {
        int scale = exponent - frac;
        out->i = 0;
        if (long_mantissa || mantissa > (1ULL << 53) || scale < -22 || scale > 22) {  /* not exact in one operation */
            if (exact_double(begin, (size_t)(p - begin), &out->d) < 0) return -1;
        } else {
            double v = (double)mantissa;
            v = scale >= 0 ? v * POW10[scale] : v / POW10[-scale];
            out->d = negative ? -v : v;
        }
    }
    s->p = p;
    return 0;
}

static int expect_literal(Scan *s, const char *word, size_t len) {
    if ((size_t)(s->end - s->p) < len || memcmp(s->p, word, len) != 0) return -1;
    s->p += len;
    return 0;
}

/* Past any JSON value (validated as above); 0, or -1 to give up. */
static int skip_value(Scan *s, int depth) {
    if (s->p >= s->end) return -1;
    const char *text;
    int64_t len;
    switch (*s->p) {
    case '"':
        return read_string(s, &text, &len, 1);
    case 't':
        return expect_literal(s, "true", 4);
    case 'f':
        return expect_literal(s, "false", 5);
    case 'n':
        return expect_literal(s, "null", 4);
    case '[':
    case '{': {
        if (depth >= MAX_DEPTH) return -1;
        int object = *s->p == '{';
        unsigned char close = object ? '}' : ']';
        s->p++;
        skip_ws(s);
        if (s->p < s->end && *s->p == close) {
            s->p++;
            return 0;
        }
        while (1) {
            if (object) {
                if (s->p >= s->end || *s->p != '"' || read_string(s, &text, &len, 1) < 0) return -1;
                skip_ws(s);
                if (s->p >= s->end || *s->p++ != ':') return -1;
                skip_ws(s);
            }
            if (skip_value(s, depth + 1) < 0) return -1;
            skip_ws(s);
            if (s->p >= s->end) return -1;
            unsigned char c = *s->p++;
            if (c == close) return 0;
            if (c != ',') return -1;
            skip_ws(s);
        }
    }
    default:
        return read_number(s, NULL);
    }
}

/* The fields of `args` that the columns or the consumers read. */
enum { A_EXTERNAL_ID, A_EXTERNAL_ID_2021, A_CORRELATION, A_DEVICE, A_STREAM, A_EV_IDX, A_EV_IDX_LEGACY,  /* int */
       A_DEVICE_TYPE, A_DEVICE_ID, A_BYTES, A_TOTAL_ALLOCATED, A_TOTAL_RESERVED, A_ADDR,               /* float */
       A_NAME, A_LABELS,                                                                                /* str or null */
       A_INPUT_DIMS, A_CALL_STACK, A_INPUT_TYPE, A_INPUT_STRIDES, A_CONCRETE,                           /* raw, kept */
       A_COLLECTIVE, A_GPU = A_COLLECTIVE + 12, A_WAIT_CORR = A_GPU + N_GPU, A_SEQ_NUMBER, N_ARGS };
static const char *const ARG_KEYS[N_ARGS] = {
    "External id", "external id", "correlation", "device", "stream", "Ev Idx", "Profiler Event Index",
    "Device Type", "Device Id", "Bytes", "Total Allocated", "Total Reserved", "Addr", "name", "labels",
    "Input Dims", "Call stack", "Input type", "Input Strides", "Concrete Inputs",
    "Seq", "Process Group Name", "Collective name", "In msg nelems", "Out msg nelems", "Group size", "dtype",
    "Process Group Description", "Process Group Ranks", "Comms Id", "Src Rank", "Dst Rank",
    "bytes", "grid", "block", "registers per thread", "shared memory", "blocks per SM", "est. achieved occupancy %",
    "wait_on_cuda_event_record_corr_id", "Sequence number"};

#define MAX_KEY_LEN 40
#define MAX_SAME_LEN 8
typedef struct {
    signed char index[MAX_KEY_LEN + 1][MAX_SAME_LEN];  /* by length: the keys of that length, -1 after the last */
    const char *const *keys;
} KeySet;
static KeySet arg_keys, event_keys;

static void keyset_init(KeySet *set, const char *const *keys, int count) {
    memset(set->index, -1, sizeof set->index);
    set->keys = keys;
    for (int k = 0; k < count; k++) {
        size_t len = strlen(keys[k]);
        for (int j = 0; j < MAX_SAME_LEN; j++)
            if (set->index[len][j] < 0) {
                set->index[len][j] = (signed char)k;
                break;
            }
    }
}

static inline int find_key(const KeySet *set, const char *text, int64_t len) {
    if (len > MAX_KEY_LEN) return -1;
    const signed char *candidates = set->index[len];
    for (int j = 0; j < MAX_SAME_LEN && candidates[j] >= 0; j++) {
        const char *key = set->keys[candidates[j]];
        if (key[0] == text[0] && memcmp(key, text, (size_t)len) == 0) return candidates[j];
    }
    return -1;
}

/* One member's key at the cursor (`"key"`, then `:`), looked up in `set`: in *k its index, or -1 when it is not
 * one of them; the cursor past the colon. 0, or -1 on anything but a plain string key and a colon. */
static int read_member_key(Scan *s, const KeySet *set, int *k) {
    const char *key;
    int64_t key_len;
    if (s->p >= s->end || *s->p != '"' || read_string(s, &key, &key_len, 0) < 0) return -1;
    skip_ws(s);
    if (s->p >= s->end || *s->p++ != ':') return -1;
    skip_ws(s);
    *k = find_key(set, key, key_len);
    return 0;
}

#define N_RAW 5
enum { E_PH, E_NAME, E_CAT, E_PID, E_TID, E_TS, E_DUR, E_ID, E_ARGS, N_EVENT_KEYS };
static const char *const EVENT_KEYS[N_EVENT_KEYS] = {"ph", "name", "cat", "pid", "tid", "ts", "dur", "id", "args"};

typedef struct {
    int64_t ints[7];
    double floats[6];
    const char *raw[N_RAW];  /* Input Dims, Call stack, Input type, Input Strides, Concrete Inputs */
    int64_t raw_len[N_RAW];
    double gpu[N_GPU];
    int collective, wait_corr, seq_number, ask;  /* which args the consumers read from a struct are present */
    int has_gpu;
} ArgValues;

/* A GPU count, size or share as `_columns.c gpu_number` reads the decoded value: a number in [0, 2^62), else NaN;
 * ASK_PYTHON for a number this pass does not convert exactly. Past the value at s->p; 0, or -1 to give up. */
static int read_gpu_number(Scan *s, double *out) {
    unsigned char c = s->p < s->end ? *s->p : 0;
    if (c != '-' && (c < '0' || c > '9')) {
        *out = Py_NAN;
        return skip_value(s, 1);
    }
    const unsigned char *start = s->p;
    Number number;
    if (read_number(s, &number) < 0) {
        s->p = start;
        *out = ASK_PYTHON;
        return read_number(s, NULL);
    }
    *out = number.d >= 0 && number.d < GPU_LIMIT ? number.d : Py_NAN;
    return 0;
}

/* x*y*z of a raw grid or block as `_columns.c gpu_product` reads it: `[x, y, z]` of plain digit runs (NaN when one
 * breaks the rules), NaN when absent or null, ASK_PYTHON for any other spelling. */
static double gpu_product(const unsigned char *p, const unsigned char *end) {
    if (p == NULL) return Py_NAN;
    if (end - p == 4 && memcmp(p, "null", 4) == 0) return Py_NAN;
    if (p == end || *p++ != '[') return ASK_PYTHON;
    double dims[3];
    for (int k = 0; k < 3; k++) {
        while (p < end && WS(*p)) p++;
        int digits = 0;
        long long v = 0;
        while (p < end && *p >= '0' && *p <= '9' && digits < 18) v = v * 10 + (*p++ - '0'), digits++;
        if (digits == 0 || digits > 18 || (p < end && (*p == '.' || *p == 'e' || *p == 'E' || (*p >= '0' && *p <= '9'))))
            return ASK_PYTHON;
        dims[k] = (double)v;
        while (p < end && WS(*p)) p++;
        if (p == end || *p++ != (k < 2 ? ',' : ']')) return ASK_PYTHON;
    }
    if (p != end) return ASK_PYTHON;
    double product = 1.0;
    for (int k = 0; k < 3; k++) {
        if (!(dims[k] >= 1 && dims[k] < GPU_LIMIT)) return Py_NAN;
        product *= dims[k];
    }
    return product < GPU_LIMIT ? product : Py_NAN;
}

/* What an absent `args` (or an absent arg) reads as. */
static void no_args(ArgValues *a) {
    for (int k = 0; k < 7; k++) a->ints[k] = -1;
    for (int k = 0; k < 6; k++) a->floats[k] = Py_NAN;
    for (int k = 0; k < N_RAW; k++) a->raw[k] = NULL, a->raw_len[k] = 0;
    for (int k = 0; k < N_GPU; k++) a->gpu[k] = Py_NAN;
    a->collective = a->wait_corr = a->seq_number = a->ask = a->has_gpu = 0;
}

/* The `args` object at s->p; 0, or -1 to give up. */
static int read_args(Scan *s, ArgValues *a) {
    no_args(a);
    if (s->p >= s->end || *s->p != '{') return -1;
    s->p++;
    skip_ws(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        return 0;
    }
    uint64_t seen = 0;
    while (1) {
        int k;
        if (read_member_key(s, &arg_keys, &k) < 0) return -1;
        if (k >= 0) {
            if (seen & (1ULL << k)) return -1;  /* a duplicate known key */
            seen |= 1ULL << k;
        }
        Number number;
        if (k < 0) {
            if (skip_value(s, 1) < 0) return -1;
        } else if (k <= A_EV_IDX_LEGACY) {
            if (read_number(s, &number) < 0 || !number.is_int) return -1;
            a->ints[k] = number.i;
        } else if (k <= A_ADDR) {
            if (read_number(s, &number) < 0) return -1;
            a->floats[k - A_DEVICE_TYPE] = number.d;
        } else if (k <= A_LABELS) {
            const char *text;
            int64_t len;
            if (s->p < s->end && *s->p == '"') {
                if (read_string(s, &text, &len, 1) < 0) return -1;
            } else if (expect_literal(s, "null", 4) < 0) {
                return -1;
            }
        } else if (k >= A_GPU && k < A_GPU + N_GPU && k != A_GPU + G_GRID && k != A_GPU + G_BLOCK) {
            if (read_gpu_number(s, &a->gpu[k - A_GPU]) < 0) return -1;
            a->has_gpu = 1;
            a->ask |= a->gpu[k - A_GPU] == ASK_PYTHON;
        } else {
            const unsigned char *start = s->p;
            if (skip_value(s, 1) < 0) return -1;
            if (k <= A_CONCRETE) {
                a->raw[k - A_INPUT_DIMS] = (const char *)start;
                a->raw_len[k - A_INPUT_DIMS] = s->p - start;
            } else if (k < A_GPU) {
                a->collective = 1;
            } else if (k < A_WAIT_CORR) {
                a->gpu[k - A_GPU] = gpu_product(start, s->p);
                a->has_gpu = 1;
                a->ask |= a->gpu[k - A_GPU] == ASK_PYTHON;
            } else {
                *(k == A_WAIT_CORR ? &a->wait_corr : &a->seq_number) = 1;
            }
        }
        skip_ws(s);
        if (s->p >= s->end) return -1;
        unsigned char c = *s->p++;
        if (c == '}') return 0;
        if (c != ',') return -1;
        skip_ws(s);
    }
}

/* A pid or tid (int or str) interned into `t`; 0, or -1 to give up. */
static int read_pid(Scan *s, Table *t, int64_t row, int64_t *id) {
    if (s->p < s->end && *s->p == '"') {
        const char *text;
        int64_t len;
        if (read_string(s, &text, &len, 0) < 0) return -1;
        *id = intern(t, K_STR, text, len, row);
    } else {
        Number number;
        if (read_number(s, &number) < 0 || !number.is_int) return -1;
        *id = intern(t, K_INT, NULL, number.i, row);
    }
    return *id < 0 ? -1 : 0;
}

/* The id of a raw value's text (Input Dims: the text; Call stack: the JSON text of its first frame); -1 when none. */
static int64_t raw_id(Table *t, const char *text, int64_t len, int first_frame, int64_t row, int *failed) {
    if (text == NULL) return -1;
    if (first_frame) {
        if (len >= 2 && text[0] == '"') {
            const char *semi = memchr(text + 1, ';', (size_t)(len - 2));
            len = semi != NULL ? semi - text - 1 : len - 2;
            text += 1;
        } else {
            len = 0;
        }
    } else if (len == 4 && memcmp(text, "null", 4) == 0) {
        len = 0;
    }
    if (len <= 0) return -1;
    int64_t id = intern(t, K_BYTES, text, len, row);
    if (id < 0) *failed = 1;
    return id;
}

/* The id of an op's recorded inputs: the JSON text `[dims, types, strides, concrete]` of its `Input Dims`,
 * `Input type`, `Input Strides` and `Concrete Inputs` (each as the file spells it, `null` when absent), as
 * `extractors.inputs_key` composes it from a struct; -1 when none of them is there (or all are null). */
static int64_t inputs_id(Scan *s, const ArgValues *a, int64_t row, int *failed) {
    static const int parts[4] = {0, 2, 3, 4};
    size_t need = 5;
    int any = 0;
    for (int k = 0; k < 4; k++) {
        const char *text = a->raw[parts[k]];
        int64_t len = a->raw_len[parts[k]];
        int present = text != NULL && len > 0 && !(len == 4 && memcmp(text, "null", 4) == 0);
        any |= present;
        need += present ? (size_t)len : 4;
    }
    if (!any) return -1;
    if (need > s->scratch_cap) {
        size_t cap = need > 2 * s->scratch_cap ? need : 2 * s->scratch_cap;
        char *grown = realloc(s->scratch, cap);
        if (grown == NULL) return s->oom = 1, *failed = 1, -1;
        s->scratch = grown, s->scratch_cap = cap;
    }
    char *at = s->scratch;
    *at++ = '[';
    for (int k = 0; k < 4; k++) {
        const char *text = a->raw[parts[k]];
        int64_t len = a->raw_len[parts[k]];
        if (text == NULL || len <= 0) text = "null", len = 4;
        memcpy(at, text, (size_t)len);
        at += len;
        *at++ = k < 3 ? ',' : ']';
    }
    int64_t id = intern(&s->tables[T_SHAPE], K_BYTES, s->scratch, at - s->scratch, row);
    if (id < 0) *failed = 1;
    return id;
}

/* A time of a file with exact 16-digit times (`exact`) at s->p, as decode._exact_events computes it: Kineto's text as
 * integer ns (`kineto_text_ns`), less the rebase for a start, in µs: (ns - rebase) / 1000, which Python divides as
 * two doubles while both ints are below 2^53, and so does this. 0, or -1 to give up (another spelling, a value
 * past 2^53 ns after the rebase: the typed decode's reference reads it). */
static int read_exact_time(Scan *s, int is_start, double *out) {
    const unsigned char *start = s->p;
    long long ns;
    if (read_number(s, NULL) < 0 || !kineto_text_ns((const char *)start, s->p - start, &ns)) return -1;
    if (is_start) {
        if ((s->rebase > 0 && ns < LLONG_MIN + s->rebase) || (s->rebase < 0 && ns > LLONG_MAX + s->rebase)) return -1;
        ns -= s->rebase;
    }
    if (ns <= -(1LL << 53) || ns >= (1LL << 53)) return -1;
    *out = (double)ns / 1000.0;
    return 0;
}

/* One event object at s->p into row s->n; 0, or -1 to give up. */
static int read_event(Scan *s, const unsigned char *phase_of) {
    if (s->n >= s->limit) return -1;  /* past the caller's budget: the typed decode refuses the file as it does today */
    if (s->n == s->cap && grow_columns(s) < 0) return s->oom = 1, -1;
    const unsigned char *start = s->p;
    int64_t row = s->n;
    if (s->p >= s->end || *s->p != '{') return -1;
    s->p++;
    skip_ws(s);
    const char *ph = "", *name = "", *cat = "";
    int64_t ph_len = 0, name_len = 0, cat_len = 0, pid = -2, tid = -2, flow_id = ID_OTHER;
    double ts = Py_NAN, dur = Py_NAN;
    ArgValues a;
    int have_args = 0;
    unsigned seen = 0;
    if (s->p < s->end && *s->p == '}') {
        s->p++;
    } else {
        while (1) {
            int k;
            if (read_member_key(s, &event_keys, &k) < 0) return -1;
            if (k >= 0) {
                if (seen & (1u << k)) return -1;
                seen |= 1u << k;
            }
            Number number;
            switch (k) {
            case E_PH:
            case E_NAME:
            case E_CAT: {
                const char *text;
                int64_t len;
                if (s->p >= s->end || *s->p != '"' || read_string(s, &text, &len, 0) < 0) return -1;
                if (k == E_PH) ph = text, ph_len = len;
                else if (k == E_NAME) name = text, name_len = len;
                else cat = text, cat_len = len;
                break;
            }
            case E_PID:
            case E_TID:
                if (read_pid(s, &s->tables[k == E_PID ? T_PID : T_TID], row, k == E_PID ? &pid : &tid) < 0) return -1;
                break;
            case E_TS:
            case E_DUR:
                if (s->exact) {
                    if (read_exact_time(s, k == E_TS, k == E_TS ? &ts : &dur) < 0) return -1;
                    break;
                }
                if (read_number(s, &number) < 0) return -1;
                if (k == E_TS) ts = number.d;
                else dur = number.d;
                break;
            case E_ID:
                if (s->p < s->end && *s->p == '"') {
                    const char *text;
                    int64_t len;
                    if (read_string(s, &text, &len, 0) < 0) return -1;
                } else if (s->p < s->end && *s->p == 'n') {
                    if (expect_literal(s, "null", 4) < 0) return -1;
                } else {
                    if (read_number(s, &number) < 0 || !number.is_int) return -1;
                    flow_id = number.i;
                }
                break;
            case E_ARGS:
                if (read_args(s, &a) < 0) return -1;
                have_args = 1;
                break;
            default:
                if (skip_value(s, 1) < 0) return -1;
            }
            skip_ws(s);
            if (s->p >= s->end) return -1;
            unsigned char c = *s->p++;
            if (c == '}') break;
            if (c != ',') return -1;
            skip_ws(s);
        }
    }
    if (!have_args) no_args(&a);
    Table *t = s->tables;
    if (pid == -2 && (pid = intern(&t[T_PID], K_INT, NULL, -1, row)) < 0) return -1;
    if (tid == -2 && (tid = intern(&t[T_TID], K_INT, NULL, -1, row)) < 0) return -1;
    int64_t name_id = intern(&t[T_NAME], K_STR, name, name_len, row);
    int64_t cat_id = intern(&t[T_CAT], K_STR, cat, cat_len, row);
    int failed = 0;
    int64_t shape = inputs_id(s, &a, row, &failed);
    int64_t frame = raw_id(&t[T_FRAME], a.raw[1], a.raw_len[1], 1, row, &failed);
    if (name_id < 0 || cat_id < 0 || failed) return -1;
    unsigned char phase = ph_len == 1 ? (unsigned char)ph[0] : 0;
    ((signed char *)s->col[O_PH])[row] = (signed char)phase_of[phase];
    int64_t *const *I = (int64_t *const *)s->col;
    double *const *D = (double *const *)s->col;
    I[O_NAME][row] = name_id, I[O_CAT][row] = cat_id, I[O_PID][row] = pid, I[O_TID][row] = tid;
    D[O_TS][row] = ts, D[O_DUR][row] = dur;
    I[O_CORRELATION][row] = a.ints[A_CORRELATION];
    I[O_EXTERNAL_ID][row] = a.ints[A_EXTERNAL_ID] >= 0 ? a.ints[A_EXTERNAL_ID] : a.ints[A_EXTERNAL_ID_2021];
    I[O_DEVICE][row] = a.ints[A_DEVICE], I[O_STREAM][row] = a.ints[A_STREAM];
    I[O_ID][row] = flow_id;
    for (int k = 0; k < 6; k++) D[O_DEVICE_TYPE + k][row] = a.floats[k];
    I[O_EV_IDX][row] = a.ints[A_EV_IDX] >= 0 ? a.ints[A_EV_IDX] : a.ints[A_EV_IDX_LEGACY];
    I[O_SHAPE][row] = shape, I[O_FRAME][row] = frame;
    if (a.has_gpu) {
        if (s->n_gpu == s->gpu_cap) {
            int64_t cap = s->gpu_cap ? s->gpu_cap * 2 : 256;
            int64_t *gpu = realloc(s->gpu, (size_t)cap * (1 + N_GPU) * sizeof(int64_t));
            if (gpu == NULL) return s->oom = 1, -1;
            s->gpu = gpu, s->gpu_cap = cap;
        }
        int64_t *at = s->gpu + (1 + N_GPU) * s->n_gpu++;
        at[0] = row;
        memcpy(at + 1, a.gpu, sizeof a.gpu);
    }
    int flow = ph_len == 1 && (ph[0] == 's' || ph[0] == 'f' || ph[0] == 't');
    /* The consumers after extraction read these from structs; validator_args only on events with its names. */
    int validated = (a.wait_corr && ((name_len == 17 && memcmp(name, "Stream Wait Event", 17) == 0) ||
                                     (name_len == 10 && memcmp(name, "Event Sync", 10) == 0))) ||
                    (a.seq_number && name_len >= BACKWARD_LEN && memcmp(name, BACKWARD_PREFIX, BACKWARD_LEN) == 0);
    if (a.collective || a.ask || validated || (ph_len == 1 && (ph[0] == 'M' || ph[0] == 'C')) || (flow && flow_id == ID_OTHER)) {
        if (s->n_special == s->special_cap) {
            int64_t cap = s->special_cap ? s->special_cap * 2 : 256;
            int64_t *special = realloc(s->special, (size_t)cap * 3 * sizeof(int64_t));
            if (special == NULL) return s->oom = 1, -1;
            s->special = special, s->special_cap = cap;
        }
        int64_t *at = s->special + 3 * s->n_special++;
        at[0] = start - s->base, at[1] = s->p - s->base, at[2] = row;
    }
    s->n++;
    return 0;
}

/* `[` events `]` and nothing after (with `open_end`: `[` events, the text's end standing for the `]`; with `prefix`:
   `[` events `]` and anything after, s->p left past the `]`); 0, or -1 to give up. */
static int read_piece(Scan *s, const unsigned char *phase_of, int open_end, int prefix) {
    skip_ws(s);
    if (s->p >= s->end || *s->p++ != '[') return -1;
    skip_ws(s);
    if (s->p < s->end && *s->p == ']') {
        s->p++;
    } else {
        while (1) {
            if (read_event(s, phase_of) < 0) return -1;
            skip_ws(s);
            if (s->p >= s->end) return open_end ? 0 : -1;
            unsigned char c = *s->p++;
            if (c == ']') break;
            if (c != ',') return -1;
            skip_ws(s);
        }
    }
    if (prefix) return 0;
    skip_ws(s);
    return s->p == s->end ? 0 : -1;
}

static void scan_free(Scan *s) {
    for (int k = 0; k < N_OUT; k++) free(s->col[k]);
    for (int k = 0; k < N_TABLES; k++) {
        if (s->tables[k].owned && s->tables[k].order != NULL)
            for (size_t i = 0; i < s->tables[k].count; i++) free((void *)s->tables[k].order[i].text);
        free(s->tables[k].slots);
        free(s->tables[k].order);
        free(s->tables[k].first);
    }
    free(s->special);
    free(s->gpu);
    free(s->scratch);
}

static PyObject *bytearray_of(const void *data, Py_ssize_t len) {
    return PyByteArray_FromStringAndSize(len ? (const char *)data : "", len);
}

/* A column the scan filled, handed to Python as it lies (a writable buffer over malloc'd memory, freed with the
 * object): no copy of every row under the GIL, which the other threads' scans wait for. */
typedef struct {
    PyObject_HEAD
    void *data;
    Py_ssize_t len;
} Block;

static char empty_block[1];

static void block_dealloc(Block *b) {
    free(b->data);
    Py_TYPE(b)->tp_free((PyObject *)b);
}

static int block_getbuffer(Block *b, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)b, b->data ? b->data : empty_block, b->len, 0, flags);
}

static Py_ssize_t block_length(Block *b) {
    return b->len;
}

static PyBufferProcs block_buffer = {(getbufferproc)block_getbuffer, NULL};
static PySequenceMethods block_sequence = {.sq_length = (lenfunc)block_length};

static PyTypeObject BlockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kinetoscope.trace._scan.Block",
    .tp_basicsize = sizeof(Block),
    .tp_dealloc = (destructor)block_dealloc,
    .tp_as_buffer = &block_buffer,
    .tp_as_sequence = &block_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A scanned column's bytes (buffer protocol, writable).",
};

/* The first `len` bytes of `*data` as a Block that owns the allocation; `*data` is NULL afterwards, also on failure
 * (then freed). The allocation is not shrunk to `len`: its untouched pages cost nothing, and freed whole it is the
 * size the next piece's columns ask for (glibc then serves those from its heap, where a shrunk chunk would leave every
 * piece's columns to fresh mappings: 0.2 s more of page faults at 0.9 GB of trace). */
static PyObject *block_of(void **data, Py_ssize_t len) {
    void *kept = *data;
    *data = NULL;
    if (len == 0) {
        free(kept);
        kept = NULL;
    }
    Block *b = PyObject_New(Block, &BlockType);
    if (b == NULL) {
        free(kept);
        return NULL;
    }
    b->data = kept;
    b->len = len;
    return (PyObject *)b;
}

/* A table's keys (str, int or bytes) in first-seen order, and their first rows (int64 bytes). */
static PyObject *table_result(Table *t) {
    PyObject *keys = PyList_New((Py_ssize_t)t->count);
    if (keys == NULL) return NULL;
    for (size_t i = 0; i < t->count; i++) {
        Entry *e = &t->order[i];
        PyObject *key = e->kind == K_INT ? PyLong_FromLongLong(e->value)
                        : e->kind == K_STR ? PyUnicode_DecodeUTF8(e->text, (Py_ssize_t)e->value, "strict")
                        : PyBytes_FromStringAndSize(e->text, (Py_ssize_t)e->value);
        if (key == NULL) {
            Py_DECREF(keys);
            return NULL;
        }
        PyList_SET_ITEM(keys, (Py_ssize_t)i, key);
    }
    PyObject *first = bytearray_of(t->first, (Py_ssize_t)(t->count * sizeof(int64_t)));
    if (first == NULL) {
        Py_DECREF(keys);
        return NULL;
    }
    return Py_BuildValue("(NN)", keys, first);
}

static PyObject *build_result(Scan *s) {
    PyObject *cols = PyTuple_New(N_OUT), *tables = PyTuple_New(N_TABLES), *special = NULL, *gpu = NULL;
    if (cols == NULL || tables == NULL) goto fail;
    for (int k = 0; k < N_OUT; k++) {
        PyObject *col = block_of(&s->col[k], (Py_ssize_t)(s->n * COLUMN_BYTES(k)));
        if (col == NULL) goto fail;
        PyTuple_SET_ITEM(cols, k, col);
    }
    for (int k = 0; k < N_TABLES; k++) {
        PyObject *table = table_result(&s->tables[k]);
        if (table == NULL) goto fail;
        PyTuple_SET_ITEM(tables, k, table);
    }
    special = bytearray_of(s->special, (Py_ssize_t)(s->n_special * 3 * sizeof(int64_t)));
    if (special == NULL) goto fail;
    gpu = bytearray_of(s->gpu, (Py_ssize_t)(s->n_gpu * (1 + N_GPU) * sizeof(int64_t)));
    if (gpu == NULL) goto fail;
    return Py_BuildValue("(LNNNN)", (long long)s->n, cols, tables, special, gpu);
fail:
    Py_XDECREF(cols);
    Py_XDECREF(tables);
    Py_XDECREF(special);
    Py_XDECREF(gpu);
    return NULL;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer text, lut;
    long long limit = INT64_MAX;
    int open_end = 0, prefix = 0;
    PyObject *rebase = Py_None;
    if (!PyArg_ParseTuple(args, "y*y*|LpOp", &text, &lut, &limit, &open_end, &rebase, &prefix)) return NULL;
    Scan s;
    memset(&s, 0, sizeof s);
    s.tables[T_SHAPE].owned = 1;
    if (rebase != Py_None) {
        int overflow = 0;
        s.exact = 1;
        s.rebase = PyLong_Check(rebase) ? PyLong_AsLongLongAndOverflow(rebase, &overflow) : (overflow = 1, 0);
        if (s.rebase == -1 && PyErr_Occurred()) overflow = 1, PyErr_Clear();
        if (overflow) {  /* no time of this file is within int64 of it: the typed decode reads the piece */
            PyBuffer_Release(&text);
            PyBuffer_Release(&lut);
            Py_RETURN_NONE;
        }
    }
    if (lut.len != 256) {
        PyBuffer_Release(&text);
        PyBuffer_Release(&lut);
        PyErr_SetString(PyExc_ValueError, "expected a 256-byte phase table");
        return NULL;
    }
    s.base = s.p = text.buf;
    s.end = s.p + text.len;
    s.limit = limit;
    int status;
    Py_BEGIN_ALLOW_THREADS
    /* Room for the events a piece this long may hold, at ROWS_GUESS_BYTES each: no realloc (a copy of every column
     * under the heap's lock) while a writer's events are that long; the pages past the last row are never touched. */
    int64_t guess = (int64_t)(text.len / ROWS_GUESS_BYTES);
    if (guess > s.limit) guess = s.limit;
    if (guess > 4096) (void)reserve_columns(&s, guess);  /* failed: s.cap stays 0, the usual growth from 4096 rows */
    status = read_piece(&s, lut.buf, open_end, prefix);
    Py_END_ALLOW_THREADS
    PyObject *result;
    for (int k = 0; k < N_TABLES; k++) s.oom |= s.tables[k].oom;
    if (s.oom) {
        result = PyErr_NoMemory();
    } else if (status < 0) {
        Py_INCREF(Py_None);
        result = Py_None;
    } else {
        result = build_result(&s);
        if (result != NULL && prefix) result = Py_BuildValue("(Nn)", result, (Py_ssize_t)(s.p - s.base));
    }
    scan_free(&s);
    PyBuffer_Release(&text);
    PyBuffer_Release(&lut);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(text, phase_table[, max_events[, open_end[, exact_rebase[, prefix]]]]): a middle piece's text (`[` events "
     "`]`; with open_end, `[` events and the text's end for the `]`; with prefix, `[` events `]` and any text after, "
     "and the answer is (the usual answer, the offset past the `]`); with an int exact_rebase, a piece of a file with "
     "exact 16-digit times, rebased by that many ns) -> (n, 21 column buffers (writable), 6 local "
     "tables (keys, first rows), (start, end, row) of the events to decode as structs, (row, 7 GPU fields) of the "
     "events with any), or None where the piece needs the typed decode (or holds more than max_events)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_scan", "Trace JSON text -> raw columns, one pass.", -1, methods};

PyMODINIT_FUNC PyInit__scan(void) {
#ifdef HAVE_STRTOD_L
    if (c_numeric == (locale_t)0) c_numeric = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);  /* none: long floats give up */
#endif
    keyset_init(&arg_keys, ARG_KEYS, N_ARGS);
    keyset_init(&event_keys, EVENT_KEYS, N_EVENT_KEYS);
    if (PyType_Ready(&BlockType) < 0) return NULL;
    return PyModule_Create(&module);
}
