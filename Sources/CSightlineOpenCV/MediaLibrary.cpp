// The slcv_* functions that need OpenCV's videoio or imgcodecs, forwarded to
// libSightlineMedia.so (Sources/CSightlineMedia), which is loaded on first
// use. Linking videoio and imgcodecs into the server maps about 230 shared
// libraries (FFmpeg, GStreamer, GDAL and theirs) at start, about 45 MiB of
// resident memory, though a camera or the demo source never uses them.
//
// The library is looked for at $SIGHTLINE_MEDIA_LIBRARY, else beside the
// binary that holds this code (.build/release/ for the server and the tests),
// else in ../lib/sightline/ from there (`make install`).
#include "Shim.hpp"
#include <dlfcn.h>
#include <cstdlib>
#include <string>

using namespace sightline;

namespace {

struct Media {
    void *handle = nullptr;
    std::string where;  // the path loaded, or why none was
    int (*decode)(const uint8_t *, size_t, int, slcv_mat **, slcv_error *) = nullptr;
    int (*encode)(const char *, slcv_image, slcv_mat **, slcv_error *) = nullptr;
    int (*capture_open)(const char *, slcv_capture **, slcv_error *) = nullptr;
    int (*capture_read)(slcv_capture *, int *, slcv_image *, slcv_error *) = nullptr;
    double (*capture_fps)(slcv_capture *) = nullptr;
    double (*capture_frame_count)(slcv_capture *) = nullptr;
    int (*capture_rewind)(slcv_capture *, slcv_error *) = nullptr;
    void (*capture_release)(slcv_capture *) = nullptr;
};

const char *const libraryName = "libSightlineMedia.so";

std::string directoryOfThisCode() {
    Dl_info info;
    if (!dladdr(reinterpret_cast<void *>(&directoryOfThisCode), &info) || !info.dli_fname) return ".";
    std::string path = info.dli_fname;
    auto slash = path.rfind('/');
    return slash == std::string::npos ? "." : path.substr(0, slash);
}

template <typename F> bool bind(void *handle, const char *name, F &slot, std::string &missing) {
    slot = reinterpret_cast<F>(dlsym(handle, name));
    if (!slot) missing += std::string(missing.empty() ? "" : ", ") + name;
    return slot != nullptr;
}

Media load() {
    Media media;
    std::vector<std::string> candidates;
    if (const char *env = std::getenv("SIGHTLINE_MEDIA_LIBRARY"); env && *env) {
        candidates.push_back(env);
    } else {
        std::string here = directoryOfThisCode();
        candidates.push_back(here + "/" + libraryName);
        candidates.push_back(here + "/../lib/sightline/" + libraryName);
    }
    std::string tried;
    for (const auto &path : candidates) {
        media.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (media.handle) { media.where = path; break; }
        const char *why = dlerror();
        tried += (tried.empty() ? "" : "; ") + std::string(why ? why : path);
    }
    if (!media.handle) {
        media.where = std::string("cannot load ") + libraryName +
                      " (video files, stream URLs and image formats other than PNG and JPEG need it): " + tried;
        return media;
    }
    std::string missing;
    bind(media.handle, "slmedia_decode", media.decode, missing);
    bind(media.handle, "slmedia_encode", media.encode, missing);
    bind(media.handle, "slmedia_capture_open", media.capture_open, missing);
    bind(media.handle, "slmedia_capture_read", media.capture_read, missing);
    bind(media.handle, "slmedia_capture_fps", media.capture_fps, missing);
    bind(media.handle, "slmedia_capture_frame_count", media.capture_frame_count, missing);
    bind(media.handle, "slmedia_capture_rewind", media.capture_rewind, missing);
    bind(media.handle, "slmedia_capture_release", media.capture_release, missing);
    if (!missing.empty()) {
        media.where = media.where + " lacks " + missing + " (built from another version?)";
        media.handle = nullptr;  // kept loaded: dlclose of a half-bound library gains nothing
    }
    return media;
}

// Loaded once, on first use, by whichever thread comes first (C++ static
// initialisation is thread-safe); never unloaded.
const Media &media() {
    static const Media loaded = load();
    return loaded;
}

int unavailable(slcv_error *err) { return fail(err, 20, media().where.c_str()); }

} // namespace

extern "C" const char *slcv_media_library(void) { return media().where.c_str(); }

extern "C" int slcv_decode(const uint8_t *bytes, size_t length, int channels, slcv_mat **out, slcv_error *err) {
    return media().handle ? media().decode(bytes, length, channels, out, err) : unavailable(err);
}

extern "C" int slcv_encode(const char *extension, slcv_image image, slcv_mat **out, slcv_error *err) {
    return media().handle ? media().encode(extension, image, out, err) : unavailable(err);
}

extern "C" int slcv_capture_open(const char *uri, slcv_capture **out, slcv_error *err) {
    return media().handle ? media().capture_open(uri, out, err) : unavailable(err);
}

// A capture exists only if the library loaded, so these need no check.
extern "C" int slcv_capture_read(slcv_capture *cap, int *got, slcv_image *frame, slcv_error *err) {
    return media().capture_read(cap, got, frame, err);
}
extern "C" double slcv_capture_fps(slcv_capture *cap) { return media().capture_fps(cap); }
extern "C" double slcv_capture_frame_count(slcv_capture *cap) { return media().capture_frame_count(cap); }
extern "C" int slcv_capture_rewind(slcv_capture *cap, slcv_error *err) { return media().capture_rewind(cap, err); }
extern "C" void slcv_capture_release(slcv_capture *cap) {
    if (cap) media().capture_release(cap);
}
