// sightline_lbph.h: the C face of OpenCV contrib's LBPH face recognizer
// (cv::face::LBPHFaceRecognizer, library opencv_face) and the one warp the
// face aligner needs.
//
// Why it exists: the recognizer is a C++ class behind cv::Ptr; Swift holds it
// as an opaque handle and every call catches C++ exceptions, returning a
// non-zero code with a message in `err` (see sightline_opencv.h), which
// Swift turns into a thrown OpenCVError in one place.
//
// Thread ownership: a model handle is used by one thread at a time; the Swift
// owner (FaceRecognizer, inside FaceService) serialises calls with a lock.
#ifndef SIGHTLINE_LBPH_H
#define SIGHTLINE_LBPH_H

#include "sightline_opencv.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sllbph_model sllbph_model;  // cv::Ptr<cv::face::LBPHFaceRecognizer>

// Why: the only way to make a recognizer; parameters as LBPHFaceRecognizer::create
// (radius 1, neighbors 8, grid 8x8 are OpenCV's defaults). No distance threshold:
// Swift decides "unknown" itself from the returned distance.
int sllbph_create(int radius, int neighbors, int grid_x, int grid_y, sllbph_model **out, slcv_error *err);
void sllbph_release(sllbph_model *model);

// Why: enrollment. Adds `count` gray 8-bit crops (all the same size) with their
// labels to the model, keeping what it already knows (FaceRecognizer::update).
int sllbph_update(sllbph_model *model, const slcv_image *images, const int *labels, int count, slcv_error *err);

// Why: recognition. Nearest stored sample's label and its chi-square distance
// between LBP histograms (smaller is closer). Fails when the model is empty.
int sllbph_predict(sllbph_model *model, slcv_image image, int *label, double *distance, slcv_error *err);

// Why: forgetting a person. OpenCV has no call for it, so the model's samples
// are re-read without those of `label` (the LBPH histograms are the model;
// no image is needed to rebuild it).
int sllbph_remove_label(sllbph_model *model, int label, slcv_error *err);

// Why: persistence. Writes or reads the whole model (FileStorage format chosen
// by the path's extension, e.g. ".yml.gz" for compressed YAML).
int sllbph_save(sllbph_model *model, const char *path, slcv_error *err);
int sllbph_load(sllbph_model *model, const char *path, slcv_error *err);

// Why: status and people listings. The number of stored samples; with
// `labels` non-null, writes up to `capacity` sample labels there.
int sllbph_sample_labels(sllbph_model *model, int *labels, int capacity);


#ifdef __cplusplus
}
#endif
#endif
