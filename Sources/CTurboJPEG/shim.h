// TurboJPEG's C API imports into Swift as it is; this header only names it.
#include <turbojpeg.h>
