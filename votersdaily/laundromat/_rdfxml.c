/* The laundromat's compiled reader of plain RDF/XML (see native.py, which documents the contract).
 *
 * rdfxml_lines(document) gives the N-Quads pyoxigraph's RDF/XML parser and N-Quads serializer give
 * for the document, byte for byte and in the same order, or None when the document is not one it
 * reads. It reads the flat shape rapper, Jena and most dumps write: an rdf:RDF root declaring
 * namespaces only; node elements (rdf:Description or a typed node) with exactly one rdf:about (an
 * absolute ASCII IRI) or rdf:nodeID; property elements with an rdf:resource or rdf:nodeID (empty
 * elements), or text with an optional rdf:datatype (an absolute IRI) or xml:lang (of the common
 * shapes); namespace declarations on any element; comments and white space between elements.
 * Anything else (nesting, rdf:parseType, rdf:ID, rdf:li, xml:base, relative IRIs, entity references
 * in attribute values, CDATA, processing instructions after the prolog, a DOCTYPE, any error) gives
 * None: the caller then parses with pyoxigraph, which reads everything else and says what is wrong.
 * So what the document gives never depends on which reader read it (tests/laundromat/test_native.py
 * holds both to the same bytes on the W3C suite, mutations of the benchmark's document and
 * generated shapes).
 *
 * What pyoxigraph does that the output follows: a literal's text is kept as written but for its
 * references (no end-of-line normalisation); language tags in lower case; an xsd:string datatype
 * omitted; IRIs as written (absolute ones are not resolved); a typed node's rdf:type first; the
 * statements in document order.
 */
#include "_ntscan.h"

#include <string.h>

#define RDF_NS "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
#define XML_NS "http://www.w3.org/XML/1998/namespace"
/* Namespace declarations in scope, attributes on one element: past these the reader gives up. */
#define MAX_NS 256
#define MAX_ATTRS 16

static const char RDF_TYPE[] = " <" RDF_NS "type> ";

typedef struct {
    const u8 *prefix, *uri; /* prefix NULL: the default namespace */
    Py_ssize_t prefix_len, uri_len;
} Ns;

/* An element's or attribute's name resolved: its namespace (NULL: none) and local name. */
typedef struct {
    const u8 *uri, *local;
    Py_ssize_t uri_len, local_len;
} Name;

typedef struct {
    const u8 *qname, *value;
    Py_ssize_t qname_len, value_len;
    Name name;
} Attr;

typedef struct {
    const u8 *p, *end;
    Out out, subject; /* the output; the current node's subject */
    Ns ns[MAX_NS];
    int n_ns;
    Attr attrs[MAX_ATTRS];
    int n_attrs, empty; /* the element's attributes; whether its tag ended with "/>" */
} X;

/* 0: read; -1: not a document this reader reads; -2: out of memory. */
#define NO -1
#define NOMEM -2

static int put(X *x, const void *p, Py_ssize_t n)
{
    return out_put(&x->out, p, n) < 0 ? NOMEM : 0;
}

static int same(const u8 *p, Py_ssize_t n, const char *s)
{
    return (Py_ssize_t)strlen(s) == n && memcmp(p, s, n) == 0;
}

