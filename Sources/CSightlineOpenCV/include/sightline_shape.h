// sightline_shape.h: the C face of dlib's shape predictor (Debian's
// libdlib-dev), for the 68-point face landmarks that attributes (smile,
// closed eyes, pitch) and the check that a face is a person's are read from.
//
// Why it exists: dlib is a C++ template library that Swift must not see.
// Every C++ exception (dlib::serialization_error for a bad model file, any
// std::exception) is caught here and comes back as a non-zero code and
// message in `err`, which Swift turns into a thrown error in one place
// (OpenCVError.swift, the shim's error type).
//
// Threading: a model handle is immutable once loaded and a fit only reads
// it, so one model may be used by several threads at once; the shim adds no
// locking and keeps no other state.
#ifndef SIGHTLINE_SHAPE_H
#define SIGHTLINE_SHAPE_H

#include "sightline_opencv.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct slcv_shape_model slcv_shape_model;  // dlib's shape predictor, its leaves compacted
typedef struct slcv_rect_d { double x, y, width, height; } slcv_rect_d;

// Loads a dlib shape predictor file (for example
// /usr/share/dlib/shape_predictor_68_face_landmarks.dat, 95 MB; about 1.5 s)
// and keeps its regression trees' leaves in a compact form (about 10 MB held;
// ShapeShim.cpp says how).
int slcv_shape_model_load(const char *path, slcv_shape_model **out, slcv_error *err);
void slcv_shape_model_release(slcv_shape_model *model);
// The compact form written to a file of its own and read back (about 10 MB
// and 30 ms, where loading dlib's file takes 1.5 s): `slcv_shape_model_write`
// writes it whole to `path` (the caller renames it into place);
// `slcv_shape_model_read` checks its marker, sizes and every index before
// any fit can use them, and fails (code 45) on a file that is not one whole.
int slcv_shape_model_write(const slcv_shape_model *model, const char *path, slcv_error *err);
int slcv_shape_model_read(const char *path, slcv_shape_model **out, slcv_error *err);
// The number of points the model places (68 for the iBUG 300-W layout).
int slcv_shape_model_parts(const slcv_shape_model *model);

// Fits the model's shape to the face in `box` (left, top, width, height in
// pixels of `gray`, which is 8-bit gray; the box may reach past the image's
// edges) and writes the points as x, y pairs in those pixels into `points`,
// which holds `capacity` floats (at least 2 * parts).
int slcv_shape_fit(const slcv_shape_model *model, slcv_image gray, double left, double top, double width,
                   double height, float *points, int capacity, slcv_error *err);

// --- a second look: dlib's HOG frontal face detector ------------------------
// Trained on people's faces (frontal to about 45 degrees turned); used on an
// upright crop of a candidate face to tell a person's face from an animal's.
// A detector handle keeps scratch memory: one thread at a time.
typedef struct slcv_hog_faces slcv_hog_faces;  // dlib::frontal_face_detector

int slcv_hog_faces_create(slcv_hog_faces **out, slcv_error *err);
void slcv_hog_faces_release(slcv_hog_faces *detector);

// The strongest detection's score (the SVM's margin; dlib reports a face at
// 0 and above) in the 8-bit gray view, among detections at least
// `adjust_threshold` (negative looks further); *found is the number of
// detections and *best_* the strongest one's box (gray's pixels; unchanged
// when none). The scan starts `skip_levels` levels down dlib's pyramid
// (each 5/6 of the last, made as dlib makes them, so the levels scanned and
// their scores are the full scan's; its boxes are mapped up from the first
// level scanned, so they may differ from the full scan's by a pixel): faces
// smaller than the window at those levels are not looked for.
int slcv_hog_faces_best(slcv_hog_faces *detector, slcv_image gray, int skip_levels, double adjust_threshold,
                        double *best_score, slcv_rect_d *best_box, int *found, slcv_error *err);

#ifdef __cplusplus
}
#endif
#endif
