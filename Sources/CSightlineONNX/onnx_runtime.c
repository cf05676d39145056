// ONNX Runtime's C API through dlopen (see sightline_onnx.h).
#include "sightline_onnx.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The runtime's objects, opaque here as in its own header.
typedef struct OrtStatus OrtStatus;
typedef struct OrtEnv OrtEnv;
typedef struct OrtSession OrtSession;
typedef struct OrtSessionOptions OrtSessionOptions;
typedef struct OrtValue OrtValue;
typedef struct OrtMemoryInfo OrtMemoryInfo;
typedef struct OrtTensorTypeAndShapeInfo OrtTensorTypeAndShapeInfo;
typedef struct OrtAllocator OrtAllocator;

typedef struct OrtApiBase {
    const void *(*GetApi)(uint32_t version);
    const char *(*GetVersionString)(void);
} OrtApiBase;

// The API version asked for (GetApi answers NULL when the library is older):
// every entry used here has been in the table since version 1; 13 is ONNX
// Runtime 1.13, from 2022.
enum { API_VERSION = 13 };

// Places in the OrtApi table (struct OrtApi in onnxruntime_c_api.h: its
// members in order, each a function pointer).
enum {
    GET_ERROR_MESSAGE = 2,
    CREATE_ENV = 3,
    CREATE_SESSION_FROM_ARRAY = 8,
    RUN = 9,
    CREATE_SESSION_OPTIONS = 10,
    DISABLE_CPU_MEM_ARENA = 19,
    SET_GRAPH_OPTIMIZATION_LEVEL = 23,
    SET_INTRA_OP_THREADS = 24,
    SET_INTER_OP_THREADS = 25,
    SESSION_GET_INPUT_NAME = 36,
    CREATE_TENSOR_WITH_DATA = 49,
    GET_TENSOR_MUTABLE_DATA = 51,
    GET_TENSOR_ELEMENT_TYPE = 60,
    GET_TENSOR_SHAPE_ELEMENT_COUNT = 64,
    GET_TENSOR_TYPE_AND_SHAPE = 65,
    CREATE_CPU_MEMORY_INFO = 69,
    ALLOCATOR_FREE = 76,
    GET_DEFAULT_ALLOCATOR = 78,
    RELEASE_STATUS = 93,
    RELEASE_SESSION = 95,
    RELEASE_VALUE = 96,
    RELEASE_TENSOR_TYPE_AND_SHAPE_INFO = 99,
    RELEASE_SESSION_OPTIONS = 100,
};

enum { LOG_ERROR = 3, OPTIMIZE_ALL = 99, ELEMENT_FLOAT = 1, DEVICE_ALLOCATOR = 0, MEM_DEFAULT = 0 };

typedef const char *(*GetErrorMessageFn)(const OrtStatus *);
typedef OrtStatus *(*CreateEnvFn)(int, const char *, OrtEnv **);
typedef OrtStatus *(*CreateSessionFromArrayFn)(const OrtEnv *, const void *, size_t, const OrtSessionOptions *,
                                               OrtSession **);
typedef OrtStatus *(*RunFn)(OrtSession *, const void *, const char *const *, const OrtValue *const *, size_t,
                            const char *const *, size_t, OrtValue **);
typedef OrtStatus *(*CreateSessionOptionsFn)(OrtSessionOptions **);
typedef OrtStatus *(*SetOptionIntFn)(OrtSessionOptions *, int);
typedef OrtStatus *(*SetOptionFn)(OrtSessionOptions *);
typedef OrtStatus *(*CreateTensorWithDataFn)(const OrtMemoryInfo *, void *, size_t, const int64_t *, size_t, int,
                                             OrtValue **);
typedef OrtStatus *(*GetTensorMutableDataFn)(OrtValue *, void **);
typedef OrtStatus *(*GetTensorElementTypeFn)(const OrtTensorTypeAndShapeInfo *, int *);
typedef OrtStatus *(*GetTensorShapeElementCountFn)(const OrtTensorTypeAndShapeInfo *, size_t *);
typedef OrtStatus *(*GetTensorTypeAndShapeFn)(const OrtValue *, OrtTensorTypeAndShapeInfo **);
typedef OrtStatus *(*CreateCpuMemoryInfoFn)(int, int, OrtMemoryInfo **);
typedef OrtStatus *(*SessionGetInputNameFn)(const OrtSession *, size_t, OrtAllocator *, char **);
typedef OrtStatus *(*AllocatorFreeFn)(OrtAllocator *, void *);
typedef OrtStatus *(*GetDefaultAllocatorFn)(OrtAllocator **);
typedef void (*ReleaseFn)(void *);

