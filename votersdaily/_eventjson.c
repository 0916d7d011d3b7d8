/* The JSON text of an event, compiled, and the MD5 of such a text: schema._clean_json's fast path
 * (schema.py falls back to its Python path, the C JSON encoder and a scan of its text, when this
 * module is not built or says None) and the embedded store's revision digest (store/embedded.py
 * falls back to hashlib).
 *
 * clean_text(value, strict=True) -> (text, utf8_size) or None
 *     text is exactly json.dumps(value, ensure_ascii=False, allow_nan=False) (separators ", " and
 *     ": ", keys in the dict's order) and utf8_size len(text.encode("utf-8")), when the value is plain:
 *     every container an exact dict (exact str keys) or an exact list, every scalar an exact str,
 *     int, float, bool or None, floats finite, nesting at most MAX_DEPTH deep, and (strict) no string,
 *     key or value, holding a character of schema.BAD_TEXT_RE (C0 controls but tab and newline, DEL,
 *     C1 controls, lone surrogates). Anything else is None: the caller's Python path decides, so None
 *     is never wrong, only slower. MemoryError propagates.
 *     strict=False lets the characters of BAD_TEXT_RE through (escaped as json escapes them; a lone
 *     surrogate counted as three bytes, as "surrogatepass" encodes it): for tests of the escapes only.
 *
 * clean_text(event, True, True): the same for an event, whose top-level mapping may be a dict
 *     subclass the caller reads as a dict (schema's EventItem: json.dumps reads it so), without a
 *     copy; None as well when one of its keys is CouchDB's (starts with an underscore but is not
 *     "_id"), which the Python path refuses.
 *
 * rules_hold(event, spec) -> bool
 *     True when every rule schema._check_rules checks (but the size) surely holds for a checked event
 *     (a dict or dict subclass read as a dict): the required keys present, exact str and not blank
 *     (None where they may be, "" where they may be empty), branch, entity and source_timezone in
 *     their sets, each datetime in the Python rules' own cache of valid ones (the first of each is
 *     left to them), end_datetime not before datetime, each URL in their cache of valid ones, each
 *     id list an exact list of exact str that fullmatch their pattern, unique_key not blank. False
 *     whenever one does not surely hold: the Python rules then run, and raise the first broken rule
 *     (or fill their caches), so False is never wrong, only slower. spec: schema._rules_spec().
 *
 * md5_hex(data) -> str or None
 *     hashlib.md5(data).hexdigest() of bytes-like data, or of a str's UTF-8 (an ASCII str's
 *     characters as they are, no copy); None for a str UTF-8 cannot encode (a lone surrogate). The
 *     embedded store names a revision by the MD5 of the document's JSON text; hashlib lets other
 *     threads take Python's lock while it hashes 2 KiB or more, and the thread hashing then waits
 *     for it back. This holds it: a few microseconds of hashing are not worth a switch interval.
 *
 * Two passes over the value: the first checks it and measures the text (characters, widest
 * character, UTF-8 bytes, each string's escapes); the second writes it into one str of that size and
 * kind. Nothing between them runs Python code (no object the walk allocates is tracked by the
 * garbage collector), and the second pass checks every write against the first's measure anyway.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <stdint.h>
#include <string.h>

/* Deeper values are left to the Python path (json's own encoder recurses up to the interpreter's
 * recursion limit; events nest a few levels). */
#define MAX_DEPTH 200

/* Per character below 256: the characters an escape adds (low bits) and BAD for BAD_TEXT_RE's. */
#define BAD 0x80
static unsigned char char_class[256];

