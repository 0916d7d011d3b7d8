/* The laundromat's compiled Turtle and TriG reader (see native.py, which documents the contract).
 *
 * TurtleReader(path, trig, base_iri, prefix) reads a document and gives its final lines: canonical
 * N-Quads statements as pyoxigraph's parser and serializer followed by rdf11.py and skolem.py would
 * write them (IRIs resolved, blank nodes skolemised under `prefix`, the parser's anonymous nodes and
 * labels that look like them numbered "-anonN" in the order pyoxigraph would first write them).
 *
 * It reads a strict subset of Turtle 1.1 and TriG 1.1: ASCII IRIs, prefixed names and blank node
 * labels (any UTF-8 in literals), no escapes in IRIs, language tags of the common shapes, no RDF 1.2
 * syntax, no dot segments in IRIs, nesting at most MAX_DEPTH deep. Anything else, and every syntax
 * error, raises TurtleUnsupported with the reason: the caller then cleans the whole document with
 * pyoxigraph, which says what is wrong and where. So the lines given are the ones the pure-Python
 * path gives for the same document, or none (tests/laundromat/test_native.py holds both paths to
 * the same output on the W3C suites, mutations of their documents and the benchmark's files).
 *
 * The order of the statements follows pyoxigraph's parser (oxttl), which decides the numbers of
 * anonymous blank nodes: the statements inside an object's `[ ... ]` come before the statement that
 * links it; the statement linking a collection comes before its cells; each `rdf:rest` comes after
 * the element before it.
 */
#include "_ntscan.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Nesting of blank node property lists and collections read before giving up (the recursion is
 * bounded; pyoxigraph reads deeper documents). */
#define MAX_DEPTH 200
/* Prefixes declared before giving up (looked up linearly). */
#define MAX_PREFIXES 512
/* A line this long or longer gives up: pyoxigraph keeps a token's line in a buffer of 16 MiB and
 * refuses a token it cannot hold (the statement is lost with that reason), so such documents are
 * left to it (tests/laundromat/test_contexts.py, a statement past the token buffer). */
#define MAX_LINE (1 << 23)
/* A statement whose lines or scratch space grow past this gives up: the reader holds a statement
 * whole (pyoxigraph streams it), so its memory stays bounded whatever one statement holds. */
#define MAX_STATEMENT (1 << 26)

#define RDF "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
#define XSD "http://www.w3.org/2001/XMLSchema#"
static const char RDF_FIRST[] = "<" RDF "first>", RDF_REST[] = "<" RDF "rest>", RDF_NIL[] = "<" RDF "nil>",
                  RDF_TYPE[] = "<" RDF "type>", RDF_LANG[] = "<" RDF "langString>",
                  RDF_DIRLANG[] = "<" RDF "dirLangString>", XSD_STRING[] = "<" XSD "string>",
                  XSD_INTEGER[] = "<" XSD "integer>", XSD_DECIMAL[] = "<" XSD "decimal>",
                  XSD_DOUBLE[] = "<" XSD "double>";

static PyObject *Unsupported;

/* A term: its final text (in the document or the arena), a document's blank node label (written
 * under the prefix), or a blank node numbered when first written (an anonymous one of the current
 * statement, or a label that looks like one the parser invents). */
enum { K_TEXT, K_LABEL, K_ANON, K_HEX };
/* Where a K_TEXT term's text is: the document, the statement's arena, the graph label's buffer. */
enum { W_DOC, W_ARENA, W_GRAPH };

typedef struct {
    int kind, where;
    Py_ssize_t off, len, id;
} Term;

typedef struct {
    u8 *name, *iri; /* the IRI with its angle brackets */
    Py_ssize_t name_len, iri_len;
} Prefix;

/* A statement waiting to be written with the others oxttl gives at the same token. */
typedef struct {
    Term s, p, o, g;
    int has_g;
} Quad;

/* A label of 16 to 32 lower-case hex digits and its number (-1: not written yet). */
typedef struct {
    u8 label[32];
    int len;
    long number;
} HexLabel;

/* The parts of an absolute IRI (offsets into its text, without angle brackets). */
typedef struct {
    Py_ssize_t scheme, auth_end, path_end, query_end, len; /* scheme: the ':' */
    int has_auth;
} Parts;

typedef struct {
    PyObject_HEAD
    const u8 *doc, *end, *p;
    const u8 *line_start; /* after the last line end skip_ws passed */
    Py_ssize_t longest;   /* the longest stretch from a line's start to a token's end seen */
    size_t map_len;
    Py_ssize_t released; /* document bytes whose pages were given back */
    int trig, depth, done;
    int in_graph, has_graph_label; /* inside a wrapped graph; whether it has a label (`graph`) */
    Term graph;
    Out out, arena, graph_text;
    Out base; /* without angle brackets; len 0: none */
    Parts base_parts;
    Prefix *prefixes;
    Py_ssize_t n_prefixes;
    u8 *genid;
    Py_ssize_t genid_len;
    HexLabel *hex;
    Py_ssize_t n_hex, cap_hex;
    long *anon; /* numbers of the statement's anonymous nodes (-1: not written yet) */
    Py_ssize_t n_anon, cap_anon, anon_floor;
    long next_number;
    /* oxttl gives the statements one token makes last first (its parser pops them): the statements
     * of the token at document offset group_at, written in reverse when another token's come. */
    Quad *group;
    Py_ssize_t n_group, cap_group, group_at;
    Py_ssize_t statements;
    int named;
    /* Reading in ranges (turtle_ranges.py): a first range stops at `stop` when it is where a
     * statement of the top level starts and no directive came after the first statement (at_cut);
     * a later range reads the prologue's directives, then jumps to `jump_to`. The numbers of the
     * ranges before it are not known to a later range: it numbers its anonymous nodes from 0,
     * writes them with a mark (DEFERRED_MARK) and their statements apart (`deferred`), for
     * renumber() to add the first range's count; it gives up on a label that looks generated
     * (the same label may have been numbered before it). */
    Out deferred;
    const u8 *stop, *jump_to;
    int later_range, statement_seen, late_directive, at_cut;
    const char *why; /* why the reader gave up */
    Py_ssize_t why_at;
} Reader;

#define GIVE_UP(t, reason) return ((t)->why = (reason), (t)->why_at = (t)->p - (t)->doc, -1)
#define NOMEM(t) return ((t)->why = NULL, -2)

static int put(Reader *t, Out *o, const void *p, Py_ssize_t n)
{
    if (out_put(o, p, n) < 0)
        NOMEM(t);
    return 0;
}

/* -- lexical helpers ----------------------------------------------------------------------------- */

