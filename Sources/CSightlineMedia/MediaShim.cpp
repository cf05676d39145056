// The part of OpenCV that brings most of its dependencies: imgcodecs (image
// formats other than PNG and JPEG, which Sightline reads itself). Built as its
// own library, libSightlineMedia.so, which the main shim loads on first use
// (MediaLibrary.cpp), so a server that never meets such an image never maps
// GDAL, poppler, OpenEXR and the rest. (Video files and stream URLs are read
// with FFmpeg, which the server links itself: CSightlineAV's reader.)
// Functions are named slmedia_* and match slcv_* in sightline_opencv.h.
#include "sightline_media.h"
#include "Shim.hpp"
#include <opencv2/imgcodecs.hpp>

using namespace sightline;

static int finishDecode(cv::Mat decoded, slcv_mat **out, slcv_error *err) {
    if (decoded.empty()) return fail(err, 2, "the image could not be decoded");
    if (decoded.depth() != CV_8U) return fail(err, 3, "only 8-bit images are supported");
    *out = new slcv_mat{decoded};
    return 0;
}

extern "C" int slmedia_decode(const uint8_t *bytes, size_t length, int channels, slcv_mat **out, slcv_error *err) {
    return guarded(err, [&] {
        cv::Mat raw(1, (int)length, CV_8UC1, (void *)bytes);
        int flags = channels == 1 ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR;
        return finishDecode(cv::imdecode(raw, flags), out, err);
    });
}

extern "C" int slmedia_encode(const char *extension, slcv_image image, slcv_mat **out, slcv_error *err) {
    return guarded(err, [&] {
        std::vector<uchar> bytes;
        if (!cv::imencode(extension, wrap(image), bytes)) return fail(err, 4, "the image could not be encoded");
        *out = new slcv_mat{cv::Mat(bytes, true).reshape(1, 1)};
        return 0;
    });
}