static void init_classes(void)
{
    for (int c = 0; c < 256; c++) {
        unsigned char k = 0;
        if (c < 0x20)
            k = (c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f') ? 1 : 5;
        else if (c == '"' || c == '\\')
            k = 1;
        if ((c < 0x20 && c != '\n' && c != '\t') || (c >= 0x7f && c <= 0x9f))
            k |= BAD;
        char_class[c] = k;
    }
}

/* The escapes (each string's added characters, in walk order) measured by the first pass. */
typedef struct {
    Py_ssize_t *extra;
    Py_ssize_t count, capacity, next;
    Py_ssize_t inline_extra[128];
    Py_ssize_t length; /* characters of the text */
    Py_ssize_t utf8_more; /* UTF-8 bytes beyond one a character */
    Py_UCS4 maxchar;
    int strict;
    /* An event (event=True): this top-level mapping is read as a dict, and refused when one of its
     * keys is CouchDB's (starts with an underscore, but for "_id"). NULL otherwise. */
    PyObject *top;
} Measure;

typedef struct {
    void *data;
    int kind;
    Py_ssize_t pos, size;
    PyObject *top; /* Measure's */
} Writer;

enum { REFUSED = 0, DONE = 1, FAILED = -1 };

static int push_extra(Measure *m, Py_ssize_t extra)
{
    if (m->count == m->capacity) {
        Py_ssize_t capacity = m->capacity * 2;
        Py_ssize_t *grown;
        if (m->extra == m->inline_extra) {
            grown = PyMem_Malloc(capacity * sizeof(Py_ssize_t));
            if (grown)
                memcpy(grown, m->extra, m->count * sizeof(Py_ssize_t));
        } else {
            grown = PyMem_Realloc(m->extra, capacity * sizeof(Py_ssize_t));
        }
        if (!grown) {
            PyErr_NoMemory();
            return FAILED;
        }
        m->extra = grown;
        m->capacity = capacity;
    }
    m->extra[m->count++] = extra;
    return DONE;
}

/* ---- the MD5 a store names a revision by (RFC 1321; the rounds as in Alexander Peslyak's
 * public-domain implementation) ---- */

#define MD5_F(x, y, z) ((z) ^ ((x) & ((y) ^ (z))))
#define MD5_G(x, y, z) ((y) ^ ((z) & ((x) ^ (y))))
#define MD5_H(x, y, z) ((x) ^ (y) ^ (z))
#define MD5_I(x, y, z) ((y) ^ ((x) | ~(z)))
#define MD5_STEP(f, a, b, c, d, x, t, s)                                                            \
    (a) += f((b), (c), (d)) + (x) + (t);                                                            \
    (a) = (((a) << (s)) | (((a) & 0xffffffff) >> (32 - (s))));                                      \
    (a) += (b);

static inline uint32_t md5_word(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* Runs the block function over n whole 64-byte blocks of data. */
static void md5_blocks(uint32_t state[4], const unsigned char *data, size_t n)
{
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
    for (; n; n--, data += 64) {
        uint32_t x[16];
        for (int i = 0; i < 16; i++)
            x[i] = md5_word(data + 4 * i);
        uint32_t sa = a, sb = b, sc = c, sd = d;
        MD5_STEP(MD5_F, a, b, c, d, x[0], 0xd76aa478, 7)
        MD5_STEP(MD5_F, d, a, b, c, x[1], 0xe8c7b756, 12)
        MD5_STEP(MD5_F, c, d, a, b, x[2], 0x242070db, 17)
        MD5_STEP(MD5_F, b, c, d, a, x[3], 0xc1bdceee, 22)
        MD5_STEP(MD5_F, a, b, c, d, x[4], 0xf57c0faf, 7)
        MD5_STEP(MD5_F, d, a, b, c, x[5], 0x4787c62a, 12)
        MD5_STEP(MD5_F, c, d, a, b, x[6], 0xa8304613, 17)
        MD5_STEP(MD5_F, b, c, d, a, x[7], 0xfd469501, 22)
        MD5_STEP(MD5_F, a, b, c, d, x[8], 0x698098d8, 7)
        MD5_STEP(MD5_F, d, a, b, c, x[9], 0x8b44f7af, 12)
        MD5_STEP(MD5_F, c, d, a, b, x[10], 0xffff5bb1, 17)
        MD5_STEP(MD5_F, b, c, d, a, x[11], 0x895cd7be, 22)
        MD5_STEP(MD5_F, a, b, c, d, x[12], 0x6b901122, 7)
        MD5_STEP(MD5_F, d, a, b, c, x[13], 0xfd987193, 12)
        MD5_STEP(MD5_F, c, d, a, b, x[14], 0xa679438e, 17)
        MD5_STEP(MD5_F, b, c, d, a, x[15], 0x49b40821, 22)
        MD5_STEP(MD5_G, a, b, c, d, x[1], 0xf61e2562, 5)
        MD5_STEP(MD5_G, d, a, b, c, x[6], 0xc040b340, 9)
        MD5_STEP(MD5_G, c, d, a, b, x[11], 0x265e5a51, 14)
        MD5_STEP(MD5_G, b, c, d, a, x[0], 0xe9b6c7aa, 20)
        MD5_STEP(MD5_G, a, b, c, d, x[5], 0xd62f105d, 5)
        MD5_STEP(MD5_G, d, a, b, c, x[10], 0x02441453, 9)
        MD5_STEP(MD5_G, c, d, a, b, x[15], 0xd8a1e681, 14)
        MD5_STEP(MD5_G, b, c, d, a, x[4], 0xe7d3fbc8, 20)
        MD5_STEP(MD5_G, a, b, c, d, x[9], 0x21e1cde6, 5)
        MD5_STEP(MD5_G, d, a, b, c, x[14], 0xc33707d6, 9)
        MD5_STEP(MD5_G, c, d, a, b, x[3], 0xf4d50d87, 14)
        MD5_STEP(MD5_G, b, c, d, a, x[8], 0x455a14ed, 20)
        MD5_STEP(MD5_G, a, b, c, d, x[13], 0xa9e3e905, 5)
        MD5_STEP(MD5_G, d, a, b, c, x[2], 0xfcefa3f8, 9)
        MD5_STEP(MD5_G, c, d, a, b, x[7], 0x676f02d9, 14)
        MD5_STEP(MD5_G, b, c, d, a, x[12], 0x8d2a4c8a, 20)
        MD5_STEP(MD5_H, a, b, c, d, x[5], 0xfffa3942, 4)
        MD5_STEP(MD5_H, d, a, b, c, x[8], 0x8771f681, 11)
        MD5_STEP(MD5_H, c, d, a, b, x[11], 0x6d9d6122, 16)
        MD5_STEP(MD5_H, b, c, d, a, x[14], 0xfde5380c, 23)
        MD5_STEP(MD5_H, a, b, c, d, x[1], 0xa4beea44, 4)
        MD5_STEP(MD5_H, d, a, b, c, x[4], 0x4bdecfa9, 11)
        MD5_STEP(MD5_H, c, d, a, b, x[7], 0xf6bb4b60, 16)
        MD5_STEP(MD5_H, b, c, d, a, x[10], 0xbebfbc70, 23)
        MD5_STEP(MD5_H, a, b, c, d, x[13], 0x289b7ec6, 4)
        MD5_STEP(MD5_H, d, a, b, c, x[0], 0xeaa127fa, 11)
        MD5_STEP(MD5_H, c, d, a, b, x[3], 0xd4ef3085, 16)
        MD5_STEP(MD5_H, b, c, d, a, x[6], 0x04881d05, 23)
        MD5_STEP(MD5_H, a, b, c, d, x[9], 0xd9d4d039, 4)
        MD5_STEP(MD5_H, d, a, b, c, x[12], 0xe6db99e5, 11)
        MD5_STEP(MD5_H, c, d, a, b, x[15], 0x1fa27cf8, 16)
        MD5_STEP(MD5_H, b, c, d, a, x[2], 0xc4ac5665, 23)
        MD5_STEP(MD5_I, a, b, c, d, x[0], 0xf4292244, 6)
        MD5_STEP(MD5_I, d, a, b, c, x[7], 0x432aff97, 10)
        MD5_STEP(MD5_I, c, d, a, b, x[14], 0xab9423a7, 15)
        MD5_STEP(MD5_I, b, c, d, a, x[5], 0xfc93a039, 21)
        MD5_STEP(MD5_I, a, b, c, d, x[12], 0x655b59c3, 6)
        MD5_STEP(MD5_I, d, a, b, c, x[3], 0x8f0ccc92, 10)
        MD5_STEP(MD5_I, c, d, a, b, x[10], 0xffeff47d, 15)
        MD5_STEP(MD5_I, b, c, d, a, x[1], 0x85845dd1, 21)
        MD5_STEP(MD5_I, a, b, c, d, x[8], 0x6fa87e4f, 6)
        MD5_STEP(MD5_I, d, a, b, c, x[15], 0xfe2ce6e0, 10)
        MD5_STEP(MD5_I, c, d, a, b, x[6], 0xa3014314, 15)
        MD5_STEP(MD5_I, b, c, d, a, x[13], 0x4e0811a1, 21)
        MD5_STEP(MD5_I, a, b, c, d, x[4], 0xf7537e82, 6)
        MD5_STEP(MD5_I, d, a, b, c, x[11], 0xbd3af235, 10)
        MD5_STEP(MD5_I, c, d, a, b, x[2], 0x2ad7d2bb, 15)
        MD5_STEP(MD5_I, b, c, d, a, x[9], 0xeb86d391, 21)
        a += sa;
        b += sb;
        c += sc;
        d += sd;
    }
    state[0] = a;
    state[1] = b;
    state[2] = c;
    state[3] = d;
}

/* The MD5 of n bytes as 32 lower-case hex digits into hex (no terminator). */
static void md5_hex(const unsigned char *data, size_t n, char *hex)
{
    static const char digits[] = "0123456789abcdef";
    uint32_t state[4] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
    unsigned char tail[128];
    size_t whole = n / 64, rest = n % 64, tail_len = rest < 56 ? 64 : 128;
    uint64_t bits = (uint64_t)n * 8;
    md5_blocks(state, data, whole);
    memset(tail, 0, sizeof(tail));
    memcpy(tail, data + whole * 64, rest);
    tail[rest] = 0x80;
    for (int i = 0; i < 8; i++)
        tail[tail_len - 8 + i] = (unsigned char)(bits >> (8 * i));
    md5_blocks(state, tail, tail_len / 64);
    for (int i = 0; i < 16; i++) {
        unsigned char byte = (unsigned char)(state[i / 4] >> (8 * (i % 4)));
        hex[2 * i] = digits[byte >> 4];
        hex[2 * i + 1] = digits[byte & 0xf];
    }
}

/* ---- the first pass: check and measure ---- */

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* Whether 8 ASCII characters hold one char_class marks (a control, '"', '\\' or DEL): exact for
 * bytes below 0x80 (the borrows of the subtractions cannot reach a byte's high bit otherwise). */
static inline int ascii_word_needs_look(uint64_t x)
{
    uint64_t quote = x ^ (ONES * '"'), backslash = x ^ (ONES * '\\'), del = x ^ (ONES * 0x7f);
    uint64_t found = (x - ONES * 0x20) | (quote - ONES) | (backslash - ONES) | (del - ONES);
    return (found & ~x & HIGHS) != 0;
}

#define ONES16 0x0001000100010001ULL
#define HIGHS16 0x8000800080008000ULL

/* ascii_word_needs_look for 4 two-byte characters, each below 0x80. */
static inline int ucs2_ascii_word_needs_look(uint64_t x)
{
    uint64_t quote = x ^ (ONES16 * '"'), backslash = x ^ (ONES16 * '\\'), del = x ^ (ONES16 * 0x7f);
    uint64_t found = (x - ONES16 * 0x20) | (quote - ONES16) | (backslash - ONES16) | (del - ONES16);
    return (found & HIGHS16) != 0;
}

static int measure_str(Measure *m, PyObject *s)
{
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(s) < 0) /* a string of the old wchar_t API, made canonical as json does */
        return FAILED;
#endif
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    Py_ssize_t extra = 0, more = 0;
    Py_UCS4 maxchar = 0;
    unsigned char refuse = m->strict ? BAD : 0;
    if (kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *p = data;
        if (PyUnicode_IS_ASCII(s)) {
            Py_ssize_t i = 0;
            for (; i + 8 <= n; i += 8) {
                uint64_t x;
                memcpy(&x, p + i, 8);
                if (!ascii_word_needs_look(x))
                    continue;
                for (int j = 0; j < 8; j++) {
                    unsigned char k = char_class[p[i + j]];
                    if (k) {
                        if (k & refuse)
                            return REFUSED;
                        extra += k & 7;
                    }
                }
            }
            for (; i < n; i++) {
                unsigned char k = char_class[p[i]];
                if (k) {
                    if (k & refuse)
                        return REFUSED;
                    extra += k & 7;
                }
            }
        } else {
            for (Py_ssize_t i = 0; i < n; i++) {
                if (!(i & 7) && i + 8 <= n) { /* a word of plain ASCII characters at once */
                    uint64_t x;
                    memcpy(&x, p + i, 8);
                    if (!(x & HIGHS) && !ascii_word_needs_look(x)) {
                        i += 7;
                        continue;
                    }
                }
                Py_UCS1 c = p[i];
                unsigned char k = char_class[c];
                if (k) {
                    if (k & refuse)
                        return REFUSED;
                    extra += k & 7;
                }
                if (c >= 0x80) {
                    more += 1;
                    if (c > maxchar)
                        maxchar = c;
                }
            }
        }
    } else {
        for (Py_ssize_t i = 0; i < n; i++) {
            if (kind == PyUnicode_2BYTE_KIND && !(i & 3) && i + 4 <= n) { /* 4 plain ASCII at once */
                uint64_t x;
                memcpy(&x, (const Py_UCS2 *)data + i, 8);
                if (!(x & (ONES16 * 0xff80)) && !ucs2_ascii_word_needs_look(x)) {
                    i += 3;
                    continue;
                }
            }
            Py_UCS4 c = kind == PyUnicode_2BYTE_KIND ? ((const Py_UCS2 *)data)[i] : ((const Py_UCS4 *)data)[i];
            if (c < 0x100) {
                unsigned char k = char_class[c];
                if (k) {
                    if (k & refuse)
                        return REFUSED;
                    extra += k & 7;
                }
                if (c >= 0x80)
                    more += 1;
            } else if (c < 0x800) {
                more += 1;
            } else if (c < 0x10000) {
                if (c >= 0xd800 && c <= 0xdfff && refuse)
                    return REFUSED;
                more += 2;
            } else {
                more += 3;
            }
            if (c > maxchar)
                maxchar = c;
        }
    }
    if (maxchar > m->maxchar)
        m->maxchar = maxchar;
    m->length += n + 2 + extra;
    m->utf8_more += more;
    return push_extra(m, extra);
}

/* An int as int.__repr__ writes it, into buf (at least 24 bytes); its length, or -1 when it does not
 * fit a long long (the caller then asks int.__repr__). */
static int format_int(PyObject *v, char *buf)
{
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || (x == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return -1;
    }
    char digits[24];
    int n = 0, len = 0;
    unsigned long long u = x < 0 ? 0ULL - (unsigned long long)x : (unsigned long long)x;
    do {
        digits[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (x < 0)
        buf[len++] = '-';
    while (n)
        buf[len++] = digits[--n];
    return len;
}

/* int.__repr__ of a big int: a new str, or NULL with REFUSED/FAILED in *status (past
 * sys.set_int_max_str_digits json refuses it too; MemoryError propagates). */
static PyObject *big_int_repr(PyObject *v, int *status)
{
    PyObject *text = PyLong_Type.tp_repr(v);
    if (!text) {
        if (PyErr_ExceptionMatches(PyExc_MemoryError)) {
            *status = FAILED;
        } else {
            PyErr_Clear();
            *status = REFUSED;
        }
    }
    return text;
}

/* float.__repr__'s text (json writes a float so): a PyMem buffer to free, or NULL (MemoryError set). */
static char *float_repr(PyObject *v)
{
    char *buf = PyOS_double_to_string(PyFloat_AS_DOUBLE(v), 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (!buf)
        PyErr_NoMemory();
    return buf;
}

/* Whether a key is CouchDB's: it starts with an underscore and is not "_id" (schema's rule). */
static int reserved_key(PyObject *key)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(key);
    if (!n || PyUnicode_READ_CHAR(key, 0) != '_')
        return 0;
    return !(n == 3 && PyUnicode_READ_CHAR(key, 1) == 'i' && PyUnicode_READ_CHAR(key, 2) == 'd');
}

static int measure(Measure *m, PyObject *v, int depth)
{
    PyTypeObject *type = Py_TYPE(v);
    if (type == &PyUnicode_Type)
        return measure_str(m, v);
    if (type == &PyDict_Type || v == m->top) {
        Py_ssize_t pos = 0, n = PyDict_GET_SIZE(v);
        PyObject *key, *value;
        if (depth >= MAX_DEPTH)
            return REFUSED;
        m->length += 2 + (n ? 4 * n - 2 : 0); /* braces, ": " each, ", " between */
        while (PyDict_Next(v, &pos, &key, &value)) {
            if (Py_TYPE(key) != &PyUnicode_Type || (v == m->top && reserved_key(key)))
                return REFUSED;
            int done = measure_str(m, key);
            if (done == DONE)
                done = measure(m, value, depth + 1);
            if (done != DONE)
                return done;
        }
        return DONE;
    }
    if (type == &PyList_Type) {
        Py_ssize_t n = PyList_GET_SIZE(v);
        if (depth >= MAX_DEPTH)
            return REFUSED;
        m->length += 2 + (n ? 2 * n - 2 : 0);
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++) {
            int done = measure(m, PyList_GET_ITEM(v, i), depth + 1);
            if (done != DONE)
                return done;
        }
        return DONE;
    }
    if (v == Py_None || v == Py_True) {
        m->length += 4;
        return DONE;
    }
    if (v == Py_False) {
        m->length += 5;
        return DONE;
    }
    if (type == &PyLong_Type) {
        char buf[24];
        int len = format_int(v, buf);
        if (len < 0) {
            int status = DONE;
            PyObject *text = big_int_repr(v, &status);
            if (!text)
                return status;
            m->length += PyUnicode_GET_LENGTH(text);
            Py_DECREF(text);
        } else {
            m->length += len;
        }
        return DONE;
    }
    if (type == &PyFloat_Type) {
        if (!Py_IS_FINITE(PyFloat_AS_DOUBLE(v)))
            return REFUSED; /* allow_nan=False: json refuses it */
        char *buf = float_repr(v);
        if (!buf)
            return FAILED;
        m->length += (Py_ssize_t)strlen(buf);
        PyMem_Free(buf);
        return DONE;
    }
    return REFUSED;
}

/* ---- the second pass: write ---- */

/* Copies n characters of one kind to the writer's (as wide or wider: the first pass measured it). */
static void copy_chars(Writer *w, int kind, const void *data, Py_ssize_t start, Py_ssize_t n)
{
    if (kind == w->kind) {
        memcpy((char *)w->data + w->pos * kind, (const char *)data + start * kind, n * kind);
    } else if (w->kind == PyUnicode_2BYTE_KIND) {
        const Py_UCS1 *from = (const Py_UCS1 *)data + start;
        Py_UCS2 *to = (Py_UCS2 *)w->data + w->pos;
        for (Py_ssize_t i = 0; i < n; i++)
            to[i] = from[i];
    } else if (kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *from = (const Py_UCS1 *)data + start;
        Py_UCS4 *to = (Py_UCS4 *)w->data + w->pos;
        for (Py_ssize_t i = 0; i < n; i++)
            to[i] = from[i];
    } else {
        const Py_UCS2 *from = (const Py_UCS2 *)data + start;
        Py_UCS4 *to = (Py_UCS4 *)w->data + w->pos;
        for (Py_ssize_t i = 0; i < n; i++)
            to[i] = from[i];
    }
    w->pos += n;
}

static int write_ascii(Writer *w, const char *text, Py_ssize_t n)
{
    if (n > w->size - w->pos)
        return REFUSED;
    copy_chars(w, PyUnicode_1BYTE_KIND, text, 0, n);
    return DONE;
}

/* The escape of a character json's encode_basestring (ensure_ascii=False) escapes: '"', '\\' and the C0
 * controls, these as \n \r \t \b \f or \u00xx (lower-case hex); its length. */
static int escape_of(Py_UCS4 c, char *escape)
{
    static const char hex[] = "0123456789abcdef";
    escape[0] = '\\';
    switch (c) {
    case '"': escape[1] = '"'; return 2;
    case '\\': escape[1] = '\\'; return 2;
    case '\n': escape[1] = 'n'; return 2;
    case '\r': escape[1] = 'r'; return 2;
    case '\t': escape[1] = 't'; return 2;
    case '\b': escape[1] = 'b'; return 2;
    case '\f': escape[1] = 'f'; return 2;
    default:
        escape[1] = 'u';
        escape[2] = '0';
        escape[3] = '0';
        escape[4] = hex[(c >> 4) & 0xf];
        escape[5] = hex[c & 0xf];
        return 6;
    }
}

/* Whether 8 one-byte characters (any, not only ASCII) hold one json escapes: a control, '"' or '\\'
 * (exact: each test masks the bytes whose own high bit is set). */
static inline int word_needs_escape(uint64_t x)
{
    uint64_t quote = x ^ (ONES * '"'), backslash = x ^ (ONES * '\\');
    uint64_t found = ((x - ONES * 0x20) & ~x) | ((quote - ONES) & ~quote) | ((backslash - ONES) & ~backslash);
    return (found & HIGHS) != 0;
}

/* Writes a string's n characters (of type IN) escaped into the writer's (of type OUT), adding at most
 * `extra` characters (what the first pass counted; past it, REFUSED before anything is written).
 * One-byte into one-byte (the most text) goes by words of 8: a plain word is copied at once. */
#define ESCAPE_ONE(IN, OUT)                                                                         \
    do {                                                                                            \
        IN c = from[i];                                                                             \
        if (c >= 0x20 && c != '"' && c != '\\') {                                                   \
            *to++ = (OUT)c;                                                                         \
        } else {                                                                                    \
            char escape[6];                                                                         \
            int len = escape_of(c, escape);                                                         \
            added += len - 1;                                                                       \
            if (added > extra)                                                                      \
                return REFUSED;                                                                     \
            for (int j = 0; j < len; j++)                                                           \
                *to++ = (OUT)(unsigned char)escape[j];                                              \
        }                                                                                           \
    } while (0)

#define ESCAPE_INTO(IN, OUT)                                                                        \
    do {                                                                                            \
        const IN *from = (const IN *)data;                                                          \
        OUT *to = (OUT *)w->data + w->pos, *first = to;                                             \
        Py_ssize_t i = 0;                                                                           \
        if (sizeof(IN) == 1 && sizeof(OUT) == 1) {                                                  \
            while (i + 8 <= n) {                                                                    \
                uint64_t x;                                                                         \
                memcpy(&x, from + i, 8);                                                            \
                if (!word_needs_escape(x)) {                                                        \
                    memcpy(to, from + i, 8);                                                        \
                    to += 8;                                                                        \
                    i += 8;                                                                         \
                    continue;                                                                       \
                }                                                                                   \
                for (Py_ssize_t end = i + 8; i < end; i++)                                          \
                    ESCAPE_ONE(IN, OUT);                                                            \
            }                                                                                       \
        }                                                                                           \
        for (; i < n; i++)                                                                          \
            ESCAPE_ONE(IN, OUT);                                                                    \
        w->pos += to - first;                                                                       \
    } while (0)

/* A string, quoted and escaped as json's encode_basestring (ensure_ascii=False) does. */
static int write_str(Writer *w, Measure *m, PyObject *s)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    if (m->next >= m->count || kind > w->kind)
        return REFUSED;
    Py_ssize_t extra = m->extra[m->next++], added = 0;
    if (n + 2 + extra > w->size - w->pos)
        return REFUSED;
    copy_chars(w, PyUnicode_1BYTE_KIND, "\"", 0, 1);
    if (!extra) {
        copy_chars(w, kind, data, 0, n);
    } else {
        switch (kind * 8 + w->kind) {
        case 1 * 8 + 1: ESCAPE_INTO(Py_UCS1, Py_UCS1); break;
        case 1 * 8 + 2: ESCAPE_INTO(Py_UCS1, Py_UCS2); break;
        case 1 * 8 + 4: ESCAPE_INTO(Py_UCS1, Py_UCS4); break;
        case 2 * 8 + 2: ESCAPE_INTO(Py_UCS2, Py_UCS2); break;
        case 2 * 8 + 4: ESCAPE_INTO(Py_UCS2, Py_UCS4); break;
        default: ESCAPE_INTO(Py_UCS4, Py_UCS4); break;
        }
        if (added != extra)
            return REFUSED; /* cannot happen: the first pass counted these */
    }
    copy_chars(w, PyUnicode_1BYTE_KIND, "\"", 0, 1);
    return DONE;
}

static int write_value(Writer *w, Measure *m, PyObject *v)
{
    PyTypeObject *type = Py_TYPE(v);
    if (type == &PyUnicode_Type)
        return write_str(w, m, v);
    if (type == &PyDict_Type || v == w->top) {
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        int done = write_ascii(w, "{", 1), first = 1;
        while (done == DONE && PyDict_Next(v, &pos, &key, &value)) {
            if (!first)
                done = write_ascii(w, ", ", 2);
            first = 0;
            if (done == DONE)
                done = Py_TYPE(key) == &PyUnicode_Type ? write_str(w, m, key) : REFUSED;
            if (done == DONE)
                done = write_ascii(w, ": ", 2);
            if (done == DONE)
                done = write_value(w, m, value);
        }
        return done == DONE ? write_ascii(w, "}", 1) : done;
    }
    if (type == &PyList_Type) {
        int done = write_ascii(w, "[", 1);
        for (Py_ssize_t i = 0; done == DONE && i < PyList_GET_SIZE(v); i++) {
            if (i)
                done = write_ascii(w, ", ", 2);
            if (done == DONE)
                done = write_value(w, m, PyList_GET_ITEM(v, i));
        }
        return done == DONE ? write_ascii(w, "]", 1) : done;
    }
    if (v == Py_None)
        return write_ascii(w, "null", 4);
    if (v == Py_True)
        return write_ascii(w, "true", 4);
    if (v == Py_False)
        return write_ascii(w, "false", 5);
    if (type == &PyLong_Type) {
        char buf[24];
        int len = format_int(v, buf);
        if (len >= 0)
            return write_ascii(w, buf, len);
        int status = DONE;
        PyObject *text = big_int_repr(v, &status);
        if (!text)
            return status;
        status = write_ascii(w, (const char *)PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text));
        Py_DECREF(text);
        return status;
    }
    if (type == &PyFloat_Type) {
        char *buf = float_repr(v);
        if (!buf)
            return FAILED;
        int status = write_ascii(w, buf, (Py_ssize_t)strlen(buf));
        PyMem_Free(buf);
        return status;
    }
    return REFUSED;
}

static PyObject *clean_text(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs < 1 || nargs > 3) {
        PyErr_SetString(PyExc_TypeError, "clean_text(value, strict=True, event=False)");
        return NULL;
    }
    Measure m;
    m.extra = m.inline_extra;
    m.count = m.next = 0;
    m.capacity = sizeof(m.inline_extra) / sizeof(m.inline_extra[0]);
    m.length = m.utf8_more = 0;
    m.maxchar = 0;
    m.strict = 1;
    m.top = NULL;
    if (nargs >= 2) {
        m.strict = PyObject_IsTrue(args[1]);
        if (m.strict < 0)
            return NULL;
    }
    if (nargs == 3) {
        int event = PyObject_IsTrue(args[2]);
        if (event < 0)
            return NULL;
        if (event) {
            if (!PyDict_Check(args[0]))
                Py_RETURN_NONE;
            m.top = args[0];
        }
    }
    PyObject *result = NULL, *text = NULL;
    int done = measure(&m, args[0], 0);
    if (done == DONE) {
        text = PyUnicode_New(m.length, m.maxchar);
        if (!text) {
            done = FAILED;
        } else {
            Writer w = {PyUnicode_DATA(text), PyUnicode_KIND(text), 0, m.length, m.top};
            done = write_value(&w, &m, args[0]);
            if (done == DONE && (w.pos != w.size || m.next != m.count))
                done = REFUSED; /* cannot happen: the passes walk the same value */
        }
    }
    if (done == DONE)
        result = Py_BuildValue("(Nn)", text, m.length + m.utf8_more);
    else
        Py_XDECREF(text);
    if (m.extra != m.inline_extra)
        PyMem_Free(m.extra);
    if (done == REFUSED)
        Py_RETURN_NONE;
    return result;
}