static int is_alpha(int c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static int is_digit(int c)
{
    return c >= '0' && c <= '9';
}

/* PN_CHARS of Turtle, ASCII only: letters, digits, '_', '-'. */
static int is_pn_chars(int c)
{
    return is_alpha(c) || is_digit(c) || c == '_' || c == '-';
}

static void note_line(Reader *t, const u8 *p)
{
    if (p - t->line_start > t->longest)
        t->longest = p - t->line_start;
}

static void skip_ws(Reader *t)
{
    const u8 *p = t->p, *end = t->end;
    note_line(t, p);
    for (;;) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) {
            if (*p == '\n' || *p == '\r')
                t->line_start = p + 1;
            p++;
        }
        if (p < end && *p == '#') {
            while (p < end && *p != '\n' && *p != '\r')
                p++;
            note_line(t, p);
            continue;
        }
        break;
    }
    t->p = p;
}

/* Bytes by what they are to the reader (a table: these are asked of every byte of every IRI). */
enum { B_IRI_END = 1, B_IRI_BAD = 2, B_DELIMITER = 4 };
static u8 byte_class[256];

static void classify_bytes(void)
{
    for (int c = 0; c < 256; c++) {
        if (c <= 0x20 || c >= 0x7f || strchr("<\"{}|^`\\", c))
            byte_class[c] |= B_IRI_BAD;
        if (c && strchr(" \t\n\r#<[(\"'.,;)]}", c))
            byte_class[c] |= B_DELIMITER;
    }
    byte_class['>'] |= B_IRI_END;
}

static int at(Reader *t, u8 c)
{
    return t->p < t->end && *t->p == c;
}

/* After a keyword or a number: the next byte may not continue a name. */
static int at_delimiter(Reader *t)
{
    if (t->p >= t->end)
        return 1;
    return byte_class[*t->p] & B_DELIMITER;
}

/* A path segment "." or ".." in [p, end) (a path, query and fragment). */
static int has_dot_segment(const u8 *p, const u8 *end)
{
    const u8 *stop = p;
    while (stop < end && *stop != '?' && *stop != '#')
        stop++;
    while (p < stop) {
        const u8 *q = p;
        while (q < stop && *q != '/')
            q++;
        if ((q - p == 1 && p[0] == '.') || (q - p == 2 && p[0] == '.' && p[1] == '.'))
            return 1;
        p = q + 1;
    }
    return 0;
}

/* -- terms ---------------------------------------------------------------------------------------- */

static const u8 *text_of(Reader *t, const Term *x)
{
    return (x->where == W_ARENA ? t->arena.p : x->where == W_GRAPH ? t->graph_text.p : t->doc) + x->off;
}

static Term doc_text(Reader *t, const u8 *p, const u8 *q)
{
    Term x = {K_TEXT, W_DOC, p - t->doc, q - p, 0};
    return x;
}

static Term constant(Reader *t, const char *s, Py_ssize_t n, int *failed)
{
    Term x = {K_TEXT, W_ARENA, t->arena.len, n, 0};
    *failed = out_put(&t->arena, (const u8 *)s, n) < 0;
    return x;
}

#define CONSTANT(t, s, x)                                                                                              \
    do {                                                                                                               \
        int _failed;                                                                                                   \
        *(x) = constant(t, s, sizeof s - 1, &_failed);                                                                 \
        if (_failed)                                                                                                   \
            NOMEM(t);                                                                                                  \
    } while (0)

/* Room for one more item of `size` bytes in the array *items of *cap (n used): 0, or -1. */
static int grow(void **items, Py_ssize_t *cap, Py_ssize_t n, size_t size)
{
    if (n < *cap)
        return 0;
    Py_ssize_t more = *cap ? *cap * 2 : 16;
    void *p = PyMem_RawRealloc(*items, more * size);
    if (!p)
        return -1;
    *items = p;
    *cap = more;
    return 0;
}

static int new_anon(Reader *t, Term *x)
{
    if (grow((void **)&t->anon, &t->cap_anon, t->n_anon, sizeof(long)) < 0)
        NOMEM(t);
    t->anon[t->n_anon] = -1;
    Term term = {K_ANON, 0, 0, 0, t->n_anon++};
    *x = term;
    return 0;
}

/* The hex-like label [p, q): its entry (added when new). */
static int hex_label(Reader *t, const u8 *p, const u8 *q, Term *x)
{
    Py_ssize_t i;
    for (i = 0; i < t->n_hex; i++)
        if (t->hex[i].len == q - p && !memcmp(t->hex[i].label, p, q - p))
            break;
    if (i == t->n_hex) {
        if (t->n_hex == 4096)
            GIVE_UP(t, "too many blank node labels that look generated");
        if (grow((void **)&t->hex, &t->cap_hex, t->n_hex, sizeof(HexLabel)) < 0)
            NOMEM(t);
        memcpy(t->hex[i].label, p, q - p);
        t->hex[i].len = (int)(q - p);
        t->hex[i].number = -1;
        t->n_hex++;
    }
    Term term = {K_HEX, 0, 0, 0, i};
    *x = term;
    return 0;
}

/* -- IRIs ----------------------------------------------------------------------------------------- */

static void parts_of(const u8 *s, Py_ssize_t len, Parts *parts)
{
    Py_ssize_t i = 0;
    while (i < len && s[i] != ':')
        i++;
    parts->scheme = i++;
    parts->has_auth = len - i >= 2 && s[i] == '/' && s[i + 1] == '/';
    if (parts->has_auth) {
        i += 2;
        while (i < len && s[i] != '/' && s[i] != '?' && s[i] != '#')
            i++;
    }
    parts->auth_end = i;
    while (i < len && s[i] != '?' && s[i] != '#')
        i++;
    parts->path_end = i;
    while (i < len && s[i] != '#')
        i++;
    parts->query_end = i;
    parts->len = len;
}

/* Whether [p, q) starts with a scheme and its ':'. */
static int has_scheme(const u8 *p, const u8 *q)
{
    if (p >= q || !is_alpha(*p))
        return 0;
    while (p < q && IS(*p, C_SCHEME))
        p++;
    return p < q && *p == ':';
}

/* An IRI's final text "<...>" (in the arena, from `start`) checked: valid in the conservative
 * grammar, no dot segment. */
static int check_iri(Reader *t, Py_ssize_t start, Term *x)
{
    const u8 *s = t->arena.p + start, *e = t->arena.p + t->arena.len;
    if (nt_scan_iri(s, e) != e)
        GIVE_UP(t, "an IRI outside the ASCII grammar");
    if (nt_dotted(s, e))
        GIVE_UP(t, "an IRI with a dot segment");
    Term term = {K_TEXT, W_ARENA, start, e - s, 0};
    *x = term;
    return 0;
}

/* The reference [p, q) (no angle brackets) resolved against the base (RFC 3986 §5.2.2; with no dot
 * segment anywhere, removing them changes nothing) into the arena as "<...>". */
