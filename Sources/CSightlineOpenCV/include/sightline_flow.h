// sightline_flow.h: the C face of OpenCV's sparse optical flow (module
// video: cv::buildOpticalFlowPyramid and cv::calcOpticalFlowPyrLK), with
// which the face tracker moves each face's box, landmarks and roll with
// the picture between detection passes.
//
// Why it exists: the call is C++ (vectors of points, Mats); Swift passes
// plain float arrays. Every C++ exception is caught and comes back as a
// non-zero code and message in `err` (see sightline_opencv.h).
//
// Threading: no state but the pyramids, each owned by its caller; any thread
// (the pipeline thread calls it).
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

// A whole image's pyramid, built once and used by many faces' tracking: with
// many faces in view, each face's own pair of small pyramids cost more than
// one of the whole frame (on 640x480 with 9 faces of 80-150 px: 0.75 ms a
// frame against 0.16). Owned by the caller; free with slcv_flow_pyramid_free.
typedef struct slcv_flow_pyramid slcv_flow_pyramid;

// The pyramid of the 8-bit gray view `image` (copied: the view may change
// afterwards), with `levels` levels above it and borders for search windows
// up to `window`; NULL with `err` set on failure.
slcv_flow_pyramid *slcv_flow_pyramid_build(slcv_image image, int window, int levels, slcv_error *err);
void slcv_flow_pyramid_free(slcv_flow_pyramid *pyramid);

// As slcv_track_points, on two pyramids of images of one size built with a
// window of at least `window` (points in pixels of the whole image).
int slcv_track_points_in_pyramids(const slcv_flow_pyramid *prev, const slcv_flow_pyramid *next, const float *points,
                                  int count, int window, float *moved, uint8_t *status, float *error,
                                  slcv_error *err);

#ifdef __cplusplus
}
#endif
#endif
