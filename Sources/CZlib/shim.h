// zlib (zlib1g-dev): Swift inflates PNG image data with it to measure it
// before any decoder runs (SightlineVision/Image/PNGInflateBudget.swift). This header
// only brings the API in.
#include <zlib.h>
