// Shared helpers for the OpenCV shim's translation units (C++ only).
#pragma once
#include "sightline_opencv.h"
#include <opencv2/core.hpp>
#include <cstdio>
#include <exception>

struct slcv_mat { cv::Mat mat; };

namespace sightline {

inline cv::Mat wrap(const slcv_image &image) {
    int type = image.channels == 1 ? CV_8UC1 : (image.channels == 4 ? CV_8UC4 : CV_8UC3);
    return cv::Mat(image.height, image.width, type, image.data, (size_t)image.stride);
}

inline slcv_image view(const cv::Mat &mat) {
    slcv_image image;
    image.data = mat.data;
    image.width = mat.cols;
    image.height = mat.rows;
    image.stride = (int)mat.step[0];
    image.channels = mat.channels();
    return image;
}

inline void clear(slcv_error *err) {
    if (err) { err->code = 0; err->message[0] = 0; }
}

inline int fail(slcv_error *err, int code, const char *what) {
    if (err) {
        err->code = code;
        std::snprintf(err->message, sizeof err->message, "%s", what ? what : "unknown error");
    }
    return code;
}

// Runs body, turning any C++ exception into an error code and message.
template <typename Body>
int guarded(slcv_error *err, Body body) {
    clear(err);
    try {
        return body();
    } catch (const cv::Exception &e) {
        return fail(err, e.code ? e.code : -1, e.what());
    } catch (const std::exception &e) {
        return fail(err, -1, e.what());
    } catch (...) {
        return fail(err, -1, "unknown C++ exception");
    }
}

} // namespace sightline
