// dlib's shape predictor behind the C header sightline_shape.h. The gray
// view is wrapped without copying (a minimal dlib generic image), so a fit
// reads only the pixels near the face.
#include "Shim.hpp"
#include "sightline_shape.h"
#include <dlib/image_processing/frontal_face_detector.h>
#include <dlib/image_processing/shape_predictor.h>
#include <dlib/serialize.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <fstream>

using namespace sightline;

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

// dlib's model as dlib holds it is 120,000 leaves of 136 floats (65 MB).
// The leaves of one cascade level lie close to a few directions of shape
// space, so each level keeps its leaves as `kComponents` int8 coefficients
// on its own principal axes, each tree's component scaled to its own range
// (about 10 MB in all). The fit is dlib's
// shape_predictor::operator() with the leaf sum taken in those coefficients:
// same features, same trees, same splits. Against dlib's own predictor the
// points move by about 1 px on faces 80-200 px wide (the cascade's own
// spread for a one-pixel shift of the box); see FaceShapeModel.swift.
namespace {
constexpr long kComponents = 64;

struct CompactLevel {
    std::vector<unsigned long> anchor;           // per feature pixel: the shape point it hangs on
    std::vector<dlib::vector<float, 2>> deltas;  // and its offset from that point
    std::vector<uint16_t> idx1, idx2;            // per split (trees x splitsPerTree)
    std::vector<float> thresh;
    dlib::matrix<float> axes;                    // shape dims x kComponents
    std::vector<int8_t> coefficients;            // (tree x leaf) x kComponents
    std::vector<float> scale;                    // (tree x component): coefficient = q * scale
};

// Fills `level` from the trees of one cascade level (their leaves as the
// columns of `leaves`).
void compact(CompactLevel &level, const std::vector<dlib::impl::regression_tree> &trees, long dims) {
    long leavesPerTree = (long)trees.front().leaf_values.size();
    long columns = (long)trees.size() * leavesPerTree;
    dlib::matrix<float> leaves(dims, columns);
    long column = 0;
    for (const auto &tree : trees) {
        if ((long)tree.leaf_values.size() != leavesPerTree) throw dlib::error("the trees of a level differ in size");
        for (const auto &leaf : tree.leaf_values) {
            if (leaf.size() != dims) throw dlib::error("a leaf does not match the shape");
            dlib::set_colm(leaves, column++) = leaf;
        }
        for (const auto &split : tree.splits) {
            if (split.idx1 > 65535 || split.idx2 > 65535) throw dlib::error("a split reads past 65535 features");
            level.idx1.push_back((uint16_t)split.idx1);
            level.idx2.push_back((uint16_t)split.idx2);
            level.thresh.push_back(split.thresh);
        }
    }
    // The axes come from every fourth tree's leaves (a quarter of the
    // product's cost, about a second less to load; the axes barely move).
    const long sampledTrees = ((long)trees.size() + 3) / 4;
    dlib::matrix<float> sample(dims, sampledTrees * leavesPerTree);
    for (long t = 0; t < sampledTrees; t++)
        for (long l = 0; l < leavesPerTree; l++)
            dlib::set_colm(sample, t * leavesPerTree + l) = dlib::colm(leaves, 4 * t * leavesPerTree + l);
    dlib::matrix<double> covariance = dlib::matrix_cast<double>(sample * dlib::trans(sample));
    dlib::eigenvalue_decomposition<dlib::matrix<double>> eigen(covariance);
    dlib::matrix<double, 0, 1> values = eigen.get_real_eigenvalues();
    dlib::matrix<double> vectors = eigen.get_pseudo_v();
    std::vector<std::pair<double, long>> order;
    for (long i = 0; i < values.size(); i++) order.push_back({-values(i), i});
    std::sort(order.begin(), order.end());
    long k = std::min(kComponents, dims);
    level.axes.set_size(dims, k);
    for (long i = 0; i < k; i++) dlib::set_colm(level.axes, i) = dlib::matrix_cast<float>(dlib::colm(vectors, order[i].second));
    dlib::matrix<float> projected = dlib::trans(level.axes) * leaves;  // k x columns
    level.coefficients.resize((size_t)columns * k);
    level.scale.resize(trees.size() * k);
    for (size_t t = 0; t < trees.size(); t++) {
        for (long j = 0; j < k; j++) {
            float largest = 0;
            for (long c = (long)t * leavesPerTree; c < (long)(t + 1) * leavesPerTree; c++)
                largest = std::max(largest, std::fabs(projected(j, c)));
            float scale = largest > 0 ? largest / 127.0f : 1.0f;
            level.scale[t * k + j] = scale;
            for (long c = (long)t * leavesPerTree; c < (long)(t + 1) * leavesPerTree; c++)
                level.coefficients[(size_t)c * k + j] = (int8_t)std::lround(projected(j, c) / scale);
        }
    }
}
}  // namespace

