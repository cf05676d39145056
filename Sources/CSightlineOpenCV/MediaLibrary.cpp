// The slcv_* functions that need OpenCV's imgcodecs (image formats other
// than PNG and JPEG), forwarded to libSightlineMedia.so
// (Sources/CSightlineMedia), which is loaded on first use. Linking imgcodecs
// into the server would map about 80 more shared libraries (GDAL, poppler,
// OpenEXR, gdcm and theirs) at start, about 40 MiB of resident memory, though
// only such an image uses them. Video files and stream URLs no longer come
// here: CSightlineAV reads them with the FFmpeg the server links.
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
                      " (image formats other than PNG and JPEG need it): " + tried;
        return media;
    }
    std::string missing;
    bind(media.handle, "slmedia_decode", media.decode, missing);
    bind(media.handle, "slmedia_encode", media.encode, missing);
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