/* ---- rules_hold(event, spec): see the module's comment ---- */

/* Whether v is an exact str with a character str.strip() keeps. */
static int non_blank_str(PyObject *v)
{
    if (Py_TYPE(v) != &PyUnicode_Type)
        return 0;
    Py_ssize_t n = PyUnicode_GET_LENGTH(v);
    int kind = PyUnicode_KIND(v);
    const void *data = PyUnicode_DATA(v);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, i)))
            return 1;
    }
    return 0;
}

/* 1 when the set (or frozenset) holds v, 0 when not or v is no exact str, -1 with an error set. */
static int str_in(PyObject *set, PyObject *v)
{
    if (Py_TYPE(v) != &PyUnicode_Type)
        return 0;
    return PySet_Contains(set, v);
}

/* event[key] of an exact dict or dict subclass (a borrowed reference), NULL when it lacks it. */
static PyObject *member(PyObject *event, PyObject *key)
{
    return PyDict_GetItemWithError(event, key);
}

enum {
    SPEC_NOT_NULL, SPEC_NULLABLE, SPEC_MAY_BE_EMPTY, SPEC_BRANCHES, SPEC_ENTITIES, SPEC_ISO, SPEC_URLS,
    SPEC_ZONES, SPEC_DATETIMES, SPEC_URL_KEYS, SPEC_ID_LISTS, SPEC_ID_ONES, SPEC_NAMES, SPEC_SIZE
};
/* SPEC_NAMES: (datetime, end_datetime, branch, entity, source_timezone, unique_key). */
enum { NAME_DATETIME, NAME_END, NAME_BRANCH, NAME_ENTITY, NAME_ZONE, NAME_UNIQUE_KEY, NAME_SIZE };