static int resolve(Reader *t, const u8 *p, const u8 *q, Term *x)
{
    if (!t->base.len)
        GIVE_UP(t, "a relative IRI without a base");
    const u8 *b = t->base.p;
    const Parts *bp = &t->base_parts;
    const u8 *path = p, *path_end = p;
    while (path_end < q && *path_end != '?' && *path_end != '#')
        path_end++;
    if (has_dot_segment(p, q))
        GIVE_UP(t, "a relative IRI with a dot segment");
    Py_ssize_t start = t->arena.len;
    TRY(put(t, &t->arena, "<", 1));
    if (q - p >= 2 && p[0] == '/' && p[1] == '/') { /* scheme of the base, the rest of the reference */
        TRY(put(t, &t->arena, b, bp->scheme + 1));
        TRY(put(t, &t->arena, p, q - p));
    } else {
        TRY(put(t, &t->arena, b, bp->auth_end)); /* scheme ":" ["//" authority] */
        if (path_end == path) {                  /* no path: the base's, and its query unless one is given */
            TRY(put(t, &t->arena, b + bp->auth_end, bp->path_end - bp->auth_end));
            if (path_end < q && *path_end == '?')
                TRY(put(t, &t->arena, path_end, q - path_end));
            else {
                TRY(put(t, &t->arena, b + bp->path_end, bp->query_end - bp->path_end));
                TRY(put(t, &t->arena, path_end, q - path_end));
            }
        } else if (*path == '/') {
            TRY(put(t, &t->arena, p, q - p));
        } else {
            for (const u8 *c = path; c < path_end && *c != '/'; c++)
                if (*c == ':')
                    GIVE_UP(t, "a relative path whose first segment has a colon");
            if (bp->has_auth && bp->path_end == bp->auth_end) {
                TRY(put(t, &t->arena, "/", 1));
            } else { /* the base's path up to its last '/' */
                Py_ssize_t cut = bp->path_end;
                while (cut > bp->auth_end && b[cut - 1] != '/')
                    cut--;
                TRY(put(t, &t->arena, b + bp->auth_end, cut - bp->auth_end));
            }
            TRY(put(t, &t->arena, p, q - p));
        }
    }
    TRY(put(t, &t->arena, ">", 1));
    return check_iri(t, start, x);
}

/* An IRIREF at '<'. */
static int read_iriref(Reader *t, Term *x)
{
    const u8 *p = t->p + 1, *q = p;
    while (q < t->end && !(byte_class[*q] & (B_IRI_END | B_IRI_BAD)))
        q++;
    if (q < t->end && *q != '>')
        GIVE_UP(t, "an IRI with an escape, a non-ASCII or a forbidden character");
    if (q >= t->end)
        GIVE_UP(t, "an unterminated IRI");
    t->p = q + 1;
    if (has_scheme(p, q)) { /* absolute: as written */
        if (nt_scan_iri(p - 1, q + 1) != q + 1)
            GIVE_UP(t, "an IRI outside the ASCII grammar");
        if (nt_dotted(p - 1, q + 1))
            GIVE_UP(t, "an IRI with a dot segment");
        *x = doc_text(t, p - 1, q + 1);
        return 0;
    }
    return resolve(t, p, q, x);
}

/* PN_PREFIX (ASCII) from t->p: its end, trailing dots left out. */
static const u8 *scan_prefix_name(Reader *t)
{
    const u8 *p = t->p, *last = p;
    if (p < t->end && is_alpha(*p)) {
        p++;
        last = p;
        while (p < t->end && (is_pn_chars(*p) || *p == '.')) {
            if (*p != '.')
                last = p + 1;
            p++;
        }
    }
    return last;
}

static const Prefix *find_prefix(Reader *t, const u8 *p, const u8 *q)
{
    for (Py_ssize_t i = 0; i < t->n_prefixes; i++)
        if (t->prefixes[i].name_len == q - p && !memcmp(t->prefixes[i].name, p, q - p))
            return &t->prefixes[i];
    return NULL;
}

/* A prefixed name at t->p (its prefix scanned to `colon`): the IRI it stands for. */
static int read_pname(Reader *t, const u8 *colon, Term *x)
{
    const Prefix *prefix = find_prefix(t, t->p, colon);
    if (!prefix)
        GIVE_UP(t, "an undeclared prefix");
    Py_ssize_t start = t->arena.len;
    TRY(put(t, &t->arena, prefix->iri, prefix->iri_len - 1)); /* without its '>' */
    const u8 *p = colon + 1, *end = t->end;
    Py_ssize_t keep = t->arena.len; /* the arena's length after the last byte that may end the name */
    const u8 *stop = p;
    int first = 1;
    while (p < end) {
        u8 c = *p;
        if (c == '%') {
            if (end - p < 3 || !IS(p[1], C_HEX) || !IS(p[2], C_HEX))
                GIVE_UP(t, "a bad percent-encoding in a prefixed name");
            TRY(put(t, &t->arena, p, 3));
            p += 3;
        } else if (c == '\\') {
            if (end - p < 2 || !p[1] || !strchr("_~.-!$&'()*+,;=/?#@%", p[1]))
                GIVE_UP(t, "a bad escape in a prefixed name");
            TRY(put(t, &t->arena, p + 1, 1));
            p += 2;
        } else if (is_alpha(c) || c == '_' || c == ':' || is_digit(c) || (!first && (c == '-' || c == '.'))) {
            TRY(put(t, &t->arena, p, 1));
            p++;
            if (c == '.')
                continue; /* a name may not end with an unescaped dot */
        } else if (c >= 0x80) {
            GIVE_UP(t, "a non-ASCII prefixed name");
        } else {
            break;
        }
        first = 0;
        keep = t->arena.len;
        stop = p;
    }
    t->arena.len = keep;
    t->p = stop;
    TRY(put(t, &t->arena, ">", 1));
    return check_iri(t, start, x);
}

/* An IRI: an IRIREF or a prefixed name. */
static int read_iri(Reader *t, Term *x)
{
    if (at(t, '<'))
        return read_iriref(t, x);
    const u8 *colon = scan_prefix_name(t);
    if (colon < t->end && *colon == ':')
        return read_pname(t, colon, x);
    GIVE_UP(t, "not an IRI");
}

/* -- blank nodes, literals ----------------------------------------------------------------------- */

static int read_label(Reader *t, Term *x)
{
    const u8 *p = t->p + 2, *q = p, *last;
    if (q >= t->end || !(is_alpha(*q) || is_digit(*q) || *q == '_'))
        GIVE_UP(t, "a blank node label outside the ASCII grammar");
    last = ++q;
    while (q < t->end && (is_pn_chars(*q) || *q == '.')) {
        if (*q != '.')
            last = q + 1;
        q++;
    }
    if (last < t->end && (*last >= 0x80 || *last == ':'))
        GIVE_UP(t, "a blank node label outside the ASCII grammar");
    t->p = last;
    int hex = last - p >= 16 && last - p <= 32;
    for (const u8 *c = p; hex && c < last; c++)
        hex = is_digit(*c) || (*c >= 'a' && *c <= 'f');
    if (hex)
        return hex_label(t, p, last, x);
    Term term = {K_LABEL, 0, p - t->doc, last - p, 0};
    *x = term;
    return 0;
}

