/* Compiled fast paths of the laundromat's cleaning (see native.py, which documents the contract and
 * falls back to pure Python when this module is not built).
 *
 * canonical_lines(data, quads, prefix, max_line) -> (out, slow, slow_line_numbers, named)
 *     Copies every line of `data` that already is a canonical N-Triples (N-Quads) statement, in the
 *     conservative grammar below, to `out`, with each blank node `_:label` written as
 *     `prefix + label + ">"` (skolemised). Every other line (anything outside that grammar: escapes
 *     the canonical form writes otherwise, upper-case language tags, IRIs with non-ASCII characters,
 *     comments, blank lines, syntax errors, lines of `max_line` bytes or more, which may hold a token
 *     past the parser's buffer) is left to pyoxigraph: such lines are returned in `slow` (each
 *     newline-terminated) with their 0-based line numbers in `slow_line_numbers` (native int64
 *     each). `named`: a statement with a graph label was copied. The grammar accepts only what pyoxigraph's N-Triples/N-Quads parser
 *     accepts and its serializer writes back byte for byte (tests/laundromat/test_native.py checks
 *     both paths against each other on the W3C suites and on mutated real lines).
 *
 * utf8_counts(data) -> (valid, chars, lf, cr, crlf)
 *     Validates UTF-8 (strictly: no overlongs, surrogates or code points past U+10FFFF) and counts, in
 *     the same pass, characters and line endings. `valid` is the length of the longest prefix made of
 *     whole valid sequences: len(data) when all is valid, less when the data ends inside a sequence
 *     (the caller carries those bytes over) or holds an invalid one (the caller checks which).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

typedef unsigned char u8;

/* Character classes of the conservative grammar, one bit each. */
enum {
    C_UNRESERVED = 1, /* A-Z a-z 0-9 - . _ ~ */
    C_SUBDELIM = 2,   /* ! $ & ' ( ) * + , ; = */
    C_ALPHA = 4,
    C_SCHEME = 8,    /* A-Z a-z 0-9 + - . */
    C_LABEL = 16,    /* A-Z a-z 0-9 _ - : a blank node label's character (dots handled apart) */
    C_HEX = 32,
    C_LITERAL = 64,  /* ASCII characters a canonical literal holds unescaped */
    C_LOWER = 128,
};

static unsigned char cls[256];

static void init_classes(void)
{
    for (int c = 0; c < 256; c++) {
        unsigned char k = 0;
        int alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
        int digit = c >= '0' && c <= '9';
        if (alpha || digit || c == '-' || c == '.' || c == '_' || c == '~')
            k |= C_UNRESERVED;
        if (c && strchr("!$&'()*+,;=", c))
            k |= C_SUBDELIM;
        if (alpha)
            k |= C_ALPHA;
        if (alpha || digit || c == '+' || c == '-' || c == '.')
            k |= C_SCHEME;
        if (alpha || digit || c == '_' || c == '-')
            k |= C_LABEL;
        if (digit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))
            k |= C_HEX;
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
            k |= C_LITERAL;
        if (c >= 'a' && c <= 'z')
            k |= C_LOWER;
        cls[c] = k;
    }
}

#define IS(c, k) (cls[(u8)(c)] & (k))

/* Each scanner takes the position of a term's first byte and returns the position just past it, or
 * NULL when the bytes there are not that term in the conservative grammar. `end` bounds the line. */

/* pchar of RFC 3986 (unreserved, sub-delims, ":", "@", a percent-encoded octet) plus the extra
 * characters the part allows ("/" in a path; "/" and "?" in a query or a fragment). */
static const u8 *scan_chars(const u8 *p, const u8 *end, const char *extra)
{
    while (p < end) {
        u8 c = *p;
        if (IS(c, C_UNRESERVED | C_SUBDELIM) || c == ':' || c == '@' || (c && strchr(extra, c))) {
            p++;
        } else if (c == '%') {
            if (end - p < 3 || !IS(p[1], C_HEX) || !IS(p[2], C_HEX))
                return NULL;
            p += 3;
        } else {
            break;
        }
    }
    return p;
}

/* An absolute IRI in angle brackets, ASCII only: scheme ":" ["//" reg-name [":" port]] path
 * ["?" query] ["#" fragment]. No user information, no IP literals: those lines take the slow path. */
