// The ingest's poppler: its warm page-0 renderer (pdftoppm, loaded once, serving PDF after PDF) and
// its PDF text (pdftotext's, in the extraction process: text()).
//
// `pdftoppm -f 1 -l 1 -singlefile -jpeg -scale-to-x 180 -scale-to-y -1 -` spends most of its
// ~10 ms of CPU starting (linking poppler and its libraries, reading fontconfig's configuration)
// and ending, a small page under 1 ms rendering it. serve() pays the start once: it makes poppler's
// GlobalParams and loads fontconfig, then takes requests from a control socket, each a connected
// socket passed with SCM_RIGHTS, one after the other. For each it runs what pdftoppm's main
// (utils/pdftoppm.cc of poppler 22.12) runs for those arguments, the same calls in the same order:
// the PDF is read through "fd://0" with the request's socket as fd 0 (as pdftoppm reads its
// stdin), the JPEG written to the socket (its stdout), then pdftoppm's exit status as a 4-byte wait
// status. Before all that, one byte (kTaken) says the server took the request: the caller may queue
// a next request while one renders, and a request left without even that byte was never taken.
// Each render has its own PDFDoc and SplashOutputDev, as in pdftoppm; what outlives one render is
// what pdftoppm builds before the first (GlobalParams, fontconfig).
//
// A server renders one PDF at a time, so a crash (a signal) or the deadline (SIGALRM, its default
// action) ends the server with only that PDF lost: the caller reads the server's end from its
// exit and starts another (votersdaily/ingest/thumbnail.py, which also checks the bytes against
// pdftoppm's and falls back to pdftoppm itself when this module is not built).

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <poppler-config.h>

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <optional>
#include <utility>

#include <fcntl.h>
#include <fontconfig/fontconfig.h>
#include <malloc.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "GlobalParams.h"
#include "PDFDoc.h"
#include "PDFDocFactory.h"
#include "SplashOutputDev.h"
#include "Stream.h"
#include "TextOutputDev.h"
#include "goo/GooString.h"
#include "splash/Splash.h"
#include "splash/SplashBitmap.h"
#include "splash/SplashErrorCodes.h"