/* A string at a quote: its canonical form "..." into the arena. */
static int read_string(Reader *t)
{
    const u8 *p = t->p, *end = t->end;
    u8 q = *p;
    int long_form = end - p >= 3 && p[1] == q && p[2] == q;
    p += long_form ? 3 : 1;
    Out *o = &t->arena;
    TRY(put(t, o, "\"", 1));
    for (;;) {
        const u8 *run = p;
        while (p < end && IS(*p, C_LITERAL) && *p != q)
            p++;
        TRY(put(t, o, run, p - run));
        if (p >= end)
            GIVE_UP(t, "an unterminated string");
        u8 c = *p;
        long cp;
        int n = 1;
        if (c == q) {
            if (!long_form) {
                p++;
                break;
            }
            if (end - p >= 3 && p[1] == q && p[2] == q) {
                p += 3;
                while (p < end && *p == q) /* """a"""" ends with the last three */
                    GIVE_UP(t, "a long string followed by a quote");
                break;
            }
            cp = c;
        } else if (c == '\\') {
            if (end - p < 2)
                GIVE_UP(t, "an unterminated string");
            const char *e = strchr("tbnrf\"'\\", p[1]);
            if (p[1] && e) {
                cp = "\t\b\n\r\f\"'\\"[e - "tbnrf\"'\\"];
                n = 2;
            } else if ((p[1] == 'u' || p[1] == 'U') && (cp = nt_uchar_at(p, end, &n)) >= 0) {
            } else {
                GIVE_UP(t, "an escape that names no character");
            }
        } else if (c >= 0x80) {
            n = nt_utf8_sequence(p, end);
            if (!n)
                GIVE_UP(t, "invalid UTF-8");
            if (!(n == 3 && c == 0xef && p[1] == 0xbf && p[2] >= 0xbe)) {
                TRY(put(t, o, p, n));
                p += n;
                continue;
            }
            cp = 0xfffe + (p[2] - 0xbe);
        } else if ((c == '\n' || c == '\r') && !long_form) {
            GIVE_UP(t, "a line end in a short string");
        } else {
            cp = c; /* a control character, '"' in a '...' string, U+007F */
        }
        if (nt_put_char(o, cp) < 0)
            NOMEM(t);
        p += n;
    }
    TRY(put(t, o, "\"", 1));
    t->p = p;
    return 0;
}

/* "@tag" at '@': ll[l][-ssss][-rr|-nnn] in any case, written in lower case. */
static int read_language(Reader *t)
{
    const u8 *p = t->p + 1, *q = nt_scan_language(p, t->end);
    if (!q)
        GIVE_UP(t, "a language tag of another shape");
    if (q < t->end && (*q >= 0x80 || *q == '_' || *q == ':'))
        GIVE_UP(t, "a language tag of another shape");
    TRY(put(t, &t->arena, "@", 1));
    for (const u8 *c = p; c < q; c++) {
        u8 lower = *c >= 'A' && *c <= 'Z' ? *c | 0x20 : *c;
        TRY(put(t, &t->arena, &lower, 1));
    }
    t->p = q;
    return 0;
}

static int same_text(Reader *t, const Term *x, const char *s, Py_ssize_t n)
{
    return x->kind == K_TEXT && x->len == n && !memcmp(text_of(t, x), s, n);
}

/* A literal at a quote: string, then a language tag or a datatype (the datatype's text read after
 * "^^" in the arena, or copied there from the document). */
static int read_literal(Reader *t, Term *x, const u8 **token)
{
    Py_ssize_t start = t->arena.len;
    TRY(read_string(t));
    if (at(t, '@')) {
        *token = t->p;
        TRY(read_language(t));
    } else if (t->end - t->p >= 2 && t->p[0] == '^' && t->p[1] == '^') {
        t->p += 2;
        skip_ws(t);
        *token = t->p;
        Py_ssize_t string_end = t->arena.len;
        TRY(put(t, &t->arena, "^^", 2));
        Term datatype;
        TRY(read_iri(t, &datatype));
        if (same_text(t, &datatype, RDF_LANG, sizeof RDF_LANG - 1) ||
            same_text(t, &datatype, RDF_DIRLANG, sizeof RDF_DIRLANG - 1))
            GIVE_UP(t, "a literal typed rdf:langString");
        if (same_text(t, &datatype, XSD_STRING, sizeof XSD_STRING - 1))
            t->arena.len = string_end; /* a simple literal */
        else if (datatype.where == W_DOC)
            TRY(put(t, &t->arena, text_of(t, &datatype), datatype.len));
    } else {
        skip_ws(t);
        *token = t->p; /* the token after it */
    }
    Term term = {K_TEXT, W_ARENA, start, t->arena.len - start, 0};
    *x = term;
    return 0;
}

/* INTEGER, DECIMAL or DOUBLE: "lexical form"^^<datatype>, the form as written. */
static int read_number(Reader *t, Term *x)
{
    const u8 *p = t->p, *end = t->end, *q = p;
    if (q < end && (*q == '+' || *q == '-'))
        q++;
    const u8 *digits = q;
    while (q < end && is_digit(*q))
        q++;
    int before = (int)(q - digits), after = 0, exponent = 0;
    if (q < end && *q == '.') {
        const u8 *r = q + 1;
        while (r < end && is_digit(*r))
            r++;
        after = (int)(r - q - 1);
        int e = r < end && (*r == 'e' || *r == 'E');
        if (after || (before && e)) /* "1." then no digit nor exponent: the integer, then a '.' */
            q = r;
        else
            after = -1;
    }
    if (q < end && (*q == 'e' || *q == 'E')) {
        const u8 *r = q + 1;
        if (r < end && (*r == '+' || *r == '-'))
            r++;
        const u8 *e = r;
        while (r < end && is_digit(*r))
            r++;
        if (r == e)
            GIVE_UP(t, "an exponent without digits");
        exponent = 1;
        q = r;
    }
    if (!before && after <= 0)
        GIVE_UP(t, "not a number");
    t->p = q;
    if (!at_delimiter(t) || (at(t, '.') && t->end - t->p >= 2 && is_digit(t->p[1])))
        GIVE_UP(t, "a number followed by a name character");
    const char *datatype = exponent ? XSD_DOUBLE : after > 0 ? XSD_DECIMAL : XSD_INTEGER;
    Py_ssize_t start = t->arena.len;
    TRY(put(t, &t->arena, "\"", 1));
    TRY(put(t, &t->arena, p, q - p));
    TRY(put(t, &t->arena, "\"^^", 3));
    TRY(put(t, &t->arena, datatype, strlen(datatype)));
    Term term = {K_TEXT, W_ARENA, start, t->arena.len - start, 0};
    *x = term;
    return 0;
}

/* -- statements ----------------------------------------------------------------------------------- */

/* Before a number a later range gave (canonical lines hold no raw control character). */
#define DEFERRED_MARK '\x01'

static int put_number(Reader *t, long *number, int hex)
{
    if (*number < 0) {
        if (hex && t->later_range)
            GIVE_UP(t, "a label that looks generated in a later range");
        *number = t->next_number++;
    }
    char text[32];
    int n = snprintf(text, sizeof text, t->later_range ? "-anon\x01%ld>" : "-anon%ld>", *number);
    TRY(put(t, &t->out, t->genid, t->genid_len));
    return put(t, &t->out, text, n);
}

