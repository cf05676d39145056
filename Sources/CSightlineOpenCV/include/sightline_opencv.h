// sightline_opencv.h: the C face of the OpenCV shim.
//
// Why it exists: OpenCV's API is C++, and Swift must never parse its headers
// or see its exceptions. Every function here catches cv::Exception (and any
// other exception) and returns a non-zero code with a message in `err`;
// Swift turns that into a thrown error in exactly one place (OpenCVError.swift).
//
// Pixel memory is owned by the caller: an slcv_image is a view (pointer,
// size, row stride in bytes, channels) that the shim wraps in a cv::Mat
// without copying. Only decode results are owned by the shim, behind
// an opaque slcv_mat handle that Swift copies out of and releases.
#ifndef SIGHTLINE_OPENCV_H
#define SIGHTLINE_OPENCV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct slcv_error {
    int code;            // 0 when fine
    char message[512];
} slcv_error;

typedef struct slcv_image {
    uint8_t *data;
    int width;
    int height;
    int stride;          // bytes per row
    int channels;        // 1 (gray) or 3 (BGR)
} slcv_image;

typedef struct slcv_mat slcv_mat;          // owned by the shim

// How many threads OpenCV's own parallel loops use (cv::setNumThreads; 0 and
// 1 both run each call on the calling thread), and how many it uses now.
void slcv_set_threads(int threads);
int slcv_threads(void);

// Interpolation modes (cv::InterpolationFlags values).
enum { SLCV_INTER_NEAREST = 0, SLCV_INTER_LINEAR = 1, SLCV_INTER_AREA = 3 };

// --- owned matrices -----------------------------------------------------
slcv_image slcv_mat_view(const slcv_mat *mat);
void slcv_mat_release(slcv_mat *mat);

// --- image bytes (through libSightlineMedia.so, loaded on first use) ------
// Decodes bytes (any format OpenCV reads) to 8-bit BGR (channels=3) or gray (1).
int slcv_decode(const uint8_t *bytes, size_t length, int channels, slcv_mat **out, slcv_error *err);
// Encodes by extension (".png", ".bmp", ...) into a shim-owned 1-row matrix of bytes.
int slcv_encode(const char *extension, slcv_image image, slcv_mat **out, slcv_error *err);
// Where libSightlineMedia.so was loaded from, or why it could not be (never NULL).
const char *slcv_media_library(void);

// --- pixel operations (dst is caller-owned, any ROI view) ----------------
int slcv_resize(slcv_image src, slcv_image dst, int interpolation, slcv_error *err);
int slcv_bgr_to_gray(slcv_image src, slcv_image dst, slcv_error *err);
// YUYV (4:2:2 packed, width*2 bytes a row) to BGR.
int slcv_yuyv_to_bgr(const uint8_t *yuyv, int width, int height, int stride, slcv_image dst, slcv_error *err);
// Adds Gaussian noise of the given sigma, from a cv::RNG seeded with `seed`.
int slcv_add_noise(slcv_image image, uint64_t seed, double sigma, slcv_error *err);
/* image = saturate(image + plus - minus), all of one size and type (a precomputed noise frame
 * split into its positive and negative parts, for the demo scene). */
int slcv_add_signed(slcv_image image, slcv_image plus, slcv_image minus, slcv_error *err);
// Gaussian blur in place (ksize odd, sigma may be 0).
int slcv_blur(slcv_image image, int ksize, double sigma, slcv_error *err);
// Rotates src about its centre by angle degrees (counter-clockwise positive,
// as cv::getRotationMatrix2D) into dst of the same size, border replicated.
int slcv_rotate(slcv_image src, slcv_image dst, double angle, slcv_error *err);

// dst = src warped by the 2x3 affine matrix m (row-major, mapping src pixel
// coordinates to dst ones), bilinear, border replicated: eye-aligned face
// crops, upright crops around tilted faces.
int slcv_warp_affine(slcv_image src, slcv_image dst, const double *m, slcv_error *err);

// Draws src onto dst scaled by `scale` and rotated by `angle` degrees
// (counter-clockwise positive, as cv::getRotationMatrix2D) about its centre,
// which lands at (cx, cy) in dst; dst pixels outside the drawn image stay.
int slcv_paste_warped(slcv_image src, slcv_image dst, double cx, double cy, double scale, double angle, slcv_error *err);

// --- template matching --------------------------------------------------
// TM_CCOEFF_NORMED of templ over image; writes the score map into `result`
// ((image.w - templ.w + 1) x (image.h - templ.h + 1) floats, row stride
// result_stride floats). Both images must have the same channel count.
int slcv_match_template(slcv_image image, slcv_image templ, float *result, int result_stride, slcv_error *err);
// Structural similarity of two gray images of one size (Wang et al. 2004:
// Gaussian window 11x11, sigma 1.5, K1 0.01, K2 0.03, L 255), averaged over
// the positions where the window lies inside the image: the quality figure
// of the video benchmark.
int slcv_ssim(slcv_image a, slcv_image b, double *ssim, slcv_error *err);
// Mean and standard deviation over all channels of an image.
int slcv_mean_stddev(slcv_image image, double *mean, double *stddev, slcv_error *err);

#ifdef __cplusplus
}
#endif
#endif