/* Whether every id of (key, pattern) pairs holds: a list of exact str each fullmatching (lists) or
 * one such str (ones); absent or None holds. 1, 0 or -1 (an error set). */
static int ids_hold(PyObject *event, PyObject *pairs, int lists)
{
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(pairs); i++) {
        PyObject *pair = PyTuple_GET_ITEM(pairs, i);
        PyObject *ids = member(event, PyTuple_GET_ITEM(pair, 0));
        if (!ids) {
            if (PyErr_Occurred())
                return -1;
            continue;
        }
        if (ids == Py_None)
            continue;
        if (lists && Py_TYPE(ids) != &PyList_Type)
            return 0;
        Py_ssize_t n = lists ? PyList_GET_SIZE(ids) : 1;
        for (Py_ssize_t j = 0; j < n; j++) {
            PyObject *one = lists ? PyList_GET_ITEM(ids, j) : ids;
            if (Py_TYPE(one) != &PyUnicode_Type)
                return 0;
            Py_INCREF(one);
            PyObject *match = PyObject_CallMethod(PyTuple_GET_ITEM(pair, 1), "fullmatch", "O", one);
            Py_DECREF(one);
            if (!match)
                return -1;
            int matched = match != Py_None;
            Py_DECREF(match);
            if (!matched)
                return 0;
            if (lists && (Py_TYPE(ids) != &PyList_Type || PyList_GET_SIZE(ids) != n))
                return 0; /* the pattern's call changed the list: the Python rules decide */
        }
    }
    return 1;
}