static int put_term(Reader *t, const Term *x)
{
    switch (x->kind) {
    case K_TEXT:
        return put(t, &t->out, text_of(t, x), x->len);
    case K_LABEL:
        TRY(put(t, &t->out, t->genid, t->genid_len));
        TRY(put(t, &t->out, t->doc + x->off, x->len));
        return put(t, &t->out, ">", 1);
    case K_ANON:
        return put_number(t, &t->anon[x->id], 0);
    default:
        return put_number(t, &t->hex[x->id].number, 1);
    }
}

static int write_quad_to_out(Reader *t, const Quad *q);

/* A statement with a node a later range numbered goes to `deferred` (its number is not final). */
static int write_quad(Reader *t, const Quad *q)
{
    if (!t->later_range || (q->s.kind != K_ANON && q->o.kind != K_ANON && !(q->has_g && q->g.kind == K_ANON)))
        return write_quad_to_out(t, q);
    Out out = t->out;
    t->out = t->deferred;
    int r = write_quad_to_out(t, q);
    t->deferred = t->out;
    t->out = out;
    return r;
}

static int write_quad_to_out(Reader *t, const Quad *q)
{
    TRY(put_term(t, &q->s));
    TRY(put(t, &t->out, " ", 1));
    TRY(put_term(t, &q->p));
    TRY(put(t, &t->out, " ", 1));
    TRY(put_term(t, &q->o));
    if (q->has_g) {
        TRY(put(t, &t->out, " ", 1));
        TRY(put_term(t, &q->g));
        t->named = 1;
    }
    t->statements++;
    return put(t, &t->out, " .\n", 3);
}

static int flush_group(Reader *t)
{
    while (t->n_group)
        TRY(write_quad(t, &t->group[--t->n_group]));
    if (t->out.len > MAX_STATEMENT || t->deferred.len > MAX_STATEMENT || t->arena.len > MAX_STATEMENT ||
        t->n_anon > MAX_STATEMENT / (Py_ssize_t)sizeof(long))
        GIVE_UP(t, "a statement of 64 MiB or more");
    return 0;
}

/* The statement (s, p, o[, g]) that oxttl gives at the token starting at document offset `at`. */
static int emit(Reader *t, const Term *s, const Term *p, const Term *o, const Term *g, const u8 *at)
{
    if (t->n_group && t->group_at != at - t->doc)
        TRY(flush_group(t));
    if (grow((void **)&t->group, &t->cap_group, t->n_group, sizeof(Quad)) < 0)
        NOMEM(t);
    Quad *q = &t->group[t->n_group++];
    q->s = *s;
    q->p = *p;
    q->o = *o;
    q->has_g = g != NULL;
    if (g)
        q->g = *g;
    t->group_at = at - t->doc;
    return 0;
}

static int read_po_list(Reader *t, const Term *subject, const Term *graph);

static int enter(Reader *t)
{
    if (++t->depth > MAX_DEPTH)
        GIVE_UP(t, "nested too deep");
    return 0;
}

/* The cells of a collection after its '(' and first element's whitespace, `head` its first cell:
 * each element (its own statements first), then the rdf:rest to the next cell or rdf:nil. */
static int read_cells(Reader *t, Term head, const Term *graph);

/* An object at t->p of (subject, predicate): read, and its statements emitted at the tokens where
 * oxttl gives them: an IRI, a blank node label, a number or a boolean at its own token; a literal at
 * its language tag or datatype, a plain one at the token after it; [ ... ] at its ']'; a collection's
 * link at the token after its '(' (its first element's), or at ')' for (). */
static int read_object(Reader *t, const Term *subject, const Term *predicate, const Term *graph)
{
    Term o;
    if (t->p >= t->end)
        GIVE_UP(t, "an object expected");
    const u8 *token = t->p;
    u8 c = *t->p;
    if (c == '[') {
        t->p++;
        skip_ws(t);
        TRY(new_anon(t, &o));
        if (!at(t, ']')) {
            TRY(enter(t));
            TRY(read_po_list(t, &o, graph));
            skip_ws(t);
            if (!at(t, ']'))
                GIVE_UP(t, "']' expected");
            t->depth--;
        }
        token = t->p++;
        return emit(t, subject, predicate, &o, graph, token);
    }
    if (c == '(') {
        t->p++;
        skip_ws(t);
        if (at(t, ')')) {
            token = t->p++;
            CONSTANT(t, RDF_NIL, &o);
            return emit(t, subject, predicate, &o, graph, token);
        }
        TRY(new_anon(t, &o));
        TRY(emit(t, subject, predicate, &o, graph, t->p));
        return read_cells(t, o, graph);
    }
    if (c == '<') {
        TRY(read_iriref(t, &o));
    } else if (c == '_' && t->end - t->p >= 2 && t->p[1] == ':') {
        TRY(read_label(t, &o));
    } else if (c == '"' || c == '\'') {
        TRY(read_literal(t, &o, &token));
    } else if (is_digit(c) || c == '+' || c == '-' || c == '.') {
        TRY(read_number(t, &o));
    } else {
        const u8 *colon = scan_prefix_name(t);
        if (colon < t->end && *colon == ':') {
            TRY(read_pname(t, colon, &o));
        } else if (colon - t->p == 4 && !memcmp(t->p, "true", 4)) {
            t->p = colon;
            CONSTANT(t, "\"true\"^^<" XSD "boolean>", &o);
        } else if (colon - t->p == 5 && !memcmp(t->p, "false", 5)) {
            t->p = colon;
            CONSTANT(t, "\"false\"^^<" XSD "boolean>", &o);
        } else {
            GIVE_UP(t, "not an object");
        }
        if (!at_delimiter(t))
            GIVE_UP(t, "a name followed by another character");
    }
    return emit(t, subject, predicate, &o, graph, token);
}

static int read_cells(Reader *t, Term cell, const Term *graph)
{
    Term first, rest, nil;
    TRY(enter(t));
    for (;;) {
        CONSTANT(t, RDF_FIRST, &first);
        TRY(read_object(t, &cell, &first, graph));
        skip_ws(t);
        CONSTANT(t, RDF_REST, &rest);
        if (at(t, ')')) {
            const u8 *token = t->p++;
            t->depth--;
            CONSTANT(t, RDF_NIL, &nil);
            return emit(t, &cell, &rest, &nil, graph, token);
        }
        Term next;
        TRY(new_anon(t, &next));
        TRY(emit(t, &cell, &rest, &next, graph, t->p)); /* at the next element's first token */
        cell = next;
    }
}