// What sl_onnx_open found, once per process: set under `lock` by the first
// call, read-only after it.
static struct {
    pthread_mutex_t lock;
    int tried;
    void *const *api;
    OrtEnv *env;
    OrtMemoryInfo *cpu;
    char version[32];
    sl_onnx_error error;
} runtime = {PTHREAD_MUTEX_INITIALIZER, 0, NULL, NULL, NULL, "", {0, ""}};

// The most outputs one pass copies out (YuNet has 12).
enum { MAX_OUTPUTS = 32 };

#define API(type, index) ((type)runtime.api[index])

struct sl_onnx_session {
    OrtSession *session;
    char input_name[128];
    float *input;        // the NCHW tensor, grown as inputs grow
    size_t capacity;     // floats
};

static int fail(sl_onnx_error *err, int code, const char *format, ...) {
    if (err) {
        err->code = code;
        va_list args;
        va_start(args, format);
        vsnprintf(err->message, sizeof err->message, format, args);
        va_end(args);
    }
    return code;
}

// A failed call's message into `err` (and the status released); 0 for success.
static int check(OrtStatus *status, sl_onnx_error *err, const char *what) {
    if (!status) return 0;
    fail(err, 20, "%s: %s", what, API(GetErrorMessageFn, GET_ERROR_MESSAGE)(status));
    API(ReleaseFn, RELEASE_STATUS)(status);
    return 20;
}

static void open_library(const char *path) {
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        fail(&runtime.error, 1, "%s", dlerror());
        return;
    }
    const OrtApiBase *(*get_base)(void) = (const OrtApiBase *(*)(void))dlsym(library, "OrtGetApiBase");
    const OrtApiBase *base = get_base ? get_base() : NULL;
    if (!base) {
        fail(&runtime.error, 2, "%s has no OrtGetApiBase: not ONNX Runtime", path);
        return;
    }
    snprintf(runtime.version, sizeof runtime.version, "%s", base->GetVersionString());
    runtime.api = (void *const *)base->GetApi(API_VERSION);
    if (!runtime.api) {
        fail(&runtime.error, 3, "ONNX Runtime %s is older than 1.%d", runtime.version, API_VERSION);
        return;
    }
    if (check(API(CreateEnvFn, CREATE_ENV)(LOG_ERROR, "sightline", &runtime.env), &runtime.error,
              "creating its environment")
        || check(API(CreateCpuMemoryInfoFn, CREATE_CPU_MEMORY_INFO)(DEVICE_ALLOCATOR, MEM_DEFAULT, &runtime.cpu),
                 &runtime.error, "describing CPU memory")) {
        runtime.api = NULL;
    }
}

int sl_onnx_open(const char *path, char *version, size_t version_size, sl_onnx_error *err) {
    if (err) memset(err, 0, sizeof *err);
    pthread_mutex_lock(&runtime.lock);
    if (!runtime.tried) {
        runtime.tried = 1;
        open_library(path ? path : "libonnxruntime.so.1");
    }
    pthread_mutex_unlock(&runtime.lock);
    if (version && version_size) snprintf(version, version_size, "%s", runtime.version);
    if (!runtime.api) {
        if (err) *err = runtime.error;
        return runtime.error.code ? runtime.error.code : 1;
    }
    return 0;
}

sl_onnx_session *sl_onnx_session_new(const void *model, size_t size, sl_onnx_error *err) {
    if (err) memset(err, 0, sizeof *err);
    if (!runtime.api) {
        fail(err, 1, "ONNX Runtime is not open");
        return NULL;
    }
    OrtSessionOptions *options = NULL;
    if (check(API(CreateSessionOptionsFn, CREATE_SESSION_OPTIONS)(&options), err, "session options")) return NULL;
    OrtSession *session = NULL;
    int status = check(API(SetOptionIntFn, SET_INTRA_OP_THREADS)(options, 1), err, "intra-op threads")
        || check(API(SetOptionIntFn, SET_INTER_OP_THREADS)(options, 1), err, "inter-op threads")
        || check(API(SetOptionIntFn, SET_GRAPH_OPTIMIZATION_LEVEL)(options, OPTIMIZE_ALL), err, "optimization level")
        || check(API(SetOptionFn, DISABLE_CPU_MEM_ARENA)(options), err, "the memory arena")
        || check(API(CreateSessionFromArrayFn, CREATE_SESSION_FROM_ARRAY)(runtime.env, model, size, options, &session),
                 err, "loading the model");
    API(ReleaseFn, RELEASE_SESSION_OPTIONS)(options);
    if (status) return NULL;
    sl_onnx_session *made = calloc(1, sizeof *made);
    if (!made) {
        API(ReleaseFn, RELEASE_SESSION)(session);
        fail(err, 4, "out of memory");
        return NULL;
    }
    made->session = session;
    // The network's one input, by the name the model gives it.
    OrtAllocator *allocator = NULL;
    char *name = NULL;
    if (check(API(GetDefaultAllocatorFn, GET_DEFAULT_ALLOCATOR)(&allocator), err, "the default allocator")
        || check(API(SessionGetInputNameFn, SESSION_GET_INPUT_NAME)(session, 0, allocator, &name), err,
                 "the model's input")) {
        sl_onnx_session_free(made);
        return NULL;
    }
    snprintf(made->input_name, sizeof made->input_name, "%s", name);
    OrtStatus *freed = API(AllocatorFreeFn, ALLOCATOR_FREE)(allocator, name);
    if (freed) API(ReleaseFn, RELEASE_STATUS)(freed);
    return made;
}

