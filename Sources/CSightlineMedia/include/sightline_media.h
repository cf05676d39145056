// libSightlineMedia.so's C API: the slcv_* functions of sightline_opencv.h
// that need OpenCV's videoio or imgcodecs, named slmedia_*. Only
// CSightlineOpenCV's MediaLibrary.cpp calls them, through dlsym.
#ifndef SIGHTLINE_MEDIA_H
#define SIGHTLINE_MEDIA_H
#include "sightline_opencv.h"

#ifdef __cplusplus
extern "C" {
#endif

int slmedia_decode(const uint8_t *bytes, size_t length, int channels, slcv_mat **out, slcv_error *err);
int slmedia_encode(const char *extension, slcv_image image, slcv_mat **out, slcv_error *err);
int slmedia_capture_open(const char *uri, slcv_capture **out, slcv_error *err);
int slmedia_capture_read(slcv_capture *cap, int *got, slcv_image *frame, slcv_error *err);
double slmedia_capture_fps(slcv_capture *cap);
double slmedia_capture_frame_count(slcv_capture *cap);
int slmedia_capture_rewind(slcv_capture *cap, slcv_error *err);
void slmedia_capture_release(slcv_capture *cap);

#ifdef __cplusplus
}
#endif
#endif
