int sl_v4l2_placeholder(void) { return 0; }
