// Face detection calls into cv::dnn and cv::CascadeClassifier (see sightline_faces.h).
#include "Shim.hpp"
#include "sightline_faces.h"
#include <opencv2/dnn.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/objdetect.hpp>
#include <algorithm>
#include <cstring>

using namespace sightline;

struct slcv_net { cv::dnn::Net net; };
struct slcv_cascade { cv::CascadeClassifier cascade; };

// readNet picks the ONNX importer by extension; an empty net means the file
// was not a network OpenCV can run.
extern "C" int slcv_net_load(const char *onnx_path, slcv_net **out, slcv_error *err) {
    return guarded(err, [&] {
        cv::dnn::Net net = cv::dnn::readNet(onnx_path);
        if (net.empty()) return fail(err, 10, "the network could not be loaded");
        net.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
        net.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
        *out = new slcv_net{net};
        return 0;
    });
}

extern "C" void slcv_net_release(slcv_net *net) { delete net; }

// One forward pass; outputs are copied into the caller's float buffers so
// Swift never holds a cv::Mat.
extern "C" int slcv_net_forward(slcv_net *net, slcv_image input, const char *const *names, int count,
                                float *const *outputs, const int *capacities, int *lengths, slcv_error *err) {
    return guarded(err, [&] {
        if (input.channels != 3) return fail(err, 11, "the network input must be BGR");
        cv::Mat blob = cv::dnn::blobFromImage(wrap(input));
        net->net.setInput(blob);
        std::vector<cv::String> outNames(names, names + count);
        std::vector<cv::Mat> results;
        net->net.forward(results, outNames);
        if ((int)results.size() != count) return fail(err, 12, "the network returned too few outputs");
        for (int i = 0; i < count; i++) {
            cv::Mat result = results[i];
            if (result.depth() != CV_32F) return fail(err, 13, "a network output is not float32");
            if (!result.isContinuous()) result = result.clone();
            int total = (int)result.total();
            if (total > capacities[i]) return fail(err, 14, "a network output is larger than its buffer");
            std::memcpy(outputs[i], result.ptr<float>(), sizeof(float) * (size_t)total);
            lengths[i] = total;
        }
        return 0;
    });
}

// CascadeClassifier::load returns false (no exception) on a bad file.
extern "C" int slcv_cascade_load(const char *xml_path, slcv_cascade **out, slcv_error *err) {
    return guarded(err, [&] {
        auto *handle = new slcv_cascade();
        if (!handle->cascade.load(xml_path)) {
            delete handle;
            return fail(err, 20, "the cascade file could not be loaded");
        }
        *out = handle;
        return 0;
    });
}

extern "C" void slcv_cascade_release(slcv_cascade *cascade) { delete cascade; }

extern "C" int slcv_cascade_detect(slcv_cascade *cascade, slcv_image gray, double scale_factor, int min_neighbors,
                                   int min_size, int max_size, slcv_rect *rects, int capacity, int *found,
                                   slcv_error *err) {
    return guarded(err, [&] {
        if (gray.channels != 1) return fail(err, 21, "cascades run on gray images");
        std::vector<cv::Rect> hits;
        cascade->cascade.detectMultiScale(wrap(gray), hits, scale_factor, min_neighbors, 0,
                                          cv::Size(min_size, min_size), cv::Size(max_size, max_size));
        int n = std::min((int)hits.size(), capacity);
        for (int i = 0; i < n; i++) rects[i] = slcv_rect{hits[i].x, hits[i].y, hits[i].width, hits[i].height};
        *found = n;
        return 0;
    });
}

extern "C" int slcv_cascade_best_weight(slcv_cascade *cascade, slcv_image gray, double scale_factor, int min_width,
                                        int min_height, int max_width, int max_height, double *best_weight,
                                        int *hits, slcv_error *err) {
    return guarded(err, [&] {
        if (gray.channels != 1) return fail(err, 21, "cascades run on gray images");
        std::vector<cv::Rect> found;
        std::vector<int> levels;
        std::vector<double> weights;
        cascade->cascade.detectMultiScale(wrap(gray), found, levels, weights, scale_factor, 0, 0,
                                          cv::Size(min_width, min_height), cv::Size(max_width, max_height), true);
        *hits = (int)found.size();
        for (double w : weights) *best_weight = std::max(*best_weight, w);
        return 0;
    });
}

extern "C" int slcv_equalize_hist(slcv_image src, slcv_image dst, slcv_error *err) {
    return guarded(err, [&] {
        cv::Mat out = wrap(dst);
        cv::equalizeHist(wrap(src), out);
        return 0;
    });
}