/* verb objectList (';' (verb objectList)?)* */
static int read_po_list(Reader *t, const Term *subject, const Term *graph)
{
    for (;;) {
        Term verb;
        const u8 *name_end = scan_prefix_name(t);
        if (name_end - t->p == 1 && *t->p == 'a' && !(name_end < t->end && *name_end == ':')) {
            t->p = name_end;
            CONSTANT(t, RDF_TYPE, &verb);
        } else {
            TRY(read_iri(t, &verb));
        }
        skip_ws(t);
        for (;;) {
            TRY(read_object(t, subject, &verb, graph));
            skip_ws(t);
            if (!at(t, ','))
                break;
            t->p++;
            skip_ws(t);
        }
        if (!at(t, ';'))
            return 0;
        while (at(t, ';')) {
            t->p++;
            skip_ws(t);
        }
        if (t->p >= t->end || strchr(".]}", *t->p))
            return 0;
    }
}

/* The subject forms of `triples`: subject predicateObjectList | blankNodePropertyList
 * predicateObjectList? (a collection is a subject). `graph`: the statements' graph or NULL. */
static int read_triples(Reader *t, const Term *graph)
{
    Term s;
    u8 c = *t->p;
    if (c == '[') {
        t->p++;
        skip_ws(t);
        TRY(new_anon(t, &s));
        if (at(t, ']')) { /* [] predicateObjectList */
            t->p++;
            skip_ws(t);
            return read_po_list(t, &s, graph);
        }
        TRY(enter(t));
        TRY(read_po_list(t, &s, graph));
        skip_ws(t);
        if (!at(t, ']'))
            GIVE_UP(t, "']' expected");
        t->p++;
        t->depth--;
        skip_ws(t);
        if (t->p < t->end && (*t->p == '.' || *t->p == '}'))
            return 0;
        return read_po_list(t, &s, graph);
    }
    if (c == '(') {
        t->p++;
        skip_ws(t);
        if (at(t, ')')) {
            t->p++;
            CONSTANT(t, RDF_NIL, &s);
        } else {
            TRY(new_anon(t, &s));
            TRY(read_cells(t, s, graph));
        }
    } else if (c == '_' && t->end - t->p >= 2 && t->p[1] == ':') {
        TRY(read_label(t, &s));
    } else {
        TRY(read_iri(t, &s));
    }
    skip_ws(t);
    return read_po_list(t, &s, graph);
}

/* A statement ends: its lines are written, its anonymous nodes and scratch space forgotten (but a
 * graph label's). */
static int statement_done(Reader *t)
{
    TRY(flush_group(t));
    t->n_anon = t->anon_floor;
    t->arena.len = 0;
    return 0;
}

static int expect_dot(Reader *t)
{
    skip_ws(t);
    if (!at(t, '.'))
        GIVE_UP(t, "'.' expected");
    t->p++;
    return 0;
}

/* A keyword (ASCII letters, any case) at t->p followed by white space. */
static int keyword(Reader *t, const char *word)
{
    Py_ssize_t n = strlen(word);
    if (t->end - t->p <= n || strncasecmp((const char *)t->p, word, n))
        return 0;
    u8 c = t->p[n];
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '#' || c == '<';
}

static int set_base(Reader *t, const Term *iri)
{
    const u8 *text = text_of(t, iri);
    Py_ssize_t n = iri->len - 2;
    Out copy = {NULL, 0, 0};
    if (out_put(&copy, text + 1, n) < 0)
        NOMEM(t);
    out_free(&t->base);
    t->base = copy;
    parts_of(t->base.p, n, &t->base_parts);
    return 0;
}

static int add_prefix(Reader *t, const u8 *name, Py_ssize_t name_len, const Term *iri)
{
    Prefix *prefix = (Prefix *)find_prefix(t, name, name + name_len);
    if (!prefix) {
        if (t->n_prefixes == MAX_PREFIXES)
            GIVE_UP(t, "too many prefixes");
        if (!t->prefixes && !(t->prefixes = PyMem_RawCalloc(MAX_PREFIXES, sizeof(Prefix))))
            NOMEM(t);
        prefix = &t->prefixes[t->n_prefixes++];
        if (!(prefix->name = PyMem_RawMalloc(name_len + 1)))
            NOMEM(t);
        memcpy(prefix->name, name, name_len);
        prefix->name_len = name_len;
    }
    u8 *text = PyMem_RawMalloc(iri->len);
    if (!text)
        NOMEM(t);
    memcpy(text, text_of(t, iri), iri->len);
    PyMem_RawFree(prefix->iri);
    prefix->iri = text;
    prefix->iri_len = iri->len;
    return 0;
}

/* "@prefix p: <iri> ." or "PREFIX p: <iri>" after its keyword. */
static int read_prefix(Reader *t, int sparql)
{
    skip_ws(t);
    const u8 *name = t->p, *colon = scan_prefix_name(t);
    if (colon >= t->end || *colon != ':')
        GIVE_UP(t, "a prefix name expected");
    t->p = colon + 1;
    skip_ws(t);
    Term iri;
    if (!at(t, '<'))
        GIVE_UP(t, "an IRI expected");
    TRY(read_iriref(t, &iri));
    TRY(add_prefix(t, name, colon - name, &iri));
    return sparql ? 0 : expect_dot(t);
}

static int read_base(Reader *t, int sparql)
{
    skip_ws(t);
    Term iri;
    if (!at(t, '<'))
        GIVE_UP(t, "an IRI expected");
    TRY(read_iriref(t, &iri));
    TRY(set_base(t, &iri));
    return sparql ? 0 : expect_dot(t);
}

/* A graph label of TriG (labelOrSubject: an IRI, a blank node label or []) kept apart: its
 * statements outlive the statement that names it. */
static int read_graph_label(Reader *t, Term *g)
{
    if (at(t, '[')) {
        t->p++;
        skip_ws(t);
        if (!at(t, ']'))
            GIVE_UP(t, "a graph label expected");
        t->p++;
        return new_anon(t, g);
    }
    if (t->end - t->p >= 2 && t->p[0] == '_' && t->p[1] == ':')
        return read_label(t, g);
    return read_iri(t, g);
}

/* At '{': the statements up to '}' are in graph `g` (NULL: the default graph). Its label is kept
 * apart (its text in graph_text, its anonymous node below the floor) while they are read, one
 * `triples` at a time (read_graph_part). */
static int open_graph(Reader *t, const Term *g)
{
    if (!at(t, '{'))
        GIVE_UP(t, "'{' expected");
    t->p++;
    t->in_graph = 1;
    t->has_graph_label = g != NULL;
    if (g) {
        t->graph = *g;
        if (g->kind == K_TEXT) {
            t->graph_text.len = 0;
            TRY(put(t, &t->graph_text, text_of(t, g), g->len));
            t->graph.where = W_GRAPH;
            t->graph.off = 0;
        }
        t->anon_floor = t->n_anon;
    }
    return 0;
}

/* triples ('.' | before '}'), or the graph's '}'. */
static int read_graph_part(Reader *t)
{
    if (at(t, '}')) {
        t->p++;
        t->in_graph = 0;
        t->anon_floor = 0;
        return 0;
    }
    TRY(read_triples(t, t->has_graph_label ? &t->graph : NULL));
    skip_ws(t);
    if (at(t, '.'))
        t->p++;
    else if (!at(t, '}'))
        GIVE_UP(t, "'.' or '}' expected");
    return 0;
}

