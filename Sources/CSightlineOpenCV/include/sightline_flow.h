// sightline_flow.h: the C face of OpenCV's sparse optical flow (module
// video: cv::buildOpticalFlowPyramid and cv::calcOpticalFlowPyrLK), with
// which the face tracker moves each face's box, landmarks and roll with
// the picture between detection passes.
//
// Why it exists: the call is C++ (vectors of points, Mats); Swift passes
// plain float arrays. Every C++ exception is caught and comes back as a
// non-zero code and message in `err` (see sightline_opencv.h).
//
// Threading: no state; any thread (the pipeline thread calls it).
#ifndef SIGHTLINE_FLOW_H
#define SIGHTLINE_FLOW_H

#include "sightline_opencv.h"

#ifdef __cplusplus
extern "C" {
#endif

// Follows `count` points (x, y pairs in `points`, pixels of `prev`) from the
// 8-bit gray view `prev` to the view `next` of the same size with pyramidal
// Lucas-Kanade (a `window` x `window` search window, `levels` pyramid levels
// above the image), then back from where they landed to `prev`. Writes where
// each point went into `moved` (x, y pairs), 1 into `status[i]` when both
// ways found it (else 0), and the forward-backward error into `error[i]`
// (pixels between the point and where the backward pass brought it back; a
// point on a flat or occluded patch comes back elsewhere).
int slcv_track_points(slcv_image prev, slcv_image next, const float *points, int count, int window, int levels,
                      float *moved, uint8_t *status, float *error, slcv_error *err);

#ifdef __cplusplus
}
#endif
#endif