struct slcv_shape_model {
    dlib::matrix<float, 0, 1> initial;
    std::vector<CompactLevel> levels;
    long trees = 0, splitsPerTree = 0, components = 0;
};

// Reads dlib's file one cascade level at a time (the layout of
// shape_predictor's serialize: version, initial shape, forests, anchors,
// deltas), so loading never holds more than one level's floats.
extern "C" int slcv_shape_model_load(const char *path, slcv_shape_model **out, slcv_error *err) {
    return guarded(err, [&] {
        std::ifstream file(path, std::ios::binary);
        if (!file) return fail(err, 40, "the shape model file could not be opened");
        std::unique_ptr<slcv_shape_model> model(new slcv_shape_model());
        int version = 0;
        dlib::deserialize(version, file);
        if (version != 1) return fail(err, 41, "the shape model's format is not dlib's version 1");
        dlib::deserialize(model->initial, file);
        long dims = model->initial.size();
        if (dims == 0 || dims % 2 != 0) return fail(err, 41, "the shape model has no parts");
        unsigned long levels = 0;
        dlib::deserialize(levels, file);
        model->levels.resize(levels);
        for (auto &level : model->levels) {
            std::vector<dlib::impl::regression_tree> trees;
            dlib::deserialize(trees, file);
            if (trees.empty() || trees.front().splits.empty()) return fail(err, 41, "the shape model has an empty level");
            if (model->trees == 0) {
                model->trees = (long)trees.size();
                model->splitsPerTree = (long)trees.front().splits.size();
            }
            if ((long)trees.size() != model->trees) return fail(err, 41, "the shape model's levels differ in size");
            for (const auto &tree : trees)
                if ((long)tree.splits.size() != model->splitsPerTree || tree.leaf_values.size() != tree.splits.size() + 1)
                    return fail(err, 41, "the shape model's trees differ in shape");
            compact(level, trees, dims);
        }
        model->components = std::min(kComponents, dims);
        std::vector<std::vector<unsigned long>> anchors;
        std::vector<std::vector<dlib::vector<float, 2>>> deltas;
        dlib::deserialize(anchors, file);
        dlib::deserialize(deltas, file);
        if (anchors.size() != levels || deltas.size() != levels) return fail(err, 41, "the shape model's feature pixels do not match its levels");
        for (unsigned long i = 0; i < levels; i++) {
            if (anchors[i].size() != deltas[i].size() || anchors[i].size() > 65536)
                return fail(err, 41, "the shape model's feature pixels do not match");
            for (auto a : anchors[i])
                if ((long)a >= dims / 2) return fail(err, 41, "a feature pixel hangs on a point the shape does not have");
            for (size_t s = 0; s < model->levels[i].idx1.size(); s++)
                if (model->levels[i].idx1[s] >= anchors[i].size() || model->levels[i].idx2[s] >= anchors[i].size())
                    return fail(err, 41, "a split reads a feature pixel the level does not have");
            model->levels[i].anchor = std::move(anchors[i]);
            model->levels[i].deltas = std::move(deltas[i]);
        }
        *out = model.release();
        return 0;
    });
}