namespace {

// pdftoppm's exit status for a page range it cannot render (its kOtherError).
constexpr int kOtherError = 99;
// The first byte of every answer: the server took this request (thumbnail.py's _TAKEN).
constexpr char kTaken = 'T';
// The width asked for: -scale-to-x 180 (sandcrawler's thumbnails are 180 px wide), -scale-to-y -1.
constexpr int kScaleToX = 180;
constexpr int kScaleToY = -1;
// Allocations below this come from the heap, not mmap (whose pages are returned at each free).
constexpr int kKeptAllocation = 4 << 20;
// Free memory at the heap's top kept for the next render, up to this.
constexpr int kKeptFreeMemory = 16 << 20;

bool show_annotations(Annot *, void *)
{
    return true;  // pdftoppm's annotDisplayDecideCbk without -hide-annotations
}

bool need_to_rotate(int angle)
{
    return angle == 90 || angle == 270;
}

// pdftoppm's main and savePageSlice for "-f 1 -l 1 -singlefile -jpeg -scale-to-x 180 -scale-to-y -1 -",
// every other option at its default (globalParams already made by serve()). Returns its exit status.
int render_page0(FILE *out)
{
    double x_resolution = 150.0;
    double y_resolution = 150.0;
    std::unique_ptr<PDFDoc> doc(PDFDocFactory().createPDFDoc(GooString("fd://0"), std::optional<GooString>(), std::optional<GooString>()));
    if (!doc->isOk()) {
        return 1;
    }
    int firstPage = 1;
    int lastPage = 1;
    if (lastPage > doc->getNumPages()) {
        lastPage = doc->getNumPages();
    }
    if (lastPage < firstPage) {
        fprintf(stderr, "Wrong page range given: the first page (%d) can not be after the last page (%d).\n", firstPage, lastPage);
        return kOtherError;
    }
    SplashColor paperColor;
    paperColor[0] = 255;
    paperColor[1] = 255;
    paperColor[2] = 255;
    auto *splashOut = new SplashOutputDev(splashModeRGB8, 4, false, paperColor, true, splashThinLineDefault, false);
    splashOut->setFontAntialias(true);
    splashOut->setVectorAntialias(true);
    splashOut->setEnableFreeType(true);
    splashOut->setDisplayProfile(GfxLCMSProfilePtr());
    splashOut->setDefaultGrayProfile(GfxLCMSProfilePtr());
    splashOut->setDefaultRGBProfile(GfxLCMSProfilePtr());
    splashOut->setDefaultCMYKProfile(GfxLCMSProfilePtr());
    splashOut->startDoc(doc.get());

    const int pg = firstPage;
    double pg_w = doc->getPageMediaWidth(pg);
    double pg_h = doc->getPageMediaHeight(pg);
    // -scale-to-x 180 -scale-to-y -1: pdftoppm's arithmetic, in its order
    x_resolution = (72.0 * kScaleToX) / pg_w;
    pg_w = kScaleToX;
    if (kScaleToY == -1) {
        y_resolution = x_resolution;
    }
    pg_h = pg_h * y_resolution / 72.0;
    if (need_to_rotate(doc->getPageRotate(pg))) {
        std::swap(pg_w, pg_h);
    }

    // savePageSlice(doc, splashOut, pg, 0, 0, 0, 0, pg_w, pg_h, nullptr)
    int x = 0, y = 0;
    int w = (int)ceil(pg_w);
    int h = (int)ceil(pg_h);
    w = (x + w > pg_w ? (int)ceil(pg_w - x) : w);
    h = (y + h > pg_h ? (int)ceil(pg_h - y) : h);
    doc->displayPageSlice(splashOut, pg, x_resolution, y_resolution, 0, true, false, false, x, y, w, h, nullptr, nullptr, show_annotations, nullptr);
    SplashBitmap *bitmap = splashOut->getBitmap();
    SplashBitmap::WriteImgParams params;
    params.jpegQuality = -1;
    params.jpegProgressive = false;
    params.jpegOptimize = false;
    params.tiffCompression = "";
    bitmap->writeImgFile(splashFormatJpeg, out, x_resolution, y_resolution, &params);
    delete splashOut;
    return 0;
}

// Receives one request: the render's deadline in seconds (a double) and the request's socket.
// 0 at the control socket's end (the crawl closed it, or died), -1 for a malformed request.
int receive(int control, double *timeout)
{
    char space[CMSG_SPACE(sizeof(int))];
    struct iovec iov = { timeout, sizeof(*timeout) };
    struct msghdr msg = {};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = space;
    msg.msg_controllen = sizeof(space);
    ssize_t n;
    do {
        n = recvmsg(control, &msg, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) {
        return 0;
    }
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
    if (cmsg == nullptr || cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS) {
        return -1;
    }
    int request;
    memcpy(&request, CMSG_DATA(cmsg), sizeof(int));
    if (n != (ssize_t)sizeof(*timeout) || !(*timeout > 0)) {
        close(request);
        return -1;
    }
    return request;
}

// A deadline for this render: past it SIGALRM (its default action) ends the server, which the
// caller reads as the timeout; 0 clears it.
void set_deadline(double seconds)
{
    struct itimerval deadline = {};
    deadline.it_value.tv_sec = (time_t)seconds;
    deadline.it_value.tv_usec = (suseconds_t)((seconds - (double)deadline.it_value.tv_sec) * 1e6);
    if (seconds > 0 && deadline.it_value.tv_sec == 0 && deadline.it_value.tv_usec == 0) {
        deadline.it_value.tv_usec = 1;
    }
    setitimer(ITIMER_REAL, &deadline, nullptr);
}

// One request: its socket becomes fd 0 (pdftoppm's stdin: the PDF, up to the caller's shutdown)
// and the JPEG goes to it as to pdftoppm's stdout; then pdftoppm's exit status, as a 4-byte
// wait status (exited with that code).
void answer(int request, double timeout)
{
    (void)send(request, &kTaken, 1, MSG_NOSIGNAL);
    set_deadline(timeout);
    int status = kOtherError;
    FILE *out = nullptr;
    int copy = dup(request);
    if (dup2(request, 0) == 0 && copy >= 0 && (out = fdopen(copy, "wb")) != nullptr) {
        clearerr(stdin);  // the previous request's end of file
        status = render_page0(out);
        fclose(out);
    } else if (copy >= 0) {
        close(copy);
    }
    set_deadline(0);
    int32_t word = status << 8;  // W_EXITCODE(status, 0)
    (void)send(request, &word, sizeof(word), MSG_NOSIGNAL);
    close(request);
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);  // fd 0 no longer holds the socket open
    if (devnull >= 0) {
        dup2(devnull, 0);
        close(devnull);
    }
}

PyObject *serve(PyObject *, PyObject *args)
{
    int control;
    if (!PyArg_ParseTuple(args, "i", &control)) {
        return nullptr;
    }
    Py_BEGIN_ALLOW_THREADS;
    // Keep the heap between renders: glibc gave the page's bitmap (130-140 KB at 180 px wide, mmap'd
    // or at the heap's top) back to the kernel at each render's end, and the next render faulted it
    // in again (some 35 page faults, a fifth of a render's CPU). Memory is not what is rendered: the
    // same bytes; what a large page takes is returned above these thresholds, and a server ends
    // after thumbnail.py's RENDERS_PER_PROCESS renders.
    mallopt(M_MMAP_THRESHOLD, kKeptAllocation);
    mallopt(M_TRIM_THRESHOLD, kKeptFreeMemory);
    globalParams = std::make_unique<GlobalParams>();
    FcInit();  // what the first font lookup of every pdftoppm run loads
    signal(SIGINT, SIG_IGN);  // Ctrl-C is the crawl's to handle: the server ends with its socket
    signal(SIGPIPE, SIG_DFL);
    signal(SIGALRM, SIG_DFL);
    for (;;) {
        double timeout = 0;
        int request = receive(control, &timeout);
        if (request == 0) {
            break;
        }
        if (request > 0) {
            answer(request, timeout);
        }
    }
    globalParams.reset();
    Py_END_ALLOW_THREADS;
    Py_RETURN_NONE;
}

// TextOutputDev's output function: the text appended to a std::string (pdftotext's goes to its file).
void append_text(void *stream, const char *text, int len)
{
    static_cast<std::string *>(stream)->append(text, (size_t)len);
}

// What `pdftotext -q -l <last_page> - -` (utils/pdftotext.cc of poppler 22.12, every other option at
// its default) writes for the PDF in `data`, into `out`; returns its exit status. The bytes are read
// from memory, not through "fd://0": the same stream of bytes to the same parser.
int text_of(const char *data, Py_ssize_t size, int last_page, std::string *out)
{
    if (!globalParams) {  // once a process; -q: poppler's complaints about a PDF are not printed
        globalParams = std::make_unique<GlobalParams>();
        globalParams->setErrQuiet(true);
    }
    // The document owns the stream, the caller the bytes (held until the document is gone).
    PDFDoc doc(new MemStream(const_cast<char *>(data), 0, (Goffset)size, Object(objNull)));
    if (!doc.isOk()) {
        return 1;
    }
    int firstPage = 1;
    int lastPage = last_page;
    if (lastPage < 1 || lastPage > doc.getNumPages()) {
        lastPage = doc.getNumPages();
    }
    if (lastPage < firstPage) {
        return kOtherError;
    }
    TextOutputDev textOut(append_text, out, false, 0, false, false);
    if (!textOut.isOk()) {
        return 2;
    }
    textOut.setTextEOL(eolUnix);
    textOut.setMinColSpacing1(TextOutputDev::minColSpacing1_default);
    doc.displayPages(&textOut, firstPage, lastPage, 72.0, 72.0, 0, true, false, false);
    return 0;
}

// Poppler's globals (GlobalParams, its caches) are shared: one text at a time in a process.
std::mutex text_lock;

PyObject *text(PyObject *, PyObject *args)
{
    Py_buffer pdf;
    int last_page;
    if (!PyArg_ParseTuple(args, "y*i", &pdf, &last_page)) {
        return nullptr;
    }
    std::string out;
    int status;
    Py_BEGIN_ALLOW_THREADS;
    {
        std::lock_guard<std::mutex> hold(text_lock);
        status = text_of(static_cast<const char *>(pdf.buf), pdf.len, last_page, &out);
    }
    Py_END_ALLOW_THREADS;
    PyBuffer_Release(&pdf);
    return Py_BuildValue("iy#", status, out.data(), (Py_ssize_t)out.size());
}

PyMethodDef methods[] = {
    { "serve", serve, METH_VARARGS,
      "serve(control_fd): render page 0 of each PDF sent as pdftoppm would, one after the other, "
      "until the control socket ends." },
    { "text", text, METH_VARARGS,
      "text(pdf, last_page) -> (exit status, text): what `pdftotext -q -l last_page - -` writes for the "
      "PDF's bytes, run in this process (poppler's complaints not printed)." },
    { nullptr, nullptr, 0, nullptr },
};

struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_page0", "Poppler's pdftoppm for page-0 thumbnails, loaded once, and its pdftotext.", -1, methods,
    nullptr, nullptr, nullptr, nullptr,
};

}  // namespace

PyMODINIT_FUNC PyInit__page0(void)
{
    PyObject *m = PyModule_Create(&module);
    // What thumbnail.py expects of serve(): 2 since each answer starts with kTaken.
    if (m != nullptr && PyModule_AddIntConstant(m, "PROTOCOL", 2) < 0) {
        Py_DECREF(m);
        return nullptr;
    }
    return m;
}
