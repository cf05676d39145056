// The parts of OpenCV that bring most of its dependencies: cv::VideoCapture
// (video files and stream URLs, FFmpeg backend) and imgcodecs (image formats
// other than PNG and JPEG, which Sightline reads itself). Built as its own
// library, libSightlineMedia.so, which the main shim loads on first use
// (MediaLibrary.cpp), so a camera or the demo never maps FFmpeg, GStreamer
// and GDAL. Functions are named slmedia_* and match slcv_* in sightline_opencv.h.
#include "sightline_media.h"
#include "Shim.hpp"
#include <opencv2/imgcodecs.hpp>
#include <opencv2/videoio.hpp>

using namespace sightline;

struct slcv_capture {
    cv::VideoCapture capture;
    cv::Mat frame;
};

extern "C" int slmedia_capture_open(const char *uri, slcv_capture **out, slcv_error *err) {
    return guarded(err, [&] {
        auto *cap = new slcv_capture();
        // Bounded waits so a dead stream URL cannot hang the capture thread.
        std::vector<int> params = {cv::CAP_PROP_OPEN_TIMEOUT_MSEC, 5000, cv::CAP_PROP_READ_TIMEOUT_MSEC, 5000};
        if (!cap->capture.open(uri, cv::CAP_FFMPEG, params)) {
            delete cap;
            return fail(err, 10, "cannot open the source with OpenCV's FFmpeg backend");
        }
        *out = cap;
        return 0;
    });
}

extern "C" int slmedia_capture_read(slcv_capture *cap, int *got, slcv_image *frame, slcv_error *err) {
    return guarded(err, [&] {
        *got = cap->capture.read(cap->frame) && !cap->frame.empty() ? 1 : 0;
        if (*got) {
            if (cap->frame.type() != CV_8UC3) return fail(err, 11, "capture gave a frame that is not 8-bit BGR");
            *frame = view(cap->frame);
        }
        return 0;
    });
}

extern "C" double slmedia_capture_fps(slcv_capture *cap) { return cap->capture.get(cv::CAP_PROP_FPS); }
extern "C" double slmedia_capture_frame_count(slcv_capture *cap) { return cap->capture.get(cv::CAP_PROP_FRAME_COUNT); }

extern "C" int slmedia_capture_rewind(slcv_capture *cap, slcv_error *err) {
    return guarded(err, [&] {
        return cap->capture.set(cv::CAP_PROP_POS_FRAMES, 0) ? 0 : fail(err, 12, "cannot rewind the source");
    });
}

extern "C" void slmedia_capture_release(slcv_capture *cap) {
    try { delete cap; } catch (...) {}
}

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