/* The rules of schema._check_rules but the size; 1 (they hold), 0 (the Python rules decide) or -1. */
static int rules_of(PyObject *event, PyObject *spec)
{
    PyObject *names = PyTuple_GET_ITEM(spec, SPEC_NAMES);
    PyObject *keys = PyTuple_GET_ITEM(spec, SPEC_NOT_NULL);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(keys); i++) {
        PyObject *v = member(event, PyTuple_GET_ITEM(keys, i));
        if (!v)
            return PyErr_Occurred() ? -1 : 0;
        if (!non_blank_str(v))
            return 0;
    }
    keys = PyTuple_GET_ITEM(spec, SPEC_NULLABLE);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(keys); i++) {
        PyObject *key = PyTuple_GET_ITEM(keys, i), *v = member(event, key);
        if (!v)
            return PyErr_Occurred() ? -1 : 0;
        if (v == Py_None)
            continue;
        if (Py_TYPE(v) != &PyUnicode_Type)
            return 0;
        int may_be_empty = PySet_Contains(PyTuple_GET_ITEM(spec, SPEC_MAY_BE_EMPTY), key);
        if (may_be_empty < 0)
            return -1;
        if (!may_be_empty && !non_blank_str(v))
            return 0;
    }
    /* every required key is now there, an exact str (or None where it may be) */
    static const int sets[][2] = {{NAME_BRANCH, SPEC_BRANCHES}, {NAME_ENTITY, SPEC_ENTITIES}, {NAME_ZONE, SPEC_ZONES}};
    for (int i = 0; i < 3; i++) {
        PyObject *v = member(event, PyTuple_GET_ITEM(names, sets[i][0]));
        int found = v ? str_in(PyTuple_GET_ITEM(spec, sets[i][1]), v) : (PyErr_Occurred() ? -1 : 0);
        if (found != 1)
            return found;
    }
    keys = PyTuple_GET_ITEM(spec, SPEC_DATETIMES);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(keys); i++) {
        PyObject *v = member(event, PyTuple_GET_ITEM(keys, i));
        if (!v)
            return PyErr_Occurred() ? -1 : 0;
        if (v == Py_None)
            continue;
        int found = str_in(PyTuple_GET_ITEM(spec, SPEC_ISO), v); /* the Python rules' cache */
        if (found != 1)
            return found;
    }
    PyObject *start = member(event, PyTuple_GET_ITEM(names, NAME_DATETIME));
    PyObject *end = start ? member(event, PyTuple_GET_ITEM(names, NAME_END)) : NULL;
    if (!start || !end)
        return PyErr_Occurred() ? -1 : 0;
    if (end != Py_None) {
        if (Py_TYPE(start) != &PyUnicode_Type || Py_TYPE(end) != &PyUnicode_Type)
            return 0;
        int before = PyUnicode_Compare(end, start);
        if (before == -1 && PyErr_Occurred())
            return -1;
        if (before < 0)
            return 0;
    }
    keys = PyTuple_GET_ITEM(spec, SPEC_URL_KEYS);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(keys); i++) {
        PyObject *v = member(event, PyTuple_GET_ITEM(keys, i));
        if (!v)
            return PyErr_Occurred() ? -1 : 0;
        if (v == Py_None || (Py_TYPE(v) == &PyUnicode_Type && PyUnicode_GET_LENGTH(v) == 0))
            continue; /* falsy: no URL to check */
        int found = str_in(PyTuple_GET_ITEM(spec, SPEC_URLS), v); /* the Python rules' cache */
        if (found != 1)
            return found;
    }
    int held = ids_hold(event, PyTuple_GET_ITEM(spec, SPEC_ID_LISTS), 1);
    if (held == 1)
        held = ids_hold(event, PyTuple_GET_ITEM(spec, SPEC_ID_ONES), 0);
    if (held != 1)
        return held;
    PyObject *unique_key = member(event, PyTuple_GET_ITEM(names, NAME_UNIQUE_KEY));
    if (!unique_key)
        return PyErr_Occurred() ? -1 : 0;
    return non_blank_str(unique_key);
}

