// sightline_faces.h: the C face of OpenCV's dnn and objdetect modules, for
// face detection (YuNet through cv::dnn, Haar cascades through
// cv::CascadeClassifier).
//
// Why it exists: both APIs are C++ classes that Swift must not see. Each
// function below is the smallest call Swift needs; every C++ exception is
// caught in the shim and comes back as a non-zero code and message in `err`
// (see sightline_opencv.h and OpenCVError.swift). Handles are opaque and
// owned by the shim until released; pixel and result memory is the caller's.
//
// Threading: a net or cascade handle is used by one thread at a time (the
// pipeline thread that owns the detector); the shim adds no locking.
#ifndef SIGHTLINE_FACES_H
#define SIGHTLINE_FACES_H

#include "sightline_opencv.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct slcv_net slcv_net;          // cv::dnn::Net
typedef struct slcv_cascade slcv_cascade;  // cv::CascadeClassifier

// --- dnn ------------------------------------------------------------------
// Loads a network from an ONNX file (cv::dnn::readNet), OpenCV backend, CPU.
int slcv_net_load(const char *onnx_path, slcv_net **out, slcv_error *err);
void slcv_net_release(slcv_net *net);

// Runs one forward pass on a BGR 8-bit image that already has the network's
// input size (the caller letterboxes). The blob is the raw pixel values
// (no scaling, no mean, BGR order), which is what YuNet expects.
// `names` lists `count` output names; output i is copied into outputs[i],
// which holds capacities[i] floats; lengths[i] receives the element count
// (an error if it exceeds the capacity).
int slcv_net_forward(slcv_net *net, slcv_image input, const char *const *names, int count,
                     float *const *outputs, const int *capacities, int *lengths, slcv_error *err);

// --- Haar cascades ------------------------------------------------------
typedef struct slcv_rect { int x, y, width, height; } slcv_rect;

// Loads a cascade XML file (for example from /usr/share/opencv4/haarcascades).
int slcv_cascade_load(const char *xml_path, slcv_cascade **out, slcv_error *err);
void slcv_cascade_release(slcv_cascade *cascade);

// detectMultiScale on an 8-bit gray view. Writes at most `capacity` rects
// into `rects` and the number written into *found. min/max size 0 = none.
int slcv_cascade_detect(slcv_cascade *cascade, slcv_image gray, double scale_factor, int min_neighbors,
                        int min_size, int max_size, slcv_rect *rects, int capacity, int *found,
                        slcv_error *err);

// The strongest hit's confidence: detectMultiScale with outputRejectLevels
// and no neighbour grouping, so every window that passes the whole cascade
// counts and its last stage's sum says how surely. *best_weight is the
// largest levelWeight (unchanged when nothing is found) and *hits the number
// of windows. Used to read smiles and open eyes inside a small face crop.
// Window sizes are bounded by min and max width and height (0 = no bound).
int slcv_cascade_best_weight(slcv_cascade *cascade, slcv_image gray, double scale_factor, int min_width,
                             int min_height, int max_width, int max_height, double *best_weight, int *hits,
                             slcv_error *err);

// --- helpers the face detectors need that ImageOps lacks ------------------
// Histogram equalization of an 8-bit gray view into another of the same size
// (Haar cascades are trained on equalized faces).
int slcv_equalize_hist(slcv_image src, slcv_image dst, slcv_error *err);


#ifdef __cplusplus
}
#endif
#endif
