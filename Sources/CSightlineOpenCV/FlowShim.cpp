// Sparse optical flow for the face tracker (see sightline_flow.h).
#include "Shim.hpp"
#include "sightline_flow.h"
#include <opencv2/video/tracking.hpp>
#include <cmath>
#include <vector>

using namespace sightline;

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
        std::vector<cv::Point2f> from(count), to, back;
        for (int i = 0; i < count; i++) from[i] = cv::Point2f(points[2 * i], points[2 * i + 1]);
        std::vector<uchar> forward, backward;
        std::vector<float> unused;
        const cv::TermCriteria until(cv::TermCriteria::COUNT | cv::TermCriteria::EPS, 20, 0.03);
        cv::calcOpticalFlowPyrLK(before, after, from, to, forward, unused, size, built, until);
        cv::calcOpticalFlowPyrLK(after, before, to, back, backward, unused, size, built, until);
        for (int i = 0; i < count; i++) {
            moved[2 * i] = to[i].x;
            moved[2 * i + 1] = to[i].y;
            status[i] = forward[i] && backward[i] ? 1 : 0;
            error[i] = (float)std::hypot(back[i].x - from[i].x, back[i].y - from[i].y);
        }
        return 0;
    });
}