static int is_space(u8 c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void skip_space(X *x)
{
    while (x->p < x->end && is_space(*x->p))
        x->p++;
}

static int at(X *x, const char *s)
{
    Py_ssize_t n = (Py_ssize_t)strlen(s);
    return x->end - x->p >= n && memcmp(x->p, s, n) == 0;
}

/* White space and comments (without "--" in them) up to the next markup that is not a comment. */
static int skip_misc(X *x)
{
    for (;;) {
        skip_space(x);
        if (!at(x, "<!--"))
            return 0;
        const u8 *q = x->p + 4;
        for (;;) { /* the comment ends at its first "--", which must be "-->" */
            q = memchr(q, '-', x->end - q);
            if (!q || x->end - q < 3)
                return NO;
            if (q[1] == '-')
                break;
            q++;
        }
        if (q[2] != '>')
            return NO;
        x->p = q + 3;
    }
}

/* An XML name of ASCII letters, digits, '_', '-', '.' with at most one ':' (not first or last). */
static int read_qname(X *x, const u8 **name, Py_ssize_t *len)
{
    const u8 *p = x->p, *colon = NULL;
    if (p >= x->end || !(IS(*p, C_ALPHA) || *p == '_'))
        return NO;
    for (p++; p < x->end; p++) {
        if (IS(*p, C_ALPHA) || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' || *p == '.')
            continue;
        if (*p == ':' && !colon && p + 1 < x->end && (IS(p[1], C_ALPHA) || p[1] == '_')) {
            colon = p;
            continue;
        }
        break;
    }
    *name = x->p;
    *len = p - x->p;
    x->p = p;
    return 0;
}

/* The namespace of prefix [p, p + n) (n 0: the default namespace): 0, or NO when undeclared. */
static int lookup(X *x, const u8 *p, Py_ssize_t n, const u8 **uri, Py_ssize_t *uri_len)
{
    if (n == 3 && memcmp(p, "xml", 3) == 0) {
        *uri = (const u8 *)XML_NS;
        *uri_len = sizeof XML_NS - 1;
        return 0;
    }
    for (int i = x->n_ns - 1; i >= 0; i--) {
        const Ns *d = &x->ns[i];
        if (n ? d->prefix && d->prefix_len == n && memcmp(d->prefix, p, n) == 0 : d->prefix == NULL) {
            *uri = d->uri;
            *uri_len = d->uri_len;
            return 0;
        }
    }
    return NO;
}

/* A qualified name resolved (`attribute`: an unprefixed name has no namespace). */
static int resolve_name(X *x, const u8 *q, Py_ssize_t n, int attribute, Name *name)
{
    const u8 *colon = memchr(q, ':', n);
    name->local = colon ? colon + 1 : q;
    name->local_len = colon ? q + n - colon - 1 : n;
    if (!colon && attribute) {
        name->uri = NULL;
        name->uri_len = 0;
        return 0;
    }
    return lookup(x, q, colon ? colon - q : 0, &name->uri, &name->uri_len);
}

static int is_ns(const Name *name, const char *ns, const char *local)
{
    return name->uri && same(name->uri, name->uri_len, ns) && same(name->local, name->local_len, local);
}

/* After an attribute's name: Eq and its quoted value, whose bounds are set. `strict`: a value with a
 * reference, markup or a character attribute-value normalisation would change is not read. */
static int equals_value(X *x, int strict, const u8 **value, Py_ssize_t *len)
{
    skip_space(x);
    if (!at(x, "="))
        return NO;
    x->p++;
    skip_space(x);
    if (x->p >= x->end || (*x->p != '"' && *x->p != '\''))
        return NO;
    u8 quote = *x->p++;
    const u8 *v = x->p;
    for (; x->p < x->end && *x->p != quote; x->p++)
        if (strict && (*x->p == '&' || *x->p == '<' || *x->p < 0x20))
            return NO;
    if (x->p >= x->end)
        return NO;
    *value = v;
    *len = x->p++ - v;
    return 0;
}

/* A start tag's attributes after its name, up to and past its ">" or "/>": the namespace
 * declarations added to the scope (the caller restores n_ns), the others resolved in x->attrs. */
static int read_attributes(X *x)
{
    x->n_attrs = 0;
    for (;;) {
        const u8 *before = x->p;
        skip_space(x);
        if (at(x, "/>") || at(x, ">")) {
            x->empty = *x->p == '/';
            x->p += x->empty ? 2 : 1;
            break;
        }
        if (x->p == before || x->n_attrs == MAX_ATTRS)
            return NO; /* attributes are separated by white space */
        Attr *a = &x->attrs[x->n_attrs++];
        TRY(read_qname(x, &a->qname, &a->qname_len));
        TRY(equals_value(x, 1, &a->value, &a->value_len));
        for (int i = 0; i < x->n_attrs - 1; i++)
            if (x->attrs[i].qname_len == a->qname_len && memcmp(x->attrs[i].qname, a->qname, a->qname_len) == 0)
                return NO; /* a duplicated attribute */
    }
    /* namespace declarations first: they apply to the element's own name and attributes */
    int kept = 0;
    for (int i = 0; i < x->n_attrs; i++) {
        Attr *a = &x->attrs[i];
        int prefixed = a->qname_len > 6 && memcmp(a->qname, "xmlns:", 6) == 0;
        if (!prefixed && !same(a->qname, a->qname_len, "xmlns")) {
            x->attrs[kept++] = *a;
            continue;
        }
        if (x->n_ns == MAX_NS || a->value_len == 0)
            return NO; /* an undeclaration */
        Ns *d = &x->ns[x->n_ns++];
        d->prefix = prefixed ? a->qname + 6 : NULL;
        d->prefix_len = prefixed ? a->qname_len - 6 : 0;
        if (prefixed && ((d->prefix_len == 3 && memcmp(d->prefix, "xml", 3) == 0) ||
                         (d->prefix_len == 5 && memcmp(d->prefix, "xmlns", 5) == 0)))
            return NO;
        d->uri = a->value;
        d->uri_len = a->value_len;
    }
    x->n_attrs = kept;
    for (int i = 0; i < kept; i++) {
        Attr *a = &x->attrs[i];
        TRY(resolve_name(x, a->qname, a->qname_len, 1, &a->name));
        if (!a->name.uri)
            return NO; /* unqualified attributes: left to pyoxigraph */
        for (int j = 0; j < i; j++)
            if (x->attrs[j].name.uri_len == a->name.uri_len && x->attrs[j].name.local_len == a->name.local_len &&
                memcmp(x->attrs[j].name.uri, a->name.uri, a->name.uri_len) == 0 &&
                memcmp(x->attrs[j].name.local, a->name.local, a->name.local_len) == 0)
                return NO; /* the same attribute under two prefixes */
    }
    return 0;
}

/* "<" [p, p + n) ">" written when it is an absolute ASCII IRI of the conservative grammar without dot
 * segments (pyoxigraph writes such an IRI as it is). */
static int put_iri2(X *x, const u8 *p, Py_ssize_t n, const u8 *p2, Py_ssize_t n2)
{
    Py_ssize_t start = x->out.len;
    if (out_reserve(&x->out, n + n2 + 2) < 0)
        return NOMEM;
    u8 *o = x->out.p + start;
    o[0] = '<';
    memcpy(o + 1, p, n);
    memcpy(o + 1 + n, p2, n2);
    o[1 + n + n2] = '>';
    const u8 *end = o + n + n2 + 2;
    if (nt_scan_iri(o, end) != end || nt_dotted(o, end))
        return NO;
    x->out.len = start + n + n2 + 2;
    return 0;
}

static int put_iri(X *x, const u8 *p, Py_ssize_t n)
{
    return put_iri2(x, p, n, p, 0);
}

/* "_:" and an rdf:nodeID value of the shape every reader takes: [A-Za-z_][A-Za-z0-9_-]*. */
static int put_label(X *x, const u8 *p, Py_ssize_t n)
{
    if (n == 0 || !(IS(*p, C_ALPHA) || *p == '_'))
        return NO;
    for (Py_ssize_t i = 1; i < n; i++)
        if (!(IS(p[i], C_ALPHA) || (p[i] >= '0' && p[i] <= '9') || p[i] == '_' || p[i] == '-'))
            return NO;
    TRY(put(x, "_:", 2));
    return put(x, p, n);
}

/* The name of a property element or typed node as an IRI: its namespace and local name. */
static int put_name(X *x, const Name *name)
{
    return put_iri2(x, name->uri, name->uri_len, name->local, name->local_len);
}

/* A property element's name in the RDF namespace that is an ordinary property. */
static int ordinary_rdf_property(const Name *name)
{
    static const char *const names[] = {"type", "value", "first", "rest", "subject", "predicate", "object"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (same(name->local, name->local_len, names[i]))
            return 1;
    if (name->local_len < 2 || name->local[0] != '_' || name->local[1] < '1' || name->local[1] > '9')
        return 0;
    for (Py_ssize_t i = 2; i < name->local_len; i++)
        if (name->local[i] < '0' || name->local[i] > '9')
            return 0;
    return 1;
}

/* A character reference after "&#": its code point (a character XML allows), past its ';'. */
static long char_ref(X *x)
{
    int hex = x->p < x->end && *x->p == 'x';
    if (hex)
        x->p++;
    long cp = 0;
    int digits = 0;
    for (; x->p < x->end && *x->p != ';'; x->p++, digits++) {
        int d = hex ? nt_hex_value(*x->p) : (*x->p >= '0' && *x->p <= '9' ? *x->p - '0' : -1);
        if (d < 0 || digits >= 8)
            return -1;
        cp = cp * (hex ? 16 : 10) + d;
    }
    if (!digits || x->p >= x->end)
        return -1;
    x->p++;
    if (cp == 9 || cp == 10 || cp == 13 || (cp >= 0x20 && cp <= 0xd7ff) || (cp >= 0xe000 && cp <= 0xfffd) ||
        (cp >= 0x10000 && cp <= 0x10ffff))
        return cp;
    return -1;
}

/* A property element's text up to "</", written as a literal's quoted text. */
static int put_text(X *x)
{
    TRY(put(x, "\"", 1));
    for (;;) {
        const u8 *p = x->p;
        while (p < x->end && IS(*p, C_LITERAL) && *p != '&' && *p != '<' && *p != ']')
            p++;
        TRY(put(x, x->p, p - x->p));
        x->p = p;
        if (p >= x->end)
            return NO;
        u8 c = *p;
        if (c == '<') {
            if (!at(x, "</"))
                return NO; /* an element, comment, CDATA section or instruction in the text */
            break;
        }
        if (c == '&') {
            long cp;
            x->p++;
            if (at(x, "#")) {
                x->p++;
                cp = char_ref(x);
            } else if (at(x, "amp;") || at(x, "lt;") || at(x, "gt;")) {
                cp = *x->p == 'a' ? '&' : *x->p == 'l' ? '<' : '>';
                x->p += *x->p == 'a' ? 4 : 3;
            } else if (at(x, "quot;") || at(x, "apos;")) {
                cp = *x->p == 'q' ? '"' : '\'';
                x->p += 5;
            } else {
                return NO; /* an entity the document declares: expanded before parsing, or refused */
            }
            if (cp < 0)
                return NO;
            if (nt_put_char(&x->out, cp) < 0)
                return NOMEM;
        } else if (c == ']') {
            if (at(x, "]]>"))
                return NO;
            TRY(put(x, "]", 1));
            x->p++;
        } else if (c >= 0x80) {
            int n = nt_utf8_sequence(p, x->end);
            if (!n)
                return NO;
            if (n == 3 && p[0] == 0xef && p[1] == 0xbf && (p[2] == 0xbe || p[2] == 0xbf)) {
                TRY(put(x, p[2] == 0xbe ? "\\uFFFE" : "\\uFFFF", 6));
            } else {
                TRY(put(x, p, n));
            }
            x->p += n;
        } else if (c == '\t' || c == '\n' || c == '\r' || c == '"' || c == '\\' || c == 0x7f) {
            if (nt_put_char(&x->out, c) < 0)
                return NOMEM;
            x->p++;
        } else {
            return NO; /* a control character XML does not allow */
        }
    }
    return put(x, "\"", 1);
}

/* After a start tag's "<": its name, "/>"-or-">" and attributes read. */
static int start_tag(X *x, const u8 **qname, Py_ssize_t *qname_len, Name *name)
{
    TRY(read_qname(x, qname, qname_len));
    if (x->p < x->end && !is_space(*x->p) && *x->p != '>' && *x->p != '/')
        return NO;
    TRY(read_attributes(x));
    return resolve_name(x, *qname, *qname_len, 0, name);
}

/* At "</": the end tag of the element named [qname, qname + n), read. */
static int end_tag(X *x, const u8 *qname, Py_ssize_t n)
{
    if (!at(x, "</") || x->end - x->p - 2 < n || memcmp(x->p + 2, qname, n) != 0)
        return NO;
    x->p += 2 + n;
    skip_space(x);
    if (!at(x, ">"))
        return NO;
    x->p++;
    return 0;
}

/* A property element after its "<", of the node whose subject's text is [s, s + s_len). */
static int read_property(X *x, const u8 *s, Py_ssize_t s_len)
{
    int scope = x->n_ns;
    const u8 *qname;
    Py_ssize_t qname_len;
    Name name;
    TRY(start_tag(x, &qname, &qname_len, &name));
    if (name.uri && same(name.uri, name.uri_len, RDF_NS) && !ordinary_rdf_property(&name))
        return NO;
    if (name.uri && same(name.uri, name.uri_len, XML_NS))
        return NO;
    const Attr *resource = NULL, *node = NULL, *datatype = NULL, *lang = NULL;
    for (int i = 0; i < x->n_attrs; i++) {
        const Attr *a = &x->attrs[i];
        if (is_ns(&a->name, RDF_NS, "resource"))
            resource = a;
        else if (is_ns(&a->name, RDF_NS, "nodeID"))
            node = a;
        else if (is_ns(&a->name, RDF_NS, "datatype"))
            datatype = a;
        else if (is_ns(&a->name, XML_NS, "lang"))
            lang = a;
        else
            return NO; /* property attributes, rdf:ID, rdf:parseType, xml:base, ... */
    }
    if ((resource || node) && (!x->empty || datatype || lang || (resource && node)))
        return NO;
    if (datatype && lang)
        return NO;
    TRY(put(x, s, s_len));
    TRY(put(x, " ", 1));
    TRY(put_name(x, &name));
    TRY(put(x, " ", 1));
    if (resource) {
        TRY(put_iri(x, resource->value, resource->value_len));
    } else if (node) {
        TRY(put_label(x, node->value, node->value_len));
    } else {
        if (x->empty) {
            TRY(put(x, "\"\"", 2));
        } else {
            TRY(put_text(x));
            TRY(end_tag(x, qname, qname_len));
        }
        if (lang) {
            const u8 *v = lang->value, *v_end = v + lang->value_len;
            if (nt_scan_language(v, v_end) != v_end)
                return NO;
            TRY(put(x, "@", 1));
            for (; v < v_end; v++) {
                u8 c = *v >= 'A' && *v <= 'Z' ? *v + 32 : *v;
                TRY(put(x, &c, 1));
            }
        } else if (datatype) {
            if (same(datatype->value, datatype->value_len, "http://www.w3.org/2001/XMLSchema#string"))
                ; /* the serializer omits it */
            else if (same(datatype->value, datatype->value_len, RDF_NS "langString") ||
                     same(datatype->value, datatype->value_len, RDF_NS "dirLangString"))
                return NO;
            else {
                TRY(put(x, "^^", 2));
                TRY(put_iri(x, datatype->value, datatype->value_len));
            }
        }
    }
    TRY(put(x, " .\n", 3));
    x->n_ns = scope;
    return 0;
}

/* A node element after its "<": its statements. */
static int read_node(X *x)
{
    int scope = x->n_ns;
    const u8 *qname;
    Py_ssize_t qname_len;
    Name name;
    TRY(start_tag(x, &qname, &qname_len, &name));
    if (name.uri && same(name.uri, name.uri_len, RDF_NS) && !same(name.local, name.local_len, "Description"))
        return NO;
    if (name.uri && same(name.uri, name.uri_len, XML_NS))
        return NO;
    const Attr *about = NULL, *node = NULL;
    for (int i = 0; i < x->n_attrs; i++) {
        const Attr *a = &x->attrs[i];
        if (is_ns(&a->name, RDF_NS, "about"))
            about = a;
        else if (is_ns(&a->name, RDF_NS, "nodeID"))
            node = a;
        else
            return NO;
    }
    if (!about == !node)
        return NO;
    /* the subject's text, written once and copied for each statement */
    Py_ssize_t s_start = x->out.len;
    TRY(about ? put_iri(x, about->value, about->value_len) : put_label(x, node->value, node->value_len));
    Py_ssize_t s_len = x->out.len - s_start;
    x->subject.len = 0;
    if (out_put(&x->subject, x->out.p + s_start, s_len) < 0)
        return NOMEM;
    x->out.len = s_start;
    const u8 *subject = x->subject.p;
    if (!same(name.local, name.local_len, "Description") || !name.uri || !same(name.uri, name.uri_len, RDF_NS)) {
        TRY(put(x, subject, s_len));
        TRY(put(x, RDF_TYPE, sizeof RDF_TYPE - 1));
        TRY(put_name(x, &name));
        TRY(put(x, " .\n", 3));
    }
    if (!x->empty) {
        for (;;) {
            TRY(skip_misc(x));
            if (at(x, "</")) {
                TRY(end_tag(x, qname, qname_len));
                break;
            }
            if (!at(x, "<") || at(x, "<!") || at(x, "<?"))
                return NO; /* text beside property elements, CDATA, instructions */
            x->p++;
            TRY(read_property(x, subject, s_len));
        }
    }
    x->n_ns = scope;
    return 0;
}

/* In an XML declaration at x->p: S name Eq and a quoted value; the value's bounds. */
static int pseudo_attribute(X *x, const char *name, const u8 **value, Py_ssize_t *len)
{
    const u8 *before = x->p;
    skip_space(x);
    if (x->p == before || !at(x, name))
        return NO;
    x->p += strlen(name);
    return equals_value(x, 0, value, len);
}

/* The XML declaration at "<?xml ": version 1.0, an encoding only when UTF-8 (pyoxigraph reads UTF-8
 * only), standalone yes or no, in that order. */
static int xml_declaration(X *x)
{
    const u8 *v;
    Py_ssize_t n;
    x->p += 5;
    TRY(pseudo_attribute(x, "version", &v, &n));
    if (!same(v, n, "1.0"))
        return NO;
    const u8 *mark = x->p;
    if (pseudo_attribute(x, "encoding", &v, &n) == 0) {
        if (n != 5 || (v[0] | 32) != 'u' || (v[1] | 32) != 't' || (v[2] | 32) != 'f' || v[3] != '-' || v[4] != '8')
            return NO;
        mark = x->p;
    }
    x->p = mark;
    if (pseudo_attribute(x, "standalone", &v, &n) == 0) {
        if (!same(v, n, "yes") && !same(v, n, "no"))
            return NO;
        mark = x->p;
    }
    x->p = mark;
    skip_space(x);
    if (!at(x, "?>"))
        return NO;
    x->p += 2;
    return 0;
}

static int read_document(X *x)
{
    if (at(x, "<?xml") && x->end - x->p > 5 && is_space(x->p[5]))
        TRY(xml_declaration(x));
    TRY(skip_misc(x));
    if (!at(x, "<") || at(x, "<!") || at(x, "<?"))
        return NO;
    x->p++;
    const u8 *root;
    Py_ssize_t root_len;
    Name name;
    TRY(start_tag(x, &root, &root_len, &name));
    if (!is_ns(&name, RDF_NS, "RDF") || x->n_attrs || x->empty)
        return NO; /* xml:lang, xml:base or another attribute on the root */
    for (;;) {
        TRY(skip_misc(x));
        if (at(x, "</")) {
            TRY(end_tag(x, root, root_len));
            break;
        }
        if (!at(x, "<") || at(x, "<!") || at(x, "<?"))
            return NO;
        x->p++;
        TRY(read_node(x));
    }
    TRY(skip_misc(x));
    return x->p == x->end ? 0 : NO;
}

PyObject *nt_rdfxml_lines(PyObject *Py_UNUSED(self), PyObject *args)
{
    Py_buffer doc;
    if (!PyArg_ParseTuple(args, "y*:rdfxml_lines", &doc))
        return NULL;
    X *x = PyMem_RawCalloc(1, sizeof(X));
    if (!x) {
        PyBuffer_Release(&doc);
        return PyErr_NoMemory();
    }
    x->p = doc.buf;
    x->end = x->p + doc.len;
    int r;
    Py_BEGIN_ALLOW_THREADS r = read_document(x);
    Py_END_ALLOW_THREADS PyBuffer_Release(&doc);
    PyObject *result = NULL;
    if (r == 0)
        result = out_bytes(&x->out);
    else if (r == NOMEM)
        PyErr_NoMemory();
    else
        result = Py_NewRef(Py_None);
    out_free(&x->out);
    out_free(&x->subject);
    PyMem_RawFree(x);
    return result;
}
