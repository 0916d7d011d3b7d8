/* Compiled fast paths of the laundromat's cleaning (see native.py, which documents the contract and
 * falls back to pure Python when this module is not built).
 *
 * canonical_lines(data, quads, prefix, max_line[, flags]) -> (out, slow, slow_line_numbers, named, lines, copied)
 *     Copies every line of `data` that already is a canonical N-Triples (N-Quads) statement, in the
 *     conservative grammar below, to `out`, with each blank node `_:label` written as
 *     `prefix + label + ">"` (skolemised). Every other line (anything outside that grammar: escapes
 *     the canonical form writes otherwise, upper-case language tags, IRIs with non-ASCII characters,
 *     comments, blank lines, syntax errors, lines of `max_line` bytes or more, which may hold a token
 *     past the parser's buffer) is left to pyoxigraph: such lines are returned in `slow` (each
 *     newline-terminated) with their 0-based line numbers in `slow_line_numbers` (native int64
 *     each). `named`: a statement with a graph label was copied; `lines`: lines in `data`; `copied`:
 *     statements in `out`. The grammar accepts only what pyoxigraph's N-Triples/N-Quads parser
 *     accepts and its serializer writes back byte for byte (tests/laundromat/test_native.py checks
 *     both paths against each other on the W3C suites and on mutated real lines). With `flags`
 *     (F_RELABEL, F_DOTS below: for the lines pyoxigraph's serializer wrote from another format) a
 *     line the slow path would change further (a parser-invented blank node label, a dot segment)
 *     is left to it too.
 *
 * TurtleReader(path, trig, base_iri, prefix): _turtle.c.
 *
 * xml_cuts(path, start, span) -> [offset, ...] or None
 *     Where an RDF/XML document can be cut into ranges parsed apart (xml_ranges.py): see xml_cuts_of.
 *
 * utf8_counts(data) -> (valid, chars, lf, cr, crlf)
 *     Validates UTF-8 (strictly: no overlongs, surrogates or code points past U+10FFFF) and counts, in
 *     the same pass, characters and line endings. `valid` is the length of the longest prefix made of
 *     whole valid sequences: len(data) when all is valid, less when the data ends inside a sequence
 *     (the caller carries those bytes over) or holds an invalid one (the caller checks which).
 */
#include "_ntscan.h"

#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

unsigned char nt_cls[256];

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
        nt_cls[c] = k;
    }
}


/* Each scanner takes the position of a term's first byte and returns the position just past it, or
 * NULL when the bytes there are not that term in the conservative grammar. `end` bounds the line. */

/* pchar of RFC 3986 (unreserved, sub-delims, ":", "@", a percent-encoded octet) plus the extra
 * characters the part allows ("/" in a path; "/" and, with `query`, "?" in a query or a fragment). */
