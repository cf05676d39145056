// Sparse optical flow for the face tracker (see sightline_flow.h).
#include "Shim.hpp"
#include "sightline_flow.h"
#include <opencv2/video/tracking.hpp>
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

using namespace sightline;

namespace {
// Forward from `before` to `after` and back, as slcv_track_points says.
void trackBothWays(const std::vector<cv::Mat> &before, const std::vector<cv::Mat> &after, int levels,
                   const float *points, int count, int window, float *moved, uint8_t *status, float *error) {
    const cv::Size size(window, window);
    std::vector<cv::Point2f> from(count), to, back;
    for (int i = 0; i < count; i++) from[i] = cv::Point2f(points[2 * i], points[2 * i + 1]);
    std::vector<uchar> forward, backward;
    std::vector<float> unused;
    const cv::TermCriteria until(cv::TermCriteria::COUNT | cv::TermCriteria::EPS, 20, 0.03);
    cv::calcOpticalFlowPyrLK(before, after, from, to, forward, unused, size, levels, until);
    cv::calcOpticalFlowPyrLK(after, before, to, back, backward, unused, size, levels, until);
    for (int i = 0; i < count; i++) {
        moved[2 * i] = to[i].x;
        moved[2 * i + 1] = to[i].y;
        status[i] = forward[i] && backward[i] ? 1 : 0;
        error[i] = (float)std::hypot(back[i].x - from[i].x, back[i].y - from[i].y);
    }
}
} // namespace

extern "C" int slcv_track_points(slcv_image prev, slcv_image next, const float *points, int count, int window,
                                 int levels, float *moved, uint8_t *status, float *error, slcv_error *err) {
    return guarded(err, [&] {
        if (prev.channels != 1 || next.channels != 1) return fail(err, 20, "optical flow needs gray images");
        if (prev.width != next.width || prev.height != next.height)
            return fail(err, 21, "optical flow needs two images of one size");
        if (count <= 0) return 0;
        const cv::Size size(window, window);
        // Each pyramid is built once and used both ways.
        std::vector<cv::Mat> before, after;
        const int built = cv::buildOpticalFlowPyramid(wrap(prev), before, size, levels);
        cv::buildOpticalFlowPyramid(wrap(next), after, size, built);
        trackBothWays(before, after, built, points, count, window, moved, status, error);
        return 0;
    });
}

struct slcv_flow_pyramid {
    std::vector<cv::Mat> levels;
    int built = 0;
    int window = 0;
    cv::Size size;
};

extern "C" slcv_flow_pyramid *slcv_flow_pyramid_build(slcv_image image, int window, int levels, slcv_error *err) {
    slcv_flow_pyramid *made = nullptr;
    const int code = guarded(err, [&] {
        if (image.channels != 1) return fail(err, 20, "optical flow needs gray images");
        auto pyramid = std::make_unique<slcv_flow_pyramid>();
        // Level 0 is a bordered copy of the image (never the caller's pixels).
        pyramid->built = cv::buildOpticalFlowPyramid(wrap(image), pyramid->levels, cv::Size(window, window), levels,
                                                     true, cv::BORDER_REFLECT_101, cv::BORDER_CONSTANT, false);
        pyramid->window = window;
        pyramid->size = cv::Size(image.width, image.height);
        made = pyramid.release();
        return 0;
    });
    return code == 0 ? made : nullptr;
}

extern "C" void slcv_flow_pyramid_free(slcv_flow_pyramid *pyramid) { delete pyramid; }

extern "C" int slcv_track_points_in_pyramids(const slcv_flow_pyramid *prev, const slcv_flow_pyramid *next,
                                             const float *points, int count, int window, float *moved,
                                             uint8_t *status, float *error, slcv_error *err) {
    return guarded(err, [&] {
        if (!prev || !next) return fail(err, 22, "optical flow needs two pyramids");
        if (prev->size != next->size) return fail(err, 21, "optical flow needs two images of one size");
        if (window > prev->window || window > next->window)
            return fail(err, 23, "the search window is larger than the pyramids were built for");
        if (count <= 0) return 0;
        trackBothWays(prev->levels, next->levels, std::min(prev->built, next->built), points, count, window, moved,
                      status, error);
        return 0;
    });
}
