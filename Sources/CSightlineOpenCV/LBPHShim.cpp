// The LBPH recognizer and the aligner's warp for Swift (see sightline_lbph.h).
#include "Shim.hpp"
#include "sightline_lbph.h"
#include <opencv2/face.hpp>
#include <opencv2/imgproc.hpp>
#include <vector>

using namespace sightline;

struct sllbph_model { cv::Ptr<cv::face::LBPHFaceRecognizer> recognizer; };

extern "C" int sllbph_create(int radius, int neighbors, int grid_x, int grid_y, sllbph_model **out, slcv_error *err) {
    return guarded(err, [&] {
        *out = new sllbph_model{cv::face::LBPHFaceRecognizer::create(radius, neighbors, grid_x, grid_y)};
        return 0;
    });
}

extern "C" void sllbph_release(sllbph_model *model) { delete model; }

extern "C" int sllbph_update(sllbph_model *model, const slcv_image *images, const int *labels, int count, slcv_error *err) {
    return guarded(err, [&] {
        if (count <= 0) return fail(err, 10, "no face crops to learn from");
        std::vector<cv::Mat> crops;
        for (int i = 0; i < count; i++) {
            if (images[i].channels != 1) return fail(err, 11, "face crops must be gray");
            crops.push_back(wrap(images[i]));
        }
        cv::Mat labelMat(count, 1, CV_32SC1, (void *)labels);
        model->recognizer->update(crops, labelMat);
        return 0;
    });
}

extern "C" int sllbph_predict(sllbph_model *model, slcv_image image, int *label, double *distance, slcv_error *err) {
    return guarded(err, [&] {
        if (model->recognizer->getHistograms().empty()) return fail(err, 12, "the model has no samples");
        model->recognizer->predict(wrap(image), *label, *distance);
        return 0;
    });
}

extern "C" int sllbph_remove_label(sllbph_model *model, int label, slcv_error *err) {
    return guarded(err, [&] {
        cv::Ptr<cv::face::LBPHFaceRecognizer> &r = model->recognizer;
        std::vector<cv::Mat> histograms = r->getHistograms();
        cv::Mat labels = r->getLabels();
        std::vector<cv::Mat> keptHistograms;
        std::vector<int> keptLabels;
        for (size_t i = 0; i < histograms.size(); i++) {
            int sampleLabel = labels.at<int>((int)i);
            if (sampleLabel == label) continue;
            keptHistograms.push_back(histograms[i]);
            keptLabels.push_back(sampleLabel);
        }
        // Write the kept samples in LBPH's own storage layout and read them back.
        cv::FileStorage out(".yml", cv::FileStorage::WRITE | cv::FileStorage::MEMORY);
        out << "radius" << r->getRadius() << "neighbors" << r->getNeighbors()
            << "grid_x" << r->getGridX() << "grid_y" << r->getGridY()
            << "threshold" << r->getThreshold()
            << "histograms" << keptHistograms
            << "labels" << cv::Mat(keptLabels, true);
        std::string text = out.releaseAndGetString();
        cv::FileStorage in(text, cv::FileStorage::READ | cv::FileStorage::MEMORY);
        cv::Ptr<cv::face::LBPHFaceRecognizer> rebuilt = cv::face::LBPHFaceRecognizer::create(
            r->getRadius(), r->getNeighbors(), r->getGridX(), r->getGridY());
        rebuilt->read(in.root());
        r = rebuilt;
        return 0;
    });
}

extern "C" int sllbph_save(sllbph_model *model, const char *path, slcv_error *err) {
    return guarded(err, [&] {
        model->recognizer->write(cv::String(path));
        return 0;
    });
}

extern "C" int sllbph_load(sllbph_model *model, const char *path, slcv_error *err) {
    return guarded(err, [&] {
        model->recognizer->read(cv::String(path));
        return 0;
    });
}

extern "C" int sllbph_sample_labels(sllbph_model *model, int *labels, int capacity) {
    try {
        cv::Mat all = model->recognizer->getLabels();
        int count = (int)all.total();
        for (int i = 0; labels && i < count && i < capacity; i++) labels[i] = all.at<int>(i);
        return count;
    } catch (...) {
        return 0;
    }
}

