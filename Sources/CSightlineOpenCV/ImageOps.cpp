// Pixel operations for Swift (see sightline_opencv.h); image formats are in MediaLibrary.cpp.
#include "Shim.hpp"
#include <opencv2/imgproc.hpp>

using namespace sightline;

extern "C" slcv_image slcv_mat_view(const slcv_mat *mat) { return view(mat->mat); }
extern "C" void slcv_mat_release(slcv_mat *mat) { delete mat; }


extern "C" void slcv_set_threads(int threads) {
    try { cv::setNumThreads(threads); } catch (...) {}
}

extern "C" int slcv_threads(void) {
    try { return cv::getNumThreads(); } catch (...) { return -1; }
}



extern "C" int slcv_resize(slcv_image src, slcv_image dst, int interpolation, slcv_error *err) {
    return guarded(err, [&] {
        cv::Mat out = wrap(dst);
        cv::resize(wrap(src), out, out.size(), 0, 0, interpolation);
        return 0;
    });
}

extern "C" int slcv_bgr_to_gray(slcv_image src, slcv_image dst, slcv_error *err) {
    return guarded(err, [&] {
        cv::Mat out = wrap(dst);
        cv::cvtColor(wrap(src), out, cv::COLOR_BGR2GRAY);
        return 0;
    });
}

extern "C" int slcv_yuyv_to_bgr(const uint8_t *yuyv, int width, int height, int stride, slcv_image dst, slcv_error *err) {
    return guarded(err, [&] {
        cv::Mat in(height, width, CV_8UC2, (void *)yuyv, (size_t)stride);
        cv::Mat out = wrap(dst);
        cv::cvtColor(in, out, cv::COLOR_YUV2BGR_YUYV);
        return 0;
    });
}

extern "C" int slcv_add_noise(slcv_image image, uint64_t seed, double sigma, slcv_error *err) {
    return guarded(err, [&] {
        cv::Mat target = wrap(image);
        cv::Mat noise(target.size(), CV_16SC(target.channels()));
        cv::RNG rng(seed);
        rng.fill(noise, cv::RNG::NORMAL, 0, sigma);
        cv::Mat sum;
        cv::add(target, noise, sum, cv::noArray(), CV_16S);
        sum.convertTo(target, CV_8U);
        return 0;
    });
}

extern "C" int slcv_add_signed(slcv_image image, slcv_image plus, slcv_image minus, slcv_error *err) {
    return guarded(err, [&] {
        cv::Mat target = wrap(image);
        cv::add(target, wrap(plus), target);
        cv::subtract(target, wrap(minus), target);
        return 0;
    });
}

extern "C" int slcv_blur(slcv_image image, int ksize, double sigma, slcv_error *err) {
    return guarded(err, [&] {
        cv::Mat target = wrap(image);
        cv::GaussianBlur(target, target, cv::Size(ksize, ksize), sigma);
        return 0;
    });
}

extern "C" int slcv_rotate(slcv_image src, slcv_image dst, double angle, slcv_error *err) {
    return guarded(err, [&] {
        cv::Mat in = wrap(src), out = wrap(dst);
        cv::Point2f centre((in.cols - 1) / 2.0f, (in.rows - 1) / 2.0f);
        cv::Mat m = cv::getRotationMatrix2D(centre, angle, 1.0);
        cv::warpAffine(in, out, m, out.size(), cv::INTER_LINEAR, cv::BORDER_REPLICATE);
        return 0;
    });
}

extern "C" int slcv_warp_affine(slcv_image src, slcv_image dst, const double *m, slcv_error *err) {
    return guarded(err, [&] {
        cv::Mat out = wrap(dst);
        cv::Mat matrix(2, 3, CV_64F, (void *)m);
        cv::warpAffine(wrap(src), out, matrix, out.size(), cv::INTER_LINEAR, cv::BORDER_REPLICATE);
        return 0;
    });
}

extern "C" int slcv_paste_warped(slcv_image src, slcv_image dst, double cx, double cy, double scale, double angle, slcv_error *err) {
    return guarded(err, [&] {
        cv::Mat in = wrap(src), out = wrap(dst);
        cv::Point2f centre((in.cols - 1) / 2.0f, (in.rows - 1) / 2.0f);
        cv::Mat m = cv::getRotationMatrix2D(centre, angle, scale);
        m.at<double>(0, 2) += cx - centre.x;
        m.at<double>(1, 2) += cy - centre.y;
        cv::warpAffine(in, out, m, out.size(), cv::INTER_LINEAR, cv::BORDER_TRANSPARENT);
        return 0;
    });
}

extern "C" int slcv_match_template(slcv_image image, slcv_image templ, float *result, int result_stride, slcv_error *err) {
    return guarded(err, [&] {
        if (templ.width > image.width || templ.height > image.height)
            return fail(err, 5, "template larger than image");
        cv::Mat out(image.height - templ.height + 1, image.width - templ.width + 1, CV_32FC1,
                    result, (size_t)result_stride * sizeof(float));
        cv::matchTemplate(wrap(image), wrap(templ), out, cv::TM_CCOEFF_NORMED);
        return 0;
    });
}

extern "C" int slcv_mean_stddev(slcv_image image, double *mean, double *stddev, slcv_error *err) {
    return guarded(err, [&] {
        cv::Mat flat = wrap(image);
        flat = flat.reshape(1, flat.rows);  // all channels together
        cv::Scalar m, s;
        cv::meanStdDev(flat, m, s);
        *mean = m[0];
        *stddev = s[0];
        return 0;
    });
}

extern "C" int slcv_ssim(slcv_image a, slcv_image b, double *ssim, slcv_error *err) {
    return guarded(err, [&] {
        if (a.channels != 1 || b.channels != 1 || a.width != b.width || a.height != b.height)
            return fail(err, -1, "ssim needs two gray images of one size");
        const int radius = 5;
        if (a.width <= 2 * radius || a.height <= 2 * radius) return fail(err, -1, "ssim needs images over 10x10");
        cv::Mat x, y;
        wrap(a).convertTo(x, CV_32F);
        wrap(b).convertTo(y, CV_32F);
        const double c1 = (0.01 * 255) * (0.01 * 255), c2 = (0.03 * 255) * (0.03 * 255);
        auto window = [](const cv::Mat &in) {
            cv::Mat out;
            cv::GaussianBlur(in, out, cv::Size(11, 11), 1.5);
            return out;
        };
        cv::Mat mx = window(x), my = window(y);
        cv::Mat mxx = mx.mul(mx), myy = my.mul(my), mxy = mx.mul(my);
        cv::Mat vx = window(x.mul(x)) - mxx, vy = window(y.mul(y)) - myy, cxy = window(x.mul(y)) - mxy;
        cv::Mat numerator = (2 * mxy + c1).mul(2 * cxy + c2);
        cv::Mat denominator = (mxx + myy + c1).mul(vx + vy + c2);
        cv::Mat map;
        cv::divide(numerator, denominator, map);
        cv::Rect inside(radius, radius, a.width - 2 * radius, a.height - 2 * radius);
        *ssim = cv::mean(map(inside))[0];
        return 0;
    });
}
