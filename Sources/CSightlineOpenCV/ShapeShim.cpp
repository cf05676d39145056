// dlib's shape predictor behind the C header sightline_shape.h. The gray
// view is wrapped without copying (a minimal dlib generic image), so a fit
// reads only the pixels near the face.
#include "Shim.hpp"
#include "sightline_shape.h"
#include <dlib/image_processing/frontal_face_detector.h>
#include <dlib/image_processing/shape_predictor.h>
#include <dlib/serialize.h>
#include <cmath>
#include <fstream>

using namespace sightline;

struct slcv_shape_model { dlib::shape_predictor predictor; };
struct slcv_hog_faces { dlib::frontal_face_detector detector; };

namespace sightline_shape {
// An 8-bit gray view in dlib's generic image interface (read only); the
// functions are found by argument-dependent lookup, so they live beside it.
struct GrayView { const slcv_image *image; };
inline long num_rows(const GrayView &v) { return v.image->height; }
inline long num_columns(const GrayView &v) { return v.image->width; }
inline const void *image_data(const GrayView &v) { return v.image->data; }
inline long width_step(const GrayView &v) { return v.image->stride; }
}
using sightline_shape::GrayView;

namespace dlib {
template <> struct image_traits<GrayView> { typedef unsigned char pixel_type; };
}

extern "C" int slcv_shape_model_load(const char *path, slcv_shape_model **out, slcv_error *err) {
    return guarded(err, [&] {
        std::ifstream file(path, std::ios::binary);
        if (!file) return fail(err, 40, "the shape model file could not be opened");
        auto *model = new slcv_shape_model();
        try {
            dlib::deserialize(model->predictor, file);
        } catch (...) {
            delete model;
            throw;
        }
        if (model->predictor.num_parts() == 0) {
            delete model;
            return fail(err, 41, "the shape model has no parts");
        }
        *out = model;
        return 0;
    });
}

extern "C" void slcv_shape_model_release(slcv_shape_model *model) { delete model; }

extern "C" int slcv_shape_model_parts(const slcv_shape_model *model) {
    return model ? (int)model->predictor.num_parts() : 0;
}

extern "C" int slcv_shape_fit(const slcv_shape_model *model, slcv_image gray, double left, double top, double width,
                              double height, float *points, int capacity, slcv_error *err) {
    return guarded(err, [&] {
        if (gray.channels != 1) return fail(err, 42, "the shape model runs on gray images");
        int parts = (int)model->predictor.num_parts();
        if (capacity < 2 * parts) return fail(err, 43, "the points buffer is too small");
        if (!(width >= 1 && height >= 1)) return fail(err, 44, "the face box is empty");
        dlib::rectangle box(std::lround(left), std::lround(top), std::lround(left + width) - 1,
                            std::lround(top + height) - 1);
        GrayView view{&gray};
        dlib::full_object_detection shape = model->predictor(view, box);
        for (int i = 0; i < parts; i++) {
            points[2 * i] = (float)shape.part(i).x();
            points[2 * i + 1] = (float)shape.part(i).y();
        }
        return 0;
    });
}

extern "C" int slcv_hog_faces_create(slcv_hog_faces **out, slcv_error *err) {
    return guarded(err, [&] {
        *out = new slcv_hog_faces{dlib::get_frontal_face_detector()};
        return 0;
    });
}

extern "C" void slcv_hog_faces_release(slcv_hog_faces *detector) { delete detector; }

extern "C" int slcv_hog_faces_best(slcv_hog_faces *detector, slcv_image gray, double adjust_threshold,
                                   double *best_score, slcv_rect_d *best_box, int *found, slcv_error *err) {
    return guarded(err, [&] {
        if (gray.channels != 1) return fail(err, 42, "the HOG detector runs on gray images");
        GrayView view{&gray};
        std::vector<dlib::rect_detection> hits;
        detector->detector(view, hits, adjust_threshold);
        *found = (int)hits.size();
        for (const auto &hit : hits) {
            if (hit.detection_confidence > *best_score) {
                *best_score = hit.detection_confidence;
                *best_box = slcv_rect_d{(double)hit.rect.left(), (double)hit.rect.top(), (double)hit.rect.width(),
                                        (double)hit.rect.height()};
            }
        }
        return 0;
    });
}