static const u8 *scan_iri(const u8 *p, const u8 *end)
{
    if (p >= end || *p != '<')
        return NULL;
    p++;
    if (p >= end || !IS(*p, C_ALPHA))
        return NULL;
    while (p < end && IS(*p, C_SCHEME))
        p++;
    if (p >= end || *p != ':')
        return NULL;
    p++;
    if (end - p >= 2 && p[0] == '/' && p[1] == '/') {
        p += 2;
        while (p < end) { /* reg-name */
            if (IS(*p, C_UNRESERVED | C_SUBDELIM)) {
                p++;
            } else if (*p == '%') {
                if (end - p < 3 || !IS(p[1], C_HEX) || !IS(p[2], C_HEX))
                    return NULL;
                p += 3;
            } else {
                break;
            }
        }
        if (p < end && *p == ':') {
            p++;
            while (p < end && *p >= '0' && *p <= '9')
                p++;
        }
        if (p >= end || !(*p == '/' || *p == '?' || *p == '#' || *p == '>'))
            return NULL;
    }
    if (!(p = scan_chars(p, end, "/")))
        return NULL;
    if (p < end && *p == '?' && !(p = scan_chars(p + 1, end, "/?")))
        return NULL;
    if (p < end && *p == '#' && !(p = scan_chars(p + 1, end, "/?")))
        return NULL;
    if (p >= end || *p != '>')
        return NULL;
    return p + 1;
}

/* "_:" label, the label ASCII: [A-Za-z0-9_] then [A-Za-z0-9_-] with single or repeated dots only
 * between them. Returns the end of the label. */
static const u8 *scan_bnode(const u8 *p, const u8 *end)
{
    if (end - p < 3 || p[0] != '_' || p[1] != ':' || !IS(p[2], C_LABEL) || p[2] == '-')
        return NULL;
    p += 3;
    for (;;) {
        while (p < end && IS(*p, C_LABEL))
            p++;
        const u8 *q = p;
        while (q < end && *q == '.')
            q++;
        if (q >= end || !IS(*q, C_LABEL)) /* no dots, or dots ending the label */
            return p;
        p = q;
    }
}

/* One UTF-8 sequence starting at a byte >= 0x80: its length, or 0 when invalid or cut. */
static int utf8_sequence(const u8 *p, const u8 *end)
{
    u8 c = p[0];
    Py_ssize_t left = end - p;
    if (c >= 0xc2 && c <= 0xdf)
        return left >= 2 && (p[1] & 0xc0) == 0x80 ? 2 : 0;
    if (c >= 0xe0 && c <= 0xef) {
        if (left < 3 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80)
            return 0;
        if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f))
            return 0; /* overlong, surrogate */
        return 3;
    }
    if (c >= 0xf0 && c <= 0xf4) {
        if (left < 4 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80 || (p[3] & 0xc0) != 0x80)
            return 0;
        if ((c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] > 0x8f))
            return 0; /* overlong, past U+10FFFF */
        return 4;
    }
    return 0;
}

static const char XSD_STRING[] = "<http://www.w3.org/2001/XMLSchema#string>";
static const char RDF_LANG[] = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#langString>";
static const char RDF_DIRLANG[] = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#dirLangString>";

static int same(const u8 *p, const u8 *q, const char *s, size_t n)
{
    return (size_t)(q - p) == n && memcmp(p, s, n) == 0;
}

/* A literal as the canonical serializer writes it: unescaped except \t \b \n \r \f \" \\ (other
 * controls, U+007F, U+FFFE and U+FFFF would be \u escapes: slow path), then a lower-case language
 * tag of the plain shapes (ll[l][-ssss][-rr|-nnn]) or a datatype IRI other than xsd:string (which
 * the canonical form omits) and rdf:langString/dirLangString (errors without a tag). */
