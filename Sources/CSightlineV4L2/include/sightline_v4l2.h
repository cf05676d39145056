// placeholder replaced by the V4L2 work
#ifndef SIGHTLINE_V4L2_H
#define SIGHTLINE_V4L2_H
int sl_v4l2_placeholder(void);
#endif