static const u8 *scan_chars(const u8 *p, const u8 *end, int query)
{
    while (p < end) {
        u8 c = *p;
        if (IS(c, C_UNRESERVED | C_SUBDELIM) || c == ':' || c == '@' || c == '/' || (query && c == '?')) {
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
const u8 *nt_scan_iri(const u8 *p, const u8 *end)
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
    if (!(p = scan_chars(p, end, 0)))
        return NULL;
    if (p < end && *p == '?' && !(p = scan_chars(p + 1, end, 1)))
        return NULL;
    if (p < end && *p == '#' && !(p = scan_chars(p + 1, end, 1)))
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
int nt_utf8_sequence(const u8 *p, const u8 *end)
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

int nt_hex_value(u8 c)
{
    return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

/* The code point of the UCHAR (\uXXXX or \UXXXXXXXX) at p, its length in *n; -1 when it is not one or
 * names no character (a surrogate, past U+10FFFF): pyoxigraph refuses those. */
long nt_uchar_at(const u8 *p, const u8 *end, int *n)
{
    int digits = p[1] == 'u' ? 4 : 8;
    long cp = 0;
    if (end - p < 2 + digits)
        return -1;
    for (int i = 0; i < digits; i++) {
        if (!IS(p[2 + i], C_HEX))
            return -1;
        cp = cp * 16 + nt_hex_value(p[2 + i]);
    }
    if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
        return -1;
    *n = 2 + digits;
    return cp;
}

static int is_letter(u8 c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

const u8 *nt_scan_language(const u8 *p, const u8 *end)
{
    const u8 *q = p;
    while (p < end && is_letter(*p))
        p++;
    if (p - q < 2 || p - q > 3)
        return NULL;
    int stage = 0; /* 1: after a script subtag, 2: after a region subtag */
    while (p < end && *p == '-') {
        int letters = 0, digits = 0;
        for (++p; p < end && (is_letter(*p) || (*p >= '0' && *p <= '9')); p++)
            is_letter(*p) ? letters++ : digits++;
        if (stage == 0 && letters == 4 && !digits)
            stage = 1;
        else if (stage < 2 && ((letters == 2 && !digits) || (digits == 3 && !letters)))
            stage = 2;
        else
            return NULL;
    }
    return p;
}

/* A literal of N-Triples. Its canonical form (what pyoxigraph's serializer writes) is what it is
 * already unless it holds a \u or \U escape, a raw control character, U+007F, U+FFFE or U+FFFF,
 * an upper-case letter in its language tag, or the datatype xsd:string (which the canonical form
 * omits): then *rewrite is set and emit_literal writes that form. Accepted language tags:
 * ll[l][-ssss][-rr|-nnn] in any case; datatype IRIs: any but rdf:langString/dirLangString (errors
 * without a tag). Anything else (other tag shapes, invalid escapes) is left to pyoxigraph. */
static const u8 *scan_literal(const u8 *p, const u8 *end, int *rewrite)
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
            int n;
            if (end - p < 2 || !p[1])
                return NULL;
            if (strchr("tbnrf\"\\", p[1])) {
                p += 2;
            } else if ((p[1] == 'u' || p[1] == 'U') && nt_uchar_at(p, end, &n) >= 0) {
                *rewrite = 1;
                p += n;
            } else {
                return NULL;
            }
        } else if (c >= 0x80) {
            int n = nt_utf8_sequence(p, end);
            if (!n)
                return NULL;
            if (n == 3 && c == 0xef && p[1] == 0xbf && p[2] >= 0xbe)
                *rewrite = 1;
            p += n;
        } else if (c == '\r') {
            return NULL; /* not allowed raw in a literal */
        } else {
            *rewrite = 1; /* a raw control character or U+007F: escaped in the canonical form */
            p++;
        }
    }
    if (p < end && *p == '@') {
        const u8 *tag = ++p;
        if (!(p = nt_scan_language(p, end)))
            return NULL;
        for (const u8 *q = tag; q < p; q++)
            if (*q >= 'A' && *q <= 'Z')
                *rewrite = 1;
        return p;
    }
    if (end - p >= 2 && p[0] == '^' && p[1] == '^') {
        const u8 *q = p + 2, *r = nt_scan_iri(q, end);
        if (!r || same(q, r, RDF_LANG, sizeof RDF_LANG - 1) || same(q, r, RDF_DIRLANG, sizeof RDF_DIRLANG - 1))
            return NULL;
        if (same(q, r, XSD_STRING, sizeof XSD_STRING - 1))
            *rewrite = 1; /* the canonical form omits it */
        return r;
    }
    return p;
}

int out_reserve(Out *o, Py_ssize_t more)
{
    if (o->len + more <= o->cap)
        return 0;
    Py_ssize_t cap = o->cap * 2;
    if (cap < o->len + more)
        cap = o->len + more;
    u8 *p = PyMem_RawRealloc(o->p, cap ? cap : 1);
    if (!p)
        return -1;
    o->p = p;
    o->cap = cap;
    return 0;
}

int out_put(Out *o, const u8 *p, Py_ssize_t n)
{
    if (out_reserve(o, n) < 0)
        return -1;
    if (n)
        memcpy(o->p + o->len, p, n);
    o->len += n;
    return 0;
}

PyObject *out_bytes(Out *o)
{
    return PyBytes_FromStringAndSize(o->len ? (const char *)o->p : "", o->len);
}

void out_free(Out *o)
{
    PyMem_RawFree(o->p);
    o->p = NULL;
    o->len = o->cap = 0;
}

static const char HEX[] = "0123456789ABCDEF";

/* Code point `cp` as the canonical serializer writes it inside a literal. */
int nt_put_char(Out *o, long cp)
{
    u8 b[8];
    int n = 0;
    if (cp == '"' || cp == '\\') {
        b[n++] = '\\';
        b[n++] = (u8)cp;
    } else if (cp < 0x20 || cp == 0x7f || cp == 0xfffe || cp == 0xffff) {
        const char *short_form = cp == 8 ? "b" : cp == 9 ? "t" : cp == 10 ? "n" : cp == 12 ? "f" : cp == 13 ? "r" : NULL;
        b[n++] = '\\';
        if (short_form) {
            b[n++] = short_form[0];
        } else {
            b[n++] = 'u';
            for (int shift = 12; shift >= 0; shift -= 4)
                b[n++] = HEX[(cp >> shift) & 15];
        }
    } else if (cp < 0x80) {
        b[n++] = (u8)cp;
    } else if (cp < 0x800) {
        b[n++] = 0xc0 | (cp >> 6);
        b[n++] = 0x80 | (cp & 0x3f);
    } else if (cp < 0x10000) {
        b[n++] = 0xe0 | (cp >> 12);
        b[n++] = 0x80 | ((cp >> 6) & 0x3f);
        b[n++] = 0x80 | (cp & 0x3f);
    } else {
        b[n++] = 0xf0 | (cp >> 18);
        b[n++] = 0x80 | ((cp >> 12) & 0x3f);
        b[n++] = 0x80 | ((cp >> 6) & 0x3f);
        b[n++] = 0x80 | (cp & 0x3f);
    }
    return out_put(o, b, n);
}

/* The canonical form of a literal scan_literal accepted and flagged: escapes decoded and re-escaped
 * as the serializer does, the language tag in lower case. */
static int emit_literal(Out *o, const u8 *p, const u8 *end)
{
    if (out_put(o, p, 1) < 0) /* the opening quote */
        return -1;
    for (p++;;) {
        const u8 *run = p;
        while (IS(*p, C_LITERAL) || (*p == '\\' && strchr("tbnrf\"\\", p[1]) && p[1]))
            p += *p == '\\' ? 2 : 1;
        if (out_put(o, run, p - run) < 0)
            return -1;
        u8 c = *p;
        long cp;
        int n = 1;
        if (c == '"')
            break;
        if (c == '\\')
            cp = nt_uchar_at(p, end, &n);
        else if (c < 0x80)
            cp = c;
        else if ((n = nt_utf8_sequence(p, end)) == 3 && c == 0xef && p[1] == 0xbf && p[2] >= 0xbe)
            cp = 0xfffe + (p[2] - 0xbe);
        else {
            if (out_put(o, p, n) < 0)
                return -1;
            p += n;
            continue;
        }
        if (nt_put_char(o, cp) < 0)
            return -1;
        p += n;
    }
    if (out_put(o, p, 1) < 0) /* the closing quote */
        return -1;
    p++;
    if (end - p == 2 + sizeof XSD_STRING - 1 && same(p + 2, end, XSD_STRING, sizeof XSD_STRING - 1))
        return 0; /* a simple literal */
    if (p == end || *p != '@') /* a datatype IRI, as it is */
        return out_put(o, p, end - p);
    for (; p < end; p++) { /* the language tag, in lower case */
        u8 c = *p >= 'A' && *p <= 'Z' ? *p | 0x20 : *p;
        if (out_put(o, &c, 1) < 0)
            return -1;
    }
    return 0;
}

enum { T_IRI, T_BNODE, T_LITERAL, T_REWRITE };

/* A term of a statement at p: IRI, blank node or, with `literal`, a literal (T_REWRITE: one that
 * emit_literal must write). Returns its end or NULL; *kind tells which. */
static const u8 *scan_term(const u8 *p, const u8 *end, int literal, int *kind)
{
    *kind = T_IRI;
    if (p < end && *p == '<')
        return nt_scan_iri(p, end);
    if (p < end && *p == '_') {
        *kind = T_BNODE;
        return scan_bnode(p, end);
    }
    if (literal && p < end && *p == '"') {
        int rewrite = 0;
        const u8 *q = scan_literal(p, end, &rewrite);
        *kind = rewrite ? T_REWRITE : T_LITERAL;
        return q;
    }
    return NULL;
}

/* The line [p, end) (without its newline) as a statement in the grammar: 0 when it is not one; else
 * the number of terms (3 or 4) with their spans in starts/ends and their kinds. */
static int scan_statement(const u8 *p, const u8 *end, int quads, const u8 **starts, const u8 **ends, int *kinds)
{
    int n = 0;
    for (;;) {
        const u8 *q = n == 1 ? nt_scan_iri(p, end) : scan_term(p, end, n == 2, &kinds[n]);
        if (n == 1)
            kinds[n] = T_IRI;
        if (!q)
            return 0;
        starts[n] = p;
        ends[n] = q;
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

/* Flags of canonical_lines for lines a serializer wrote (their terms already canonical). */
enum {
    /* A blank node label the parser may have invented (16 to 32 lower-case hex digits: skolem.py's
     * _GENERATED) sends its line to the slow path, which numbers such labels in order. */
    F_RELABEL = 1,
    /* A line holding a dot segment pattern (rdf11.py's _DOTTED) goes to the slow path, which removes
     * the dot segments of its IRIs. */
    F_DOTS = 2,
};

static int generated_label(const u8 *p, const u8 *end)
{
    if (end - p < 16 || end - p > 32)
        return 0;
    for (; p < end; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return 0;
    return 1;
}

int nt_dotted(const u8 *p, const u8 *end)
{
    for (; (p = memchr(p, '/', end - p)) != NULL; p++) {
        const u8 *q = p + 1;
        if (q < end && *q == '.') {
            q++;
            if (q < end && *q == '.')
                q++;
            if (q < end && (*q == '/' || *q == '>' || *q == '?' || *q == '#'))
                return 1;
        }
    }
    return 0;
}

typedef struct {
    Out out, slow, where;
    int named;
    int64_t lines;
    Py_ssize_t copied;
} Scan;

/* The work of canonical_lines, without the GIL: 0, or -1 when memory ran out. */
static int scan_lines(Scan *r, const u8 *buf, const u8 *stop, int quads, const u8 *prefix, Py_ssize_t prefix_len,
                      Py_ssize_t max_line, int flags)
{
    if (out_reserve(&r->out, (stop - buf) + (stop - buf) / 4 + 64) < 0)
        return -1;
    for (const u8 *p = buf; p < stop; r->lines++) {
        const u8 *nl = memchr(p, '\n', stop - p);
        const u8 *next = nl ? nl + 1 : stop;
        const u8 *starts[4], *ends[4];
        int kinds[4], n = nl && nl - p < max_line ? scan_statement(p, nl, quads, starts, ends, kinds) : 0;
        if (n && (flags & F_DOTS) && nt_dotted(p, nl))
            n = 0;
        for (int i = 0; n && (flags & F_RELABEL) && i < n; i++)
            if (kinds[i] == T_BNODE && generated_label(starts[i] + 2, ends[i]))
                n = 0;
        if (n) {
            r->copied++;
            if (n == 4)
                r->named = 1;
            const u8 *at = p;
            for (int i = 0; i < n; i++) {
                if (kinds[i] != T_BNODE && kinds[i] != T_REWRITE)
                    continue;
                if (out_put(&r->out, at, starts[i] - at) < 0)
                    return -1;
                if (kinds[i] == T_REWRITE ? emit_literal(&r->out, starts[i], ends[i]) < 0
                                          : /* "_:label" -> prefix "label>" */
                        out_put(&r->out, prefix, prefix_len) < 0 ||
                            out_put(&r->out, starts[i] + 2, ends[i] - starts[i] - 2) < 0 ||
                            out_put(&r->out, (const u8 *)">", 1) < 0)
                    return -1;
                at = ends[i];
            }
            if (out_put(&r->out, at, next - at) < 0)
                return -1;
        } else if (out_put(&r->slow, p, next - p) < 0 || (!nl && out_put(&r->slow, (const u8 *)"\n", 1) < 0) ||
                   out_put(&r->where, (const u8 *)&r->lines, sizeof r->lines) < 0) {
            return -1;
        }
        p = next;
    }
    return 0;
}

static PyObject *canonical_lines(PyObject *Py_UNUSED(self), PyObject *args)
{
    Py_buffer data, prefix;
    int quads, flags = 0, failed;
    Py_ssize_t max_line;
    if (!PyArg_ParseTuple(args, "y*py*n|i", &data, &quads, &prefix, &max_line, &flags))
        return NULL;
    Scan r;
    memset(&r, 0, sizeof r);
    PyObject *result = NULL, *out = NULL, *slow = NULL, *where = NULL;
    Py_BEGIN_ALLOW_THREADS
    failed = scan_lines(&r, data.buf, (const u8 *)data.buf + data.len, quads, prefix.buf, prefix.len, max_line, flags);
    Py_END_ALLOW_THREADS
    if (failed) {
        PyErr_NoMemory();
    } else if ((out = out_bytes(&r.out)) && (slow = out_bytes(&r.slow)) && (where = out_bytes(&r.where))) {
        result = Py_BuildValue("(OOOOnn)", out, slow, where, r.named ? Py_True : Py_False, (Py_ssize_t)r.lines,
                               r.copied);
    }
    Py_XDECREF(out);
    Py_XDECREF(slow);
    Py_XDECREF(where);
    out_free(&r.out);
    out_free(&r.slow);
    out_free(&r.where);
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
        int n = nt_utf8_sequence(p, end);
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

/* A line of a block, for sorting. */
typedef struct {
    const u8 *p;
    Py_ssize_t n; /* without the newline */
} Line;

/* Byte order, as LC_ALL=C sort: unsigned bytes, a prefix before the longer line. */
static int line_cmp(const Line *a, const Line *b)
{
    Py_ssize_t n = a->n < b->n ? a->n : b->n;
    int c = memcmp(a->p, b->p, n);
    return c ? c : (a->n > b->n) - (a->n < b->n);
}

/* The 8 bytes of a line from `depth` (zeros past its end) and how many of them it has: lines
 * compare as their keys do, the one with fewer bytes first when the words are equal (a prefix
 * sorts first; a NUL byte sorts after the end of a line). One memory access gives the sort eight
 * bytes of progress: IRIs of one dataset share long prefixes. */
typedef struct {
    uint64_t word;
    Py_ssize_t bytes; /* 0 to 8 */
} Key;

static inline Key key_at(const Line *l, Py_ssize_t depth)
{
    Key k;
    Py_ssize_t left = l->n - depth;
    if (left >= 8) {
        memcpy(&k.word, l->p + depth, 8);
        k.bytes = 8;
    } else {
        u8 tail[8] = {0};
        k.bytes = left > 0 ? left : 0;
        if (k.bytes)
            memcpy(tail, l->p + depth, k.bytes);
        memcpy(&k.word, tail, 8);
    }
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    k.word = __builtin_bswap64(k.word); /* compared as a number: the first byte most significant */
#endif
    return k;
}

static inline int key_cmp(Key a, Key b)
{
    if (a.word != b.word)
        return a.word < b.word ? -1 : 1;
    return (a.bytes > b.bytes) - (a.bytes < b.bytes);
}

static inline void swap_lines(Line *a, Line *b)
{
    Line t = *a;
    *a = *b;
    *b = t;
}

/* Lines sharing their first `depth` bytes, compared from there (as line_cmp would compare them). */
static inline int suffix_cmp(const Line *a, const Line *b, Py_ssize_t depth)
{
    Py_ssize_t m1 = a->n - depth, m2 = b->n - depth, m = m1 < m2 ? m1 : m2;
    int c = m > 0 ? memcmp(a->p + depth, b->p + depth, m) : 0;
    return c ? c : (m1 > m2) - (m1 < m2);
}

static void insertion_sort(Line *a, Py_ssize_t n, Py_ssize_t depth)
{
    for (Py_ssize_t i = 1; i < n; i++)
        for (Py_ssize_t j = i; j > 0 && suffix_cmp(&a[j - 1], &a[j], depth) > 0; j--)
            swap_lines(&a[j - 1], &a[j]);
}

static void sift_lines(Line *a, Py_ssize_t n, Py_ssize_t i, Py_ssize_t depth)
{
    for (;;) {
        Py_ssize_t m = 2 * i + 1;
        if (m >= n)
            return;
        if (m + 1 < n && suffix_cmp(&a[m + 1], &a[m], depth) > 0)
            m++;
        if (suffix_cmp(&a[m], &a[i], depth) <= 0)
            return;
        swap_lines(&a[i], &a[m]);
        i = m;
    }
}

/* The fallback past the partition budget: O(n log n) comparisons whatever the order. */
static void heap_sort(Line *a, Py_ssize_t n, Py_ssize_t depth)
{
    for (Py_ssize_t i = n / 2 - 1; i >= 0; i--)
        sift_lines(a, n, i, depth);
    for (Py_ssize_t end = n - 1; end > 0; end--) {
        swap_lines(&a[0], &a[end]);
        sift_lines(a, end, 0, depth);
    }
}

/* Partitions of n lines into a lesser or greater part allowed on the way to any line before the
 * part is heapsorted (introsort's 2 log2 n): median-of-three pivots that a crafted order keeps
 * choosing badly cost no more. */
static int partition_budget(Py_ssize_t n)
{
    int budget = 2;
    for (; n > 1; n >>= 1)
        budget += 2;
    return budget;
}

/* Multikey quicksort (Bentley & Sedgewick, 1997) on 8-byte characters: a three-way partition on
 * the key at `depth` (key_at); the equal part goes on 8 bytes deeper. Lines sharing long prefixes
 * (IRIs of one dataset) are compared 8 bytes a step once instead of from the start at every
 * comparison.
 *
 * Bounded whatever the order of the lines (a downloaded file chooses it): of the three parts, the
 * two smaller are sorted by recursion and the largest by the loop, so at most log2 n frames are
 * nested; each step into a lesser or greater part spends one of `budget` (the equal part keeps
 * it: a crafted order running out of key values at one depth goes on at the next), and a part
 * that has spent it is heapsorted. */
static void multikey_sort(Line *a, Py_ssize_t n, Py_ssize_t depth, int budget)
{
    while (n > 1) {
        if (n < 12) {
            insertion_sort(a, n, depth);
            return;
        }
        if (budget <= 0) {
            heap_sort(a, n, depth);
            return;
        }
        /* pivot: the median of three keys */
        Key x = key_at(&a[0], depth), y = key_at(&a[n / 2], depth), z = key_at(&a[n - 1], depth);
        Key pivot = key_cmp(x, y) < 0 ? (key_cmp(y, z) < 0 ? y : (key_cmp(x, z) < 0 ? z : x))
                                      : (key_cmp(x, z) < 0 ? x : (key_cmp(y, z) < 0 ? z : y));
        Py_ssize_t lt = 0, i = 0, gt = n - 1;
        while (i <= gt) {
            int c = key_cmp(key_at(&a[i], depth), pivot);
            if (c < 0)
                swap_lines(&a[lt++], &a[i++]);
            else if (c > 0)
                swap_lines(&a[i], &a[gt--]);
            else
                i++;
        }
        /* The parts: lesser, equal (8 bytes deeper; lines that all ended within the key are the
         * same line: done), greater. */
        Line *starts[3] = {a, a + lt, a + gt + 1};
        Py_ssize_t sizes[3] = {lt, pivot.bytes < 8 ? 0 : gt + 1 - lt, n - gt - 1};
        int largest = sizes[1] > sizes[0] ? 1 : 0;
        if (sizes[2] > sizes[largest])
            largest = 2;
        for (int k = 0; k < 3; k++) {
            if (k == largest || sizes[k] < 2)
                continue;
            multikey_sort(starts[k], sizes[k], depth + (k == 1 ? 8 : 0), budget - (k != 1));
        }
        a = starts[largest];
        n = sizes[largest];
        depth += largest == 1 ? 8 : 0;
        budget -= largest != 1;
    }
}

/* The lines of [p, stop) (the last without its newline maybe) into *lines: their count, or -1. */
static Py_ssize_t split_lines(const u8 *p, const u8 *stop, Line **lines)
{
    Py_ssize_t count = 0, cap = (stop - p) / 64 + 16;
    *lines = PyMem_RawMalloc(cap * sizeof(Line));
    if (!*lines)
        return -1;
    while (p < stop) {
        const u8 *nl = memchr(p, '\n', stop - p);
        const u8 *end = nl ? nl : stop;
        if (count == cap) {
            Line *more = PyMem_RawRealloc(*lines, (cap *= 2) * sizeof(Line));
            if (!more)
                return -1;
            *lines = more;
        }
        (*lines)[count].p = p;
        (*lines)[count].n = end - p;
        count++;
        p = nl ? nl + 1 : stop;
    }
    return count;
}

/* Sort the lines and keep each once: how many are kept (at the front). */
static Py_ssize_t sort_unique(Line *lines, Py_ssize_t count)
{
    Py_ssize_t kept = 0;
    multikey_sort(lines, count, 0, partition_budget(count));
    for (Py_ssize_t i = 0; i < count; i++)
        if (!kept || line_cmp(&lines[kept - 1], &lines[i]))
            lines[kept++] = lines[i];
    return kept;
}

static PyObject *sorted_unique(PyObject *Py_UNUSED(self), PyObject *args)
{
    Py_buffer data;
    if (!PyArg_ParseTuple(args, "y*", &data))
        return NULL;
    Line *lines = NULL;
    PyObject *result = NULL;
    Py_ssize_t count = split_lines(data.buf, (const u8 *)data.buf + data.len, &lines);
    if (count < 0) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t size = 0, kept;
    Py_BEGIN_ALLOW_THREADS
    kept = sort_unique(lines, count);
    for (Py_ssize_t i = 0; i < kept; i++)
        size += lines[i].n + 1;
    Py_END_ALLOW_THREADS
    result = PyBytes_FromStringAndSize(NULL, size);
    if (!result)
        goto done;
    u8 *out = (u8 *)PyBytes_AS_STRING(result);
    for (Py_ssize_t i = 0; i < kept; i++) {
        memcpy(out, lines[i].p, lines[i].n);
        out += lines[i].n;
        *out++ = '\n';
    }
done:
    PyMem_RawFree(lines);
    PyBuffer_Release(&data);
    return result;
}

#define RUN_BUFFER (64 * 1024)
#define OUT_BUFFER (1024 * 1024)

/* -- sorted runs -----------------------------------------------------------------------------------
 *
 * A sorted run file holds its lines front-coded: for each line, how many bytes it shares with the
 * line before it, how many bytes follow (two LEB128 numbers) and those bytes. Sorted lines share
 * long prefixes (the IRIs of one dataset, a subject's statements), so a run is smaller than its
 * text (fewer pages written and read back) and the merge looks for no newlines. */

/* A LEB128 number at p (`avail` bytes there): its length, 0 when cut short, -1 past 10 bytes. */
static int get_varint(const u8 *p, Py_ssize_t avail, uint64_t *v)
{
    uint64_t x = 0;
    for (int i = 0; i < 10; i++) {
        if (i >= avail)
            return 0;
        x |= (uint64_t)(p[i] & 0x7F) << (7 * i);
        if (!(p[i] & 0x80)) {
            *v = x;
            return i + 1;
        }
    }
    return -1;
}

static int put_varint(u8 *p, uint64_t v)
{
    int n = 0;
    for (; v >= 0x80; v >>= 7)
        p[n++] = (u8)(v | 0x80);
    p[n++] = (u8)v;
    return n;
}

/* A sorted run file read line by line through its own buffer. */
typedef struct {
    int fd, eof;
    int live; /* whether `cur` holds a line (0 once the run is done) */
    u8 *buf;
    Py_ssize_t cap, start, end;
    u8 *line; /* the current line, rebuilt from the one before and its new bytes */
    Py_ssize_t line_cap;
    Line cur;
} Cursor;

/* The next line of the run into c->cur (valid until the next call): 1, 0 at the end, -1 on error
 * (errno; EINVAL for a run that is not one this module wrote). */
static int cursor_next(Cursor *c)
{
    for (;;) {
        const u8 *p = c->buf + c->start;
        Py_ssize_t avail = c->end - c->start, need = RUN_BUFFER;
        uint64_t shared = 0, more = 0;
        int h1 = get_varint(p, avail, &shared), h2 = h1 > 0 ? get_varint(p + h1, avail - h1, &more) : 0;
        if (h1 < 0 || h2 < 0 || (h1 > 0 && (shared > (uint64_t)c->cur.n || more > (uint64_t)PY_SSIZE_T_MAX / 2))) {
            errno = EINVAL;
            return -1;
        }
        if (h2 > 0) {
            need = h1 + h2 + (Py_ssize_t)more;
            if (avail >= need) {
                Py_ssize_t n = (Py_ssize_t)shared + (Py_ssize_t)more;
                if (n > c->line_cap || !c->line) { /* never NULL: an empty line is compared too */
                    u8 *bigger = PyMem_RawRealloc(c->line, n * 2 + 64);
                    if (!bigger) {
                        errno = ENOMEM;
                        return -1;
                    }
                    c->line = bigger;
                    c->line_cap = n * 2 + 64;
                }
                if (more)
                    memcpy(c->line + shared, p + h1 + h2, (size_t)more);
                c->cur.p = c->line;
                c->cur.n = n;
                c->start += need;
                return 1;
            }
        }
        if (c->eof) {
            if (avail) { /* cut short */
                errno = EINVAL;
                return -1;
            }
            return 0;
        }
        memmove(c->buf, c->buf + c->start, avail);
        c->end = avail;
        c->start = 0;
        if (need > c->cap) { /* a line longer than the buffer */
            u8 *bigger = PyMem_RawRealloc(c->buf, need);
            if (!bigger) {
                errno = ENOMEM;
                return -1;
            }
            c->buf = bigger;
            c->cap = need;
        }
        ssize_t got = read(c->fd, c->buf + c->end, c->cap - c->end);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return -1;
        if (got == 0)
            c->eof = 1;
        c->end += got;
    }
}

static int write_all(int fd, const u8 *p, Py_ssize_t n)
{
    while (n > 0) {
        ssize_t done = write(fd, p, n);
        if (done < 0 && errno == EINTR)
            continue;
        if (done < 0)
            return -1;
        p += done;
        n -= done;
    }
    return 0;
}

/* A sorted run written through a buffer, each line front-coded against the one before. */
typedef struct {
    int fd;
    u8 *buf;
    Py_ssize_t used;
    const u8 *prev; /* the line before: in the caller's memory, or `own` */
    Py_ssize_t prev_n;
    u8 *own;
    Py_ssize_t own_cap;
} RunOut;

static int run_out_flush(RunOut *o)
{
    if (write_all(o->fd, o->buf, o->used) < 0)
        return -1;
    o->used = 0;
    return 0;
}

/* Add the next line (in order, no newline); with `kept`, p stays where it is until the next line
 * is added (else it is copied). 0, or -1 (errno). */
static int run_out_put(RunOut *o, const u8 *p, Py_ssize_t n, int kept)
{
    Py_ssize_t m = n < o->prev_n ? n : o->prev_n, shared = 0;
    while (shared + 8 <= m) {
        uint64_t a, b;
        memcpy(&a, p + shared, 8);
        memcpy(&b, o->prev + shared, 8);
        if (a != b)
            break;
        shared += 8;
    }
    while (shared < m && p[shared] == o->prev[shared])
        shared++;
    u8 head[20];
    int h = put_varint(head, (uint64_t)shared);
    h += put_varint(head + h, (uint64_t)(n - shared));
    if (o->used + h + (n - shared) > OUT_BUFFER && run_out_flush(o) < 0)
        return -1;
    if (h + (n - shared) > OUT_BUFFER) { /* a line longer than the buffer */
        if (write_all(o->fd, head, h) < 0 || write_all(o->fd, p + shared, n - shared) < 0)
            return -1;
    } else {
        memcpy(o->buf + o->used, head, h);
        memcpy(o->buf + o->used + h, p + shared, n - shared);
        o->used += h + (n - shared);
    }
    if (kept) {
        o->prev = p;
    } else {
        if (n > o->own_cap) {
            u8 *bigger = PyMem_RawRealloc(o->own, n * 2);
            if (!bigger) {
                errno = ENOMEM;
                return -1;
            }
            o->own = bigger;
            o->own_cap = n * 2;
        }
        if (n)
            memcpy(o->own, p, n);
        o->prev = o->own;
    }
    o->prev_n = n;
    return 0;
}

/* A run writer on fd: 0, or -1 (ENOMEM). */
static int run_out_start(RunOut *o, int fd)
{
    memset(o, 0, sizeof(*o));
    o->fd = fd;
    o->prev = (const u8 *)"";
    o->buf = PyMem_RawMalloc(OUT_BUFFER);
    if (!o->buf) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

static void run_out_free(RunOut *o)
{
    PyMem_RawFree(o->buf);
    PyMem_RawFree(o->own);
    o->buf = o->own = NULL;
}

static PyObject *write_sorted_run(PyObject *Py_UNUSED(self), PyObject *args)
{
    Py_buffer data;
    int fd, saved = 0, failed = 0;
    if (!PyArg_ParseTuple(args, "y*i", &data, &fd))
        return NULL;
    Line *lines = NULL;
    PyObject *result = NULL;
    Py_ssize_t count = split_lines(data.buf, (const u8 *)data.buf + data.len, &lines), kept = 0;
    if (count < 0) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    RunOut o;
    kept = sort_unique(lines, count);
    failed = run_out_start(&o, fd) < 0;
    for (Py_ssize_t i = 0; !failed && i < kept; i++)
        failed = run_out_put(&o, lines[i].p, lines[i].n, 1) < 0;
    failed = failed || run_out_flush(&o) < 0;
    saved = errno;
    run_out_free(&o);
    Py_END_ALLOW_THREADS
    if (failed) {
        errno = saved;
        PyErr_SetFromErrno(saved == ENOMEM ? PyExc_MemoryError : PyExc_OSError);
        goto done;
    }
    result = PyLong_FromSsize_t(kept);
done:
    PyMem_RawFree(lines);
    PyBuffer_Release(&data);
    return result;
}

/* A k-way merge of sorted runs: a tournament (loser) tree of their cursors and the last line given
 * (each line once). The tree's node j > 0 holds the cursor that lost the match there, node 0 the
 * winner; the leaf of cursor i is node k + i. A new line of the winner is played against the
 * losers on its way up, one comparison a level (a heap's sift makes two). */
typedef struct {
    Cursor *cursors;
    Py_ssize_t *tree;
    Py_ssize_t k;
    u8 *last;          /* the last unique line, newline-terminated */
    Py_ssize_t last_n; /* its length without the newline; -1 before the first */
    Py_ssize_t last_cap;
} Merge;

/* Whether cursor a's line comes before cursor b's (a run that is done comes after every line). */
static inline int wins(const Merge *m, Py_ssize_t a, Py_ssize_t b)
{
    const Cursor *x = &m->cursors[a], *y = &m->cursors[b];
    if (!y->live)
        return 1;
    return x->live && line_cmp(&x->cur, &y->cur) < 0;
}

/* Play cursor i's (new) line up from its leaf: the winner goes on, the loser stays at each node.
 * While the tree is built, a node without a player (-1) keeps the first that reaches it. */
static void replay(Merge *m, Py_ssize_t i)
{
    Py_ssize_t winner = i;
    for (Py_ssize_t node = (m->k + i) / 2; node > 0; node /= 2) {
        Py_ssize_t there = m->tree[node];
        if (there < 0) {
            m->tree[node] = winner;
            return;
        }
        if (wins(m, there, winner)) {
            m->tree[node] = winner;
            winner = there;
        }
    }
    m->tree[0] = winner;
}

static void merge_free(Merge *m)
{
    if (m->cursors)
        for (Py_ssize_t i = 0; i < m->k; i++) {
            PyMem_RawFree(m->cursors[i].buf);
            PyMem_RawFree(m->cursors[i].line);
        }
    PyMem_RawFree(m->cursors);
    PyMem_RawFree(m->tree);
    PyMem_RawFree(m->last);
    memset(m, 0, sizeof(*m));
    m->last_n = -1;
}

/* Start merging the runs open on `fds` (their first lines read): 0, or -1 (errno; merge_free it). */
static int merge_start(Merge *m, const int *fds, Py_ssize_t k)
{
    memset(m, 0, sizeof(*m));
    m->last_n = -1;
    m->k = k;
    m->cursors = PyMem_RawCalloc(k ? k : 1, sizeof(Cursor));
    m->tree = PyMem_RawMalloc((k ? k : 1) * sizeof(Py_ssize_t));
    if (!m->cursors || !m->tree) {
        errno = ENOMEM;
        return -1;
    }
    for (Py_ssize_t i = 0; i < (k ? k : 1); i++)
        m->tree[i] = -1;
    for (Py_ssize_t i = 0; i < k; i++) {
        m->cursors[i].fd = fds[i];
        m->cursors[i].cap = RUN_BUFFER;
        if (!(m->cursors[i].buf = PyMem_RawMalloc(RUN_BUFFER))) {
            errno = ENOMEM;
            return -1;
        }
        int got = cursor_next(&m->cursors[i]);
        if (got < 0)
            return -1;
        m->cursors[i].live = got;
    }
    for (Py_ssize_t i = k - 1; i >= 0; i--)
        replay(m, i);
    return 0;
}

/* The next line unlike the last into m->last: 1, 0 when the runs are done, -1 on error (errno). */
static int merge_next(Merge *m)
{
    for (;;) {
        Py_ssize_t w = m->tree[0];
        if (w < 0 || !m->cursors[w].live)
            return 0;
        Cursor *top = &m->cursors[w];
        const Line *line = &top->cur;
        int fresh = m->last_n != line->n || (line->n && memcmp(m->last, line->p, line->n));
        if (fresh) {
            if (line->n + 1 > m->last_cap) {
                u8 *more = PyMem_RawRealloc(m->last, (line->n + 1) * 2);
                if (!more) {
                    errno = ENOMEM;
                    return -1;
                }
                m->last = more;
                m->last_cap = (line->n + 1) * 2;
            }
            if (line->n)
                memcpy(m->last, line->p, line->n);
            m->last[line->n] = '\n';
            m->last_n = line->n;
        }
        int got = cursor_next(top);
        if (got < 0)
            return -1;
        top->live = got;
        replay(m, w);
        if (fresh)
            return 1;
    }
}

/* Merge `k` sorted runs into the sorted run `out_fd`, each line once; the number of lines written,
 * or -1 (errno). */
static Py_ssize_t merge_fds(const int *fds, Py_ssize_t k, int out_fd)
{
    Merge m;
    RunOut o;
    Py_ssize_t written = 0, result = -1;
    int got = -1;
    memset(&o, 0, sizeof o);
    if (merge_start(&m, fds, k) < 0 || run_out_start(&o, out_fd) < 0)
        goto done;
    while ((got = merge_next(&m)) > 0) {
        if (run_out_put(&o, m.last, m.last_n, 0) < 0)
            goto done;
        written++;
    }
    if (got < 0 || run_out_flush(&o) < 0)
        goto done;
    result = written;
done:
    merge_free(&m);
    run_out_free(&o);
    return result;
}

/* The paths of a sequence opened for reading into fds[0..*opened) (closed by the caller). The
 * sequence is taken once as a tuple: a path object's __fspath__ (Python code) may change the
 * caller's list while they are opened. 0, or -1 with an exception set. */
static int open_runs(PyObject *given, int **fds, Py_ssize_t *k, Py_ssize_t *opened)
{
    PyObject *paths = PySequence_Tuple(given);
    *fds = NULL;
    *k = *opened = 0;
    if (!paths)
        return -1;
    *k = PyTuple_GET_SIZE(paths);
    if (!(*fds = PyMem_RawCalloc(*k ? *k : 1, sizeof(int)))) {
        Py_DECREF(paths);
        PyErr_NoMemory();
        return -1;
    }
    for (; *opened < *k; (*opened)++) {
        PyObject *encoded;
        if (!PyUnicode_FSConverter(PyTuple_GET_ITEM(paths, *opened), &encoded))
            goto failed;
        int fd = open(PyBytes_AS_STRING(encoded), O_RDONLY | O_CLOEXEC);
        Py_DECREF(encoded);
        if (fd < 0) {
            PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, PyTuple_GET_ITEM(paths, *opened));
            goto failed;
        }
        (*fds)[*opened] = fd;
    }
    Py_DECREF(paths);
    return 0;
failed:
    Py_DECREF(paths);
    return -1;
}

static void close_runs(int *fds, Py_ssize_t opened)
{
    for (Py_ssize_t i = 0; i < opened; i++)
        close(fds[i]);
    PyMem_RawFree(fds);
}

static PyObject *merge_runs(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *given;
    int out_fd, *fds, saved = 0;
    Py_ssize_t k, opened, written = -1;
    if (!PyArg_ParseTuple(args, "Oi", &given, &out_fd))
        return NULL;
    if (open_runs(given, &fds, &k, &opened) < 0) {
        close_runs(fds, opened);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    written = merge_fds(fds, k, out_fd);
    saved = errno;
    Py_END_ALLOW_THREADS
    close_runs(fds, opened);
    if (written < 0) {
        errno = saved;
        return PyErr_SetFromErrno(saved == ENOMEM ? PyExc_MemoryError : PyExc_OSError);
    }
    return PyLong_FromSsize_t(written);
}

/* -- RunMerger: the merge given in pieces of a fixed size ---------------------------------------- */

typedef struct {
    PyObject_HEAD
    Merge m;
    int *fds;
    Py_ssize_t opened;
    int started, busy, closed;
    /* Bytes of m.last (its newline included) already given: the rest starts the next piece. */
    Py_ssize_t given;
    Py_ssize_t lines, bytes;
    /* Lines whose predicate holds `mark` (newline-terminated), since the last marked(). */
    PyObject *mark;
    Out marked;
} RunMerger;

/* Whether the second space-separated field of the line holds the mark. */
static int predicate_holds(const u8 *line, Py_ssize_t n, const u8 *mark, Py_ssize_t mark_n)
{
    const u8 *first = memchr(line, ' ', n);
    if (!first)
        return 0;
    const u8 *p = first + 1, *end = line + n;
    const u8 *second = memchr(p, ' ', end - p);
    if (second)
        end = second;
    return end - p >= mark_n && memmem(p, end - p, mark, mark_n) != NULL;
}

/* Fill out[0..size) with the merge's next bytes; the bytes given (less than size at the end), or -1
 * (errno). Runs without the GIL. */
static Py_ssize_t merger_fill(RunMerger *r, u8 *out, Py_ssize_t size, const u8 *mark, Py_ssize_t mark_n)
{
    Py_ssize_t used = 0;
    if (!r->started) {
        r->started = 1;
        if (merge_start(&r->m, r->fds, r->opened) < 0)
            return -1;
    }
    while (used < size) {
        Py_ssize_t left = r->m.last_n + 1 - r->given;
        if (left > 0) {
            Py_ssize_t take = left < size - used ? left : size - used;
            memcpy(out + used, r->m.last + r->given, take);
            used += take;
            r->given += take;
            continue;
        }
        int got = merge_next(&r->m);
        if (got < 0)
            return -1;
        if (!got)
            break;
        r->given = 0;
        r->lines++;
        r->bytes += r->m.last_n + 1;
        if (mark_n && predicate_holds(r->m.last, r->m.last_n, mark, mark_n) &&
            out_put(&r->marked, r->m.last, r->m.last_n + 1) < 0) {
            errno = ENOMEM;
            return -1;
        }
    }
    return used;
}

static int merger_init(RunMerger *self, PyObject *args, PyObject *Py_UNUSED(kwds))
{
    PyObject *given, *mark;
    if (self->fds || self->started)
        return PyErr_SetString(PyExc_RuntimeError, "RunMerger is started once"), -1;
    if (!PyArg_ParseTuple(args, "OO!", &given, &PyBytes_Type, &mark))
        return -1;
    self->m.last_n = -1;
    Py_INCREF(mark);
    self->mark = mark;
    Py_ssize_t k;
    if (open_runs(given, &self->fds, &k, &self->opened) < 0)
        return -1;
    return 0;
}

static void merger_release(RunMerger *self)
{
    if (self->fds)
        close_runs(self->fds, self->opened);
    self->fds = NULL;
    self->opened = 0;
    merge_free(&self->m);
    out_free(&self->marked);
    self->closed = 1;
}

static PyObject *merger_read(RunMerger *self, PyObject *args)
{
    Py_ssize_t size;
    if (!PyArg_ParseTuple(args, "n", &size))
        return NULL;
    if (size <= 0)
        return PyErr_Format(PyExc_ValueError, "read size must be positive, not %zd", size);
    if (self->busy || self->closed || !self->mark)
        return PyErr_Format(PyExc_RuntimeError, "the merger is %s",
                            self->busy ? "being read by another thread" : "closed");
    PyObject *piece = PyBytes_FromStringAndSize(NULL, size);
    if (!piece)
        return NULL;
    const u8 *mark = (const u8 *)PyBytes_AS_STRING(self->mark);
    Py_ssize_t mark_n = PyBytes_GET_SIZE(self->mark), got;
    int saved = 0;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    got = merger_fill(self, (u8 *)PyBytes_AS_STRING(piece), size, mark, mark_n);
    saved = errno;
    Py_END_ALLOW_THREADS
    self->busy = 0;
    if (got < 0) { /* the merge's state is not to be trusted further: closed */
        Py_DECREF(piece);
        merger_release(self);
        errno = saved;
        return PyErr_SetFromErrno(saved == ENOMEM ? PyExc_MemoryError : PyExc_OSError);
    }
    if (got < size && _PyBytes_Resize(&piece, got) < 0)
        return NULL;
    return piece;
}

static PyObject *merger_marked(RunMerger *self, PyObject *Py_UNUSED(ignored))
{
    if (self->busy)
        return PyErr_Format(PyExc_RuntimeError, "the merger is being read by another thread");
    PyObject *lines = PyBytes_FromStringAndSize((const char *)self->marked.p, self->marked.len);
    self->marked.len = 0;
    return lines;
}

static PyObject *merger_close(RunMerger *self, PyObject *Py_UNUSED(ignored))
{
    if (self->busy)
        return PyErr_Format(PyExc_RuntimeError, "the merger is being read by another thread");
    merger_release(self);
    Py_RETURN_NONE;
}

static void merger_dealloc(RunMerger *self)
{
    merger_release(self);
    Py_CLEAR(self->mark);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *merger_lines(RunMerger *self, void *Py_UNUSED(closure))
{
    return PyLong_FromSsize_t(self->lines);
}

static PyObject *merger_bytes(RunMerger *self, void *Py_UNUSED(closure))
{
    return PyLong_FromSsize_t(self->bytes);
}

static PyMethodDef merger_methods[] = {
    {"read", (PyCFunction)merger_read, METH_VARARGS,
     "read(size) -> the next size bytes of the merged lines (fewer at the end; b'' when done)"},
    {"marked", (PyCFunction)merger_marked, METH_NOARGS,
     "marked() -> the lines read since the last call whose predicate holds the mark"},
    {"close", (PyCFunction)merger_close, METH_NOARGS, "close() -> close the runs"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef merger_getset[] = {
    {"lines_read", (getter)merger_lines, NULL, "unique lines read so far", NULL},
    {"bytes_read", (getter)merger_bytes, NULL, "bytes of the unique lines read so far", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject RunMergerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "votersdaily.laundromat._ntscan.RunMerger",
    .tp_basicsize = sizeof(RunMerger),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "RunMerger(paths, mark): sorted unique runs merged, each line once, read in pieces",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)merger_init,
    .tp_dealloc = (destructor)merger_dealloc,
    .tp_methods = merger_methods,
    .tp_getset = merger_getset,
};

/* -- RDF/XML: where top-level node elements start ------------------------------------------------ */

/* memmem for a short needle. */
static const u8 *find(const u8 *p, const u8 *end, const char *needle)
{
    size_t n = strlen(needle);
    while (end - p >= (Py_ssize_t)n) {
        const u8 *q = memchr(p, needle[0], end - p - n + 1);
        if (!q)
            return NULL;
        if (!memcmp(q, needle, n))
            return q;
        p = q + 1;
    }
    return NULL;
}

static int is_xml_space(u8 c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The start tag at p ('<' and a name): the position past its '>', *empty when it ends "/>"; NULL
 * when it is not one this scanner reads or has an attribute named ID (rdf:ID values must be unique
 * in the document: ranges parsed apart could not tell). */
static const u8 *start_tag(const u8 *p, const u8 *end, int *empty)
{
    p++;
    while (p < end && !is_xml_space(*p) && *p != '/' && *p != '>' && *p != '<')
        p++;
    for (;;) {
        while (p < end && is_xml_space(*p))
            p++;
        if (p >= end || *p == '<')
            return NULL;
        if (*p == '>' || (*p == '/' && end - p >= 2 && p[1] == '>')) {
            *empty = *p == '/';
            return p + (*empty ? 2 : 1);
        }
        const u8 *name = p;
        while (p < end && !is_xml_space(*p) && *p != '=' && *p != '>' && *p != '/' && *p != '<')
            p++;
        if ((p - name == 2 || (p - name > 2 && p[-3] == ':')) && p[-2] == 'I' && p[-1] == 'D')
            return NULL;
        while (p < end && is_xml_space(*p))
            p++;
        if (p >= end || *p != '=')
            return NULL;
        for (p++; p < end && is_xml_space(*p);)
            p++;
        if (p >= end || (*p != '"' && *p != '\''))
            return NULL;
        const u8 *close = memchr(p + 1, *p, end - p - 1);
        if (!close || memchr(p + 1, '<', close - p - 1))
            return NULL;
        p = close + 1;
    }
}

/* Cut points of the content of an RDF/XML root element, from `start` (past its start tag): the
 * starts of lines on which a top-level element starts after white space only, one each `span`
 * bytes or more; None when the content is not plain markup this scanner follows (text, CDATA or a
 * DOCTYPE at the top level, an attribute named ID, a tag it cannot read). */
/* Bytes of a mapped file read before the pages behind the reader are given back. */
#define RELEASE_BYTES (16 << 20)

/* A pass over a mapped file at `p`: once RELEASE_BYTES or more lie between *released and p, the
 * pages read are not needed again and leave the RSS (the page cache keeps them). */
static void release_behind(const u8 **released, const u8 *p)
{
    if (p - *released >= RELEASE_BYTES) {
        Py_ssize_t page = sysconf(_SC_PAGESIZE), n = ((p - *released) / page) * page;
        madvise((void *)*released, n, MADV_DONTNEED);
        *released += n;
    }
}

static int xml_cuts_of(const u8 *buf, const u8 *end, const u8 *start, Py_ssize_t span, Out *cuts)
{
    const u8 *p = start, *last = start, *released = buf;
    int depth = 1;
    while (depth > 0) {
        release_behind(&released, p);
        const u8 *q = memchr(p, '<', end - p);
        if (!q)
            return -1;
        if (depth == 1)
            for (const u8 *c = p; c < q; c++)
                if (!is_xml_space(*c))
                    return -1;
        if (end - q < 2)
            return -1;
        if (q[1] == '/') {
            const u8 *close = memchr(q, '>', end - q);
            if (!close)
                return -1;
            depth--;
            p = close + 1;
        } else if (q[1] == '!') {
            const u8 *close = NULL;
            if (end - q >= 4 && !memcmp(q, "<!--", 4))
                close = find(q + 4, end, "-->");
            else if (depth > 1 && end - q >= 9 && !memcmp(q, "<![CDATA[", 9))
                close = find(q + 9, end, "]]>");
            if (!close)
                return -1;
            p = close + 3;
        } else if (q[1] == '?') {
            const u8 *close = find(q + 2, end, "?>");
            if (!close)
                return -1;
            p = close + 2;
        } else {
            if (depth == 1) {
                const u8 *line = q;
                while (line > buf && (line[-1] == ' ' || line[-1] == '\t'))
                    line--;
                if (line > buf && line[-1] == '\n' && line - last >= span) {
                    int64_t at = line - buf;
                    if (out_put(cuts, (const u8 *)&at, sizeof at) < 0)
                        return -2;
                    last = line;
                }
            }
            int empty;
            if (!(p = start_tag(q, end, &empty)))
                return -1;
            depth += !empty;
        }
    }
    return 0;
}

/* The file at `path` mapped read-only for a sequential pass (*map NULL when it is empty; unmap it with
 * munmap(*map, *size)): 0, or -1 with OSError set. */
static int map_file(PyObject *path, u8 **map, Py_ssize_t *size)
{
    struct stat st;
    int fd = open(PyBytes_AS_STRING(path), O_RDONLY | O_CLOEXEC);
    *map = NULL;
    if (fd < 0 || fstat(fd, &st) < 0)
        goto failed;
    *size = st.st_size;
    if (st.st_size > 0) {
        u8 *m = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED)
            goto failed;
        madvise(m, st.st_size, MADV_SEQUENTIAL);
        *map = m;
    }
    close(fd); /* the mapping stays */
    return 0;
failed:
    PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path);
    if (fd >= 0)
        close(fd);
    return -1;
}

/* Whether [start, end) of the mapped file at `buf` holds the needle: memmem over windows of
 * RELEASE_BYTES (each searched a needle's length into the next), the pages behind given back. */
static int contains(const u8 *buf, const u8 *end, const u8 *start, const void *needle, Py_ssize_t n)
{
    const u8 *released = buf;
    for (const u8 *p = start; p < end; p += RELEASE_BYTES) {
        const u8 *stop = end - p > RELEASE_BYTES + n ? p + RELEASE_BYTES + n - 1 : end;
        if (memmem(p, stop - p, needle, n))
            return 1;
        release_behind(&released, p);
    }
    return 0;
}

/* Whether the file at `path` holds `needle` at or after byte `start`: one pass at memmem's speed over
 * the mapped file, without copying it (the RDF/XML checks skip their own pass when it does not). */
static PyObject *file_contains(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *path;
    Py_ssize_t start, size;
    Py_buffer needle;
    u8 *map;
    if (!PyArg_ParseTuple(args, "O&ny*", PyUnicode_FSConverter, &path, &start, &needle))
        return NULL;
    PyObject *result = NULL;
    if (map_file(path, &map, &size) == 0) {
        int found = 0;
        if (start < 0)
            start = 0;
        Py_BEGIN_ALLOW_THREADS
        if (map && needle.len > 0 && start < size)
            found = contains(map, map + size, map + start, needle.buf, needle.len);
        if (map)
            munmap(map, size);
        Py_END_ALLOW_THREADS
        result = PyBool_FromLong(found);
    }
    Py_DECREF(path);
    PyBuffer_Release(&needle);
    return result;
}

static PyObject *xml_cuts(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *path;
    Py_ssize_t start, span, size;
    u8 *map;
    if (!PyArg_ParseTuple(args, "O&nn", PyUnicode_FSConverter, &path, &start, &span))
        return NULL;
    Out cuts = {NULL, 0, 0};
    PyObject *result = NULL;
    int r = -1;
    if (map_file(path, &map, &size) < 0)
        goto done;
    Py_BEGIN_ALLOW_THREADS
    if (map && start >= 0 && start < size)
        r = xml_cuts_of(map, map + size, map + start, span, &cuts);
    if (map)
        munmap(map, size);
    Py_END_ALLOW_THREADS
    if (r == -2) {
        PyErr_NoMemory();
    } else if (r < 0) {
        result = Py_NewRef(Py_None);
    } else if ((result = PyList_New(cuts.len / 8))) {
        for (Py_ssize_t i = 0; i < cuts.len / 8; i++) {
            int64_t at;
            memcpy(&at, cuts.p + 8 * i, 8);
            PyObject *n = PyLong_FromLongLong(at);
            if (!n) {
                Py_CLEAR(result);
                break;
            }
            PyList_SET_ITEM(result, i, n);
        }
    }
done:
    Py_DECREF(path);
    out_free(&cuts);
    return result;
}

static PyMethodDef methods[] = {
    {"file_contains", file_contains, METH_VARARGS,
     "file_contains(path, start, needle) -> whether the file holds needle at or after byte start"},
    {"rdfxml_lines", nt_rdfxml_lines, METH_VARARGS,
     "rdfxml_lines(document) -> the N-Quads pyoxigraph writes for plain RDF/XML, or None (_rdfxml.c)"},
    {"xml_cuts", xml_cuts, METH_VARARGS,
     "xml_cuts(path, start, span) -> line starts where top-level elements of an RDF/XML root start, or None"},
    {"canonical_lines", canonical_lines, METH_VARARGS,
     "canonical_lines(data, quads, prefix, max_line[, flags]) -> (out, slow, slow_line_numbers, named, lines, copied)"},
    {"merge_runs", merge_runs, METH_VARARGS,
     "merge_runs(paths, fd) -> lines: the sorted runs (a sequence of paths) merged into the sorted run fd, each line once"},
    {"sorted_unique", sorted_unique, METH_VARARGS, "sorted_unique(block) -> the unique lines of block in byte order"},
    {"write_sorted_run", write_sorted_run, METH_VARARGS,
     "write_sorted_run(block, fd) -> lines: the unique lines of block in byte order written to fd as a sorted run"},
    {"utf8_counts", utf8_counts, METH_VARARGS, "utf8_counts(data) -> (valid, chars, lf, cr, crlf)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ntscan", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__ntscan(void)
{
    init_classes();
    if (PyType_Ready(&RunMergerType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m && nt_add_turtle(m) < 0)
        Py_CLEAR(m);
    if (m && PyModule_AddObjectRef(m, "RunMerger", (PyObject *)&RunMergerType) < 0)
        Py_CLEAR(m);
    return m;
}
