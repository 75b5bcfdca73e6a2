/* Kineto's exact time text `{us}.{ns}` as integer ns, shared by `_columns.c` (times kept as raw JSON text by the
 * exact decoder) and `_scan.c` (times scanned from a piece of such a file).
 *
 * The nightlies of 2024-03/04 wrote absolute epoch µs with a fraction whose digits count ns, zero-padded only from
 * 2024-04-03: `.5`, `.05` and `.005` are all 5 ns. trace/exact_times._kineto_ns is the reference; this reads the spellings
 * such writers emit (and longer fractions) and says 0 for any other, which the caller then hands to the reference.
 */
#ifndef KINETOSCOPE_KINETO_TIME_H
#define KINETOSCOPE_KINETO_TIME_H

#include <limits.h>
#include <stddef.h>

/* The JSON number text [p, p + len) as integer ns: an optional `-`, digits, and optionally `.` and fraction digits.
 * 1-3 fraction digits count ns (`.5` is 5 ns); more are µs digits, rounded to the ns half to even, as the reference
 * rounds `value * 1000` (exactly while the digits from the first non-zero one are at most 28, Decimal's precision).
 * 1 with *out set; 0 for any other text (exponents, more significant digits, not a number) or a value outside
 * int64. */
static int kineto_text_ns(const char *p, ptrdiff_t len, long long *out) {
    const char *end = p + len;
    int negative = 0, digits = 0, fraction = 0, significant = 0;
    long long whole = 0, ns_part = 0;
    int first_dropped = 0, rest_nonzero = 0;  /* past 3 fraction digits: the first one dropped, any non-zero after it */
    if (p < end && *p == '-') negative = 1, p++;
    for (; p < end && *p >= '0' && *p <= '9'; p++, digits++) {
        if (whole > (LLONG_MAX - 9) / 10) return 0;
        whole = whole * 10 + (*p - '0');
        if (whole) significant++;
    }
    if (digits == 0) return 0;
    if (p < end && *p == '.') {
        for (p++; p < end && *p >= '0' && *p <= '9'; p++) {
            int d = *p - '0';
            if (significant || d) significant++;
            if (++fraction <= 3) ns_part = ns_part * 10 + d;
            else if (fraction == 4) first_dropped = d;
            else rest_nonzero |= d;
        }
        if (fraction == 0) return 0;
    }
    if (p != end || whole > (LLONG_MAX - 1999) / 1000) return 0;
    long long ns = whole * 1000 + ns_part;
    if (fraction > 3) {
        if (significant > 28) return 0;
        if (first_dropped > 5 || (first_dropped == 5 && (rest_nonzero || (ns & 1)))) ns++;
    }
    *out = negative ? -ns : ns;
    return 1;
}

#endif