/* A statement of TriG's top level that starts with a term: a graph when '{' follows. */
static int read_trig_block(Reader *t)
{
    Term s;
    u8 c = *t->p;
    if (c == '{')
        return open_graph(t, NULL);
    if ((c | 0x20) == 'g' && keyword(t, "graph")) {
        t->p += 5;
        skip_ws(t);
        TRY(read_graph_label(t, &s));
        skip_ws(t);
        return open_graph(t, &s);
    }
    if (c == '(')
        goto triples;
    if (c == '[') { /* [] names a graph or is a subject; [ ... ] is a subject */
        const u8 *start = t->p;
        t->p++;
        skip_ws(t);
        if (!at(t, ']')) {
            t->p = start;
            goto triples;
        }
        t->p = start;
    }
    TRY(read_graph_label(t, &s));
    skip_ws(t);
    if (at(t, '{'))
        return open_graph(t, &s);
    TRY(read_po_list(t, &s, NULL));
    return expect_dot(t);
triples:
    TRY(read_triples(t, NULL));
    return expect_dot(t);
}

/* One statement (a directive, triples, the opening of a graph, or one `triples` inside one); 1 at
 * the end of the document. */
static int read_statement(Reader *t)
{
    skip_ws(t);
    TRY(statement_done(t));
    if (t->p >= t->end) {
        if (t->in_graph)
            GIVE_UP(t, "'}' expected");
        if (t->jump_to)
            GIVE_UP(t, "the range starts inside the prologue");
        return 1;
    }
    if (t->in_graph)
        return read_graph_part(t);
    u8 c = *t->p;
    int directive =
        c == '@' || ((c | 0x20) == 'p' && keyword(t, "prefix")) || ((c | 0x20) == 'b' && keyword(t, "base"));
    if (t->jump_to && !directive) { /* the prologue read: on to the range */
        if (t->jump_to < t->p)
            GIVE_UP(t, "the range starts inside the prologue");
        t->p = t->line_start = t->jump_to;
        t->jump_to = NULL;
        return 0;
    }
    if (t->stop && t->p >= t->stop) {
        if (t->p == t->stop && !t->late_directive) {
            t->at_cut = 1;
            return 1;
        }
        t->stop = NULL; /* the range does not end between statements: the reader reads on */
    }
    if (!directive)
        t->statement_seen = 1;
    else if (t->statement_seen)
        t->late_directive = 1;
    if (c == '@') {
        if (t->end - t->p > 7 && !memcmp(t->p, "@prefix", 7) && t->p[7] && strchr(" \t\r\n", t->p[7])) {
            t->p += 7;
            return read_prefix(t, 0);
        }
        if (t->end - t->p > 5 && !memcmp(t->p, "@base", 5) && t->p[5] && strchr(" \t\r\n", t->p[5])) {
            t->p += 5;
            return read_base(t, 0);
        }
        GIVE_UP(t, "a directive of another kind");
    }
    if (directive && keyword(t, "prefix")) {
        t->p += 6;
        return read_prefix(t, 1);
    }
    if (directive && keyword(t, "base")) {
        t->p += 4;
        return read_base(t, 1);
    }
    if (t->trig)
        return read_trig_block(t);
    TRY(read_triples(t, NULL));
    return expect_dot(t);
}

/* -- the Python type ------------------------------------------------------------------------------ */

static void reader_release(Reader *t)
{
    if (t->doc)
        munmap((void *)t->doc, t->map_len);
    t->doc = t->end = t->p = NULL;
    out_free(&t->out);
    out_free(&t->deferred);
    out_free(&t->arena);
    out_free(&t->graph_text);
    out_free(&t->base);
    for (Py_ssize_t i = 0; i < t->n_prefixes; i++) {
        PyMem_RawFree(t->prefixes[i].name);
        PyMem_RawFree(t->prefixes[i].iri);
    }
    PyMem_RawFree(t->prefixes);
    t->prefixes = NULL;
    t->n_prefixes = 0;
    PyMem_RawFree(t->genid);
    t->genid = NULL;
    PyMem_RawFree(t->hex);
    t->hex = NULL;
    PyMem_RawFree(t->anon);
    t->anon = NULL;
    PyMem_RawFree(t->group);
    t->group = NULL;
}

static void reader_dealloc(Reader *t)
{
    reader_release(t);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static int reader_init(Reader *t, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"path", "trig", "base_iri", "prefix", "start", "stop", NULL};
    PyObject *path;
    int trig;
    Py_buffer base = {0}, prefix;
    Py_ssize_t start = 0, stop = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&pz*y*|nn", kwlist, PyUnicode_FSConverter, &path, &trig, &base,
                                     &prefix, &start, &stop))
        return -1;
    reader_release(t);
    memset((char *)t + sizeof(PyObject), 0, sizeof(Reader) - sizeof(PyObject));
    t->trig = trig;
    int result = -1, fd = open(PyBytes_AS_STRING(path), O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path);
        goto done;
    }
    if (st.st_size > 0) {
        void *map = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path);
            goto done;
        }
        madvise(map, st.st_size, MADV_SEQUENTIAL);
        t->doc = map;
        t->map_len = st.st_size;
    }
    t->p = t->line_start = t->doc;
    t->end = t->doc + st.st_size;
    if (start < 0 || (start > 0 && start >= st.st_size) || stop == 0 || stop < -1 || stop > st.st_size) {
        PyErr_SetString(PyExc_ValueError, "a range outside the document");
        goto done;
    }
    if (start > 0) {
        t->jump_to = t->doc + start;
        t->later_range = 1;
    }
    if (stop > 0)
        t->stop = t->doc + stop;
    if (!(t->genid = PyMem_RawMalloc(prefix.len ? prefix.len : 1))) {
        PyErr_NoMemory();
        goto done;
    }
    memcpy(t->genid, prefix.buf, prefix.len);
    t->genid_len = prefix.len;
    if (base.buf && base.len) { /* the base must be an absolute IRI of the grammar, without dot segment */
        Out given = {NULL, 0, 0};
        if (out_put(&given, (const u8 *)"<", 1) < 0 || out_put(&given, base.buf, base.len) < 0 ||
            out_put(&given, (const u8 *)">", 1) < 0) {
            out_free(&given);
            PyErr_NoMemory();
            goto done;
        }
        int ok = nt_scan_iri(given.p, given.p + given.len) == given.p + given.len &&
                 !nt_dotted(given.p, given.p + given.len);
        if (ok && out_put(&t->base, given.p + 1, given.len - 2) < 0) {
            out_free(&given);
            PyErr_NoMemory();
            goto done;
        }
        out_free(&given);
        if (!ok) {
            t->why = "a base IRI outside the ASCII grammar";
        } else {
            parts_of(t->base.p, t->base.len, &t->base_parts);
        }
    }
    result = 0;
done:
    if (fd >= 0)
        close(fd);
    Py_DECREF(path);
    PyBuffer_Release(&base);
    PyBuffer_Release(&prefix);
    return result;
}