void sl_onnx_session_free(sl_onnx_session *session) {
    if (!session) return;
    if (runtime.api) API(ReleaseFn, RELEASE_SESSION)(session->session);
    free(session->input);
    free(session);
}

// An output's floats into the caller's buffer.
static int copy_output(OrtValue *value, float *out, int capacity, int *length, const char *name, sl_onnx_error *err) {
    OrtTensorTypeAndShapeInfo *info = NULL;
    if (check(API(GetTensorTypeAndShapeFn, GET_TENSOR_TYPE_AND_SHAPE)(value, &info), err, name)) return 20;
    int type = 0;
    size_t count = 0;
    int status = check(API(GetTensorElementTypeFn, GET_TENSOR_ELEMENT_TYPE)(info, &type), err, name)
        || check(API(GetTensorShapeElementCountFn, GET_TENSOR_SHAPE_ELEMENT_COUNT)(info, &count), err, name);
    API(ReleaseFn, RELEASE_TENSOR_TYPE_AND_SHAPE_INFO)(info);
    if (status) return 20;
    if (type != ELEMENT_FLOAT) return fail(err, 13, "output %s is not float32", name);
    if (count > (size_t)capacity) return fail(err, 14, "output %s is larger than its buffer", name);
    void *data = NULL;
    if (check(API(GetTensorMutableDataFn, GET_TENSOR_MUTABLE_DATA)(value, &data), err, name)) return 20;
    memcpy(out, data, count * sizeof(float));
    *length = (int)count;
    return 0;
}

int sl_onnx_run_bgr(sl_onnx_session *session, const uint8_t *bgr, int width, int height, int stride,
                    const char *const *names, int count, float *const *outputs, const int *capacities,
                    int *lengths, sl_onnx_error *err) {
    if (err) memset(err, 0, sizeof *err);
    if (!session || !runtime.api) return fail(err, 1, "no session");
    if (width < 1 || height < 1 || stride < width * 3 || count < 1 || count > MAX_OUTPUTS) {
        return fail(err, 11, "bad input");
    }
    size_t plane = (size_t)width * (size_t)height, needed = plane * 3;
    if (needed > session->capacity) {
        float *grown = realloc(session->input, needed * sizeof(float));
        if (!grown) return fail(err, 4, "out of memory");
        session->input = grown;
        session->capacity = needed;
    }
    float *b = session->input, *g = b + plane, *r = g + plane;
    for (int y = 0; y < height; y++) {
        const uint8_t *row = bgr + (size_t)y * (size_t)stride;
        size_t at = (size_t)y * (size_t)width;
        for (int x = 0; x < width; x++) {
            b[at + x] = row[3 * x];
            g[at + x] = row[3 * x + 1];
            r[at + x] = row[3 * x + 2];
        }
    }
    const int64_t shape[4] = {1, 3, height, width};
    OrtValue *input = NULL;
    if (check(API(CreateTensorWithDataFn, CREATE_TENSOR_WITH_DATA)(runtime.cpu, session->input, needed * sizeof(float),
                                                                   shape, 4, ELEMENT_FLOAT, &input),
              err, "the input tensor"))
        return 20;
    OrtValue *results[MAX_OUTPUTS] = {NULL};
    const char *input_name = session->input_name;
    int status = check(API(RunFn, RUN)(session->session, NULL, &input_name, (const OrtValue *const *)&input, 1, names,
                                       (size_t)count, results),
                       err, "the forward pass");
    for (int i = 0; i < count && !status; i++) {
        status = copy_output(results[i], outputs[i], capacities[i], &lengths[i], names[i], err);
    }
    for (int i = 0; i < count; i++) {
        if (results[i]) API(ReleaseFn, RELEASE_VALUE)(results[i]);
    }
    API(ReleaseFn, RELEASE_VALUE)(input);
    return status;
}
