// sightline_onnx.h: ONNX Runtime's C API for the YuNet face network, loaded
// at run time.
//
// Why it exists: ONNX Runtime runs YuNet about three times faster than
// Debian 12's OpenCV 4.6 dnn on one thread (320x192: 1.4 against 4.3 ms;
// 640x384: 5.3 against 17.7 ms), and its CPU library comes with PyPI's
// `onnxruntime` wheel (scripts/setup.sh installs it as
// /usr/local/lib/libonnxruntime.so.1). Debian 12 has no package of it, so the
// library is opened with dlopen when a face network is first made: a server
// without it runs YuNet on OpenCV's dnn as before. The API is a table of
// function pointers (OrtApi) reached through OrtGetApiBase; this shim calls
// the few it needs by their place in that table (stable across releases:
// ONNX Runtime only ever appends to it) and hides tensors, statuses and
// names behind one session handle and one call.
//
// Threads: sl_onnx_open may be called from any thread (the first call opens,
// under a lock). A session belongs to one thread at a time (it keeps its
// input buffer).
#ifndef SIGHTLINE_ONNX_H
#define SIGHTLINE_ONNX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl_onnx_error {
    int code;            // 0 when fine
    char message[256];
} sl_onnx_error;

typedef struct sl_onnx_session sl_onnx_session;

// Opens the library (`path`, or NULL: "libonnxruntime.so.1" through the
// dynamic linker's search path) once per process and reports its version
// into `version` (e.g. "1.32.0"). Later calls report the first outcome.
// Returns 0, or nonzero with `err` saying why (not installed, too old).
int sl_onnx_open(const char *path, char *version, size_t version_size, sl_onnx_error *err);

// A session on a model held in memory (`model`, `size` bytes; copied),
// running on the calling thread only (one intra-op and one inter-op
// thread, all graph optimizations), without ONNX Runtime's memory arena:
// the arena kept the largest pass's buffers for every input size (the
// usual pass, the fine pass at 640, the 320 crops) and the server's resident
// memory was 20 MB higher on a 768x576 video (174 against 155 MB), for no
// CPU saved. NULL on failure, with `err` set.
sl_onnx_session *sl_onnx_session_new(const void *model, size_t size, sl_onnx_error *err);
void sl_onnx_session_free(sl_onnx_session *session);

// One forward pass on a BGR image (3 bytes a pixel, `stride` bytes a row),
// fed as the float NCHW tensor [1, 3, height, width] of its B, G and R
// planes (what cv::dnn::blobFromImage makes, no scaling or mean). The
// outputs named `names` are copied into the caller's float buffers
// (`capacities` floats each, at most 32 outputs); `lengths` receives how
// many were written.
int sl_onnx_run_bgr(sl_onnx_session *session, const uint8_t *bgr, int width, int height, int stride,
                    const char *const *names, int count, float *const *outputs, const int *capacities,
                    int *lengths, sl_onnx_error *err);

#ifdef __cplusplus
}
#endif

#endif
