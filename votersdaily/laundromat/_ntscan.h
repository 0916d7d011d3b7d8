/* What the compiled module's C files share (_ntscan.c: the N-Triples scanner, the sort and merge,
 * the UTF-8 check; _turtle.c: the Turtle and TriG reader): the conservative grammar's character
 * classes and scanners, and a growable output buffer that needs no GIL. */
#ifndef VOTERSDAILY_NTSCAN_H
#define VOTERSDAILY_NTSCAN_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

typedef unsigned char u8;

/* Evaluate x, a reader's step: a non-zero result (giving up, out of memory) is returned at once. */
#define TRY(x)                                                                                                         \
    do {                                                                                                               \
        int _r = (x);                                                                                                  \
        if (_r)                                                                                                        \
            return _r;                                                                                                 \
    } while (0)

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

extern unsigned char nt_cls[256];
#define IS(c, k) (nt_cls[(u8)(c)] & (k))

/* A byte buffer grown by doubling (PyMem_Raw*: usable without the GIL); -1 when memory ran out. */
typedef struct {
    u8 *p;
    Py_ssize_t len, cap;
} Out;

int out_reserve(Out *o, Py_ssize_t more);
int out_put(Out *o, const u8 *p, Py_ssize_t n);
/* Its bytes as a new bytes object (the GIL held). */
PyObject *out_bytes(Out *o);
void out_free(Out *o);

/* An absolute IRI in angle brackets at p, ASCII only: the position past its '>', or NULL. */
const u8 *nt_scan_iri(const u8 *p, const u8 *end);
/* One UTF-8 sequence starting at a byte >= 0x80: its length, or 0 when invalid or cut. */
int nt_utf8_sequence(const u8 *p, const u8 *end);
int nt_hex_value(u8 c);
/* The code point of the \uXXXX or \UXXXXXXXX at p (its length in *n); -1 when it names none. */
long nt_uchar_at(const u8 *p, const u8 *end, int *n);
/* Code point `cp` as the canonical serializer writes it inside a literal. */
int nt_put_char(Out *o, long cp);
/* Whether [p, end) holds "/." or "/.." followed by "/", ">", "?" or "#": rdf11.py's dot segment
 * patterns (_DOTTED), which send a line to its slow path. */
int nt_dotted(const u8 *p, const u8 *end);
/* A language tag at p (after its '@') of the shapes both fast paths take, ll[l][-ssss][-rr|-nnn] in
 * any case: the position past it, or NULL (other shapes are left to pyoxigraph). */
const u8 *nt_scan_language(const u8 *p, const u8 *end);

/* rdfxml_lines(document) (_rdfxml.c): the N-Quads pyoxigraph gives for plain RDF/XML, or None. */
PyObject *nt_rdfxml_lines(PyObject *self, PyObject *args);

/* The TurtleReader type and its TurtleUnsupported error added to the module (_turtle.c). */
int nt_add_turtle(PyObject *module);

#endif