/* Statements until `size` bytes of lines are ready, without the GIL: 0, or -1 (given up), -2. */
static int read_some(Reader *t, Py_ssize_t size)
{
    while (!t->done && t->out.len + t->deferred.len < size) {
        const u8 *start = t->p;
        int r = read_statement(t);
        if (r < 0)
            return r;
        if (t->longest >= MAX_LINE) {
            t->why = "a line of 8 MiB or more";
            t->why_at = t->p - t->doc;
            return -1;
        }
        if (r == 1)
            t->done = 1;
        /* the pages read before this statement are not needed again */
        Py_ssize_t page = sysconf(_SC_PAGESIZE), cut = ((start - t->doc) / page) * page;
        if (cut - t->released >= (16 << 20)) {
            madvise((void *)(t->doc + t->released), cut - t->released, MADV_DONTNEED);
            t->released = cut;
        }
    }
    return 0;
}

static PyObject *reader_read(Reader *t, PyObject *args)
{
    Py_ssize_t size = 1 << 22;
    if (!PyArg_ParseTuple(args, "|n", &size))
        return NULL;
    if (t->why)
        return PyErr_Format(Unsupported, "%s", t->why);
    int r;
    t->out.len = 0;
    Py_BEGIN_ALLOW_THREADS
    r = read_some(t, size);
    Py_END_ALLOW_THREADS
    if (r == -2 || (r == -1 && !t->why))
        return PyErr_NoMemory();
    if (r == -1)
        return PyErr_Format(Unsupported, "%s (at byte %zd)", t->why, t->why_at);
    if (!t->out.len && !t->deferred.len && t->done)
        Py_RETURN_NONE;
    return out_bytes(&t->out);
}

static PyObject *reader_take_deferred(Reader *t, PyObject *Py_UNUSED(args))
{
    PyObject *data = out_bytes(&t->deferred);
    t->deferred.len = 0;
    return data;
}

/* renumber(lines, offset): the lines a later range deferred, each marked number + offset. */
static PyObject *turtle_renumber(PyObject *Py_UNUSED(self), PyObject *args)
{
    Py_buffer data;
    Py_ssize_t offset;
    if (!PyArg_ParseTuple(args, "y*n", &data, &offset))
        return NULL;
    Out o = {NULL, 0, 0};
    const u8 *p = data.buf, *end = p + data.len;
    int failed = 0;
    while (p < end && !failed) {
        const u8 *mark = memchr(p, DEFERRED_MARK, end - p);
        if (!mark) {
            failed = out_put(&o, p, end - p) < 0;
            break;
        }
        failed = out_put(&o, p, mark - p) < 0;
        long long number = 0;
        for (p = mark + 1; p < end && is_digit(*p); p++)
            number = number * 10 + (*p - '0');
        char text[32];
        int n = snprintf(text, sizeof text, "%lld", number + offset);
        failed = failed || out_put(&o, (const u8 *)text, n) < 0;
    }
    PyBuffer_Release(&data);
    if (failed) {
        out_free(&o);
        return PyErr_NoMemory();
    }
    PyObject *result = out_bytes(&o);
    out_free(&o);
    return result;
}

static PyMethodDef turtle_functions[] = {
    {"renumber", turtle_renumber, METH_VARARGS,
     "renumber(lines, offset) -> the statements a later range deferred, each number it gave + offset"},
    {NULL, NULL, 0, NULL},
};

static PyObject *reader_resume(Reader *t, PyObject *Py_UNUSED(args))
{
    if (!t->at_cut)
        return PyErr_Format(PyExc_ValueError, "the reader did not stop at its range's end");
    t->at_cut = t->done = 0;
    t->stop = NULL;
    Py_RETURN_NONE;
}

static PyObject *reader_close(Reader *t, PyObject *Py_UNUSED(args))
{
    reader_release(t);
    t->done = 1;
    Py_RETURN_NONE;
}

static PyMethodDef reader_methods[] = {
    {"read", (PyCFunction)reader_read, METH_VARARGS,
     "read([size]) -> the next block of final lines (about size bytes), None at the end; raises "
     "TurtleUnsupported when the document is not one this reader reads"},
    {"take_deferred", (PyCFunction)reader_take_deferred, METH_NOARGS,
     "take_deferred() -> the statements with a node this later range numbered, given since the last call, "
     "their numbers marked (for renumber)"},
    {"resume", (PyCFunction)reader_resume, METH_NOARGS,
     "resume() -> None: a first range that stopped at its end (at_cut) reads on to the document's end"},
    {"close", (PyCFunction)reader_close, METH_NOARGS, "close() -> None: the document unmapped"},
    {NULL, NULL, 0, NULL},
};

static PyObject *reader_statements(Reader *t, void *Py_UNUSED(closure))
{
    return PyLong_FromSsize_t(t->statements);
}

static PyObject *reader_named(Reader *t, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(t->named);
}

static PyObject *reader_position(Reader *t, void *Py_UNUSED(closure))
{
    return PyLong_FromSsize_t(t->p - t->doc);
}

static PyObject *reader_numbered(Reader *t, void *Py_UNUSED(closure))
{
    return PyLong_FromLong(t->next_number);
}

static PyObject *reader_at_cut(Reader *t, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(t->at_cut);
}

static PyGetSetDef reader_getset[] = {
    {"position", (getter)reader_position, NULL, "the byte of the document the reader is at", NULL},
    {"numbered", (getter)reader_numbered, NULL, "blank nodes numbered so far", NULL},
    {"at_cut", (getter)reader_at_cut, NULL,
     "whether the reader stopped at `stop`, where a statement of the top level starts and the prologue's "
     "directives are the only ones read",
     NULL},
    {"statements", (getter)reader_statements, NULL, "statements given so far", NULL},
    {"named", (getter)reader_named, NULL, "whether a statement given has a graph label", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "votersdaily.laundromat._ntscan.TurtleReader",
    .tp_basicsize = sizeof(Reader),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "TurtleReader(path, trig, base_iri, prefix, start=0, stop=-1): the final lines of a Turtle or TriG "
              "document (of a range of it: from `start`, after the prologue's directives; to `stop`)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)reader_init,
    .tp_dealloc = (destructor)reader_dealloc,
    .tp_methods = reader_methods,
    .tp_getset = reader_getset,
};

int nt_add_turtle(PyObject *module)
{
    classify_bytes();
    if (PyType_Ready(&ReaderType) < 0)
        return -1;
    Unsupported = PyErr_NewExceptionWithDoc("votersdaily.laundromat._ntscan.TurtleUnsupported",
                                            "The document is not one the compiled Turtle reader reads.",
                                            PyExc_ValueError, NULL);
    if (!Unsupported || PyModule_AddObject(module, "TurtleUnsupported", Unsupported) < 0)
        return -1;
    if (PyModule_AddFunctions(module, turtle_functions) < 0)
        return -1;
    Py_INCREF(&ReaderType);
    if (PyModule_AddObject(module, "TurtleReader", (PyObject *)&ReaderType) < 0)
        return -1;
    return 0;
}