// The compact form on disk: a marker, the sizes, then each array as it lies
// in memory (this machine's byte order: the file is a cache of this host's).
namespace {
const char kCompactMarker[8] = {'S', 'L', 'S', 'H', 'A', 'P', 'E', '1'};

template <typename T> void put(std::ofstream &out, const std::vector<T> &values) {
    uint64_t n = values.size();
    out.write((const char *)&n, sizeof n);
    out.write((const char *)values.data(), (std::streamsize)(n * sizeof(T)));
}
void putLong(std::ofstream &out, long value) {
    int64_t v = value;
    out.write((const char *)&v, sizeof v);
}
template <typename T> bool take(std::ifstream &in, std::vector<T> &values, uint64_t most) {
    uint64_t n = 0;
    if (!in.read((char *)&n, sizeof n) || n > most) return false;
    values.resize(n);
    return (bool)in.read((char *)values.data(), (std::streamsize)(n * sizeof(T)));
}
bool takeLong(std::ifstream &in, long &value, long least, long most) {
    int64_t v = 0;
    if (!in.read((char *)&v, sizeof v) || v < least || v > most) return false;
    value = (long)v;
    return true;
}
}  // namespace

extern "C" int slcv_shape_model_write(const slcv_shape_model *model, const char *path, slcv_error *err) {
    return guarded(err, [&] {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        if (!out) return fail(err, 46, "the compact shape model could not be written");
        out.write(kCompactMarker, sizeof kCompactMarker);
        putLong(out, model->initial.size());
        putLong(out, (long)model->levels.size());
        putLong(out, model->trees);
        putLong(out, model->splitsPerTree);
        putLong(out, model->components);
        out.write((const char *)&model->initial(0), (std::streamsize)(model->initial.size() * sizeof(float)));
        for (const auto &level : model->levels) {
            std::vector<uint32_t> anchor(level.anchor.begin(), level.anchor.end());
            std::vector<float> deltas;
            for (const auto &d : level.deltas) { deltas.push_back(d.x()); deltas.push_back(d.y()); }
            std::vector<float> axes(level.axes.begin(), level.axes.end());
            put(out, anchor);
            put(out, deltas);
            put(out, level.idx1);
            put(out, level.idx2);
            put(out, level.thresh);
            put(out, axes);
            put(out, level.coefficients);
            put(out, level.scale);
        }
        out.write(kCompactMarker, sizeof kCompactMarker);
        out.flush();
        if (!out) return fail(err, 46, "the compact shape model could not be written whole");
        return 0;
    });
}

extern "C" int slcv_shape_model_read(const char *path, slcv_shape_model **out, slcv_error *err) {
    return guarded(err, [&] {
        std::ifstream in(path, std::ios::binary);
        if (!in) return fail(err, 40, "the compact shape model could not be opened");
        auto broken = [&] { return fail(err, 45, "the compact shape model is not whole"); };
        char marker[8];
        if (!in.read(marker, sizeof marker) || !std::equal(marker, marker + 8, kCompactMarker)) return broken();
        std::unique_ptr<slcv_shape_model> model(new slcv_shape_model());
        long dims = 0, levels = 0;
        if (!takeLong(in, dims, 2, 4096) || dims % 2 != 0 || !takeLong(in, levels, 1, 1000)
            || !takeLong(in, model->trees, 1, 100000) || !takeLong(in, model->splitsPerTree, 1, 65535)
            || !takeLong(in, model->components, 1, dims))
            return broken();
        model->initial.set_size(dims);
        if (!in.read((char *)&model->initial(0), (std::streamsize)(dims * sizeof(float)))) return broken();
        const uint64_t splits = (uint64_t)model->trees * model->splitsPerTree;
        const uint64_t leaves = (uint64_t)model->trees * (model->splitsPerTree + 1);
        model->levels.resize(levels);
        for (auto &level : model->levels) {
            std::vector<uint32_t> anchor;
            std::vector<float> deltas, axes;
            if (!take(in, anchor, 65536) || !take(in, deltas, 2 * 65536) || deltas.size() != 2 * anchor.size()
                || !take(in, level.idx1, splits) || level.idx1.size() != splits
                || !take(in, level.idx2, splits) || level.idx2.size() != splits
                || !take(in, level.thresh, splits) || level.thresh.size() != splits
                || !take(in, axes, (uint64_t)dims * model->components) || axes.size() != (uint64_t)dims * model->components
                || !take(in, level.coefficients, leaves * model->components)
                || level.coefficients.size() != leaves * model->components
                || !take(in, level.scale, (uint64_t)model->trees * model->components)
                || level.scale.size() != (uint64_t)model->trees * model->components)
                return broken();
            for (auto a : anchor)
                if ((long)a >= dims / 2) return broken();
            for (size_t s = 0; s < splits; s++)
                if (level.idx1[s] >= anchor.size() || level.idx2[s] >= anchor.size()) return broken();
            level.anchor.assign(anchor.begin(), anchor.end());
            for (size_t i = 0; i < anchor.size(); i++) level.deltas.push_back(dlib::vector<float, 2>(deltas[2 * i], deltas[2 * i + 1]));
            level.axes.set_size(dims, model->components);
            std::copy(axes.begin(), axes.end(), level.axes.begin());
        }
        if (!in.read(marker, sizeof marker) || !std::equal(marker, marker + 8, kCompactMarker) || in.peek() != EOF)
            return broken();
        *out = model.release();
        return 0;
    });
}

