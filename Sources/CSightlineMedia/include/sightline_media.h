// libSightlineMedia.so's C API: the slcv_* functions of sightline_opencv.h
// that need OpenCV's imgcodecs, named slmedia_*. Only
// CSightlineOpenCV's MediaLibrary.cpp calls them, through dlsym.
#ifndef SIGHTLINE_MEDIA_H
#define SIGHTLINE_MEDIA_H
#include "sightline_opencv.h"

#ifdef __cplusplus
extern "C" {
#endif

int slmedia_decode(const uint8_t *bytes, size_t length, int channels, slcv_mat **out, slcv_error *err);
int slmedia_encode(const char *extension, slcv_image image, slcv_mat **out, slcv_error *err);

#ifdef __cplusplus
}
#endif
#endif
