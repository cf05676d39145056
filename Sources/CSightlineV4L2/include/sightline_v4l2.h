// sightline_v4l2.h: what Swift cannot do with V4L2 and libv4l2 by itself.
//
// Why it exists: the VIDIOC_* request numbers and the V4L2_PIX_FMT_* codes
// are function-like macros (_IOR/_IOWR, v4l2_fourcc) that Swift cannot
// import, and libv4l2's v4l2_open and v4l2_ioctl are variadic, which Swift
// cannot call. This shim exports the numbers as constants and wraps the
// libv4l2 entry points with fixed signatures. Everything else (the structs
// of <linux/videodev2.h>, poll) Swift uses directly. errno is left as the
// call set it; Swift turns it into a thrown error in exactly one place
// (LinuxV4L2Device.swift).
#ifndef SIGHTLINE_V4L2_H
#define SIGHTLINE_V4L2_H

#include <linux/videodev2.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// --- ioctl request numbers (_IOR/_IOWR macros) ----------------------------
extern const unsigned long SL_VIDIOC_QUERYCAP;
extern const unsigned long SL_VIDIOC_ENUM_FMT;
extern const unsigned long SL_VIDIOC_ENUM_FRAMESIZES;
extern const unsigned long SL_VIDIOC_ENUM_FRAMEINTERVALS;
extern const unsigned long SL_VIDIOC_G_FMT;
extern const unsigned long SL_VIDIOC_S_FMT;
extern const unsigned long SL_VIDIOC_G_PARM;
extern const unsigned long SL_VIDIOC_S_PARM;
extern const unsigned long SL_VIDIOC_REQBUFS;
extern const unsigned long SL_VIDIOC_QUERYBUF;
extern const unsigned long SL_VIDIOC_QBUF;
extern const unsigned long SL_VIDIOC_DQBUF;
extern const unsigned long SL_VIDIOC_STREAMON;
extern const unsigned long SL_VIDIOC_STREAMOFF;

// --- pixel format codes (v4l2_fourcc macro) -------------------------------
extern const uint32_t SL_V4L2_PIX_FMT_YUYV;
extern const uint32_t SL_V4L2_PIX_FMT_MJPEG;
extern const uint32_t SL_V4L2_PIX_FMT_JPEG;
extern const uint32_t SL_V4L2_PIX_FMT_BGR24;

// --- libv4l2 with fixed signatures ----------------------------------------
// v4l2_open(path, flags) without the variadic mode argument.
int sl_v4l2_open(const char *path, int flags);
int sl_v4l2_close(int fd);
// v4l2_ioctl with its one argument spelled out; returns -1 and sets errno on failure.
int sl_v4l2_ioctl(int fd, unsigned long request, void *arg);
// v4l2_mmap (MAP_SHARED, read/write) returning NULL instead of MAP_FAILED,
// which is a cast macro Swift cannot import; errno says why.
void *sl_v4l2_mmap(int fd, size_t length, int64_t offset);
int sl_v4l2_munmap(void *start, size_t length);

#ifdef __cplusplus
}
#endif
#endif