static PyObject *rules_hold(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2 || !PyDict_Check(args[0]) || !PyTuple_Check(args[1]) || PyTuple_GET_SIZE(args[1]) != SPEC_SIZE ||
        !PyTuple_Check(PyTuple_GET_ITEM(args[1], SPEC_NAMES)) ||
        PyTuple_GET_SIZE(PyTuple_GET_ITEM(args[1], SPEC_NAMES)) != NAME_SIZE) {
        PyErr_SetString(PyExc_TypeError, "rules_hold(event: dict, spec: tuple) (see schema._RULES_SPEC)");
        return NULL;
    }
    for (int i = 0; i < SPEC_SIZE; i++) {
        PyObject *part = PyTuple_GET_ITEM(args[1], i);
        int is_set = PyAnySet_Check(part), is_tuple = PyTuple_Check(part);
        int want_set = i == SPEC_MAY_BE_EMPTY || i == SPEC_BRANCHES || i == SPEC_ENTITIES || i == SPEC_ISO ||
                       i == SPEC_URLS || i == SPEC_ZONES;
        if (want_set ? !is_set : !is_tuple) {
            PyErr_SetString(PyExc_TypeError, "rules_hold: a part of the spec is not of its kind");
            return NULL;
        }
    }
    int held = rules_of(args[0], args[1]);
    if (held < 0)
        return NULL;
    return PyBool_FromLong(held);
}