static const u8 *scan_literal(const u8 *p, const u8 *end)
{
    if (p >= end || *p != '"')
        return NULL;
    p++;
    for (;;) {
        if (p >= end)
            return NULL;
        u8 c = *p;
        if (IS(c, C_LITERAL)) {
            p++;
        } else if (c == '"') {
            p++;
            break;
        } else if (c == '\\') {
            if (end - p < 2 || !strchr("tbnrf\"\\", p[1]) || !p[1])
                return NULL;
            p += 2;
        } else if (c >= 0x80) {
            int n = utf8_sequence(p, end);
            if (!n || (n == 3 && c == 0xef && p[1] == 0xbf && p[2] >= 0xbe))
                return NULL;
            p += n;
        } else {
            return NULL;
        }
    }
    if (p < end && *p == '@') {
        const u8 *q = ++p;
        while (p < end && IS(*p, C_LOWER))
            p++;
        if (p - q < 2 || p - q > 3)
            return NULL;
        int stage = 0; /* 1: after a script subtag, 2: after a region subtag */
        while (p < end && *p == '-') {
            int letters = 0, digits = 0;
            for (q = ++p; p < end && (IS(*p, C_LOWER) || (*p >= '0' && *p <= '9')); p++)
                IS(*p, C_LOWER) ? letters++ : digits++;
            if (stage == 0 && letters == 4 && !digits)
                stage = 1;
            else if (stage < 2 && ((letters == 2 && !digits) || (digits == 3 && !letters)))
                stage = 2;
            else
                return NULL;
        }
        return p;
    }
    if (end - p >= 2 && p[0] == '^' && p[1] == '^') {
        const u8 *q = p + 2, *r = scan_iri(q, end);
        if (!r || same(q, r, XSD_STRING, sizeof XSD_STRING - 1) || same(q, r, RDF_LANG, sizeof RDF_LANG - 1) ||
            same(q, r, RDF_DIRLANG, sizeof RDF_DIRLANG - 1))
            return NULL;
        return r;
    }
    return p;
}

/* Output buffer: a bytes object grown by doubling, shrunk at the end. */
typedef struct {
    PyObject *bytes;
    Py_ssize_t len, cap;
} Out;

static int out_reserve(Out *o, Py_ssize_t more)
{
    if (o->len + more <= o->cap)
        return 0;
    Py_ssize_t cap = o->cap * 2;
    if (cap < o->len + more)
        cap = o->len + more;
    if (_PyBytes_Resize(&o->bytes, cap) < 0)
        return -1;
    o->cap = cap;
    return 0;
}

static int out_put(Out *o, const u8 *p, Py_ssize_t n)
{
    if (out_reserve(o, n) < 0)
        return -1;
    memcpy(PyBytes_AS_STRING(o->bytes) + o->len, p, n);
    o->len += n;
    return 0;
}

/* A term of a statement at p: IRI, blank node (kind 1) or, with `literal`, a literal (kind 2).
 * Returns its end or NULL; *kind tells which. */
static const u8 *scan_term(const u8 *p, const u8 *end, int literal, int *kind)
{
    *kind = 0;
    if (p < end && *p == '<')
        return scan_iri(p, end);
    if (p < end && *p == '_') {
        *kind = 1;
        return scan_bnode(p, end);
    }
    if (literal && p < end && *p == '"') {
        *kind = 2;
        return scan_literal(p, end);
    }
    return NULL;
}

/* The line [p, end) (without its newline) as a canonical statement: 0 when it is not one; else the
 * number of terms (3 or 4) with their spans in starts/ends and blank node flags in bnode. */
static int scan_statement(const u8 *p, const u8 *end, int quads, const u8 **starts, const u8 **ends, int *bnode)
{
    int kind, n = 0;
    for (;;) {
        int literal = n == 2;
        const u8 *q;
        if (n == 1)
            q = scan_iri(p, end), kind = 0;
        else
            q = scan_term(p, end, literal, &kind);
        if (!q || (n == 3 && kind == 2))
            return 0;
        starts[n] = p;
        ends[n] = q;
        bnode[n] = kind == 1;
        n++;
        if (q >= end || *q != ' ')
            return 0;
        p = q + 1;
        if (n >= 3 && end - p == 1 && *p == '.')
            return n;
        if (n == 4 || (n == 3 && !quads))
            return 0;
    }
}

