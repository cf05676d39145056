// See include/sightline_v4l2.h for why this shim exists.
#include "sightline_v4l2.h"

#include <fcntl.h>
#include <libv4l2.h>
#include <sys/mman.h>

const unsigned long SL_VIDIOC_QUERYCAP = VIDIOC_QUERYCAP;
const unsigned long SL_VIDIOC_ENUM_FMT = VIDIOC_ENUM_FMT;
const unsigned long SL_VIDIOC_ENUM_FRAMESIZES = VIDIOC_ENUM_FRAMESIZES;
const unsigned long SL_VIDIOC_ENUM_FRAMEINTERVALS = VIDIOC_ENUM_FRAMEINTERVALS;
const unsigned long SL_VIDIOC_G_FMT = VIDIOC_G_FMT;
const unsigned long SL_VIDIOC_S_FMT = VIDIOC_S_FMT;
const unsigned long SL_VIDIOC_G_PARM = VIDIOC_G_PARM;
const unsigned long SL_VIDIOC_S_PARM = VIDIOC_S_PARM;
const unsigned long SL_VIDIOC_REQBUFS = VIDIOC_REQBUFS;
const unsigned long SL_VIDIOC_QUERYBUF = VIDIOC_QUERYBUF;
const unsigned long SL_VIDIOC_QBUF = VIDIOC_QBUF;
const unsigned long SL_VIDIOC_DQBUF = VIDIOC_DQBUF;
const unsigned long SL_VIDIOC_STREAMON = VIDIOC_STREAMON;
const unsigned long SL_VIDIOC_STREAMOFF = VIDIOC_STREAMOFF;

const uint32_t SL_V4L2_PIX_FMT_YUYV = V4L2_PIX_FMT_YUYV;
const uint32_t SL_V4L2_PIX_FMT_MJPEG = V4L2_PIX_FMT_MJPEG;
const uint32_t SL_V4L2_PIX_FMT_JPEG = V4L2_PIX_FMT_JPEG;
const uint32_t SL_V4L2_PIX_FMT_BGR24 = V4L2_PIX_FMT_BGR24;

int sl_v4l2_open(const char *path, int flags) {
    return v4l2_open(path, flags);
}

int sl_v4l2_close(int fd) {
    return v4l2_close(fd);
}

int sl_v4l2_ioctl(int fd, unsigned long request, void *arg) {
    return v4l2_ioctl(fd, request, arg);
}

void *sl_v4l2_mmap(int fd, size_t length, int64_t offset) {
    void *start = v4l2_mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset);
    return start == MAP_FAILED ? NULL : start;
}

int sl_v4l2_munmap(void *start, size_t length) {
    return v4l2_munmap(start, length);
}