extern "C" void slcv_shape_model_release(slcv_shape_model *model) { delete model; }

extern "C" int slcv_shape_model_parts(const slcv_shape_model *model) {
    return model ? (int)(model->initial.size() / 2) : 0;
}

extern "C" int slcv_shape_fit(const slcv_shape_model *model, slcv_image gray, double left, double top, double width,
                              double height, float *points, int capacity, slcv_error *err) {
    return guarded(err, [&] {
        if (gray.channels != 1) return fail(err, 42, "the shape model runs on gray images");
        int parts = (int)(model->initial.size() / 2);
        if (capacity < 2 * parts) return fail(err, 43, "the points buffer is too small");
        if (!(width >= 1 && height >= 1)) return fail(err, 44, "the face box is empty");
        dlib::rectangle box(std::lround(left), std::lround(top), std::lround(left + width) - 1,
                            std::lround(top + height) - 1);
        GrayView view{&gray};
        const long k = model->components, leaves = model->splitsPerTree + 1;
        dlib::matrix<float, 0, 1> shape = model->initial;
        dlib::matrix<float, 0, 1> sum(k);
        std::vector<float> features;
        for (const auto &level : model->levels) {
            dlib::impl::extract_feature_pixel_values(view, box, shape, model->initial, level.anchor, level.deltas,
                                                     features);
            sum = 0;
            for (long t = 0; t < model->trees; t++) {
                const size_t base = (size_t)t * model->splitsPerTree;
                long i = 0;
                while (i < model->splitsPerTree)
                    i = features[level.idx1[base + i]] - features[level.idx2[base + i]] > level.thresh[base + i]
                            ? 2 * i + 1 : 2 * i + 2;
                const int8_t *q = &level.coefficients[((size_t)t * leaves + (i - model->splitsPerTree)) * k];
                const float *scale = &level.scale[(size_t)t * k];
                for (long j = 0; j < k; j++) sum(j) += scale[j] * q[j];
            }
            shape += level.axes * sum;
        }
        const dlib::point_transform_affine toImage = dlib::impl::unnormalizing_tform(box);
        for (int i = 0; i < parts; i++) {
            dlib::vector<float, 2> p = toImage(dlib::impl::location(shape, i));
            points[2 * i] = p.x();
            points[2 * i + 1] = p.y();
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

extern "C" int slcv_hog_faces_best(slcv_hog_faces *detector, slcv_image gray, int skip_levels, double adjust_threshold,
                                   double *best_score, slcv_rect_d *best_box, int *found, slcv_error *err) {
    return guarded(err, [&] {
        if (gray.channels != 1) return fail(err, 42, "the HOG detector runs on gray images");
        if (skip_levels < 0) return fail(err, 43, "negative pyramid levels to skip");
        GrayView view{&gray};
        std::vector<dlib::rect_detection> hits;
        // The detector's scan makes each level from the last with this same
        // pyramid (scan_fhog_pyramid), so the levels from skip_levels down are its own.
        dlib::pyramid_down<6> pyramid;
        if (skip_levels == 0) {
            detector->detector(view, hits, adjust_threshold);
        } else {
            dlib::array2d<unsigned char> level, next;
            pyramid(view, level);
            for (int i = 1; i < skip_levels; i++) {
                pyramid(level, next);
                dlib::swap(level, next);
            }
            detector->detector(level, hits, adjust_threshold);
            for (auto &hit : hits) hit.rect = pyramid.rect_up(hit.rect, (unsigned int)skip_levels);
        }
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