static PyObject *canonical_lines(PyObject *Py_UNUSED(self), PyObject *args)
{
    Py_buffer data, prefix;
    int quads;
    Py_ssize_t max_line;
    if (!PyArg_ParseTuple(args, "y*py*n", &data, &quads, &prefix, &max_line))
        return NULL;
    const u8 *buf = data.buf, *stop = buf + data.len;
    Out out = {NULL, 0, 0}, slow = {NULL, 0, 0}, where = {NULL, 0, 0};
    PyObject *result = NULL;
    int named = 0;
    out.cap = data.len + data.len / 4 + 64;
    slow.cap = where.cap = 4096;
    out.bytes = PyBytes_FromStringAndSize(NULL, out.cap);
    slow.bytes = PyBytes_FromStringAndSize(NULL, slow.cap);
    where.bytes = PyBytes_FromStringAndSize(NULL, where.cap);
    if (!out.bytes || !slow.bytes || !where.bytes)
        goto done;
    int64_t line_no = 0;
    for (const u8 *p = buf; p < stop; line_no++) {
        const u8 *nl = memchr(p, '\n', stop - p);
        const u8 *next = nl ? nl + 1 : stop;
        const u8 *starts[4], *ends[4];
        int bnode[4], n = nl && nl - p < max_line ? scan_statement(p, nl, quads, starts, ends, bnode) : 0;
        if (n) {
            if (n == 4)
                named = 1;
            const u8 *at = p;
            for (int i = 0; i < n; i++) {
                if (!bnode[i])
                    continue;
                /* "_:label" -> prefix "label>" */
                if (out_put(&out, at, starts[i] - at) < 0 || out_put(&out, prefix.buf, prefix.len) < 0 ||
                    out_put(&out, starts[i] + 2, ends[i] - starts[i] - 2) < 0 ||
                    out_put(&out, (const u8 *)">", 1) < 0)
                    goto done;
                at = ends[i];
            }
            if (out_put(&out, at, next - at) < 0)
                goto done;
        } else if (out_put(&slow, p, next - p) < 0 || (!nl && out_put(&slow, (const u8 *)"\n", 1) < 0) ||
                   out_put(&where, (const u8 *)&line_no, sizeof line_no) < 0) {
            goto done;
        }
        p = next;
    }
    if (_PyBytes_Resize(&out.bytes, out.len) < 0 || _PyBytes_Resize(&slow.bytes, slow.len) < 0 ||
        _PyBytes_Resize(&where.bytes, where.len) < 0)
        goto done;
    result = Py_BuildValue("(OOOO)", out.bytes, slow.bytes, where.bytes, named ? Py_True : Py_False);
done:
    Py_XDECREF(out.bytes);
    Py_XDECREF(slow.bytes);
    Py_XDECREF(where.bytes);
    PyBuffer_Release(&data);
    PyBuffer_Release(&prefix);
    return result;
}

static PyObject *utf8_counts(PyObject *Py_UNUSED(self), PyObject *args)
{
    Py_buffer data;
    if (!PyArg_ParseTuple(args, "y*", &data))
        return NULL;
    const u8 *p = data.buf, *end = p + data.len;
    Py_ssize_t chars = 0, lf = 0, cr = 0, crlf = 0;
    Py_BEGIN_ALLOW_THREADS
    while (p < end) {
        /* Eight ASCII bytes at a time while there are no line endings among them. */
        while (end - p >= 8) {
            uint64_t w;
            memcpy(&w, p, 8);
            if (w & 0x8080808080808080ULL)
                break;
            /* any byte equal to \n or \r? (classic has-zero-byte test on w ^ pattern) */
            uint64_t x = w ^ 0x0a0a0a0a0a0a0a0aULL, y = w ^ 0x0d0d0d0d0d0d0d0dULL;
            if (((x - 0x0101010101010101ULL) & ~x & 0x8080808080808080ULL) ||
                ((y - 0x0101010101010101ULL) & ~y & 0x8080808080808080ULL))
                break;
            p += 8;
            chars += 8;
        }
        if (p >= end)
            break;
        u8 c = *p;
        if (c < 0x80) {
            if (c == '\n') {
                lf++;
                if (p > (const u8 *)data.buf && p[-1] == '\r')
                    crlf++;
            } else if (c == '\r') {
                cr++;
            }
            p++;
            chars++;
            continue;
        }
        int n = utf8_sequence(p, end);
        if (!n)
            break;
        p += n;
        chars++;
    }
    Py_END_ALLOW_THREADS
    Py_ssize_t valid = p - (const u8 *)data.buf;
    PyBuffer_Release(&data);
    return Py_BuildValue("(nnnnn)", valid, chars, lf, cr, crlf);
}

static PyMethodDef methods[] = {
    {"canonical_lines", canonical_lines, METH_VARARGS,
     "canonical_lines(data, quads, prefix, max_line) -> (out, slow, slow_line_numbers, named)"},
    {"utf8_counts", utf8_counts, METH_VARARGS, "utf8_counts(data) -> (valid, chars, lf, cr, crlf)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ntscan", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__ntscan(void)
{
    init_classes();
    return PyModule_Create(&module);
}