/* md5_hex(data): see the module's comment. */
static PyObject *md5_hex_of(PyObject *module, PyObject *data)
{
    (void)module;
    char hex[32];
    if (PyUnicode_Check(data)) {
#if PY_VERSION_HEX < 0x030C0000
        if (PyUnicode_READY(data) < 0)
            return NULL;
#endif
        if (PyUnicode_IS_ASCII(data)) { /* its characters are its UTF-8 */
            md5_hex(PyUnicode_DATA(data), (size_t)PyUnicode_GET_LENGTH(data), hex);
        } else {
            PyObject *utf8 = PyUnicode_AsUTF8String(data);
            if (!utf8) {
                if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
                    return NULL;
                PyErr_Clear(); /* a lone surrogate: no UTF-8, no MD5 */
                Py_RETURN_NONE;
            }
            md5_hex((const unsigned char *)PyBytes_AS_STRING(utf8), (size_t)PyBytes_GET_SIZE(utf8), hex);
            Py_DECREF(utf8);
        }
        return PyUnicode_FromStringAndSize(hex, 32);
    }
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    md5_hex(view.buf, (size_t)view.len, hex);
    PyBuffer_Release(&view);
    return PyUnicode_FromStringAndSize(hex, 32);
}

static PyMethodDef methods[] = {
    {"clean_text", (PyCFunction)(void (*)(void))clean_text, METH_FASTCALL,
     "clean_text(value, strict=True, event=False) -> (text, utf8_size) or None: json.dumps(value, "
     "ensure_ascii=False, allow_nan=False) of a plain value with nothing to clean, else None (see the "
     "module's source)."},
    {"rules_hold", (PyCFunction)(void (*)(void))rules_hold, METH_FASTCALL,
     "rules_hold(event, spec) -> bool: True when every rule of schema._check_rules but the size surely "
     "holds, False when the Python rules must decide (see the module's source)."},
    {"md5_hex", md5_hex_of, METH_O,
     "md5_hex(data) -> str: hashlib.md5(data).hexdigest() of bytes, or of a str's UTF-8 (None when it "
     "has none: a lone surrogate), without letting other threads run meanwhile."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_eventjson", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__eventjson(void)
{
    init_classes();
    return PyModule_Create(&module);
}
