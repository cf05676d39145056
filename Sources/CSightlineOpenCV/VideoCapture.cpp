// cv::VideoCapture behind C calls: video files and stream URLs (FFmpeg backend).
#include "Shim.hpp"
#include <opencv2/videoio.hpp>

using namespace sightline;

struct slcv_capture {
    cv::VideoCapture capture;
    cv::Mat frame;
};

extern "C" int slcv_capture_open(const char *uri, slcv_capture **out, slcv_error *err) {
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

extern "C" int slcv_capture_read(slcv_capture *cap, int *got, slcv_image *frame, slcv_error *err) {
    return guarded(err, [&] {
        *got = cap->capture.read(cap->frame) && !cap->frame.empty() ? 1 : 0;
        if (*got) {
            if (cap->frame.type() != CV_8UC3) return fail(err, 11, "capture gave a frame that is not 8-bit BGR");
            *frame = view(cap->frame);
        }
        return 0;
    });
}

extern "C" double slcv_capture_fps(slcv_capture *cap) { return cap->capture.get(cv::CAP_PROP_FPS); }
extern "C" double slcv_capture_frame_count(slcv_capture *cap) { return cap->capture.get(cv::CAP_PROP_FRAME_COUNT); }

extern "C" int slcv_capture_rewind(slcv_capture *cap, slcv_error *err) {
    return guarded(err, [&] {
        return cap->capture.set(cv::CAP_PROP_POS_FRAMES, 0) ? 0 : fail(err, 12, "cannot rewind the source");
    });
}

extern "C" void slcv_capture_release(slcv_capture *cap) {
    try { delete cap; } catch (...) {}
}
